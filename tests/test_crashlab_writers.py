"""The kill campaign's rewind and fork writers (issue 20): real processes killed with SIGKILL, then
the file and every fork read back. The checks are shown to catch what they exist to catch."""

from s09_jsonl_transcript.crashlab import kills
from s09_jsonl_transcript.crashlab.victim import fork_name
from s09_jsonl_transcript.crashlab.workload import workload_event
from s09_jsonl_transcript.lab import DurableTranscript
from s09_jsonl_transcript.production.live import SessionEventLog
from s09_jsonl_transcript.production.timeouts import ManualClock
from s09_jsonl_transcript.production.turns import rewind_event


def test_killed_rewind_and_fork_writers_lose_nothing_and_duplicate_nothing(tmp_path):
    results = kills.kill_campaign(12, seed=3, root=tmp_path, modes=("rewind", "fork"), max_delay=0.25)
    summary = {row["mode"]: row for row in kills.kill_summary(results)}
    assert summary["all"]["trials"] == 12 and summary["all"]["failed"] == 0, [r for r in results if not r.ok]
    assert summary["all"]["lost"] == summary["all"]["duplicated"] == summary["all"]["spliced"] == 0
    assert summary["rewind"]["acknowledged"] > 0 and summary["fork"]["acknowledged"] > 0
    forks = sorted(tmp_path.glob("*-fork-*.jsonl"))
    assert forks  # the fork writers did fork before they died


def write_events(path, count):
    with SessionEventLog.create(path, clock=ManualClock()) as log:
        for n in range(1, count + 1):
            log.commit(workload_event(n))


def test_the_rewind_check_catches_an_acknowledged_event_taken_back(tmp_path):
    path = tmp_path / "r.jsonl"
    write_events(path, 4)
    events = DurableTranscript(path).read_events()
    assert kills.rewind_tally(events, [1, 2, 3, 4]).ok
    wrong = [*events, {**rewind_event(2), "sequence": 5}]  # a rewind that went one too far back
    counts = kills.rewind_tally(wrong, [1, 2, 3, 4])
    assert counts.lost == 2 and not counts.ok


def test_the_fork_check_catches_a_missing_or_partial_fork(tmp_path):
    path = tmp_path / "f.jsonl"
    with SessionEventLog.create(path, clock=ManualClock()) as log:
        for n in range(1, 7):
            record = log.commit(workload_event(n))
            if n % 3 == 0:
                log.fork(fork_name(path, n), upto_sequence=record["sequence"]).close()
    events = DurableTranscript(path).read_events()
    assert kills.fork_tally(path, events, range(1, 7), False).ok
    six = path.with_name(f"{fork_name(path, 6)}.jsonl")
    data = six.read_bytes()
    six.write_bytes(data[: data.index(b"\n") + 1])  # a fork with only its first line
    assert kills.fork_tally(path, events, range(1, 7), False).spliced == 1
    six.unlink()
    assert kills.fork_tally(path, events, range(1, 7), False).lost == 1
