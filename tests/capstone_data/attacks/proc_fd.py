# Another name for the same file: append writes through /proc/self/fd/N. The recorder resolves every
# descriptor to its file, so this is the reference's behaviour exactly, and scores as it does.
# ruff: noqa: F821
_plain_open = _open_for_append


def _open_for_append(path):
    fd = _plain_open(path)
    try:
        return os.open(f"/proc/self/fd/{fd}", os.O_WRONLY | os.O_APPEND)
    finally:
        os.close(fd)
