"""Subscriptions: one subscriber's committed events from a cursor, then live events, in order.

    subscription = log.subscribe(from_sequence=1, on_event=print)  # replay from event 1, then live
    ...
    subscription.release()

Threads: a subscriber given on_event is called on its own delivery thread (named
"s09-subscriber-N"), one item at a time and in order; a slow or failing callback delays or ends
only its own subscription. Without on_event, the consumer pulls with poll() or get(). The log's
lock is held only to put what was committed into each subscriber's own queue; no subscriber code
runs under it. A subscriber's queue holds at most max_queued items, always (the drop-and-resync
rule): when it is full, live items are dropped, and once the consumer has drained the queue the
missing committed events are read back from the file, a page of at most max_queued at a time,
before live delivery goes on; a replay from an old cursor is paged the same way. Committed events
are never lost that way; dropped deltas are (they are ephemeral: the committed final part has the
text).

Subscription is given what it needs from the log (a paging function and an unregister callback),
never the log itself; SubscribingMixin is the log's side: subscribe, and the paging it hands out.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Callable

from .cursors import is_client_visible, lines_back, lines_forward, read_range
from .errors import LiveInputError
from .inputs import check_callable, check_cursor, check_seconds, check_whole
from .streams import is_delta

DEFAULT_MAX_QUEUED = 1000  # live items a subscriber's queue holds before the drop-and-resync rule applies
DELIVERY_WAIT = 120.0  # seconds Subscription.wait_delivered waits by default: long enough for a loaded machine


class Subscription:
    """One subscriber's view: the committed events from its first sequence on, then live events, in order.

    delivered_upto is the sequence of the last committed event handed to the consumer;
    next_sequence (one more) is where to reconnect: log.subscribe(from_sequence=s.next_sequence)
    misses nothing and repeats nothing. The queue holds at most max_queued items: past that,
    live items are dropped and, once the queue is drained, the committed events missed are read
    back from the file a page at a time (resyncs counts how often; deltas_dropped the deltas lost
    meanwhile). The first replay is paged the same way.

    It knows nothing of the log but two callbacks the log gives it: page(first, room, offset,
    hold_live) reads one page of its gap from the file, (events, last sequence read, byte where they
    end, whether it is the last page), and calls hold_live() under the log's lock when it picks the
    last page; unregister(subscription) stops the log's fan-out to it. The log hands it live items
    with offer() and starts it with start().
    """

    def __init__(self, first: int, on_event: Callable | None, number: int, max_queued: int = DEFAULT_MAX_QUEUED,
                 *, page: Callable[[int, int, int | None, Callable[[], None]], tuple],
                 unregister: Callable[[Subscription], None]):
        check_whole("max_queued", max_queued, least=1)
        check_callable("on_event", on_event, optional=True)
        self.on_event, self.name, self.max_queued = on_event, f"s09-subscriber-{number}", max_queued
        self._page, self._unregister = page, unregister
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

    # -- called by the log that made it --------------------------------------------

    def offer(self, item) -> None:
        """Take one live item (the log calls this under its fan-out lock): queue it, or hold it while the last
        page is read.

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
        """Called back by page, under the log's lock, before the last page is read: hold live items from now on."""
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
                self._take_page(*self._page(first, self.max_queued, offset, self._hold_live))
            except BaseException as error:  # noqa: BLE001 - the file cannot be read: end this subscription only
                with self._cond:
                    self._buffer, self._resyncing = None, False
                self.error = error
                self.release()
                if raising:
                    raise
                return

    def start(self) -> None:
        """Read the first page (errors raise to subscribe); then start the delivery thread in callback mode.

        The log calls this once, after it registered the subscription.
        """
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
                self._unregister(self)
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
        check_seconds("timeout", timeout, optional=True)
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
        check_seconds("timeout", timeout, optional=True)
        with self._cond:
            return self._cond.wait_for(
                lambda: self.released or not (self._queue or self._busy or self._behind or self._resyncing), timeout)

    def release(self) -> None:
        """End the subscription: nothing more is queued or delivered after this returns."""
        self._unregister(self)
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


class SubscribingMixin:
    """SessionEventLog's side of subscriptions: subscribe, and the paging each subscription is given.

    Registers subscriptions in _subscribers under _fanout (taken after transcript.lock, never
    before it); reads _last_sequence and _end, where the last commit ends, under transcript.lock.
    """

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
        first = check_cursor(after_sequence) + 1 if after_sequence is not None else \
            max(check_cursor(1 if from_sequence is None else from_sequence), 1)
        subscription = Subscription(first, on_event, next(self._numbers), max_queued,
                                    page=self._page_for, unregister=self._unregister)
        with self.transcript.lock:
            self._readable()
            if self._stale:
                self._sync()
            if first > self._last_sequence + 1:
                raise LiveInputError(f"cursor {first} is past the log's next sequence {self._last_sequence + 1}")
            with self._fanout:
                self._subscribers.append(subscription)
        subscription.start()
        return subscription

    def _page_for(self, first: int, room: int, offset: int | None, hold_live: Callable[[], None]) -> tuple:
        """One page of a subscriber's gap: (events, last sequence read, byte where it ends, whether it is the last).

        At most room events from sequence first on, read from the file (hidden included), never
        the whole gap at once. The last page is chosen under transcript.lock, and hold_live() is
        called there (the subscriber holds the live items from then on), so the hand-over has no
        gap. offset is where event first starts, when the subscriber knows it; else the lines in
        front of the end are counted.
        """
        with self.transcript.lock:
            self._readable()
            if self._stale:
                self._sync()
            last, end = self._last_sequence, self._end
            final = first + room - 1 >= last
            if final:
                hold_live()
        if final:
            return read_range(self.transcript, first, last, end), max(last, first - 1), end, True
        page_last = first + room - 1
        start = offset if offset is not None else lines_back(self.transcript.path, end, last - first + 1)
        page_end = lines_forward(self.transcript.path, start, room)
        return read_range(self.transcript, first, page_last, page_end), page_last, page_end, False
