"""Live sessions (live.py): committed events and deltas, cursors, subscribers, validated commits."""

import json
import threading

import pytest
from read_counting import ReadsEverything, counted_reads

from s09_jsonl_transcript.code import TranscriptCorruptionError
from s09_jsonl_transcript.crashlab.victim import TearingFileIO
from s09_jsonl_transcript.lab import DurableTranscript
from s09_jsonl_transcript.lab import transcript as lab_transcript  # the module whose readers open files
from s09_jsonl_transcript.production import turns
from s09_jsonl_transcript.production.live import (
    CRASH_ERROR,
    CommitRefused,
    Delta,
    SessionEventLog,
    is_delta,
    page_back,
    read_after,
)
from s09_jsonl_transcript.production.timeouts import ManualClock

LONG_WAIT = 600  # seconds: reached only when delivery is broken, never on a slow or loaded machine


def message(n, role="user"):
    return {"type": "message", "role": role, "content": f"message {n}"}


@pytest.fixture
def log(tmp_path):
    with SessionEventLog.create(tmp_path / "live.jsonl", clock=ManualClock()) as opened:
        yield opened


def drain(subscription):
    """Poll until nothing more comes: a queue that overflowed is refilled from the file on the next poll."""
    items = []
    while batch := subscription.poll():
        items += batch
    return items


def sequences(items):
    return [item["sequence"] for item in items if not is_delta(item)]


def file_events(log):
    return DurableTranscript(log.transcript.path).read_events()


# --------------------------------------------------------------------------- 1. committed events and deltas


def test_deltas_reach_subscribers_and_never_the_file(log):
    log.start_turn()
    subscription = log.subscribe(after_sequence=log.last_sequence)
    stream = log.open_stream("text")  # inside a turn its beginning is committed (part_start)
    assert file_events(log)[-1]["type"] == "part_start" and subscription.poll()[-1]["part_id"] == stream.part_id
    before = log.transcript.path.read_bytes()
    pieces = [stream.delta(text) for text in ("Add", "ing a ", "test")]
    assert log.transcript.path.read_bytes() == before  # not a byte written
    assert subscription.poll() == pieces
    assert all(piece.part_id == stream.part_id and not hasattr(piece, "sequence") for piece in pieces)
    assert [piece.index for piece in pieces] == [0, 1, 2] and stream.text == "Adding a test"
    record = stream.commit({"type": "message", "role": "assistant", "content": stream.text})
    assert record["part_id"] == stream.part_id and record["content"] == "Adding a test"
    assert subscription.poll() == [record]
    assert file_events(log)[-1] == record


def test_a_late_subscriber_replays_committed_events_and_no_delta(log):
    log.start_turn()
    stream = log.open_stream("reasoning")
    stream.delta("thinking ")
    stream.delta("hard")
    stream.commit({"type": "reasoning", "content": stream.text})
    items = log.subscribe(after_sequence=0).poll()
    assert [item["type"] for item in items] == ["turn_start", "part_start", "reasoning"]
    assert not any(map(is_delta, items))


def test_a_stream_ends_with_its_commit(log):
    log.start_turn()
    stream = log.open_stream("tool_progress")
    stream.delta("10%")
    log.record_tool_call("c1", "run_tests")
    stream.commit({"type": "function_call_result", "callId": "c1", "output": "1 passed"})
    with pytest.raises(RuntimeError, match="committed"):
        stream.delta("more")
    with pytest.raises(RuntimeError, match="committed"):
        stream.commit({"type": "reasoning", "content": "again"})
    assert log.open_parts() == {}
    with pytest.raises(ValueError, match="channel"):
        log.open_stream("video")


def test_a_turn_cannot_complete_before_its_streams_commit_their_final_part(log):
    log.start_turn()
    stream = log.open_stream("text")
    stream.delta("half a rep")
    with pytest.raises(CommitRefused, match=f"{stream.part_id} has no committed final part"):
        log.end_turn(1)
    assert file_events(log)[-1]["type"] == "part_start"  # nothing written after the stream's beginning
    record = log.end_turn(1, turns.REASON_USER_INTERRUPT)
    assert record["unfinished_parts"] == [stream.part_id]  # reported, durably
    assert stream.outcome == "unfinished" and log.open_parts() == {}
    with pytest.raises(RuntimeError, match="unfinished"):
        stream.delta("ly")


