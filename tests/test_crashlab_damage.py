"""Campaigns 3 and 4: exhaustive damage of a small transcript, with the hash chain off and on,
read by the lab's DurableTranscript and by the lesson's code.JSONLTranscript."""

import copy

import pytest

from s09_jsonl_transcript.code import JSONLTranscript
from s09_jsonl_transcript.crashlab import cli
from s09_jsonl_transcript.crashlab.cli import main as crashlab_main
from s09_jsonl_transcript.crashlab.damage import CLEAN, CORRUPT, PARTIAL_TAIL, SILENT, rewrite_line, swap_lines, verdict
from s09_jsonl_transcript.crashlab.damage_maps import (
    LINE_EDITS,
    SHORTER,
    damage_campaign,
    damage_rows,
    flipped_example,
    lesson_verdict,
    verdict_mismatches,
    write_sample,
)
from s09_jsonl_transcript.lab import DurableTranscript


@pytest.fixture(scope="module")
def reports():
    return {integrity: damage_campaign(integrity=integrity, sessions=1) for integrity in (False, True)}


@pytest.fixture(scope="module")
def lesson_report():
    return damage_campaign(integrity=False, sessions=1, subject="lesson")


@pytest.mark.slow
def test_the_lessons_reader_judges_every_damaged_file_as_the_lab_does_with_the_chain_off(reports, lesson_report):
    lab = reports[False]
    assert (lesson_report.subject, lab.subject) == ("lesson", "lab")
    assert lesson_report.size == lab.size and lesson_report.records == lab.records
    assert lesson_report.truncations == lab.truncations
    assert lesson_report.flips == lab.flips
    assert lesson_report.line_edits == lab.line_edits
    assert verdict_mismatches(lesson_report, lab) == 0
    # the lesson's reader has no chain: it lets through exactly the flips the lab lets through without one
    assert 0 < lesson_report.silent_flips == lab.silent_flips


def test_a_mismatch_between_the_readers_is_counted(reports, lesson_report):
    changed = copy.deepcopy(lesson_report)
    changed.truncations[5] = CORRUPT
    changed.flips[0x01][7] = CLEAN if changed.flips[0x01][7] != CLEAN else CORRUPT
    assert verdict_mismatches(changed, reports[False]) == 2
    with pytest.raises(ValueError, match="chain off"):
        verdict_mismatches(lesson_report, reports[True])


def test_both_classes_write_the_same_sample_bytes(tmp_path):
    lab = write_sample(tmp_path / "lab" / "s.jsonl", sessions=1)
    lesson = write_sample(tmp_path / "lesson" / "s.jsonl", sessions=1, subject="lesson")
    assert lab.read_bytes() == lesson.read_bytes()


def test_the_lessons_verdict_names_the_damage(tmp_path):
    path = write_sample(tmp_path / "s.jsonl", sessions=1, subject="lesson")
    reference = JSONLTranscript(path).read_events()
    original = path.read_bytes()
    assert lesson_verdict(path, reference).kind == CLEAN
    path.write_bytes(original[:-30])
    assert lesson_verdict(path, reference).kind == PARTIAL_TAIL
    path.write_bytes(original)
    swap_lines(path, 3)
    found = lesson_verdict(path, reference)
    assert found.kind == CORRUPT and found.line == 3
    path.write_bytes(original)
    rewrite_line(path, 5)  # no chain: a re-serialised edit passes, and the verdict says so
    assert lesson_verdict(path, reference).kind == SILENT


def test_the_lesson_has_no_chain_to_damage():
    with pytest.raises(ValueError, match="no hash chain"):
        damage_campaign(integrity=True, subject="lesson")


def test_without_the_chain_some_flips_pass_unnoticed(reports):
    plain = reports[False]
    assert plain.flips_tried == plain.size == len(plain.flips[0x01])  # one flip per byte with the default mask
    assert plain.flip_counts(0x01)[SILENT] == plain.silent_flips
    assert 0 < plain.silent_flips < plain.flips_tried
    assert plain.line_edits["rewrite"][SILENT] == plain.records  # a re-serialised edit always passes


