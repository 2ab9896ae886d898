"""s09 JSONL transcript: evidence is append-only, runtime state is rebuilt.

An agent's conversation is stored as one JSON event per line. Every append is a
single write on an O_APPEND descriptor followed by fsync, so an event whose
append returned survives a crash. After a crash, a fresh process replays the
file and rebuilds the runtime state (messages, title, file snapshots).

Read it top to bottom; the lesson's argument ends with the demo in section 5:
  1. the vocabulary: event types, the envelope every record carries, the errors;
  2. JSONLTranscript: append (validate, wrap in the envelope, one write, fsync),
     reading (replay from the tail, recover) and the memory gate;
  3. the validated fold: the checks every line passes, the partial-tail rule,
     and the runtime state rebuilt from the records;
  4. the memory candidate: one durable event id in, a pointer with no body out;
  5. MockLLM and the three-act crash demo.
The appendix after it holds the machinery those promises rest on (payload checks,
the optional hash chain, the writer's descriptor and lock, block reads from the
tail, child processes for real crashes). You can skip it on a first reading.

Run the demo:  python s09_jsonl_transcript/code.py     (--help for the rest)
"""

from __future__ import annotations

import copy
import errno
import hashlib
import itertools
import json
import math
import os
import subprocess
import sys
import threading
import weakref
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Callable, Iterable, Iterator

try:
    import fcntl  # POSIX advisory locks; absent on Windows
except ImportError:  # pragma: no cover
    fcntl = None

# =========================================================================== 1. vocabulary

SCHEMA_VERSION = 1  # the newest record layout this code understands
SESSION_MAX_ITEMS = 1000  # the lesson's replay window: about 100-200 rounds of a typical session
MAX_RECORD_BYTES = 8 * 1024 * 1024  # append refuses a longer record; readers refuse a longer line

TYPE_MESSAGE = "message"
TYPE_REASONING = "reasoning"
TYPE_FUNCTION_CALL = "function_call"
TYPE_FUNCTION_CALL_RESULT = "function_call_result"
TYPE_FILE_SNAPSHOT = "file-history-snapshot"
TYPE_AI_TITLE = "ai-title"

MEMORY_ELIGIBLE_EVENT_TYPES = frozenset({TYPE_MESSAGE, TYPE_FILE_SNAPSHOT})
TRANSCRIPT_SOURCE_TYPE = "transcript"

BATCH_END_FIELD = "batch_end"  # on each record of a batch: the sequence of the batch's last record
CHAIN_FIELD = "chain"  # integrity mode only: sha256 of (previous line, this line), always the last field
RESERVED_ENVELOPE_FIELDS = frozenset(
    {"schema_version", "sequence", "recorded_at", "session_id", "event_id", BATCH_END_FIELD}
)


class TranscriptCorruptionError(RuntimeError):
    """A complete line is damaged: nothing after it can be trusted, so reading stops."""

    def __init__(self, path, line_number, byte_offset, reason):
        super().__init__(f"{Path(path).name}:{line_number}: {reason}")
        self.path = Path(path)
        self.line_number = line_number
        self.byte_offset = byte_offset
        self.reason = reason


class TranscriptValidationError(ValueError):
    """An event was refused by append; not a byte of it was written."""


class TranscriptLockedError(RuntimeError):
    """Another writer owns this transcript: a session has one writer at a time."""


class MemorySelectionError(ValueError):
    """The memory gate refused a selection."""


def utc_now() -> datetime:
    """The real clock: an aware UTC datetime."""
    return datetime.now(timezone.utc)


def ticking_clock(start=datetime(2026, 1, 5, 9, 0, tzinfo=timezone.utc), step=timedelta(seconds=1)):
    """A deterministic clock for tests and notebooks: start, start + step, start + 2 * step, ..."""
    ticks = itertools.count()
    return lambda: start + step * next(ticks)


def event_id_for(session_id: str, sequence: int) -> str:
    """The durable id of one event: transcript:<session_id>:<sequence>."""
    return f"{TRANSCRIPT_SOURCE_TYPE}:{session_id}:{sequence}"


def event_to_message(event: dict) -> dict | None:
    """The chat message for one event, or None for events that are metadata."""
    event_type = event.get("type")
    if event_type == TYPE_MESSAGE:
        return {"role": event["role"], "content": event["content"]}
    if event_type == TYPE_FUNCTION_CALL:
        block = {"type": "tool_use", "id": event["callId"], "name": event["name"],
                 "input": event.get("arguments", {})}
        return {"role": "assistant", "content": [block]}
    if event_type == TYPE_FUNCTION_CALL_RESULT:
        block = {"type": "tool_result", "tool_use_id": event["callId"], "content": event.get("output", "")}
        return {"role": "user", "content": [block]}
    return None


# =========================================================================== 2. the transcript


