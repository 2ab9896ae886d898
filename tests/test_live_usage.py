"""Issue 27 §1: the live log as a real user uses it. One test (or table) per class, each failing on the old code.

Data loss on a reused id; the cache never takes a writer from a holder; control records only
through their helpers; bounded subscribers; fork and rewind boundaries; leftovers and messages;
bad input refused with the library's own error and nothing written; a validated commit that does
not re-read the file while it holds the writer.
"""

import math
import os
import subprocess
import sys
import threading
import tracemalloc

import pytest

from s09_jsonl_transcript.code import TranscriptLockedError
from s09_jsonl_transcript.lab import DurableTranscript
from s09_jsonl_transcript.production import live, turns
from s09_jsonl_transcript.production.live import CommitRefused, SessionEventLog, is_delta
from s09_jsonl_transcript.production.timeouts import ManualClock

LONG_WAIT = 600  # seconds: reached only when the code is broken, never on a slow or loaded machine


def message(n, role="user"):
    return {"type": "message", "role": role, "content": f"message {n}"}


def sequences(items):
    return [item["sequence"] for item in items if not is_delta(item)]


def expire(log, clock):
    log.start_turn()
    clock.advance(200)  # past turn_timeout
    log.check_timeouts()
    assert log.status().state == turns.EXPIRED


@pytest.fixture(autouse=True)
def empty_cache():
    yield
    SessionEventLog.close_cached()


# --------------------------------------------------------------------------- data loss


def test_archiving_a_reused_session_id_keeps_both_lives(tmp_path):
    clock = ManualClock()
    lives = []
    for life in (1, 2, 3):
        with SessionEventLog.create(tmp_path / "s.jsonl", clock=clock) as log:
            log.commit(message(life))
            expire(log, clock)
        lives.append((tmp_path / "s.jsonl").read_bytes())
        report = live.archive_expired(tmp_path)
        assert report.archived == ["s"] and report.archived_to[0].read_bytes() == lives[-1]
    places = [tmp_path / "archive" / "s.jsonl", tmp_path / "archive" / "life-2" / "s.jsonl",
              tmp_path / "archive" / "life-3" / "s.jsonl"]
    assert [place.read_bytes() for place in places] == lives  # every life, each readable under its name
    assert [DurableTranscript(place).read_events()[0]["content"] for place in places] == [
        "message 1", "message 2", "message 3"]


# --------------------------------------------------------------------------- the cache and the one writer


def test_a_session_the_watchdog_expired_is_no_longer_pinned(tmp_path):
    clock = ManualClock()
    log = SessionEventLog.for_session("s", tmp_path, clock=clock)
    log.start_turn()
    clock.advance(200)
    log.start_watchdog(interval=0.01)
    watchdog = next(thread for thread in threading.enumerate() if thread.name == "s09-watchdog-s")
    watchdog.join(LONG_WAIT)  # it ends by itself once the session expired
    assert not watchdog.is_alive() and log.status().state == turns.EXPIRED
    assert not log.pinned and not log.watchdog_running


def test_archive_expired_leaves_a_cached_log_that_is_not_expired_open_and_writing(tmp_path):
    clock = ManualClock()
    running = SessionEventLog.for_session("running", tmp_path, clock=clock)
    running.start_turn()
    expired = SessionEventLog.for_session("expired", tmp_path, clock=clock)
    expire(expired, clock)
    report = live.archive_expired(tmp_path)
    assert report.archived == ["expired"]
    with pytest.raises(TranscriptLockedError):  # still this process's writer: nobody else can end turn 1
        DurableTranscript(tmp_path / "running.jsonl").acquire_writer()
    assert running.end_turn(1, turns.REASON_USER_INTERRUPT)["sequence"] == 2
    with pytest.raises(live.SessionGoneError, match="archived to"):
        expired.commit(message(9))
    assert not (tmp_path / "expired.jsonl").exists()  # the late commit did not bring it back


# --------------------------------------------------------------------------- control records


