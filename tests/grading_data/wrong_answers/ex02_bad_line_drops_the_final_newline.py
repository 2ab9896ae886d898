# ex02: rebuilds the file from splitlines(), which loses the newline after the last line: the
# last record is then an unterminated line, and the file has one line fewer.
# loses: ex02.2
# %% ex02-bad-line
def make_bad_line(path, line_number):
    """Replace complete line line_number (1-based) with a complete line that is not a valid record."""
    lines = Path(path).read_bytes().splitlines()
    lines[line_number - 1] = b"this line is not a JSON record"
    Path(path).write_bytes(b"\n".join(lines))
