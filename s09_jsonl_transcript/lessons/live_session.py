"""Notebook 8, a live session: streamed deltas, a crash in the middle of a stream, cursors and
reconnects, validated appends, timeouts, and the session state machine drawn.

Everything here calls the production package (SessionEventLog, timeouts and turns); the crash runs a
real child process started with crashlab.children.start_child and killed with crashlab.children.kill_child.

Every sentence a student reads (printed, in a widget, in a plot) comes from here, in the language
chosen in the notebook's first cell (locale/zh/live_session.json holds the Chinese). What the
session writes into its transcript (a message's content, an error result) is evidence, the same in
both languages; the library's refusal reasons (CommitRefused) stay English in the library and are shown
through i18n.library_text (locale/zh/library.json).
"""

from __future__ import annotations

import html
import json
import threading
import time
import unicodedata
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import ipywidgets as widgets
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch

from ..crashlab.children import kill_child, start_child
from ..lab import DurableTranscript
from ..production import turns
from ..production.live import CommitRefused, SessionEventLog, is_delta
from ..production.timeouts import ManualClock
from ..production.turns import (
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
from ..text import i18n
from .display import MAIN_CONTROL_CLASS, RESULT_CLASS, figure_png, html_table
from .live_child import PROMPT, reply_pieces
from .style import OKABE_ITO

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
            done = stream_reply(self.log, pace=self.pace)
        except CommitRefused as refused:
            self.status.value = html.escape(refused_said(refused))
            return None
        self.subscription.wait_delivered()
        self.status.value = tr("turn {turn}: {deltas} deltas, then 1 committed final part",
                               turn=done["turn"], deltas=done["deltas"])
        return done


def subscriber_and_file(view: LiveView, on_disk: list) -> str:
    """What the subscriber received against what the file holds, and the final part as it was written."""
    final = next(event for event in on_disk if "part_id" in event and event["type"] != "part_start")
    return "\n".join([
        tr("subscriber: {deltas} deltas, {committed} committed events", deltas=view.deltas_seen,
           committed=len(view.committed)),
        tr("file: {lines} lines, types {types}", lines=len(on_disk), types=[event["type"] for event in on_disk]),
        tr("the final part: sequence {sequence}, part_id {part_id}, content {content}", sequence=final["sequence"],
           part_id=repr(final["part_id"]), content=repr(final["content"])),
    ])


def draw_timeline(axes, timeline: list) -> None:
    """What a subscriber received, in order: deltas (memory only) and committed events (on disk)."""
    rows = {"delta": 0, "committed": 1}
    for kind, colour, label in (("delta", OKABE_ITO["grey"], tr("delta: no sequence, never written")),
                                ("committed", OKABE_ITO["blue"], tr("committed event: sequence, on disk"))):
        xs = [i for i, (k, _) in enumerate(timeline, 1) if k == kind]
        axes.scatter(xs, [rows[kind]] * len(xs), color=colour, s=40, label=label)
    for i, (kind, sequence) in enumerate(timeline, 1):
        if kind == "committed":
            axes.annotate(str(sequence), (i, 1), textcoords="offset points", xytext=(0, 7), ha="center", fontsize=8)
    axes.set_yticks([0, 1], [tr("delta"), tr("committed")])
    axes.set_ylim(-0.6, 1.9)
    axes.set_xlabel(tr("order of arrival at the subscriber"))
    axes.set_title(tr("What a subscriber receives"))
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


def draw_crash(axes, crash: StreamCrash) -> None:
    """Bars: committed events and deltas, as the client saw them before the kill and as the file holds them."""
    kinds = [tr("committed events"), tr("deltas")]
    seen = [len(crash.client_committed), len(crash.client_deltas)]
    kept = [len(crash.file_sequences), crash.deltas_in_file]
    positions = range(len(kinds))
    axes.bar([p - 0.2 for p in positions], seen, width=0.4, color=OKABE_ITO["sky"], label=tr("seen by the client"))
    axes.bar([p + 0.2 for p in positions], kept, width=0.4, color=OKABE_ITO["blue"],
             label=tr("in the file after the kill"))
    for p, (a, b) in enumerate(zip(seen, kept)):
        axes.annotate(str(a), (p - 0.2, a), ha="center", va="bottom")
        axes.annotate(str(b), (p + 0.2, b), ha="center", va="bottom")
    axes.set_xticks(list(positions), kinds)
    axes.set_ylim(0, max(seen) + 2)
    axes.set_ylabel(tr("count"))
    axes.set_title(tr("Killed in the middle of a stream"))
    axes.legend()


# --------------------------------------------------------------------------- 3. cursors and reconnects


def chat(log: SessionEventLog, turns: int) -> None:
    """Add `turns` short turns (a question and a streamed answer each) to the log."""
    for n in range(turns):
        stream_reply(log, f"Question {n + 1}: what does fsync promise?",
                     ["It waits ", "until the disk ", "has the bytes."])


def cursor_reads(log: SessionEventLog, cursor: int, after: list, pages: list) -> str:
    """What a client read: the events after its cursor (read_from), then pages of older history (page_back)."""
    lines = [tr("last sequence: {sequence}", sequence=log.last_sequence),
             tr("after cursor {cursor}: {sequences}", cursor=cursor, sequences=[event["sequence"] for event in after])]
    lines += [tr("page {number}: events {first}-{last}", number=number, first=page.events[0]["sequence"],
                 last=page.events[-1]["sequence"]) for number, page in enumerate(pages, 1)]
    return "\n".join(lines)


def ranges(numbers) -> str:
    """1, 2, 3, 7, 8 -> '1-3, 7-8'."""
    spans, numbers = [], list(numbers)
    for number in numbers:
        if spans and number == spans[-1][1] + 1:
            spans[-1][1] = number
        else:
            spans.append([number, number])
    return ", ".join(f"{a}-{b}" if a != b else f"{a}" for a, b in spans) or tr("nothing")


class Client:
    """A client that keeps its cursor (the last sequence it processed) and reconnects from the next one.

    Cursors are inclusive: subscribe(from_sequence=cursor + 1) starts at the first event not seen yet.
    """

    def __init__(self, log: SessionEventLog):
        self.log, self.cursor, self.received, self.deltas, self.connections = log, 0, [], 0, 0
        self.subscription = None

    def connect(self) -> None:
        self.subscription = self.log.subscribe(from_sequence=self.cursor + 1)
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

    def where(self) -> str:
        """Whether the client is connected, and its cursor, in a few words."""
        if self.subscription is None:
            return tr("disconnected at cursor {cursor}", cursor=self.cursor)
        return tr("connected, cursor {cursor}", cursor=self.cursor)

    def report(self) -> str:
        expected = list(range(1, self.log.last_sequence + 1))
        counts = Counter(self.received)
        gaps = sorted(set(expected) - set(counts))
        repeats = sorted(n for n, c in counts.items() if c > 1)
        verdict = (tr("no gap, no duplicate, in order") if not gaps and not repeats and self.received == expected
                   else tr("GAPS {gaps}, REPEATS {repeats}", gaps=gaps, repeats=repeats))
        return tr("received sequences {received} over {connections} connections (the log is at {last}): {verdict}",
                  received=ranges(self.received), connections=self.connections, last=self.log.last_sequence,
                  verdict=verdict)


HANDOVERS = ("replay, then subscribe", "subscribe, then replay", "subscribe(from_sequence)")


def handover_label(way: str) -> str:
    """One of HANDOVERS in the language in use."""
    return {"replay, then subscribe": tr("replay, then subscribe"),
            "subscribe, then replay": tr("subscribe, then replay")}.get(way, way)  # subscribe(...) is code


def handover(log: SessionEventLog, way: str, meanwhile) -> str:
    """Attach a client at cursor = the log's last sequence, one of three ways, while meanwhile() commits.

    "replay, then subscribe": read the past, then listen from what is last *now*;
    "subscribe, then replay": listen first, then read the past from the file;
    "subscribe(from_sequence)": the log's own hand-over. Returns what the client got.
    """
    if way not in HANDOVERS:
        raise ValueError(f"way must be one of {', '.join(HANDOVERS)}, not {way!r}")
    cursor = log.last_sequence - 2  # the client has seen all but the last two events
    if way == "replay, then subscribe":
        got = [event["sequence"] for event in log.read_from(cursor + 1)]
        meanwhile()  # another thread commits here
        subscription = log.subscribe(from_sequence=log.last_sequence + 1)
    elif way == "subscribe, then replay":
        subscription = log.subscribe(from_sequence=log.last_sequence + 1)
        meanwhile()
        got = [event["sequence"] for event in log.read_from(cursor + 1)]
    else:
        subscription = log.subscribe(from_sequence=cursor + 1)
        got = []
        meanwhile()
    log.commit({"type": "message", "role": "user", "content": "and one more, live"})
    got += [item["sequence"] for item in subscription.poll() if not is_delta(item)]
    subscription.release()
    expected = list(range(cursor + 1, log.last_sequence + 1))
    counts = Counter(got)
    missed = [n for n in expected if n not in counts]
    twice = [n for n, c in counts.items() if c > 1]
    return pad(handover_label(way), 26) + " " + tr(
        "got {got} missed {missed}, twice {twice}", got=pad(ranges(got), 12),
        missed=missed or tr("nothing"), twice=twice or tr("nothing"))


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
        attached.append((cursor, log.subscribe(from_sequence=cursor + 1)))
    thread.join()
    bad = 0
    for cursor, subscription in attached:
        got = [item["sequence"] for item in subscription.poll()]
        bad += got != list(range(cursor + 1, events + 1))
    log.close()
    return tr("{attaches} subscribers attached while a thread committed {events} events: "
              "{good} saw every event after their cursor exactly once, in order; {bad} did not",
              attaches=attaches, events=events, good=attaches - bad, bad=bad)


# --------------------------------------------------------------------------- 3b. rewind and fork


def first_turn_end(log: SessionEventLog) -> int:
    """The sequence of the session's first turn_end: where a rewind to "after turn 1" points."""
    return next(event["sequence"] for event in log.read_from(1) if event["type"] == "turn_end")


def rewind_text(log: SessionEventLog, marker: dict, before: bytes) -> str:
    """What a rewind did: the file only grew, and every projection reads the session without the rewound events.

    before is the file's bytes just before the marker was appended.
    """
    raw = DurableTranscript(log.transcript.path).read_events()
    shown = log.materialized()
    questions = [message["content"] for message in log.replay() if message["role"] == "user"]
    report = turns.audit(raw)
    return "\n".join([
        tr("the file holds {count} events; the rewind marker is event {sequence}, to_sequence {target}",
           count=len(raw), sequence=marker["sequence"], target=marker["to_sequence"]),
        tr("the bytes in front of the marker are unchanged: {same}",
           same=log.transcript.path.read_bytes().startswith(before)),
        tr("every projection reads {count} events: events {first}-{last}", count=len(shown),
           first=shown[0]["sequence"], last=shown[-1]["sequence"]),
        tr("replay: the questions {questions}", questions=questions),
        tr("state machine: {status}; the audit counts {turns} ended turn(s), {tokens} input tokens",
           status=status_said(log.status()), turns=report.turns_ended, tokens=report.input_tokens),
    ])


def fork_text(source: SessionEventLog, fork: SessionEventLog) -> str:
    """What a fork holds, and that a second fork under the same name is refused (created exclusively)."""
    copied = DurableTranscript(fork.transcript.path).read_events()
    try:
        source.fork(fork.session_id)
        again = tr("a second fork named {name}: written (this must never happen)", name=fork.session_id)
    except FileExistsError:
        again = tr("a second fork named {name}: refused (FileExistsError), the first untouched", name=fork.session_id)
    return "\n".join([
        tr("fork {name}: events 1-{upto} of {source}, then {marker} ({count} events, one batch)",
           name=fork.session_id, upto=copied[-1]["upto_sequence"], source=source.session_id,
           marker=copied[-1]["type"], count=len(copied)),
        tr("its envelope is its own: session_id {session}, event_id {event_id}", session=copied[0]["session_id"],
           event_id=copied[0]["event_id"]),
        again,
        tr("the fork goes on by itself: turn {turn} starts there; the source stays at sequence {last}",
           turn=fork.start_turn()["turn_number"], last=source.last_sequence),
    ])


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
            reasons.add(i18n.library_text(refused))

    threads = [threading.Thread(target=close) for _ in range(racers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    ends = [e for e in log.read_from(0) if e["type"] == "turn_end" and e["turn_number"] == turn]
    return tr("{racers} threads tried to close turn {turn}: {won} won, {refused} refused ({reasons}); "
              "turn_end events for turn {turn} in the file: {ends}", racers=racers, turn=turn,
              won=outcomes["won"], refused=outcomes["refused"], reasons="; ".join(sorted(reasons)), ends=len(ends))


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


# --------------------------------------------------------------------------- 5. timeouts


def timeline_headers() -> tuple:
    """The column names of timeline_rows, in the language in use."""
    return ("sequence", tr("recorded at (s)"), tr("type"), tr("what"))


def timeline_table(records):
    """The committed events as an HTML table (timeline_headers, timeline_rows)."""
    return html_table(timeline_headers(), timeline_rows(records))


def timeline_rows(records) -> list[list]:
    """Rows for a table of committed events: sequence, seconds since the first, type, what it says."""
    rows, start = [], None
    for record in records:
        moment = parse_recorded_at(record["recorded_at"])
        start = start or moment
        detail = record.get("reason") or record.get("name") or record.get("content") or ""
        if record["type"] == "timeout":
            detail = tr("{limit}: allowed {allowed}, observed {observed}", limit=record["limit"],
                        allowed=f"{record['allowed']:g}", observed=f"{record['observed']:g}")
        elif record["type"] == "function_call_result":
            detail = f"{record['callId']}: " + (record.get("error") or str(record.get("output", "")))
        elif record["type"] in ("turn_start", "turn_end"):
            detail = tr("turn {number} ({reason})", number=record["turn_number"], reason=record.get("reason"))
        rows.append([record["sequence"], f"{(moment - start).total_seconds():g}", record["type"], detail])
    return rows


def decision_label(decision: str) -> str:
    """What a fresh process does after a crash (turns.SessionStatus.decision) in the language in use."""
    labels = {
        turns.NOTHING_TO_DO: tr("nothing to do"),
        turns.WAIT_FOR_USER: tr("wait for the user"),
        turns.COMPACT_THEN_CONTINUE: tr("compact the context, then continue with the next turn"),
        turns.RERUN: tr("resume the unfinished turn"),
        turns.WAIT_FOR_RESUME: tr("wait for a resume_command"),
        turns.RETRY_OR_ABANDON: tr("offer retry or abandon"),
        turns.NEW_SESSION: tr("start a new session (expired is terminal)"),
        turns.NO_TURN_MARKERS: tr("no turn markers: replay as usual"),
    }
    return labels.get(decision, decision)


def status_said(status) -> str:
    """A turns.SessionStatus as its str() says it ('running: resume the unfinished turn 1'), in the language in use."""
    said = tr("{state}: {decision}", state=status.state, decision=decision_label(status.decision))
    if status.open_turn is not None and status.state == RUNNING:
        said += f" {status.open_turn}"
    if status.anomalies:
        said += tr(" ({count} anomalies)", count=len(status.anomalies))
    return said


def live_state(log: SessionEventLog) -> str:
    """The state of a live session in a few words: state, open turn, calls waiting."""
    status = log.status()
    turn = (tr("turn {number} open", number=status.open_turn) if status.open_turn is not None
            else tr("no turn open"))
    return tr("state {state}, {turn}, calls waiting {calls}", state=status.state, turn=turn,
              calls=list(status.pending_calls))


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
        said.append(tr("after {seconds} s: {state}", seconds=31, state=live_state(log)))
        log.record_tool_call("call_2", "run_tests", {"args": ["--slow", "-x"]})
        clock.advance(20)
        log.record_tool_result("call_2", "2 failed")
        clock.advance(70)
        log.check_timeouts()
        said.append(tr("after {seconds} s: {state}", seconds=121, state=live_state(log)))
        said.append(tr("start another turn: {result}", result=refusal(log.start_turn)))
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
    (ERROR, RUNNING): (0.6, (5.3, 2.15), "center"),  # above running -> error: clear of the edge to expired
    (RUNNING, EXPIRED): (0.0, (3.9, -0.15), "center"),
    (IDLE, EXPIRED): (0.25, (1.9, -0.75), "center"),
}


def footnote() -> str:
    """The drawing's footnote: the one transition it does not draw."""
    return tr("from every state: limit(session_max_duration) -> expired")


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
    axes.text(-0.6, 3.3, footnote(), fontsize=7, ha="left", va="center", color=OKABE_ITO["grey"])
    axes.set_xlim(-0.7, 6.8)
    axes.set_ylim(-1.2, 3.5)
    axes.axis("off")
    axes.set_title(tr("The session state machine (now: {state})", state=current) if current
                   else tr("The session state machine"))


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
    """Pick a step, press Do it: the step is a validated commit (or is refused), and the drawing follows.

    step.value is a key of STEPS (English) in both languages; the dropdown shows step_label(key).
    After each step, last_step says it in one line: the step, then what happened.
    """

    def __init__(self, folder):
        self.folder, self.sessions, self.last_step = Path(folder), 0, ""
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
        self._draw()

    def do(self, _button=None) -> str:
        """Apply the chosen step; show and return what happened."""
        label = step_label(self.step.value)
        said = refusal(lambda: STEPS[self.step.value](self.log))
        state = self.log.status().state
        self.result.value = tr("{step}: {said} &rarr; state <b>{state}</b>", step=html.escape(label),
                               said=html.escape(said), state=state)
        self.last_step = pad(label, 26) + " " + said
        self._draw()
        return said

    def _draw(self) -> None:
        self.picture.value = state_machine_png(self.log.status().state)


_PICTURES = {}  # (language, state) -> PNG bytes: each drawing is made once per kernel


def state_machine_png(state: str) -> bytes:
    """The state machine drawn with state filled in, as PNG bytes (made once per state and language)."""
    key = (i18n.current(), state)
    if key not in _PICTURES:
        figure = Figure(figsize=(8, 4.2))
        draw_state_machine(figure.subplots(), state)
        _PICTURES[key] = figure_png(figure)
    return _PICTURES[key]