@pytest.mark.parametrize("record", [
    {"type": turns.TYPE_MIGRATED, "to": "elsewhere"},
    {"type": turns.TYPE_REWIND, "to_sequence": 0},
    {"type": turns.TYPE_FORKED, "from_session": "x", "upto_sequence": 1},
    {"type": turns.TYPE_PART_START, "part_id": "p", "channel": "text", "turn_number": 1},
])
@pytest.mark.parametrize("how", ["commit", "commit_batch", "commit_validated", "stream"])
def test_control_records_are_written_only_by_their_helpers(tmp_path, record, how):
    with SessionEventLog.create(tmp_path / "s.jsonl", clock=ManualClock()) as log:
        log.start_turn()
        before = log.transcript.path.read_bytes()
        calls = {"commit": lambda: log.commit(record), "commit_batch": lambda: log.commit_batch([message(1), record]),
                 "commit_validated": lambda: log.commit_validated(lambda state: record),
                 "stream": lambda: log.open_stream().commit(record)}
        with pytest.raises(live.LiveInputError, match="helper"):
            calls[how]()
        if how != "stream":  # open_stream wrote its own part_start first
            assert log.transcript.path.read_bytes() == before
        assert log.commit(message(2))["type"] == "message"  # not locked for good


# --------------------------------------------------------------------------- bounded subscribers


@pytest.fixture
def long_session(tmp_path):
    with SessionEventLog.create(tmp_path / "long.jsonl", clock=ManualClock()) as log:
        for start in range(1, 20_001, 1000):
            log.commit_batch([message(n) for n in range(start, start + 1000)])
        yield log


def test_a_subscriber_from_the_first_event_of_a_long_session_holds_at_most_max_queued(long_session):
    subscription = long_session.subscribe(from_sequence=1, max_queued=100)
    got = []
    while True:
        assert subscription.queued() <= 100  # from the first page on, not only past the replay
        batch = subscription.poll()
        if not batch:
            break
        got += sequences(batch)
    assert got == list(range(1, 20_001))
    long_session.commit(message(20_001))
    assert sequences(subscription.poll()) == [20_001]


def test_replaying_a_long_gap_pages_it_from_the_file_in_flat_memory(long_session):
    tracemalloc.start()
    try:
        subscription = long_session.subscribe(from_sequence=1, max_queued=100)
        first_page = subscription.poll()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert sequences(first_page) == list(range(1, 101))
    assert peak < 2_000_000  # the old code queued all 20,000 events (a 40 MB peak); a page is 100 of them (0.2 MB)


def test_a_subscriber_whose_queue_overflows_pages_the_gap_back_within_max_queued(tmp_path):
    with SessionEventLog.create(tmp_path / "s.jsonl", clock=ManualClock()) as log:
        subscription = log.subscribe(from_sequence=1, max_queued=10)
        for start in range(1, 501, 100):
            log.commit_batch([message(n) for n in range(start, start + 100)])
        got = []
        while batch := subscription.poll():
            assert len(batch) <= 10
            got += sequences(batch)
        assert got == list(range(1, 501)) and subscription.resyncs == 1


# --------------------------------------------------------------------------- boundaries


def test_fork_and_rewind_cut_only_between_commits(tmp_path):
    with SessionEventLog.create(tmp_path / "s.jsonl", clock=ManualClock()) as log:
        log.commit(message(1))
        log.commit_batch([message(2), message(3), message(4)])  # one commit: 2..4
        log.commit(message(5))
        before = log.transcript.path.read_bytes()
        for cut in (2, 3):
            with pytest.raises(CommitRefused, match="inside a batch"):
                log.fork(f"fork-{cut}", upto_sequence=cut)
            with pytest.raises(CommitRefused, match="inside a batch"):
                log.rewind(cut)
        assert log.transcript.path.read_bytes() == before and not (tmp_path / "fork-2.jsonl").exists()
        assert log.fork("fork-4", upto_sequence=4).last_sequence == 5  # after the batch: a boundary
        assert log.rewind(4)["to_sequence"] == 4 and log.rewind(1)["to_sequence"] == 1


def test_a_rewind_never_reopens_a_turn(tmp_path):
    clock = ManualClock()
    with SessionEventLog.create(tmp_path / "s.jsonl", clock=clock) as log:
        log.start_turn()  # 1
        log.user_message("question")  # 2, inside turn 1
        log.end_turn(1)  # 3
        with pytest.raises(CommitRefused, match="turn 1 was open at event 2"):
            log.rewind(2)
        clock.advance(500)
        assert log.check_timeouts() == []  # nothing reopened, nothing to expire (idle 500 s < 600 s)
        assert log.status().state == turns.IDLE
        assert log.rewind(0)["to_sequence"] == 0 and log.rewind(3)["to_sequence"] == 3  # between turns


# --------------------------------------------------------------------------- leftovers and messages