class JSONLTranscript:
    """One session's append-only transcript: durable appends, validated replay, a memory gate.

    One instance may be shared by threads: every append holds `lock`. Across instances and
    processes, one writer at a time holds the file (TranscriptLockedError for the others).
    """

    def __init__(self, filepath, *, clock: Callable[[], datetime] | None = None,
                 integrity: bool = False, max_record_bytes: int = MAX_RECORD_BYTES,
                 file_io: OsFileIO | None = None):
        self.path = Path(filepath)
        self.filepath = str(self.path)
        self.session_id = self.path.stem  # the file's name is the session id
        self.clock = clock or utc_now
        self.integrity = integrity  # seal every record with a hash chain (appendix B)
        self.max_record_bytes = max_record_bytes
        self.lock = threading.RLock()  # held by every append; hold it yourself to read, check and append
        self._io = file_io or OsFileIO()
        self._writer = None  # the open, locked descriptor, made by the first append (appendix C)
        self.path.parent.mkdir(parents=True, exist_ok=True)

    @classmethod
    def for_session(cls, root, workspace: str, session_id: str, *, new: bool = False,
                    **options) -> JSONLTranscript:
        """The transcript at root/projects/<workspace>/<session_id>.jsonl.

        With new=True the session must not exist yet (see create). Names that could
        escape root raise ValueError.
        """
        folder = Path(root) / "projects" / _check_name("workspace", workspace)
        path = folder / f"{_check_name('session_id', session_id)}.jsonl"
        return cls.create(path, **options) if new else cls(path, **options)

    @classmethod
    def create(cls, filepath, **options) -> JSONLTranscript:
        """Start a new session: create its file, or raise FileExistsError if it exists.

        Two processes that pick the same new session id cannot both get it.
        The returned transcript already holds the writer.
        """
        transcript = cls(filepath, **options)
        with transcript.lock:
            transcript._writer = _Writer(transcript, exclusive=True)
        return transcript

    def __repr__(self):
        return f"JSONLTranscript({self.path.name!r})"

    # -- appending ------------------------------------------------------------------

    def append(self, event: dict) -> dict:
        """Durably append one event and return the record written. The caller's dict is not changed."""
        return self._append_all([event])[0]

    def append_batch(self, events: Iterable[dict]) -> list[dict]:
        """Durably append several events with one write and one fsync (group commit).

        All or nothing: one bad event means none is written, and a crash in the
        middle leaves a batch that readers ignore like a partial tail. Its records
        share one recorded_at: the moment of their one commit.
        """
        events = list(events)
        return self._append_all(events) if events else []

    def _append_all(self, events: list) -> list[dict]:
        payloads = [_validated_payload(event) for event in events]  # refuse before a byte is written
        with self.lock:
            writer = self._open_writer()
            first, recorded_at = writer.next_sequence, self._now()  # one commit, one time for all its records
            batch_end = first + len(payloads) - 1 if len(payloads) > 1 else None
            records = [{**self._envelope(first + i, recorded_at, batch_end), **payload}
                       for i, payload in enumerate(payloads)]
            lines = _encode_lines(records, writer.last_line, self.integrity, self.max_record_bytes)
            try:
                writer.write_durably(b"".join(line + b"\n" for line in lines))
            except BaseException:
                self.close()  # fail closed: the next append re-reads the tail and repairs what this left
                raise
            writer.acknowledged(len(records), lines[-1])
        return records

    def _now(self) -> str:
        now = self.clock()
        if now.tzinfo is None:
            raise TranscriptValidationError("the clock must return an aware datetime")
        return now.astimezone(timezone.utc).isoformat()

    def _envelope(self, sequence: int, recorded_at: str, batch_end: int | None = None) -> dict:
        envelope = {
            "schema_version": SCHEMA_VERSION,
            "sequence": sequence,
            "event_id": event_id_for(self.session_id, sequence),
            "session_id": self.session_id,
            "recorded_at": recorded_at,
        }
        if batch_end is not None:  # each record of a batch says where it ends: a reader can tell a torn batch
            envelope[BATCH_END_FIELD] = batch_end
        return envelope

    def acquire_writer(self) -> None:
        """Become this transcript's one writer now, as the first append would (TranscriptLockedError if taken).

        To read, check and append as one step: with transcript.lock: acquire_writer(), read, append.
        """
        with self.lock:
            self._open_writer()

    def _open_writer(self) -> _Writer:
        if self._writer is None:
            self._writer = _Writer(self)  # opens, locks, and repairs a partial tail: once
        return self._writer

    def close(self) -> None:
        """Release the writer's descriptor and lock; a later append opens them again."""
        with self.lock:
            if self._writer is not None:
                writer, self._writer = self._writer, None
                writer.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    # -- reading --------------------------------------------------------------------

    def read_events(self) -> list[dict]:
        """Every event in the file, validated in order; raises TranscriptCorruptionError on damage.

        A partial tail (an unterminated last line, or a batch that never finished) is ignored.
        """
        return self.scan().events

    _read_all_events = read_events  # the name the lesson uses

    def scan(self, on_record: Callable[[dict], None] | None = None, *, report_damage: bool = False) -> ScanResult:
        """Read and validate the whole file once, and say what was found.

        Records go to on_record when given (memory stays flat), else into result.events.
        Damage raises TranscriptCorruptionError, or with report_damage=True is returned
        in result.corruption together with everything read before it.
        """
        result = ScanResult()
        try:
            with open(self.path, "rb") as file:
                _fold_lines(_lines_of(file, self), _RecordChecker(self), result, on_record)
        except FileNotFoundError:
            pass
        except TranscriptCorruptionError as error:
            if not report_damage:
                raise
            result.corruption = error
        return result

    def read_recent(self, count: int, *, before: int | None = None) -> ScanResult:
        """The last count committed records, validated, read from the end of the file.

        With before (a byte offset where a record starts), only records in front of it:
        pass result.offsets[0] to page back through older history.
        """
        _check_max_items(count)
        return _read_recent(self, count, before) if count else ScanResult()

    def replay(self, max_items: int = SESSION_MAX_ITEMS) -> list[dict]:
        """Chat messages for the last max_items events, oldest first, ready to send to a model."""
        return self.replay_state(max_items).messages

    def replay_state(self, max_items: int = SESSION_MAX_ITEMS) -> ReplayState:
        """The runtime state rebuilt from the last max_items events, read from the end of the file.

        Its cost does not grow with the transcript's length. Title, snapshots and
        reasoning are those inside the window; recover() reads everything.
        """
        _check_max_items(max_items)
        scanned = _read_recent(self, max_items)
        fold = _StateFold(max_items)
        for event in scanned.events[-max_items:] if max_items else []:
            fold.add(event)
        return fold.state(scanned)

    def recover(self, max_items: int = SESSION_MAX_ITEMS) -> dict:
        """Validate the whole file and rebuild everything a replacement runtime needs.

        Fails closed: any damage other than a partial tail raises TranscriptCorruptionError.
        """
        _check_max_items(max_items)
        fold = _StateFold(max_items)
        state = fold.state(self.scan(on_record=fold.add))  # streamed: memory stays flat however long the file
        summary = dict(vars(state))
        summary["message_count"] = len(state.messages)
        return summary

    def count_lines(self) -> int:
        """How many complete (newline-terminated) lines the file holds."""
        try:
            with open(self.path, "rb") as file:
                return sum(block.count(b"\n") for block in iter(lambda: file.read(_BLOCK), b""))
        except FileNotFoundError:
            return 0

    _event_to_message = staticmethod(event_to_message)  # the name the lesson uses

    # -- the memory gate (the candidate itself is in section 4) -----------------------

    def select_memory_candidate(self, event_id: str, summary: str, reason: str) -> TranscriptMemoryCandidate:
        """Turn one durable event id, a summary and a reason into a memory candidate.

        The candidate points at the evidence and carries none of its body. Any
        event of an eligible type may be chosen, inside the replay window or not.
        """
        sequence = _sequence_in(event_id, self.session_id)
        summary, reason = _required_text("summary", summary), _required_text("reason", reason)
        events = self.read_events()
        if sequence > len(events):
            raise MemorySelectionError(f"unknown transcript event: {event_id}")
        event = events[sequence - 1]
        if event["schema_version"] > SCHEMA_VERSION:
            raise MemorySelectionError(f"{event_id} has schema_version {event['schema_version']}, "
                                       f"newer than this code understands; it is kept as evidence only")
        if event["type"] not in MEMORY_ELIGIBLE_EVENT_TYPES:
            raise MemorySelectionError(f"event type {event['type']!r} is not eligible for memory selection")
        return TranscriptMemoryCandidate(
            source_id=event["event_id"], session_id=self.session_id, sequence=sequence,
            event_type=event["type"], captured_at=event.get("recorded_at"),
            summary=summary, selection_reason=reason,
        )


