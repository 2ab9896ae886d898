"""Reading: the validated fold, the torn-tail rule, repair before append, replay windows."""

import json
import os

import pytest

from s09_jsonl_transcript.code import (
    BUG_FIX_SCRIPT,
    SCHEMA_VERSION,
    MockLLM,
    ReplayState,
    TranscriptCorruptionError,
    TranscriptLockedError,
    run_agent,
    ticking_clock,
)
from s09_jsonl_transcript.lab import DurableTranscript

USER = {"type": "message", "role": "user", "content": "hello"}


def lines_of(path):
    return path.read_bytes().split(b"\n")


def write_lines(path, lines):
    path.write_bytes(b"\n".join(lines))


def corruption(path):
    with pytest.raises(TranscriptCorruptionError) as caught:
        DurableTranscript(path).read_events()
    return caught.value


# -- the partial tail, and only the partial tail, is forgiven ----------------------------------


@pytest.mark.parametrize("tail", [b'{"schema_version":1,"seq', b"\0" * 37, b"{", b"   ", b"\xff\xfe"])
def test_an_unterminated_fragment_is_ignored_and_reported(bug_fix, tail):
    with open(bug_fix.path, "ab") as file:
        file.write(tail)
    before = bug_fix.path.read_bytes()
    fresh = DurableTranscript(bug_fix.path)
    assert len(fresh.read_events()) == 12
    state = fresh.recover()
    assert state["ignored_partial_tail"] is True and state["total_events"] == 12
    assert fresh.replay_state(3).ignored_partial_tail is True
    assert bug_fix.path.read_bytes() == before  # reading never modifies the file


def test_an_unterminated_complete_record_is_kept(bug_fix):
    bug_fix.path.write_bytes(bug_fix.path.read_bytes()[:-1])
    state = DurableTranscript(bug_fix.path).recover()
    assert state["total_events"] == 12 and state["ignored_partial_tail"] is False


@pytest.mark.parametrize("line_number", [1, 5, 12])
def test_a_complete_line_that_is_not_json_is_corruption(bug_fix, line_number):
    lines = lines_of(bug_fix.path)
    offset = sum(len(line) + 1 for line in lines[: line_number - 1])
    lines[line_number - 1] = lines[line_number - 1][:-2]  # cut inside the record, keep the newline
    write_lines(bug_fix.path, lines)
    error = corruption(bug_fix.path)
    assert (error.line_number, error.byte_offset) == (line_number, offset)
    assert str(error) == f"session.jsonl:{line_number}: invalid complete JSON record (byte offset {offset})"


@pytest.mark.parametrize(
    "replacement, reason",
    [
        (b"[1, 2, 3]", "record must be a JSON object"),
        (b'"text"', "record must be a JSON object"),
        (b"", "invalid complete JSON record"),
        (b"\xff\xfe not utf-8", "invalid complete JSON record"),
        (b"[" * 100_000 + b"]" * 100_000, "invalid complete JSON record"),
        (b"\0\0\0\0", "invalid complete JSON record"),
    ],
)
def test_damaged_middle_lines_fail_closed(bug_fix, replacement, reason):
    lines = lines_of(bug_fix.path)
    lines[3] = replacement
    write_lines(bug_fix.path, lines)
    error = corruption(bug_fix.path)
    assert error.line_number == 4 and error.reason == reason


def _edit_record(path, line_number, **changes):
    lines = lines_of(path)
    record = json.loads(lines[line_number - 1])
    record.update(changes)
    lines[line_number - 1] = json.dumps(record).encode()
    write_lines(path, lines)


@pytest.mark.parametrize(
    "changes, reason",
    [
        ({"sequence": 5}, "expected sequence 4, got 5"),
        ({"sequence": 4.0}, "expected sequence 4, got 4.0"),
        ({"sequence": "4"}, "expected sequence 4, got '4'"),
        ({"sequence": True}, "expected sequence 4, got True"),
        ({"session_id": "other"}, "expected session_id 'session', got 'other'"),
        ({"event_id": "transcript:session:5"}, "expected event_id 'transcript:session:4'"),
        ({"schema_version": SCHEMA_VERSION + 1, "session_id": "other"}, "expected session_id 'session'"),
        ({"schema_version": 0}, "bad schema_version 0"),
        ({"schema_version": "1"}, "bad schema_version"),
        ({"type": None}, "no string 'type'"),
        ({"callId": None}, "needs a string 'callId'"),
    ],
)
def test_envelope_mismatches_fail_closed(bug_fix, changes, reason):
    _edit_record(bug_fix.path, 4, **changes)
    error = corruption(bug_fix.path)
    assert error.line_number == 4 and reason in error.reason


