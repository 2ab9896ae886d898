"""Notebook 8, a live session: streamed deltas, a crash in the middle of a stream, cursors and
reconnects, validated appends, timeouts, and the session state machine drawn.

Everything here calls live.py (SessionEventLog), timeouts.py and turns.py; the crash runs a real
child process started with code.start_child and killed with code.kill_child.
"""

from __future__ import annotations

import html
import json
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import ipywidgets as widgets
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch

from ..code import JSONLTranscript, kill_child, start_child
from ..live import CommitRefused, SessionEventLog, is_delta
from ..timeouts import ManualClock
from ..turns import (
    ERROR,
    EXPIRED,
    IDLE,
    PAUSED,
    REASON_COMPLETE,
    REASON_ERROR,
    REASON_TIMEOUT,
    REASON_USER_INTERRUPT,
    RUNNING,
    SESSION_MAX_DURATION,
    START_RETRY,
    TRANSITIONS,
    parse_recorded_at,
    session_status,
)
from .display import MAIN_CONTROL_CLASS, RESULT_CLASS, figure_png
from .live_child import PROMPT, reply_pieces
from .style import OKABE_ITO


def short(item) -> str:
    """One line for a delta or a committed event."""
    if is_delta(item):
        return f"delta {item.part_id} #{item.index}: {item.text!r}"
    text = item.get("content") or item.get("reason") or item.get("name") or item.get("limit") or ""
    text = text if isinstance(text, str) else ""
    if "callId" in item:
        text = f"{item['callId']} {text}"
    return f"#{item['sequence']} {item['type']} {text[:60]}".rstrip()


# --------------------------------------------------------------------------- 1. streaming a reply


def stream_reply(log: SessionEventLog, prompt: str = PROMPT, pieces=None, pace: float = 0.0) -> dict:
    """One turn: the user's message, the reply streamed as deltas, its final part committed, turn_end.

    pace seconds pass between deltas, so a browser shows the text arriving. Returns the turn's
    number, how many deltas were sent and the committed final part.
    """
    pieces = reply_pieces() if pieces is None else pieces
    turn = log.start_turn()["turn_number"]
    log.user_message(prompt)
    stream = log.open_stream("text")
    for piece in pieces:
        stream.delta(piece)
        time.sleep(pace)
    final = stream.commit({"type": "message", "role": "assistant", "content": stream.text})
    log.end_turn(turn, REASON_COMPLETE, {"total_input": 900, "total_output": 40, "total_cost": 0.004})
    return {"turn": turn, "deltas": len(pieces), "final": final}


class LiveView:
    """A subscriber that shows the session as it happens: committed events, and the part being streamed.

    It subscribes with on_event, so it is called on its own delivery thread (s09-subscriber-N),
    never while the writer holds its lock. The button streams one more reply into the log.
    """

    SHOWN = 8  # committed events listed

    def __init__(self, log: SessionEventLog, *, pace: float = 0.04):
        self.log, self.pace = log, pace
        self.committed, self.deltas_seen, self.overlay = [], 0, {}  # overlay: part_id -> text so far
        self.timeline = []  # ("delta" or "committed", sequence or None), in arrival order
        self._lock = threading.Lock()
        self.button = widgets.Button(description="Stream a reply", button_style="primary")
        self.status = widgets.HTML()
        self.screen = widgets.HTML()
        self.button.add_class(MAIN_CONTROL_CLASS)
        self.screen.add_class(RESULT_CLASS)
        self.button.on_click(self.stream)
        self.view = widgets.VBox([widgets.HBox([self.button, self.status]), self.screen])
        self.subscription = log.subscribe(0, on_event=self.receive)
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
        rows += [f"<div style='color:{OKABE_ITO['grey']}'><i>{html.escape(part)} streaming (memory only): "
                 f"{html.escape(text)}</i></div>" for part, text in self.overlay.items()]
        head = (f"<b>{len(self.committed)} committed events</b> (on disk, with a sequence) &middot; "
                f"<b>{self.deltas_seen} deltas</b> received (memory only)")
        return head + "".join(rows)

    def stream(self, _button=None) -> dict | None:
        """Stream one reply into the log (refused if the session cannot start a turn)."""
        self.status.value = "<i>streaming...</i>"
        try:
            done = stream_reply(self.log, pace=self.pace)
        except CommitRefused as refused:
            self.status.value = f"refused: {html.escape(str(refused))}"
            return None
        self.subscription.wait_delivered()
        self.status.value = f"turn {done['turn']}: {done['deltas']} deltas, then 1 committed final part"
        return done


