'''The capstone's contract: the given cell the engine ships, and the events a grading sends.

GIVEN_CELL is the exercise's given cell, as text. The grader runs this copy (never the notebook's)
before the answer cell, in the student's sandbox: the error class TranscriptCorruptionError, the
envelope's fields (schema_version, sequence, session_id = the file's stem, event_id =
transcript:<session>:<sequence>, recorded_at), a fixed clock (recorded_at derived from the
sequence, so the same events give the same bytes on any regrade), the line encoding, and
parse_record, which says whether one complete line is the valid record at a sequence: the same
judgement as the lesson's reader makes of the events a grading sends (a test compares them).

The student writes, in the answer cell:

    append(path, event) -> dict     the envelope built around the event, the sequence taken from
                                    the file's last record; one os.write on an O_APPEND
                                    descriptor, then fsync, and an fsync of the folder when the
                                    file is new; returns the record, durable when it returns.
    recover(path) -> list[dict]     the committed records; a partial last line (the bytes after
                                    the last newline) is forgiven and cut from the file; any other
                                    damage raises TranscriptCorruptionError.

Events carry a token drawn from the grading's seed, so no answer can write an event before it is
sent.
'''

from __future__ import annotations

import hashlib
import random

from .driver import record_hash

__all__ = ["GIVEN_CELL", "Contract", "continuation_event", "given_namespace", "record_hash", "session_events"]

SESSION_ID = "capstone"  # the transcript's file is capstone.jsonl: its stem is the session id
TRANSCRIPT_NAME = f"{SESSION_ID}.jsonl"
EVENTS = 20  # events in one graded session

GIVEN_CELL = '''"""ex06, given: the transcript's contract. Run this cell as it is: the grader runs its own copy."""

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

SCHEMA_VERSION = 1
CLOCK_START = datetime(2026, 1, 5, 9, 0, tzinfo=timezone.utc)


class TranscriptCorruptionError(RuntimeError):
    """A complete line of the transcript is damaged: recover reads no further and raises this."""


def session_id_of(path) -> str:
    """The session id of the transcript at path: the file's name without .jsonl."""
    return Path(path).stem


def recorded_at(sequence: int) -> str:
    """The fixed clock: the record at sequence n is stamped n seconds after 09:00 UTC, 5 January 2026."""
    return (CLOCK_START + timedelta(seconds=sequence)).isoformat()


def envelope(path, sequence: int) -> dict:
    """The fields append writes around the event of the record at sequence (1, 2, 3, ...)."""
    session_id = session_id_of(path)
    return {"schema_version": SCHEMA_VERSION, "sequence": sequence,
            "event_id": f"transcript:{session_id}:{sequence}", "session_id": session_id,
            "recorded_at": recorded_at(sequence)}


def encode_line(record: dict) -> bytes:
    """The record as one line of UTF-8 JSON, its newline included."""
    text = json.dumps(record, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return text.encode("utf-8") + b"\\n"


def _not_a_number(name):
    raise ValueError(f"{name} is not JSON")


def parse_record(line: bytes, path, sequence: int):
    """The record on one complete line (its newline removed), if it is the valid record at
    sequence of the transcript at path; None if the line is damaged."""
    try:
        record = json.loads(line.decode("utf-8"), parse_constant=_not_a_number)
    except (ValueError, RecursionError):
        return None
    if type(record) is not dict:
        return None
    expected = envelope(path, sequence)
    for name in ("sequence", "session_id", "event_id"):
        if type(record.get(name)) is not type(expected[name]) or record[name] != expected[name]:
            return None
    version = record.get("schema_version")
    if type(version) is not int or version < 1 or type(record.get("type")) is not str:
        return None
    if version == SCHEMA_VERSION and record["type"] == "message":
        if type(record.get("role")) is not str or "content" not in record:
            return None
    return record
'''

_WORDS = ("plan", "fix", "read", "test", "ship", "undo", "note", "ask")


def given_namespace() -> dict:
    """The given cell run in a fresh namespace of this process (the engine's own, trusted text)."""
    namespace = {"__name__": "ex06_given"}
    exec(compile(GIVEN_CELL, "<ex06 given cell>", "exec"), namespace)  # noqa: S102 - the engine's own text
    return namespace


def _token(seed: int, number) -> str:
    return hashlib.sha256(f"ex06:{seed}:{number}".encode()).hexdigest()[:16]


def session_events(seed: int, count: int = EVENTS) -> list[dict]:
    """The events of one graded session: chat messages whose text no answer can know in advance.

    Some carry Chinese text (UTF-8 of several bytes, so a write may tear inside a character) and
    U+2028 (a line separator to str.splitlines, not to a reader that splits on b"\\n").
    """
    rng = random.Random(f"ex06-events:{seed}")
    events = []
    for number in range(1, count + 1):
        words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(2, 12)))
        text = f"{words} {_token(seed, number)}"
        if number % 5 == 0:
            text += " 你好，记录"
        if number % 7 == 0:
            text += " \u2028 next"
        events.append({"type": "message", "role": ("user", "assistant")[number % 2], "content": text})
    return events


def continuation_event(seed: int) -> dict:
    """The one more event every judged state's continuation appends."""
    return {"type": "message", "role": "user", "content": f"after the crash {_token(seed, 'next')}"}


class Contract:
    """The contract's records as the given cell builds them: what the grader expects to find."""

    def __init__(self):
        given = given_namespace()
        self.envelope, self.encode_line = given["envelope"], given["encode_line"]
        self.parse_record = given["parse_record"]

    def record(self, path, sequence: int, event: dict) -> dict:
        """The record append must write (and return) for event at sequence."""
        return {**self.envelope(path, sequence), **event}

    def records(self, path, events: list[dict]) -> list[dict]:
        """The records of events appended in order to a new file."""
        return [self.record(path, number, event) for number, event in enumerate(events, start=1)]

    def file_bytes(self, path, events: list[dict]) -> bytes:
        """The bytes the reference writes for events: one encoded line each."""
        return b"".join(self.encode_line(record) for record in self.records(path, events))
