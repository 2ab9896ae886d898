"""Every promise the lesson (code.py's JSONLTranscript) makes, held on code.py itself (issue 51).

1. an event is durable when append returns: one write of the whole line on an O_APPEND descriptor,
   then fsync; the folder synced while the file is new, every folder it makes synced in its parent;
2. a crash leaves at most a partial last line, which the next open forgives and cuts;
3. any other damage fails closed with TranscriptCorruptionError naming the line;
4. a failed append whose undo succeeds leaves nothing that later counts; if the undo fails too, the
   lesson raises, and promises nothing more;
5. bad input is refused with the lesson's own error before a byte is written, a record longer than
   the lab reads included (one limit: MAX_RECORD_BYTES);
6. replay and the memory gate work as the lesson says;
7. one writer per file, and a dropped writer does not lock out its own process.
The lesson keeps no more than these: threads sharing one instance, os.fork(), a file changed under its
writer, short writes' real causes and a failed undo's outcome are the lab's.
The lab keeps these and its own (tests/test_lab_promises.py, the fault suites).
"""

import enum
import errno
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from fault_injection import Fault, Injector, faults_for, full_disk_round_trip, outcomes_at_a_fifo_or_a_device, record
from promise_helpers import Recorder, call, enveloped, message, result, write_lines

from s09_jsonl_transcript import code
from s09_jsonl_transcript.code import (
    MAX_RECORD_BYTES,
    SCHEMA_VERSION,
    FileIO,
    JSONLTranscript,
    MemorySelectionError,
    TranscriptCorruptionError,
    TranscriptLockedError,
    TranscriptValidationError,
    ticking_clock,
)
from s09_jsonl_transcript.lab import DurableTranscript

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def cls():
    """The class these promises are the lesson's of; tests/test_lab_promises.py runs the lesson's promises
    that the lab keeps on the lab's class, through its own cls fixture."""
    return JSONLTranscript


def contents(cls, path) -> list:
    """The content of every event a fresh reader of cls finds at path."""
    return [event["content"] for event in cls(path).read_events()]


def write_events(cls, path, texts) -> None:
    with cls(path, clock=ticking_clock()) as writer:
        for text in texts:
            writer.append(message(text))


# --------------------------------------------------------------------------- 1. durable when append returns


def test_an_append_is_one_write_of_the_whole_line_then_fsync(cls, tmp_path, monkeypatch):
    transcript = cls(tmp_path / "s.jsonl", clock=ticking_clock())
    transcript.append(message("first"))  # opens the file and reads it once
    recorder = Recorder(monkeypatch)
    written = transcript.append(message("second"))
    assert recorder.names() == ["write", "fsync"]
    assert recorder.calls[0][2] == transcript.path.read_bytes().splitlines(keepends=True)[-1]
    assert (written["sequence"], written["event_id"]) == (2, "transcript:s:2")
    transcript.close()


def test_the_descriptor_appends_whatever_the_offset(tmp_path):
    """O_APPEND: the write lands at the end of the file, wherever the descriptor's offset points."""
    path = tmp_path / "s.jsonl"
    fd = code.open_for_append(path, FileIO())
    try:
        assert os.fstat(fd).st_size == 0 and fcntl_flags(fd) & os.O_APPEND
        code.append_line(fd, code.encode({"a": 1}), FileIO())
        os.lseek(fd, 0, os.SEEK_SET)
        code.append_line(fd, code.encode({"b": 2}), FileIO())
    finally:
        os.close(fd)
    assert path.read_bytes() == b'{"a":1}\n{"b":2}\n'


def fcntl_flags(fd: int) -> int:
    import fcntl

    return fcntl.fcntl(fd, fcntl.F_GETFL)