def dead_pid():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_staging_folders_of_killed_forks_are_removed_and_live_ones_kept(tmp_path):
    with SessionEventLog.create(tmp_path / "s.jsonl", clock=ManualClock()) as log:
        log.commit(message(1))
        killed = tmp_path / f".fork-{dead_pid()}-abc"
        killed.mkdir()
        (killed / "copy.jsonl").write_bytes(b'{"half": ')
        running = tmp_path / f".fork-{os.getpid()}-def"  # this process's: maybe a fork under way
        running.mkdir()
        log.fork("copy")
        assert not killed.exists() and running.exists()
        assert live.archive_expired(tmp_path).staging_removed == []


def test_reads_after_delete_validated_say_the_session_is_gone(tmp_path):
    log = SessionEventLog.create(tmp_path / "s.jsonl", clock=ManualClock())
    log.commit(message(1))
    assert log.delete_validated(lambda state: True)
    for read in (lambda: log.read_from(1), lambda: log.read_after(0), lambda: log.page_back(5),
                 lambda: log.subscribe(from_sequence=1), log.replay, log.materialized, log.status,
                 log.open_parts, lambda: log.commit(message(2))):
        with pytest.raises(live.SessionGoneError, match="deleted"):
            read()


def test_a_foreign_file_is_skipped_and_reported_and_the_rest_is_archived(tmp_path):
    clock = ManualClock()
    (tmp_path / "history.jsonl").write_text('{"session_id": "x", "ts": 1, "text": "hi"}\n')
    with SessionEventLog.create(tmp_path / "old.jsonl", clock=clock) as old:
        expire(old, clock)
    report = live.archive_expired(tmp_path)
    assert report.archived == ["old"]
    assert [name for name, _ in report.skipped] == ["history.jsonl"] and "expected sequence 1" in report.skipped[0][1]
    assert (tmp_path / "history.jsonl").exists()


# --------------------------------------------------------------------------- bad input


def session(tmp_path):
    log = SessionEventLog.create(tmp_path / "bad.jsonl", clock=ManualClock())
    log.start_turn()
    log.test_stream = log.open_stream()  # opened before the snapshot: its part_start is not the bad call's
    return log


