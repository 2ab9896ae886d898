"""Every wrong answer, run in plain Python: each loses exactly the checks it declares, whatever the seed; every
branch or guard removed from a reference answer loses points, a hidden check's among them; and the reference
passes every check.

The notebook's cells run with exec, in order, the check cells as the instructor wrote them (the wrong answers
are the kit's own test data: tests/grading_data/wrong_answers, and the branch mutants test_grading_support
makes from the reference). The real grader grades a sample of the same answers in test_grading_runs.py and
test_grading_branches.py, and scores them as this does. The capstone's cells run its local crash check (no
strace), whose verdict its check cells read: its wrong answers lose here what the grader's crash campaign takes
from them in test_grading_capstone.py.
"""

import pytest
from test_grading_support import (
    EXERCISES,
    IN_KERNEL,
    SOURCES,
    branch_mutants,
    plain_run,
    reference_answers,
    wrong_answers,
)

pytestmark = pytest.mark.slow

SEEDS = (0, 1)
WRONG = wrong_answers()
# the capstone (crash-graded) has no hidden check: its checks are its crash properties, and its named wrong answers
# stand for its rules (tests/grading_data/wrong_answers/ex06.txt)
MUTANTS = [(exercise, *mutant) for exercise in IN_KERNEL for mutant in branch_mutants(exercise)]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("wrong", WRONG, ids=lambda wrong: wrong.name)
def test_a_wrong_answer_loses_exactly_its_checks_whatever_the_seed(wrong, seed):
    answers = {**reference_answers(wrong.exercise), **wrong.answers}
    assert plain_run(wrong.exercise, answers, seed) == wrong.loses


@pytest.mark.parametrize("exercise, name, answers, words", MUTANTS, ids=[mutant[1] for mutant in MUTANTS])
def test_every_branch_and_guard_of_a_reference_answer_is_checked_by_a_hidden_check(exercise, name, answers, words):
    seed = sum(map(ord, name))  # a seed of its own for each, so that the drawing checks vary
    failed = plain_run(exercise, {**reference_answers(exercise), **answers}, seed)
    hidden = {check.id for check in SOURCES[exercise].checks if check.hidden}
    assert failed & hidden, f"{words}: loses {sorted(failed) or 'nothing'}, no hidden check"


def test_there_are_branch_mutants_of_every_exercise_that_has_branches():
    assert {exercise for exercise, *_ in MUTANTS} == set(IN_KERNEL)
    assert len(MUTANTS) >= 30


@pytest.mark.parametrize("seed", (0, 1, 2, 3))
@pytest.mark.parametrize("exercise", EXERCISES)
def test_the_reference_passes_every_check_whatever_the_seed(exercise, seed):
    assert plain_run(exercise, reference_answers(exercise), seed) == set()
