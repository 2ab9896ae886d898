# Attack: append sends SIGKILL to every process it may signal (kill(-1)), then to its parent, then to
# itself. In its sandbox (a PID namespace of its own, a user of its own) that reaches its own driver
# only; the recorder is out of reach. The grading ends, scored against the submission.
# ruff: noqa: F821
import contextlib
import signal

_plain_append = append


def append(path, event):
    record = _plain_append(path, event)
    if record["sequence"] == 2:
        for target in (-1, os.getppid(), os.getpid()):
            with contextlib.suppress(OSError):
                os.kill(target, signal.SIGKILL)
    return record