def draw_timeline(axes, timeline: list) -> None:
    """What a subscriber received, in order: deltas (memory only) and committed events (on disk)."""
    rows = {"delta": 0, "committed": 1}
    for kind, colour, label in (("delta", OKABE_ITO["grey"], "delta: no sequence, never written"),
                                ("committed", OKABE_ITO["blue"], "committed event: sequence, on disk")):
        xs = [i for i, (k, _) in enumerate(timeline, 1) if k == kind]
        axes.scatter(xs, [rows[kind]] * len(xs), color=colour, s=40, label=label)
    for i, (kind, sequence) in enumerate(timeline, 1):
        if kind == "committed":
            axes.annotate(str(sequence), (i, 1), textcoords="offset points", xytext=(0, 7), ha="center", fontsize=8)
    axes.set_yticks([0, 1], ["delta", "committed"])
    axes.set_ylim(-0.6, 1.9)
    axes.set_xlabel("order of arrival at the subscriber")
    axes.set_title("What a subscriber receives")
    axes.legend(loc="upper center", fontsize=8)


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
        streamed = "".join(self.client_deltas)
        return "\n".join([
            f"the client received {len(self.client_committed)} committed events {list(self.client_committed)} "
            f"and {len(self.client_deltas)} deltas: {streamed!r}",
            f"the file holds {len(self.file_sequences)} committed events {list(self.file_sequences)}; "
            f"deltas found in it: {self.deltas_in_file}",
            f"a fresh process reads: {self.status}; calls still waiting: {list(self.status.pending_calls)}",
        ])


def crash_mid_stream(path, deltas: int = 6) -> StreamCrash:
    """Kill a writer (SIGKILL; TerminateProcess on Windows) after it streamed `deltas` pieces of a reply."""
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
    events = JSONLTranscript(path).read_events()
    return StreamCrash(
        client_committed=tuple(item["committed"]["sequence"] for item in received if "committed" in item),
        client_deltas=tuple(item["delta"]["text"] for item in received if "delta" in item),
        file_sequences=tuple(event["sequence"] for event in events),
        file_text=Path(path).read_text(encoding="utf-8"),
        status=session_status(events),
    )


def draw_crash(axes, crash: StreamCrash) -> None:
    """Bars: committed events and deltas, as the client saw them before the kill and as the file holds them."""
    kinds = ["committed events", "deltas"]
    seen = [len(crash.client_committed), len(crash.client_deltas)]
    kept = [len(crash.file_sequences), crash.deltas_in_file]
    positions = range(len(kinds))
    axes.bar([p - 0.2 for p in positions], seen, width=0.4, color=OKABE_ITO["sky"], label="seen by the client")
    axes.bar([p + 0.2 for p in positions], kept, width=0.4, color=OKABE_ITO["blue"], label="in the file after the kill")
    for p, (a, b) in enumerate(zip(seen, kept)):
        axes.annotate(str(a), (p - 0.2, a), ha="center", va="bottom")
        axes.annotate(str(b), (p + 0.2, b), ha="center", va="bottom")
    axes.set_xticks(list(positions), kinds)
    axes.set_ylim(0, max(seen) + 2)
    axes.set_ylabel("count")
    axes.set_title("Killed in the middle of a stream")
    axes.legend()


# --------------------------------------------------------------------------- 3. cursors and reconnects


def chat(log: SessionEventLog, turns: int) -> None:
    """Add `turns` short turns (a question and a streamed answer each) to the log."""
    for n in range(turns):
        stream_reply(log, f"Question {n + 1}: what does fsync promise?",
                     ["It waits ", "until the disk ", "has the bytes."])