# =========================================================================== 3. the validated fold


@dataclass
class ScanResult:
    """What one validated read of a transcript found."""

    events: list = field(default_factory=list)  # the records, in order (empty when they went to on_record)
    offsets: list = field(default_factory=list)  # where each of those records starts in the file
    last_sequence: int = 0  # of the last committed record: the transcript's length
    partial_tail_offset: int | None = None  # where an ignored partial tail starts (the next append cuts there)
    unfinished_batch: bool = False  # the partial tail holds whole records of a batch that never finished
    chained: bool = False  # records carry a hash chain, and it held
    unknown_schema_events: int = 0  # records of a newer schema_version: kept as evidence, never mapped
    corruption: TranscriptCorruptionError | None = None  # only with scan(report_damage=True)
    last_line: bytes = b""  # raw bytes of the last committed record: the next record's chain anchor
    last_line_unterminated: bool = False  # that record lost its newline; the next append adds it

    @property
    def ignored_partial_tail(self) -> bool:
        """True when the file ends in a partial tail that was left out."""
        return self.partial_tail_offset is not None


class _RecordChecker:
    """Checks records in file order and raises TranscriptCorruptionError at the first bad one.

    A record must be a JSON object whose envelope continues the file: the next
    sequence, this session, the matching event_id, a known schema_version (a newer
    one is kept as evidence), and the fields its type needs.
    """

    def __init__(self, transcript: JSONLTranscript, *, from_start: bool = True):
        self.path = transcript.path
        self.session_id = transcript.session_id
        self.id_prefix = event_id_for(transcript.session_id, "")
        self.require_chain = transcript.integrity
        self.expected = 1 if from_start else None  # None: a tail read takes it from its first record
        self.previous_line = b"" if from_start else None  # None: the first record's chain cannot be checked
        self.allow_legacy = from_start  # lines from before the envelope existed may open the file
        self.batch_end = None  # set while reading the records of a batch
        self.chained = False

    @property
    def inside_batch(self) -> bool:
        """True while the last record read belongs to a batch whose last record has not been read."""
        return self.batch_end is not None

    def check(self, value, raw: bytes, number, offset) -> dict:
        """Return the record on this line (value parsed from raw), or raise naming the line."""
        record, problem = value, None
        if value is _NOT_JSON:
            problem = "invalid complete JSON record"
        elif type(value) is not dict:
            problem = "record must be a JSON object"
        elif self.allow_legacy and not value.keys() & _ENVELOPE_KEYS:
            record = {**value, "schema_version": SCHEMA_VERSION, "sequence": self.expected,
                      "session_id": self.session_id, "event_id": self.id_prefix + str(self.expected)}
            problem = _shape_problem(record)
        else:
            self.allow_legacy = False
            problem = self._envelope_problem(value) or self._batch_problem(value)
            if not problem and value["schema_version"] <= SCHEMA_VERSION:
                problem = _shape_problem(value)  # a newer layout may have other fields: kept as evidence
        if not problem and (self.chained or self.require_chain or CHAIN_FIELD in value):
            problem = self._chain_problem(value, raw)  # a line without an envelope is sealed too
        if problem:
            raise TranscriptCorruptionError(self.path, number, offset, problem)
        self.expected, self.previous_line = record["sequence"] + 1, raw
        return record

    def _envelope_problem(self, record: dict) -> str | None:
        sequence = record.get("sequence")
        expected = sequence if self.expected is None else self.expected
        if type(sequence) is not int or sequence != expected or sequence < 1:
            return f"expected sequence {expected}, got {sequence!r}"
        if record.get("session_id") != self.session_id:
            return f"expected session_id {self.session_id!r}, got {record.get('session_id')!r}"
        if record.get("event_id") != self.id_prefix + str(sequence):
            return f"expected event_id {self.id_prefix + str(sequence)!r}, got {record.get('event_id')!r}"
        version = record.get("schema_version")
        if type(version) is not int or version < 1:
            return f"bad schema_version {version!r}"
        if type(record.get("type")) is not str:
            return "record has no string 'type'"
        return None

    def _batch_problem(self, record: dict) -> str | None:
        """Check the record's place in a batch: a batch's records follow one another, none missing."""
        sequence, batch_end = record["sequence"], record.get(BATCH_END_FIELD)
        if BATCH_END_FIELD in record and (type(batch_end) is not int or batch_end < sequence):
            return f"bad {BATCH_END_FIELD} {batch_end!r}"
        if self.batch_end is not None and batch_end != self.batch_end:
            return f"the batch ending at sequence {self.batch_end} is cut off by another record"
        self.batch_end = batch_end if batch_end is not None and batch_end > sequence else None
        return None

    def _chain_problem(self, record: dict, raw: bytes) -> str | None:
        if CHAIN_FIELD not in record:
            return "record has no chain field (integrity is on)" if self.chained or self.require_chain else None
        self.chained = True
        return _chain_problem(self.previous_line, raw) if self.previous_line is not None else None


def _fold_lines(lines, checker: _RecordChecker, result: ScanResult, on_record=None,
                end_of_file: bool = True) -> ScanResult:
    """Check lines in order into result, and stop at a partial tail: the only damage forgiven.

    A partial tail is an unterminated last line that does not parse, or the records of
    a batch that never finished. Its append never returned, so nothing acknowledged is lost.
    (Lines that stop before the end of the file hold no partial tail: their batches go on.)
    """
    batch, batch_offset = [], None  # the records of an unfinished batch wait here until its last one
    for number, offset, raw, terminated in lines:
        value = _parse_json(raw)
        if not terminated and value is _NOT_JSON:
            result.partial_tail_offset = offset if batch_offset is None else batch_offset
            break
        batch.append((checker.check(value, raw, number, offset), offset, raw, terminated))
        if checker.inside_batch:
            batch_offset = offset if batch_offset is None else batch_offset
            continue
        _commit(batch, result, on_record)
        batch, batch_offset = [], None
    if batch_offset is not None and end_of_file:
        result.partial_tail_offset, result.unfinished_batch = batch_offset, True
    elif batch:
        _commit(batch, result, on_record)
    result.chained = checker.chained
    return result


