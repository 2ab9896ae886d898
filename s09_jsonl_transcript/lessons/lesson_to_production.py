"""Notebook 7, from lesson to production: measured costs with their spread, a sample index root, and the
crash lab of turns with the recovery plan a fresh process follows.

The measurements use s09_jsonl_transcript.bench's tools at small sizes, every pair interleaved in
the same rounds, so each plot shows a median and the spread over rounds, and the sentences printed
next to a plot are computed from the same samples. The crash lab kills a real writer process after
a chosen number of events of turns.TURNS_SCRIPT and asks what a new process must do: the turn
state comes from turns.session_status; what to do about the tools of an unfinished turn comes from
recovery_plan, which never repeats a tool that changed the world without an idempotency key.

Every sentence, label and plot text a student sees is in the language in use (i18n.use); the
Chinese is in locale/zh/lesson_to_production.json. Event types, states, tool names and the library's
messages (an anomaly, an exception) stay as they are.
"""

from __future__ import annotations

import html
import os
import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import ipywidgets as widgets
from matplotlib.ticker import FuncFormatter, NullFormatter

from .. import bench
from ..code import TYPE_FUNCTION_CALL, TYPE_FUNCTION_CALL_RESULT, TYPE_MESSAGE, MockLLM, run_agent, ticking_clock
from ..crashlab.children import kill_child, start_child
from ..lab import DurableTranscript
from ..production.index import unfinished_sessions
from ..production.live import SessionEventLog
from ..production.turns import (
    DEPARTURES,
    NO_TURN_MARKERS,
    RUNNING,
    START_USER,
    TOOL_TIMEOUT,
    TRANSITIONS,
    TURN_TIMEOUT,
    TURNS_SCRIPT,
    TYPE_RESUME,
    TYPE_RETRY,
    TYPE_TIMEOUT,
    TYPE_TURN_END,
    TYPE_TURN_START,
    USER_MESSAGE,
    SessionStatus,
    audit,
    is_understood,
    materialize,
    session_status,
    token_summary,
    trigger_of,
)
from ..text import i18n, saving
from .display import MAIN_CONTROL_CLASS, RESULT_CLASS, html_table
from .events_on_disk import display_width, pad
from .live_session import decision_label
from .style import OKABE_ITO

tr = i18n.translator("lesson_to_production")
# Texts shown from turns.DEPARTURES, looked up with tr.data (tests/test_i18n.py checks their Chinese).
TRANSLATED_DATA = tuple(dict.fromkeys(row[key] for row in DEPARTURES for key in ("topic", "design", "kit", "why")))

# --------------------------------------------------------------------------- measuring


