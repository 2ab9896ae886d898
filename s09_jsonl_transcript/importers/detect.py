"""Which format a JSONL file is in, judged from its first records, before any reader meets it.

The kit's readers refuse a line without the lesson's envelope; a raw agent file must be recognised
first, so it can be named, inspected for what it is, and imported. Detection reads at most
PEEK_LINES lines and never changes the file.
"""

from __future__ import annotations

from collections import Counter

from . import claude_code, codex, seed002, workbuddy
from .common import parse_line, source_lines

LESSON = "lesson"  # a transcript in the lesson's format: every line has the envelope
EMPTY = "empty"  # nothing but blank lines, or only a partial tail
UNKNOWN = "unknown"  # lines, but none a record of a format the kit knows
MAPPERS = {module.FORMAT: module for module in (claude_code, codex, seed002, workbuddy)}
IMPORTABLE = tuple(MAPPERS)
PEEK_LINES = 50
ENVELOPE = frozenset({"schema_version", "sequence", "session_id", "event_id"})


def format_of_record(record) -> str | None:
    """The format one parsed line belongs to, or None when it fits none the kit knows."""
    if isinstance(record, dict) and record.keys() & ENVELOPE:
        return LESSON
    for name, module in MAPPERS.items():
        if module.looks_like(record):
            return name
    return None


def detect_format(path, peek_lines: int = PEEK_LINES) -> str:
    """The format of a file: LESSON, one of IMPORTABLE, EMPTY or UNKNOWN (the most common among its first lines)."""
    votes, lines = Counter(), 0
    for line in source_lines(path):
        if line.number > peek_lines:
            break
        if not line.raw.strip():
            continue
        try:
            record = parse_line(line.raw)
        except ValueError:
            lines += line.terminated  # a bad line: the importer or the reader names it; a partial tail is no line
            continue
        lines += 1
        found = format_of_record(record)
        if found:
            votes[found] += 1
    if not lines:
        return EMPTY
    return votes.most_common(1)[0][0] if votes else UNKNOWN
