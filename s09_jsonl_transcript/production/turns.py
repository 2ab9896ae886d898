"""The turn lifecycle as the session-as-WAL design draws it: markers, commands, the state machine, an audit.

A turn is one round of the agent loop: a request, the model's tool calls and answers, until the
model is done or something stops it. Ordinary events mark it and steer it:

    {"type": "turn_start", "turn_number": 3, "reason": "user_initiated"}
    {"type": "turn_end", "turn_number": 3, "reason": "complete",
     "token_summary": {"total_input": 1200, "total_output": 340, "total_cost": 0.0062}}
    {"type": "pause_command"}   {"type": "resume_command"}   {"type": "retry_command"}
    {"type": "timeout", "limit": "turn_timeout", "allowed": 120, "observed": 121.0, "turn_number": 3}

They are appended like any other event; replay keeps them as evidence and makes no chat message
of them. SessionFold folds a transcript's events, one at a time and by the table TRANSITIONS, into
the session's state (idle, running, expired, error, paused) and the decision a runtime takes after
a crash; session_status does it for a list. Events the table has no row for are reported as
anomalies and change nothing. audit adds up tokens and cost and lists which tool was called when.
A transcript without any turn marker or command is read as the lesson's plain log (idle).

Where the kit departs from the designs, and why, is design prose: it lives in docs/production.md, and
DEPARTURES reads that page's table when asked (departures.read_departures).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Iterable

from ..code import (
    EVENT_TYPES,
    SCHEMA_VERSION,
    TYPE_AI_TITLE,
    TYPE_FUNCTION_CALL,
    TYPE_FUNCTION_CALL_RESULT,
    TYPE_MESSAGE,
)
from ..lab import INT_LIMIT, DurableTranscript
from .departures import read_departures

TYPE_TURN_START = "turn_start"
TYPE_TURN_END = "turn_end"
TYPE_PAUSE = "pause_command"
TYPE_RESUME = "resume_command"
TYPE_RETRY = "retry_command"
TYPE_TIMEOUT = "timeout"
COMMAND_TYPES = (TYPE_PAUSE, TYPE_RESUME, TYPE_RETRY)
# Events of the live log (live.py and the modules it gathers): what they mean is said where they are written.
TYPE_PART_START = "part_start"  # a stream of the open turn began; its final part carries the same part_id
TYPE_REWIND = "rewind"  # every projection drops the events after to_sequence that came before this marker
TYPE_HANDOFF = "handoff"  # a token-budget handoff: committed (it takes a sequence), hidden from clients
TYPE_PERMISSION = "permission_decision"  # who allowed or denied a tool call, and why (the audit lists them)
TYPE_MIGRATED = "session_migrated"  # this copy of the session moved to another harness: no more commits here
TYPE_FORKED = "session_forked"  # the last event of a fork: which session and sequence it was copied from
TYPE_MIGRATING = "session_migrating"  # a migrated copy waits here: its source takes the commits until it is marked
TYPE_ARRIVED = "session_arrived"  # the source was marked migrated here: from this event on, this copy takes them
LIVE_TYPES = (TYPE_PART_START, TYPE_REWIND, TYPE_HANDOFF, TYPE_PERMISSION, TYPE_MIGRATED, TYPE_FORKED, TYPE_MIGRATING,
              TYPE_ARRIVED)
PERMISSION_DECISIONS = ("allow", "deny")
# Every event type the kit understands: the lesson's (code.EVENT_TYPES), the turn markers and commands, the
# live log's. A recovery plan treats any other type as an effect it cannot rule out (production.recovery_plan).
KNOWN_EVENT_TYPES = frozenset({*EVENT_TYPES, TYPE_TURN_START, TYPE_TURN_END, TYPE_TIMEOUT, *COMMAND_TYPES, *LIVE_TYPES})

# Why a turn started (the "reason" of turn_start).
START_USER = "user_initiated"  # the user sent a message (the design's example)
START_RETRY = "retry"  # after a retry_command
START_CONTINUATION = "continuation"  # the runtime goes on by itself (after compaction, say)
START_REASONS = (START_USER, START_RETRY, START_CONTINUATION)

# Why a turn ended (the "reason" of turn_end): the design's five.
REASON_COMPLETE = "complete"
REASON_TIMEOUT = "timeout"
REASON_ERROR = "error"
REASON_USER_INTERRUPT = "user_interrupt"
REASON_COMPACTION_TRIGGER = "compaction_trigger"
END_REASONS = (REASON_COMPLETE, REASON_TIMEOUT, REASON_ERROR, REASON_USER_INTERRUPT, REASON_COMPACTION_TRIGGER)

# The design's limits, by the names of its parameters (their defaults are in timeouts.py).
TURN_TIMEOUT = "turn_timeout"
TOOL_TIMEOUT = "tool_timeout"
MAX_TOOL_CALLS = "max_tool_calls_per_turn"
SESSION_IDLE_TIMEOUT = "session_idle_timeout"
SESSION_MAX_DURATION = "session_max_duration"
LIMITS = (TURN_TIMEOUT, TOOL_TIMEOUT, MAX_TOOL_CALLS, SESSION_IDLE_TIMEOUT, SESSION_MAX_DURATION)
SESSION_LIMITS = (SESSION_IDLE_TIMEOUT, SESSION_MAX_DURATION)  # these expire the session themselves

# token_summary as the design writes it, and as earlier versions of the kit wrote it (still read).
TOKEN_SUMMARY_FIELDS = ("total_input", "total_output", "total_cost")
KIT_TOKEN_SUMMARY_FIELDS = ("input_tokens", "output_tokens", "cost_usd")

# The session's states.
IDLE = "idle"  # no run: the last turn ended, or none has started
RUNNING = "running"  # a run was started (by a user message or a turn_start) and has not ended
EXPIRED = "expired"  # a turn timed out or a session limit was reached: terminal, start a new session
ERROR = "error"  # the last turn failed: a retry_command runs it again
PAUSED = "paused"  # a pause_command stopped the run: a resume_command goes on
STATES = (IDLE, RUNNING, EXPIRED, ERROR, PAUSED)

# What happens: the trigger an event is, for the table below.
USER_MESSAGE = "user_message"  # a message event with role "user"


def end_trigger(reason: str) -> str:
    """The trigger a turn_end with this reason is: turn_end(complete), turn_end(timeout), ..."""
    return f"{TYPE_TURN_END}({reason})"


def timeout_trigger(limit: str) -> str:
    """The trigger a session-level timeout event is: timeout(session_idle_timeout), ..."""
    return f"{TYPE_TIMEOUT}({limit})"


# The transition table: (state, trigger) -> next state. Nothing else moves the state: an event
# whose trigger has no row in its state is reported as an anomaly and changes nothing. An expired
# session stays expired whatever comes (the design's "any event"); events that would start work
# there are reported.
TRANSITIONS = {
    (IDLE, USER_MESSAGE): RUNNING,
    (IDLE, TYPE_TURN_START): RUNNING,
    (RUNNING, USER_MESSAGE): RUNNING,
    (RUNNING, TYPE_TURN_START): RUNNING,  # opens the run's turn; one already open is reported
    (RUNNING, end_trigger(REASON_COMPLETE)): IDLE,
    (RUNNING, end_trigger(REASON_TIMEOUT)): EXPIRED,
    (RUNNING, end_trigger(REASON_ERROR)): ERROR,
    (RUNNING, end_trigger(REASON_USER_INTERRUPT)): IDLE,
    (RUNNING, end_trigger(REASON_COMPACTION_TRIGGER)): IDLE,
    (RUNNING, TYPE_PAUSE): PAUSED,
    (PAUSED, TYPE_RESUME): RUNNING,
    (ERROR, TYPE_RETRY): RUNNING,
    (IDLE, timeout_trigger(SESSION_IDLE_TIMEOUT)): EXPIRED,
    **{(state, timeout_trigger(SESSION_MAX_DURATION)): EXPIRED for state in (IDLE, RUNNING, PAUSED, ERROR)},
}
# Triggers that start or steer work: an expired session refuses them (a function_call counts too).
WORK_TRIGGERS = (USER_MESSAGE, TYPE_TURN_START, TYPE_PAUSE, TYPE_RESUME, TYPE_RETRY)

# What a fresh process does after a crash.
NOTHING_TO_DO = "nothing to do"
WAIT_FOR_USER = "wait for the user"
COMPACT_THEN_CONTINUE = "compact the context, then continue with the next turn"
RERUN = "resume the unfinished turn"
WAIT_FOR_RESUME = "wait for a resume_command"
RETRY_OR_ABANDON = "offer retry or abandon"
NEW_SESSION = "start a new session (expired is terminal)"
NO_TURN_MARKERS = "no turn markers: replay as usual"

DECISION_BY_STATE = {RUNNING: RERUN, PAUSED: WAIT_FOR_RESUME, ERROR: RETRY_OR_ABANDON, EXPIRED: NEW_SESSION}
DECISION_AFTER_IDLE = {  # idle: by how the last turn ended
    None: NOTHING_TO_DO,
    REASON_COMPLETE: NOTHING_TO_DO,
    REASON_USER_INTERRUPT: WAIT_FOR_USER,
    REASON_COMPACTION_TRIGGER: COMPACT_THEN_CONTINUE,
}

# --------------------------------------------------------------------------- rewind markers


def materialize(events: Iterable[dict]) -> list[dict]:
    """The events every projection reads: each rewind marker applied, in file order, then left out.

    A rewind marker {"type": "rewind", "to_sequence": N} drops every event in front of it whose
    sequence is greater than N; events after the marker stay. Nothing on disk changes: the
    marker is how an append-only log undoes. Replay, the state machine, the audit and the index
    all read this list, never the raw one. An event without a sequence counts by its position.
    """
    kept = []
    for position, event in enumerate(events, 1):
        if event.get("type") == TYPE_REWIND and _whole(event.get("to_sequence")):
            target = event["to_sequence"]
            kept = [earlier for earlier in kept if earlier.get("sequence", 0) <= target]
        else:
            kept.append(event if "sequence" in event else {**event, "sequence": position})
    return kept


def is_understood(event: dict) -> bool:
    """True when the kit knows what this event means: a known type in a schema version it reads."""
    return event.get("type") in KNOWN_EVENT_TYPES and event.get("schema_version", SCHEMA_VERSION) <= SCHEMA_VERSION


# --------------------------------------------------------------------------- writing the events


def _check_turn_number(turn_number) -> int:
    if not _whole(turn_number) or turn_number < 1:
        raise ValueError(f"turn_number must be a whole number >= 1, not {shown(turn_number)}")
    return turn_number


def _whole(value) -> bool:
    """A whole number >= 0 that json can write and read back (fewer than 4,301 digits: lab.INT_LIMIT)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < INT_LIMIT


