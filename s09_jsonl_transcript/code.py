"""s09 JSONL transcript: evidence is append-only, runtime state is rebuilt.

Read top to bottom, in the lesson's order (no name is used above its definition): 1. event types
and the envelope; 2. append: one write, then fsync; 3. the reading rule: only a partial tail is
forgiven; 4. replay and recover; 5. the memory gate; 6. JSONLTranscript: sections 2 to 5 as one
class; 7. MockLLM and the three-act demo (a real SIGKILL). Standard library only; POSIX only: Linux
and macOS (on Windows, use WSL). Run the demo: python s09_jsonl_transcript/code.py [--lang zh]
"""

from __future__ import annotations

import argparse
import copy
import errno
import fcntl  # POSIX advisory locks (the lesson is about POSIX files: O_APPEND, fsync, SIGKILL)
import itertools
import json
import math
import os
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import weakref
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

# ================================================================ 1. event types and the envelope
SCHEMA_VERSION = 1  # the newest record layout this code understands
SESSION_MAX_ITEMS = 1000  # the lesson's replay window: about 100-200 rounds of a typical session

TYPE_MESSAGE = "message"  # a user or assistant message
TYPE_REASONING = "reasoning"  # the model thinking aloud: kept, never sent back as a message
TYPE_FUNCTION_CALL = "function_call"  # a tool call: a tool_use block in an assistant message
TYPE_FUNCTION_CALL_RESULT = "function_call_result"  # its result: a tool_result in a user message
TYPE_FILE_SNAPSHOT = "file-history-snapshot"  # files as they were: for tracking, not for the model
TYPE_AI_TITLE = "ai-title"  # the session's generated title: metadata

# The one table of event types: the fields replay needs of each, and their JSON type (None: any
# value). Every other per-type table of the kit derives from this one.
EVENT_TYPES = {
    TYPE_MESSAGE: {"role": str, "content": None}, TYPE_REASONING: {},
    TYPE_FUNCTION_CALL: {"callId": str, "name": str}, TYPE_FUNCTION_CALL_RESULT: {"callId": str},
    TYPE_FILE_SNAPSHOT: {}, TYPE_AI_TITLE: {"title": str},
}
MEMORY_ELIGIBLE_EVENT_TYPES = frozenset({TYPE_MESSAGE, TYPE_FILE_SNAPSHOT})
TRANSCRIPT_SOURCE_TYPE = "transcript"

# The envelope: written by append around every event, never taken from the caller
ENVELOPE_FIELDS = frozenset({"schema_version", "sequence", "event_id", "session_id", "recorded_at"})
FIELDS_APPEND_WRITES = ENVELOPE_FIELDS | {"batch_end", "chain"}  # and the lab's batch and chain
INT_LIMIT = 10 ** 4300  # json.loads refuses integers of more digits (Python's int_max_str_digits)
MAX_NESTING = 100  # deeper events are refused: json.loads could not read them back


class TranscriptCorruptionError(RuntimeError):
    """A complete line is damaged: nothing after it can be trusted, so reading stops there."""
    def __init__(self, path, line_number, byte_offset, reason):
        super().__init__(f"{Path(path).name}:{line_number}: {reason} (byte offset {byte_offset})")
        self.path, self.line_number = Path(path), line_number
        self.byte_offset, self.reason = byte_offset, reason


class TranscriptValidationError(ValueError):
    """append refused an event (or a transcript its path); not a byte of it was written."""


class TranscriptLockedError(RuntimeError):
    """Another writer holds this transcript: a session has one writer at a time."""


class TranscriptIOError(OSError):
    """A file call failed (errno, strerror, filename say which); an append it stopped was undone."""


class TranscriptOutcomeUnknownError(TranscriptIOError):
    """Undoing a failed append failed: its record may be on disk. The instance appends no more."""


class MemorySelectionError(ValueError):
    """The memory gate refused a selection."""


def ticking_clock(start=datetime(2026, 1, 5, 9, 0, tzinfo=timezone.utc), step=timedelta(seconds=1)):
    """A deterministic clock for tests and notebooks: start, start + step, start + 2 * step, ..."""
    ticks = itertools.count()
    return lambda: start + step * next(ticks)


