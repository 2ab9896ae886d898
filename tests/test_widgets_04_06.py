"""The main controls of notebooks 4, 5 and 6, pressed again and again, in different orders.

An instructor presses a button twice, goes back to an earlier setting, switches the chain on and off
in the middle of a kill round. Every press must change what the result shows, show what its settings
give, and raise no error. ipywidgets catches an exception in a click handler and only logs it, so each
press also fails on such a log record. Every sequence runs in both languages of the kit: in Chinese,
each result must also hold Chinese text.
"""

from __future__ import annotations

import html
import logging
import random

import pytest
from chapter_reference import code_py_fates, code_py_gate

from s09_jsonl_transcript.code import (
    JSONLTranscript,
    MemorySelectionError,
    MockLLM,
    event_id_for,
    run_agent,
    ticking_clock,
)
from s09_jsonl_transcript.crashlab.damage_maps import flipped_example
from s09_jsonl_transcript.lab import DurableTranscript
from s09_jsonl_transcript.lessons.crash_lab import FlipPanel, KillPanel, flip_text, kill_verdict
from s09_jsonl_transcript.lessons.memory_gate import MemoryGateForm, answer_html
from s09_jsonl_transcript.lessons.replay_window import ReplayExplorer, fates_table
from s09_jsonl_transcript.text import i18n

LANGUAGES = ("en", "zh")
# How each result starts, in each language
REPLAY_START = {"en": "Replay {number}: <b>replay(max_items={max_items})</b> sends ",
                "zh": "第 {number} 次回放：<b>replay(max_items={max_items})</b> 发出 "}
UNCHANGED = {"en": "File unchanged: True.", "zh": "文件未变：是。"}
SUBMISSION = {"en": "Submission {number} ({event_id}): ", "zh": "第 {number} 次提交（{event_id}）："}
ROUND = {"en": "Round {number}:", "zh": "第 {number} 轮："}
SURVIVED = {"en": "every acknowledged event survived every kill", "zh": "每个已确认的事件都挺过了每一次杀进程"}


def has_chinese(text: str) -> bool:
    return any("\u4e00" <= character <= "\u9fff" for character in text)


@pytest.fixture(params=LANGUAGES)
def language(request):
    """Each test runs once per language; English again afterwards."""
    i18n.use(request.param)
    yield request.param
    i18n.use("en")


@pytest.fixture
def press(caplog):
    """press(button): click it as the browser would, and fail on an exception its handler swallowed."""
    def click(button):
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            button.click()
        swallowed = [record for record in caplog.records if "Exception in callback" in record.getMessage()]
        assert not swallowed, swallowed[0].exc_text or swallowed[0].getMessage()
    return click


@pytest.fixture
def session(tmp_path):
    """The bug-fix session of notebooks 4 and 5, plus notebook 5's event of an unknown type."""
    path = tmp_path / "session-5.jsonl"
    with DurableTranscript(path, clock=ticking_clock()) as writer:
        run_agent(writer, MockLLM())
        writer.append({"type": "progress", "content": "running the test suite: 100%"})
    return JSONLTranscript(path)


# --------------------------------------------------------------------------- notebook 4: Replay

REPLAY_ORDERS = [
    [8, 8, 8, 4, 2],  # the route: the same window pressed three times, then smaller ones
    [13, 0, 13, 1, 6, 6, 4],  # both ends of the slider, back and forth
    random.Random(4).choices(range(0, 14), k=8),
]


@pytest.mark.parametrize("order", REPLAY_ORDERS, ids=["route", "ends", "random"])
def test_replay_pressed_again_and_again_shows_each_window(session, press, order, language):
    explorer = ReplayExplorer(session.path, code_py_fates(session))
    before_file = session.path.read_bytes()
    for number, max_items in enumerate(order, start=1):
        before = explorer.result.value
        explorer.max_items.value = max_items
        press(explorer.replay_button)
        shown = explorer.result.value
        assert shown != before
        assert shown.startswith(REPLAY_START[language].format(number=number, max_items=max_items))
        assert UNCHANGED[language] in shown
        assert shown.endswith(fates_table(code_py_fates(session)(session.read_events(), max_items)).data)
        assert has_chinese(shown) == (language == "zh")
    assert session.path.read_bytes() == before_file


