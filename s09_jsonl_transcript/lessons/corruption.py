"""Notebook 3 (partial tail vs mid-file corruption): damage tools by name, verdict maps, the damage widget.

The damage itself and the verdicts come from `s09_jsonl_transcript.damage`; this module names the
tools for a picker, draws the verdict maps, wires the widget, and sets a reader that skips bad lines
beside the lesson's fail-closed reader.
"""

from __future__ import annotations

import html
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import ipywidgets as widgets
import matplotlib.pyplot as plt
from matplotlib.patches import Patch

from .. import damage
from ..code import (
    TYPE_FUNCTION_CALL,
    TYPE_FUNCTION_CALL_RESULT,
    JSONLTranscript,
    TranscriptCorruptionError,
    event_to_message,
)
from .style import OKABE_ITO, VERDICT_COLORS

MAX_ZERO_BYTES = 64  # the widest zero-filled tail the widget offers


def line_offsets(data: bytes) -> list[int]:
    """The byte offset at which each line of data starts (a last line with no newline included)."""
    offsets, start = [], 0
    while start < len(data):
        offsets.append(start)
        end = data.find(b"\n", start)
        start = len(data) if end == -1 else end + 1
    return offsets


@dataclass(frozen=True)
class DamageTool:
    """One damage from damage.py, with what its position means and the positions that make sense."""

    apply: Callable[[Path, int], None]  # apply(path, position) changes the file in place
    unit: str  # what the position counts, shown beside the slider
    positions: Callable[[bytes], range]  # the valid positions for an undamaged file's bytes


def _byte_offsets(data: bytes) -> range:
    return range(len(data))


def _bytes_kept(data: bytes) -> range:
    return range(len(data) + 1)


def _existing_lines(data: bytes) -> range:
    return range(1, data.count(b"\n") + 1)


def _insertion_points(data: bytes) -> range:
    return range(1, data.count(b"\n") + 2)


def _zero_counts(data: bytes) -> range:
    return range(1, MAX_ZERO_BYTES + 1)


DAMAGE_TOOLS = {
    "truncate at byte": DamageTool(damage.truncate_at, "bytes kept", _bytes_kept),
    "flip a byte": DamageTool(damage.flip_byte, "byte offset", _byte_offsets),
    "insert a garbage line": DamageTool(damage.insert_line, "before line", _insertion_points),
    "delete a line": DamageTool(damage.delete_line, "line number", _existing_lines),
    "duplicate a line": DamageTool(damage.duplicate_line, "line number", _existing_lines),
    "append zero bytes": DamageTool(damage.append_zeros, "zero bytes", _zero_counts),
}


def skip_bad_lines_read(path) -> list[dict]:
    """What a reader that skips bad lines returns: every line that parses as a JSON object; the rest are dropped.

    This is the other possible design (resume from whatever can be read). It is here to be set beside
    JSONLTranscript.read_events, which stops at the first damaged complete line.
    """
    events = []
    for raw in Path(path).read_bytes().split(b"\n"):
        try:
            value = json.loads(raw)
        except ValueError:  # not JSON, or not UTF-8
            continue
        if isinstance(value, dict):
            events.append(value)
    return events


def skipping_recovery_report(path) -> str:
    """What a runtime built on skip_bad_lines_read would report after a crash: always a resumed session."""
    events = skip_bad_lines_read(path)
    messages = [message for message in map(event_to_message, events) if message is not None]
    answered = {event.get("callId") for event in events if event.get("type") == TYPE_FUNCTION_CALL_RESULT}
    pending = [event.get("callId") for event in events
               if event.get("type") == TYPE_FUNCTION_CALL and event.get("callId") not in answered]
    sequences = [event.get("sequence") for event in events]
    return (f"resumed: {len(events)} events (sequences {sequences}), {len(messages)} messages, "
            f"pending tool calls {pending}")


