"""Reports a course platform reads (issue 14, part 5): Gradescope's results.json shape, the
otter-style final_grades.csv, and the run_autograder script run against a Gradescope-like layout.
"""

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_grading_support import ROOT, SOURCES, STUDENT, grade_folder, require_sandbox, write_notebook

from s09_jsonl_transcript.grading.cli import main
from s09_jsonl_transcript.grading.grader import grade_submission
from s09_jsonl_transcript.grading.reports import gradescope_results, write_final_grades

pytestmark = [pytest.mark.slow,  # the grader's long suite: tests/test_grader_fast.py is its default-run part
              pytest.mark.skipif(os.name != "posix", reason="the grader runs on POSIX systems (Linux, macOS)")]

AUTOGRADER = ROOT / "s09_jsonl_transcript" / "grading" / "autograder"
VISIBILITIES = {"hidden", "after_due_date", "after_published", "visible"}  # Gradescope's four


def assert_gradescope_shape(results: dict, report: dict) -> None:
    """The fields Gradescope reads, with the values the grader's report holds."""
    assert isinstance(results["score"], (int, float)) and results["score"] == report["score"]
    assert results["visibility"] in VISIBILITIES and results["stdout_visibility"] in VISIBILITIES
    assert [test["name"] for test in results["tests"]] == [check["name"] for check in report["checks"]]
    for test, check in zip(results["tests"], report["checks"]):
        assert set(test) >= {"name", "score", "max_score", "visibility", "output"}
        assert (test["score"], test["max_score"], test["output"]) == (check["score"], check["max_score"],
                                                                        check["feedback"])
        assert test["visibility"] == ("after_published" if check["visibility"] == "hidden" else "visible")
        assert test["status"] == ("passed" if test["score"] == test["max_score"] else "failed")
    assert sum(test["score"] for test in results["tests"]) == results["score"]
    json.dumps(results, allow_nan=False)  # plain JSON


def test_a_rejected_submission_in_gradescope_shape_says_why(tmp_path):
    path = tmp_path / "ex03_broken.ipynb"
    path.write_text("{not json")
    report = grade_submission(path, SOURCES)
    results = gradescope_results(report)
    assert_gradescope_shape(results, report)
    assert results["score"] == 0
    assert "rejected · 已拒收: invalid JSON at line 1, column 2 · JSON 无效" in results["output"]
    assert len(results["tests"]) == len(SOURCES["ex03"].checks)


def test_final_grades_has_a_row_per_file_a_column_per_check_then_total_and_possible(tmp_path):
    reports = []
    for name in ("ex01_a.ipynb", "ex02_b.ipynb"):
        (tmp_path / name).write_text("[]")
        reports.append(grade_submission(tmp_path / name, SOURCES))
    with open(write_final_grades(reports, tmp_path / "final_grades.csv"), newline="", encoding="utf-8") as file:
        rows = list(csv.reader(file))
    names = [check.name for check in SOURCES["ex01"].checks + SOURCES["ex02"].checks]
    assert rows[0] == ["file", *names, "total", "possible"]
    assert rows[1][0] == "ex01_a.ipynb" and rows[1][-2:] == ["0", str(SOURCES["ex01"].max_score)]
    assert rows[2][1:1 + len(SOURCES["ex01"].checks)] == [""] * len(SOURCES["ex01"].checks)


def test_a_class_in_gradescope_format(tmp_path):
    folder = tmp_path / "class"
    write_notebook(folder / "ann" / "ex01_last_turn_replay.ipynb", json.loads(SOURCES["ex01"].path.read_text()))
    write_notebook(folder / "bob" / "ex04_tail_reader.ipynb", json.loads((STUDENT / "ex04_tail_reader.ipynb")
                                                                       .read_text()))
    reports = tmp_path / "reports"
    assert main(["grade", str(folder), "--reports", str(reports), "--format", "gradescope", "--jobs", "2"]) == 0
    assert sorted(path.relative_to(reports).as_posix() for path in reports.rglob("*") if path.is_file()) == [
        "ann/ex01_last_turn_replay.json", "bob/ex04_tail_reader.json", "final_grades.csv", "gradebook.csv"]
    plain = grade_folder(folder, tmp_path / "plain")  # the same class in the default format, for comparison
    for label in plain:
        results = json.loads((reports / label).with_suffix(".json").read_text(encoding="utf-8"))
        assert_gradescope_shape(results, plain[label])
    with open(reports / "final_grades.csv", newline="", encoding="utf-8") as file:
        rows = {row["file"]: row for row in csv.DictReader(file)}
    assert rows["ann/ex01_last_turn_replay.ipynb"]["total"] == str(SOURCES["ex01"].max_score)
    assert rows["bob/ex04_tail_reader.ipynb"]["total"] == "0"


def run_autograder(tmp_path: Path, notebooks: list, **environment) -> dict:
    """Run run_autograder on a Gradescope-like layout (submission/, results/) with this checkout as the kit."""
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    for path in notebooks:
        shutil.copy(path, root / "submission" / path.name)
    done = subprocess.run(["bash", str(AUTOGRADER / "run_autograder")], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "AUTOGRADER_ROOT": str(root), "S09_KIT": str(ROOT),
                               "S09_PYTHON": sys.executable, **environment})  # this interpreter, wherever it lives
    assert done.returncode == 0, done.stderr
    return json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))


def test_run_autograder_grades_the_submitted_notebook_sandboxed(tmp_path):
    require_sandbox()
    results = run_autograder(tmp_path, [SOURCES["ex05"].path], S09_EXERCISE="ex05")
    assert results["score"] == SOURCES["ex05"].max_score
    assert "sandboxed with bubblewrap" in results["output"]
    assert {test["visibility"] for test in results["tests"]} == {"visible", "after_published"}


def test_run_autograder_scores_the_wrong_exercise_zero(tmp_path):
    require_sandbox()
    results = run_autograder(tmp_path, [SOURCES["ex05"].path], S09_EXERCISE="ex02")
    assert results["score"] == 0 and "wrong exercise" in results["output"]
    assert len(results["tests"]) == len(SOURCES["ex02"].checks)


def test_run_autograder_wants_exactly_one_notebook(tmp_path):
    results = run_autograder(tmp_path, [SOURCES["ex01"].path, SOURCES["ex02"].path])
    assert results == {"score": 0, "output": "Submit exactly one notebook (.ipynb); this submission holds 2."
                                             " · 请只提交一个笔记本（.ipynb）；这次提交里有 2 个。", "tests": []}
