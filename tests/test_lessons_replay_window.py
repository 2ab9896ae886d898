"""Notebook 4's helpers: window fates, the crash mid-tool-call, recovery rows, the default window on a long
session, paging back, a large tool output, read costs, the replay widget."""

import hashlib
import json
import os
import signal

import matplotlib

matplotlib.use("Agg")  # plain pytest module: no display, no inline backend

import matplotlib.pyplot as plt
import pytest

from s09_jsonl_transcript.code import (
    BUG_FIX_SCRIPT,
    SESSION_MAX_ITEMS,
    TYPE_AI_TITLE,
    TYPE_FILE_SNAPSHOT,
    TYPE_FUNCTION_CALL,
    TYPE_FUNCTION_CALL_RESULT,
    TYPE_REASONING,
    MockLLM,
    run_agent,
    ticking_clock,
)
from s09_jsonl_transcript.lab import DurableTranscript
from s09_jsonl_transcript.lessons.replay_window import (
    INLINE_LIMIT,
    METADATA,
    MISTAKE,
    ORPHAN,
    OUTSIDE,
    POINTER,
    SENT,
    WRITE_FILE_CALL,
    ReplayExplorer,
    artifact_matches_its_name,
    build_log,
    crash_mid_tool_call,
    describe_content,
    events_until_out_of_window,
    large_output_round,
    large_output_sessions,
    measure_read_costs,
    message_bytes,
    pages_back,
    plot_read_costs,
    plot_window,
    prompt_rows,
    recovery_rows,
    result_event,
    store_artifact,
    typical_round,
    typical_rounds,
    window_entries,
    window_report,
    window_rows,
    write_session,
)


@pytest.fixture
def session(tmp_path):
    """The twelve-event bug-fix session, written and closed."""
    path = tmp_path / "session-4.jsonl"
    with DurableTranscript(path, clock=ticking_clock()) as writer:
        run_agent(writer, MockLLM())
    return DurableTranscript(path)


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


def test_the_crash_point_is_the_write_file_call():
    assert BUG_FIX_SCRIPT[WRITE_FILE_CALL - 1]["name"] == "write_file"
    assert BUG_FIX_SCRIPT[WRITE_FILE_CALL]["type"] == TYPE_FUNCTION_CALL_RESULT


def assert_crashed_mid_tool_call(path):
    fragment = path.read_bytes().split(b"\n")[-1]
    assert fragment  # a partial tail: the last record has no newline
    assert fragment.startswith(b'{"schema_version":1,"sequence":9,')  # half of a real enveloped record
    state = DurableTranscript(path).recover()
    assert state["ignored_partial_tail"] is True
    assert state["total_events"] == WRITE_FILE_CALL
    assert [(call["callId"], call["name"]) for call in state["pending_calls"]] == [("call_2", "write_file")]
    assert state["messages"][-1]["content"][0]["type"] == "tool_use"
    return state


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="a real crash needs SIGKILL (POSIX)")
def test_a_real_kill_mid_tool_call_leaves_a_pending_call(tmp_path):
    path = tmp_path / "crashed.jsonl"
    said = crash_mid_tool_call(path, real_kill=True)
    assert said == "SIGKILL: the child acknowledged sequences 1 to 8, then died writing the next record"
    assert_crashed_mid_tool_call(path)


def test_the_simulated_crash_leaves_the_same_state(tmp_path):
    path = tmp_path / "crashed.jsonl"
    assert crash_mid_tool_call(path, real_kill=False).startswith("simulated")
    state = assert_crashed_mid_tool_call(path)
    if hasattr(signal, "SIGKILL"):
        real = tmp_path / "killed" / "crashed.jsonl"  # same stem: the same session id
        os.makedirs(real.parent)
        crash_mid_tool_call(real, real_kill=True)
        assert DurableTranscript(real).recover()["messages"] == state["messages"]
        assert real.read_bytes() == path.read_bytes()  # both crashes use the ticking clock: the same bytes


