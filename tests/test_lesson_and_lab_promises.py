"""Every promise the lesson makes, held by both classes: code.JSONLTranscript and lab.DurableTranscript (issue 18).

Sections 1-4 are the lesson's own promises; section 5 the correctness bugs found by using the
library as its users would (each of those tests failed on the library before the split).
"""

import enum
import errno
import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from s09_jsonl_transcript.code import (
    SCHEMA_VERSION,
    JSONLTranscript,
    MemorySelectionError,
    TranscriptCorruptionError,
    TranscriptLockedError,
    TranscriptValidationError,
    ticking_clock,
)
from s09_jsonl_transcript.lab import DurableTranscript

REPO = Path(__file__).resolve().parents[1]
BOTH = pytest.mark.parametrize("cls", [JSONLTranscript, DurableTranscript], ids=["lesson", "lab"])


def message(text, role="user"):
    return {"type": "message", "role": role, "content": text}


def call(call_id, name="read_file"):
    return {"type": "function_call", "callId": call_id, "name": name, "arguments": {}}


def result(call_id, output="ok"):
    return {"type": "function_call_result", "callId": call_id, "output": output}


def enveloped(session, sequence, payload, schema_version=SCHEMA_VERSION):
    """A record as append would write it, built by hand (for a newer schema_version, say)."""
    return {"schema_version": schema_version, "sequence": sequence, "event_id": f"transcript:{session}:{sequence}",
            "session_id": session, "recorded_at": "2026-01-05T09:00:00+00:00", **payload}


def write_lines(path, records):
    path.write_bytes(b"".join(json.dumps(record).encode() + b"\n" for record in records))


class Recorder:
    """Wraps os.write / os.fsync to see what reaches the disk, and in what order."""

    def __init__(self, monkeypatch, short_by=0):
        self.calls, self.short_by = [], short_by
        real_write, real_fsync = os.write, os.fsync

        def write(fd, data):
            if self.short_by and len(data) > 1:
                data = data[: len(data) - self.short_by]
            self.calls.append(("write", fd, bytes(data)))
            return real_write(fd, data)

        def fsync(fd):
            self.calls.append(("fsync", fd, os.readlink(f"/proc/self/fd/{fd}")))
            return real_fsync(fd)

        monkeypatch.setattr(os, "write", write)
        monkeypatch.setattr(os, "fsync", fsync)

    def names(self):
        return [name for name, *_ in self.calls]

    def fsynced_paths(self):
        return [target for name, _, target in self.calls if name == "fsync"]


# --------------------------------------------------------------------------- 1. the durable append


@BOTH
def test_an_append_is_one_write_of_the_whole_line_then_fsync(cls, tmp_path, monkeypatch):
    transcript = cls(tmp_path / "s.jsonl", clock=ticking_clock())
    transcript.append(message("first"))  # opens the file and reads it once
    recorder = Recorder(monkeypatch)
    record = transcript.append(message("second"))
    assert recorder.names() == ["write", "fsync"]
    assert recorder.calls[0][2] == transcript.path.read_bytes().splitlines(keepends=True)[-1]
    assert record["event_id"] == "transcript:s:2" and record["sequence"] == 2
    transcript.close()


@BOTH
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


@BOTH
def test_one_writer_per_file_across_processes(cls, tmp_path):
    path = tmp_path / "s.jsonl"
    holder = textwrap.dedent(f"""
        import sys
        from s09_jsonl_transcript.code import JSONLTranscript
        transcript = JSONLTranscript({str(path)!r})
        transcript.append({{"type": "message", "role": "user", "content": "mine"}})
        print("holding", flush=True)
        sys.stdin.readline()
    """)
    child = subprocess.Popen([sys.executable, "-c", holder], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True, cwd=REPO)
    try:
        assert child.stdout.readline().strip() == "holding"
        with pytest.raises(TranscriptLockedError, match="another writer"):
            cls(path).append(message("theirs"))
    finally:
        child.kill()
        child.wait()
    with cls(path) as after:  # the lock died with its process
        assert after.append(message("now mine"))["sequence"] == 2


@BOTH
def test_two_instances_in_one_process_cannot_both_write(cls, tmp_path):
    first, second = cls(tmp_path / "s.jsonl"), cls(tmp_path / "s.jsonl")
    first.append(message("a"))
    with pytest.raises(TranscriptLockedError):
        second.append(message("b"))
    first.close()
    assert second.append(message("b"))["sequence"] == 2
    second.close()


def _open_descriptors() -> int:
    return len(os.listdir("/dev/fd"))  # Linux and macOS


