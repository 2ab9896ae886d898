"""The turn lifecycle as seed 002 designs it: markers and commands, the state machine, crash decisions,
the departures table, and an audit that never counts an unreadable token summary as 0."""

import pytest

from s09_jsonl_transcript.code import TYPE_FUNCTION_CALL, MockLLM, run_agent
from s09_jsonl_transcript.lab import DurableTranscript
from s09_jsonl_transcript.lessons import read_model_and_turns as production
from s09_jsonl_transcript.production import turns
from s09_jsonl_transcript.production.departures import PAGE, DeparturesUnavailable, read_departures
from s09_jsonl_transcript.production.turns import (
    END_REASONS,
    STATES,
    TRANSITIONS,
    TURNS_SCRIPT,
    AuditError,
    audit,
    command_event,
    end_turn,
    session_status,
    start_turn,
    timeout_event,
    tool_result_event,
    turn_end_event,
    turn_start_event,
)

DESIGN_TOKENS = {"total_input": 100, "total_output": 20, "total_cost": 0.5}
KIT_TOKENS = {"input_tokens": 100, "output_tokens": 20, "cost_usd": 0.5}


def numbered(events):
    """Events as the reader returns them: with their sequence numbers."""
    return [{**event, "sequence": number} for number, event in enumerate(events, 1)]


def user(text="hi"):
    return {"type": "message", "role": "user", "content": text}


def call(call_id="c1"):
    return {"type": "function_call", "callId": call_id, "name": "read_file", "arguments": {}}


# Events that bring a marked session into each state (turn 1 is the open or last turn).
REACH = {
    turns.IDLE: [turn_start_event(1), turn_end_event(1, turns.REASON_COMPLETE)],
    turns.RUNNING: [turn_start_event(1)],
    turns.ERROR: [turn_start_event(1), turn_end_event(1, turns.REASON_ERROR)],
    turns.PAUSED: [turn_start_event(1), command_event(turns.TYPE_PAUSE)],
    turns.EXPIRED: [turn_start_event(1), turn_end_event(1, turns.REASON_TIMEOUT)],
}


def trigger_event(trigger):
    """An event that is this trigger (turn_end for turn 1, turn_start for turn 2)."""
    if trigger == turns.USER_MESSAGE:
        return user()
    if trigger == turns.TYPE_TURN_START:
        return turn_start_event(2)
    if trigger in turns.COMMAND_TYPES:
        return command_event(trigger)
    for reason in END_REASONS:
        if trigger == turns.end_trigger(reason):
            return turn_end_event(1, reason)
    for limit in turns.SESSION_LIMITS:
        if trigger == turns.timeout_trigger(limit):
            return timeout_event(limit, 1, 2)
    raise AssertionError(trigger)


TRIGGERS = sorted({trigger for _, trigger in TRANSITIONS})

# --------------------------------------------------------------------------- writing


