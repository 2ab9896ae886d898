# Attack: append closes every descriptor it did not open, the driver's channel among them.
# The driver can no longer answer: the grading ends, scored against the submission.
# ruff: noqa: F821
_plain_append = append


def append(path, event):
    record = _plain_append(path, event)
    os.closerange(3, 256)
    return record
