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
subscriber's queue holds at most max_queued live items (the drop-and-resync rule): when it is
full, live items are dropped, and once the consumer has drained the queue the missing committed
events are read back from the file before live delivery goes on. Committed events are never
lost that way; dropped deltas are (they are ephemeral: the committed final part has the text).
A watchdog thread (start_watchdog / stop_watchdog, owned by whoever owns the log) records the
limits that pass without anyone polling; check_timeouts() does one round of it by hand.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
import threading
from collections import OrderedDict, deque
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from .code import TYPE_FUNCTION_CALL, TranscriptCorruptionError, TranscriptLockedError, event_to_message
from .lab import BATCH_END_FIELD, CHAIN_FIELD, DurableTranscript, OsFileIO
from .timeouts import DEFAULT_LIMITS, Limits, due_timeouts
from .turns import (
    EXPIRED,
    REASON_COMPLETE,
    RUNNING,
    START_USER,
    TYPE_FORKED,
    TYPE_HANDOFF,
    TYPE_MIGRATED,
    TYPE_PAUSE,
    TYPE_RESUME,
    TYPE_RETRY,
    SessionFold,
    SessionStatus,
    command_event,
    handoff_event,
    materialize,
    part_start_event,
    permission_event,
    rewind_event,
    session_status,
    tool_result_event,
    turn_end_event,
    turn_start_event,
)

CHANNELS = ("text", "reasoning", "tool_progress")  # what a delta carries a piece of
CRASH_ERROR = "the runtime stopped before this call returned a result"
CACHE_LIMIT = 256  # SessionEventLog.for_session keeps at most this many logs without subscribers open
DEFAULT_MAX_QUEUED = 1000  # live items a subscriber's queue holds before the drop-and-resync rule applies
CLIENT_HIDDEN_TYPES = frozenset({TYPE_HANDOFF})  # committed with a sequence, never delivered or replayed
DEFAULT_WATCHDOG_INTERVAL = 1.0  # seconds between two rounds of the timeout watchdog
ARCHIVE_FOLDER = "archive"  # archive_expired moves expired sessions' files here, inside their project folder
_ENVELOPE = frozenset({"schema_version", "sequence", "recorded_at", "session_id", "event_id", BATCH_END_FIELD,
                       CHAIN_FIELD})


class CommitRefused(RuntimeError):
    """A validated commit's check failed against the current state: nothing was written."""


class SessionMigratedError(CommitRefused):
    """This copy of the session was migrated to another harness: it takes no more commits."""


class MigrationError(RuntimeError):
    """The migrated copy's replayed state is not the source's: the migration was undone."""


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
    if not isinstance(sequence, int) or isinstance(sequence, bool) or sequence < 0:
        raise ValueError(f"a cursor is a sequence >= 0, not {sequence!r}")
    return sequence


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
    scanned = transcript.read_recent(count, before=before)
    return Page(scanned.events, scanned.offsets[0] if scanned.events else None)


# --------------------------------------------------------------------------- subscriptions