def _commit(records: list, result: ScanResult, on_record) -> None:
    """Hand over records whose commit is complete (one record, or a whole batch)."""
    for record, offset, raw, terminated in records:
        if on_record is not None:
            on_record(record)
        else:
            result.events.append(record)
            result.offsets.append(offset)
        if record["schema_version"] > SCHEMA_VERSION:
            result.unknown_schema_events += 1
        result.last_sequence, result.last_line, result.last_line_unterminated = record["sequence"], raw, not terminated


@dataclass(frozen=True)
class ReplayState:
    """What a replacement runtime needs, rebuilt from the transcript."""

    messages: list
    title: str | None
    file_snapshots: list
    total_events: int
    reasoning_count: int
    next_sequence: int
    ignored_partial_tail: bool
    pending_calls: list = field(default_factory=list)
    unknown_schema_events: int = 0


class _StateFold:
    """Runtime state folded one event at a time; of the events themselves only the window is kept.

    Messages come from the window only. A tool result whose call fell outside the
    window is dropped: a chat API refuses a tool_result without its tool_use. A call
    with no result yet is listed in pending_calls (a crash in the middle of a tool
    call); the runtime must answer it before sending the messages. Events of a newer
    schema_version are evidence this code cannot interpret: they count, nothing more.
    """

    def __init__(self, window_size: int):
        self.window = deque(maxlen=window_size)
        self.title = None
        self.file_snapshots = []
        self.reasoning_count = 0
        self.unknown_schema_events = 0
        self.open_calls = {}  # callId -> the function_call still waiting for its result

    def add(self, event: dict) -> None:
        if event["schema_version"] > SCHEMA_VERSION:
            self.unknown_schema_events += 1
            return
        self.window.append(event)
        event_type = event["type"]
        if event_type == TYPE_FUNCTION_CALL:
            self.open_calls[event["callId"]] = event
        elif event_type == TYPE_FUNCTION_CALL_RESULT:
            self.open_calls.pop(event["callId"], None)
        elif event_type == TYPE_AI_TITLE:
            self.title = event["title"]
        elif event_type == TYPE_FILE_SNAPSHOT:
            self.file_snapshots.append(event)
        elif event_type == TYPE_REASONING:
            self.reasoning_count += 1

    def state(self, scanned: ScanResult) -> ReplayState:
        calls_in_window = {e["callId"] for e in self.window if e["type"] == TYPE_FUNCTION_CALL}
        messages = []
        for event in self.window:
            if event["type"] == TYPE_FUNCTION_CALL_RESULT and event["callId"] not in calls_in_window:
                continue
            message = event_to_message(event)
            if message is not None:
                messages.append(message)
        return ReplayState(
            messages=messages,
            title=self.title,
            file_snapshots=self.file_snapshots,
            total_events=scanned.last_sequence,
            reasoning_count=self.reasoning_count,
            next_sequence=scanned.last_sequence + 1,
            ignored_partial_tail=scanned.ignored_partial_tail,
            pending_calls=list(self.open_calls.values()),
            unknown_schema_events=self.unknown_schema_events,
        )


# =========================================================================== 4. memory candidates


@dataclass(frozen=True)
class TranscriptMemoryCandidate:
    """A pointer to one durable event, proposed for long-term memory. It carries no event body."""

    source_id: str
    session_id: str
    sequence: int
    event_type: str
    captured_at: str | None
    summary: str
    selection_reason: str
    source_type: str = TRANSCRIPT_SOURCE_TYPE

    def source_metadata(self) -> dict:
        """The provenance a memory store keeps beside the summary."""
        return {
            "source_id": self.source_id,
            "source_type": self.source_type,
            "title": f"{self.session_id} event {self.sequence}",
            "captured_at": self.captured_at,
        }


# =========================================================================== 5. a scripted agent and the demo

_CALC_BUGGY = "def add(a, b):\n    return a - b\n"
_CALC_FIXED = "def add(a, b):\n    return a + b\n"
BUG_FIX_SCRIPT = (
    {"type": TYPE_MESSAGE, "role": "user", "content": "test_calc.py fails: add(2, 3) returns -1. Please fix it."},
    {"type": TYPE_AI_TITLE, "title": "Fix add() in calc.py"},
    {"type": TYPE_REASONING, "content": "add() probably subtracts. Read calc.py before editing."},
    {"type": TYPE_FUNCTION_CALL, "callId": "call_1", "name": "read_file", "arguments": {"path": "calc.py"}},
    {"type": TYPE_FUNCTION_CALL_RESULT, "callId": "call_1", "output": _CALC_BUGGY},
    {"type": TYPE_MESSAGE, "role": "assistant", "content": "add() returns a - b. I will change it to a + b."},
    {"type": TYPE_FILE_SNAPSHOT, "files": {"calc.py": _CALC_BUGGY}},
    {"type": TYPE_FUNCTION_CALL, "callId": "call_2", "name": "write_file",
     "arguments": {"path": "calc.py", "content": _CALC_FIXED}},
    {"type": TYPE_FUNCTION_CALL_RESULT, "callId": "call_2", "output": "wrote 33 bytes to calc.py"},
    {"type": TYPE_FUNCTION_CALL, "callId": "call_3", "name": "run_tests", "arguments": {}},
    {"type": TYPE_FUNCTION_CALL_RESULT, "callId": "call_3", "output": "1 passed in 0.01s"},
    {"type": TYPE_MESSAGE, "role": "assistant", "content": "Fixed: add() returns a + b and the test passes."},
)


class MockLLM:
    """A deterministic scripted agent session that emits all six event types, one at a time."""

    def __init__(self, script: Iterable[dict] = BUG_FIX_SCRIPT):
        self.script = [copy.deepcopy(event) for event in script]
        self.position = 0

    def next_event(self) -> dict | None:
        """The next event of the script (a fresh copy), or None when the session is over."""
        if self.position >= len(self.script):
            return None
        self.position += 1
        return copy.deepcopy(self.script[self.position - 1])

    def __len__(self):
        return len(self.script)


