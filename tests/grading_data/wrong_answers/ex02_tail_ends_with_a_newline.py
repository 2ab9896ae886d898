# ex02: writes the torn fragment with a newline after it, which makes it a complete bad line
# rather than a torn write.
# loses: ex02.1
# %% ex02-partial-tail
def make_partial_tail(path):
    """Append the start of one more record, with no newline: what a crash during an append leaves."""
    with open(path, "ab") as file:
        file.write(b'{"schema_version":1,"sequence":13,"event_id":"transcr\n')
