"""Properties: replay equals the suffix of a full read; damage never escapes as a foreign exception."""

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from s09_jsonl_transcript.code import TranscriptCorruptionError, ticking_clock
from s09_jsonl_transcript.lab import DurableTranscript

TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=12)
CALL_IDS = st.sampled_from(["c1", "c2", "c3", "c4"])
EVENTS = st.one_of(
    st.builds(lambda role, text: {"type": "message", "role": role, "content": text},
              st.sampled_from(["user", "assistant"]), TEXT),
    st.builds(lambda text: {"type": "reasoning", "content": text}, TEXT),
    st.builds(lambda call: {"type": "function_call", "callId": call, "name": "tool", "arguments": {}}, CALL_IDS),
    st.builds(lambda call, text: {"type": "function_call_result", "callId": call, "output": text}, CALL_IDS, TEXT),
    st.builds(lambda text: {"type": "ai-title", "title": text}, TEXT),
    st.builds(lambda text: {"type": "file-history-snapshot", "files": {"a.py": text}}, TEXT),
    st.builds(lambda n: {"type": "turn_start", "turn_number": n}, st.integers(0, 9)),
)


def expected_window_messages(events, window):
    """An independent statement of the replay rule: map the last `window` events to messages,
    dropping tool results whose call is not inside the window."""
    chosen = events[max(len(events) - window, 0):] if window else []  # a window past the start holds all
    calls = {e["callId"] for e in chosen if e["type"] == "function_call"}
    messages = []
    for event in chosen:
        if event["type"] == "message":
            messages.append({"role": event["role"], "content": event["content"]})
        elif event["type"] == "function_call":
            messages.append({"role": "assistant", "content": [
                {"type": "tool_use", "id": event["callId"], "name": event["name"], "input": event["arguments"]}]})
        elif event["type"] == "function_call_result" and event["callId"] in calls:
            messages.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": event["callId"], "content": event["output"]}]})
    return messages


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=st.lists(EVENTS, max_size=40), window=st.integers(0, 45), batch=st.booleans())
def test_replay_equals_the_suffix_of_a_full_read(events, window, batch):
    with tempfile.TemporaryDirectory() as folder:
        transcript = DurableTranscript(Path(folder) / "p.jsonl", clock=ticking_clock())
        if batch:
            transcript.append_batch(events)
        else:
            for event in events:
                transcript.append(event)
        transcript.close()
        fresh = DurableTranscript(transcript.path)
        full = fresh.read_events()
        assert [e["sequence"] for e in full] == list(range(1, len(events) + 1))
        assert fresh.replay(window) == expected_window_messages(full, window)
        assert fresh.replay_state(window).total_events == len(events)


def _bug_fix_bytes(tmp_path, integrity=False):
    from s09_jsonl_transcript.code import MockLLM, run_agent

    with DurableTranscript(tmp_path / "session.jsonl", clock=ticking_clock(), integrity=integrity) as transcript:
        run_agent(transcript, MockLLM())
    return transcript.path, transcript.path.read_bytes()


def test_truncation_at_every_offset_gives_complete_records_and_at_most_a_torn_tail(tmp_path):
    path, original = _bug_fix_bytes(tmp_path)
    reference = DurableTranscript(path).read_events()
    line_ends = [i + 1 for i, byte in enumerate(original) if byte == ord("\n")]
    for offset in range(len(original) + 1):
        path.write_bytes(original[:offset])
        fresh = DurableTranscript(path)
        events = fresh.read_events()  # never raises
        complete = sum(1 for end in line_ends if end <= offset)
        only_newline_missing = offset + 1 in line_ends
        assert events == reference[: complete + only_newline_missing], offset
        torn = offset not in line_ends and offset != 0 and not only_newline_missing
        assert fresh.recover()["ignored_partial_tail"] is torn
        assert fresh.replay_state(5).ignored_partial_tail is torn


def test_single_byte_damage_raises_nothing_but_the_kits_errors(tmp_path):
    path, original = _bug_fix_bytes(tmp_path)
    for offset in range(len(original)):
        for mask in (0x01, 0x20, 0x80, 0xFF):
            damaged = bytearray(original)
            damaged[offset] ^= mask
            path.write_bytes(bytes(damaged))
            for read in (lambda t: t.read_events(), lambda t: t.replay(4), lambda t: t.recover()):
                try:
                    read(DurableTranscript(path))
                except TranscriptCorruptionError as error:
                    assert error.line_number >= 1 and 0 <= error.byte_offset < len(original)


def test_with_integrity_no_single_byte_flip_is_accepted_silently(tmp_path):
    path, original = _bug_fix_bytes(tmp_path, integrity=True)
    reference = DurableTranscript(path, integrity=True).read_events()
    for offset in range(len(original)):
        damaged = bytearray(original)
        damaged[offset] ^= 0x01
        path.write_bytes(bytes(damaged))
        try:
            events = DurableTranscript(path, integrity=True).read_events()
        except TranscriptCorruptionError:
            continue
        assert events == reference[: len(events)] and len(events) >= len(reference) - 1, offset


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=300))
def test_arbitrary_bytes_raise_nothing_but_the_kits_errors(data):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzz.jsonl"
        path.write_bytes(data)
        for read in (lambda t: t.read_events(), lambda t: t.replay(3), lambda t: t.recover()):
            try:
                read(DurableTranscript(path))
            except TranscriptCorruptionError:
                pass


def test_records_written_with_json_separators_inside_strings_stay_one_line(tmp_path):
    transcript = DurableTranscript(tmp_path / "s.jsonl")
    transcript.append({"type": "message", "role": "user", "content": '{"sequence": 99}\n\u2028'})
    assert json.loads(transcript.path.read_bytes().split(b"\n")[0])["sequence"] == 1
