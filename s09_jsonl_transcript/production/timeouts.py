"""The design's limits (seed 002, "two levels of timeout"), computed from recorded_at.

    turn_timeout              120 s   the turn ends with turn_end(reason=timeout): the session expires
    tool_timeout               30 s   the call gets an error result; the turn goes on
    max_tool_calls_per_turn    25     the turn is made to complete, and the user is told
    session_idle_timeout      600 s   an idle session expires
    session_max_duration     3600 s   the session is ended (an open turn with it), and the user is told

due_timeouts(fold, now) says which limits have been passed, as the events that record them:
every timeout is written to the transcript, never kept only in memory. Time comes from the
events' recorded_at and from the transcript's clock, which tests and notebooks replace with a
ManualClock, so every result is reproducible. SessionEventLog.check_timeouts (watchdog.py) appends
them in one validated commit.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Iterable

from .turns import (
    EXPIRED,
    IDLE,
    MAX_TOOL_CALLS,
    REASON_COMPLETE,
    REASON_TIMEOUT,
    RUNNING,
    SESSION_IDLE_TIMEOUT,
    SESSION_MAX_DURATION,
    TOOL_TIMEOUT,
    TURN_TIMEOUT,
    SessionFold,
    timeout_event,
    tool_result_event,
    turn_end_event,
)


@dataclass(frozen=True)
class Limits:
    """The design's defaults (seconds, and a number of calls)."""

    turn_timeout: float = 120
    tool_timeout: float = 30
    max_tool_calls_per_turn: int = 25
    session_idle_timeout: float = 600
    session_max_duration: float = 3600


DEFAULT_LIMITS = Limits()


class ManualClock:
    """A clock that stands still until told to move: time in tests and notebooks is chosen, not waited for.

    Pass it as JSONLTranscript(clock=...): recorded_at and "now" then come from the same clock.
    """

    def __init__(self, start: datetime = datetime(2026, 1, 5, 9, 0, tzinfo=timezone.utc)):
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> datetime:
        """Move the clock forward by seconds; return the new time."""
        if seconds < 0:
            raise ValueError("a clock does not go back")
        self.now += timedelta(seconds=seconds)
        return self.now


def notice(text: str) -> dict:
    """The message that tells the user why the agent stopped (written by the agent, so role assistant)."""
    return {"type": "message", "role": "assistant", "content": text}


def _seconds(later: datetime, earlier: datetime) -> float:
    return round((later - earlier).total_seconds(), 3)


def due_timeouts(fold: SessionFold, now: datetime, limits: Limits = DEFAULT_LIMITS,
                 unfinished_parts: Iterable[str] = ()) -> list[dict]:
    """The events that record every limit passed at time now, in the order to append them (one batch).

    Elapsed times come from recorded_at: a turn from its turn_start (time spent paused does not
    count), a tool call from its function_call, idleness from the last event, the session from its
    first event. A limit is passed when the elapsed time is more than it. unfinished_parts (streams
    with no committed final part) go on a turn_end the limits write. An expired session has none.
    """
    parts = list(unfinished_parts)
    if fold.state == EXPIRED or fold.first_at is None:
        return []
    lived = _seconds(now, fold.first_at)
    if lived > limits.session_max_duration:
        events = []
        if fold.open_turn is not None:
            events.append(turn_end_event(fold.open_turn, REASON_TIMEOUT, unfinished_parts=parts))
        return events + [timeout_event(SESSION_MAX_DURATION, limits.session_max_duration, lived),
                         notice(f"This session reached its maximum of {limits.session_max_duration:g} s and "
                                f"was ended. Start a new session to go on.")]
    if fold.state == RUNNING and fold.open_turn is not None and fold.turn_started_at is not None:
        running = _seconds(now, fold.turn_started_at) - fold.paused_seconds
        if running > limits.turn_timeout:
            return [timeout_event(TURN_TIMEOUT, limits.turn_timeout, round(running, 3), turn_number=fold.open_turn),
                    turn_end_event(fold.open_turn, REASON_TIMEOUT, unfinished_parts=parts)]
    if fold.state == RUNNING:
        events, timed_out = [], set()
        for call in fold.pending.values():
            if call.recorded_at is not None and _seconds(now, call.recorded_at) > limits.tool_timeout:
                waited = _seconds(now, call.recorded_at)
                timed_out.add(call.call_id)
                events += [timeout_event(TOOL_TIMEOUT, limits.tool_timeout, waited, turn_number=call.turn_number,
                                         call_id=call.call_id),
                           tool_result_event(call.call_id,
                                             error=f"tool call timed out after {limits.tool_timeout:g} s")]
        waiting = [call for call in fold.pending.values()
                   if call.turn_number == fold.open_turn and call.call_id not in timed_out]
        if fold.open_turn is not None and fold.calls_in_turn >= limits.max_tool_calls_per_turn and not waiting:
            events += [timeout_event(MAX_TOOL_CALLS, limits.max_tool_calls_per_turn, fold.calls_in_turn,
                                     turn_number=fold.open_turn),
                       notice(f"I stopped this turn: it reached {limits.max_tool_calls_per_turn} tool calls."),
                       turn_end_event(fold.open_turn, REASON_COMPLETE, unfinished_parts=parts)]
        return events
    if fold.state == IDLE and fold.last_at is not None:
        idle = _seconds(now, fold.last_at)
        if idle > limits.session_idle_timeout:
            return [timeout_event(SESSION_IDLE_TIMEOUT, limits.session_idle_timeout, idle)]
    return []
