"""Chapter 4's instructor widget: the Replay explorer runs the fates function it is given on the file as it is now,
says what replay sends and drops, and notices a file that changed under it."""

import pytest
from chapter_reference import bug_fix_session, code_py_fates
from chinese_texts import has_chinese

from s09_jsonl_transcript.code import JSONLTranscript, ticking_clock
from s09_jsonl_transcript.lessons.replay_window import ReplayExplorer, fate_label, fates_table, replay_summary
from s09_jsonl_transcript.text import i18n


@pytest.fixture
def session(tmp_path):
    """The twelve-event bug-fix session, written and closed."""
    return bug_fix_session(tmp_path, "session-4")


def explorer_of(transcript, **options):
    return ReplayExplorer(transcript.path, code_py_fates(transcript), **options)


def test_the_reference_fates_are_the_lessons_window(session):
    """The rows the tests compare against: 8 starts on the result of call_1 and drops it, 6 drops nothing."""
    fates = code_py_fates(session)
    events = session.read_events()
    assert [fate for _, _, fate in fates(events, 8)] == ["outside"] * 4 + [
        "dropped", "sent", "metadata", "sent", "sent", "sent", "sent", "sent"]
    assert "dropped" not in [fate for _, _, fate in fates(events, 6)]
    assert {fate for _, _, fate in fates(events, 0)} == {"outside"}


def test_clicking_replay_shows_the_window_and_leaves_the_file_alone(session):
    explorer = explorer_of(session, max_items=12)
    before_file, before_result = session.path.read_bytes(), explorer.result.value
    explorer.max_items.value = 4
    explorer.replay_button.click()
    rows = code_py_fates(session)(session.read_events(), 4)
    assert explorer.result.value != before_result
    assert explorer.result.value == replay_summary(1, 4, rows, True) + fates_table(rows).data
    assert explorer.result.value.startswith(
        "Replay 1: <b>replay(max_items=4)</b> sends 3 messages; dropped: sequence 9. File unchanged: True.")
    assert fate_label("dropped") in explorer.result.value
    assert session.path.read_bytes() == before_file


def test_one_message_is_one_message_and_nothing_dropped_is_said(session):
    explorer = explorer_of(session)
    explorer.replay(2)
    assert explorer.result.value.startswith(
        "Replay 1: <b>replay(max_items=2)</b> sends 1 message; dropped: sequence 11.")
    explorer.replay(6)
    assert explorer.result.value.startswith("Replay 2: <b>replay(max_items=6)</b> sends 5 messages; nothing dropped.")


def test_every_press_counts_so_the_same_window_still_changes_the_result(session):
    explorer = explorer_of(session, max_items=6)
    explorer.replay_button.click()
    first = explorer.result.value
    explorer.replay_button.click()
    assert explorer.result.value != first
    assert explorer.result.value.split(":", 1)[1] == first.split(":", 1)[1]  # the same window, pressed again


def test_each_press_reads_the_file_as_it_is_now(session):
    explorer = explorer_of(session)
    with JSONLTranscript(session.path, clock=ticking_clock()) as writer:
        writer.append({"type": "message", "role": "user", "content": "one more"})
    rows = explorer.replay(1)
    assert [row for row in rows if row[2] != "outside"] == [(13, "message", "sent")]


def test_the_explorer_reports_a_file_that_changed_under_it(session):
    """The "File unchanged" check is real: a fates function that appends while it runs is reported."""
    def appending_fates(events, max_items):
        with JSONLTranscript(session.path, clock=ticking_clock()) as writer:
            writer.append({"type": "message", "role": "user", "content": "written meanwhile"})
        return code_py_fates(session)(events, max_items)

    explorer = ReplayExplorer(session.path, appending_fates)
    explorer.replay(4)
    assert "File unchanged: False." in explorer.result.value


def test_the_explorer_marks_its_main_control_and_fits_its_slider(session):
    explorer = explorer_of(session, max_items=50)
    assert "s09-main-control" in explorer.replay_button._dom_classes
    assert "s09-result" in explorer.result._dom_classes
    assert (explorer.max_items.min, explorer.max_items.max, explorer.max_items.value) == (0, 12, 12)


def test_what_the_table_shows_is_escaped(session):
    rows = [(1, "<b>type</b>", "sent")]
    assert "&lt;b&gt;type&lt;/b&gt;" in fates_table(rows).data


def test_in_chinese_the_widget_and_its_result_are_chinese(session):
    i18n.use("zh")
    try:
        explorer = explorer_of(session)
        assert has_chinese(explorer.replay_button.description) and has_chinese(explorer.result.value)
        explorer.max_items.value = 4
        explorer.replay_button.click()
        assert explorer.result.value.startswith(
            "第 1 次回放：<b>replay(max_items=4)</b> 发出 3 条消息；丢弃了 sequence 9。")
        assert all(has_chinese(fate_label(fate)) for fate in ("outside", "sent", "dropped", "metadata"))
    finally:
        i18n.use("en")
    assert not has_chinese(fate_label("sent"))
