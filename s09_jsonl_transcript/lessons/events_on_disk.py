"""Chapter 1's instructor panel: the scripted session appended one event per press, with the chapter's own code.

The chapter writes `Transcript` (its append) and `plot_growth` in its cells; the panel is given them and only
drives them: Next event appends the next event, the slider jumps to any count (back means a new file: an
append-only file never shrinks), Reset removes the file. After every step the panel shows the file's lines and
the picture the chapter's drawing function makes of the file. Every control calls a plain method, so a cell
or a test takes the same steps. Labels follow i18n.use; the Chinese is in locale/zh/events_on_disk.json.
"""

from __future__ import annotations

import html
import unicodedata
from pathlib import Path

import ipywidgets as widgets

from ..code import BUG_FIX_SCRIPT, ticking_clock
from ..text import i18n
from .display import MAIN_CONTROL_CLASS, RESULT_CLASS, figure_png

tr = i18n.translator("events_on_disk")


def display_width(text: str) -> int:
    """How many columns text takes in a monospaced font: a Chinese character takes two (notebook 7's tables)."""
    return sum(2 if unicodedata.east_asian_width(character) in "WF" else 1 for character in text)


def pad(text: str, width: int, right: bool = False) -> str:
    """text padded with spaces to width columns (display_width), on the right, or on the left when right=True."""
    spaces = " " * max(0, width - display_width(text))
    return spaces + text if right else text + spaces


class StepperPanel:
    """Next event / Reset and a slider over the scripted session, written by the chapter's transcript class.

    transcript(path, clock=...) must make a new file's writer with append(event) and close(); draw(data)
    returns a Figure of the file's bytes (a plot), which the panel shows as an image.
    """

    def __init__(self, folder, *, transcript, draw, session_id: str = "session-2"):
        self.path = Path(folder) / f"{session_id}.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.make_writer, self.draw = transcript, draw
        self.writer, self.appended = None, 0
        self.next_button = widgets.Button(description=tr("Next event"), button_style="primary",
                                          icon="plus").add_class(MAIN_CONTROL_CLASS)
        self.reset_button = widgets.Button(description=tr("Reset"), icon="undo")
        self.slider = widgets.IntSlider(value=0, min=0, max=len(BUG_FIX_SCRIPT), description=tr("events"),
                                        continuous_update=False)
        self.status = widgets.Label()
        self.listing = widgets.HTML().add_class(RESULT_CLASS)
        self.plot = widgets.Image(format="png", layout=widgets.Layout(width="640px"))
        self.next_button.on_click(lambda _button: self.go_to(self.appended + 1))
        self.reset_button.on_click(lambda _button: self.go_to(0))
        self.slider.observe(lambda change: self.go_to(change["new"]), names="value")
        self.widget = widgets.VBox([widgets.HBox([self.next_button, self.reset_button, self.slider]),
                                    self.status, self.listing, self.plot])
        self.go_to(0)

    def go_to(self, count: int) -> None:
        """Have exactly count events on disk (0 to the script's length): append up to it, or start a new file
        below it; then redraw."""
        count = min(max(count, 0), len(BUG_FIX_SCRIPT))  # a press past the end (the button disabled) does nothing
        if count < self.appended or count == 0:
            self.remove_file()
        while self.appended < count:
            if self.writer is None:
                self.writer = self.make_writer(self.path, clock=ticking_clock())
            self.writer.append(BUG_FIX_SCRIPT[self.appended])
            self.appended += 1
        self.refresh()

    def remove_file(self) -> None:
        """Close the writer and delete the file: the session starts again from nothing."""
        if self.writer is not None:
            self.writer.close()
        self.writer, self.appended = None, 0
        self.path.unlink(missing_ok=True)

    def status_text(self) -> str:
        """How many events are on disk, and whether the file exists."""
        return tr("{count} of {total} events on disk ({name} exists: {exists})", count=self.appended,
                  total=len(BUG_FIX_SCRIPT), name=self.path.name, exists=self.path.exists())

    def listing_html(self) -> str:
        """The file's lines, numbered, the newest one highlighted; or a note that there is no file."""
        if not self.path.exists():
            return "<p>" + html.escape(tr("No file: nothing appended yet.")) + "</p>"
        data = self.path.read_bytes()
        rows = []
        for number, line in enumerate(data.decode("utf-8").splitlines(), start=1):
            style = " style='background:#FFF3C4;font-weight:bold'" if number == self.appended else ""
            rows.append(f"<div{style}>{number:>2}  {html.escape(line)}</div>")
        head = tr("{name}: {lines} lines, {size} bytes", name=self.path.name, lines=len(rows), size=len(data))
        return (f"<p>{html.escape(head)}</p><pre style='white-space:pre-wrap;word-break:break-all;"
                f"font-size:11px;line-height:1.35'>{''.join(rows)}</pre>")

    def refresh(self) -> None:
        """Show the file as it is on disk now: the status, its lines and the chapter's picture of it."""
        self.slider.value = self.appended  # a move made here calls go_to again, which finds nothing to do
        self.next_button.disabled = self.appended == len(BUG_FIX_SCRIPT)
        self.status.value = self.status_text()
        self.listing.value = self.listing_html()
        self.plot.value = figure_png(self.draw(self.path.read_bytes() if self.path.exists() else b""))
