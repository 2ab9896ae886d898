"""Notebook 6's widgets and the words they show, driven the way the kernel drives them.

The notebook draws its figures and writes its mechanisms in its own cells (tests/test_beyond_notebooks.py);
what is left in lessons/crash_lab.py is the two panels, the flip explorer's sample and the race table.
"""

import pytest

from s09_jsonl_transcript.crashlab import kill_campaign
from s09_jsonl_transcript.lessons.crash_lab import FlipPanel, KillPanel, kill_verdict, sample_bytes
from s09_jsonl_transcript.lessons.display import MAIN_CONTROL_CLASS, RESULT_CLASS


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


def test_the_last_byte_of_the_flip_slider_is_the_final_newline():
    panel = FlipPanel()
    for chained in (True, False):
        panel.chain.value = chained
        panel.offset.value = panel.offset.max
        assert sample_bytes(integrity=chained)[panel.offset.value] == ord("\n")
        assert panel.result.value == "partial tail ignored (11 events)"


def test_in_english_the_display_path_says_what_the_crash_lab_says():
    from s09_jsonl_transcript.crashlab.damage_maps import flipped_example
    from s09_jsonl_transcript.lessons.crash_lab import flip_text

    for chained in (False, True):
        last = len(sample_bytes(integrity=chained)) - 1
        for offset in (0, 30, 200, last):
            assert flip_text(integrity=chained, offset=offset) == flipped_example(integrity=chained, offset=offset)


def test_the_race_table_shows_what_each_scenario_did(tmp_path):
    from s09_jsonl_transcript.crashlab.races import race_campaign
    from s09_jsonl_transcript.lessons.crash_lab import race_table

    races = race_campaign(racers=2, events=1, root=tmp_path)
    table = race_table(races).data
    assert table.count(">yes<") == len(races) == 3
    for result in races:
        assert f">{result.wrote}<" in table and f">{result.events}<" in table


@pytest.mark.slow
def test_in_chinese_the_widgets_and_every_text_shown_are_chinese(tmp_path):
    from chinese_texts import has_chinese, in_chinese

    from s09_jsonl_transcript.crashlab.races import race_campaign
    from s09_jsonl_transcript.lessons.crash_lab import flip_comparison, flip_text, race_table

    results = kill_campaign(3, seed=2, max_delay=0.0)
    races = race_campaign(racers=2, events=1, root=tmp_path / "races")
    with in_chinese():
        kills = KillPanel(trials=2, root=tmp_path / "kills")
        for text in (kills.button.description, kills.progress.description, kills.result.value):
            assert has_chinese(text), text
        kills.button.click()
        assert kills.result.value.startswith("<p>第 1 轮：</p>")
        assert "每个已确认的事件都挺过了每一次杀进程" in kills.result.value
        flips = FlipPanel(offset=200)
        for text in (flips.offset.description, flips.chain.description, flips.result.value):
            assert has_chinese(text), text
        assert flips.result.value == "内容被改却照样接受（12 个事件）" == flip_text(integrity=False, offset=200)
        for text in [kill_verdict(results), flip_comparison(flips, offsets=(30,)), race_table(races).data]:
            assert has_chinese(text), text
    assert flip_text(integrity=False, offset=200) == "accepted with different content (12 events)"
