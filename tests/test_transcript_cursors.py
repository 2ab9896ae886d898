"""read_recent: the newest records, and older pages behind a byte cursor; acquire_writer for read-check-append."""

import json
import threading

import pytest
from read_counting import ReadsEverything, counted_reads

from s09_jsonl_transcript.code import TranscriptCorruptionError, TranscriptLockedError, ticking_clock
from s09_jsonl_transcript.lab import DurableTranscript
from s09_jsonl_transcript.lab import transcript as lab_transcript  # the module whose readers open files


def message(n):
    return {"type": "message", "role": "user", "content": f"message {n}"}


@pytest.fixture
def ten(tmp_path):
    """Ten single appends, then a batch of three (sequences 11-13), then two more singles (14, 15)."""
    with DurableTranscript(tmp_path / "s.jsonl", clock=ticking_clock()) as transcript:
        for n in range(1, 11):
            transcript.append(message(n))
        transcript.append_batch(message(n) for n in (11, 12, 13))
        transcript.append(message(14))
        transcript.append(message(15))
    return transcript


def line_starts(path):
    data, starts, offset = path.read_bytes(), [], 0
    for line in data.split(b"\n")[:-1]:
        starts.append(offset)
        offset += len(line) + 1
    return starts


def test_read_recent_returns_the_newest_records_and_where_they_start(ten):
    recent = ten.read_recent(3)
    assert [e["sequence"] for e in recent.events] == [13, 14, 15]
    assert recent.offsets == line_starts(ten.path)[12:15]


def test_paging_back_visits_every_record_once_in_order(ten):
    pages, before = [], None
    while True:
        page = ten.read_recent(4, before=before)
        if not page.events:
            break
        pages.append([e["sequence"] for e in page.events])
        before = page.offsets[0]
    assert pages == [[12, 13, 14, 15], [8, 9, 10, 11], [4, 5, 6, 7], [1, 2, 3]]


def test_a_page_may_end_inside_a_batch_that_finished_later(ten):
    starts = line_starts(ten.path)
    page = ten.read_recent(2, before=starts[12])  # in front of sequence 13, the batch's last record
    assert [e["sequence"] for e in page.events] == [11, 12]
    assert not page.ignored_partial_tail


def test_read_recent_leaves_out_a_partial_tail(ten):
    with open(ten.path, "ab") as file:
        file.write(b'{"schema_version":1,"seq')
    recent = ten.read_recent(2)
    assert [e["sequence"] for e in recent.events] == [14, 15] and recent.ignored_partial_tail


def test_read_recent_leaves_out_an_unfinished_batch(tmp_path):
    path = tmp_path / "s.jsonl"
    with DurableTranscript(path, clock=ticking_clock()) as transcript:
        transcript.append(message(1))
        transcript.append_batch(message(n) for n in (2, 3, 4))
    lines = path.read_bytes().split(b"\n")
    path.write_bytes(b"\n".join(lines[:3]) + b"\n")  # the batch's last record never reached the disk
    recent = DurableTranscript(path).read_recent(5)
    assert [e["sequence"] for e in recent.events] == [1] and recent.unfinished_batch


def test_read_recent_fails_closed_on_damage_it_reads(ten):
    lines = ten.path.read_bytes().split(b"\n")
    lines[13] = b"{broken}"
    ten.path.write_bytes(b"\n".join(lines))
    with pytest.raises(TranscriptCorruptionError, match="invalid complete JSON"):
        ten.read_recent(3)


@pytest.mark.parametrize("count", [-1, 1.5, True])
def test_read_recent_refuses_a_bad_count(ten, count):
    with pytest.raises(ValueError, match="whole number"):
        ten.read_recent(count)


def test_read_recent_of_nothing_reads_nothing(ten):
    assert ten.read_recent(0).events == []
    assert ten.read_recent(3, before=0).events == []


def _deep_page_cost(tmp_path, events: int, cls) -> tuple[int, int]:
    """Bytes read by a page of 100 records half way back in a transcript of `events`, and the bytes it returns."""
    path = tmp_path / "long.jsonl"
    with DurableTranscript(path, clock=ticking_clock()) as transcript:
        for first in range(0, events, 1000):
            transcript.append_batch({"type": "reasoning", "content": f"n{n}"} for n in range(first, first + 1000))
    middle = DurableTranscript(path).read_recent(events // 2).offsets[0]  # a cursor half way back
    with counted_reads(lab_transcript) as reads:
        page = cls(path).read_recent(100, before=middle)
    assert [e["sequence"] for e in page.events] == list(range(events // 2 - 99, events // 2 + 1))
    return reads.total, sum(len(json.dumps(e)) for e in page.events)


PAGE_SLACK = 2 * 64 * 1024  # a page may read two blocks more than it returns


def test_a_page_deep_in_a_long_transcript_reads_only_about_what_it_returns(tmp_path):
    read, returned = _deep_page_cost(tmp_path, 100_000, DurableTranscript)
    assert read <= returned + PAGE_SLACK, (read, returned)
    assert (tmp_path / "long.jsonl").stat().st_size > 100 * read


def test_the_page_budget_refuses_a_reader_of_the_whole_file(tmp_path):
    read, returned = _deep_page_cost(tmp_path, 20_000, ReadsEverything)
    assert read > returned + PAGE_SLACK


def test_acquire_writer_takes_the_single_writer_lock_before_any_append(tmp_path):
    owner = DurableTranscript(tmp_path / "s.jsonl")
    owner.acquire_writer()
    with pytest.raises(TranscriptLockedError):
        DurableTranscript(tmp_path / "s.jsonl").acquire_writer()
    owner.close()


def test_read_check_append_under_the_lock_has_one_winner(tmp_path):
    """Eight threads each try to close the one open turn; the check and the append are one step."""
    transcript = DurableTranscript(tmp_path / "s.jsonl")
    transcript.append({"type": "turn_start", "turn_number": 1})
    winners, start = [], threading.Barrier(8)

    def close_turn(name):
        start.wait()
        with transcript.lock:
            transcript.acquire_writer()
            last = transcript.read_recent(1).events[-1]
            if last["type"] == "turn_start":  # the rule: only an open turn can be closed
                winners.append(name)
                transcript.append({"type": "turn_end", "turn_number": 1, "closed_by": name})

    threads = [threading.Thread(target=close_turn, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    transcript.close()
    events = DurableTranscript(tmp_path / "s.jsonl").read_events()
    assert len(winners) == 1 and [e["type"] for e in events] == ["turn_start", "turn_end"]
