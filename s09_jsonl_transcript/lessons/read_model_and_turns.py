"""Notebook 8, the read model and turns: a sample root for the index, the recovery plan a fresh process
follows after a crash inside a turn, and the crash lab of turns.

The notebook builds its SQLite read model and folds the turn state machine in its own cells, and checks
both against the kit (production/index.py, production/turns.py). What stays here is what a widget needs
and what the kit's tests share: the crash lab kills a real writer process after a chosen number of
events of turns.TURNS_SCRIPT and asks what a new process must do. The turn state comes from
turns.session_status; what to do about the tools of an unfinished turn comes from recovery_plan, which
never repeats a tool that changed the world without an idempotency key.

Every sentence a student sees is in the language in use (i18n.use); the Chinese is in
locale/zh/read_model_and_turns.json. Event types, states, tool names and the library's messages (an
anomaly, an exception) stay as they are.
"""

from __future__ import annotations

import html
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import ipywidgets as widgets

from ..code import TYPE_FUNCTION_CALL, TYPE_FUNCTION_CALL_RESULT, MockLLM, run_agent, ticking_clock
from ..crashlab.children import kill_child, start_child
from ..lab import DurableTranscript
from ..production.turns import (
    DEPARTURES,
    NO_TURN_MARKERS,
    RUNNING,
    TOOL_TIMEOUT,
    TURN_TIMEOUT,
    TURNS_SCRIPT,
    TYPE_RESUME,
    TYPE_RETRY,
    TYPE_TIMEOUT,
    TYPE_TURN_START,
    USER_MESSAGE,
    SessionStatus,
    is_understood,
    materialize,
    session_status,
    trigger_of,
)
from ..text import i18n
from .display import MAIN_CONTROL_CLASS, RESULT_CLASS, html_table
from .turn_words import decision_label

tr = i18n.translator("read_model_and_turns")
# Texts shown from turns.DEPARTURES, looked up with tr.data (tests/test_i18n.py checks their Chinese).
TRANSLATED_DATA = tuple(dict.fromkeys(row[key] for row in DEPARTURES for key in ("topic", "design", "kit", "why")))

# --------------------------------------------------------------------------- a root for the index


def build_sample_root(root) -> list[DurableTranscript]:
    """Write three sessions under root/projects: MockLLM's bug fix, the turns script, and a short chat."""
    clock = ticking_clock()
    bug_fix = DurableTranscript.for_session(root, "calc", "bug-fix", clock=clock)
    turns = DurableTranscript.for_session(root, "calc", "with-turns", clock=clock)
    chat = DurableTranscript.for_session(root, "notes", "chat", clock=clock)
    with bug_fix, turns, chat:
        run_agent(bug_fix, MockLLM())
        turns.append_batch(TURNS_SCRIPT)
        chat.append({"type": "message", "role": "user", "content": "Why is the JSONL transcript append-only?"})
        chat.append({"type": "message", "role": "assistant",
                     "content": "So that what was acknowledged is never rewritten: a crash can only cut the tail."})
    return [bug_fix, turns, chat]


# --------------------------------------------------------------------------- recovery: the turn and its tools

# Tools of TURNS_SCRIPT that change nothing outside the agent: running one again is harmless.
# Every other tool (write_file, and any tool not listed here) is taken to change the world: fail closed.
SAFE_TO_REPEAT = frozenset({"read_file", "run_tests"})


@dataclass(frozen=True)
class RecoveryPlan:
    """What a fresh process does after a crash: the turn state, and what to do about the unfinished turn's tools.

    The action is said in the language in use when the plan is made (recovery_plan).
    """

    status: SessionStatus
    action: str

    @property
    def state(self) -> str:
        return self.status.state

    def __str__(self):
        anomalies = tr(" ({count} anomalies)", count=len(self.status.anomalies)) if self.status.anomalies else ""
        return tr("{state}: {action}", state=self.state, action=self.action) + anomalies


@dataclass(frozen=True)
class _OpenTurn:
    """What the events since the last turn_start say about that turn's tools and limits."""

    calls: list  # function_call events, in order
    answered: set  # callIds with a result
    tool_timeouts: set  # callIds whose tool_timeout is recorded
    turn_timed_out: bool  # a turn_timeout is recorded
    not_understood: list  # events of a type (or schema version) the kit does not know: effects it cannot rule out


