"""s09 JSONL transcript: evidence is append-only, runtime state is rebuilt.

An agent's conversation is stored as one JSON event per line. Every append is a
single write on an O_APPEND descriptor followed by fsync, so an event whose
append returned survives a crash. After a crash, a fresh process replays the
file and rebuilds the runtime state (messages, title, file snapshots).

Read it top to bottom:
  1. event types, the envelope every record carries, and the errors;
  2. JSONLTranscript: append (validate, wrap in the envelope, one write, fsync),
     then reading (the torn-tail rule, replay from the tail) and the memory gate;
  3. the validated fold: the checks every line passes, and the state rebuilt from them;
  4. the memory candidate: one durable event id in, a pointer with no body out;
  5. MockLLM and the three-act crash demo at the bottom.

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
import signal
import subprocess
import sys
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

# --------------------------------------------------------------------------- 1. vocabulary

SCHEMA_VERSION = 1
SESSION_MAX_ITEMS = 1000

TYPE_MESSAGE = "message"
TYPE_REASONING = "reasoning"
TYPE_FUNCTION_CALL = "function_call"
TYPE_FUNCTION_CALL_RESULT = "function_call_result"
TYPE_FILE_SNAPSHOT = "file-history-snapshot"
TYPE_AI_TITLE = "ai-title"

MEMORY_ELIGIBLE_EVENT_TYPES = frozenset({TYPE_MESSAGE, TYPE_FILE_SNAPSHOT})
RESERVED_ENVELOPE_FIELDS = frozenset(
    {"schema_version", "sequence", "recorded_at", "session_id", "event_id"}
)
TRANSCRIPT_SOURCE_TYPE = "transcript"

CHAIN_FIELD = "chain"  # integrity mode only: sha256 of (previous line, this line)
MAX_RECORD_BYTES = 8 * 1024 * 1024
MAX_NESTING = 100  # deeper payloads are refused, so every record we write can be read back
MAX_NAME_LENGTH = 128

# Fields each known event type must carry as strings, so replay can always map it.
_REQUIRED_STRINGS = {
    TYPE_MESSAGE: ("role",),
    TYPE_FUNCTION_CALL: ("callId", "name"),
    TYPE_FUNCTION_CALL_RESULT: ("callId",),
    TYPE_AI_TITLE: ("title",),
}
_ENVELOPE_KEYS = frozenset({"schema_version", "sequence", "session_id", "event_id"})
_BLOCK = 64 * 1024
_NOT_JSON = object()


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


# --------------------------------------------------------------------------- 2. writing (and the JSONLTranscript class)


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


_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def _json_copy(value, depth=0):
    """Return a deep copy of value built only from exact JSON types, or raise TranscriptValidationError."""
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


def _validated_payload(event) -> dict:
    """Return a private copy of an event that append may write, or raise TranscriptValidationError."""
    if not isinstance(event, dict):
        raise TranscriptValidationError(f"an event must be a dict, not {type(event).__name__}")
    if not isinstance(event.get("type"), str) or not event["type"]:
        raise TranscriptValidationError("an event needs a non-empty string 'type'")
    spoofed = sorted((RESERVED_ENVELOPE_FIELDS | {CHAIN_FIELD}) & event.keys())
    if spoofed:
        raise TranscriptValidationError(f"event carries reserved envelope fields: {', '.join(spoofed)}")
    problem = _shape_problem(event)
    if problem:
        raise TranscriptValidationError(problem)
    return _json_copy(event)


def _seal(previous_line: bytes, body: bytes) -> bytes:
    """Append the chain field to a JSON object's bytes: sha256 over the previous line and this body."""
    digest = hashlib.sha256(previous_line + b"\n" + body).hexdigest()
    return body[:-1] + f',"{CHAIN_FIELD}":"{digest}"}}'.encode()


_CHAIN_PREFIX = f',"{CHAIN_FIELD}":"'.encode()
_CHAIN_SUFFIX_LENGTH = len(_CHAIN_PREFIX) + 64 + 2


