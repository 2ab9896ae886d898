"""The local crash check's figure: what a notebook cell draws of a verdict.

    draw(verdict)      # a matplotlib figure (pyplot's: a cell ends with plt.show())

The top panel counts each campaign's states, and those that broke a promise: an append without
fsync shows every kill survived and power loss breaking the promise. Below it, one strip per
finding shown: the crash state's bytes, coloured by where each came from (the runs of the finding's
text byte map, bytemap.py), named by the finding's id, which replays it.

matplotlib is imported here only, when a figure is asked for: the grader never draws.
"""

from __future__ import annotations

from ..words import both
from .bytemap import MARKS
from .kit import use_cjk_font
from .local import drawable
from .states import CAMPAIGNS

# Okabe-Ito colours (readable to colour-blind eyes), one per kind of byte in a byte map
KIND_COLOURS = {
    "synced": "#0072B2", "unsynced": "#56B4E9", "torn": "#D55E00", "zeros": "#999999", "garbage": "#CC79A7",
    "hole": "#DDDDDD", "page cache": "#009E73", "damaged": "#000000", "another writer": "#E69F00",
}
JUDGED_COLOUR, BROKEN_COLOUR = "#BBBBBB", "#D55E00"
CAMPAIGN_SHORT = {  # campaign -> a short label in both languages, for an axis
    "power loss": both("power loss", "断电"), "held kill": both("kill", "杀进程"),
    "interleaving": both("interleaving", "交错写入"), "damage": both("damaged file", "损坏文件"),
    "repair": both("power loss in repair", "修复时断电"), "repair kill": both("kill in repair", "修复时杀进程"),
}


def draw(verdict, per_property: int = 2):
    """A figure of the verdict: the campaigns' states (and those that broke a promise), then a byte strip per
    finding shown (the first per_property of each property). Returns the figure."""
    import matplotlib.pyplot as plt

    use_cjk_font()
    findings = drawable(verdict, per_property)
    campaigns = [name for name in CAMPAIGNS if verdict.campaigns.get(name, {}).get("judged")]
    heights = [max(1.2, 0.32 * len(campaigns))] + [0.42] * len(findings)
    figure = plt.figure(figsize=(9, 0.9 + sum(heights) + (0.5 if findings else 0)), layout="constrained")
    grid = figure.add_gridspec(len(heights), 1, height_ratios=heights)
    _campaigns(figure.add_subplot(grid[0]), verdict, campaigns)
    kinds = []
    for row, finding in enumerate(findings, start=1):
        _strip(figure.add_subplot(grid[row]), finding)
        kinds += [run[2] for run in finding["runs"] if run[2] not in kinds]
    if kinds:
        from matplotlib.patches import Patch

        figure.legend(handles=[Patch(color=KIND_COLOURS.get(kind, "#777777"), label=MARKS[kind][1]
                                     if kind in MARKS else kind) for kind in kinds],
                      loc="outside lower center", ncol=2, fontsize=7, frameon=False)
    return figure


def _campaigns(axes, verdict, campaigns: list) -> None:
    """One bar per campaign: the states judged, and over it those that broke a promise."""
    if verdict.problem is not None and not campaigns:
        axes.text(0.5, 0.5, both("refused: nothing was judged", "被拒绝：什么也没有评判"), ha="center", va="center")
        axes.set_axis_off()
        return
    rows = range(len(campaigns))
    judged = [verdict.campaigns[name]["judged"] for name in campaigns]
    broken = [verdict.campaigns[name]["broken"] for name in campaigns]
    axes.barh(rows, judged, color=JUDGED_COLOUR, label=both("states judged", "评判的状态"))
    axes.barh(rows, broken, color=BROKEN_COLOUR, label=both("broke a promise", "违背了承诺"))
    for row, (total, bad) in enumerate(zip(judged, broken)):
        axes.text(total, row, f"  {bad:,} / {total:,}", va="center", fontsize=8)
    axes.set_xscale("log")
    axes.set_xlim(0.8, max(judged) * 8)
    axes.set_yticks(list(rows), [CAMPAIGN_SHORT[name] for name in campaigns], fontsize=8)
    axes.invert_yaxis()
    axes.set_xlabel(both("states (log scale)", "状态数（对数刻度）"), fontsize=8)
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)
    axes.set_title("The crash campaigns: states judged, and those that broke a promise\n"
                   "崩溃测试：评判的状态，以及其中违背承诺的", fontsize=9)


def _strip(axes, finding: dict) -> None:
    """One finding's crash state, byte by byte: a bar of its runs, coloured by kind."""
    size = finding["size"]
    for start, end, kind in finding["runs"]:
        axes.broken_barh([(start, end - start)], (0, 1), color=KIND_COLOURS.get(kind, "#777777"))
    if not size:
        axes.text(0.5, 0.5, both("no file, or an empty one", "没有文件，或是空文件"), ha="center", va="center",
                  fontsize=7, transform=axes.transAxes)
    axes.set_xlim(0, max(size, 1))
    axes.set_ylim(0, 1)
    axes.set_yticks([])
    axes.tick_params(axis="x", labelsize=6)
    axes.set_title(f"[{finding['property']}] {finding['id']}  ·  " + both(
        f"{finding['acknowledged']} acknowledged", f"{finding['acknowledged']} 个已确认"), fontsize=7, loc="left")