def test_emit_delta_takes_only_deltas(log):
    subscription = log.subscribe(after_sequence=0)
    log.emit_delta(Delta("p", "text", "x", 0))
    assert subscription.poll() == [Delta("p", "text", "x", 0)]
    with pytest.raises(TypeError):
        log.emit_delta({"type": "message"})


# --------------------------------------------------------------------------- 2. cursors


@pytest.fixture
def twenty(log):
    for n in range(1, 11):
        log.commit(message(n))
    log.commit_batch([message(n) for n in range(11, 16)])
    for n in range(16, 21):
        log.commit(message(n))
    return log


@pytest.mark.parametrize("cursor", [0, 1, 10, 12, 15, 19, 20])
def test_read_from_returns_exactly_the_events_after_the_cursor(twenty, cursor):
    expected = list(range(cursor + 1, 21))
    assert sequences(twenty.read_after(cursor)) == expected
    assert sequences(read_after(DurableTranscript(twenty.transcript.path), cursor)) == expected  # any reader


@pytest.mark.parametrize("cursor", [21, -1, 1.5, True])
def test_a_bad_or_future_cursor_is_refused(twenty, cursor):
    with pytest.raises(ValueError, match="cursor"):
        twenty.read_after(cursor)
    with pytest.raises(ValueError, match="cursor"):
        twenty.subscribe(after_sequence=cursor)


def test_paging_back_visits_every_event_once_in_order(twenty):
    pages, before = [], None
    while True:
        page = twenty.page_back(6, before)
        if not page.events:
            break
        pages.append(sequences(page.events))
        assert page.has_more == (page.events[0]["sequence"] > 1)
        before = page.cursor
    assert pages == [[15, 16, 17, 18, 19, 20], [9, 10, 11, 12, 13, 14], [3, 4, 5, 6, 7, 8], [1, 2]]
    assert sequences(page_back(DurableTranscript(twenty.transcript.path), 3).events) == [18, 19, 20]


def test_read_from_fails_closed_when_the_file_lost_events(twenty):
    data = twenty.transcript.path.read_bytes()
    lines = data.split(b"\n")
    twenty.transcript.path.write_bytes(b"\n".join(lines[:5] + lines[6:]))  # event 6 removed
    with pytest.raises(TranscriptCorruptionError):
        twenty.read_after(2)


BLOCK = 64 * 1024


def _long_log(path, events: int) -> None:
    with DurableTranscript(path) as transcript:
        for first in range(0, events, 1000):
            transcript.append_batch({"type": "reasoning", "content": f"n{n}"} for n in range(first, first + 1000))


def _cursor_read_costs(log: SessionEventLog, events: int) -> list[tuple[int, int]]:
    """(bytes read, budget) for read_after near the end, a page half way back, and a late subscription."""
    costs, half = [], events // 2
    with counted_reads(lab_transcript) as reads:
        reads.clear()
        tail = log.read_after(events - 100)
        assert sequences(tail) == list(range(events - 99, events + 1))
        costs.append((reads.total, sum(len(json.dumps(event)) for event in tail) + BLOCK))
        cursor = log.page_back(half).cursor  # half way back
        reads.clear()
        page = log.page_back(100, cursor)
        assert sequences(page.events) == list(range(half - 99, half + 1))
        costs.append((reads.total, sum(len(json.dumps(event)) for event in page.events) + BLOCK))
        reads.clear()
        subscription = log.subscribe(after_sequence=events - 50)
        assert sequences(subscription.poll()) == list(range(events - 49, events + 1))
        costs.append((reads.total, BLOCK))
    log.close()
    return costs