def test_a_sequence_gap_is_corruption(bug_fix):
    lines = lines_of(bug_fix.path)
    del lines[2]
    write_lines(bug_fix.path, lines)
    assert corruption(bug_fix.path).reason == "expected sequence 3, got 4"


def test_a_duplicated_line_is_corruption(bug_fix):
    lines = lines_of(bug_fix.path)
    lines.insert(6, lines[5])
    write_lines(bug_fix.path, lines)
    assert corruption(bug_fix.path).reason == "expected sequence 7, got 6"


def test_nan_written_by_another_tool_is_corruption(bug_fix):
    lines = lines_of(bug_fix.path)
    lines[1] = lines[1].replace(b'"type"', b'"score":NaN,"type"')
    write_lines(bug_fix.path, lines)
    assert corruption(bug_fix.path).line_number == 2


@pytest.mark.parametrize("cls", [DurableTranscript, DurableTranscript])
def test_lines_without_an_envelope_fail_closed_and_nothing_is_appended_to_them(tmp_path, cls):
    path = tmp_path / "old.jsonl"
    path.write_text('{"type":"message","role":"user","content":"a"}\n'
                    '{"type":"message","role":"assistant","content":"b"}\n', encoding="utf-8")
    before = path.read_bytes()
    with pytest.raises(TranscriptCorruptionError, match="old.jsonl:1: line has no envelope") as caught:
        cls(path).read_events()
    assert caught.value.byte_offset == 0
    with pytest.raises(TranscriptCorruptionError, match="no envelope"):
        cls(path).append(USER)
    assert path.read_bytes() == before


def test_a_pre_envelope_line_after_enveloped_ones_is_corruption(bug_fix):
    with open(bug_fix.path, "ab") as file:
        file.write(b'{"type":"message","role":"user","content":"sneaked in"}\n')
    assert corruption(bug_fix.path).line_number == 13


def test_unknown_event_types_are_kept_but_make_no_message(transcript):
    transcript.append({"type": "turn_start", "turn_number": 1})
    transcript.append(USER)
    assert [e["type"] for e in transcript.read_events()] == ["turn_start", "message"]
    assert transcript.replay() == [{"role": "user", "content": "hello"}]


