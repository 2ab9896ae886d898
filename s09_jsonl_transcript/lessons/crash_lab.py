"""Notebook 6 (crash lab): its figures and its widgets.

The campaigns themselves live in the crashlab package; this module only draws and wires
buttons, so the crash lab never depends on the notebooks. Figures use the Okabe-Ito
colours of style.py, readable to colour-blind eyes. Buttons and sliders call plain
functions that a cell can call too.
"""

from __future__ import annotations

import html
import tempfile
from collections import Counter
from functools import lru_cache
from pathlib import Path

import ipywidgets as widgets
import matplotlib.pyplot as plt
from matplotlib.colors import ListedColormap
from matplotlib.patches import Patch

from ..crashlab.damage_maps import DamageReport, flipped_example, write_sample
from ..crashlab.kills import KillTrial, kill_campaign, kill_summary
from ..crashlab.powerloss import ABSENT, FAILS_CLOSED, FILLS, PREFIX_CLEAN, PREFIX_TORN
from ..crashlab.workload import MODES
from ..damage import VERDICT_KINDS
from .display import MAIN_CONTROL_CLASS, RESULT_CLASS
from .style import OKABE_ITO, VERDICT_COLORS

# --------------------------------------------------------------------------- figures

OUTCOME_COLORS = {
    PREFIX_CLEAN: OKABE_ITO["green"],
    PREFIX_TORN: OKABE_ITO["sky"],
    ABSENT: OKABE_ITO["grey"],
    FAILS_CLOSED: OKABE_ITO["orange"],
    "FINDING": OKABE_ITO["vermillion"],
}
MODE_COLORS = {"append": OKABE_ITO["blue"], "batch": OKABE_ITO["orange"], "repair": OKABE_ITO["purple"]}


def plot_kill_trials(results: list[KillTrial]):
    """Left: acknowledged and lost events per trial. Right: how many more events the file held
    than the victim had acknowledged (events in flight at the kill)."""
    fig, (trials_ax, flight_ax) = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [3, 2]})
    for mode in MODES:
        chosen = [result for result in results if result.mode == mode]
        trials_ax.scatter([r.trial for r in chosen], [r.acknowledged for r in chosen], s=18,
                          color=MODE_COLORS[mode], label=f"acknowledged ({mode})")
    trials_ax.plot([r.trial for r in results], [r.lost for r in results], "x-", color=OKABE_ITO["vermillion"],
                   label="lost (acknowledged, not recovered)")
    trials_ax.set_yscale("symlog", linthresh=1)  # 0 lost and 200 acknowledged in one view
    trials_ax.set(title=f"{len(results)} SIGKILLs: {sum(r.lost for r in results)} acknowledged events lost",
                  xlabel="trial", ylabel="events (symmetric log scale)")
    trials_ax.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)
    in_flight = {mode: Counter(r.recovered - r.acknowledged for r in results if r.mode == mode) for mode in MODES}
    extra = sorted({value for counts in in_flight.values() for value in counts})
    width = 0.8 / len(MODES)
    for index, mode in enumerate(MODES):
        flight_ax.bar([value + (index - 1) * width for value in extra], [in_flight[mode][value] for value in extra],
                      width=width, color=MODE_COLORS[mode], label=mode)
    flight_ax.set(title="Recovered minus acknowledged", xlabel="events on disk the victim never acknowledged",
                  ylabel="trials")
    flight_ax.legend(fontsize="small", title="mode")
    fig.tight_layout()
    return fig


@lru_cache(maxsize=2)
def sample_bytes(*, integrity: bool) -> bytes:
    """The undamaged one-session sample the damage maps and the flip explorer damage (write_sample, sessions=1).

    Written once per chain setting: the sample is the same bytes every time (ticking clock, fixed name).
    """
    with tempfile.TemporaryDirectory() as folder:
        return write_sample(Path(folder) / "sample.jsonl", sessions=1, integrity=integrity).read_bytes()


def verdict_runs(kinds: list[str]) -> list[tuple[int, int, str]]:
    """Consecutive offsets with the same verdict, as (first offset, length, verdict)."""
    runs = []
    for offset, kind in enumerate(kinds):
        if runs and runs[-1][2] == kind:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1, kind)
        else:
            runs.append((offset, 1, kind))
    return runs