def shown(value) -> str:
    """repr(value), or a description when Python refuses to print one of its integers (over 4,300 digits)."""
    try:
        return repr(value)
    except ValueError:
        return "a value with an integer of over 4300 digits"


def _amount(value) -> bool:
    if isinstance(value, int) and not isinstance(value, bool):
        return _whole(value)  # math.isfinite would overflow on an integer too long for a float
    return isinstance(value, float) and math.isfinite(value) and value >= 0


def read_token_summary(summary) -> tuple[int, int, float]:
    """(input tokens, output tokens, cost) of a token_summary in the design's keys or the kit's older ones.

    Raises ValueError for anything else: an audit must never count a summary it cannot read as 0.
    """
    if not isinstance(summary, dict):
        raise ValueError(f"token_summary must be a dict, not {type(summary).__name__}")
    for names in (TOKEN_SUMMARY_FIELDS, KIT_TOKEN_SUMMARY_FIELDS):
        if set(summary) == set(names):
            tokens_in, tokens_out, cost = (summary[name] for name in names)
            if not (_whole(tokens_in) and _whole(tokens_out)):
                raise ValueError(f"token_summary token counts must be whole numbers >= 0: {shown(summary)}")
            if not _amount(cost):
                raise ValueError(f"token_summary cost must be a finite number >= 0: {shown(summary)}")
            return tokens_in, tokens_out, cost
    raise ValueError(f"token_summary must have exactly {', '.join(TOKEN_SUMMARY_FIELDS)} "
                     f"(or the older {', '.join(KIT_TOKEN_SUMMARY_FIELDS)}), not {sorted(summary)}")


