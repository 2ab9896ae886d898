"""Notebooks 4, 5 and 6 are saved with widgets whose values agree with the result they show, in both languages.

A student reads the saved notebook before running anything: a slider saved at one value next to the
result of another would teach the wrong thing. Each test rebuilds what the notebook computed (the
sessions are deterministic), in the notebook's language, and checks the saved result is exactly what
the saved settings give.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from chapter_reference import bug_fix_session, code_py_fates
from saved_widgets import displayed_widgets, load, one, result_model

from s09_jsonl_transcript.code import event_id_for
from s09_jsonl_transcript.crashlab.damage_maps import flipped_example
from s09_jsonl_transcript.lessons.crash_lab import flip_text
from s09_jsonl_transcript.lessons.memory_gate import answer_html
from s09_jsonl_transcript.lessons.replay_window import fates_table, replay_summary
from s09_jsonl_transcript.text import i18n

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
LANGUAGES = ("en", "zh")

# The labels the saved widgets carry, and what the text beside them says, in each language.
LABELS = {
    "en": {"event": "Event", "summary": "Summary", "reason": "Reason", "candidate": "<b>candidate</b>",
           "submission": "Submission 1 ({event_id}): ", "byte": "byte", "chain": "hash chain on",
           "kills": "kills", "kill button": "Kill {trials} writers", "unpressed": "<p>Press the button",
           "round": r"<p>Round \d+:</p>", "replay beside": "the slider was set to {slider} and **Replay** pressed once",
           "first press": "Replay 1: <b>replay(max_items={slider})</b> sends {messages}; dropped: sequence {dropped}. "
                          "File unchanged: True."},
    "zh": {"event": "事件", "summary": "摘要", "reason": "理由", "candidate": "<b>候选</b>",
           "submission": "第 1 次提交（{event_id}）：", "byte": "字节", "chain": "开启哈希链",
           "kills": "杀进程", "kill button": "杀掉 {trials} 个写入进程", "unpressed": "<p>按下按钮",
           "round": r"<p>第 \d+ 轮：</p>", "replay beside": "滑块已经在代码里设为 {slider}，并按了一次 **回放**",
           "first press": "第 1 次回放：<b>replay(max_items={slider})</b> 发出 {messages}；丢弃了 sequence {dropped}。"
                          "文件未变：是。"},
}


@pytest.fixture
def language(request):
    """Run the test in the language of the notebook it reads; English again afterwards."""
    i18n.use(request.param)
    yield request.param
    i18n.use("en")


def in_languages():
    return pytest.mark.parametrize("language", LANGUAGES, indirect=True)


@in_languages()
def test_notebook_4_saves_the_replay_it_shows_for_the_slider_it_shows(tmp_path, language):
    models = displayed_widgets(load(NOTEBOOKS / language / "04_replay_window.ipynb"), "da1fe497")
    slider = one(models, "IntSliderModel", description="max_items")["value"]
    shown = result_model(models)["value"]
    session = bug_fix_session(tmp_path, "session-4")
    rows = code_py_fates(session)(session.read_events(), slider)  # the chapter's fates, rebuilt from code.py
    assert shown == replay_summary(1, slider, rows, True) + fates_table(rows).data
    # the same sentence, written out: the saved slider drops one orphan, the file is unchanged
    sent = sum(fate == "sent" for _, _, fate in rows)
    (dropped,) = [sequence for sequence, _, fate in rows if fate == "dropped"]
    messages = {"en": f"{sent} messages", "zh": f"{sent} 条消息"}[language]
    assert shown.startswith(LABELS[language]["first press"].format(slider=slider, messages=messages, dropped=dropped))


@pytest.mark.parametrize("language", LANGUAGES)
def test_notebook_4_text_beside_the_widget_names_the_saved_setting(language):
    notebook = load(NOTEBOOKS / language / "04_replay_window.ipynb")
    slider = one(displayed_widgets(notebook, "da1fe497"), "IntSliderModel", description="max_items")["value"]
    (intro,) = [cell for cell in notebook["cells"] if cell.get("id") == "936e630d"]
    assert LABELS[language]["replay beside"].format(slider=slider) in "".join(intro["source"])


@in_languages()
def test_notebook_5_saves_the_gates_answer_for_the_selection_it_shows(tmp_path, language):
    labels = LABELS[language]
    models = displayed_widgets(load(NOTEBOOKS / language / "05_memory_gate.ipynb"), "2278c458")
    dropdown = one(models, "DropdownModel", description=labels["event"])
    label = dropdown["_options_labels"][dropdown["index"]]
    sequence = int(label.split(":")[0])
    summary = one(models, "TextModel", description=labels["summary"])["value"]
    reason = one(models, "TextModel", description=labels["reason"])["value"]
    session = bug_fix_session(tmp_path, "session-5", [{"type": "progress", "content": "running the test suite: 100%"}])
    event_id = event_id_for("session-5", sequence)
    expected = (labels["submission"].format(event_id=html.escape(event_id))
                + answer_html(session.select_memory_candidate(event_id, summary, reason)))
    assert result_model(models)["value"] == expected
    assert label == "7: file-history-snapshot" and labels["candidate"] in expected  # what the text beside it says


@in_languages()
def test_notebook_6_saves_the_flip_verdict_for_the_byte_and_chain_it_shows(language):
    labels = LABELS[language]
    models = displayed_widgets(load(NOTEBOOKS / language / "beyond-s09" / "06_crash_lab.ipynb"), "flip-panel")
    offset = one(models, "IntSliderModel", description=labels["byte"])
    chained = one(models, "CheckboxModel", description=labels["chain"])["value"]
    shown = one(models, "LabelModel")["value"]
    assert shown == flip_text(integrity=chained, offset=offset["value"])
    if language == "en":  # the crash lab's own words, which the display path translates
        assert shown == flipped_example(integrity=chained, offset=offset["value"])
    assert chained and offset["value"] == offset["max"]  # the text beside it: chain on, the final newline


@pytest.mark.parametrize("language", LANGUAGES)
def test_notebook_6_saves_the_kill_panel_unpressed_with_an_empty_bar(language):
    labels = LABELS[language]
    models = displayed_widgets(load(NOTEBOOKS / language / "beyond-s09" / "06_crash_lab.ipynb"), "441f7ec8")
    shown = result_model(models)["value"]
    bar = one(models, "IntProgressModel", description=labels["kills"])
    button = one(models, "ButtonModel")
    if shown.startswith(labels["unpressed"]):
        assert bar["value"] == 0
    else:  # pressed during the run: the round's verdict and a full bar
        assert re.match(labels["round"], shown) and bar["value"] == bar["max"]
    assert button["description"] == labels["kill button"].format(trials=bar["max"]) and not button["disabled"]