class Subscription:
    """One subscriber's view: the committed events from its first sequence on, then live events, in order.

    delivered_upto is the sequence of the last committed event handed to the consumer;
    next_sequence (one more) is where to reconnect: log.subscribe(from_sequence=s.next_sequence)
    misses nothing and repeats nothing. The queue holds at most max_queued live items: past
    that, live items are dropped and, once the queue is drained, the committed events missed are
    read back from the file (resyncs counts how often; deltas_dropped the deltas lost meanwhile).
    """

    def __init__(self, log: SessionEventLog, first: int, on_event: Callable | None, number: int,
                 max_queued: int = DEFAULT_MAX_QUEUED):
        if not isinstance(max_queued, int) or isinstance(max_queued, bool) or max_queued < 1:
            raise ValueError(f"max_queued must be a whole number >= 1, not {max_queued!r}")
        self.log, self.on_event, self.name, self.max_queued = log, on_event, f"s09-subscriber-{number}", max_queued
        self.delivered_upto = self.queued_upto = first - 1
        self.duplicates_dropped = 0  # committed events seen twice at the hand-over (replay and live)
        self.deltas_dropped = 0  # deltas dropped while the queue was full (they are not on disk)
        self.resyncs = 0  # times the queue overflowed and the missed committed events were read from the file
        self.released = False
        self.error: BaseException | None = None  # what ended a callback subscription, if anything
        self._cond = threading.Condition()
        self._queue, self._buffer, self._busy = deque(), [], False  # _buffer: live items held while replaying
        self._behind = False  # live committed events were dropped: read them from the file before going on
        self._resyncing = False  # reading them back right now
        self._thread = None

    def __repr__(self):
        return f"<Subscription {self.name} next_sequence={self.next_sequence}{' released' if self.released else ''}>"

    @property
    def next_sequence(self) -> int:
        """The sequence to reconnect from (inclusive): one past the last committed event handed over."""
        return self.delivered_upto + 1

    # -- called by the log ----------------------------------------------------------

    def _offer(self, item) -> None:
        """Take one live item (under the log's fan-out lock): queue it, or hold it while replay runs."""
        with self._cond:
            if self.released:
                return
            if self._buffer is not None:
                self._buffer.append(item)
            else:
                self._enqueue(item, live=True)

    def _enqueue(self, item, live: bool) -> None:  # holding _cond
        if not is_delta(item):
            if item["sequence"] <= self.queued_upto:  # replayed already: the hand-over de-duplicates
                self.duplicates_dropped += 1
                return
            if not is_client_visible(item):
                return
        if live and (self._behind or len(self._queue) >= self.max_queued):
            if is_delta(item):
                self.deltas_dropped += 1
            else:
                self._behind = True  # it is on disk: the resync reads it back in order
                self._cond.notify_all()
            return
        if not is_delta(item):
            self.queued_upto = item["sequence"]
        self._queue.append(item)
        self._cond.notify_all()

    def _go_live(self, replayed: list) -> None:
        """Queue the replayed events, then the live items held meanwhile; from now on queue directly."""
        with self._cond:
            for item in replayed:
                self._enqueue(item, live=False)
            for item in self._buffer:
                self._enqueue(item, live=True)
            self._buffer, self._resyncing = None, False
            self._cond.notify_all()
        if self.on_event is not None and self._thread is None:
            self._thread = threading.Thread(target=self._deliver, name=self.name, daemon=True)
            self._thread.start()

    def _resync_if_behind(self) -> None:
        """When live events were dropped and the queue is empty: read them from the file (not holding _cond)."""
        with self._cond:
            if not self._behind or self._queue or self.released:
                return
            self._behind, self._buffer, self._resyncing = False, [], True  # hold live items meanwhile
            first = self.queued_upto + 1
        self.resyncs += 1
        try:
            replayed = self.log._replay_for(first)
        except BaseException as error:  # noqa: BLE001 - the file cannot be read: end this subscription only
            self.error = error
            self.release()
            return
        self._go_live(replayed)

    def _deliver(self) -> None:
        """The delivery thread: hand items to on_event one at a time until released."""
        while True:
            self._resync_if_behind()
            with self._cond:
                while not self._queue and not self.released and not (self._behind and self._buffer is None):
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
        self._resync_if_behind()
        with self._cond:
            items = list(self._queue)
            self._queue.clear()
            self._advance(items)
        return items

    def get(self, timeout: float | None = None):
        """The next item, waiting up to timeout seconds; None if nothing came or the subscription ended."""
        self._pull_only()
        self._resync_if_behind()
        with self._cond:
            if not self._cond.wait_for(lambda: self._queue or self.released, timeout) or not self._queue:
                return None
            item = self._queue.popleft()
            self._advance([item])
        return item

    def queued(self) -> int:
        """How many items wait in the queue now (never more than max_queued live items past a replay)."""
        with self._cond:
            return len(self._queue)

    def wait_delivered(self, timeout: float = 10.0) -> bool:
        """Wait until every item queued so far was handed to on_event (callback mode); False on timeout."""
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
            raise TypeError("a delta carries text")
        piece = Delta(self.part_id, self.channel, text, self.deltas)
        self.deltas += 1
        self.text += text
        self.log._publish([piece])
        return piece

    def commit(self, event: dict) -> dict:
        """Commit the final part: event, with this stream's part_id added. Ends the stream."""
        if self.outcome is not None:
            raise RuntimeError(f"stream {self.part_id} is {self.outcome}")
        return self.log._commit_part(self, event)


