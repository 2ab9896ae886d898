"""The turn lifecycle: markers written through the library, the state fold, crash recovery, the audit."""

import pytest

from s09_jsonl_transcript import turns
from s09_jsonl_transcript.code import TYPE_FUNCTION_CALL, JSONLTranscript, MockLLM, run_agent
from s09_jsonl_transcript.lessons import production
from s09_jsonl_transcript.turns import (
    END_REASONS,
    TURNS_SCRIPT,
    audit,
    end_turn,
    session_status,
    start_turn,
    turn_end_event,
    turn_start_event,
)

TOKENS = {"input_tokens": 100, "output_tokens": 20, "cost_usd": 0.5}

# The table: how the last turn ended -> the session's state and the decision after a crash.
OUTCOMES = {
    turns.REASON_COMPLETE: (turns.IDLE, turns.NOTHING_TO_DO),
    turns.REASON_TIMEOUT: (turns.EXPIRED, turns.CONTINUE),
    turns.REASON_ERROR: (turns.ERROR, turns.RETRY_OR_ABANDON),
    turns.REASON_USER_INTERRUPT: (turns.PAUSED, turns.WAIT_FOR_USER),
    turns.REASON_COMPACTION_TRIGGER: (turns.PAUSED, turns.COMPACT_THEN_CONTINUE),
}


def numbered(events):
    """Events as the reader returns them: with their sequence numbers."""
    return [{**event, "sequence": number} for number, event in enumerate(events, 1)]


# --------------------------------------------------------------------------- writing markers


def test_markers_are_ordinary_events_that_replay_keeps_out_of_messages(transcript):
    start_turn(transcript, 1)
    transcript.append({"type": "message", "role": "user", "content": "hi"})
    end_turn(transcript, 1, turns.REASON_COMPLETE, TOKENS)
    transcript.close()
    reread = JSONLTranscript(transcript.path)
    events = reread.read_events()
    assert [event["type"] for event in events] == ["turn_start", "message", "turn_end"]
    assert events[2]["token_summary"] == TOKENS and events[2]["reason"] == "complete"
    assert reread.replay() == [{"role": "user", "content": "hi"}]
    assert reread.recover()["total_events"] == 3


@pytest.mark.parametrize("number", [0, -1, 1.0, True, "1", None])
def test_a_bad_turn_number_is_refused(number):
    with pytest.raises(ValueError, match="turn_number"):
        turn_start_event(number)
    with pytest.raises(ValueError, match="turn_number"):
        turn_end_event(number, turns.REASON_COMPLETE)


def test_an_unknown_reason_is_refused():
    with pytest.raises(ValueError, match="reason must be one of"):
        turn_end_event(1, "crashed")


@pytest.mark.parametrize("summary", [
    {"input_tokens": 1, "output_tokens": 2},  # a field missing
    {**TOKENS, "extra": 1},  # a field too many
    {**TOKENS, "input_tokens": -1},
    {**TOKENS, "output_tokens": 2.5},
    {**TOKENS, "output_tokens": True},
    {**TOKENS, "cost_usd": float("nan")},
    {**TOKENS, "cost_usd": "0.1"},
    [1, 2, 3],
])
def test_a_bad_token_summary_is_refused(summary):
    with pytest.raises(ValueError, match="token_summary"):
        turn_end_event(1, turns.REASON_COMPLETE, summary)


def test_a_refused_marker_writes_nothing(transcript):
    with pytest.raises(ValueError):
        end_turn(transcript, 1, "crashed")
    assert transcript.count_lines() == 0


# --------------------------------------------------------------------------- the fold


def test_a_transcript_without_turn_markers_keeps_working(bug_fix):
    events = bug_fix.read_events()
    status = session_status(events)
    assert (status.state, status.decision, status.anomalies) == (turns.IDLE, turns.NO_TURN_MARKERS, [])
    report = audit(events)
    assert report.turns_ended == 0 and report.input_tokens == 0 and report.cost_usd == 0
    assert [call.name for call in report.tool_calls] == [e["name"] for e in events if e["type"] == TYPE_FUNCTION_CALL]
    assert all(call.turn_number is None for call in report.tool_calls)


def test_an_open_turn_is_running_and_must_be_rerun():
    status = session_status(numbered([turn_start_event(1), {"type": "message", "role": "user", "content": "x"}]))
    assert (status.state, status.decision, status.open_turn, status.last_turn) == (turns.RUNNING, turns.RERUN, 1, 1)


