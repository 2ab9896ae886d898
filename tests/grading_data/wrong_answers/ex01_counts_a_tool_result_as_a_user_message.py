# ex01: stops at a tool result too, since a tool result is replayed as a message with role
# "user"; but it is not a user message.
# loses: ex01.1 ex01.3 ex01.5
# %% ex01-turn-length
def last_turn_length(events_newest_first):
    """How many events the last turn spans: the last user message and every event after it."""
    length = 0
    for event in events_newest_first:
        length += 1
        if event["type"] == "function_call_result" or (event["type"] == TYPE_MESSAGE and event.get("role") == "user"):
            break
    return length
