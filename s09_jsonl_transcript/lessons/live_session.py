"""Notebook 9, a live session: its two widget panels, the crash of a writer in the middle of a stream, and the
words they show.

The notebook writes its mechanisms in its own cells: how a reply is streamed, the subscriber that keeps a
cursor, the drawings. The panels here take them as arguments (LiveView streams with the cell's function,
StateMachinePanel draws with the cell's function), so the widgets stay out of the notebook's way and no
function here creates a figure. Everything calls the production package (SessionEventLog, timeouts and
turns); the crash runs a real child process (lessons/live_child.py) started with
crashlab.children.start_child and killed with crashlab.children.kill_child.

Every sentence a student reads comes from here or from the notebook's own catalog, in the language chosen in
the notebook's first cell (locale/zh/live_session.json holds the Chinese). What the session writes into its
transcript (a message's content, an error result) is evidence, the same in both languages; the library's
refusal reasons (CommitRefused) stay English in the library and are shown through i18n.library_text.
"""

from __future__ import annotations

import html
import json
import threading
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import ipywidgets as widgets

from ..crashlab.children import kill_child, start_child
from ..lab import DurableTranscript
from ..production.live import CommitRefused, SessionEventLog, is_delta
from ..production.timeouts import ManualClock
from ..production.turns import (
    REASON_COMPLETE,
    REASON_ERROR,
    REASON_TIMEOUT,
    REASON_USER_INTERRUPT,
    START_RETRY,
    session_status,
)
from ..text import i18n
from .display import MAIN_CONTROL_CLASS, RESULT_CLASS, figure_png
from .live_child import reply_pieces
from .style import OKABE_ITO
from .turn_words import status_said

tr = i18n.translator("live_session")


def pad(text: str, width: int) -> str:
    """text padded with spaces to width columns, a Chinese character counting two (as a terminal shows it)."""
    columns = sum(2 if unicodedata.east_asian_width(character) in "WF" else 1 for character in text)
    return text + " " * max(width - columns, 0)


def short(item) -> str:
    """One line for a delta or a committed event."""
    if is_delta(item):
        return tr("delta {part_id} #{index}: {piece}", part_id=item.part_id, index=item.index, piece=repr(item.text))
    text = item.get("content") or item.get("reason") or item.get("name") or item.get("limit") or ""
    text = text if isinstance(text, str) else ""
    if "callId" in item:
        text = f"{item['callId']} {text}"
    return f"#{item['sequence']} {item['type']} {text[:60]}".rstrip()


# --------------------------------------------------------------------------- 1. the live view


class LiveView:
    """A subscriber that shows the session as it happens: committed events, and the part being streamed.

    It subscribes with on_event, so it is called on its own delivery thread (s09-subscriber-N), never while
    the writer holds its lock. The button calls reply(log, pace) (the notebook's function: one turn, its
    reply streamed as deltas, pace seconds apart), which returns {"turn", "deltas", "final"}.
    """

    SHOWN = 8  # committed events listed

    def __init__(self, log: SessionEventLog, reply: Callable[[SessionEventLog, float], dict], *, pace: float = 0.04):
        self.log, self.reply, self.pace = log, reply, pace
        self.committed, self.deltas_seen, self.overlay = [], 0, {}  # overlay: part_id -> text so far
        self.timeline = []  # ("delta" or "committed", sequence or None), in arrival order
        self._lock = threading.Lock()
        self.button = widgets.Button(description=tr("Stream a reply"), button_style="primary")
        self.status = widgets.HTML()
        self.screen = widgets.HTML()
        self.button.add_class(MAIN_CONTROL_CLASS)
        self.screen.add_class(RESULT_CLASS)
        self.button.on_click(self.stream)
        self.view = widgets.VBox([widgets.HBox([self.button, self.status]), self.screen])
        self.subscription = log.subscribe(from_sequence=1, on_event=self.receive)
        self.subscription.wait_delivered()

    def receive(self, item) -> None:
        """on_event: fold one item into what the screen shows (a delta goes into the overlay)."""
        with self._lock:
            if is_delta(item):
                self.deltas_seen += 1
                self.overlay[item.part_id] = self.overlay.get(item.part_id, "") + item.text
                self.timeline.append(("delta", None))
            else:
                self.overlay.pop(item.get("part_id"), None)  # the committed part replaces its deltas
                for part in item.get("unfinished_parts", ()):  # a turn ended without this part: its text is gone
                    self.overlay.pop(part, None)
                self.committed.append(item)
                self.timeline.append(("committed", item["sequence"]))
            self.screen.value = self._html()

    def _html(self) -> str:
        rows = [f"<div>{html.escape(short(event))}</div>" for event in self.committed[-self.SHOWN:]]
        rows += [f"<div style='color:{OKABE_ITO['grey']}'><i>"
                 + tr("{part} streaming (memory only): {so_far}", part=html.escape(part), so_far=html.escape(text))
                 + "</i></div>" for part, text in self.overlay.items()]
        head = tr("<b>{committed} committed events</b> (on disk, with a sequence) &middot; "
                  "<b>{deltas} deltas</b> received (memory only)", committed=len(self.committed),
                  deltas=self.deltas_seen)
        return head + "".join(rows)

    def stream(self, _button=None) -> dict | None:
        """Stream one reply into the log (refused if the session cannot start a turn)."""
        self.status.value = "<i>" + tr("streaming...") + "</i>"
        try:
            done = self.reply(self.log, self.pace)
        except CommitRefused as refused:
            self.status.value = html.escape(refused_said(refused))
            return None
        self.subscription.wait_delivered()
        self.status.value = tr("turn {turn}: {deltas} deltas, then 1 committed final part",
                               turn=done["turn"], deltas=done["deltas"])
        return done