def visible_runs(kinds: list[str], narrowest: float) -> list[tuple[float, float, str]]:
    """The runs of kinds as (start, width, verdict) rectangles to draw, widest first.

    A run narrower than narrowest is widened to it, centred on the run and kept inside the strip;
    drawn last, it stays on top of its wider neighbours.
    """
    rectangles = []
    for first, length, kind in sorted(verdict_runs(kinds), key=lambda run: -run[1]):
        width = min(max(length, narrowest), len(kinds))
        start = min(max(first + length / 2 - width / 2, 0), len(kinds) - width)
        rectangles.append((start, width, kind))
    return rectangles


def plot_verdict_maps(reports: list[DamageReport], mask: int = 0x01, min_visible: float = 0.006):
    """One strip per damage map: the verdict at every offset, chain off and on.

    A run of offsets narrower than min_visible of the longest strip is drawn that wide, on top of
    its neighbours, so a single byte (a record boundary, the final newline) stays visible. Ticks
    under each strip mark the sample's newline bytes: one per record.
    """
    strips = []
    for report in reports:
        chain = "chain on" if report.integrity else "chain off"
        data = sample_bytes(integrity=report.integrity)
        if len(data) != report.size:
            raise ValueError("the sample written here is not the one the report damaged")
        newlines = [offset for offset, byte in enumerate(data) if byte == ord("\n")]
        strips.append((f"truncate\n({chain})", report.truncations, newlines))
        strips.append((f"flip bit {mask:#04x}\n({chain})", report.flips[mask], newlines))
    fig, axes = plt.subplots(len(strips), 1, figsize=(11, 0.95 * len(strips) + 1.3), sharex=True)
    longest = max(len(kinds) for _, kinds, _ in strips)
    narrowest = min_visible * longest
    for ax, (label, kinds, newlines) in zip(axes, strips):
        for start, width, kind in visible_runs(kinds, narrowest):
            ax.broken_barh([(start, width)], (0, 1), facecolor=VERDICT_COLORS[kind], linewidth=0)
        ax.vlines(newlines, -0.3, 0, color=OKABE_ITO["black"], linewidth=1)
        ax.set_ylim(-0.3, 1)
        ax.set_yticks([0.5], [label], fontsize="small")
    axes[0].set_xlim(0, longest)
    axes[0].set_title("What the reader says after each possible damage, byte by byte")
    axes[-1].set_xlabel("byte offset (ticks: the newline that ends each record)")
    fig.legend(handles=[Patch(color=VERDICT_COLORS[kind], label=kind) for kind in VERDICT_KINDS],
               loc="lower center", ncol=4, fontsize="small", frameon=False)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig


def plot_one_append(record: bytes, rows: list[tuple[int, str, str]]):
    """The power-cut states of one append: bytes of the record that reached the disk (x) and
    what filled the rest of its room (y), coloured by what reader and writer made of it."""
    outcomes = list(OUTCOME_COLORS)
    grid = [[float("nan")] * (len(record) + 1) for _ in FILLS]
    for torn_at, fill, outcome in rows:
        grid[FILLS.index(fill)][torn_at] = outcomes.index(outcome if outcome in OUTCOME_COLORS else "FINDING")
    fig, ax = plt.subplots(figsize=(11, 2.8))
    ax.imshow(grid, aspect="auto", interpolation="nearest", vmin=-0.5, vmax=len(outcomes) - 0.5,
              cmap=ListedColormap([OUTCOME_COLORS[outcome] for outcome in outcomes]))
    ax.set_yticks(range(len(FILLS)), [f"rest: {fill}" for fill in FILLS])
    ax.axvline(len(record) - 1, color=OKABE_ITO["black"], linestyle=":", linewidth=1)
    ax.annotate("all but the newline", (len(record) - 1, -0.5), xytext=(-4, 4), textcoords="offset points",
                ha="right", fontsize="small", annotation_clip=False)
    ax.set(title=f"Power cut during one append of {len(record)} bytes: every byte boundary, three fillings",
           xlabel="bytes of the record that reached the disk")
    seen = sorted({outcome if outcome in OUTCOME_COLORS else "FINDING" for _, _, outcome in rows}, key=outcomes.index)
    ax.legend(handles=[Patch(color=OUTCOME_COLORS[outcome], label=outcome) for outcome in seen],
              loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=2, fontsize="small", frameon=False)
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------- widgets

