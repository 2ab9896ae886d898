"""SessionEventLog: the live side of one session, its commit core and the parts it is built from.

A live session's event log keeps committed events and ephemeral deltas apart, hands both to
subscribers with cursors, validates commits against the session's state machine and keeps that
state up to date (seed 003's SessionEventLog):

- a **committed** event is appended to the JSONL transcript (write + fsync) and gets its sequence
  there; it is the evidence, and it is what a reconnecting client replays;
- a **delta** is handed to the subscribers in memory only (streams.py).

    log = SessionEventLog.for_session("s1", "sessions/project-a", clock=ManualClock())
    subscription = log.subscribe(from_sequence=1, on_event=print)  # replay from event 1, then live
    stream = log.open_stream("text")
    stream.delta("Hel"); stream.delta("lo")                         # subscribers only
    stream.commit({"type": "message", "role": "assistant", "content": stream.text})
    subscription.release()

This module holds the commit core: opening a log (its state rebuilt from the file: that is crash
recovery), keeping in step with the file, commit / commit_batch (refused when the state machine
would report the events as anomalies), commit_validated(builder), which reads the current state,
checks and appends in one critical section under transcript.lock (seed 003's commitValidated),
and the fan-out to subscribers. The rest of the class comes from one mixin per idea, listed in
the production package's docstring.

Threads: any thread may commit, emit deltas or subscribe. The writer's lock is held only to
append and to put what was committed into each subscriber's own queue; no subscriber code runs
under it.

Rules a real user meets (docs/production.md says why): a log keeps its writer from open to
close, and the for_session cache never takes it away; the log's own control records
(CONTROL_TYPES) are written only by their helpers; fork and rewind cut only between commits, and
a rewind never reopens a turn; a deleted or archived session refuses reads and commits
(SessionGoneError); every public method refuses bad input with LiveInputError before it writes.
"""

from __future__ import annotations

import itertools
import os
import threading
from pathlib import Path
from typing import Callable, Iterable

from ..code import TranscriptCorruptionError
from ..lab import DurableTranscript, checked_event
from . import cache
from .archive import ArchiveMixin
from .cursors import ReadingMixin, committed_end, read_range
from .errors import CommitRefused, LiveInputError, SessionGoneError, SessionMigratedError
from .fork_migrate_delete import ForkMigrateDeleteMixin
from .inputs import (
    CONTROL_TYPES,
    check_callable,
    check_event,
    check_folder,
    check_limits,
    check_session_id,
    check_text,
)
from .migration import MigrationMixin
from .state import LiveState
from .streams import Stream, StreamsMixin
from .subscription import SubscribingMixin, Subscription
from .timeouts import DEFAULT_LIMITS, Limits
from .turn_api import TurnApiMixin
from .turns import TYPE_ARRIVED, SessionFold, SessionStatus, materialize, shown
from .watchdog import WatchdogMixin


def _size(path: Path) -> int | None:
    """The file's size, or None when nothing is at path."""
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return None


