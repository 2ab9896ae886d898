"""The design's limits, computed from recorded_at with a manual clock, and recorded as events."""

import pytest

from s09_jsonl_transcript.lab import DurableTranscript
from s09_jsonl_transcript.production import turns
from s09_jsonl_transcript.production.live import CommitRefused, SessionEventLog
from s09_jsonl_transcript.production.timeouts import DEFAULT_LIMITS, Limits, ManualClock


@pytest.fixture
def clock():
    return ManualClock()


@pytest.fixture
def log(tmp_path, clock):
    with SessionEventLog.create(tmp_path / "s.jsonl", clock=clock) as opened:
        yield opened


def on_disk(log):
    return [(e["type"], e.get("limit") or e.get("reason") or e.get("role")) for e in
            DurableTranscript(log.transcript.path).read_events()]


def test_the_designs_defaults():
    assert (DEFAULT_LIMITS.turn_timeout, DEFAULT_LIMITS.tool_timeout, DEFAULT_LIMITS.max_tool_calls_per_turn,
            DEFAULT_LIMITS.session_idle_timeout, DEFAULT_LIMITS.session_max_duration) == (120, 30, 25, 600, 3600)


def test_a_turn_times_out_after_120_seconds_and_the_session_expires(log, clock):
    log.start_turn()
    clock.advance(120)
    assert log.check_timeouts() == []  # at the limit, not past it
    clock.advance(0.5)
    records = log.check_timeouts()
    assert [(r["type"], r.get("limit") or r.get("reason")) for r in records] == [
        ("timeout", turns.TURN_TIMEOUT), ("turn_end", turns.REASON_TIMEOUT)]
    assert records[0]["observed"] == 120.5 and records[0]["allowed"] == 120
    assert records[0]["batch_end"] == records[1]["sequence"]  # one commit
    assert log.status().state == turns.EXPIRED
    assert log.check_timeouts() == []  # an expired session has no more limits
    with pytest.raises(CommitRefused, match="expired"):
        log.start_turn()


def test_time_spent_paused_does_not_count_against_the_turn(log, clock):
    log.start_turn()
    clock.advance(100)
    log.pause()
    clock.advance(1000)  # paused: neither the turn's limit nor idleness applies
    assert log.check_timeouts() == []
    log.resume()
    clock.advance(19)
    assert log.check_timeouts() == []
    clock.advance(2)
    assert [r["limit"] for r in log.check_timeouts() if r["type"] == "timeout"] == [turns.TURN_TIMEOUT]


def test_a_tool_call_times_out_after_30_seconds_and_the_turn_goes_on(log, clock):
    log.start_turn()
    log.record_tool_call("c1", "run_tests")
    clock.advance(10)
    log.record_tool_call("c2", "read_file")
    clock.advance(21)
    records = log.check_timeouts()
    assert [(r["type"], r.get("callId")) for r in records] == [("timeout", "c1"), ("function_call_result", "c1")]
    assert records[1]["success"] is False and "30 s" in records[1]["error"]
    assert log.status().state == turns.RUNNING and log.status().pending_calls == ("c2",)
    log.record_tool_result("c2", "ok")
    log.end_turn(1)
    assert log.status().state == turns.IDLE


def test_reaching_25_tool_calls_completes_the_turn_and_tells_the_user(log, clock):
    log.start_turn()
    for n in range(25):
        log.record_tool_call(f"c{n}", "read_file")
        log.record_tool_result(f"c{n}", "ok")
    records = log.check_timeouts()
    assert [(r["type"], r.get("limit") or r.get("reason") or r.get("role")) for r in records] == [
        ("timeout", turns.MAX_TOOL_CALLS), ("message", "assistant"), ("turn_end", turns.REASON_COMPLETE)]
    assert "25 tool calls" in records[1]["content"]
    assert log.status().state == turns.IDLE


def test_an_idle_session_expires_after_600_seconds(log, clock):
    log.start_turn()
    log.end_turn(1)
    clock.advance(600)
    assert log.check_timeouts() == []
    clock.advance(1)
    assert [r["limit"] for r in log.check_timeouts()] == [turns.SESSION_IDLE_TIMEOUT]
    assert log.status().state == turns.EXPIRED
    assert on_disk(log)[-1] == ("timeout", turns.SESSION_IDLE_TIMEOUT)


def test_a_session_ends_after_3600_seconds_with_its_open_turn(log, clock):
    log.start_turn()
    log.end_turn(1)
    for _ in range(6):  # busy: never idle for 600 s
        clock.advance(500)
        log.user_message("still here")
        log.start_turn()
        log.end_turn(log.status().last_turn)
    clock.advance(500)
    log.start_turn()
    stream = log.open_stream()
    stream.delta("half")
    clock.advance(100.5)
    records = log.check_timeouts()
    assert [(r["type"], r.get("limit") or r.get("reason") or r.get("role")) for r in records] == [
        ("turn_end", turns.REASON_TIMEOUT), ("timeout", turns.SESSION_MAX_DURATION), ("message", "assistant")]
    assert records[0]["unfinished_parts"] == [stream.part_id] and stream.outcome == "unfinished"
    assert records[1]["observed"] == 3600.5
    assert (log.status().state, log.status().open_turn) == (turns.EXPIRED, None)


def test_timeouts_are_evidence_a_fresh_process_reads(tmp_path, clock):
    path = tmp_path / "s.jsonl"
    with SessionEventLog.create(path, clock=clock) as log:
        log.start_turn()
        clock.advance(121)
        log.check_timeouts()
    reopened = SessionEventLog.open(path, clock=clock)
    assert (reopened.status().state, reopened.status().decision) == (turns.EXPIRED, turns.NEW_SESSION)
    assert turns.audit(DurableTranscript(path).read_events()).timeouts == {turns.TURN_TIMEOUT: 1}
    reopened.close()


def test_limits_missed_while_the_process_was_dead_are_recorded_by_the_next_one(tmp_path, clock):
    path = tmp_path / "s.jsonl"
    with SessionEventLog.create(path, clock=clock) as log:
        log.start_turn()
        log.record_tool_call("c1", "run_tests")
    clock.advance(45)  # the runtime was down for 45 s
    with SessionEventLog.open(path, clock=clock) as recovered:
        assert [r["type"] for r in recovered.check_timeouts()] == ["timeout", "function_call_result"]


def test_the_same_script_gives_the_same_records(tmp_path):
    def run(folder):
        clock = ManualClock()
        with SessionEventLog.create(folder / "s.jsonl", clock=clock, limits=Limits(turn_timeout=5)) as log:
            log.start_turn()
            clock.advance(6)
            log.check_timeouts()
        return (folder / "s.jsonl").read_bytes()

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert run(tmp_path / "a") == run(tmp_path / "b")


def test_a_clock_does_not_go_back():
    with pytest.raises(ValueError):
        ManualClock().advance(-1)
