"""Campaign 2: every state a power cut may leave keeps what was acknowledged, and the model can see bugs.

Both classes: the lab's DurableTranscript and the lesson's JSONLTranscript, each recorded through the
file_io seam they share (the lesson's FileIO).
"""

import re

import pytest

from s09_jsonl_transcript.code import JSONLTranscript, TranscriptCorruptionError, ticking_clock
from s09_jsonl_transcript.crashlab import cli
from s09_jsonl_transcript.crashlab.cli import main as crashlab_main
from s09_jsonl_transcript.crashlab.powerloss import (
    ABSENT,
    FAILS_CLOSED,
    GOOD_OUTCOMES,
    PREFIX_CLEAN,
    PREFIX_TORN,
    Change,
    CrashState,
    PowerLossReport,
    RecordingFileIO,
    SimulatedSyncFileIO,
    StateCheck,
    check_state,
    commit_points,
    crash_states,
    one_append_states,
    power_loss_campaign,
    record_workload,
    writer_for,
)
from s09_jsonl_transcript.crashlab.subjects import LAB, LESSON, SUBJECTS, read_back
from s09_jsonl_transcript.crashlab.workload import workload_event
from s09_jsonl_transcript.lab import DurableTranscript


@pytest.fixture(scope="module", params=[(LAB, True), (LESSON, False)], ids=["lab", "lesson"])
def recording(tmp_path_factory, request):
    subject, integrity = request.param
    return record_workload(tmp_path_factory.mktemp("recorded"), integrity=integrity, subject=subject)


def test_the_recording_holds_every_change_in_order(recording):
    kinds = [change.kind for change in recording.changes]
    assert kinds[:2] == ["create", "fsync_dir"]  # the new name is made durable before anything is written
    writes = [index for index, kind in enumerate(kinds) if kind == "write"]
    assert writes and all(kinds[index + 1] == "fsync" for index in writes)
    acked = [number for change in recording.changes if change.kind == "ack" for number in change.numbers]
    assert acked == list(range(1, len(recording.written) + 1))
    # the writes rebuild the file byte for byte
    rebuilt = b"".join(change.data for change in recording.changes if change.kind == "write")
    assert rebuilt.count(b"\n") == len(recording.written)


@pytest.mark.parametrize("subject", SUBJECTS)
def test_every_state_is_checked_and_none_breaks_a_promise(tmp_path, subject):
    report = power_loss_campaign(every_byte=False, root=tmp_path, subject=subject)
    assert report.subject == subject
    assert report.ok, [(check.finding, check.state.description) for check in report.findings[:3]]
    assert report.states > 100 and report.repair_states > 0
    assert set(report.outcomes) <= set(GOOD_OUTCOMES)
    # the enumeration reaches every kind of state, including the fail-closed ones garbage makes
    assert {ABSENT, PREFIX_TORN, FAILS_CLOSED} <= set(report.outcomes)


def test_every_byte_of_one_append_is_a_tear_point():
    before, record, rows = one_append_states()
    assert {torn_at for torn_at, _, _ in rows} == set(range(len(record) + 1))
    assert all(outcome in GOOD_OUTCOMES for _, _, outcome in rows)
    assert len(before) > 0 and record.endswith(b"\n")


def _recorded_append(tmp_path, subject=LAB, *, acknowledge_before_sync=False, sync_directory=True,
                     file_io=None):
    """Record one append; optionally replay it the way a buggy writer would have ordered it."""
    file_io = file_io or RecordingFileIO()
    with writer_for(subject, tmp_path / "bug.jsonl", file_io, clock=ticking_clock()) as writer:
        writer.append(workload_event(1))
        file_io.acknowledge([1])
    changes = list(file_io.changes)
    if acknowledge_before_sync:  # acknowledge, then fsync: an append that returns too early
        ack = changes.pop()
        changes.insert(changes.index(Change("fsync")), ack)
    if not sync_directory:
        changes.remove(Change("fsync_dir"))
    return changes, read_back(subject, tmp_path / "bug.jsonl").events


def _findings(tmp_path, changes, reference, initial=None, subject=LAB):
    checks = [check_state(tmp_path / "check" / "bug.jsonl", state, reference, False, subject=subject)
              for state in crash_states(changes, initial=initial, every_byte=False)]
    return [check.finding for check in checks if check.finding]


@pytest.mark.parametrize("subject", SUBJECTS)
def test_the_correct_order_of_one_append_has_no_findings(tmp_path, subject):
    changes, reference = _recorded_append(tmp_path, subject)
    assert [change.kind for change in changes] == ["create", "fsync_dir", "write", "fsync", "ack"]
    assert _findings(tmp_path, changes, reference, subject=subject) == []


@pytest.mark.parametrize("subject", SUBJECTS)
def test_acknowledging_before_fsync_is_caught(tmp_path, subject):
    changes, reference = _recorded_append(tmp_path, subject, acknowledge_before_sync=True)
    assert any("missing" in finding for finding in _findings(tmp_path, changes, reference, subject=subject))


