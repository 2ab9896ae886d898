# ex04: splits every block into lines on its own, skipping the pieces a block boundary cuts,
# so a line that spans two blocks is lost; and a negative count is not refused.
# loses: ex04.5 ex04.7 ex04.8
# %% ex04-tail
def tail_records(file, count, block_size=4096):
    """The last count records of the JSONL file, oldest first, read in blocks from the end."""
    position = file.seek(0, io.SEEK_END)
    records = []
    while position > 0 and len(records) < count:
        step = min(block_size, position)
        position -= step
        file.seek(position)
        for line in reversed(file.read(step).split(b"\n")):
            try:
                records.append(json.loads(line))
            except ValueError:
                continue  # empty, torn, or cut by the block boundary
            if len(records) == count:
                break
    return records[::-1]