def token_summary(total_input: int, total_output: int, total_cost: float) -> dict:
    """A token_summary in the design's keys."""
    summary = dict(zip(TOKEN_SUMMARY_FIELDS, (total_input, total_output, total_cost)))
    read_token_summary(summary)
    return summary


def turn_start_event(turn_number: int, reason: str = START_USER) -> dict:
    """The event that opens turn turn_number (1, 2, 3, ...), saying why it starts."""
    if reason not in START_REASONS:
        raise ValueError(f"turn_start reason must be one of {', '.join(START_REASONS)}, not {reason!r}")
    return {"type": TYPE_TURN_START, "turn_number": _check_turn_number(turn_number), "reason": reason}


def turn_end_event(turn_number: int, reason: str, token_summary: dict | None = None, *,
                   unfinished_parts: Iterable[str] = ()) -> dict:
    """The event that closes turn turn_number, saying why, with its tokens and cost if known.

    A token_summary in either key set is written in the design's keys. unfinished_parts names
    streams of the turn whose final part was never committed (their deltas are gone).
    """
    if reason not in END_REASONS:
        raise ValueError(f"reason must be one of {', '.join(END_REASONS)}, not {reason!r}")
    event = {"type": TYPE_TURN_END, "turn_number": _check_turn_number(turn_number), "reason": reason}
    if token_summary is not None:
        event["token_summary"] = dict(zip(TOKEN_SUMMARY_FIELDS, read_token_summary(token_summary)))
    parts = list(unfinished_parts)
    if parts:
        event["unfinished_parts"] = parts
    return event


