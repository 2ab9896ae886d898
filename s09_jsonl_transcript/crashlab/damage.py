"""Damage a transcript file the way crashes and bad disks do, and ask the reader for its verdict.

Used by notebook 3 (partial tail vs mid-file corruption) and by the crash lab. Every tool
changes a real file in place; `verdict` reads it with a fresh DurableTranscript.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..code import TranscriptCorruptionError
from ..lab import DurableTranscript

CLEAN = "clean"
PARTIAL_TAIL = "partial tail ignored"
CORRUPT = "corrupt"
SILENT = "accepted with different content"
VERDICT_KINDS = (CLEAN, PARTIAL_TAIL, CORRUPT, SILENT)


@dataclass(frozen=True)
class Verdict:
    """What the reader made of a (possibly damaged) file."""

    kind: str  # one of VERDICT_KINDS
    events: int  # events the reader returned (0 when it raised)
    line: int | None = None  # the line TranscriptCorruptionError named
    detail: str = ""

    def __str__(self):
        if self.kind == CORRUPT:
            return f"TranscriptCorruptionError at line {self.line}: {self.detail}"
        return f"{self.kind} ({self.events} events)"


def truncate_at(path, offset: int) -> None:
    """Cut the file to its first `offset` bytes (a write that never finished)."""
    with open(path, "r+b") as file:
        file.truncate(offset)


def flip_byte(path, offset: int, mask: int = 0x01) -> None:
    """XOR one byte with mask (default: one bit of rot)."""
    data = bytearray(Path(path).read_bytes())
    data[offset] ^= mask
    Path(path).write_bytes(bytes(data))


def _edit_lines(path, edit) -> None:
    lines = Path(path).read_bytes().split(b"\n")
    tail = lines.pop()  # b"" when the file ends with a newline
    edit(lines)
    Path(path).write_bytes(b"".join(line + b"\n" for line in lines) + tail)


def insert_line(path, line_number: int, content: bytes = b"this is not json") -> None:
    """Insert a complete line before line `line_number` (1-based)."""
    _edit_lines(path, lambda lines: lines.insert(line_number - 1, content))


def delete_line(path, line_number: int) -> None:
    """Remove complete line `line_number` (leaves a sequence gap)."""
    _edit_lines(path, lambda lines: lines.pop(line_number - 1))


def duplicate_line(path, line_number: int) -> None:
    """Write complete line `line_number` twice in a row."""
    _edit_lines(path, lambda lines: lines.insert(line_number - 1, lines[line_number - 1]))


def swap_lines(path, line_number: int) -> None:
    """Exchange complete line `line_number` (1-based) with the line after it."""
    def swap(lines):
        index = line_number - 1
        lines[index], lines[index + 1] = lines[index + 1], lines[index]

    _edit_lines(path, swap)


def rewrite_line(path, line_number: int) -> None:
    """Change one field of record `line_number` and write it back as valid JSON, chain untouched.

    This is an edit a person or a buggy tool could make: the line still parses and keeps
    its sequence; only a checksum can tell.
    """
    def rewrite(lines):
        record = json.loads(lines[line_number - 1])
        record["recorded_at"] = "1999-12-31T23:59:59+00:00"
        lines[line_number - 1] = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8")

    _edit_lines(path, rewrite)


def append_zeros(path, count: int = 16) -> None:
    """Append NUL bytes with no newline, as a file system may after a crash mid-append."""
    with open(path, "ab") as file:
        file.write(b"\0" * count)


def verdict(path, reference_events: list | None = None, *, integrity: bool = False) -> Verdict:
    """Read the file and classify the outcome.

    With reference_events (what the undamaged file held), events that parse but
    differ from the reference are reported as SILENT: the damage went unnoticed.
    """
    return judge(lambda: DurableTranscript(path, integrity=integrity).scan(), reference_events)


def judge(read: Callable[[], object], reference_events: list | None = None) -> Verdict:
    """The verdict on what read() returns (its .events and .ignored_partial_tail), or on the corruption it raises."""
    try:
        result = read()
    except TranscriptCorruptionError as error:
        return Verdict(CORRUPT, 0, error.line_number, error.reason)
    events = result.events
    if reference_events is not None and events != reference_events[: len(events)]:
        changed = next(i for i, (a, b) in enumerate(zip(events, reference_events)) if a != b)
        return Verdict(SILENT, len(events), changed + 1, "a record changed and still passed validation")
    if result.ignored_partial_tail:
        return Verdict(PARTIAL_TAIL, len(events), None, "partial tail ignored (never acknowledged)")
    return Verdict(CLEAN, len(events))


def _map(name: str, original: bytes, damaged_copies, integrity: bool) -> list[Verdict]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name  # same name: the session id is the file's stem
        path.write_bytes(original)
        reference = DurableTranscript(path, integrity=integrity).read_events()
        verdicts = []
        for data in damaged_copies:
            path.unlink()  # a new file: rewriting a truncated one in place makes ext4 flush each time
            path.write_bytes(data)
            verdicts.append(verdict(path, reference, integrity=integrity))
        return verdicts


def truncation_map(path, *, integrity: bool = False) -> list[Verdict]:
    """The verdict for the file truncated at every offset 0..size (index = bytes kept)."""
    original = Path(path).read_bytes()
    return _map(Path(path).name, original, (original[:offset] for offset in range(len(original) + 1)), integrity)


def flip_map(path, mask: int = 0x01, *, integrity: bool = False) -> list[Verdict]:
    """The verdict for the file with the byte at each offset XORed with mask (index = offset)."""
    original = Path(path).read_bytes()

    def flipped(offset):
        return original[:offset] + bytes([original[offset] ^ mask]) + original[offset + 1:]

    return _map(Path(path).name, original, (flipped(offset) for offset in range(len(original))), integrity)
