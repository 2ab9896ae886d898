"""Campaign 5: racing writer processes. One writer per session; separate sessions never interfere."""

import pytest

from s09_jsonl_transcript.crashlab.races import SCENARIOS, RaceResult, race, race_campaign
from s09_jsonl_transcript.lab import DurableTranscript


def test_on_one_session_exactly_one_racer_writes(tmp_path):
    result = race("one session", racers=8, events=3, root=tmp_path)
    assert result.ok, result.problem
    assert (result.wrote, result.locked, result.events) == (1, 7, 3)
    assert len(DurableTranscript(tmp_path / "one-session" / "session.jsonl").read_events()) == 3


def test_racers_taking_turns_land_every_event_once(tmp_path):
    result = race("taking turns", racers=4, events=3, integrity=True, root=tmp_path)
    assert result.ok, result.problem
    assert result.events == 12
    events = DurableTranscript(tmp_path / "taking-turns" / "session.jsonl", integrity=True).read_events()
    assert [event["sequence"] for event in events] == list(range(1, 13))


def test_racers_on_their_own_sessions_all_write(tmp_path):
    results = race_campaign(racers=8, events=2, root=tmp_path)
    assert [result.scenario for result in results] == list(SCENARIOS)
    assert all(result.ok for result in results), [result.problem for result in results]
    assert results[2].wrote == 8 and len(list((tmp_path / "own-sessions").glob("*.jsonl"))) == 8


def test_a_broken_promise_is_reported():
    assert not RaceResult("one session", 8, 2, 6, 10, "2 racers wrote").ok
    with pytest.raises(ValueError, match="scenario"):
        race("everyone at once")
