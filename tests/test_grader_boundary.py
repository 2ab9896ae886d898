"""The boundary of issue 25: check cells run in a trusted kernel that never runs the student's code.

Each attack class is a real notebook (tests/grading_data/boundary) graded by the real grader, with
the guard on and off; each scores exactly what its answers deserve:

- forged prints: constant answers in a kernel that prints every pass line;
- a self-filling return value: a list that claims to equal anything and copies expected values
  from the caller's frames;
- reads that escape counting: mmap on the file's descriptor, or on any transcript on disk, and an
  orphaned grandchild that splices a transcript into a memfd for the answer to map.

The honest variants that were graded here (256-byte steps, a namedtuple, CRLF endings, nbformat 4.4
without cell ids, the Chinese release) score full marks in tests/test_grading_fidelity.py, with the
rest of the honest alternatives.
"""

import os

import pytest
from test_grading_support import GRADING_DATA, SOURCES, answer_cells, with_answers, write_notebook

from s09_jsonl_transcript.grading.grader import GradingOptions, find_submissions, grade_many

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not os.sys.platform.startswith("linux"), reason="the grader runs on Linux")]

BOUNDARY = GRADING_DATA / "boundary"
# What each notebook's answers deserve, check by check (the names of the checks it passes).
DESERVED = {
    "ex01_forged_prints": {"ex01-turn-of-four"},  # last_turn_length returns 4, right only for the turn of four
    "ex04_self_filling": {"ex04-negative-count"},  # it refuses a negative count, and reads nothing
    "ex04_mmap_reader": {"ex04-negative-count"},  # the file has no descriptor and no transcript is on its disk
    "ex04_grandchild_splice": {"ex04-negative-count"},  # an orphaned grandchild finds no transcript to splice
}


@pytest.fixture(scope="module")
def submissions(tmp_path_factory):
    folder = tmp_path_factory.mktemp("boundary")
    for name in DESERVED:
        answers = answer_cells((BOUNDARY / f"{name}.py").read_text(encoding="utf-8"))
        write_notebook(folder / f"{name}.ipynb", with_answers(name[:4], answers))
    return find_submissions([folder])


@pytest.mark.parametrize("guard", [True, False], ids=["guard on", "guard off"])
def test_each_attack_scores_what_its_answers_deserve(submissions, guard):
    options = GradingOptions(detect_tampering=guard)
    reports = {report["submission"]: report for report in grade_many(submissions, SOURCES, options=options, jobs=2)}
    for name, deserved in DESERVED.items():
        report = reports[f"{name}.ipynb"]
        assert report["status"] == "graded", (name, report["reason"])
        passed = {check["id"] for check in report["checks"] if check["score"] == check["max_score"]}
        assert passed == deserved, (name, guard, [(c["name"], c["feedback"]) for c in report["checks"]])
        assert report["score"] == sum(check.points for check in SOURCES[name[:4]].checks if check.id in deserved)