def command_event(command: str) -> dict:
    """A pause_command, resume_command or retry_command event."""
    if command not in COMMAND_TYPES:
        raise ValueError(f"command must be one of {', '.join(COMMAND_TYPES)}, not {command!r}")
    return {"type": command}


def timeout_event(limit: str, allowed: float, observed: float, *, turn_number: int | None = None,
                  call_id: str | None = None) -> dict:
    """The record of a limit that was reached: which, its value, what was observed, and where."""
    if limit not in LIMITS:
        raise ValueError(f"limit must be one of {', '.join(LIMITS)}, not {limit!r}")
    event = {"type": TYPE_TIMEOUT, "limit": limit, "allowed": allowed, "observed": observed}
    if turn_number is not None:
        event["turn_number"] = _check_turn_number(turn_number)
    if call_id is not None:
        event["callId"] = call_id
    return event


def tool_result_event(call_id: str, output=None, *, error: str | None = None) -> dict:
    """A function_call_result: success with output, or failure with error (output then says the error)."""
    if error is not None:
        return {"type": TYPE_FUNCTION_CALL_RESULT, "callId": call_id, "success": False, "error": error,
                "output": f"error: {error}"}
    return {"type": TYPE_FUNCTION_CALL_RESULT, "callId": call_id, "success": True,
            "output": "" if output is None else output}


def part_start_event(part_id: str, channel: str, turn_number: int) -> dict:
    """The durable note that a stream of turn turn_number began: until its final part is committed,
    the turn cannot complete, in this process or in the next one after a crash."""
    if not isinstance(part_id, str) or not part_id:
        raise ValueError(f"part_id must be a non-empty string, not {part_id!r}")
    return {"type": TYPE_PART_START, "part_id": part_id, "channel": channel,
            "turn_number": _check_turn_number(turn_number)}


def rewind_event(to_sequence: int) -> dict:
    """The marker that undoes everything after sequence to_sequence (0: everything), without rewriting a byte."""
    if not _whole(to_sequence):
        raise ValueError(f"to_sequence must be a whole number >= 0, not {shown(to_sequence)}")
    return {"type": TYPE_REWIND, "to_sequence": to_sequence}


def handoff_event(reason: str, summary: str) -> dict:
    """A token-budget handoff: committed with a sequence, never shown to clients (live.CLIENT_HIDDEN_TYPES)."""
    return {"type": TYPE_HANDOFF, "reason": reason, "summary": summary}


def permission_event(call_id: str, tool: str, decision: str, *, by: str = "user", reason: str = "") -> dict:
    """Who allowed or denied which tool call, and why: the audit's answer to "which permissions were decided"."""
    if decision not in PERMISSION_DECISIONS:
        raise ValueError(f"decision must be one of {', '.join(PERMISSION_DECISIONS)}, not {decision!r}")
    return {"type": TYPE_PERMISSION, "callId": call_id, "tool": tool, "decision": decision, "by": by,
            "reason": reason}


def start_turn(transcript: DurableTranscript, turn_number: int, reason: str = START_USER) -> dict:
    """Durably append turn_start; returns the record written. (the live log checks the state first.)"""
    return transcript.append(turn_start_event(turn_number, reason))


def end_turn(transcript: DurableTranscript, turn_number: int, reason: str, token_summary: dict | None = None) -> dict:
    """Durably append turn_end; returns the record written. (the live log checks the state first.)"""
    return transcript.append(turn_end_event(turn_number, reason, token_summary))


# --------------------------------------------------------------------------- the fold


@dataclass(frozen=True)
class Anomaly:
    """An event the state machine has no row for, or a marker that cannot be read: left out of the fold."""

    sequence: int
    message: str

    def __str__(self):
        return f"event {self.sequence}: {self.message}"


@dataclass(frozen=True)
class SessionStatus:
    """The session's state folded from its events, and what to do after a crash."""

    state: str  # one of STATES
    decision: str  # what a fresh process does now
    open_turn: int | None  # the turn started and not ended
    last_turn: int | None  # the last turn started
    last_reason: str | None  # why the last ended turn ended
    anomalies: list = field(default_factory=list)
    pending_calls: tuple = ()  # callIds of function calls with no result yet
    open_parts: tuple = ()  # part_ids of streams begun (part_start on disk) whose final part is not

    def __str__(self):
        turn = f" {self.open_turn}" if self.open_turn is not None and self.state == RUNNING else ""
        anomalies = f" ({len(self.anomalies)} anomalies)" if self.anomalies else ""
        return f"{self.state}: {self.decision}{turn}{anomalies}"


@dataclass(frozen=True)
class PendingCall:
    """A function_call still waiting for its result."""

    call_id: str
    name: str
    sequence: int
    recorded_at: datetime | None
    turn_number: int | None


