"""Held kills are real SIGKILLs that strace holds before the K-th call of a kind on the transcript:
they land before the call runs, and only the transcript's calls count (the driver's acknowledgements,
its answers on a pipe, never do). Checked on this machine's strace, in the student's sandbox."""

import pytest
from capstone_answers import REFERENCE, TINY, require_recorder, torn_file

from s09_jsonl_transcript.grading.durability.contract import Contract, session_events
from s09_jsonl_transcript.grading.durability.engine import campaign
from s09_jsonl_transcript.grading.durability.sessions import held_kill, killed_recover, record_session

EVENTS = session_events(9, 4)
LINES = [Contract().encode_line(record) for record in Contract().records("capstone.jsonl", EVENTS)]


@pytest.fixture(scope="module")
def run():
    require_recorder()
    with campaign(REFERENCE, seed=9, size=TINY) as prepared:
        yield prepared


@pytest.mark.parametrize("number", [1, 2, 4])
def test_a_kill_before_the_kth_write_leaves_the_writes_before_it_and_nothing_of_it(run, number):
    killed = held_kill(run.runner, run.workspace, EVENTS, ("write", number), f"kill-write-{number}")
    assert killed.landed and killed.problem is None
    assert killed.acknowledged == number - 1  # append number K never returned
    assert killed.content == b"".join(LINES[:number - 1])  # the file was created before the first write


@pytest.mark.parametrize("number", [1, 3])
def test_a_kill_before_the_kth_fsync_leaves_its_write_in_the_page_cache(run, number):
    killed = held_kill(run.runner, run.workspace, EVENTS, ("fsync", number), f"kill-fsync-{number}")
    assert killed.landed and killed.acknowledged == number - 1
    assert killed.content == b"".join(LINES[:number])  # a process kill loses nothing the kernel holds


def test_the_recording_lists_every_kill_point_in_order(run):
    recording = record_session(run.runner, run.workspace, EVENTS)
    assert recording.kill_points == [(name, number) for number in range(1, 5) for name in ("write", "fsync")]


def test_a_kill_past_the_answers_last_call_never_lands_and_the_answer_cannot_be_replayed(run):
    killed = held_kill(run.runner, run.workspace, EVENTS, ("write", 9), "kill-write-9")
    assert not killed.landed and killed.problem.kind == "replay"
    assert killed.content == b"".join(LINES)


def test_a_kill_before_recovers_truncate_leaves_the_tail_and_before_its_fsync_the_cut(run):
    torn = torn_file(events=2, seed=9)
    before_cut = killed_recover(run.runner, run.workspace, "repair-kill-1", torn, ("ftruncate", 1))
    assert before_cut.landed and before_cut.content == torn
    before_sync = killed_recover(run.runner, run.workspace, "repair-kill-2", torn, ("fsync", 1))
    assert before_sync.landed and before_sync.content == torn[:torn.rstrip(b"\n").rfind(b"\n") + 1]
