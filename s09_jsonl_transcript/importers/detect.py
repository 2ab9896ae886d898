"""Which format a JSONL file is in, judged from its first records, before any reader meets it.

The kit's readers refuse a line without the lesson's envelope; a raw agent file must be recognised
first, so it can be named, inspected for what it is, and imported. Detection reads at most
PEEK_LINES lines and never changes the file.

A line is the lesson's only when it carries the whole envelope (schema_version, sequence, session_id
and event_id): one key alone proves nothing (Codex's history.jsonl has a session_id). Three answers
name files that are no session at all: CODEX_HISTORY (one {session_id, ts, text} per prompt typed),
JSON_DOCUMENT (one JSON value written over many lines, not JSONL) and DAMAGED (complete lines, but
none of the first ones is JSON: damage, whose first line the importer and the reader name).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from . import claude_code, codex, seed002, workbuddy
from .common import parse_line, source_lines

LESSON = "lesson"  # a transcript in the lesson's format: every line has the envelope
EMPTY = "empty"  # nothing but blank lines, or only a partial tail
UNKNOWN = "unknown"  # lines, but none a record of a format the kit knows
CODEX_HISTORY = "codex-history"  # ~/.codex/history.jsonl: the prompts typed, of every session; not a session
JSON_DOCUMENT = "json-document"  # one JSON value over several lines (pretty-printed): not JSONL
DAMAGED = "damaged"  # complete lines, but none of the first ones parses: damage, not a format
NOT_SESSIONS = (CODEX_HISTORY, JSON_DOCUMENT, DAMAGED)
HISTORY_FIELDS = frozenset({"session_id", "ts", "text"})
JSON_DOCUMENT_MAX_BYTES = 16 * 1024 * 1024  # larger files are not parsed whole to see if they are one document
MAPPERS = {module.FORMAT: module for module in (claude_code, codex, seed002, workbuddy)}
IMPORTABLE = tuple(MAPPERS)
# what inspect_raw describes (not DAMAGED: the lesson's reader names its first bad line)
RAW_FORMATS = IMPORTABLE + (UNKNOWN, CODEX_HISTORY, JSON_DOCUMENT)
PEEK_LINES = 50
ENVELOPE = frozenset({"schema_version", "sequence", "session_id", "event_id"})


def format_of_record(record) -> str | None:
    """The format one parsed line belongs to, or None when it fits none the kit knows."""
    if isinstance(record, dict) and record.keys() >= ENVELOPE:
        return LESSON
    if isinstance(record, dict) and record.keys() >= HISTORY_FIELDS and "type" not in record:
        return CODEX_HISTORY
    for name, module in MAPPERS.items():
        if module.looks_like(record):
            return name
    return None


def detect_format(path, peek_lines: int = PEEK_LINES) -> str:
    """The format of a file: LESSON, one of IMPORTABLE, one of NOT_SESSIONS, EMPTY or UNKNOWN.

    The format is the most common among the first peek_lines lines.
    """
    votes, lines, parsed = Counter(), 0, 0
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
        parsed += 1
        found = format_of_record(record)
        if found:
            votes[found] += 1
    if not lines:
        return EMPTY
    if votes:
        return votes.most_common(1)[0][0]
    if is_json_document(path):
        return JSON_DOCUMENT
    return DAMAGED if not parsed else UNKNOWN


def is_json_document(path) -> bool:
    """True when the whole file (of at most JSON_DOCUMENT_MAX_BYTES) is one JSON object or array over several lines."""
    path = Path(path)
    if path.stat().st_size > JSON_DOCUMENT_MAX_BYTES:
        return False
    data = path.read_bytes()
    if data.strip().count(b"\n") < 1:
        return False
    try:
        value = json.loads(data.decode("utf-8"))
    except ValueError:
        return False
    return isinstance(value, (dict, list))
