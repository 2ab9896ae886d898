"""Campaign 5: racing writer processes. One writer per session; separate sessions never interfere.

Racers of the lab's DurableTranscript and of the lesson's code.JSONLTranscript.
"""

import pytest

from s09_jsonl_transcript.code import JSONLTranscript
from s09_jsonl_transcript.crashlab import cli
from s09_jsonl_transcript.crashlab.cli import main as crashlab_main
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


def test_racers_of_the_lessons_class_hold_the_lock_hand_it_over_and_keep_to_their_sessions(tmp_path):
    held = race("one session", racers=4, events=3, root=tmp_path, subject="lesson")
    assert held.ok, held.problem
    assert (held.subject, held.wrote, held.locked, held.events) == ("lesson", 1, 3, 3)
    turns = race("taking turns", racers=3, events=3, root=tmp_path, subject="lesson")
    assert turns.ok, turns.problem
    events = JSONLTranscript(tmp_path / "taking-turns" / "lesson" / "session.jsonl").read_events()
    assert [event["sequence"] for event in events] == list(range(1, 10))
    own = race("own sessions", racers=2, events=2, root=tmp_path, subject="lesson")
    assert own.ok and own.wrote == 2 and own.events == 4, own.problem


def test_the_lesson_has_no_chain_to_race_with():
    with pytest.raises(ValueError, match="no hash chain"):
        race("one session", integrity=True, subject="lesson")


def test_a_broken_promise_is_reported():
    assert not RaceResult("one session", 8, 2, 6, 10, "2 racers wrote").ok
    with pytest.raises(ValueError, match="scenario"):
        race("everyone at once")


def test_the_race_command_runs_both_classes_and_fails_on_a_broken_promise(capsys, monkeypatch):
    assert crashlab_main(["race", "--racers", "2", "--events", "1"]) == 0
    out = capsys.readouterr().out
    assert out.count("lab (DurableTranscript)") == out.count("lesson (JSONLTranscript)") == len(SCENARIOS)
    assert out.strip().endswith("6 passed, 0 failed")

    def campaign(subject, **options):
        problem = "2 racers wrote" if subject == "lesson" else None
        return [RaceResult(scenario, 2, 1, 1, 1, problem, subject) for scenario in SCENARIOS]

    monkeypatch.setattr(cli, "race_campaign", campaign)
    assert crashlab_main(["race"]) == 1
    assert capsys.readouterr().out.strip().endswith("3 passed, 3 failed")
