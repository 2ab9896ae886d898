"""Appending: the envelope, copy semantics, validation before a byte is written, durability calls."""

import errno
import json
import os
import stat
from datetime import datetime, timedelta, timezone

import pytest
from read_counting import ReadsEverything, counted_reads

from s09_jsonl_transcript.code import SCHEMA_VERSION, TranscriptValidationError, ticking_clock
from s09_jsonl_transcript.lab import RESERVED_FIELDS, DurableTranscript, OsFileIO
from s09_jsonl_transcript.lab import transcript as lab_transcript  # the module whose readers open files

USER = {"type": "message", "role": "user", "content": "hello"}


class RecordingIO(OsFileIO):
    """Counts the disk-changing calls a transcript makes."""

    def __init__(self):
        self.calls = []

    def write(self, fd, data):
        self.calls.append(("write", data))
        return super().write(fd, data)

    def fsync(self, fd):
        self.calls.append(("fsync", None))
        super().fsync(fd)

    def fsync_dir(self, path):
        self.calls.append(("fsync_dir", None))
        super().fsync_dir(path)

    def truncate(self, fd, length):
        self.calls.append(("truncate", length))
        super().truncate(fd, length)

    def names(self):
        return [name for name, _ in self.calls]


def test_append_returns_the_envelope_it_wrote(transcript):
    record = transcript.append(USER)
    assert record == {
        "schema_version": SCHEMA_VERSION,
        "sequence": 1,
        "event_id": "transcript:session:1",
        "session_id": "session",
        "recorded_at": "2026-01-05T09:00:00+00:00",
        **USER,
    }
    assert json.loads(transcript.path.read_text(encoding="utf-8")) == record


def test_recorded_at_is_utc_even_from_another_timezone(tmp_path):
    paris = timezone(timedelta(hours=1))
    transcript = DurableTranscript(tmp_path / "s.jsonl", clock=lambda: datetime(2026, 3, 1, 10, 0, tzinfo=paris))
    assert transcript.append(USER)["recorded_at"] == "2026-03-01T09:00:00+00:00"


def test_a_naive_clock_is_refused_before_writing(tmp_path):
    transcript = DurableTranscript(tmp_path / "s.jsonl", clock=lambda: datetime(2026, 3, 1))
    with pytest.raises(TranscriptValidationError, match="aware"):
        transcript.append(USER)
    assert transcript.path.read_bytes() == b""


def test_the_callers_event_is_never_mutated_or_aliased(transcript):
    event = {"type": "function_call", "callId": "c1", "name": "grep", "arguments": {"words": ["a", "b"]}}
    snapshot = json.loads(json.dumps(event))
    record = transcript.append(event)
    assert event == snapshot
    event["arguments"]["words"].append("c")
    assert record["arguments"]["words"] == ["a", "b"]
    record["arguments"]["words"].append("z")
    assert transcript.read_events()[0]["arguments"]["words"] == ["a", "b"]


def test_one_line_of_utf8_json_per_event(transcript):
    transcript.append({"type": "message", "role": "user", "content": "café ☕ 日本"})
    raw = transcript.path.read_bytes()
    assert raw.count(b"\n") == 1 and raw.endswith(b"\n")
    assert "café ☕ 日本".encode("utf-8") in raw  # ensure_ascii=False: readable, not \u escapes


@pytest.mark.parametrize("field", sorted(RESERVED_FIELDS | {"chain"}))
def test_spoofed_envelope_fields_are_refused(transcript, field):
    with pytest.raises(TranscriptValidationError, match="fields append writes itself"):
        transcript.append({**USER, field: 1})
    assert not transcript.path.exists()


