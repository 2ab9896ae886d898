"""Notebook 2, crash injection: kill a real agent process, recover with a fresh one, compare.

The agent runs in a child process (code.py's crash_agent_in_child) and is killed with SIGKILL
after a chosen number of acknowledged appends, optionally while its next append is stopped half-way
through its write (half of the enveloped record on disk: a partial tail). Where SIGKILL does not
exist the same steps are simulated in this process. The agent's clock ticks (ticking_clock), so
every crash of the same kind writes the same bytes. Every text a student sees is in the language in
use (i18n.use); the Chinese is in locale/zh/crash_injection.json.
"""

from __future__ import annotations

import html
import json
import signal
import tempfile
from dataclasses import dataclass
from pathlib import Path

import ipywidgets as widgets
from IPython.display import HTML
from matplotlib.figure import Figure

from .. import i18n
from ..code import BUG_FIX_SCRIPT, MockLLM, ReplayState, run_agent, ticking_clock
from ..crashlab import KillTrial, kill_campaign, kill_summary
from ..lab import DurableTranscript, crash_agent_in_child, simulate_agent_crash
from .display import MAIN_CONTROL_CLASS, RESULT_CLASS, figure_png, html_table
from .events_on_disk import display_width, pad
from .style import OKABE_ITO

tr = i18n.translator("crash_injection")

SIGKILL_AVAILABLE = hasattr(signal, "SIGKILL")
SCRIPT_LENGTH = len(BUG_FIX_SCRIPT)
# The agent can be killed after 1 .. SCRIPT_LENGTH - 1 appends: a next record must exist to cut in half.
KILL_POINTS = range(1, SCRIPT_LENGTH)

_ROW_COLORS = {
    "acknowledged": OKABE_ITO["blue"],
    "on disk": OKABE_ITO["green"],
    "recovered": OKABE_ITO["sky"],
}


@dataclass(frozen=True)
class CrashReport:
    """What one killed agent had acknowledged, what it left on disk, and what a fresh process rebuilt."""

    file_name: str
    kill_after: int
    real_kill: bool  # False when the crash was simulated (no SIGKILL on this system)
    acknowledged: tuple  # sequences whose append had returned before the kill
    complete_lines: int  # newline-terminated lines that survived
    partial_tail: bytes  # the bytes after the last newline: half of the record being written (b"" when none)
    recovered: tuple  # sequences a fresh DurableTranscript read back
    messages: int  # chat messages the fresh process rebuilt
    pending_calls: tuple  # callIds of tool calls the dead agent never answered

    @property
    def lost(self) -> tuple:
        """Acknowledged sequences the fresh process did not recover (the lesson promises none)."""
        return tuple(sequence for sequence in self.acknowledged if sequence not in self.recovered)

    @property
    def verdict(self) -> str:
        """One line: did everything acknowledged survive the crash?"""
        if self.lost:
            return tr("LOST acknowledged events {lost}", lost=list(self.lost))
        return tr("nothing acknowledged was lost ({count} of {count} recovered)", count=len(self.acknowledged))


def kill_mode_text() -> str:
    """Whether the crashes of notebook 2 kill a real child process here, or are simulated in the kernel."""
    if SIGKILL_AVAILABLE:
        return tr("SIGKILL is available: every crash below kills a real child process.")
    return tr("No SIGKILL on this system: every crash below is simulated inside this kernel.")


def crash_and_recover(path, kill_after: int, *, tear: bool = True) -> CrashReport:
    """Kill an agent after kill_after acknowledged appends, then rebuild its state in a fresh instance.

    The path must not exist yet: each crash writes its own transcript.
    """
    path = Path(path)
    if path.exists():
        raise FileExistsError(f"{path.name} already exists: give each crash a new file")
    if not isinstance(kill_after, int) or isinstance(kill_after, bool) or kill_after not in KILL_POINTS:
        raise ValueError(f"kill_after must be a whole number from {KILL_POINTS.start} to "
                         f"{KILL_POINTS.stop - 1}, not {kill_after!r}")
    if SIGKILL_AVAILABLE:
        acknowledged = crash_agent_in_child(path, kill_after, tear=tear, ticking=True)
    else:
        acknowledged = simulate_agent_crash(path, kill_after, tear, ticking=True)
    data = path.read_bytes()
    survivor = DurableTranscript(path)  # the replacement process: it only has the file
    state = survivor.recover()
    return CrashReport(
        file_name=path.name,
        kill_after=kill_after,
        real_kill=SIGKILL_AVAILABLE,
        acknowledged=tuple(acknowledged),
        complete_lines=data.count(b"\n"),
        partial_tail=data[data.rfind(b"\n") + 1:],
        recovered=tuple(event["sequence"] for event in survivor.read_events()),
        messages=state["message_count"],
        pending_calls=tuple(call["callId"] for call in state["pending_calls"]),
    )


