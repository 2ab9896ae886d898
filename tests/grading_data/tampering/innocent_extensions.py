# Not tampering: the reference answers, with matplotlib's inline backend and autoreload switched on
# the way many notebooks do. The hooks these register are allowed; this must score full marks.
# %% ex01-turn-length
%load_ext autoreload
%autoreload 2
%matplotlib inline
import matplotlib.pyplot as plt


def last_turn_length(events_newest_first):
    """How many events the last turn spans: the last user message and every event after it."""
    length = 0
    for event in events_newest_first:
        length += 1
        if event["type"] == TYPE_MESSAGE and event.get("role") == "user":
            break
    return length
