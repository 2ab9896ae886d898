"""Notebook 8's lesson module: the widgets driven in the kernel, the crash, the hand-overs, the drawings."""

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.patches import FancyArrowPatch  # noqa: E402

from s09_jsonl_transcript import turns  # noqa: E402
from s09_jsonl_transcript.code import JSONLTranscript  # noqa: E402
from s09_jsonl_transcript.lessons import live_child, live_session  # noqa: E402
from s09_jsonl_transcript.live import SessionEventLog  # noqa: E402
from s09_jsonl_transcript.timeouts import ManualClock  # noqa: E402


@pytest.fixture
def log(tmp_path):
    with SessionEventLog.create(tmp_path / "live.jsonl", clock=ManualClock()) as opened:
        yield opened


def test_the_reply_is_cut_into_pieces_that_add_up_to_it():
    pieces = live_session.reply_pieces()
    assert len(pieces) > 5 and "".join(pieces) == live_child.REPLY


def test_the_stream_button_streams_a_turn_the_subscriber_shows(log):
    view = live_session.LiveView(log, pace=0)
    before = view.screen.value
    view.button.click()
    assert view.screen.value != before
    assert view.deltas_seen == len(live_session.reply_pieces()) and len(view.committed) == 4
    assert "4 committed events" in view.screen.value and "streaming" not in view.screen.value  # overlay gone
    assert view.status.value.startswith("turn 1:")
    events = JSONLTranscript(log.transcript.path).read_events()
    assert [e["type"] for e in events] == ["turn_start", "message", "message", "turn_end"]
    assert events[2]["content"] == live_child.REPLY
    assert [kind for kind, _ in view.timeline].count("delta") == view.deltas_seen
    shown = view.screen.value
    view.button.click()  # a second press streams a second turn: the result changes again
    assert view.screen.value != shown and "8 committed events" in view.screen.value
    assert "s09-main-control" in view.button._dom_classes and "s09-result" in view.screen._dom_classes


def test_the_view_shows_a_part_while_it_streams_and_a_refusal_when_no_turn_can_start(log):
    view = live_session.LiveView(log, pace=0)
    log.start_turn()
    stream = log.open_stream()
    stream.delta("half of it")
    view.subscription.wait_delivered()
    assert "streaming (memory only): half of it" in view.screen.value
    view.button.click()  # a turn is open: start_turn is refused
    assert view.status.value.startswith("refused: turn 2 started while turn 1 was open")
    log.end_turn(1, turns.REASON_ERROR)  # the turn ends without the part: the part's text leaves the screen
    view.subscription.wait_delivered()
    assert "streaming" not in view.screen.value and "turn_end error" in view.screen.value


def test_a_crash_in_the_middle_of_a_stream_keeps_committed_events_and_no_delta(tmp_path):
    crash = live_session.crash_mid_stream(tmp_path / "crash.jsonl", deltas=5)
    assert crash.client_deltas == tuple(live_session.reply_pieces()[:5])
    assert crash.client_committed == crash.file_sequences == (1, 2, 3)
    assert crash.deltas_in_file == 0 and "".join(crash.client_deltas).strip() not in crash.file_text
    assert crash.status.state == turns.RUNNING and crash.status.pending_calls == ("call_1",)
    assert "deltas found in it: 0" in str(crash)
    figure = Figure()
    live_session.draw_crash(figure.subplots(), crash)
    with pytest.raises(ValueError, match="deltas"):
        live_session.crash_mid_stream(tmp_path / "other.jsonl", deltas=0)


def test_a_client_reconnecting_from_its_cursor_sees_every_event_once(log):
    client = live_session.Client(log)
    client.connect()
    live_session.chat(log, 2)
    client.disconnect()
    live_session.chat(log, 2)
    client.connect()
    live_session.chat(log, 1)
    client.read()
    assert client.received == list(range(1, log.last_sequence + 1)) and client.connections == 2
    assert client.report().endswith("no gap, no duplicate, in order")
    client.received.append(3)
    assert "REPEATS [3]" in client.report()


