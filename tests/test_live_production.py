"""Issue 20: the live log against seeds 002 and 003, one test per item, each written to fail on the old code.

Cursors are inclusive; for_session shares one instance per process with a bounded cache; queues are
bounded (drop and resync); handoffs are hidden; delete_validated, fork, rewind, migration; streamed
parts hold after a real crash; the watchdog fires by itself; housekeeping (archive, plain commits
checked, the audit, permission decisions).
"""

import os
import threading

import pytest

from s09_jsonl_transcript.code import TranscriptLockedError
from s09_jsonl_transcript.crashlab.children import kill_child, start_child
from s09_jsonl_transcript.lab import DurableTranscript
from s09_jsonl_transcript.lessons import live_child
from s09_jsonl_transcript.production import (
    live,  # new names as live.X: on the old code each test fails on its own
    turns,
)
from s09_jsonl_transcript.production.live import CommitRefused, SessionEventLog, is_delta
from s09_jsonl_transcript.production.timeouts import ManualClock

LONG_WAIT = 600  # seconds: reached only when the code is broken, never on a slow or loaded machine


def message(n, role="user"):
    return {"type": "message", "role": role, "content": f"message {n}"}


def sequences(items):
    return [item["sequence"] for item in items if not is_delta(item)]


def drain(subscription):
    items = []
    while batch := subscription.poll():
        items += batch
    return items


@pytest.fixture
def twenty(tmp_path):
    with SessionEventLog.create(tmp_path / "twenty.jsonl", clock=ManualClock()) as log:
        for n in range(1, 21):
            log.commit(message(n))  # twenty commits: a fork or rewind may cut between any two
        yield log


@pytest.fixture(autouse=True)
def empty_cache():
    yield
    getattr(SessionEventLog, "close_cached", lambda: None)()


# --------------------------------------------------------------------------- the cursor is inclusive


def test_read_from_starts_at_the_cursor_as_in_the_design(twenty):
    assert sequences(twenty.read_from(5)) == list(range(5, 21))
    assert sequences(live.read_from(DurableTranscript(twenty.transcript.path), 5)) == list(range(5, 21))
    assert sequences(twenty.read_from(0)) == sequences(twenty.read_from(1)) == list(range(1, 21))
    assert twenty.read_from(21) == []  # the next sequence: nothing yet, not an error


def test_subscribe_from_sequence_starts_at_it_and_next_sequence_reconnects_exactly(twenty):
    subscription = twenty.subscribe(from_sequence=5)
    got = sequences(subscription.poll())
    assert got == list(range(5, 21)) and subscription.next_sequence == 21
    twenty.commit(message(21))
    again = twenty.subscribe(from_sequence=subscription.next_sequence)
    assert sequences(again.poll()) == [21]


def test_the_old_exclusive_meaning_has_its_own_name_and_a_bare_number_is_refused(twenty):
    assert sequences(twenty.read_after(5)) == list(range(6, 21))
    assert sequences(live.read_after(DurableTranscript(twenty.transcript.path), 5)) == list(range(6, 21))
    assert sequences(twenty.subscribe(after_sequence=5).poll()) == list(range(6, 21))
    with pytest.raises(TypeError):
        twenty.subscribe(5)  # which meaning? refused, not guessed
    with pytest.raises(TypeError):
        twenty.subscribe(from_sequence=5, after_sequence=5)
    assert not hasattr(twenty.subscribe(from_sequence=1), "cursor")  # the ambiguous name is gone


# --------------------------------------------------------------------------- for_session


def open_descriptors(folder):
    fds = []
    for name in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{name}").startswith(str(folder)):
                fds.append(name)
        except OSError:
            pass
    return fds


def test_for_session_shares_one_instance_per_session_and_project(tmp_path):
    first = SessionEventLog.for_session("s1", tmp_path / "project-a")
    assert SessionEventLog.for_session("s1", tmp_path / "project-a") is first  # no TranscriptLockedError
    assert SessionEventLog.for_session("s1", tmp_path / "project-b") is not first
    first.commit(message(1))
    assert first.transcript.path == tmp_path / "project-a" / "s1.jsonl"
    with pytest.raises(ValueError):
        SessionEventLog.for_session("../escape", tmp_path)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors in /proc")
