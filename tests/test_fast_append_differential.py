"""The fast write path (fast.plain_payload, encode_record(floats=False), utc_stamp) against the careful one.

The careful path (fast_paths = False: the lab's checked_event, then the lab's field check, then
encode_record's float check) defines every verdict. For every event, append and append_batch on
a transcript with the fast path give the same answer as on one without: the same record, or the
same exception and message, and the same bytes on disk. Whenever plain_payload accepts an event,
its copy is the careful copy. Events: every JSON type, floats, tuples, sets, subclasses (str and
int Enums, a dict subclass), keys that are not strings, nesting at the lesson's limit, envelope
and lab fields, missing fields, lone surrogates, big integers. The last tests break the fast path
on purpose and check that this file notices.
"""

import enum
import errno
import tempfile
from collections import OrderedDict
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from broken_guards import broken
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from s09_jsonl_transcript.code import (
    TYPE_FUNCTION_CALL,
    TYPE_MESSAGE,
    TranscriptValidationError,
    ticking_clock,
)
from s09_jsonl_transcript.lab import MAX_NESTING, DurableTranscript, OsFileIO, checked_event, fast

AVAILABLE = [name for name in fast.DECODERS if name == "stdlib" or fast.msgspec is not None]
checks = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class Role(str, enum.Enum):
    USER = "user"


class Count(enum.IntEnum):
    ONE = 1


def nested(depth: int, leaf=1):
    """A value depth containers deep (alternating lists and dicts) around leaf."""
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


def typed(value):
    """value with every part's exact type beside it, so 1, 1.0 and True, or a str and a str Enum, differ."""
    if isinstance(value, dict):
        return (type(value), [(typed(key), typed(item)) for key, item in value.items()])
    if isinstance(value, (list, tuple)):
        return (type(value), [typed(item) for item in value])
    return (type(value), value)


def outcome(act):
    """What act returned (typed) or raised, comparable across the two paths."""
    try:
        return ("ok", typed(act()))
    except Exception as error:  # noqa: BLE001 - whatever it is, both paths must raise the same
        return ("error", type(error).__name__, str(error))


def disagreements(batches, decoder: str, **options) -> list[str]:
    """Where appending batches (a list of event lists; a one-event list is a single append) with the
    fast path differs from the careful path: each call's outcome, then the bytes on disk. options go
    to both transcripts (max_record_bytes, say)."""
    found = []
    with tempfile.TemporaryDirectory() as folder, fast.decoding_with(decoder):
        sides = []
        for fast_paths in (True, False):
            transcript = DurableTranscript(Path(folder) / f"{fast_paths}" / "diff.jsonl", clock=ticking_clock(),
                                           **options)
            transcript.fast_paths = fast_paths
            sides.append(transcript)
        for number, events in enumerate(batches):
            answers = [outcome(lambda t=t: t.append(events[0]) if len(events) == 1 else t.append_batch(events))
                       for t in sides]
            if answers[0] != answers[1]:
                found.append(f"call {number}: fast {answers[0]} != careful {answers[1]}")
        files = [t.path.read_bytes() if t.path.exists() else b"" for t in sides]
        for transcript in sides:
            transcript.close()
    if files[0] != files[1]:
        found.append(f"files differ: fast {files[0][:300]!r} careful {files[1][:300]!r}")
    return found


def copy_disagreement(event) -> str | None:
    """What is wrong when plain_payload accepts event: its copy must be checked_event's, and be a copy."""
    payload = fast.plain_payload(event)
    if payload is None:
        return None
    careful = outcome(lambda: checked_event(event))
    if careful != ("ok", typed(payload)):
        return f"plain {payload!r}, careful {careful}"
    if payload is event:
        return "plain_payload returned the caller's dict itself"
    return None


# --------------------------------------------------------------------------- the events

scalars = (st.none() | st.booleans() | st.integers() | st.integers(min_value=2**63, max_value=2**90)
           | st.floats() | st.text(max_size=12) | st.sampled_from([Role.USER, Count.ONE, "\ud800", 1.0, -0.0]))