def measure_write_costs(folder, *, rounds: int = 60, per_round: int = 1, batch_sizes=(4, 16, 64, 128),
                        text_bytes: int = 900) -> dict[str, list[float]]:
    """Seconds per event, one sample per round, everything interleaved in the same rounds (order alternating).

    With one event per round (the default), each pair of samples is taken a moment apart, and a
    stall of the disk spoils one round instead of shifting a whole measurement.

    Keys: "append" (the library, one fsync per event; also the batch of 1), "bare" (os.write +
    fsync of the bytes append wrote last, no library), "write_only" (the same os.write, no fsync:
    not durable), "sqlite_FULL" and "sqlite_NORMAL" (SQLite in WAL mode, one insert per
    transaction), and "batch_<n>" for each batch size (append_batch(n): one write, one fsync).
    The two that do not sync are synced after their timing, so that their unsynced data never
    lands in the next measurement's fsync.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    transcript = DurableTranscript(folder / "append.jsonl")
    batched = DurableTranscript(folder / "batches.jsonl")
    bare, unsynced = bench.BareLog(folder / "bare.jsonl"), bench.BareLog(folder / "unsynced.jsonl")
    databases = {mode: bench.SqliteLog(folder / f"{mode}.sqlite3", mode) for mode in ("FULL", "NORMAL")}
    events = [bench.synthetic_event(n, text_bytes) for n in range(max(per_round, *batch_sizes))]
    written: list[bytes] = []  # what the last library round wrote: the bare sides write the same bytes

    def library() -> float:
        elapsed, lines = bench.timed_append(transcript, lambda: [transcript.append(e) for e in events[:per_round]])
        written[:] = lines
        return elapsed / per_round

    def each_line(write, flush=None) -> float:
        elapsed = bench.timed(lambda: [write(line) for line in written]) / len(written)
        if flush:  # outside the timing: leave no unsynced data for the next measurement's fsync to carry
            flush()
        return elapsed

    def write_and_sync(line: bytes) -> None:
        bare.write(line)
        bare.sync()

    def sync_file(path) -> None:
        with open(path, "rb") as file:
            os.fsync(file.fileno())

    def batch_of(size: int):
        return lambda: bench.timed(lambda: batched.append_batch(events[:size])) / size

    measurements = {
        "append": library,
        "bare": lambda: each_line(write_and_sync),
        "write_only": lambda: each_line(unsynced.write, unsynced.sync),
        "sqlite_FULL": lambda: each_line(databases["FULL"].insert),
        "sqlite_NORMAL": lambda: each_line(databases["NORMAL"].insert,
                                           lambda: sync_file(folder / "NORMAL.sqlite3-wal")),
    }
    measurements.update({f"batch_{size}": batch_of(size) for size in batch_sizes})
    try:
        library()  # warm-up: opens and locks the writers, creates the files
        batched.append(events[0])
        return bench.interleaved(measurements, rounds, alternate=True)
    finally:
        for resource in (transcript, batched, bare, unsynced, *databases.values()):
            resource.close()


def measure_read_costs(folder, sizes=(1_000, 4_000, 16_000), *, rounds: int = 5, window: int = 1000,
                       text_bytes: int = 900) -> dict[int, dict[str, list[float]]]:
    """Seconds of replay(window) (reads the tail) and recover() (reads every line), per round, by transcript size."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    costs = {}
    for size in sizes:
        path = folder / f"read-{size}.jsonl"
        bench.write_bulk_transcript(path, size, text_bytes)
        costs[size] = bench.interleaved({"replay": lambda: bench.timed(lambda: DurableTranscript(path).replay(window)),
                                         "recover": lambda: bench.timed(DurableTranscript(path).recover)},
                                        rounds, alternate=True)
    return costs


def quartiles(values) -> tuple[float, float, float]:
    """The 25th percentile, the median and the 75th percentile of the samples: the middle half of the rounds."""
    values = list(values)
    if len(values) == 1:
        return values[0], values[0], values[0]
    low, middle, high = statistics.quantiles(values, n=4, method="inclusive")
    return low, middle, high


# --------------------------------------------------------------------------- the rounds that came out faster


@dataclass(frozen=True)
class LibraryVsBare:
    """In how many rounds the library's append took less time than a bare write + fsync of the same bytes.

    A count to show, never to assert on: the library does that same write and fsync plus its own work,
    yet on a busy machine noise can put it ahead in any number of rounds. What append does is checked
    without a clock, by counting its system calls (notebook 7).
    """

    rounds: int
    faster_rounds: int

    def __str__(self):
        return tr("append took less time than the bare os.write + fsync in {faster} of {rounds} rounds "
                  "(timings are noisy: this count is shown, not checked)",
                  faster=self.faster_rounds, rounds=self.rounds)


def library_vs_bare(samples: dict[str, list[float]], library: str = "append", bare: str = "bare") -> LibraryVsBare:
    """Count the paired rounds in which library < bare."""
    pairs = list(zip(samples[library], samples[bare]))
    if not pairs:
        raise ValueError("no paired samples to compare")
    return LibraryVsBare(len(pairs), sum(a < b for a, b in pairs))


# --------------------------------------------------------------------------- plots and what they show


def _box(axes, data: dict, colours: list, ylabel: str, title: str) -> None:
    """One box per label (median line, middle half of the rounds as the box), medians written above, log scale."""
    labels, values = list(data), list(data.values())
    boxes = axes.boxplot(values, patch_artist=True, widths=0.5, whis=(0, 100),
                         medianprops={"color": OKABE_ITO["black"]})
    axes.set_xticks(range(1, len(labels) + 1), labels)
    for patch, colour in zip(boxes["boxes"], colours):
        patch.set_facecolor(colour)
    for position, samples in enumerate(values, start=1):
        axes.annotate(f"{statistics.median(samples):,.0f}", (position, max(samples)), textcoords="offset points",
                      xytext=(0, 4), ha="center")
    axes.set_yscale("log")
    axes.set_ylabel(tr("{label} (log scale)", label=ylabel))
    axes.set_title(title)