@BOTH
def test_a_transcript_dropped_without_close_releases_its_descriptor_and_lock(cls, tmp_path):
    """A notebook cell `transcript = cls(path)` run again, and a loop that never closes, both write."""
    path = tmp_path / "s.jsonl"
    transcript = cls(path)
    transcript.append(message("cell, first run"))
    transcript = cls(path)  # the cell again: the first instance is dropped, not closed
    transcript.append(message("cell, second run"))
    del transcript
    before = _open_descriptors()
    for i in range(5):
        cls(path).append(message(f"loop {i}"))
    assert _open_descriptors() == before  # each dropped writer closed its descriptor
    assert [e["sequence"] for e in cls(path).read_events()] == list(range(1, 8))


@BOTH
def test_an_event_carrying_envelope_fields_is_refused_in_the_courses_words(cls, tmp_path):
    transcript = cls(tmp_path / "s.jsonl")
    with pytest.raises(TranscriptValidationError, match="reserved envelope fields append writes itself: "
                                                        "event_id, session_id"):
        transcript.append({**message("hello"), "session_id": "other", "event_id": "transcript:other:9"})
    assert transcript.count_lines() == 0 and not transcript.path.exists()


@BOTH
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


# --------------------------------------------------------------------- 2. reading: fail closed, forgive a partial tail


@BOTH
@pytest.mark.parametrize("damage, reason", [
    (lambda r: {**r, "sequence": 3}, "expected sequence 2, got 3"),
    (lambda r: {**r, "session_id": "other"}, "expected session_id 's', got 'other'"),
    (lambda r: {**r, "event_id": "transcript:s:9"}, "expected event_id 'transcript:s:2', got 'transcript:s:9'"),
    (lambda r: {**r, "schema_version": "one"}, "bad schema_version 'one'"),
    # several fields wrong at once: the first in the order sequence, session_id, event_id, schema_version wins
    (lambda r: {**r, "sequence": 5, "session_id": "x", "schema_version": 0}, "expected sequence 2, got 5"),
    (lambda r: {**r, "session_id": "x", "event_id": "y", "schema_version": 0}, "expected session_id"),
    (lambda r: {**r, "event_id": "y", "schema_version": 0}, "expected event_id"),
])
def test_a_damaged_envelope_fails_closed_naming_the_line_and_byte(cls, tmp_path, damage, reason):
    path = tmp_path / "s.jsonl"
    records = [enveloped("s", n, message(str(n))) for n in (1, 2, 3)]
    records[1] = damage(records[1])
    write_lines(path, records)
    with pytest.raises(TranscriptCorruptionError) as caught:
        cls(path).recover()
    offset = len(json.dumps(records[0])) + 1
    assert (caught.value.line_number, caught.value.byte_offset) == (2, offset)
    assert reason in caught.value.reason and f"byte offset {offset}" in str(caught.value)


@BOTH
def test_a_partial_tail_is_ignored_reported_and_cut_off_before_the_next_append(cls, tmp_path):
    path = tmp_path / "s.jsonl"
    with cls(path) as transcript:
        for n in range(3):
            transcript.append(message(str(n)))
    whole = path.read_bytes()
    path.write_bytes(whole + b'{"schema_version":1,"sequence":4,"eve')  # a write that never finished
    state = cls(path).replay_state()
    assert (state.total_events, state.ignored_partial_tail) == (3, True)
    assert cls(path).recover()["ignored_partial_tail"] is True
    with cls(path) as transcript:
        assert transcript.append(message("next"))["sequence"] == 4
    assert path.read_bytes().startswith(whole) and path.read_bytes().count(b"\n") == 4
    assert cls(path).replay_state().ignored_partial_tail is False


@BOTH
def test_a_complete_record_missing_only_its_newline_is_kept(cls, tmp_path):
    path = tmp_path / "s.jsonl"
    with cls(path) as transcript:
        transcript.append(message("a"))
        transcript.append(message("b"))
    path.write_bytes(path.read_bytes()[:-1])
    assert [e["content"] for e in cls(path).read_events()] == ["a", "b"]
    with cls(path) as transcript:
        assert transcript.append(message("c"))["sequence"] == 3
    assert [e["content"] for e in cls(path).read_events()] == ["a", "b", "c"]


@BOTH
def test_a_complete_bad_line_at_the_end_is_corruption_not_a_partial_tail(cls, tmp_path):
    path = tmp_path / "s.jsonl"
    write_lines(path, [enveloped("s", 1, message("a"))])
    path.write_bytes(path.read_bytes() + b"{not json}\n")
    with pytest.raises(TranscriptCorruptionError, match="s.jsonl:2: invalid complete JSON record"):
        cls(path).replay()
    with pytest.raises(TranscriptCorruptionError):
        cls(path).append(message("b"))  # nothing is ever appended after damage


@BOTH
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


# --------------------------------------------------------------------------- 3. replay(n) and the memory gate