def run_agent(transcript: JSONLTranscript, llm: MockLLM, on_append=None) -> list[dict]:
    """The agent loop: append every event the model produces, in order; return the records."""
    written = []
    while (event := llm.next_event()) is not None:
        written.append(transcript.append(event))
        if on_append:
            on_append(written[-1])
    return written


DEMO_KILL_AFTER = 8  # the demo's agent dies while writing event 9, the result of call_2 (write_file)


def demo(root, color: bool = False, ticking: bool = False, lang: str = "en") -> bool:
    """The three acts on one session: append, kill the agent for real, rebuild and compare.

    Returns True when the messages rebuilt from the file equal those the agent had acknowledged.
    With ticking, the agent's clock is ticking_clock(), so the output is the same on every run.
    lang "zh" prints the acts in Chinese (appendix F).
    """
    paint, say = _painter(color), _demo_words(lang)
    transcript = JSONLTranscript.for_session(root, "demo", "session-1", new=True)
    transcript.close()  # the agent's own process is the writer

    print(paint(say("Part 1: the agent runs in its own process; each event is appended (write + fsync)"), "bold"))
    agent = AgentProcess(transcript.path, ticking=ticking)
    for _ in range(DEMO_KILL_AFTER):
        record = agent.append_next()
        print(f"  {record['sequence']:>2} {record['type']:<22} jsonl line: {transcript.count_lines()}")
    acknowledged = agent.messages()
    print(say("  the agent holds {count} messages in memory (its messages[])", count=len(acknowledged)))

    print(paint(say("\nPart 2: crash: the agent is killed with SIGKILL while it writes event {number}",
                    number=DEMO_KILL_AFTER + 1), "bold"))
    agent.tear_next()
    status = agent.kill()
    print(say("  the process is gone (exit status {status}); its messages[] went with it", status=status))
    print(say("  on disk: {lines} complete lines and half a record with no newline", lines=transcript.count_lines()))

    print(paint(say("\nPart 3: a fresh process rebuilds the runtime state from the file"), "bold"))
    state = JSONLTranscript(transcript.path).recover()
    ok = state["messages"] == acknowledged
    print(say("  recovered {events} events, {messages} messages, title {title!r}",
              events=state["total_events"], messages=state["message_count"], title=state["title"]))
    print(say("  partial tail ignored: {ignored}; tool calls still pending: {pending}",
              ignored=state["ignored_partial_tail"], pending=[call["callId"] for call in state["pending_calls"]]))
    verdict = say("  check: recovered messages == the messages Part 1 acknowledged: {ok}", ok=ok)
    print(paint(verdict, "green" if ok else "red"))
    print(say("  the raw JSONL (the last line is the partial tail, never acknowledged):"))
    for line in transcript.path.read_bytes().decode("utf-8", "replace").split("\n"):
        if line:
            print(paint(f"    {line}", "dim"))
    return ok


# =========================================================================== appendix: the machinery
#
# Everything below keeps the promises made above. A first reading can stop here.
#   A. argument checks: only exact JSON values are written, so every record can be read back
#   B. the optional hash chain (integrity=True)
#   C. the writer: one open, locked descriptor; partial-tail repair; one write + fsync
#   D. reading: lines split on b"\n" only, and block reads from the end of the file
#   E. child processes: an agent to kill for real, and the same crash simulated
#   F. the demo's sentences in Chinese

MAX_NESTING = 100  # deeper payloads are refused, so every record we write can be read back
MAX_NAME_LENGTH = 128

_BLOCK = 64 * 1024
_NOT_JSON = object()
_ENVELOPE_KEYS = frozenset({"schema_version", "sequence", "session_id", "event_id"})
_REFUSED_IN_PAYLOADS = RESERVED_ENVELOPE_FIELDS | {CHAIN_FIELD}
# Fields each known event type must carry as strings, so replay can always map it.
_REQUIRED_STRINGS = {
    TYPE_MESSAGE: ("role",),
    TYPE_FUNCTION_CALL: ("callId", "name"),
    TYPE_FUNCTION_CALL_RESULT: ("callId",),
    TYPE_AI_TITLE: ("title",),
}

# --------------------------------------------------------------------------- A. argument checks


def _validated_payload(event) -> dict:
    """Return a private copy of an event that append may write, or raise TranscriptValidationError."""
    if not isinstance(event, dict):
        raise TranscriptValidationError(f"an event must be a dict, not {type(event).__name__}")
    if not isinstance(event.get("type"), str) or not event["type"]:
        raise TranscriptValidationError("an event needs a non-empty string 'type'")
    if not _REFUSED_IN_PAYLOADS.isdisjoint(event):
        spoofed = ", ".join(sorted(_REFUSED_IN_PAYLOADS & event.keys()))
        raise TranscriptValidationError(f"event carries reserved envelope fields: {spoofed}")
    problem = _shape_problem(event)
    if problem:
        raise TranscriptValidationError(problem)
    return _json_copy(event)


def _shape_problem(event: dict) -> str | None:
    """Say what an event lacks for replay to map it, or None when nothing is missing."""
    event_type = event.get("type")
    if type(event_type) is not str:
        return "record has no string 'type'"
    for name in _REQUIRED_STRINGS.get(event_type, ()):
        if not isinstance(event.get(name), str):
            return f"a {event_type} event needs a string {name!r}"
    if event_type == TYPE_MESSAGE and "content" not in event:
        return "a message event needs 'content'"
    return None


def _json_copy(value, depth=0):
    """Return a deep copy of value built only from exact JSON types, or raise TranscriptValidationError.

    json.dumps would quietly turn a tuple into a list and the key 1 into "1": what
    replay returned would then differ from what append was given.
    """
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:  # immutable: nothing to copy
        return value
    if depth >= MAX_NESTING:
        raise TranscriptValidationError(f"event is nested deeper than {MAX_NESTING} levels")
    if kind is dict:
        if not all(type(key) is str for key in value):
            bad_key = next(key for key in value if type(key) is not str)
            raise TranscriptValidationError(f"object keys must be strings, not {bad_key!r}")
        return {key: _json_copy(item, depth + 1) for key, item in value.items()}
    if kind is list:
        return [_json_copy(item, depth + 1) for item in value]
    if kind is float:
        if not math.isfinite(value):
            raise TranscriptValidationError(f"{value!r} has no exact JSON representation")
        return value
    for plain in (str, bool, int, float, list, dict):  # subclasses (an IntEnum, say): copy as the plain type
        if isinstance(value, plain):
            return _json_copy(plain(value), depth)
    raise TranscriptValidationError(f"{kind.__name__} is not a JSON type")