def test_cursor_reads_read_what_they_return_plus_about_one_block(tmp_path):
    path = tmp_path / "long.jsonl"
    _long_log(path, 60_000)
    costs = _cursor_read_costs(SessionEventLog.open(path), 60_000)
    assert all(read <= budget for read, budget in costs), costs
    assert path.stat().st_size > 100 * costs[1][0]


def test_the_cursor_budgets_refuse_a_reader_of_the_whole_file(tmp_path):
    path = tmp_path / "long.jsonl"
    _long_log(path, 20_000)
    costs = _cursor_read_costs(SessionEventLog(ReadsEverything(path)), 20_000)
    assert all(read > budget for read, budget in costs), costs


# --------------------------------------------------------------------------- 2. subscribers


def test_a_subscriber_gets_the_past_after_its_cursor_then_live_events_in_order(twenty):
    subscription = twenty.subscribe(after_sequence=17)
    twenty.commit(message(21))
    stream = twenty.open_stream()
    piece = stream.delta("live")
    twenty.commit(message(22))
    items = subscription.poll()
    assert sequences(items) == [18, 19, 20, 21, 22] and items[4] == piece
    assert subscription.delivered_upto == 22


def test_a_client_that_reconnects_from_its_cursor_misses_nothing_and_repeats_nothing(twenty):
    first = twenty.subscribe(after_sequence=0)
    seen = sequences(first.poll())
    first.release()
    twenty.commit(message(21))  # while the client is away
    twenty.open_stream().delta("missed: deltas are not replayed")
    twenty.commit(message(22))
    assert first.poll() == []  # a released subscription gets nothing
    second = twenty.subscribe(from_sequence=first.next_sequence)
    twenty.commit(message(23))
    seen += sequences(second.poll())
    assert seen == list(range(1, 24))


def test_callbacks_run_on_the_subscriptions_own_thread_in_order(twenty):
    got, threads = [], set()

    def on_event(item):
        threads.add(threading.current_thread().name)
        got.append(item)

    subscription = twenty.subscribe(after_sequence=10, on_event=on_event)
    for n in range(21, 31):
        twenty.commit(message(n))
    assert subscription.wait_delivered(timeout=LONG_WAIT)
    assert sequences(got) == list(range(11, 31)) and subscription.delivered_upto == 30
    assert threads == {subscription.name} and threading.current_thread().name not in threads
    with pytest.raises(RuntimeError, match="pull mode"):
        subscription.poll()
    subscription.release()
    twenty.commit(message(31))
    assert sequences(got)[-1] == 30


def test_a_failing_callback_ends_only_its_subscription(twenty):
    def explode(item):
        raise ValueError("the client went away")

    broken, healthy = twenty.subscribe(after_sequence=20, on_event=explode), twenty.subscribe(after_sequence=20)
    twenty.commit(message(21))
    assert broken.wait_delivered(timeout=LONG_WAIT)
    twenty.commit(message(22))
    assert broken.released and isinstance(broken.error, ValueError)
    assert sequences(healthy.poll()) == [21, 22]


def test_a_callback_may_commit_without_deadlocking_the_writer(log):
    def answer(item):
        if not is_delta(item) and item["type"] == "message" and item["role"] == "user":
            log.commit({"type": "message", "role": "assistant", "content": "echo " + item["content"]})

    subscription = log.subscribe(after_sequence=0, on_event=answer)
    log.commit(message(1))
    assert subscription.wait_delivered(timeout=LONG_WAIT)
    log.commit(message(2))
    assert subscription.wait_delivered(timeout=LONG_WAIT)
    assert [e["content"] for e in file_events(log)][:2] == ["message 1", "echo message 1"]
    assert len(file_events(log)) == 4


def test_close_releases_every_subscription(tmp_path):
    log = SessionEventLog.create(tmp_path / "s.jsonl")
    subscriptions = [log.subscribe(after_sequence=0), log.subscribe(after_sequence=0, on_event=lambda item: None)]
    log.close()
    assert all(subscription.released for subscription in subscriptions)


