"""Fault injection into the lab's DurableTranscript: every open, write, fsync and truncate of an append,
a batch and the recovery of a damaged end fails in turn, then a second call fails during the recovery
from the first (issue 43). (The lesson's class keeps the lesson's promise, a failed append undone, and
raises when the undo fails too: tests/test_lesson_promises.py.) After each run the test checks the file,
a fresh reader's verdict and the caller's retry, done as docs/lab.md tells a caller to:

- after TranscriptIOError the append was undone (truncate, then fsync): a fresh reader sees the file as
  it was, and the caller retries;
- after TranscriptOutcomeUnknownError the instance refuses every later append; a new instance reads the
  file, and the caller retries only if the event_id the error names is not there.

In the end every event is in the file exactly once, after every event acknowledged before it.
"""

from __future__ import annotations

import errno
import json
import os

import pytest
from fault_injection import Fault, Injector, faults_for, message, record

from s09_jsonl_transcript.code import ticking_clock
from s09_jsonl_transcript.lab import DurableTranscript, OsFileIO, TranscriptIOError, TranscriptOutcomeUnknownError

CLASSES = {"lab": DurableTranscript}  # the class every fault test here runs, by the name its ids carry


def payload_of(record: dict) -> dict:
    return {key: value for key, value in record.items()
            if key not in ("schema_version", "sequence", "event_id", "session_id", "recorded_at", "batch_end")}


# --------------------------------------------------------------------------- the scenarios


def _write_events(cls, path, texts):
    with cls(path, clock=ticking_clock()) as writer:
        for text in texts:
            writer.append(message(text))


class Scenario:
    """A file as the scenario leaves it, a writer on it, and the events one operation appends."""

    name = ""
    classes = tuple(CLASSES)
    events = [message("new")]

    def prepare(self, cls, folder):
        """Make the file; return (path, the writer the operation uses, the events already acknowledged)."""
        raise NotImplementedError

    def operate(self, writer, events):
        return [writer.append(events[0])] if len(events) == 1 else writer.append_batch(events)


class FirstAppend(Scenario):
    name = "the first append, in folders it makes"

    def prepare(self, cls, folder):
        return folder / "a" / "b" / "s.jsonl", cls(folder / "a" / "b" / "s.jsonl", clock=ticking_clock()), []


class Reopened(Scenario):
    name = "an append by a new instance on a file of two events"

    def prepare(self, cls, folder):
        path = folder / "s.jsonl"
        _write_events(cls, path, ["one", "two"])
        return path, cls(path, clock=ticking_clock()), ["one", "two"]


class Steady(Scenario):
    name = "an append on a writer already open"

    def prepare(self, cls, folder):
        path = folder / "s.jsonl"
        writer = cls(path, clock=ticking_clock())
        writer.append(message("one"))
        return path, writer, ["one"]


class PartialTail(Scenario):
    name = "an append that must first cut a partial tail off"

    def prepare(self, cls, folder):
        path = folder / "s.jsonl"
        _write_events(cls, path, ["one", "two"])
        path.write_bytes(path.read_bytes() + b'{"schema_version":1,"sequence":3,"ev')
        return path, cls(path, clock=ticking_clock()), ["one", "two"]


class LostNewline(Scenario):
    name = "an append that must first finish a record that lost its newline"

    def prepare(self, cls, folder):
        path = folder / "s.jsonl"
        _write_events(cls, path, ["one", "two"])
        path.write_bytes(path.read_bytes()[:-1])
        return path, cls(path, clock=ticking_clock()), ["one", "two"]


class Batch(Scenario):
    name = "a batch of three on a writer already open"
    classes = ("lab",)
    events = [message("b1"), message("b2", "assistant"), message("b3")]

    def prepare(self, cls, folder):
        return Steady().prepare(cls, folder)


class Create(Scenario):
    name = "create() of a new session, then its first append"
    classes = ("lab",)

    def prepare(self, cls, folder):
        return folder / "new.jsonl", None, []

    def operate(self, writer, events):
        raise AssertionError("run_create handles this one")


SCENARIOS = [FirstAppend(), Reopened(), Steady(), PartialTail(), LostNewline(), Batch()]
CASES = [(name, scenario) for scenario in SCENARIOS for name in scenario.classes]


# --------------------------------------------------------------------------- the caller


