# ex02: classifies with read_events, which raises on corruption but says nothing of an ignored
# torn tail, so a torn write reads as a clean file.
# loses: ex02.3
# %% ex02-classify
def classify_damage(path):
    """(CLEAN, None), (PARTIAL_TAIL, None) or (CORRUPT, line_number) for the transcript at path."""
    try:
        JSONLTranscript(path).read_events()
    except TranscriptCorruptionError as error:
        return CORRUPT, error.line_number
    return CLEAN, None