# --------------------------------------------------------------------------- 2. a crash in the middle of a stream


@dataclass(frozen=True)
class StreamCrash:
    """What the client saw before the writer was killed in the middle of a stream, and what the file holds."""

    client_committed: tuple  # sequences of committed events the client received
    client_deltas: tuple  # the texts of the deltas the client received
    file_sequences: tuple  # sequences a fresh reader finds in the file
    file_text: str  # the file's bytes, decoded
    status: object  # turns.SessionStatus a fresh process folds

    @property
    def deltas_in_file(self) -> int:
        """How many of the deltas the client received appear anywhere in the file."""
        return sum(1 for text in self.client_deltas if text.strip() and text.strip() in self.file_text)

    def __str__(self):
        return "\n".join([
            tr("the client received {count} committed events {sequences} and {deltas} deltas: {streamed}",
               count=len(self.client_committed), sequences=list(self.client_committed),
               deltas=len(self.client_deltas), streamed=repr("".join(self.client_deltas))),
            tr("the file holds {count} committed events {sequences}; deltas found in it: {deltas}",
               count=len(self.file_sequences), sequences=list(self.file_sequences), deltas=self.deltas_in_file),
            tr("a fresh process reads: {status}; calls still waiting: {calls}",
               status=status_said(self.status), calls=list(self.status.pending_calls)),
        ])


def crash_mid_stream(path, deltas: int = 6) -> StreamCrash:
    """Kill a writer (SIGKILL) after it streamed `deltas` pieces of a reply."""
    if not 1 <= deltas <= len(reply_pieces()):
        raise ValueError(f"deltas must be between 1 and {len(reply_pieces())}, not {deltas!r}")
    child = start_child("s09_jsonl_transcript.lessons.live_child:stream_writer_child", path, deltas)
    received = []
    try:
        for line in child.stdout:
            item = json.loads(line)
            if "waiting" in item:
                break
            received.append(item)
    finally:
        errors = kill_child(child)[1]
    if not received:
        raise RuntimeError(f"the writer died before it streamed: {errors.strip()[-300:]}")
    events = DurableTranscript(path).read_events()
    return StreamCrash(
        client_committed=tuple(item["committed"]["sequence"] for item in received if "committed" in item),
        client_deltas=tuple(item["delta"]["text"] for item in received if "delta" in item),
        file_sequences=tuple(event["sequence"] for event in events),
        file_text=Path(path).read_text(encoding="utf-8"),
        status=session_status(events),
    )


# --------------------------------------------------------------------------- what a step did, in words


def refused_said(refused: CommitRefused) -> str:
    """'refused: <why>': why is the library's own message, shown through i18n.library_text."""
    return tr("refused: {why}", why=i18n.library_text(refused))


def refusal(action) -> str:
    """Run action; return 'accepted: ...' or 'refused: <why>'."""
    try:
        result = action()
    except CommitRefused as refused:
        return refused_said(refused)
    records = result if isinstance(result, list) else [result]
    return tr("accepted: {records}", records=", ".join(short(record) for record in records) or tr("nothing to record"))