def caller_commits(cls, path, writer, scenario, errors: list) -> tuple[list[dict], object]:
    """Append the scenario's events as a careful caller does, through every error; return the records
    and the writer that holds the file now."""
    events = scenario.events
    for _ in range(6):
        try:
            return scenario.operate(writer, events), writer
        except TranscriptOutcomeUnknownError as error:
            errors.append(error)
            with pytest.raises(TranscriptOutcomeUnknownError):
                scenario.operate(writer, events)  # the instance that lost track appends no more
            assert error.event_id == f"transcript:{path.stem}:{error.sequence}"
            writer = cls(path, clock=ticking_clock())
            landed = _look_up(writer, error.event_id)
            if landed is not None:
                return landed, writer
        except TranscriptIOError as error:
            errors.append(error)
    raise AssertionError(f"six tries did not append: {errors}")


def _look_up(writer, event_id: str) -> list[dict] | None:
    """The records of the commit ending at event_id if a fresh read finds them, else None."""
    for _ in range(3):
        try:
            events = writer.read_events()
        except OSError:  # a fault in this read too: read again
            continue
        found = [index for index, event in enumerate(events) if event["event_id"] == event_id]
        if not found:
            return None
        first = last = found[0]
        while first > 0 and events[first - 1].get("batch_end") == events[last]["sequence"]:
            first -= 1
        return events[first: last + 1]
    raise AssertionError("three reads failed")


# --------------------------------------------------------------------------- one run, checked


def run_with_faults(cls, scenario, folder, faults: list[Fault]):
    """Prepare, run the operation with these faults and check what the issue promises. Returns the
    injector (its calls) and the error the operation raised, if any."""
    folder.mkdir()
    path, writer, before = scenario.prepare(cls, folder)
    events = scenario.events
    error = None
    with Injector(folder, {fault.number: fault for fault in faults}) as injector:
        try:
            scenario.operate(writer, events)
        except BaseException as raised:  # noqa: BLE001 - classified below
            error = raised
        after_operation = len(injector.calls)
        texts = [event["content"] for event in events]
        if error is not None:
            assert isinstance(error, TranscriptIOError), f"{type(error).__name__} is not the library's: {error}"
            with injector.paused():
                found = _fresh_contents(cls, path)
            if isinstance(error, TranscriptOutcomeUnknownError):
                assert found in (before, before + texts), found  # whole or not at all, never damaged
            else:  # undone: the file is as it was, and the cut was synced
                assert found == before, found
                _assert_cut_synced(injector.calls[:after_operation], path)
        records = None
        if error is not None:
            records, writer = caller_commits(cls, path, writer, scenario, [error])
    writer.close()
    if records is None:  # acknowledged with a fault injected: only if it is durable at its path
        assert _fresh_contents(cls, path) == before + texts
    else:
        assert [payload_of(record) for record in records] == events
    assert _fresh_contents(cls, path) == before + texts, "each event once, after every one before it"
    with cls(path, clock=ticking_clock()) as later:  # and the file takes the next append
        assert later.append(message("later"))["sequence"] == len(before) + len(texts) + 1
    return injector, error


def _fresh_contents(cls, path) -> list:
    fresh = cls(path)
    events = fresh.read_events()
    state = fresh.recover()
    assert state["total_events"] == len(events)
    return [event["content"] for event in events]


def _assert_cut_synced(calls, path):
    """Once the append's write was tried, the undo truncated the file and then fsynced it. (A repair's
    one-byte newline is not undone: the record it finishes was committed with or without it.)"""
    mine = [(call.kind, call.failed) for call in calls if call.target == str(path)]
    first = next((i for i, call in enumerate(c for c in calls if c.target == str(path))
                  if call.kind == "write" and call.size > 1), None)
    if first is None:
        return
    rest = mine[first:]
    assert ("truncate", False) in rest, rest
    assert ("fsync", False) in rest[rest.index(("truncate", False)):], rest


# --------------------------------------------------------------------------- the sweeps


def _calls(cls, scenario, folder):
    folder.mkdir()
    path, writer, _ = scenario.prepare(cls, folder)
    return record(folder, lambda: scenario.operate(writer, scenario.events))