def test_a_new_files_folder_is_synced_once_and_every_append_once(tmp_path, monkeypatch):
    """The file's name is durable once its folder is synced: the lesson syncs it while the file is new.
    (The folders it makes above it are synced by the lab's writer: tests/test_lab_promises.py.)"""
    folder = tmp_path / "projects" / "ws"
    recorder = Recorder(monkeypatch)
    transcript = JSONLTranscript(folder / "s1.jsonl")
    transcript.append(message("a"))
    transcript.append(message("b"))  # the file is not new any more: its folder is not synced again
    transcript.close()
    monkeypatch.undo()
    synced = recorder.fsynced_paths()
    assert synced == [str(folder), str(folder / "s1.jsonl"), str(folder / "s1.jsonl")]


def test_append_returns_the_record_as_a_reader_reads_it_back_and_leaves_the_callers_dict(tmp_path):
    class Role(str, enum.Enum):
        USER = "user"

    event = {"type": "message", "role": Role.USER, "content": {"text": "hi"}}
    with JSONLTranscript(tmp_path / "abc.jsonl", clock=ticking_clock()) as transcript:
        written = transcript.append(event)
    assert event["role"] is Role.USER and written["content"] is not event["content"]
    assert {key: written[key] for key in code.ENVELOPE_FIELDS} == {
        "schema_version": SCHEMA_VERSION, "sequence": 1, "session_id": "abc", "event_id": "transcript:abc:1",
        "recorded_at": "2026-01-05T09:00:00+00:00"}
    assert written == JSONLTranscript(transcript.path).read_events()[0]
    assert type(written["role"]) is str and '"role":"user"' in transcript.path.read_text()


# --------------------------------------------------------------------------- 2. a crash: at most a partial last line


KILLED_AGENT = textwrap.dedent("""
    import sys
    from s09_jsonl_transcript.code import JSONLTranscript, MockLLM, agent_child, ticking_clock
    agent_child(JSONLTranscript(sys.argv[1], clock=ticking_clock()), MockLLM(), int(sys.argv[2]))
""")


@pytest.mark.parametrize("kill_after", [0, 3, 8])
def test_an_agent_killed_in_the_middle_of_a_line_loses_nothing_acknowledged(tmp_path, kill_after):
    """The lesson's own crash (section 2): the child prints each record once append returned, then dies by
    SIGKILL half way through the next line. A fresh process recovers exactly what was acknowledged."""
    path = tmp_path / "agent.jsonl"
    child = subprocess.run([sys.executable, "-c", KILLED_AGENT, str(path), str(kill_after)], capture_output=True,
                           text=True, cwd=REPO, timeout=120)
    assert child.returncode == -9, child.stderr
    acknowledged = [record for record, _ in map(json.loads, child.stdout.splitlines())]
    assert len(acknowledged) == kill_after
    data = path.read_bytes()
    assert data.count(b"\n") == kill_after and not data.endswith(b"\n")  # half a line after the last newline
    fresh = JSONLTranscript(path)
    assert fresh.read_events() == acknowledged
    assert fresh.recover()["ignored_partial_tail"] is True
    with JSONLTranscript(path, clock=ticking_clock()) as writer:  # the next writer cuts the tail off first
        assert writer.append(message("after"))["sequence"] == kill_after + 1
    assert types_in(path) == [record["type"] for record in acknowledged] + ["message"]
    assert JSONLTranscript(path).recover()["ignored_partial_tail"] is False


def types_in(path) -> list:
    return [event["type"] for event in JSONLTranscript(path).read_events()]


def test_a_partial_tail_is_ignored_reported_and_cut_off_before_the_next_append(cls, tmp_path):
    path = tmp_path / "s.jsonl"
    write_events(cls, path, ["0", "1", "2"])
    whole = path.read_bytes()
    path.write_bytes(whole + b'{"schema_version":1,"sequence":4,"eve')  # a write that never finished
    assert code.read_transcript(path) == (cls(path).read_events(), True)
    state = cls(path).replay_state()
    assert (state.total_events, state.ignored_partial_tail) == (3, True)
    with cls(path) as transcript:
        assert transcript.append(message("next"))["sequence"] == 4
    assert path.read_bytes().startswith(whole) and path.read_bytes().count(b"\n") == 4
    assert cls(path).replay_state().ignored_partial_tail is False