def disk_listing(path) -> str:
    """What is on disk, one line per record: sequence and type of each complete line, then any partial tail."""
    *lines, fragment = Path(path).read_bytes().split(b"\n")
    rows = []
    for number, raw in enumerate(lines, start=1):
        record = json.loads(raw)
        rows.append(tr("line {number:>2}  complete      sequence {sequence:>2}  {type}", number=number,
                       sequence=record["sequence"], type=record["type"]))
    if fragment:
        rows.append(tr("line {number:>2}  partial tail  {size} bytes, no newline: {fragment!r}",
                       number=len(lines) + 1, size=len(fragment), fragment=fragment))
    return "\n".join(rows)


def intended_record(path, sequence: int) -> bytes:
    """The whole line (newline included) that the agent's append of event `sequence` writes to this file.

    Made by running the same script with the same ticking clock into a scratch file of the same
    name (the name is the session id): the partial tail a crash leaves is the first half of it.
    """
    with tempfile.TemporaryDirectory() as scratch:
        with DurableTranscript(Path(scratch) / Path(path).name, clock=ticking_clock()) as transcript:
            run_agent(transcript, MockLLM())
            return transcript.path.read_bytes().split(b"\n")[sequence - 1] + b"\n"


def partial_tail_text(report: CrashReport) -> str:
    """The partial tail a crash left, in a few words: its size, or none."""
    if report.partial_tail:
        return tr("{size} bytes, never acknowledged", size=len(report.partial_tail))
    return tr("none")


def aligned(rows: list[tuple[str, str]]) -> str:
    """(label, value) rows as text, the values lined up one column after the widest label (Chinese counts double)."""
    width = max(display_width(label) for label, _ in rows) + 1
    return "\n".join(pad(label, width) + value for label, value in rows)


def describe_crash(report: CrashReport) -> str:
    """The crash report as plain text."""
    how = tr("SIGKILL to a real child process") if report.real_kill else tr(
        "simulated in this process (no SIGKILL here)")
    return aligned([
        (tr("crash:"), tr("{how}, after {count} acknowledged appends", how=how, count=report.kill_after)),
        (tr("acknowledged (dead):"), tr("sequences {sequences}", sequences=list(report.acknowledged))),
        (tr("complete lines on disk:"), str(report.complete_lines)),
        (tr("partial tail:"), partial_tail_text(report)),
        (tr("recovered (fresh):"), tr("sequences {sequences}", sequences=list(report.recovered))),
        (tr("rebuilt state:"), tr("{messages} messages, pending tool calls {pending}", messages=report.messages,
                                  pending=list(report.pending_calls))),
        (tr("verdict:"), report.verdict),
    ])