@pytest.mark.parametrize("class_name, scenario", CASES, ids=[f"{c}-{s.__class__.__name__}" for c, s in CASES])
def test_a_fault_at_each_call(class_name, scenario, tmp_path):
    cls = CLASSES[class_name]
    calls = _calls(cls, scenario, tmp_path / "recording")
    kinds = {call.kind for call in calls}
    assert {"write", "fsync"} <= kinds  # the sweep reaches the durable write itself
    raised = 0
    for number, fault in enumerate(faults_for(calls)):
        _, error = run_with_faults(cls, scenario, tmp_path / f"run{number}", [fault])
        raised += error is not None
    assert raised == len(faults_for(calls))  # no fault was swallowed: each one made the operation raise


@pytest.mark.parametrize("class_name, scenario", CASES, ids=[f"{c}-{s.__class__.__name__}" for c, s in CASES])
def test_a_second_fault_during_the_recovery_from_the_first(class_name, scenario, tmp_path):
    """Call k fails, then each later call m (the undo's truncate and fsync, the retry's reopen, its
    reads, its repair, its write) fails too."""
    cls = CLASSES[class_name]
    calls = _calls(cls, scenario, tmp_path / "recording")
    unknown, runs = 0, 0
    for first in range(len(calls)):
        hows = (("error", errno.EIO), ("short", errno.EIO)) if calls[first].kind == "write" else (("error", errno.EIO),)
        for how in hows:
            injector, _ = run_with_faults(cls, scenario, tmp_path / f"run{runs}", [Fault(first, *how)])
            runs += 1
            for second in range(first + 1, len(injector.calls)):
                _, error = run_with_faults(cls, scenario, tmp_path / f"run{runs}",
                                           [Fault(first, *how), Fault(second, code=errno.EROFS)])
                runs += 1
                unknown += isinstance(error, TranscriptOutcomeUnknownError)
    assert unknown > 0  # some second faults hit the undo itself: the outcome-unknown road was taken


def test_the_injector_counts_the_calls_of_an_append(tmp_path):
    """The injector must see the calls it claims to fail, or every test above passes vacuously."""
    calls = _calls(DurableTranscript, Steady(), tmp_path / "steady")
    assert [call.kind for call in calls] == ["write", "fsync"]
    first = _calls(DurableTranscript, FirstAppend(), tmp_path / "first")
    assert [call.kind for call in first].count("open") >= 3  # two folders synced, the file, its reader
    assert json.loads((tmp_path / "steady" / "s.jsonl").read_text().splitlines()[-1])["content"] == "new"


# --------------------------------------------------------------------------- the double faults, by name


class Scripted(OsFileIO):
    """The writer's I/O calls, each failing as told: {"fsync": [EIO], "truncate": [EROFS]} fails the next
    fsync with EIO and the next truncate with EROFS; "short" makes the next write lose its last byte."""

    def __init__(self):
        self.plan, self.calls = {}, []

    def _fail(self, name):
        self.calls.append(name)
        codes = self.plan.get(name)
        if codes:
            code = codes.pop(0)
            raise OSError(code, os.strerror(code))

    def write(self, fd, data):
        if self.plan.get("short"):
            self.plan["short"].pop()
            self.calls.append("write")
            return super().write(fd, data[:-1])
        self._fail("write")
        return super().write(fd, data)

    def fsync(self, fd):
        self._fail("fsync")
        super().fsync(fd)

    def truncate(self, fd, length):
        self._fail("truncate")
        super().truncate(fd, length)


def _writer(cls, path):
    writer = cls(path, clock=ticking_clock())
    writer.file_io = Scripted()
    writer.append(message("one"))
    return writer, writer.file_io


@pytest.mark.parametrize("cls", [DurableTranscript], ids=["lab"])
def test_a_failed_append_is_undone_durably_before_it_raises(cls, tmp_path):
    writer, io = _writer(cls, tmp_path / "s.jsonl")
    io.plan, io.calls = {"fsync": [errno.EIO]}, []
    with pytest.raises(TranscriptIOError, match="fsync failed: .*the append was undone") as raised:
        writer.append(message("two"))
    assert io.calls == ["write", "fsync", "truncate", "fsync"]  # the cut, then the sync that makes it durable
    assert raised.value.errno == errno.EIO and raised.value.filename == str(writer.path)
    assert writer.append(message("two"))["sequence"] == 2


@pytest.mark.parametrize("cls", [DurableTranscript], ids=["lab"])
@pytest.mark.parametrize("plan", [{"fsync": [errno.EIO], "truncate": [errno.EROFS]},
                                  {"short": [1], "truncate": [errno.EIO]},
                                  {"fsync": [errno.EIO, errno.EIO]}],
                         ids=["fsync EIO then truncate EROFS", "newline lost then truncate EIO", "fsync twice"])
