"""A live session's event log: committed events and ephemeral deltas, subscribers with cursors,
validated commits, and the session state machine kept up to date (seed 003's SessionEventLog).

Two kinds of event, as the production design separates them:

- a **committed** event is appended to the JSONL transcript (write + fsync) and gets its
  sequence there; it is the evidence, and it is what a reconnecting client replays;
- a **delta** (a piece of streamed text, of reasoning, of tool progress) is handed to the
  subscribers in memory only: it has no sequence, is never written and is never replayed. The
  final part of a stream is committed as an ordinary event that names the stream's part_id.
  After a crash the deltas are gone and every committed event is there.

    log = SessionEventLog.for_session("s1", "sessions/project-a", clock=ManualClock())
    subscription = log.subscribe(from_sequence=1, on_event=print)  # replay from event 1, then live
    stream = log.open_stream("text")
    stream.delta("Hel"); stream.delta("lo")                         # subscribers only
    stream.commit({"type": "message", "role": "assistant", "content": stream.text})
    subscription.release()

Cursors are inclusive, as in the design: subscribe(from_sequence=N) and read_from(N) start AT
sequence N. A subscription's next_sequence is where to reconnect; the exclusive form has its
own name (subscribe(after_sequence=N), read_after(N)), and subscribe takes its cursor by keyword
only, so code written for the other meaning fails loudly instead of skipping an event.

Writing: commit / commit_batch append as the transcript does, refused when the state machine
would report the events as anomalies (a second turn_start, a turn_end with no open turn).
commit_validated(builder) reads the current state, checks and appends in one critical section
under transcript.lock (seed 003's commitValidated): of two racing attempts to close one turn
exactly one wins. The session's helpers (start_turn, end_turn, pause, resume, retry,
record_tool_call, record_tool_result, record_permission, answer_pending_calls, check_timeouts,
rewind) are validated commits. fork, migrate_to and delete_validated act on the whole file.

Reading: read_from(sequence) returns the events from a cursor on; page_back(count, before) pages
backwards through older history. Both read what they return plus about one block, through
read_recent, like replay. Events of CLIENT_HIDDEN_TYPES (a handoff) take a sequence in the file
but are left out of live delivery, replay and read_from: a client sees a gap in the sequences,
which is legal; the file itself has none.

Threads: any thread may commit, emit deltas or subscribe. The writer's lock is held only to
append and to put what was committed into each subscriber's own queue; no subscriber code runs
under it. A subscriber given on_event is called on its own delivery thread (named
"s09-subscriber-N"), one item at a time and in order; a slow or failing callback delays or ends
only its own subscription. Without on_event, the consumer pulls with poll() or get(). A
subscriber's queue holds at most max_queued items, always (the drop-and-resync rule): when it is
full, live items are dropped, and once the consumer has drained the queue the missing committed
events are read back from the file, a page of at most max_queued at a time, before live delivery
goes on; a replay from an old cursor is paged the same way. Committed events are never
lost that way; dropped deltas are (they are ephemeral: the committed final part has the text).
A watchdog thread (start_watchdog / stop_watchdog, owned by whoever owns the log) records the
limits that pass without anyone polling; check_timeouts() does one round of it by hand.

Rules a real user meets (docs/production.md says why): a log keeps its writer from open to
close, and the for_session cache never takes it away; the log's own control records
(CONTROL_TYPES) are written only by their helpers; fork and rewind cut only between commits, and
a rewind never reopens a turn; a deleted or archived session refuses reads and commits
(SessionGoneError); every public method refuses bad input with LiveInputError before it writes.
"""

from __future__ import annotations

import itertools
import math
import os
import shutil
import tempfile
import threading
import weakref
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from .code import (
    TYPE_FUNCTION_CALL,
    TranscriptCorruptionError,
    TranscriptLockedError,
    TranscriptValidationError,
    messages_of,
)
from .lab import (
    BATCH_END_FIELD,
    CHAIN_FIELD,
    INT_LIMIT,
    DurableTranscript,
    OsFileIO,
    checked_event,
    checked_path,
    make_folders,
    regular,
)
from .timeouts import DEFAULT_LIMITS, Limits, due_timeouts
from .turns import (
    EXPIRED,
    PERMISSION_DECISIONS,
    REASON_COMPLETE,
    RUNNING,
    START_REASONS,
    START_USER,
    TYPE_FORKED,
    TYPE_HANDOFF,
    TYPE_MIGRATED,
    TYPE_PART_START,
    TYPE_PAUSE,
    TYPE_RESUME,
    TYPE_RETRY,
    TYPE_REWIND,
    SessionFold,
    SessionStatus,
    command_event,
    handoff_event,
    materialize,
    part_start_event,
    permission_event,
    rewind_event,
    session_status,
    shown,
    tool_result_event,
    turn_end_event,
    turn_start_event,
)

CHANNELS = ("text", "reasoning", "tool_progress")  # what a delta carries a piece of
CRASH_ERROR = "the runtime stopped before this call returned a result"
CACHE_LIMIT = 256  # SessionEventLog.for_session keeps at most this many logs alive for nobody but itself
DEFAULT_MAX_QUEUED = 1000  # live items a subscriber's queue holds before the drop-and-resync rule applies
CLIENT_HIDDEN_TYPES = frozenset({TYPE_HANDOFF})  # committed with a sequence, never delivered or replayed
BLOCK = 64 * 1024  # bytes read at a time when counting lines to page a subscriber's gap
DELIVERY_WAIT = 120.0  # seconds Subscription.wait_delivered waits by default: long enough for a loaded machine
DEFAULT_WATCHDOG_INTERVAL = 1.0  # seconds between two rounds of the timeout watchdog
ARCHIVE_FOLDER = "archive"  # archive_expired moves expired sessions' files here, inside their project folder
# Records only the log's own helpers write: rewind, migrate_to, fork, open_stream. A plain commit refuses them.
CONTROL_TYPES = frozenset({TYPE_REWIND, TYPE_MIGRATED, TYPE_FORKED, TYPE_PART_START})
STAGING_PREFIXES = (".fork-", ".migrate-")  # hidden folders fork and migrate_to write in: .fork-<pid>-...
_ENVELOPE = frozenset({"schema_version", "sequence", "recorded_at", "session_id", "event_id", BATCH_END_FIELD,
                       CHAIN_FIELD})


class CommitRefused(RuntimeError):
    """A validated commit's check failed against the current state: nothing was written."""


class SessionMigratedError(CommitRefused):
    """This copy of the session was migrated to another harness: it takes no more commits."""


class MigrationError(RuntimeError):
    """The migrated copy's replayed state is not the source's: the migration was undone."""


class SessionGoneError(CommitRefused):
    """The session's file was deleted (delete_validated) or archived (archive_expired): no read, no commit."""


class LiveInputError(TypeError, ValueError):
    """A public call got input it cannot take; it was refused before anything was written.

    It is a TypeError and a ValueError, so code that caught either for a bad argument still does.
    """


def _check_text(name: str, value, *, empty: bool = False) -> str:
    if not isinstance(value, str) or (not empty and not value.strip()):
        raise LiveInputError(f"{name} must be {'a' if empty else 'a non-blank'} string, not {shown(value)}")
    return value


def _check_callable(name: str, value, *, optional: bool = False):
    if (value is None and not optional) or (value is not None and not callable(value)):
        raise LiveInputError(f"{name} must be callable, not {shown(value)}")
    return value


def _check_seconds(name: str, value, *, optional: bool = False):
    if value is None and optional:
        return None
    if not isinstance(value, (int, float)) or isinstance(value, bool) or abs(value) >= INT_LIMIT \
            or not math.isfinite(value) or value < 0 or (value == 0 and not optional):
        raise LiveInputError(f"{name} must be a finite number of seconds {'>= 0' if optional else '> 0'}, "
                             f"not {shown(value)}")
    return value


def _check_whole(name: str, value, *, least: int = 0) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not least <= value < INT_LIMIT:
        raise LiveInputError(f"{name} must be a whole number >= {least}, not {shown(value)}")
    return value


def _check_folder(name: str, value) -> Path:
    """A folder given as a non-blank str or a path: never "" (which would mean the current folder)."""
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str) or not value.strip():
        raise LiveInputError(f"{name} must be a non-blank path, not {shown(value)}")
    return _check_names(name, Path(value))


