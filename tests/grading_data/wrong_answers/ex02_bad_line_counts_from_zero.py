# ex02: numbers lines from 0 when it replaces one, so the line after the one asked for is damaged.
# loses: ex02.2
# %% ex02-bad-line
def make_bad_line(path, line_number):
    """Replace complete line line_number (1-based) with a complete line that is not a valid record."""
    lines = file_lines(path)
    lines[line_number] = b"this line is not a JSON record"
    Path(path).write_bytes(b"\n".join(lines))