def test_a_complete_record_missing_only_its_newline_is_kept_and_its_line_ended(cls, tmp_path):
    path = tmp_path / "s.jsonl"
    write_events(cls, path, ["a", "b"])
    path.write_bytes(path.read_bytes()[:-1])
    assert contents(cls, path) == ["a", "b"] and code.read_transcript(path)[1] is False
    with cls(path) as transcript:
        assert transcript.append(message("c"))["sequence"] == 3
    assert contents(cls, path) == ["a", "b", "c"]


# --------------------------------------------------------------------------- 3. any other damage fails closed


@pytest.mark.parametrize("damage, reason", [
    (lambda r: {**r, "sequence": 3}, "expected sequence 2, got 3"),
    (lambda r: {**r, "session_id": "other"}, "expected session_id 's', got 'other'"),
    (lambda r: {**r, "event_id": "transcript:s:9"}, "expected event_id 'transcript:s:2', got 'transcript:s:9'"),
    (lambda r: {**r, "schema_version": "one"}, "bad schema_version 'one'"),
    (lambda r: {**r, "sequence": 5, "session_id": "x", "schema_version": 0}, "expected sequence 2, got 5"),
    (lambda r: {key: value for key, value in r.items() if key != "role"}, "a message event needs a string 'role'"),
    (lambda r: {"note": "hello"}, "line has no envelope"),
    (lambda r: [r], "record must be a JSON object"),
])
def test_a_damaged_line_fails_closed_naming_the_line_and_byte(cls, tmp_path, damage, reason):
    path = tmp_path / "s.jsonl"
    records = [enveloped("s", n, message(str(n))) for n in (1, 2, 3)]
    records[1] = damage(records[1])
    write_lines(path, records)
    with pytest.raises(TranscriptCorruptionError) as caught:
        cls(path).recover()
    offset = len(json.dumps(records[0])) + 1
    assert (caught.value.line_number, caught.value.byte_offset) == (2, offset)
    assert reason in caught.value.reason and f"s.jsonl:2: {caught.value.reason} (byte offset {offset})" == str(
        caught.value)


def test_a_complete_bad_line_at_the_end_is_corruption_and_nothing_is_appended_after_it(cls, tmp_path):
    path = tmp_path / "s.jsonl"
    write_lines(path, [enveloped("s", 1, message("a"))])
    path.write_bytes(path.read_bytes() + b"{not json}\n")
    before = path.read_bytes()
    with pytest.raises(TranscriptCorruptionError, match="s.jsonl:2: invalid complete JSON record"):
        cls(path).replay()
    with pytest.raises(TranscriptCorruptionError):
        cls(path).append(message("b"))
    assert path.read_bytes() == before


def test_nan_is_not_json_even_at_the_end(cls, tmp_path):
    path = tmp_path / "s.jsonl"
    record = json.dumps(enveloped("s", 1, message("a"))).replace('"a"', "NaN")
    path.write_text(record + "\n")
    with pytest.raises(TranscriptCorruptionError, match="invalid complete JSON record"):
        cls(path).read_events()
    path.write_text(record)  # the same line, unterminated: a partial tail
    assert code.read_transcript(path) == ([], True)


# ------------------------------------------------------------- 4. a failed append leaves nothing that counts


class FirstAppend:
    name = "the first append, in folders it makes"

    def prepare(self, folder):
        return folder / "a" / "b" / "s.jsonl", []


class Reopened:
    name = "an append by a new instance on a file of two events"

    def prepare(self, folder):
        write_events(JSONLTranscript, folder / "s.jsonl", ["one", "two"])
        return folder / "s.jsonl", ["one", "two"]


class PartialTail:
    name = "an append that must first cut a partial tail off"

    def prepare(self, folder):
        path, before = Reopened().prepare(folder)
        path.write_bytes(path.read_bytes() + b'{"schema_version":1,"sequence":3,"ev')
        return path, before


