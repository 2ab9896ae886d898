# Attack: append returns at once; a child process writes and syncs the line, on its own time.
# Refused (other-process): the acknowledgement did not wait for the work.
# ruff: noqa: F821
def _write_durably(fd, line):
    if os.fork() == 0:
        os.write(fd, line)
        os.fsync(fd)
        os._exit(0)
