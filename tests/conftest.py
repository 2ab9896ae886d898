"""Shared fixtures: a transcript in a temporary folder with a deterministic clock."""

import pytest

from s09_jsonl_transcript.code import MockLLM, run_agent, ticking_clock
from s09_jsonl_transcript.lab import DurableTranscript


@pytest.fixture
def transcript(tmp_path):
    """An empty transcript (session id 'session') whose clock ticks one second per event."""
    with DurableTranscript(tmp_path / "session.jsonl", clock=ticking_clock()) as opened:
        yield opened


@pytest.fixture
def bug_fix(transcript):
    """A closed transcript holding the twelve events of MockLLM's bug-fix session."""
    run_agent(transcript, MockLLM())
    transcript.close()
    return transcript