def test_with_the_chain_no_flip_and_no_line_edit_passes_unnoticed(reports):
    chained = reports[True]
    assert chained.silent_flips == 0
    assert chained.silent_line_edits == 0
    for kind in ("insert", "duplicate", "swap", "rewrite"):
        assert set(chained.line_edits[kind]) == {CORRUPT}, kind
    # deleting the last line leaves exactly what a crash before the last append leaves
    assert chained.line_edits["delete"] == {CORRUPT: chained.records - 1, SHORTER: 1}


def test_every_truncation_is_clean_at_a_record_boundary_or_a_forgiven_tail(reports):
    for report in reports.values():
        assert len(report.truncations) == report.size + 1
        assert set(report.truncation_counts) == {CLEAN, "partial tail ignored"}
        # the untouched file, and the file cut just before its last newline, both read clean
        assert report.truncations[-1] == report.truncations[-2] == CLEAN


def test_summary_rows_agree_with_the_reports(reports):
    rows = damage_rows([reports[False], reports[True]])
    assert [row["integrity"] for row in rows] == ["off", "on"]
    assert rows[0]["flips silent"] == reports[False].silent_flips and rows[1]["flips silent"] == 0
    assert rows[0]["line edits"] == sum(sum(c.values()) for c in reports[False].line_edits.values())
    assert set(reports[False].line_edits) == set(LINE_EDITS)


def test_swap_and_rewrite_change_real_files(tmp_path):
    path = write_sample(tmp_path / "s.jsonl", sessions=1, integrity=True)
    reference = DurableTranscript(path, integrity=True).read_events()
    original = path.read_bytes()
    swap_lines(path, 3)
    assert path.read_bytes() != original and sorted(path.read_bytes().split(b"\n")) == sorted(original.split(b"\n"))
    assert verdict(path, reference, integrity=True).line == 3
    path.write_bytes(original)
    rewrite_line(path, 5)
    found = verdict(path, reference, integrity=True)
    assert found.kind == CORRUPT and found.line == 5 and "chain" in found.detail


def test_the_sample_is_never_written_over_an_existing_file(tmp_path):
    write_sample(tmp_path / "s.jsonl", sessions=1)
    with pytest.raises(FileExistsError):
        write_sample(tmp_path / "s.jsonl", sessions=1)


def test_bad_masks_are_refused():
    with pytest.raises(ValueError, match="masks"):
        damage_campaign(integrity=False, masks=(0,))


def test_one_flip_in_words():
    assert flipped_example(integrity=True, offset=40).startswith("TranscriptCorruptionError at line 1")


def _campaign_from(reports, lesson_report, planted_disagreement=False):
    """A stand-in for damage_campaign that hands out this module's reports (so the CLI tests run no campaign)."""
    def campaign(*, integrity, subject, **options):
        report = copy.deepcopy(lesson_report if subject == "lesson" else reports[integrity])
        if planted_disagreement and subject == "lesson":
            report.truncations[3] = CORRUPT
        return report
    return campaign


def test_the_damage_command_reports_each_class_and_checks_the_lesson_against_the_lab(
        capsys, monkeypatch, reports, lesson_report):
    monkeypatch.setattr(cli, "damage_campaign", _campaign_from(reports, lesson_report))
    assert crashlab_main(["damage", "--sessions", "1"]) == 0
    out = capsys.readouterr().out
    assert out.count("lab (DurableTranscript)") == 2 and out.count("lesson (JSONLTranscript)") == 1
    assert "0 damaged files judged differently from the lab with the chain off" in out
    assert out.strip().endswith(" passed, 0 failed")


def test_the_damage_command_fails_when_the_readers_disagree(capsys, monkeypatch, reports, lesson_report):
    monkeypatch.setattr(cli, "damage_campaign", _campaign_from(reports, lesson_report, planted_disagreement=True))
    assert crashlab_main(["damage", "--sessions", "1"]) == 1
    out = capsys.readouterr().out
    assert "1 damaged files judged differently" in out and out.strip().endswith(" passed, 1 failed")
    assert crashlab_main(["damage", "--sessions", "1", "--classes", "lab"]) == 0  # the lab alone is not judged by it