def test_the_cache_keeps_at_most_256_logs_nobody_holds_and_lets_go_of_the_least_recently_used(tmp_path):
    for n in range(live.CACHE_LIMIT + 44):  # 300 sessions, each written, none kept by the caller
        SessionEventLog.for_session(f"s{n}", tmp_path).commit(message(n))
    assert SessionEventLog.cached_count() == live.CACHE_LIMIT
    assert len(open_descriptors(tmp_path)) == live.CACHE_LIMIT  # not 300: the ones let go were closed
    with DurableTranscript(tmp_path / "s0.jsonl") as other:  # s0 went, the oldest: its writer is free
        assert other.append(message(2))["sequence"] == 2
    assert SessionEventLog.for_session("s299", tmp_path).last_sequence == 1


def test_a_log_someone_holds_keeps_its_writer_however_full_the_cache_gets(tmp_path):
    held = SessionEventLog.for_session("held", tmp_path)
    held.start_turn()  # an open turn: another writer must never be able to end it
    for n in range(live.CACHE_LIMIT + 1):
        SessionEventLog.for_session(f"s{n}", tmp_path)
    with pytest.raises(TranscriptLockedError):  # the writer stays with the holder
        DurableTranscript(tmp_path / "held.jsonl").acquire_writer()
    assert SessionEventLog.for_session("held", tmp_path) is held  # one instance, never a second
    assert held.end_turn(1)["sequence"] == 2


def test_logs_with_subscribers_are_pinned_and_may_exceed_the_bound(tmp_path):
    pinned = [SessionEventLog.for_session(f"p{n}", tmp_path) for n in range(live.CACHE_LIMIT)]
    subscriptions = [log.subscribe(from_sequence=1) for log in pinned]
    extra = SessionEventLog.for_session("extra", tmp_path)
    extra_name = extra.transcript.path
    del extra  # nobody but the cache holds it now
    assert SessionEventLog.cached_count() == live.CACHE_LIMIT + 1  # all pinned: over the bound
    assert all(SessionEventLog.for_session(f"p{n}", tmp_path) is pinned[n] for n in range(live.CACHE_LIMIT))
    subscriptions[0].release()  # p0 and extra are unpinned now; extra is the least recently used
    SessionEventLog.for_session("one-more", tmp_path)
    assert SessionEventLog.cached_count() == live.CACHE_LIMIT  # let go of: back within the bound
    with DurableTranscript(extra_name) as other:  # nobody held extra: collected, its writer free
        other.acquire_writer()
    assert all(SessionEventLog.for_session(f"p{n}", tmp_path) is pinned[n] for n in range(1, live.CACHE_LIMIT))


# --------------------------------------------------------------------------- bounded queues


def test_a_subscriber_that_does_not_read_holds_a_bounded_queue_and_loses_nothing(tmp_path):
    with SessionEventLog.create(tmp_path / "s.jsonl", clock=ManualClock()) as log:
        subscription = log.subscribe(from_sequence=1, max_queued=100)
        for n in range(1, 5001):
            log.commit(message(n))
            assert subscription.queued() <= 100
        got = sequences(drain(subscription))
        assert got == list(range(1, 5001)) and subscription.resyncs >= 1
        log.commit(message(5001))
        assert sequences(subscription.poll()) == [5001]  # live again


def test_a_slow_callback_gets_every_committed_event_once_in_order(tmp_path):
    got, gate = [], threading.Event()

    def slow(item):
        gate.wait()
        got.append(item)

    with SessionEventLog.create(tmp_path / "s.jsonl", clock=ManualClock()) as log:
        subscription = log.subscribe(from_sequence=1, on_event=slow, max_queued=10)
        for n in range(1, 301):
            log.commit(message(n))
        assert subscription.queued() <= 10
        gate.set()
        assert subscription.wait_delivered(LONG_WAIT)
        assert sequences(got) == list(range(1, 301))


def test_deltas_dropped_while_full_are_counted_and_the_final_part_carries_the_text(tmp_path):
    with SessionEventLog.create(tmp_path / "s.jsonl", clock=ManualClock()) as log:
        subscription = log.subscribe(from_sequence=1, max_queued=3)
        stream = log.open_stream("text")
        for piece in "abcdef":
            stream.delta(piece)
        final = stream.commit({"type": "message", "role": "assistant", "content": stream.text})
        items = drain(subscription)
        assert subscription.deltas_dropped == 3 and items[-1] == final and final["content"] == "abcdef"


