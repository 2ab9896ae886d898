"""Notebook 3's helpers: damage tools by name, the damage widget driven like a kernel would, verdict maps."""

import matplotlib

matplotlib.use("Agg")  # plain pytest module: no display, no inline backend

import matplotlib.pyplot as plt
import pytest

from s09_jsonl_transcript import damage
from s09_jsonl_transcript.code import BUG_FIX_SCRIPT, TranscriptCorruptionError, ticking_clock
from s09_jsonl_transcript.lab import DurableTranscript
from s09_jsonl_transcript.lessons.display import html_table
from s09_jsonl_transcript.lessons.partial_tail_vs_corruption import (
    DAMAGE_TOOLS,
    MAX_ZERO_BYTES,
    DamageLab,
    compare_readers,
    damage_description,
    damage_table,
    example_damages,
    fail_closed_report,
    line_offsets,
    line_starts_text,
    plot_verdict_maps,
    readers_table,
    skip_bad_lines_read,
    skipping_recovery_report,
    verdict_counts,
    verdict_counts_table,
    verdict_runs,
    verdict_text,
)
from s09_jsonl_transcript.lessons.style import VERDICT_COLORS


@pytest.fixture
def sample(tmp_path):
    """The five-event transcript notebook 3 damages, appended one event at a time as the agent loop does."""
    path = tmp_path / "session-3.jsonl"
    with DurableTranscript(path, clock=ticking_clock()) as transcript:
        for event in BUG_FIX_SCRIPT[:5]:
            transcript.append(event)
    return path


def test_line_offsets_point_at_the_first_byte_of_each_line():
    assert line_offsets(b"ab\ncde\n") == [0, 3]
    assert line_offsets(b"ab\ncd") == [0, 3]  # an unterminated last line is still a line
    assert line_offsets(b"") == []


def test_html_table_escapes_cells():
    table = html_table(["a<b"], [["<script>", 3]]).data
    assert "<script>" not in table and "&lt;script&gt;" in table and "<td style='text-align:left'>3</td>" in table


def test_every_damage_tool_offers_positions_that_fit_the_file(sample):
    data = sample.read_bytes()
    lines = data.count(b"\n")
    assert DAMAGE_TOOLS["truncate at byte"].positions(data) == range(len(data) + 1)
    assert DAMAGE_TOOLS["flip a byte"].positions(data) == range(len(data))
    assert DAMAGE_TOOLS["insert a garbage line"].positions(data) == range(1, lines + 2)
    assert DAMAGE_TOOLS["delete a line"].positions(data) == range(1, lines + 1)
    assert DAMAGE_TOOLS["duplicate a line"].positions(data) == range(1, lines + 1)
    assert DAMAGE_TOOLS["append zero bytes"].positions(data) == range(1, MAX_ZERO_BYTES + 1)


@pytest.mark.parametrize("name, position, kind, line", [
    ("truncate at byte", "start of line 4", damage.CLEAN, None),
    ("truncate at byte", "middle of line 5", damage.PARTIAL_TAIL, None),
    ("append zero bytes", 16, damage.PARTIAL_TAIL, None),
    ("flip a byte", "start of line 3", damage.CORRUPT, 3),
    ("insert a garbage line", 3, damage.CORRUPT, 3),
    ("delete a line", 3, damage.CORRUPT, 3),
    ("duplicate a line", 3, damage.CORRUPT, 4),
    ("flip a byte", "a letter of the user's message", damage.SILENT, 1),
])
def test_each_damage_gets_the_verdict_the_notebook_explains(sample, name, position, kind, line):
    data = sample.read_bytes()
    starts = line_offsets(data)
    offsets = {"start of line 3": starts[2], "start of line 4": starts[3], "middle of line 5": starts[4] + 100,
               "a letter of the user's message": data.index(b"fails")}
    found = DamageLab(sample).apply(name, offsets.get(position, position))
    assert (found.kind, found.line) == (kind, line)
    assert sample.read_bytes() != data  # the damage reached the real file


def test_apply_starts_from_the_undamaged_file_every_time(sample):
    lab = DamageLab(sample)
    lab.apply("delete a line", 3)
    lab.apply("delete a line", 3)
    assert sample.read_bytes().count(b"\n") == lab.pristine.count(b"\n") - 1