def parse_recorded_at(value) -> datetime | None:
    """The envelope's recorded_at as an aware datetime, or None when absent or unreadable."""
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def trigger_of(event: dict) -> str | None:
    """The trigger an event is for TRANSITIONS, or None for events that do not move the state."""
    event_type = event.get("type")
    if event_type == TYPE_MESSAGE and event.get("role") == "user":
        return USER_MESSAGE
    if event_type in (TYPE_TURN_START, *COMMAND_TYPES):
        return event_type
    if event_type == TYPE_TURN_END:
        return end_trigger(event.get("reason"))
    if event_type == TYPE_TIMEOUT and event.get("limit") in SESSION_LIMITS:
        return timeout_trigger(event["limit"])
    return None


def _marker_problem(event: dict) -> str | None:
    """Why a turn marker or timeout event cannot be folded, or None."""
    event_type = event["type"]
    if event_type == TYPE_TIMEOUT:
        return None if event.get("limit") in LIMITS else f"timeout with unknown limit {event.get('limit')!r}"
    number = event.get("turn_number")
    if not isinstance(number, int) or isinstance(number, bool) or number < 1:
        return f"{event_type} without a valid turn_number ({number!r})"
    if event_type == TYPE_TURN_END and event.get("reason") not in END_REASONS:
        return f"turn_end of turn {number} with unknown reason {event.get('reason')!r}"
    if event_type == TYPE_TURN_START and "reason" in event and event["reason"] not in START_REASONS:
        return f"turn_start of turn {number} with unknown reason {event.get('reason')!r}"
    return None  # a turn_start without reason (written by earlier versions of the kit) is read


_HINTS = {ERROR: "a retry_command comes first", PAUSED: "a resume_command comes first",
          RUNNING: "the run is still going", IDLE: "nothing is running"}