def _chain_problem(previous_line: bytes, line: bytes) -> str | None:
    """Say why a sealed line does not follow previous_line, or None when the chain holds."""
    suffix = line[-_CHAIN_SUFFIX_LENGTH:]
    if not (suffix.startswith(_CHAIN_PREFIX) and suffix.endswith(b'"}')):
        return "chain field is not the last field of the record"
    if _seal(previous_line, line[:-_CHAIN_SUFFIX_LENGTH] + b"}") != line:
        return "chain mismatch: this line or the one before it was changed, inserted or removed"
    return None


def _lock_for_writing(fd: int, path: Path) -> None:
    """Take the advisory single-writer lock on an open transcript, or raise TranscriptLockedError."""
    if fcntl is None:  # pragma: no cover - no advisory locks here: one writer is the caller's promise
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise TranscriptLockedError(
            f"{path.name} is being written by another writer (one writer per transcript)"
        ) from None


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


@dataclass
class _Read:
    """What one read of the file found (internal)."""

    events: list
    last_sequence: int = 0  # of the last record read: the transcript's length
    torn_tail_offset: int | None = None  # where an ignored unterminated fragment starts
    last_line: bytes = b""  # raw bytes of the last record, the next record's chain anchor
    last_line_unterminated: bool = False  # the last record lost its newline (a torn write)