def event_id_for(session_id: str, sequence: int) -> str:
    """The durable id of one event: transcript:<session_id>:<sequence>."""
    return f"{TRANSCRIPT_SOURCE_TYPE}:{session_id}:{sequence}"


def shape_problem(event: dict) -> str | None:
    """What an event lacks for replay to map it (see EVENT_TYPES), or None if it lacks nothing."""
    for name, kind in EVENT_TYPES.get(event["type"], {}).items():
        if kind is None and name not in event:
            return f"a {event['type']} event needs {name!r}"
        if kind is str and type(event.get(name)) is not str:
            return f"a {event['type']} event needs a string {name!r}"
    return None


def json_copy(value, depth: int = 0):
    """A deep copy of value in plain JSON types, or raise TranscriptValidationError (json.dumps
    turns a tuple into a list, the key 1 into "1": replay would not match the event)."""
    if depth > MAX_NESTING:
        raise TranscriptValidationError(f"event is nested deeper than {MAX_NESTING} levels")
    if value is None or type(value) in (str, bool):
        return value
    if isinstance(value, int):  # an int or an IntEnum, say: json.loads must read it back
        if abs(value) >= INT_LIMIT:
            raise TranscriptValidationError("an integer of over 4300 digits: json.loads refuses it")
        return int.__int__(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise TranscriptValidationError(f"{value!r} has no exact JSON representation")
        return float.__float__(value)
    if isinstance(value, dict):
        bad_keys = [key for key in value if type(key) is not str]
        if bad_keys:
            raise TranscriptValidationError(f"object keys must be strings, not {bad_keys[0]!r}")
        return {key: json_copy(item, depth + 1) for key, item in value.items()}
    if isinstance(value, list):
        return [json_copy(item, depth + 1) for item in value]
    if isinstance(value, str):  # a subclass, such as a str Enum: str(Role.USER) is "Role.USER"
        return str.__str__(value)
    raise TranscriptValidationError(f"{type(value).__name__} is not a JSON type")


def checked_event(event) -> dict:
    """A private copy of an event that append may write, or raise TranscriptValidationError."""
    if not isinstance(event, dict):
        raise TranscriptValidationError(f"an event must be a dict, not {type(event).__name__}")
    if not isinstance(event.get("type"), str) or not event["type"]:
        raise TranscriptValidationError("an event needs a non-empty string 'type'")
    if not FIELDS_APPEND_WRITES.isdisjoint(event):  # one set test; the message only for a refusal
        spoofed = ", ".join(sorted(FIELDS_APPEND_WRITES & event.keys()))
        raise TranscriptValidationError(
            f"event carries reserved envelope fields append writes itself: {spoofed}")
    copied = json_copy(event)
    problem = shape_problem(copied)
    if problem:
        raise TranscriptValidationError(problem)
    return copied


# json.dumps builds an encoder on every call; one, built once, writes the same bytes
ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def encode_line(record: dict) -> bytes:
    """The record as one line of UTF-8 JSON, newline included."""
    try:
        return ENCODER.encode(record).encode() + b"\n"
    except UnicodeEncodeError:
        raise TranscriptValidationError("strings must be valid Unicode (no lone surrogates)") \
            from None


# ================================================================ 2. append: one write, then fsync
class FileIO:
    """The writer's I/O calls, each the os call of its name: the lab's crash tests record them."""
    def open(self, path, flags: int, mode: int) -> int: return os.open(path, flags, mode)
    def write(self, fd: int, data: bytes) -> int: return os.write(fd, data)
    def fsync(self, fd: int) -> None: os.fsync(fd)
    def truncate(self, fd: int, length: int) -> None: os.ftruncate(fd, length)
    def close(self, fd: int) -> None: os.close(fd)

    def fsync_dir(self, folder) -> None:
        """fsync a folder, so the names created in it survive a power loss."""
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def make_folders(folder: Path) -> None:
    """Create folder and its missing parents, each new folder's name made durable in its parent."""
    if not folder.exists():
        make_folders(folder.parent)
        folder.mkdir(exist_ok=True)  # another process may have made it first
        try:
            FileIO().fsync_dir(folder.parent)
        except OSError:
            folder.rmdir()  # so that a retry makes it again, and syncs it
            raise


def regular(path, flags: int = os.O_RDONLY, opener=None) -> int:
    """path opened without blocking (as a FIFO would): its descriptor, if it is a regular file."""
    fd = (opener or os.open)(path, flags | os.O_NONBLOCK | os.O_CLOEXEC, 0o600)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise TranscriptIOError(errno.EINVAL, "not a regular file (a FIFO, a device?)", str(path))
    return fd


def as_io_error(error: BaseException, operation: str, path, note: str = "") -> BaseException:
    """error, or for an OSError the library's own TranscriptIOError naming operation and path."""
    if not isinstance(error, OSError) or isinstance(error, TranscriptIOError):
        return error
    return TranscriptIOError(error.errno, f"{operation} failed: {error.strerror}{note}", str(path))


# ================================================================ 3. reading: the partial-tail rule
@dataclass
class Reading:
    """What one read of the file found: the committed events, and what its end looks like."""
    events: list = field(default_factory=list)
    partial_tail_offset: int | None = None  # where an ignored partial tail starts (cut there)
    last_line_unterminated: bool = False  # the last record is whole but lost its newline
    next_sequence: int = 1  # the sequence the next record must carry


NOT_JSON = object()  # parse_line's answer for bytes that are not one JSON document


# NaN and Infinity are not JSON: the decoder hands them to int(), whose ValueError refuses them
DECODER = json.JSONDecoder(parse_constant=int)


def parse_line(raw: bytes):
    """The JSON value on one line, or NOT_JSON when the bytes are not one JSON document."""
    try:
        return DECODER.decode(raw.decode("utf-8"))
    except (ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return NOT_JSON


def record_problem(record, session_id: str, expected_sequence: int) -> str | None:
    """What is wrong with the value parsed from a complete line (envelope, then shape), or None."""
    if record is NOT_JSON:
        return "invalid complete JSON record"
    if type(record) is not dict:
        return "record must be a JSON object"
    if not record.keys() & {"schema_version", "sequence", "session_id", "event_id"}:
        return ("line has no envelope (schema_version, sequence, ...): "
                "not a transcript in the lesson's format")
    expected = {"sequence": expected_sequence, "session_id": session_id,
                "event_id": event_id_for(session_id, expected_sequence)}
    for name, value in expected.items():  # each line carries its own place: no gap, no stranger
        if type(record.get(name)) is not type(value) or record[name] != value:
            return f"expected {name} {value!r}, got {record.get(name)!r}"
    version = record.get("schema_version")
    if type(version) is not int or version < 1:
        return f"bad schema_version {version!r}"
    if type(record.get("type")) is not str:
        return "record has no string 'type'"
    if version > SCHEMA_VERSION:
        return None  # a newer layout may carry other fields: kept as evidence, never mapped
    return shape_problem(record)


def read_records(path: Path, session_id: str) -> Reading:
    """The reading rule. Every line is checked in order. Only the last line may be forgiven: when it
    has no newline and is not JSON, it is a write that never finished (a partial tail): never
    acknowledged, so it is left out and reported, and the next append cuts it off. Any other damage
    raises TranscriptCorruptionError naming the line and the byte: the reader fails closed."""
    reading = Reading()
    try:
        with open(regular(path), "rb") as file:
            lines = file.read().split(b"\n")  # on b"\n" only: splitlines splits on U+2028 too
    except FileNotFoundError:
        return reading
    offset = 0
    for number, raw in enumerate(lines, start=1):
        complete = number < len(lines)  # a newline ends it; the last piece has none
        if not complete and not raw:  # the file ends with a newline
            break
        record = parse_line(raw)
        if record is NOT_JSON and not complete:  # a partial tail: forgiven, reported
            reading.partial_tail_offset = offset
            break
        problem = record_problem(record, session_id, reading.next_sequence)
        if problem:  # a bad complete line: nothing after it can be trusted
            raise TranscriptCorruptionError(path, number, offset, problem)
        reading.events.append(record)
        reading.next_sequence += 1
        reading.last_line_unterminated = not complete  # whole, but its newline was lost
        offset += len(raw) + 1
    return reading


# ================================================================ 4. replay and recover: the fold
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
    pending_calls: list = field(default_factory=list)  # tool calls still waiting for their result
    unknown_schema_events: int = 0  # records of a newer schema_version: kept as evidence, unmapped


def event_to_message(event: dict) -> dict | None:
    """The chat message for one event, or None for events that are metadata."""
    kind = event["type"]
    if kind == TYPE_MESSAGE:
        return {"role": event["role"], "content": event["content"]}
    if kind == TYPE_FUNCTION_CALL:
        return {"role": "assistant", "content": [{"type": "tool_use", "id": event["callId"],
                "name": event["name"], "input": event.get("arguments", {})}]}
    if kind == TYPE_FUNCTION_CALL_RESULT:
        return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": event["callId"],
                "content": event.get("output", "")}]}
    return None