def ranges(numbers) -> str:
    """1, 2, 3, 7, 8 -> '1-3, 7-8'."""
    spans, numbers = [], list(numbers)
    for number in numbers:
        if spans and number == spans[-1][1] + 1:
            spans[-1][1] = number
        else:
            spans.append([number, number])
    return ", ".join(f"{a}-{b}" if a != b else f"{a}" for a, b in spans) or "nothing"


class Client:
    """A client that keeps its cursor (the last sequence it processed) and reconnects from it."""

    def __init__(self, log: SessionEventLog):
        self.log, self.cursor, self.received, self.deltas, self.connections = log, 0, [], 0, 0
        self.subscription = None

    def connect(self) -> None:
        self.subscription = self.log.subscribe(self.cursor)
        self.connections += 1

    def read(self) -> None:
        """Process everything that arrived."""
        for item in self.subscription.poll():
            if is_delta(item):
                self.deltas += 1
            else:
                self.received.append(item["sequence"])
                self.cursor = item["sequence"]

    def disconnect(self) -> None:
        self.read()
        self.subscription.release()
        self.subscription = None

    def report(self) -> str:
        expected = list(range(1, self.log.last_sequence + 1))
        counts = Counter(self.received)
        gaps = sorted(set(expected) - set(counts))
        repeats = sorted(n for n, c in counts.items() if c > 1)
        verdict = ("no gap, no duplicate, in order" if not gaps and not repeats and self.received == expected
                   else f"GAPS {gaps}, REPEATS {repeats}")
        return (f"received sequences {ranges(self.received)} over {self.connections} connections "
                f"(the log is at {self.log.last_sequence}): {verdict}")


def handover(log: SessionEventLog, way: str, meanwhile) -> str:
    """Attach a client at cursor = the log's last sequence, one of three ways, while meanwhile() commits.

    "replay, then subscribe": read the past, then listen from what is last *now*;
    "subscribe, then replay": listen first, then read the past from the file;
    "subscribe(from_sequence)": the log's own hand-over. Returns what the client got.
    """
    cursor = log.last_sequence - 2  # the client has seen all but the last two events
    if way == "replay, then subscribe":
        got = [event["sequence"] for event in log.read_from(cursor)]
        meanwhile()  # another thread commits here
        subscription = log.subscribe(log.last_sequence)
    elif way == "subscribe, then replay":
        subscription = log.subscribe(log.last_sequence)
        meanwhile()
        got = [event["sequence"] for event in log.read_from(cursor)]
    else:
        subscription = log.subscribe(cursor)
        got = []
        meanwhile()
    log.commit({"type": "message", "role": "user", "content": "and one more, live"})
    got += [item["sequence"] for item in subscription.poll() if not is_delta(item)]
    subscription.release()
    expected = list(range(cursor + 1, log.last_sequence + 1))
    counts = Counter(got)
    missed = [n for n in expected if n not in counts]
    twice = [n for n, c in counts.items() if c > 1]
    return f"{way:<26} got {ranges(got):<12} missed {missed or 'nothing'}, twice {twice or 'nothing'}"


def stress_handover(path, events: int = 300, attaches: int = 50) -> str:
    """A thread commits events while subscribers attach one after another; check each saw its events once."""
    log = SessionEventLog.create(path)
    started, attached = threading.Event(), []

    def writer():
        started.set()
        for n in range(events):
            log.commit({"type": "message", "role": "user", "content": f"event {n}"})

    thread = threading.Thread(target=writer)
    thread.start()
    started.wait()
    for _ in range(attaches):
        cursor = log.last_sequence
        attached.append((cursor, log.subscribe(cursor)))
    thread.join()
    bad = 0
    for cursor, subscription in attached:
        got = [item["sequence"] for item in subscription.poll()]
        bad += got != list(range(cursor + 1, events + 1))
    log.close()
    return (f"{attaches} subscribers attached while a thread committed {events} events: "
            f"{attaches - bad} saw every event after their cursor exactly once, in order; {bad} did not")


# --------------------------------------------------------------------------- 4. validated appends


