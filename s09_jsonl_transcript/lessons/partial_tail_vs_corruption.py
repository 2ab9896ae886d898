"""Chapter 3's instructor panel: apply one damage to a copy of the file and show the reader's verdict.

The chapter writes the damages, the reading rule and its verdict in its cells; the panel is given them and
only drives them. Each Apply starts from the undamaged bytes, so one damage is seen at a time; Restore puts
the undamaged bytes back. Every control calls a plain method, so a cell or a test takes the same steps.
Labels follow i18n.use; the Chinese is in locale/zh/partial_tail_vs_corruption.json.
"""

from __future__ import annotations

import html
from pathlib import Path

import ipywidgets as widgets

from ..text import i18n
from .display import MAIN_CONTROL_CLASS, RESULT_CLASS

tr = i18n.translator("partial_tail_vs_corruption")
MAX_ZERO_BYTES = 64


class DamageLab:
    """A damage picker, a position slider, Apply damage and Restore file, over the chapter's functions.

    damages: (label, function, unit) triples; the picker's value is the chosen function's name.
    function(data, position) returns the damaged bytes, and unit
    ("byte", "line" or "count") sets the slider's range. judge(path) returns the chapter's verdict, (kind,
    detail): detail is the number of events read, or (line, byte offset) for a corrupt file. colors and labels
    map each kind to its colour and its name.
    """

    def __init__(self, path, data: bytes, *, damages, judge, colors: dict, labels: dict):
        self.path, self.data, self.judge, self.colors, self.labels = Path(path), data, judge, colors, labels
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # The picker's values are the functions' names: a widget's text shows them, never an address.
        self.functions = {function.__name__: function for _, function, _ in damages}
        self.units = {function.__name__: unit for _, function, unit in damages}
        self.picker = widgets.Dropdown(options=[(label, function.__name__) for label, function, _ in damages],
                                       description=tr("Damage"))
        self.position = widgets.IntSlider(description=tr("Position"), continuous_update=False)
        self.apply_button = widgets.Button(description=tr("Apply damage"), button_style="warning",
                                           icon="bolt").add_class(MAIN_CONTROL_CLASS)
        self.restore_button = widgets.Button(description=tr("Restore file"), icon="undo")
        self.result = widgets.HTML().add_class(RESULT_CLASS)
        self.result_text = ""
        self.picker.observe(lambda _change: self.fit_slider(), names="value")
        self.apply_button.on_click(lambda _button: self.apply())
        self.restore_button.on_click(lambda _button: self.restore())
        self.widget = widgets.VBox([widgets.HBox([self.picker, self.position]),
                                    widgets.HBox([self.apply_button, self.restore_button]), self.result])
        self.fit_slider()
        self.restore()

    def fit_slider(self) -> None:
        """Give the slider the range of the chosen damage's unit: byte offsets, line numbers or a count."""
        unit = self.units[self.picker.value]
        low, high = {"byte": (0, len(self.data) - 1), "line": (1, self.data.count(b"\n")),
                     "count": (1, MAX_ZERO_BYTES)}[unit]
        self.position.min, self.position.max = min(low, self.position.min), max(high, self.position.max)
        self.position.value = min(max(self.position.value, low), high)
        self.position.min, self.position.max = low, high
        self.position.description = {"byte": tr("byte"), "line": tr("line"), "count": tr("zero bytes")}[unit]

    def apply(self) -> str:
        """Write the undamaged bytes with the chosen damage at the chosen position, and judge the file."""
        self.path.write_bytes(self.functions[self.picker.value](self.data, self.position.value))
        return self.show(tr("{damage} at {position}", damage=self.picker.label, position=self.position.value))

    def restore(self) -> str:
        """Write the undamaged bytes back, and judge the file."""
        self.path.write_bytes(self.data)
        return self.show(tr("file restored"))

    def show(self, what: str) -> str:
        """Judge the file, show the verdict with its colour, and return it as text."""
        kind, detail = self.judge(self.path)
        where = (tr("line {line}, byte {byte}", line=detail[0], byte=detail[1]) if isinstance(detail, tuple)
                 else tr("{count} events", count=detail))
        self.result_text = tr("{verdict} ({detail}): {what}", verdict=self.labels[kind], detail=where, what=what)
        square = f"<span style='background:{self.colors[kind]};padding:0 0.8em;margin-right:0.5em'></span>"
        self.result.value = f"<p>{square}{html.escape(self.result_text)}</p>"
        return self.result_text
