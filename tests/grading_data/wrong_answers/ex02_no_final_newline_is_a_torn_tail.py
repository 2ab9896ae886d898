# ex02: calls any file that does not end with a newline a torn write, without asking the reader,
# so a complete last record that only lost its newline is misjudged.
# loses: ex02.7
# %% ex02-classify
def classify_damage(path):
    """(CLEAN, None), (PARTIAL_TAIL, None) or (CORRUPT, line_number) for the transcript at path."""
    try:
        state = JSONLTranscript(path).recover()
        if not Path(path).read_bytes().endswith(b"\n"):
            return PARTIAL_TAIL, None
    except TranscriptCorruptionError as error:
        return CORRUPT, error.line_number
    return (PARTIAL_TAIL if state["ignored_partial_tail"] else CLEAN), None