def draw_fsync_cost(axes, samples: dict) -> None:
    """Boxes on axes: microseconds per event for os.write alone, os.write + fsync, and the library's append."""
    micro = {name: [s * 1e6 for s in samples[name]] for name in ("write_only", "bare", "append")}
    _box(axes, {tr("os.write, no fsync\n(not durable)"): micro["write_only"],
                tr("os.write + fsync\n(same bytes, no library)"): micro["bare"],
                tr("append\n(the library)"): micro["append"]},
         [OKABE_ITO["grey"], OKABE_ITO["sky"], OKABE_ITO["blue"]], tr("microseconds per event"),
         tr("One event made durable: {rounds} rounds\n(line: median, box: middle half, whiskers: all)",
            rounds=len(micro["append"])))


def draw_pairs(axes, samples: dict, library: str = "append", bare: str = "bare") -> None:
    """One dot per round: the library's time against the bare write + fsync measured a moment apart."""
    xs, ys = [s * 1e6 for s in samples[bare]], [s * 1e6 for s in samples[library]]
    longer = sum(y > x for x, y in zip(xs, ys))
    axes.scatter(xs, ys, s=14, color=OKABE_ITO["blue"],
                 label=tr("one round: append took longer in {longer} of {rounds}", longer=longer, rounds=len(xs)))
    low, high = min(xs + ys) / 1.5, max(xs + ys) * 1.5
    axes.plot([low, high], [low, high], linestyle="--", color=OKABE_ITO["grey"], label=tr("the same time"))
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlim(low, high)
    axes.set_ylim(low, high)
    axes.set_aspect("equal")
    for axis in (axes.xaxis, axes.yaxis):
        axis.set_major_formatter(FuncFormatter(lambda value, _position: f"{value:,.0f}"))
        axis.set_minor_formatter(NullFormatter())
    axes.set_xlabel(tr("os.write + fsync, no library (microseconds)"))
    axes.set_ylabel(tr("append (microseconds)"))
    axes.set_title(tr("Round by round: above the line, append took longer"))
    axes.legend(loc="upper left")


def fsync_summary(samples: dict) -> str:
    """The fsync plot's numbers in words: medians, the middle half of the rounds, and the paired ratio."""
    lines = [tr("microseconds per event, median [middle half of the rounds]:")]
    for name, label in (("write_only", tr("os.write, no fsync")), ("bare", tr("os.write + fsync, no library")),
                        ("append", tr("append, the library"))):
        low, middle, high = (value * 1e6 for value in quartiles(samples[name]))
        lines.append("  " + pad(label, 30) + " " + tr("{middle}  [{low} to {high}]", middle=f"{middle:9,.1f}",
                                                         low=f"{low:,.1f}", high=f"{high:,.1f}"))
    low, middle, high = quartiles(a / b for a, b in zip(samples["append"], samples["bare"]))
    lines.append(tr("append / bare write + fsync, round by round: median {middle} [{low} to {high}]",
                    middle=f"{middle:.2f}", low=f"{low:.2f}", high=f"{high:.2f}"))
    synced, unsynced = statistics.median(samples["bare"]), statistics.median(samples["write_only"])
    lines.append(tr("os.write + fsync / os.write alone, medians: {ratio} times", ratio=f"{synced / unsynced:,.0f}"))
    return "\n".join(lines)


def batch_rates(samples: dict) -> dict[int, list[float]]:
    """Events per second by batch size, one value per round; the batch of 1 is the append samples."""
    rates = {1: [1 / s for s in samples["append"]]}
    for name, values in samples.items():
        if name.startswith("batch_"):
            rates[int(name.removeprefix("batch_"))] = [1 / s for s in values]
    return dict(sorted(rates.items()))


