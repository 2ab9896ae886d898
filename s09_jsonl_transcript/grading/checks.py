"""Helpers that the exercises' check cells use.

They live in the package, not in the notebooks, so that they are tested once and every check
cell stays short enough to read.
"""

from __future__ import annotations

import io


class CountingFile:
    """A read-only binary file that counts the bytes handed out by its reads.

    Exercise 4 gives one to tail_records: only the methods below exist, so every byte the
    answer reads is counted. `bytes_read` is the total so far.
    """

    def __init__(self, file):
        if not isinstance(file, (io.BufferedIOBase, io.RawIOBase)) or not file.seekable():
            raise TypeError("CountingFile wraps a seekable binary file, e.g. open(path, 'rb')")
        self._file = file
        self.bytes_read = 0

    def _counted(self, data: bytes) -> bytes:
        self.bytes_read += len(data)
        return data

    def read(self, size: int = -1) -> bytes:
        """Read up to size bytes (all that is left when size is negative)."""
        return self._counted(self._file.read(size))

    def readline(self, size: int = -1) -> bytes:
        """Read one line, newline included."""
        return self._counted(self._file.readline(size))

    def __iter__(self):
        """Iterate over lines, as a file does; every line counts."""
        return iter(self.readline, b"")

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        """Move to a position, as file.seek does; returns the new position. Seeking reads nothing."""
        return self._file.seek(offset, whence)

    def tell(self) -> int:
        """The current position."""
        return self._file.tell()

    def seekable(self) -> bool:
        """Always True."""
        return True

    def readable(self) -> bool:
        """Always True."""
        return True

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self._file.close()

    def close(self) -> None:
        """Close the wrapped file."""
        self._file.close()
