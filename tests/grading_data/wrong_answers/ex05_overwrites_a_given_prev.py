# ex05: an event that brings its own prev is not refused: its prev is silently replaced.
# loses: ex05.8
# %% ex05-append
def append_chained(path, event):
    """Append event with "prev" = line_hash of the last line (GENESIS for the first); return the new head."""
    lines = complete_lines(path)
    prev = line_hash(lines[-1]) if lines else GENESIS
    raw = json.dumps({**event, "prev": prev}, ensure_ascii=False, allow_nan=False,
                     separators=(",", ":")).encode("utf-8")
    append_line(path, raw)
    return line_hash(raw)
