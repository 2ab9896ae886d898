"""Every promise the lab's DurableTranscript makes (issues 18 and 51): the lesson's promises that the lab keeps,
run on the lab's class, then the lab's own: threads sharing one instance, os.fork(), every folder it makes
synced, the chain, the tail read. (Faults: tests/test_faults_transcript.py, tests/test_faults_environment.py.)
"""

import os
import threading

import pytest
import test_lesson_promises as lesson
from promise_helpers import Recorder, enveloped, message, write_lines

from s09_jsonl_transcript.code import (
    MAX_RECORD_BYTES,
    SCHEMA_VERSION,
    MemorySelectionError,
    TranscriptLockedError,
    TranscriptValidationError,
    ticking_clock,
)
from s09_jsonl_transcript.lab import DurableTranscript


@pytest.fixture
def cls():
    """The class these promises hold for: the lab's."""
    return DurableTranscript


# --------------------------------------------------------------------------- the lesson's promises, kept by the lab

# The lesson's own tests of them (tests/test_lesson_promises.py), collected here again: the cls fixture above
# runs each on the lab's class. The lesson's promises the lab makes otherwise (its errors name the step and
# the path, it syncs every folder it makes, it refuses input with its own words) are tested in the lab's files.
KEPT = [
    "test_an_append_is_one_write_of_the_whole_line_then_fsync",
    "test_a_partial_tail_is_ignored_reported_and_cut_off_before_the_next_append",
    "test_a_complete_record_missing_only_its_newline_is_kept_and_its_line_ended",
    "test_a_damaged_line_fails_closed_naming_the_line_and_byte",
    "test_a_complete_bad_line_at_the_end_is_corruption_and_nothing_is_appended_after_it",
    "test_nan_is_not_json_even_at_the_end",
    "test_a_write_that_lost_only_its_newline_is_not_committed_twice_by_a_retry",
    "test_the_reserved_fields_are_named_in_the_courses_words",
    "test_str_and_int_subclasses_and_the_longest_integer_are_written_as_their_json_value",
    "test_replay_never_opens_on_a_tool_result_whose_call_the_window_cut_off",
    "test_recover_and_replay_state_agree_on_the_window_with_newer_schema_events",
    "test_any_whole_number_works_as_max_items_and_nothing_else_does",
    "test_the_gate_takes_the_courses_positional_call_and_copies_no_body",
    "test_the_gate_reads_the_transcript_first_and_refuses_a_newer_schema_record",
    "test_one_writer_per_file_across_processes",
    "test_two_instances_in_one_process_cannot_both_write",
    "test_a_transcript_dropped_without_close_releases_its_descriptor_and_lock",
    "test_a_relative_path_names_the_same_file_after_a_change_of_directory",
]
globals().update({name: getattr(lesson, name) for name in KEPT})


def test_every_kept_promise_takes_the_class_it_runs_on():
    """A kept test that named the lesson's class itself would test the lesson twice and the lab not at all."""
    import inspect

    for name in KEPT:
        assert "cls" in inspect.signature(getattr(lesson, name)).parameters, name


# --------------------------------------------------------------------------- the lab's own


def test_the_envelope_is_written_by_append_and_the_callers_dict_is_not_changed(cls, tmp_path):
    event = message("hello")
    with cls(tmp_path / "abc.jsonl", clock=ticking_clock()) as transcript:
        record = transcript.append(event)
    assert event == message("hello")
    assert {key: record[key] for key in ("schema_version", "sequence", "session_id", "event_id", "recorded_at")} == {
        "schema_version": SCHEMA_VERSION, "sequence": 1, "session_id": "abc", "event_id": "transcript:abc:1",
        "recorded_at": "2026-01-05T09:00:00+00:00"}
    with pytest.raises(TranscriptValidationError, match="sequence"):
        transcript.append({**event, "sequence": 7})


def test_the_record_limit_is_the_lessons_one_limit(cls, tmp_path):
    transcript = cls(tmp_path / "s.jsonl")
    assert transcript.max_record_bytes == MAX_RECORD_BYTES
    with pytest.raises(TranscriptValidationError, match=f"the limit is {MAX_RECORD_BYTES}"):
        transcript.append(message("x" * MAX_RECORD_BYTES))
    assert transcript.count_lines() == 0