PATH_MAX = 4096  # bytes in a whole path (Linux): a longer one fails with ENAMETOOLONG


def _check_names(name: str, path: Path) -> Path:
    """path, if a file system takes it: the lesson's check of its names (no NUL, no lone surrogate, none
    over 255 bytes), and the whole of it under PATH_MAX bytes; else LiveInputError, before anything is made."""
    try:
        checked_path(path)  # the lab's check of the names, which touches nothing on disk
    except TranscriptValidationError as problem:
        raise LiveInputError(f"{name}: {problem}") from None
    if len(os.fsencode(os.path.abspath(path))) >= PATH_MAX:
        raise LiveInputError(f"{name}: a path of {PATH_MAX} bytes or more is longer than the file system takes")
    return path


def _check_event(event) -> dict:
    """An event for a plain commit: a dict with a non-blank string type, not one of CONTROL_TYPES."""
    if not isinstance(event, dict):
        raise LiveInputError(f"an event is a dict, not {type(event).__name__}")
    _check_text("an event's type", event.get("type"))
    if event["type"] in CONTROL_TYPES:
        raise LiveInputError(f"{event['type']} is written by the log's own helper "
                             f"(rewind, migrate_to, fork, open_stream), never by a plain commit")
    return event


@dataclass(frozen=True)
class Delta:
    """A piece of a stream, for subscribers only: no sequence, never written, never replayed."""

    part_id: str
    channel: str  # one of CHANNELS
    text: str
    index: int  # 0, 1, 2, ... within its part


def is_delta(item) -> bool:
    """True for a Delta, False for a committed event (a dict with a sequence)."""
    return isinstance(item, Delta)


@dataclass(frozen=True)
class LiveState:
    """What a validated commit's builder sees: the state folded from every committed event.

    fold is the log's own SessionFold: read it, never change it.
    """

    fold: SessionFold
    last_sequence: int
    open_parts: dict  # part_id -> the turn that was open when its stream began
    now: object  # the transcript clock's time (an aware datetime)

    @property
    def status(self) -> SessionStatus:
        return self.fold.status()


@dataclass(frozen=True)
class Page:
    """One page of history, oldest event first, and the cursor to the page before it."""

    events: list
    cursor: int | None  # byte offset where the first event starts: page_back(count, before=cursor); None: empty

    @property
    def has_more(self) -> bool:
        """True when older events exist in front of this page."""
        return bool(self.events) and self.events[0]["sequence"] > 1


# --------------------------------------------------------------------------- reading from cursors


def _check_cursor(sequence) -> int:
    if not isinstance(sequence, int) or isinstance(sequence, bool) or not 0 <= sequence < INT_LIMIT:
        raise LiveInputError(f"a cursor is a sequence >= 0, not {shown(sequence)}")
    return sequence


def _lines_back(path: Path, end: int, count: int) -> int:
    """The byte offset where the count-th line in front of byte end starts (reads those lines only).

    Every committed line ends with a newline, so this only counts newlines, reading backwards in
    blocks: memory stays at one block however many lines it crosses. The reader validates what
    is read from there (read_range).
    """
    position, newlines = end, 0
    with open(regular(path), "rb") as file:
        while position > 0:
            size = min(BLOCK, position)
            file.seek(position - size)
            block = file.read(size)
            for index in range(len(block) - 1, -1, -1):
                if block[index] == 0x0A and position - size + index != end - 1:
                    newlines += 1
                    if newlines == count:
                        return position - size + index + 1
            position -= size
    return 0


def _lines_forward(path: Path, start: int, count: int) -> int:
    """The byte offset just past the count-th line from byte start (reads those lines only, a block at a time)."""
    position, newlines = start, 0
    with open(regular(path), "rb") as file:
        file.seek(start)
        while block := file.read(BLOCK):
            for index, byte in enumerate(block):
                if byte == 0x0A:
                    newlines += 1
                    if newlines == count:
                        return position + index + 1
            position += len(block)
    return position


def is_client_visible(event: dict) -> bool:
    """False for committed events clients never see (CLIENT_HIDDEN_TYPES): they keep their sequence in the file."""
    return event.get("type") not in CLIENT_HIDDEN_TYPES


def committed_end(transcript: DurableTranscript) -> tuple[int, int]:
    """(last committed sequence, byte offset where it ends), read from the tail (about one block)."""
    tail = transcript.read_recent(1)
    if not tail.events:
        return 0, 0
    end = tail.offsets[-1] + len(tail.last_line) + (0 if tail.last_line_unterminated else 1)
    return tail.last_sequence, end


def read_range(transcript: DurableTranscript, first: int, last: int, end: int) -> list[dict]:
    """The committed events with first <= sequence <= last (both included); event last ends at byte end.

    Validated, hidden events included. Reads what it returns plus about one block (read_recent
    before end), however much the file has grown past end meanwhile. Fails closed when the file
    does not hold exactly those events.
    """
    first = max(first, 1)
    if last < first:
        return []
    events = transcript.read_recent(last - first + 1, before=end).events
    if [event["sequence"] for event in events] != list(range(first, last + 1)):
        found = f"{events[0]['sequence']}..{events[-1]['sequence']}" if events else "nothing"
        raise TranscriptCorruptionError(transcript.path, None, end,
                                        f"expected sequences {first}..{last} before byte {end}, found {found}")
    return events


def read_from(transcript: DurableTranscript, from_sequence: int) -> list[dict]:
    """Every client-visible committed event with sequence >= from_sequence, oldest first, validated.

    Inclusive, as in the design: read_from(t, 5) starts at event 5 (0 and 1 both mean "from the
    first"). For any reader (no writer needed): one tail read finds the last committed event, a
    second reads the events from the cursor up to it.
    """
    first = _check_cursor(from_sequence)
    last, end = committed_end(transcript)
    if first > last + 1:
        raise ValueError(f"cursor {first} is past the transcript's next sequence {last + 1}")
    return [event for event in read_range(transcript, first, last, end) if is_client_visible(event)]


def read_after(transcript: DurableTranscript, after_sequence: int) -> list[dict]:
    """The exclusive form, named as such: every client-visible event with sequence > after_sequence."""
    return read_from(transcript, _check_cursor(after_sequence) + 1)


def page_back(transcript: DurableTranscript, count: int, before: int | None = None) -> Page:
    """The count events in front of byte cursor `before` (the newest when None), oldest first.

    Pass the page's cursor as `before` to read the page in front of it.
    """
    _check_whole("count", count)
    if before is not None:
        _check_whole("before", before)
    scanned = transcript.read_recent(count, before=before)
    return Page(scanned.events, scanned.offsets[0] if scanned.events else None)


# --------------------------------------------------------------------------- subscriptions


