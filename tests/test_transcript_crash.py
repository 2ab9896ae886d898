"""Real crashes: child processes killed with SIGKILL; a second writer process refused."""

import random
import signal
import sys
import time
from collections import Counter

import pytest

from s09_jsonl_transcript.code import TranscriptLockedError
from s09_jsonl_transcript.crashlab.children import crash_agent_in_child, kill_child, simulate_agent_crash, start_child
from s09_jsonl_transcript.lab import DurableTranscript

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX SIGKILL")

def append_forever(path: str, first_number: str) -> None:
    """Child process: append forever, alternating single appends and batches of four.

    After each append returns it reports the payload numbers it just made durable, one line per append.
    """
    transcript, number = DurableTranscript(path), int(first_number)
    print("ready", flush=True)
    while True:
        size = 4 if number % 3 == 0 else 1
        events = [{"type": "message", "role": "user", "content": "x" * (number % 200), "n": number + i}
                  for i in range(size)]
        records = transcript.append_batch(events) if size > 1 else [transcript.append(events[0])]
        number += size
        print(" ".join(str(record["n"]) for record in records), flush=True)


def run_writer_and_kill(path, first_number, rng, reports_first=1):
    """Start a writer; once it has reported `reports_first` appends (a handshake over its pipe),
    SIGKILL it after a random delay; return the numbers it acknowledged."""
    child = start_child("tests.test_transcript_crash:append_forever", path, first_number)
    assert child.stdout.readline() == "ready\n"
    heard = "".join(child.stdout.readline() for _ in range(reports_first))
    time.sleep(rng.uniform(0, 0.03))  # where the kill lands is left to chance; no assertion depends on it
    output, errors = kill_child(child)
    assert child.returncode == -signal.SIGKILL and errors == ""
    # a report cut off by the kill (no newline) is not counted as acknowledged
    complete = heard + output[: output.rfind("\n") + 1]
    return [int(number) for line in complete.splitlines() for number in line.split()]


@pytest.mark.slow  # a long campaign: the full tier runs it
def test_every_acknowledged_event_survives_sigkill_exactly_once(tmp_path):
    rng = random.Random(9)
    path = tmp_path / "crashy.jsonl"
    acknowledged = []
    for trial in range(60):
        acknowledged += run_writer_and_kill(path, trial * 1_000_000, rng, reports_first=2)
        events = DurableTranscript(path).read_events()  # validates; raises on any damage
        on_disk = Counter(event["n"] for event in events)
        assert all(on_disk[number] == 1 for number in acknowledged), f"trial {trial}"
        assert max(on_disk.values()) == 1
    assert len(acknowledged) >= 120  # each writer was killed only after two reports: they really wrote
    assert len(events) >= len(acknowledged)


def second_writer(path: str) -> None:
    """Child process: try to append once; say whether the lock let us."""
    try:
        DurableTranscript(path).append({"type": "message", "role": "user", "content": "me too"})
    except TranscriptLockedError as error:
        print(f"refused: {error}")
        sys.exit(3)
    print("appended")


def run_second_writer(path) -> tuple[int, str]:
    child = start_child("tests.test_transcript_crash:second_writer", path)
    output, _ = child.communicate(timeout=60)
    return child.returncode, output


def test_a_second_writer_process_is_refused_while_the_first_lives(tmp_path):
    path = tmp_path / "owned.jsonl"
    with DurableTranscript(path) as owner:
        owner.append({"type": "message", "role": "user", "content": "mine"})
        status, output = run_second_writer(path)
        assert status == 3
        assert output == "refused: owned.jsonl is being written by another writer (one writer per transcript)\n"
        owner.append({"type": "message", "role": "user", "content": "still mine"})
    assert run_second_writer(path) == (0, "appended\n")
    assert [e["sequence"] for e in DurableTranscript(path).read_events()] == [1, 2, 3]


def test_a_killed_writer_releases_its_lock(tmp_path):
    path = tmp_path / "s.jsonl"
    run_writer_and_kill(path, 0, random.Random(1))
    with DurableTranscript(path) as successor:
        successor.append({"type": "message", "role": "user", "content": "after the crash"})


@pytest.mark.parametrize("kill_after, tear", [(-1, True), (12, True), (13, False), ("3", False)])
def test_crash_agent_in_child_refuses_kill_points_outside_the_script(tmp_path, kill_after, tear):
    with pytest.raises(ValueError, match="kill_after"):
        crash_agent_in_child(tmp_path / "s.jsonl", kill_after, tear)
    assert not (tmp_path / "s.jsonl").exists()


def test_a_tear_before_any_append_leaves_only_a_torn_fragment(tmp_path):
    path = tmp_path / "s.jsonl"
    assert crash_agent_in_child(path, 0, tear=True) == []
    fragment = path.read_bytes()
    assert fragment and b"\n" not in fragment
    # what a crash in the middle of append leaves: the first half of an enveloped record
    assert fragment.startswith(b'{"schema_version":1,"sequence":1,"event_id":"transcript:s:1"')
    state = DurableTranscript(path).recover()
    assert state["total_events"] == 0 and state["ignored_partial_tail"] is True


def test_a_ticking_child_writes_reproducible_timestamps(tmp_path):
    first, second = tmp_path / "a" / "s.jsonl", tmp_path / "b" / "s.jsonl"
    for path in (first, second):
        assert crash_agent_in_child(path, 12, tear=False, ticking=True) == list(range(1, 13))
    assert first.read_bytes() == second.read_bytes()


def test_the_simulated_crash_leaves_the_same_file_as_the_real_one(tmp_path):
    real, simulated = tmp_path / "real" / "s.jsonl", tmp_path / "simulated" / "s.jsonl"
    assert crash_agent_in_child(real, 5, tear=True, ticking=True) == [1, 2, 3, 4, 5]
    assert simulate_agent_crash(simulated, 5, tear=True, ticking=True) == [1, 2, 3, 4, 5]
    assert real.read_bytes() == simulated.read_bytes()
    with pytest.raises(ValueError, match="kill_after"):
        simulate_agent_crash(tmp_path / "x.jsonl", 12, tear=True)