@pytest.mark.parametrize(
    "event, message",
    [
        (["type", "message"], "must be a dict"),
        ({"role": "user"}, "'type'"),
        ({"type": 7}, "'type'"),
        ({"type": ""}, "'type'"),
        ({"type": "x", "value": float("nan")}, "exact JSON"),
        ({"type": "x", "value": float("inf")}, "exact JSON"),
        ({"type": "x", "value": [float("-inf")]}, "exact JSON"),
        ({"type": "x", "value": {1: "one"}}, "keys must be strings"),
        ({"type": "x", "value": (1, 2)}, "tuple"),
        ({"type": "x", "value": {1, 2}}, "set"),
        ({"type": "x", "value": b"bytes"}, "bytes"),
        ({"type": "x", "value": object()}, "object"),
        ({"type": "x", "value": "\ud800"}, "surrogates"),
        ({"type": "message", "content": "no role"}, "role"),
        ({"type": "message", "role": "user"}, "content"),
        ({"type": "function_call", "name": "ls"}, "callId"),
        ({"type": "function_call_result", "output": "x"}, "callId"),
        ({"type": "ai-title", "title": None}, "title"),
    ],
)
def test_bad_events_are_refused_before_a_byte_is_written(transcript, event, message):
    transcript.append(USER)
    before = transcript.path.read_bytes()
    with pytest.raises(TranscriptValidationError, match=message):
        transcript.append(event)
    assert transcript.path.read_bytes() == before


def test_nesting_deeper_than_the_reader_can_parse_is_refused(transcript):
    deep = []
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(TranscriptValidationError, match="nested deeper"):
        transcript.append({"type": "x", "value": deep})


def test_nan_is_refused_with_the_file_unchanged(bug_fix):
    before = bug_fix.path.read_bytes()
    reopened = DurableTranscript(bug_fix.path)
    with pytest.raises(TranscriptValidationError):
        reopened.append({"type": "message", "role": "user", "content": float("nan")})
    assert bug_fix.path.read_bytes() == before


def test_a_record_over_the_size_limit_is_refused(tmp_path):
    transcript = DurableTranscript(tmp_path / "s.jsonl", max_record_bytes=1024)
    transcript.append({"type": "x", "text": "a" * 500})
    with pytest.raises(TranscriptValidationError, match="limit is 1024"):
        transcript.append({"type": "x", "text": "a" * 1024})
    assert len(transcript.read_events()) == 1


def test_sequence_continues_in_a_fresh_instance(transcript):
    transcript.append(USER)
    transcript.append(USER)
    transcript.close()
    with DurableTranscript(transcript.path) as fresh:
        assert fresh.append(USER)["sequence"] == 3
    assert [e["sequence"] for e in DurableTranscript(transcript.path).read_events()] == [1, 2, 3]


def test_append_batch_validates_everything_first(transcript):
    transcript.append(USER)
    before = transcript.path.read_bytes()
    with pytest.raises(TranscriptValidationError):
        transcript.append_batch([USER, USER, {"type": "x", "bad": float("nan")}])
    assert transcript.path.read_bytes() == before
    assert transcript.append_batch([]) == []


def test_append_batch_is_one_write_and_one_fsync(tmp_path):
    recorder = RecordingIO()
    transcript = DurableTranscript(tmp_path / "s.jsonl", file_io=recorder)
    transcript.append(USER)
    recorder.calls.clear()
    records = transcript.append_batch([USER] * 100)
    assert [r["sequence"] for r in records] == list(range(2, 102))
    assert recorder.names() == ["write", "fsync"]
    assert recorder.calls[0][1].count(b"\n") == 100


def test_each_append_is_one_write_then_one_fsync(tmp_path):
    recorder = RecordingIO()
    transcript = DurableTranscript(tmp_path / "new" / "s.jsonl", file_io=recorder)
    transcript.append(USER)
    assert recorder.names() == ["fsync_dir", "write", "fsync"]  # a new file: its folder entry too
    recorder.calls.clear()
    transcript.append(USER)
    assert recorder.names() == ["write", "fsync"]