@pytest.mark.parametrize("reason", END_REASONS)
def test_each_way_a_turn_ends_gives_its_state_and_decision(reason):
    status = session_status(numbered([turn_start_event(1), turn_end_event(1, reason)]))
    assert (status.state, status.decision) == OUTCOMES[reason]
    assert status.open_turn is None and status.last_reason == reason and status.anomalies == []


@pytest.mark.parametrize("reason", END_REASONS)
def test_a_new_turn_starts_from_any_ended_state(reason):
    status = session_status(numbered([turn_start_event(1), turn_end_event(1, reason), turn_start_event(2)]))
    assert (status.state, status.open_turn, status.anomalies) == (turns.RUNNING, 2, [])


def test_the_fold_follows_the_transition_table_for_every_pair():
    for (state, happened), expected in turns.TRANSITIONS.items():
        prefix = {turns.IDLE: [], turns.RUNNING: [turn_start_event(1)]}.get(state)
        if prefix is None:  # reach the ended states through the reason that leads there
            reason = next(r for r, (s, _) in OUTCOMES.items() if s == state)
            prefix = [turn_start_event(1), turn_end_event(1, reason)]
        marker = turn_start_event(2) if happened == turns.TYPE_TURN_START else turn_end_event(1, happened)
        assert session_status(numbered(prefix + [marker])).state == expected, (state, happened)


def test_a_turn_that_never_ended_is_reported_when_the_next_starts():
    status = session_status(numbered([turn_start_event(1), turn_start_event(2)]))
    assert status.state == turns.RUNNING and status.open_turn == 2
    assert [anomaly.sequence for anomaly in status.anomalies] == [2]
    assert "turn 1 has no turn_end" in status.anomalies[0].message


def test_an_end_without_an_open_turn_is_reported_and_ignored():
    status = session_status(numbered([turn_end_event(1, turns.REASON_ERROR)]))
    assert status.state == turns.IDLE and status.last_reason is None
    assert "no turn is open" in status.anomalies[0].message


def test_an_end_for_another_turn_is_reported_and_ignored():
    status = session_status(numbered([turn_start_event(2), turn_end_event(1, turns.REASON_COMPLETE)]))
    assert status.state == turns.RUNNING and status.open_turn == 2
    assert "turn 2 is open" in status.anomalies[0].message


def test_a_turn_number_that_does_not_increase_is_reported():
    events = [turn_start_event(2), turn_end_event(2, turns.REASON_COMPLETE), turn_start_event(2)]
    status = session_status(numbered(events))
    assert status.state == turns.RUNNING
    assert "does not follow" in status.anomalies[0].message


def test_malformed_markers_on_disk_are_reported_not_folded(transcript):
    transcript.append({"type": "turn_start", "turn_number": "one"})
    transcript.append({"type": "turn_start"})
    start_turn(transcript, 1)
    transcript.append({"type": "turn_end", "turn_number": 1, "reason": "exploded"})
    status = session_status(transcript.read_events())
    assert [anomaly.sequence for anomaly in status.anomalies] == [1, 2, 4]
    assert (status.state, status.open_turn) == (turns.RUNNING, 1)


# --------------------------------------------------------------------------- crashes


def test_every_crash_point_of_the_script_folds_its_prefix():
    rows = production.crash_points()
    assert [row["events"] for row in rows] == list(range(len(TURNS_SCRIPT) + 1))
    for row in rows:
        assert row["status"] == session_status(numbered(TURNS_SCRIPT[: row["events"]]))
    reached = {(row["status"].state, row["status"].decision) for row in rows}
    assert set(OUTCOMES.values()) | {(turns.RUNNING, turns.RERUN)} <= reached


@pytest.mark.parametrize("count", [0, 5, 9, 14, len(TURNS_SCRIPT)])
def test_a_killed_writer_leaves_what_it_appended_and_recovery_decides_from_it(tmp_path, count):
    path = tmp_path / "killed.jsonl"
    status = production.crash_and_recover(path, count)
    events = JSONLTranscript(path).read_events()
    assert [{k: v for k, v in e.items() if k in TURNS_SCRIPT[i]} for i, e in enumerate(events)] == list(
        TURNS_SCRIPT[:count])
    assert status == session_status(numbered(TURNS_SCRIPT[:count]))