def test_the_naive_hand_overs_miss_or_repeat_and_subscribe_does_neither(log):
    live_session.chat(log, 2)

    def meanwhile():
        log.commit({"type": "message", "role": "user", "content": "meanwhile"})

    missed = live_session.handover(log, "replay, then subscribe", meanwhile)
    twice = live_session.handover(log, "subscribe, then replay", meanwhile)
    right = live_session.handover(log, "subscribe(from_sequence)", meanwhile)
    assert "missed [" in missed and "twice nothing" in missed
    assert "missed nothing" in twice and "twice [" in twice
    assert right.endswith("missed nothing, twice nothing")


def test_the_stress_hand_over_finds_no_subscriber_that_missed_or_repeated(tmp_path):
    said = live_session.stress_handover(tmp_path / "stress.jsonl", events=120, attaches=20)
    assert said.endswith("20 saw every event after their cursor exactly once, in order; 0 did not")


def test_of_two_threads_closing_a_turn_one_wins(log):
    said = live_session.race_to_close(log, racers=2)
    assert "1 won, 1 refused" in said and said.endswith("in the file: 1")


def test_a_timed_out_session_records_its_timeouts_and_refuses_a_new_turn(tmp_path):
    events, said = live_session.timeout_session(tmp_path / "t.jsonl")
    rows = live_session.timeline_rows(events)
    assert [row[2] for row in rows if row[2] == "timeout"] == ["timeout", "timeout"]
    assert ["31", "121"] == [row[1] for row in rows if row[2] == "timeout"]
    assert "tool_timeout: allowed 30, observed 31" in [row[3] for row in rows]
    assert said.splitlines()[0] == "after 31 s: state running, turn 1 open, calls waiting []"
    assert said.splitlines()[1].startswith("after 121 s: state expired")
    assert "refused: turn_start after the session expired" in said


def test_the_state_machine_panel_applies_steps_and_redraws(tmp_path):
    panel = live_session.StateMachinePanel(tmp_path)
    picture, shown = panel.picture.value, panel.result.value
    panel.step.value = "start turn"
    assert panel.do().startswith("accepted: #1 turn_start")
    assert panel.result.value != shown and "state <b>running</b>" in panel.result.value
    assert panel.picture.value != picture
    panel.step.value = "resume"
    panel.button.click()
    assert "refused: resume_command while running" in panel.result.value
    panel.step.value = "end turn: timeout"
    panel.button.click()
    assert panel.log.status().state == turns.EXPIRED
    panel.new.click()
    assert panel.log.status().state == turns.IDLE and "session 2" in panel.result.value
    assert sorted(path.name for path in tmp_path.glob("machine-*.jsonl")) == ["machine-1.jsonl", "machine-2.jsonl"]
    for step in live_session.STEPS:  # every step either commits or is refused: none raises
        panel.step.value = step
        assert panel.do().startswith(("accepted", "refused"))


def test_the_drawing_has_an_arrow_per_transition_and_fills_the_current_state():
    labels = live_session.edge_labels()
    moving = {(state, target) for (state, trigger), target in turns.TRANSITIONS.items()
              if state != target and turns.SESSION_MAX_DURATION not in trigger}
    assert set(labels) == moving
    figure = Figure()
    axes = figure.subplots()
    live_session.draw_state_machine(axes, turns.PAUSED)
    assert sum(isinstance(patch, FancyArrowPatch) for patch in axes.patches) == len(moving)
    filled = [text for text in axes.texts if text.get_text() == turns.PAUSED][0]
    assert filled.get_bbox_patch().get_facecolor()[:3] != (1.0, 1.0, 1.0)
    assert "now: paused" in axes.get_title()


def test_the_timeline_draws_deltas_and_committed_events_apart():
    figure = Figure()
    axes = figure.subplots()
    live_session.draw_timeline(axes, [("committed", 1), ("delta", None), ("delta", None), ("committed", 2)])
    sizes = [len(collection.get_offsets()) for collection in axes.collections]
    assert sizes == [2, 2]
