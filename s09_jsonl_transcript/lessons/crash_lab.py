"""Notebook 6 (crash lab): its figures and its widgets.

The campaigns themselves live in the crashlab package; this module only draws and wires
buttons, so the crash lab never depends on the notebooks. Figures use the Okabe-Ito
colours of style.py, readable to colour-blind eyes. Buttons and sliders call plain
functions that a cell can call too.

The crash lab speaks English (its command line prints its own tables); everything of it that
notebook 6 shows passes through this module's display functions, which speak the language in use.
"""

from __future__ import annotations

import html
import tempfile
import unicodedata
from collections import Counter
from functools import lru_cache
from pathlib import Path

import ipywidgets as widgets
import matplotlib.pyplot as plt
from IPython.display import HTML
from matplotlib.colors import ListedColormap
from matplotlib.patches import Patch

from ..crashlab.damage import CORRUPT, VERDICT_KINDS, Verdict, flip_byte, verdict
from ..crashlab.damage_maps import DamageReport, damage_rows, write_sample
from ..crashlab.kills import KillTrial, kill_campaign, kill_summary
from ..crashlab.powerloss import ABSENT, FAILS_CLOSED, FILLS, PREFIX_CLEAN, PREFIX_TORN, PowerLossReport
from ..crashlab.races import RaceResult
from ..crashlab.workload import MODES
from ..lab import DurableTranscript
from ..text import i18n, saving
from .display import MAIN_CONTROL_CLASS, RESULT_CLASS, html_table
from .style import OKABE_ITO, VERDICT_COLORS, verdict_label

tr = i18n.translator("crash_lab")

# --------------------------------------------------------------------------- the crash lab's words, translated


def outcome_label(outcome: str) -> str:
    """A power-loss outcome (crashlab.powerloss: PREFIX_CLEAN, PREFIX_TORN, ABSENT, FAILS_CLOSED), for display.

    Anything else is a finding: a broken promise, named by the crash lab in English.
    """
    labels = {
        PREFIX_CLEAN: tr("exact prefix"),
        PREFIX_TORN: tr("exact prefix, partial tail ignored"),
        ABSENT: tr("file absent"),
        FAILS_CLOSED: tr("fails closed (corruption after the acknowledged records)"),
        "FINDING": tr("FINDING: a broken promise"),
    }
    return labels.get(outcome, outcome)


def fill_label(fill: str) -> str:
    """What filled the rest of a torn write's room (crashlab.powerloss.FILLS), for display."""
    return {"cut": tr("cut"), "zeros": tr("zeros"), "garbage": tr("garbage")}.get(fill, fill)


def mode_label(mode: str) -> str:
    """A kill-campaign mode: the writer modes keep their names (they are arguments); "all" is translated."""
    return tr("all") if mode == "all" else mode


def scenario_label(scenario: str) -> str:
    """A race scenario (crashlab.races.SCENARIOS), for display."""
    return {"one session": tr("one session"), "taking turns": tr("taking turns"),
            "own sessions": tr("own sessions")}.get(scenario, scenario)


def verdict_text(found: Verdict) -> str:
    """A reader's verdict in words, in the language in use (in English, exactly str(found)).

    The detail of a TranscriptCorruptionError is the library's own message (English), shown through
    i18n.library_text.
    """
    if found.kind == CORRUPT:
        return tr("TranscriptCorruptionError at line {line}: {detail}", line=found.line,
                  detail=i18n.library_text(found.detail))
    return tr("{verdict} ({events} events)", verdict=verdict_label(found.kind), events=found.events)


def _display_width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(character) in "WF" else 1 for character in text)


def _pad(text: str, width: int) -> str:
    """text followed by spaces up to width columns (a Chinese character takes two)."""
    return text + " " * max(width - _display_width(text), 0)

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
                          color=MODE_COLORS[mode], label=tr("acknowledged ({mode})", mode=mode))
    trials_ax.plot([r.trial for r in results], [r.lost for r in results], "x-", color=OKABE_ITO["vermillion"],
                   label=tr("lost (acknowledged, not recovered)"))
    trials_ax.set_yscale("symlog", linthresh=1)  # 0 lost and 200 acknowledged in one view
    trials_ax.set(title=tr("{kills} SIGKILLs: {lost} acknowledged events lost", kills=len(results),
                           lost=sum(r.lost for r in results)),
                  xlabel=tr("trial"), ylabel=tr("events (symmetric log scale)"))
    trials_ax.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)
    in_flight = {mode: Counter(r.recovered - r.acknowledged for r in results if r.mode == mode) for mode in MODES}
    extra = sorted({value for counts in in_flight.values() for value in counts})
    width = 0.8 / len(MODES)
    for index, mode in enumerate(MODES):
        flight_ax.bar([value + (index - 1) * width for value in extra], [in_flight[mode][value] for value in extra],
                      width=width, color=MODE_COLORS[mode], label=mode)
    flight_ax.set(title=tr("Recovered minus acknowledged"), xlabel=tr("events on disk the victim never acknowledged"),
                  ylabel=tr("trials"))
    flight_ax.legend(fontsize="small", title=tr("mode"))
    fig.tight_layout()
    return fig



