"""What an answer's processes do around the grader's copies of its files (issue 49), graded by the real grader.

- Work after the return is not credited: a child that finishes the answer's file only once the answer has
  returned (it waits on a pipe the answer closes as it returns, then for the grader to open the file) writes
  after the copy back, since the student's side is frozen from the answer's return until the copy back is done.
  The check reads what the answer left, as the check does in plain Python, right after the call.
- Nothing the student's side leaves where the grader copies makes it wait: a socket, a link, and a named pipe a
  child re-creates in a loop while the copies run, each cost the call it touched, with its reason, within the
  call's own limit; the later checks score, each in an exchange folder of its own.
"""

import os

import pytest
from test_grading_support import (
    GRADING_DATA,
    SOURCES,
    answer_cells,
    feedback_of,
    reference_answers,
    reported_json,
    require_sandbox,
    with_answers,
    write_notebook,
)

from s09_jsonl_transcript.grading import exchange, sandbox
from s09_jsonl_transcript.grading.grader import GradingOptions, find_submissions, grade_many
from s09_jsonl_transcript.grading.words import FAILED, NOT_RUN, PASSED, REFUSED, TIMED_OUT

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not os.sys.platform.startswith("linux"), reason="the grader runs on Linux")]

AFTER_THE_RETURN = GRADING_DATA / "after_the_return"
ADDED_TO_THE_REFERENCE = {"ex03_late_during_the_copy"}  # appended to the reference's answer cell, not in its place


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    require_sandbox()
    folder = tmp_path_factory.mktemp("after-the-return")
    for path in sorted(AFTER_THE_RETURN.glob("*.py")):
        answers = reference_answers(path.stem[:4])
        for name, code in answer_cells(path.read_text(encoding="utf-8")).items():
            answers[name] = answers[name] + "\n\n" + code if path.stem in ADDED_TO_THE_REFERENCE else code
        write_notebook(folder / f"{path.stem}.ipynb", with_answers(path.stem[:4], answers))
    found = grade_many(find_submissions([folder]), SOURCES, jobs=2, options=GradingOptions(sandbox=sandbox.REQUIRED))
    return {report["submission"][:-len(".ipynb")]: report for report in found}


def scores(report: dict) -> dict:
    return {check["id"]: check["score"] for check in report["checks"]}


@pytest.mark.parametrize("name, credited_check, reporting_check", [
    ("ex02_late_child", "ex02-partial-tail-made", "ex02-bad-line-made"),  # the newline ending the partial tail
    ("ex03_late_during_the_copy", "ex03-shard-files", "ex03-index-rows"),  # a 4th line in the last shard, while copied
])
def test_a_childs_work_after_the_answer_returned_is_not_credited(reports, name, credited_check, reporting_check):
    report = reports[name]
    assert report["status"] == "graded", report["reason"]
    if sandbox.freezer_problem() is not None:
        assert "no freezer" in report["sandbox"]
        pytest.skip(f"no freezer here: {sandbox.freezer_problem()[0]}")
    assert "the student's side is frozen (a cgroup freezer)" in report["sandbox"]
    assert feedback_of(report, credited_check) == PASSED, "what the child wrote after the return was copied back"
    late = reported_json(report, reporting_check, "LATE-CHILD")
    assert late["wrote"] is True, "the child never wrote: this test would prove nothing"
    lost = {check for check, score in scores(report).items() if score == 0}
    assert lost == {reporting_check}, [(check["id"], check["feedback"][:200]) for check in report["checks"]]


def test_what_is_no_file_costs_only_the_call_it_touched_with_its_reason(reports):
    report = reports["ex02_blocks_the_copy"]
    assert report["status"] == "graded" and report["reason"] is None, report["reason"]
    feedback = {check["id"]: check["feedback"] for check in report["checks"]}
    # a socket, then a link, left where the file was: the file is not there
    for name in ("ex02-partial-tail-made", "ex02-bad-line-made"):
        assert feedback[name].startswith(FAILED) and exchange.NOT_FILES in feedback[name], feedback[name]
    # the pipe re-created in a loop: refused with the reason, or the answer's own error, or, if the grader's copy
    # won every race, the answer's right result; never a wait past the call's limit
    torn = feedback["ex02-clean-and-torn"]
    assert (torn == PASSED or torn.startswith(FAILED)
            or torn.startswith(f"{REFUSED}: not called: the student's side kept putting")), feedback
    assert not [text for text in feedback.values() if text.startswith((TIMED_OUT, NOT_RUN))], feedback
    touched = ("ex02-partial-tail-made", "ex02-bad-line-made", "ex02-clean-and-torn")
    later = [check.id for check in SOURCES["ex02"].checks if check.id not in touched]
    assert all(feedback[name] == PASSED for name in later), feedback