_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def _encode_lines(records: list, previous_line: bytes, integrity: bool, max_record_bytes: int) -> list[bytes]:
    """Each record as one line of UTF-8 JSON (no newline), sealed when integrity is on."""
    lines = []
    for record in records:
        try:
            line = _ENCODER.encode(record).encode("utf-8")
        except UnicodeEncodeError:
            raise TranscriptValidationError("strings must be valid Unicode (no lone surrogates)") from None
        if integrity:
            line = _seal(previous_line, line)
        if len(line) + 1 > max_record_bytes:
            raise TranscriptValidationError(f"record is {len(line) + 1} bytes; the limit is {max_record_bytes}")
        lines.append(line)
        previous_line = line
    return lines


def _check_name(kind: str, name) -> str:
    """Return name if it is safe as one path component, else raise ValueError."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"{kind} must be a non-empty string")
    if len(name) > MAX_NAME_LENGTH:
        raise ValueError(f"{kind} is longer than {MAX_NAME_LENGTH} characters")
    bad = ("/", "\\", "\0", "..") + ((os.altsep,) if os.altsep else ())
    if name.startswith(".") or any(part in name for part in bad):
        raise ValueError(f"{kind} {name!r} must not start with '.' or contain '/', '\\', '..' or NUL")
    return name


def _check_max_items(max_items) -> None:
    if not isinstance(max_items, int) or isinstance(max_items, bool) or max_items < 0:
        raise ValueError(f"max_items must be a whole number >= 0, not {max_items!r}")


def _required_text(name: str, value) -> str:
    if not isinstance(value, str) or not value.strip():
        raise MemorySelectionError(f"{name} is required (a non-blank string)")
    return value.strip()


def _sequence_in(event_id, session_id: str) -> int:
    """The sequence an event id of this session names, or raise MemorySelectionError."""
    prefix = event_id_for(session_id, "")
    number = event_id[len(prefix):] if isinstance(event_id, str) and event_id.startswith(prefix) else ""
    if not (number.isascii() and number.isdigit() and not number.startswith("0")):
        raise MemorySelectionError(f"unknown transcript event: {event_id} (ids here look like {prefix}<n>)")
    return int(number)


# --------------------------------------------------------------------------- B. the hash chain

_CHAIN_PREFIX = f',"{CHAIN_FIELD}":"'.encode()
_CHAIN_SUFFIX_LENGTH = len(_CHAIN_PREFIX) + 64 + 2


def _seal(previous_line: bytes, body: bytes) -> bytes:
    """Append the chain field to a JSON object's bytes: sha256 over the previous line and this body."""
    digest = hashlib.sha256(previous_line + b"\n" + body).hexdigest()
    return body[:-1] + f',"{CHAIN_FIELD}":"{digest}"}}'.encode()


def _chain_problem(previous_line: bytes, line: bytes) -> str | None:
    """Say why a sealed line does not follow previous_line, or None when the chain holds."""
    suffix = line[-_CHAIN_SUFFIX_LENGTH:]
    if not (suffix.startswith(_CHAIN_PREFIX) and suffix.endswith(b'"}')):
        return "chain field is not the last field of the record"
    if _seal(previous_line, line[:-_CHAIN_SUFFIX_LENGTH] + b"}") != line:
        return "chain mismatch: this line or the one before it was changed, inserted or removed"
    return None


# --------------------------------------------------------------------------- C. the writer


class OsFileIO:
    """Every call by which a transcript changes the disk. A seam: crash tests record through it."""

    def open(self, path, flags, mode):
        return os.open(path, flags, mode)

    def write(self, fd, data):
        return os.write(fd, data)

    def fsync(self, fd):
        if sys.platform == "darwin":  # macOS fsync does not flush the drive's cache
            fcntl.fcntl(fd, fcntl.F_FULLFSYNC)
        else:
            os.fsync(fd)

    def truncate(self, fd, length):
        os.ftruncate(fd, length)

    def fsync_dir(self, path):
        if os.name != "posix":  # pragma: no cover - directories cannot be opened elsewhere
            return
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def close(self, fd):
        os.close(fd)


class _Writer:
    """A transcript's one open, locked O_APPEND descriptor, and the tail it last wrote.

    Opening it takes the single-writer lock, reads the tail once (the next sequence
    and the chain anchor) and repairs a partial tail; appends then never read the file.
    """

    def __init__(self, transcript: JSONLTranscript, *, exclusive: bool = False):
        self.io, path = transcript._io, transcript.path
        created = exclusive or not path.exists()
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
        self.fd = self.io.open(path, flags | (os.O_EXCL if exclusive else 0), 0o600)
        try:
            _lock_for_writing(self.fd, path)
            if created:
                self.io.fsync_dir(path.parent)  # the new name is durable only once its folder is
            tail = _read_recent(transcript, 1)
            if tail.partial_tail_offset is not None:
                # A fragment or an unfinished batch was never acknowledged: cut it off.
                self.io.truncate(self.fd, tail.partial_tail_offset)
                self.io.fsync(self.fd)
            elif tail.last_line_unterminated:
                # A complete record lost only its newline: finish the line, keep the record.
                self.write_durably(b"\n")
        except BaseException:
            self.io.close(self.fd)
            raise
        self.next_sequence, self.last_line = tail.last_sequence + 1, tail.last_line
        self._closer = weakref.finalize(self, self.io.close, self.fd)  # a forgotten writer still unlocks

    def write_durably(self, data: bytes) -> None:
        """One write of all of data, then fsync; a short write is an error, never retried."""
        written = self.io.write(self.fd, data)
        if written != len(data):
            raise OSError(errno.EIO, f"short write: {written} of {len(data)} bytes reached the file")
        self.io.fsync(self.fd)

    def acknowledged(self, count: int, last_line: bytes) -> None:
        """Remember what the last durable write ended with."""
        self.next_sequence += count
        self.last_line = last_line

    def close(self) -> None:
        """Close the descriptor, which releases the lock."""
        self._closer()


def _lock_for_writing(fd: int, path: Path) -> None:
    """Take the advisory single-writer lock on an open transcript, or raise TranscriptLockedError.

    flock belongs to the open file, so a second writer fails even in this same process.
    """
    if fcntl is None:  # pragma: no cover - no advisory locks here: one writer is the caller's promise
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise TranscriptLockedError(
            f"{path.name} is being written by another writer (one writer per transcript)"
        ) from None


# --------------------------------------------------------------------------- D. reading