class Subscription:
    """One subscriber's view: the committed events from its first sequence on, then live events, in order.

    delivered_upto is the sequence of the last committed event handed to the consumer;
    next_sequence (one more) is where to reconnect: log.subscribe(from_sequence=s.next_sequence)
    misses nothing and repeats nothing. The queue holds at most max_queued items: past that,
    live items are dropped and, once the queue is drained, the committed events missed are read
    back from the file a page at a time (resyncs counts how often; deltas_dropped the deltas lost
    meanwhile). The first replay is paged the same way.
    """

    def __init__(self, log: SessionEventLog, first: int, on_event: Callable | None, number: int,
                 max_queued: int = DEFAULT_MAX_QUEUED):
        _check_whole("max_queued", max_queued, least=1)
        _check_callable("on_event", on_event, optional=True)
        self.log, self.on_event, self.name, self.max_queued = log, on_event, f"s09-subscriber-{number}", max_queued
        self.delivered_upto = self.queued_upto = first - 1
        self.duplicates_dropped = 0  # committed events seen twice at the hand-over (replay and live)
        self.deltas_dropped = 0  # deltas dropped while the queue was full (they are not on disk)
        self.resyncs = 0  # times the queue overflowed and the missed committed events were read from the file
        self.released = False
        self.error: BaseException | None = None  # what ended a callback subscription, if anything
        self._cond = threading.Condition()
        self._queue, self._buffer, self._busy = deque(), None, False  # _buffer: live items held during the last page
        self._behind = True  # committed events are missing from the queue: page them in from the file first
        self._paged_upto = first - 1  # the last sequence read from the file (hidden events included)
        self._next_offset = 0 if first == 1 else None  # where event _paged_upto + 1 starts, when known
        self._overflowed = False  # live items came while the last page was read and the hold was full
        self._resyncing = False  # reading a page right now
        self._thread = None

    def __repr__(self):
        return f"<Subscription {self.name} next_sequence={self.next_sequence}{' released' if self.released else ''}>"

    @property
    def next_sequence(self) -> int:
        """The sequence to reconnect from (inclusive): one past the last committed event handed over."""
        return self.delivered_upto + 1

    # -- called by the log ----------------------------------------------------------

    def _offer(self, item) -> None:
        """Take one live item (under the log's fan-out lock): queue it, or hold it while the last page is read.

        The hold is bounded like the queue: past max_queued items it drops, and the subscription
        reads what it dropped from the file afterwards.
        """
        with self._cond:
            if self.released:
                return
            if self._buffer is None:
                self._enqueue(item, live=True)
            elif len(self._buffer) < self.max_queued:
                self._buffer.append(item)
            else:
                self._overflowed = True
                self.deltas_dropped += is_delta(item)

    def _enqueue(self, item, live: bool) -> None:  # holding _cond
        if not is_delta(item):
            if item["sequence"] <= self.queued_upto:  # read from the file already: the hand-over de-duplicates
                self.duplicates_dropped += 1
                return
            if not is_client_visible(item):
                return
        if live and (self._behind or len(self._queue) >= self.max_queued):
            if is_delta(item):
                self.deltas_dropped += 1
            else:
                self._fall_behind()  # it is on disk: the next page reads it back in order
            return
        if not is_delta(item):
            self.queued_upto = item["sequence"]
        self._queue.append(item)
        self._cond.notify_all()

    def _fall_behind(self) -> None:  # holding _cond
        """Live committed events were dropped: from now on page them in from the file, from queued_upto + 1."""
        if not self._behind:
            self._behind, self._paged_upto, self._next_offset = True, self.queued_upto, None
            self.resyncs += 1
        self._cond.notify_all()

    def _hold_live(self) -> None:
        """Called by the log, under its lock, before the last page is read: hold live items from now on."""
        with self._cond:
            self._buffer = []

    def _take_page(self, page: list, last_read: int, end: int, final: bool) -> None:
        """Queue one page read from the file; after the last page, the live items held, then live delivery."""
        with self._cond:
            for item in page:
                self._enqueue(item, live=False)
            self._paged_upto, self._next_offset = last_read, end
            if final:
                held, self._buffer, self._behind = self._buffer or [], None, False
                for item in held:
                    self._enqueue(item, live=True)
                if self._overflowed:
                    self._overflowed = False
                    self._fall_behind()
            self._resyncing = False
            self._cond.notify_all()

    def _catch_up(self, raising: bool = False) -> None:
        """While behind with an empty queue: read the next page (at most max_queued events) from the file.

        Not holding _cond. A page of hidden events only queues nothing: the next page follows at once.
        """
        while True:
            with self._cond:
                if not self._behind or self._queue or self.released:
                    return
                self._resyncing = True
                first, offset = self._paged_upto + 1, self._next_offset
            try:
                self._take_page(*self.log._page_for(self, first, self.max_queued, offset))
            except BaseException as error:  # noqa: BLE001 - the file cannot be read: end this subscription only
                with self._cond:
                    self._buffer, self._resyncing = None, False
                self.error = error
                self.release()
                if raising:
                    raise
                return

    def _start(self) -> None:
        """Read the first page (errors raise to subscribe); then start the delivery thread in callback mode."""
        self._catch_up(raising=True)
        if self.on_event is not None:
            self._thread = threading.Thread(target=self._deliver, name=self.name, daemon=True)
            self._thread.start()

    def _deliver(self) -> None:
        """The delivery thread: hand items to on_event one at a time until released."""
        while True:
            self._catch_up()
            with self._cond:
                while not self._queue and not self.released and not (self._behind and not self._resyncing):
                    self._cond.wait()
                if self.released:
                    return
                if not self._queue:
                    continue  # behind: resync first
                item, self._busy = self._queue.popleft(), True
            try:
                self.on_event(item)
            except BaseException as error:  # noqa: BLE001 - a failing subscriber ends only itself
                self.error = error
                self.log._unregister(self)
                with self._cond:
                    self.released, self._busy = True, False
                    self._cond.notify_all()
                return
            with self._cond:
                self._busy = False
                if not is_delta(item):
                    self.delivered_upto = item["sequence"]
                self._cond.notify_all()

    # -- for the consumer ------------------------------------------------------------

    def poll(self) -> list:
        """Everything queued for this subscriber now, in order (pull mode: no on_event).

        If live items were dropped because the queue was full, an empty queue is first refilled
        from the file: keep polling until it returns [] and nothing is lost.
        """
        self._pull_only()
        self._catch_up()
        with self._cond:
            items = list(self._queue)
            self._queue.clear()
            self._advance(items)
        return items

    def get(self, timeout: float | None = None):
        """The next item, waiting up to timeout seconds; None if nothing came or the subscription ended."""
        _check_seconds("timeout", timeout, optional=True)
        self._pull_only()
        self._catch_up()
        with self._cond:
            if not self._cond.wait_for(lambda: self._queue or self.released, timeout) or not self._queue:
                return None
            item = self._queue.popleft()
            self._advance([item])
        return item

    def queued(self) -> int:
        """How many items wait in the queue now: never more than max_queued, during a replay too."""
        with self._cond:
            return len(self._queue)

    def wait_delivered(self, timeout: float | None = DELIVERY_WAIT) -> bool:
        """Wait until every item queued so far was handed to on_event (callback mode); False on timeout.

        The default deadline is long (DELIVERY_WAIT): only a stuck callback reaches it, never a loaded machine.
        """
        _check_seconds("timeout", timeout, optional=True)
        with self._cond:
            return self._cond.wait_for(
                lambda: self.released or not (self._queue or self._busy or self._behind or self._resyncing), timeout)

    def release(self) -> None:
        """End the subscription: nothing more is queued or delivered after this returns."""
        self.log._unregister(self)
        with self._cond:
            self.released = True
            self._queue.clear()
            self._cond.notify_all()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()

    def _pull_only(self) -> None:
        if self.on_event is not None:
            raise RuntimeError("this subscription delivers to on_event; poll and get are for pull mode")

    def _advance(self, items) -> None:
        for item in items:
            if not is_delta(item):
                self.delivered_upto = item["sequence"]


# --------------------------------------------------------------------------- streams


class Stream:
    """One part being streamed: deltas go to subscribers; commit() writes the final part and ends it."""

    def __init__(self, log: SessionEventLog, part_id: str, channel: str, turn_number: int | None):
        self.log, self.part_id, self.channel, self.turn_number = log, part_id, channel, turn_number
        self.text = ""  # what the deltas said so far, kept by the writer to build the final part
        self.deltas = 0
        self.outcome = None  # None while open; "committed", or "unfinished" when its turn ended first

    def delta(self, text: str) -> Delta:
        """Hand one piece to the subscribers (in memory only) and return it."""
        if self.outcome is not None:
            raise RuntimeError(f"stream {self.part_id} is {self.outcome}: no more deltas")
        if not isinstance(text, str):
            raise LiveInputError(f"a delta carries text, not {type(text).__name__}")
        piece = Delta(self.part_id, self.channel, text, self.deltas)
        self.deltas += 1
        self.text += text
        self.log._publish([piece])
        return piece

    def commit(self, event: dict) -> dict:
        """Commit the final part: event, with this stream's part_id added. Ends the stream."""
        if self.outcome is not None:
            raise RuntimeError(f"stream {self.part_id} is {self.outcome}")
        return self.log._commit_part(self, _check_event(event))


# --------------------------------------------------------------------------- the log

_CACHE: OrderedDict = OrderedDict()  # (project folder, session id) -> SessionEventLog, least recently used first
_OPEN: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # every for_session log someone still holds
_CACHE_LOCK = threading.Lock()