def fail_closed_report(path) -> str:
    """What the lesson's reader says about the same file: a resumed session, or the damaged line and a stop."""
    try:
        state = JSONLTranscript(path).recover()
    except TranscriptCorruptionError as error:
        return f"stops: TranscriptCorruptionError at line {error.line_number}: {error.reason}"
    pending = [call["callId"] for call in state["pending_calls"]]
    return f"resumed: {state['total_events']} events, {state['message_count']} messages, pending tool calls {pending}"


def compare_readers(data: bytes, file_name: str, folder, damages) -> list[tuple[str, str, str]]:
    """Per (damage name, position): write data to a new file, damage it, then ask both readers.

    Each file goes to its own subfolder of folder under file_name (the name is the session id).
    """
    rows = []
    for number, (name, position) in enumerate(damages, start=1):
        copy = Path(folder) / f"copy-{number}" / file_name
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_bytes(data)
        DAMAGE_TOOLS[name].apply(copy, position)
        rows.append((f"{name}, {DAMAGE_TOOLS[name].unit} {position}", skipping_recovery_report(copy),
                     fail_closed_report(copy)))
    return rows


def verdict_counts(verdicts) -> dict[str, int]:
    """How many verdicts of each kind, in the order of damage.VERDICT_KINDS (zeros included)."""
    counts = Counter(v.kind for v in verdicts)
    return {kind: counts[kind] for kind in damage.VERDICT_KINDS}


def verdict_runs(verdicts) -> list[tuple[int, int, str]]:
    """Consecutive offsets with the same verdict kind, as (first offset, length, kind)."""
    runs = []
    for offset, found in enumerate(verdicts):
        if runs and runs[-1][2] == found.kind:
            first, length, kind = runs[-1]
            runs[-1] = (first, length + 1, kind)
        else:
            runs.append((offset, 1, found.kind))
    return runs


def _hatch(kind: str) -> str:
    # Silent acceptance also gets a pattern: it must stand out even where two warm colours look alike.
    return "////" if kind == damage.SILENT else ""


def plot_verdict_maps(strips, min_visible: float = 0.004):
    """One coloured strip per (title, file bytes, verdicts) entry: the verdict at every byte offset.

    Runs narrower than min_visible of a strip are drawn that wide, on top, so a single odd byte
    stays visible. Ticks under each strip mark the file's newline bytes. Returns the figure.
    """
    figure, axes = plt.subplots(len(strips), 1, figsize=(10, 1.6 * len(strips) + 1.2), squeeze=False)
    for axis, (title, data, verdicts) in zip(axes[:, 0], strips):
        narrowest = min_visible * len(verdicts)
        runs = sorted(verdict_runs(verdicts), key=lambda run: -run[1])  # widest first, so narrow runs end up on top
        for first, length, kind in runs:
            width = max(length, narrowest)
            start = min(first, len(verdicts) - width)  # a widened run at the very end stays inside the strip
            axis.broken_barh([(start, width)], (0, 1), facecolor=VERDICT_COLORS[kind],
                             hatch=_hatch(kind), edgecolor=OKABE_ITO["black"] if _hatch(kind) else "none",
                             linewidth=0)
        newlines = [offset for offset, byte in enumerate(data) if byte == ord("\n")]
        axis.vlines(newlines, -0.25, 0, color=OKABE_ITO["black"], linewidth=1)
        axis.set_ylim(-0.25, 1)
        axis.set_yticks([])
        axis.set_xlim(0, len(verdicts))
        axis.set_title(title, fontsize=10, loc="left")
        axis.set_xlabel("byte offset (ticks below the strip: newline bytes)")
    legend = [Patch(facecolor=VERDICT_COLORS[kind], hatch=_hatch(kind), edgecolor=OKABE_ITO["black"],
                    linewidth=0, label=kind) for kind in damage.VERDICT_KINDS]
    figure.legend(handles=legend, loc="lower center", ncol=len(legend), frameon=False)
    figure.suptitle("What the reader says after one damage at each byte offset")
    figure.tight_layout(rect=(0, 0.07, 1, 1))
    return figure


