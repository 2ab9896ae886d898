"""Chapter 2's instructor panels: crash the agent where the slider says, and run many kills at random moments.

The chapter writes the crash itself in its cells (the agent in a child process, the SIGKILL, the recovery by
a fresh JSONLTranscript, the picture); the panels are given those functions and only drive them, on a new
file at every press, so pressing twice never meets the first press's file. Every control calls a plain
method, so a cell or a test takes the same steps. Labels follow i18n.use; the Chinese is in
locale/zh/crash_injection.json.
"""

from __future__ import annotations

import html
from pathlib import Path

import ipywidgets as widgets

from ..code import BUG_FIX_SCRIPT
from ..text import i18n, saving
from .display import MAIN_CONTROL_CLASS, RESULT_CLASS, figure_png

tr = i18n.translator("crash_injection")


class CrashPanel:
    """A kill-point slider, a "kill mid-write" box and Crash now, over the chapter's crash_and_recover.

    crash(path, kill_after, tear) returns (acknowledged records, the file's bytes, recovered records);
    draw(acknowledged, data, recovered) returns a Figure (a plot), shown as an image.
    """

    def __init__(self, folder, *, crash, draw, kill_after: int = 5):
        self.folder, self.crash, self.draw, self.presses = Path(folder), crash, draw, 0
        self.folder.mkdir(parents=True, exist_ok=True)
        # The agent dies after 1 .. len - 1 appends: with tear, a next event must exist to cut in half.
        self.slider = widgets.IntSlider(value=kill_after, min=1, max=len(BUG_FIX_SCRIPT) - 1,
                                        description=tr("kill after"), continuous_update=False)
        self.tear = widgets.Checkbox(value=True, description=tr("kill mid-write"), indent=False)
        self.crash_button = widgets.Button(description=tr("Crash now"), button_style="danger",
                                           icon="bolt").add_class(MAIN_CONTROL_CLASS)
        self.result_text = tr("Press Crash now.")
        self.result = widgets.HTML("<p>" + html.escape(self.result_text) + "</p>").add_class(RESULT_CLASS)
        self.plot = widgets.Image(format="png", layout=widgets.Layout(width="640px"))
        self.crash_button.on_click(lambda _button: self.press())
        self.widget = widgets.VBox([widgets.HBox([self.slider, self.tear, self.crash_button]), self.result,
                                    self.plot])

    def press(self) -> None:
        """Crash a new agent on a new file at the chosen point, then show what survived."""
        self.presses += 1
        path = self.folder / f"crash-{self.presses}.jsonl"
        acknowledged, data, recovered = self.crash(path, self.slider.value, self.tear.value)
        self.result_text = self.summary(path.name, acknowledged, data, recovered)
        self.result.value = "<p>" + html.escape(self.result_text) + "</p>"
        self.plot.value = figure_png(self.draw(acknowledged, data, recovered))

    def summary(self, name: str, acknowledged: list, data: bytes, recovered: list) -> str:
        """One sentence: what the agent acknowledged, what is on disk, what a fresh process recovered."""
        tail = data.rpartition(b"\n")[2]  # what follows the last newline: the partial tail, if any
        fields = {"name": name, "acknowledged": len(acknowledged), "lines": data.count(b"\n"),
                  "tail": len(tail), "recovered": len(recovered), "same": recovered == acknowledged}
        if tail:
            return tr("{name}: {acknowledged} acknowledged; on disk {lines} complete lines and a partial tail of "
                      "{tail} bytes; {recovered} recovered; recovered == acknowledged: {same}", **fields)
        return tr("{name}: {acknowledged} acknowledged; on disk {lines} complete lines and no partial tail; "
                  "{recovered} recovered; recovered == acknowledged: {same}", **fields)


class CampaignPanel:
    """Run N kills: a button and a progress bar over the chapter's one-trial function, with a summary.

    run_one(path, seed) kills one writer and returns a dict with the counts "acknowledged", "recovered",
    "lost" and "spliced".
    """

    def __init__(self, folder, *, run_one, trials: int = 30):
        self.folder, self.run_one, self.trials = Path(folder), run_one, trials
        self.rounds, self.results = 0, []
        self.run_button = widgets.Button(description=tr("Run {count} kills", count=trials), icon="bolt")
        self.progress = widgets.IntProgress(value=0, min=0, max=trials, description=tr("kills"))
        self.result_text = tr("Press the button to run the kills.")
        self.result = widgets.HTML("<p>" + html.escape(self.result_text) + "</p>")
        self.run_button.on_click(lambda _button: self.run())
        self.widget = widgets.VBox([widgets.HBox([self.run_button, self.progress]), self.result])

    def run(self) -> list[dict]:
        """One round: trials kills on new files with new seeds, the bar moving after each; then the summary."""
        self.rounds += 1
        folder = self.folder / f"round-{self.rounds}"
        folder.mkdir(parents=True)
        self.run_button.disabled, self.results = True, []
        try:
            for trial in range(self.trials):
                seed = self.rounds * self.trials + trial
                self.results.append(self.run_one(folder / f"kill-{trial + 1}.jsonl", seed))
                self.progress.value = trial + 1
        finally:
            self.run_button.disabled = False
        self.result_text = self.summary()
        self.result.value = "<p>" + html.escape(self.result_text) + "</p>"
        return self.results

    def summary(self) -> str:
        """The round's kills, what was lost or spliced, and whether that is nothing.

        How many events were acknowledged and recovered depends on the machine's timing: the chapter's
        plot shows those. The panel is saved with the notebook, so its text holds only what every run
        gives when the promise holds (saving.py)."""
        total = {key: sum(result[key] for result in self.results) for key in ("lost", "spliced")}
        return tr("round {round}: {trials} kills; {lost} lost, {spliced} spliced; "
                  "every acknowledged event survived every kill: {ok}",
                  round=self.rounds, trials=len(self.results), ok=total["lost"] == total["spliced"] == 0, **total)


def campaign_verdicts(results: list[dict]) -> str:
    """What the chapter's campaign plot shows on every run, as verdict lines (saving.verdict): no trial
    recovered fewer events than it acknowledged (no dot below zero), and none lost an acknowledged event
    (no cross). How many events each trial acknowledged depends on the machine's timing; these two claims
    do not."""
    return "\n".join([
        saving.verdict(all(result["recovered"] >= result["acknowledged"] for result in results),
                       tr("no dot below zero: every trial recovered at least what it acknowledged")),
        saving.verdict(not any(result["lost"] for result in results),
                       tr("no cross on the chart: no trial lost an acknowledged event")),
    ])
