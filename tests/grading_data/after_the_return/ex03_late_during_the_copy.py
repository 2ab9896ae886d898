# Added to the reference answer (the test appends it to the answer cell): ShardedTranscript.close forks, the first
# time it is called, a child that waits until the answer has returned (a pipe the answer closes as it returns),
# then until the grader opens the first shard to copy the folder back, and then at once adds a line to the last
# shard, which the grader copies after the first and after the 300 notes close leaves between them in the folder's
# order. Unfrozen, the child's line reaches the copy; frozen from the answer's return until the copy back is done,
# it cannot: the check counts the lines the answer left. The constructor, called next, waits for the child and
# reports what it did (so that check fails, with the report).
# %% ex03-sharded
import ctypes
import os

_late = {"forked": False}
_libc = ctypes.CDLL(None, use_errno=True)
_IN_OPEN = 0x20
_close = ShardedTranscript.close
_init = ShardedTranscript.__init__


def _close_then_write_late(self):
    _close(self)
    if _late["forked"]:
        return None
    _late["forked"] = True
    watch = _libc.inotify_init1(os.O_CLOEXEC)
    _libc.inotify_add_watch(watch, os.fsencode(str(self.folder / shard_file_name(self.session_id, 1))), _IN_OPEN)
    last = sorted(self.folder.glob("*.jsonl"))[-1]
    for number in range(300):  # notes, copied back after the first shard and before the others
        (self.folder / f"{shard_file_name(self.session_id, 1)}.note-{number:03}").write_text("a note\n")
    returned, answer_returns = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(answer_returns)
        os.read(returned, 1)  # b"": the answer has returned
        os.read(watch, 4096)  # the grader opens the first shard to copy the folder back
        fd = os.open(last, os.O_WRONLY | os.O_APPEND)
        os.write(fd, b'{"late": true}\n')
        os.close(fd)
        report = os.open("/tmp/late-child.json", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(report, b'{"wrote": true, "shard": "%s"}' % last.name.encode())
        os.close(report)
        os._exit(0)
    os.close(returned)
    os.close(watch)
    _late["child"] = child
    try:
        return None
    finally:
        os.close(answer_returns)  # as the answer returns


def _init_after_the_late_child(self, *args, **kwargs):
    child = _late.pop("child", None)
    if child is not None:
        os.waitpid(child, 0)  # the late child has written and gone
        with open("/tmp/late-child.json", encoding="utf-8") as report:
            raise AssertionError("LATE-CHILD " + report.read())
    _init(self, *args, **kwargs)


ShardedTranscript.close = _close_then_write_late
ShardedTranscript.__init__ = _init_after_the_late_child