def _open_turn(events: list) -> _OpenTurn:
    start = max((i for i, event in enumerate(events) if event.get("type") == TYPE_TURN_START), default=-1)
    turn = events[start + 1:]
    known = [event for event in turn if is_understood(event)]
    limits = [(event.get("limit"), event.get("callId")) for event in known if event["type"] == TYPE_TIMEOUT]
    return _OpenTurn([event for event in known if event["type"] == TYPE_FUNCTION_CALL],
                     {event["callId"] for event in known if event["type"] == TYPE_FUNCTION_CALL_RESULT},
                     {call_id for limit, call_id in limits if limit == TOOL_TIMEOUT},
                     any(limit == TURN_TIMEOUT for limit, _ in limits),
                     [event for event in turn if not is_understood(event)])


def _not_understood_text(events: list) -> str:
    """The events a plan cannot interpret, as 'type (event n)'."""
    return tr(", ").join(f"{event.get('type')!s} ({tr('event {sequence}', sequence=event.get('sequence'))})"
                         for event in events)


def _answer_pending(call: dict, turn: _OpenTurn) -> str:
    """What to do about one call with no result, by the tool rule (and the tool_timeout, if one is recorded)."""
    what = f"{call['name']} ({call['callId']})"
    if call["callId"] in turn.tool_timeouts:
        return tr("{call} timed out (its tool_timeout is on disk): append its error result", call=what)
    if call["name"] in SAFE_TO_REPEAT:
        return tr("run {call} again (safe to repeat), append its result", call=what)
    return tr("{call} may have run: repeat it only with an idempotency key the tool honours, "
              "else ask the user; append the answer", call=what)


def _start_next_turn(events: list, status: SessionStatus) -> str:
    """The plan for a run that has begun (a retry_command or a user message on disk) before any turn_start."""
    number = (status.last_turn or 0) + 1
    triggers = [event for event in events if trigger_of(event) in (TYPE_RETRY, USER_MESSAGE, TYPE_RESUME)]
    last = trigger_of(triggers[-1]) if triggers else None
    if last == TYPE_RETRY:
        return tr("no turn is open: the retry_command is on disk; start turn {number} (reason retry)", number=number)
    if last == USER_MESSAGE:
        return tr("no turn is open: the user's message is on disk; start turn {number} to answer it", number=number)
    return tr("no turn is open: start turn {number}", number=number)


def recovery_plan(events) -> RecoveryPlan:
    """The session's state (turns.session_status) and what a fresh process must do (notebook 8 states the rules).

    Outside a running session: the state machine's decision. In an unfinished turn the events on disk happened
    and are not done again; a call with no result gets its error result if its tool_timeout is on disk, is run
    again if its tool is safe to repeat, and otherwise is repeated only under an idempotency key or after
    asking the user; an event the kit does not understand is an effect it cannot rule out (ask the user).
    Rewind markers are applied first (turns.materialize).
    """
    events = materialize(events)
    status = session_status(events)
    unknown = [event for event in events if not is_understood(event)]
    if status.decision == NO_TURN_MARKERS and unknown:
        return RecoveryPlan(status, tr("the log holds events the kit does not understand: {events}; they may "
                                       "have changed the world, so ask the user before going on",
                                       events=_not_understood_text(unknown[-3:])))
    if status.state != RUNNING:
        return RecoveryPlan(status, decision_label(status.decision))
    if status.open_turn is None:
        return RecoveryPlan(status, _start_next_turn(events, status))
    number = status.open_turn
    turn = _open_turn(events)
    if turn.turn_timed_out:
        return RecoveryPlan(status, tr("turn {number} timed out (its turn_timeout is on disk): append its turn_end "
                                       "(timeout); the session is then expired: start a new session", number=number))
    if turn.not_understood:
        return RecoveryPlan(status, tr("turn {number} holds events the kit does not understand: {events}; they "
                                       "may have changed the world, so ask the user before resuming turn {number}",
                                       number=number, events=_not_understood_text(turn.not_understood)))
    pending = [call for call in turn.calls if call["callId"] not in turn.answered]
    done_effects = [call for call in turn.calls if call["callId"] in turn.answered
                    and call["name"] not in SAFE_TO_REPEAT]
    if pending:
        action = tr("{answers}, resume turn {number}", answers=tr("; ").join(_answer_pending(call, turn)
                                                                            for call in pending), number=number)
    elif done_effects:
        names = tr(", ").join(f"{call['name']} ({call['callId']})" for call in done_effects)
        action = tr("resume turn {number} after its last event; never repeat {names}: its result is on disk",
                    number=number, names=names)
    else:
        action = tr("resume turn {number}: nothing in it changed the world, ask the model again", number=number)
    return RecoveryPlan(status, action)


