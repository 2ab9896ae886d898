"""The turn lifecycle: turn_start / turn_end events, the session state folded from them, an audit.

A turn is one round of the agent loop: a request, the model's tool calls and answers, until the
model is done or something stops it. Two ordinary events mark it:

    {"type": "turn_start", "turn_number": 3}
    {"type": "turn_end", "turn_number": 3, "reason": "complete",
     "token_summary": {"input_tokens": 1200, "output_tokens": 340, "cost_usd": 0.0062}}

They are appended with JSONLTranscript.append like any other event; replay keeps them as
evidence and makes no chat message of them. session_status folds them, by TRANSITIONS, into the
session's state and the decision a runtime takes after a crash; audit adds up tokens and cost
and lists which tool was called when. A transcript without turn events still replays as before.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable

from .code import TYPE_AI_TITLE, TYPE_FUNCTION_CALL, TYPE_FUNCTION_CALL_RESULT, TYPE_MESSAGE, JSONLTranscript

TYPE_TURN_START = "turn_start"
TYPE_TURN_END = "turn_end"

# Why a turn ended (the "reason" of turn_end).
REASON_COMPLETE = "complete"
REASON_TIMEOUT = "timeout"
REASON_ERROR = "error"
REASON_USER_INTERRUPT = "user_interrupt"
REASON_COMPACTION_TRIGGER = "compaction_trigger"
END_REASONS = (REASON_COMPLETE, REASON_TIMEOUT, REASON_ERROR, REASON_USER_INTERRUPT, REASON_COMPACTION_TRIGGER)

TOKEN_SUMMARY_FIELDS = ("input_tokens", "output_tokens", "cost_usd")

# The session's states.
IDLE = "idle"  # no turn open: the last one completed, or none has started
RUNNING = "running"  # a turn started and has not ended
EXPIRED = "expired"  # the last turn timed out
ERROR = "error"  # the last turn failed
PAUSED = "paused"  # the last turn was interrupted by the user, or stopped for compaction
STATES = (IDLE, RUNNING, EXPIRED, ERROR, PAUSED)

# The transition table: (state, what happened) -> next state. "What happened" is a turn_start
# or the reason of a turn_end. A turn_end is only folded when it closes the open turn.
TRANSITIONS = {
    (IDLE, TYPE_TURN_START): RUNNING,
    (RUNNING, TYPE_TURN_START): RUNNING,  # the open turn never ended: reported as an anomaly
    (EXPIRED, TYPE_TURN_START): RUNNING,
    (ERROR, TYPE_TURN_START): RUNNING,
    (PAUSED, TYPE_TURN_START): RUNNING,
    (RUNNING, REASON_COMPLETE): IDLE,
    (RUNNING, REASON_TIMEOUT): EXPIRED,
    (RUNNING, REASON_ERROR): ERROR,
    (RUNNING, REASON_USER_INTERRUPT): PAUSED,
    (RUNNING, REASON_COMPACTION_TRIGGER): PAUSED,
}

# What a fresh process does after a crash, by how the last turn ended.
NOTHING_TO_DO = "nothing to do"
CONTINUE = "continue with the next turn"
RETRY_OR_ABANDON = "offer retry or abandon"
RERUN = "re-run the unfinished turn"
WAIT_FOR_USER = "wait for the user"
COMPACT_THEN_CONTINUE = "compact the context, then continue with the next turn"
NO_TURN_MARKERS = "no turn markers: replay as usual"

DECISION_BY_REASON = {
    REASON_COMPLETE: NOTHING_TO_DO,
    REASON_TIMEOUT: CONTINUE,
    REASON_ERROR: RETRY_OR_ABANDON,
    REASON_USER_INTERRUPT: WAIT_FOR_USER,
    REASON_COMPACTION_TRIGGER: COMPACT_THEN_CONTINUE,
}

# --------------------------------------------------------------------------- writing the markers


def _check_turn_number(turn_number) -> int:
    if not isinstance(turn_number, int) or isinstance(turn_number, bool) or turn_number < 1:
        raise ValueError(f"turn_number must be a whole number >= 1, not {turn_number!r}")
    return turn_number


def _check_token_summary(summary) -> dict:
    if not isinstance(summary, dict) or set(summary) != set(TOKEN_SUMMARY_FIELDS):
        raise ValueError(f"token_summary must be a dict with exactly {', '.join(TOKEN_SUMMARY_FIELDS)}")
    for name in ("input_tokens", "output_tokens"):
        value = summary[name]
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"token_summary[{name!r}] must be a whole number >= 0, not {value!r}")
    cost = summary["cost_usd"]
    if not isinstance(cost, (int, float)) or isinstance(cost, bool) or not math.isfinite(cost) or cost < 0:
        raise ValueError(f"token_summary['cost_usd'] must be a finite number >= 0, not {cost!r}")
    return dict(summary)


def turn_start_event(turn_number: int) -> dict:
    """The event that opens turn turn_number (1, 2, 3, ...)."""
    return {"type": TYPE_TURN_START, "turn_number": _check_turn_number(turn_number)}


def turn_end_event(turn_number: int, reason: str, token_summary: dict | None = None) -> dict:
    """The event that closes turn turn_number, saying why, with the turn's token counts and cost if known."""
    if reason not in END_REASONS:
        raise ValueError(f"reason must be one of {', '.join(END_REASONS)}, not {reason!r}")
    event = {"type": TYPE_TURN_END, "turn_number": _check_turn_number(turn_number), "reason": reason}
    if token_summary is not None:
        event["token_summary"] = _check_token_summary(token_summary)
    return event


