"""What a student reads in a figure or a widget, gathered so that a test can check it is in Chinese.

    with in_chinese():              # i18n.use("zh"); every warning (a missing glyph) is an error
        figure = plot_something()
        shown = drawn_texts(figure)  # draws the figure, then collects its texts
        assert all(map(has_chinese, shown.titles))
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field

import matplotlib

from s09_jsonl_transcript.text import i18n


def has_chinese(text: str) -> bool:
    """True when text holds at least one CJK ideograph."""
    return any("\u4e00" <= character <= "\u9fff" for character in str(text))


@contextmanager
def in_chinese():
    """Run the block with the kit in Chinese and every warning an error; English and the old fonts afterwards."""
    with matplotlib.rc_context(), warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib warns (UserWarning) when a font lacks a glyph
        i18n.use("zh")
        try:
            yield
        finally:
            i18n.use("en")


@dataclass
class DrawnTexts:
    """The texts of one figure, by kind (empty strings left out)."""

    titles: list = field(default_factory=list)
    axis_labels: list = field(default_factory=list)
    tick_labels: list = field(default_factory=list)
    legend: list = field(default_factory=list)
    annotations: list = field(default_factory=list)


def drawn_texts(figure) -> DrawnTexts:
    """Draw the figure (a missing glyph warns here) and collect what it shows."""
    figure.canvas.draw()
    found = DrawnTexts()
    legends = list(figure.legends)
    for axis in figure.axes:
        found.titles.append(axis.get_title())
        found.axis_labels += [axis.get_xlabel(), axis.get_ylabel()]
        found.tick_labels += [label.get_text() for label in axis.get_xticklabels() + axis.get_yticklabels()]
        found.annotations += [text.get_text() for text in axis.texts]
        if axis.get_legend() is not None:
            legends.append(axis.get_legend())
    for legend in legends:
        found.legend += [text.get_text() for text in legend.get_texts()] + [legend.get_title().get_text()]
    for kind in ("titles", "axis_labels", "tick_labels", "legend", "annotations"):
        setattr(found, kind, [text for text in getattr(found, kind) if text])
    return found
