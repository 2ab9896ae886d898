"""Every system call on the transcript is modelled or refused with a reason (calls.ROWS): one test per row.

Each row's test records a real answer in its sandbox under strace (an answer made of the reference and
the call the row is about), except the two rows no sandboxed answer can reach, which feed the tracker
the lines strace writes for them.
"""

import pytest
from capstone_answers import QUICK, REFERENCE, attack, recorded, repaired, require_recorder, torn_file, variant

from s09_jsonl_transcript.grading.durability.calls import MODELLED, REFUSED, ROW, ROWS, Tracker
from s09_jsonl_transcript.grading.durability.engine import grade
from s09_jsonl_transcript.grading.durability.trace import parse_line

pytestmark = pytest.mark.usefixtures("recorder")


@pytest.fixture
def recorder():
    require_recorder()


def kinds(changes) -> list:
    return [change.kind for change in changes]


def with_(code: str) -> str:
    """The reference answer with code added after it (a later definition replaces the reference's)."""
    return REFERENCE + "\n\n" + code


def refused_as(recording_or_problem, row: str) -> None:
    problem = getattr(recording_or_problem, "problem", recording_or_problem)
    assert problem is not None and problem.row == row, problem
    assert ROW[row].how in problem.reason  # the reason names the row's why, in both languages


def assert_like_the_reference(recording) -> None:
    assert recording.problem is None, recording.problem.reason
    assert kinds(recording.changes) == kinds(recorded(REFERENCE).changes)


def check_create():
    changes = recorded(REFERENCE).changes
    assert kinds(changes)[:5] == ["create", "write", "fsync", "fsync_dir", "ack"]


def check_truncate_on_open():
    problem, observed = repaired(variant("rewrites_on_repair"), torn_file())
    assert problem is None and observed.problem is None
    assert kinds(observed.repair) == ["truncate", "write", "fsync"] and observed.repair[0].length == 0


def check_o_sync():
    synced = with_('''
def _open_for_append(path):
    return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_SYNC, 0o644)


def _write_durably(fd, line):
    os.write(fd, line)
''')
    recording = recorded(synced)
    assert recording.problem is None
    assert kinds(recording.changes)[:5] == ["create", "write", "fsync", "fsync_dir", "ack"]
    assert grade(synced, seed=2, size=QUICK).lost() == set()  # durable without a call to fsync


def check_o_direct():
    refused_as(recorded(attack("o_direct")), "o-direct")


def check_write():
    changes = [change for change in recorded(REFERENCE).changes if change.kind == "write"]
    assert [change.offset for change in changes] == [0, len(changes[0].data),
                                                    len(changes[0].data) + len(changes[1].data)]


def check_write_not_append():
    positioned = with_('''
def _open_for_append(path):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    os.lseek(fd, 0, os.SEEK_END)
    return fd
''')
    refused_as(recorded(positioned), "write-not-append")


def check_pwrite():
    assert_like_the_reference(recorded(with_('''
def _write_durably(fd, line):
    os.pwrite(fd, line, 0)  # on an O_APPEND descriptor Linux writes at the end whatever the offset
    os.fsync(fd)
''')))
    assert_like_the_reference(recorded(with_('''
def _write_durably(fd, line):
    os.writev(fd, [line[:10], line[10:]])
    os.fsync(fd)
''')))


def check_pwritev2_flags():
    refused_as(recorded(with_('''
def _write_durably(fd, line):
    os.pwritev(fd, [line], 0, os.RWF_DSYNC)
''')), "pwritev2-flags")


def check_fsync():
    changes = recorded(REFERENCE).changes
    assert kinds(changes).count("fsync") == 3


def check_fsync_folder():
    assert kinds(recorded(REFERENCE).changes).count("fsync_dir") == 1


def check_sync():
    changes = recorded(with_('''
def _write_durably(fd, line):
    os.write(fd, line)
    os.sync()


def _fsync_folder(path):
    pass
''')).changes
    assert kinds(changes)[:5] == ["create", "write", "fsync", "fsync_dir", "ack"]


SYNCFS = '''
import ctypes

_libc = ctypes.CDLL(None, use_errno=True)


def _write_durably(fd, line):
    os.write(fd, line)
    _libc.syncfs(fd)


def _fsync_folder(path):
    pass
'''


