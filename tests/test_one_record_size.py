"""One record-size rule (issue 53): a file any class of the kit writes, every class of the kit reads the same way.

The lesson defines MAX_RECORD_BYTES once (code.py): a line of at most that many bytes, its newline included.
A record of exactly that size, written by the lesson's class or by the lab's (alone or in a batch), first,
in the middle or last in the file, is read by every reader the kit has: the lesson's reading rule, the
lab's full scan, its tail read, its writer's open, recover() on each fast path and on the careful one, the
live log, `inspect` and the importers' format detection. A byte more is refused by every writer, before
anything is written.
"""

from __future__ import annotations

import pytest

from s09_jsonl_transcript import code
from s09_jsonl_transcript.cli import inspect_file
from s09_jsonl_transcript.code import MAX_RECORD_BYTES, JSONLTranscript, TranscriptValidationError, ticking_clock
from s09_jsonl_transcript.importers import LESSON, detect_format
from s09_jsonl_transcript.lab import DurableTranscript, fast
from s09_jsonl_transcript.production.live import SessionEventLog

pytestmark = pytest.mark.slow  # several 8 MiB records, each read by every reader


def _longest(sequence: int, tick: int | None = None, **batch_end) -> dict:
    """A message whose record at sequence, stamped with the ticking clock's tick (sequence by default) and
    carrying batch_end if given, is exactly MAX_RECORD_BYTES with its newline."""
    clock = ticking_clock()
    for _ in range((tick or sequence) - 1):
        clock()
    empty = code.encode({**code.envelope("s", sequence, clock()), **batch_end, "type": "message", "role": "user",
                         "content": ""})
    return {"type": "message", "role": "user", "content": "x" * (MAX_RECORD_BYTES - len(empty))}


def _by_the_lesson(path, events: list) -> None:
    with JSONLTranscript(path, clock=ticking_clock()) as transcript:
        for event in events:
            transcript.append(event)


def _by_the_lab(path, events: list, batch: bool = False) -> None:
    with DurableTranscript(path, clock=ticking_clock()) as transcript:
        if batch:
            transcript.append_batch(events)
        else:
            for event in events:
                transcript.append(event)


def _small(text: str) -> dict:
    return {"type": "message", "role": "user", "content": text}


def _every_reader(path) -> dict:
    """What each of the kit's readers makes of path: the number of events it reads (or its verdict)."""
    events = len(code.read_transcript(path)[0])
    lab = DurableTranscript(path)
    answers = {"lesson read_transcript": events, "lab scan": len(lab.scan().events),
               "lab read_recent(2)": lab.read_recent(2).last_sequence,
               "lab replay_state": lab.replay_state().total_events}
    for decoder in fast.DECODERS:
        if decoder == "msgspec" and fast.msgspec is None:
            continue
        with fast.decoding_with(decoder):
            answers[f"recover, fast path, {decoder}"] = DurableTranscript(path).recover()["total_events"]
    careful = DurableTranscript(path)
    careful.fast_paths = False
    answers["recover, careful path"] = careful.recover()["total_events"]
    with SessionEventLog.open(path) as log:
        answers["live log"] = log.last_sequence
    kind, report = inspect_file(path)
    answers["inspect"] = report["events"] if kind == "transcript" and report["corruption"] is None else report
    answers["detect_format"] = events if detect_format(path) == LESSON else detect_format(path)
    with DurableTranscript(path, clock=ticking_clock()) as writer:  # the lab writer's open reads the end
        writer.acquire_writer()
        answers["lab writer's open"] = writer.next_sequence - 1
    return answers


WRITES = {
    "the lesson, the longest record last": lambda path: _by_the_lesson(path, [_small("a"), _longest(2)]),
    "the lesson, the longest record first": lambda path: _by_the_lesson(path, [_longest(1), _small("b")]),
    "the lab, the longest record in the middle": lambda path: _by_the_lab(path, [_small("a"), _longest(2),
                                                                                 _small("c")]),
    "the lab, in a batch": lambda path: _by_the_lab(path, [_small("a"), _longest(2, 1, batch_end=2)], batch=True),
}


@pytest.mark.parametrize("write", WRITES)
def test_every_reader_reads_a_record_of_the_longest_size_every_writer_writes(tmp_path, write):
    path = tmp_path / "s.jsonl"
    WRITES[write](path)
    assert max(map(len, path.read_bytes().splitlines(keepends=True))) == MAX_RECORD_BYTES
    answers = _every_reader(path)
    expected = path.read_bytes().count(b"\n")
    assert answers == dict.fromkeys(answers, expected), answers


def test_every_writer_refuses_a_byte_more_and_writes_nothing(tmp_path):
    too_long = dict(_longest(1), content=_longest(1)["content"] + "x")
    refusals = {}
    for name, write in {"lesson": lambda path: _by_the_lesson(path, [too_long]),
                        "lab": lambda path: _by_the_lab(path, [too_long]),
                        "lab batch": lambda path: _by_the_lab(path, [_small("a"), too_long], batch=True)}.items():
        path = tmp_path / f"{name.replace(' ', '-')}.jsonl"
        with pytest.raises(TranscriptValidationError, match=str(MAX_RECORD_BYTES)):
            write(path)
        refusals[name] = path.read_bytes() if path.exists() else b""
    with SessionEventLog.open(tmp_path / "live.jsonl") as log:
        with pytest.raises(TranscriptValidationError, match=str(MAX_RECORD_BYTES)):
            log.commit(too_long)
        assert log.last_sequence == 0
    assert refusals == dict.fromkeys(refusals, b"") and (tmp_path / "live.jsonl").read_bytes() == b""