@pytest.mark.parametrize("subject", SUBJECTS)
def test_a_new_file_whose_folder_was_never_synced_is_caught(tmp_path, subject):
    changes, reference = _recorded_append(tmp_path, subject, sync_directory=False)
    assert any("missing" in finding for finding in _findings(tmp_path, changes, reference, subject=subject))


@pytest.mark.parametrize("subject", SUBJECTS)
def test_appending_after_a_torn_tail_without_repair_is_caught(tmp_path, subject):
    # A writer that forgot the repair: its record lands on the torn fragment's line.
    changes, reference = _recorded_append(tmp_path, subject)
    fragment = b'{"schema_version":1,"seq'
    shifted = [Change("write", offset=change.offset + len(fragment), data=change.data)
               if change.kind == "write" else change for change in changes if change.kind != "create"]
    findings = _findings(tmp_path, shifted, reference, initial=fragment, subject=subject)
    assert any("lost to corruption" in finding for finding in findings)


class ForgetsTheFsync(RecordingFileIO):
    """A planted bug: the transcript's fsync never happens (a writer that forgot it)."""

    def fsync(self, fd):
        pass


class CutsTheTailOneByteShort(RecordingFileIO):
    """A planted bug: the repair cuts a partial tail off one byte too late, leaving its first byte."""

    def truncate(self, fd, length):
        super().truncate(fd, length + 1)


@pytest.mark.parametrize("subject", SUBJECTS)
def test_a_writer_that_forgets_the_fsync_is_caught(tmp_path, subject):
    changes, reference = _recorded_append(tmp_path, subject, file_io=ForgetsTheFsync())
    assert "fsync" not in [change.kind for change in changes]
    assert any("missing" in finding for finding in _findings(tmp_path, changes, reference, subject=subject))


def _repair_findings(tmp_path, subject, file_io):
    """Let a fresh writer of subject repair a torn tail and append, recorded through file_io; check its states."""
    whole = tmp_path / "whole" / "bug.jsonl"
    with writer_for(subject, whole, SimulatedSyncFileIO(), clock=ticking_clock()) as writer:
        writer.append(workload_event(1))
        writer.append(workload_event(2))
    reference = read_back(subject, whole).events
    torn = whole.read_bytes()[:-40]  # event 2 torn: a partial tail
    path = tmp_path / "torn" / "bug.jsonl"
    path.parent.mkdir()
    path.write_bytes(torn)
    clock = ticking_clock()
    clock()  # event 2 is written at the second tick, as it was in the whole file
    with writer_for(subject, path, file_io, clock=clock) as writer:
        writer.append(workload_event(2))
        file_io.acknowledge([1, 2])
    states = list(crash_states(file_io.changes, initial=torn, every_byte=False))
    return [check.finding for check in (check_state(tmp_path / "check" / "bug.jsonl", state, reference, False,
                                                    subject=subject) for state in states) if check.finding]


@pytest.mark.parametrize("subject", SUBJECTS)
def test_a_repair_that_cuts_the_tail_in_the_wrong_place_is_caught(tmp_path, subject):
    assert _repair_findings(tmp_path / "right", subject, RecordingFileIO()) == []
    findings = _repair_findings(tmp_path / "wrong", subject, CutsTheTailOneByteShort())
    assert any("lost to corruption" in finding for finding in findings), findings


def test_the_lessons_writer_records_through_its_file_io(tmp_path):
    """The lesson's writer makes every change to the disk through file_io, as the lab's does."""
    file_io = RecordingFileIO()
    with writer_for(LESSON, tmp_path / "routed" / "s.jsonl", file_io) as writer:
        writer.append(workload_event(1))
    assert [change.kind for change in file_io.changes] == ["create", "fsync_dir", "write", "fsync"]
    with JSONLTranscript(tmp_path / "routed" / "s.jsonl") as writer:  # a writer of its own: nothing recorded
        writer.append(workload_event(2))
    assert len(file_io.changes) == 4


def test_the_lesson_has_no_chain_to_record(tmp_path):
    with pytest.raises(ValueError, match="no hash chain"):
        record_workload(tmp_path, integrity=True, subject=LESSON)
    with pytest.raises(ValueError, match="subject"):
        power_loss_campaign(subject="teleport")


@pytest.mark.parametrize("subject", SUBJECTS)
def test_a_damaged_file_makes_the_fresh_writer_of_either_class_refuse(tmp_path, subject):
    with writer_for(subject, tmp_path / "whole" / "s.jsonl", SimulatedSyncFileIO(), clock=ticking_clock()) as writer:
        for n in (1, 2, 3):
            writer.append(workload_event(n))
    lines = (tmp_path / "whole" / "s.jsonl").read_bytes().split(b"\n")
    damaged = b"\n".join([lines[0], lines[1], b"garbage"]) + b"\n"  # a power cut damages only the end
    state = CrashState(damaged, frozenset({1, 2}), "line 3 is complete garbage")
    reference = read_back(subject, tmp_path / "whole" / "s.jsonl").events
    assert check_state(tmp_path / "check" / "s.jsonl", state, reference, False, subject=subject).outcome == FAILS_CLOSED
    with pytest.raises(TranscriptCorruptionError):
        read_back(subject, tmp_path / "check" / "s.jsonl")
    clean = CrashState(b"\n".join(lines[:2]) + b"\n", frozenset({1, 2}), "events 1 and 2")
    assert check_state(tmp_path / "check" / "s.jsonl", clean, reference, False, subject=subject).outcome == PREFIX_CLEAN


