"""Notebook 1's helpers: the event stepper, the views read back from the file, the plots and the widget."""

import matplotlib

matplotlib.use("Agg")  # plain pytest module: no display, no inline backend

import json

import pytest
from matplotlib.colors import to_hex
from matplotlib.figure import Figure

from s09_jsonl_transcript import damage
from s09_jsonl_transcript.code import BUG_FIX_SCRIPT, SCHEMA_VERSION, MockLLM, run_agent, ticking_clock
from s09_jsonl_transcript.lab import BATCH_END_FIELD, RESERVED_FIELDS, DurableTranscript
from s09_jsonl_transcript.lessons.display import MAIN_CONTROL_CLASS, RESULT_CLASS
from s09_jsonl_transcript.lessons.events_on_disk import (
    METADATA_DESTINATIONS,
    WRITE_PATH_STEPS,
    EventStepper,
    StepperPanel,
    appended_text,
    draw_growth,
    draw_message_mapping,
    draw_write_path,
    envelope_field_meanings,
    envelope_html,
    file_listing_html,
    growth_of,
    growth_table,
    jq_fallback_text,
    message_label,
    newer_schema_text,
    not_recorded,
    read_back_text,
    reader_verdict_text,
    replay_questions,
    replay_text,
    same_events_text,
    save_final_answer_only,
    tool_call_lines,
    write_newer_schema_record,
    write_path_boxes,
    write_path_title,
)
from s09_jsonl_transcript.lessons.style import EVENT_COLORS

SCRIPT_LENGTH = len(BUG_FIX_SCRIPT)


@pytest.fixture
def stepper(tmp_path):
    opened = EventStepper(tmp_path, session_id="session")
    yield opened
    opened.close()


def reference_lines(tmp_path):
    """The lines code.py's own agent loop writes for the whole script, with the same clock."""
    path = tmp_path / "reference" / "session.jsonl"
    with DurableTranscript(path, clock=ticking_clock()) as transcript:
        run_agent(transcript, MockLLM())
    return path.read_bytes().splitlines(keepends=True)


def test_each_next_event_appends_exactly_one_line(stepper):
    for count in range(1, SCRIPT_LENGTH + 1):
        record = stepper.next_event()
        assert record["sequence"] == count
        assert stepper.path.read_bytes().count(b"\n") == count
        assert stepper.newest == record
    assert stepper.finished


def test_next_event_after_the_script_writes_nothing(stepper):
    stepper.advance_to(SCRIPT_LENGTH)
    before = stepper.path.read_bytes()
    assert stepper.next_event() is None
    assert stepper.path.read_bytes() == before


def test_stepping_writes_the_same_bytes_as_the_agent_loop(stepper, tmp_path):
    stepper.advance_to(SCRIPT_LENGTH)
    assert stepper.path.read_bytes().splitlines(keepends=True) == reference_lines(tmp_path)


def test_going_back_starts_a_new_file_with_the_same_first_lines(stepper, tmp_path):
    stepper.advance_to(9)
    stepper.advance_to(4)
    assert stepper.appended == 4
    assert stepper.path.read_bytes().splitlines(keepends=True) == reference_lines(tmp_path)[:4]


def test_reset_removes_the_file_and_starts_at_sequence_one(stepper):
    stepper.advance_to(3)
    stepper.reset()
    assert not stepper.path.exists() and stepper.appended == 0 and stepper.newest is None
    assert stepper.next_event()["sequence"] == 1


@pytest.mark.parametrize("count", [-1, SCRIPT_LENGTH + 1, 2.0, "3", True])
def test_advance_to_refuses_counts_outside_the_script(stepper, count):
    with pytest.raises(ValueError, match="count must be"):
        stepper.advance_to(count)