def test_threads_sharing_one_instance_write_every_sequence_once(cls, tmp_path):
    transcript, errors = cls(tmp_path / "s.jsonl"), []
    start = threading.Barrier(6)

    def body(number):
        start.wait()
        try:
            for i in range(25):
                transcript.append(message(f"{number}:{i}"))
        except BaseException as error:  # noqa: BLE001 - reported by the assertion below
            errors.append(error)

    threads = [threading.Thread(target=body, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    transcript.close()
    assert errors == []
    events = cls(transcript.path).read_events()
    assert [e["sequence"] for e in events] == list(range(1, 151))
    assert sorted(e["content"] for e in events) == sorted(f"{n}:{i}" for n in range(6) for i in range(25))


def test_a_newer_schema_version_with_a_sound_envelope_is_kept_as_evidence(cls, tmp_path):
    path = tmp_path / "s.jsonl"
    write_lines(path, [enveloped("s", 1, message("a")),
                       enveloped("s", 2, {"type": "hologram", "frames": 3}, schema_version=SCHEMA_VERSION + 1),
                       enveloped("s", 3, message("b", "assistant"))])
    transcript = cls(path)
    assert [e["sequence"] for e in transcript.read_events()] == [1, 2, 3]
    state = transcript.replay_state()
    assert state.unknown_schema_events == 1 and state.messages == [
        {"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    with pytest.raises(MemorySelectionError, match="newer schema_version"):
        transcript.select_memory_candidate("transcript:s:2", "x", "y")
    with transcript:
        assert transcript.append(message("c"))["sequence"] == 4


def test_after_fork_the_child_never_writes_through_the_parents_writer(cls, tmp_path):
    path = tmp_path / "s.jsonl"
    transcript = cls(path)
    transcript.append(message("parent 1"))
    pid = os.fork()
    if pid == 0:  # the child: report what happened through the exit status, and run no cleanup
        try:
            transcript.append(message("child"))
            os._exit(3)  # appended: only allowed through a writer of its own
        except TranscriptLockedError:
            os._exit(0)
        except BaseException:  # noqa: BLE001
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    transcript.append(message("parent 2"))
    transcript.close()
    assert os.waitstatus_to_exitcode(status) == 0  # the parent still holds the file: a clear error
    assert [e["content"] for e in cls(path).read_events()] == ["parent 1", "parent 2"]


def test_every_folder_made_for_a_new_session_is_fsynced(cls, tmp_path, monkeypatch):
    root = tmp_path / "root"
    recorder = Recorder(monkeypatch)
    transcript = cls.for_session(root, "ws", "s1")
    transcript.append(message("a"))
    transcript.close()
    monkeypatch.undo()
    synced = set(recorder.fsynced_paths())
    for made in (root, root / "projects", root / "projects" / "ws"):  # each new name lives in its parent
        assert str(made.parent) in synced, made
    assert str(root / "projects" / "ws" / "s1.jsonl") in synced



# --------------------------------------------------------------------------- the lab's own additions


def test_a_chained_session_resumed_without_integrity_stays_sealed(tmp_path):
    path = tmp_path / "s.jsonl"
    with DurableTranscript(path, integrity=True) as sealed:
        sealed.append(message("a"))
        sealed.append(message("b"))
    with DurableTranscript(path) as resumed:  # opened without integrity=True: it follows the file
        resumed.append(message("c"))
        resumed.append_batch([message("d"), message("e")])
    scanned = DurableTranscript(path, integrity=True).scan()
    assert scanned.chained and [e["content"] for e in scanned.events] == ["a", "b", "c", "d", "e"]


def test_read_recent_returns_at_most_n_records_after_a_torn_batch(tmp_path):
    path = tmp_path / "s.jsonl"
    with DurableTranscript(path) as transcript:
        for n in range(5):
            transcript.append(message(str(n)))
        transcript.append_batch([message("b1"), message("b2"), message("b3")])
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-1]))  # the batch's last record never reached the disk
    for count in range(0, 9):
        recent = DurableTranscript(path).read_recent(count)
        assert len(recent.events) <= count and recent.unfinished_batch
        assert [e["content"] for e in recent.events] == [str(n) for n in range(5)][max(5 - count, 0):]
