"""Campaigns 3 and 4: exhaustive damage of a small transcript, with the hash chain off and on."""

import pytest

from s09_jsonl_transcript.crashlab.damage_maps import (
    LINE_EDITS,
    SHORTER,
    damage_campaign,
    damage_rows,
    flipped_example,
    write_sample,
)
from s09_jsonl_transcript.damage import CLEAN, CORRUPT, SILENT, rewrite_line, swap_lines, verdict
from s09_jsonl_transcript.lab import DurableTranscript


@pytest.fixture(scope="module")
def reports():
    return {integrity: damage_campaign(integrity=integrity, sessions=1) for integrity in (False, True)}


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
