"""Campaign 1: real writer processes killed with SIGKILL lose nothing they acknowledged."""

import pytest

from s09_jsonl_transcript.crashlab import KillTrial, kill_campaign, kill_summary, tally, workload_event
from s09_jsonl_transcript.crashlab.cli import main as crashlab_main
from s09_jsonl_transcript.crashlab.victim import TearingFileIO
from s09_jsonl_transcript.crashlab.workload import ALL_MODES, LIVE_MODES, MODES, expected_event, stream_pieces
from s09_jsonl_transcript.damage import CLEAN, PARTIAL_TAIL
from s09_jsonl_transcript.lab import DurableTranscript


def test_reduced_kill_campaign_loses_nothing_acknowledged(tmp_path):
    calls = []
    results = kill_campaign(12, seed=1, root=tmp_path, progress=lambda done, total: calls.append((done, total)))

    assert [result.trial for result in results] == list(range(12))
    assert {result.mode for result in results} == {"append", "batch", "repair"}
    assert {result.integrity for result in results} == {False, True}
    assert calls == [(done, 12) for done in range(1, 13)]
    for result in results:
        assert result.ok, result
        assert result.verdict in (CLEAN, PARTIAL_TAIL)
    # The victims really ran: between them they acknowledged events that the files still hold.
    assert sum(result.acknowledged for result in results) > 0
    assert len(list(tmp_path.glob("kill-*.jsonl"))) == 12


def test_kill_trials_are_checked_against_the_files_left_behind(tmp_path):
    (result,) = kill_campaign(1, seed=3, root=tmp_path, modes=("append",))
    (path,) = tmp_path.glob("kill-0000-append.jsonl")
    events = DurableTranscript(path).read_events()
    # the campaign appended one event after the kill to prove the file can be continued
    assert len(events) == result.recovered + 1
    assert result.recovered >= result.acknowledged


def test_the_plan_depends_only_on_the_seed():
    first = kill_campaign(3, seed=7, max_delay=0.0)
    second = kill_campaign(3, seed=7, max_delay=0.0)
    assert [(r.mode, r.integrity, r.delay_ms) for r in first] == [(r.mode, r.integrity, r.delay_ms) for r in second]


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="trials"):
        kill_campaign(-1)
    with pytest.raises(ValueError, match="modes"):
        kill_campaign(1, modes=("explode",))


def test_tally_finds_lost_duplicated_and_spliced_events(tmp_path):
    with DurableTranscript(tmp_path / "s.jsonl") as writer:
        events = [writer.append(workload_event(n)) for n in (1, 2, 3)]
    assert tally(events, [1, 2, 3]).ok
    assert tally(events[:2], [1, 2, 3]).lost == 1
    doubled = events + [{**events[2], "sequence": 4}]
    assert tally(doubled, [1, 2, 3]).duplicated == 1
    altered = events[:2] + [{**events[2], "content": "changed"}]
    assert tally(altered, [1, 2, 3]).spliced == 1


def test_a_trial_with_a_lost_event_is_not_ok():
    lost = KillTrial(trial=0, mode="append", acknowledged=3, recovered=2, lost=1, duplicated=0, verdict=CLEAN)
    assert not lost.ok
    assert not KillTrial(0, "append", 1, 0, 0, 0, "corrupt at line 1: bad").ok
    summary = kill_summary([lost])
    assert summary[-1]["mode"] == "all" and summary[-1]["failed"] == 1 and summary[-1]["lost"] == 1


def test_a_torn_write_is_refused_and_repaired_by_the_next_append(tmp_path):
    file_io = TearingFileIO()
    writer = DurableTranscript(tmp_path / "s.jsonl", file_io=file_io)
    writer.append(workload_event(1))
    file_io.arm(0.5)
    with pytest.raises(OSError, match="short write"):
        writer.append(workload_event(2))
    assert writer.replay_state(1).ignored_partial_tail
    writer.append(workload_event(2))
    writer.close()
    assert tally(DurableTranscript(tmp_path / "s.jsonl").read_events(), [1, 2]).ok


def test_the_kill_command_prints_a_table_and_passes(capsys):
    assert crashlab_main(["kill", "--trials", "3", "--seed", "2"]) == 0
    out = capsys.readouterr().out
    assert "lost" in out and "duplicated" in out
    assert out.strip().endswith("3 passed, 0 failed")


def test_writers_killed_inside_a_stream_or_a_validated_commit_lose_nothing_acknowledged(tmp_path):
    results = kill_campaign(20, seed=4, root=tmp_path, modes=LIVE_MODES)
    assert {result.mode for result in results} == set(LIVE_MODES)
    for result in results:
        assert result.ok, result
    assert sum(result.acknowledged for result in results) > 0
    # Nearly all of a live victim's time is spent inside a stream or a validated commit: most kills land there.
    assert sum(result.killed_inside for result in results) > 0
    for path in tmp_path.glob("kill-*-stream.jsonl"):
        events = DurableTranscript(path).read_events()
        assert all(event["part_id"] == f"part-{event['sequence']}" for event in events)  # final parts only
        assert not [event for event in events if event["content"] in stream_pieces(event["n"])[:-1]]


def test_validated_racers_write_batches_one_winner_at_a_time(tmp_path):
    (result,) = kill_campaign(1, seed=9, root=tmp_path, modes=("validated",), max_delay=0.05)
    events = DurableTranscript(next(tmp_path.glob("kill-*.jsonl"))).read_events()
    assert result.ok and tally(events, [], "validated").ok
    assert [event["n"] for event in events] == list(range(1, len(events) + 1))


def test_the_default_campaign_keeps_the_lessons_modes_and_the_full_one_adds_the_live_ones():
    assert MODES == ("append", "batch", "repair") and ALL_MODES == MODES + ("stream", "validated")
    assert expected_event(3, "stream") == {**workload_event(3), "part_id": "part-3"}
    assert expected_event(3, "validated") == workload_event(3)
    assert "".join(stream_pieces(7)) == workload_event(7)["content"]


def test_the_kill_command_takes_modes(capsys):
    assert crashlab_main(["kill", "--trials", "2", "--modes", "stream,validated"]) == 0
    out = capsys.readouterr().out
    assert "stream" in out and "validated" in out and "killed inside" in out
    assert crashlab_main(["kill", "--trials", "1", "--modes", "teleport"]) == 2
    assert "unknown --modes teleport" in capsys.readouterr().err
