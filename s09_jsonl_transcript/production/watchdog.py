"""The timeout watchdog: a thread that records the limits that pass while nobody is looking.

Whoever owns the log starts it (start_watchdog) and stops it (stop_watchdog, or close); each round
is one check_timeouts, which tests and notebooks also call by hand. The limits and what records
them are in timeouts.py; the log's clock says what time it is.
"""

from __future__ import annotations

import threading

from ..code import TranscriptCorruptionError, TranscriptLockedError
from .errors import CommitRefused
from .inputs import check_seconds
from .state import LiveState
from .timeouts import due_timeouts
from .turns import EXPIRED

DEFAULT_WATCHDOG_INTERVAL = 1.0  # seconds between two rounds of the timeout watchdog


class WatchdogMixin:
    """SessionEventLog's watchdog and its one round, check_timeouts.

    The thread and its stop event are _watchdog and _watchdog_stop, read and set under _fanout
    (pinned reads them there too); watchdog_records and watchdog_error say what its rounds did.
    """

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

    def start_watchdog(self, interval: float = DEFAULT_WATCHDOG_INTERVAL) -> None:
        """Start a thread that runs check_timeouts every interval seconds until stop_watchdog (or close).

        Whoever owns the log starts and stops it; the log's clock says what time it is. A round
        that fails (the writer taken elsewhere, a disk error) is kept in watchdog_error and the
        next round tries again. It ends by itself once the session has expired.
        """
        check_seconds("interval", interval)
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
        """True while the watchdog's thread runs (it stops by itself once the session expired or migrated)."""
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