values = st.recursive(
    scalars,
    lambda children: (st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3)
                      | st.lists(children, max_size=3).map(tuple)
                      | st.dictionaries(st.integers(0, 3) | st.text(max_size=2), children, max_size=2)
                      | st.dictionaries(st.text(max_size=4), children, max_size=2).map(OrderedDict)),
    max_leaves=10)
field_names = st.sampled_from(["role", "content", "callId", "name", "arguments", "output", "title", "files", "x",
                               "sequence", "recorded_at", "batch_end", "chain", "session_id"])
kinds = st.sampled_from([TYPE_MESSAGE, TYPE_FUNCTION_CALL, "function_call_result", "ai-title", "reasoning",
                         "file-history-snapshot", "custom", ""]) | st.none() | st.integers(0, 2)


@st.composite
def events(draw):
    event = draw(st.dictionaries(field_names, values, max_size=4))
    if draw(st.booleans()):
        event["type"] = draw(kinds)
    if draw(st.booleans()):  # most events are well formed, so plain_payload has work to do
        event = {"type": TYPE_MESSAGE, "role": "user", "content": draw(values)}
    return event


# --------------------------------------------------------------------------- the tests

@pytest.mark.parametrize("decoder", AVAILABLE)
@checks
@given(event=events())
def test_a_single_append_answers_and_writes_as_the_careful_path(decoder, event):
    assert disagreements([[event], [{"type": TYPE_MESSAGE, "role": "user", "content": "after"}]], decoder) == []


@pytest.mark.parametrize("decoder", AVAILABLE)
@checks
@given(batch=st.lists(events(), min_size=1, max_size=4))
def test_a_batch_answers_and_writes_as_the_careful_path(decoder, batch):
    assert disagreements([batch, batch[:1]], decoder) == []


@checks
@given(event=events())
def test_whatever_plain_payload_accepts_it_copies_as_checked_event_does(event):
    assert copy_disagreement(event) is None


EDGES = {
    "plain message": {"type": TYPE_MESSAGE, "role": "user", "content": "hello"},
    "nested call": {"type": TYPE_FUNCTION_CALL, "callId": "c1", "name": "grep", "arguments": {"p": ["a", 1, None]}},
    "a float": {"type": TYPE_MESSAGE, "role": "user", "content": 0.1},
    "an integer float": {"type": TYPE_MESSAGE, "role": "user", "content": 1e16},
    "a tuple": {"type": TYPE_MESSAGE, "role": "user", "content": ("a",)},
    "a str Enum": {"type": TYPE_MESSAGE, "role": Role.USER, "content": "x"},
    "an IntEnum": {"type": TYPE_MESSAGE, "role": "user", "content": Count.ONE},
    "a dict subclass": OrderedDict(type=TYPE_MESSAGE, role="user", content="x"),
    "an integer key": {"type": TYPE_MESSAGE, "role": "user", "content": {1: "one"}},
    "an envelope field": {"type": TYPE_MESSAGE, "role": "user", "content": "x", "sequence": 7},
    "batch_end": {"type": TYPE_MESSAGE, "role": "user", "content": "x", "batch_end": 3},
    "chain": {"type": TYPE_MESSAGE, "role": "user", "content": "x", "chain": "00"},
    "no role": {"type": TYPE_MESSAGE, "content": "x"},
    "no content": {"type": TYPE_MESSAGE, "role": "user"},
    "an empty type": {"type": "", "content": "x"},
    "no type": {"content": "x"},
    "a lone surrogate": {"type": TYPE_MESSAGE, "role": "user", "content": "\ud800"},
    "a big integer": {"type": TYPE_MESSAGE, "role": "user", "content": 2**100},
    "a huge integer": {"type": TYPE_MESSAGE, "role": "user", "content": 7 * 10**4301},
    "a set": {"type": TYPE_MESSAGE, "role": "user", "content": {"a"}},
    **{f"nesting {depth}": {"type": TYPE_MESSAGE, "role": "user", "content": nested(depth)}
       for depth in range(MAX_NESTING - 3, MAX_NESTING + 2)},
    **{f"empty at nesting {depth}": {"type": TYPE_MESSAGE, "role": "user", "content": nested(depth, [])}
       for depth in range(MAX_NESTING - 3, MAX_NESTING + 1)},
}