def start_turn(transcript: JSONLTranscript, turn_number: int) -> dict:
    """Durably append turn_start; returns the envelope written."""
    return transcript.append(turn_start_event(turn_number))


def end_turn(transcript: JSONLTranscript, turn_number: int, reason: str, token_summary: dict | None = None) -> dict:
    """Durably append turn_end; returns the envelope written."""
    return transcript.append(turn_end_event(turn_number, reason, token_summary))


# --------------------------------------------------------------------------- the fold


@dataclass(frozen=True)
class Anomaly:
    """A marker that does not pair up, or cannot be read, and was left out of the fold."""

    sequence: int
    message: str

    def __str__(self):
        return f"event {self.sequence}: {self.message}"


@dataclass(frozen=True)
class SessionStatus:
    """The session's state folded from its turn markers, and what to do after a crash."""

    state: str  # one of STATES
    decision: str  # what a fresh process does now
    open_turn: int | None  # the turn started and not ended
    last_turn: int | None  # the last turn started
    last_reason: str | None  # why the last ended turn ended
    anomalies: list = field(default_factory=list)

    def __str__(self):
        turn = f" {self.open_turn}" if self.open_turn is not None else ""
        anomalies = f" ({len(self.anomalies)} anomalies)" if self.anomalies else ""
        return f"{self.state}: {self.decision}{turn}{anomalies}"


def _marker_problem(event: dict) -> str | None:
    """Why a turn marker cannot be folded, or None."""
    number = event.get("turn_number")
    if not isinstance(number, int) or isinstance(number, bool) or number < 1:
        return f"{event['type']} without a valid turn_number ({number!r})"
    if event["type"] == TYPE_TURN_END and event.get("reason") not in END_REASONS:
        return f"turn_end of turn {number} with unknown reason {event.get('reason')!r}"
    return None


def session_status(events: Iterable[dict]) -> SessionStatus:
    """Fold the turn markers of a transcript's events (oldest first) into its state.

    Markers that do not pair up are reported as anomalies: a turn_start while another turn is
    open (that turn never ended: the new one replaces it), a turn_end with no open turn or for
    another turn's number (ignored), a turn number that does not increase, a malformed marker.
    """
    state, open_turn, last_turn, last_reason, anomalies = IDLE, None, None, None, []
    for event in events:
        if event["type"] not in (TYPE_TURN_START, TYPE_TURN_END):
            continue
        sequence, problem = event["sequence"], _marker_problem(event)
        if problem:
            anomalies.append(Anomaly(sequence, problem))
            continue
        number, starts = event["turn_number"], event["type"] == TYPE_TURN_START
        if starts and open_turn is not None:
            anomalies.append(Anomaly(sequence, f"turn {number} started while turn {open_turn} was open: "
                                               f"turn {open_turn} has no turn_end"))
        if starts and last_turn is not None and number <= last_turn:
            anomalies.append(Anomaly(sequence, f"turn number {number} does not follow turn {last_turn}"))
        if not starts and open_turn != number:
            expected = f"turn {open_turn} is open" if open_turn is not None else "no turn is open"
            anomalies.append(Anomaly(sequence, f"turn_end for turn {number} but {expected}"))
            continue
        state = TRANSITIONS[(state, TYPE_TURN_START if starts else event["reason"])]
        if starts:
            open_turn = last_turn = number
        else:
            open_turn, last_reason = None, event["reason"]
    return SessionStatus(state, _decision(state, last_turn, last_reason), open_turn, last_turn, last_reason, anomalies)