class LostNewline:
    name = "an append that must first end a record that lost its newline"

    def prepare(self, folder):
        path, before = Reopened().prepare(folder)
        path.write_bytes(path.read_bytes()[:-1])
        return path, before


SCENARIOS = [FirstAppend(), Reopened(), PartialTail(), LostNewline()]


def _append_with_faults(scenario, folder, faults):
    """Prepare, then append "new" with these faults; return (path, before, the error raised or None, the writer)."""
    folder.mkdir()
    path, before = scenario.prepare(folder)
    writer = JSONLTranscript(path, clock=ticking_clock())
    error = None
    with Injector(folder, {fault.number: fault for fault in faults}):
        try:
            writer.append(message("new"))
        except BaseException as raised:  # noqa: BLE001 - classified by the callers
            error = raised
    return path, before, error, writer


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda scenario: type(scenario).__name__)
def test_a_fault_at_each_call_is_undone_and_the_retry_writes_the_event_once(scenario, tmp_path):
    folder = tmp_path / "recording"
    folder.mkdir()
    path, _ = scenario.prepare(folder)
    calls = record(folder, lambda: JSONLTranscript(path, clock=ticking_clock()).append(message("new")))
    assert {"write", "fsync"} <= {call.kind for call in calls}
    for number, fault in enumerate(faults_for(calls)):
        path, before, error, writer = _append_with_faults(scenario, tmp_path / f"run{number}", [fault])
        assert isinstance(error, OSError), f"{fault}: {error!r}"  # never swallowed, never acknowledged
        assert contents(JSONLTranscript, path) == before, fault  # undone: nothing of it counts
        assert writer.append(message("new"))["sequence"] == len(before) + 1  # the caller's retry, same instance
        writer.close()
        assert contents(JSONLTranscript, path) == before + ["new"], fault  # once


def test_a_failed_fsync_is_undone_durably_before_it_raises(tmp_path):
    class FailsTheNextFsync(FileIO):
        def __init__(self):
            self.calls, self.armed = [], False

        def write(self, fd, data):
            self.calls.append("write")
            return super().write(fd, data)

        def fsync(self, fd):
            self.calls.append("fsync")
            if self.armed:
                self.armed = False
                raise OSError(errno.EIO, "injected")
            super().fsync(fd)

        def truncate(self, fd, length):
            self.calls.append("truncate")
            super().truncate(fd, length)

    path = tmp_path / "s.jsonl"
    writer = JSONLTranscript(path, clock=ticking_clock())
    writer.file_io = io = FailsTheNextFsync()
    writer.append(message("one"))
    io.calls, io.armed = [], True
    with pytest.raises(OSError) as raised:
        writer.append(message("two"))
    assert raised.value.errno == errno.EIO
    assert io.calls == ["write", "fsync", "truncate", "fsync"]  # the cut, then the sync that makes it durable
    assert contents(JSONLTranscript, path) == ["one"]
    assert writer.append(message("two"))["sequence"] == 2
    writer.close()
    assert contents(JSONLTranscript, path) == ["one", "two"]


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
    assert contents(cls, path) == ["a", "b"]


@pytest.mark.parametrize("undo_step", ["truncate", "fsync"])
def test_when_the_undo_fails_too_the_lesson_raises_its_error(tmp_path, undo_step):
    """The fsync fails, then the undo's truncate or its fsync fails too: the append raises the undo's error,
    and the lesson promises nothing more about that event. The instance drops its writer, so its next append
    reopens and reads where the file ends: the file stays readable."""
    path = tmp_path / "s.jsonl"
    writer = JSONLTranscript(path, clock=ticking_clock())
    writer.append(message("one"))
    calls = record(tmp_path, lambda: writer.append(message("two")))
    assert [call.kind for call in calls] == ["write", "fsync"]
    second = 2 if undo_step == "truncate" else 3  # after the failed fsync: the undo's truncate, then its fsync
    with Injector(tmp_path, {1: Fault(1), second: Fault(second, code=errno.EROFS)}):
        with pytest.raises(OSError) as raised:
            writer.append(message("three"))
    assert raised.value.errno == errno.EROFS
    assert writer.append(message("four"))["content"] == "four"
    writer.close()
    assert contents(JSONLTranscript, path) in (["one", "two", "three", "four"], ["one", "two", "four"])