def test_a_killed_writer_released_its_lock(tmp_path):
    path = tmp_path / "killed.jsonl"
    production.crash_and_recover(path, 3)
    with JSONLTranscript(path) as transcript:  # the kill dropped the lock: a new writer may append
        assert transcript.append(turn_end_event(1, turns.REASON_ERROR))["sequence"] == 4
    assert session_status(JSONLTranscript(path).read_events()).state == turns.ERROR


def test_the_crash_lab_button_kills_a_writer_and_shows_the_decision(tmp_path):
    lab = production.CrashLab(tmp_path)
    path = tmp_path / "crash-lab.jsonl"
    before = lab.result.value
    lab.point.value = 14
    lab.button.click()
    assert lab.result.value != before
    assert "expired" in lab.result.value and turns.CONTINUE in lab.result.value
    assert len(JSONLTranscript(path).read_events()) == 14
    shown = lab.result.value
    lab.button.click()  # the same point again: the result still changes, so a click is never silent
    assert lab.result.value != shown and len(JSONLTranscript(path).read_events()) == 14
    lab.point.value = 2
    lab.button.click()  # a new crash starts a fresh transcript
    assert len(JSONLTranscript(path).read_events()) == 2 and "running" in lab.result.value
    assert "s09-main-control" in lab.button._dom_classes and "s09-result" in lab.result._dom_classes


def test_the_crash_lab_without_a_folder_leaves_nothing_behind(tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))  # where TemporaryDirectory puts its folders
    lab = production.CrashLab()
    lab.point.value = 18
    lab.button.click()
    assert "error" in lab.result.value and turns.RETRY_OR_ABANDON in lab.result.value
    assert list(tmp_path.iterdir()) == []


def test_a_crash_point_outside_the_script_is_refused(tmp_path):
    with pytest.raises(ValueError, match="count must be between"):
        production.crash_writer_after(tmp_path / "x.jsonl", len(TURNS_SCRIPT) + 1)


# --------------------------------------------------------------------------- the audit


def test_the_audit_adds_up_token_summaries_and_lists_tool_calls_by_turn(transcript):
    transcript.append_batch(TURNS_SCRIPT)
    events = transcript.read_events()
    report = audit(events)
    ends = [event for event in TURNS_SCRIPT if event["type"] == turns.TYPE_TURN_END]
    assert report.turns_ended == len(ends)
    assert report.end_reasons == {reason: sum(e["reason"] == reason for e in ends) for reason in END_REASONS}
    assert report.input_tokens == sum(e["token_summary"]["input_tokens"] for e in ends)
    assert report.output_tokens == sum(e["token_summary"]["output_tokens"] for e in ends)
    assert report.cost_usd == pytest.approx(sum(e["token_summary"]["cost_usd"] for e in ends))
    calls = [event for event in events if event["type"] == TYPE_FUNCTION_CALL]
    assert [(c.sequence, c.recorded_at, c.name, c.call_id) for c in report.tool_calls] == [
        (e["sequence"], e["recorded_at"], e["name"], e["callId"]) for e in calls]
    open_turn_of = {}
    turn = None
    for event in events:
        turn = event["turn_number"] if event["type"] == "turn_start" else None if event["type"] == "turn_end" else turn
        open_turn_of[event["sequence"]] = turn
    assert [c.turn_number for c in report.tool_calls] == [open_turn_of[e["sequence"]] for e in calls]


def test_the_audit_skips_a_malformed_token_summary(transcript):
    start_turn(transcript, 1)
    transcript.append({"type": "turn_end", "turn_number": 1, "reason": "complete",
                       "token_summary": {"input_tokens": "many", "output_tokens": 1, "cost_usd": 1}})
    start_turn(transcript, 2)
    end_turn(transcript, 2, turns.REASON_COMPLETE, TOKENS)
    report = audit(transcript.read_events())
    assert report.turns_ended == 2
    assert (report.input_tokens, report.output_tokens, report.cost_usd) == (100, 20, 0.5)


def test_turn_markers_mixed_into_an_agent_run_do_not_change_its_messages(tmp_path):
    plain = JSONLTranscript(tmp_path / "plain.jsonl")
    marked = JSONLTranscript(tmp_path / "marked.jsonl")
    run_agent(plain, MockLLM())
    start_turn(marked, 1)
    run_agent(marked, MockLLM())
    end_turn(marked, 1, turns.REASON_COMPLETE, TOKENS)
    plain.close()
    marked.close()
    assert JSONLTranscript(marked.path).replay() == JSONLTranscript(plain.path).replay()
    assert session_status(JSONLTranscript(marked.path).read_events()).decision == turns.NOTHING_TO_DO