# --------------------------------------------------------------------------- hidden events


def test_a_handoff_takes_a_sequence_but_no_client_sees_it(twenty):
    subscription = twenty.subscribe(from_sequence=20)
    handoff = twenty.record_handoff("token budget", "the first 20 messages, summarised")
    after = twenty.commit(message(22))
    assert handoff["sequence"] == 21 and after["sequence"] == 22
    assert sequences(subscription.poll()) == [20, 22]  # a gap: legal
    assert sequences(twenty.read_from(20)) == [20, 22]
    assert sequences(twenty.subscribe(from_sequence=21).poll()) == [22]
    on_disk = DurableTranscript(twenty.transcript.path).read_events()
    assert [event["sequence"] for event in on_disk] == list(range(1, 23))  # the file has no gap


# --------------------------------------------------------------------------- delete_validated


def test_delete_validated_checks_the_latest_committed_state_before_deleting(tmp_path):
    log = SessionEventLog.create(tmp_path / "s.jsonl", clock=ManualClock())
    log.commit(message(1))
    log.transcript.close()  # let another writer in, as after an eviction
    with DurableTranscript(tmp_path / "s.jsonl") as other:
        other.append(turns.turn_start_event(1))
    assert log.delete_validated(lambda state: state.fold.open_turn is None) is False  # saw the other's turn
    assert (tmp_path / "s.jsonl").exists()
    assert log.delete_validated(lambda state: state.last_sequence == 2) is True
    assert not (tmp_path / "s.jsonl").exists()
    with pytest.raises(CommitRefused, match="deleted"):
        log.commit(message(3))
    assert not (tmp_path / "s.jsonl").exists()  # a late commit did not bring it back


# --------------------------------------------------------------------------- fork


def payloads(events):
    return [{k: v for k, v in event.items() if k not in ("event_id", "session_id", "recorded_at", "batch_end")}
            for event in events]


def test_fork_copies_the_events_up_to_a_sequence_into_a_new_session(twenty):
    fork = twenty.fork("twenty-fork", upto_sequence=12)
    events = DurableTranscript(fork.transcript.path).read_events()
    assert payloads(events[:12]) == payloads(DurableTranscript(twenty.transcript.path).read_events()[:12])
    assert events[-1]["type"] == turns.TYPE_FORKED and events[-1]["from_session"] == "twenty"
    assert {event["session_id"] for event in events} == {"twenty-fork"}
    assert fork.last_sequence == 13 and fork.commit(message(14))["sequence"] == 14
    assert twenty.last_sequence == 20  # the source is untouched
    assert SessionEventLog.for_session("twenty-fork", twenty.transcript.path.parent) is fork


def test_fork_is_exclusive_and_never_leaves_a_partial_file(twenty, tmp_path):
    (tmp_path / "taken.jsonl").write_bytes(b"")
    with pytest.raises(FileExistsError):
        twenty.fork("taken")
    assert (tmp_path / "taken.jsonl").read_bytes() == b""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken.jsonl", "twenty.jsonl"]  # no scratch left
    whole = twenty.fork("whole")
    assert whole.last_sequence == 21 and whole.transcript.read_events()[-1]["upto_sequence"] == 20


# --------------------------------------------------------------------------- rewind


def chat_turn(log, number, text, tokens):
    log.start_turn()
    log.user_message(f"question {number}")
    log.commit({"type": "message", "role": "assistant", "content": text})
    log.end_turn(number, token_summary=turns.token_summary(tokens, 1, 0.001))


