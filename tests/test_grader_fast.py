"""The grader's part of the default test run: one grading of a reference and one of a release, and
the pieces of the outside verdict that need no kernel (what a check observes, how values are read,
what reaches a file, a terminal or a spreadsheet). The long suites are marked slow.
"""

import json
import os

import pytest
from test_grading_support import SOURCES, student_path, write_notebook

from s09_jsonl_transcript.grading import sandbox
from s09_jsonl_transcript.grading.checks import check_random
from s09_jsonl_transcript.grading.grader import GradingOptions, find_submissions, grade_many
from s09_jsonl_transcript.grading.reports import report_names
from s09_jsonl_transcript.grading.words import csv_cell, printable

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the grader runs on POSIX systems (Linux, macOS)")


def test_a_reference_scores_full_marks_and_a_release_nothing(tmp_path):
    source = SOURCES["ex04"]
    write_notebook(tmp_path / "reference" / source.path.name, json.loads(source.path.read_text(encoding="utf-8")))
    write_notebook(tmp_path / "release" / source.path.name,
                   json.loads(student_path("ex04").read_text(encoding="utf-8")))
    reports = {report["submission"]: report for report in grade_many(
        find_submissions([tmp_path]), SOURCES, jobs=2, options=GradingOptions(seed=2026))}
    reference, release = reports[f"reference/{source.path.name}"], reports[f"release/{source.path.name}"]
    assert reference["score"] == reference["max_score"] == source.max_score, (
        reference.get("status"), reference.get("reason"),
        [(check["name"], check["feedback"][:300]) for check in reference["checks"]])
    assert release["status"] == "graded" and release["score"] == 0, release["checks"]
    assert reference["seed"] == release["seed"] == 2026


def test_a_check_draws_the_same_inputs_for_a_seed_and_others_for_another(monkeypatch):
    monkeypatch.setenv("S09_SEED", "7")
    first = check_random("ex04-block-boundaries").random()
    assert check_random("ex04-block-boundaries").random() == first != check_random("ex04-read-budget").random()
    monkeypatch.setenv("S09_SEED", "8")
    assert check_random("ex04-block-boundaries").random() != first


# --------------------------------------------------------------------------- files, terminals, spreadsheets


def test_text_from_a_kernel_is_made_printable():
    assert printable("a\x1b[2Jb\udcff\u202ec\x00") == "a\\x1b[2Jb\\udcff\\u202ec\\x00"
    assert printable("line\nline 中文") == "line\nline 中文"
    assert printable("x\ny", newlines=False) == "x\\x0ay"


@pytest.mark.parametrize("value, cell", [("=1+2", "'=1+2"), ("@SUM(A1)", "'@SUM(A1)"), ("+1", "'+1"),
                                         ("-1", "'-1"), ("\tx", "\\x09x"), ("ex01_a.ipynb", "ex01_a.ipynb"), (3, 3)])
def test_a_csv_cell_is_never_a_formula(value, cell):
    assert csv_cell(value) == cell


def test_odd_labels_get_report_names_that_never_collide_and_any_file_system_takes():
    labels = ["ex01_a.ipynb", "ex01_a.json/ex01_b.ipynb", "class.csv/ex01_c.ipynb", "ex01_twin x.ipynb",
              "ex01_twin_x.ipynb", "ex01_" + "a b" * 80 + ".ipynb", "EX01_A.ipynb", "results.ipynb",
              "ex01_\\xd5\\xc5.ipynb"]
    names = [str(name) for name in report_names(labels)]
    assert len({name.casefold() for name in names}) == len(names)
    folders = {"/".join(name.split("/")[:depth]).casefold()
               for name in names for depth in range(1, name.count("/") + 1)}
    assert not folders & {name.casefold() for name in names}
    assert not [name for name in names if name.split("/")[0].casefold() in ("class.csv", "results.json")]
    assert all(len(part.encode()) <= 200 for name in names for part in name.split("/"))


def test_the_sandbox_sees_the_lesson_and_the_checks_but_not_the_lab(tmp_path):
    view = sandbox.write_package_view(tmp_path)
    present = sorted(str(path.relative_to(view)) for path in sorted(tmp_path.rglob("*.py")))
    assert "code.py" in present and "grading/checks.py" in present
    assert not [name for name in present if name in ("lab", "lab.py", "damage.py", "bench", "bench.py", "crashlab")]
    assert "lab" not in (tmp_path / "s09_jsonl_transcript" / "__init__.py").read_text(encoding="utf-8")