def check_syncfs():
    changes = recorded(with_(SYNCFS)).changes
    assert kinds(changes)[:5] == ["create", "write", "fsync", "fsync_dir", "ack"]


def check_sync_file_range():
    recording = recorded(with_('''
import ctypes

_libc = ctypes.CDLL(None, use_errno=True)


def _write_durably(fd, line):
    os.write(fd, line)
    _libc.sync_file_range(fd, ctypes.c_long(0), ctypes.c_long(0), 2 | 4)
'''))
    assert recording.problem is None
    assert "fsync" not in kinds(recording.changes)  # it makes nothing durable


def check_ftruncate():
    problem, observed = repaired(REFERENCE, torn_file())
    assert problem is None and observed.problem is None
    assert kinds(observed.repair) == ["truncate", "fsync"]


def check_truncate_path():
    problem, observed = repaired(with_('''
def _cut_tail(path, length):
    os.truncate(path, length)
    fd = os.open(path, os.O_WRONLY)
    os.fsync(fd)
    os.close(fd)
'''), torn_file())
    assert problem is None and observed.problem is None
    assert kinds(observed.repair) == ["truncate", "fsync"]


def check_fallocate():
    refused_as(recorded(with_('''
def _write_durably(fd, line):
    os.posix_fallocate(fd, 0, 4096)
    os.write(fd, line)
    os.fsync(fd)
''')), "fallocate")


def check_copy():
    staged = '''
import tempfile


def _at_end(fd):
    """A descriptor on the same file without O_APPEND, at its end (none of these calls takes an O_APPEND one)."""
    target = os.open(f"/proc/self/fd/{fd}", os.O_WRONLY)
    os.lseek(target, 0, os.SEEK_END)
    return target


def _write_durably(fd, line):
    folder = os.path.dirname(os.readlink(f"/proc/self/fd/{fd}"))  # copy_file_range stays on one file system
    source = tempfile.TemporaryFile(dir=folder)
    source.write(line)
    source.flush()
    source.seek(0)
    {copy}
    os.fsync(fd)
'''
    for copy in ("os.copy_file_range(source.fileno(), _at_end(fd), len(line))",
                 "os.sendfile(_at_end(fd), source.fileno(), 0, len(line))",
                 "read_end, write_end = os.pipe(); os.write(write_end, line); os.splice(read_end, _at_end(fd), "
                 "len(line))"):
        refused_as(recorded(with_(staged.replace("{copy}", copy))), "copy")


def check_rename():
    refused_as(recorded(with_('''
def append(path, event):
    data = _read_all(path)
    record = {**envelope(path, _next_sequence(data)), **event}
    fresh = str(path) + ".new"
    fd = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(fd, data + encode_line(record))
    os.fsync(fd)
    os.close(fd)
    os.rename(fresh, path)
    _fsync_folder(path)
    return record
''')), "rename")


def check_link():
    refused_as(recorded(attack("hard_link")), "link")


def check_symlink():
    refused_as(recorded(with_('''
_plain_open = _open_for_append


def _open_for_append(path):
    if not os.path.lexists(path):
        os.symlink(os.path.basename(path) + ".real", path)
    return _plain_open(path)
''')), "symlink")


def check_unlink():
    problem, observed = repaired(with_('''
_exact_cut = _cut_tail


def _cut_tail(path, length):
    if length == 0:
        os.unlink(path)  # nothing committed: no file at all
    else:
        _exact_cut(path, length)
'''), torn_file(events=0))
    refused_as(observed.problem, "unlink")


def check_dup():
    assert_like_the_reference(recorded(with_('''
def _write_durably(fd, line):
    second = os.dup(fd)
    os.write(second, line)
    os.close(second)
    os.fsync(fd)
''')))


def check_setfl():
    assert_like_the_reference(recorded(with_('''
import fcntl


def _open_for_append(path):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    fcntl.fcntl(fd, fcntl.F_SETFL, os.O_APPEND)
    return fd
''')))


def check_other_name():
    assert_like_the_reference(recorded(attack("proc_fd")))


def check_fork():
    assert_like_the_reference(recorded(with_('''
_plain_append = append


def append(path, event):
    child = os.fork()
    if child == 0:
        os._exit(0)
    os.waitpid(child, 0)
    return _plain_append(path, event)
''')))