class JSONLTranscript:
    """One session's append-only transcript: durable appends, validated replay, a memory gate."""

    def __init__(self, filepath, *, clock: Callable[[], datetime] | None = None,
                 integrity: bool = False, max_record_bytes: int = MAX_RECORD_BYTES,
                 file_io: OsFileIO | None = None):
        self.path = Path(filepath)
        self.filepath = str(self.path)
        self.session_id = self.path.stem
        self.clock = clock or utc_now
        self.integrity = integrity
        self.max_record_bytes = max_record_bytes
        self._io = file_io or OsFileIO()
        self._fd = None  # the writer's descriptor, opened (and locked) by the first append
        self._next_sequence = 0
        self._last_line = b""
        self.path.parent.mkdir(parents=True, exist_ok=True)

    @classmethod
    def for_session(cls, root, workspace: str, session_id: str, **options) -> "JSONLTranscript":
        """The transcript at root/projects/<workspace>/<session_id>.jsonl.

        Names that could escape root raise ValueError.
        """
        path = Path(root) / "projects" / _check_name("workspace", workspace) / _check_name("session_id", session_id)
        return cls(path.with_name(path.name + ".jsonl"), **options)

    def __repr__(self):
        return f"JSONLTranscript({self.path.name!r})"

    # -- appending ------------------------------------------------------------------

    def append(self, event: dict) -> dict:
        """Durably append one event and return the envelope written. The caller's dict is not changed."""
        return self._append_all([event])[0]

    def append_batch(self, events: Iterable[dict]) -> list[dict]:
        """Durably append several events with one write and one fsync (group commit).

        Every event is validated first: one bad event means none is written.
        """
        events = list(events)
        return self._append_all(events) if events else []

    def _append_all(self, events: list) -> list[dict]:
        payloads = [_validated_payload(event) for event in events]
        fd = self._writer()
        records, lines = [], []
        previous_line, sequence = self._last_line, self._next_sequence
        for payload in payloads:
            record = {**self._envelope(sequence), **payload}
            line = self._encode(record, previous_line)
            records.append(record)
            lines.append(line + b"\n")
            previous_line, sequence = line, sequence + 1
        data = b"".join(lines)
        try:
            self._write_durably(fd, data)
        except BaseException:
            self.close()  # fail closed: the next append re-reads the tail and repairs what this left
            raise
        self._last_line, self._next_sequence = previous_line, sequence
        return records

    def _envelope(self, sequence: int) -> dict:
        now = self.clock()
        if now.tzinfo is None:
            raise TranscriptValidationError("the clock must return an aware datetime")
        return {
            "schema_version": SCHEMA_VERSION,
            "sequence": sequence,
            "event_id": event_id_for(self.session_id, sequence),
            "session_id": self.session_id,
            "recorded_at": now.astimezone(timezone.utc).isoformat(),
        }

    def _encode(self, record: dict, previous_line: bytes) -> bytes:
        try:
            line = _ENCODER.encode(record).encode("utf-8")
        except UnicodeEncodeError:
            raise TranscriptValidationError("strings must be valid Unicode (no lone surrogates)") from None
        if self.integrity:
            line = _seal(previous_line, line)
        if len(line) + 1 > self.max_record_bytes:
            raise TranscriptValidationError(
                f"record is {len(line) + 1} bytes; the limit is {self.max_record_bytes}"
            )
        return line

    def _writer(self) -> int:
        """Open, lock and repair the file once; later appends reuse the descriptor and the cached tail."""
        if self._fd is not None:
            return self._fd
        created = not self.path.exists()
        fd = self._io.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
        try:
            _lock_for_writing(fd, self.path)
            if created:
                self._io.fsync_dir(self.path.parent)  # the new name is durable only once its folder is
            tail = self._read_recent(1)
            if tail.torn_tail_offset is not None:
                # A fragment that does not parse was never acknowledged: cut it off.
                self._io.truncate(fd, tail.torn_tail_offset)
                self._io.fsync(fd)
            elif tail.last_line_unterminated:
                # A complete record lost only its newline: finish the line, keep the record.
                self._write_durably(fd, b"\n")
        except BaseException:
            self._io.close(fd)
            raise
        self._fd = fd
        self._closer = weakref.finalize(self, self._io.close, fd)  # a forgotten writer still unlocks
        self._next_sequence = tail.last_sequence + 1
        self._last_line = tail.last_line
        return fd

    def _write_durably(self, fd: int, data: bytes) -> None:
        """One write of all of data, then fsync; a short write is an error, never retried."""
        written = self._io.write(fd, data)
        if written != len(data):
            raise OSError(errno.EIO, f"short write: {written} of {len(data)} bytes reached the file")
        self._io.fsync(fd)

    def close(self) -> None:
        """Release the writer's descriptor and lock; a later append opens them again."""
        if self._fd is not None:
            self._fd = None
            self._closer()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    # -- reading --------------------------------------------------------------------

    def read_events(self) -> list[dict]:
        """Every event in the file, validated in order; raises TranscriptCorruptionError on damage.

        An unterminated last line that does not parse (a torn write) is ignored.
        """
        return self._read_file().events

    _read_all_events = read_events  # the name the lesson uses

    def replay(self, max_items: int = SESSION_MAX_ITEMS) -> list[dict]:
        """Chat messages for the last max_items events, oldest first, ready to send to a model."""
        return self.replay_state(max_items).messages

    def replay_state(self, max_items: int = SESSION_MAX_ITEMS) -> "ReplayState":
        """The runtime state rebuilt from the last max_items events, read from the end of the file.

        Its cost does not grow with the transcript's length. Title, snapshots and
        reasoning are those inside the window; recover() reads everything.
        """
        _check_max_items(max_items)
        read = self._read_recent(max_items)
        fold = _StateFold(max_items)
        for event in read.events[len(read.events) - max_items:] if max_items else []:
            fold.add(event)
        return fold.state(read)

    def recover(self, max_items: int = SESSION_MAX_ITEMS) -> dict:
        """Validate the whole file and rebuild everything a replacement runtime needs.

        Fails closed: any damage other than a torn last line raises TranscriptCorruptionError.
        """
        _check_max_items(max_items)
        fold = _StateFold(max_items)
        read = self._read_file(on_record=fold.add)  # streamed: memory stays flat however long the file
        state = fold.state(read)
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

    def _read_file(self, on_record=None) -> _Read:
        """The validated fold over the whole file, streamed one line at a time.

        Records go to on_record when given, instead of being collected in read.events.
        """
        try:
            file = open(self.path, "rb")
        except FileNotFoundError:
            return _Read([])
        with file:
            return self._fold_lines(self._lines_of(file), _RecordChecker(self), on_record=on_record)

    def _lines_of(self, file) -> Iterator[tuple]:
        """Yield (line_number, byte_offset, raw bytes, terminated), never holding much more than one record."""
        number, offset, pending = 0, 0, b""
        while block := file.read(_BLOCK):
            *complete, pending = (pending + block).split(b"\n")
            for raw in complete:
                number += 1
                if len(raw) >= self.max_record_bytes:
                    too_long = f"record longer than {self.max_record_bytes} bytes"
                    raise TranscriptCorruptionError(self.path, number, offset, too_long)
                yield number, offset, raw, True
                offset += len(raw) + 1
            if len(pending) >= self.max_record_bytes:  # longer than any record append accepts
                if _skip_past_newline(file):
                    too_long = f"record longer than {self.max_record_bytes} bytes"
                    raise TranscriptCorruptionError(self.path, number + 1, offset, too_long)
                yield number + 1, offset, b"", False  # it runs to the end of the file: a torn tail
                return
        if pending:
            yield number + 1, offset, pending, False

    def _read_recent(self, count: int) -> _Read:
        """Read the last count records from the tail of the file.

        When the tail cannot vouch for itself (damage, or lines older than the
        envelope), read the whole file: that names the exact damaged line.
        """
        try:
            return self._read_tail(max(count, 1))
        except TranscriptCorruptionError:
            pass  # leave the except block first, so the tail's blocks are freed before the full read
        return self._read_file()

    def _read_tail(self, count: int) -> _Read:
        try:
            file = open(self.path, "rb")
        except FileNotFoundError:
            return _Read([])
        with file:
            start = file.seek(0, os.SEEK_END)
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
                if longest > self.max_record_bytes:
                    raise TranscriptCorruptionError(self.path, None, start, "record longer than the limit")
        data = b"".join(reversed(blocks))
        if start > 0:  # drop the cut-off line in front of the first whole one
            cut = data.index(b"\n") + 1
            data, start = data[cut:], start + cut
        *complete, fragment = data.split(b"\n")
        kept = complete[-count:]
        offset = start + sum(len(line) + 1 for line in complete[: len(complete) - len(kept)])
        lines = []
        for raw in kept:
            if len(raw) + 1 > self.max_record_bytes:
                raise TranscriptCorruptionError(self.path, None, offset, "record longer than the limit")
            lines.append((None, offset, raw, True))
            offset += len(raw) + 1
        if fragment:
            lines.append((None, offset, fragment, False))
        checker = _RecordChecker(self, expected_sequence=None, previous_line=None, allow_legacy=False)
        return self._fold_lines(lines, checker)

    @staticmethod
    def _fold_lines(lines, checker: "_RecordChecker", read: _Read | None = None, on_record=None) -> _Read:
        """Check lines in order into read (a fresh one by default); stop at a torn tail."""
        read = read if read is not None else _Read([])
        keep = on_record or read.events.append
        for number, offset, raw, terminated in lines:
            value = _parse_json(raw)
            if not terminated and value is _NOT_JSON:
                # The only damage forgiven: an unterminated last line that does not parse is a
                # torn write. Its append never returned, so nothing acknowledged is lost.
                read.torn_tail_offset = offset
                break
            record = checker.check(value, raw, number, offset)
            keep(record)
            read.last_sequence, read.last_line, read.last_line_unterminated = record["sequence"], raw, not terminated
        return read

    _event_to_message = staticmethod(event_to_message)  # the name the lesson uses

    # -- the memory gate (the candidate itself is in section 4) -----------------------

    def select_memory_candidate(self, event_id: str, *, summary: str, reason: str) -> "TranscriptMemoryCandidate":
        """Turn one durable event id, a summary and a reason into a memory candidate.

        The candidate points at the evidence and carries none of its body. Any
        event of an eligible type may be chosen, inside the replay window or not.
        """
        sequence = self._sequence_of(event_id)
        summary, reason = _required_text("summary", summary), _required_text("reason", reason)
        events = self.read_events()
        if sequence > len(events):
            raise MemorySelectionError(f"unknown transcript event: {event_id}")
        event = events[sequence - 1]
        if event["type"] not in MEMORY_ELIGIBLE_EVENT_TYPES:
            raise MemorySelectionError(f"event type {event['type']!r} is not eligible for memory selection")
        return TranscriptMemoryCandidate(
            source_id=event["event_id"], session_id=self.session_id, sequence=sequence,
            event_type=event["type"], captured_at=event.get("recorded_at"),
            summary=summary, selection_reason=reason,
        )

    def _sequence_of(self, event_id) -> int:
        prefix = event_id_for(self.session_id, "")
        number = event_id[len(prefix):] if isinstance(event_id, str) and event_id.startswith(prefix) else ""
        if not (number.isascii() and number.isdigit() and not number.startswith("0")):
            raise MemorySelectionError(f"unknown transcript event: {event_id} (ids here look like {prefix}<n>)")
        return int(number)


