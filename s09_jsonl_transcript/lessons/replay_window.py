"""Notebook 4 (replay window and recovery): what falls inside replay(max_items), a crash in the middle of
a tool call, what recover() rebuilds, and the cost of a full read against a tail read.

Every answer here comes from the library's own replay, replay_state and recover; this module only
lines their results up next to the events so they can be read as tables and plots.
"""

from __future__ import annotations

import itertools
import json
import signal
import time
from dataclasses import dataclass
from pathlib import Path

import ipywidgets as widgets
import matplotlib.pyplot as plt
from matplotlib.patches import Patch

from ..code import (
    BUG_FIX_SCRIPT,
    JSONLTranscript,
    crash_agent_in_child,
    event_to_message,
    simulate_agent_crash,
    ticking_clock,
)
from .display import html_table
from .style import EVENT_COLORS, OKABE_ITO

FIRST_TOOL_CALL = 4  # BUG_FIX_SCRIPT's fourth event is the first function_call; the fifth is its result

SENT = "sent as a message"
METADATA = "metadata: not sent"
ORPHAN = "dropped: its tool call is outside the window"
OUTSIDE = "outside the window"

OTHER_TYPE_COLOR = OKABE_ITO["black"]  # event types outside the lesson's six


@dataclass(frozen=True)
class WindowEntry:
    """One event of the transcript and what replay(max_items) did with it."""

    sequence: int
    event_type: str
    fate: str  # SENT, METADATA, ORPHAN or OUTSIDE


def window_entries(transcript: JSONLTranscript, max_items: int) -> list[WindowEntry]:
    """Every event with its fate under replay(max_items), worked out from what replay returned."""
    events = transcript.read_events()
    messages = iter(transcript.replay(max_items))
    next_message = next(messages, None)
    inside_from = len(events) - min(max_items, len(events))
    entries = []
    for position, event in enumerate(events):
        if position < inside_from:
            fate = OUTSIDE
        elif event_to_message(event) is None:
            fate = METADATA
        elif event_to_message(event) == next_message:
            fate, next_message = SENT, next(messages, None)
        else:  # a chat event that replay left out
            fate = ORPHAN
        entries.append(WindowEntry(event["sequence"], event["type"], fate))
    return entries


def describe_content(content, width: int = 60) -> str:
    """A one-line description of a chat message's content: the text, or its tool blocks."""
    if isinstance(content, str):
        text = content.replace("\n", " ")
    else:
        text = "; ".join(
            f"tool_use {block['id']}: {block['name']}({json.dumps(block['input'])})" if block["type"] == "tool_use"
            else f"tool_result for {block['tool_use_id']}: {json.dumps(block['content'])}"
            for block in content
        )
    return text if len(text) <= width else text[: width - 3] + "..."


def messages_table(messages):
    """messages[] as a table: position, role, and what each message holds."""
    return html_table(["#", "role", "content"],
                      [(number, message["role"], describe_content(message["content"]))
                       for number, message in enumerate(messages, start=1)])


def window_table(entries):
    """The window entries as a table."""
    return html_table(["sequence", "type", "replay did"],
                      [(entry.sequence, entry.event_type, entry.fate) for entry in entries])


def _call_ids(calls) -> str:
    return ", ".join(f"{call['callId']} ({call['name']})" for call in calls) or "none"


def recovery_rows(transcript: JSONLTranscript, max_items: int) -> list[tuple]:
    """What replay_state(max_items) and recover(max_items) rebuild, field by field, side by side."""
    tail = transcript.replay_state(max_items)
    full = transcript.recover(max_items)
    return [
        ("messages in the window", len(tail.messages), full["message_count"]),
        ("title", tail.title, full["title"]),
        ("file snapshots", len(tail.file_snapshots), len(full["file_snapshots"])),
        ("reasoning events", tail.reasoning_count, full["reasoning_count"]),
        ("total events", tail.total_events, full["total_events"]),
        ("next sequence", tail.next_sequence, full["next_sequence"]),
        ("torn tail ignored", tail.ignored_partial_tail, full["ignored_partial_tail"]),
        ("tool calls pending", _call_ids(tail.pending_calls), _call_ids(full["pending_calls"])),
    ]


