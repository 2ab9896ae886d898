"""Widgets for notebook 6 (crash lab). Buttons and sliders call plain functions that a cell can call too."""

from __future__ import annotations

import html
import tempfile
from pathlib import Path

import ipywidgets as widgets

from ..lessons.display import MAIN_CONTROL_CLASS, RESULT_CLASS
from .damage_maps import flipped_example, write_sample
from .kills import KillTrial, kill_campaign, kill_summary

_ZERO_COLUMNS = ("trials", "lost", "duplicated", "spliced", "failed")


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
    with tempfile.TemporaryDirectory() as folder:
        return write_sample(Path(folder) / "sample.jsonl", sessions=1, integrity=integrity).stat().st_size


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