def _check_session_id(session_id) -> str:
    if not isinstance(session_id, str) or not session_id.strip() or Path(session_id).name != session_id \
            or session_id in (".", "..") or session_id.startswith("."):
        raise LiveInputError(f"a session id is a plain file name, not {shown(session_id)}")
    _check_names("a session id", Path(f"{session_id}.jsonl"))  # NUL, a lone surrogate, over 255 bytes
    return session_id


def _check_limits(limits) -> Limits:
    if not isinstance(limits, Limits):
        raise LiveInputError(f"limits must be a timeouts.Limits, not {shown(limits)}")
    return limits


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    return True


def _staging_folder(prefix: str, folder: Path) -> Path:
    """A hidden folder for a file written whole before it gets its name: <prefix><pid>-<random>."""
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=folder))


def clean_staging(project_path) -> list[str]:
    """Remove the staging folders (.fork-<pid>-*, .migrate-<pid>-*) of processes that no longer run.

    A fork or migration killed half way leaves its folder; one of a live process (this one
    included) is never touched, so a fork running elsewhere is not disturbed. Returns the names
    removed. fork, migrate_to and archive_expired call it.
    """
    folder = _check_folder("project_path", project_path)
    removed = []
    for path in sorted(folder.glob(".*-*")) if folder.is_dir() else ():
        prefix = next((p for p in STAGING_PREFIXES if path.name.startswith(p)), None)
        pid = path.name[len(prefix):].split("-", 1)[0] if prefix else ""
        if path.is_dir() and pid.isdigit() and not _pid_alive(int(pid)):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path.name)
    return removed


def _size(path: Path) -> int | None:
    """The file's size, or None when nothing is at path."""
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return None


def _ends_a_commit(record: dict) -> bool:
    """True when no event of the same commit follows this record (a batch is one commit, seed 003)."""
    return record.get(BATCH_END_FIELD, record["sequence"]) == record["sequence"]


def _payload(record: dict) -> dict:
    """A record without its envelope and chain: what was given to append."""
    return {key: value for key, value in record.items() if key not in _ENVELOPE}


def _publish_exclusively(complete: Path, target: Path) -> None:
    """Give the complete, synced file `complete` the name `target`, only if no such name exists.

    os.link fails with FileExistsError when target exists: the file appears under its name
    whole or not at all (the design's createExclusive), and a racing fork or migration loses.
    """
    os.link(complete, target)
    OsFileIO().fsync_dir(target.parent)