def test_rewind_appends_a_marker_and_every_projection_leaves_the_rewound_events_out(tmp_path):
    with SessionEventLog.create(tmp_path / "s.jsonl", clock=ManualClock()) as log:
        chat_turn(log, 1, "kept answer", 100)
        kept_upto = log.last_sequence
        chat_turn(log, 2, "rewound answer", 900)
        before = log.transcript.path.read_bytes()
        marker = log.rewind(kept_upto)
        assert log.transcript.path.read_bytes().startswith(before)  # nothing rewritten
        assert marker["type"] == turns.TYPE_REWIND and marker["to_sequence"] == kept_upto
        contents = [m["content"] for m in log.replay()]
        assert "rewound answer" not in contents and "kept answer" in contents
        assert log.status().last_turn == 1  # the state machine: turn 2 is undone
        events = DurableTranscript(log.transcript.path).read_events()
        assert turns.session_status(events).last_turn == 1
        assert turns.audit(events).input_tokens == 100  # the audit: turn 2's tokens are gone
        chat_turn(log, 2, "a new answer", 50)  # turn 2 again, after the marker
        assert turns.audit(DurableTranscript(log.transcript.path).read_events()).input_tokens == 150
    with SessionEventLog.open(tmp_path / "s.jsonl", clock=ManualClock()) as reopened:
        assert reopened.status().last_turn == 2 and reopened.status().anomalies == []


def test_rewind_is_refused_inside_a_turn_and_past_the_end(twenty):
    with pytest.raises(CommitRefused, match="between 0 and 20"):
        twenty.rewind(21)
    twenty.start_turn()
    with pytest.raises(CommitRefused, match="open"):
        twenty.rewind(3)


# --------------------------------------------------------------------------- streamed parts after a crash


def test_after_a_real_crash_a_turn_with_an_unfinished_stream_cannot_complete(tmp_path):
    path = tmp_path / "crash.jsonl"
    child = start_child("s09_jsonl_transcript.lessons.live_child:stream_writer_child", path, 3)
    try:
        for line in child.stdout:
            if "waiting" in line:
                break
    finally:
        kill_child(child)
    with SessionEventLog.open(path, clock=ManualClock()) as log:  # a fresh process's view
        (part,) = log.status().open_parts
        with pytest.raises(CommitRefused, match=f"{part} has no committed final part"):
            log.end_turn(1)
        log.record_tool_result("call_1", "def add(a, b): return a - b")
        stream = log.open_stream("text", part_id=part)  # stream the part again, then commit it
        stream.delta(live_child.REPLY)
        stream.commit({"type": "message", "role": "assistant", "content": stream.text})
        assert log.end_turn(1)["reason"] == "complete"


def test_the_rule_is_the_state_machines_so_a_plain_commit_cannot_bypass_it(tmp_path):
    with SessionEventLog.create(tmp_path / "s.jsonl", clock=ManualClock()) as log:
        log.start_turn()
        stream = log.open_stream("text")
        with pytest.raises(CommitRefused, match="no committed final part"):
            log.commit(turns.turn_end_event(1, turns.REASON_COMPLETE))
        stream.commit({"type": "message", "role": "assistant", "content": "done"})
        assert log.commit(turns.turn_end_event(1, turns.REASON_COMPLETE))["reason"] == "complete"


# --------------------------------------------------------------------------- the watchdog


def test_the_watchdog_records_a_turn_timeout_without_anyone_polling(tmp_path):
    clock = ManualClock()
    with SessionEventLog.create(tmp_path / "s.jsonl", clock=clock) as log:
        log.start_turn()
        watching = log.subscribe(after_sequence=log.last_sequence)
        clock.advance(200)  # past turn_timeout (120 s), within session_max_duration
        log.start_watchdog(interval=0.01)
        recorded = [watching.get(timeout=LONG_WAIT), watching.get(timeout=LONG_WAIT)]  # waits for the events
        assert [(r["type"], r.get("limit") or r.get("reason")) for r in recorded] == [
            ("timeout", turns.TURN_TIMEOUT), ("turn_end", turns.REASON_TIMEOUT)]
        assert log.status().state == turns.EXPIRED and log.watchdog_records == 2
        log.stop_watchdog()
        assert not log.watchdog_running


def test_the_watchdog_is_started_and_stopped_by_its_owner(tmp_path):
    with SessionEventLog.create(tmp_path / "s.jsonl", clock=ManualClock()) as log:
        assert not log.watchdog_running
        log.start_watchdog(interval=0.05)
        assert log.watchdog_running and log.pinned
        with pytest.raises(RuntimeError, match="already"):
            log.start_watchdog()
        log.stop_watchdog()
        assert not log.watchdog_running and not log.pinned
        log.start_watchdog(interval=0.05)
    assert not log.watchdog_running  # close stops it