class UnmarkedBatches(RecordingFileIO):
    """A planted bug: batches reach the disk without their batch field, as before issue #10. The field
    turns into spaces (JSON allows them between tokens), so the file grows by what the writer expects
    and its check that the path still holds what it wrote passes (issue 43)."""

    def write(self, fd, data):
        return super().write(fd, re.sub(rb',"batch_end":\d+', lambda found: b" " * len(found[0]), data))


def _recorded_batch(tmp_path, file_io):
    path = tmp_path / "batch.jsonl"
    with DurableTranscript(path, clock=ticking_clock(), file_io=file_io) as writer:
        writer.append(workload_event(1))
        file_io.acknowledge([1])
        writer.append_batch([workload_event(n) for n in (2, 3, 4)])
        file_io.acknowledge([2, 3, 4])
    return file_io.changes, DurableTranscript(path).read_events()


def _batch_findings(tmp_path, changes, reference):
    points = commit_points(changes)
    checks = [check_state(tmp_path / "check" / "batch.jsonl", state, reference, False, points)
              for state in crash_states(changes, every_byte=True)]
    return [check.finding for check in checks if check.finding]


def test_commit_points_are_the_ends_of_acknowledged_appends_and_batches(tmp_path):
    changes, _ = _recorded_batch(tmp_path, RecordingFileIO())
    assert commit_points(changes) == {0, 1, 4}


def test_a_torn_batch_never_comes_back_in_part(tmp_path):
    changes, reference = _recorded_batch(tmp_path, RecordingFileIO())
    assert _batch_findings(tmp_path, changes, reference) == []


def test_batches_without_their_batch_field_are_caught_coming_back_in_part(tmp_path):
    changes, reference = _recorded_batch(tmp_path, UnmarkedBatches())
    assert not any(b"batch_end" in change.data for change in changes)
    findings = _batch_findings(tmp_path, changes, reference)
    assert any("part of a batch" in finding for finding in findings)


def test_a_state_without_its_file_reads_as_empty(tmp_path):
    state = CrashState(None, frozenset(), "no file")
    (tmp_path / "s.jsonl").write_bytes(b"left over from an earlier state\n")
    assert check_state(tmp_path / "s.jsonl", state, [], False).outcome == ABSENT


def test_too_many_unsynced_changes_are_refused():
    changes = [Change("create"), Change("fsync_dir")] + [Change("write", offset=i, data=b"x") for i in range(9)]
    with pytest.raises(ValueError, match="unsynced"):
        list(crash_states(changes))


def test_the_powerloss_command_reports_each_class_apart(capsys):
    assert crashlab_main(["powerloss", "--quick", "--classes", "lesson"]) == 0
    out = capsys.readouterr().out
    assert "lesson (JSONLTranscript)" in out and "lab (DurableTranscript)" not in out
    assert "0 findings" in out and out.strip().endswith(" passed, 0 failed")


def test_the_powerloss_command_fails_on_a_finding_of_either_class(capsys, monkeypatch):
    def campaign(subject, **options):
        report = PowerLossReport(subject)
        report.add(StateCheck(PREFIX_CLEAN, None, CrashState(b"", frozenset(), "fine")))
        if subject == LESSON:
            report.add(StateCheck("FINDING", "acknowledged events 1..1 are missing",
                                  CrashState(b"", frozenset({1}), "planted")))
        return report

    monkeypatch.setattr(cli, "power_loss_campaign", campaign)
    assert crashlab_main(["powerloss", "--quick"]) == 1
    out = capsys.readouterr().out
    assert "FINDING (lesson): acknowledged events 1..1 are missing" in out
    assert out.strip().endswith("2 passed, 1 failed")  # 3 states, 1 of them a finding
    assert crashlab_main(["powerloss", "--quick", "--classes", "lab"]) == 0


@pytest.mark.slow
@pytest.mark.prerelease  # a full-size run: .ci/prerelease
def test_the_lessons_full_power_loss_campaign_tears_every_byte_and_finds_nothing(tmp_path):
    # The every-byte campaign `python -m s09_jsonl_transcript.crashlab powerloss` runs (about a minute).
    report = power_loss_campaign(subject=LESSON, root=tmp_path)
    assert report.ok, [(check.finding, check.state.description) for check in report.findings[:3]]
    assert report.states > report.repair_states > 10 * len(record_workload(tmp_path / "w", subject=LESSON).written)
    assert {ABSENT, PREFIX_CLEAN, PREFIX_TORN, FAILS_CLOSED} == set(report.outcomes)
