# ex01: gets the right length, but takes every event from the iterator first.
# loses: ex01.2
# %% ex01-turn-length
def last_turn_length(events_newest_first):
    """How many events the last turn spans: the last user message and every event after it."""
    events = list(events_newest_first)
    for position, event in enumerate(events):
        if event["type"] == TYPE_MESSAGE and event.get("role") == "user":
            return position + 1
    return len(events)
