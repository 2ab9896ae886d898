# ex02: classifies with replay_state, which reads only the last 1,000 records, so damage
# further back in a long file goes unseen.
# loses: ex02.8
# %% ex02-classify
def classify_damage(path):
    """(CLEAN, None), (PARTIAL_TAIL, None) or (CORRUPT, line_number) for the transcript at path."""
    try:
        state = JSONLTranscript(path).replay_state()
    except TranscriptCorruptionError as error:
        return CORRUPT, error.line_number
    return (PARTIAL_TAIL if state.ignored_partial_tail else CLEAN), None
