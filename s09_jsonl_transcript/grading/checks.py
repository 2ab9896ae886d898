"""Helpers that the exercises' notebooks and check cells use.

They live in the package, not in the notebooks, so that they are tested once and every check
cell stays short enough to read. Inside the grading sandbox this module, the lesson (`code.py`)
and the grader's own plumbing are all of the kit a notebook can import: nothing here implements
an exercise's answer.
"""

from __future__ import annotations

import io
import json
import os
import random

from . import kit

FileIO = kit.lesson().FileIO  # the lesson's writer calls, which UnsyncedFileIO changes


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


class UnsyncedFileIO(FileIO):
    """The lesson's file calls less both fsyncs, for the transcripts that check cells build.

    Those files are test data in a temporary folder, not evidence to keep. On a busy machine each
    fsync waits its turn for a core, so a check that appended 3,000 events one fsync at a time
    took 20 seconds. Give it to a transcript before its first append: `t.file_io = UnsyncedFileIO()`.
    """

    def fsync(self, fd: int) -> None:
        """Nothing: the file need not survive a power cut."""

    def fsync_dir(self, folder) -> None:
        """Nothing, for the same reason."""


def pair(value):
    """value as a tuple when it is a list or a tuple, else value itself.

    In a grading run an answer's tuple (or namedtuple) crosses to the checks as a tuple; run in plain
    Python it is whatever the answer returned. An answer may also return a list: a check that expects
    a pair compares pair(got) with it, so a pair written either way is read the same.
    """
    return tuple(value) if isinstance(value, (list, tuple)) else value


# --------------------------------------------------------------------------- exercise 2's damage


CLEAN = "clean"
PARTIAL_TAIL = "partial tail ignored"
CORRUPT = "corrupt"


def insert_line(path, line_number: int, content: bytes = b"this is not json") -> None:
    """Insert a complete line before line `line_number` (1-based) of the file at path."""
    with open(path, "rb") as file:
        *lines, tail = file.read().split(b"\n")
    lines.insert(line_number - 1, content)
    with open(path, "wb") as file:
        file.write(b"".join(line + b"\n" for line in lines) + tail)


def append_zeros(path, count: int = 16) -> None:
    """Append NUL bytes with no newline, as a file system may after a crash mid-append."""
    with open(path, "ab") as file:
        file.write(b"\0" * count)


# --------------------------------------------------------------------------- what a grading run compares

SEED_VARIABLE = "S09_SEED"  # the grader sets it in the kernel's environment, one seed per grading run


def run_seed() -> int:
    """The grading run's seed (0 outside a grading run): hidden checks draw their inputs from it."""
    try:
        return int(os.environ.get(SEED_VARIABLE, "0"))
    except ValueError:
        return 0


def check_random(check_name: str) -> random.Random:
    """A random generator for one check: the same inputs for the same seed, other inputs for another."""
    return random.Random(f"{run_seed()}/{check_name}")




# --------------------------------------------------------------------------- the capstone's crash properties

CRASH_VERDICT_VARIABLE = "S09_CRASH_VERDICT"  # in a grading, the trusted kernel's path to the verdict (read-only)
_SHOWN_FINDINGS = 2  # byte maps in a check's message (the report lists more)
_MESSAGE_CHARS = 1500  # a check's feedback is cut at 2,000 characters: keep the message whole inside that


class CrashResult:
    """One property of the capstone's verdict, as a check cell sees it: passed, and the findings in words."""

    def __init__(self, property_id: str, passed: bool, findings: str):
        self.property, self.passed, self.findings = property_id, passed, findings

    def __repr__(self):
        return f"CrashResult({self.property!r}, passed={self.passed})"


def crash_property(property_id: str, *answer_functions) -> CrashResult:
    """The capstone's verdict on one property (kept, whole, tail, closed, one-write; see grading/durability).

    In a grading, the verdict was decided outside both kernels, before the notebook ran, on the answer
    cell's source; this reads it from the file the grader put in the checks' sandbox, and the functions
    given are not called. Anywhere else (a student's notebook, plain Python), the local crash check runs
    on the text of the cell that defined answer_functions (append and recover), with this run's seed.
    """
    path = os.environ.get(CRASH_VERDICT_VARIABLE)
    if path:
        with open(path, encoding="utf-8") as file:
            verdict = json.load(file)
    else:
        from .durability.local import cell_source_of, local_check

        verdict = local_check(cell_source_of(*answer_functions), seed=run_seed()).as_json()
    entry = next((entry for entry in verdict["properties"] if entry["id"] == property_id), None)
    if entry is None:
        raise ValueError(f"no crash property {property_id!r} · 没有名为 {property_id!r} 的崩溃属性")
    return CrashResult(property_id, entry["passed"], _findings_words(verdict, entry))


def _findings_words(verdict: dict, entry: dict) -> str:
    """Why a property failed, in both languages: the answer's refusal, or its first findings as byte maps."""
    if verdict["refused"] is not None:
        return ("your answer was refused, so no property holds · 你的答案被拒绝了，所以每个属性都不成立: "
                + verdict["refused"]["reason"])[:_MESSAGE_CHARS]
    findings = entry["findings"]
    count = f"{len(findings)}{'+' if entry['stopped'] else ''}"
    lines = [f"{count} findings (states where the promise broke); the first · {count} 个发现（违背承诺的状态）；"
             f"最先的几个:"]
    for finding in findings[:_SHOWN_FINDINGS]:
        lines += [finding["message"], finding["byte_map"], ""]
    local = " --size local --local" if verdict["recorder"] == "local" else ""
    lines.append(f"replay one · 重放一个: python -m {__package__}.durability replay <notebook> <id> "
                 f"--seed {verdict['seed']}{local}")
    text = "\n".join(lines)
    return text if len(text) <= _MESSAGE_CHARS else text[:_MESSAGE_CHARS - 3] + "..."