def test_new_files_are_private_and_parents_are_created(tmp_path):
    transcript = DurableTranscript(tmp_path / "a" / "b" / "s.jsonl")
    assert not transcript.path.parent.exists()  # a reader creates nothing; the first append makes the folders
    transcript.append(USER)
    assert transcript.path.parent.is_dir()
    assert stat.S_IMODE(os.stat(transcript.path).st_mode) == 0o600
    assert transcript.filepath == str(transcript.path) and transcript.session_id == "s"


def test_a_short_write_says_the_disk_is_full_and_leaves_nothing_behind(tmp_path):
    class ShortWrites(OsFileIO):
        short = False

        def write(self, fd, data):
            return super().write(fd, data[: len(data) // 2] if self.short else data)

    io = ShortWrites()
    transcript = DurableTranscript(tmp_path / "s.jsonl", file_io=io)
    transcript.append(USER)
    io.short = True
    with pytest.raises(OSError, match="the disk is full") as refused:
        transcript.append({"type": "message", "role": "user", "content": "lost"})
    assert refused.value.errno == errno.ENOSPC
    assert transcript.path.read_bytes().count(b"\n") == 1 and transcript.path.read_bytes().endswith(b"\n")
    io.short = False
    assert transcript.append(USER)["sequence"] == 2  # the half record was cut off, never glued onto
    assert [e["content"] for e in transcript.read_events()] == ["hello", "hello"]


def test_appends_after_the_first_never_read_the_file(transcript):
    transcript.append(USER)
    with counted_reads(lab_transcript) as reads:
        for _ in range(5):
            transcript.append(USER)
        assert reads.opened == 0
        assert len(transcript.read_events()) == 6  # the count sees the lab's reads: it opens here


def _bulk_transcript(path, count):
    """Write count valid records quickly (no fsync per line) for size-independence tests."""
    clock = ticking_clock()
    with open(path, "wb") as file:
        for sequence in range(1, count + 1):
            record = {"schema_version": 1, "sequence": sequence, "event_id": f"transcript:{path.stem}:{sequence}",
                      "session_id": path.stem, "recorded_at": clock().isoformat(),
                      "type": "message", "role": "user", "content": f"message number {sequence}"}
            file.write(json.dumps(record, separators=(",", ":")).encode() + b"\n")


def _tail_read_costs(path, cls) -> tuple[int, int]:
    """Bytes read by the first append to path, and then by replay(10), by a transcript of class cls."""
    events = path.read_bytes().count(b"\n")
    with counted_reads(lab_transcript) as reads:
        transcript = cls(path)
        assert transcript.append(USER)["sequence"] == events + 1
        first_append = reads.total
        reads.clear()
        assert len(transcript.replay(10)) == 10
        replay = reads.total
    transcript.close()
    return first_append, replay


TAIL_BUDGET = 128 * 1024  # two blocks: what a tail read may read, whatever the file's length


def test_the_first_append_to_a_200000_event_transcript_reads_only_its_tail(tmp_path):
    path = tmp_path / "big.jsonl"
    _bulk_transcript(path, 200_000)
    assert path.stat().st_size > 15_000_000
    first_append, replay = _tail_read_costs(path, DurableTranscript)
    assert first_append <= TAIL_BUDGET and replay <= TAIL_BUDGET


def test_the_tail_budget_refuses_a_reader_of_the_whole_file(tmp_path):
    """The test above, against a reader that reads everything (a smaller file: the budget does not grow)."""
    path = tmp_path / "big.jsonl"
    _bulk_transcript(path, 20_000)
    first_append, replay = _tail_read_costs(path, ReadsEverything)
    assert first_append > TAIL_BUDGET and replay > TAIL_BUDGET


def test_a_read_count_in_the_wrong_module_fails_instead_of_counting_nothing(transcript):
    """The three read-cost tests once shadowed code.open while the reads were the lab's: every budget held."""
    from s09_jsonl_transcript import code

    transcript.append(USER)
    with pytest.raises(AssertionError, match="measured nothing"):
        with counted_reads(code):
            assert len(transcript.replay(10)) == 1
    assert "open" not in vars(code) and "open" not in vars(lab_transcript)  # both modules are left as they were
