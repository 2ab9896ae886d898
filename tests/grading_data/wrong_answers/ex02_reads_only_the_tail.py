# ex02: trusts only the last 1,000 records, as a reader that reads from the end of the file does
# (the lab's replay_state); damage further back in a long file goes unseen. Written out here, since
# a grading cannot import the lab.
# loses: ex02.8
# %% ex02-classify
def classify_damage(path):
    """(CLEAN, None), (PARTIAL_TAIL, None) or (CORRUPT, line_number) for the transcript at path."""
    window = 1000
    lines = Path(path).read_bytes().count(b"\n")
    try:
        state = JSONLTranscript(path).replay_state()
    except TranscriptCorruptionError as error:
        if error.line_number <= lines - window:
            return CLEAN, None  # before the window: never looked at
        return CORRUPT, error.line_number
    return (PARTIAL_TAIL if state.ignored_partial_tail else CLEAN), None
