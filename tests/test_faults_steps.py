"""The live log's whole-file steps under a fault at each of their calls (issue 53): migrate_to, fork and
archive_expired are all or nothing.

The injector (tests/fault_injection.py) fails each open, write, fsync (of a file or of a folder) and truncate
of a step in turn with EIO. After each run the test checks what the issue promises:

- migrate_to: at every point, exactly one copy of the session takes a commit and the other refuses; the
  retry completes the migration or recognises it as done; B then holds A's events once, and A refuses;
- fork: a failure leaves no name, or one the same call on the same log recognises as its own and completes;
  nothing raised is a bare OSError;
- archive_expired: a file listed as skipped has no link in the archive; the retry archives the session once;
- every step, run without a fault, syncs each new folder entry in the folder that holds it (NameTracer),
  the second life of an archived session included.
"""

from __future__ import annotations

import os

import pytest
from fault_injection import Fault, Injector, NameTracer, message, record

from s09_jsonl_transcript.code import TranscriptCorruptionError
from s09_jsonl_transcript.lab import DurableTranscript, TranscriptIOError
from s09_jsonl_transcript.production import turns
from s09_jsonl_transcript.production.live import (
    SessionEventLog,
    SessionMigratedError,
    archive_expired,
)
from s09_jsonl_transcript.production.timeouts import ManualClock

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def no_cached_logs():
    yield
    SessionEventLog.close_cached()


def _contents(path) -> list:
    return [event.get("content") for event in DurableTranscript(path).read_events()
            if event["type"] not in (turns.TYPE_MIGRATED, turns.TYPE_MIGRATING, turns.TYPE_ARRIVED)]


def _sweep(folder, prepare, operate):
    """The counted calls of a fault-free run of operate(prepare(run folder)), then one run per call with
    that call failing (EIO): yields (the run's folder, what prepare returned, the error raised or None)."""
    prepared = prepare(folder / "recording")
    calls = record(folder / "recording", lambda: operate(prepared))
    SessionEventLog.close_cached()
    for number in range(len(calls)):
        run = folder / f"run{number}"
        prepared = prepare(run)
        error = None
        with Injector(run, {number: Fault(number)}):
            try:
                operate(prepared)
            except Exception as raised:  # noqa: BLE001 - judged by the caller
                error = raised
        SessionEventLog.close_cached()
        yield run, prepared, error


# --------------------------------------------------------------------------- migration


def _source(run):
    log = SessionEventLog.for_session("s", run / "a", clock=ManualClock())
    log.commit(message("one"))
    log.commit(message("two", "assistant"))
    return log


def _migrate(log):
    return log.migrate_to(log.transcript.path.parent.parent / "b")


def _accepts(path, text: str) -> bool:
    """Whether a log opened on path takes a commit now (it is closed again either way)."""
    with SessionEventLog.open(path, clock=ManualClock()) as log:
        try:
            log.commit(message(text))
        except SessionMigratedError:
            return False
    return True


def test_a_migration_failing_at_any_call_leaves_exactly_one_copy_taking_commits(tmp_path):
    runs = 0
    for run, source, error in _sweep(tmp_path, _source, _migrate):
        runs += 1
        source.close()
        a, b = run / "a" / "s.jsonl", run / "b" / "s.jsonl"
        if error is not None:
            assert isinstance(error, (TranscriptIOError, TranscriptCorruptionError)), repr(error)
        probes = []
        if b.exists():
            taken = [_accepts(a, "probe a"), _accepts(b, "probe b")]
            assert sum(taken) == 1, (error, taken)  # one copy takes the commit, the other refuses
            probes = ["probe a"] if taken[0] else ["probe b"]
        else:
            assert error is not None and _accepts(a, "probe a")  # no copy yet: A goes on
            probes = ["probe a"]
        retried = SessionEventLog.for_session("s", run / "a", clock=ManualClock()).migrate_to(run / "b")
        assert retried.commit(message("after"))["sequence"] == retried.last_sequence
        assert not _accepts(a, "refused")
        assert _contents(b) == ["one", "two", *probes, "after"]  # every commit once, in the copy that took it
        assert _contents(a) == ["one", "two", *[p for p in probes if p == "probe a"]]
    assert runs > 10


def test_a_migration_syncs_every_new_folder_entry_where_it_lives(tmp_path):
    log = _source(tmp_path)
    with NameTracer(tmp_path) as tracer:
        _migrate(log)
    assert tracer.unsynced() == [] and any(event[0] == "name" for event in tracer.events)


def test_a_copy_that_waits_takes_commits_once_it_reads_its_source_is_marked(tmp_path):
    """A crash between A's marker and B's session_arrived: B, opened alone, reads A's end under A's lock and
    arrives; while A is open somewhere, B cannot tell and refuses."""
    log = _source(tmp_path)
    b = _migrate(log)
    log.close()
    b.close()
    path = tmp_path / "b" / "s.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-1]))  # as if B's session_arrived never reached the disk
    with SessionEventLog.open(tmp_path / "a" / "s.jsonl") as source:
        source.status()
        with SessionEventLog.open(path, clock=ManualClock()) as waiting:
            assert waiting.status().state == turns.IDLE
    assert _accepts(path, "three")
    assert _contents(path) == ["one", "two", "three"]