def test_choosing_a_damage_refits_the_slider(sample):
    lab = DamageLab(sample)
    lines = lab.pristine.count(b"\n")
    lab.picker.value = "delete a line"
    assert (lab.position.min, lab.position.max, lab.unit.value) == (1, lines, "line number")
    lab.picker.value = "truncate at byte"
    assert (lab.position.min, lab.position.max) == (0, len(lab.pristine))
    lab.position.value = len(lab.pristine)
    lab.picker.value = "duplicate a line"  # a value beyond the new range is pulled back into it
    assert lab.position.value == lines


def test_clicking_apply_damages_the_file_and_shows_the_verdict(sample):
    lab = DamageLab(sample)
    before = lab.result.value
    lab.picker.value = "duplicate a line"
    lab.position.value = 2
    lab.apply_button.click()
    assert sample.read_bytes().count(b"\n") == lab.pristine.count(b"\n") + 1
    assert lab.result.value != before
    assert "TranscriptCorruptionError at line 3" in lab.result.value
    assert VERDICT_COLORS[damage.CORRUPT] in lab.result.value


def test_clicking_restore_puts_the_original_bytes_back(sample):
    lab = DamageLab(sample)
    lab.apply("flip a byte", 0)
    lab.restore_button.click()
    assert sample.read_bytes() == lab.pristine
    assert "clean (5 events)" in lab.result.value
    assert lab.result_text == "File restored: clean (5 events) - no damage"


def test_result_text_says_in_plain_text_what_the_result_widget_shows(sample):
    lab = DamageLab(sample)
    assert lab.result_text in lab.result.value
    lab.apply("delete a line", 5)
    assert lab.result_text == "clean (4 events) - delete a line, line number 5"
    assert "<" not in lab.result_text
    for part in ("clean (4 events)", "delete a line, line number 5"):
        assert part in lab.result.value


def test_the_widget_marks_its_main_control_and_result(sample):
    lab = DamageLab(sample)
    assert "s09-main-control" in lab.apply_button._dom_classes
    assert "s09-result" in lab.result._dom_classes
    assert lab.apply_button in lab.widget().children[1].children


def test_bad_requests_are_refused_clearly(sample):
    lab = DamageLab(sample)
    with pytest.raises(ValueError, match="unknown damage"):
        lab.apply("set on fire", 1)
    with pytest.raises(ValueError, match="line number must be between 1 and 5"):
        lab.apply("delete a line", 6)
    assert sample.read_bytes() == lab.pristine  # a refused request changes nothing
    empty = sample.with_name("empty.jsonl")
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match="empty"):
        DamageLab(empty)


def test_skipping_reader_hides_damage_the_strict_reader_reports(sample):
    damage.delete_line(sample, 3)
    assert [event["sequence"] for event in skip_bad_lines_read(sample)] == [1, 2, 4, 5]
    with pytest.raises(TranscriptCorruptionError):
        DurableTranscript(sample).read_events()


def test_skipping_reader_drops_lines_that_do_not_parse(sample):
    damage.insert_line(sample, 2, b"\xff not utf-8")
    damage.insert_line(sample, 2, b"[1, 2]")  # JSON, but not an object
    assert len(skip_bad_lines_read(sample)) == 5


def test_verdict_counts_and_runs_cover_every_offset(sample):
    verdicts = damage.flip_map(sample)
    counts = verdict_counts(verdicts)
    assert list(counts) == list(damage.VERDICT_KINDS)
    assert sum(counts.values()) == len(verdicts)
    assert counts[damage.CLEAN] == 0  # every flip changes something: at best it goes unnoticed
    runs = verdict_runs(verdicts)
    assert sum(length for _, length, _ in runs) == len(verdicts)
    assert all(a[2] != b[2] for a, b in zip(runs, runs[1:]))  # neighbouring runs differ
    assert [verdicts[first].kind for first, _, _ in runs] == [kind for _, _, kind in runs]


def test_truncation_never_makes_the_reader_fail(sample):
    counts = verdict_counts(damage.truncation_map(sample))
    assert counts[damage.CORRUPT] == counts[damage.SILENT] == 0
    assert counts[damage.CLEAN] > 0 and counts[damage.PARTIAL_TAIL] > 0