def _reject_constant(name):
    raise ValueError(f"{name} is not JSON")


# Built once: json.loads with options builds a new decoder per call.
_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def _parse_json(raw: bytes):
    """The JSON value on one line, or _NOT_JSON when the bytes are not one JSON document."""
    try:
        return _DECODER.decode(raw.decode("utf-8"))
    except (ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return _NOT_JSON


def _lines_of(file, transcript: JSONLTranscript) -> Iterator[tuple]:
    """Yield (line_number, byte_offset, raw bytes, terminated), never holding much more than one record.

    Lines are split on b"\\n" only: JSON text may hold U+2028 and friends, which
    str.splitlines() would also split on.
    """
    limit = transcript.max_record_bytes
    number, offset, pending = 0, 0, b""
    while block := file.read(_BLOCK):
        *complete, pending = (pending + block).split(b"\n")
        for raw in complete:
            number += 1
            if len(raw) >= limit:
                raise TranscriptCorruptionError(transcript.path, number, offset, f"record longer than {limit} bytes")
            yield number, offset, raw, True
            offset += len(raw) + 1
        if len(pending) >= limit:  # longer than any record append accepts
            if _skip_past_newline(file):
                raise TranscriptCorruptionError(transcript.path, number + 1, offset,
                                                f"record longer than {limit} bytes")
            yield number + 1, offset, b"", False  # it runs to the end of the file: a partial tail
            return
    if pending:
        yield number + 1, offset, pending, False


def _skip_past_newline(file) -> bool:
    """Read past the rest of an over-long line; False when it runs to the end of the file."""
    while True:
        block = file.read(_BLOCK)
        if not block:
            return False
        if b"\n" in block:
            file.seek(block.index(b"\n") + 1 - len(block), os.SEEK_CUR)
            return True


def _read_recent(transcript: JSONLTranscript, count: int, before: int | None = None) -> ScanResult:
    """The last count committed records (in front of byte `before`), read from the end of the file.

    When the tail cannot vouch for itself (damage, lines older than the envelope, or
    a batch that never finished), the whole file is read: that names the exact line.
    """
    try:
        return _read_tail(transcript, max(count, 1), before)
    except TranscriptCorruptionError:
        pass  # leave the except block first, so the tail's blocks are freed before the full read
    scanned = transcript.scan()
    if before is not None:
        kept = sum(1 for offset in scanned.offsets if offset < before)
        scanned.events, scanned.offsets = scanned.events[:kept], scanned.offsets[:kept]
    return scanned


def _read_tail(transcript: JSONLTranscript, count: int, before: int | None = None) -> ScanResult:
    limit = transcript.max_record_bytes
    try:
        file = open(transcript.path, "rb")
    except FileNotFoundError:
        return ScanResult()
    with file:
        start = file.seek(0, os.SEEK_END) if before is None else before
        blocks, newlines, longest = [], 0, 0
        while start > 0 and newlines <= count:  # one newline more than lines: the boundary before them
            step = min(_BLOCK, start)
            start -= step
            file.seek(start)
            block = file.read(step)
            blocks.append(block)
            newlines += block.count(b"\n")
            # bytes in front of the first newline seen so far: a line that may still grow
            longest = longest + step if b"\n" not in block else block.find(b"\n")
            if longest > limit:
                raise TranscriptCorruptionError(transcript.path, None, start, "record longer than the limit")
    data = b"".join(reversed(blocks))
    if start > 0:  # drop the cut-off line in front of the first whole one
        cut = data.index(b"\n") + 1
        data, start = data[cut:], start + cut
    *complete, fragment = data.split(b"\n")
    kept = complete[-count:]
    offset = start + sum(len(line) + 1 for line in complete[: len(complete) - len(kept)])
    lines = []
    for raw in kept:
        if len(raw) + 1 > limit:
            raise TranscriptCorruptionError(transcript.path, None, offset, "record longer than the limit")
        lines.append((None, offset, raw, True))
        offset += len(raw) + 1
    if fragment:
        lines.append((None, offset, fragment, False))
    checker = _RecordChecker(transcript, from_start=False)
    result = _fold_lines(lines, checker, ScanResult(), end_of_file=before is None)
    if result.unfinished_batch:  # where the batch began may lie before the blocks read
        raise TranscriptCorruptionError(transcript.path, None, result.partial_tail_offset, "unfinished batch")
    return result


# --------------------------------------------------------------------------- E. child processes


def child_process_env() -> dict:
    """This process's environment, with PYTHONPATH set so a child Python imports this very package."""
    package_parent = str(Path(__file__).resolve().parent.parent)
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package_parent, os.environ.get("PYTHONPATH")]))}