def race_to_close(log: SessionEventLog, racers: int = 2) -> str:
    """Open a turn, let `racers` threads try to close it at the same moment; say who won."""
    turn = log.start_turn()["turn_number"]
    start, outcomes, reasons = threading.Barrier(racers), Counter(), set()

    def close():
        start.wait()
        try:
            log.end_turn(turn, REASON_COMPLETE)
            outcomes["won"] += 1
        except CommitRefused as refused:
            outcomes["refused"] += 1
            reasons.add(str(refused))

    threads = [threading.Thread(target=close) for _ in range(racers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    ends = [e for e in log.read_from(0) if e["type"] == "turn_end" and e["turn_number"] == turn]
    return (f"{racers} threads tried to close turn {turn}: {outcomes['won']} won, {outcomes['refused']} refused "
            f"({'; '.join(sorted(reasons))}); turn_end events for turn {turn} in the file: {len(ends)}")


def refusal(action) -> str:
    """Run action; return 'accepted: ...' or 'refused: <why>'."""
    try:
        result = action()
    except CommitRefused as refused:
        return f"refused: {refused}"
    records = result if isinstance(result, list) else [result]
    return "accepted: " + (", ".join(short(record) for record in records) or "nothing to record")


# --------------------------------------------------------------------------- 5. timeouts


TIMELINE_HEADERS = ("sequence", "recorded at (s)", "type", "what")


def timeline_rows(records) -> list[list]:
    """Rows for a table of committed events: sequence, seconds since the first, type, what it says."""
    rows, start = [], None
    for record in records:
        moment = parse_recorded_at(record["recorded_at"])
        start = start or moment
        detail = record.get("reason") or record.get("name") or record.get("content") or ""
        if record["type"] == "timeout":
            detail = f"{record['limit']}: allowed {record['allowed']:g}, observed {record['observed']:g}"
        elif record["type"] == "function_call_result":
            detail = f"{record['callId']}: " + (record.get("error") or str(record.get("output", "")))
        elif record["type"] == "turn_start":
            detail = f"turn {record['turn_number']} ({record.get('reason')})"
        elif record["type"] == "turn_end":
            detail = f"turn {record['turn_number']} ({record['reason']})"
        rows.append([record["sequence"], f"{(moment - start).total_seconds():g}", record["type"], detail])
    return rows


def live_state(log: SessionEventLog) -> str:
    """The state of a live session in a few words: state, open turn, calls waiting."""
    status = log.status()
    turn = f"turn {status.open_turn} open" if status.open_turn is not None else "no turn open"
    return f"state {status.state}, {turn}, calls waiting {list(status.pending_calls)}"


def timeout_session(path) -> tuple[list, str]:
    """A session whose tool call times out (the turn goes on), then whose turn times out (expired).

    Returns the committed events and the status after each check of the limits.
    """
    clock = ManualClock()
    said = []
    with SessionEventLog.create(path, clock=clock) as log:
        log.start_turn()
        log.user_message("Run the slow integration tests.")
        log.record_tool_call("call_1", "run_tests", {"args": ["--slow"]})
        clock.advance(31)
        log.check_timeouts()
        said.append(f"after 31 s: {live_state(log)}")
        log.record_tool_call("call_2", "run_tests", {"args": ["--slow", "-x"]})
        clock.advance(20)
        log.record_tool_result("call_2", "2 failed")
        clock.advance(70)
        log.check_timeouts()
        said.append(f"after 121 s: {live_state(log)}")
        said.append("start another turn: " + refusal(log.start_turn))
        events = log.read_from(0)
    return events, "\n".join(said)


# --------------------------------------------------------------------------- 6. the state machine, drawn

_POSITIONS = {IDLE: (0.0, 1.2), RUNNING: (3.0, 1.2), PAUSED: (3.0, 2.9), ERROR: (6.0, 1.2), EXPIRED: (6.0, -0.6)}
# Every edge of TRANSITIONS but the loops and session_max_duration (which leads from every state to
# expired: a footnote says so): (from, to) -> (curvature, where its label goes, its alignment).
_LAYOUT = {
    (IDLE, RUNNING): (-0.3, (1.2, 1.9), "center"),
    (RUNNING, IDLE): (-0.3, (1.5, 0.3), "center"),
    (RUNNING, PAUSED): (-0.4, (2.65, 2.4), "right"),
    (PAUSED, RUNNING): (-0.4, (3.35, 2.4), "left"),
    (RUNNING, ERROR): (-0.3, (4.5, 1.9), "center"),
    (ERROR, RUNNING): (-0.3, (4.9, 0.7), "center"),
    (RUNNING, EXPIRED): (0.0, (3.9, -0.15), "center"),
    (IDLE, EXPIRED): (0.25, (1.9, -0.75), "center"),
}
FOOTNOTE = "from every state: limit(session_max_duration) -> expired"


def edge_labels() -> dict:
    """(from, to) -> the triggers that move the state so, one per line (loops and session_max_duration left out)."""
    edges = {}
    for (state, trigger), target in TRANSITIONS.items():
        if state != target and SESSION_MAX_DURATION not in trigger:
            edges.setdefault((state, target), []).append(trigger.replace("timeout(", "limit("))
    return {edge: "\n".join(sorted(triggers)) for edge, triggers in edges.items()}


def draw_state_machine(axes, current: str | None = None) -> None:
    """The session's states and transitions (turns.TRANSITIONS); the current state filled in."""
    for (source, target), label in edge_labels().items():
        bend, (lx, ly), align = _LAYOUT[(source, target)]
        axes.add_patch(FancyArrowPatch(_POSITIONS[source], _POSITIONS[target], connectionstyle=f"arc3,rad={bend}",
                                       arrowstyle="-|>", mutation_scale=14, shrinkA=24, shrinkB=24,
                                       color=OKABE_ITO["grey"]))
        axes.text(lx, ly, label, fontsize=7, ha=align, va="center",
                  bbox={"boxstyle": "round", "facecolor": "white", "edgecolor": "none", "alpha": 0.85})
    for state, (x, y) in _POSITIONS.items():
        here = state == current
        axes.text(x, y, state, ha="center", va="center", fontsize=11, fontweight="bold" if here else "normal",
                  color="white" if here else "black",
                  bbox={"boxstyle": "round,pad=0.5", "edgecolor": OKABE_ITO["black"],
                        "facecolor": OKABE_ITO["vermillion"] if here else "white"})
    axes.text(-0.6, 3.3, FOOTNOTE, fontsize=7, ha="left", va="center", color=OKABE_ITO["grey"])
    axes.set_xlim(-0.7, 6.8)
    axes.set_ylim(-1.2, 3.5)
    axes.axis("off")
    axes.set_title(f"The session state machine (now: {current})" if current else "The session state machine")


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


class StateMachinePanel:
    """Pick a step, press Do it: the step is a validated commit (or is refused), and the drawing follows."""

    def __init__(self, folder):
        self.folder, self.sessions = Path(folder), 0
        self.step = widgets.Dropdown(options=list(STEPS), value="start turn", description="step")
        self.button = widgets.Button(description="Do it", button_style="info")
        self.new = widgets.Button(description="New session")
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
        self.result.value = f"session {self.sessions}: new, state <b>{self.log.status().state}</b>"
        self._draw()

    def do(self, _button=None) -> str:
        """Apply the chosen step; show and return what happened."""
        said = refusal(lambda: STEPS[self.step.value](self.log))
        state = self.log.status().state
        self.result.value = f"{html.escape(self.step.value)}: {html.escape(said)} &rarr; state <b>{state}</b>"
        self._draw()
        return said

    def _draw(self) -> None:
        self.picture.value = state_machine_png(self.log.status().state)


_PICTURES = {}  # state -> PNG bytes: each drawing is made once per kernel


def state_machine_png(state: str) -> bytes:
    """The state machine drawn with state filled in, as PNG bytes (made once per state)."""
    if state not in _PICTURES:
        figure = Figure(figsize=(8, 4.2))
        draw_state_machine(figure.subplots(), state)
        _PICTURES[state] = figure_png(figure)
    return _PICTURES[state]