def partial_tail_vs_record(report: CrashReport, whole: bytes, sequence: int) -> str:
    """The partial tail set beside the whole line append was writing: sizes, whether it is the first half, the rest."""
    tail = report.partial_tail
    return "\n".join([
        tr("event {sequence} as append encodes it: {whole} bytes; on disk: {tail} bytes", sequence=sequence,
           whole=len(whole), tail=len(tail)),
        tr("the partial tail is its first half: {same}", same=tail == whole[: len(whole) // 2]),
        tr("the half that never reached the file: {rest}", rest=whole[len(tail):]),
    ])


def state_field_meanings() -> dict[str, str]:
    """What each field of a ReplayState is, in the language in use."""
    return {
        "messages": tr("chat messages, ready to send to a model"),
        "title": tr("the session's title"),
        "file_snapshots": tr("file snapshots, in order"),
        "total_events": tr("events read"),
        "reasoning_count": tr("reasoning events seen"),
        "next_sequence": tr("the sequence the next append will take"),
        "ignored_partial_tail": tr("whether a partial tail was left out"),
        "pending_calls": tr("tool calls still waiting for a result"),
        "unknown_schema_events": tr("records of a newer schema, kept as evidence"),
    }


def rebuilt_state_rows(state: ReplayState) -> list[tuple[str, str, str, str]]:
    """Every field of a rebuilt ReplayState: its name, the type of its value, a short value, what it is.

    Every value is plain data (lists, dicts, strings, numbers, booleans) read from the file.
    """
    rows, meanings = [], state_field_meanings()
    for name, value in vars(state).items():
        shown = (tr("{count} items", count=len(value)) if isinstance(value, list) and name != "pending_calls"
                 else repr([call["callId"] for call in value]) if name == "pending_calls" else repr(value))
        rows.append((name, type(value).__name__, shown, meanings.get(name, "")))
    return rows


def rebuilt_state_table(state: ReplayState) -> HTML:
    """rebuilt_state_rows as an HTML table with its column headers."""
    return html_table([tr("field"), tr("type"), tr("value"), tr("what it is")], rebuilt_state_rows(state))


def plain_data_text(state: ReplayState) -> str:
    """Whether every value of a rebuilt state is plain data read from the file (nothing live)."""
    return tr("every value is plain data read from the file: {plain}", plain=is_plain_data(vars(state)))


def is_plain_data(value) -> bool:
    """True when value is built only of JSON-like data: nothing live (no client, lock, socket, flag object)."""
    if isinstance(value, dict):
        return all(isinstance(key, str) and is_plain_data(item) for key, item in value.items())
    if isinstance(value, list):
        return all(is_plain_data(item) for item in value)
    return value is None or isinstance(value, (str, int, float, bool))


def crash_html(report: CrashReport) -> str:
    """The crash report as HTML for the widget, the verdict coloured."""
    color = OKABE_ITO["vermillion"] if report.lost else OKABE_ITO["green"]
    return (f"<p><code>{html.escape(report.file_name)}</code></p>"
            f"<pre style='font-size:12px'>{html.escape(describe_crash(report))}</pre>"
            f"<p style='color:{color};font-weight:bold'>{html.escape(report.verdict)}</p>")


def draw_crash(fig: Figure, report: CrashReport) -> Figure:
    """Draw, per sequence: acknowledged by the dead process, complete on disk, recovered by the fresh one."""
    ax = fig.subplots()
    rows = {
        "acknowledged": report.acknowledged,
        "on disk": tuple(range(1, report.complete_lines + 1)),
        "recovered": report.recovered,
    }
    labels = {"acknowledged": tr("acknowledged"), "on disk": tr("on disk"), "recovered": tr("recovered")}
    for row, (name, sequences) in enumerate(rows.items()):
        ax.barh([row] * len(sequences), 0.85, left=[s - 0.425 for s in sequences], height=0.6,
                color=_ROW_COLORS[name], edgecolor="black", linewidth=0.5, label=labels[name])
    if report.partial_tail:
        ax.barh(1, 0.85, left=report.complete_lines + 1 - 0.425, height=0.6, color="white",
                edgecolor=OKABE_ITO["orange"], hatch="///", label=tr("partial tail (half a record)"))
    if report.lost:
        ax.scatter(report.lost, [2] * len(report.lost), marker="x", s=120, color=OKABE_ITO["vermillion"],
                   label=tr("acknowledged but lost"), zorder=3)
    ax.set_yticks(range(len(rows)), [tr("acknowledged\nby the dead process"), tr("complete lines\non disk"),
                                     tr("recovered by\na fresh process")])
    ax.set_ylim(2.6, -0.6)
    ax.set_xlim(0.4, SCRIPT_LENGTH + 0.6)
    ax.set_xticks(range(1, SCRIPT_LENGTH + 1))
    ax.set(title=tr("Killed after {count} appends: what each side holds", count=report.kill_after),
           xlabel="sequence")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small")
    fig.subplots_adjust(left=0.2, right=0.7)
    return fig


class CrashPanel:
    """A slider for the kill point, a "half-way" checkbox and a "Crash now" button; each crash gets its own file."""

    def __init__(self, folder, kill_after: int = 5):
        self.folder = Path(folder)
        self.crashes = 0
        self.report = None
        self.slider = widgets.IntSlider(value=kill_after, min=KILL_POINTS.start, max=KILL_POINTS.stop - 1,
                                        description=tr("kill after"), continuous_update=False)
        self.tear = widgets.Checkbox(value=True, description=tr("kill mid-write"),
                                     style={"description_width": "initial"})
        self.crash_button = widgets.Button(description=tr("Crash now"), button_style="danger",
                                           icon="bolt").add_class(MAIN_CONTROL_CLASS)
        self.result = widgets.HTML(
            "<p>" + tr("Pick a kill point and press <b>{button}</b>.", button=tr("Crash now")) + "</p>"
        ).add_class(RESULT_CLASS)
        self.plot = widgets.Image(format="png", layout=widgets.Layout(width="640px"))
        self.crash_button.on_click(lambda _button: self.crash_now())
        self.widget = widgets.VBox([widgets.HBox([self.slider, self.tear, self.crash_button]),
                                    self.result, self.plot])

    def crash_now(self) -> CrashReport:
        """Crash a new agent at the slider's point, recover it, and show the comparison."""
        self.crashes += 1
        path = self.folder / f"crash-{self.crashes}.jsonl"
        self.report = crash_and_recover(path, self.slider.value, tear=self.tear.value)
        self.result.value = crash_html(self.report)
        self.plot.value = figure_png(draw_crash(Figure(figsize=(9, 2.8)), self.report))
        return self.report


def new_record_text(envelope: dict) -> str:
    """The sequence and event_id of a record just appended."""
    return tr("new record: sequence {sequence}, event_id {event_id}", sequence=envelope["sequence"],
              event_id=envelope["event_id"])


# --------------------------------------------------------------------------- the kill campaign

_SUMMARY_COLUMNS = ("mode", "trials", "lost", "duplicated", "spliced", "failed")


def campaign_summary(trials: list[KillTrial]) -> str:
    """Per mode: trials and every count that must be zero.

    Acknowledged totals vary with timing, so they are left out.
    """
    headers = [tr("mode"), tr("trials"), tr("lost"), tr("duplicated"), tr("spliced"), tr("failed")]
    rows = [[tr("all") if row["mode"] == "all" else str(row["mode"]), *(str(row[column]) for column in
                                                                       _SUMMARY_COLUMNS[1:])]
            for row in kill_summary(trials)]
    widths = [max(display_width(row[i]) for row in [headers, *rows]) for i in range(len(headers))]
    lines = [pad(row[0], widths[0]) + "  " + "  ".join(pad(text, width, True) for text, width in
                                                        zip(row[1:], widths[1:]))
             for row in [headers, *rows]]
    lines.append(tr("every acknowledged event survived every kill: {ok}", ok=all(trial.ok for trial in trials)))
    return "\n".join(lines)


def campaign_skipped_text() -> str:
    """What notebook 2 prints instead of the campaign where SIGKILL does not exist."""
    return tr("Skipped: the kill campaign needs SIGKILL.")


def draw_campaign(fig: Figure, trials: list[KillTrial]) -> Figure:
    """Draw acknowledged and recovered events per killed trial, and any acknowledged event lost."""
    ax = fig.subplots()
    numbers = [trial.trial for trial in trials]
    ax.bar([n - 0.2 for n in numbers], [trial.acknowledged for trial in trials], width=0.4,
           color=_ROW_COLORS["acknowledged"], label=tr("acknowledged before the kill"))
    ax.bar([n + 0.2 for n in numbers], [trial.recovered for trial in trials], width=0.4,
           color=_ROW_COLORS["recovered"], label=tr("recovered by a fresh reader"))
    losing = [trial for trial in trials if trial.lost]
    ax.plot([trial.trial for trial in losing], [trial.lost for trial in losing], "x", markersize=10,
            markeredgewidth=2, color=OKABE_ITO["vermillion"], label=tr("acknowledged but lost"))
    lost = sum(trial.lost for trial in trials)
    if trials and not losing:
        ax.text(1.02, 0.55, tr("no trial lost\nan acknowledged event"), transform=ax.transAxes, va="top",
                color=OKABE_ITO["green"], fontweight="bold")
    ax.set(title=tr("{count} SIGKILLs: acknowledged events lost in total = {lost}", count=len(trials), lost=lost),
           xlabel=tr("trial (modes take turns: append, batch, repair)"), ylabel=tr("events (symmetric log scale)"))
    ax.set_yscale("symlog", linthresh=1)  # a few events and a few hundred in one figure; 0 stays visible
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small")
    fig.subplots_adjust(right=0.72, bottom=0.15)
    return fig


class CampaignPanel:
    """A "Run the campaign" button with a progress bar; shows the summary and the per-trial plot."""

    def __init__(self, trials: int = 30, seed: int = 0):
        self.trials, self.seed, self.results = trials, seed, []
        self.run_button = widgets.Button(description=tr("Run {count} kills", count=trials), icon="bolt")
        self.progress = widgets.IntProgress(value=0, min=0, max=trials, description=tr("kills"))
        self.summary = widgets.HTML()
        self.plot = widgets.Image(format="png", layout=widgets.Layout(width="640px"))
        self.run_button.on_click(lambda _button: self.run())
        self.widget = widgets.VBox([widgets.HBox([self.run_button, self.progress]), self.summary, self.plot])

    def show_progress(self, done: int, total: int) -> None:
        """Move the progress bar: the campaign calls this after every trial."""
        self.progress.max, self.progress.value = total, done

    def run(self) -> list[KillTrial]:
        """Run the campaign, then show its summary and plot."""
        self.run_button.disabled = True
        try:
            self.results = kill_campaign(self.trials, seed=self.seed, progress=self.show_progress)
        finally:
            self.run_button.disabled = False
        self.summary.value = f"<pre style='font-size:12px'>{html.escape(campaign_summary(self.results))}</pre>"
        self.plot.value = figure_png(draw_campaign(Figure(figsize=(9, 3.5)), self.results))
        return self.results