BAD_CALLS = {  # name -> a call with input the method cannot take
    "commit(text)": lambda log, tmp: log.commit("text"),
    "commit(no type)": lambda log, tmp: log.commit({"role": "user"}),
    "commit(blank type)": lambda log, tmp: log.commit({"type": " "}),
    "commit_batch(dict)": lambda log, tmp: log.commit_batch({"type": "message"}),
    "commit_batch(number)": lambda log, tmp: log.commit_batch(5),
    "commit_batch([text])": lambda log, tmp: log.commit_batch(["text"]),
    "commit_validated(None)": lambda log, tmp: log.commit_validated(None),
    "commit_validated(builder gives text)": lambda log, tmp: log.commit_validated(lambda state: "text"),
    "user_message(None)": lambda log, tmp: log.user_message(None),
    "user_message(number)": lambda log, tmp: log.user_message(3),
    "user_message(blank)": lambda log, tmp: log.user_message("  "),
    "start_turn(bad reason)": lambda log, tmp: log.start_turn("because"),
    "end_turn(text)": lambda log, tmp: log.end_turn("1"),
    "end_turn(bad reason)": lambda log, tmp: log.end_turn(1, "done"),
    "end_turn(bad summary)": lambda log, tmp: log.end_turn(1, token_summary={"tokens": 3}),
    "rewind(text)": lambda log, tmp: log.rewind("3"),
    "rewind(-1)": lambda log, tmp: log.rewind(-1),
    "record_handoff(None)": lambda log, tmp: log.record_handoff(None, "s"),
    "record_permission(bad decision)": lambda log, tmp: log.record_permission("c", "shell", "maybe"),
    "record_permission(None call)": lambda log, tmp: log.record_permission(None, "shell", "allow"),
    "record_tool_call(None id)": lambda log, tmp: log.record_tool_call(None, "read_file"),
    "record_tool_call(arguments text)": lambda log, tmp: log.record_tool_call("c", "read_file", "calc.py"),
    "record_tool_result(None id)": lambda log, tmp: log.record_tool_result(None, "out"),
    "record_tool_result(error number)": lambda log, tmp: log.record_tool_result("c", error=5),
    "answer_pending_calls(None)": lambda log, tmp: log.answer_pending_calls(None),
    "start_watchdog(nan)": lambda log, tmp: log.start_watchdog(math.nan),
    "start_watchdog(inf)": lambda log, tmp: log.start_watchdog(math.inf),
    "start_watchdog(0)": lambda log, tmp: log.start_watchdog(0),
    "start_watchdog(text)": lambda log, tmp: log.start_watchdog("1"),
    "subscribe(on_event text)": lambda log, tmp: log.subscribe(from_sequence=1, on_event="x"),
    "subscribe(max_queued 0)": lambda log, tmp: log.subscribe(from_sequence=1, max_queued=0),
    "subscribe(both cursors)": lambda log, tmp: log.subscribe(from_sequence=1, after_sequence=0),
    "subscribe(cursor text)": lambda log, tmp: log.subscribe(from_sequence="1"),
    "subscribe(future cursor)": lambda log, tmp: log.subscribe(from_sequence=99),
    "get(nan)": lambda log, tmp: log.subscribe(from_sequence=1).get(timeout=math.nan),
    "wait_delivered(-1)": lambda log, tmp: log.subscribe(from_sequence=1, on_event=print).wait_delivered(-1),
    "read_from(text)": lambda log, tmp: log.read_from("1"),
    "read_after(-1)": lambda log, tmp: log.read_after(-1),
    "page_back(text)": lambda log, tmp: log.page_back("5"),
    "page_back(before -1)": lambda log, tmp: log.page_back(5, before=-1),
    "open_stream(bad channel)": lambda log, tmp: log.open_stream("audio"),
    "open_stream(part_id number)": lambda log, tmp: log.open_stream("text", part_id=7),
    "stream.delta(None)": lambda log, tmp: log.test_stream.delta(None),
    "stream.commit(text)": lambda log, tmp: log.test_stream.commit("text"),
    "emit_delta(dict)": lambda log, tmp: log.emit_delta({"type": "message"}),
    "fork(bad id)": lambda log, tmp: log.fork("../escape"),
    "fork(upto text)": lambda log, tmp: log.fork("f", upto_sequence="1"),
    "migrate_to(empty)": lambda log, tmp: log.migrate_to(""),
    "migrate_to(None)": lambda log, tmp: log.migrate_to(None),
    "delete_validated(None)": lambda log, tmp: log.delete_validated(None),
    "for_session(empty folder)": lambda log, tmp: SessionEventLog.for_session("s", ""),
    "for_session(None id)": lambda log, tmp: SessionEventLog.for_session(None, tmp),
    "for_session(limits text)": lambda log, tmp: SessionEventLog.for_session("s", tmp, limits="fast"),
    "create(empty path)": lambda log, tmp: SessionEventLog.create(""),
    "open(None)": lambda log, tmp: SessionEventLog.open(None),
    "archive_expired(empty)": lambda log, tmp: live.archive_expired(""),
    "archive_expired(missing)": lambda log, tmp: live.archive_expired(tmp / "nowhere"),
    "clean_staging(None)": lambda log, tmp: live.clean_staging(None),
}


def folder_state(tmp_path):
    return sorted((str(path.relative_to(tmp_path)), path.read_bytes() if path.is_file() else b"")
                  for path in tmp_path.rglob("*"))


@pytest.mark.parametrize("name", sorted(BAD_CALLS))
def test_every_public_method_refuses_bad_input_with_the_librarys_error_and_writes_nothing(tmp_path, monkeypatch,
                                                                                          name):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)  # an empty path must not write into the current folder either
    log = session(tmp_path)
    before = folder_state(tmp_path)
    with pytest.raises(live.LiveInputError):
        BAD_CALLS[name](log, tmp_path)
    assert not log.watchdog_running  # start_watchdog(nan) did not start a busy loop
    assert folder_state(tmp_path) == before  # nothing written, in the session's folder or the current one
    log.close()


# --------------------------------------------------------------------------- cost


def test_a_validated_commit_holding_the_writer_reads_no_file_tail(tmp_path, monkeypatch):
    reads = []
    original = DurableTranscript.read_recent
    monkeypatch.setattr(DurableTranscript, "read_recent", lambda self, *a, **k: reads.append(a) or original(
        self, *a, **k))
    with SessionEventLog.create(tmp_path / "s.jsonl", clock=ManualClock()) as log:
        log.start_turn()
        reads.clear()
        for n in range(20):
            log.user_message(f"question {n}")
        assert reads == []  # the state is in memory while the log holds the writer
        log.transcript.close()  # the writer dropped: someone else may append now
        with DurableTranscript(tmp_path / "s.jsonl") as other:
            other.append(message(99))
        assert log.user_message("after")["sequence"] == 23 and reads != []  # then it reads what it missed