def start_child(target: str, *args) -> subprocess.Popen:
    """Start target ("package.module:function") in a new Python process, called with args as strings.

    The child imports this very package; its stdin, stdout and stderr are text pipes.
    Every real crash in the kit (the demo, the lessons, the crash lab, the tests) starts here.
    """
    module, function = target.split(":")
    program = f"import sys; from {module} import {function}; {function}(*sys.argv[1:])"
    return subprocess.Popen([sys.executable, "-c", program, *map(str, args)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_process_env())


def kill_child(child: subprocess.Popen) -> tuple[str, str]:
    """Kill the child at once (SIGKILL on POSIX, TerminateProcess on Windows): none of its code runs again.

    Returns what it wrote to stdout and stderr that had not been read yet.
    """
    child.kill()
    return child.communicate()


class AgentProcess:
    """The scripted agent (MockLLM + run_agent's loop) running in a child process, one event per request."""

    def __init__(self, path, *, ticking: bool = False):
        self.child = start_child("s09_jsonl_transcript.code:agent_child", path, "ticking" if ticking else "real")

    def append_next(self) -> dict:
        """Let the agent append its next event; returns the record once append has returned (acknowledged)."""
        return json.loads(self._ask("go"))

    def messages(self) -> list[dict]:
        """The messages[] the agent holds in its memory right now."""
        return json.loads(self._ask("messages"))

    def tear_next(self) -> None:
        """Let the agent start its next append and stop it halfway through the write (a staged crash point)."""
        if self._ask("tear") != "torn":
            raise RuntimeError("the agent did not reach the middle of its write")

    def kill(self) -> int:
        """SIGKILL the agent and return its exit status (-9 on POSIX)."""
        kill_child(self.child)
        return self.child.returncode

    def _ask(self, command: str) -> str:
        self.child.stdin.write(command + "\n")
        self.child.stdin.flush()
        reply = self.child.stdout.readline().strip()
        if not reply:
            raise RuntimeError(f"the agent process died: {kill_child(self.child)[1].strip()[-500:]}")
        return reply


class _StopMidWrite(OsFileIO):
    """File I/O whose next write, once armed, puts half its bytes on disk and then never returns."""

    def __init__(self, on_torn: Callable[[], None]):
        self.armed, self.on_torn = False, on_torn

    def write(self, fd, data):
        if not self.armed:
            return super().write(fd, data)
        super().write(fd, data[: len(data) // 2])
        self.on_torn()  # blocks until the process is killed, or raises to abandon the writer
        raise AssertionError("a torn write must not return")


def agent_child(path: str, clock: str = "real") -> None:
    """Body of the agent's child process. Reads commands on stdin, one reply line each:

    'go' appends the next event and prints its record once append has returned;
    'messages' prints the messages[] the agent holds in memory;
    'tear' starts the next append, puts half of its record on disk, prints 'torn' and
    waits, in the middle of the write, for the parent to kill the process.
    """
    def torn():
        print("torn", flush=True)
        sys.stdin.readline()  # blocks until the parent kills us

    file_io = _StopMidWrite(torn)
    transcript = JSONLTranscript(path, clock=ticking_clock() if clock == "ticking" else None, file_io=file_io)
    llm, messages = MockLLM(), []
    for command in sys.stdin:
        if command.strip() == "messages":
            print(json.dumps(messages), flush=True)
            continue
        event = llm.next_event()
        file_io.armed = command.strip() == "tear"
        record = transcript.append(event)
        if event_to_message(record) is not None:
            messages.append(event_to_message(record))
        print(json.dumps(record), flush=True)


def _check_kill_point(kill_after, tear: bool) -> None:
    last = len(BUG_FIX_SCRIPT) - (1 if tear else 0)  # a tear needs a next event to tear
    if not isinstance(kill_after, int) or isinstance(kill_after, bool) or not 0 <= kill_after <= last:
        raise ValueError(f"kill_after must be between 0 and {last}, not {kill_after!r}")


def crash_agent_in_child(path, kill_after: int, tear: bool = True, *, ticking: bool = False) -> list[int]:
    """Run the agent in a child process and kill it (SIGKILL) after kill_after acknowledged appends.

    Returns the sequences the child acknowledged. With tear, the child is killed in
    the middle of its next append, with half of that record on disk: a real partial tail.
    With ticking, the child's clock is ticking_clock() (reproducible recorded_at).
    """
    _check_kill_point(kill_after, tear)
    agent = AgentProcess(path, ticking=ticking)
    try:
        acknowledged = [agent.append_next()["sequence"] for _ in range(kill_after)]
        if tear:
            agent.tear_next()
    finally:
        agent.kill()
    return acknowledged


class _AbandonWriter(Exception):
    """Raised inside a torn write to leave it as a dying process would."""


def simulate_agent_crash(path, kill_after: int, tear: bool = True, *, ticking: bool = False) -> list[int]:
    """The same crash as crash_agent_in_child, acted out in this process (where no SIGKILL exists).

    Appends kill_after events, optionally puts half of the next record on disk, then
    abandons the writer as a dying process would. Returns the acknowledged sequences.
    """
    _check_kill_point(kill_after, tear)

    def abandon():
        raise _AbandonWriter

    file_io = _StopMidWrite(abandon)
    transcript, llm = JSONLTranscript(path, clock=ticking_clock() if ticking else None, file_io=file_io), MockLLM()
    acknowledged = [transcript.append(llm.next_event())["sequence"] for _ in range(kill_after)]
    if tear:
        file_io.armed = True
        try:
            transcript.append(llm.next_event())
        except _AbandonWriter:
            pass
    transcript.close()  # the operating system closes a dead process's descriptors and locks
    return acknowledged


# --------------------------------------------------------------------------- F. the demo in Chinese

DEMO_LANGUAGES = ("en", "zh")
_DEMO_CHINESE = {
    "Part 1: the agent runs in its own process; each event is appended (write + fsync)":
        "Part 1：agent 在自己的进程里运行；每个事件追加一行（write + fsync）",
    "  the agent holds {count} messages in memory (its messages[])":
        "  agent 的内存里有 {count} 条消息（它的 messages[]）",
    "\nPart 2: crash: the agent is killed with SIGKILL while it writes event {number}":
        "\nPart 2：崩溃：agent 正在写第 {number} 个事件时被 SIGKILL 杀死",
    "  the process is gone (exit status {status}); its messages[] went with it":
        "  进程已经不在了（退出状态 {status}），它的 messages[] 也随之消失",
    "  on disk: {lines} complete lines and half a record with no newline":
        "  磁盘上：{lines} 个完整的行，外加半条没有换行符的记录",
    "\nPart 3: a fresh process rebuilds the runtime state from the file":
        "\nPart 3：一个全新的进程从文件重建运行时状态",
    "  recovered {events} events, {messages} messages, title {title!r}":
        "  恢复了 {events} 个事件、{messages} 条消息，标题 {title!r}",
    "  partial tail ignored: {ignored}; tool calls still pending: {pending}":
        "  已忽略 partial tail：{ignored}；仍在等待结果的工具调用：{pending}",
    "  check: recovered messages == the messages Part 1 acknowledged: {ok}":
        "  检查：恢复出的 messages == Part 1 确认过的 messages：{ok}",
    "  the raw JSONL (the last line is the partial tail, never acknowledged):":
        "  原始 JSONL（最后一行就是 partial tail，从未被确认）：",
}


def _demo_words(lang: str):
    """The demo's sentences in lang: each English sentence, or its Chinese, with its fields filled in."""
    if lang not in DEMO_LANGUAGES:
        raise ValueError(f"lang must be one of {DEMO_LANGUAGES}, not {lang!r}")
    words = _DEMO_CHINESE if lang == "zh" else {}
    return lambda text, **fields: words.get(text, text).format(**fields)


def _painter(color: bool):
    codes = {"bold": "1", "green": "32", "red": "31", "dim": "2"}
    return lambda text, style: f"\033[{codes[style]}m{text}\033[0m" if color else text


if __name__ == "__main__":
    # Run as a script, this file is module __main__ and its folder is first on sys.path, where it
    # would shadow the standard library's `code`. Put the repository there instead and hand over to
    # the package, so every class exists once.
    sys.path[0] = str(Path(__file__).resolve().parent.parent)
    from s09_jsonl_transcript.cli import main

    sys.exit(main())
