# ex05: when line n does not link to line n - 1, blames line n - 1 (the line that was
# probably edited) instead of reporting where the chain breaks.
# loses: ex05.3 ex05.5 ex05.6
# %% ex05-verify
def verify(path, head=None):
    """None when the chain holds (and ends at head, if given); else the first line where it breaks."""
    expected_prev, number = GENESIS, 0
    for number, raw in enumerate(complete_lines(path), start=1):
        try:
            record = json.loads(raw)
        except ValueError:
            return number
        if not isinstance(record, dict) or record.get("prev") != expected_prev:
            return max(number - 1, 1)
        expected_prev = line_hash(raw)
    if head is not None and expected_prev != head:
        return max(number, 1)
    return None
