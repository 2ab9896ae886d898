# A repair that cuts the tail by writing the committed lines again (O_TRUNC, then one write): for a
# moment the file is empty, and a crash then loses every acknowledged event. Only crashing the
# repair itself finds it. Loses: tail.
# ruff: noqa: F821
def _cut_tail(path, length):
    data = _read_all(path)[:length]
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_TRUNC)
    os.write(fd, data)
    os.fsync(fd)
    os.close(fd)