class SessionFold:
    """The session's state, folded one event at a time (oldest first); also what the limits need.

    Besides the state it keeps: the open turn and when it started (and how long it was paused),
    the calls waiting for a result (pending) and those already answered, how many calls the open
    turn made, and when the session's first and last events were recorded.
    """

    def __init__(self):
        self.state, self.marked = IDLE, False
        self.open_turn = self.last_turn = self.last_reason = None
        self.anomalies = []
        self.pending = {}  # callId -> PendingCall
        self.answered = set()
        self.calls_in_turn = 0
        self.turn_started_at = self.paused_at = None
        self.paused_seconds = 0.0
        self.first_at = self.last_at = None
        self.last_sequence = 0
        self.expired_at = None  # the sequence of the event that expired the session
        self.open_parts = {}  # part_id -> turn: a part_start is on disk, the final part is not
        self.rewound = False  # a rewind marker was folded: refold materialize(events) instead
        self.migrated_to = None  # where a session_migrated marker says the session went
        self.migrating_from = None  # this copy waits for its source (a session_migrating record): its path
        self.migrating_at = None  # that record's sequence: the source's marker carries the same one

    def copy(self) -> SessionFold:
        """An independent copy: add events to it to see what they would do."""
        twin = SessionFold.__new__(SessionFold)
        twin.__dict__.update(self.__dict__)
        twin.anomalies, twin.pending, twin.answered = list(self.anomalies), dict(self.pending), set(self.answered)
        twin.open_parts = dict(self.open_parts)
        return twin

    def add_all(self, events: Iterable[dict]) -> list[Anomaly]:
        """Fold events in order; return the anomalies they added."""
        found = []
        for event in events:
            found += self.add(event)
        return found

    def add(self, event: dict) -> list[Anomaly]:
        """Fold one event; return the anomalies it added (none when the machine has a row for it)."""
        before = len(self.anomalies)
        if event.get("schema_version", SCHEMA_VERSION) > SCHEMA_VERSION:
            return []  # a newer layout: evidence this code cannot interpret, as replay treats it
        sequence, at = event.get("sequence", self.last_sequence + 1), parse_recorded_at(event.get("recorded_at"))
        self.last_sequence = sequence
        if at is not None:
            self.first_at = self.first_at or at
            self.last_at = at
        event_type = event.get("type")
        if self.migrated_to is not None:
            self._report(sequence, f"{event_type} after the session migrated to {self.migrated_to}: "
                                   f"this copy takes no more events")
        elif event_type in (TYPE_TURN_START, TYPE_TURN_END, TYPE_TIMEOUT) and (problem := _marker_problem(event)):
            self._report(sequence, problem)
        elif event_type == TYPE_REWIND:
            self.rewound = True  # a fold cannot undo: whoever folds materializes first (session_status does)
        elif event_type == TYPE_MIGRATED:
            self.migrated_to = event.get("to", "another harness")
        elif event_type == TYPE_MIGRATING:
            self.migrating_from, self.migrating_at = event.get("from", "another harness"), sequence
        elif event_type == TYPE_ARRIVED:
            self.migrating_from = self.migrating_at = None
        elif event_type == TYPE_PART_START:
            self._part_start(event, sequence)
        elif event_type == TYPE_FUNCTION_CALL:
            self._call(event, sequence, at)
        elif event_type == TYPE_FUNCTION_CALL_RESULT:
            self._result(event, sequence)
        else:
            self._transition(event, sequence, at)
        if event_type != TYPE_PART_START and isinstance(event.get("part_id"), str):
            self.open_parts.pop(event["part_id"], None)  # the stream's final part: committed
        return self.anomalies[before:]

    def _part_start(self, event: dict, sequence: int) -> None:
        part, number = event.get("part_id"), event.get("turn_number")
        if self.open_turn is None or number != self.open_turn:
            return self._report(sequence, f"part_start of {part} for turn {number}, but "
                                          f"{'no turn' if self.open_turn is None else f'turn {self.open_turn}'} "
                                          f"is open")
        if part in self.open_parts:
            return self._report(sequence, f"part_start of {part}, which is already open")
        self.open_parts[part] = number

    def parts_of(self, turn_number) -> list[str]:
        """part_ids of the streams of turn turn_number whose final part is not on disk, in order begun."""
        return [part for part, turn in self.open_parts.items() if turn == turn_number]

    def _report(self, sequence: int, message: str) -> None:
        self.anomalies.append(Anomaly(sequence, message))

    def _call(self, event: dict, sequence: int, at) -> None:
        call_id = event["callId"]
        if self.state == EXPIRED:
            return self._report(sequence, f"function_call {call_id} after the session expired "
                                          f"(event {self.expired_at}): start a new session")
        if call_id in self.pending or call_id in self.answered:
            return self._report(sequence, f"function_call reuses callId {call_id}")
        self.pending[call_id] = PendingCall(call_id, event["name"], sequence, at, self.open_turn)
        self.calls_in_turn += self.open_turn is not None

    def _result(self, event: dict, sequence: int) -> None:
        call_id = event["callId"]
        if call_id in self.answered:
            return self._report(sequence, f"result for {call_id}, which was already answered")
        if call_id not in self.pending:
            return self._report(sequence, f"result for {call_id}, which was never called")
        del self.pending[call_id]
        self.answered.add(call_id)

    def _transition(self, event: dict, sequence: int, at) -> None:
        trigger = trigger_of(event)
        if trigger is None:
            return
        if trigger != USER_MESSAGE:
            self.marked = True  # from the first marker or command on, the machine applies
        elif not self.marked:
            return  # the lesson's plain log: a user message there starts no run
        if self.state == EXPIRED:
            return self._after_expiry(event, trigger, sequence)
        next_state = TRANSITIONS.get((self.state, trigger))
        if event["type"] == TYPE_TURN_END and self.open_turn != event["turn_number"]:
            expected = f"turn {self.open_turn} is open" if self.open_turn is not None else "no turn is open"
            return self._report(sequence, f"turn_end for turn {event['turn_number']} but {expected}")
        if next_state is None:
            return self._report(sequence, f"{trigger} while {self.state}: the state machine has no such "
                                          f"transition ({_HINTS.get(self.state, '')})")
        if event["type"] == TYPE_TURN_END and event["reason"] == REASON_COMPLETE and self.parts_of(self.open_turn):
            return self._report(sequence, f"turn {self.open_turn} cannot complete: "
                                          f"{', '.join(self.parts_of(self.open_turn))} has no committed final part")
        if event["type"] == TYPE_TURN_END:
            for part in self.parts_of(self.open_turn):
                del self.open_parts[part]  # its deltas are gone; the turn_end names it (unfinished_parts)
        if event["type"] == TYPE_TURN_START:
            self._open_turn(event["turn_number"], sequence, at)
        elif event["type"] == TYPE_TURN_END:
            self.open_turn, self.last_reason, self.turn_started_at = None, event["reason"], None
        elif event["type"] == TYPE_PAUSE:
            self.paused_at = at
        elif event["type"] == TYPE_RESUME and self.paused_at is not None and at is not None:
            self.paused_seconds += (at - self.paused_at).total_seconds()
            self.paused_at = None
        if next_state == EXPIRED:
            self.expired_at = sequence
            self.open_parts.clear()
        self.state = next_state

    def _open_turn(self, number: int, sequence: int, at) -> None:
        if self.open_turn is not None:
            self._report(sequence, f"turn {number} started while turn {self.open_turn} was open: "
                                   f"turn {self.open_turn} has no turn_end")
        if self.last_turn is not None and number <= self.last_turn:
            self._report(sequence, f"turn number {number} does not follow turn {self.last_turn}")
        self.open_turn = self.last_turn = number
        self.turn_started_at, self.paused_at, self.paused_seconds, self.calls_in_turn = at, None, 0.0, 0

    def _after_expiry(self, event: dict, trigger: str, sequence: int) -> None:
        """Expired is terminal: work is reported; a turn_end still closes the open turn (no transition)."""
        if trigger in WORK_TRIGGERS:
            self._report(sequence, f"{trigger} after the session expired (event {self.expired_at}): "
                                   f"start a new session")
        elif event["type"] == TYPE_TURN_END and self.open_turn == event["turn_number"]:
            self.open_turn, self.last_reason, self.turn_started_at = None, event["reason"], None

    def decision(self) -> str:
        """What a fresh process does now, by the state (and, when idle, by how the last turn ended)."""
        if not self.marked:
            return NO_TURN_MARKERS
        if self.state == IDLE:
            return DECISION_AFTER_IDLE[self.last_reason if self.last_reason in DECISION_AFTER_IDLE else None]
        return DECISION_BY_STATE[self.state]

    def status(self) -> SessionStatus:
        """The state so far as a SessionStatus."""
        return SessionStatus(self.state, self.decision(), self.open_turn, self.last_turn, self.last_reason,
                             list(self.anomalies), tuple(self.pending), tuple(self.open_parts))