def last_items(events: list, max_items: int) -> list:
    """The last max_items events (none for 0; all of them when there are fewer)."""
    if type(max_items) is not int or max_items < 0:
        raise ValueError(f"max_items must be a whole number >= 0, not {max_items!r}")
    return events[max(len(events) - max_items, 0):]


def messages_of(window: list) -> list[dict]:
    """The chat messages for a window of events, but for a tool result whose call fell outside it
    (a chat API refuses a tool_result without its tool_use) and records of a newer schema."""
    known = [event for event in window if event["schema_version"] <= SCHEMA_VERSION]
    calls = {event["callId"] for event in known if event["type"] == TYPE_FUNCTION_CALL}
    kept = [event for event in known
            if event["type"] != TYPE_FUNCTION_CALL_RESULT or event["callId"] in calls]
    return [message for message in map(event_to_message, kept) if message is not None]


def rebuild(history, window: list, total_events: int, partial_tail: bool) -> ReplayState:
    """The fold: a ReplayState from checked events, metadata from history, messages from window."""
    title, snapshots, reasoning, newer, open_calls = None, [], 0, 0, {}
    for event in history:
        kind = event["type"]
        if event["schema_version"] > SCHEMA_VERSION:
            newer += 1  # evidence this code cannot interpret: counted, nothing more
        elif kind == TYPE_AI_TITLE:
            title = event["title"]
        elif kind == TYPE_FILE_SNAPSHOT:
            snapshots.append(event)
        elif kind == TYPE_REASONING:
            reasoning += 1
        elif kind == TYPE_FUNCTION_CALL:
            open_calls[event["callId"]] = event
        elif kind == TYPE_FUNCTION_CALL_RESULT:
            open_calls.pop(event["callId"], None)
    return ReplayState(messages_of(window), title, snapshots, total_events, reasoning,
                       next_sequence=total_events + 1, ignored_partial_tail=partial_tail,
                       pending_calls=list(open_calls.values()), unknown_schema_events=newer)


