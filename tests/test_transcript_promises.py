"""The lesson's promises under threads, newer schema versions and batches (issue #10).

Each test here failed against the library before the issue was fixed.
"""

import importlib.util
import json
import sys
import threading
from pathlib import Path

import pytest

from s09_jsonl_transcript.code import SCHEMA_VERSION, TranscriptCorruptionError, TranscriptLockedError, ticking_clock
from s09_jsonl_transcript.lab import BATCH_END_FIELD, DurableTranscript, OsFileIO

CODE_PY = Path(__file__).resolve().parents[1] / "s09_jsonl_transcript" / "code.py"


def message(text, role="user"):
    return {"type": "message", "role": role, "content": text}


# --------------------------------------------------------------------------- 1. threads sharing one transcript


def _run_threads(count, body):
    start, errors = threading.Barrier(count), []

    def run(number):
        start.wait()
        try:
            body(number)
        except BaseException as error:  # noqa: BLE001 - collected and reported by the test
            errors.append(error)

    threads = [threading.Thread(target=run, args=(number,)) for number in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


@pytest.mark.parametrize("threads, appends", [(4, 50), (8, 20)])
def test_threads_appending_through_one_instance_write_every_sequence_once(tmp_path, threads, appends):
    transcript = DurableTranscript(tmp_path / "shared.jsonl")
    errors = _run_threads(threads, lambda n: [transcript.append(message(f"thread {n} event {i}"))
                                              for i in range(appends)])
    transcript.close()
    assert errors == []
    state = DurableTranscript(transcript.path).recover()
    assert state["total_events"] == threads * appends
    events = DurableTranscript(transcript.path).read_events()
    assert [e["sequence"] for e in events] == list(range(1, threads * appends + 1))
    contents = sorted(e["content"] for e in events)
    assert contents == sorted(f"thread {n} event {i}" for n in range(threads) for i in range(appends))


def test_threads_appending_batches_through_one_instance_keep_each_batch_together(tmp_path):
    transcript = DurableTranscript(tmp_path / "shared.jsonl", integrity=True)
    errors = _run_threads(4, lambda n: [transcript.append_batch(message(f"t{n} b{b} e{e}") for e in range(5))
                                        for b in range(10)])
    transcript.close()
    assert errors == []
    events = DurableTranscript(transcript.path, integrity=True).read_events()
    assert [e["sequence"] for e in events] == list(range(1, 201))
    for first in range(0, 200, 5):  # every batch is 5 consecutive records from one thread, in order
        batch = [e["content"] for e in events[first:first + 5]]
        prefix = batch[0].rsplit(" ", 1)[0]
        assert batch == [f"{prefix} e{e}" for e in range(5)]
        assert {e[BATCH_END_FIELD] for e in events[first:first + 5]} == {first + 5}


def test_a_second_instance_on_the_same_path_in_this_process_fails_cleanly(tmp_path):
    path = tmp_path / "one.jsonl"
    first, second = DurableTranscript(path), DurableTranscript(path)
    first.append(message("first"))
    with pytest.raises(TranscriptLockedError):
        second.append(message("second"))
    first.append(message("first again"))
    first.close()
    second.append(message("second, after the first closed"))
    second.close()
    assert [e["content"] for e in DurableTranscript(path).read_events()] == [
        "first", "first again", "second, after the first closed"]


def test_threads_each_with_their_own_instance_never_corrupt_the_file(tmp_path):
    path = tmp_path / "contested.jsonl"
    written = []

    def body(number):
        transcript = DurableTranscript(path)
        for i in range(20):
            try:
                written.append(transcript.append(message(f"{number}:{i}"))["content"])
            except TranscriptLockedError:
                pass
        transcript.close()

    assert _run_threads(6, body) == []
    events = DurableTranscript(path).read_events()
    assert [e["sequence"] for e in events] == list(range(1, len(events) + 1))
    assert sorted(e["content"] for e in events) == sorted(written)  # acknowledged == on disk


# --------------------------------------------------------------------------- 2. newer schema_version


def _write_records(path, records):
    path.write_bytes(b"".join(json.dumps(r, separators=(",", ":")).encode() + b"\n" for r in records))


def _record(sequence, session="s", version=SCHEMA_VERSION, **payload):
    return {"schema_version": version, "sequence": sequence, "event_id": f"transcript:{session}:{sequence}",
            "session_id": session, "recorded_at": "2026-01-05T09:00:00+00:00", **payload}


@pytest.fixture
def with_newer_record(tmp_path):
    """user message, a record of the next schema version (a new event type), assistant message."""
    path = tmp_path / "s.jsonl"
    _write_records(path, [
        _record(1, type="message", role="user", content="hi"),
        _record(2, version=SCHEMA_VERSION + 1, type="tool_progress", percent=50),
        _record(3, type="message", role="assistant", content="hello"),
    ])
    return path


def test_a_newer_schema_record_is_kept_as_evidence_and_left_out_of_messages(with_newer_record):
    transcript = DurableTranscript(with_newer_record)
    events = transcript.read_events()
    assert [e["type"] for e in events] == ["message", "tool_progress", "message"]
    state = transcript.recover()
    assert state["unknown_schema_events"] == 1 and state["total_events"] == 3
    assert state["messages"] == [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    assert transcript.replay_state().unknown_schema_events == 1
    assert transcript.replay(2) == [{"role": "assistant", "content": "hello"}]
    assert transcript.scan().unknown_schema_events == 1


def test_a_newer_schema_record_may_change_the_fields_of_a_known_type(tmp_path):
    path = tmp_path / "s.jsonl"
    _write_records(path, [_record(1, version=SCHEMA_VERSION + 1, type="message", text="no role, no content")])
    state = DurableTranscript(path).recover()
    assert (state["messages"], state["unknown_schema_events"]) == ([], 1)


def test_a_writer_continues_after_a_newer_schema_record(with_newer_record):
    with DurableTranscript(with_newer_record) as transcript:
        assert transcript.append(message("more"))["sequence"] == 4
    assert len(DurableTranscript(with_newer_record).read_events()) == 4


def test_the_memory_gate_refuses_a_newer_schema_record(with_newer_record):
    from s09_jsonl_transcript.code import MemorySelectionError

    with pytest.raises(MemorySelectionError, match="newer schema_version"):
        DurableTranscript(with_newer_record).select_memory_candidate("transcript:s:2", "progress", "why")


@pytest.mark.parametrize("damage, reason", [
    ({"session_id": "other"}, "expected session_id 's'"),
    ({"sequence": 7}, "expected sequence 2, got 7"),
    ({"event_id": "transcript:s:9"}, "expected event_id 'transcript:s:2'"),
    ({"type": 5}, "no string 'type'"),
])
def test_a_newer_schema_record_with_a_wrong_envelope_still_fails_closed(tmp_path, damage, reason):
    path = tmp_path / "s.jsonl"
    _write_records(path, [_record(1, type="message", role="user", content="hi"),
                          {**_record(2, version=SCHEMA_VERSION + 1, type="new"), **damage},
                          _record(3, type="message", role="user", content="after")])
    with pytest.raises(TranscriptCorruptionError, match=reason):
        DurableTranscript(path).read_events()
    with pytest.raises(TranscriptCorruptionError, match=reason):
        DurableTranscript(path).replay_state()


# --------------------------------------------------------------------------- 3. the order of the envelope checks


def test_a_wrong_sequence_is_named_before_a_missing_schema_version(tmp_path):
    path = tmp_path / "gap.jsonl"
    path.write_text(json.dumps({"sequence": 2, "type": "message"}) + "\n")
    with pytest.raises(TranscriptCorruptionError, match="expected sequence 1"):
        DurableTranscript(path).replay_state()
    with pytest.raises(TranscriptCorruptionError, match="expected sequence 1"):
        DurableTranscript(path).read_events()


def test_the_envelope_is_checked_sequence_session_event_id_then_schema_version(tmp_path):
    path = tmp_path / "s.jsonl"
    everything_wrong = {"schema_version": "x", "sequence": 1, "event_id": "nope", "session_id": "other", "type": "m"}
    expected_reasons = ["expected session_id", "expected event_id", "bad schema_version"]
    record = dict(everything_wrong)
    for reason, fix in zip(expected_reasons, [{"session_id": "s"}, {"event_id": "transcript:s:1"}, {}]):
        _write_records(path, [record])
        with pytest.raises(TranscriptCorruptionError, match=reason):
            DurableTranscript(path).read_events()
        record.update(fix)


# --------------------------------------------------------------------------- 4. batches are all or nothing


class CrashMidWrite(Exception):
    """Stands for the death of the process in the middle of a write (a staged crash point)."""


class CutAfter(OsFileIO):
    """File I/O whose next write, once armed, reaches the disk only up to `keep` bytes, then fails."""

    def __init__(self):
        self.keep, self.dead = None, False

    def write(self, fd, data):
        if self.keep is None:
            return super().write(fd, data)
        keep, self.keep = self.keep, None
        super().write(fd, data[:keep(data)])
        self.dead = True
        raise CrashMidWrite  # the process dies here: its bytes stay on disk, the append never returns

    def truncate(self, fd, length):
        if self.dead:  # a dead process runs no cleanup: the failed append's cut-off never happens
            self.dead = False  # the next writer's repair does
            return
        super().truncate(fd, length)


def _torn_batch(path, keep, *, before=2, batch=4, integrity=False):
    """Append `before` single events, then a batch whose write is cut at keep(data) bytes."""
    file_io = CutAfter()
    transcript = DurableTranscript(path, clock=ticking_clock(), file_io=file_io, integrity=integrity)
    for i in range(before):
        transcript.append(message(f"single {i}"))
    file_io.keep = keep
    with pytest.raises(CrashMidWrite):
        transcript.append_batch(message(f"batch {i}") for i in range(batch))
    return transcript


def _after_two_records(data):
    return data.index(b"\n", data.index(b"\n") + 1) + 1  # two complete records of the batch, then nothing


@pytest.mark.parametrize("integrity", [False, True])
@pytest.mark.parametrize("keep", [
    _after_two_records,
    lambda data: _after_two_records(data) + 10,  # and a fragment of the third
    lambda data: len(data) - 2,  # every record, but the last one lost its closing brace and newline
])
def test_a_batch_torn_by_a_crash_reads_as_a_partial_tail(tmp_path, keep, integrity):
    path = tmp_path / "s.jsonl"
    _torn_batch(path, keep, integrity=integrity)
    reader = DurableTranscript(path, integrity=integrity)
    scanned = reader.scan()
    assert [e["content"] for e in scanned.events] == ["single 0", "single 1"]
    assert scanned.ignored_partial_tail and scanned.unfinished_batch
    assert reader.replay_state().total_events == 2 and reader.replay_state().ignored_partial_tail
    assert reader.recover()["total_events"] == 2


def test_a_retried_batch_is_written_once(tmp_path):
    path = tmp_path / "s.jsonl"
    transcript = _torn_batch(path, _after_two_records)
    transcript.append_batch(message(f"batch {i}") for i in range(4))  # the caller retries after the error
    transcript.close()
    contents = [e["content"] for e in DurableTranscript(path).read_events()]
    assert contents == ["single 0", "single 1", "batch 0", "batch 1", "batch 2", "batch 3"]


def test_the_next_writer_cuts_a_torn_batch_off(tmp_path):
    path = tmp_path / "s.jsonl"
    _torn_batch(path, _after_two_records).close()
    size_before = path.stat().st_size
    with DurableTranscript(path) as fresh:
        assert fresh.append(message("next"))["sequence"] == 3
    assert path.stat().st_size < size_before + 200
    assert [e["content"] for e in DurableTranscript(path).read_events()] == ["single 0", "single 1", "next"]


def test_a_complete_batch_whose_last_newline_was_lost_is_kept(tmp_path):
    path = tmp_path / "s.jsonl"
    _torn_batch(path, lambda data: len(data) - 1).close()  # only the final newline is missing
    assert len(DurableTranscript(path).read_events()) == 6
    with DurableTranscript(path) as fresh:
        assert fresh.append(message("next"))["sequence"] == 7


def test_a_batch_cut_short_in_the_middle_of_the_file_fails_closed(tmp_path):
    path = tmp_path / "s.jsonl"
    with DurableTranscript(path, clock=ticking_clock()) as transcript:
        transcript.append_batch(message(f"batch {i}") for i in range(4))
        transcript.append(message("after"))
    lines = path.read_bytes().splitlines(keepends=True)
    records = [json.loads(line) for line in lines]
    records[4]["sequence"], records[4]["event_id"] = 3, "transcript:s:3"  # records 3 and 4 of the batch gone
    _write_records(path, records[:2] + records[4:])
    with pytest.raises(TranscriptCorruptionError, match="batch ending at sequence 4 is cut off"):
        DurableTranscript(path).read_events()


def test_a_tail_read_that_starts_inside_a_long_torn_batch_gives_the_full_reads_answer(tmp_path):
    path = tmp_path / "s.jsonl"
    _torn_batch(path, lambda data: len(data) // 2, before=3, batch=3000)
    state = DurableTranscript(path).replay_state(max_items=2)
    assert (state.total_events, state.ignored_partial_tail) == (3, True)
    assert state.messages == [{"role": "user", "content": "single 1"}, {"role": "user", "content": "single 2"}]


def test_only_batches_of_two_or_more_carry_the_batch_field(tmp_path):
    with DurableTranscript(tmp_path / "s.jsonl") as transcript:
        single = transcript.append(message("one"))
        [alone] = transcript.append_batch([message("alone")])
        pair = transcript.append_batch([message("a"), message("b")])
    assert BATCH_END_FIELD not in single and BATCH_END_FIELD not in alone
    assert [record[BATCH_END_FIELD] for record in pair] == [4, 4]


@pytest.mark.parametrize("value", [0, 1, "5", None])
def test_a_bad_batch_field_fails_closed(tmp_path, value):
    path = tmp_path / "s.jsonl"
    _write_records(path, [_record(1, type="reasoning", content="x"),
                          _record(2, type="reasoning", content="y", **{BATCH_END_FIELD: value})])
    with pytest.raises(TranscriptCorruptionError, match=f"bad {BATCH_END_FIELD}"):
        DurableTranscript(path).read_events()


def test_a_caller_cannot_set_the_batch_field(tmp_path):
    from s09_jsonl_transcript.code import TranscriptValidationError

    with pytest.raises(TranscriptValidationError, match="fields append writes itself: batch_end"):
        DurableTranscript(tmp_path / "s.jsonl").append({**message("x"), BATCH_END_FIELD: 9})


# --------------------------------------------------------------------------- 5. new sessions are created exclusively


def test_create_refuses_an_existing_session_and_leaves_it_alone(tmp_path):
    path = tmp_path / "s.jsonl"
    with DurableTranscript.create(path) as transcript:
        transcript.append(message("mine"))
    before = path.read_bytes()
    with pytest.raises(FileExistsError):
        DurableTranscript.create(path)
    assert path.read_bytes() == before


def test_create_holds_the_writer_from_the_start(tmp_path):
    path = tmp_path / "s.jsonl"
    created = DurableTranscript.create(path)
    with pytest.raises(TranscriptLockedError):
        DurableTranscript(path).append(message("intruder"))
    assert created.append(message("owner"))["sequence"] == 1
    created.close()


def test_for_session_new_creates_exclusively(tmp_path):
    with DurableTranscript.for_session(tmp_path, "w", "s1", new=True) as transcript:
        transcript.append(message("hello"))
    with pytest.raises(FileExistsError):
        DurableTranscript.for_session(tmp_path, "w", "s1", new=True)
    assert DurableTranscript.for_session(tmp_path, "w", "s1").replay() == [{"role": "user", "content": "hello"}]


def test_racing_creates_of_one_new_session_have_one_winner(tmp_path):
    path, won, lost = tmp_path / "race.jsonl", [], []

    def body(number):
        try:
            won.append(DurableTranscript.create(path))
        except FileExistsError:
            lost.append(number)

    assert _run_threads(8, body) == []
    assert (len(won), len(lost)) == (1, 7)
    won[0].close()


# --------------------------------------------------------------------------- 6. the lesson's call shape


def test_select_memory_candidate_takes_the_lessons_positional_call(tmp_path):
    with DurableTranscript(tmp_path / "session_abc123.jsonl") as transcript:
        transcript.append(message("We will use SQLite WAL."))
    candidate = transcript.select_memory_candidate(
        "transcript:session_abc123:1", "The project uses SQLite WAL.", "A decision the user confirmed.")
    assert (candidate.sequence, candidate.summary) == (1, "The project uses SQLite WAL.")
    assert candidate.selection_reason == "A decision the user confirmed."


# --------------------------------------------------------------------------- code.py on its own


@pytest.fixture(scope="module")
def standalone():
    """code.py loaded from its path under another module name, as the course's own tests load it."""
    name = "s09_code_loaded_from_its_path"
    spec = importlib.util.spec_from_file_location(name, CODE_PY)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(name, None)


def test_code_py_works_when_loaded_from_its_path(standalone, tmp_path):
    transcript = standalone.JSONLTranscript(tmp_path / "session-42.jsonl")
    transcript.append({"type": "message", "role": "user", "content": "Use SQLite WAL."})
    transcript.append({"type": "reasoning", "content": "maybe"})
    transcript.append({"type": "ai-title", "title": "WAL"})
    transcript.append({"type": "message", "role": "assistant", "content": "ok"})
    fresh = standalone.JSONLTranscript(transcript.path)
    assert fresh.replay_state().next_sequence == 5
    assert [e["sequence"] for e in fresh._read_all_events()] == [1, 2, 3, 4]  # the lesson's name still works
    candidate = fresh.select_memory_candidate("transcript:session-42:1", "WAL", "decided")
    assert candidate.source_metadata()["source_id"] == "transcript:session-42:1"
    with pytest.raises(standalone.MemorySelectionError, match="not eligible"):
        fresh.select_memory_candidate("transcript:session-42:2", "x", "y")
    gap = tmp_path / "gap.jsonl"
    gap.write_text(json.dumps({"sequence": 2, "type": "message"}) + "\n")
    with pytest.raises(standalone.TranscriptCorruptionError, match="expected sequence 1"):
        standalone.JSONLTranscript(gap).replay_state()


def test_the_records_of_one_batch_share_the_time_of_their_one_commit(tmp_path):
    with DurableTranscript(tmp_path / "s.jsonl", clock=ticking_clock()) as transcript:
        first = transcript.append(message("alone"))
        batch = transcript.append_batch(message(str(n)) for n in range(3))
        after = transcript.append(message("after"))
    stamps = [first["recorded_at"]] + [record["recorded_at"] for record in batch] + [after["recorded_at"]]
    assert stamps == ["2026-01-05T09:00:00+00:00"] + ["2026-01-05T09:00:01+00:00"] * 3 + ["2026-01-05T09:00:02+00:00"]
