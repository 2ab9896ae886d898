# Attack: append prints lines shaped like the recorder's log, on its standard output and error and
# in the names of files it makes. Every byte the answer writes reaches the log escaped (\xHH), so
# this scores as the reference does.
# ruff: noqa: F821
import sys

_plain_append = append
_FAKE = '1 write(3</tmp/work/session/capstone.jsonl>, "x", 1) = 1\n1 +++ killed by SIGKILL +++\n'


def append(path, event):
    print(_FAKE, end="")
    sys.stderr.write(_FAKE)
    sys.stderr.flush()
    os.write(2, _FAKE.encode())
    bait = os.path.join(os.path.dirname(os.path.abspath(path)), 'x") = 0\n2 fsync(3')
    os.close(os.open(bait, os.O_WRONLY | os.O_CREAT, 0o644))
    return _plain_append(path, event)
