"""The lesson's architecture diagram, drawn in either language: images/jsonl-transcript[.zh].svg.

    python -m s09_jsonl_transcript.lessons.diagram      rewrite both SVG files

The text is drawn as outlines (svg.fonttype "path"), so the Chinese diagram renders on a
machine without a CJK font. A test redraws both and compares them with the files.
"""

from __future__ import annotations

import html
import io
import sys
from pathlib import Path

import matplotlib

from ..text import i18n
from .style import OKABE_ITO

tr = i18n.translator("diagram")

IMAGES = Path(__file__).resolve().parents[2] / "images"
FILES = {"en": IMAGES / "jsonl-transcript.svg", "zh": IMAGES / "jsonl-transcript.zh.svg"}
TITLE = {"en": "s09 JSONL transcript: evidence is append-only, runtime state is rebuilt",
         "zh": "s09 JSONL Transcript：证据只追加，运行时状态可重建"}
WIDTH, HEIGHT = 960, 520  # drawing units: pixels of the original layout, y grows downwards
WRITE, READ, GATE = OKABE_ITO["blue"], OKABE_ITO["sky"], OKABE_ITO["purple"]
SOLID = {"write": ("#E5F1F8", WRITE), "read": ("#EAF5FC", READ), "gate": ("#F8EAF2", GATE),
         "file": ("#E0F3EE", OKABE_ITO["green"])}


def _boxes():
    """(x, y, width, height, style, dashed) of every box."""
    return [
        (14, 44, 190, 118, "write", False), (234, 44, 244, 118, "write", False), (508, 44, 200, 118, "write", False),
        (750, 44, 196, 300, "file", False),
        (508, 232, 200, 124, "read", False), (246, 232, 220, 124, "read", False), (14, 232, 190, 124, "read", False),
        (508, 412, 200, 96, "gate", False), (246, 412, 220, 96, "gate", False), (14, 412, 190, 96, "gate", True),
    ]


def _texts():
    """(x, y, text, size, options) of every text; options: b bold, m monospace, l left-aligned, c colour."""
    mono = "m"
    return [
        (12, 26, tr("write path: the agent process (may die at any moment)"), 15, "bl", WRITE),
        (12, 216, tr("read path: a fresh process after a crash or restart"), 15, "bl", WRITE),
        (12, 396, tr("memory gate: an explicit choice, never automatic"), 15, "bl", "#7A3E63"),
        (109, 72, tr("Agent event"), 14, "b", None), (109, 96, tr("MockLLM emits a dict:"), 14, "", None),
        (109, 116, '{"type": "message",', 12, mono, None), (109, 134, ' "role": "user", ...}', 12, mono, None),
        (356, 72, tr("Sequence + schema envelope"), 14, "b", None),
        (356, 96, "schema_version, sequence,", 12, mono, None), (356, 114, "session_id, recorded_at,", 12, mono, None),
        (356, 132, "event_id =", 12, mono, None), (356, 150, "transcript:<session>:<seq>", 12, mono, None),
        (608, 72, tr("JSONL append"), 14, "b", None), (608, 96, tr("one line, one O_APPEND"), 14, "", None),
        (608, 116, tr("write, then fsync;"), 14, "", None), (608, 136, tr("append returns only"), 14, "", None),
        (608, 154, tr("once the line is durable"), 14, "", None),
        (848, 72, "session.jsonl", 14, "b", None), (848, 92, tr("append-only evidence"), 14, "", None),
        (848, 110, tr("one event per line"), 14, "", None),
        (774, 140, '{"sequence":1,...}', 12, "ml", None), (774, 166, '{"sequence":2,...}', 12, "ml", None),
        (774, 192, '{"sequence":3,...}', 12, "ml", None), (774, 218, '{"schema_vers', 12, "ml", "#8A5A00"),
        (848, 244, tr("a partial tail (no newline)"), 12, "", None),
        (848, 260, tr("was never acknowledged:"), 12, "", None),
        (848, 276, tr("replay ignores it, the next"), 12, "", None),
        (848, 292, tr("append cuts it off"), 12, "", None),
        (848, 322, tr("never edited in place"), 12, "b", None),
        (648, 186, "SIGKILL", 13, "bl", OKABE_ITO["vermillion"]),
        (608, 258, tr("Validated replay fold"), 14, "b", None),
        (608, 278, tr("checks every line in order"), 12, "", None),
        (608, 296, tr("(JSON, envelope, sequence);"), 12, "", None),
        (608, 314, tr("a partial tail is ignored,"), 12, "", None),
        (608, 332, tr("any other damage raises"), 12, "", None),
        (608, 349, "TranscriptCorruptionError", 12, mono, None),
        (356, 258, "ReplayState", 14, "b", None), (356, 280, "messages[]  title", 12, mono, None),
        (356, 298, "file_snapshots", 12, mono, None), (356, 316, "pending_calls", 12, mono, None),
        (356, 334, "next_sequence", 12, mono, None),
        (109, 258, tr("Replacement runtime"), 14, "b", None),
        (109, 282, tr("sends messages[] to"), 13, "", None), (109, 300, tr("the model, answers"), 13, "", None),
        (109, 318, tr("pending calls, appends"), 13, "", None), (109, 336, tr("from next_sequence"), 13, "", None),
        (728, 286, tr("read"), 12, "", None),
        (608, 436, tr("Explicit selection"), 14, "b", None), (608, 458, tr("one event_id"), 13, "", None),
        (608, 476, tr("+ summary + reason;"), 13, "", None), (608, 494, tr("message or file snapshot"), 13, "", None),
        (356, 436, tr("Memory candidate"), 14, "b", None), (356, 458, tr("source_id = the event_id,"), 13, "", None),
        (356, 476, tr("summary, reason"), 13, "", None), (356, 494, tr("carries no event body"), 13, "b", None),
        (109, 436, tr("Later memory policy"), 14, "b", None), (109, 460, tr("decides what to keep;"), 13, "", None),
        (109, 478, tr("follows source_id back"), 13, "", None), (109, 496, tr("to the evidence"), 13, "", None),
        (840, 404, "select_memory_", 12, "mr", None), (840, 420, "candidate()", 12, "mr", None),
    ]


