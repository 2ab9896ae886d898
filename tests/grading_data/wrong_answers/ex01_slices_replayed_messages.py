# ex01: cuts the default replay window at the last user message, so a turn longer than
# the window (1,000 events) loses its beginning.
# loses: ex01.6
# %% ex01-replay
def replay_last_turn(transcript):
    """The chat messages of the last turn only, oldest first."""
    messages = transcript.replay()
    starts = [index for index, message in enumerate(messages)
              if message["role"] == "user" and isinstance(message["content"], str)]
    return messages[starts[-1]:] if starts else messages
