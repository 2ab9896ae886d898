# ex05: writes each line with json.dumps' default separators (", " and ": "), not compact JSON.
# loses: ex05.10
# %% ex05-append
def append_chained(path, event):
    """Append event with "prev" = line_hash of the last line (GENESIS for the first); return the new head."""
    if "prev" in event:
        raise ValueError("the event already has a 'prev' field: append_chained sets it")
    lines = complete_lines(path)
    prev = line_hash(lines[-1]) if lines else GENESIS
    raw = json.dumps({**event, "prev": prev}, ensure_ascii=False, allow_nan=False).encode("utf-8")
    append_line(path, raw)
    return line_hash(raw)