_ARROWS = [  # polylines; the arrowhead is at the last point
    [(204, 103), (232, 103)], [(478, 103), (506, 103)], [(708, 103), (748, 103)],
    [(748, 294), (710, 294)], [(508, 294), (468, 294)], [(246, 294), (206, 294)],
    [(848, 344), (848, 460), (710, 460)], [(508, 460), (468, 460)], [(246, 460), (206, 460)],
]


def draw(language: str = "en"):
    """The diagram as a matplotlib Figure, in language ("en" or "zh")."""
    from matplotlib.figure import Figure
    from matplotlib.patches import FancyBboxPatch

    before = i18n.current()
    i18n.use(language)
    try:
        figure = Figure(figsize=(WIDTH / 100, HEIGHT / 100), dpi=100)
        axes = figure.add_axes((0, 0, 1, 1))
        axes.set_xlim(0, WIDTH)
        axes.set_ylim(HEIGHT, 0)
        axes.set_axis_off()
        for x, y, width, height, style, dashed in _boxes():
            fill, edge = ("#FFFFFF", GATE) if dashed else SOLID[style]
            axes.add_patch(FancyBboxPatch((x, y), width, height, boxstyle="round,pad=0,rounding_size=8",
                                          facecolor=fill, edgecolor=edge, linewidth=2,
                                          linestyle=(0, (6, 4)) if dashed else "-"))
        for y, colour in ((124, "#009E73"), (150, "#009E73"), (176, "#009E73"), (202, OKABE_ITO["orange"])):
            axes.add_patch(FancyBboxPatch((766, y), 164, 22, boxstyle="square,pad=0", facecolor="#FFFFFF",
                                          edgecolor=colour, linestyle="-" if y < 202 else (0, (4, 3))))
        for y in (190, 370):  # under the boxes: the file's box covers them
            axes.plot([10, 950], [y, y], color=OKABE_ITO["grey"], linestyle=(0, (6, 5)), linewidth=1, zorder=0)
        axes.plot([640, 626, 640, 624], [172, 186, 186, 204], color=OKABE_ITO["vermillion"], linewidth=3)
        for points in _ARROWS:
            if len(points) > 2:  # the bends; the last segment is drawn with its arrowhead below
                axes.plot(*zip(*points[:-1]), color="black", linewidth=2)
            axes.annotate("", xy=points[-1], xytext=points[-2],
                          arrowprops={"arrowstyle": "-|>", "color": "black", "linewidth": 2, "mutation_scale": 14})
        for x, y, text, size, options, colour in _texts():
            axes.text(x, y, text, fontsize=size * 0.72, color=colour or "black",
                      fontweight="bold" if "b" in options else "normal",
                      family="monospace" if "m" in options else None,
                      ha="left" if "l" in options else "right" if "r" in options else "center", va="baseline")
        return figure
    finally:
        i18n.use(before)


def words(language: str = "en") -> str:
    """Every text of the diagram in language, in drawing order: the SVG's description, for screen readers."""
    before = i18n.current()
    i18n.use(language)
    try:
        return " | ".join(text for _, _, text, _, _, _ in _texts())
    finally:
        i18n.use(before)


def write(language: str, path: Path | None = None) -> Path:
    """Draw the diagram in language and save it as an SVG whose text is outlines; return the path.

    The words themselves go into the SVG's <title> and <desc>, so the file can still be read
    (and checked against this module) without its glyphs.
    """
    path = path or FILES[language]
    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "path", "svg.hashsalt": "s09-diagram"}):
        draw(language).savefig(buffer, format="svg", metadata={"Date": None})
    svg = buffer.getvalue()
    opening = svg.index(">", svg.index("<svg")) + 1
    described = (f"\n <title>{html.escape(TITLE[language])}</title>"
                 f"\n <desc>{html.escape(words(language))}</desc>")
    path.write_text(svg[:opening] + described + svg[opening:], encoding="utf-8")
    return path


if __name__ == "__main__":
    for name in sys.argv[1:] or list(FILES):
        print(write(name))