def test_measure_read_costs_grows_one_transcript(tmp_path):
    path = tmp_path / "grow.jsonl"
    costs = measure_read_costs(path, [5, 20, 40], window=3, repeats=1)
    assert [cost.events for cost in costs] == [5, 20, 40]
    assert costs[0].size_bytes < costs[1].size_bytes < costs[2].size_bytes == path.stat().st_size
    last_three = b"".join(line + b"\n" for line in path.read_bytes().split(b"\n")[-4:-1])
    assert costs[2].window_bytes == len(last_three)
    assert all(cost.full_read_seconds > 0 and cost.tail_read_seconds > 0 for cost in costs)
    assert len(DurableTranscript(path).read_events()) == 40


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
    assert explorer.result.value.startswith(
        "Replay 1: <b>replay(max_items=4)</b> sends 3 messages; dropped: sequence 9. File unchanged: True.")
    assert ORPHAN in explorer.result.value  # sequence 9's call is outside a window of four
    assert session.path.read_bytes() == before_file


def test_one_message_is_one_message(session):
    explorer = ReplayExplorer(session)
    explorer.replay(2)
    expected = "Replay 1: <b>replay(max_items=2)</b> sends 1 message; dropped: sequence 11."
    assert explorer.result.value.startswith(expected)


def test_every_press_counts_and_a_window_without_orphans_says_so(session):
    explorer = ReplayExplorer(session, max_items=6)
    explorer.replay_button.click()
    first = explorer.result.value
    explorer.replay_button.click()
    assert first.startswith("Replay 1: <b>replay(max_items=6)</b> sends 5 messages; nothing dropped.")
    assert explorer.result.value.startswith("Replay 2: <b>replay(max_items=6)</b>")
    assert explorer.result.value.split(":", 1)[1] == first.split(":", 1)[1]  # the same window, pressed again


class GrowingTranscript:
    """A transcript that another writer appends to while it is being replayed."""

    def __init__(self, transcript):
        self.transcript, self.path = transcript, transcript.path

    def read_events(self):
        return self.transcript.read_events()

    def replay(self, max_items):
        with DurableTranscript(self.path, clock=ticking_clock()) as other_writer:
            other_writer.append({"type": "message", "role": "user", "content": "written meanwhile"})
        return self.transcript.replay(max_items)


def test_the_explorer_reports_a_changed_file(session):
    """The "File unchanged" check is real: a file that changes under the reader is reported."""
    explorer = ReplayExplorer(session, max_items=4)
    explorer.transcript = GrowingTranscript(session)
    explorer.replay(4)
    assert "File unchanged: False." in explorer.result.value


def test_the_explorer_marks_its_main_control_and_fits_its_slider(session):
    explorer = ReplayExplorer(session, max_items=50)
    assert "s09-main-control" in explorer.replay_button._dom_classes
    assert "s09-result" in explorer.result._dom_classes
    assert (explorer.max_items.max, explorer.max_items.value) == (12, 12)


# --------------------------------------------------------------------------- why the window is 1000 events


@pytest.fixture(scope="module")
def long_session(tmp_path_factory):
    """600 typical rounds: a few thousand events."""
    return write_session(tmp_path_factory.mktemp("long") / "long.jsonl", typical_rounds(600, seed=0))


def test_a_typical_round_is_five_to_ten_events_and_answers_every_call():
    import random

    rng = random.Random(3)
    sizes = set()
    for number in range(1, 300):
        events = typical_round(number, rng)
        sizes.add(len(events))
        assert events[0]["role"] == "user" and events[-1]["role"] == "assistant"
        calls = [event["callId"] for event in events if event["type"] == TYPE_FUNCTION_CALL]
        results = [event["callId"] for event in events if event["type"] == TYPE_FUNCTION_CALL_RESULT]
        assert calls == results and len(set(calls)) == len(calls)
    assert sizes == set(range(5, 11))


def test_typical_rounds_are_the_same_for_the_same_seed():
    assert typical_rounds(5, seed=4) == typical_rounds(5, seed=4) != typical_rounds(5, seed=5)
    assert typical_rounds(2, first=7)[0][0]["content"].startswith("Round 7:")


def test_write_session_writes_one_record_per_event_that_reads_back(tmp_path):
    rounds = typical_rounds(3, seed=1)
    transcript = write_session(tmp_path / "s.jsonl", rounds)
    events = transcript.read_events()
    assert [{key: event[key] for key in payload} for event, payload in zip(events, sum(rounds, []))] == sum(rounds, [])
    assert "batch_end" not in events[0]  # one append per event, as a runtime would write them
    with pytest.raises(FileExistsError):
        write_session(tmp_path / "s.jsonl", rounds)


