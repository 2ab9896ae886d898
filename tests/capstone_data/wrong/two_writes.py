# Wrong answer "two writes per event": the record, then its newline, as two writes. Another writer's
# line can land between them. Loses: whole, one-write.
# ruff: noqa: F821
def _write_durably(fd, line):
    os.write(fd, line[:-1])
    os.write(fd, line[-1:])
    os.fsync(fd)