@BOTH
def test_replay_never_opens_on_a_tool_result_whose_call_the_window_cut_off(cls, tmp_path):
    with cls(tmp_path / "s.jsonl") as transcript:
        for event in (message("go"), call("c1"), result("c1"), message("done", "assistant"), call("c2")):
            transcript.append(event)
    state = transcript.replay_state(3)  # the window starts at c1's result
    assert state.messages[0] == {"role": "assistant", "content": "done"}
    assert [pending["callId"] for pending in state.pending_calls] == ["c2"]
    assert [m["role"] for m in transcript.replay(4)] == ["assistant", "user", "assistant", "assistant"]


@BOTH
def test_the_memory_gate_takes_the_lessons_positional_call_and_copies_no_body(cls, tmp_path):
    with cls(tmp_path / "session_abc123.jsonl") as transcript:
        transcript.append(message("We will use SQLite WAL."))
        transcript.append(call("c1"))
    candidate = transcript.select_memory_candidate(
        "transcript:session_abc123:1", "The project uses SQLite WAL.", "A decision the user confirmed.")
    assert (candidate.sequence, candidate.event_type) == (1, "message")
    assert "SQLite WAL." not in json.dumps(candidate.source_metadata())
    with pytest.raises(MemorySelectionError, match="not eligible"):
        transcript.select_memory_candidate("transcript:session_abc123:2", "x", "y")
    with pytest.raises(MemorySelectionError, match="unknown transcript event"):
        transcript.select_memory_candidate("transcript:session_abc123:3", "x", "y")


# --------------------------------------------------------------------------- 5. correctness (issue 18, part 5)


@BOTH
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


class Role(str, enum.Enum):
    USER = "user"


class Level(enum.IntEnum):
    HIGH = 3


@BOTH
def test_str_and_int_subclasses_are_written_as_their_json_value(cls, tmp_path):
    with cls(tmp_path / "s.jsonl") as transcript:
        transcript.append({"type": "message", "role": Role.USER, "content": "hi", "level": Level.HIGH})
    raw = transcript.path.read_text()
    assert '"role":"user"' in raw and '"level":3' in raw and "Role.USER" not in raw
    event = cls(transcript.path).read_events()[0]
    assert type(event["role"]) is str and type(event["level"]) is int


@BOTH
def test_a_relative_path_names_the_same_file_after_a_change_of_directory(cls, tmp_path, monkeypatch):
    (tmp_path / "first").mkdir()
    (tmp_path / "second").mkdir()
    monkeypatch.chdir(tmp_path / "first")
    transcript = cls("s.jsonl")
    transcript.append(message("a"))
    transcript.close()
    monkeypatch.chdir(tmp_path / "second")
    transcript.append(message("b"))
    transcript.close()
    assert not (tmp_path / "second" / "s.jsonl").exists()
    assert [e["content"] for e in cls(tmp_path / "first" / "s.jsonl").read_events()] == ["a", "b"]


@BOTH
def test_a_write_that_lost_only_its_newline_is_not_committed_twice_by_a_retry(cls, tmp_path, monkeypatch):
    path = tmp_path / "s.jsonl"
    transcript = cls(path)
    transcript.append(message("a"))
    recorder = Recorder(monkeypatch, short_by=1)  # everything but the final newline reaches the file
    with pytest.raises(OSError, match="the disk is full") as caught:
        transcript.append(message("b"))
    assert caught.value.errno == errno.ENOSPC
    monkeypatch.undo()
    assert recorder.calls[0][0] == "write"
    transcript.append(message("b"))  # the caller retries
    transcript.close()
    assert [e["content"] for e in cls(path).read_events()] == ["a", "b"]


@BOTH
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


@BOTH
@pytest.mark.parametrize("window", [1, 2, 3, 4, 5, 6])
def test_recover_and_replay_state_agree_on_the_window_with_newer_schema_events(cls, tmp_path, window):
    path = tmp_path / "s.jsonl"
    newer = SCHEMA_VERSION + 1
    write_lines(path, [enveloped("s", 1, message("a")), enveloped("s", 2, {"type": "x"}, newer),
                       enveloped("s", 3, message("b", "assistant")), enveloped("s", 4, {"type": "x"}, newer),
                       enveloped("s", 5, message("c"))])
    transcript = cls(path)
    assert transcript.recover(window)["messages"] == transcript.replay_state(window).messages == transcript.replay(
        window)
    assert len(transcript.replay(window)) == len([n for n in (1, 3, 5) if n > 5 - window])


@BOTH
@pytest.mark.parametrize("max_items", [0, 1, 12, 10**6, 10**30])
def test_any_whole_number_works_as_max_items(cls, tmp_path, max_items):
    with cls(tmp_path / "s.jsonl") as transcript:
        for n in range(3):
            transcript.append(message(str(n)))
    assert len(transcript.replay(max_items)) == min(max_items, 3)
    assert transcript.recover(max_items)["message_count"] == min(max_items, 3)
    for bad in (-1, 2.0, True, "5"):
        with pytest.raises(ValueError, match="whole number"):
            transcript.replay(bad)


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
