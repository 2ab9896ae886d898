"""The boundary of issue 25: check cells run in a trusted kernel that never runs the student's code.

Each attack class is a real notebook (tests/grading_data/boundary) graded by the real grader, with
the guard on and off; each scores exactly what its answers deserve:

- forged prints: constant answers in a kernel that prints every pass line;
- a self-filling return value: a list that claims to equal anything and copies expected values
  from the caller's frames;
- reads that escape counting: mmap on the file's descriptor, or on any transcript on disk, and an
  orphaned grandchild that splices a transcript into a memfd for the answer to map;
- an honest reader that reads less than the reference (256-byte steps), and an honest answer with
  another algorithm and a namedtuple where a tuple is asked for: full marks;
- the reference answers with CRLF line endings, in a notebook of nbformat 4.4 without cell ids,
  and in the Chinese release: full marks.
"""

import os

import pytest
from test_grading_support import GRADING_DATA, SOURCES, answer_cells, reference_answers, with_answers, write_notebook

from s09_jsonl_transcript.grading.grader import GradingOptions, find_submissions, grade_many

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not os.sys.platform.startswith("linux"), reason="the grader runs on Linux")]

BOUNDARY = GRADING_DATA / "boundary"
# What each notebook's answers deserve, check by check (the names of the checks it passes).
DESERVED = {
    "ex01_forged_prints": {"ex01.1"},  # last_turn_length returns 4, right only for ex01.1
    "ex04_self_filling": {"ex04.7"},  # it refuses a negative count, and reads nothing
    "ex04_mmap_reader": {"ex04.7"},  # the file has no descriptor and no transcript is on its disk
    "ex04_grandchild_splice": {"ex04.7"},  # an orphaned grandchild finds no transcript to splice
    "ex04_small_steps": {check.name for check in SOURCES["ex04"].checks},
    "ex02_namedtuple": {check.name for check in SOURCES["ex02"].checks},
    "ex05_crlf": {check.name for check in SOURCES["ex05"].checks},
    "ex03_nbformat_4_4": {check.name for check in SOURCES["ex03"].checks},
    "ex04_chinese": {check.name for check in SOURCES["ex04"].checks},
}


def honest_variant(name: str) -> dict:
    """The reference answers saved another honest way: CRLF endings, nbformat 4.4 without ids, Chinese."""
    exercise = name[:4]
    if name.endswith("_crlf"):
        answers = {answer: code.replace("\n", "\r\n") for answer, code in reference_answers(exercise).items()}
        return with_answers(exercise, answers)
    if name.endswith("_chinese"):
        return with_answers(exercise, reference_answers(exercise), language="zh")
    notebook = with_answers(exercise, reference_answers(exercise))
    notebook["nbformat_minor"] = 4
    for cell in notebook["cells"]:
        cell.pop("id", None)
    return notebook


@pytest.fixture(scope="module")
def submissions(tmp_path_factory):
    folder = tmp_path_factory.mktemp("boundary")
    for name in DESERVED:
        attack = BOUNDARY / f"{name}.py"
        if attack.exists():
            notebook = with_answers(name[:4], answer_cells(attack.read_text(encoding="utf-8")))
        else:
            notebook = honest_variant(name)
        write_notebook(folder / f"{name}.ipynb", notebook)
    return find_submissions([folder])


@pytest.mark.parametrize("guard", [True, False], ids=["guard on", "guard off"])
def test_each_attack_scores_what_its_answers_deserve(submissions, guard):
    options = GradingOptions(detect_tampering=guard)
    reports = {report["submission"]: report for report in grade_many(submissions, SOURCES, options=options, jobs=2)}
    for name, deserved in DESERVED.items():
        report = reports[f"{name}.ipynb"]
        assert report["status"] == "graded", (name, report["reason"])
        passed = {check["name"] for check in report["checks"] if check["score"] == check["max_score"]}
        assert passed == deserved, (name, guard, [(c["name"], c["feedback"]) for c in report["checks"]])
        assert report["score"] == sum(check.points for check in SOURCES[name[:4]].checks if check.name in deserved)