# --------------------------------------------------------------------------- migration


def test_migration_verifies_harness_b_and_marks_harness_a_migrated(tmp_path):
    a = SessionEventLog.for_session("s", tmp_path / "harness-a", clock=ManualClock())
    chat_turn(a, 1, "hello", 10)
    a.start_turn()
    b = a.migrate_to(tmp_path / "harness-b")
    assert b.status() == turns.session_status(DurableTranscript(b.transcript.path).read_events())
    assert b.status().open_turn == 2
    moved = [event["type"] for event in DurableTranscript(b.transcript.path).read_events()[a.last_sequence - 1:]]
    assert moved == [turns.TYPE_MIGRATING, turns.TYPE_ARRIVED]  # B waited for A's marker, then arrived
    assert b.last_sequence == a.last_sequence + 1  # A ends with its marker at the sequence B waited at
    with pytest.raises(live.SessionMigratedError):
        a.commit(message(99))
    with pytest.raises(live.SessionMigratedError):
        a.end_turn(2)
    a.close()
    with SessionEventLog.open(tmp_path / "harness-a" / "s.jsonl") as restarted:
        with pytest.raises(live.SessionMigratedError):  # the mark is on disk: a restart refuses too
            restarted.commit(message(99))
    assert b.end_turn(2)["sequence"] == b.last_sequence  # B takes over


# --------------------------------------------------------------------------- housekeeping


def test_expired_sessions_are_archived_and_live_ones_stay(tmp_path):
    clock = ManualClock()
    with SessionEventLog.create(tmp_path / "old.jsonl", clock=clock) as old:
        old.start_turn()
        clock.advance(500)
        old.check_timeouts()
        assert old.status().state == turns.EXPIRED
    with SessionEventLog.create(tmp_path / "live.jsonl", clock=clock) as running:
        running.start_turn()
    held = DurableTranscript(tmp_path / "held.jsonl", clock=clock)
    held.append(turns.timeout_event(turns.SESSION_MAX_DURATION, 3600, 3700))  # expired, but a writer holds it
    assert live.archive_expired(tmp_path).archived == ["old"]
    assert (tmp_path / "archive" / "old.jsonl").exists() and not (tmp_path / "old.jsonl").exists()
    assert (tmp_path / "live.jsonl").exists() and (tmp_path / "held.jsonl").exists()
    held.close()
    assert live.archive_expired(tmp_path).archived == ["held"]


def test_a_plain_commit_pairs_turn_start_with_turn_end(tmp_path):
    with SessionEventLog.create(tmp_path / "s.jsonl", clock=ManualClock()) as log:
        with pytest.raises(CommitRefused, match="no turn is open"):
            log.commit(turns.turn_end_event(1, turns.REASON_COMPLETE))
        log.commit(turns.turn_start_event(1))
        with pytest.raises(CommitRefused, match="turn 1 was open"):
            log.commit(turns.turn_start_event(2))
        with pytest.raises(CommitRefused):
            log.commit_batch([turns.turn_end_event(1, "complete"), turns.turn_end_event(1, "complete")])
        assert log.last_sequence == 1


def test_permission_decisions_are_events_the_audit_lists(tmp_path):
    with SessionEventLog.create(tmp_path / "s.jsonl", clock=ManualClock()) as log:
        log.start_turn()
        log.record_tool_call("c1", "write_file", {"path": "calc.py"})
        log.record_permission("c1", "write_file", "allow", by="user", reason="asked and confirmed")
        log.record_permission("c2", "shell", "deny", by="policy", reason="not on the allow list")
        report = turns.audit(DurableTranscript(log.transcript.path).read_events())
    assert [(p.call_id, p.decision, p.by, p.turn_number) for p in report.permission_decisions] == [
        ("c1", "allow", "user", 1), ("c2", "deny", "policy", 1)]
    with pytest.raises(ValueError):
        turns.permission_event("c3", "shell", "maybe")


def test_a_second_writer_still_fails_closed(tmp_path):
    SessionEventLog.for_session("s", tmp_path)
    with pytest.raises(TranscriptLockedError):
        SessionEventLog.open(tmp_path / "s.jsonl")  # not shared: the file's lock still holds
