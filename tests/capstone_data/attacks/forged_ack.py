# Attack: before its work, append writes an acknowledgement of its own on the driver's answer pipe.
# The recorder sees that write where it happens (before the data is durable), so the grader counts
# the event acknowledged there: the attack can only lose.
# ruff: noqa: F821
import fcntl
import json as _json

_plain_append = append


def _answer_pipes():
    for fd in range(3, 64):
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:") and \
                    fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY:
                yield fd
        except OSError:
            continue


def append(path, event):
    record = {**envelope(path, _next_sequence(_read_all(path))), **event}
    forged = _json.dumps({"op": "append", "returned": {"type": "dict", "sequence": record["sequence"]}})
    for fd in _answer_pipes():
        os.write(fd, forged.encode() + b"\n")
    return _plain_append(path, event)
