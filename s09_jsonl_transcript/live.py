"""A live session's event log: committed events and ephemeral deltas, subscribers with cursors,
validated commits, and the session state machine kept up to date (seed 003's SessionEventLog).

Two kinds of event, as the production design separates them:

- a **committed** event is appended to the JSONL transcript (write + fsync) and gets its
  sequence there; it is the evidence, and it is what a reconnecting client replays;
- a **delta** (a piece of streamed text, of reasoning, of tool progress) is handed to the
  subscribers in memory only: it has no sequence, is never written and is never replayed. The
  final part of a stream is committed as an ordinary event that names the stream's part_id.
  After a crash the deltas are gone and every committed event is there.

    log = SessionEventLog.create("sessions/s1.jsonl", clock=ManualClock())
    subscription = log.subscribe(from_sequence=0, on_event=print)   # replay, then live
    stream = log.open_stream("text")
    stream.delta("Hel"); stream.delta("lo")                         # subscribers only
    stream.commit({"type": "message", "role": "assistant", "content": stream.text})
    subscription.release()

Writing: commit / commit_batch append as the transcript does. commit_validated(builder) reads
the current state, checks and appends in one critical section under transcript.lock (seed 003's
commitValidated): of two racing attempts to close one turn exactly one wins. The session's
helpers (start_turn, end_turn, pause, resume, retry, record_tool_call, record_tool_result,
answer_pending_calls, check_timeouts) are validated commits.

Reading: read_from(sequence) returns the events after a cursor; page_back(count, before) pages
backwards through older history ("if the user scrolls back, read more on demand"). Both read what
they return plus about one block, through DurableTranscript.read_recent, like replay.

Threads: any thread may commit, emit deltas or subscribe. The writer's lock is held only to
append and to put what was committed into each subscriber's own queue; no subscriber code runs
under it. A subscriber given on_event is called on its own delivery thread (named
"s09-subscriber-N"), one item at a time and in order; a slow or failing callback delays or ends
only its own subscription. Without on_event, the consumer pulls with poll() or get().
"""

from __future__ import annotations

import itertools
import os
import threading
from collections import deque
from dataclasses import dataclass
from typing import Callable, Iterable

from .code import TYPE_FUNCTION_CALL, TranscriptCorruptionError
from .lab import DurableTranscript
from .timeouts import DEFAULT_LIMITS, Limits, due_timeouts
from .turns import (
    EXPIRED,
    REASON_COMPLETE,
    RUNNING,
    START_USER,
    TYPE_PAUSE,
    TYPE_RESUME,
    TYPE_RETRY,
    SessionFold,
    SessionStatus,
    command_event,
    tool_result_event,
    turn_end_event,
    turn_start_event,
)

CHANNELS = ("text", "reasoning", "tool_progress")  # what a delta carries a piece of
CRASH_ERROR = "the runtime stopped before this call returned a result"


class CommitRefused(RuntimeError):
    """A validated commit's check failed against the current state: nothing was written."""


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


def committed_end(transcript: DurableTranscript) -> tuple[int, int]:
    """(last committed sequence, byte offset where it ends), read from the tail (about one block)."""
    tail = transcript.read_recent(1)
    if not tail.events:
        return 0, 0
    end = tail.offsets[-1] + len(tail.last_line) + (0 if tail.last_line_unterminated else 1)
    return tail.last_sequence, end


def read_range(transcript: DurableTranscript, after: int, upto: int, end: int) -> list[dict]:
    """The committed events after sequence `after` up to `upto`, which ends at byte `end`; validated.

    Reads what it returns plus about one block (read_recent before `end`), however much the file
    has grown past `end` meanwhile. Fails closed when the file does not hold exactly those events.
    """
    if upto <= after:
        return []
    events = transcript.read_recent(upto - after, before=end).events
    if [event["sequence"] for event in events] != list(range(after + 1, upto + 1)):
        found = f"{events[0]['sequence']}..{events[-1]['sequence']}" if events else "nothing"
        raise TranscriptCorruptionError(transcript.path, None, end,
                                        f"expected sequences {after + 1}..{upto} before byte {end}, found {found}")
    return events


def read_from(transcript: DurableTranscript, sequence: int) -> list[dict]:
    """Every committed event after cursor `sequence`, oldest first, validated.

    For any reader (no writer needed): one tail read finds the last committed event, a second
    reads the events after the cursor up to it.
    """
    after = _check_cursor(sequence)
    upto, end = committed_end(transcript)
    if after > upto:
        raise ValueError(f"cursor {after} is ahead of the transcript's last sequence {upto}")
    return read_range(transcript, after, upto, end)


def page_back(transcript: DurableTranscript, count: int, before: int | None = None) -> Page:
    """The count events in front of byte cursor `before` (the newest when None), oldest first.

    Pass the page's cursor as `before` to read the page in front of it.
    """
    scanned = transcript.read_recent(count, before=before)
    return Page(scanned.events, scanned.offsets[0] if scanned.events else None)


# --------------------------------------------------------------------------- subscriptions