def _decision(state: str, last_turn: int | None, last_reason: str | None) -> str:
    if last_turn is None:
        return NO_TURN_MARKERS
    if state == RUNNING:
        return RERUN
    return DECISION_BY_REASON[last_reason]


# --------------------------------------------------------------------------- the audit


@dataclass(frozen=True)
class ToolCall:
    """One function_call event: which tool, when, in which turn."""

    sequence: int
    recorded_at: str | None
    turn_number: int | None  # the turn open at the time, None outside any turn
    name: str
    call_id: str


@dataclass(frozen=True)
class Audit:
    """Totals from turn_end token summaries, and every tool call in order."""

    turns_ended: int
    end_reasons: dict  # reason -> how many turns ended so
    input_tokens: int
    output_tokens: int
    cost_usd: float
    tool_calls: list


def _readable_token_summary(summary) -> dict | None:
    """The summary if it is well formed (as turn_end_event writes it), else None: it is left out of totals."""
    try:
        return _check_token_summary(summary)
    except ValueError:
        return None


def audit(events: Iterable[dict]) -> Audit:
    """Add up the well-formed token summaries of turn_end events and list the function calls in order."""
    reasons, tool_calls = Counter(), []
    input_tokens = output_tokens = 0
    cost = 0.0
    open_turn = None
    for event in events:
        if event["type"] in (TYPE_TURN_START, TYPE_TURN_END) and _marker_problem(event):
            continue
        if event["type"] == TYPE_TURN_START:
            open_turn = event["turn_number"]
        elif event["type"] == TYPE_TURN_END:
            open_turn = None
            reasons[event["reason"]] += 1
            summary = _readable_token_summary(event.get("token_summary"))
            if summary:
                input_tokens += summary["input_tokens"]
                output_tokens += summary["output_tokens"]
                cost += summary["cost_usd"]
        elif event["type"] == TYPE_FUNCTION_CALL:
            tool_calls.append(ToolCall(event["sequence"], event.get("recorded_at"), open_turn, event["name"],
                                       event["callId"]))
    return Audit(sum(reasons.values()), dict(reasons), input_tokens, output_tokens, round(cost, 6), tool_calls)


# --------------------------------------------------------------------------- a scripted session


def _call(call_id: str, name: str, arguments: dict) -> dict:
    return {"type": TYPE_FUNCTION_CALL, "callId": call_id, "name": name, "arguments": arguments}


def _result(call_id: str, output: str) -> dict:
    return {"type": TYPE_FUNCTION_CALL_RESULT, "callId": call_id, "output": output}


def _message(role: str, content: str) -> dict:
    return {"type": TYPE_MESSAGE, "role": role, "content": content}


def _tokens(input_tokens: int, output_tokens: int, cost_usd: float) -> dict:
    return {"input_tokens": input_tokens, "output_tokens": output_tokens, "cost_usd": cost_usd}


# Five turns that end in the five different ways; crashing after each prefix shows every state.
TURNS_SCRIPT = (
    turn_start_event(1),
    _message("user", "test_calc.py fails: add(2, 3) returns -1. Please fix it."),
    {"type": TYPE_AI_TITLE, "title": "Fix add() and run the tests"},
    _call("call_1", "read_file", {"path": "calc.py"}),
    _result("call_1", "def add(a, b):\n    return a - b\n"),
    _call("call_2", "write_file", {"path": "calc.py", "content": "def add(a, b):\n    return a + b\n"}),
    _result("call_2", "wrote 33 bytes to calc.py"),
    _message("assistant", "Fixed: add() returned a - b, it now returns a + b."),
    turn_end_event(1, REASON_COMPLETE, _tokens(1800, 240, 0.0090)),
    turn_start_event(2),
    _message("user", "Now run the whole test suite."),
    _call("call_3", "run_tests", {}),
    _result("call_3", "no output for 600 s: stopped"),
    turn_end_event(2, REASON_TIMEOUT, _tokens(2100, 60, 0.0072)),
    turn_start_event(3),
    _call("call_4", "run_tests", {"args": ["-x"]}),
    _result("call_4", "error: the test runner crashed"),
    turn_end_event(3, REASON_ERROR, _tokens(2300, 40, 0.0075)),
    turn_start_event(4),
    _message("user", "Summarise what you changed."),
    turn_end_event(4, REASON_USER_INTERRUPT, _tokens(2400, 10, 0.0073)),
    turn_start_event(5),
    _message("user", "Go on, and keep it short."),
    _message("assistant", "The context is nearly full: compacting before I answer."),
    turn_end_event(5, REASON_COMPACTION_TRIGGER, _tokens(2500, 20, 0.0077)),
)