@pytest.mark.parametrize("decoder", AVAILABLE)
@pytest.mark.parametrize("name", sorted(EDGES))
def test_each_edge_alone_and_in_a_batch(decoder, name):
    event = EDGES[name]
    assert copy_disagreement(event) is None
    assert disagreements([[event], [EDGES["plain message"], event], [EDGES["plain message"]]], decoder) == []


LONG = {"type": TYPE_MESSAGE, "role": "user", "content": "x" * 400}
WIDE = {"type": TYPE_MESSAGE, "role": "user", "content": "中" * 150}  # 450 bytes of UTF-8, 150 characters


@pytest.mark.parametrize("decoder", AVAILABLE)
@pytest.mark.parametrize("batch", [
    [LONG], [EDGES["plain message"], LONG], [LONG, EDGES["plain message"]], [WIDE, EDGES["plain message"]],
    [LONG, EDGES["a lone surrogate"]], [EDGES["a lone surrogate"], LONG], [EDGES["a big integer"], LONG],
    [EDGES["nested call"], EDGES["a big integer"], EDGES["a lone surrogate"]],
], ids=["long", "plain-long", "long-plain", "wide-plain", "long-surrogate", "surrogate-long", "bigint-long",
        "call-bigint-surrogate"])
def test_a_batch_refuses_what_the_careful_path_refuses_first(decoder, batch):
    """append_batch encodes a plain batch in one pass (fast.encode_lines); the first record the careful
    path refuses (too long, a lone surrogate) is still the one named, and a big integer msgspec
    cannot write is still written by the standard library."""
    calls = [batch, batch[:1], [EDGES["plain message"]]]
    assert disagreements(calls, decoder, max_record_bytes=420) == []
    assert disagreements(calls, decoder) == []


def test_the_common_events_take_the_fast_path_and_the_rest_do_not():
    taken = {name for name, event in EDGES.items() if fast.plain_payload(event) is not None}
    assert taken == {"plain message", "nested call", "a big integer", "a lone surrogate",
                     *(f"nesting {depth}" for depth in range(MAX_NESTING - 3, MAX_NESTING)),
                     *(f"empty at nesting {depth}" for depth in range(MAX_NESTING - 3, MAX_NESTING - 1))}


def test_the_caller_keeps_its_event_and_the_record_keeps_its_own():
    event = {"type": TYPE_FUNCTION_CALL, "callId": "c1", "name": "grep", "arguments": {"pattern": ["a"]}}
    with tempfile.TemporaryDirectory() as folder, DurableTranscript(Path(folder) / "s.jsonl") as transcript:
        record = transcript.append(event)
    event["arguments"]["pattern"].append("b")
    assert record["arguments"] == {"pattern": ["a"]}
    assert "sequence" not in event


# --------------------------------------------------------------------------- the clock's stamp