def session_status(events: Iterable[dict]) -> SessionStatus:
    """Fold a transcript's events (oldest first) into its state and the decision after a crash.

    Events the state machine has no row for are reported as anomalies and change nothing: a
    turn_end with no open turn or for another turn's number, a turn_start while paused or after an
    error (a resume_command or retry_command comes first), work after the session expired, a
    result for a call never made or already answered, a malformed marker. A turn_start while
    another turn is open is reported (that turn never ended) and opens the new turn. Rewind
    markers are applied first (materialize).
    """
    fold = SessionFold()
    fold.add_all(materialize(events))
    return fold.status()


# --------------------------------------------------------------------------- the audit


class AuditError(ValueError):
    """A turn_end's token_summary cannot be read: the audit refuses to count it as 0."""


@dataclass(frozen=True)
class ToolCall:
    """One function_call event: which tool, when, in which turn, and how it went."""

    sequence: int
    recorded_at: str | None
    turn_number: int | None  # the turn open at the time, None outside any turn
    name: str
    call_id: str
    outcome: str | None = None  # "ok", "error", or None while no result was recorded


@dataclass(frozen=True)
class PermissionDecision:
    """One permission_decision event: who allowed or denied which tool call, when, and why."""

    sequence: int
    recorded_at: str | None
    turn_number: int | None
    call_id: str
    tool: str
    decision: str  # "allow" or "deny"
    by: str
    reason: str


@dataclass(frozen=True)
class Audit:
    """Totals from turn_end token summaries, and every tool call and permission decision in order."""

    turns_ended: int
    end_reasons: dict  # reason -> how many turns ended so
    input_tokens: int
    output_tokens: int
    cost_usd: float
    tool_calls: list
    turns_without_token_summary: list = field(default_factory=list)  # their tokens are not in the totals
    timeouts: dict = field(default_factory=dict)  # limit -> how many times it was reached
    rejected_turn_ends: list = field(default_factory=list)  # sequences of turn_ends the state machine refused
    permission_decisions: list = field(default_factory=list)


def audit(events: Iterable[dict]) -> Audit:
    """Add up the token summaries of turn_end events and list the function calls and permission decisions.

    The events are materialized first (rewind markers applied) and folded by the state machine:
    a turn_end it rejects (no open turn, another turn's number, a complete with a part
    unfinished) ends no turn and adds no tokens; its sequence is listed in rejected_turn_ends.
    Reads token_summary in the design's keys (total_input, total_output, total_cost) and in the
    kit's older ones (input_tokens, output_tokens, cost_usd). Any other summary raises AuditError
    naming the event: a total is never quietly short. A turn_end without a summary is listed.
    """
    reasons, timeouts, calls, outcomes, unsummarised = Counter(), Counter(), [], {}, []
    rejected, permissions = [], []
    input_tokens = output_tokens = 0
    cost = 0.0
    fold = SessionFold()
    for event in materialize(events):
        open_turn = fold.open_turn  # the turn open when this event came
        if fold.add(event) and event.get("type") == TYPE_TURN_END:
            rejected.append(event["sequence"])
            continue
        event_type = event["type"]
        if event_type in (TYPE_TURN_START, TYPE_TURN_END, TYPE_TIMEOUT) and _marker_problem(event):
            continue
        if event_type == TYPE_TURN_END:
            reasons[event["reason"]] += 1
            if "token_summary" not in event:
                unsummarised.append(event["turn_number"])
                continue
            try:
                tokens_in, tokens_out, turn_cost = read_token_summary(event["token_summary"])
            except ValueError as problem:
                raise AuditError(f"event {event['sequence']} ({event.get('event_id')}): {problem}") from None
            input_tokens, output_tokens, cost = input_tokens + tokens_in, output_tokens + tokens_out, cost + turn_cost
        elif event_type == TYPE_TIMEOUT:
            timeouts[event["limit"]] += 1
        elif event_type == TYPE_FUNCTION_CALL:
            calls.append((event["sequence"], event.get("recorded_at"), open_turn, event["name"], event["callId"]))
        elif event_type == TYPE_FUNCTION_CALL_RESULT:
            failed = event.get("success") is False or "error" in event
            outcomes.setdefault(event["callId"], "error" if failed else "ok")
        elif event_type == TYPE_PERMISSION:
            permissions.append(PermissionDecision(event["sequence"], event.get("recorded_at"), open_turn,
                                                  event.get("callId"), event.get("tool"), event.get("decision"),
                                                  event.get("by"), event.get("reason", "")))
    tool_calls = [ToolCall(*call, outcome=outcomes.get(call[4])) for call in calls]
    return Audit(sum(reasons.values()), dict(reasons), input_tokens, output_tokens, round(cost, 6), tool_calls,
                 unsummarised, dict(timeouts), rejected, permissions)


