"""Notebook 6 (crash lab): its two widget panels and the words they show.

The campaigns live in the crashlab package, and the notebook writes its mechanisms (the held kill, the
power-loss model of one append) and draws its figures in its own cells; this module only wires buttons
and sliders to the crash lab and says its results in the language in use. The crash lab never depends
on the notebooks.

The crash lab speaks English (its command line prints its own tables); what notebook 6 shows of it
passes through this module's display functions.
"""

from __future__ import annotations

import html
import tempfile
import unicodedata
from functools import lru_cache
from pathlib import Path

import ipywidgets as widgets

from ..crashlab.damage import CORRUPT, Verdict, flip_byte, verdict
from ..crashlab.damage_maps import write_sample
from ..crashlab.kills import KillTrial, kill_campaign, kill_summary
from ..crashlab.races import RaceResult
from ..lab import DurableTranscript
from ..text import i18n
from .display import MAIN_CONTROL_CLASS, RESULT_CLASS, html_table
from .style import verdict_label

tr = i18n.translator("crash_lab")

# --------------------------------------------------------------------------- the crash lab's words, translated


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

# --------------------------------------------------------------------------- the flip panel's sample

@lru_cache(maxsize=2)
def sample_bytes(*, integrity: bool) -> bytes:
    """The undamaged one-session sample the damage maps and the flip explorer damage (write_sample, sessions=1).

    Written once per chain setting: the sample is the same bytes every time (ticking clock, fixed name).
    """
    with tempfile.TemporaryDirectory() as folder:
        return write_sample(Path(folder) / "sample.jsonl", sessions=1, integrity=integrity).read_bytes()



# --------------------------------------------------------------------------- the race table


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
