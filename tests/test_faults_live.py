"""Fault injection into SessionEventLog (issue 43): every open, write, fsync and truncate of a commit, a
batch, a validated commit and an open that repairs the file fails in turn, then a second call fails
during the recovery. A commit that raised is never published and never moves the log's state; the
caller's retry (docs/lab.md) commits each event once; a subscriber sees exactly the file's events.
Then a file deleted or cut under the log, and bad input to the log's public calls.
"""

from __future__ import annotations

import errno

import pytest
from fault_injection import Fault, Injector, faults_for, message, record

from s09_jsonl_transcript.code import (
    TranscriptCorruptionError,
    TranscriptValidationError,
    ticking_clock,
)
from s09_jsonl_transcript.lab import DurableTranscript, OsFileIO, TranscriptIOError, TranscriptOutcomeUnknownError
from s09_jsonl_transcript.production.live import LiveInputError, SessionEventLog, SessionGoneError
from s09_jsonl_transcript.production.turns import session_status


def _open(path) -> SessionEventLog:
    return SessionEventLog.open(path, clock=ticking_clock())


class Operation:
    """A log on a prepared file, and one operation on it that commits the events `texts` names."""

    name, texts = "", ["new"]

    def prepare(self, folder):
        path = folder / "s.jsonl"
        log = _open(path)
        log.commit(message("one"))
        log.commit(message("two", "assistant"))
        return path, log

    def run(self, log):
        return [log.commit(message("new"))]


class Commit(Operation):
    name = "commit"


class Batch(Operation):
    name = "commit_batch"
    texts = ["b1", "b2", "b3"]

    def run(self, log):
        return log.commit_batch([message(text) for text in self.texts])


class EndTurn(Operation):
    """A validated commit: end_turn reads the state, checks and appends in one step."""

    name = "end_turn"
    texts = [None]

    def prepare(self, folder):
        path, log = super().prepare(folder)
        log.start_turn()
        return path, log

    def run(self, log):
        return [log.end_turn(1)]


OPERATIONS = [Commit(), Batch(), EndTurn()]


def _contents(path) -> list:
    return [event.get("content") for event in DurableTranscript(path).read_events()]


def _committed(items) -> list[int]:
    return [item["sequence"] for item in items if isinstance(item, dict)]


def caller_commits(path, log, operation, subscriptions) -> SessionEventLog:
    """Commit as docs/lab.md tells a caller to, through every error; returns the log that holds the file."""
    for _ in range(8):
        try:
            operation.run(log)
            return log
        except TranscriptOutcomeUnknownError as unknown:
            with pytest.raises(TranscriptOutcomeUnknownError):
                operation.run(log)  # that log's transcript lost track: it appends no more
            log = _reopen(path)
            subscriptions.append(log.subscribe(from_sequence=1))
            if unknown.sequence <= log.last_sequence:  # it landed: a new log reads it as committed
                return log
        except OSError:  # TranscriptIOError: undone, retry; or a read of the recovery failed
            continue
    raise AssertionError("eight tries did not commit")


def _reopen(path) -> SessionEventLog:
    for _ in range(4):
        try:
            return _open(path)
        except OSError:
            continue
    raise AssertionError("four opens failed")


def run_with_faults(operation, folder, faults):
    folder.mkdir()
    path, log = operation.prepare(folder)
    watcher = log.subscribe(from_sequence=1)
    seen = _committed(watcher.poll())
    before = (log.last_sequence, log.status(), _contents(path))
    subscriptions = [watcher]
    with Injector(folder, {fault.number: fault for fault in faults}) as injector:
        error = None
        try:
            operation.run(log)
        except BaseException as raised:  # noqa: BLE001 - classified below
            error = raised
        if error is not None:
            assert isinstance(error, TranscriptIOError), f"{type(error).__name__}: {error}"
            assert (log.last_sequence, log.status()) == before[:2]  # the state did not move
            assert _committed(watcher.poll()) == []  # and nobody was told
            with injector.paused():
                found = _contents(path)
            allowed = [before[2], before[2] + operation.texts] if isinstance(
                error, TranscriptOutcomeUnknownError) else [before[2]]
            assert found in allowed
            log = caller_commits(path, log, operation, subscriptions)
    events = DurableTranscript(path).read_events()
    assert _contents(path) == before[2] + operation.texts  # each event once
    assert log.last_sequence == len(events) and log.status() == session_status(events)
    for subscription in subscriptions:  # what each subscriber saw is the file's, in order, once each
        try:
            items = subscription.poll()
        except TranscriptOutcomeUnknownError:
            items = []
        got = (seen if subscription is watcher else []) + _committed(items)
        assert got == sorted(set(got)) and set(got) <= {event["sequence"] for event in events}
        if subscription is watcher and subscriptions == [watcher]:  # one log throughout: it saw everything
            assert got == [event["sequence"] for event in events]
    for subscription in subscriptions:
        subscription.release()
    log.close()
    return injector, error


