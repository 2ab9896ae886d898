"""Notebook 7, from lesson to production: benchmark plots, a sample index root, the crash lab of turns.

The plots draw measurements taken by s09_jsonl_transcript.bench at small sizes; the crash lab
kills a real writer process after a chosen number of events of turns.TURNS_SCRIPT and asks
turns.session_status what a fresh process should do.
"""

from __future__ import annotations

import html
import sys
import tempfile
from pathlib import Path

import ipywidgets as widgets

from .. import bench
from ..code import JSONLTranscript, MockLLM, kill_child, run_agent, start_child, ticking_clock
from ..turns import TURNS_SCRIPT, SessionStatus, session_status
from .display import MAIN_CONTROL_CLASS, RESULT_CLASS
from .style import OKABE_ITO

# --------------------------------------------------------------------------- benchmark plots


def measure_for_plots(folder, *, rounds: int = 5, per_round: int = 10, batch_sizes=(1, 4, 16, 64, 128),
                      batch_events: int = 128, read_sizes=(1_000, 4_000, 16_000), text_bytes: int = 900) -> dict:
    """Small measurements for the notebook's plots (a few seconds); see bench for what each one is."""
    single = bench.single_write_costs(folder, rounds, per_round, text_bytes, sqlite_modes=("FULL", "NORMAL"))
    return {
        "single": bench.medians(single),
        "batching": bench.batching_curve(folder, batch_sizes, batch_events, text_bytes),
        "reads": bench.read_costs_by_size(folder, read_sizes, 3, 1000, text_bytes),
    }


def _draw_log_bars(axes, bars: dict, legend: str, ylabel: str, title: str) -> None:
    """Labelled bars on a log scale; bars maps a label to (value, colour)."""
    drawn = axes.bar(list(bars), [value for value, _ in bars.values()],
                     color=[colour for _, colour in bars.values()], label=legend)
    axes.bar_label(drawn, fmt="%.0f")
    axes.set_yscale("log")
    axes.set_ylim(1, max(value for value, _ in bars.values()) * 10)  # from 1, with room for the legend
    axes.set_ylabel(f"{ylabel} (log scale)")
    axes.set_title(title)
    axes.legend(loc="upper left")


def draw_fsync_cost(axes, single: dict) -> None:
    """Bars on axes: microseconds per event for a write alone, a write + fsync, and the library's append."""
    _draw_log_bars(axes, {
        "os.write only\n(not durable)": (single["write_only"] * 1e6, OKABE_ITO["grey"]),
        "os.write + fsync\n(the physical limit)": (single["bare"] * 1e6, OKABE_ITO["sky"]),
        "append\n(the library)": (single["append"] * 1e6, OKABE_ITO["blue"]),
    }, "median microseconds per event", "microseconds per event", "Durability costs one fsync per event")


def draw_batching(axes, rates: dict) -> None:
    """Lines on axes: events per second against batch size (one fsync shared by more events)."""
    sizes = sorted(rates)
    axes.plot(sizes, [rates[size] for size in sizes], marker="o", color=OKABE_ITO["blue"], label="append_batch")
    axes.plot(sizes, [rates[sizes[0]] * size / sizes[0] for size in sizes], linestyle="--",
              color=OKABE_ITO["grey"], label="if one fsync cost the same for any batch")
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("events per append_batch (one write, one fsync)")
    axes.set_ylabel("events per second")
    axes.set_title("Group commit: batching shares the fsync")
    axes.legend()


def draw_reads(axes, costs: dict) -> None:
    """Lines on axes: milliseconds of replay(1000) (tail read) and recover() (full read) by transcript size."""
    counts = sorted(costs)
    axes.plot(counts, [costs[count]["recover"] * 1e3 for count in counts], marker="s",
              color=OKABE_ITO["orange"], label="recover(): reads every line")
    axes.plot(counts, [costs[count]["replay"] * 1e3 for count in counts], marker="o",
              color=OKABE_ITO["blue"], label="replay(1000): reads the tail")
    axes.set_xlabel("events in the transcript")
    axes.set_ylabel("milliseconds")
    axes.set_title("A tail read costs the same at any length; a full read grows")
    axes.legend()


def draw_jsonl_vs_sqlite(axes, single: dict) -> None:
    """Bars on axes: events per second of append against SQLite in WAL mode, synchronous FULL and NORMAL."""
    _draw_log_bars(axes, {
        "JSONL append\n(fsync each)": (1 / single["append"], OKABE_ITO["blue"]),
        "SQLite WAL\nsynchronous=FULL": (1 / single["sqlite_FULL"], OKABE_ITO["green"]),
        "SQLite WAL\nsynchronous=NORMAL\n(not durable)": (1 / single["sqlite_NORMAL"], OKABE_ITO["grey"]),
    }, "events per second, one per transaction", "events per second",
        "Durable JSONL appends against durable SQLite inserts")


# --------------------------------------------------------------------------- a root for the index


