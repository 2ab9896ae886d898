"""Notebook 4's helpers: window fates, the crash mid-tool-call, recovery rows, read costs, the replay widget."""

import os
import signal

import matplotlib

matplotlib.use("Agg")  # plain pytest module: no display, no inline backend

import matplotlib.pyplot as plt
import pytest

from s09_jsonl_transcript.code import (
    TYPE_AI_TITLE,
    TYPE_FILE_SNAPSHOT,
    TYPE_REASONING,
    JSONLTranscript,
    MockLLM,
    run_agent,
    ticking_clock,
)
from s09_jsonl_transcript.lessons.replay_window import (
    FIRST_TOOL_CALL,
    METADATA,
    ORPHAN,
    OUTSIDE,
    SENT,
    ReplayExplorer,
    crash_mid_tool_call,
    describe_content,
    measure_read_costs,
    plot_read_costs,
    plot_window,
    recovery_rows,
    window_entries,
)


@pytest.fixture
def session(tmp_path):
    """The twelve-event bug-fix session, written and closed."""
    path = tmp_path / "session-4.jsonl"
    with JSONLTranscript(path, clock=ticking_clock()) as writer:
        run_agent(writer, MockLLM())
    return JSONLTranscript(path)


def fates(entries):
    return {entry.sequence: entry.fate for entry in entries}


def test_a_window_over_everything_sends_every_chat_event(session):
    entries = window_entries(session, 1000)
    metadata_types = {entry.event_type for entry in entries if entry.fate == METADATA}
    assert metadata_types == {TYPE_AI_TITLE, TYPE_REASONING, TYPE_FILE_SNAPSHOT}
    assert {entry.fate for entry in entries} == {SENT, METADATA}
    assert sum(entry.fate == SENT for entry in entries) == len(session.replay(1000))


def test_a_window_that_starts_on_a_tool_result_drops_it(session):
    by_sequence = fates(window_entries(session, 8))
    assert [by_sequence[sequence] for sequence in (1, 2, 3, 4)] == [OUTSIDE] * 4
    assert by_sequence[5] == ORPHAN
    assert list(by_sequence.values()).count(SENT) == len(session.replay(8))


def test_a_window_that_starts_on_a_message_drops_nothing(session):
    assert ORPHAN not in fates(window_entries(session, 7)).values()


def test_an_empty_window_sends_nothing(session):
    assert set(fates(window_entries(session, 0)).values()) == {OUTSIDE}


def test_describe_content_shortens_text_and_names_tool_blocks():
    assert describe_content("a\nb") == "a b"
    assert describe_content("x" * 100, width=10) == "xxxxxxx..."
    use = [{"type": "tool_use", "id": "call_9", "name": "grep", "input": {"q": "a"}}]
    assert describe_content(use) == 'tool_use call_9: grep({"q": "a"})'
    result = [{"type": "tool_result", "tool_use_id": "call_9", "content": "ok"}]
    assert describe_content(result) == 'tool_result for call_9: "ok"'


def test_recover_finds_what_a_short_tail_misses(session):
    rows = {field: (tail, full) for field, tail, full in recovery_rows(session, 3)}
    assert rows["title"] == (None, "Fix add() in calc.py")
    assert rows["file snapshots"] == (0, 1)
    assert rows["total events"] == (12, 12)


def test_with_a_window_over_everything_both_reads_agree(session):
    assert all(tail == full for _, tail, full in recovery_rows(session, 1000))


def assert_crashed_mid_tool_call(path):
    assert not path.read_bytes().endswith(b"\n")  # a torn last record
    state = JSONLTranscript(path).recover()
    assert state["ignored_partial_tail"] is True
    assert state["total_events"] == FIRST_TOOL_CALL
    assert [call["callId"] for call in state["pending_calls"]] == ["call_1"]
    assert state["messages"][-1]["content"][0]["type"] == "tool_use"
    return state


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="a real crash needs SIGKILL (POSIX)")
def test_a_real_kill_mid_tool_call_leaves_a_pending_call(tmp_path):
    path = tmp_path / "crashed.jsonl"
    said = crash_mid_tool_call(path, real_kill=True)
    assert said.startswith("SIGKILL")
    assert_crashed_mid_tool_call(path)


def test_the_simulated_crash_leaves_the_same_state(tmp_path):
    path = tmp_path / "crashed.jsonl"
    assert crash_mid_tool_call(path, real_kill=False).startswith("simulated")
    state = assert_crashed_mid_tool_call(path)
    if hasattr(signal, "SIGKILL"):
        real = tmp_path / "killed" / "crashed.jsonl"  # same stem: the same session id
        os.makedirs(real.parent)
        crash_mid_tool_call(real, real_kill=True)
        assert JSONLTranscript(real).recover()["messages"] == state["messages"]


def test_measure_read_costs_grows_one_transcript(tmp_path):
    path = tmp_path / "grow.jsonl"
    costs = measure_read_costs(path, [5, 20, 40], window=3, repeats=1)
    assert [cost.events for cost in costs] == [5, 20, 40]
    assert costs[0].size_bytes < costs[1].size_bytes < costs[2].size_bytes == path.stat().st_size
    assert all(cost.full_read_seconds > 0 and cost.tail_read_seconds > 0 for cost in costs)
    assert len(JSONLTranscript(path).read_events()) == 40


@pytest.mark.parametrize("lengths", [[], [20, 5], [0, 5], [5, 5]])
def test_measure_read_costs_refuses_lengths_that_do_not_grow(tmp_path, lengths):
    with pytest.raises(ValueError, match="increasing"):
        measure_read_costs(tmp_path / "grow.jsonl", lengths)


def test_measure_read_costs_will_not_grow_an_existing_file(session):
    with pytest.raises(ValueError, match="already exists"):
        measure_read_costs(session.path, [5])


def test_read_cost_plot_is_labelled(tmp_path):
    figure = plot_read_costs(measure_read_costs(tmp_path / "grow.jsonl", [5, 10], repeats=1), window=7)
    try:
        axis = figure.axes[0]
        assert axis.get_title() and axis.get_xlabel() and axis.get_ylabel()
        labels = [text.get_text() for text in axis.get_legend().get_texts()]
        assert labels == ["full read: read_events()", "tail read: replay_state(max_items=7)"]
    finally:
        plt.close(figure)


def test_window_plot_names_the_window_and_the_marks(session):
    figure = plot_window(session.read_events(), 8, dropped=[5], chosen=[1])
    try:
        labels = [text.get_text() for text in figure.legends[0].get_texts()]
        assert "replay window (max_items=8)" in labels
        assert {"dropped by replay", "memory candidate"} <= set(labels)
        assert figure.axes[0].get_title() == "The replay window: the last 8 events"
    finally:
        plt.close(figure)


def test_clicking_replay_shows_the_window_and_leaves_the_file_alone(session):
    explorer = ReplayExplorer(session, max_items=12)
    before_file, before_result = session.path.read_bytes(), explorer.result.value
    explorer.max_items.value = 4
    explorer.replay_button.click()
    assert explorer.result.value != before_result
    assert "replay(max_items=4)</b> sends 3 messages" in explorer.result.value
    assert ORPHAN in explorer.result.value  # sequence 9's call is outside a window of four
    assert session.path.read_bytes() == before_file


def test_the_explorer_marks_its_main_control_and_fits_its_slider(session):
    explorer = ReplayExplorer(session, max_items=50)
    assert "s09-main-control" in explorer.replay_button._dom_classes
    assert "s09-result" in explorer.result._dom_classes
    assert (explorer.max_items.max, explorer.max_items.value) == (12, 12)