# --------------------------------------------------------------------------- the log

_CACHE: OrderedDict = OrderedDict()  # (project folder, session id) -> SessionEventLog, least recently used first
_CACHE_LOCK = threading.Lock()


def _check_session_id(session_id) -> str:
    if not isinstance(session_id, str) or not session_id or Path(session_id).name != session_id \
            or session_id in (".", "..") or session_id.startswith("."):
        raise ValueError(f"a session id is a plain file name, not {session_id!r}")
    return session_id


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
        self.transcript, self.limits = transcript, limits
        self._fanout = threading.Lock()  # taken after transcript.lock, never before it
        self._subscribers: list[Subscription] = []
        self._streams: dict[str, Stream] = {}
        self._numbers, self._parts = itertools.count(1), itertools.count(1)
        self._fold, self._last_sequence, self._end, self._stale = None, 0, 0, True
        self._watchdog, self._watchdog_stop = None, None
        self.watchdog_records = 0  # events the watchdog has committed
        self.watchdog_error: BaseException | None = None  # the last thing that stopped a watchdog round
        self._cache_key, self._closed, self._deleted = None, False, False
        with transcript.lock:
            self._sync()

    @classmethod
    def create(cls, path, *, limits: Limits = DEFAULT_LIMITS, **options) -> SessionEventLog:
        """A new session (FileExistsError if its file exists); options go to DurableTranscript."""
        return cls(DurableTranscript.create(path, **options), limits=limits)

    @classmethod
    def open(cls, path, *, limits: Limits = DEFAULT_LIMITS, **options) -> SessionEventLog:
        """An existing session (or a new file), its state rebuilt from the file. Not shared: see for_session."""
        return cls(DurableTranscript(path, **options), limits=limits)

    @classmethod
    def for_session(cls, session_id: str, project_path, *, limits: Limits = DEFAULT_LIMITS,
                    **options) -> SessionEventLog:
        """The one shared log of this process for session session_id in folder project_path.

        The file is project_path/<session_id>.jsonl. Asking again returns the same instance
        (limits and options apply when it is made). At most CACHE_LIMIT instances stay open: past
        that, the least recently used ones with no subscriber and no watchdog are evicted (their
        writer's descriptor is closed; an evicted instance still works, it re-reads the file and
        takes the writer again at its next commit). Instances in use are pinned and may exceed the
        bound while all are pinned.
        """
        folder = Path(project_path)
        key = (os.path.abspath(folder), _check_session_id(session_id))
        with _CACHE_LOCK:
            log = _CACHE.get(key)
            if log is not None and not log._closed:
                _CACHE.move_to_end(key)
                return log
            log = cls(DurableTranscript(folder / f"{session_id}.jsonl", **options), limits=limits)
            log._cache_key = key
            _CACHE[key] = log
            _evict_unpinned(keep=key)
        return log

    @staticmethod
    def cached_count() -> int:
        """How many logs for_session holds now."""
        with _CACHE_LOCK:
            return len(_CACHE)

    @staticmethod
    def close_cached() -> None:
        """Close every log for_session holds and empty the cache (end of a program, or of a test)."""
        with _CACHE_LOCK:
            logs = list(_CACHE.values())
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

    @property
    def pinned(self) -> bool:
        """True while the log has a subscriber or a running watchdog: the cache never evicts it then."""
        with self._fanout:
            return bool(self._subscribers) or self._watchdog is not None

    def _evict(self) -> bool:
        """Close the writer's descriptor unless the log is busy right now; return whether it did.

        The next commit re-reads what it missed and takes the writer again. The lock is only tried:
        a log in the middle of a commit (or of a migration, which asks the cache for harness B
        while it holds its own lock) is in use, and waiting for it here could deadlock.
        """
        if not self.transcript.lock.acquire(blocking=False):
            return False
        try:
            self.transcript.close()
            self._stale = True
        finally:
            self.transcript.lock.release()
        return True

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
            return self._fold.status()

    def open_parts(self) -> dict:
        """part_id -> turn of every stream begun and not yet committed (on disk, or in memory only)."""
        with self.transcript.lock:
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
        if self._deleted:
            raise CommitRefused(f"session {self.session_id} was deleted")
        self.transcript.acquire_writer()
        if self._fold is None:
            fold = SessionFold()
            self.transcript.scan(on_record=fold.add)
            self._fold = fold
            self._last_sequence, self._end = committed_end(self.transcript)
            if fold.rewound:
                self._refold()
        elif self._stale:
            last, end = committed_end(self.transcript)
            missing = read_range(self.transcript, self._last_sequence + 1, last, end)
            self._fold.add_all(missing)
            self._last_sequence, self._end = last, end
            if self._fold.rewound:
                self._refold()
            self._publish(missing)
        self._stale = False

    def _refold(self) -> None:
        """Fold the whole file again, rewind markers applied first (under transcript.lock)."""
        fold = SessionFold()
        fold.add_all(materialize(self.transcript.read_events()))
        self._fold = fold

    def _fresh(self) -> None:
        """Under transcript.lock: hold the writer and have the fold at the file's last event."""
        if self._deleted:
            raise CommitRefused(f"session {self.session_id} was deleted")
        self.transcript.acquire_writer()
        if committed_end(self.transcript)[0] != self._last_sequence:
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
        """Check, append (one event, or a batch as one commit), fold and fan out. Under transcript.lock."""
        if self._stale or self._deleted:
            self._sync()
        self._check(events)
        try:
            records = [self.transcript.append(events[0])] if len(events) == 1 else self.transcript.append_batch(events)
        except BaseException:
            self._stale = True  # the transcript closed its writer: re-read before trusting the state
            raise
        self._fold.add_all(records)
        if self._fold.rewound:
            self._refold()
        self._last_sequence = records[-1]["sequence"]
        self._end = os.stat(self.transcript.path).st_size  # one writer holds the lock: the file ends here
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
        anomaly, as on the validated path: a turn_start pairs with a turn_end.
        """
        with self.transcript.lock:
            return self._append([event])[0]

    def commit_batch(self, events: Iterable[dict]) -> list[dict]:
        """Append events as one commit (all or nothing), then hand them to the subscribers; checked as commit."""
        events = list(events)
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
        Inside the critical section the file's tail is read, so the state checked is the file's.
        """
        with self.transcript.lock:
            self._fresh()
            built = builder(self._state())
            events = [] if built is None else [built] if isinstance(built, dict) else list(built)
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
        if channel not in CHANNELS:
            raise ValueError(f"channel must be one of {', '.join(CHANNELS)}, not {channel!r}")
        with self.transcript.lock:
            if self._stale:
                self._sync()
            turn = self._fold.open_turn
            part_id = part_id or self._new_part_id()
            if part_id in self._streams:
                raise ValueError(f"stream {part_id} is already open")
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
            raise TypeError("emit_delta takes a Delta")
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
            raise TypeError("give from_sequence (inclusive) or after_sequence (exclusive), not both")
        first = _check_cursor(after_sequence) + 1 if after_sequence is not None else \
            max(_check_cursor(1 if from_sequence is None else from_sequence), 1)
        subscription = Subscription(self, first, on_event, next(self._numbers), max_queued)
        with self.transcript.lock:
            if self._stale:
                self._sync()
            if first > self._last_sequence + 1:
                raise ValueError(f"cursor {first} is past the log's next sequence {self._last_sequence + 1}")
            with self._fanout:
                self._subscribers.append(subscription)
        try:
            replayed = self._replay_for(first)
        except BaseException:
            subscription.release()
            raise
        subscription._go_live(replayed)
        return subscription

    def _replay_for(self, first: int) -> list[dict]:
        """The committed events from sequence first to the last one now, read from the file (hidden included)."""
        with self.transcript.lock:
            if self._stale:
                self._sync()
            last, end = self._last_sequence, self._end
        return read_range(self.transcript, first, last, end)

    def read_from(self, from_sequence: int) -> list[dict]:
        """Every client-visible committed event with sequence >= from_sequence (inclusive), validated.

        Reads those plus about one block. read_after(n) is the exclusive form.
        """
        first = max(_check_cursor(from_sequence), 1)
        with self.transcript.lock:
            last, end = self._last_sequence, self._end
        if first > last + 1:
            raise ValueError(f"cursor {first} is past the log's next sequence {last + 1}")
        return [event for event in read_range(self.transcript, first, last, end) if is_client_visible(event)]

    def read_after(self, after_sequence: int) -> list[dict]:
        """The exclusive form of read_from: every client-visible event with sequence > after_sequence."""
        return self.read_from(_check_cursor(after_sequence) + 1)

    def materialized(self) -> list[dict]:
        """Every committed event as the projections read them: rewind markers applied (turns.materialize)."""
        return materialize(self.transcript.read_events())

    def replay(self) -> list[dict]:
        """The chat messages of the materialized session (rewound events left out), oldest first."""
        return [message for event in self.materialized() if is_client_visible(event)
                and (message := event_to_message(event)) is not None]

    def page_back(self, count: int, before: int | None = None) -> Page:
        """The count committed events in front of byte cursor before (the newest when None)."""
        if before is None:
            with self.transcript.lock:
                before = self._end
        return page_back(self.transcript, count, before)

    # -- the whole file: delete, fork, migrate -----------------------------------------

    def delete_validated(self, predicate: Callable[[LiveState], bool]) -> bool:
        """Delete the session's file if predicate(latest committed state) is true; return whether it did.

        The predicate sees the state read from the file's tail under the writer's lock, so no
        commit can slip in between the check and the delete. A deleted log takes no more commits.
        """
        with self.transcript.lock:
            self._fresh()
            if not predicate(self._state()):
                return False
            self._deleted = True
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
        """
        target = self.transcript.path.parent / f"{_check_session_id(new_session_id)}.jsonl"
        with self.transcript.lock:
            self._fresh()
            upto = self._last_sequence if upto_sequence is None else upto_sequence
            if not isinstance(upto, int) or isinstance(upto, bool) or not 0 <= upto <= self._last_sequence:
                raise ValueError(f"upto_sequence must be between 0 and {self._last_sequence}, not {upto_sequence!r}")
            events = [event for event in self.transcript.read_events() if event["sequence"] <= upto]
        if target.exists():
            raise FileExistsError(f"session {new_session_id} exists: a fork never overwrites")
        marker = {"type": TYPE_FORKED, "from_session": self.session_id, "upto_sequence": upto}
        scratch = Path(tempfile.mkdtemp(prefix=".fork-", dir=target.parent))
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
        folder = Path(target_folder)
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / self.transcript.path.name
        with self.transcript.lock:
            self._fresh()
            if self._fold.migrated_to is not None:
                raise SessionMigratedError(f"session {self.session_id} already migrated to {self._fold.migrated_to}")
            with open(self.transcript.path, "rb") as source:
                payload = source.read(self._end)
            scratch = Path(tempfile.mkdtemp(prefix=".migrate-", dir=folder))
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
            self._append([{"type": TYPE_MIGRATED, "to": str(target)}])
        self.stop_watchdog()
        return harness_b

    # -- the timeout watchdog --------------------------------------------------------------

    def start_watchdog(self, interval: float = DEFAULT_WATCHDOG_INTERVAL) -> None:
        """Start a thread that runs check_timeouts every interval seconds until stop_watchdog (or close).

        Whoever owns the log starts and stops it; the log's clock says what time it is. A round
        that fails (the writer taken elsewhere, a disk error) is kept in watchdog_error and the
        next round tries again. It ends by itself once the session has expired.
        """
        if not isinstance(interval, (int, float)) or isinstance(interval, bool) or interval <= 0:
            raise ValueError(f"interval must be a number of seconds > 0, not {interval!r}")
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
        while not stop.wait(interval):
            try:
                self.watchdog_records += len(self.check_timeouts())
            except (CommitRefused, TranscriptLockedError, TranscriptCorruptionError, OSError) as error:
                self.watchdog_error = error
            with self.transcript.lock:
                if self._fold.state == EXPIRED or self._fold.migrated_to is not None:
                    return

    # -- the session's validated steps -------------------------------------------------

    def user_message(self, content: str) -> dict:
        """Commit what the user said (refused while paused, after an error, or once expired)."""
        return self.commit_validated(lambda state: {"type": "message", "role": "user", "content": content})[0]

    def start_turn(self, reason: str = START_USER) -> dict:
        """Open the next turn (refused while a turn is open, paused, after an error without retry, or expired)."""
        return self.commit_validated(
            lambda state: turn_start_event((state.fold.last_turn or 0) + 1, reason))[0]

    def end_turn(self, turn_number: int, reason: str = REASON_COMPLETE, token_summary: dict | None = None) -> dict:
        """Close turn turn_number. Refused when it is not the open turn: of racing closes one wins.

        A turn that completes must have committed the final part of every stream it began (the
        part_start events on disk say which, after a restart too); ending any other way records
        the unfinished streams (unfinished_parts) on the turn_end.
        """
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

        Nothing on disk is changed or removed: the marker is the undo. Refused while a turn is
        open (end it first) and for a sequence past the last one. Returns the marker's record.
        """
        def build(state: LiveState):
            if state.fold.open_turn is not None:
                raise CommitRefused(f"turn {state.fold.open_turn} is open: end it before rewinding")
            if not isinstance(to_sequence, int) or isinstance(to_sequence, bool) \
                    or not 0 <= to_sequence <= state.last_sequence:
                raise CommitRefused(f"to_sequence must be between 0 and {state.last_sequence}, not {to_sequence!r}")
            return rewind_event(to_sequence)

        return self.commit_validated(build)[0]

    def record_handoff(self, reason: str, summary: str) -> dict:
        """Commit a token-budget handoff: it takes a sequence, and no client ever sees it (CLIENT_HIDDEN_TYPES)."""
        return self.commit_validated(lambda state: handoff_event(reason, summary))[0]

    def record_permission(self, call_id: str, tool: str, decision: str, *, by: str = "user",
                          reason: str = "") -> dict:
        """Commit who allowed or denied a tool call, and why (turns.audit lists these decisions)."""
        return self.commit_validated(lambda state: permission_event(call_id, tool, decision, by=by, reason=reason))[0]

    def record_tool_call(self, call_id: str, name: str, arguments: dict | None = None) -> dict:
        """Commit a function_call of the open turn (refused outside a running turn and past the turn's limit)."""
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
        return self.commit_validated(lambda state: tool_result_event(call_id, output, error=error))[0]

    def answer_pending_calls(self, error: str = CRASH_ERROR) -> list[dict]:
        """After a crash: answer every call still waiting for a result with an error result, in one batch."""
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


