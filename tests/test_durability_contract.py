"""The exercise's contract: the given cell's records are the lesson's records, its parse_record judges
lines as the lesson's reader does, the damaged files are ones the reference refuses, and the events
cannot be known before a grading sends them."""

import os
import shutil
import subprocess
import sys

import pytest

from s09_jsonl_transcript.code import SCHEMA_VERSION, event_id_for, read_transcript
from s09_jsonl_transcript.grading.durability import runs
from s09_jsonl_transcript.grading.durability.contract import (
    GIVEN_CELL,
    SESSION_ID,
    Contract,
    given_namespace,
    session_events,
)
from s09_jsonl_transcript.grading.durability.damage import EDITS, damaged, damaged_files
from s09_jsonl_transcript.grading.durability.kit import reference_read

PATH = f"/tmp/work/session/{SESSION_ID}.jsonl"


def test_the_given_cells_records_are_the_lessons(tmp_path):
    contract = Contract()
    events = session_events(2)
    file = tmp_path / f"{SESSION_ID}.jsonl"
    file.write_bytes(contract.file_bytes(PATH, events))
    events_read, partial_tail = read_transcript(file)
    assert events_read == contract.records(PATH, events) and not partial_tail
    first = events_read[0]
    assert first["schema_version"] == SCHEMA_VERSION and first["event_id"] == event_id_for(SESSION_ID, 1)
    assert contract.file_bytes(PATH, events) == contract.file_bytes(PATH, events)  # a fixed clock: the same bytes


def test_the_given_cell_stands_alone_and_names_the_lessons_error():
    namespace = given_namespace()
    assert namespace["TranscriptCorruptionError"].__name__ == "TranscriptCorruptionError"
    assert issubclass(namespace["TranscriptCorruptionError"], RuntimeError)
    done = subprocess.run([sys.executable, "-S", "-c", GIVEN_CELL + "\nprint(envelope('/x/s.jsonl', 3)['event_id'])"],
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "transcript:s:3"


def test_parse_record_and_the_lessons_reader_agree_on_every_damaged_file(tmp_path):
    contract = Contract()
    reference = contract.file_bytes(PATH, session_events(4))
    files = damaged_files(reference, contract.parse_record, PATH, count=800, seed=4)
    kinds = {damage_id.split("-")[1] for damage_id, _ in files}
    assert kinds == {"flip", "zero", "hole", "edit"}
    path = tmp_path / f"{SESSION_ID}.jsonl"
    for damage_id, content in files:
        path.write_bytes(content)
        assert reference_read(path, SESSION_ID).refused, damage_id  # kept only when the reference refuses it
        assert damaged(reference, damage_id) == content  # its id rebuilds it


def test_every_damage_lies_before_the_last_line():
    contract = Contract()
    reference = contract.file_bytes(PATH, session_events(4))
    last = reference.rstrip(b"\n").rfind(b"\n") + 1
    for damage_id, content in damaged_files(reference, contract.parse_record, PATH, count=400, seed=1):
        if damage_id.startswith(("dmg-flip", "dmg-zero", "dmg-hole")):
            assert content[last:] == reference[last:], damage_id
        assert content.endswith(b"\n")
    with pytest.raises(ValueError, match="damaged file"):
        damaged(reference, f"dmg-flip-{last}.0")
    assert len(EDITS) == len(set(EDITS))


def test_the_events_carry_what_only_the_seed_knows():
    first, again, other = session_events(1), session_events(1), session_events(2)
    assert first == again and first != other
    assert len({event["content"] for event in first}) == len(first)
    assert any("你好" in event["content"] for event in first) and any("\u2028" in event["content"] for event in first)


def test_the_grader_says_at_once_why_it_cannot_record(monkeypatch, tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setattr(shutil, "which", lambda name, *args, **kwargs: None)
    runs.recorder_problem.cache_clear()
    try:
        with pytest.raises(runs.RecorderUnavailable, match="strace is not installed") as refused:
            runs.check_recorder(False)
        assert str(refused.value).startswith("ex06 refused: ") and "ex06 被拒绝" in str(refused.value)
    finally:
        runs.recorder_problem.cache_clear()


def test_a_refused_ptrace_is_said_too(monkeypatch, tmp_path):
    fake = tmp_path / "strace"
    fake.write_text("#!/bin/sh\necho 'strace: test: ptrace(PTRACE_TRACEME, ...): Operation not permitted' >&2\n"
                    "exit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    runs.recorder_problem.cache_clear()
    try:
        problem = runs.recorder_problem(False)
        assert problem is not None and "Operation not permitted" in problem[0] and "ptrace" in problem[0]
    finally:
        runs.recorder_problem.cache_clear()