def _check_max_items(max_items) -> None:
    if not isinstance(max_items, int) or isinstance(max_items, bool) or max_items < 0:
        raise ValueError(f"max_items must be a whole number >= 0, not {max_items!r}")


def _required_text(name: str, value) -> str:
    if not isinstance(value, str) or not value.strip():
        raise MemorySelectionError(f"{name} is required (a non-blank string)")
    return value.strip()


def _skip_past_newline(file) -> bool:
    """Read past the rest of an over-long line; False when it runs to the end of the file."""
    while True:
        block = file.read(_BLOCK)
        if not block:
            return False
        if b"\n" in block:
            file.seek(block.index(b"\n") + 1 - len(block), os.SEEK_CUR)
            return True


def _reject_constant(name):
    raise ValueError(f"{name} is not JSON")


# Built once: json.loads and json.dumps with options build a new decoder or encoder per call.
_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def _parse_json(raw: bytes):
    """The JSON value on one line, or _NOT_JSON when the bytes are not one JSON document."""
    try:
        return _DECODER.decode(raw.decode("utf-8"))
    except (ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return _NOT_JSON


# --------------------------------------------------------------------------- 3. the validated fold


class _RecordChecker:
    """Checks records in file order; raises TranscriptCorruptionError at the first bad one."""

    def __init__(self, transcript: JSONLTranscript, *, expected_sequence=1, previous_line=b"", allow_legacy=True):
        self.path = transcript.path
        self.session_id = transcript.session_id
        self.id_prefix = event_id_for(transcript.session_id, "")
        self.require_chain = transcript.integrity
        self.expected = expected_sequence  # None: a tail read takes it from its first record
        self.previous_line = previous_line  # None: the first record's chain cannot be checked
        self.allow_legacy = allow_legacy  # lines from before the envelope existed may open the file
        self.chained = False

    def check(self, value, raw: bytes, number, offset) -> dict:
        """Return the record on this line (value parsed from raw), or raise naming the line."""
        record, problem = value, None
        if value is _NOT_JSON:
            problem = "invalid complete JSON record"
        elif type(value) is not dict:
            problem = "record must be a JSON object"
        elif self.allow_legacy and not value.keys() & _ENVELOPE_KEYS:
            record = {**value, "sequence": self.expected, "session_id": self.session_id,
                      "event_id": self.id_prefix + str(self.expected)}
            problem = _shape_problem(record)
        else:
            self.allow_legacy = False
            expected = value.get("sequence") if self.expected is None else self.expected
            problem = self._envelope_problem(value, expected) or _shape_problem(value)
        if not problem and (self.chained or self.require_chain or CHAIN_FIELD in value):
            problem = self._chain_problem(value, raw)  # a line without an envelope is sealed too
        if problem:
            raise TranscriptCorruptionError(self.path, number, offset, problem)
        self.expected, self.previous_line = record["sequence"] + 1, raw
        return record

    def _envelope_problem(self, record: dict, expected) -> str | None:
        version, sequence = record.get("schema_version"), record.get("sequence")
        if type(version) is not int or version < 1:
            return f"bad schema_version {version!r}"
        if version > SCHEMA_VERSION:
            return f"schema_version {version} is newer than this code understands ({SCHEMA_VERSION})"
        if type(sequence) is not int or sequence != expected or sequence < 1:
            return f"expected sequence {expected}, got {sequence!r}"
        if record.get("session_id") != self.session_id:
            return f"expected session_id {self.session_id!r}, got {record.get('session_id')!r}"
        if record.get("event_id") != self.id_prefix + str(sequence):
            return f"expected event_id {self.id_prefix + str(sequence)!r}, got {record.get('event_id')!r}"
        return None

    def _chain_problem(self, record: dict, raw: bytes) -> str | None:
        if CHAIN_FIELD not in record:
            return "record has no chain field (integrity is on)" if self.chained or self.require_chain else None
        self.chained = True
        return _chain_problem(self.previous_line, raw) if self.previous_line is not None else None


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


class _StateFold:
    """Runtime state folded one event at a time; of the events themselves only the window is kept.

    Messages come from the window only. A tool result whose call fell outside the
    window is dropped: a chat API refuses a tool_result without its tool_use. A call
    with no result yet is listed in pending_calls (a crash in the middle of a tool
    call); the runtime must answer it before sending the messages.
    """

    def __init__(self, window_size: int):
        self.window = deque(maxlen=window_size)
        self.title = None
        self.file_snapshots = []
        self.reasoning_count = 0
        self.open_calls = {}  # callId -> the function_call still waiting for its result

    def add(self, event: dict) -> None:
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

    def state(self, read: _Read) -> ReplayState:
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
            total_events=read.last_sequence,
            reasoning_count=self.reasoning_count,
            next_sequence=read.last_sequence + 1,
            ignored_partial_tail=read.torn_tail_offset is not None,
            pending_calls=list(self.open_calls.values()),
        )