# ================================================================ 5. the memory gate
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
        return {"source_id": self.source_id, "source_type": self.source_type,
                "title": f"{self.session_id} event {self.sequence}",
                "captured_at": self.captured_at}


def memory_candidate(events: list, session_id: str, event_id: str, summary: str,
                     reason: str) -> TranscriptMemoryCandidate:
    """The gate: one eligible event, a summary and a reason make a candidate with no event body."""
    refuse, prefix = MemorySelectionError, event_id_for(session_id, "")
    known = isinstance(event_id, str) and event_id.startswith(prefix)
    number = event_id[len(prefix):] if known else ""
    if not (number.isascii() and number.isdigit() and not number.startswith("0")):
        raise refuse(f"unknown transcript event: {event_id!r} (ids here look like {prefix}<n>)")
    sequence = int(number)
    for name, text in (("summary", summary), ("reason", reason)):
        if not isinstance(text, str) or not text.strip():
            raise refuse(f"{name} is required (a non-blank string)")
    if sequence > len(events):
        raise refuse(f"unknown transcript event: {event_id}")
    event = events[sequence - 1]
    if event["schema_version"] > SCHEMA_VERSION:
        raise refuse(f"{event_id} has a newer schema_version: kept as evidence, never selected")
    if event["type"] not in MEMORY_ELIGIBLE_EVENT_TYPES:
        raise refuse(f"event type {event['type']!r} is not eligible for memory selection")
    return TranscriptMemoryCandidate(
        source_id=event["event_id"], session_id=session_id, sequence=sequence,
        event_type=event["type"], captured_at=event["recorded_at"], summary=summary.strip(),
        selection_reason=reason.strip())