class SessionEventLog:
    """The live side of one session: commits, deltas, subscribers, validated commits, the state machine.

    It owns its transcript's writer (taken at once) and keeps, updated at each commit, the
    state folded from every committed event (turns.SessionFold, rewind markers materialized),
    which it rebuilds by reading the whole file when it opens: that is crash recovery. Append
    through the log, not the transcript. SessionEventLog.for_session gives the one shared
    instance per process for a (session, project folder) pair.
    """

    def __init__(self, transcript: DurableTranscript, *, limits: Limits = DEFAULT_LIMITS):
        if not isinstance(transcript, DurableTranscript):
            raise LiveInputError(f"a SessionEventLog wraps a DurableTranscript, not {shown(transcript)}")
        self.transcript, self.limits = transcript, _check_limits(limits)
        self._fanout = threading.Lock()  # taken after transcript.lock, never before it
        self._subscribers: list[Subscription] = []
        self._streams: dict[str, Stream] = {}
        self._numbers, self._parts = itertools.count(1), itertools.count(1)
        self._fold, self._last_sequence, self._end, self._stale = None, 0, 0, True
        self._watchdog, self._watchdog_stop = None, None
        self.watchdog_records = 0  # events the watchdog has committed
        self.watchdog_error: BaseException | None = None  # the last thing that stopped a watchdog round
        self._cache_key, self._closed = None, False
        self._gone = None  # why the file is no longer there: "deleted", or "archived to <path>"
        with transcript.lock:
            self._sync()

    @classmethod
    def create(cls, path, *, limits: Limits = DEFAULT_LIMITS, **options) -> SessionEventLog:
        """A new session (FileExistsError if its file exists); options go to DurableTranscript."""
        _check_limits(limits)
        return cls(DurableTranscript.create(_check_folder("path", path), **options), limits=limits)

    @classmethod
    def open(cls, path, *, limits: Limits = DEFAULT_LIMITS, **options) -> SessionEventLog:
        """An existing session (or a new file), its state rebuilt from the file. Not shared: see for_session."""
        _check_limits(limits)
        return cls(DurableTranscript(_check_folder("path", path), **options), limits=limits)

    @classmethod
    def for_session(cls, session_id: str, project_path, *, limits: Limits = DEFAULT_LIMITS,
                    **options) -> SessionEventLog:
        """The one shared log of this process for session session_id in folder project_path.

        The file is project_path/<session_id>.jsonl. Asking again returns the same instance
        (limits and options apply when it is made), for as long as anyone holds it: a log keeps
        its writer from open to close, and the cache never takes it away. The cache itself keeps
        at most CACHE_LIMIT logs alive that nobody else holds; past that it lets go of the least
        recently used ones with no subscriber and no watchdog (pinned ones stay, over the bound
        if need be). A log it let go of that nobody holds is closed when it is collected: its
        descriptor and its writer's lock go with it. So descriptors are bounded by CACHE_LIMIT
        plus the logs callers keep: 300 sessions a caller keeps are 300 writers.
        """
        folder = _check_folder("project_path", project_path)
        key = (os.path.abspath(folder), _check_session_id(session_id))
        _check_limits(limits)
        with _CACHE_LOCK:
            log = _CACHE.get(key) or _OPEN.get(key)
            if log is None or log._closed or log.transcript.outcome_unknown is not None:  # that one appends no more
                log = cls(DurableTranscript(folder / f"{session_id}.jsonl", **options), limits=limits)
                log._cache_key = key
                _OPEN[key] = log
            _CACHE[key] = log
            _CACHE.move_to_end(key)
            _trim_cache()
        return log

    @staticmethod
    def cached_count() -> int:
        """How many logs the cache keeps alive now (logs callers hold are not counted: they are theirs)."""
        with _CACHE_LOCK:
            return len(_CACHE)

    @staticmethod
    def close_cached() -> None:
        """Close every log for_session made that is still open, and empty the cache (end of a program or test)."""
        with _CACHE_LOCK:
            logs = list({id(log): log for log in [*_CACHE.values(), *_OPEN.values()]}.values())
            _CACHE.clear()
        for log in logs:
            log.close()

    def __repr__(self):
        return f"SessionEventLog({self.transcript.path.name!r}, last_sequence={self._last_sequence})"

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def close(self) -> None:
        """Stop the watchdog, release every subscription and the transcript's writer; leave the cache."""
        self.stop_watchdog()
        with self._fanout:
            subscribers = list(self._subscribers)
        for subscription in subscribers:
            subscription.release()
        self.transcript.close()
        self._closed = True
        with _CACHE_LOCK:
            if self._cache_key is not None and _CACHE.get(self._cache_key) is self:
                del _CACHE[self._cache_key]
            if self._cache_key is not None and _OPEN.get(self._cache_key) is self:
                del _OPEN[self._cache_key]

    @property
    def pinned(self) -> bool:
        """True while the log has a subscriber or a running watchdog: the cache never lets go of it then."""
        with self._fanout:
            return bool(self._subscribers) or self._watchdog is not None

    def _readable(self) -> None:
        """Refuse to read or write a session whose file was deleted or archived (SessionGoneError)."""
        if self._gone is not None:
            raise SessionGoneError(f"session {self.session_id} was {self._gone}")

    @property
    def clock(self):
        return self.transcript.clock

    @property
    def last_sequence(self) -> int:
        return self._last_sequence

    @property
    def session_id(self) -> str:
        return self.transcript.session_id

    def status(self) -> SessionStatus:
        """The session's state, from every committed event (rewind markers applied)."""
        with self.transcript.lock:
            self._readable()
            return self._fold.status()

    def open_parts(self) -> dict:
        """part_id -> turn of every stream begun and not yet committed (on disk, or in memory only)."""
        with self.transcript.lock:
            self._readable()
            parts = {part: stream.turn_number for part, stream in self._streams.items()}
            return {**parts, **self._fold.open_parts}

    # -- keeping in step with the file -----------------------------------------------

    def _sync(self) -> None:
        """Hold the writer and make sure the fold has every committed event (under transcript.lock).

        At open, and after an append failed or the cache evicted the log (the writer was
        dropped, and another writer could have written meanwhile), it reads: the whole file the
        first time, after that only the events it is missing, which it also hands to the
        subscribers. A rewind marker makes it fold the materialized file again.
        """
        self._hold_writer()
        if self._fold is None:
            fold = SessionFold()
            self.transcript.scan(on_record=fold.add)
            self._fold = fold
            self._last_sequence, self._end = committed_end(self.transcript)
            if fold.rewound:
                self._refold()
        elif self._stale:
            last, end = committed_end(self.transcript)
            if last < self._last_sequence:  # fail closed: the events this log folded are not all there
                raise TranscriptCorruptionError(self.transcript.path, None, end, (
                    f"the file ends at sequence {last}, but this log committed {self._last_sequence}: "
                    f"it was cut or replaced under the log"))
            missing = read_range(self.transcript, self._last_sequence + 1, last, end)
            self._fold.add_all(missing)
            self._last_sequence, self._end = last, end
            if self._fold.rewound:
                self._refold()
            self._publish(missing)
        self._stale = False

    def _hold_writer(self) -> None:
        """Hold the transcript's writer (under transcript.lock), or SessionGoneError if this log's file is
        no longer at its path: a new writer would make an empty file there, which the log's state is not."""
        self._readable()
        if self._fold is not None and not self.transcript.path.exists():
            self._gone = "deleted or moved away by something other than this log"
            raise SessionGoneError(f"session {self.session_id} was {self._gone}")
        self.transcript.acquire_writer()

    def _refold(self) -> None:
        """Fold the whole file again, rewind markers applied first (under transcript.lock)."""
        fold = SessionFold()
        fold.add_all(materialize(self.transcript.read_events()))
        self._fold = fold

    def _fresh(self) -> None:
        """Under transcript.lock: hold the writer and have the fold at the file's last event.

        While the log holds the writer nobody else can append, so the state in memory is the
        file's: one stat confirms the file still ends where the last commit left it, and only
        when it does not (the writer was dropped and someone appended) is the tail read again.
        """
        self._hold_writer()
        if not self._stale and _size(self.transcript.path) != self._end:
            self._stale = True
        if self._stale:
            self._sync()

    def _check(self, events: list) -> None:
        """Refuse events the state machine would report as anomalies (or any, once migrated)."""
        if self._fold.migrated_to is not None:
            raise SessionMigratedError(f"session {self.session_id} migrated to {self._fold.migrated_to}: "
                                       f"commit there")
        problems = self._fold.copy().add_all(events)
        if problems:
            raise CommitRefused("; ".join(problem.message for problem in problems))

    def _append(self, events: list) -> list[dict]:
        """Check, append (one event, or a batch as one commit), fold and fan out. Under transcript.lock.

        A commit that raises has moved nothing: not the fold, not last_sequence, and no subscriber
        saw it. Once the transcript's append has returned the commit is durable, and nothing after it
        raises: what cannot be brought up to date now (the file read again after a rewind, its end)
        marks the log stale, and the next operation reads it (_sync).
        """
        if self._stale or self._gone is not None:
            self._sync()
        events = [checked_event(event) for event in events]  # the lesson's checks, before the fold formats them
        self._check(events)
        try:
            records = [self.transcript.append(events[0])] if len(events) == 1 else self.transcript.append_batch(events)
        except BaseException:
            self._stale = True  # the transcript closed its writer: re-read before trusting the state
            raise
        self._fold.add_all(records)
        self._last_sequence = records[-1]["sequence"]
        try:
            if self._fold.rewound:
                self._refold()
            self._end = os.stat(self.transcript.path).st_size  # one writer holds the lock: the file ends here
        except (OSError, TranscriptCorruptionError):
            self._stale = True  # _sync refolds (the rewind marker is folded) and finds the end again
        self._publish(records)
        return records

    def _publish(self, items: list) -> None:
        """Queue items for every subscriber, in order. Never calls subscriber code."""
        if not items:
            return
        with self._fanout:
            for subscription in self._subscribers:
                for item in items:
                    subscription._offer(item)

    def _unregister(self, subscription: Subscription) -> None:
        with self._fanout:
            if subscription in self._subscribers:
                self._subscribers.remove(subscription)

    # -- committing ------------------------------------------------------------------

    def commit(self, event: dict) -> dict:
        """Append one event durably, then hand it to the subscribers; returns the record.

        Refused (CommitRefused, nothing written) when the state machine would report it as an
        anomaly, as on the validated path: a turn_start pairs with a turn_end. The log's own
        records (CONTROL_TYPES: rewind, session_migrated, session_forked, part_start) are refused
        (LiveInputError): only their helpers write them.
        """
        _check_event(event)
        with self.transcript.lock:
            return self._append([event])[0]

    def commit_batch(self, events: Iterable[dict]) -> list[dict]:
        """Append events as one commit (all or nothing), then hand them to the subscribers; checked as commit."""
        if isinstance(events, (dict, str, bytes)) or not isinstance(events, Iterable):
            raise LiveInputError(f"commit_batch takes a list of events, not {type(events).__name__}")
        events = [_check_event(event) for event in events]
        if not events:
            return []
        with self.transcript.lock:
            return self._append(events)

    def commit_validated(self, builder: Callable[[LiveState], object]) -> list[dict]:
        """Read the current state, check, and append, as one step under transcript.lock.

        builder(state) returns the event or events to commit (one commit), or None for nothing;
        it raises CommitRefused when a rule about the current state does not hold. The events are
        also refused when the state machine would report them as anomalies (a turn_end with no
        open turn, a result for an unknown or answered call, work in an expired session, ...).
        Inside the critical section the state checked is the file's (kept in memory while the
        log holds the writer). The events built are checked as commit's: no control record.
        """
        _check_callable("builder", builder)
        return self._commit_built(builder, control=False)

    def _commit_built(self, builder: Callable[[LiveState], object], *, control: bool) -> list[dict]:
        """commit_validated, for the log's helpers too: control=True lets a helper write its control record."""
        with self.transcript.lock:
            self._fresh()
            built = builder(self._state())
            if built is None:
                return []
            if isinstance(built, (str, bytes)) or not isinstance(built, (dict, Iterable)):
                raise LiveInputError(f"a builder returns an event, a list of events or None, not {shown(built)}")
            events = [built] if isinstance(built, dict) else list(built)
            for event in events:
                if not control or not isinstance(event, dict) or event.get("type") not in CONTROL_TYPES:
                    _check_event(event)
            if not events:
                return []
            return self._append(events)

    def _state(self) -> LiveState:
        return LiveState(self._fold, self._last_sequence, self.open_parts(), self.clock())

    # -- deltas ----------------------------------------------------------------------

    def open_stream(self, channel: str = "text", part_id: str | None = None) -> Stream:
        """Begin streaming one part (text, reasoning or tool progress).

        Inside a turn the beginning is committed (a part_start event): until the part's final
        payload is committed the turn cannot complete, in this process or, after a crash, in the
        next. Pass the part_id of a part_start already on disk to stream that part again after a
        restart. Outside any turn a stream is in memory only.
        """
        if not isinstance(channel, str) or channel not in CHANNELS:
            raise LiveInputError(f"channel must be one of {', '.join(CHANNELS)}, not {shown(channel)}")
        if part_id is not None:
            _check_text("part_id", part_id)
        with self.transcript.lock:
            self._readable()
            if self._stale:
                self._sync()
            turn = self._fold.open_turn
            part_id = part_id or self._new_part_id()
            if part_id in self._streams:
                raise LiveInputError(f"stream {part_id} is already open")
            if turn is not None and part_id not in self._fold.open_parts:
                self._append([part_start_event(part_id, channel, turn)])
            stream = Stream(self, part_id, channel, turn)
            self._streams[part_id] = stream
        return stream

    def _new_part_id(self) -> str:
        """part-<the sequence its part_start gets>: unique in the file, across restarts too."""
        part_id = base = f"part-{self._last_sequence + 1}"
        while part_id in self._streams or part_id in self._fold.open_parts:
            part_id = f"{base}.{next(self._parts)}"
        return part_id

    def emit_delta(self, delta: Delta) -> None:
        """Hand one delta to the subscribers: memory only, no sequence, no write."""
        if not is_delta(delta):
            raise LiveInputError(f"emit_delta takes a Delta, not {type(delta).__name__}")
        self._publish([delta])

    def _commit_part(self, stream: Stream, event: dict) -> dict:
        with self.transcript.lock:
            if self._streams.get(stream.part_id) is not stream:
                raise RuntimeError(f"stream {stream.part_id} is {stream.outcome or 'not open'}")
            record = self._append([{**event, "part_id": stream.part_id}])[0]
            stream.outcome = "committed"
            del self._streams[stream.part_id]
        return record

    def _unfinished(self, turn_number) -> list[str]:
        """The parts of turn turn_number with no committed final part: on disk, then in memory only."""
        on_disk = self._fold.parts_of(turn_number) if turn_number is not None else []
        in_memory = [part for part, stream in self._streams.items()
                     if stream.turn_number is None and part not in on_disk]
        return on_disk + in_memory

    def _close_streams(self, parts) -> None:
        for part in parts:
            stream = self._streams.pop(part, None)
            if stream is not None:
                stream.outcome = "unfinished"

    # -- subscribing and reading -----------------------------------------------------

    def subscribe(self, *, from_sequence: int | None = None, after_sequence: int | None = None,
                  on_event: Callable | None = None, max_queued: int = DEFAULT_MAX_QUEUED) -> Subscription:
        """Committed events from from_sequence on (inclusive), then live events (committed and deltas), in order.

        Give from_sequence (the design's fromSeq: sequence >= it; 0 or 1 for everything, the
        default) or after_sequence (sequence > it), never both; both are keywords only. Hidden
        events (CLIENT_HIDDEN_TYPES) are left out. The hand-over has no gap and no duplicate:
        under transcript.lock the subscriber is registered, so every later commit reaches its
        queue; the events up to the last committed sequence are then read from the file outside
        the lock, and queued first; live events held meanwhile follow, de-duplicated by sequence.
        on_event is called on the subscription's own thread.
        """
        if from_sequence is not None and after_sequence is not None:
            raise LiveInputError("give from_sequence (inclusive) or after_sequence (exclusive), not both")
        first = _check_cursor(after_sequence) + 1 if after_sequence is not None else \
            max(_check_cursor(1 if from_sequence is None else from_sequence), 1)
        subscription = Subscription(self, first, on_event, next(self._numbers), max_queued)
        with self.transcript.lock:
            self._readable()
            if self._stale:
                self._sync()
            if first > self._last_sequence + 1:
                raise LiveInputError(f"cursor {first} is past the log's next sequence {self._last_sequence + 1}")
            with self._fanout:
                self._subscribers.append(subscription)
        subscription._start()
        return subscription

    def _page_for(self, subscription: Subscription, first: int, room: int, offset: int | None) -> tuple:
        """One page of a subscriber's gap: (events, last sequence read, byte where it ends, whether it is the last).

        At most room events from sequence first on, read from the file (hidden included), never
        the whole gap at once. The last page is chosen under transcript.lock, and the subscriber
        holds the live items from then on, so the hand-over has no gap. offset is where event
        first starts, when the subscriber knows it; else the lines in front of the end are counted.
        """
        with self.transcript.lock:
            self._readable()
            if self._stale:
                self._sync()
            last, end = self._last_sequence, self._end
            final = first + room - 1 >= last
            if final:
                subscription._hold_live()
        if final:
            return read_range(self.transcript, first, last, end), max(last, first - 1), end, True
        page_last = first + room - 1
        start = offset if offset is not None else _lines_back(self.transcript.path, end, last - first + 1)
        page_end = _lines_forward(self.transcript.path, start, room)
        return read_range(self.transcript, first, page_last, page_end), page_last, page_end, False

    def read_from(self, from_sequence: int) -> list[dict]:
        """Every client-visible committed event with sequence >= from_sequence (inclusive), validated.

        Reads those plus about one block. read_after(n) is the exclusive form.
        """
        first = max(_check_cursor(from_sequence), 1)
        with self.transcript.lock:
            self._readable()
            last, end = self._last_sequence, self._end
        if first > last + 1:
            raise LiveInputError(f"cursor {first} is past the log's next sequence {last + 1}")
        return [event for event in read_range(self.transcript, first, last, end) if is_client_visible(event)]

    def read_after(self, after_sequence: int) -> list[dict]:
        """The exclusive form of read_from: every client-visible event with sequence > after_sequence."""
        return self.read_from(_check_cursor(after_sequence) + 1)

    def materialized(self) -> list[dict]:
        """Every committed event as the projections read them: rewind markers applied (turns.materialize)."""
        self._readable()
        return materialize(self.transcript.read_events())

    def replay(self) -> list[dict]:
        """The chat messages of the materialized session (rewound events left out), oldest first."""
        return messages_of([event for event in self.materialized() if is_client_visible(event)])

    def page_back(self, count: int, before: int | None = None) -> Page:
        """The count committed events in front of byte cursor before (the newest when None)."""
        _check_whole("count", count)
        with self.transcript.lock:
            self._readable()
            if before is None:
                before = self._end
        _check_whole("before", before)
        return page_back(self.transcript, count, before)

    # -- the whole file: delete, fork, migrate -----------------------------------------

    def delete_validated(self, predicate: Callable[[LiveState], bool]) -> bool:
        """Delete the session's file if predicate(latest committed state) is true; return whether it did.

        The predicate sees the state read from the file's tail under the writer's lock, so no
        commit can slip in between the check and the delete. A deleted log takes no more commits
        and no more reads: both raise SessionGoneError.
        """
        _check_callable("predicate", predicate)
        with self.transcript.lock:
            self._fresh()
            if not predicate(self._state()):
                return False
            self._gone = "deleted"
            self.transcript.path.unlink()
            OsFileIO().fsync_dir(self.transcript.path.parent)
        self.close()
        return True

    def fork(self, new_session_id: str, upto_sequence: int | None = None) -> SessionEventLog:
        """A new session in the same folder holding this one's events 1..upto_sequence (all when None).

        The new transcript is written whole in a hidden temporary folder (its events, then a
        session_forked event naming the source, as one batch: one write, one fsync) and only then
        given its name, exclusively (FileExistsError if the session exists): no reader ever sees
        a fork in part. Sequences and payloads are the source's; the envelope (session id, event
        id, recorded_at) is the new session's. Returns the new session's shared log.

        A fork cuts at a commit boundary only (seed 003: a batch is one commit): upto_sequence
        inside a batch is refused (CommitRefused). Staging folders that killed forks left behind
        are removed first (clean_staging).
        """
        target = self.transcript.path.parent / f"{_check_session_id(new_session_id)}.jsonl"
        with self.transcript.lock:
            self._fresh()
            upto = self._last_sequence if upto_sequence is None else upto_sequence
            if not isinstance(upto, int) or isinstance(upto, bool) or not 0 <= upto <= self._last_sequence:
                raise LiveInputError(f"upto_sequence must be between 0 and {self._last_sequence}, "
                                     f"not {shown(upto_sequence)}")
            events = [event for event in self.transcript.read_events() if event["sequence"] <= upto]
            if events and not _ends_a_commit(events[-1]):
                raise CommitRefused(f"event {upto} is inside a batch (it ends at {events[-1][BATCH_END_FIELD]}): "
                                    f"a fork cuts only between commits")
        if target.exists():
            raise FileExistsError(f"session {new_session_id} exists: a fork never overwrites")
        clean_staging(target.parent)
        marker = {"type": TYPE_FORKED, "from_session": self.session_id, "upto_sequence": upto}
        scratch = _staging_folder(".fork-", target.parent)
        try:
            staged = DurableTranscript.create(scratch / target.name, clock=self.clock,
                                              integrity=self.transcript.integrity)
            with staged:
                staged.append_batch([*(_payload(event) for event in events), marker])
            _publish_exclusively(staged.path, target)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return SessionEventLog.for_session(new_session_id, target.parent, limits=self.limits, clock=self.clock,
                                           integrity=self.transcript.integrity)

    def migrate_to(self, target_folder) -> SessionEventLog:
        """Move the session to another harness's folder (seed 002's migration flow); returns harness B's log.

        1. the whole JSONL is the payload: copied byte for byte, created exclusively and whole;
        2. B loads and replays it; 3. B's state and materialized events are checked equal to this
        log's (else B's copy is deleted and MigrationError raised); 4. this copy is marked
        migrated (a session_migrated event): from then on it refuses every commit
        (SessionMigratedError), after a restart too; 5. B takes every later commit.
        """
        folder = _check_folder("target_folder", target_folder)
        make_folders(folder)  # each new folder's name made durable in its parent
        clean_staging(folder)
        target = folder / self.transcript.path.name
        with self.transcript.lock:
            self._fresh()
            if self._fold.migrated_to is not None:
                raise SessionMigratedError(f"session {self.session_id} already migrated to {self._fold.migrated_to}")
            with open(regular(self.transcript.path), "rb") as source:
                payload = source.read(self._end)
            scratch = _staging_folder(".migrate-", folder)
            try:
                staged = scratch / target.name
                with open(staged, "wb") as file:
                    file.write(payload)
                    file.flush()
                    os.fsync(file.fileno())
                _publish_exclusively(staged, target)
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
            harness_b = SessionEventLog.for_session(self.session_id, folder, limits=self.limits, clock=self.clock,
                                                    integrity=self.transcript.integrity)
            same = (harness_b.status() == self._fold.status()
                    and [_payload(e) for e in harness_b.materialized()] == [_payload(e) for e in self.materialized()])
            if not same:
                harness_b.delete_validated(lambda state: True)
                raise MigrationError(f"the copy in {folder} does not replay to this session's state")
            self._append([{"type": TYPE_MIGRATED, "to": str(target)}])  # the one writer of this control record
        self.stop_watchdog()
        return harness_b

    # -- the timeout watchdog --------------------------------------------------------------

    def start_watchdog(self, interval: float = DEFAULT_WATCHDOG_INTERVAL) -> None:
        """Start a thread that runs check_timeouts every interval seconds until stop_watchdog (or close).

        Whoever owns the log starts and stops it; the log's clock says what time it is. A round
        that fails (the writer taken elsewhere, a disk error) is kept in watchdog_error and the
        next round tries again. It ends by itself once the session has expired.
        """
        _check_seconds("interval", interval)
        self._readable()
        with self._fanout:
            if self._watchdog is not None:
                raise RuntimeError("the watchdog is already running")
            stop = threading.Event()
            self._watchdog_stop = stop
            self._watchdog = threading.Thread(target=self._watch, args=(interval, stop),
                                              name=f"s09-watchdog-{self.session_id}", daemon=True)
        self._watchdog.start()

    def stop_watchdog(self) -> None:
        """Stop the watchdog thread and wait for it; nothing happens when none runs."""
        with self._fanout:
            thread, stop = self._watchdog, self._watchdog_stop
            self._watchdog = self._watchdog_stop = None
        if thread is not None:
            stop.set()
            if thread is not threading.current_thread():
                thread.join()

    @property
    def watchdog_running(self) -> bool:
        with self._fanout:
            return self._watchdog is not None and self._watchdog.is_alive()

    def _watch(self, interval: float, stop: threading.Event) -> None:
        """The watchdog's rounds; once the session expired or migrated it ends and unpins the log."""
        while not stop.wait(interval):
            try:
                self.watchdog_records += len(self.check_timeouts())
            except (CommitRefused, TranscriptLockedError, TranscriptCorruptionError, OSError) as error:
                self.watchdog_error = error
            with self.transcript.lock:
                over = self._gone is not None or self._fold.state == EXPIRED or self._fold.migrated_to is not None
            if over:
                with self._fanout:
                    if self._watchdog_stop is stop:  # nobody stopped it meanwhile: it was this thread
                        self._watchdog = self._watchdog_stop = None
                return

    # -- the session's validated steps -------------------------------------------------

    def user_message(self, content: str) -> dict:
        """Commit what the user said (refused while paused, after an error, or once expired)."""
        _check_text("content", content)
        return self.commit_validated(lambda state: {"type": "message", "role": "user", "content": content})[0]

    def start_turn(self, reason: str = START_USER) -> dict:
        """Open the next turn (refused while a turn is open, paused, after an error without retry, or expired)."""
        if not isinstance(reason, str) or reason not in START_REASONS:
            raise LiveInputError(f"reason must be one of {', '.join(START_REASONS)}, not {shown(reason)}")
        return self.commit_validated(
            lambda state: turn_start_event((state.fold.last_turn or 0) + 1, reason))[0]

    def end_turn(self, turn_number: int, reason: str = REASON_COMPLETE, token_summary: dict | None = None) -> dict:
        """Close turn turn_number. Refused when it is not the open turn: of racing closes one wins.

        A turn that completes must have committed the final part of every stream it began (the
        part_start events on disk say which, after a restart too); ending any other way records
        the unfinished streams (unfinished_parts) on the turn_end.
        """
        try:
            turn_end_event(turn_number, reason, token_summary)  # refuses a bad number, reason or summary
        except (TypeError, ValueError) as problem:
            raise LiveInputError(str(problem)) from None

        def build(state: LiveState):
            unfinished = self._unfinished(turn_number) if state.fold.open_turn == turn_number else []
            if unfinished and reason == REASON_COMPLETE:
                raise CommitRefused(f"turn {turn_number} cannot complete: {', '.join(unfinished)} "
                                    f"has no committed final part")
            return turn_end_event(turn_number, reason, token_summary, unfinished_parts=unfinished)

        with self.transcript.lock:  # the turn_end and the end of its streams: one step
            record = self.commit_validated(build)[0]
            self._close_streams(record.get("unfinished_parts", ()))
        return record

    def pause(self) -> dict:
        """pause_command: running -> paused."""
        return self.commit_validated(lambda state: command_event(TYPE_PAUSE))[0]

    def resume(self) -> dict:
        """resume_command: paused -> running."""
        return self.commit_validated(lambda state: command_event(TYPE_RESUME))[0]

    def retry(self) -> dict:
        """retry_command: error -> running (then start_turn("retry"))."""
        return self.commit_validated(lambda state: command_event(TYPE_RETRY))[0]

    def rewind(self, to_sequence: int) -> dict:
        """Append a rewind marker: every projection then leaves out the events after to_sequence.

        Nothing on disk is changed or removed: the marker is the undo. Refused (CommitRefused)
        while a turn is open (end it first), for a sequence past the last one, for a sequence
        inside a batch (a batch is one commit: a rewind cuts between commits), and for a point
        where a turn was open (the rewind would reopen that turn, and the next timeout check
        would expire it for good: rewind to before its turn_start or after its turn_end).
        Returns the marker's record.
        """
        _check_whole("to_sequence", to_sequence)

        def build(state: LiveState):
            if state.fold.open_turn is not None:
                raise CommitRefused(f"turn {state.fold.open_turn} is open: end it before rewinding")
            if to_sequence > state.last_sequence:
                raise CommitRefused(f"to_sequence must be between 0 and {state.last_sequence}, not {to_sequence!r}")
            kept = [event for event in materialize(self.transcript.read_events()) if event["sequence"] <= to_sequence]
            if kept and kept[-1]["sequence"] == to_sequence and not _ends_a_commit(kept[-1]):
                raise CommitRefused(f"event {to_sequence} is inside a batch (it ends at "
                                    f"{kept[-1][BATCH_END_FIELD]}): a rewind cuts only between commits")
            reopened = SessionFold()
            reopened.add_all(kept)
            if reopened.open_turn is not None:
                raise CommitRefused(f"turn {reopened.open_turn} was open at event {to_sequence}: a rewind there would "
                                    f"reopen it; rewind to before its turn_start or after its turn_end")
            return rewind_event(to_sequence)

        return self._commit_built(build, control=True)[0]

    def record_handoff(self, reason: str, summary: str) -> dict:
        """Commit a token-budget handoff: it takes a sequence, and no client ever sees it (CLIENT_HIDDEN_TYPES)."""
        _check_text("reason", reason)
        _check_text("summary", summary)
        return self.commit_validated(lambda state: handoff_event(reason, summary))[0]

    def record_permission(self, call_id: str, tool: str, decision: str, *, by: str = "user",
                          reason: str = "") -> dict:
        """Commit who allowed or denied a tool call, and why (turns.audit lists these decisions)."""
        for name, value in (("call_id", call_id), ("tool", tool), ("by", by)):
            _check_text(name, value)
        _check_text("reason", reason, empty=True)
        if decision not in PERMISSION_DECISIONS:
            raise LiveInputError(f"decision must be one of {', '.join(PERMISSION_DECISIONS)}, not {shown(decision)}")
        return self.commit_validated(lambda state: permission_event(call_id, tool, decision, by=by, reason=reason))[0]

    def record_tool_call(self, call_id: str, name: str, arguments: dict | None = None) -> dict:
        """Commit a function_call of the open turn (refused outside a running turn and past the turn's limit)."""
        _check_text("call_id", call_id)
        _check_text("name", name)
        if arguments is not None and not isinstance(arguments, dict):
            raise LiveInputError(f"arguments must be a dict or None, not {shown(arguments)}")

        def build(state: LiveState):
            fold = state.fold
            if fold.state != RUNNING or fold.open_turn is None:
                raise CommitRefused(f"a tool call needs a running turn (the session is {fold.state}, "
                                    f"open turn {fold.open_turn})")
            if fold.calls_in_turn >= self.limits.max_tool_calls_per_turn:
                raise CommitRefused(f"turn {fold.open_turn} already made {fold.calls_in_turn} tool calls "
                                    f"(max_tool_calls_per_turn is {self.limits.max_tool_calls_per_turn})")
            return {"type": TYPE_FUNCTION_CALL, "callId": call_id, "name": name, "arguments": arguments or {}}

        return self.commit_validated(build)[0]

    def record_tool_result(self, call_id: str, output=None, *, error: str | None = None) -> dict:
        """Commit a call's result (or its error). Refused for an unknown call or one already answered."""
        _check_text("call_id", call_id)
        if error is not None:
            _check_text("error", error)
        return self.commit_validated(lambda state: tool_result_event(call_id, output, error=error))[0]

    def answer_pending_calls(self, error: str = CRASH_ERROR) -> list[dict]:
        """After a crash: answer every call still waiting for a result with an error result, in one batch."""
        _check_text("error", error)
        return self.commit_validated(
            lambda state: [tool_result_event(call_id, error=error) for call_id in state.fold.pending])

    def check_timeouts(self) -> list[dict]:
        """Record every limit passed by now (the transcript's clock), in one validated commit; [] if none.

        See timeouts.due_timeouts. Streams of a turn a limit ends are recorded as unfinished_parts.
        The watchdog (start_watchdog) calls this on its own; tests and notebooks call it by hand.
        """
        ended = {}

        def build(state: LiveState):
            parts = self._unfinished(state.fold.open_turn) if state.fold.open_turn is not None else []
            events = due_timeouts(state.fold, state.now, self.limits, parts)
            ended["parts"] = [part for event in events for part in event.get("unfinished_parts", ())]
            return events

        with self.transcript.lock:
            records = self.commit_validated(build)
            self._close_streams(ended.get("parts", ()))
            if records and self._fold.state == EXPIRED:
                self._close_streams(list(self._streams))
        return records