def test_a_subscriber_attaching_while_a_thread_appends_misses_nothing_and_repeats_nothing(tmp_path):
    """The hand-over under concurrency, made to happen: 200 attaches at known points of 2,000 appends.

    The writer stops after every tenth commit until the main thread says it may go on. At even
    stops the main thread attaches first and then lets the writer go (the attach sees a still
    file); at odd stops it lets the writer go first and attaches while the appends run (the
    replay and the live events meet in the hand-over). Every attach happens: none depends on
    how many fit into a time window.
    """
    log = SessionEventLog.create(tmp_path / "race.jsonl")
    total, every = 2000, 10
    stopped, go_on = threading.Semaphore(0), threading.Semaphore(0)

    def writer():
        for n in range(1, total + 1):
            if n % 7 == 0:
                log.emit_delta(Delta("p", "text", str(n), n))
            log.commit(message(n))
            if n % every == 0:
                stopped.release()
                go_on.acquire()

    thread = threading.Thread(target=writer)
    thread.start()
    subscriptions = []
    for stop in range(1, total // every + 1):
        assert stopped.acquire(timeout=600), "the writer never reached its next stop"
        cursor = stop * every  # the writer stands still here until go_on
        if stop % 2:
            go_on.release()  # attach while the writer appends
        subscriptions.append((cursor, log.subscribe(after_sequence=cursor - 3)))
        if not stop % 2:
            go_on.release()
    thread.join()
    assert len(subscriptions) == total // every
    for cursor, subscription in subscriptions:
        got = sequences(drain(subscription))
        assert got == list(range(cursor - 3 + 1, total + 1)), (cursor, got[:5])
    log.close()


# --------------------------------------------------------------------------- 3. validated appends


def test_of_eight_threads_closing_one_turn_exactly_one_wins(log):
    log.start_turn()
    start, outcomes = threading.Barrier(8), []

    def close():
        start.wait()
        try:
            log.end_turn(1)
            outcomes.append("won")
        except CommitRefused:
            outcomes.append("refused")

    threads = [threading.Thread(target=close) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["refused"] * 7 + ["won"]
    assert [e["type"] for e in file_events(log)] == ["turn_start", "turn_end"]


def test_the_state_machine_refuses_what_it_has_no_row_for(log):
    with pytest.raises(CommitRefused, match="no turn is open"):
        log.end_turn(1)
    log.start_turn()
    with pytest.raises(CommitRefused, match="turn 2 started while turn 1 was open"):
        log.start_turn()
    with pytest.raises(CommitRefused, match="resume_command while running"):
        log.resume()
    log.end_turn(1, turns.REASON_ERROR)
    with pytest.raises(CommitRefused, match="retry_command comes first"):
        log.start_turn()
    with pytest.raises(CommitRefused, match="a tool call needs a running turn"):
        log.record_tool_call("c1", "read_file")
    log.retry()
    log.start_turn(turns.START_RETRY)
    log.pause()
    with pytest.raises(CommitRefused, match="user_message while paused"):
        log.user_message("hello?")
    log.resume()
    assert log.status().state == turns.RUNNING and log.status().open_turn == 2
    assert [e["type"] for e in file_events(log)] == ["turn_start", "turn_end", "retry_command", "turn_start",
                                                   "pause_command", "resume_command"]


def test_a_tool_result_for_an_unknown_or_answered_call_is_refused(log):
    log.start_turn()
    log.record_tool_call("c1", "read_file", {"path": "calc.py"})
    with pytest.raises(CommitRefused, match="c9, which was never called"):
        log.record_tool_result("c9", "?")
    log.record_tool_result("c1", "def add(a, b): ...")
    with pytest.raises(CommitRefused, match="c1, which was already answered"):
        log.record_tool_result("c1", "again")
    with pytest.raises(CommitRefused, match="reuses callId c1"):
        log.record_tool_call("c1", "read_file")


def test_a_turn_makes_at_most_its_limit_of_tool_calls(tmp_path):
    from s09_jsonl_transcript.production.timeouts import Limits

    log = SessionEventLog.create(tmp_path / "s.jsonl", limits=Limits(max_tool_calls_per_turn=2))
    log.start_turn()
    for call_id in ("c1", "c2"):
        log.record_tool_call(call_id, "run")
    with pytest.raises(CommitRefused, match="already made 2 tool calls"):
        log.record_tool_call("c3", "run")
    log.close()


def test_after_a_crash_every_pending_call_is_answered_with_an_error_in_one_batch(tmp_path):
    path = tmp_path / "s.jsonl"
    with SessionEventLog.create(path, clock=ManualClock()) as before_crash:
        before_crash.start_turn()
        before_crash.record_tool_call("c1", "read_file")
        before_crash.record_tool_call("c2", "run_tests")
        before_crash.record_tool_call("c3", "write_file")
        before_crash.record_tool_result("c2", "ok")
    log = SessionEventLog.open(path, clock=ManualClock())  # a fresh process: the state is rebuilt
    assert log.status().pending_calls == ("c1", "c3")
    answers = log.answer_pending_calls()
    assert [(a["callId"], a["error"]) for a in answers] == [("c1", CRASH_ERROR), ("c3", CRASH_ERROR)]
    assert answers[0]["batch_end"] == answers[1]["sequence"]  # one commit
    assert log.status().pending_calls == () and log.answer_pending_calls() == []
    log.close()


def test_a_refusing_builder_writes_nothing(log):
    def refuse(state):
        raise CommitRefused("not now")

    with pytest.raises(CommitRefused, match="not now"):
        log.commit_validated(refuse)
    assert log.commit_validated(lambda state: None) == []
    assert file_events(log) == []


def test_a_validated_commit_reads_what_another_writer_added_in_between(tmp_path):
    path, tearing = tmp_path / "s.jsonl", TearingFileIO()
    log = SessionEventLog.create(path, file_io=tearing)
    subscription = log.subscribe(after_sequence=0)
    log.start_turn()
    tearing.arm(0.5)
    with pytest.raises(OSError, match="the disk is full"):
        log.commit(message(2))  # the transcript drops its writer: another process may write now
    with DurableTranscript(path) as other:
        other.append(turns.turn_end_event(1, turns.REASON_COMPLETE))
    with pytest.raises(CommitRefused, match="no turn is open"):  # the state checked is the file's
        log.end_turn(1)
    assert log.status().state == turns.IDLE
    log.commit(message(3))
    assert [e["type"] for e in subscription.poll()] == ["turn_start", "turn_end", "message"]
    assert sequences(file_events(log)) == [1, 2, 3]
    log.close()


def test_a_fresh_log_rebuilds_the_state_from_the_file(tmp_path):
    path = tmp_path / "s.jsonl"
    with SessionEventLog.create(path) as first:
        first.start_turn()
        first.pause()
    reopened = SessionEventLog.open(path)
    assert (reopened.status().state, reopened.status().open_turn, reopened.last_sequence) == (turns.PAUSED, 1, 2)
    reopened.close()


def test_replay_keeps_working_on_a_live_sessions_file(tmp_path):
    """Turn markers, commands, timeouts and part_ids are evidence the lesson's fold reads past."""
    clock = ManualClock()
    with SessionEventLog.create(tmp_path / "s.jsonl", clock=clock) as log:
        log.start_turn()
        log.user_message("fix add()")
        log.record_tool_call("c1", "read_file", {"path": "calc.py"})
        clock.advance(31)
        log.check_timeouts()
        log.pause()
        log.resume()
        stream = log.open_stream()
        stream.delta("Done")
        stream.commit({"type": "message", "role": "assistant", "content": "Done."})
        log.end_turn(1, token_summary={"total_input": 10, "total_output": 2, "total_cost": 0.001})
    transcript = DurableTranscript(tmp_path / "s.jsonl")
    assert transcript.replay() == [
        {"role": "user", "content": "fix add()"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "read_file",
                                           "input": {"path": "calc.py"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1",
                                      "content": "error: tool call timed out after 30 s"}]},
        {"role": "assistant", "content": "Done."},
    ]
    state = transcript.recover()
    assert state["pending_calls"] == [] and state["total_events"] == 10
    assert turns.session_status(transcript.read_events()).state == turns.IDLE