def build_sample_root(root) -> list[JSONLTranscript]:
    """Write three sessions under root/projects: MockLLM's bug fix, the turns script, and a short chat."""
    clock = ticking_clock()
    bug_fix = JSONLTranscript.for_session(root, "calc", "bug-fix", clock=clock)
    turns = JSONLTranscript.for_session(root, "calc", "with-turns", clock=clock)
    chat = JSONLTranscript.for_session(root, "notes", "chat", clock=clock)
    with bug_fix, turns, chat:
        run_agent(bug_fix, MockLLM())
        turns.append_batch(TURNS_SCRIPT)
        chat.append({"type": "message", "role": "user", "content": "Why is the JSONL transcript append-only?"})
        chat.append({"type": "message", "role": "assistant",
                     "content": "So that what was acknowledged is never rewritten: a crash can only cut the tail."})
    return [bug_fix, turns, chat]


# --------------------------------------------------------------------------- the crash lab

def turns_writer_child(path: str, count: str) -> None:
    """Body of the child process: append the first count events of TURNS_SCRIPT, then wait to be killed."""
    transcript = JSONLTranscript(path, clock=ticking_clock())
    for event in TURNS_SCRIPT[: int(count)]:
        transcript.append(event)
    print("appended", flush=True)
    sys.stdin.readline()  # hold the open, locked transcript until the parent kills us


def crash_writer_after(path, count: int) -> None:
    """Run a writer in a child process, let it append the first count events of TURNS_SCRIPT, kill it.

    The kill is SIGKILL on POSIX (no cleanup runs) and TerminateProcess on Windows.
    """
    if not 0 <= count <= len(TURNS_SCRIPT):
        raise ValueError(f"count must be between 0 and {len(TURNS_SCRIPT)}, not {count!r}")
    child = start_child("s09_jsonl_transcript.lessons.production:turns_writer_child", path, count)
    try:
        appended = child.stdout.readline().strip() == "appended"
    finally:
        errors = kill_child(child)[1]
    if not appended:
        raise RuntimeError(f"the writer process died before it had appended its events: {errors.strip()[-300:]}")


def crash_and_recover(path, count: int) -> SessionStatus:
    """Start a fresh transcript at path, crash a writer after count events, and fold what a new process reads."""
    Path(path).unlink(missing_ok=True)
    crash_writer_after(path, count)
    return session_status(JSONLTranscript(path).read_events())


def crash_points() -> list[dict]:
    """For every point a writer can die at (after 0..n events of TURNS_SCRIPT): the last event and the status.

    Computed by folding each prefix, which is exactly what a crash at that point leaves on disk
    (crash_and_recover proves it with a real process for any single point).
    """
    rows = []
    for count in range(len(TURNS_SCRIPT) + 1):
        last = TURNS_SCRIPT[count - 1] if count else None
        events = [{**event, "sequence": number} for number, event in enumerate(TURNS_SCRIPT[:count], 1)]
        rows.append({"events": count, "last_event": _describe(last), "status": session_status(events)})
    return rows


def _describe(event: dict | None) -> str:
    if event is None:
        return "(nothing yet)"
    if event["type"] == "turn_end":
        return f"turn_end {event['turn_number']} ({event['reason']})"
    if event["type"] == "turn_start":
        return f"turn_start {event['turn_number']}"
    return event["type"]


def status_html(crash_number: int, count: int, status: SessionStatus) -> str:
    """One crash's outcome as a short HTML paragraph."""
    turn = f" (turn {status.open_turn})" if status.open_turn is not None else ""
    return (f"crash {crash_number}: <b>killed after {count} events</b>; a fresh process reads state "
            f"<b>{html.escape(status.state)}</b> and decides: <b>{html.escape(status.decision)}</b>{html.escape(turn)}")


class CrashLab:
    """A slider for the crash point and a button that kills a real writer there and shows the decision.

    With a folder, the crashed transcript stays there (folder/crash-lab.jsonl) to be inspected;
    without one, each crash writes into a temporary folder that is removed right after.
    """

    def __init__(self, folder=None):
        self.folder = folder
        self.crashes = 0
        self.point = widgets.IntSlider(value=9, min=0, max=len(TURNS_SCRIPT), description="crash after")
        self.button = widgets.Button(description="Crash and recover", button_style="danger")
        self.result = widgets.HTML(value="<i>not crashed yet: choose a point and press the button</i>")
        self.button.add_class(MAIN_CONTROL_CLASS)
        self.result.add_class(RESULT_CLASS)
        self.button.on_click(self.crash)
        self.view = widgets.VBox([widgets.HBox([self.point, self.button]), self.result])

    def crash(self, _button=None) -> SessionStatus:
        """Crash a writer after the slider's number of events; show and return what recovery decides."""
        with tempfile.TemporaryDirectory(prefix="s09-crash-lab-") as scratch:
            status = crash_and_recover(Path(self.folder or scratch) / "crash-lab.jsonl", self.point.value)
        self.crashes += 1
        self.result.value = status_html(self.crashes, self.point.value, status)
        return status
