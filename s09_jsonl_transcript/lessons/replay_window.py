"""Chapter 4's instructor widget: a max_items slider and a Replay button.

The chapter writes the replay fold in its cells, ending with `fates(events, max_items)`: one
(sequence, type, fate) row per event, the fate being "outside", "sent", "dropped" or "metadata".
The widget takes that function, and the reader to feed it (the chapter gives its own, chapter 3's
read_transcript), so a press runs the code the chapter wrote; it only reads the file afresh, checks the
file did not change, and shows the rows.
"""

from __future__ import annotations

from pathlib import Path

import ipywidgets as widgets

from ..code import read_transcript
from ..text import i18n
from .display import MAIN_CONTROL_CLASS, RESULT_CLASS, html_table

tr = i18n.translator("replay_window")


def fate_label(fate: str) -> str:
    """One of the fates the chapter's fates() gives, in words, in the language in use."""
    return {"outside": tr("outside the window"), "sent": tr("sent as a message"),
            "dropped": tr("dropped: its tool call is outside the window"),
            "metadata": tr("metadata: not sent")}[fate]


def replay_summary(press: int, max_items: int, rows, unchanged: bool) -> str:
    """The explorer's sentence for one press: messages sent, sequences dropped, whether the file is unchanged."""
    sent = sum(fate == "sent" for _, _, fate in rows)
    dropped = [str(sequence) for sequence, _, fate in rows if fate == "dropped"]
    messages = tr("1 message") if sent == 1 else tr("{count} messages", count=sent)
    dropped_text = tr("; dropped: sequence {sequences}", sequences=", ".join(dropped)) if dropped \
        else tr("; nothing dropped")
    return tr("Replay {press}: <b>replay(max_items={max_items})</b> sends {messages}{dropped}. File unchanged: "
              "{unchanged}.", press=press, max_items=max_items, messages=messages, dropped=dropped_text,
              unchanged=tr("True") if unchanged else tr("False"))


def fates_table(rows):
    """The rows of fates() as a table: sequence, type, what replay did."""
    return html_table(["sequence", tr("type"), tr("replay did")],
                      [(sequence, kind, fate_label(fate)) for sequence, kind, fate in rows])


class ReplayExplorer:
    """A max_items slider and a Replay button showing what the chapter's fates() says of each event.

    Each press reads the transcript at path again with read(path), which returns (events, partial tail) as
    chapter 3's read_transcript does (default: code.py's), and checks the file is unchanged: replay only
    reads. `replay` is a plain method: call it directly.
    """

    def __init__(self, path, fates, max_items: int = 5, read=read_transcript):
        self.path, self.fates, self.read, self.presses = Path(path), fates, read, 0
        total = len(self.read(self.path)[0])
        self.max_items = widgets.IntSlider(value=min(max_items, total), min=0, max=total, description="max_items")
        self.replay_button = widgets.Button(description=tr("Replay"), button_style="primary")
        self.replay_button.add_class(MAIN_CONTROL_CLASS)
        self.result = widgets.HTML(tr("Set max_items and press Replay."))
        self.result.add_class(RESULT_CLASS)
        self.replay_button.on_click(lambda _button: self.replay(self.max_items.value))

    def replay(self, max_items: int) -> list:
        """Show and return fates(events, max_items) for the events in the file now."""
        before = self.path.read_bytes()
        rows = self.fates(self.read(self.path)[0], max_items)
        self.presses += 1
        summary = replay_summary(self.presses, max_items, rows, self.path.read_bytes() == before)
        self.result.value = summary + fates_table(rows).data
        return rows

    def widget(self) -> widgets.VBox:
        """The controls and the result, ready to display."""
        return widgets.VBox([widgets.HBox([self.max_items, self.replay_button]), self.result])
