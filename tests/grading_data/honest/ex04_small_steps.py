# An honest reader that asks for less than the reference: 256 bytes at a time from the end,
# whatever block_size says, and never a byte more than it needs. Full marks.
# %% ex04-tail
def tail_records(file, count, block_size=4096):
    """The last count records, read backwards in 256-byte steps."""
    if count < 0:
        raise ValueError(f"count must be >= 0, not {count}")
    end = position = file.seek(0, io.SEEK_END)
    data = b""
    while position > 0 and data.count(b"\n") <= count:
        step = min(256, position)
        position -= step
        file.seek(position)
        data = file.read(step) + data
    lines = data.split(b"\n")
    if position > 0:
        lines = lines[1:]
    fragment = lines.pop()
    records = [json.loads(line) for line in lines]
    if fragment:
        try:
            records.append(json.loads(fragment))
        except ValueError:
            pass
    del end
    return records[len(records) - count:] if count else []