def test_growth_matches_the_file_measured_after_each_append(stepper):
    sizes = []
    while stepper.next_event() is not None:
        sizes.append(stepper.path.stat().st_size)
    growth = growth_of(stepper.path)
    assert [point.bytes for point in growth] == sizes
    assert [point.lines for point in growth] == list(range(1, SCRIPT_LENGTH + 1))
    assert [point.event_type for point in growth] == [event["type"] for event in MockLLM().script]
    assert [point.line_bytes for point in growth] == [b - a for a, b in zip([0, *sizes], sizes)]


def test_growth_leaves_out_a_partial_tail(stepper):
    stepper.advance_to(5)
    before = growth_of(stepper.path)
    damage.append_zeros(stepper.path, 20)
    assert growth_of(stepper.path) == before


def test_growth_of_a_missing_file_is_empty(tmp_path):
    assert growth_of(tmp_path / "nothing.jsonl") == []


def test_listing_highlights_only_the_newest_line(stepper):
    stepper.advance_to(3)
    listing = file_listing_html(stepper.path)
    highlighted = [row for row in listing.split("<div") if "font-weight:bold" in row]
    assert len(highlighted) == 1
    assert "transcript:session:3" in highlighted[0] and "newest" in highlighted[0]
    assert "3 lines" in listing


def test_listing_escapes_the_file_and_marks_a_partial_tail(tmp_path):
    path = tmp_path / "session.jsonl"
    with DurableTranscript(path, clock=ticking_clock()) as transcript:
        transcript.append({"type": "message", "role": "user", "content": "<script>alert(1)</script>"})
    damage.append_zeros(path, 4)
    listing = file_listing_html(path)
    assert "<script>" not in listing and "&lt;script&gt;" in listing
    assert "partial tail" in listing and "newest" not in listing


def test_listing_of_an_empty_transcript_says_so(tmp_path):
    assert "no event appended yet" in file_listing_html(tmp_path / "session.jsonl")


def test_envelope_table_shows_every_envelope_field_of_the_record(stepper):
    assert set(envelope_field_meanings()) == RESERVED_FIELDS
    record = stepper.next_event()
    table = envelope_html(record)
    for name in RESERVED_FIELDS:
        assert f"<code>{name}</code>" in table and f"<code>{record.get(name, '(absent)')}</code>" in table
    assert BATCH_END_FIELD not in record  # a single append is its own commit: no batch field
    assert "Next event" in envelope_html(None)


def test_message_labels_follow_the_replay_fold(bug_fix):
    events = bug_fix.read_events()
    labels = [message_label(event) for event in events]
    metadata = [label for label in labels if label in METADATA_DESTINATIONS.values()]
    assert len(labels) - len(metadata) == bug_fix.recover()["message_count"]
    assert labels[0] == "user: text"
    assert "assistant: tool_use read_file" in labels and "user: tool_result call_1" in labels


def test_growth_plot_stacks_each_new_line_on_the_old_size_in_its_type_colour(stepper):
    stepper.advance_to(SCRIPT_LENGTH)
    growth = growth_of(stepper.path)
    fig = draw_growth(Figure(), growth)
    ax_lines, ax_bytes = fig.axes
    bars = ax_bytes.patches
    old, new = bars[:len(growth)], bars[len(growth):]
    assert [round(bar.get_y() + bar.get_height()) for bar in new] == [point.bytes for point in growth]
    assert [round(bar.get_height()) for bar in old] == [point.bytes - point.line_bytes for point in growth]
    assert [to_hex(bar.get_facecolor()) for bar in new] == \
        [EVENT_COLORS[point.event_type].lower() for point in growth]
    assert ax_lines.get_title() and ax_bytes.get_xlabel() and ax_bytes.get_ylabel()
    assert {text.get_text() for text in fig.legends[0].get_texts()} >= set(EVENT_COLORS)


def test_growth_plot_of_no_events_says_so():
    fig = draw_growth(Figure(), [])
    assert all("no events yet" in [text.get_text() for text in ax.texts] for ax in fig.axes)