class SessionEventLog(ReadingMixin, SubscribingMixin, StreamsMixin, TurnApiMixin, WatchdogMixin,
                      ForkMigrateDeleteMixin, MigrationMixin, ArchiveMixin):
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
        self.transcript, self.limits = transcript, check_limits(limits)
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
        self._forks_named = {}  # fork's target -> its payloads: named by a fork that has not returned yet
        self._source_marked = False  # a migrated copy whose migrate_to saw its source's marker written
        with transcript.lock:
            try:
                self._sync()
            except BaseException:
                transcript.close()  # an open that failed holds no writer (its error may keep this object alive)
                raise

    @classmethod
    def create(cls, path, *, limits: Limits = DEFAULT_LIMITS, **options) -> SessionEventLog:
        """A new session (FileExistsError if its file exists); options go to DurableTranscript."""
        check_limits(limits)
        return cls(DurableTranscript.create(check_folder("path", path), **options), limits=limits)

    @classmethod
    def open(cls, path, *, limits: Limits = DEFAULT_LIMITS, **options) -> SessionEventLog:
        """An existing session (or a new file), its state rebuilt from the file. Not shared: see for_session."""
        check_limits(limits)
        return cls(DurableTranscript(check_folder("path", path), **options), limits=limits)

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
        folder = check_folder("project_path", project_path)
        key = (os.path.abspath(folder), check_session_id(session_id))
        check_limits(limits)

        def make() -> SessionEventLog:
            log = cls(DurableTranscript(folder / f"{session_id}.jsonl", **options), limits=limits)
            log._cache_key = key
            return log

        def reusable(log: SessionEventLog) -> bool:
            return not log.closed and log.transcript.outcome_unknown is None  # else that one appends no more

        return cache.shared(key, reusable, make)

    @staticmethod
    def cached_count() -> int:
        """How many logs the cache keeps alive now (logs callers hold are not counted: they are theirs)."""
        return cache.cached_count()

    @staticmethod
    def close_cached() -> None:
        """Close every log for_session made that is still open, and empty the cache (end of a program or test)."""
        for log in cache.take_all():
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
        if self._cache_key is not None:
            cache.forget(self._cache_key, self)

    @property
    def closed(self) -> bool:
        """True once close() ran: the log appends no more, and for_session makes a new one for its session."""
        return self._closed

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
        """The transcript's clock: what the log calls now (a ManualClock in tests and notebooks)."""
        return self.transcript.clock

    @property
    def last_sequence(self) -> int:
        """The sequence of the last committed event (0 for an empty session)."""
        return self._last_sequence

    @property
    def session_id(self) -> str:
        """The session's id, as its transcript's envelope writes it."""
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
            if self._fold.migrated_to is not None:
                self.transcript.close()  # a migrated copy never writes again (see _hold_writer)
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
        no longer at its path: a new writer would make an empty file there, which the log's state is not.

        A migrated copy holds none: it never writes again, and the copy it moved to must be able to take
        the lock to read, from the device, that it was marked (migration.py)."""
        self._readable()
        if self._fold is not None and not self.transcript.path.exists():
            self._gone = "deleted or moved away by something other than this log"
            raise SessionGoneError(f"session {self.session_id} was {self._gone}")
        if self._fold is not None and self._fold.migrated_to is not None:
            self.transcript.close()
            return
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
        """Refuse events the state machine would report as anomalies (or any, once migrated, or while this
        copy waits for its migration's source, but its own session_arrived)."""
        if self._fold.migrated_to is not None:
            raise SessionMigratedError(f"session {self.session_id} migrated to {self._fold.migrated_to}: "
                                       f"commit there")
        if self._fold.migrating_from is not None and [event["type"] for event in events] != [TYPE_ARRIVED]:
            raise SessionMigratedError(f"session {self.session_id} is still arriving from {self._fold.migrating_from}: "
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
        if self._fold.migrating_from is not None and [event.get("type") for event in events] != [TYPE_ARRIVED]:
            self.arrive()  # a copy that waits takes commits once its source is marked (migration.py)
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
                    subscription.offer(item)

    def _unregister(self, subscription: Subscription) -> None:
        with self._fanout:
            if subscription in self._subscribers:
                self._subscribers.remove(subscription)

    # -- committing ------------------------------------------------------------------

    def commit(self, event: dict) -> dict:
        """Append one event durably, then hand it to the subscribers; returns the record.

        Refused (CommitRefused, nothing written) when the state machine would report it as an
        anomaly, as on the validated path: a turn_start pairs with a turn_end. The log's own
        records (CONTROL_TYPES: rewind, session_migrated, session_forked, part_start, and a migrated
        copy's session_migrating and session_arrived) are refused (LiveInputError): only their
        helpers write them.
        """
        check_event(event)
        with self.transcript.lock:
            return self._append([event])[0]

    def commit_batch(self, events: Iterable[dict]) -> list[dict]:
        """Append events as one commit (all or nothing), then hand them to the subscribers; checked as commit."""
        if isinstance(events, (dict, str, bytes)) or not isinstance(events, Iterable):
            raise LiveInputError(f"commit_batch takes a list of events, not {type(events).__name__}")
        events = [check_event(event) for event in events]
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
        check_callable("builder", builder)
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
                    check_event(event)
            if not events:
                return []
            return self._append(events)

    def durable_commit(self, event_id: str) -> list[dict] | None:
        """After TranscriptOutcomeUnknownError, on a new log (for_session gives one): the records of the
        commit that ends at event_id once they are on the device, or None when that commit is not in
        the file (commit it again). Found means durable (lab: DurableTranscript.durable_commit)."""
        check_text("event_id", event_id)
        with self.transcript.lock:
            self._fresh()
            return self.transcript.durable_commit(event_id)

    def _state(self) -> LiveState:
        return LiveState(self._fold, self._last_sequence, self.open_parts(), self.clock())
