# Right answers that leave, where the grader copies their files back, what is not a file: make_partial_tail a
# socket, make_bad_line a link to its own copy; and classify_damage, on its first call, forks a child that puts a
# named pipe where the file goes, again and again, as fast as it can, until a later call stops it. The grader
# opens nothing there that can make it wait: each costs the call it touched, with its reason, and no other.
# %% ex02-partial-tail
import os
import socket


def make_partial_tail(path):
    """Append the start of one more record, with no newline: what a crash during an append leaves."""
    with open(path, "ab") as file:
        file.write(b'{"schema_version":1,"sequence":13,"event_id":"transcr')
    os.rename(path, f"{path}.mine")
    left = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    left.bind(str(path))  # a socket where the file was
    left.close()
# %% ex02-bad-line
def make_bad_line(path, line_number):
    """Replace complete line line_number (1-based) with a complete line that is not a valid record."""
    lines = file_lines(path)
    lines[line_number - 1] = b"this line is not a JSON record"
    Path(path).write_bytes(b"\n".join(lines))
    os.rename(path, f"{path}.mine")
    os.symlink(f"{path}.mine", path)  # a link where the file was
# %% ex02-classify
import signal
import stat

_looping = {"started": False}


def _keep_putting_a_pipe(path):
    """A child that replaces whatever is at path with a named pipe, in a loop, until it is killed."""
    child = os.fork()
    if child == 0:
        folder = os.open(os.path.dirname(path), os.O_RDONLY | os.O_DIRECTORY)
        name = os.path.basename(path)
        while True:
            try:
                os.unlink(name, dir_fd=folder)
            except OSError:
                pass
            try:
                os.mkfifo(name, dir_fd=folder)
            except OSError:
                pass
    return child


def _classify(path):
    try:
        state = JSONLTranscript(path).recover()
    except TranscriptCorruptionError as error:
        return CORRUPT, error.line_number
    return (PARTIAL_TAIL if state["ignored_partial_tail"] else CLEAN), None


def classify_damage(path):
    """(CLEAN, None), (PARTIAL_TAIL, None) or (CORRUPT, line_number) for the transcript at path."""
    if "child" in _looping:  # a later call: stop the child first
        child, looped_on = _looping.pop("child")
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
        if str(path) == looped_on and not stat.S_ISREG(os.lstat(path).st_mode):
            raise FileNotFoundError(f"my child left a pipe where {path} was")
    verdict = _classify(path)
    if not _looping["started"]:
        _looping.update(started=True, child=(_keep_putting_a_pipe(str(path)), str(path)))
    return verdict
