# Attack: the first append starts a thread that never ends (it would keep a Python process from
# exiting). The driver exits without waiting for it: the grading takes no longer, and scores as the
# reference.
# ruff: noqa: F821
import threading
import time

_plain_append = append
_sleeper = []


def append(path, event):
    if not _sleeper:
        _sleeper.append(threading.Thread(target=lambda: time.sleep(3600)))
        _sleeper[0].start()
    return _plain_append(path, event)
