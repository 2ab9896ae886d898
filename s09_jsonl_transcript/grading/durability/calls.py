"""Every system call on the transcript is either modelled or refused with a reason: the table, and
the tracker that turns an answer's recorded calls into the power-loss model's changes.

ROWS is the one table (docs/grading.md renders it, and each row has its test). A refused call ends
the recording: the submission is scored with the row's reason, since the model could not say what
a power cut would keep of what it did. The tracker follows one file (the transcript) and its
folder: which descriptors name the file and with what flags (a dup shares them, as the kernel's
open file does), its current bytes (so an O_APPEND write lands at the end), and whether it exists.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from ..words import both
from .kit import Change
from .trace import Call

MODELLED, REFUSED, NO_CHANGE = "modelled", "refused", "no change"


@dataclass(frozen=True)
class Row:
    """One row of the table: the calls it covers, what the model does with them, and why."""

    id: str
    calls: str
    decision: str
    how: str  # both languages


ROWS = (
    Row("create", "open, openat, openat2, creat (creating the file)", MODELLED,
        both("a create: the file exists, its name durable only after an fsync of its folder",
             "一次创建：文件存在了，但它的名字要等文件夹 fsync 之后才持久")),
    Row("truncate-on-open", "O_TRUNC on an existing file", MODELLED,
        both("a truncate to 0 bytes", "一次截断到 0 字节")),
    Row("o-sync", "O_SYNC, O_DSYNC", MODELLED,
        both("every write on that descriptor is a write followed by an fsync (an answer may append "
             "durably without calling fsync)",
             "该描述符上的每次写都是一次写加一次 fsync（答案可以不调用 fsync 而持久追加）")),
    Row("o-direct", "O_DIRECT (at open, or by fcntl F_SETFL)", REFUSED,
        both("direct I/O bypasses the page cache: what a power cut keeps of it depends on the device, "
             "which the model does not know", "直接 I/O 绕过页缓存：断电后留下什么取决于设备，模型不知道")),
    Row("write", "write, writev on an O_APPEND descriptor", MODELLED,
        both("one write at the end of the file (writev: its buffers joined, one write)",
             "在文件末尾的一次写（writev：各缓冲区连成一次写）")),
    Row("write-not-append", "write, writev on a descriptor without O_APPEND", REFUSED,
        both("the contract appends on an O_APPEND descriptor; the recorder does not follow file positions",
             "约定要求在 O_APPEND 描述符上追加；记录器不跟踪文件位置")),
    Row("pwrite", "pwrite64, pwritev", MODELLED,
        both("a write at its offset (at the end on an O_APPEND descriptor, as Linux does)",
             "在其偏移处的一次写（在 O_APPEND 描述符上则在末尾，Linux 就是这样）")),
    Row("pwritev2-flags", "pwritev2 with flags (RWF_APPEND, RWF_DSYNC, ...)", REFUSED,
        both("per-call flags the model does not follow", "模型不跟踪的逐次调用标志")),
    Row("fsync", "fsync, fdatasync of the transcript", MODELLED,
        both("an fsync: the file's bytes and size reach the disk", "一次 fsync：文件的字节和大小到达磁盘")),
    Row("fsync-folder", "fsync, fdatasync of the transcript's folder", MODELLED,
        both("a folder fsync: the file's name reaches the disk", "一次文件夹 fsync：文件的名字到达磁盘")),
    Row("sync", "sync (os.sync)", MODELLED,
        both("an fsync of the file and of its folder", "对文件和文件夹各一次 fsync")),
    Row("syncfs", "syncfs", MODELLED,
        both("an fsync of the file and of its folder (they share one file system)",
             "对文件和文件夹各一次 fsync（它们在同一个文件系统上）")),
    Row("sync-file-range", "sync_file_range", NO_CHANGE,
        both("no change: it starts writeback but makes nothing durable (no metadata, no disk cache flush)",
             "无变化：它启动回写，但不让任何东西持久（没有元数据，也不刷新磁盘缓存）")),
    Row("ftruncate", "ftruncate", MODELLED, both("a truncate", "一次截断")),
    Row("truncate-path", "truncate by path", MODELLED, both("a truncate", "一次截断")),
    Row("fallocate", "fallocate, posix_fallocate", REFUSED,
        both("preallocated room reads as zeros: the model follows writes and truncates only",
             "预分配的空间读出来是零：模型只跟踪写和截断")),
    Row("copy", "copy_file_range, sendfile, splice, tee into the transcript", REFUSED,
        both("bytes copied in from another file or a pipe never pass the recorder",
             "从别的文件或管道拷进来的字节不经过记录器")),
    Row("rename", "rename, renameat, renameat2 of or onto the transcript or its folder", REFUSED,
        both("the model follows one file under one name; the contract appends, it never replaces the file",
             "模型只跟踪一个名字下的一个文件；约定是追加，从不替换文件")),
    Row("link", "link, linkat to or from the transcript", REFUSED,
        both("a second name for the transcript, through which writes would escape the model",
             "给记录文件起第二个名字，写入会绕过模型")),
    Row("symlink", "symlink, symlinkat at the transcript's name", REFUSED,
        both("the transcript's name would point at another file", "记录文件的名字会指向另一个文件")),
    Row("unlink", "unlink, unlinkat of the transcript or its folder", REFUSED,
        both("removes the transcript: acknowledged events with it", "删除记录文件，连同已确认的事件")),
    Row("dup", "dup, dup2, dup3, fcntl F_DUPFD", MODELLED,
        both("the new descriptor shares the open file, its O_APPEND included",
             "新描述符共享同一个打开的文件，包括它的 O_APPEND")),
    Row("setfl", "fcntl F_SETFL", MODELLED,
        both("O_APPEND turned on or off on the shared open file", "在共享的打开文件上打开或关闭 O_APPEND")),
    Row("other-name", "open of /proc/self/fd/N, or of any other name of the same file", MODELLED,
        both("the same file: the recorder resolves every descriptor to the file it names",
             "同一个文件：记录器把每个描述符解析到它所指的文件")),
    Row("fork", "fork, vfork, clone, clone3", MODELLED,
        both("nothing changes while only the driver's own process calls on the transcript",
             "只要只有驱动程序自己的进程操作记录文件，就没有变化")),
    Row("other-process", "a call on the transcript from another process or thread", REFUSED,
        both("append must have done its work when it returns; a child or thread that writes later is "
             "work the acknowledgement did not wait for",
             "append 返回时必须已经完成工作；之后才写的子进程或线程做的是确认没有等的工作")),
    Row("mmap-shared", "mmap of the transcript with MAP_SHARED", REFUSED,
        both("stores through shared memory reach the file without a system call the recorder sees",
             "通过共享内存的写入不经过记录器能看到的系统调用就到了文件")),
    Row("mmap-private", "mmap of the transcript with MAP_PRIVATE", NO_CHANGE,
        both("no change: a private mapping never writes to the file", "无变化：私有映射从不写回文件")),
    Row("io-uring", "io_uring_setup", REFUSED,
        both("io_uring submits I/O through shared memory the recorder cannot read",
             "io_uring 通过记录器读不到的共享内存提交 I/O")),
    Row("open-by-handle", "open_by_handle_at of the transcript", REFUSED,
        both("a descriptor opened outside any name the recorder follows", "在记录器跟踪的名字之外打开的描述符")),
    Row("unseen-descriptor", "a call on a descriptor the recorder did not see opened", REFUSED,
        both("its flags (O_APPEND, O_SYNC) are unknown", "它的标志（O_APPEND、O_SYNC）未知")),
    Row("too-long", "a write longer than the recorder prints (1 MiB), or whose bytes it could not read", REFUSED,
        both("its bytes are unknown", "它的字节未知")),
    Row("unseen-bytes", "the file afterwards holds bytes the recorded calls do not build", REFUSED,
        both("something wrote to the file without a call the recorder follows",
             "有东西没有通过记录器跟踪的调用就写了文件")),
    Row("read", "read, pread, lseek, fstat, flock, close", NO_CHANGE,
        both("no change (not recorded)", "无变化（不记录）")),
)
ROW = {row.id: row for row in ROWS}

SYNC_FLAGS = os.O_SYNC | os.O_DSYNC
SETFL_MASK = os.O_APPEND | os.O_NONBLOCK | getattr(os, "O_DIRECT", 0) | getattr(os, "O_NOATIME", 0) | 0o20000
F_DUPFD, F_SETFL, F_DUPFD_CLOEXEC = 0, 4, 1030
MAP_SHARED = 0x01
WRITES = ("write", "writev", "pwrite64", "pwritev", "pwritev2")
KILLABLE = (*WRITES, "fsync", "fdatasync", "ftruncate", "truncate")  # what a held kill may stop before
COPIES = ("copy_file_range", "sendfile", "splice", "tee")
NAME_CHANGES = {"rename": "rename", "renameat": "rename", "renameat2": "rename", "link": "link", "linkat": "link",
                "symlink": "symlink", "symlinkat": "symlink", "unlink": "unlink", "unlinkat": "unlink"}  # -> row


@dataclass(frozen=True)
class Refusal:
    """Why the recording was refused: the table's row and the call that fell under it."""

    row: str
    call: str  # the call as the recorder saw it (trimmed), or what was found

    @property
    def reason(self) -> str:
        """The refusal in both languages, with the row's reason."""
        return f"{both('refused', '被拒绝')}: {ROW[self.row].how} [{self.row}: {self.call}]"


