"""Bad input is refused with the lab's own error and writes nothing (issue 43): the lab's precise refusals,
session names and paths. (The lesson refuses bad input with its own error too: tests/test_lesson_promises.py.)"""

from __future__ import annotations

import pytest
from fault_injection import message

from s09_jsonl_transcript.code import JSONLTranscript, TranscriptValidationError, ticking_clock
from s09_jsonl_transcript.lab import DurableTranscript

HUGE = 7 * 10**4300  # 4,301 digits: json.loads refuses to read it back
LONGEST = 10**4300 - 1  # 4,300 digits: read back exactly


@pytest.fixture
def cls():
    """The class these refusals are the promise of: the lab's."""
    return DurableTranscript


HUGE_PLACES = {
    "content": message(HUGE),
    "negative": message(-HUGE),
    "in a list": message(["a", [1, HUGE]]),
    "in a dict": {"type": "function_call", "callId": "c1", "name": "sum", "arguments": {"n": {"deep": HUGE}}},
    "an IntEnum-like subclass": message(type("Big", (int,), {})(HUGE)),
}


@pytest.mark.parametrize("place", HUGE_PLACES)
def test_an_integer_json_cannot_read_back_is_refused_and_nothing_is_written(cls, tmp_path, place):
    path = tmp_path / "s.jsonl"
    with pytest.raises(TranscriptValidationError, match="4300 digits"):
        cls(path).append(HUGE_PLACES[place])
    assert not path.exists()  # not even the file: refused before the writer opened
    with cls(path, clock=ticking_clock()) as transcript:
        transcript.append(message("one"))
        before = path.read_bytes()
        with pytest.raises(TranscriptValidationError):
            transcript.append(HUGE_PLACES[place])
        assert path.read_bytes() == before
        assert transcript.append(message("two"))["sequence"] == 2


def test_a_batch_with_one_huge_integer_writes_none_of_its_events(tmp_path):
    with DurableTranscript(tmp_path / "s.jsonl") as transcript:
        with pytest.raises(TranscriptValidationError, match="4300 digits"):
            transcript.append_batch([message("a"), message(HUGE), message("c")])
        assert not transcript.path.exists()


def test_an_integer_of_4300_digits_is_written_and_read_back_exactly(cls, tmp_path):
    with cls(tmp_path / "s.jsonl") as transcript:
        transcript.append(message(LONGEST))
        transcript.append(message(-LONGEST))
    assert [event["content"] for event in cls(tmp_path / "s.jsonl").read_events()] == [LONGEST, -LONGEST]


@pytest.mark.parametrize("cls", [JSONLTranscript, DurableTranscript], ids=["lesson", "lab"])
@pytest.mark.parametrize("field", ["batch_end", "chain", "sequence", "event_id"])
def test_every_field_the_format_gives_a_meaning_is_reserved_in_both_classes(cls, tmp_path, field):
    """The lesson's class once took batch_end from a caller; the lab's next writer then cut an
    acknowledged record as an unfinished batch. Both classes write one format: both refuse them."""
    path = tmp_path / "s.jsonl"
    with pytest.raises(TranscriptValidationError, match=f"reserved envelope fields append writes itself: {field}"):
        cls(path).append({**message("x"), field: 3})
    assert not path.exists()


def test_a_lesson_file_is_read_by_the_lab_as_the_lesson_wrote_it(tmp_path):
    path = tmp_path / "s.jsonl"
    with JSONLTranscript(path) as lesson:
        for n in range(3):
            lesson.append(message(str(n)))
    with DurableTranscript(path) as lab:
        lab.append(message("3"))
    assert [event["content"] for event in JSONLTranscript(path).read_events()] == ["0", "1", "2", "3"]


@pytest.mark.parametrize("workspace, session_id", [("ws", "a\0b"), ("w\0s", "s"), ("ws", "你" * 84),
                                                   ("ws", "\udc80\ud800"), ("x" * 256, "s")])
def test_for_session_refuses_names_no_file_system_takes(cls, tmp_path, workspace, session_id):
    with pytest.raises(TranscriptValidationError):
        cls.for_session(tmp_path, workspace, session_id)
    assert list(tmp_path.iterdir()) == []
