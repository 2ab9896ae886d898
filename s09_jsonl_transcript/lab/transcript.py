"""The lab's transcript: the lesson's format and promises, hardened for production and the crash lab.

`DurableTranscript` writes and reads the lesson's files (the lesson's envelope, the lesson's checks
of every record, the lesson's fold) and adds:
  - the hardened writer of lab/writer.py: fork detection, short writes, the path check after
    fsync, the undo and the outcome-unknown error, errors that name the failed step;
  - the lab's input checks (lab/checks.py): paths, session names, precise refusals;
  - group commit: `append_batch`, all or nothing, one write and one fsync;
  - the hash chain (`integrity=True`): every record sealed to the one before it;
  - record size limits (`max_record_bytes`, by default the lesson's MAX_RECORD_BYTES);
  - block reads from the end of the file: open + append and `replay(1000)` cost the same
    on 10 thousand or 1 million events, and `recover()` streams in flat memory;
  - the I/O seam (`file_io`) the power-loss lab and the benchmarks record through.
The crash lab, benchmarks, the production log, importers and CLI build on it.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import sys
import threading
from collections import deque
from dataclasses import dataclass, field
from datetime import timezone
from functools import partial
from pathlib import Path
from typing import Callable, Iterable, Iterator

from ..code import (
    DECODER,
    ENVELOPE_FIELDS,
    MAX_RECORD_BYTES,
    SCHEMA_VERSION,
    SESSION_MAX_ITEMS,
    FileIO,
    ReplayState,
    TranscriptCorruptionError,
    TranscriptMemoryCandidate,
    TranscriptValidationError,
    event_id_for,
    event_to_message,
    fold,
    line_problem,
    messages_of,
    select_candidate,
    window_of,
)
from .checks import checked_event, checked_names, checked_path
from .device import DeviceReader, page_floor
from .fast import encode_lines, encode_record, fast_recover, plain_payload, utc_now, utc_stamp
from .writer import DurableWriter, TranscriptIOError, regular

BATCH_END_FIELD = "batch_end"  # on each record of a batch: the sequence of the batch's last record
CHAIN_FIELD = "chain"  # integrity mode only: sha256 of (previous line, this line), always the last field
RESERVED_FIELDS = frozenset(ENVELOPE_FIELDS) | {BATCH_END_FIELD}  # the envelope, and batch_end on a batch's records
BLOCK = 64 * 1024  # how much a reader reads at a time, from either end of the file
WRITER_TAIL = 1024  # a writer's first read of the end: the page that holds the file's last this many bytes to its
# end, one page most often, so one small read from the device; most records are shorter (each next read is larger)
NOT_JSON = object()  # parse_line's answer for bytes that are not one JSON document


def parse_line(raw: bytes):
    """The JSON value on one line as the lesson's reading rule decodes it (code.DECODER: NaN and
    Infinity refused), or NOT_JSON when the bytes are not one JSON document."""
    try:
        return DECODER.decode(raw.decode("utf-8"))
    except (ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return NOT_JSON


class SessionExistsError(TranscriptIOError, FileExistsError):
    """create() was asked for a session whose file exists already: nothing was changed."""


# --------------------------------------------------------------------------- what a scan finds


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

    @property
    def next_sequence(self) -> int:
        """The sequence the record after the last committed one carries."""
        return self.last_sequence + 1


# --------------------------------------------------------------------------- the I/O seam

OsFileIO = FileIO  # the lesson's writer I/O calls: crash tests record a DurableTranscript through a subclass


# --------------------------------------------------------------------------- the durable transcript


class DurableTranscript(DurableWriter):
    """The lesson's transcript with the hardened writer, group commit, the hash chain, size limits,
    tail reads and an I/O seam.

    One instance may be shared by threads: every operation on the writer holds `lock` (an RLock,
    so read-check-append can be one step: with t.lock: t.acquire_writer(), read, append).
    """

    fast_paths = True  # False: recover() and the appends always take the careful path (the differential tests compare)

    def __init__(self, filepath, *, clock=None, integrity: bool = False,
                 max_record_bytes: int = MAX_RECORD_BYTES, file_io: OsFileIO | None = None):
        self.path = checked_path(filepath)  # refused here, before a byte is written
        self.filepath = str(self.path)
        self.session_id = self.path.stem  # the file's name is the session id
        self.clock = clock or utc_now
        self.lock = threading.RLock()
        self.integrity = integrity
        self.max_record_bytes = max_record_bytes
        self.file_io = file_io or OsFileIO()
        self.next_sequence = 0  # the next append's sequence: read once, when the writer opens
        self._last_line = b""  # the last record written: the next record's chain anchor
        self._start_writer_state()

    @classmethod
    def for_session(cls, root, workspace: str, session_id: str, *, new: bool = False, **options):
        """The transcript at root/projects/<workspace>/<session_id>.jsonl (unsafe names refused);
        with new=True, see create."""
        checked_names(workspace, session_id)
        path = Path(root) / "projects" / workspace / f"{session_id}.jsonl"
        return cls.create(path, **options) if new else cls(path, **options)

    @classmethod
    def create(cls, filepath, **options) -> DurableTranscript:
        """Start a new session: create its file (O_EXCL), or raise SessionExistsError (a FileExistsError).

        Two processes that pick the same new session id cannot both get it. The returned
        transcript already holds the writer. A create() that fails half way (the file made,
        its folder not synced) removes the empty file it made, so that it can be retried.
        """
        transcript = cls(filepath, **options)
        transcript.open_flags = DurableWriter.open_flags | os.O_EXCL  # the first open creates the file or fails
        try:
            with transcript.lock:
                transcript.open_writer()
        except BaseException as error:
            if isinstance(error, OSError) and error.errno == errno.EEXIST:
                raise SessionExistsError(errno.EEXIST, f"session {transcript.session_id} exists: create() "
                                         f"starts only a new one", transcript.filepath) from None
            _remove_if_unused(transcript.path)
            raise
        finally:
            transcript.open_flags = DurableWriter.open_flags  # a later reopen finds the file it made
        return transcript

    def __repr__(self):
        return f"DurableTranscript({self.path.name!r})"

    # -- the envelope -----------------------------------------------------------------

    def timestamp(self) -> str:
        """recorded_at for now: on the default clock, fast.utc_stamp() (the lesson's text, made cheaper);
        an injected clock must return an aware datetime."""
        if self.clock is utc_now:
            return utc_stamp()
        now = self.clock()
        if now.tzinfo is None:
            raise TranscriptValidationError("the clock must return an aware datetime")
        return now.astimezone(timezone.utc).isoformat()

    def envelope(self, sequence: int) -> dict:
        """The envelope of the record at sequence, stamped now: the lesson's code.envelope, its
        fields in the same order."""
        return {"schema_version": SCHEMA_VERSION, "sequence": sequence,
                "event_id": event_id_for(self.session_id, sequence), "session_id": self.session_id,
                "recorded_at": self.timestamp()}

    # -- appending ------------------------------------------------------------------

    def append(self, event: dict) -> dict:
        """Durably append one event and return the record written. The caller's dict is not changed."""
        payload = plain_payload(event) if self.fast_paths else None  # the common event, checked and copied at once
        plain = payload is not None
        if payload is None:
            payload = checked_event(event)  # refuse before a byte is written
        with self.lock:
            self.open_writer()  # at once while this process holds the writer
            sequence = self.next_sequence
            record = self.envelope(sequence)
            record.update(payload)  # after the envelope, as the lesson's {**envelope, **payload}
            line = self._encoded_line(record, self._last_line, floats=not plain)
            self.write_durably(line + b"\n")
            self.next_sequence, self._last_line = sequence + 1, line
        return record

    def append_batch(self, events: Iterable[dict]) -> list[dict]:
        """Durably append several events with one write and one fsync (group commit).

        All or nothing: one bad event means none is written, and a crash in the middle
        leaves a batch that readers ignore like a partial tail. Its records share one
        recorded_at: the moment of their one commit.
        """
        events = list(events)
        return self._append_all(events) if events else []

    def _append_all(self, events: list) -> list[dict]:
        plain = [plain_payload(event) if self.fast_paths else None for event in events]  # as in append
        all_plain = None not in plain
        payloads = [payload for payload in plain if payload is not None] if all_plain else [
            checked_event(event) for event in events]  # refuse before writing
        with self.lock:
            self.open_writer()  # at once while this process holds the writer
            first = self.next_sequence
            envelope = self.envelope(first)  # one commit, one time for all its records
            batch_end = {BATCH_END_FIELD: first + len(payloads) - 1} if len(payloads) > 1 else {}
            records = [{**envelope, "sequence": sequence, "event_id": event_id_for(self.session_id, sequence),
                        **batch_end, **payload} for sequence, payload in enumerate(payloads, start=first)]
            lines = self._encode(records, floats=not all_plain)
            self.write_durably(b"\n".join([*lines, b""]))  # a newline after each line
            self.next_sequence += len(records)
            self._last_line = lines[-1]
        return records

    def _encode(self, records: list, *, floats: bool) -> list[bytes]:
        """Each record as one line of UTF-8 JSON (no newline), sealed when integrity is on."""
        if self.fast_paths and not floats and not self.integrity:
            lines = encode_lines(records)  # one pass; None: a record the loop below decides
            if lines is not None and max(map(len, lines)) < self.max_record_bytes:
                return lines  # else the loop below names the first line too long
        lines, previous = [], self._last_line
        for record in records:
            previous = self._encoded_line(record, previous, floats=floats)
            lines.append(previous)
        return lines

    def _encoded_line(self, record: dict, previous: bytes, *, floats: bool) -> bytes:
        """One record's line without its newline, sealed to previous when integrity is on; refused if too long.
        floats=False: the record holds no float (its payload is plain), so the encoder need not look for one."""
        line = encode_record(record, floats=floats)
        if self.integrity:
            line = seal(previous, line)
        if len(line) + 1 > self.max_record_bytes:
            raise TranscriptValidationError(f"record is {len(line) + 1} bytes; the limit is {self.max_record_bytes}")
        return line

    def read_for_writer(self, fd: int, *, from_device: bool = True) -> ScanResult:
        """Only the tail, read through the writer's descriptor fd, from the device unless from_device is
        False (lab/device.py): the next sequence and the chain anchor. A sealed file stays sealed: a
        writer opened without integrity follows it."""
        size = os.fstat(fd).st_size
        with open(fd, "rb", closefd=False) as file:  # through open(): the read-cost tests count it
            reader = DeviceReader(fd, partial(_read_at, file), from_device=from_device)
            try:
                first_step = size - page_floor(max(size - WRITER_TAIL, 0))
                tail = self._tail_of(reader.read, size, 1, None, first_step=first_step)
            except TranscriptCorruptionError:  # the full read names the line: the whole file, from the device
                reader.read(0, 0)
                file.seek(0)
                tail = _fold_lines(self._lines_of(file), _RecordChecker(self), ScanResult())
        if tail.chained:
            self.integrity = True
        self._last_line = tail.last_line
        return tail

    # -- reading --------------------------------------------------------------------

    def read_events(self) -> list[dict]:
        """Every event in the file, validated in order; raises TranscriptCorruptionError on damage."""
        return self.scan().events

    _read_all_events = read_events  # the name the lesson text uses
    _event_to_message = staticmethod(event_to_message)  # the lesson's, by the name the lesson text uses

    def select_memory_candidate(self, event_id: str, summary: str, reason: str) -> TranscriptMemoryCandidate:
        """The lesson's memory gate (code.select_candidate) on this session."""
        return select_candidate(self, event_id, summary, reason)

    def scan(self, on_record: Callable[[dict], None] | None = None, *, report_damage: bool = False) -> ScanResult:
        """Read and validate the whole file once, in blocks, and say what was found.

        Records go to on_record when given (memory stays flat), else into result.events.
        Damage raises TranscriptCorruptionError, or with report_damage=True is returned
        in result.corruption together with everything read before it.
        """
        result = ScanResult()
        try:
            with open(regular(self.path), "rb") as file:
                _fold_lines(self._lines_of(file), _RecordChecker(self), result, on_record)
        except FileNotFoundError:
            pass
        except TranscriptCorruptionError as error:
            if not report_damage:
                raise
            result.corruption = error
        return result

    def read_recent(self, count: int, *, before: int | None = None) -> ScanResult:
        """The last count (at most) committed records, validated, read from the end of the file.

        With before (a byte offset where a record starts), only records in front of it:
        pass result.offsets[0] to page back through older history.
        """
        window_of([], count)  # refuses a count that is not a whole number >= 0
        try:
            scanned = self._read_tail(max(count, 1), before)
        except TranscriptCorruptionError:  # the tail cannot vouch for itself: the full read names the line
            scanned = self.scan()
            if before is not None:
                kept = sum(1 for offset in scanned.offsets if offset < before)
                scanned.events, scanned.offsets = scanned.events[:kept], scanned.offsets[:kept]
        first = max(len(scanned.events) - count, 0)
        scanned.events, scanned.offsets = scanned.events[first:], scanned.offsets[first:]
        return scanned

    def replay_state(self, max_items: int = SESSION_MAX_ITEMS) -> ReplayState:
        """The runtime state from the last max_items events, read from the end of the file.

        Its cost does not grow with the transcript's length.
        """
        scanned = self.read_recent(max_items)
        return _state(scanned.events, fold(scanned.events), scanned)

    def replay(self, max_items: int = SESSION_MAX_ITEMS) -> list[dict]:
        """Chat messages for the last max_items events, oldest first, ready to send to a model."""
        return self.replay_state(max_items).messages

    def recover(self, max_items: int = SESSION_MAX_ITEMS) -> dict:
        """Validate the whole file and rebuild everything a replacement runtime needs, in flat memory."""
        window_of([], max_items)
        if self._fast_path_reads():
            summary = fast_recover(self.path, self.session_id, max_items, self.max_record_bytes)
            if summary is not None:  # None: something unusual, which the careful path below decides
                return summary
        window: deque = deque(maxlen=min(max_items, sys.maxsize))
        scanned = ScanResult()
        folded = fold(self._streamed(window, scanned))  # the lesson's fold, over the stream: only the window stays
        state = _state(window, folded, scanned)
        summary = dict(vars(state))
        summary["message_count"] = len(state.messages)
        return summary

    def _fast_path_reads(self) -> bool:
        """Whether recover() may try fast.fast_recover: on, no chain asked for, and the lines it reads
        are the lab's own (a subclass that changes how lines are read gets the careful path)."""
        return self.fast_paths and not self.integrity and type(self)._lines_of is DurableTranscript._lines_of

    def _streamed(self, window: deque, scanned: ScanResult) -> Iterator[dict]:
        """Every committed record in order, each also put in window (which keeps only the last ones)."""
        try:
            file = open(regular(self.path), "rb")
        except FileNotFoundError:
            return
        with file:
            for record in _committed(self._lines_of(file), _RecordChecker(self), scanned, keep_offsets=False):
                window.append(record)
                yield record

    def count_lines(self) -> int:
        """How many complete (newline-terminated) lines the file holds, read in blocks."""
        try:
            with open(regular(self.path), "rb") as file:
                return sum(block.count(b"\n") for block in iter(lambda: file.read(BLOCK), b""))
        except FileNotFoundError:
            return 0

    def _lines_of(self, file) -> Iterator[tuple]:
        """Yield (line_number, byte_offset, raw bytes, terminated), never holding much more than one record."""
        limit = self.max_record_bytes
        number, offset, pending = 0, 0, b""
        while block := file.read(BLOCK):
            *complete, pending = (pending + block).split(b"\n")
            for raw in complete:
                number += 1
                if len(raw) >= limit:
                    raise TranscriptCorruptionError(self.path, number, offset, f"record longer than {limit} bytes")
                yield number, offset, raw, True
                offset += len(raw) + 1
            if len(pending) >= limit:  # longer than any record append accepts
                if _skip_past_newline(file):
                    raise TranscriptCorruptionError(self.path, number + 1, offset, f"record longer than {limit} bytes")
                yield number + 1, offset, b"", False  # it runs to the end of the file: a partial tail
                return
        if pending:
            yield number + 1, offset, pending, False

    def _read_tail(self, count: int, before: int | None = None) -> ScanResult:
        try:
            file = open(regular(self.path), "rb")
        except FileNotFoundError:
            return ScanResult()
        with file:
            return self._tail_of(partial(_read_at, file), file.seek(0, os.SEEK_END), count, before)

    def _tail_of(self, read: Callable[[int, int], bytes], size: int, count: int, before: int | None,
                 first_step: int = BLOCK) -> ScanResult:
        """The last count committed records in front of before (or of size, the end), read by read(start, length)
        from the end in blocks: the first of first_step bytes, each next one larger, up to BLOCK."""
        limit = self.max_record_bytes
        start = size if before is None else before
        blocks, newlines, longest, next_step = [], 0, 0, first_step
        while start > 0 and newlines <= count:  # one newline more than lines: the boundary before them
            step = min(next_step, start)
            next_step = min(next_step * 8, BLOCK)
            start -= step
            block = read(start, step)
            blocks.append(block)
            newlines += block.count(b"\n")
            # bytes in front of the first newline seen so far: a line that may still grow
            longest = longest + step if b"\n" not in block else block.find(b"\n")
            if longest > limit:
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
            if len(raw) + 1 > limit:
                raise TranscriptCorruptionError(self.path, None, offset, "record longer than the limit")
            lines.append((None, offset, raw, True))
            offset += len(raw) + 1
        if fragment:
            lines.append((None, offset, fragment, False))
        checker_from_start = start == 0 and len(kept) == len(complete)  # the whole file was read
        checker = _RecordChecker(self, from_start=checker_from_start)
        result = _fold_lines(lines, checker, ScanResult(), end_of_file=before is None)
        if result.unfinished_batch and not checker_from_start:  # the batch may begin before what was read
            raise TranscriptCorruptionError(self.path, None, result.partial_tail_offset, "unfinished batch")
        return result


def _read_at(file, start: int, length: int) -> bytes:
    """length bytes of file from start (fewer at its end)."""
    file.seek(start)
    return file.read(length)


def _state(window, folded: dict, scanned: ScanResult) -> ReplayState:
    """The lesson's ReplayState: messages from window, the rest folded (code.fold), the end as scanned."""
    return ReplayState(messages_of(window), **folded, total_events=scanned.last_sequence,
                       next_sequence=scanned.last_sequence + 1, ignored_partial_tail=scanned.ignored_partial_tail)


def _remove_if_unused(path: Path) -> None:
    """Remove path if it is an empty regular file no writer holds (what a create() that failed half
    way leaves), so that a retry can create it; anything else is left as it is."""
    try:
        fd = regular(path)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # BlockingIOError while a writer holds it
        held, named = os.fstat(fd), os.stat(path)
        if held.st_size == 0 and (held.st_dev, held.st_ino) == (named.st_dev, named.st_ino):
            os.unlink(path)
    except OSError:
        pass
    finally:
        os.close(fd)


# --------------------------------------------------------------------------- the validated fold


class _RecordChecker:
    """Checks records in file order: the lesson's checks of every record, then the lab's batch and chain."""

    def __init__(self, transcript: DurableTranscript, *, from_start: bool = True):
        self.transcript = transcript
        self.require_chain = transcript.integrity
        self.expected = 1 if from_start else None  # None: a tail read takes it from its first record
        self.previous_line = b"" if from_start else None  # None: the first record's chain cannot be checked
        self.batch_end = None  # set while reading the records of a batch
        self.chained = False

    @property
    def inside_batch(self) -> bool:
        """True while the last record read belongs to a batch whose last record has not been read."""
        return self.batch_end is not None

    def check(self, value, raw: bytes, number, offset) -> dict:
        """Return the record on this line (value parsed from raw), or raise naming the line."""
        expected = self.expected if self.expected is not None else _first_sequence(value)
        if value is NOT_JSON:  # a complete line: a partial tail is only ever the last, unterminated one
            raise TranscriptCorruptionError(self.transcript.path, number, offset, "invalid complete JSON record")
        problem = line_problem(value, expected, self.transcript.session_id) or self._batch_problem(value)
        if not problem and (self.chained or self.require_chain or CHAIN_FIELD in value):
            problem = self._chain_problem(value, raw)
        if problem:
            raise TranscriptCorruptionError(self.transcript.path, number, offset, problem)
        self.expected, self.previous_line = value["sequence"] + 1, raw
        return value

    def _batch_problem(self, record: dict) -> str | None:
        """A batch's records follow one another, none missing."""
        sequence, batch_end = record["sequence"], record.get(BATCH_END_FIELD)
        if BATCH_END_FIELD in record and (type(batch_end) is not int or batch_end < sequence):
            return f"bad {BATCH_END_FIELD} {batch_end!r}"
        if self.batch_end is not None and batch_end != self.batch_end:
            return f"the batch ending at sequence {self.batch_end} is cut off by another record"
        self.batch_end = batch_end if batch_end is not None and batch_end > sequence else None
        return None

    def _chain_problem(self, record: dict, raw: bytes) -> str | None:
        if CHAIN_FIELD not in record:
            return "record has no chain field (integrity is on)"
        self.chained = True
        return chain_problem(self.previous_line, raw) if self.previous_line is not None else None


def _first_sequence(value) -> int:
    """The sequence a tail read expects of its first record: the record's own, when it is one."""
    sequence = value.get("sequence") if type(value) is dict else None
    return sequence if type(sequence) is int and sequence >= 1 else 1


def _fold_lines(lines, checker: _RecordChecker, result: ScanResult, on_record=None,
                end_of_file: bool = True) -> ScanResult:
    """Check lines in order into result (or hand the records to on_record), up to a partial tail."""
    records = _committed(lines, checker, result, end_of_file, keep_offsets=on_record is None)
    for record in records:
        if on_record is not None:
            on_record(record)
        else:
            result.events.append(record)
    return result


def _committed(lines, checker: _RecordChecker, result: ScanResult, end_of_file: bool = True, *,
               keep_offsets: bool = True) -> Iterator[dict]:
    """Yield the committed records in order, and stop at a partial tail: the only damage forgiven.

    A partial tail is an unterminated last line that does not parse, or the records of a
    batch that never finished. Its append never returned, so nothing acknowledged is lost.
    (Lines that stop before the end of the file hold no partial tail: their batches go on.)
    """
    batch, batch_offset = [], None  # the records of an unfinished batch wait here until its last one
    for number, offset, raw, terminated in lines:
        value = parse_line(raw)
        if not terminated and value is NOT_JSON:
            result.partial_tail_offset = offset if batch_offset is None else batch_offset
            break
        batch.append((checker.check(value, raw, number, offset), offset, raw, terminated))
        if checker.inside_batch:
            batch_offset = offset if batch_offset is None else batch_offset
            continue
        yield from _hand_over(batch, result, keep_offsets)
        batch, batch_offset = [], None
    if batch_offset is not None and end_of_file:
        result.partial_tail_offset, result.unfinished_batch = batch_offset, True
    elif batch:
        yield from _hand_over(batch, result, keep_offsets)
    result.chained = checker.chained


def _hand_over(records: list, result: ScanResult, keep_offsets: bool) -> Iterator[dict]:
    """Yield records whose commit is complete (one record, or a whole batch), noting each in result."""
    for record, offset, raw, terminated in records:
        if keep_offsets:
            result.offsets.append(offset)
        if record["schema_version"] > SCHEMA_VERSION:
            result.unknown_schema_events += 1
        result.last_sequence, result.last_line, result.last_line_unterminated = record["sequence"], raw, not terminated
        yield record


def _skip_past_newline(file) -> bool:
    """Read past the rest of an over-long line; False when it runs to the end of the file."""
    while True:
        block = file.read(BLOCK)
        if not block:
            return False
        if b"\n" in block:
            file.seek(block.index(b"\n") + 1 - len(block), os.SEEK_CUR)
            return True


# --------------------------------------------------------------------------- the hash chain

_CHAIN_PREFIX = f',"{CHAIN_FIELD}":"'.encode()
_CHAIN_SUFFIX_LENGTH = len(_CHAIN_PREFIX) + 64 + 2


def seal(previous_line: bytes, body: bytes) -> bytes:
    """Append the chain field to a JSON object's bytes: sha256 over the previous line and this body."""
    digest = hashlib.sha256(previous_line + b"\n" + body).hexdigest()
    return body[:-1] + f',"{CHAIN_FIELD}":"{digest}"}}'.encode()


def chain_problem(previous_line: bytes, line: bytes) -> str | None:
    """Say why a sealed line does not follow previous_line, or None when the chain holds."""
    suffix = line[-_CHAIN_SUFFIX_LENGTH:]
    if not (suffix.startswith(_CHAIN_PREFIX) and suffix.endswith(b'"}')):
        return "chain field is not the last field of the record"
    if seal(previous_line, line[:-_CHAIN_SUFFIX_LENGTH] + b"}") != line:
        return "chain mismatch: this line or the one before it was changed, inserted or removed"
    return None