def crash_mid_tool_call(path, *, real_kill: bool | None = None) -> str:
    """Leave at path what an agent killed during its first tool call leaves: four events and a torn fifth.

    With real_kill (the default where SIGKILL exists) the agent runs in a child process that is
    SIGKILLed while writing the tool's result. Elsewhere the same bytes are written from this
    process: a simulated crash. Returns a sentence saying which happened.
    """
    if real_kill is None:
        real_kill = hasattr(signal, "SIGKILL")
    if real_kill:
        acknowledged = crash_agent_in_child(path, kill_after=FIRST_TOOL_CALL, tear=True)
        return f"SIGKILL: the child acknowledged sequences {acknowledged}, then died writing the next record"
    acknowledged = simulate_agent_crash(path, kill_after=FIRST_TOOL_CALL, tear=True, ticking=True)
    return f"simulated: sequences {acknowledged} written, then half of the next record"


@dataclass(frozen=True)
class ReadCost:
    """How long the two reads took on a transcript of one length (the best of several tries)."""

    events: int
    size_bytes: int
    full_read_seconds: float
    tail_read_seconds: float


def _best_time(action, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        best = min(best, time.perf_counter() - start)
    return best


def measure_read_costs(path, lengths, *, window: int = 20, repeats: int = 3) -> list[ReadCost]:
    """Grow one transcript at path through the given lengths and time a full read and a tail read at each.

    The full read is read_events() (every line validated); the tail read is replay_state(window).
    Events are appended in batches (one write and one fsync per length) to keep this quick.
    """
    lengths = list(lengths)
    if not lengths or lengths != sorted(set(lengths)) or lengths[0] < 1:
        raise ValueError(f"lengths must be increasing whole numbers >= 1, not {lengths!r}")
    if Path(path).exists():
        raise ValueError(f"{Path(path).name} already exists: measure_read_costs grows a new transcript")
    script = itertools.cycle(BUG_FIX_SCRIPT)
    costs, written = [], 0
    with JSONLTranscript(path, clock=ticking_clock()) as writer:
        for length in lengths:
            writer.append_batch(next(script) for _ in range(length - written))
            written = length
            reader = JSONLTranscript(path)
            costs.append(ReadCost(
                events=length,
                size_bytes=Path(path).stat().st_size,
                full_read_seconds=_best_time(reader.read_events, repeats),
                tail_read_seconds=_best_time(lambda: reader.replay_state(window), repeats),
            ))
    return costs


def plot_read_costs(costs: list[ReadCost], window: int = 20):
    """Read time against transcript length, full read vs tail read, on log-log axes. Returns the figure."""
    figure, axis = plt.subplots(figsize=(8, 4.5))
    events = [cost.events for cost in costs]
    axis.plot(events, [cost.full_read_seconds * 1000 for cost in costs], marker="o",
              color=OKABE_ITO["vermillion"], label="full read: read_events()")
    axis.plot(events, [cost.tail_read_seconds * 1000 for cost in costs], marker="s",
              color=OKABE_ITO["blue"], label=f"tail read: replay_state(max_items={window})")
    axis.set_xscale("log")
    axis.set_yscale("log")
    axis.set_xlabel("events in the transcript")
    axis.set_ylabel("time to read (milliseconds)")
    axis.set_title("Rebuilding state: a full read grows with the file, a tail read does not")
    axis.legend()
    axis.grid(True, which="major", alpha=0.3)
    figure.tight_layout()
    return figure


def plot_window(events: list[dict], max_items: int, *, dropped=(), chosen=(), title: str | None = None):
    """The transcript as a row of cells coloured by event type, with the last max_items events framed.

    Sequences in dropped get a cross (orphan tool results); sequences in chosen get a star
    (notebook 5's memory candidates). Returns the figure.
    """
    figure, axis = plt.subplots(figsize=(10, 3.4))
    for event in events:
        axis.broken_barh([(event["sequence"] - 0.45, 0.9)], (0, 1), facecolor=EVENT_COLORS.get(
            event["type"], OTHER_TYPE_COLOR), edgecolor=OKABE_ITO["black"], linewidth=0.5)
    if max_items and events:
        first = events[max(len(events) - max_items, 0)]["sequence"]
        last = events[-1]["sequence"]
        axis.axvspan(first - 0.5, last + 0.5, ymin=0.0, ymax=1.0, facecolor="none",
                     edgecolor=OKABE_ITO["black"], linewidth=2, linestyle="--")
    dropped, chosen = sorted(set(dropped)), sorted(set(chosen))
    if dropped:
        axis.plot(dropped, [0.5] * len(dropped), linestyle="none", marker="X", markersize=16,
                  color=OKABE_ITO["black"])
    if chosen:
        axis.plot(chosen, [1.35] * len(chosen), linestyle="none", marker="*", markersize=14,
                  color=OKABE_ITO["black"])
    types = {event["type"] for event in events}
    handles = [Patch(color=color, label=name) for name, color in EVENT_COLORS.items() if name in types]
    if types - EVENT_COLORS.keys():
        handles.append(Patch(color=OTHER_TYPE_COLOR, label="a type the library does not know"))
    handles.append(Patch(facecolor="none", edgecolor=OKABE_ITO["black"], linestyle="--",
                         label=f"replay window (max_items={max_items})"))
    if dropped:
        handles.append(plt.Line2D([], [], linestyle="none", marker="X", markersize=12,
                                  color=OKABE_ITO["black"], label="dropped by replay"))
    if chosen:
        handles.append(plt.Line2D([], [], linestyle="none", marker="*", markersize=12,
                                  color=OKABE_ITO["black"], label="memory candidate"))
    figure.legend(handles=handles, loc="lower center", ncol=4, frameon=False)
    axis.set_xlim(0.4, (events[-1]["sequence"] if events else 1) + 0.6)
    axis.set_ylim(-0.1, 1.6)
    axis.set_yticks([])
    axis.set_xticks([event["sequence"] for event in events])
    axis.set_xlabel("sequence")
    axis.set_title(title or f"The replay window: the last {max_items} events")
    figure.tight_layout(rect=(0, 0.2, 1, 1))  # the bottom fifth holds the legend
    return figure


class ReplayExplorer:
    """A max_items slider and a "Replay" button showing what replay(max_items) does with each event.

    Replay only reads: the transcript file is never changed. `replay` is a plain method: call it directly.
    """

    def __init__(self, transcript: JSONLTranscript, max_items: int = 5):
        self.transcript = transcript
        total = len(transcript.read_events())
        self.max_items = widgets.IntSlider(value=min(max_items, total), min=0, max=total, description="max_items")
        self.replay_button = widgets.Button(description="Replay", button_style="primary")
        self.replay_button.add_class("s09-main-control")
        self.result = widgets.HTML("Press Replay.")
        self.result.add_class("s09-result")
        self.replay_button.on_click(lambda _button: self.replay(self.max_items.value))

    def replay(self, max_items: int) -> list[WindowEntry]:
        """Show and return every event's fate under replay(max_items)."""
        entries = window_entries(self.transcript, max_items)
        sent = sum(entry.fate == SENT for entry in entries)
        self.result.value = (f"<b>replay(max_items={max_items})</b> sends {sent} messages."
                             + window_table(entries).data)
        return entries

    def widget(self) -> widgets.VBox:
        """The controls and the result, ready to display."""
        return widgets.VBox([widgets.HBox([self.max_items, self.replay_button]), self.result])
