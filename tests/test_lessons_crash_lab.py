"""Notebook 6's widgets and plots, driven the way the kernel drives them."""

import matplotlib

matplotlib.use("Agg")

from s09_jsonl_transcript.crashlab import damage_campaign, kill_campaign  # noqa: E402
from s09_jsonl_transcript.crashlab.powerloss import one_append_states  # noqa: E402
from s09_jsonl_transcript.lessons.crash_lab import (  # noqa: E402
    FlipPanel,
    KillPanel,
    kill_verdict,
    plot_kill_trials,
    plot_one_append,
    plot_verdict_maps,
    progress_bar,
)
from s09_jsonl_transcript.lessons.display import MAIN_CONTROL_CLASS, RESULT_CLASS  # noqa: E402


def test_the_kill_button_kills_writers_and_shows_the_verdict(tmp_path):
    panel = KillPanel(trials=3, root=tmp_path)
    assert MAIN_CONTROL_CLASS in panel.button._dom_classes and RESULT_CLASS in panel.result._dom_classes
    before = panel.result.value
    panel.button.click()
    assert panel.result.value != before and "Round 1" in panel.result.value
    assert "every acknowledged event survived every kill" in panel.result.value
    assert (panel.progress.value, panel.progress.max) == (3, 3)
    assert len(list((tmp_path / "round-1").glob("kill-*.jsonl"))) == 3
    panel.button.click()
    assert "Round 2" in panel.result.value and (tmp_path / "round-2").is_dir()


def test_the_verdict_text_names_a_failed_trial():
    results = kill_campaign(2, seed=5, modes=("append",))
    assert kill_verdict(results).endswith("every acknowledged event survived every kill")
    broken = [results[0].__class__(**{**vars(results[0]), "lost": 1}), results[1]]
    assert kill_verdict(broken).endswith("A KILL BROKE THE PROMISE")
    assert "lost 1" in kill_verdict(broken)


def test_moving_the_flip_slider_damages_a_new_file_and_shows_its_verdict():
    panel = FlipPanel(offset=30)
    assert panel.result.value.startswith("TranscriptCorruptionError at line 1")
    panel.offset.value = 200
    assert panel.result.value == "accepted with different content (12 events)"
    panel.chain.value = True
    assert "chain mismatch" in panel.result.value
    assert panel.offset.max == panel.sizes[True] - 1 > panel.sizes[False] - 1


def test_the_progress_bar_follows_the_callback():
    bar, move = progress_bar("x")
    move(2, 5)
    assert (bar.value, bar.max) == (2, 5)


def test_plots_have_titles_labels_and_legends():
    results = kill_campaign(3, seed=2, max_delay=0.0)
    figures = [
        plot_kill_trials(results),
        plot_verdict_maps([damage_campaign(integrity=chained, sessions=1) for chained in (False, True)]),
        plot_one_append(*one_append_states()[1:]),
    ]
    for figure in figures:
        axes = figure.axes
        assert any(ax.get_title() for ax in axes)
        assert any(ax.get_xlabel() for ax in axes)
        assert any(ax.get_legend() for ax in axes) or figure.legends
    matplotlib.pyplot.close("all")