def live_state(log: SessionEventLog) -> str:
    """The state of a live session in a few words: state, open turn, calls waiting."""
    status = log.status()
    turn = (tr("turn {number} open", number=status.open_turn) if status.open_turn is not None
            else tr("no turn open"))
    return tr("state {state}, {turn}, calls waiting {calls}", state=status.state, turn=turn,
              calls=list(status.pending_calls))


# --------------------------------------------------------------------------- 6. the state machine panel


def _turn(log: SessionEventLog) -> int:
    """The turn an "end turn" step names: the open one, else the last one (refused), else 1 (refused)."""
    status = log.status()
    return status.open_turn or status.last_turn or 1


STEPS = {
    "user message": lambda log: log.user_message("Please run the tests."),
    "start turn": lambda log: log.start_turn(),
    "end turn: complete": lambda log: log.end_turn(_turn(log), REASON_COMPLETE),
    "end turn: error": lambda log: log.end_turn(_turn(log), REASON_ERROR),
    "end turn: user_interrupt": lambda log: log.end_turn(_turn(log), REASON_USER_INTERRUPT),
    "end turn: timeout": lambda log: log.end_turn(_turn(log), REASON_TIMEOUT),
    "pause": lambda log: log.pause(),
    "resume": lambda log: log.resume(),
    "retry": lambda log: log.retry(),
    "start turn (retry)": lambda log: log.start_turn(START_RETRY),
    "wait 601 s, check limits": lambda log: (log.clock.advance(601), log.check_timeouts())[1],
}


def step_label(step: str) -> str:
    """One of STEPS (its key is the English label) in the language in use."""
    labels = {
        "user message": tr("user message"),
        "start turn": tr("start turn"),
        "end turn: complete": tr("end turn: complete"),
        "end turn: error": tr("end turn: error"),
        "end turn: user_interrupt": tr("end turn: user_interrupt"),
        "end turn: timeout": tr("end turn: timeout"),
        "pause": tr("pause"),
        "resume": tr("resume"),
        "retry": tr("retry"),
        "start turn (retry)": tr("start turn (retry)"),
        "wait 601 s, check limits": tr("wait 601 s, check limits"),
    }
    return labels[step]


class StateMachinePanel:
    """Pick a step, press Do it: the step is a validated commit (or is refused), and the picture follows.

    draw(state) is the notebook's function: a matplotlib Figure of the state machine with state filled in;
    each picture is made once per state and language. step.value is a key of STEPS (English) in both
    languages; the dropdown shows step_label(key). After each step, last_step says it in one line.
    """

    def __init__(self, folder, draw: Callable[[str], object]):
        self.folder, self.draw, self.sessions, self.last_step = Path(folder), draw, 0, ""
        self.pictures = {}  # (language, state) -> PNG bytes
        self.step = widgets.Dropdown(options=[(step_label(step), step) for step in STEPS], value="start turn",
                                     description=tr("step"))
        self.button = widgets.Button(description=tr("Do it"), button_style="info")
        self.new = widgets.Button(description=tr("New session"))
        self.result = widgets.HTML()
        self.picture = widgets.Image(format="png")
        self.button.on_click(self.do)
        self.new.on_click(self.restart)
        self.view = widgets.VBox([widgets.HBox([self.step, self.button, self.new]), self.result, self.picture])
        self.restart()

    def restart(self, _button=None) -> None:
        """Start a fresh session (a new file: nothing is ever erased)."""
        self.sessions += 1
        self.log = SessionEventLog.create(self.folder / f"machine-{self.sessions}.jsonl", clock=ManualClock())
        self.result.value = tr("session {number}: new, state <b>{state}</b>", number=self.sessions,
                               state=self.log.status().state)
        self._show()

    def do(self, _button=None) -> str:
        """Apply the chosen step; show and return what happened."""
        label = step_label(self.step.value)
        said = refusal(lambda: STEPS[self.step.value](self.log))
        state = self.log.status().state
        self.result.value = tr("{step}: {said} &rarr; state <b>{state}</b>", step=html.escape(label),
                               said=html.escape(said), state=state)
        self.last_step = pad(label, 26) + " " + said
        self._show()
        return said

    def _show(self) -> None:
        state = self.log.status().state
        key = (i18n.current(), state)
        if key not in self.pictures:
            self.pictures[key] = figure_png(self.draw(state))
        self.picture.value = self.pictures[key]