def _trim_cache() -> None:
    """Past CACHE_LIMIT, let go of the least recently used logs with no subscriber or watchdog (under _CACHE_LOCK).

    Letting go closes nothing: a log someone still holds keeps its writer and stays in _OPEN, so
    for_session returns it again; one nobody holds is collected, and its writer's descriptor closes.
    """
    for key in [key for key, log in list(_CACHE.items())[:-1] if not log.pinned]:  # the last: just asked for
        if len(_CACHE) <= CACHE_LIMIT:
            return
        del _CACHE[key]


# --------------------------------------------------------------------------- housekeeping


@dataclass
class ArchiveReport:
    """What one archive_expired did: the sessions it moved and where, and the files it left, with why."""

    archived: list = field(default_factory=list)  # session ids, in file-name order
    archived_to: list = field(default_factory=list)  # where each went (a Path), in the same order
    skipped: list = field(default_factory=list)  # (file name, why it stayed): in use, held, unreadable
    staging_removed: list = field(default_factory=list)  # leftover .fork-*/.migrate-* folders removed

    def __str__(self):
        return f"{len(self.archived)} archived, {len(self.skipped)} skipped"


def _archive_place(archive: Path, name: str) -> Path:
    """Where the next life of a session goes: archive/<id>.jsonl, then archive/life-2/<id>.jsonl, life-3, ...

    A session id can be used again once its first life is archived; each life keeps its own
    file, under its own name (the reader checks the envelope's session id against it).
    """
    place, life = archive / name, 1
    while place.exists():
        life += 1
        place = archive / f"life-{life}" / name
    return place