@dataclass
class OpenFile:
    """What the kernel's open file holds for the model: its path and flags (shared by dups)."""

    path: str
    flags: int


@dataclass
class Tracker:
    """Follow one transcript through an answer's calls: the model's changes, or a refusal.

    transcript is the file's path as the answer sees it; exists and initial say what was there
    before the first call. Feed it the calls in order (feed), the acknowledgements where they came
    (acknowledge); mark() closes an append and returns the writes it made on the transcript.
    """

    transcript: str
    exists: bool = False
    initial: bytes = b""
    driver: int | None = None  # the driver's process id; calls from any other on the file are refused
    changes: list = field(default_factory=list)
    refusal: Refusal | None = None
    image: bytearray = field(default_factory=bytearray)
    files: dict = field(default_factory=dict)  # descriptor -> OpenFile (the driver's own)
    segment_writes: list = field(default_factory=list)  # (offset, bytes) of each write since the last mark
    kill_points: list = field(default_factory=list)  # the name of each call a held kill could stop, in order

    def __post_init__(self):
        self.image = bytearray(self.initial)
        self.folder = os.path.dirname(self.transcript)

    def refuse(self, row: str, call: Call | str) -> None:
        """Record the first refusal (later ones change nothing)."""
        if self.refusal is None:
            text = call if isinstance(call, str) else call.raw or call.name
            self.refusal = Refusal(row, text[:300])

    def acknowledge(self, numbers) -> None:
        """The answer's append of these events returned: an ack change."""
        self.changes.append(Change("ack", numbers=tuple(numbers)))

    def mark(self) -> list:
        """End of one call of the answer: the writes it made on the transcript, (offset, bytes) each."""
        made, self.segment_writes = self.segment_writes, []
        return made

    def _on_file(self, call: Call) -> bool:
        return self.transcript in (call.path, call.target, call.result_path)

    def feed(self, call: Call) -> None:
        """Take one recorded call into the model (calls that failed, or never ran, change nothing)."""
        if call.name == "io_uring_setup":
            self.refuse("io-uring", call)
            return
        if self.driver is not None and call.pid != self.driver:
            if self._on_file(call) or (call.path == self.folder and call.name in ("fsync", "fdatasync")):
                self.refuse("other-process", call)
            return
        if call.name in KILLABLE and call.path == self.transcript and not call.killed:
            self.kill_points.append(call.name)  # strace's count for a held kill includes failed calls
        if call.killed or call.failed:
            return
        handler = _HANDLERS.get(call.name)
        if handler is not None:
            handler(self, call)

    def _change(self, change: Change) -> None:
        self.changes.append(change)
        if change.kind == "write":
            if len(self.image) < change.offset:
                self.image.extend(bytes(change.offset - len(self.image)))
            self.image[change.offset:change.offset + len(change.data)] = change.data
        elif change.kind == "truncate":
            del self.image[change.length:]
            self.image.extend(bytes(max(0, change.length - len(self.image))))

    # ----------------------------------------------------------- one handler per kind of call

    def _open(self, call: Call) -> None:
        flags = call.flags or 0
        if call.result_path != self.transcript:
            if call.result >= 0:
                self.files[call.result] = OpenFile(call.result_path or "", flags)
            return
        if flags & getattr(os, "O_DIRECT", 0):
            self.refuse("o-direct", call)
            return
        if call.name == "open_by_handle_at":
            self.refuse("open-by-handle", call)
            return
        if not self.exists:
            self._change(Change("create"))
            self.exists = True
        elif flags & os.O_TRUNC and flags & (os.O_WRONLY | os.O_RDWR) and self.image:
            self._change(Change("truncate", length=0))
        self.files[call.result] = OpenFile(self.transcript, flags)

    def _open_file(self, call: Call) -> OpenFile | None:
        known = self.files.get(call.fd)
        if known is None or known.path != call.path:
            self.refuse("unseen-descriptor", call)
            return None
        return known

    def _write(self, call: Call) -> None:
        if call.path != self.transcript:
            return
        known = self._open_file(call)
        if known is None:
            return
        if call.truncated:
            self.refuse("too-long", call)
            return
        appending = bool(known.flags & os.O_APPEND)
        if call.name == "pwritev2" and call.flags:
            self.refuse("pwritev2-flags", call)
            return
        if call.name in ("write", "writev") and not appending:
            self.refuse("write-not-append", call)
            return
        data = (call.data or b"")[:call.result]
        if data:
            offset = len(self.image) if appending else call.offset
            self._change(Change("write", offset=offset, data=data))
            self.segment_writes.append((offset, len(data)))
        if known.flags & SYNC_FLAGS:
            self._change(Change("fsync"))

    def _fsync(self, call: Call) -> None:
        if call.path == self.transcript:
            if self._open_file(call) is not None:
                self._change(Change("fsync"))
        elif call.path == self.folder:
            self._change(Change("fsync_dir"))

    def _sync(self, call: Call) -> None:
        self._change(Change("fsync"))
        self._change(Change("fsync_dir"))

    def _truncate(self, call: Call) -> None:
        if call.path != self.transcript:
            return
        if call.name == "ftruncate" and self._open_file(call) is None:
            return
        self._change(Change("truncate", length=call.length))

    def _fallocate(self, call: Call) -> None:
        if call.path == self.transcript:
            self.refuse("fallocate", call)

    def _copy(self, call: Call) -> None:
        if call.target == self.transcript:
            self.refuse("copy", call)

    def _name_change(self, call: Call) -> None:
        names = {self.transcript, self.folder}
        if call.path in names or call.target in names:
            self.refuse(NAME_CHANGES[call.name], call)

    def _dup(self, call: Call) -> None:
        known = self.files.get(call.fd)
        new = call.result if call.name in ("dup", "fcntl") else call.new_fd
        if known is not None and known.path == call.path:
            self.files[new] = known  # one open file, two descriptors
        elif call.path == self.transcript:
            self.refuse("unseen-descriptor", call)

    def _fcntl(self, call: Call) -> None:
        if call.flags in (F_DUPFD, F_DUPFD_CLOEXEC):
            self._dup(call)
        elif call.flags == F_SETFL and call.path == self.transcript:
            known = self._open_file(call)
            if known is None:
                return
            if (call.length or 0) & getattr(os, "O_DIRECT", 0):
                self.refuse("o-direct", call)
                return
            known.flags = (known.flags & ~SETFL_MASK) | ((call.length or 0) & SETFL_MASK)

    def _mmap(self, call: Call) -> None:
        if call.path == self.transcript and (call.flags or 0) & MAP_SHARED:
            self.refuse("mmap-shared", call)