@pytest.mark.parametrize("separator",
                         ["\u2028", "\u2029", "\x85", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e"])
def test_line_separators_in_content_round_trip(transcript, separator):
    text = f"before{separator}after"
    transcript.append({"type": "message", "role": "user", "content": text})
    transcript.append(USER)
    transcript.close()
    fresh = DurableTranscript(transcript.path)
    assert fresh.read_events()[0]["content"] == text
    assert fresh.replay(2)[0]["content"] == text
    assert fresh.count_lines() == 2


# -- repair before append ------------------------------------------------------------------------


def test_a_torn_fragment_is_cut_off_before_the_next_append(bug_fix):
    clean = bug_fix.path.read_bytes()
    with open(bug_fix.path, "ab") as file:
        file.write(b'{"schema_version":1,"sequence":13,"ty')
    with DurableTranscript(bug_fix.path) as fresh:
        record = fresh.append(USER)
    assert record["sequence"] == 13
    line = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode()
    assert bug_fix.path.read_bytes() == clean + line + b"\n"


def test_a_complete_record_missing_its_newline_is_finished_not_cut(bug_fix):
    bug_fix.path.write_bytes(bug_fix.path.read_bytes()[:-1])
    with DurableTranscript(bug_fix.path) as fresh:
        assert fresh.append(USER)["sequence"] == 13
    events = DurableTranscript(bug_fix.path).read_events()
    assert len(events) == 13 and events[11]["content"] == BUG_FIX_SCRIPT[11]["content"]


def test_an_append_to_a_file_with_a_damaged_tail_record_is_refused(bug_fix):
    lines = lines_of(bug_fix.path)
    lines[11] = b'{"broken": '  # the last complete line, newline kept
    write_lines(bug_fix.path, lines)
    before = bug_fix.path.read_bytes()
    with pytest.raises(TranscriptCorruptionError) as caught:
        DurableTranscript(bug_fix.path).append(USER)
    assert caught.value.line_number == 12
    assert bug_fix.path.read_bytes() == before


# -- replay windows ------------------------------------------------------------------------------


def test_replay_gives_the_messages_of_the_last_n_events(bug_fix):
    assert bug_fix.replay(1) == [{"role": "assistant", "content": BUG_FIX_SCRIPT[11]["content"]}]
    assert bug_fix.replay(0) == []
    assert len(bug_fix.replay()) == 9  # 3 messages, 3 tool calls, 3 tool results
    with pytest.raises(ValueError):
        bug_fix.replay(-1)


def test_a_window_never_begins_with_an_orphan_tool_result(bug_fix):
    # the last 2 events are call_3's result and the final message: call_3 itself fell outside
    messages = bug_fix.replay(2)
    assert messages == [{"role": "assistant", "content": BUG_FIX_SCRIPT[11]["content"]}]


@pytest.mark.parametrize("window", range(1, 13))
def test_every_tool_result_in_every_window_follows_its_call(bug_fix, window):
    seen_calls = set()
    for message in bug_fix.replay(window):
        for block in message["content"] if isinstance(message["content"], list) else []:
            if block["type"] == "tool_use":
                seen_calls.add(block["id"])
            if block["type"] == "tool_result":
                assert block["tool_use_id"] in seen_calls


def test_pending_calls_after_a_crash_in_the_middle_of_a_tool_call(transcript):
    run_agent(transcript, MockLLM(BUG_FIX_SCRIPT[:8]))  # ends with write_file's call, no result
    state = transcript.replay_state()
    assert [call["callId"] for call in state.pending_calls] == ["call_2"]
    assert transcript.recover()["pending_calls"] == state.pending_calls
    assert state.messages[-1]["content"][0]["type"] == "tool_use"


def test_replay_state_and_recover_describe_the_same_session(bug_fix):
    state = bug_fix.replay_state()
    assert isinstance(state, ReplayState)
    assert (state.title, state.total_events, state.next_sequence, state.reasoning_count) == (
        "Fix add() in calc.py", 12, 13, 1)
    assert [s["files"] for s in state.file_snapshots] == [BUG_FIX_SCRIPT[6]["files"]]
    recovered = bug_fix.recover()
    assert set(recovered) == {"messages", "title", "file_snapshots", "total_events", "message_count",
                              "reasoning_count", "next_sequence", "ignored_partial_tail", "pending_calls",
                              "unknown_schema_events"}
    assert recovered["messages"] == state.messages and recovered["message_count"] == 9
    with pytest.raises(Exception):
        state.title = "changed"  # frozen


def test_replay_validates_what_it_reads_and_recover_validates_everything(bug_fix):
    lines = lines_of(bug_fix.path)
    lines[1] = b"damaged"
    write_lines(bug_fix.path, lines)
    fresh = DurableTranscript(bug_fix.path)
    assert len(fresh.replay(3)) == 3  # the damage lies outside the window it read
    with pytest.raises(TranscriptCorruptionError) as caught:
        fresh.replay(11)
    assert caught.value.line_number == 2  # named exactly, although replay reads from the tail
    with pytest.raises(TranscriptCorruptionError):
        fresh.recover()


def test_event_to_message_maps_every_event_type():
    to_message = DurableTranscript._event_to_message
    assert to_message(BUG_FIX_SCRIPT[0]) == {"role": "user", "content": BUG_FIX_SCRIPT[0]["content"]}
    assert to_message(BUG_FIX_SCRIPT[3]) == {"role": "assistant", "content": [
        {"type": "tool_use", "id": "call_1", "name": "read_file", "input": {"path": "calc.py"}}]}
    assert to_message(BUG_FIX_SCRIPT[4]) == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "call_1", "content": BUG_FIX_SCRIPT[4]["output"]}]}
    for metadata in (BUG_FIX_SCRIPT[1], BUG_FIX_SCRIPT[2], BUG_FIX_SCRIPT[6], {"type": "turn_start"}):
        assert to_message(metadata) is None


def test_mock_llm_uses_all_six_event_types_and_ends():
    llm = MockLLM()
    events = list(iter(llm.next_event, None))
    assert {event["type"] for event in events} == {
        "message", "reasoning", "function_call", "function_call_result", "file-history-snapshot", "ai-title"}
    assert llm.next_event() is None and len(events) == len(BUG_FIX_SCRIPT) == 12


def test_count_lines_counts_complete_lines(bug_fix):
    assert bug_fix.count_lines() == 12
    with open(bug_fix.path, "ab") as file:
        file.write(b"{partial")
    assert bug_fix.count_lines() == 12
    assert DurableTranscript(bug_fix.path.with_name("missing.jsonl")).count_lines() == 0


def test_a_missing_file_reads_as_empty(tmp_path):
    transcript = DurableTranscript(tmp_path / "nothing.jsonl")
    assert transcript.read_events() == [] and transcript.replay() == []
    assert transcript.recover()["next_sequence"] == 1
    assert not transcript.path.exists()