# --------------------------------------------------------------------------- notebook 5: Submit to the gate

def _selections(session_id):
    snapshot, reasoning, message = (event_id_for(session_id, n) for n in (7, 3, 1))
    return [
        (reasoning, "the model suspected subtraction", "to see what the gate says"),  # the route: refused type
        (snapshot, "calc.py before the fix", ""),  # the route: blank reason
        (snapshot, "calc.py before the fix", "to undo the edit if needed"),  # the route: a candidate
        (snapshot, "calc.py before the fix", "to undo the edit if needed"),  # the same again
        (event_id_for(session_id, 13), "a progress note", "why not"),  # a type the gate does not know
        (message, "  ", "a reason"),  # blank summary
        (message, "add(2, 3) returned -1", "the bug this session fixed"),
    ]


@pytest.mark.parametrize("shuffle", [None, 1, 2], ids=["route", "shuffled-1", "shuffled-2"])
def test_submit_pressed_again_and_again_shows_each_answer(session, press, shuffle, language):
    selections = _selections(session.session_id)
    if shuffle is not None:
        random.Random(shuffle).shuffle(selections)
    form = MemoryGateForm(session, code_py_gate)
    before_file = session.path.read_bytes()
    for number, (event_id, summary, reason) in enumerate(selections, start=1):
        before = form.result.value
        form.event_id.value, form.summary.value, form.reason.value = event_id, summary, reason
        press(form.submit_button)
        assert form.result.value != before
        assert form.result.value == (SUBMISSION[language].format(number=number, event_id=html.escape(event_id))
                                     + answer_html(answer_of_code_py(session, event_id, summary, reason)))
        assert has_chinese(form.result.value) == (language == "zh")
    assert session.path.read_bytes() == before_file


def answer_of_code_py(session, event_id, summary, reason):
    """code.py's gate's answer: the candidate, or the refusal (compared by class and message)."""
    try:
        return session.select_memory_candidate(event_id, summary, reason)
    except MemorySelectionError as refusal:
        return refusal


# --------------------------------------------------------------------------- notebook 6: kills and flips

def _flip_settings():
    return [(False, 200), (True, 200), (True, None), (False, None), (False, 30), (True, 3000), (False, 0)]


def test_kill_rounds_and_flips_interleaved(tmp_path, press, language):
    kills = KillPanel(trials=3, root=tmp_path)
    flips = FlipPanel()
    settings = _flip_settings()
    for round_number in range(1, 4):
        before = kills.result.value
        press(kills.button)
        assert kills.result.value != before and ROUND[language].format(number=round_number) in kills.result.value
        assert SURVIVED[language] in kills.result.value
        assert html.escape(kill_verdict(kills.results)) in kills.result.value
        assert (kills.progress.value, kills.progress.max) == (3, 3) and not kills.button.disabled
        for chained, offset in settings[round_number - 1::3]:  # a few flips between the rounds
            flips.chain.value = chained
            flips.offset.value = flips.offset.max if offset is None else min(offset, flips.offset.max)
            assert flips.result.value == flip_text(integrity=chained, offset=flips.offset.value)
            assert has_chinese(flips.result.value) == (language == "zh")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["round-1", "round-2", "round-3"]


def test_the_flip_slider_follows_the_chain_both_ways(language):
    flips = FlipPanel()
    for chained, offset in _flip_settings() * 2:
        flips.chain.value = chained
        assert flips.offset.max == flips.sizes[chained] - 1
        wanted = flips.offset.max if offset is None else min(offset, flips.offset.max)
        flips.offset.value = wanted
        assert flips.result.value == flip_text(integrity=chained, offset=wanted)
        if language == "en":  # in English the display path says exactly what the crash lab says
            assert flips.result.value == flipped_example(integrity=chained, offset=wanted)


def test_press_fails_on_an_exception_the_handler_swallowed(press):
    import ipywidgets

    broken = ipywidgets.Button()
    broken.on_click(lambda _button: 1 / 0)
    with pytest.raises(AssertionError, match="ZeroDivisionError"):
        press(broken)
