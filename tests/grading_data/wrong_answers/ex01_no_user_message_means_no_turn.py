# ex01: when the transcript holds no user message, says the last turn is empty instead of
# the whole transcript.
# loses: ex01.5
# %% ex01-turn-length
def last_turn_length(events_newest_first):
    """How many events the last turn spans: the last user message and every event after it."""
    length = 0
    for event in events_newest_first:
        length += 1
        if event["type"] == TYPE_MESSAGE and event.get("role") == "user":
            return length
    return 0
