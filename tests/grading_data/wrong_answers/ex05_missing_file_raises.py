# ex05: reads the file directly instead of with complete_lines, so a chain that has no file yet
# (an empty chain) raises FileNotFoundError instead of verifying.
# loses: ex05.2 ex05.9
# %% ex05-verify
def verify(path, head=None):
    """None when the chain holds (and ends at head, if given); else the first line where it breaks."""
    expected_prev, number = GENESIS, 0
    for number, raw in enumerate(Path(path).read_bytes().split(b"\n")[:-1], start=1):
        try:
            record = json.loads(raw)
        except ValueError:
            return number
        if not isinstance(record, dict) or record.get("prev") != expected_prev:
            return number
        expected_prev = line_hash(raw)
    if head is not None and expected_prev != head:
        return max(number, 1)
    return None
