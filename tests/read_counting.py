"""Counting what a module's readers read, in a way that cannot count nothing by mistake (issue #26 section 5).

The lab's readers open the transcript with the builtin `open`, so a test shadows `open` in the module
that reads (s09_jsonl_transcript.lab.transcript) and counts the bytes each read returns. Shadowing a name in the
wrong module counts nothing and every budget holds: `counted_reads` therefore fails when no file was
opened through it while it was in place. `ReadsEverything` is the reader each read-cost test must catch:
it answers every tail read by reading the whole file.
"""

from __future__ import annotations

import builtins
from contextlib import contextmanager

from s09_jsonl_transcript.lab import DurableTranscript


class ReadCounter:
    """The sizes of the reads made through the patched open, and how many files it opened."""

    def __init__(self):
        self.sizes, self.opened = [], 0

    @property
    def total(self) -> int:
        """Bytes read since the last clear()."""
        return sum(self.sizes)

    def clear(self) -> None:
        """Start counting bytes again (the count of opened files is kept)."""
        self.sizes.clear()


class _CountingFile:
    def __init__(self, file, counter: ReadCounter):
        self.file, self.counter = file, counter

    def read(self, *args):
        data = self.file.read(*args)
        self.counter.sizes.append(len(data))
        return data

    def readline(self, *args):
        data = self.file.readline(*args)
        self.counter.sizes.append(len(data))
        return data

    def __getattr__(self, name):
        return getattr(self.file, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.file.close()


@contextmanager
def counted_reads(module):
    """Count the reads of every file `module` opens with `open` inside the block; AssertionError at
    the end of the block if it opened none (the patch was in the wrong place, or the reads moved)."""
    counter = ReadCounter()
    real_open = builtins.open
    shadowed = vars(module).get("open")

    def counting_open(*args, **kwargs):
        counter.opened += 1
        return _CountingFile(real_open(*args, **kwargs), counter)

    module.open = counting_open  # a module global shadows the builtin for that module's code only
    try:
        yield counter
    finally:
        if shadowed is None:
            del module.open
        else:
            module.open = shadowed
    assert counter.opened, f"no file was opened through {module.__name__}.open: the count measured nothing"


class ReadsEverything(DurableTranscript):
    """A DurableTranscript whose tail reads, the writer's included, read the whole file: what every
    read-cost test must refuse."""

    def read_for_writer(self, fd: int, *, from_device: bool = True):
        return self.read_recent(1)

    def read_recent(self, count: int, *, before: int | None = None):
        scanned = self.scan()
        kept = len(scanned.offsets) if before is None else sum(1 for offset in scanned.offsets if offset < before)
        first = max(kept - count, 0)
        scanned.events, scanned.offsets = scanned.events[first:kept], scanned.offsets[first:kept]
        return scanned