def iso_of(time_ns: int) -> str:
    return (datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(microseconds=time_ns // 1000)).isoformat()


@checks
@given(times=st.lists(st.integers(0, 253402300799 * 10**9 + 999_999_999), min_size=1, max_size=6))
def test_utc_stamp_is_isoformat_for_any_moment_in_any_order(times):
    assert [fast.utc_stamp(ns) for ns in times] == [iso_of(ns) for ns in times]


@pytest.mark.parametrize("time_ns", [0, 999, 1000, 1_767_603_599_999_999_999, 1_767_603_600_000_000_000,
                                     1_767_603_600_000_001_000, 951_782_400_000_000_000])  # 2000-02-29
def test_utc_stamp_at_second_boundaries_and_whole_seconds(time_ns):
    assert fast.utc_stamp(time_ns) == iso_of(time_ns)
    assert fast.utc_stamp(time_ns + 10**9) == iso_of(time_ns + 10**9)  # the next second: the date made again
    assert fast.utc_stamp(time_ns) == iso_of(time_ns)


def test_the_default_clock_stamps_with_utc_stamp_and_an_injected_clock_with_the_lessons(tmp_path):
    with DurableTranscript(tmp_path / "default.jsonl") as transcript:
        before = datetime.now(timezone.utc)
        stamp = datetime.fromisoformat(transcript.append(EDGES["plain message"])["recorded_at"])
        after = datetime.now(timezone.utc)
    assert stamp.utcoffset() == timedelta(0) and before - timedelta(seconds=1) <= stamp <= after + timedelta(seconds=1)
    with DurableTranscript(tmp_path / "ticking.jsonl", clock=ticking_clock()) as transcript:
        assert transcript.append(EDGES["plain message"])["recorded_at"] == "2026-01-05T09:00:00+00:00"
    naive = DurableTranscript(tmp_path / "naive.jsonl", clock=lambda: datetime(2026, 1, 5))
    with pytest.raises(TranscriptValidationError, match="aware datetime"):
        naive.append(EDGES["plain message"])


# --------------------------------------------------------------------------- a test of the test

@pytest.mark.parametrize("decoder", AVAILABLE)
@pytest.mark.parametrize("guard, value, edge", [
    ("FIELDS_APPEND_WRITES", frozenset({"recorded_at"}), "an envelope field"),  # lets a spoofed sequence through
    ("MAX_NESTING", MAX_NESTING + 5, f"nesting {MAX_NESTING + 1}"),  # takes nesting the lesson refuses
    ("shape_problem", lambda event: None, "no role"),  # forgets the fields a type needs
], ids=["fields", "nesting", "shape"])
def test_a_fast_path_with_a_guard_broken_is_caught(decoder, guard, value, edge):
    batches = [[EDGES[edge]], [EDGES["plain message"]]]
    assert disagreements(batches, decoder) == []
    with broken(guard, value):
        assert disagreements(batches, decoder)


def test_a_fast_path_that_lets_floats_skip_the_float_check_is_caught():
    if fast.msgspec is None:
        pytest.skip("msgspec is not installed: only it writes floats otherwise than the lesson")
    event = {"type": TYPE_MESSAGE, "role": "user", "content": 1e16}  # msgspec writes 1e16, the lesson 1e+16
    plain_kinds = fast._plain_container

    def floats_as_plain(value, kind, depth):
        return value if kind is float else plain_kinds(value, kind, depth)

    assert disagreements([[event]], "msgspec") == []
    with broken("_plain_container", floats_as_plain):
        assert disagreements([[event]], "msgspec")


# --------------------------------------------------------------------------- the writer check skipped


class FailsOnce(OsFileIO):
    """The writer's I/O calls, whose first write after arm() fails as a full disk would."""

    armed = False

    def write(self, fd, data):
        if self.armed:
            self.armed = False
            raise OSError(errno.ENOSPC, "no space left on device")
        return super().write(fd, data)


def test_the_appends_reopen_the_writer_only_when_it_may_be_closed(tmp_path, monkeypatch):
    """While this process holds the writer, an append neither reopens it nor reads the file's end; it
    does after close(), after a failed write (the writer is dropped) and after a fork
    (tests/test_lab_promises.py forks)."""
    opened = []
    real = DurableTranscript.read_for_writer
    monkeypatch.setattr(DurableTranscript, "read_for_writer",
                        lambda self, fd, **how: opened.append(1) or real(self, fd, **how))
    file_io = FailsOnce()
    transcript = DurableTranscript(tmp_path / "s.jsonl", file_io=file_io)
    for _ in range(3):
        transcript.append(EDGES["plain message"])
    transcript.append_batch([EDGES["plain message"]] * 2)
    assert len(opened) == 1
    transcript.close()
    transcript.append(EDGES["plain message"])
    assert len(opened) == 2
    for act in (lambda: transcript.append(EDGES["plain message"]),
                lambda: transcript.append_batch([EDGES["plain message"]] * 2)):
        file_io.armed = True
        with pytest.raises(OSError, match="no space"):
            act()
        before = len(opened)
        act()  # reopens: the writer reads the file's end again
        assert len(opened) == before + 1
    transcript.close()
    sequences = [record["sequence"] for record in DurableTranscript(tmp_path / "s.jsonl").read_events()]
    assert sequences == list(range(1, 10))
