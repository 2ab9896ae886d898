"""What every importer shares: the source read line by line, the refusal, the evidence record, the summary.

A source file is read in blocks and split on b"\\n" only (JSON text may hold U+2028 and friends).
Each line has exactly one outcome, so the summary can account for every line of the source:

    mapped      it became one or more events of the lesson's types
    evidence    it is kept whole, as a `source-record` event, without being interpreted
    duplicate   it repeats an earlier line (same uuid, or the same part of one streamed message)
    blank       it holds only white space
    partial_tail the last line has no newline and is not JSON: what a crash in the middle of a write leaves
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterator

from ..lab import regular

TYPE_SOURCE_RECORD = "source-record"  # a source line kept as evidence, never mapped to a lesson type
BLOCK_BYTES = 1024 * 1024  # how much of the source is read at a time

MAPPED, EVIDENCE, DUPLICATE, BLANK, PARTIAL_TAIL = "mapped", "evidence", "duplicate", "blank", "partial_tail"
LINE_OUTCOMES = (MAPPED, EVIDENCE, DUPLICATE, BLANK, PARTIAL_TAIL)

_DECODER = json.JSONDecoder()


class ImportRefused(ValueError):
    """The source cannot be imported as asked; nothing was written. The message says why."""


class SecondSession(Exception):
    """A mapper met a record of another session in the same file (two sessions concatenated)."""

    def __init__(self, first: str, second: str):
        super().__init__(f"session {second!r} begins inside session {first!r}")
        self.first = first
        self.second = second


@dataclass(frozen=True)
class SourceLine:
    """One line of the source: its number (from 1), where it starts, its bytes, and whether a newline ends it."""

    number: int
    offset: int
    raw: bytes
    terminated: bool


def source_lines(path, *, stop_at: int | None = None) -> Iterator[SourceLine]:
    """Yield the lines of a file in order, holding about one block in memory; stop at byte stop_at if given.

    Anything but a regular file (a FIFO, a device) is refused at once with the lab's TranscriptIOError.
    """
    number, offset, pending = 0, 0, b""
    with open(regular(path), "rb") as file:
        while True:
            size = BLOCK_BYTES if stop_at is None else min(BLOCK_BYTES, stop_at - offset - len(pending))
            block = file.read(size) if size > 0 else b""
            if not block:
                break
            *complete, pending = (pending + block).split(b"\n")
            for raw in complete:
                number += 1
                yield SourceLine(number, offset, raw, True)
                offset += len(raw) + 1
    if pending:
        yield SourceLine(number + 1, offset, pending, False)


def parse_line(raw: bytes):
    """The JSON value on one line, or raise ValueError (not UTF-8, not JSON, or NaN and friends)."""
    text = raw.decode("utf-8")
    value = _DECODER.decode(text)
    if "NaN" in text or "Infinity" in text:  # rare: check the value only when the text could hold one
        json.dumps(value, allow_nan=False)
    return value


def evidence(record, source_type: str) -> dict:
    """A source record kept whole as evidence: readers keep it, derived views ignore it."""
    return {"type": TYPE_SOURCE_RECORD, "source_type": source_type, "record": record}


def text_of(blocks, kinds=("text",)) -> str | None:
    """The text of a list of content blocks of the given kinds, joined by newlines; None when there is none."""
    parts = [block["text"] for block in blocks
             if isinstance(block, dict) and block.get("type") in kinds and isinstance(block.get("text"), str)]
    return "\n".join(parts) if parts else None


@dataclass
class ImportSummary:
    """What one import read and wrote. Every source line has one outcome in `lines`."""

    source: str  # the source file's name
    format: str
    session_id: str = ""
    workspace: str = ""
    target: str = ""  # the transcript written, as ROOT/projects/<workspace>/<session>.jsonl (empty in a dry run)
    source_lines: int = 0
    bytes_read: int = 0  # of the source: where the second pass stops, whatever an agent appends meanwhile
    lines: Counter = field(default_factory=Counter)  # outcome -> number of source lines
    records_written: Counter = field(default_factory=Counter)  # event type -> records written
    kept_as_evidence: Counter = field(default_factory=Counter)  # source type -> source-record events
    tool_calls_paired: int = 0  # function_call events whose result was imported too
    tool_calls_unpaired: int = 0  # function_call events with no result in the source
    results_without_call: int = 0  # function_call_result events whose call is not in the source
    streamed_lines: int = 0  # mapped lines that continue an API message an earlier line began
    sidechain_records: int = 0  # records of a subagent inside a main session, kept as evidence
    subagent_files: int = 0  # agent-*.jsonl files beside the source: each is a session of its own
    partial_tail_bytes: int = 0  # 0 when every line is complete
    batches: int = 0  # group commits (one write and one fsync each)

    @property
    def partial_tail(self) -> bool:
        """True when the source ends in a line a crash left unfinished (it is not imported)."""
        return self.lines[PARTIAL_TAIL] > 0

    @property
    def lines_accounted_for(self) -> int:
        """The source lines with an outcome: equal to source_lines after every import."""
        return sum(self.lines.values())

    def as_dict(self) -> dict:
        """The summary as plain JSON-ready values (the `import --json` output)."""
        return {
            "source": self.source, "format": self.format, "session_id": self.session_id,
            "workspace": self.workspace, "target": self.target,
            "source_lines": self.source_lines, "source_bytes": self.bytes_read,
            "lines": {outcome: self.lines[outcome] for outcome in LINE_OUTCOMES},
            "records_written": dict(sorted(self.records_written.items())),
            "kept_as_evidence": dict(sorted(self.kept_as_evidence.items())),
            "tool_calls_paired": self.tool_calls_paired, "tool_calls_unpaired": self.tool_calls_unpaired,
            "results_without_call": self.results_without_call,
            "duplicates_merged": self.lines[DUPLICATE], "streamed_lines": self.streamed_lines,
            "sidechain_records": self.sidechain_records, "subagent_files": self.subagent_files,
            "partial_tail": self.partial_tail, "partial_tail_bytes": self.partial_tail_bytes,
            "batches": self.batches,
        }


def key_of(text: str, kind: str = "") -> int:
    """A compact set key for an id: a UUID's own 128 bits, else a 128-bit hash of kind and text.

    An int of 128 bits costs about half of the string it stands for; the hash leaves no practical
    chance that two ids share a key. kind keeps ids of different kinds (a uuid, a tool call id) apart.
    """
    if not kind and len(text) == 36 and text.count("-") == 4:
        try:
            return int(text.replace("-", ""), 16)
        except ValueError:
            pass
    digest = hashlib.blake2b(f"{kind}\0{text}".encode("utf-8", "surrogatepass"), digest_size=16).digest()
    return int.from_bytes(digest, "big") | (1 << 128)  # never equal to a UUID's key


def is_blank_text(value) -> bool:
    """True for a text that holds nothing but white space (a chat API refuses such a text block)."""
    return isinstance(value, str) and not value.strip()


def seen_before(record: dict, seen: set) -> bool:
    """True when record's uuid is in seen (a duplicate, written once); a new uuid is added to seen."""
    uuid = record.get("uuid")
    if not isinstance(uuid, str):
        return False
    key = key_of(uuid)
    if key in seen:
        return True
    seen.add(key)
    return False