def test_a_real_full_disk_undoes_the_append_and_a_retry_after_space_is_freed_writes_it_once(tmp_path):
    assert full_disk_round_trip(JSONLTranscript, tmp_path / "disk").errno == errno.ENOSPC


def test_a_retried_first_append_syncs_the_folder_the_failed_try_did_not(tmp_path):
    """The first try made the file and then could not sync its folder: the retry syncs it before writing."""
    class FailsTheFirstFolderSync(FileIO):
        def __init__(self):
            self.synced, self.fails = [], 1

        def fsync_dir(self, folder):
            if self.fails:
                self.fails -= 1
                raise OSError(errno.EIO, "injected")
            self.synced.append(folder)
            super().fsync_dir(folder)

    path = tmp_path / "s.jsonl"
    writer = JSONLTranscript(path)
    writer.file_io = io = FailsTheFirstFolderSync()
    with pytest.raises(OSError):
        writer.append(message("one"))
    assert path.exists() and path.stat().st_size == 0
    writer.append(message("one"))
    writer.close()
    assert io.synced == [path.parent] and contents(JSONLTranscript, path) == ["one"]


# ----------------------------------------------------------- 5. bad input: the lesson's own error, nothing written


class Level(enum.IntEnum):
    HIGH = 3


def nested(depth: int):
    value: object = 1
    for _ in range(depth):
        value = [value]
    return value


BAD_EVENTS = {
    "not a dict": ["message"],
    "no type": {"role": "user", "content": "x"},
    "an empty type": {"type": "", "content": "x"},
    "a sequence of its own": {**message("x"), "sequence": 7},
    "the envelope": {**message("x"), "session_id": "other", "event_id": "transcript:other:9"},
    "the lab's batch field": {**message("x"), "batch_end": 3},
    "NaN": message(float("nan")),
    "a tuple": message(("a", "b")),
    "a key that is not a string": message({1: "one"}),
    "a set": message({"a"}),
    "a lone surrogate": message("\ud800"),
    "an integer json.loads refuses": message(7 * 10**4300),
    "nested past the recursion limit": message(nested(5000)),
    "a message without its role": {"type": "message", "content": "x"},
    "a call without its name": {"type": "function_call", "callId": "c1"},
}


@pytest.mark.parametrize("name", BAD_EVENTS)
def test_bad_input_is_refused_with_the_lessons_error_before_a_byte_is_written(tmp_path, name):
    path = tmp_path / "s.jsonl"
    with pytest.raises(TranscriptValidationError):
        JSONLTranscript(path).append(BAD_EVENTS[name])
    assert not path.exists()  # not even the file
    with JSONLTranscript(path, clock=ticking_clock()) as transcript:
        transcript.append(message("one"))
        before = path.read_bytes()
        with pytest.raises(TranscriptValidationError):
            transcript.append(BAD_EVENTS[name])
        assert path.read_bytes() == before
        assert transcript.append(message("two"))["sequence"] == 2


def test_the_reserved_fields_are_named_in_the_courses_words(cls, tmp_path):
    with pytest.raises(TranscriptValidationError, match="reserved envelope fields append writes itself: "
                                                        "event_id, session_id"):
        cls(tmp_path / "s.jsonl").append(BAD_EVENTS["the envelope"])


def test_str_and_int_subclasses_and_the_longest_integer_are_written_as_their_json_value(cls, tmp_path):
    longest = 10**4300 - 1  # 4,300 digits: json.loads reads it back
    with cls(tmp_path / "s.jsonl") as transcript:
        transcript.append({"type": "message", "role": "user", "content": longest, "level": Level.HIGH})
    event = cls(transcript.path).read_events()[0]
    assert event["content"] == longest and type(event["level"]) is int and '"level":3' in transcript.path.read_text()


