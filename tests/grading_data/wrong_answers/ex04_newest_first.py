# ex04: returns the records newest first.
# loses: ex04.1 ex04.2 ex04.3 ex04.4 ex04.5 ex04.6 ex04.8
# %% ex04-tail
def tail_records(file, count, block_size=4096):
    """The last count records of the JSONL file, oldest first, read in blocks from the end."""
    if count < 0:
        raise ValueError(f"count must be >= 0, not {count}")
    position = file.seek(0, io.SEEK_END)
    data = b""
    while position > 0 and data.count(b"\n") <= count:
        step = min(block_size, position)
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
    return list(reversed(records))[:count]
