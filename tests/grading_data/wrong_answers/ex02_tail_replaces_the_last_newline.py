# ex02: removes the file's last newline before adding the fragment, to make the last line look
# torn; but that changes a record already in the file.
# loses: ex02.1
# %% ex02-partial-tail
def make_partial_tail(path):
    """Append the start of one more record, with no newline: what a crash during an append leaves."""
    data = Path(path).read_bytes()
    Path(path).write_bytes(data[:-1] + b'{"schema_version":1,"sequence":13,"event_id":"transcr')