# --------------------------------------------------------------------------- 4. memory candidates


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


# --------------------------------------------------------------------------- 5. a scripted agent and the demo

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
    """The agent loop: append every event the model produces, in order; return the envelopes."""
    written = []
    while (event := llm.next_event()) is not None:
        written.append(transcript.append(event))
        if on_append:
            on_append(written[-1])
    return written


def agent_child(path: str, ticking: bool = False) -> None:
    """Body of the crash demo's child process. Reads commands on stdin:

    'go' appends the next event and prints its sequence once append has returned;
    'tear' writes the first half of the next event's line, as a write cut short by
    a crash would, prints 'torn' and waits to be killed.
    """
    transcript, llm = JSONLTranscript(path, clock=ticking_clock() if ticking else None), MockLLM()
    for command in sys.stdin:
        event = llm.next_event()
        if command.strip() == "tear":
            _write_half_of(path, event)
            print("torn", flush=True)
            sys.stdin.readline()  # blocks until the parent kills us
        print(transcript.append(event)["sequence"], flush=True)


def _write_half_of(path, event: dict) -> None:
    """Write the first half of event's line with no newline: what a write cut short by a crash leaves."""
    line = json.dumps(event, ensure_ascii=False).encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line[: len(line) // 2])
    finally:
        os.close(fd)


def simulate_agent_crash(path, kill_after: int, tear: bool = True, *, ticking: bool = False) -> list[int]:
    """The same crash as crash_agent_in_child, acted out in this process (for systems without SIGKILL).

    Appends kill_after events, optionally leaves half of the next record on disk, then
    abandons the writer as a dying process would. Returns the acknowledged sequences.
    """
    if not isinstance(kill_after, int) or not 0 <= kill_after <= len(BUG_FIX_SCRIPT) - (1 if tear else 0):
        last = len(BUG_FIX_SCRIPT) - (1 if tear else 0)
        raise ValueError(f"kill_after must be between 0 and {last}, not {kill_after!r}")
    transcript, llm = JSONLTranscript(path, clock=ticking_clock() if ticking else None), MockLLM()
    acknowledged = [transcript.append(llm.next_event())["sequence"] for _ in range(kill_after)]
    if tear:
        _write_half_of(path, llm.next_event())
    transcript.close()  # the operating system closes a dead process's descriptors and locks
    return acknowledged


def child_process_env() -> dict:
    """This process's environment, with PYTHONPATH set so a child Python imports this very package."""
    package_parent = str(Path(__file__).resolve().parent.parent)
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package_parent, os.environ.get("PYTHONPATH")]))}