def _move_exclusively(path: Path, archive: Path) -> Path:
    """Give path the next free archive place, never replacing a file there; then remove its old name."""
    while True:
        place = _archive_place(archive, path.name)
        place.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(path, place)  # fails when the name exists: an earlier life is never replaced
        except FileExistsError:
            continue
        OsFileIO().fsync_dir(place.parent)
        os.unlink(path)
        OsFileIO().fsync_dir(path.parent)
        return place


def _open_in_this_process(key) -> SessionEventLog | None:
    with _CACHE_LOCK:
        log = _CACHE.get(key) or _OPEN.get(key)
    return log if log is not None and not log._closed else None


def archive_expired(project_path) -> ArchiveReport:
    """Move every expired session's file in project_path into project_path/archive; report what it did.

    A session counts as expired when its transcript says so (a turn that timed out, a session
    limit reached: the watchdog records those). Files are moved, never rewritten, and never
    replace an earlier life of the same session id (see _archive_place). Left where they are,
    and listed in skipped: a session with a subscriber or watchdog in this process, one another
    writer holds, and a file that cannot be read as a transcript (a foreign file, damage), as
    index.sync does. A session that is not expired is left alone, its log in this process
    untouched. An expired session whose log is open in this process is moved under that log's
    lock; the log then refuses reads and commits (SessionGoneError, naming where the file went).
    Leftover staging folders of killed forks are removed first (clean_staging).
    """
    folder = _check_folder("project_path", project_path)
    if not folder.is_dir():
        raise LiveInputError(f"project_path {str(folder)!r} is not a folder")
    archive = folder / ARCHIVE_FOLDER
    report = ArchiveReport(staging_removed=clean_staging(folder))
    for path in sorted(folder.glob("*.jsonl")):
        log = _open_in_this_process((os.path.abspath(folder), path.stem))
        try:
            place = _archive_through(log, archive) if log is not None else _archive_file(path, archive)
        except (TranscriptCorruptionError, TranscriptLockedError, CommitRefused, OSError, ValueError) as problem:
            report.skipped.append((path.name, str(problem)))
            continue
        if place is not None:
            report.archived.append(path.stem)
            report.archived_to.append(place)
    return report


def _archive_through(log: SessionEventLog, archive: Path) -> Path | None:
    """Archive the session of a log open in this process, if it is expired and nothing watches it."""
    if log.pinned:
        raise CommitRefused(f"session {log.session_id} has a subscriber or a watchdog in this process")
    with log.transcript.lock:
        log._fresh()
        if log._fold.state != EXPIRED:
            return None
        place = _move_exclusively(log.transcript.path, archive)
        log._gone = f"archived to {place}"
        log.transcript.close()
    log.close()
    return place


def _archive_file(path: Path, archive: Path) -> Path | None:
    """Archive a session no log in this process has open, holding its writer while it moves."""
    transcript = DurableTranscript(path)
    try:
        transcript.acquire_writer()  # nobody else writes while it moves (TranscriptLockedError if held)
        if session_status(transcript.read_events()).state != EXPIRED:
            return None
        return _move_exclusively(path, archive)
    finally:
        transcript.close()
