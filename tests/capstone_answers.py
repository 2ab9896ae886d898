"""The capstone's answers for the tests: the reference, the eight named wrong answers (each the
reference with one function replaced), the attacks, and the sizes the tests grade at.

Each named wrong answer lists the properties it loses, exactly (the tests compare sets).
"""

import os
from pathlib import Path

import pytest

from s09_jsonl_transcript.grading.durability.engine import CampaignSize
from s09_jsonl_transcript.grading.durability.runs import recorder_problem

DATA = Path(__file__).resolve().parent / "capstone_data"
REFERENCE = (DATA / "reference.py").read_text(encoding="utf-8")

WRONG_ANSWERS = {  # name -> the properties it loses, exactly
    "no_fsync": {"kept"},
    "fsync_before_write": {"kept"},
    "two_writes": {"whole", "one-write"},
    "no_folder_fsync": {"kept"},
    "forgives_mid_file_damage": {"closed"},
    "rejects_partial_tail": {"tail"},
    "keeps_torn_tail": {"tail"},
    "cuts_one_byte_short": {"tail"},
}

# A few events, writes torn at a few edges, every campaign run: seconds per grading.
TINY = CampaignSize(events=5, every_byte=False, power_loss_limit=600, damaged_files=150, repair_kills=3,
                    batch_size=400)
# Everything but the held kills (tests/test_durability_kills.py has its own), for tests about the verdict.
QUICK = CampaignSize(events=4, every_byte=False, power_loss_limit=300, held_kills=False, damaged_files=80,
                     repair_kills=1, batch_size=400)
# Every campaign at the size .ci/run grades the named answers at.
SMALL = CampaignSize(events=10, every_byte=False, power_loss_limit=2_000, damaged_files=600, repair_kills=6)


def wrong(name: str) -> str:
    """The named wrong answer: the reference, then the one function it replaces (the later definition wins)."""
    return REFERENCE + "\n\n" + (DATA / "wrong" / f"{name}.py").read_text(encoding="utf-8")


def variant(name: str) -> str:
    """Another answer the tests grade (capstone_data/variants): the reference, then what it replaces."""
    return REFERENCE + "\n\n" + (DATA / "variants" / f"{name}.py").read_text(encoding="utf-8")


def attack(name: str) -> str:
    """An attack's answer cell: the reference, then what the attack adds or replaces."""
    return REFERENCE + "\n\n" + (DATA / "attacks" / f"{name}.py").read_text(encoding="utf-8")


def require_recorder(sandboxed: bool = True) -> None:
    """Skip where strace (or bubblewrap) cannot run; under CI=true that is a failure, not a skip."""
    problem = recorder_problem(sandboxed)
    if problem is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {problem[0]}", pytrace=False)
    pytest.skip(problem[0])


def recorded(source: str, events: int = 3, seed: int = 1):
    """Record the session of an answer cell's source (strace, in the sandbox): its Recording."""
    from s09_jsonl_transcript.grading.durability.contract import session_events
    from s09_jsonl_transcript.grading.durability.engine import campaign

    with campaign(source, seed=seed, size=TINY) as run:
        return _recording(run, session_events(seed, events))


def _recording(run, events):
    from s09_jsonl_transcript.grading.durability.sessions import record_session

    return record_session(run.runner, run.workspace, events)


def repaired(source: str, content: bytes, seed: int = 1):
    """What recover did to one state (recorded in a batch of one): its Observed, with the repair's changes."""
    from s09_jsonl_transcript.grading.durability.contract import SESSION_ID, continuation_event
    from s09_jsonl_transcript.grading.durability.engine import campaign
    from s09_jsonl_transcript.grading.durability.kit import reference_read
    from s09_jsonl_transcript.grading.durability.sessions import judge_batch

    with campaign(source, seed=seed, size=TINY) as run:
        batch = judge_batch(run.runner, run.workspace, "one", [(content, "abc")], continuation_event(seed),
                            lambda path: reference_read(path, SESSION_ID))
    return batch.problem, batch.observed[0]


def torn_file(events: int = 2, seed: int = 1) -> bytes:
    """The reference's file for the first events, then half of the next record (a partial tail)."""
    from s09_jsonl_transcript.grading.durability.contract import Contract, session_events

    contract = Contract()
    whole = contract.file_bytes("capstone.jsonl", session_events(seed, events + 1))
    last = whole.rstrip(b"\n").rfind(b"\n") + 1
    return whole[:last + (len(whole) - last) // 2]