def test_markers_are_ordinary_events_that_replay_keeps_out_of_messages(transcript):
    start_turn(transcript, 1)
    transcript.append(user())
    end_turn(transcript, 1, turns.REASON_COMPLETE, KIT_TOKENS)
    transcript.close()
    reread = DurableTranscript(transcript.path)
    events = reread.read_events()
    assert [event["type"] for event in events] == ["turn_start", "message", "turn_end"]
    assert events[0]["reason"] == turns.START_USER
    assert events[2]["token_summary"] == DESIGN_TOKENS and events[2]["reason"] == "complete"
    assert reread.replay() == [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize("number", [0, -1, 1.0, True, "1", None])
def test_a_bad_turn_number_is_refused(number):
    with pytest.raises(ValueError, match="turn_number"):
        turn_start_event(number)
    with pytest.raises(ValueError, match="turn_number"):
        turn_end_event(number, turns.REASON_COMPLETE)


def test_unknown_reasons_commands_and_limits_are_refused():
    with pytest.raises(ValueError, match="reason must be one of"):
        turn_end_event(1, "crashed")
    with pytest.raises(ValueError, match="turn_start reason"):
        turn_start_event(1, "because")
    with pytest.raises(ValueError, match="command"):
        command_event("stop_command")
    with pytest.raises(ValueError, match="limit"):
        timeout_event("patience", 1, 2)


@pytest.mark.parametrize("summary", [
    {"total_input": 1, "total_output": 2},  # a field missing
    {**DESIGN_TOKENS, "extra": 1},  # a field too many
    {"total_input": 1, "output_tokens": 2, "total_cost": 0.1},  # the two key sets mixed
    {**DESIGN_TOKENS, "total_input": -1},
    {**KIT_TOKENS, "output_tokens": 2.5},
    {**DESIGN_TOKENS, "total_output": True},
    {**KIT_TOKENS, "cost_usd": float("nan")},
    {**DESIGN_TOKENS, "total_cost": "0.1"},
    [1, 2, 3],
])
def test_a_bad_token_summary_is_refused(summary):
    with pytest.raises(ValueError, match="token_summary"):
        turn_end_event(1, turns.REASON_COMPLETE, summary)


def test_either_key_set_is_written_in_the_designs_keys():
    for summary in (DESIGN_TOKENS, KIT_TOKENS):
        assert turn_end_event(1, "complete", summary)["token_summary"] == DESIGN_TOKENS


def test_a_refused_marker_writes_nothing(transcript):
    with pytest.raises(ValueError):
        end_turn(transcript, 1, "crashed")
    assert transcript.count_lines() == 0


def test_tool_results_say_success_or_error():
    assert tool_result_event("c1", "ok") == {"type": "function_call_result", "callId": "c1", "success": True,
                                             "output": "ok"}
    failed = tool_result_event("c1", error="boom")
    assert failed["success"] is False and failed["error"] == "boom" and failed["output"] == "error: boom"


# --------------------------------------------------------------------------- the state machine


@pytest.mark.parametrize("state, trigger", sorted(TRANSITIONS), ids=lambda value: str(value))
def test_every_row_of_the_table_is_what_the_fold_does(state, trigger):
    prefix = REACH[state]
    if state == turns.RUNNING and trigger == turns.TYPE_TURN_START:
        prefix = REACH[turns.IDLE] + [user()]  # a run started by a user message, with no turn yet
    status = session_status(numbered(prefix + [trigger_event(trigger)]))
    assert status.state == TRANSITIONS[(state, trigger)], (state, trigger)
    assert status.anomalies == []


@pytest.mark.parametrize("state", STATES)
@pytest.mark.parametrize("trigger", TRIGGERS)
def test_a_trigger_with_no_row_is_reported_and_changes_nothing(state, trigger):
    if (state, trigger) in TRANSITIONS or state == turns.EXPIRED:
        return
    status = session_status(numbered(REACH[state] + [trigger_event(trigger)]))
    assert status.state == state, (state, trigger)
    assert len(status.anomalies) == 1, (state, trigger, status.anomalies)


@pytest.mark.parametrize("trigger", TRIGGERS)
def test_expired_is_terminal_and_work_there_is_reported(trigger):
    status = session_status(numbered(REACH[turns.EXPIRED] + [trigger_event(trigger)]))
    assert (status.state, status.decision) == (turns.EXPIRED, turns.NEW_SESSION)
    assert bool(status.anomalies) == (trigger in turns.WORK_TRIGGERS)
    after_call = session_status(numbered(REACH[turns.EXPIRED] + [call()]))
    assert after_call.state == turns.EXPIRED and "after the session expired" in after_call.anomalies[0].message


def test_a_user_message_starts_a_run_once_the_session_has_markers():
    status = session_status(numbered(REACH[turns.IDLE] + [user()]))
    assert (status.state, status.open_turn, status.decision) == (turns.RUNNING, None, turns.RERUN)
    status = session_status(numbered(REACH[turns.IDLE] + [user(), turn_start_event(2)]))
    assert (status.state, status.open_turn, status.anomalies) == (turns.RUNNING, 2, [])


def test_error_needs_a_retry_command_before_the_next_turn():
    refused = session_status(numbered(REACH[turns.ERROR] + [turn_start_event(2)]))
    assert refused.state == turns.ERROR and "retry_command" in refused.anomalies[0].message
    retried = session_status(numbered(REACH[turns.ERROR] + [command_event(turns.TYPE_RETRY),
                                                            turn_start_event(2, turns.START_RETRY)]))
    assert (retried.state, retried.open_turn, retried.anomalies) == (turns.RUNNING, 2, [])


def test_pause_and_resume_are_commands_and_the_turn_stays_open():
    paused = session_status(numbered(REACH[turns.PAUSED]))
    assert (paused.state, paused.open_turn, paused.decision) == (turns.PAUSED, 1, turns.WAIT_FOR_RESUME)
    resumed = session_status(numbered(REACH[turns.PAUSED] + [command_event(turns.TYPE_RESUME)]))
    assert (resumed.state, resumed.open_turn) == (turns.RUNNING, 1)


def test_an_open_turn_is_running_and_is_resumed_not_run_again():
    status = session_status(numbered([turn_start_event(1), user()]))
    assert (status.state, status.decision, status.open_turn, status.last_turn) == (turns.RUNNING, turns.RERUN, 1, 1)
    assert status.decision.startswith("resume") and "re-run" not in status.decision  # the tool rule's word


DECISIONS = {
    turns.REASON_COMPLETE: (turns.IDLE, turns.NOTHING_TO_DO),
    turns.REASON_TIMEOUT: (turns.EXPIRED, turns.NEW_SESSION),
    turns.REASON_ERROR: (turns.ERROR, turns.RETRY_OR_ABANDON),
    turns.REASON_USER_INTERRUPT: (turns.IDLE, turns.WAIT_FOR_USER),
    turns.REASON_COMPACTION_TRIGGER: (turns.IDLE, turns.COMPACT_THEN_CONTINUE),
}


@pytest.mark.parametrize("reason", END_REASONS)
def test_each_way_a_turn_ends_gives_its_state_and_decision(reason):
    status = session_status(numbered([turn_start_event(1), turn_end_event(1, reason)]))
    assert (status.state, status.decision) == DECISIONS[reason]
    assert status.open_turn is None and status.last_reason == reason and status.anomalies == []


def test_a_turn_that_never_ended_is_reported_when_the_next_starts():
    status = session_status(numbered([turn_start_event(1), turn_start_event(2)]))
    assert status.state == turns.RUNNING and status.open_turn == 2
    assert [anomaly.sequence for anomaly in status.anomalies] == [2]
    assert "turn 1 has no turn_end" in status.anomalies[0].message


def test_an_end_without_an_open_turn_or_for_another_turn_is_reported_and_ignored():
    status = session_status(numbered([turn_end_event(1, turns.REASON_ERROR)]))
    assert status.state == turns.IDLE and status.last_reason is None
    assert "no turn is open" in status.anomalies[0].message
    status = session_status(numbered([turn_start_event(2), turn_end_event(1, turns.REASON_COMPLETE)]))
    assert status.state == turns.RUNNING and status.open_turn == 2 and "turn 2 is open" in status.anomalies[0].message


def test_a_turn_number_that_does_not_increase_is_reported():
    status = session_status(numbered([turn_start_event(2), turn_end_event(2, "complete"), turn_start_event(2)]))
    assert status.state == turns.RUNNING and "does not follow" in status.anomalies[0].message


def test_results_for_unknown_or_answered_calls_are_reported():
    status = session_status(numbered([turn_start_event(1), call("c1"), tool_result_event("c1", "x"),
                                      tool_result_event("c1", "again"), tool_result_event("c9", "who?"), call("c1")]))
    assert [anomaly.message for anomaly in status.anomalies] == [
        "result for c1, which was already answered", "result for c9, which was never called",
        "function_call reuses callId c1"]
    assert session_status(numbered([turn_start_event(1), call("c2")])).pending_calls == ("c2",)


def test_malformed_markers_on_disk_are_reported_not_folded(transcript):
    transcript.append({"type": "turn_start", "turn_number": "one"})
    transcript.append({"type": "turn_start"})
    start_turn(transcript, 1)
    transcript.append({"type": "turn_end", "turn_number": 1, "reason": "exploded"})
    transcript.append({"type": "turn_start", "turn_number": 2, "reason": "because"})
    status = session_status(transcript.read_events())
    assert [anomaly.sequence for anomaly in status.anomalies] == [1, 2, 4, 5]
    assert (status.state, status.open_turn) == (turns.RUNNING, 1)


def test_a_transcript_without_turn_markers_keeps_working(bug_fix):
    events = bug_fix.read_events()
    status = session_status(events)
    assert (status.state, status.decision, status.anomalies) == (turns.IDLE, turns.NO_TURN_MARKERS, [])
    report = audit(events)
    assert report.turns_ended == 0 and report.input_tokens == 0 and report.cost_usd == 0
    assert [call.name for call in report.tool_calls] == [e["name"] for e in events if e["type"] == TYPE_FUNCTION_CALL]
    assert all(call.turn_number is None for call in report.tool_calls)


def test_a_newer_schema_event_is_evidence_the_fold_ignores():
    newer = {"type": "function_call", "schema_version": 2, "sequence": 2}  # no callId: a layout we do not know
    status = session_status([{**turn_start_event(1), "sequence": 1}, newer])
    assert (status.state, status.anomalies) == (turns.RUNNING, [])


# --------------------------------------------------------------------------- the departures table


def test_departure_event_names_a_user_message_is_a_message_with_role_user():
    assert turns.trigger_of(user()) == turns.USER_MESSAGE
    assert turns.trigger_of({"type": "message", "role": "assistant", "content": "x"}) is None


def test_departure_what_starts_a_run_turn_start_does_and_a_plain_log_stays_idle():
    assert session_status(numbered([turn_start_event(1)])).state == turns.RUNNING
    assert session_status(numbered([user()])).state == turns.IDLE  # the lesson's plain log


def test_departure_user_interrupt_compaction_trigger_end_in_idle():
    for reason in (turns.REASON_USER_INTERRUPT, turns.REASON_COMPACTION_TRIGGER):
        assert session_status(numbered([turn_start_event(1), turn_end_event(1, reason)])).state == turns.IDLE


def test_departure_a_turn_that_timed_out_expires_the_session_for_good():
    status = session_status(numbered(REACH[turns.EXPIRED] + [turn_start_event(2)]))
    assert (status.state, status.decision) == (turns.EXPIRED, turns.NEW_SESSION) and status.anomalies


def test_departure_abandon_has_no_event_only_retry_leaves_error():
    leaving = {trigger for (state, trigger), target in TRANSITIONS.items() if state == turns.ERROR and target != state}
    assert leaving == {turns.TYPE_RETRY, turns.timeout_trigger(turns.SESSION_MAX_DURATION)}


def test_departure_tool_results_keep_output_for_the_model():
    failed = tool_result_event("c1", error="boom")
    assert failed["output"] and failed["success"] is False


def test_departure_max_tool_calls_per_turn_notice_is_an_assistant_message():
    from s09_jsonl_transcript.production.timeouts import Limits, ManualClock, due_timeouts

    clock = ManualClock()
    fold = turns.SessionFold()
    fold.add_all([{**event, "sequence": n, "recorded_at": clock().isoformat()} for n, event in
                  enumerate([turn_start_event(1), call("c1"), tool_result_event("c1", "x")], 1)])
    events = due_timeouts(fold, clock(), Limits(max_tool_calls_per_turn=1))
    assert [e["type"] for e in events] == ["timeout", "message", "turn_end"]
    assert events[1]["role"] == "assistant" and events[2]["reason"] == turns.REASON_COMPLETE


def test_every_departure_row_says_design_kit_and_why_and_the_first_seven_have_their_test():
    """The seed-002 rows kept their tests here; tests/test_seed_rows.py drives every row of both seeds."""
    tested = [name for name in globals() if name.startswith("test_departure_")]
    for row in turns.DEPARTURES:
        assert row.keys() == {"topic", "design", "kit", "why"} and all(row.values())
    assert len({row["topic"] for row in turns.DEPARTURES}) == len(turns.DEPARTURES)
    for row in turns.DEPARTURES[:7]:
        slug = "test_departure_" + "_".join(row["topic"].replace(",", "").split())
        assert [name for name in tested if name.startswith(slug)], f"no test for the departure {row['topic']!r}"



def test_the_departures_are_read_from_the_production_page_and_its_chinese_twin_has_every_row():
    """The table is design prose kept in docs/production.md; docs/zh/production.md translates each row."""
    assert turns.DEPARTURES == read_departures(PAGE) and len(turns.DEPARTURES) > 7
    chinese = PAGE.parent / "zh" / "production.md"
    section = chinese.read_text(encoding="utf-8").split("## 本教具偏离设计的地方", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| 主题 |")]
    assert len(rows) == len(turns.DEPARTURES), "a departure added in English is translated in docs/zh/production.md"


def test_reading_the_departures_refuses_a_missing_page_or_section_and_a_broken_row(tmp_path):
    page = tmp_path / "production.md"
    with pytest.raises(DeparturesUnavailable, match="is missing"):
        read_departures(page)
    page.write_text("# A page\n\n## Something else\n", encoding="utf-8")
    with pytest.raises(DeparturesUnavailable, match="has no section"):
        read_departures(page)
    table = "\n".join(["## Where the kit departs from the designs", "", "| topic | the design | the kit | why |",
                       "|---|---|---|---|", "| a | b | c | d |", "| e | f | g |", "", "## Next", "| x | y |"])
    page.write_text(table, encoding="utf-8")
    with pytest.raises(ValueError, match=r"4 non-empty cells .*'\| e \| f \| g \|'"):
        read_departures(page)
    page.write_text(table.replace("| e | f | g |", "| e | f | g | h |"), encoding="utf-8")
    assert read_departures(page) == ({"topic": "a", "design": "b", "kit": "c", "why": "d"},
                                     {"topic": "e", "design": "f", "kit": "g", "why": "h"})


# --------------------------------------------------------------------------- crashes


def test_every_crash_point_of_the_script_folds_its_prefix_and_reaches_every_state():
    plans = [production.recovery_plan(numbered(TURNS_SCRIPT[:count])) for count in range(len(TURNS_SCRIPT) + 1)]
    for count, plan in enumerate(plans):
        assert plan.status == session_status(numbered(TURNS_SCRIPT[:count]))
        assert plan.status.anomalies == []
    reached = {(plan.status.state, plan.status.decision) for plan in plans}
    assert {state for state, _ in reached} == set(STATES)
    assert set(DECISIONS.values()) | {(turns.RUNNING, turns.RERUN), (turns.PAUSED, turns.WAIT_FOR_RESUME)} <= reached


@pytest.mark.parametrize("count", [0, 5, 14, 19, len(TURNS_SCRIPT)])
def test_a_killed_writer_leaves_what_it_appended_and_recovery_decides_from_it(tmp_path, count):
    path = tmp_path / "killed.jsonl"
    status = production.crash_and_plan(path, count).status
    events = DurableTranscript(path).read_events()
    assert [{k: v for k, v in e.items() if k in TURNS_SCRIPT[i]} for i, e in enumerate(events)] == list(
        TURNS_SCRIPT[:count])
    assert status == session_status(numbered(TURNS_SCRIPT[:count]))


def test_a_killed_writer_released_its_lock(tmp_path):
    path = tmp_path / "killed.jsonl"
    production.crash_and_plan(path, 3)
    with DurableTranscript(path) as transcript:  # the kill dropped the lock: a new writer may append
        assert transcript.append(turn_end_event(1, turns.REASON_ERROR))["sequence"] == 4
    assert session_status(DurableTranscript(path).read_events()).state == turns.ERROR


def test_the_crash_lab_button_kills_a_writer_and_shows_the_decision(tmp_path):
    lab = production.CrashLab(tmp_path)
    path = tmp_path / "crash-lab.jsonl"
    before = lab.result.value
    lab.point.value = 14
    lab.button.click()
    assert lab.result.value != before
    assert "error" in lab.result.value and turns.RETRY_OR_ABANDON in lab.result.value
    assert len(DurableTranscript(path).read_events()) == 14
    shown = lab.result.value
    lab.button.click()  # the same point again: the result still changes, so a click is never silent
    assert lab.result.value != shown and len(DurableTranscript(path).read_events()) == 14
    lab.point.value = 2
    lab.button.click()  # a new crash starts a fresh transcript
    assert len(DurableTranscript(path).read_events()) == 2 and "running" in lab.result.value
    assert "s09-main-control" in lab.button._dom_classes and "s09-result" in lab.result._dom_classes


def test_the_crash_lab_without_a_folder_leaves_nothing_behind(tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))  # where TemporaryDirectory puts its folders
    lab = production.CrashLab()
    lab.point.value = 19
    lab.button.click()
    assert "paused" in lab.result.value and turns.WAIT_FOR_RESUME in lab.result.value
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
    assert report.input_tokens == sum(e["token_summary"]["total_input"] for e in ends) > 0
    assert report.output_tokens == sum(e["token_summary"]["total_output"] for e in ends) > 0
    assert report.cost_usd == pytest.approx(sum(e["token_summary"]["total_cost"] for e in ends))
    calls = [event for event in events if event["type"] == TYPE_FUNCTION_CALL]
    assert [(c.sequence, c.recorded_at, c.name, c.call_id) for c in report.tool_calls] == [
        (e["sequence"], e["recorded_at"], e["name"], e["callId"]) for e in calls]
    assert [c.outcome for c in report.tool_calls] == ["ok", "ok", "error", "ok", "error"]
    assert report.timeouts == {turns.TOOL_TIMEOUT: 1, turns.TURN_TIMEOUT: 1}
    open_turn_of, turn = {}, None
    for event in events:
        turn = event["turn_number"] if event["type"] == "turn_start" else None if event["type"] == "turn_end" else turn
        open_turn_of[event["sequence"]] = turn
    assert [c.turn_number for c in report.tool_calls] == [open_turn_of[e["sequence"]] for e in calls]


def test_the_audit_reads_the_designs_keys_and_the_kits_older_ones(transcript):
    start_turn(transcript, 1)
    transcript.append({"type": "turn_end", "turn_number": 1, "reason": "complete", "token_summary": DESIGN_TOKENS})
    start_turn(transcript, 2)
    transcript.append({"type": "turn_end", "turn_number": 2, "reason": "complete", "token_summary": KIT_TOKENS})
    report = audit(transcript.read_events())
    assert (report.input_tokens, report.output_tokens, report.cost_usd) == (200, 40, 1.0)


def test_the_audit_refuses_a_summary_it_cannot_read_naming_the_event(transcript):
    start_turn(transcript, 1)
    transcript.append({"type": "turn_end", "turn_number": 1, "reason": "complete",
                       "token_summary": {"tokens": 1200, "dollars": 0.1}})
    with pytest.raises(AuditError, match="event 2 .transcript:session:2.") as refused:
        audit(transcript.read_events())
    assert "total_input" in str(refused.value)


def test_the_audit_lists_turns_without_a_summary(transcript):
    start_turn(transcript, 1)
    end_turn(transcript, 1, turns.REASON_ERROR)
    report = audit(transcript.read_events())
    assert report.turns_ended == 1 and report.turns_without_token_summary == [1]


def test_the_audit_leaves_out_turn_ends_the_state_machine_rejects(transcript):
    start_turn(transcript, 1)
    end_turn(transcript, 1, turns.REASON_COMPLETE, DESIGN_TOKENS)
    transcript.append({"type": "turn_end", "turn_number": 1, "reason": "complete", "token_summary": KIT_TOKENS})
    transcript.append({"type": "turn_end", "turn_number": 7, "reason": "error", "token_summary": KIT_TOKENS})
    report = audit(transcript.read_events())
    assert report.turns_ended == 1 and report.end_reasons == {"complete": 1}
    assert report.input_tokens == DESIGN_TOKENS["total_input"] and report.rejected_turn_ends == [3, 4]


def test_the_audit_and_the_state_read_a_rewound_session_as_the_marker_says(transcript):
    start_turn(transcript, 1)
    end_turn(transcript, 1, turns.REASON_COMPLETE, DESIGN_TOKENS)
    start_turn(transcript, 2)
    end_turn(transcript, 2, turns.REASON_ERROR, KIT_TOKENS)
    transcript.append(turns.rewind_event(2))
    events = transcript.read_events()
    assert [event["sequence"] for event in turns.materialize(events)] == [1, 2]
    assert turns.session_status(events).state == turns.IDLE  # the error of turn 2 is undone
    assert audit(events).turns_ended == 1 and audit(events).input_tokens == DESIGN_TOKENS["total_input"]
    assert turns.materialize([*events, {**turns.rewind_event(0), "sequence": 6}]) == []


def test_a_turn_with_a_part_start_on_disk_cannot_complete_until_its_final_part():
    events = numbered([turn_start_event(1), turns.part_start_event("p1", "text", 1),
                       turn_end_event(1, turns.REASON_COMPLETE)])
    status = turns.session_status(events)
    assert status.state == turns.RUNNING and status.open_parts == ("p1",)
    assert "p1 has no committed final part" in status.anomalies[0].message
    events = numbered([turn_start_event(1), turns.part_start_event("p1", "text", 1),
                       {"type": "message", "role": "assistant", "content": "done", "part_id": "p1"},
                       turn_end_event(1, turns.REASON_COMPLETE)])
    assert turns.session_status(events).state == turns.IDLE and turns.session_status(events).anomalies == []


def test_turn_markers_mixed_into_an_agent_run_do_not_change_its_messages(tmp_path):
    plain = DurableTranscript(tmp_path / "plain.jsonl")
    marked = DurableTranscript(tmp_path / "marked.jsonl")
    run_agent(plain, MockLLM())
    start_turn(marked, 1)
    run_agent(marked, MockLLM())
    end_turn(marked, 1, turns.REASON_COMPLETE, DESIGN_TOKENS)
    plain.close()
    marked.close()
    assert DurableTranscript(marked.path).replay() == DurableTranscript(plain.path).replay()
    assert session_status(DurableTranscript(marked.path).read_events()).decision == turns.NOTHING_TO_DO