def test_one_limit_the_lesson_writes_what_the_lab_reads_and_refuses_a_byte_more(tmp_path):
    """MAX_RECORD_BYTES, defined once in code.py: a line of exactly that many bytes (its newline included)
    is written by the lesson and read by the lab; a byte more is refused before anything is written."""
    from s09_jsonl_transcript import lab

    assert lab.MAX_RECORD_BYTES is MAX_RECORD_BYTES == DurableTranscript(tmp_path / "x.jsonl").max_record_bytes
    path = tmp_path / "s.jsonl"
    envelope = len(code.encode({**code.envelope("s", 1, ticking_clock()()), **message("")}))
    with JSONLTranscript(path, clock=ticking_clock()) as transcript:
        with pytest.raises(TranscriptValidationError, match=str(MAX_RECORD_BYTES)):
            transcript.append(message("x" * (MAX_RECORD_BYTES - envelope + 1)))
        assert path.read_bytes() == b""
    with JSONLTranscript(path, clock=ticking_clock()) as transcript:
        transcript.append(message("x" * (MAX_RECORD_BYTES - envelope)))
    assert len(path.read_bytes()) == MAX_RECORD_BYTES
    assert DurableTranscript(path).recover()["total_events"] == 1
    assert DurableTranscript(path).scan().events == JSONLTranscript(path).read_events()


# --------------------------------------------------------------------------- 6. replay and the memory gate


def test_replay_never_opens_on_a_tool_result_whose_call_the_window_cut_off(cls, tmp_path):
    with cls(tmp_path / "s.jsonl") as transcript:
        for event in (message("go"), call("c1"), result("c1"), message("done", "assistant"), call("c2")):
            transcript.append(event)
    state = transcript.replay_state(3)  # the window starts at c1's result
    assert state.messages[0] == {"role": "assistant", "content": "done"}
    assert [pending["callId"] for pending in state.pending_calls] == ["c2"]
    assert [m["role"] for m in transcript.replay(4)] == ["assistant", "user", "assistant", "assistant"]
    recovered = transcript.recover(3)
    assert recovered["messages"] == state.messages and recovered["total_events"] == 5


@pytest.mark.parametrize("window", [0, 1, 2, 3, 4, 5, 6])
def test_recover_and_replay_state_agree_on_the_window_with_newer_schema_events(cls, tmp_path, window):
    path = tmp_path / "s.jsonl"
    newer = SCHEMA_VERSION + 1
    write_lines(path, [enveloped("s", 1, message("a")), enveloped("s", 2, {"type": "x"}, newer),
                       enveloped("s", 3, message("b", "assistant")), enveloped("s", 4, {"type": "x"}, newer),
                       enveloped("s", 5, message("c"))])
    transcript = cls(path)
    assert transcript.recover(window)["messages"] == transcript.replay_state(window).messages
    assert len(transcript.replay(window)) == len([n for n in (1, 3, 5) if n > 5 - window])
    assert transcript.recover(window)["unknown_schema_events"] == 2


@pytest.mark.parametrize("max_items", [0, 1, 12, 10**30])
def test_any_whole_number_works_as_max_items_and_nothing_else_does(cls, tmp_path, max_items):
    path = tmp_path / "s.jsonl"
    write_events(cls, path, ["0", "1", "2"])
    transcript = cls(path)
    assert len(transcript.replay(max_items)) == min(max_items, 3)
    for bad in (-1, 2.0, True, "5"):
        with pytest.raises(ValueError, match="whole number"):
            transcript.replay(bad)


