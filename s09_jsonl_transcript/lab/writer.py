"""The lab's write path: the lesson's append (one os.write on an O_APPEND descriptor, then fsync)
hardened for production.

`DurableWriter` is the writer half of `DurableTranscript`. Beyond the lesson it
  - detects os.fork(): a child never writes through the descriptor (and the lock) it inherited;
  - writes the rest of a short write but its last two bytes, so that the kernel says why (ENOSPC,
    EFBIG, EDQUOT) and the tail stays torn;
  - never counts bytes only the page cache holds (lab/device.py: a failed fsync on Linux leaves such
    bytes behind): it reads the end of its file from the device when it opens, unless the last writer
    closed it cleanly (the mark it leaves), and syncs the folder that really holds a new file's name,
    even through a symbolic link;
  - checks, after the fsync, that the path still names the file it wrote, grown by this write alone;
  - undoes a failed write durably (truncate, then fsync) and, when that fails too, raises
    TranscriptOutcomeUnknownError naming the record that may be on disk, and appends no more;
    durable_commit(event_id), on a new instance, then says whether that record is committed, on the device;
  - reports every failed file call as TranscriptIOError naming the step and the path.
Every call that changes the disk goes through `file_io` (the lesson's FileIO seam).
"""

from __future__ import annotations

import errno
import fcntl
import os
import threading
import weakref
from pathlib import Path

from .. import code
from ..code import FileIO, TranscriptCorruptionError, TranscriptLockedError, event_id_for
from . import device

_forks = 0  # how many os.fork() calls made this process (each adds one in the child)


def _count_fork() -> None:
    global _forks
    _forks += 1


os.register_at_fork(after_in_child=_count_fork)


class TranscriptIOError(OSError):
    """A file call failed (errno, strerror, filename say which); an append it stopped was undone."""


class TranscriptOutcomeUnknownError(TranscriptIOError):
    """Undoing a failed append failed: its record may be on disk. The instance appends no more."""

    sequence: int
    event_id: str


def as_io_error(error: BaseException, operation: str, path, note: str = "") -> BaseException:
    """error, or for an OSError the library's own TranscriptIOError naming operation and path."""
    if not isinstance(error, OSError) or isinstance(error, TranscriptIOError):
        return error
    return TranscriptIOError(error.errno, f"{operation} failed: {error.strerror}{note}", str(path))


def regular(path, flags: int = os.O_RDONLY, opener=None) -> int:
    """The lesson's FIFO-safe open (code.regular): path's descriptor if it is a regular file; else the
    lesson's refusal (OSError EINVAL) as the lab's TranscriptIOError. Nothing blocks on a FIFO."""
    try:
        return code.regular(path, flags, opener)
    except OSError as error:
        if error.errno != errno.EINVAL or isinstance(error, TranscriptIOError):
            raise
        raise TranscriptIOError(error.errno, error.strerror, error.filename) from None


def holding_folder(path: Path) -> Path:
    """The folder that holds path's name: its parent, or where a symbolic link at path leads (O_CREAT
    through a link makes the file there, and that folder is the one to sync)."""
    return Path(os.path.realpath(path)).parent if os.path.islink(path) else path.parent


def make_folders(folder: Path) -> None:
    """Create folder and its missing parents, each new folder's name made durable in its parent."""
    if not folder.exists():
        make_folders(folder.parent)
        folder.mkdir(exist_ok=True)  # another process may have made it first
        try:
            FileIO().fsync_dir(folder.parent)
        except OSError:
            folder.rmdir()  # so that a retry makes it again, and syncs it
            raise


