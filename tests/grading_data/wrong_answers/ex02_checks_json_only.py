# ex02: checks that every line is JSON instead of asking the library, so a gap in the
# sequence or a damaged key that still parses goes unseen.
# loses: ex02.5 ex02.6
# %% ex02-classify
import json


def classify_damage(path):
    """(CLEAN, None), (PARTIAL_TAIL, None) or (CORRUPT, line_number) for the transcript at path."""
    *lines, last = Path(path).read_bytes().split(b"\n")
    for number, line in enumerate(lines, start=1):
        try:
            json.loads(line)
        except ValueError:
            return CORRUPT, number
    if last:
        try:
            json.loads(last)
        except ValueError:
            return PARTIAL_TAIL, None
    return CLEAN, None
