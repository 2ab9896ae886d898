"""Attacks gain nothing and never become the grader's error: each is refused with its reason or loses
what it deserves, scored against the submission. Another name for the same file (/proc/self/fd) and
lines shaped like the recorder's log are no attack at all: they score as the reference does."""

from pathlib import Path

import pytest
from capstone_answers import TINY, attack, require_recorder

import s09_jsonl_transcript
from s09_jsonl_transcript.grading.durability import runs
from s09_jsonl_transcript.grading.durability.engine import PROPERTIES, grade

pytestmark = pytest.mark.usefixtures("recorder")
EVERYTHING = set(PROPERTIES)


@pytest.fixture
def recorder():
    require_recorder()


def _graded(name: str):
    verdict = grade(attack(name), seed=41, size=TINY)
    return verdict, verdict.problem


@pytest.mark.parametrize("name, row", [
    ("mmap_write", "mmap-shared"), ("o_direct", "o-direct"), ("io_uring", "io-uring"), ("hard_link", "link"),
    ("child_outlives", "other-process"), ("thread_outlives", "other-process"),
])
def test_what_the_model_cannot_follow_is_refused_with_its_reason(name, row):
    verdict, problem = _graded(name)
    assert problem.kind == "syscall" and problem.row == row
    assert problem.reason.startswith("refused · 被拒绝")
    assert verdict.lost() == EVERYTHING


@pytest.mark.slow
@pytest.mark.parametrize("name", ["proc_fd", "confuses_recorder", "lingering_thread"])
def test_what_only_looks_like_an_attack_scores_as_the_reference(name):
    verdict, problem = _graded(name)
    assert problem is None and verdict.lost() == set()


def test_a_forged_acknowledgement_gains_nothing():
    verdict, problem = _graded("forged_ack")
    assert verdict.lost() == EVERYTHING and problem.kind == "contract"


def test_predicting_the_events_gains_nothing():
    verdict, problem = _graded("predicts_events")
    assert verdict.lost() == EVERYTHING and problem.kind == "contract"
    assert "record 6 is not the contract's record of event 6" in problem.reason  # the first guess, left behind


@pytest.mark.slow
def test_a_withheld_acknowledgement_is_stopped_at_its_time_limit(monkeypatch):
    monkeypatch.setattr(runs, "STEP_SECONDS", 2.0)
    verdict, problem = _graded("withheld_ack")
    assert problem.kind == "timeout" and "append (event 2)" in problem.reason
    assert verdict.lost() == EVERYTHING


@pytest.mark.parametrize("name", ["kills_everything", "closes_channel"])
def test_killing_or_cutting_off_the_driver_ends_the_grading_against_the_submission(name):
    verdict, problem = _graded(name)
    assert problem.kind == "ended" and verdict.lost() == EVERYTHING


def test_the_kit_is_not_in_the_answers_view():
    verdict, problem = _graded("imports_the_kit")
    assert problem.kind == "load" and "ModuleNotFoundError" in problem.reason
    assert "s09_jsonl_transcript" in problem.reason


@pytest.mark.slow
def test_neither_the_kit_nor_the_graders_folders_can_be_found_from_the_sandbox():
    package = Path(s09_jsonl_transcript.__file__).resolve().parent
    assert (package / "code.py").exists() and list(package.glob("grading/durability/*.py"))
    verdict = grade(attack("looks_for_the_kit").replace("{package}", str(package)), seed=41, size=TINY)
    assert verdict.problem is None and verdict.lost() == set()
