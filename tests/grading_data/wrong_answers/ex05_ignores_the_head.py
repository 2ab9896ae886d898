# ex05: never compares the end of the chain with the head.
# loses: ex05.4 ex05.5 ex05.9
# %% ex05-verify
def verify(path, head=None):
    """None when the chain holds (and ends at head, if given); else the first line where it breaks."""
    expected_prev = GENESIS
    for number, raw in enumerate(complete_lines(path), start=1):
        try:
            record = json.loads(raw)
        except ValueError:
            return number
        if not isinstance(record, dict) or record.get("prev") != expected_prev:
            return number
        expected_prev = line_hash(raw)
    return None