def test_mapping_plot_puts_each_event_in_its_column(bug_fix):
    events = bug_fix.read_events()
    fig = draw_message_mapping(Figure(), events)
    bars = fig.axes[0].patches
    in_messages = [bar for bar in bars if bar.get_x() < 1]
    assert len(bars) == len(events)
    assert len(in_messages) == bug_fix.recover()["message_count"]
    assert fig.axes[0].get_title() and fig.axes[0].get_legend() is not None


@pytest.fixture
def panel(tmp_path):
    opened = StepperPanel(EventStepper(tmp_path, session_id="session"))
    yield opened
    opened.stepper.close()


def test_panel_marks_its_main_control_and_its_result(panel):
    assert MAIN_CONTROL_CLASS in panel.next_button._dom_classes
    assert RESULT_CLASS in panel.listing._dom_classes


def test_next_button_appends_and_redraws(panel):
    listing, plot = panel.listing.value, panel.plot.value
    panel.next_button.click()
    assert panel.stepper.path.read_bytes().count(b"\n") == 1
    assert panel.listing.value != listing and "transcript:session:1" in panel.listing.value
    assert panel.plot.value != plot and bytes(panel.plot.value).startswith(b"\x89PNG")
    assert panel.slider.value == 1 and "1 of" in panel.status.value
    assert "transcript:session:1" in panel.envelope.value


def test_slider_moves_the_file_both_ways(panel):
    panel.slider.value = 7
    assert panel.stepper.path.read_bytes().count(b"\n") == 7
    assert "transcript:session:7" in panel.listing.value
    panel.slider.value = 2
    assert panel.stepper.path.read_bytes().count(b"\n") == 2
    assert "transcript:session:7" not in panel.listing.value


def test_reset_button_empties_the_views(panel):
    panel.slider.value = 4
    panel.reset_button.click()
    assert not panel.stepper.path.exists()
    assert panel.slider.value == 0 and "no event appended yet" in panel.listing.value


def test_next_button_is_disabled_once_the_session_is_over(panel):
    panel.slider.value = SCRIPT_LENGTH
    assert panel.next_button.disabled and "over" in panel.status.value
    panel.reset_button.click()
    assert not panel.next_button.disabled


def test_a_newer_schema_record_is_kept_as_evidence_and_never_becomes_a_message(bug_fix):
    before = bug_fix.recover()
    record = write_newer_schema_record(bug_fix.path, {"type": "plan", "steps": ["read", "fix"]})
    assert record["schema_version"] == SCHEMA_VERSION + 1 and record["sequence"] == 13
    after = DurableTranscript(bug_fix.path).recover()
    assert after["unknown_schema_events"] == 1 and after["total_events"] == 13
    assert after["messages"] == before["messages"]
    assert DurableTranscript(bug_fix.path).read_events()[-1] == record
    with DurableTranscript(bug_fix.path, clock=ticking_clock()) as writer:  # this code appends after it
        assert writer.append({"type": "message", "role": "user", "content": "go on"})["sequence"] == 14


def test_tool_call_lines_are_the_calls_as_compact_json(bug_fix):
    lines = tool_call_lines(bug_fix.path)
    assert [json.loads(line)["name"] for line in lines] == ["read_file", "write_file", "run_tests"]
    assert lines[0] == '{"sequence":4,"name":"read_file","arguments":{"path":"calc.py"}}'


def test_the_final_answer_alone_cannot_replay_the_tools_or_the_error(bug_fix, tmp_path):
    events = bug_fix.read_events()
    final = save_final_answer_only(events, tmp_path / "final" / "session.jsonl").read_events()
    assert [event["content"] for event in final] == [events[-1]["content"]]
    rows = replay_questions(events, final)
    assert all(full != not_recorded() for _, full, _ in rows[:-1])
    assert all(kept == not_recorded() for _, _, kept in rows[:-1])
    assert "add(2, 3) returns -1" in rows[0][1] and "return a - b" in rows[2][1]
    assert "read_file(path='calc.py')" in rows[1][1] and "run_tests()" in rows[1][1]
    assert rows[-1][1:] == ("9", "1")


