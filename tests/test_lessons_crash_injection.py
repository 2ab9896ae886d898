"""Chapter 2's panels, driven with the chapter's own crash (a real SIGKILL of code.py's JSONLTranscript).

The panels run what they are given on a new file at every press: here the chapter's crash_and_recover and
kill_at_random_moment, taken from its cells (chapter_code), so every press kills a real child process.
"""

import matplotlib

matplotlib.use("Agg")  # plain pytest module: no display, no inline backend

import pytest
from chapter_code import run_cells

from s09_jsonl_transcript.lessons.crash_injection import CampaignPanel, CrashPanel, campaign_verdicts
from s09_jsonl_transcript.lessons.display import MAIN_CONTROL_CLASS, RESULT_CLASS

CELLS = ["language", "imports", "agent", "crash", "recovery", "plot-crash", "crash-and-recover", "crash-panel",
         "writer", "kill-random"]


@pytest.fixture(scope="module")
def chapter():
    """Chapter 2's cells: crash_and_recover, crash_picture and kill_at_random_moment among them."""
    return run_cells("02_crash_injection", CELLS)


def test_crash_now_kills_a_new_agent_at_the_slider_point(chapter, tmp_path):
    panel = CrashPanel(tmp_path, crash=chapter["crash_and_recover"], draw=chapter["crash_picture"], kill_after=5)
    assert MAIN_CONTROL_CLASS in panel.crash_button._dom_classes and RESULT_CLASS in panel.result._dom_classes
    panel.slider.value = 8
    panel.crash_button.click()
    assert panel.result_text == ("crash-1.jsonl: 8 acknowledged; on disk 8 complete lines and a partial tail of "
                                 "109 bytes; 8 recovered; recovered == acknowledged: True")
    first_picture = panel.plot.value
    panel.tear.value = False
    panel.crash_button.click()
    assert panel.result_text.startswith("crash-2.jsonl: 8 acknowledged; on disk 8 complete lines and no partial "
                                        "tail; 8 recovered") and panel.plot.value != first_picture
    assert (tmp_path / "crash-1.jsonl").exists() and (tmp_path / "crash-2.jsonl").exists()


def test_the_summary_counts_lines_and_says_when_records_differ(chapter, tmp_path):
    panel = CrashPanel(tmp_path, crash=chapter["crash_and_recover"], draw=chapter["crash_picture"])
    records = [{"sequence": 1}, {"sequence": 2}]
    assert panel.summary("x.jsonl", records, b"{}\n{}\n{\"half", records[:1]).endswith(
        "on disk 2 complete lines and a partial tail of 6 bytes; 1 recovered; recovered == acknowledged: False")
    assert "on disk 0 complete lines and no partial tail" in panel.summary("x.jsonl", [], b"", [])
    assert "partial tail of 0 bytes" not in panel.summary("x.jsonl", records, b"{}\n{}\n", records)


def test_the_campaign_runs_real_kills_on_new_files_every_round(chapter, tmp_path):
    campaign = CampaignPanel(tmp_path, run_one=chapter["kill_at_random_moment"], trials=2)
    for round_number in (1, 2):
        campaign.run_button.click()
        assert campaign.progress.value == campaign.progress.max == 2 and len(campaign.results) == 2
        assert all(trial["acknowledged"] >= 1 and trial["recovered"] >= trial["acknowledged"]
                   for trial in campaign.results)
        assert campaign.result_text.startswith(f"round {round_number}: 2 kills;")
        assert campaign.result_text.endswith("every acknowledged event survived every kill: True")
        assert len(list((tmp_path / f"round-{round_number}").glob("kill-*.jsonl"))) == 2


def test_the_campaign_says_so_when_an_event_was_lost(tmp_path):
    """The summary can fail: a trial that reports a loss turns its verdict False."""
    reports = iter([{"acknowledged": 4, "recovered": 4, "lost": 0, "spliced": 0},
                    {"acknowledged": 5, "recovered": 3, "lost": 2, "spliced": 0}])
    campaign = CampaignPanel(tmp_path, run_one=lambda path, seed: next(reports), trials=2)
    campaign.run()
    assert campaign.result_text == ("round 1: 2 kills; 2 lost, 0 spliced; "
                                    "every acknowledged event survived every kill: False")


def test_the_campaign_plot_s_verdicts_say_what_every_run_shows_and_can_fail():
    """What chapter 2 saves of its campaign plot (a machine-dependent cell): two verdicts, never the counts."""
    kept = [{"acknowledged": 4, "recovered": 5, "lost": 0, "spliced": 0}] * 2
    assert campaign_verdicts(kept).splitlines() == [
        "✔ no dot below zero: every trial recovered at least what it acknowledged",
        "✔ no cross on the chart: no trial lost an acknowledged event"]
    broken = kept + [{"acknowledged": 5, "recovered": 3, "lost": 2, "spliced": 0}]
    assert [line[0] for line in campaign_verdicts(broken).splitlines()] == ["✘", "✘"]