def crash_agent_in_child(path, kill_after: int, tear: bool = True, *, ticking: bool = False) -> list[int]:
    """Run the agent in a child process and kill it (SIGKILL) after kill_after acknowledged appends.

    Returns the sequences the child acknowledged. With tear, the child first
    leaves half of the next record on disk, so the kill produces a real torn tail.
    With ticking, the child's clock is ticking_clock() (reproducible recorded_at).
    """
    last = len(BUG_FIX_SCRIPT) - (1 if tear else 0)  # a tear needs a next event to tear
    if not isinstance(kill_after, int) or not 0 <= kill_after <= last:
        raise ValueError(f"kill_after must be between 0 and {last}, not {kill_after!r}")
    program = ("import sys; from s09_jsonl_transcript.code import agent_child; "
               "agent_child(sys.argv[1], sys.argv[2] == 'ticking')")
    child = subprocess.Popen([sys.executable, "-c", program, str(path), "ticking" if ticking else "real"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=child_process_env())
    acknowledged = []
    try:
        for command in ["go"] * kill_after + (["tear"] if tear else []):
            child.stdin.write(command + "\n")
            child.stdin.flush()
            reply = child.stdout.readline()
            if command == "go" and reply:
                acknowledged.append(int(reply))
    finally:
        child.kill()  # SIGKILL on POSIX (no cleanup runs); TerminateProcess on Windows
        child.wait()
        child.stdin.close()
        child.stdout.close()
    return acknowledged


def _painter(color: bool):
    codes = {"bold": "1", "green": "32", "red": "31", "dim": "2"}
    return lambda text, style: f"\033[{codes[style]}m{text}\033[0m" if color else text


def demo(root, color: bool = False) -> bool:
    """The three acts: append and watch the file grow, crash a writer for real, recover and check.

    Returns True when the recovered messages equal what the killed agent had acknowledged.
    """
    paint = _painter(color)
    print(paint("Part 1: the agent loop appends one event per line (write + fsync each)", "bold"))
    live = JSONLTranscript.for_session(root, "demo", "session-1")
    with live:
        run_agent(live, MockLLM(), lambda r: print(f"  {r['type']:<22} jsonl line: {live.count_lines()}"))

    print(paint("\nPart 2: a real crash: the agent runs in a child process, killed with SIGKILL", "bold"))
    crashed = JSONLTranscript.for_session(root, "demo", "session-2")
    crash = crash_agent_in_child if hasattr(signal, "SIGKILL") else simulate_agent_crash  # Windows: simulated
    acknowledged = crash(crashed.path, kill_after=8)
    print(f"  the child acknowledged sequences {acknowledged},")
    print("  started writing the next record, got half of it onto the disk, and was killed")

    print(paint("\nPart 3: a fresh process rebuilds the runtime state from the file", "bold"))
    state = JSONLTranscript(crashed.path).recover()
    expected = [m for m in map(event_to_message, BUG_FIX_SCRIPT[: len(acknowledged)]) if m]
    ok = state["messages"] == expected
    print(f"  recovered {state['total_events']} events, {state['message_count']} messages, title {state['title']!r}")
    print(f"  torn tail ignored: {state['ignored_partial_tail']}; "
          f"tool calls still pending: {[call['callId'] for call in state['pending_calls']]}")
    verdict = f"  check: recovered messages == acknowledged messages: {ok}"
    print(paint(verdict, "green" if ok else "red"))
    print("  raw JSONL (the last line is the torn fragment, never acknowledged):")
    for line in crashed.path.read_bytes().decode("utf-8", "replace").split("\n"):
        if line:
            print(paint(f"    {line}", "dim"))
    return ok


if __name__ == "__main__":
    # Run as a script, this file is module __main__ and its folder is first on sys.path, where it
    # would shadow the standard library's `code`. Put the repository there instead and hand over to
    # the package, so every class exists once.
    sys.path[0] = str(Path(__file__).resolve().parent.parent)
    from s09_jsonl_transcript.cli import main

    sys.exit(main())
