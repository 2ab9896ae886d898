# ex05: hashes the parsed record encoded again with json.dumps, not the line's raw bytes;
# consistent with itself, but not with any other writer of the chain.
# loses: ex05.1 ex05.3 ex05.5
# %% ex05-append
def append_chained(path, event):
    """Append event with "prev" = line_hash of the last line (GENESIS for the first); return the new head."""
    if "prev" in event:
        raise ValueError("the event already has a 'prev' field")
    lines = complete_lines(path)
    prev = line_hash(json.dumps(json.loads(lines[-1])).encode()) if lines else GENESIS
    record = {**event, "prev": prev}
    append_line(path, json.dumps(record, separators=(",", ":")).encode())
    return line_hash(json.dumps(record).encode())


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
        expected_prev = line_hash(json.dumps(record).encode())
    if head is not None and expected_prev != head:
        return max(number, 1)
    return None
