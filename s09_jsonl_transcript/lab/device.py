"""What the device holds, not what the page cache says (issue 53).

On Linux a failed writeback is reported to one fsync of each open file (errseq); the kernel then
marks the pages clean and keeps serving, from the page cache, bytes the device never got
(PostgreSQL's "fsyncgate", 2018). A retried fsync returns success and a new open() sees no error.
A writer restarted after a crash would read such bytes as committed records and append after
them: its event is acknowledged, then lost with them at the next reboot.

So a writer of the lab reads the end of its file from the device. It asks the kernel to drop the
clean cached pages it is about to read (posix_fadvise DONTNEED) and reads them again. Dirty
pages cannot be dropped: when the file's last page is still cached after the drop (a preadv with
RWF_NOWAIT answers from the cache only), something wrote the end and never synced it, so the
writer makes it durable first (fsync: the bytes reach the device or the open fails), then drops
and reads again. What the writer then counts is on the device.

Where posix_fadvise or RWF_NOWAIT does not exist (macOS), nothing can be dropped: the writer
fsyncs at every open, which makes dirty bytes durable but cannot detect clean pages a failed
fsync left behind. Where the drop does nothing because the cache is the storage (tmpfs), the
last page always looks cached: the writer fsyncs (a no-op there) and reads the only copy there is.
"""

from __future__ import annotations

import mmap
import os
from typing import Callable

PAGE = mmap.PAGESIZE
CAN_DROP = hasattr(os, "posix_fadvise") and hasattr(os, "preadv") and hasattr(os, "RWF_NOWAIT")


def page_floor(offset: int) -> int:
    """The start of the page that holds byte offset."""
    return offset - offset % PAGE


def drop_cached(fd: int, start: int, end: int | None = None) -> None:
    """Ask the kernel to forget fd's clean cached pages from the page holding start up to end (a
    page boundary), or to the end of the file, so that the next read of them comes from the
    device. Dirty pages, and pages under writeback or mapped, stay. Nothing where CAN_DROP is false."""
    if CAN_DROP:
        first = page_floor(start)
        os.posix_fadvise(fd, first, 0 if end is None else max(end - first, 0), os.POSIX_FADV_DONTNEED)


def cached(fd: int, offset: int) -> bool:
    """True when the page holding byte offset of fd is in the page cache (True where nobody can tell).

    The probe reads one byte with RWF_NOWAIT, which answers from the cache or not at all; when
    the page is missing it also starts reading it, which the caller's read then finds.
    """
    if not CAN_DROP:
        return True
    try:
        os.preadv(fd, [bytearray(1)], offset, os.RWF_NOWAIT)
    except BlockingIOError:
        return False
    except OSError:  # a file system that refuses RWF_NOWAIT (EOPNOTSUPP): nobody can tell
        return True
    return True


def settle_end(fd: int, size: int, fsync: Callable[[int], None]) -> None:
    """Make the end of fd's file (size bytes) come from the device on the next read.

    The last page's clean copy is dropped; if it is still cached (dirty: written and never synced),
    fsync makes it durable (its error is the caller's), and the page is dropped again.
    """
    last_page = page_floor(size - 1)
    drop_cached(fd, last_page)
    if cached(fd, size - 1):
        fsync(fd)
        drop_cached(fd, last_page)


class DeviceReader:
    """Reads of one file through its descriptor, each range's clean cached pages dropped first,
    once: dropped_from is the page from which everything to the end of the file was dropped
    already (None: nothing yet)."""

    def __init__(self, fd: int, dropped_from: int | None = None,
                 read: Callable[[int, int], bytes] | None = None):
        self.fd = fd
        self.dropped_from = dropped_from
        self._read = read or (lambda start, length: os.pread(fd, length, start))  # read(start, length)

    def read(self, start: int, length: int) -> bytes:
        """length bytes from start (fewer at the end of the file), as the device holds them."""
        if self.dropped_from is None or start < self.dropped_from:
            drop_cached(self.fd, start, self.dropped_from)
            self.dropped_from = page_floor(start)
        return self._read(start, length)


def device_copy(fd: int, start: int, end: int) -> bytes:
    """The bytes start..end of fd's file as the device holds them (fsync the file first: a dirty
    page is not dropped, so it would be read from the cache)."""
    return DeviceReader(fd).read(start, end - start)