def _recorded(operation, folder):
    """The counted calls of one fault-free run of the operation."""
    folder.mkdir()
    path, log = operation.prepare(folder)
    calls = record(folder, lambda: operation.run(log))
    log.close()
    assert {"write", "fsync"} <= {call.kind for call in calls}
    return calls


@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda operation: operation.name)
def test_a_fault_at_each_call_of_a_commit(operation, tmp_path):
    calls = _recorded(operation, tmp_path / "recording")
    for number, fault in enumerate(faults_for(calls)):
        _, error = run_with_faults(operation, tmp_path / f"run{number}", [fault])
        assert error is not None, fault


@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda operation: operation.name)
def test_a_second_fault_during_the_recovery_of_a_commit(operation, tmp_path):
    calls = _recorded(operation, tmp_path / "recording")
    runs, unknown = 0, 0
    for first in range(len(calls)):
        injector, _ = run_with_faults(operation, tmp_path / f"run{runs}", [Fault(first)])
        runs += 1
        for second in range(first + 1, len(injector.calls)):
            faults = [Fault(first), Fault(second, code=errno.EROFS)]
            _, error = run_with_faults(operation, tmp_path / f"run{runs}", faults)
            runs += 1
            unknown += isinstance(error, TranscriptOutcomeUnknownError)
    assert unknown > 0


def test_a_fault_while_a_log_opens_and_repairs_its_file(tmp_path):
    """Open (the recovery: read the file, cut a partial tail, learn the state), each call failing in turn."""
    def prepare(folder):
        folder.mkdir()
        path = folder / "s.jsonl"
        with _open(path) as log:
            log.commit(message("one"))
        path.write_bytes(path.read_bytes() + b'{"schema_version":1,"seq')
        return path

    path = prepare(tmp_path / "recording")
    calls = record(tmp_path / "recording", lambda: _open(path).close())
    assert "truncate" in {call.kind for call in calls}
    for number, fault in enumerate(faults_for(calls)):
        path = prepare(tmp_path / f"run{number}")
        with Injector(path.parent, {fault.number: fault}):
            with pytest.raises(OSError):
                _open(path)
        assert _contents(path) == ["one"]  # the partial tail is cut or still ignored, never counted
        with _reopen(path) as log:
            assert log.commit(message("two"))["sequence"] == 2
        assert _contents(path) == ["one", "two"]


# --------------------------------------------------------------------------- the file changed under the log


def _log_with_subscriber(tmp_path):
    path = tmp_path / "s.jsonl"
    log = _open(path)
    log.commit(message("one"))
    subscription = log.subscribe(from_sequence=1)
    assert _committed(subscription.poll()) == [1]
    return path, log, subscription


def test_a_commit_after_the_file_was_deleted_raises_before_it_moves_anything(tmp_path):
    path, log, subscription = _log_with_subscriber(tmp_path)
    path.unlink()
    with pytest.raises(TranscriptIOError, match="check failed"):
        log.commit(message("two"))
    assert log.last_sequence == 1 and _committed(subscription.poll()) == []
    with pytest.raises(SessionGoneError, match="deleted or moved away"):
        log.commit(message("two"))  # and no new, empty file is made at the path
    assert not path.exists()
    with pytest.raises(SessionGoneError):
        log.end_turn(1)
    subscription.release()
    log.close()


def test_a_log_whose_file_was_cut_under_it_fails_closed(tmp_path):
    path, log, subscription = _log_with_subscriber(tmp_path)
    log.commit(message("two"))
    path.write_bytes(path.read_bytes().split(b"\n")[0] + b"\n")  # back to one event
    with pytest.raises(TranscriptIOError):
        log.commit(message("three"))
    with pytest.raises(TranscriptCorruptionError, match="committed 2"):
        log.commit(message("three"))
    assert _contents(path) == ["one"] and log.last_sequence == 2
    assert _committed(subscription.poll()) == [2]  # the commit that returned, and nothing else
    subscription.release()
    log.close()


