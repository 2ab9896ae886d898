"""Notebook 3 (partial tail vs mid-file corruption): damage tools by name, verdict maps, the damage widget.

The damage itself and the verdicts come from `s09_jsonl_transcript.damage`; this module names the
tools for a picker, draws the verdict maps, wires the widget, and sets a reader that skips bad lines
beside the lesson's fail-closed reader. Every text a student sees is in the language in use
(i18n.use); the Chinese is in locale/zh/partial_tail_vs_corruption.json. A damage keeps its English name as its key
(DAMAGE_TOOLS, the picker's values): damage_label gives the name shown.
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
from IPython.display import HTML
from matplotlib.patches import Patch

from .. import damage, i18n
from ..code import TYPE_FUNCTION_CALL, TYPE_FUNCTION_CALL_RESULT, TranscriptCorruptionError, event_to_message
from ..lab import DurableTranscript
from .display import html_table
from .style import OKABE_ITO, VERDICT_COLORS, verdict_label

tr = i18n.translator("partial_tail_vs_corruption")

MAX_ZERO_BYTES = 64  # the widest zero-filled tail the widget offers


def verdict_text(found: damage.Verdict) -> str:
    """A reader's verdict as one line in the language in use (str(found) in English).

    A corrupt file's reason is the library's exception message (English), shown through i18n.library_text.
    """
    if found.kind == damage.CORRUPT:
        return tr("TranscriptCorruptionError at line {line}: {detail}", line=found.line,
                  detail=i18n.library_text(found.detail))
    return tr("{verdict} ({events} events)", verdict=verdict_label(found.kind), events=found.events)


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


def damage_label(name: str) -> str:
    """The name of a damage (a key of DAMAGE_TOOLS) as shown, in the language in use."""
    labels = {
        "truncate at byte": tr("truncate at byte"),
        "flip a byte": tr("flip a byte"),
        "insert a garbage line": tr("insert a garbage line"),
        "delete a line": tr("delete a line"),
        "duplicate a line": tr("duplicate a line"),
        "append zero bytes": tr("append zero bytes"),
    }
    return labels.get(name, name)


def unit_label(unit: str) -> str:
    """What a damage's position counts (DamageTool.unit), as shown in the language in use."""
    labels = {
        "bytes kept": tr("bytes kept"),
        "byte offset": tr("byte offset"),
        "before line": tr("before line"),
        "line number": tr("line number"),
        "zero bytes": tr("zero bytes"),
    }
    return labels.get(unit, unit)


def damage_description(name: str, position: int) -> str:
    """One damage at one position, as the widget and the tables name it: "delete a line, line number 5"."""
    return tr("{damage}, {unit} {position}", damage=damage_label(name), unit=unit_label(DAMAGE_TOOLS[name].unit),
              position=position)


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
    DurableTranscript.read_events, which stops at the first damaged complete line.
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
    return tr("resumed: {events} events (sequences {sequences}), {messages} messages, pending tool calls {pending}",
              events=len(events), sequences=sequences, messages=len(messages), pending=pending)


def fail_closed_report(path) -> str:
    """What the lesson's reader says about the same file: a resumed session, or the damaged line and a stop."""
    try:
        state = DurableTranscript(path).recover()
    except TranscriptCorruptionError as error:
        return tr("stops: TranscriptCorruptionError at line {line}: {reason}", line=error.line_number,
                  reason=i18n.library_text(error.reason))
    pending = [call["callId"] for call in state["pending_calls"]]
    return tr("resumed: {events} events, {messages} messages, pending tool calls {pending}",
              events=state["total_events"], messages=state["message_count"], pending=pending)


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
        rows.append((damage_description(name, position), skipping_recovery_report(copy), fail_closed_report(copy)))
    return rows


def readers_table(rows) -> HTML:
    """compare_readers' rows as an HTML table with its column headers."""
    return html_table([tr("damage"), tr("a reader that skips bad lines"), tr("the lesson's reader (fails closed)")],
                      rows)


def line_starts_text(data: bytes, shown: int = 58) -> str:
    """The size of a transcript, then where each of its lines starts and how it begins (`shown` bytes of it)."""
    starts = line_offsets(data)
    rows = [tr("{size} bytes, {lines} lines", size=len(data), lines=len(starts))]
    for number, (start, line) in enumerate(zip(starts, data.split(b"\n")), start=1):
        rows.append(tr("line {number} starts at byte {start:4}: {beginning}...", number=number, start=start,
                       beginning=line[:shown].decode("utf-8", "replace")))
    return "\n".join(rows)


