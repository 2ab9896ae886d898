# Attack: append returns at once; a child process writes and syncs the line after the acknowledgement
# (the next append waits for it, so it always does, within the session). Refused (other-process):
# the acknowledgement did not wait for the work.
# ruff: noqa: F821
_children = []


def _write_durably(fd, line):
    for child in _children:
        os.waitpid(child, 0)
    _children.clear()
    child = os.fork()
    if child == 0:
        os.write(fd, line)
        os.fsync(fd)
        os._exit(0)
    _children.append(child)