def test_when_the_undo_fails_the_outcome_is_unknown_and_no_retry_writes_the_event_twice(cls, tmp_path, plan):
    path = tmp_path / "s.jsonl"
    writer, io = _writer(cls, path)
    io.plan = {key: list(value) for key, value in plan.items()}
    with pytest.raises(TranscriptOutcomeUnknownError) as raised:
        writer.append(message("two"))
    unknown = raised.value
    assert (unknown.sequence, unknown.event_id) == (2, "transcript:s:2") and "transcript:s:2" in str(unknown)
    with pytest.raises(TranscriptOutcomeUnknownError):
        writer.append(message("two"))  # this instance lost track of the file: never again
    writer.close()
    with pytest.raises(TranscriptOutcomeUnknownError):
        writer.append(message("two"))  # reopening by the same instance does not count
    fresh = cls(path, clock=ticking_clock())
    landed = any(event["event_id"] == unknown.event_id for event in fresh.read_events())
    if not landed:
        fresh.append(message("two"))
    fresh.append(message("three"))
    fresh.close()
    assert [event["content"] for event in cls(path).read_events()] == ["one", "two", "three"]


@pytest.mark.parametrize("plan", [{"fsync": [errno.EIO], "truncate": [errno.EROFS]},
                                  {"short": [1], "truncate": [errno.EIO]}])
def test_a_batch_whose_undo_fails_names_its_last_event(tmp_path, plan):
    path = tmp_path / "s.jsonl"
    writer, io = _writer(DurableTranscript, path)
    io.plan = {key: list(value) for key, value in plan.items()}
    with pytest.raises(TranscriptOutcomeUnknownError) as raised:
        writer.append_batch([message("b1"), message("b2"), message("b3")])
    assert raised.value.event_id == "transcript:s:4"  # the batch is on disk only if its last record is
    events = DurableTranscript(path).read_events()
    assert [event["content"] for event in events] in (["one"], ["one", "b1", "b2", "b3"])


# --------------------------------------------------------------------------- a short write stays torn


class ShortThenUndoFails(OsFileIO):
    """The append's write stops after `cut` bytes; the writer's second write (to hear why) succeeds; the
    truncate that would undo it fails. What is left is whatever those two writes made."""

    def __init__(self, cut: int):
        self.cut, self.writes = cut, 0

    def write(self, fd, data):
        self.writes += 1
        if self.writes == 1:
            return super().write(fd, data[: self.cut])
        return super().write(fd, data)

    def truncate(self, fd, length):
        raise OSError(errno.EIO, "injected: the undo fails")


def test_a_short_write_at_every_cut_point_never_becomes_a_record_readers_count(tmp_path):
    """A line of 1- to 4-byte characters cut after each of its bytes: the second write leaves out the record's
    last two bytes, so the tail stays torn and no reader counts it, durable_commit included. Only a cut that
    left out nothing but the newline leaves a whole record, which the kernel wrote: then it is committed."""
    text = "aé漢😀" * 12
    probe = tmp_path / "probe" / "s.jsonl"
    with DurableTranscript(probe, clock=ticking_clock()) as writer:
        writer.append(message("one"))
        writer.append(message(text))
    line = probe.read_bytes().split(b"\n")[1]  # the record the writers below try, without its newline
    cuts = range(1, len(line) + 1)  # the record's bytes with its newline: len(line) + 1, cut after 1 .. all but one
    counted = []
    for cut in cuts:
        path = tmp_path / f"cut{cut}" / "s.jsonl"
        with DurableTranscript(path, clock=ticking_clock()) as writer:
            writer.append(message("one"))
        writer = DurableTranscript(path, clock=ticking_clock(), file_io=ShortThenUndoFails(cut))
        with pytest.raises(TranscriptOutcomeUnknownError):
            writer.append(message(text))
        writer.close()
        assert [event["content"] for event in DurableTranscript(path).read_events()][0] == "one"
        found = DurableTranscript(path, clock=ticking_clock()).durable_commit("transcript:s:2")
        if found is not None:
            counted.append(cut)
            assert found[0]["content"] == text
    assert counted == [len(line)] and len(cuts) > 200  # only the cut that left out nothing but the newline