# ================================================================ 6. JSONLTranscript, the class
class JSONLTranscript:
    """One session's append-only transcript. Threads may share one instance (appends take turns on
    `lock`, a threading.Lock); one writer holds the file, others get TranscriptLockedError."""
    open_flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC  # writes land at the end

    def __init__(self, filepath, *, clock=None):
        self.path = Path(filepath).absolute()  # the same file if the process changes directory
        self.filepath = str(self.path)
        try:  # a path no file system could hold is refused here, before a byte is written
            fits = max(map(len, os.fsencode(self.path).split(b"/"))) <= 255  # bytes a name holds
        except UnicodeEncodeError:  # a lone surrogate
            fits = False
        if not fits or "\0" in self.filepath:
            raise TranscriptValidationError(f"{self.filepath!r}: a path may hold no NUL, no lone "
                                            "surrogate and no name over 255 bytes")
        self.session_id = self.path.stem  # the file's name is the session id
        self.clock = clock or (lambda: datetime.now(timezone.utc))
        self.lock = threading.Lock()
        self.file_io = FileIO()  # the writer's I/O calls (the lab passes its own)
        self.next_sequence = None  # the next append's sequence: read once, when the writer opens
        # the writer's descriptor, its process, its closer, and (device, inode, size) of its file
        self._fd = self._writer_pid = self._closer = self._file_state = None
        self.outcome_unknown = None  # set when undoing a failed append failed: no more appends

    @classmethod
    def for_session(cls, root, workspace: str, session_id: str, **options):
        """The transcript at root/projects/<workspace>/<session_id>.jsonl; unsafe names refused."""
        for kind, name in (("workspace", workspace), ("session_id", session_id)):
            unsafe = not isinstance(name, str) or not 0 < len(name) <= 128 or name.startswith(".")
            if unsafe or any(bad in name for bad in ("/", "\\", "\0", "..")):
                raise TranscriptValidationError(f"{kind} must be 1 to 128 characters, not start "
                                                "with '.', and hold no '/', '\\', '..' or NUL")
        return cls(Path(root) / "projects" / workspace / f"{session_id}.jsonl", **options)

    def timestamp(self) -> str:
        """Now by the clock (which must return an aware datetime) in ISO 8601, UTC: recorded_at."""
        now = self.clock()
        if now.tzinfo is None:
            raise TranscriptValidationError("the clock must return an aware datetime")
        return now.astimezone(timezone.utc).isoformat()

    def envelope(self, sequence: int) -> dict:
        """The envelope of the record at sequence, stamped now."""
        return {"schema_version": SCHEMA_VERSION, "sequence": sequence,
                "event_id": event_id_for(self.session_id, sequence), "session_id": self.session_id,
                "recorded_at": self.timestamp()}

    def read_for_writer(self) -> Reading:
        """What a new writer must know: next_sequence, and a partial tail or a lost newline."""
        return read_records(self.path, self.session_id)  # every line: the lab reads only the tail

    def _drop_writer(self) -> None:
        if self._fd is not None:
            self._fd = None
            self._closer()

    def open_writer(self) -> None:
        """Become the writer (hold `lock`): open, lock, repair the end, learn next_sequence."""
        if self._fd is not None and self._writer_pid == os.getpid():
            return
        if self._fd is not None:  # inherited through os.fork(): the parent still writes through it
            self._drop_writer()  # closes our copy only; the parent's descriptor and lock stay
        if self.outcome_unknown:  # whether that record is on disk, only a new instance may judge
            raise self.outcome_unknown
        fd = None
        try:
            make_folders(self.path.parent)
            fd = regular(self.path, self.open_flags, self.file_io.open)
            try:  # one writer per file, even within one process: flock
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise TranscriptLockedError(f"{self.path.name} is being written by another "
                                            "writer (one writer per transcript)") from None
            found = os.fstat(fd)
            if found.st_size == 0:  # nothing acknowledged here: nobody proved the name durable
                self.file_io.fsync_dir(self.path.parent)  # a name is durable once its folder is
            end = self.read_for_writer()  # once: after this, appends never read the file
            if end.partial_tail_offset is not None:
                self.file_io.truncate(fd, end.partial_tail_offset)  # never acknowledged: cut it
                self.file_io.fsync(fd)
            elif end.last_line_unterminated:
                self.file_io.write(fd, b"\n")  # a whole record lost only its newline: keep it
                self.file_io.fsync(fd)
            self._file_state = (found.st_dev, found.st_ino, os.lseek(fd, 0, os.SEEK_END))
        except BaseException as error:
            if fd is not None:
                self.file_io.close(fd)
            raise as_io_error(error, "open the writer", self.path)
        self._fd, self._writer_pid, self.next_sequence = fd, os.getpid(), end.next_sequence
        self._closer = weakref.finalize(self, self.file_io.close, fd)  # a dropped one unlocks

    def check_unchanged(self, written: int) -> None:
        """Raise unless the path still names the writer's file, grown by `written` bytes alone."""
        now = os.stat(self.filepath)
        if (now.st_dev, now.st_ino, now.st_size - written) != self._file_state:
            raise OSError(errno.ESTALE, "the path names another file now, or the file changed")
        self._file_state = (now.st_dev, now.st_ino, now.st_size)

    def write_durably(self, data: bytes) -> None:
        """The durable write (hold `lock`): one os.write of all of data on the O_APPEND descriptor,
        fsync, and a check that the path still names this file. What fails is cut off durably
        (truncate, then fsync), so a retry writes the event once; if the cut fails too, the
        record may be on disk: TranscriptOutcomeUnknownError, and this instance appends no more."""
        end_before = os.lseek(self._fd, 0, os.SEEK_END)  # the file's size: where the write lands
        step = "write"
        try:
            written = self.file_io.write(self._fd, data)  # os.write
            if written != len(data):  # a short write: writing the rest makes the kernel say why
                self.file_io.write(self._fd, data[written:])
                raise OSError(errno.ENOSPC, f"the disk is full: {written} of {len(data)} bytes")
            step = "fsync"
            self.file_io.fsync(self._fd)
            step = "check"
            self.check_unchanged(len(data))  # never acknowledge to a file no reader finds
        except BaseException as error:
            try:  # undo: the cut is a change too, durable only once synced
                self.file_io.truncate(self._fd, end_before)
                self.file_io.fsync(self._fd)
            except BaseException as undo_error:
                last = self.next_sequence + data.count(b"\n") - 1  # a batch is there if its last is
                event_id = event_id_for(self.session_id, last)
                text = f"{step} failed, and undoing it too: {event_id} may be on disk"
                unknown = TranscriptOutcomeUnknownError(errno.EIO, text, self.filepath)
                unknown.sequence, unknown.event_id, self.outcome_unknown = last, event_id, unknown
                raise unknown from undo_error
            finally:
                self._drop_writer()  # fail closed: the next append reopens and re-reads the tail
            raise as_io_error(error, step, self.path, "; the append was undone")

    def append(self, event: dict) -> dict:
        """Durably append one event and return the record written (the caller's dict unchanged).
        When append returns, the event is on disk: acknowledged."""
        payload = checked_event(event)  # refuse before a byte is written
        with self.lock:
            self.open_writer()
            record = {**self.envelope(self.next_sequence), **payload}
            self.write_durably(encode_line(record))
            self.next_sequence += 1
        return record

    def close(self) -> None:
        """Release the writer's descriptor and its lock; a later append opens them again."""
        with self.lock:
            self._drop_writer()

    def __enter__(self): return self
    def __exit__(self, *exc_info): self.close()

    def read_events(self) -> list[dict]:
        """Section 3: every committed event, checked in order; damage raises."""
        return read_records(self.path, self.session_id).events

    _read_all_events = read_events  # the name the lesson uses

    def count_lines(self) -> int:
        """How many complete (newline-terminated) lines the file holds."""
        if not self.path.exists():
            return 0
        with open(regular(self.path), "rb") as file:
            return file.read().count(b"\n")

    def replay_state(self, max_items: int = SESSION_MAX_ITEMS) -> ReplayState:
        """Section 4: the state from the last max_items events (the whole file read, as the
        lesson's sample does; the lab reads from the end)."""
        reading = read_records(self.path, self.session_id)
        window = last_items(reading.events, max_items)
        return rebuild(window, window, len(reading.events), reading.partial_tail_offset is not None)

    def replay(self, max_items: int = SESSION_MAX_ITEMS) -> list[dict]:
        """Chat messages for the last max_items events, oldest first, ready to send to a model."""
        return self.replay_state(max_items).messages

    def recover(self, max_items: int = SESSION_MAX_ITEMS) -> dict:
        """What a replacement runtime needs: messages from the window, the rest from every event."""
        reading = read_records(self.path, self.session_id)
        window = last_items(reading.events, max_items)
        state = rebuild(reading.events, window, len(reading.events),
                        reading.partial_tail_offset is not None)
        return {**vars(state), "message_count": len(state.messages)}

    _event_to_message = staticmethod(event_to_message)  # the name the lesson uses

    def select_memory_candidate(self, event_id: str, summary: str,
                                reason: str) -> TranscriptMemoryCandidate:
        """Section 5, the memory gate, on this session: any eligible event, in the window or not."""
        return memory_candidate(self.read_events(), self.session_id, event_id, summary, reason)