def test_write_path_picture_names_each_stage_and_the_durable_boundary():
    fig = draw_write_path(Figure())
    texts = [text.get_text() for text in fig.axes[0].texts]
    assert all(name in texts for name, _ in write_path_boxes())
    assert all(step in texts for step in WRITE_PATH_STEPS)
    assert any("durable boundary" in text for text in texts)
    assert fig.axes[0].get_title() == write_path_title() == "Where an appended line lives"


# --------------------------------------------------------------------------- text the notebook prints


def test_appended_text_names_the_record_written(stepper):
    record = stepper.next_event()
    assert appended_text(record) == "appended sequence  1  message                event_id transcript:session:1"


def test_read_back_text_counts_the_lines_a_fresh_reader_finds(stepper):
    stepper.advance_to(3)
    assert read_back_text(DurableTranscript(stepper.path)) == (
        "complete lines: 3\nevent types:    ['message', 'ai-title', 'reasoning']")


def test_growth_table_has_one_row_per_append_under_its_header(stepper):
    stepper.advance_to(SCRIPT_LENGTH)
    growth = growth_of(stepper.path)
    header, *rows = growth_table(growth).splitlines()
    assert header == "sequence  event type              lines  bytes  (this line)"
    assert len(rows) == SCRIPT_LENGTH
    assert rows[0].split() == ["1", "message", "1", str(growth[0].bytes), f"(+{growth[0].line_bytes})"]
    assert [len(row) for row in rows[:9]] == [len(rows[0])] * 9  # the columns line up


def test_replay_text_summarises_then_lists_where_each_line_goes(bug_fix):
    events = bug_fix.read_events()
    lines = replay_text(events, bug_fix.recover()).splitlines()
    assert lines[0] == "12 events -> 9 messages, title 'Fix add() in calc.py', 1 file snapshot, 1 reasoning event"
    assert lines[1] == "  line  1  message                -> user: text"
    assert len(lines) == 1 + len(events)


def test_newer_schema_text_says_the_record_is_kept_and_makes_no_message(bug_fix):
    before = bug_fix.recover()
    record = write_newer_schema_record(bug_fix.path, {"type": "plan", "steps": []})
    after = DurableTranscript(bug_fix.path)
    text = newer_schema_text(record, after.recover(), before=before, last_read=after.read_events()[-1])
    assert text.splitlines() == [
        "appended by hand: sequence 13, schema_version 2, type 'plan'",
        "read back: 13 events, 1 of a newer schema kept as evidence, 9 messages (as before: 9)",
        "the last event read: True"]


def test_jq_fallback_says_jq_is_missing_then_prints_the_calls(bug_fix):
    first, *lines = jq_fallback_text(bug_fix.path).splitlines()
    assert "jq is not installed" in first and lines == tool_call_lines(bug_fix.path)


def test_copies_read_back_the_same_events_only_under_the_session_name(bug_fix, tmp_path):
    copy = tmp_path / "backup" / "session.jsonl"
    copy.parent.mkdir()
    copy.write_bytes(bug_fix.path.read_bytes())
    renamed = tmp_path / "renamed.jsonl"
    renamed.write_bytes(bug_fix.path.read_bytes())
    events = bug_fix.read_events()
    assert same_events_text(copy, events, start=tmp_path) == "backup/session.jsonl reads back the same events: True"
    assert reader_verdict_text(renamed, start=tmp_path) == (
        "renamed.jsonl: TranscriptCorruptionError at line 1: expected session_id 'renamed', got 'session'")
    assert reader_verdict_text(copy, start=tmp_path) == "backup/session.jsonl: clean (12 events)"