def departures_table():
    """turns.DEPARTURES as an HTML table: where the kit departs from the design, and why."""
    said = departure_texts()
    return html_table([tr("topic"), tr("the design"), tr("the kit"), tr("why")],
                      [[said.get(row[key], row[key]) for key in ("topic", "design", "kit", "why")]
                       for row in DEPARTURES])


def departure_texts() -> dict[str, str]:
    """Every text of turns.DEPARTURES in the language in use ({English: shown})."""
    return {text: tr.data(text) for text in TRANSLATED_DATA}


# --------------------------------------------------------------------------- the crash lab

def turns_writer_child(path: str, count: str) -> None:
    """Body of the child process: append the first count events of TURNS_SCRIPT, then wait to be killed."""
    transcript = DurableTranscript(path, clock=ticking_clock())
    for event in TURNS_SCRIPT[: int(count)]:
        transcript.append(event)
    print("appended", flush=True)
    sys.stdin.readline()  # hold the open, locked transcript until the parent kills us


def crash_writer_after(path, count: int) -> None:
    """Run a writer in a child process, let it append the first count events of TURNS_SCRIPT, kill it.

    The kill is SIGKILL: no cleanup runs.
    """
    if not 0 <= count <= len(TURNS_SCRIPT):
        raise ValueError(f"count must be between 0 and {len(TURNS_SCRIPT)}, not {count!r}")
    child = start_child("s09_jsonl_transcript.lessons.read_model_and_turns:turns_writer_child", path, count)
    try:
        appended = child.stdout.readline().strip() == "appended"
    finally:
        errors = kill_child(child)[1]
    if not appended:
        raise RuntimeError(f"the writer process died before it had appended its events: {errors.strip()[-300:]}")


def crash_and_plan(path, count: int) -> RecoveryPlan:
    """Start a fresh transcript at path, crash a writer after count events, and plan from what a new process reads."""
    Path(path).unlink(missing_ok=True)
    crash_writer_after(path, count)
    return recovery_plan(DurableTranscript(path).read_events())


class CrashLab:
    """A slider for the crash point and a button that kills a real writer there and shows the recovery plan.

    With a folder, the crashed transcript stays there (folder/crash-lab.jsonl) to be inspected;
    without one, each crash writes into a temporary folder that is removed right after.
    """

    def __init__(self, folder=None, point: int = 9):
        self.folder = folder
        self.crashes = 0
        self.summary = tr("not crashed yet: choose a point and press the button")
        self.point = widgets.IntSlider(value=point, min=0, max=len(TURNS_SCRIPT), description=tr("crash after"))
        self.button = widgets.Button(description=tr("Crash and recover"), button_style="danger")
        self.result = widgets.HTML(value=f"<i>{self.summary}</i>")
        self.button.add_class(MAIN_CONTROL_CLASS)
        self.result.add_class(RESULT_CLASS)
        self.button.on_click(self.crash)
        self.view = widgets.VBox([widgets.HBox([self.point, self.button]), self.result])

    def crash(self, _button=None) -> RecoveryPlan:
        """Crash a writer after the slider's number of events; show and return the recovery plan."""
        count = self.point.value
        with tempfile.TemporaryDirectory(prefix="s09-crash-lab-") as scratch:
            plan = crash_and_plan(Path(self.folder or scratch) / "crash-lab.jsonl", count)
        self.crashes += 1
        self.summary = tr("crash {number}: killed after {count} events; a fresh process reads state {state} and must: "
                          "{action}", number=self.crashes, count=count, state=plan.state, action=plan.action)
        self.result.value = f"<p>{html.escape(self.summary)}</p>"
        return plan