class Subscription:
    """One subscriber's view: the committed events after its cursor, then live events, in order.

    cursor is the sequence of the last committed event handed to the consumer: reconnect with
    log.subscribe(from_sequence=cursor) and nothing is missed or repeated.
    """

    def __init__(self, log: SessionEventLog, from_sequence: int, on_event: Callable | None, number: int):
        self.log, self.on_event, self.name = log, on_event, f"s09-subscriber-{number}"
        self.cursor = self.queued_upto = from_sequence
        self.duplicates_dropped = 0  # committed events seen twice at the hand-over (replay and live)
        self.released = False
        self.error: BaseException | None = None  # what ended a callback subscription, if anything
        self._cond = threading.Condition()
        self._queue, self._buffer, self._busy = deque(), [], False  # _buffer: live items held while replaying
        self._thread = None

    def __repr__(self):
        return f"<Subscription {self.name} cursor={self.cursor}{' released' if self.released else ''}>"

    # -- called by the log ----------------------------------------------------------

    def _offer(self, item) -> None:
        """Take one live item (under the log's fan-out lock): queue it, or hold it while replay runs."""
        with self._cond:
            if self.released:
                return
            if self._buffer is not None:
                self._buffer.append(item)
            else:
                self._enqueue(item)

    def _enqueue(self, item) -> None:  # holding _cond
        if not is_delta(item):
            if item["sequence"] <= self.queued_upto:  # replayed already: the hand-over de-duplicates
                self.duplicates_dropped += 1
                return
            self.queued_upto = item["sequence"]
        self._queue.append(item)
        self._cond.notify_all()

    def _go_live(self, replayed: list) -> None:
        """Queue the replayed events, then the live items held meanwhile; from now on queue directly."""
        with self._cond:
            for item in [*replayed, *self._buffer]:
                self._enqueue(item)
            self._buffer = None
        if self.on_event is not None:
            self._thread = threading.Thread(target=self._deliver, name=self.name, daemon=True)
            self._thread.start()

    def _deliver(self) -> None:
        """The delivery thread: hand items to on_event one at a time until released."""
        while True:
            with self._cond:
                while not self._queue and not self.released:
                    self._cond.wait()
                if self.released:
                    return
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
                    self.cursor = item["sequence"]
                self._cond.notify_all()

    # -- for the consumer ------------------------------------------------------------

    def poll(self) -> list:
        """Everything queued for this subscriber now, in order (pull mode: no on_event)."""
        self._pull_only()
        with self._cond:
            items = list(self._queue)
            self._queue.clear()
            self._advance(items)
        return items

    def get(self, timeout: float | None = None):
        """The next item, waiting up to timeout seconds; None if nothing came or the subscription ended."""
        self._pull_only()
        with self._cond:
            if not self._cond.wait_for(lambda: self._queue or self.released, timeout) or not self._queue:
                return None
            item = self._queue.popleft()
            self._advance([item])
        return item

    def wait_delivered(self, timeout: float = 10.0) -> bool:
        """Wait until every item queued so far was handed to on_event (callback mode); False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: self.released or (not self._queue and not self._busy), timeout)

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
                self.cursor = item["sequence"]


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


class SessionEventLog:
    """The live side of one session: commits, deltas, subscribers, validated commits, the state machine.

    It owns its transcript's writer (taken at once) and keeps, updated at each commit, the
    state folded from every committed event (turns.SessionFold), which it rebuilds by reading the
    whole file when it opens: that is crash recovery. Append through the log, not the transcript.
    """

    def __init__(self, transcript: DurableTranscript, *, limits: Limits = DEFAULT_LIMITS):
        self.transcript, self.limits = transcript, limits
        self._fanout = threading.Lock()  # taken after transcript.lock, never before it
        self._subscribers: list[Subscription] = []
        self._streams: dict[str, Stream] = {}
        self._numbers, self._parts = itertools.count(1), itertools.count(1)
        self._fold, self._last_sequence, self._end, self._stale = None, 0, 0, True
        with transcript.lock:
            self._sync()

    @classmethod
    def create(cls, path, *, limits: Limits = DEFAULT_LIMITS, **options) -> SessionEventLog:
        """A new session (FileExistsError if its file exists); options go to DurableTranscript."""
        return cls(DurableTranscript.create(path, **options), limits=limits)

    @classmethod
    def open(cls, path, *, limits: Limits = DEFAULT_LIMITS, **options) -> SessionEventLog:
        """An existing session (or a new file), its state rebuilt from the file."""
        return cls(DurableTranscript(path, **options), limits=limits)

    def __repr__(self):
        return f"SessionEventLog({self.transcript.path.name!r}, last_sequence={self._last_sequence})"

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def close(self) -> None:
        """Release every subscription and the transcript's writer."""
        with self._fanout:
            subscribers = list(self._subscribers)
        for subscription in subscribers:
            subscription.release()
        self.transcript.close()

    @property
    def clock(self):
        return self.transcript.clock

    @property
    def last_sequence(self) -> int:
        return self._last_sequence

    def status(self) -> SessionStatus:
        """The session's state, from every committed event."""
        with self.transcript.lock:
            return self._fold.status()

    def open_parts(self) -> dict:
        """part_id -> turn of every stream begun and not yet committed."""
        with self.transcript.lock:
            return {part: stream.turn_number for part, stream in self._streams.items()}

    # -- keeping in step with the file -----------------------------------------------

    def _sync(self) -> None:
        """Hold the writer and make sure the fold has every committed event (under transcript.lock).

        At open, and after an append failed (the transcript then dropped its writer, and another
        process could have written meanwhile), it reads: the whole file the first time, after that
        only the events it is missing, which it also hands to the subscribers.
        """
        self.transcript.acquire_writer()
        if self._fold is None:
            fold = SessionFold()
            self.transcript.scan(on_record=fold.add)
            self._fold = fold
            self._last_sequence, self._end = committed_end(self.transcript)
        elif self._stale:
            last, end = committed_end(self.transcript)
            missing = read_range(self.transcript, self._last_sequence, last, end)
            self._fold.add_all(missing)
            self._last_sequence, self._end = last, end
            self._publish(missing)
        self._stale = False

    def _append(self, events: list) -> list[dict]:
        """Append (one event, or a batch as one commit), fold and fan out. Under transcript.lock."""
        if self._stale:
            self._sync()
        try:
            records = [self.transcript.append(events[0])] if len(events) == 1 else self.transcript.append_batch(events)
        except BaseException:
            self._stale = True  # the transcript closed its writer: re-read before trusting the state
            raise
        self._fold.add_all(records)
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
        """Append one event durably, then hand it to the subscribers; returns the record."""
        with self.transcript.lock:
            return self._append([event])[0]

    def commit_batch(self, events: Iterable[dict]) -> list[dict]:
        """Append events as one commit (all or nothing), then hand them to the subscribers."""
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
            self.transcript.acquire_writer()
            if committed_end(self.transcript)[0] != self._last_sequence:
                self._stale = True
            if self._stale:
                self._sync()
            state = LiveState(self._fold, self._last_sequence, self.open_parts(), self.clock())
            built = builder(state)
            events = [] if built is None else [built] if isinstance(built, dict) else list(built)
            if not events:
                return []
            problems = self._fold.copy().add_all(events)
            if problems:
                raise CommitRefused("; ".join(problem.message for problem in problems))
            return self._append(events)

    # -- deltas ----------------------------------------------------------------------

    def open_stream(self, channel: str = "text", part_id: str | None = None) -> Stream:
        """Begin streaming one part (text, reasoning or tool progress) of the open turn."""
        if channel not in CHANNELS:
            raise ValueError(f"channel must be one of {', '.join(CHANNELS)}, not {channel!r}")
        with self.transcript.lock:
            part_id = part_id or f"part-{next(self._parts)}"
            if part_id in self._streams:
                raise ValueError(f"stream {part_id} is already open")
            stream = Stream(self, part_id, channel, self._fold.open_turn)
            self._streams[part_id] = stream
        return stream

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
        return [part for part, stream in self._streams.items() if stream.turn_number in (turn_number, None)]

    def _close_streams(self, parts) -> None:
        for part in parts:
            stream = self._streams.pop(part, None)
            if stream is not None:
                stream.outcome = "unfinished"

    # -- subscribing and reading -----------------------------------------------------

    def subscribe(self, from_sequence: int = 0, on_event: Callable | None = None) -> Subscription:
        """Committed events after from_sequence, then live events (committed and deltas), in order.

        The hand-over has no gap and no duplicate: under transcript.lock the subscriber is
        registered and the last committed sequence noted, so every later commit reaches its queue;
        the events up to that sequence are then read from the file outside the lock, and queued
        first; live events held meanwhile follow, de-duplicated by sequence. (Replaying first and
        registering after would miss what is committed in between; registering first and replaying
        everything would repeat it.) on_event is called on the subscription's own thread.
        """
        after = _check_cursor(from_sequence)
        subscription = Subscription(self, after, on_event, next(self._numbers))
        with self.transcript.lock:
            if self._stale:
                self._sync()
            upto, end = self._last_sequence, self._end
            if after > upto:
                raise ValueError(f"cursor {after} is ahead of the log's last sequence {upto}")
            with self._fanout:
                self._subscribers.append(subscription)
        try:
            replayed = read_range(self.transcript, after, upto, end)
        except BaseException:
            subscription.release()
            raise
        subscription._go_live(replayed)
        return subscription

    def read_from(self, sequence: int) -> list[dict]:
        """Every committed event after cursor sequence, validated; reads those plus about one block."""
        after = _check_cursor(sequence)
        with self.transcript.lock:
            upto, end = self._last_sequence, self._end
        if after > upto:
            raise ValueError(f"cursor {after} is ahead of the log's last sequence {upto}")
        return read_range(self.transcript, after, upto, end)

    def page_back(self, count: int, before: int | None = None) -> Page:
        """The count committed events in front of byte cursor before (the newest when None)."""
        if before is None:
            with self.transcript.lock:
                before = self._end
        return page_back(self.transcript, count, before)

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

        A turn that completes must have committed the final part of every stream it began;
        ending any other way records the unfinished streams (unfinished_parts) on the turn_end.
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