def test_window_report_counts_what_replay_takes_from_a_long_session(long_session):
    events = long_session.read_events()
    report = window_report(long_session, SESSION_MAX_ITEMS)
    assert report.events == len(events) > 3 * SESSION_MAX_ITEMS
    assert report.window_events == SESSION_MAX_ITEMS
    assert report.first_sequence == len(events) - SESSION_MAX_ITEMS + 1
    window = events[-SESSION_MAX_ITEMS:]
    assert report.rounds == sum(event["type"] == "message" and event["role"] == "user" for event in window)
    assert 100 <= report.rounds <= 200  # the lesson's 100 to 200 rounds, for rounds of 5 to 10 events
    assert report.messages == len(long_session.replay(SESSION_MAX_ITEMS))
    lines = long_session.path.read_bytes().split(b"\n")[:-1]
    assert report.window_bytes == sum(len(line) + 1 for line in lines[-SESSION_MAX_ITEMS:])
    assert report.size_bytes == long_session.path.stat().st_size
    rows = dict(window_rows(report))
    assert rows["rounds that start inside the window"] == str(report.rounds)
    assert rows[f"events replay({SESSION_MAX_ITEMS}) reads"].startswith(f"{SESSION_MAX_ITEMS:,} (sequences ")


def test_pages_back_walk_the_history_without_gaps(long_session):
    pages = pages_back(long_session, SESSION_MAX_ITEMS, 5)
    total = long_session.replay_state(0).total_events
    assert [page.records for page in pages] == [1000, 1000, 1000, 1000, total - 4000]
    assert pages[0].last_sequence == total and pages[-1].first_sequence == 1
    for newer, older in zip(pages, pages[1:]):
        assert older.last_sequence + 1 == newer.first_sequence
    assert sum(page.size_bytes for page in pages) == long_session.path.stat().st_size
    data = long_session.path.read_bytes()
    for page in pages:
        first_line = data[page.cursor:data.index(b"\n", page.cursor)]
        assert json.loads(first_line)["sequence"] == page.first_sequence
    assert len(pages_back(long_session, SESSION_MAX_ITEMS, 9)) == 5  # no empty page at the start of the file


# --------------------------------------------------------------------------- a large tool output


def test_build_log_is_large_and_ends_with_a_summary():
    log = build_log(100)
    assert len(log.splitlines()) == 100 and log.endswith("1 failed, 98 passed\n")
    assert sum("FAILED" in line for line in log.splitlines()) == 1
    assert len(build_log().encode()) > 100 * INLINE_LIMIT


def test_a_stored_artifact_is_named_by_its_hash(tmp_path):
    path = store_artifact(tmp_path / "artifacts", "some output\n")
    assert path.read_text() == "some output\n"
    assert path.stem == hashlib.sha256(b"some output\n").hexdigest() and artifact_matches_its_name(path)
    path.write_text("changed\n")
    assert not artifact_matches_its_name(path)


def test_a_large_output_is_inlined_only_without_an_artifact_folder(tmp_path):
    log = build_log(2000)
    inline = large_output_round(9, log)
    assert inline[3]["output"] == log
    stored = large_output_round(9, log, artifact_folder=tmp_path / "artifacts")
    pointer = stored[3]["output"]
    (artifact,) = (tmp_path / "artifacts").iterdir()
    assert artifact.read_text() == log and artifact.name in pointer
    assert len(pointer.encode()) < INLINE_LIMIT and pointer.endswith(log.splitlines()[-1])
    small = large_output_round(9, "short", artifact_folder=tmp_path / "other")
    assert small[3]["output"] == "short" and not (tmp_path / "other").exists()


def test_the_mistake_sends_the_log_with_every_replay_and_the_pointer_does_not(tmp_path):
    log = build_log(3000)
    sessions, call_id = large_output_sessions(tmp_path, log, before=140, after=5)
    assert call_id == "call_141_1"
    mistake, pointer = sessions[MISTAKE], sessions[POINTER]
    assert len(mistake.read_events()) == len(pointer.read_events()) > SESSION_MAX_ITEMS
    sent = {label: transcript.replay() for label, transcript in sessions.items()}
    assert [message["role"] for message in sent[MISTAKE]] == [message["role"] for message in sent[POINTER]]
    rows = {row[0]: row for row in prompt_rows(sessions, call_id)}
    mistake_total = sum(map(message_bytes, sent[MISTAKE]))
    assert rows[MISTAKE][2] == f"{mistake_total:,}"
    log_bytes = int(rows[MISTAKE][3].split(" ")[0].replace(",", ""))
    assert log_bytes > len(log.encode()) and log_bytes / mistake_total > 0.5
    assert int(rows[POINTER][3].split(" ")[0].replace(",", "")) < INLINE_LIMIT
    assert result_event(mistake, call_id)["output"] == log
    assert result_event(pointer, call_id)["output"] != log