def draw_batching(axes, samples: dict) -> None:
    """Median events per second against batch size, the middle half of the rounds as error bars."""
    rates = batch_rates(samples)
    sizes = list(rates)
    spreads = [quartiles(rates[size]) for size in sizes]
    medians = [middle for _, middle, _ in spreads]
    axes.errorbar(sizes, medians, yerr=[[m - low for (low, _, _), m in zip(spreads, medians)],
                                        [high - m for (_, _, high), m in zip(spreads, medians)]],
                  marker="o", capsize=3, color=OKABE_ITO["blue"], label=tr("append_batch (append for 1): median"))
    axes.plot(sizes, [medians[0] * size for size in sizes], linestyle="--", color=OKABE_ITO["grey"],
              label=tr("in proportion: if an event cost only its share of the fsync"))
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xticks(sizes, [str(size) for size in sizes])
    axes.minorticks_off()
    axes.set_xlabel(tr("events per append_batch (one write, one fsync)"))
    axes.set_ylabel(tr("events per second"))
    axes.set_title(tr("Group commit: a batch shares one fsync"))
    axes.legend()


def batching_summary(samples: dict) -> str:
    """Per batch size: median events per second, and how many times the rate of single appends that is."""
    rates = batch_rates(samples)
    single = statistics.median(rates[1])
    headers = [tr("batch size"), tr("events per second (median)"), tr("times the rate of single appends")]
    lines = ["   ".join(headers)]
    for size, values in rates.items():
        rate = statistics.median(values)
        cells = (pad(str(size), display_width(headers[0]), right=True),
                 pad(f"{rate:,.0f}", display_width(headers[1]), right=True), f"{rate / single:>8.1f}")
        lines.append("   ".join(cells) + "  " + tr("(in proportion: {size})", size=size))
    return "\n".join(lines)


def draw_reads(axes, costs: dict) -> None:
    """Milliseconds of replay(1000) (tail read) and recover() (full read) by transcript size: median and spread."""
    counts = sorted(costs)
    for name, marker, colour, label in (("recover", "s", OKABE_ITO["orange"], tr("recover(): reads every line")),
                                        ("replay", "o", OKABE_ITO["blue"], tr("replay(1000): reads the tail"))):
        spreads = [[value * 1e3 for value in quartiles(costs[count][name])] for count in counts]
        medians = [middle for _, middle, _ in spreads]
        axes.errorbar(counts, medians, yerr=[[m - low for (low, _, _), m in zip(spreads, medians)],
                                             [high - m for (_, _, high), m in zip(spreads, medians)]],
                      marker=marker, capsize=3, color=colour, label=label)
    axes.set_xlabel(tr("events in the transcript"))
    axes.set_ylabel(tr("milliseconds (median, middle half)"))
    axes.set_title(tr("Full read against tail read"))
    axes.legend()


