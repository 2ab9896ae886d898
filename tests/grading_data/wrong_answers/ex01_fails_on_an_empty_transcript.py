# ex01: counts with enumerate and returns the last position, which does not exist when there
# are no events at all.
# loses: ex01.5
# %% ex01-turn-length
def last_turn_length(events_newest_first):
    """How many events the last turn spans: the last user message and every event after it."""
    for length, event in enumerate(events_newest_first, start=1):
        if event["type"] == TYPE_MESSAGE and event.get("role") == "user":
            break
    return length