def check_other_process():
    refused_as(recorded(attack("child_outlives"), events=5), "other-process")
    refused_as(recorded(attack("thread_outlives"), events=5), "other-process")


def check_mmap_shared():
    refused_as(recorded(attack("mmap_write")), "mmap-shared")


def check_mmap_private():
    assert_like_the_reference(recorded(with_('''
import mmap


def _read_all(path):
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return b""
    try:
        size = os.fstat(fd).st_size
        if not size:
            return b""
        with mmap.mmap(fd, size, mmap.MAP_PRIVATE, mmap.PROT_READ) as mapped:
            return bytes(mapped)
    finally:
        os.close(fd)
''')))


def check_io_uring():
    refused_as(recorded(attack("io_uring")), "io-uring")


TRANSCRIPT = "/tmp/work/session/capstone.jsonl"


def _hex(text: str) -> str:
    return "".join(f"\\x{byte:02x}" for byte in text.encode())


def check_open_by_handle():
    # Only a process with CAP_DAC_READ_SEARCH may call it: never the sandboxed answer. The line is
    # the one strace writes for a successful call on the transcript.
    tracker = Tracker(TRANSCRIPT, driver=7)
    tracker.feed(parse_line(f'7 open_by_handle_at(3<{_hex("/tmp")}>, {{handle_bytes=8, handle_type=1}}, '
                            f'0x401) = 4<{_hex(TRANSCRIPT)}>', {}))
    assert tracker.refusal is not None and tracker.refusal.row == "open-by-handle"


def check_unseen_descriptor():
    # A descriptor the recorder never saw opened (one handed over by a process it does not trace).
    tracker = Tracker(TRANSCRIPT, driver=7)
    tracker.feed(parse_line(f'7 write(9<{_hex(TRANSCRIPT)}>, "{_hex("x")}", 1) = 1', {}))
    assert tracker.refusal is not None and tracker.refusal.row == "unseen-descriptor"


def check_too_long():
    refused_as(recorded(with_('''
def _write_durably(fd, line):
    os.write(fd, line[:-1] + b" " * (1 << 20) + b"\\n")
    os.fsync(fd)
''')), "too-long")


def check_unseen_bytes():
    problem, observed = repaired(with_('''
def _cut_tail(path, length):
    os.truncate("/proc/self/root" + os.path.abspath(path), length)  # a name the recorder does not resolve
'''), torn_file())
    refused_as(observed.problem, "unseen-bytes")


def check_read():
    changes = recorded(REFERENCE).changes
    assert set(kinds(changes)) == {"create", "write", "fsync", "fsync_dir", "ack"}  # its reads changed nothing


CHECKS = {
    "create": check_create, "truncate-on-open": check_truncate_on_open, "o-sync": check_o_sync,
    "o-direct": check_o_direct, "write": check_write, "write-not-append": check_write_not_append,
    "pwrite": check_pwrite, "pwritev2-flags": check_pwritev2_flags, "fsync": check_fsync,
    "fsync-folder": check_fsync_folder, "sync": check_sync, "syncfs": check_syncfs,
    "sync-file-range": check_sync_file_range, "ftruncate": check_ftruncate, "truncate-path": check_truncate_path,
    "fallocate": check_fallocate, "copy": check_copy, "rename": check_rename, "link": check_link,
    "symlink": check_symlink, "unlink": check_unlink, "dup": check_dup, "setfl": check_setfl,
    "other-name": check_other_name, "fork": check_fork, "other-process": check_other_process,
    "mmap-shared": check_mmap_shared, "mmap-private": check_mmap_private, "io-uring": check_io_uring,
    "open-by-handle": check_open_by_handle, "unseen-descriptor": check_unseen_descriptor,
    "too-long": check_too_long, "unseen-bytes": check_unseen_bytes, "read": check_read,
}


def test_every_row_of_the_table_has_its_test():
    assert list(CHECKS) == [row.id for row in ROWS]


@pytest.mark.parametrize("row", [row.id for row in ROWS])
def test_the_row(row):
    CHECKS[row]()


def test_each_row_says_what_the_model_does_in_both_languages():
    for row in ROWS:
        assert row.decision in (MODELLED, REFUSED, "no change")
        english, chinese = row.how.split(" · ", 1)
        assert english and any("\u4e00" <= character <= "\u9fff" for character in chinese), row.id