def reads_summary(costs: dict) -> str:
    """How much longer each read took on the largest transcript than on the smallest (medians)."""
    small, big = min(costs), max(costs)
    lines = [tr("median time on {big} events / on {small} events ({times} times the events):",
                big=f"{big:,}", small=f"{small:,}", times=big // small)]
    for name, label in (("recover", tr("recover(), every line")), ("replay", tr("replay(1000), the tail"))):
        ratio = statistics.median(costs[big][name]) / statistics.median(costs[small][name])
        lines.append("  " + pad(label, 24) + " " + tr("{ratio} times", ratio=f"{ratio:6.2f}"))
    return "\n".join(lines)


def draw_jsonl_vs_sqlite(axes, samples: dict) -> None:
    """Boxes on axes: events per second of append against SQLite in WAL mode, synchronous FULL and NORMAL."""
    rates = {name: [1 / s for s in samples[name]] for name in ("append", "sqlite_FULL", "sqlite_NORMAL")}
    _box(axes, {tr("JSONL append\n(fsync each)"): rates["append"],
                "SQLite WAL\nsynchronous=FULL": rates["sqlite_FULL"],
                tr("SQLite WAL\nsynchronous=NORMAL\n(not durable)"): rates["sqlite_NORMAL"]},
         [OKABE_ITO["blue"], OKABE_ITO["green"], OKABE_ITO["grey"]], tr("events per second, one per transaction"),
         tr("Durable JSONL appends against SQLite inserts"))


def sqlite_summary(samples: dict) -> str:
    """The JSONL-vs-SQLite plot's medians in events per second, and their ratios."""
    rate = {name: 1 / statistics.median(samples[name]) for name in ("append", "sqlite_FULL", "sqlite_NORMAL")}
    rows = ((tr("JSONL append (fsync each)"), rate["append"]), ("SQLite WAL, synchronous=FULL", rate["sqlite_FULL"]),
            ("SQLite WAL, synchronous=NORMAL", rate["sqlite_NORMAL"]))
    return "\n".join([
        tr("events per second, median:"),
        *("  " + pad(label, 30) + f"  {value:>10,.0f}" for label, value in rows),
        f"append / SQLite FULL: {rate['append'] / rate['sqlite_FULL']:.2f}; "
        f"SQLite NORMAL / SQLite FULL: {rate['sqlite_NORMAL'] / rate['sqlite_FULL']:.1f}",
    ])


# --------------------------------------------------------------------------- what holds on any machine
# Each plot's cell is tagged machine-dependent: the notebook is saved with these verdict lines only
# (saving.py), never with the plot or the numbers. Each names a side with a wide margin, never a size.


def _longer_in_most_rounds(samples: dict, slower: str, quicker: str) -> bool:
    """True when slower took longer than quicker in more than half of the rounds (each pair from one round)."""
    pairs = list(zip(samples[slower], samples[quicker]))
    return 2 * sum(a > b for a, b in pairs) > len(pairs)


def fsync_verdict(samples: dict) -> str:
    """The fsync plot's claim: os.write + fsync took longer than os.write alone in most rounds.

    Tens of times longer on a disk; on a folder in memory (tmpfs), where fsync has nothing to wait for,
    the call itself still costs a little, so the side holds there too."""
    return saving.verdict(_longer_in_most_rounds(samples, "bare", "write_only"),
                          tr("fsync costs more than a bare write: os.write + fsync took longer than os.write alone "
                             "in most rounds"))


def batching_verdict(samples: dict) -> str:
    """The group-commit plot's claim: an event in the largest batch cost less than a single append in most
    rounds (a few times less on a folder in memory, tens of times on a disk)."""
    size = max(batch_rates(samples))
    return saving.verdict(_longer_in_most_rounds(samples, "append", f"batch_{size}"),
                          tr("a batch shares its fsync: an event in a batch of {size} cost less than a single "
                             "append in most rounds", size=size))


def reads_verdict(costs: dict) -> str:
    """The read plot's claim: recover()'s median time grew more than replay's as the transcript grew
    (measured here: about 8 times against about 1, for 16 times the events)."""
    small, big = min(costs), max(costs)
    growth = {name: statistics.median(costs[big][name]) / statistics.median(costs[small][name])
              for name in ("recover", "replay")}
    return saving.verdict(growth["recover"] > growth["replay"],
                          tr("recover() slowed down more than replay(1000) as the transcript grew from {small} to "
                             "{big} events", small=f"{small:,}", big=f"{big:,}"))


SAME_ORDER = 3  # how many times apart two costs may be and still be of the same order


def sqlite_verdict(samples: dict) -> str:
    """The SQLite plot's claim: a durable append and a SQLite commit with synchronous=FULL, both waiting for
    the disk, cost the same order (paired rounds' median ratio within SAME_ORDER; measured 0.7 to 1.1 on a
    disk and in memory, quiet or loaded). Nothing is claimed of synchronous=NORMAL's speed: in memory it
    is no quicker, since there is no disk to skip waiting for."""
    ratio = bench.paired_ratio(samples, "append", "sqlite_FULL")
    return saving.verdict(1 / SAME_ORDER < ratio < SAME_ORDER,
                          tr("a durable JSONL append and a SQLite commit with synchronous=FULL cost the same order: "
                             "within {times} times of each other", times=SAME_ORDER))

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


def rewound_and_forked_root(root) -> list[str]:
    """Under root/projects/notes: a session of two turns whose second is rewound, and a fork of its first turn.

    Written through the live log (SessionEventLog.for_session), closed afterwards. Returns the session ids.
    """
    folder = Path(root) / "projects" / "notes"
    log = SessionEventLog.for_session("rewound", folder, clock=ticking_clock())
    for question, answer in (("What does fsync promise?", "The bytes are on the disk when it returns."),
                             ("And flush?", "An answer the user took back.")):
        log.start_turn()
        log.user_message(question)
        log.commit({"type": TYPE_MESSAGE, "role": "assistant", "content": answer})
        log.end_turn(log.status().open_turn, token_summary=token_summary(100, 20, 0.001))
    first_end = next(event["sequence"] for event in log.read_from(1) if event["type"] == TYPE_TURN_END)
    log.rewind(first_end)
    log.fork("rewound-fork", upto_sequence=first_end).close()
    log.close()
    return ["rewound", "rewound-fork"]


def read_model_after_rewind_text(index, root) -> str:
    """What the index, the audit and the unfinished-turn scan say about a rewound session and its fork."""
    rows = {row.session_id: row for row in index.sessions().rows}
    path = Path(root) / "projects" / "notes" / "rewound.jsonl"
    report = audit(DurableTranscript(path).read_events())
    lines = [tr("{session}: {count} events listed, last sequence {last}", session=name, count=rows[name].event_count,
                last=rows[name].last_sequence) for name in ("rewound", "rewound-fork")]
    lines += [tr("search for the answer taken back: {hits} hit(s)",
                 hits=len(index.search("took back").rows)),
              tr("the audit of the rewound session: {turns} turn(s) ended, {tokens} input tokens",
                 turns=report.turns_ended, tokens=report.input_tokens),
              tr("sessions with an unfinished turn under the root: {found}",
                 found=[f"{s.workspace}/{s.session_id}" for s in unfinished_sessions(root)] or tr("none"))]
    return "\n".join(lines)


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
    """The session's state (turns.session_status) and what to do; an open turn is resumed, never blindly re-run.

    Outside a running session the plan is the state machine's decision. Inside an unfinished
    turn the events already on disk are evidence: what they record happened and is not done
    again. A tool call with no result may or may not have run. If its tool_timeout is on disk,
    it gets the error result the design gives a timed-out call. Otherwise, if the tool is safe to
    repeat, run it again; if it changes the world, repeat it only under an idempotency key the
    tool honours (the callId), or ask the user; either way append the answer, then resume the
    turn. A turn whose turn_timeout is on disk without its turn_end gets that turn_end: the
    session expires. A run begun with no turn open (after a retry_command) starts its turn.

    "Nothing changed the world" is said only when every event of the turn is understood: an
    event of a type the kit does not know (or of a newer schema version) counts as an effect
    the plan cannot rule out, and the plan says to ask the user. Rewind markers are applied
    first (turns.materialize).
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


def _describe(event: dict | None) -> str:
    if event is None:
        return tr("(nothing yet)")
    if event["type"] == TYPE_TURN_END:
        return f"turn_end {event['turn_number']} ({event['reason']})"
    if event["type"] == TYPE_TURN_START:
        return f"turn_start {event['turn_number']} ({event.get('reason', START_USER)})"
    if event["type"] == TYPE_FUNCTION_CALL:
        return f"function_call {event['name']}"
    if event["type"] == TYPE_FUNCTION_CALL_RESULT:
        return f"function_call_result {event['callId']}"
    if event["type"] == TYPE_TIMEOUT:
        return f"timeout ({event['limit']})"
    if event["type"] == TYPE_MESSAGE:
        return f"message ({event['role']})"
    return event["type"]


def crash_points() -> list[dict]:
    """For every point a writer can die at (after 0..n events of TURNS_SCRIPT): the last event and the plan.

    Computed by folding each prefix, which is exactly what a crash at that point leaves on disk
    (crash_and_plan proves it with a real process for any single point).
    """
    rows = []
    for count in range(len(TURNS_SCRIPT) + 1):
        events = [{**event, "sequence": number} for number, event in enumerate(TURNS_SCRIPT[:count], 1)]
        plan = recovery_plan(events)
        rows.append({"events": count, "last_event": _describe(events[-1] if events else None),
                     "status": plan.status, "plan": plan})
    return rows


def crash_point_table(rows: list[dict] | None = None):
    """crash_points as an HTML table, consecutive points with the same plan on one row."""
    groups = []
    for row in rows if rows is not None else crash_points():
        if groups and groups[-1][-1]["plan"] == row["plan"]:
            groups[-1].append(row)
        else:
            groups.append([row])
    table = []
    for group in groups:
        first, last = group[0]["events"], group[-1]["events"]
        table.append([str(first) if first == last else tr("{first} to {last}", first=first, last=last),
                      ", ".join(row["last_event"] for row in group), group[0]["plan"].state,
                      group[0]["plan"].action])
    return html_table([tr("events on disk"), tr("last event on disk"), tr("state"), tr("what a fresh process must do")],
                      table)


def transition_table():
    """turns.TRANSITIONS as an HTML table, one row per (state, trigger), in the table's own order."""
    return html_table([tr("state"), tr("trigger"), tr("next state")],
                      [[state, trigger, target] for (state, trigger), target in TRANSITIONS.items()])


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
    child = start_child("s09_jsonl_transcript.lessons.lesson_to_production:turns_writer_child", path, count)
    try:
        appended = child.stdout.readline().strip() == "appended"
    finally:
        errors = kill_child(child)[1]
    if not appended:
        raise RuntimeError(f"the writer process died before it had appended its events: {errors.strip()[-300:]}")


def crash_and_recover(path, count: int) -> SessionStatus:
    """Start a fresh transcript at path, crash a writer after count events, and fold what a new process reads."""
    return crash_and_plan(path, count).status


def crash_and_plan(path, count: int) -> RecoveryPlan:
    """Start a fresh transcript at path, crash a writer after count events, and plan from what a new process reads."""
    Path(path).unlink(missing_ok=True)
    crash_writer_after(path, count)
    return recovery_plan(DurableTranscript(path).read_events())


def crash_text(crash_number: int, count: int, plan: RecoveryPlan) -> str:
    """One crash's outcome as plain text."""
    return tr("crash {number}: killed after {count} events; a fresh process reads state {state} and must: {action}",
              number=crash_number, count=count, state=plan.state, action=plan.action)


def crash_html(crash_number: int, count: int, plan: RecoveryPlan) -> str:
    """One crash's outcome as a short HTML paragraph, for the result widget."""
    return tr("crash {number}: <b>killed after {count} events</b>; a fresh process reads state <b>{state}</b> "
              "and must: <b>{action}</b>", number=crash_number, count=count, state=html.escape(plan.state),
              action=html.escape(plan.action))


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
        self.summary = crash_text(self.crashes, count, plan)
        self.result.value = crash_html(self.crashes, count, plan)
        return plan


# --------------------------------------------------------------------------- what notebook 7's cells print


def same_as_folded_text(same: bool) -> str:
    """Whether a real crash gave the plan of its folded prefix, as one line."""
    return tr("same as the folded prefix: {same}", same=same)


def anomaly_text(anomaly) -> str:
    """One turns.Anomaly in the language in use (its message through i18n.library_text)."""
    return tr("event {sequence}: {message}", sequence=anomaly.sequence, message=i18n.library_text(anomaly.message))


def title_kept_text(index) -> str:
    """Where the index keeps the title the user typed: the user's own database."""
    return tr("the renamed title is kept in {name}", name=index.user_titles.path.name)


def rebuild_text(same_rows: bool, title_survived: bool) -> str:
    """After the index was deleted and synced again: are the rows back, and did the renamed title survive?"""
    return "\n".join([tr("every row is the same as before the delete: {same}", same=same_rows),
                       tr("renamed title survived: {survived}", survived=title_survived)])


def audit_text(report) -> str:
    """A turns.AuditReport in lines: turns by end reason, tokens and cost, limits reached, one line per tool call."""
    lines = [tr("{count} turns ended {reasons}", count=report.turns_ended, reasons=report.end_reasons),
             tr("tokens in {input}, out {output}, cost ${cost}", input=report.input_tokens,
                output=report.output_tokens, cost=f"{report.cost_usd:.4f}"),
             tr("limits reached {timeouts}", timeouts=report.timeouts)]
    for call in report.tool_calls:
        lines.append(tr("  #{sequence}  {recorded_at}  turn {turn}  {name} ({call_id}): {outcome}",
                        sequence=call.sequence, recorded_at=call.recorded_at, turn=call.turn_number, name=call.name,
                        call_id=call.call_id, outcome=call.outcome))
    return "\n".join(lines)