def kill_plot_verdicts(results: list[KillTrial]) -> str:
    """What plot_kill_trials shows on every run, as verdict lines (saving.verdict): the line of lost events
    stays on 0, and no trial recovered fewer events than it acknowledged. The counts it draws depend on the
    machine's timing; these two claims do not."""
    return "\n".join([
        saving.verdict(all(result.lost == 0 for result in results),
                       tr("left: the line of lost events stays on 0 in every trial")),
        saving.verdict(all(result.recovered >= result.acknowledged for result in results),
                       tr("right: no trial recovered fewer events than its victim acknowledged")),
    ])

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
        chain = tr("chain on") if report.integrity else tr("chain off")
        data = sample_bytes(integrity=report.integrity)
        if len(data) != report.size:
            raise ValueError("the sample written here is not the one the report damaged")
        newlines = [offset for offset, byte in enumerate(data) if byte == ord("\n")]
        strips.append((tr("truncate\n({chain})", chain=chain), report.truncations, newlines))
        strips.append((tr("flip bit {mask}\n({chain})", mask=f"{mask:#04x}", chain=chain), report.flips[mask],
                       newlines))
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
    axes[0].set_title(tr("What the reader says after each possible damage, byte by byte"))
    axes[-1].set_xlabel(tr("byte offset (ticks: the newline that ends each record)"))
    fig.legend(handles=[Patch(color=VERDICT_COLORS[kind], label=verdict_label(kind)) for kind in VERDICT_KINDS],
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
    ax.set_yticks(range(len(FILLS)), [tr("rest: {fill}", fill=fill_label(fill)) for fill in FILLS])
    ax.axvline(len(record) - 1, color=OKABE_ITO["black"], linestyle=":", linewidth=1)
    ax.annotate(tr("all but the newline"), (len(record) - 1, -0.5), xytext=(-4, 4), textcoords="offset points",
                ha="right", fontsize="small", annotation_clip=False)
    ax.set(title=tr("Power cut during one append of {size} bytes: every byte boundary, three fillings",
                    size=len(record)),
           xlabel=tr("bytes of the record that reached the disk"))
    seen = sorted({outcome if outcome in OUTCOME_COLORS else "FINDING" for _, _, outcome in rows}, key=outcomes.index)
    ax.legend(handles=[Patch(color=OUTCOME_COLORS[outcome], label=outcome_label(outcome)) for outcome in seen],
              loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=2, fontsize="small", frameon=False)
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------- what the campaigns found, as tables


def one_append_table(rows: list[tuple[int, str, str]]):
    """For each filling of one append's torn write, how many states gave each outcome (one_append_states' rows)."""
    counts = {fill: Counter(outcome for _, row_fill, outcome in rows if row_fill == fill) for fill in FILLS}
    order = list(OUTCOME_COLORS)
    seen = sorted({outcome for _, _, outcome in rows},
                  key=lambda outcome: (order.index(outcome) if outcome in order else len(order), outcome))
    return html_table([tr("the rest of the write")] + [outcome_label(outcome) for outcome in seen],
                      [[fill_label(fill)] + [counts[fill][outcome] for outcome in seen] for fill in FILLS])


def power_loss_table(report: PowerLossReport):
    """How many power-cut states gave each outcome, and how many were checked (HTML, ready to display)."""
    table = html_table([tr("outcome"), tr("states")],
                       [(outcome_label(outcome), count) for outcome, count in sorted(report.outcomes.items())])
    summary = tr("{states} states ({repair} crashed during a repair), findings: {findings}", states=report.states,
                 repair=report.repair_states, findings=len(report.findings))
    return HTML(table.data + f"<p>{html.escape(summary)}</p>")


def damage_table(reports: list[DamageReport]):
    """crashlab.damage_rows as a table: one row per report (the chain off, then on)."""
    headers = {"integrity": tr("hash chain"), "bytes": tr("bytes"), "records": tr("records"), "flips": tr("flips"),
               "flips caught": tr("flips caught"), "flips silent": tr("flips silent"),
               "line edits": tr("line edits"), "edits silent": tr("edits silent"),
               "last line deleted": tr("last line deleted")}
    rows = damage_rows(reports)
    shown = [{**row, "integrity": tr("on") if row["integrity"] == "on" else tr("off")} for row in rows]
    return html_table([headers[name] for name in rows[0]], [[row[name] for name in rows[0]] for row in shown])


def race_table(results: list[RaceResult]):
    """What each race scenario's racers did and what the files hold."""
    return html_table([tr("scenario"), tr("wrote"), tr("refused"), tr("events"), tr("promise held")],
                      [(scenario_label(result.scenario), result.wrote, result.locked, result.events,
                        tr("yes") if result.ok else tr("no: {problem}", problem=result.problem)) for result in results])


# --------------------------------------------------------------------------- widgets

_ZERO_COLUMNS = ("trials", "lost", "duplicated", "spliced", "partial batches", "failed")


def _zero_column_label(column: str) -> str:
    return {"trials": tr("trials"), "lost": tr("lost"), "duplicated": tr("duplicated"), "spliced": tr("spliced"),
            "partial batches": tr("partial batches"), "failed": tr("failed")}[column]


def kill_verdict(results: list[KillTrial]) -> str:
    """One line per mode with the counts that must be 0, then the overall verdict.

    Acknowledged and recovered totals depend on timing, so they are left out: the same
    seed always prints the same text.
    """
    lines = [_pad(mode_label(row["mode"]), 7)
             + "  ".join(tr("{column} {count}", column=_zero_column_label(column), count=row[column])
                         for column in _ZERO_COLUMNS)
             for row in kill_summary(results)]
    kept = all(result.ok for result in results)
    lines.append(tr("every acknowledged event survived every kill") if kept else tr("A KILL BROKE THE PROMISE"))
    return "\n".join(lines)


class KillPanel:
    """A button that kills a batch of writers, a progress bar, and the verdict.

    With root, each round's transcripts are kept in root/round-N; without, they are removed.
    """

    def __init__(self, trials: int = 12, seed: int = 0, root=None):
        self.trials, self.seed, self.root, self.rounds, self.results = trials, seed, root, 0, []
        self.button = widgets.Button(description=tr("Kill {trials} writers", trials=trials), button_style="danger",
                                     icon="bolt").add_class(MAIN_CONTROL_CLASS)
        self.progress = widgets.IntProgress(value=0, min=0, max=trials, description=tr("kills"))
        self.result = widgets.HTML("<p>" + tr("Press the button: each kill starts a new writer process.") + "</p>")
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
        self.result.value = ("<p>" + tr("Round {round}:", round=self.rounds) + "</p>"
                             f"<pre style='font-size:12px'>{html.escape(kill_verdict(self.results))}</pre>")
        return self.results


def sample_size(*, integrity: bool) -> int:
    """Bytes in the one-session sample the flip explorer damages."""
    return len(sample_bytes(integrity=integrity))


def flip_verdict(*, integrity: bool, offset: int, mask: int = 0x01) -> Verdict:
    """The reader's verdict on a fresh copy of the one-session sample with one bit of one byte flipped.

    The same verdict as crashlab.damage_maps.flipped_example (which says it in English words).
    """
    with tempfile.TemporaryDirectory(prefix="s09-flip-") as folder:
        path = Path(folder) / "sample.jsonl"  # the sample's own name: the same session id
        path.write_bytes(sample_bytes(integrity=integrity))
        reference = DurableTranscript(path, integrity=integrity).read_events()
        flip_byte(path, offset, mask)
        return verdict(path, reference, integrity=integrity)


def flip_text(*, integrity: bool, offset: int, mask: int = 0x01) -> str:
    """flip_verdict in words, in the language in use."""
    return verdict_text(flip_verdict(integrity=integrity, offset=offset, mask=mask))


def flip_comparison(panel: FlipPanel, offsets=(30, 100, 200)) -> str:
    """What the panel shows, then the verdict for each offset with the chain off and on."""
    chain = tr("chain on") if panel.chain.value else tr("chain off")
    lines = [tr("the panel ({chain}, byte {offset}): {result}", chain=chain, offset=panel.offset.value,
                result=panel.result.value)]
    for offset in offsets:
        for chained in (False, True):
            label = _pad(tr("chain on") if chained else tr("chain off"), 9)
            lines.append(tr("{chain} byte {offset}: {result}", chain=label, offset=f"{offset:>3}",
                            result=flip_text(integrity=chained, offset=offset)))
    return "\n".join(lines)


class FlipPanel:
    """Pick a byte and the chain on or off; see what the reader says when one bit of it flips."""

    def __init__(self, offset: int = 100):
        self.sizes = {integrity: sample_size(integrity=integrity) for integrity in (False, True)}
        self.offset = widgets.IntSlider(value=offset, min=0, max=self.sizes[False] - 1, description=tr("byte"),
                                        continuous_update=False)
        self.chain = widgets.Checkbox(value=False, description=tr("hash chain on"))
        self.result = widgets.Label()
        self.offset.observe(lambda _change: self.show(), names="value")
        self.chain.observe(lambda _change: self.show(), names="value")
        self.widget = widgets.VBox([widgets.HBox([self.offset, self.chain]), self.result])
        self.show()

    def show(self) -> str:
        """Flip the low bit of the chosen byte in a fresh sample and show the verdict."""
        self.offset.max = self.sizes[self.chain.value] - 1
        self.result.value = flip_text(integrity=self.chain.value, offset=self.offset.value)
        return self.result.value


def progress_bar(description: str) -> tuple:
    """An IntProgress bar and the progress(done, total) callback that moves it.

    The notebook's three bars ("kills", "states", "maps") are labelled in the language in use.
    """
    labels = {"kills": tr("kills"), "states": tr("states"), "maps": tr("maps")}
    bar = widgets.IntProgress(value=0, min=0, max=1, description=labels.get(description, description))

    def move(done: int, total: int) -> None:
        bar.max, bar.value = total, done

    return bar, move
