# Wrong answer "rejecting a partial tail": a torn last line is treated as damage. Loses: tail.
# ruff: noqa: F821
def _cut_tail(path, length):
    raise TranscriptCorruptionError(f"{path}: the last line has no newline")
