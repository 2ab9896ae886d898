# ex04: right records, but reads the whole file to find them.
# loses: ex04.3 ex04.8
# %% ex04-tail
def tail_records(file, count, block_size=4096):
    """The last count records of the JSONL file, oldest first, read in blocks from the end."""
    if count < 0:
        raise ValueError(f"count must be >= 0, not {count}")
    *lines, fragment = file.read().split(b"\n")
    records = [json.loads(line) for line in lines]
    if fragment:
        try:
            records.append(json.loads(fragment))
        except ValueError:
            pass
    return records[len(records) - count:] if count else []
