"""What the device holds, not what the page cache says (issue 53).

On Linux a failed writeback is reported to one fsync of each open file (errseq); the kernel then
marks the pages clean and keeps serving, from the page cache, bytes the device never got
(PostgreSQL's "fsyncgate", 2018). A retried fsync returns success and a new open() sees no error.
A writer restarted after a crash would read such bytes as committed records and append after
them: its event is acknowledged, then lost with them at the next reboot.

A writer of the lab that closes cleanly leaves a mark on its file (an extended attribute, SETTLED: the
file's device, inode and size): what a writer reads of the file's end was on the device when it
closed, its own appends synced, the end it found read from the device when it opened (or covered by
an earlier mark). The next writer, in any process, finds the mark matching its file and reads the end
from the cache: nothing was written since.
A writer that crashed or failed left no mark (or one for another size), and so does a writer outside
the kit; then the next writer reads the end of the file as the device holds it. Before it reads a range it
  1. writes back what is dirty in it and waits (sync_file_range): the bytes reach the device, or the
     writeback's error is raised and the writer does not open. (It does not flush the device's own
     cache as fsync does, so it costs about a microsecond when nothing is dirty.)
  2. asks the kernel to forget the range's cached pages, now all clean (posix_fadvise DONTNEED),
  3. reads the range, which now comes from the device.
Step 1 also keeps the reads the same from run to run: DONTNEED alone starts writing dirty pages
back and drops only those done by then.

Where posix_fadvise or sync_file_range does not exist (macOS), nothing can be dropped: the writer
fsyncs at every open, which makes dirty bytes durable but cannot detect clean pages a failed fsync
left behind (docs/lab.md says what to do there). Where the drop does nothing because the cache is
the storage (tmpfs, ramfs), there is no device to disagree with: the read gets the only copy.
"""

from __future__ import annotations

import ctypes
import mmap
import os
from typing import Callable

PAGE = mmap.PAGESIZE
_WRITE_AND_WAIT = 1 | 2 | 4  # SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER


def _sync_file_range():
    """libc's sync_file_range, or None where there is none."""
    try:
        function = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (AttributeError, OSError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong, ctypes.c_uint]
    function.restype = ctypes.c_int
    return function


_SYNC_FILE_RANGE = _sync_file_range()
CAN_DROP = hasattr(os, "posix_fadvise") and _SYNC_FILE_RANGE is not None
SETTLED = "user.s09.settled"  # the extended attribute a writer that closed cleanly leaves: "<device>:<inode>:<size>"


def _settled_value(device: int, inode: int, size: int) -> bytes:
    return f"{device}:{inode}:{size}".encode()


def is_settled(fd: int, found: os.stat_result) -> bool:
    """True when fd's file carries the mark of a clean close for exactly this file and size (found is its
    fstat): no byte was written since a writer saw all of them on the device. False where there are no
    extended attributes, or no mark."""
    try:
        return os.getxattr(fd, SETTLED) == _settled_value(found.st_dev, found.st_ino, found.st_size)
    except (OSError, AttributeError):  # no mark, no extended attributes here (ENOTSUP), or no os.getxattr
        return False


def mark_settled(fd: int, device: int, inode: int, size: int) -> None:
    """Leave the mark of a clean close on fd's file; where the file system takes no extended attribute,
    nothing (the next writer then reads the end from the device)."""
    try:
        os.setxattr(fd, SETTLED, _settled_value(device, inode, size))
    except (OSError, AttributeError):
        pass


def page_floor(offset: int) -> int:
    """The start of the page that holds byte offset."""
    return offset - offset % PAGE


def drop_cached(fd: int, start: int, end: int | None = None) -> None:
    """Write back fd's dirty pages from the page holding start up to end (a page boundary), or to the
    end of the file, wait for them (OSError if that fails), then ask the kernel to forget those
    pages, so that the next read of them comes from the device. Mapped pages stay cached. Nothing
    where CAN_DROP is false."""
    if not CAN_DROP:
        return
    first = page_floor(start)
    length = 0 if end is None else max(end - first, 0)  # 0: to the end of the file
    if _SYNC_FILE_RANGE(fd, first, length, _WRITE_AND_WAIT) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"writing back the file's end failed: {os.strerror(code)}")
    os.posix_fadvise(fd, first, length, os.POSIX_FADV_DONTNEED)


class DeviceReader:
    """Reads of one file through its descriptor, each range written back and dropped from the cache
    first (once: dropped_from is the page from which everything to the end of the file was dropped
    already, None for nothing yet). With from_device=False, plain reads (the file is settled)."""

    def __init__(self, fd: int, read: Callable[[int, int], bytes] | None = None, *, from_device: bool = True):
        self.fd = fd
        self.dropped_from: int | None = None if from_device else 0
        self._read = read or (lambda start, length: os.pread(fd, length, start))  # read(start, length)

    def read(self, start: int, length: int) -> bytes:
        """length bytes from start (fewer at the end of the file), as the device holds them."""
        if self.dropped_from is None or start < self.dropped_from:
            drop_cached(self.fd, start, self.dropped_from)
            self.dropped_from = page_floor(start)
        return self._read(start, length)


def device_copy(fd: int, start: int, end: int) -> bytes:
    """The bytes start..end of fd's file as the device holds them."""
    return DeviceReader(fd).read(start, end - start)
