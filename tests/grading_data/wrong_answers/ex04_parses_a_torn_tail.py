# ex04: parses the unterminated last line like any other, so a torn write raises instead of
# being skipped.
# loses: ex04.4
# %% ex04-tail
def tail_records(file, count, block_size=4096):
    """The last count records of the JSONL file, oldest first, read in blocks from the end."""
    if count < 0:
        raise ValueError(f"count must be >= 0, not {count}")
    position = file.seek(0, io.SEEK_END)
    data = b""
    # One newline more than count marks the start of the oldest line we need.
    while position > 0 and data.count(b"\n") <= count:
        step = min(block_size, position)
        position -= step
        file.seek(position)
        data = file.read(step) + data
    lines = data.split(b"\n")
    if position > 0:
        lines = lines[1:]  # the piece in front of the first newline may be the end of a longer line
    fragment = lines.pop()  # b"" when the file ends with a newline
    records = [json.loads(line) for line in lines]
    if fragment:
        records.append(json.loads(fragment))
    return records[len(records) - count:] if count else []