class BreaksOnce(OsFileIO):
    """The next fsync fails with EIO and the truncate that would undo the write with EROFS."""

    armed = False

    def fsync(self, fd):
        if self.armed:
            raise OSError(errno.EIO, "injected")
        super().fsync(fd)

    def truncate(self, fd, length):
        if self.armed:
            self.armed = False
            raise OSError(errno.EROFS, "injected")
        super().truncate(fd, length)


def test_for_session_gives_a_fresh_log_after_an_unknown_outcome(tmp_path):
    file_io = BreaksOnce()
    log = SessionEventLog.for_session("s", tmp_path, clock=ticking_clock(), file_io=file_io)
    log.commit(message("one"))
    file_io.armed = True
    with pytest.raises(TranscriptOutcomeUnknownError) as unknown:
        log.commit(message("two"))
    assert unknown.value.event_id == "transcript:s:2" and log.last_sequence == 1
    again = SessionEventLog.for_session("s", tmp_path, clock=ticking_clock())
    assert again is not log and again.last_sequence == 2  # the whole record on disk is committed
    assert again.read_from(unknown.value.sequence)[0]["content"] == "two"  # so the caller does not retry
    assert again.commit(message("three"))["sequence"] == 3
    SessionEventLog.close_cached()


# --------------------------------------------------------------------------- bad input


BAD_NAMES = {"a NUL": "a\0b", "a lone surrogate": "\ud800", "too long for a file name": "x" * 256,
             "too long in bytes": "会" * 86}


@pytest.mark.parametrize("bad", BAD_NAMES)
def test_for_session_and_fork_refuse_names_no_file_system_takes(tmp_path, bad):
    name = BAD_NAMES[bad]
    with pytest.raises(LiveInputError):
        SessionEventLog.for_session(name, tmp_path)
    with pytest.raises(LiveInputError):
        SessionEventLog.for_session("s", tmp_path / name)
    with pytest.raises(LiveInputError):
        SessionEventLog.open(tmp_path / f"{name}.jsonl")
    with pytest.raises(LiveInputError):
        SessionEventLog.create(tmp_path / name / "s.jsonl")
    assert list(tmp_path.iterdir()) == []
    with SessionEventLog.open(tmp_path / "s.jsonl") as log:
        log.commit(message("one"))
        with pytest.raises(LiveInputError):
            log.fork(name)
        with pytest.raises(LiveInputError):
            log.migrate_to(tmp_path / name)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["s.jsonl"]


def test_a_path_longer_than_the_file_system_takes_is_refused(tmp_path):
    deep = tmp_path.joinpath(*["d" * 200] * 21)  # every name fits; the whole path does not
    with pytest.raises(LiveInputError, match="4096 bytes"):
        SessionEventLog.for_session("s", deep)


HUGE = 10**4300


@pytest.mark.parametrize("call", ["commit", "commit_batch", "turn number", "token summary", "cost", "rewind",
                                  "cursor", "tool arguments", "watchdog interval"])
def test_an_integer_json_cannot_read_back_is_refused_with_the_librarys_error(tmp_path, call):
    log = _open(tmp_path / "s.jsonl")
    log.start_turn()
    before = (tmp_path / "s.jsonl").read_bytes()
    attempts = {
        "commit": lambda: log.commit({"type": "turn_start", "turn_number": HUGE, "reason": "user"}),
        "commit_batch": lambda: log.commit_batch([message("a"), message(HUGE)]),
        "turn number": lambda: log.end_turn(HUGE),
        "token summary": lambda: log.end_turn(1, token_summary={"total_input": HUGE, "total_output": 1,
                                                                  "total_cost": 0.1}),
        "cost": lambda: log.end_turn(1, token_summary={"total_input": 1, "total_output": 1, "total_cost": HUGE}),
        "rewind": lambda: log.rewind(HUGE),
        "cursor": lambda: log.subscribe(from_sequence=HUGE),
        "tool arguments": lambda: log.record_tool_call("c1", "sum", {"n": HUGE}),
        "watchdog interval": lambda: log.start_watchdog(HUGE),
    }
    with pytest.raises((LiveInputError, TranscriptValidationError)) as refused:
        attempts[call]()
    assert "4300 digits" in str(refused.value) or "whole number" in str(refused.value) \
        or "number of seconds" in str(refused.value) or "token_summary" in str(refused.value)
    assert (tmp_path / "s.jsonl").read_bytes() == before and log.last_sequence == 1
    assert log.end_turn(1)["sequence"] == 2  # and the log goes on
    log.close()
