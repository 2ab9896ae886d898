"""Campaign 2: every state a power cut may leave keeps what was acknowledged, and the model can see bugs."""

import re

import pytest

from s09_jsonl_transcript.code import ticking_clock
from s09_jsonl_transcript.crashlab.powerloss import (
    ABSENT,
    FAILS_CLOSED,
    GOOD_OUTCOMES,
    PREFIX_TORN,
    Change,
    CrashState,
    RecordingFileIO,
    check_state,
    commit_points,
    crash_states,
    one_append_states,
    power_loss_campaign,
    record_workload,
)
from s09_jsonl_transcript.crashlab.workload import workload_event
from s09_jsonl_transcript.lab import DurableTranscript


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    return record_workload(tmp_path_factory.mktemp("recorded"), integrity=True)


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


def test_every_state_is_checked_and_none_breaks_a_promise(tmp_path):
    report = power_loss_campaign(every_byte=False, root=tmp_path)
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


def _recorded_append(tmp_path, *, acknowledge_before_sync=False, sync_directory=True):
    """Record one append; optionally replay it the way a buggy writer would have ordered it."""
    file_io = RecordingFileIO()
    with DurableTranscript(tmp_path / "bug.jsonl", clock=ticking_clock(), file_io=file_io) as writer:
        writer.append(workload_event(1))
        file_io.acknowledge([1])
    changes = list(file_io.changes)
    if acknowledge_before_sync:  # acknowledge, then fsync: an append that returns too early
        ack = changes.pop()
        changes.insert(changes.index(Change("fsync")), ack)
    if not sync_directory:
        changes.remove(Change("fsync_dir"))
    return changes, DurableTranscript(tmp_path / "bug.jsonl").read_events()


def _findings(tmp_path, changes, reference, initial=None):
    checks = [check_state(tmp_path / "check" / "bug.jsonl", state, reference, False)
              for state in crash_states(changes, initial=initial, every_byte=False)]
    return [check.finding for check in checks if check.finding]


def test_the_correct_order_of_one_append_has_no_findings(tmp_path):
    changes, reference = _recorded_append(tmp_path)
    assert _findings(tmp_path, changes, reference) == []


def test_acknowledging_before_fsync_is_caught(tmp_path):
    changes, reference = _recorded_append(tmp_path, acknowledge_before_sync=True)
    assert any("missing" in finding for finding in _findings(tmp_path, changes, reference))


def test_a_new_file_whose_folder_was_never_synced_is_caught(tmp_path):
    changes, reference = _recorded_append(tmp_path, sync_directory=False)
    assert any("missing" in finding for finding in _findings(tmp_path, changes, reference))


def test_appending_after_a_torn_tail_without_repair_is_caught(tmp_path):
    # A writer that forgot the repair: its record lands on the torn fragment's line.
    changes, reference = _recorded_append(tmp_path)
    fragment = b'{"schema_version":1,"seq'
    shifted = [Change("write", offset=change.offset + len(fragment), data=change.data)
               if change.kind == "write" else change for change in changes if change.kind != "create"]
    findings = _findings(tmp_path, shifted, reference, initial=fragment)
    assert any("lost to corruption" in finding for finding in findings)


class UnmarkedBatches(RecordingFileIO):
    """A planted bug: batches reach the disk without their batch field, as before issue #10."""

    def write(self, fd, data):
        return super().write(fd, re.sub(rb',"batch_end":\d+', b"", data)) and len(data)


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