def _evict_unpinned(keep) -> None:
    """Past CACHE_LIMIT, evict least recently used logs without subscribers or watchdog (holding _CACHE_LOCK).

    The log just asked for (keep) is never the one evicted.
    """
    busy = set()
    while len(_CACHE) > CACHE_LIMIT:
        victim = next((key for key, log in _CACHE.items() if key != keep and key not in busy and not log.pinned),
                      None)
        if victim is None:
            return  # every log is in use: the bound is exceeded until one is released
        if _CACHE[victim]._evict():
            del _CACHE[victim]
        else:
            busy.add(victim)


# --------------------------------------------------------------------------- housekeeping


def archive_expired(project_path) -> list[str]:
    """Move every expired session's file in project_path into project_path/archive; return their ids.

    A session counts as expired when its transcript says so (a turn that timed out, a session
    limit reached: the watchdog records those). A session another writer holds, or with a
    subscriber in this process, is left where it is. Files are moved, never rewritten.
    """
    folder = Path(project_path)
    archive = folder / ARCHIVE_FOLDER
    archived = []
    for path in sorted(folder.glob("*.jsonl")):
        key = (os.path.abspath(folder), path.stem)
        with _CACHE_LOCK:
            cached = _CACHE.get(key)
        if cached is not None:
            if cached.pinned:
                continue
            cached.close()
        transcript = DurableTranscript(path)
        try:
            transcript.acquire_writer()  # nobody else writes while it moves
        except TranscriptLockedError:
            continue
        try:
            if session_status(transcript.read_events()).state != EXPIRED:
                continue
            archive.mkdir(exist_ok=True)
            OsFileIO().fsync_dir(folder)
            os.rename(path, archive / path.name)
            OsFileIO().fsync_dir(archive)
            OsFileIO().fsync_dir(folder)
            archived.append(path.stem)
        finally:
            transcript.close()
    return archived
