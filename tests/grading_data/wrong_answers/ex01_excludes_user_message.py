# ex01: counts the events after the last user message, but not the message itself.
# loses: ex01.1 ex01.2 ex01.3 ex01.4 ex01.6
# %% ex01-turn-length
def last_turn_length(events_newest_first):
    """How many events the last turn spans: the last user message and every event after it."""
    length = 0
    for event in events_newest_first:
        if event["type"] == TYPE_MESSAGE and event.get("role") == "user":
            break
        length += 1
    return length
