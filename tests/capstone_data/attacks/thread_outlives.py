# Attack: append returns at once; a thread writes and syncs the line afterwards. Refused (other-process).
# ruff: noqa: F821
import threading
import time


def _later(fd, line):
    time.sleep(0.02)
    os.write(fd, line)
    os.fsync(fd)
    os.close(fd)


def _write_durably(fd, line):
    threading.Thread(target=_later, args=(os.dup(fd), line)).start()