def test_an_over_long_line_is_corruption_without_reading_it_whole(tmp_path):
    transcript = DurableTranscript(tmp_path / "s.jsonl", max_record_bytes=4096)
    transcript.append(USER)
    transcript.close()
    with open(transcript.path, "ab") as file:
        file.write(b'{"x":"' + b"a" * 100_000 + b'"}\n')
    with pytest.raises(TranscriptCorruptionError, match="longer than 4096"):
        DurableTranscript(transcript.path, max_record_bytes=4096).read_events()
    with pytest.raises(TranscriptCorruptionError) as caught:
        DurableTranscript(transcript.path, max_record_bytes=4096).replay(5)
    assert caught.value.line_number == 2


def test_an_over_long_unterminated_tail_is_a_torn_write(tmp_path):
    transcript = DurableTranscript(tmp_path / "s.jsonl", max_record_bytes=4096)
    transcript.append(USER)
    with open(transcript.path, "ab") as file:
        file.write(b"\0" * 100_000)
    fresh = DurableTranscript(transcript.path, max_record_bytes=4096)
    assert fresh.recover()["ignored_partial_tail"] and fresh.replay_state(5).ignored_partial_tail


# -- one writer per transcript -------------------------------------------------------------------


def test_a_second_writer_in_this_process_is_refused_until_the_first_closes(transcript):
    transcript.append(USER)
    other = DurableTranscript(transcript.path)
    with pytest.raises(TranscriptLockedError, match="another writer"):
        other.append(USER)
    assert len(other.read_events()) == 1  # readers take no lock
    transcript.close()
    assert other.append(USER)["sequence"] == 2
    other.close()


def test_a_forgotten_writer_releases_its_lock_when_collected(tmp_path):
    path = tmp_path / "s.jsonl"
    DurableTranscript(path).append(USER)  # never closed, but unreachable
    with DurableTranscript(path) as second:
        assert second.append(USER)["sequence"] == 2


def test_the_integrity_chain_round_trips_and_is_required_when_on(tmp_path):
    sealed = DurableTranscript(tmp_path / "sealed.jsonl", integrity=True, clock=ticking_clock())
    run_agent(sealed, MockLLM())
    sealed.close()
    assert all(json.loads(line)["chain"] for line in lines_of(sealed.path)[:-1])
    assert len(DurableTranscript(sealed.path).read_events()) == 12  # a plain reader verifies it too
    plain = DurableTranscript(tmp_path / "plain.jsonl")
    plain.append(USER)
    with pytest.raises(TranscriptCorruptionError, match="no chain"):
        DurableTranscript(plain.path, integrity=True).read_events()
    assert os.path.getsize(plain.path) > 0


def test_after_cutting_a_torn_tail_the_chain_continues_from_the_last_record(tmp_path):
    sealed = DurableTranscript(tmp_path / "s.jsonl", integrity=True)
    sealed.append(USER)
    sealed.close()
    with open(sealed.path, "ab") as file:
        file.write(b'{"torn": ')
    with DurableTranscript(sealed.path, integrity=True) as reopened:
        reopened.append(USER)
    assert len(DurableTranscript(sealed.path, integrity=True).read_events()) == 2


@pytest.mark.slow  # writes and reads a large transcript: the full tier runs it
def test_recover_streams_and_keeps_only_its_window(tmp_path):
    """recover() holds its window plus, at most, the records of one batch (a batch is kept whole or not at all)."""
    import tracemalloc

    with DurableTranscript(tmp_path / "long.jsonl", clock=ticking_clock()) as transcript:
        for _ in range(200):
            transcript.append_batch({"type": "message", "role": "user", "content": "x" * 400} for _ in range(100))

    def peak_of(read):
        tracemalloc.start()
        try:
            read(DurableTranscript(transcript.path))
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    everything = peak_of(lambda t: t.read_events())
    windowed = peak_of(lambda t: t.recover(max_items=100))
    assert windowed < everything / 10, (windowed, everything)
    assert DurableTranscript(transcript.path).recover(max_items=100)["total_events"] == 20_000


@pytest.mark.parametrize("window", [5, 6, 8, 9, 10, 1000])
def test_a_window_at_least_as_long_as_the_file_replays_every_event(tmp_path, window):
    """Found by the notebook 4 review: a window between the file's length and twice it lost events."""
    with DurableTranscript(tmp_path / "s.jsonl", clock=ticking_clock()) as transcript:
        for n in range(5):
            transcript.append({"type": "message", "role": "user", "content": str(n)})
    assert [m["content"] for m in DurableTranscript(transcript.path).replay(window)] == ["0", "1", "2", "3", "4"]