def verdict_html(verdict: damage.Verdict, description: str) -> str:
    """The widget's result: a swatch in the verdict's colour, the verdict, and what was done."""
    swatch = f"<span style='color:{VERDICT_COLORS[verdict.kind]}'>&#9632;</span>"
    return f"{swatch} <b>{html.escape(str(verdict))}</b><br><small>{html.escape(description)}</small>"


class DamageLab:
    """A damage picker, a position slider and an "Apply damage" button over one transcript file.

    Every application starts again from the file's bytes at construction time, so one click shows
    the effect of exactly one damage. `apply` and `restore` are plain methods: call them directly.
    """

    def __init__(self, path, *, integrity: bool = False):
        self.path = Path(path)
        self.integrity = integrity
        self.pristine = self.path.read_bytes()
        if not self.pristine:
            raise ValueError(f"{self.path.name} is empty: write a few events before damaging it")
        self.reference = JSONLTranscript(self.path, integrity=integrity).read_events()
        self.picker = widgets.Dropdown(options=list(DAMAGE_TOOLS), description="Damage")
        self.position = widgets.IntSlider(description="Position")
        self.unit = widgets.Label()
        self.apply_button = widgets.Button(description="Apply damage", button_style="warning")
        self.apply_button.add_class("s09-main-control")
        self.restore_button = widgets.Button(description="Restore file")
        self.result_text = "No damage applied yet."  # what the result widget says, as plain text
        self.result = widgets.HTML(html.escape(self.result_text))
        self.result.add_class("s09-result")
        self.picker.observe(lambda change: self._fit_slider(change["new"]), names="value")
        self.apply_button.on_click(lambda _button: self.apply(self.picker.value, self.position.value))
        self.restore_button.on_click(lambda _button: self.restore())
        self._fit_slider(self.picker.value)

    def _fit_slider(self, name: str) -> None:
        """Give the slider the position range and unit of the chosen damage."""
        valid = DAMAGE_TOOLS[name].positions(self.pristine)
        low, high = valid[0], valid[-1]
        # min may never exceed max, even for a moment: widen the range first, then narrow it.
        self.position.min, self.position.max = min(low, self.position.min), max(high, self.position.max)
        self.position.min, self.position.max = low, high
        self.unit.value = DAMAGE_TOOLS[name].unit

    def apply(self, name: str, position: int) -> damage.Verdict:
        """Restore the file, apply one named damage at position, and show and return the reader's verdict."""
        if name not in DAMAGE_TOOLS:
            raise ValueError(f"unknown damage {name!r}; choose one of {', '.join(DAMAGE_TOOLS)}")
        tool = DAMAGE_TOOLS[name]
        valid = tool.positions(self.pristine)
        if position not in valid:
            raise ValueError(f"{name}: {tool.unit} must be between {valid[0]} and {valid[-1]}, not {position!r}")
        self.path.write_bytes(self.pristine)
        tool.apply(self.path, position)
        found = damage.verdict(self.path, self.reference, integrity=self.integrity)
        self._show(found, f"{name}, {tool.unit} {position}")
        return found

    def _show(self, found: damage.Verdict, description: str, prefix: str = "") -> None:
        self.result_text = f"{prefix}{found} - {description}"
        self.result.value = html.escape(prefix) + verdict_html(found, description)

    def restore(self) -> None:
        """Put the undamaged bytes back."""
        self.path.write_bytes(self.pristine)
        self._show(damage.verdict(self.path, self.reference, integrity=self.integrity), "no damage", "File restored: ")

    def widget(self) -> widgets.VBox:
        """The controls and the result, ready to display."""
        controls = widgets.HBox([self.picker, self.position, self.unit])
        return widgets.VBox([controls, widgets.HBox([self.apply_button, self.restore_button]), self.result])