# --------------------------------------------------------------------------- fork


def _forked_source(run):
    log = SessionEventLog.for_session("s", run, clock=ManualClock())
    log.commit(message("one"))
    log.commit_batch([message("two"), message("three", "assistant")])
    return log


def test_a_fork_failing_at_any_call_leaves_no_name_or_one_its_retry_completes(tmp_path):
    runs = 0
    for run, source, error in _sweep(tmp_path, _forked_source, lambda log: log.fork("f")):
        runs += 1
        if error is not None:
            assert isinstance(error, TranscriptIOError), repr(error)  # the library's words, the step named
            source.fork("f")  # the retry: it creates the fork, or completes its own
        forked = SessionEventLog.for_session("f", run, clock=ManualClock())
        events = DurableTranscript(run / "f.jsonl").read_events()
        assert [event.get("content") for event in events] == ["one", "two", "three", None]
        assert events[-1]["type"] == turns.TYPE_FORKED and forked.last_sequence == 4
        with pytest.raises(FileExistsError):
            source.fork("f")  # once it returned, the name is the fork's: a second fork never overwrites
        source.close()
    assert runs > 5


def test_a_fork_syncs_every_new_folder_entry_where_it_lives(tmp_path):
    log = _forked_source(tmp_path)
    with NameTracer(tmp_path) as tracer:
        log.fork("f")
    assert tracer.unsynced() == [] and str(tmp_path / "f.jsonl") in [event[-1] for event in tracer.events]


# --------------------------------------------------------------------------- archive


def _expired(run, name="s"):
    run.mkdir(parents=True, exist_ok=True)
    with DurableTranscript(run / f"{name}.jsonl") as transcript:
        transcript.append(message("one"))
        transcript.append(turns.timeout_event(turns.SESSION_MAX_DURATION, 3600, 3700))
    return run


def _second_life(run):
    """A session archived once, then expired again under the same id: archiving it makes archive/life-2/."""
    _expired(run)
    assert archive_expired(run).archived == ["s"]
    return _expired(run)


@pytest.mark.parametrize("prepare", [_expired, _second_life], ids=["first life", "second life"])
def test_an_archive_failing_at_any_call_never_says_skipped_with_a_link_left_and_never_archives_twice(tmp_path,
                                                                                                     prepare):
    reports, runs, unfinished = {}, 0, 0
    for run, _, error in _sweep(tmp_path, prepare, lambda folder: reports.setdefault(folder, archive_expired(folder))):
        runs += 1
        report = reports.get(run)
        if report is not None:
            unfinished += len(report.unfinished)
            for name, _ in report.skipped:  # skipped: nothing of it is in the archive
                assert not any(os.path.samefile(life, run / name) for life in (run / "archive").rglob(name)), name
        retry = archive_expired(run)
        assert retry.skipped == [] and retry.unfinished == [] and not (run / "s.jsonl").exists(), (error, retry)
        lives = sorted((run / "archive").rglob("s.jsonl"))
        expected = 1 if prepare is _expired else 2
        assert len({os.stat(life).st_ino for life in lives}) == len(lives) == expected, lives  # archived once
    assert runs > 5 and unfinished > 0  # some faults hit the move after its link: the unfinished road was taken


def test_a_skipped_session_has_no_link_in_the_archive(tmp_path, monkeypatch):
    """EIO on the archive folder's fsync once the file is linked: the report lists it as unfinished (never as
    skipped), and the next archive_expired finishes the move, once."""
    from s09_jsonl_transcript.lab import OsFileIO

    _expired(tmp_path)
    real, failures = OsFileIO.fsync_dir, [1]

    def fsync_dir(self, folder):
        if failures and os.path.basename(folder) == "archive" and (tmp_path / "archive" / "s.jsonl").exists():
            failures.pop()
            raise OSError(5, "injected")
        return real(self, folder)

    monkeypatch.setattr(OsFileIO, "fsync_dir", fsync_dir)
    report = archive_expired(tmp_path)
    assert report.skipped == [] and [name for name, *_ in report.unfinished] == ["s.jsonl"]
    assert (tmp_path / "s.jsonl").exists() and os.path.samefile(tmp_path / "archive" / "s.jsonl", tmp_path / "s.jsonl")
    again = archive_expired(tmp_path)
    assert again.archived == ["s"] and again.archived_to == [tmp_path / "archive" / "s.jsonl"]
    assert sorted(p.name for p in (tmp_path / "archive").iterdir()) == ["s.jsonl"]  # no life-2: archived once


@pytest.mark.parametrize("prepare", [_expired, _second_life], ids=["first life", "second life"])
def test_an_archive_syncs_every_new_folder_entry_where_it_lives(tmp_path, prepare):
    prepare(tmp_path)
    with NameTracer(tmp_path) as tracer:
        assert archive_expired(tmp_path).archived == ["s"]
    assert tracer.unsynced() == []
    assert any(event[0] == "sync" and event[1] == str(tmp_path / "archive") for event in tracer.events)
