# Attack: append hands the line to a thread and returns without waiting for it; the thread writes and
# syncs after the acknowledgement (the next append waits for it, so it always does, within the
# session). Refused (other-process): the acknowledgement did not wait for the work.
# ruff: noqa: F821
import threading

_writers = []


def _later(fd, line):
    os.write(fd, line)
    os.fsync(fd)
    os.close(fd)


def _write_durably(fd, line):
    for writer in _writers:
        writer.join()
    _writers[:] = [threading.Thread(target=_later, args=(os.dup(fd), line))]
    _writers[0].start()
