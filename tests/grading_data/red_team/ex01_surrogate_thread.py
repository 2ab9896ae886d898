# A right answer that leaves a thread running whose name holds a lone surrogate (and an escape code):
# text no UTF-8 file can hold as it is.
# %% ex01-turn-length
import threading as _threading
import time as _time


def last_turn_length(events_newest_first):
    """How many events the last turn spans: the last user message and every event after it."""
    if not any(thread.name.startswith("odd") for thread in _threading.enumerate()):
        _threading.Thread(name="odd \udcff \x1b[2J name", target=_time.sleep, args=(600,), daemon=True).start()
    length = 0
    for event in events_newest_first:
        length += 1
        if event["type"] == TYPE_MESSAGE and event.get("role") == "user":
            break
    return length