def test_the_gate_takes_the_courses_positional_call_and_copies_no_body(cls, tmp_path):
    with cls(tmp_path / "session_abc123.jsonl") as transcript:
        transcript.append(message("We will use SQLite WAL."))
        transcript.append(call("c1"))
    candidate = transcript.select_memory_candidate(
        "transcript:session_abc123:1", "The project uses SQLite WAL.", "A decision the user confirmed.")
    assert (candidate.sequence, candidate.event_type, candidate.selection_reason) == (
        1, "message", "A decision the user confirmed.")
    assert "SQLite WAL." not in json.dumps(candidate.source_metadata())
    for event_id, refusal in (("transcript:session_abc123:2", "not eligible"),
                              ("transcript:session_abc123:3", "unknown transcript event"),
                              ("transcript:session_abc123:01", "ids here look like"), (1, "unknown")):
        with pytest.raises(MemorySelectionError, match=refusal):
            transcript.select_memory_candidate(event_id, "x", "y")


def test_the_gate_reads_the_transcript_first_and_refuses_a_newer_schema_record(cls, tmp_path):
    path = tmp_path / "s.jsonl"
    write_lines(path, [enveloped("s", 1, message("a")), enveloped("s", 2, {"type": "hologram"}, SCHEMA_VERSION + 1)])
    with pytest.raises(MemorySelectionError, match="newer schema_version"):
        cls(path).select_memory_candidate("transcript:s:2", "x", "y")
    path.write_bytes(path.read_bytes().replace(b'"sequence": 2', b'"sequence": 5'))
    with pytest.raises(TranscriptCorruptionError):  # damaged evidence, whatever the question
        cls(path).select_memory_candidate("not an id", "", None)


# --------------------------------------------------------------------------- 7. one writer, and a dropped one unlocks


def test_one_writer_per_file_across_processes(cls, tmp_path):
    path = tmp_path / "s.jsonl"
    holder = textwrap.dedent(f"""
        import sys
        from {cls.__module__} import {cls.__name__} as cls
        transcript = cls({str(path)!r})
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


def test_two_instances_in_one_process_cannot_both_write(cls, tmp_path):
    first, second = cls(tmp_path / "s.jsonl"), cls(tmp_path / "s.jsonl")
    first.append(message("a"))
    with pytest.raises(TranscriptLockedError):
        second.append(message("b"))
    first.close()
    assert second.append(message("b"))["sequence"] == 2
    second.close()


def test_a_transcript_dropped_without_close_releases_its_descriptor_and_lock(cls, tmp_path):
    """A notebook cell `transcript = cls(path)` run again, and a loop that never closes, both write."""
    path = tmp_path / "s.jsonl"
    transcript = cls(path)
    transcript.append(message("cell, first run"))
    transcript = cls(path)  # the cell again: the first instance is dropped, not closed
    transcript.append(message("cell, second run"))
    del transcript
    before = len(os.listdir("/dev/fd"))
    for i in range(5):
        cls(path).append(message(f"loop {i}"))
    assert len(os.listdir("/dev/fd")) == before  # each dropped writer closed its descriptor
    assert [e["sequence"] for e in cls(path).read_events()] == list(range(1, 8))


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
    assert contents(cls, tmp_path / "first" / "s.jsonl") == ["a", "b"]


FIFO_CHILD = textwrap.dedent("""
    import errno, json, sys
    from s09_jsonl_transcript.code import JSONLTranscript
    outcomes = {}
    for name in ("append", "read_events", "recover", "replay_state", "replay", "count_lines"):
        call = getattr(JSONLTranscript(sys.argv[1]), name)
        try:
            call({"type": "message", "role": "user", "content": "x"}) if name == "append" else call()
            outcomes[name] = "returned"
        except OSError as error:
            outcomes[name] = [type(error).__name__, errno.errorcode[error.errno]]
    print(json.dumps(outcomes))
""")


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_fifo_or_a_device_at_the_path_is_refused_at_once(tmp_path, kind):
    outcomes = outcomes_at_a_fifo_or_a_device(FIFO_CHILD, tmp_path, kind)
    assert len(outcomes) == 6
    for name, (error, code_name) in outcomes.items():  # ENXIO: O_NONBLOCK, a FIFO nobody reads
        assert (error, code_name) in {("OSError", "EINVAL"), ("OSError", "ENXIO")}, name
