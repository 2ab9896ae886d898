"""The memory candidate gate, and session paths that can never leave their root."""

import dataclasses

import pytest

from s09_jsonl_transcript.code import (
    MEMORY_ELIGIBLE_EVENT_TYPES,
    MemorySelectionError,
    TranscriptCorruptionError,
    TranscriptMemoryCandidate,
    ticking_clock,
)
from s09_jsonl_transcript.lab import DurableTranscript

# the bug-fix script: 1 user message, 2 title, 3 reasoning, 4 call, 5 result, 6 assistant message,
# 7 file snapshot, 8 call, 9 result, 10 call, 11 result, 12 assistant message
ELIGIBLE = [1, 6, 7, 12]


@pytest.mark.parametrize("sequence", ELIGIBLE)
def test_eligible_events_become_candidates_without_a_body(bug_fix, sequence):
    event = bug_fix.read_events()[sequence - 1]
    candidate = bug_fix.select_memory_candidate(
        f"transcript:session:{sequence}", summary="  add() subtracted  ", reason="a bug worth remembering")
    assert candidate == TranscriptMemoryCandidate(
        source_id=f"transcript:session:{sequence}", session_id="session", sequence=sequence,
        event_type=event["type"], captured_at=event["recorded_at"], summary="add() subtracted",
        selection_reason="a bug worth remembering", source_type="transcript")
    assert {f.name for f in dataclasses.fields(candidate)} == {
        "source_id", "session_id", "sequence", "event_type", "captured_at", "summary", "selection_reason",
        "source_type"}
    body = str(event.get("content", event.get("files")))
    assert not any(body in str(value) for value in dataclasses.asdict(candidate).values())
    assert candidate.source_metadata() == {
        "source_id": f"transcript:session:{sequence}", "source_type": "transcript",
        "title": f"session event {sequence}", "captured_at": event["recorded_at"]}
    with pytest.raises(dataclasses.FrozenInstanceError):
        candidate.summary = "edited"


@pytest.mark.parametrize("sequence", sorted(set(range(1, 13)) - set(ELIGIBLE)))
def test_other_event_types_are_refused(bug_fix, sequence):
    event_type = bug_fix.read_events()[sequence - 1]["type"]
    assert event_type not in MEMORY_ELIGIBLE_EVENT_TYPES
    with pytest.raises(MemorySelectionError, match=f"event type '{event_type}' is not eligible for memory selection"):
        bug_fix.select_memory_candidate(f"transcript:session:{sequence}", summary="s", reason="r")


@pytest.mark.parametrize("event_id", [
    "transcript:session:13", "transcript:session:0", "transcript:session:01", "transcript:session:-1",
    "transcript:session:1.0", "transcript:session:", "transcript:session:٣", "transcript:other:1",
    "memory:session:1", "session:1", "", None, 1, "transcript:session:1:2",
])
def test_unknown_malformed_and_foreign_ids_are_refused(bug_fix, event_id):
    with pytest.raises(MemorySelectionError, match="unknown transcript event"):
        bug_fix.select_memory_candidate(event_id, summary="s", reason="r")


@pytest.mark.parametrize("summary, reason, missing", [
    ("", "r", "summary"), ("   \n", "r", "summary"), (None, "r", "summary"),
    ("s", "", "reason"), ("s", "\t", "reason"), ("s", 42, "reason"),
])
def test_summary_and_reason_are_required(bug_fix, summary, reason, missing):
    with pytest.raises(MemorySelectionError, match=f"{missing} is required"):
        bug_fix.select_memory_candidate("transcript:session:1", summary=summary, reason=reason)


def test_events_outside_the_replay_window_can_still_be_selected(transcript):
    transcript.append({"type": "message", "role": "user", "content": "remember this"})
    transcript.append_batch({"type": "message", "role": "assistant", "content": f"filler {n}"} for n in range(1500))
    assert len(transcript.replay()) == 1000
    candidate = transcript.select_memory_candidate("transcript:session:1", summary="s", reason="r")
    assert candidate.sequence == 1


def test_the_gate_fails_closed_on_a_corrupt_transcript(bug_fix):
    data = bug_fix.path.read_bytes().replace(b'"sequence":3,', b'"sequence":33,')
    bug_fix.path.write_bytes(data)
    with pytest.raises(TranscriptCorruptionError):
        DurableTranscript(bug_fix.path).select_memory_candidate("transcript:session:1", summary="s", reason="r")


# -- session paths ----------------------------------------------------------------------------------


def test_for_session_builds_the_documented_path(tmp_path):
    transcript = DurableTranscript.for_session(tmp_path, "my-project", "2026-11-29_a1", clock=ticking_clock())
    assert transcript.path == tmp_path / "projects" / "my-project" / "2026-11-29_a1.jsonl"
    assert transcript.session_id == "2026-11-29_a1"
    assert transcript.append({"type": "message", "role": "user", "content": "x"})["event_id"] == \
        "transcript:2026-11-29_a1:1"


BAD_NAMES = ["", "..", "../escape", "a/b", "a\\b", "/abs", ".hidden", "a\0b", "x..y", "x" * 129, None, 7]


@pytest.mark.parametrize("bad", BAD_NAMES)
@pytest.mark.parametrize("which", ["workspace", "session_id"])
def test_names_that_could_escape_the_root_are_refused(tmp_path, bad, which):
    root = tmp_path / "root"
    names = {"workspace": "ws", "session_id": "s"}
    names[which] = bad
    with pytest.raises(ValueError, match=which):
        DurableTranscript.for_session(root, **names)
    assert list(tmp_path.iterdir()) == []  # nothing created, inside the root or outside it


def test_the_longest_allowed_name_works(tmp_path):
    transcript = DurableTranscript.for_session(tmp_path, "w" * 128, "s" * 128, new=True)
    assert transcript.path.parent.is_dir()
