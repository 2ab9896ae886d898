# ex05: splits the file itself and keeps an unterminated last fragment as a line, so a torn write
# after an intact chain is reported as a break.
# loses: ex05.7
# %% ex05-verify
def verify(path, head=None):
    """None when the chain holds (and ends at head, if given); else the first line where it breaks."""
    expected_prev, number = GENESIS, 0
    lines = Path(path).read_bytes().split(b"\n") if Path(path).exists() else []
    if lines and not lines[-1]:
        lines.pop()  # the empty piece after the final newline; a torn write stays in
    for number, raw in enumerate(lines, start=1):
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