# ================================================================ 7. a scripted agent and the demo
_CALC_BUGGY = "def add(a, b):\n    return a - b\n"
_CALC_FIXED = "def add(a, b):\n    return a + b\n"
BUG_FIX_SCRIPT = (
    {"type": TYPE_MESSAGE, "role": "user",
     "content": "test_calc.py fails: add(2, 3) returns -1. Please fix it."},
    {"type": TYPE_AI_TITLE, "title": "Fix add() in calc.py"},
    {"type": TYPE_REASONING, "content": "add() probably subtracts. Read calc.py before editing."},
    {"type": TYPE_FUNCTION_CALL, "callId": "call_1", "name": "read_file",
     "arguments": {"path": "calc.py"}},
    {"type": TYPE_FUNCTION_CALL_RESULT, "callId": "call_1", "output": _CALC_BUGGY},
    {"type": TYPE_MESSAGE, "role": "assistant",
     "content": "add() returns a - b. I will change it to a + b."},
    {"type": TYPE_FILE_SNAPSHOT, "files": {"calc.py": _CALC_BUGGY}},
    {"type": TYPE_FUNCTION_CALL, "callId": "call_2", "name": "write_file",
     "arguments": {"path": "calc.py", "content": _CALC_FIXED}},
    {"type": TYPE_FUNCTION_CALL_RESULT, "callId": "call_2", "output": "wrote 33 bytes to calc.py"},
    {"type": TYPE_FUNCTION_CALL, "callId": "call_3", "name": "run_tests", "arguments": {}},
    {"type": TYPE_FUNCTION_CALL_RESULT, "callId": "call_3", "output": "1 passed in 0.01s"},
    {"type": TYPE_MESSAGE, "role": "assistant",
     "content": "Fixed: add() returns a + b and the test passes."},
)