_HANDLERS = {
    **{name: Tracker._open for name in ("open", "openat", "openat2", "creat", "open_by_handle_at")},
    **{name: Tracker._write for name in WRITES},
    "fsync": Tracker._fsync, "fdatasync": Tracker._fsync,
    "sync": Tracker._sync, "syncfs": Tracker._sync,
    "ftruncate": Tracker._truncate, "truncate": Tracker._truncate,
    "fallocate": Tracker._fallocate,
    **{name: Tracker._copy for name in COPIES},
    **{name: Tracker._name_change for name in NAME_CHANGES},
    "dup": Tracker._dup, "dup2": Tracker._dup, "dup3": Tracker._dup,
    "fcntl": Tracker._fcntl,
    "mmap": Tracker._mmap,
}

# The system calls the recorder traces: every one the handlers above look at, and those that start
# processes (so their calls on the transcript are seen, and refused). "?" skips a name this machine's
# kernel does not have (open, creat, fork ... exist on x86-64 only).
TRACED = ("?open", "openat", "?openat2", "?creat", *WRITES, "fsync", "fdatasync", "sync", "syncfs",
          "sync_file_range", "ftruncate", "truncate", "fallocate", *COPIES, *("?" + name for name in NAME_CHANGES),
          "?dup", "?dup2", "dup3", "fcntl", "clone", "?clone3", "?fork", "?vfork", "mmap", "?io_uring_setup",
          "open_by_handle_at", "chdir")