# --------------------------------------------------------------------------- a scripted session


def _call(call_id: str, name: str, arguments: dict) -> dict:
    return {"type": TYPE_FUNCTION_CALL, "callId": call_id, "name": name, "arguments": arguments}


def _message(role: str, content: str) -> dict:
    return {"type": TYPE_MESSAGE, "role": role, "content": content}


# Six turns that reach every state: complete (idle), error, retry, pause and resume (paused),
# user_interrupt and compaction_trigger (idle, with their decisions), and a turn that times out
# (expired, terminal: the script ends there). Crashing after each prefix shows every state.
TURNS_SCRIPT = (
    turn_start_event(1),
    _message("user", "test_calc.py fails: add(2, 3) returns -1. Please fix it."),
    {"type": TYPE_AI_TITLE, "title": "Fix add() and run the tests"},
    _call("call_1", "read_file", {"path": "calc.py"}),
    tool_result_event("call_1", "def add(a, b):\n    return a - b\n"),
    _call("call_2", "write_file", {"path": "calc.py", "content": "def add(a, b):\n    return a + b\n"}),
    tool_result_event("call_2", "wrote 33 bytes to calc.py"),
    _message("assistant", "Fixed: add() returned a - b, it now returns a + b."),
    turn_end_event(1, REASON_COMPLETE, token_summary(1800, 240, 0.0090)),
    turn_start_event(2),
    _message("user", "Now run the whole test suite."),
    _call("call_3", "run_tests", {}),
    tool_result_event("call_3", error="the test runner crashed"),
    turn_end_event(2, REASON_ERROR, token_summary(2100, 60, 0.0072)),
    command_event(TYPE_RETRY),
    turn_start_event(3, START_RETRY),
    _call("call_4", "run_tests", {"args": ["-x"]}),
    tool_result_event("call_4", "12 passed in 0.40s"),
    command_event(TYPE_PAUSE),
    command_event(TYPE_RESUME),
    _message("assistant", "All 12 tests pass."),
    turn_end_event(3, REASON_COMPLETE, token_summary(2300, 40, 0.0075)),
    turn_start_event(4),
    _message("user", "Summarise what you changed."),
    turn_end_event(4, REASON_USER_INTERRUPT, token_summary(2400, 10, 0.0073)),
    turn_start_event(5),
    _message("user", "Go on, and keep it short."),
    _message("assistant", "The context is nearly full: compacting before I answer."),
    turn_end_event(5, REASON_COMPACTION_TRIGGER, token_summary(2500, 20, 0.0077)),
    turn_start_event(6, START_CONTINUATION),
    _call("call_5", "run_tests", {"args": ["--slow"]}),
    timeout_event(TOOL_TIMEOUT, 30, 31, turn_number=6, call_id="call_5"),
    tool_result_event("call_5", error="tool call timed out after 30 s"),
    timeout_event(TURN_TIMEOUT, 120, 121, turn_number=6),
    turn_end_event(6, REASON_TIMEOUT, token_summary(2600, 30, 0.0081)),
)


def __getattr__(name: str):
    """DEPARTURES: the rows of docs/production.md's departures table, read once, when first asked for.

    Read lazily so that the turn lifecycle needs no docs/ folder (an installed wheel has none).
    """
    global DEPARTURES
    if name == "DEPARTURES":
        DEPARTURES = read_departures()
        return DEPARTURES
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