class MockLLM:
    """A deterministic scripted agent session that emits every event type, one at a time."""
    def __init__(self, script=BUG_FIX_SCRIPT):
        self.script = copy.deepcopy(list(script))
        self.position = 0

    def next_event(self) -> dict | None:
        """The next event of the script (a fresh copy), or None when the session is over."""
        if self.position == len(self.script):
            return None
        self.position += 1
        return copy.deepcopy(self.script[self.position - 1])


def run_agent(transcript: JSONLTranscript, llm: MockLLM) -> list[dict]:
    """The agent loop: append every event the model produces, in order; return the records."""
    written = []
    while (event := llm.next_event()) is not None:
        written.append(transcript.append(event))
    return written


DEMO_KILL_AFTER = 8  # the demo's agent dies writing event 9, the result of call_2 (write_file)


def agent_child(path: str, ticking: bool) -> None:
    """The demo's agent: append, print [record, lines in the file], then die by SIGKILL mid-line."""
    transcript = JSONLTranscript(path, clock=ticking_clock() if ticking else None)
    llm, records = MockLLM(), []
    for _ in range(DEMO_KILL_AFTER):
        records.append(transcript.append(llm.next_event()))
        print(json.dumps([records[-1], transcript.count_lines()]), flush=True)
    line = encode_line({**transcript.envelope(transcript.next_sequence), **llm.next_event()})
    os.write(transcript._fd, line[: len(line) // 2])
    os.kill(os.getpid(), signal.SIGKILL)


def demo(root, ticking: bool = False, lang: str = "en") -> bool:
    """The three acts on one session: append, kill the agent for real, rebuild and compare. True
    when the rebuilt messages equal the acknowledged ones. ticking: a fixed clock; "zh": Chinese."""
    def say(english: str, chinese: str, **fields):
        print((chinese if lang == "zh" else english).format(**fields))

    transcript = JSONLTranscript.for_session(root, "demo", "session-1")  # the agent writes it
    say("Part 1: the agent runs in its own process; each event is appended (write + fsync)",
        "Part 1：agent 在自己的进程里运行；每个事件追加一行（write + fsync）")
    command = [sys.executable, str(Path(__file__).resolve()), "--agent-child", str(transcript.path)]
    agent = subprocess.Popen(command + ["--ticking"] * ticking, stdout=subprocess.PIPE, text=True)
    reports = [json.loads(agent.stdout.readline()) for _ in range(DEMO_KILL_AFTER)]
    for record, lines in reports:  # each record the agent acknowledged: its append returned
        print(f"  {record['sequence']:>2} {record['type']:<22} jsonl line: {lines}")
    acknowledged = messages_of([record for record, _ in reports])  # the agent's messages[]
    say("  the agent holds {count} messages in memory (its messages[])",
        "  agent 的内存里有 {count} 条消息（它的 messages[]）", count=len(acknowledged))

    agent.stdout.close()
    say("\nPart 2: crash: the agent is killed with SIGKILL while it writes event {number}\n"
        "  the process is gone (exit status {status}); its messages[] went with it",
        "\nPart 2：崩溃：agent 正在写第 {number} 个事件时被 SIGKILL 杀死\n"
        "  进程已经不在了（退出状态 {status}），它的 messages[] 也随之消失",
        number=DEMO_KILL_AFTER + 1, status=agent.wait())
    say("  on disk: {lines} complete lines and half a record with no newline",
        "  磁盘上：{lines} 个完整的行，外加半条没有换行符的记录", lines=transcript.count_lines())

    say("\nPart 3: a fresh process rebuilds the runtime state from the file",
        "\nPart 3：一个全新的进程从文件重建运行时状态")
    state = JSONLTranscript(transcript.path).recover()
    say("  recovered {events} events, {messages} messages, title {title!r}",
        "  恢复了 {events} 个事件、{messages} 条消息，标题 {title!r}",
        events=state["total_events"], messages=state["message_count"], title=state["title"])
    say("  partial tail ignored: {ignored}; tool calls still pending: {pending}",
        "  已忽略 partial tail：{ignored}；待回应的工具调用：{pending}",
        ignored=state["ignored_partial_tail"],
        pending=[call["callId"] for call in state["pending_calls"]])
    ok = state["messages"] == acknowledged
    say("  check: recovered messages == the messages Part 1 acknowledged: {ok}",
        "  检查：恢复出的 messages == Part 1 确认过的 messages：{ok}", ok=ok)
    say("  the raw JSONL (the last line is the partial tail, never acknowledged):",
        "  原始 JSONL（最后一行就是 partial tail，从未被确认）：")
    for line in transcript.path.read_bytes().decode("utf-8", "replace").splitlines():
        print(f"    {line}")
    return ok


def main(argv=None) -> int:
    """Run the demo; its files go under --root, or into a temporary folder removed afterwards."""
    parser = argparse.ArgumentParser(description="The s09 three-act crash demo.")
    locale = next(filter(None, map(os.environ.get, ("LC_ALL", "LC_MESSAGES", "LANG"))), "")
    parser.add_argument("--lang", choices=("en", "zh"),
                        default="zh" if locale.lower().startswith("zh") else "en")
    parser.add_argument("--root", help="keep the demo's files under this folder")
    parser.add_argument("--ticking", action="store_true", help="a fixed clock, the same output")
    parser.add_argument("--agent-child", help=argparse.SUPPRESS)  # the demo's agent runs this file
    args = parser.parse_args(argv)
    if args.root and (Path(args.root) / "projects" / "demo" / "session-1.jsonl").exists():
        parser.error(f"{args.root} already holds a demo session; give the demo a new --root")
    if args.agent_child:
        agent_child(args.agent_child, args.ticking)  # never returns: the child kills itself
    with tempfile.TemporaryDirectory(prefix="s09-demo-") as scratch:
        return 0 if demo(args.root or scratch, ticking=args.ticking, lang=args.lang) else 1


if __name__ == "__main__":
    sys.exit(main())
