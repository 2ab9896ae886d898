# Right answers, but make_partial_tail forks a child that finishes the partial record (adds its newline) after the
# answer has returned: the child waits on a pipe the answer closes as it returns, then for the grader to open the
# file to copy it back, and only then writes. Frozen from the answer's return until the copy back is done, the child
# cannot write before the grader has read the file: the check reads what the answer left, as in plain Python, where
# the check reads the file right after the call. make_bad_line, called next, waits for the child and reports what
# it did (so that check fails, with the child's report in its feedback).
# %% ex02-partial-tail
import ctypes
import os

_late = {}
_libc = ctypes.CDLL(None, use_errno=True)
_IN_OPEN = 0x20


def make_partial_tail(path):
    """Append the start of one more record, with no newline: what a crash during an append leaves."""
    with open(path, "ab") as file:
        file.write(b'{"schema_version":1,"sequence":13,"event_id":"transcr')
    watch = _libc.inotify_init1(os.O_CLOEXEC)  # from now on, any open of the file is seen
    _libc.inotify_add_watch(watch, os.fsencode(str(path)), _IN_OPEN)
    returned, answer_returns = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(answer_returns)
        os.read(returned, 1)  # b"": the answer has returned
        os.read(watch, 4096)  # the grader opens the file to copy it back
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        os.write(fd, b"\n")  # the record is whole now: no partial tail
        os.close(fd)
        report = os.open("/tmp/late-child.json", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(report, b'{"wrote": true, "size": %d}' % os.stat(path).st_size)
        os.close(report)
        os._exit(0)
    os.close(returned)
    os.close(watch)
    _late["child"] = child
    try:
        return None
    finally:
        os.close(answer_returns)  # as the answer returns
# %% ex02-bad-line
def make_bad_line(path, line_number):
    """Replace complete line line_number (1-based) with a complete line that is not a valid record."""
    child = _late.pop("child", None)
    if child is not None:
        os.waitpid(child, 0)  # the late child has written and gone
        with open("/tmp/late-child.json", encoding="utf-8") as report:
            raise AssertionError("LATE-CHILD " + report.read())
    lines = file_lines(path)
    lines[line_number - 1] = b"this line is not a JSON record"
    Path(path).write_bytes(b"\n".join(lines))