def test_verdict_map_plot_has_one_labelled_strip_per_map(sample):
    data = sample.read_bytes()
    figure = plot_verdict_maps({"truncation": (data, damage.truncation_map(sample)),
                                "my own map": (data, damage.flip_map(sample))})
    try:
        assert [axis.get_title(loc="left") for axis in figure.axes] == ["truncate after N bytes", "my own map"]
        assert all(axis.get_xlabel() for axis in figure.axes)
        assert [text.get_text() for text in figure.legends[0].get_texts()] == list(damage.VERDICT_KINDS)
        assert figure.get_suptitle()
    finally:
        plt.close(figure)


def test_the_skipping_reader_reports_a_resumed_session_where_the_strict_one_stops(sample, tmp_path):
    starts = line_offsets(sample.read_bytes())
    pristine = sample.read_bytes()
    rows = compare_readers(pristine, sample.name, tmp_path / "readers", [("delete a line", 4),
                                                                          ("flip a byte", starts[4])])
    assert sample.read_bytes() == pristine  # only copies were damaged
    assert (tmp_path / "readers" / "copy-1" / sample.name).read_bytes().count(b"\n") == 4
    (deleted, skip_deleted, strict_deleted), (flipped, skip_flipped, strict_flipped) = rows
    assert deleted == "delete a line, line number 4"
    assert skip_deleted.startswith("resumed: 4 events (sequences [1, 2, 3, 5])")
    assert strict_deleted == "stops: TranscriptCorruptionError at line 4: expected sequence 4, got 5"
    assert skip_flipped.endswith("pending tool calls ['call_1']")  # the result was lost: the call looks unanswered
    assert strict_flipped.startswith("stops: TranscriptCorruptionError at line 5")


def test_on_an_undamaged_file_both_readers_resume_the_same_session(sample):
    assert skipping_recovery_report(sample).startswith("resumed: 5 events")
    assert fail_closed_report(sample) == "resumed: 5 events, 3 messages, pending tool calls []"


# --------------------------------------------------------------------------- the texts notebook 3 shows


def test_verdict_text_is_the_verdict_itself_in_english(sample):
    assert verdict_text(damage.verdict(sample)) == str(damage.verdict(sample)) == "clean (5 events)"
    damage.delete_line(sample, 2)
    assert verdict_text(damage.verdict(sample)) == str(damage.verdict(sample))
    assert verdict_text(damage.verdict(sample)).startswith("TranscriptCorruptionError at line 2: ")


def test_line_starts_text_gives_the_size_then_where_each_line_starts(sample):
    data = sample.read_bytes()
    first, *rows = line_starts_text(data).splitlines()
    assert first == f"{len(data)} bytes, 5 lines"
    assert [int(row.split("byte")[1].split(":")[0]) for row in rows] == line_offsets(data)


def test_example_damages_hit_what_they_say(sample):
    data = sample.read_bytes()
    examples = example_damages(data)
    starts = line_offsets(data)
    hits = {what: (name, position) for name, position, what in examples}
    assert hits["cut exactly at the start of line 4"] == ("truncate at byte", starts[3])
    assert hits["the '{' that opens line 3"] == ("flip a byte", starts[2]) and data[starts[2]:starts[2] + 1] == b"{"
    assert hits["the newline that ends the last line"] == ("flip a byte", len(data) - 1)
    lab = DamageLab(sample)
    table = damage_table([(name, position, what, lab.apply(name, position)) for name, position, what in examples])
    assert table.data.count("<tr>") == 1 + len(examples)
    assert "clean (3 events)" in table.data and "TranscriptCorruptionError at line 3" in table.data


def test_tables_carry_their_headers(sample):
    data = sample.read_bytes()
    counts = verdict_counts_table({"truncation": (data, damage.truncation_map(sample))}).data
    assert "<th style='text-align:left'>partial tail ignored</th>" in counts and "truncate after N bytes" in counts
    readers = readers_table([("delete a line, line number 4", "resumed: ...", "stops: ...")]).data
    assert "a reader that skips bad lines" in readers and "fails closed" in readers
    assert damage_description("flip a byte", 7) == "flip a byte, byte offset 7"