def example_damages(data: bytes) -> list[tuple[str, int, str]]:
    """Nine damages of notebook 3's five-line transcript: (damage name, position, what it hits).

    The positions are computed from data (the undamaged bytes), so the descriptions hold for it.
    """
    starts = line_offsets(data)
    return [
        ("truncate at byte", starts[3], tr("cut exactly at the start of line 4")),
        ("truncate at byte", starts[4] + 100, tr("cut in the middle of line 5")),
        ("append zero bytes", 16, tr("a tail of NULs, as some file systems leave after a crash")),
        ("flip a byte", starts[2], tr("the '{' that opens line 3")),
        ("insert a garbage line", 3, tr("a complete line that is not JSON, before line 3")),
        ("delete a line", 3, tr("line 3 removed: a sequence gap")),
        ("duplicate a line", 3, tr("line 3 written twice")),
        ("flip a byte", data.index(b"fails"), tr("one bit of a letter in the user's message")),
        ("flip a byte", len(data) - 1, tr("the newline that ends the last line")),
    ]


def damage_table(rows) -> HTML:
    """Rows of (damage name, position, what it hits, verdict) as an HTML table, in the language in use."""
    return html_table([tr("damage"), tr("position"), tr("what it hits"), tr("reader's verdict")],
                      [(damage_label(name), position, what, verdict_text(found))
                       for name, position, what, found in rows])


def map_title(key: str) -> str:
    """The title of one verdict map, by its key in notebook 3 ("truncation", "flips", "flips, integrity=True")."""
    titles = {
        "truncation": tr("truncate after N bytes"),
        "flips": tr("flip one bit at each byte"),
        "flips, integrity=True": tr("flip one bit at each byte, integrity=True"),
    }
    return titles.get(key, key)


def verdict_counts_table(maps: dict) -> HTML:
    """For each map ({key: (file bytes, verdicts)}), how many offsets got each verdict, as an HTML table."""
    return html_table([tr("map"), *map(verdict_label, damage.VERDICT_KINDS)],
                      [(map_title(key), *verdict_counts(verdicts).values()) for key, (_, verdicts) in maps.items()])


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


def plot_verdict_maps(maps: dict, min_visible: float = 0.004):
    """One coloured strip per map ({key: (file bytes, verdicts)}): the verdict at every byte offset.

    Each strip is titled map_title(key). Runs narrower than min_visible of a strip are drawn that wide,
    on top, so a single odd byte stays visible. Ticks under each strip mark the file's newline bytes.
    Returns the figure.
    """
    figure, axes = plt.subplots(len(maps), 1, figsize=(10, 1.6 * len(maps) + 1.2), squeeze=False)
    for axis, (key, (data, verdicts)) in zip(axes[:, 0], maps.items()):
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
        axis.set_title(map_title(key), fontsize=10, loc="left")
        axis.set_xlabel(tr("byte offset (ticks below the strip: newline bytes)"))
    legend = [Patch(facecolor=VERDICT_COLORS[kind], hatch=_hatch(kind), edgecolor=OKABE_ITO["black"],
                    linewidth=0, label=verdict_label(kind)) for kind in damage.VERDICT_KINDS]
    figure.legend(handles=legend, loc="lower center", ncol=len(legend), frameon=False)
    figure.suptitle(tr("What the reader says after one damage at each byte offset"))
    figure.tight_layout(rect=(0, 0.07, 1, 1))
    return figure


def verdict_html(verdict: damage.Verdict, description: str) -> str:
    """The widget's result: a swatch in the verdict's colour, the verdict, and what was done."""
    swatch = f"<span style='color:{VERDICT_COLORS[verdict.kind]}'>&#9632;</span>"
    return f"{swatch} <b>{html.escape(verdict_text(verdict))}</b><br><small>{html.escape(description)}</small>"


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
        self.reference = DurableTranscript(self.path, integrity=integrity).read_events()
        # The picker shows each damage's name in the language in use; its value is the English key.
        self.picker = widgets.Dropdown(options=[(damage_label(name), name) for name in DAMAGE_TOOLS],
                                       description=tr("Damage"))
        self.position = widgets.IntSlider(description=tr("Position"))
        self.unit = widgets.Label()
        self.apply_button = widgets.Button(description=tr("Apply damage"), button_style="warning")
        self.apply_button.add_class("s09-main-control")
        self.restore_button = widgets.Button(description=tr("Restore file"))
        self.result_text = tr("No damage applied yet.")  # what the result widget says, as plain text
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
        self.unit.value = unit_label(DAMAGE_TOOLS[name].unit)

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
        self._show(found, damage_description(name, position))
        return found

    def _show(self, found: damage.Verdict, description: str, prefix: str = "") -> None:
        self.result_text = prefix + tr("{verdict} - {description}", verdict=verdict_text(found),
                                       description=description)
        self.result.value = html.escape(prefix) + verdict_html(found, description)

    def restore(self) -> None:
        """Put the undamaged bytes back."""
        self.path.write_bytes(self.pristine)
        self._show(damage.verdict(self.path, self.reference, integrity=self.integrity), tr("no damage"),
                   tr("File restored: "))

    def lines_text(self) -> str:
        """How many lines (newline bytes) the file on disk holds now."""
        return tr("lines now in the file: {count}", count=self.path.read_bytes().count(b"\n"))

    def widget(self) -> widgets.VBox:
        """The controls and the result, ready to display."""
        controls = widgets.HBox([self.picker, self.position, self.unit])
        return widgets.VBox([controls, widgets.HBox([self.apply_button, self.restore_button]), self.result])
