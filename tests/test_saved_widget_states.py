"""Notebooks 4, 5 and 6 are saved with widgets whose values agree with the result they show.

A student reads the saved notebook before running anything: a slider saved at one value next to the
result of another would teach the wrong thing. Each test rebuilds what the notebook computed (the
sessions are deterministic) and checks the saved result is exactly what the saved settings give.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from saved_widgets import displayed_widgets, load, one, result_model

from s09_jsonl_transcript.code import JSONLTranscript, MockLLM, event_id_for, run_agent, ticking_clock
from s09_jsonl_transcript.crashlab.damage_maps import flipped_example
from s09_jsonl_transcript.lessons.memory_gate import answer_html, ask_gate
from s09_jsonl_transcript.lessons.replay_window import ORPHAN, SENT, window_entries, window_table

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks" / "en"


def bug_fix_session(folder: Path, name: str, extra=()) -> JSONLTranscript:
    """The scripted session the notebooks write, under the same file name (so the same session id)."""
    path = folder / f"{name}.jsonl"
    with JSONLTranscript(path, clock=ticking_clock()) as writer:
        run_agent(writer, MockLLM())
        for event in extra:
            writer.append(event)
    return JSONLTranscript(path)


def test_notebook_4_saves_the_replay_it_shows_for_the_slider_it_shows(tmp_path):
    models = displayed_widgets(load(NOTEBOOKS / "04_replay_window.ipynb"), "da1fe497")
    slider = one(models, "IntSliderModel", description="max_items")["value"]
    shown = result_model(models)["value"]
    entries = window_entries(bug_fix_session(tmp_path, "session-4"), slider)
    sent = sum(entry.fate == SENT for entry in entries)
    dropped = ", ".join(str(entry.sequence) for entry in entries if entry.fate == ORPHAN)
    messages = "1 message" if sent == 1 else f"{sent} messages"
    assert shown == (f"Replay 1: <b>replay(max_items={slider})</b> sends {messages}; dropped: sequence {dropped}. "
                     f"File unchanged: True." + window_table(entries).data)


def test_notebook_4_text_beside_the_widget_names_the_saved_setting():
    notebook = load(NOTEBOOKS / "04_replay_window.ipynb")
    slider = one(displayed_widgets(notebook, "da1fe497"), "IntSliderModel", description="max_items")["value"]
    (intro,) = [cell for cell in notebook["cells"] if cell.get("id") == "936e630d"]
    assert f"the slider was set to {slider} and **Replay** pressed once" in "".join(intro["source"])


def test_notebook_5_saves_the_gates_answer_for_the_selection_it_shows(tmp_path):
    models = displayed_widgets(load(NOTEBOOKS / "05_memory_gate.ipynb"), "2278c458")
    dropdown = one(models, "DropdownModel", description="Event")
    label = dropdown["_options_labels"][dropdown["index"]]
    sequence = int(label.split(":")[0])
    summary = one(models, "TextModel", description="Summary")["value"]
    reason = one(models, "TextModel", description="Reason")["value"]
    session = bug_fix_session(tmp_path, "session-5", [{"type": "progress", "content": "running the test suite: 100%"}])
    event_id = event_id_for("session-5", sequence)
    expected = f"Submission 1 ({html.escape(event_id)}): " + answer_html(ask_gate(session, event_id, summary, reason))
    assert result_model(models)["value"] == expected
    assert label == "7: file-history-snapshot" and "<b>candidate</b>" in expected  # what the text beside it says


@pytest.mark.parametrize("cell_id", ["3166d00d"])
def test_notebook_6_saves_the_flip_verdict_for_the_byte_and_chain_it_shows(cell_id):
    models = displayed_widgets(load(NOTEBOOKS / "06_crash_lab.ipynb"), cell_id)
    offset = one(models, "IntSliderModel", description="byte")
    chained = one(models, "CheckboxModel", description="hash chain on")["value"]
    shown = one(models, "LabelModel")["value"]
    assert shown == flipped_example(integrity=chained, offset=offset["value"])
    assert chained and offset["value"] == offset["max"]  # the text beside it: chain on, the final newline


def test_notebook_6_saves_the_kill_panel_unpressed_with_an_empty_bar():
    models = displayed_widgets(load(NOTEBOOKS / "06_crash_lab.ipynb"), "441f7ec8")
    shown = result_model(models)["value"]
    bar = one(models, "IntProgressModel", description="kills")
    button = one(models, "ButtonModel")
    if shown.startswith("<p>Press the button"):
        assert bar["value"] == 0
    else:  # pressed during the run: the round's verdict and a full bar
        assert re.match(r"<p>Round \d+:</p>", shown) and bar["value"] == bar["max"]
    assert button["description"] == f"Kill {bar['max']} writers" and not button["disabled"]