def test_events_until_out_of_window_counts_the_appends_that_push_an_event_out(tmp_path):
    transcript = write_session(tmp_path / "s.jsonl", typical_rounds(3, seed=2))
    total = len(transcript.read_events())
    sequence = total - 2
    assert events_until_out_of_window(transcript, sequence, max_items=5) == 3
    with DurableTranscript(transcript.path, clock=ticking_clock()) as writer:
        for appended in range(1, 4):
            writer.append({"type": "message", "role": "user", "content": f"one more: {appended}"})
            inside = sequence in [event["sequence"] for event in writer.read_recent(5).events]
            assert inside == (appended < 3)
    assert events_until_out_of_window(transcript, 1, max_items=5) == 0


def test_a_window_larger_than_the_file_replays_every_event(session):
    assert session.replay(13) == session.replay(12)


# --------------------------------------------------------------------------- in Chinese


def test_in_chinese_the_plots_the_widget_and_every_text_shown_are_chinese(session, tmp_path):
    from chinese_texts import drawn_texts, has_chinese, in_chinese

    from s09_jsonl_transcript.lessons.replay_window import (
        artifacts_text,
        last_message_text,
        log_in_window_text,
        messages_table,
        orphan_summary,
        pages_table,
        pointer_recorded_text,
        prompt_table,
        read_costs_table,
        recovery_table,
        snapshot_line,
        unchanged_by_replay,
        unterminated_last_line,
        window_report_table,
        window_start,
        window_table,
    )
    from s09_jsonl_transcript.lessons.style import EVENT_COLORS

    with in_chinese():
        window = plot_window(session.read_events(), 8, dropped=[5], chosen=[1])
        costs = measure_read_costs(tmp_path / "grow.jsonl", [5, 10], window=3, repeats=1)
        reads = plot_read_costs(costs, window=3)
        try:
            shown = drawn_texts(window)
            assert shown.titles and all(map(has_chinese, shown.titles))
            assert shown.axis_labels == ["sequence"]  # the glossary keeps the word
            words = [label for label in shown.legend if label not in EVENT_COLORS]
            assert len(words) == 3 and "replay window（max_items=8）" in words
            assert all(has_chinese(label) for label in words if not label.startswith("replay window"))
            shown = drawn_texts(reads)
            for texts in (shown.titles, shown.axis_labels, shown.legend, shown.annotations):
                assert texts and all(map(has_chinese, texts)), texts
        finally:
            plt.close(window)
            plt.close(reads)

        explorer = ReplayExplorer(session)
        assert has_chinese(explorer.replay_button.description) and has_chinese(explorer.result.value)
        explorer.max_items.value = 4
        explorer.replay_button.click()
        assert explorer.result.value.startswith("第 1 次回放：<b>replay(max_items=4)</b> 发出 3 条消息")

        entries = window_entries(session, 8)
        crashed = tmp_path / "crashed" / "session-crashed.jsonl"
        crashed.parent.mkdir()
        said = crash_mid_tool_call(crashed, real_kill=False)
        recovered = DurableTranscript(crashed).recover()
        sessions, call_id = large_output_sessions(tmp_path / "build", build_log(200), before=2, after=1)
        artifacts = list((tmp_path / "build" / "pointer" / "artifacts").iterdir())
        texts = [
            said, orphan_summary(entries, session.replay(8)), window_start(session, 8),
            unchanged_by_replay(session.path, hashlib.sha256(session.path.read_bytes()).hexdigest()),
            unterminated_last_line(crashed), snapshot_line(session.recover()["file_snapshots"][0]),
            last_message_text(recovered["messages"]), log_in_window_text(sessions[MISTAKE], call_id),
            pointer_recorded_text(sessions[POINTER], call_id), artifacts_text(artifacts),
        ]
        tables = [
            window_table(entries), messages_table(session.replay(8)), recovery_table(session, 3),
            read_costs_table(costs, window=3), window_report_table(window_report(session, 5)),
            pages_table(pages_back(session, 5, 2)), prompt_table(sessions, call_id),
        ]
        for text in texts + [table.data for table in tables]:
            assert has_chinese(text), text
    assert not has_chinese(window_start(session, 8))  # English again afterwards