class DurableWriter:
    """The writer of one transcript file, for a class that sets path, filepath, session_id,
    file_io, lock and next_sequence and defines read_for_writer(fd) (what the file's end holds: a
    ScanResult) and scan(). Hold `lock` around open_writer and write_durably."""

    open_flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC  # writes land at the end; the end is read here
    path: Path
    filepath: str
    session_id: str
    file_io: FileIO
    lock: threading.RLock
    next_sequence: int  # the next append's sequence: known once open_writer has read the file's end

    def _start_writer_state(self) -> None:
        # the writer's descriptor, the fork count when it opened, its closer, and (device, inode,
        # size) of its file; outcome_unknown: set when undoing a failed append failed
        self._fd: int | None = None
        self._writer_forks: int | None = None
        self._closer: weakref.finalize | None = None
        self._file_state: tuple[int, int, int] | None = None
        self.outcome_unknown: TranscriptOutcomeUnknownError | None = None

    def read_for_writer(self, fd: int, *, from_device: bool = True):
        """What a new writer must know of the file's end, read through its descriptor fd as the device
        holds it (lab/device.py: DeviceReader), or from the cache when from_device is False (the file
        is settled): next_sequence, partial_tail_offset and last_line_unterminated (the class that
        mixes this in reads it)."""
        raise NotImplementedError

    def scan(self, on_record=None, *, report_damage: bool = False):
        """Read and validate the whole file: a ScanResult (the class that mixes this in reads it)."""
        raise NotImplementedError

    def open_writer(self) -> None:
        """Become the writer (hold `lock`): open, lock, repair the end, learn next_sequence. At once
        when this process holds it already: opened here, and not before an os.fork() (a child
        counts the fork, so its first append comes here and drops the descriptor it inherited)."""
        if self._fd is not None and self._writer_forks == _forks:
            return
        if self._fd is not None:  # inherited through os.fork(): the parent still writes through it
            self._drop_writer()  # closes our copy only; the parent's descriptor and lock stay
        if self.outcome_unknown:  # whether that record is on disk, only a new instance may judge
            raise self.outcome_unknown
        fd = None
        try:
            make_folders(self.path.parent)
            fd = regular(self.path, self.open_flags, self.file_io.open)
            try:  # one writer per file, even within one process: flock
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise TranscriptLockedError(f"{self.path.name} is being written by another "
                                            "writer (one writer per transcript)") from None
            found = os.fstat(fd)
            settled = found.st_size > 0 and device.is_settled(fd, found)  # closed cleanly: nothing written since
            if found.st_size == 0:  # nothing acknowledged here: nobody proved the name durable
                self.file_io.fsync_dir(holding_folder(self.path))  # a name is durable once its folder is
            elif not settled and not device.CAN_DROP:  # no way to read the device (macOS): make it durable
                self.file_io.fsync(fd)
            end = self.read_for_writer(fd, from_device=not settled)  # once: after this, appends never read it
            if end.partial_tail_offset is not None:
                self.file_io.truncate(fd, end.partial_tail_offset)  # never acknowledged: cut it
                self.file_io.fsync(fd)
            elif end.last_line_unterminated:
                self.file_io.write(fd, b"\n")  # a whole record lost only its newline: keep it
                self.file_io.fsync(fd)
            self._file_state = (found.st_dev, found.st_ino, os.lseek(fd, 0, os.SEEK_END))
        except BaseException as error:
            if fd is not None:
                self.file_io.close(fd)
            raise as_io_error(error, "open the writer", self.path)
        self._fd, self._writer_forks, self.next_sequence = fd, _forks, end.next_sequence
        self._closer = weakref.finalize(self, self.file_io.close, fd)  # a dropped one unlocks

    def _drop_writer(self) -> None:
        if self._fd is not None and self._closer is not None:
            self._fd = self._writer_forks = None
            self._closer()

    def acquire_writer(self) -> None:
        """Become this transcript's one writer now, as the first append would (TranscriptLockedError if taken)."""
        with self.lock:
            self.open_writer()

    def close(self) -> None:
        """Release the writer's descriptor and its lock; a later append opens them again. A writer of
        this process that did not fail since it opened leaves the mark of a clean close (device.SETTLED):
        the file's end is on the device, so the next writer need not read it from there."""
        with self.lock:
            if self._fd is not None and self._writer_forks == _forks and self._file_state is not None:
                device.mark_settled(self._fd, *self._file_state)
            self._drop_writer()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def check_unchanged(self, written: int) -> None:
        """Raise unless the path still names the writer's file, grown by `written` bytes alone."""
        now = os.stat(self.filepath)
        if (now.st_dev, now.st_ino, now.st_size - written) != self._file_state:
            raise OSError(errno.ESTALE, "the path names another file now, or the file changed")
        self._file_state = (now.st_dev, now.st_ino, now.st_size)

    def write_durably(self, data: bytes) -> None:
        """The durable write (hold `lock`, the writer open): one os.write of all of data on the
        O_APPEND descriptor, fsync, and a check that the path still names this file. What fails is
        cut off durably (truncate, then fsync), so a retry writes the event once; if the cut fails
        too, the record may be on disk: TranscriptOutcomeUnknownError, and this instance appends no
        more. Either way the writer is dropped: the next append reopens and reads the end again."""
        fd = self._fd
        assert fd is not None, "open_writer() first"
        end_before = os.lseek(fd, 0, os.SEEK_END)  # the file's size: where the write lands
        step = "write"
        try:
            written = self.file_io.write(fd, data)  # os.write
            if written != len(data):  # a short write: a second write makes the kernel say why it stopped;
                # it leaves out the last record's closing brace and newline, so the tail stays torn
                # (a partial tail every reader ignores) whatever the kernel does with it
                if data[written:-2]:
                    self.file_io.write(fd, data[written:-2])
                raise OSError(errno.ENOSPC, f"the disk is full: {written} of {len(data)} bytes")
            step = "fsync"
            self.file_io.fsync(fd)
            step = "check"
            self.check_unchanged(len(data))  # never acknowledge to a file no reader finds
        except BaseException as error:
            try:  # undo: the cut is a change too, durable only once synced
                self.file_io.truncate(fd, end_before)
                self.file_io.fsync(fd)
            except BaseException as undo_error:
                last = self.next_sequence + data.count(b"\n") - 1  # a batch is there if its last is
                event_id = event_id_for(self.session_id, last)
                text = f"{step} failed, and undoing it too: {event_id} may be on disk"
                unknown = TranscriptOutcomeUnknownError(errno.EIO, text, self.filepath)
                unknown.sequence, unknown.event_id, self.outcome_unknown = last, event_id, unknown
                raise unknown from undo_error
            finally:
                self._drop_writer()  # fail closed: the next append reopens and re-reads the tail
            raise as_io_error(error, step, self.path, "; the append was undone")

    def read_settled_end(self):
        """The file's end as the device holds it (what read_for_writer finds: its last commit), read
        under the writer's lock without becoming the writer: TranscriptLockedError while a writer holds
        the file, FileNotFoundError when there is none. Nothing is created, cut or repaired."""
        with self.lock:
            fd = regular(self.path)
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    raise TranscriptLockedError(f"{self.path.name} is being written by another writer") from None
                if not device.CAN_DROP:
                    self.file_io.fsync(fd)
                return self.read_for_writer(fd)
            finally:
                os.close(fd)

    def durable_commit(self, event_id: str) -> list[dict] | None:
        """After TranscriptOutcomeUnknownError, on a new instance: the records of the commit that ends
        at event_id once they are on the device, or None when that commit is not in the file (append
        it again). Found means durable, not only readable.

        It takes the writer (whose open reads the file's end from the device and cuts a torn tail),
        fsyncs the file (what the cache holds dirty reaches the device, or TranscriptIOError), and
        reads the commit's bytes again from the device: TranscriptCorruptionError when the device
        does not hold what the cache shows (damage in front of the file's end).
        """
        with self.lock:
            self.open_writer()
            fd = self._fd
            assert fd is not None, "open_writer() holds the writer"
            try:
                self.file_io.fsync(fd)
            except BaseException as error:
                self._drop_writer()  # fail closed: the next call reopens and reads the end again
                raise as_io_error(error, "fsync", self.path) from None
            scanned = self.scan()
            found = [index for index, record in enumerate(scanned.events) if record["event_id"] == event_id]
            if not found:
                return None
            first = last = found[0]
            while first > 0 and scanned.events[first - 1].get("batch_end") == scanned.events[last]["sequence"]:
                first -= 1
            start = scanned.offsets[first]
            end = scanned.offsets[last + 1] if last + 1 < len(scanned.offsets) else os.fstat(fd).st_size
            with open(self.path, "rb") as cached:
                cached.seek(start)
                if cached.read(end - start) != device.device_copy(fd, start, end):
                    raise TranscriptCorruptionError(self.path, None, start, f"the page cache holds {event_id}, "
                                                    "the device does not")
            return scanned.events[first: last + 1]
