# ex02: reports line numbers counted from 0.
# loses: ex02.4 ex02.5 ex02.6 ex02.8
# %% ex02-classify
def classify_damage(path):
    """(CLEAN, None), (PARTIAL_TAIL, None) or (CORRUPT, line_number) for the transcript at path."""
    try:
        state = JSONLTranscript(path).recover()
    except TranscriptCorruptionError as error:
        return CORRUPT, error.line_number - 1
    return (PARTIAL_TAIL if state["ignored_partial_tail"] else CLEAN), None
