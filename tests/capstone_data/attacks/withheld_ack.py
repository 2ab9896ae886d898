# Attack: append never returns its acknowledgement (it waits forever once the file has two records).
# The grader stops it at its time limit and scores it refused, never as its own error.
# ruff: noqa: F821
import time

_plain_append = append


def append(path, event):
    record = _plain_append(path, event)
    if record["sequence"] >= 2:
        time.sleep(3600)
    return record