_ZERO_COLUMNS = ("trials", "lost", "duplicated", "spliced", "partial batches", "failed")


def kill_verdict(results: list[KillTrial]) -> str:
    """One line per mode with the counts that must be 0, then the overall verdict.

    Acknowledged and recovered totals depend on timing, so they are left out: the same
    seed always prints the same text.
    """
    lines = [f"{row['mode']:<7}" + "  ".join(f"{column} {row[column]}" for column in _ZERO_COLUMNS)
             for row in kill_summary(results)]
    kept = all(result.ok for result in results)
    lines.append("every acknowledged event survived every kill" if kept else "A KILL BROKE THE PROMISE")
    return "\n".join(lines)


class KillPanel:
    """A button that kills a batch of writers, a progress bar, and the verdict.

    With root, each round's transcripts are kept in root/round-N; without, they are removed.
    """

    def __init__(self, trials: int = 12, seed: int = 0, root=None):
        self.trials, self.seed, self.root, self.rounds, self.results = trials, seed, root, 0, []
        self.button = widgets.Button(description=f"Kill {trials} writers", button_style="danger",
                                     icon="bolt").add_class(MAIN_CONTROL_CLASS)
        self.progress = widgets.IntProgress(value=0, min=0, max=trials, description="kills")
        self.result = widgets.HTML("<p>Press the button: each kill starts a new writer process.</p>")
        self.result.add_class(RESULT_CLASS)
        self.button.on_click(lambda _button: self.run())
        self.widget = widgets.VBox([widgets.HBox([self.button, self.progress]), self.result])

    def show_progress(self, done: int, total: int) -> None:
        """Move the bar; the campaign calls this after each kill."""
        self.progress.max, self.progress.value = total, done

    def run(self) -> list[KillTrial]:
        """Kill a new batch of writers (a new seed each round) and show the verdict."""
        self.button.disabled = True
        try:
            root = None if self.root is None else Path(self.root) / f"round-{self.rounds + 1}"
            self.results = kill_campaign(self.trials, seed=self.seed + self.rounds, root=root,
                                         progress=self.show_progress)
        finally:
            self.button.disabled = False
        self.rounds += 1
        self.result.value = (f"<p>Round {self.rounds}:</p>"
                             f"<pre style='font-size:12px'>{html.escape(kill_verdict(self.results))}</pre>")
        return self.results


def sample_size(*, integrity: bool) -> int:
    """Bytes in the one-session sample the flip explorer damages."""
    return len(sample_bytes(integrity=integrity))


class FlipPanel:
    """Pick a byte and the chain on or off; see what the reader says when one bit of it flips."""

    def __init__(self, offset: int = 100):
        self.sizes = {integrity: sample_size(integrity=integrity) for integrity in (False, True)}
        self.offset = widgets.IntSlider(value=offset, min=0, max=self.sizes[False] - 1, description="byte",
                                        continuous_update=False)
        self.chain = widgets.Checkbox(value=False, description="hash chain on")
        self.result = widgets.Label()
        self.offset.observe(lambda _change: self.show(), names="value")
        self.chain.observe(lambda _change: self.show(), names="value")
        self.widget = widgets.VBox([widgets.HBox([self.offset, self.chain]), self.result])
        self.show()

    def show(self) -> str:
        """Flip the low bit of the chosen byte in a fresh sample and show the verdict."""
        self.offset.max = self.sizes[self.chain.value] - 1
        self.result.value = flipped_example(integrity=self.chain.value, offset=self.offset.value)
        return self.result.value


def progress_bar(description: str) -> tuple:
    """An IntProgress bar and the progress(done, total) callback that moves it."""
    bar = widgets.IntProgress(value=0, min=0, max=1, description=description)

    def move(done: int, total: int) -> None:
        bar.max, bar.value = total, done

    return bar, move
