# ex05: with a head and no complete line at all, reports line 0, a line that does not exist;
# the exercise says line 1.
# loses: ex05.9
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
            return number
        expected_prev = line_hash(raw)
    if head is not None and expected_prev != head:
        return number
    return None
