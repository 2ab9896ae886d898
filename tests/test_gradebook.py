"""The class's tables: gradebook.csv (a row per student, a column per exercise, a total), a roster,
"missing" and "not attempted", unreadable submissions scored out of their exercise's points, a
regrade that keeps every table true, the submission's time in each report, and S09_SEED.
"""

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_grading_support import ROOT, SOURCES, student_path, write_notebook

from s09_jsonl_transcript.grading.assemble import exercise_of
from s09_jsonl_transcript.grading.cli import main
from s09_jsonl_transcript.grading.gradebook import (
    GRADER_ERROR,
    MISSING,
    NOT_ATTEMPTED,
    gradebook_rows,
    read_roster,
    student_of,
    untouched,
)
from s09_jsonl_transcript.grading.reports import format_class
from s09_jsonl_transcript.text import i18n

STEMS = [source.path.stem for source in SOURCES.values()]
BROKEN = b'{"cells": [ this is not JSON'


def rows_of(path: Path) -> list:
    with open(path, newline="", encoding="utf-8") as file:
        return list(csv.reader(file))


def by_student(path: Path) -> dict:
    with open(path, newline="", encoding="utf-8") as file:
        return {row["student"]: row for row in csv.DictReader(file)}


@pytest.mark.parametrize("label, student", [
    ("alice/ex01_last_turn_replay.ipynb", "alice"),
    ("alice/week3/ex01_last_turn_replay.ipynb", "alice"),
    ("ex01/alice.ipynb", "alice"),
    ("ex01_last_turn_replay/bob.ipynb", "bob"),
    ("alice_ex01_last_turn_replay.ipynb", "alice"),
    ("carol-ex02.ipynb", "carol"),
    ("ex01_last_turn_replay.ipynb", "ex01_last_turn_replay.ipynb"),  # nobody named: the label stands for itself
])
def test_the_student_comes_from_the_folder_or_the_file_name(label, student):
    assert student_of(label, STEMS) == student


def test_the_exercise_of_an_unreadable_file_comes_from_its_name_or_its_folder(tmp_path):
    assert exercise_of({}, tmp_path / "ex03_sharding.ipynb") == "ex03"
    assert exercise_of({}, tmp_path / "ex04" / "dave.ipynb") == "ex04"
    assert exercise_of({}, tmp_path / "dave.ipynb") is None
    assert exercise_of({"metadata": {"s09": {"exercise": "ex02"}}}, tmp_path / "ex04" / "dave.ipynb") == "ex02"


def test_a_roster_is_one_student_a_line_or_a_csvs_first_column(tmp_path):
    (tmp_path / "roster.txt").write_text("# section A\nalice\n\nbob\nalice\n", encoding="utf-8")
    (tmp_path / "roster.csv").write_text("student,email\ncarol,c@example.org\ndave,d@example.org\n",
                                         encoding="utf-8")
    assert read_roster(tmp_path / "roster.txt") == ["alice", "bob"]
    assert read_roster(tmp_path / "roster.csv") == ["carol", "dave"]


def report(submission, exercise, score, *, attempted=True, modified="2026-12-01T10:00:00+00:00"):
    return {"submission": submission, "exercise": exercise, "status": "graded", "score": score,
            "max_score": SOURCES[exercise].max_score if exercise in SOURCES else 0, "attempted": attempted,
            "modified": modified, "checks": []}


def test_the_gradebook_marks_missing_and_not_attempted_and_totals_the_rest():
    reports = [report("alice/ex01_last_turn_replay.ipynb", "ex01", 14),
               report("alice/ex02_corruption_boundary.ipynb", "ex02", 0, attempted=False),
               report("bob/ex01_last_turn_replay.ipynb", "ex01", 5),
               report("zoe/notes.ipynb", None, 0)]
    rows = gradebook_rows(reports, SOURCES, roster=["bob", "alice", "carol"])
    header, exercises = rows[0], ["ex01", "ex02"]  # the exercises graded; ex03 to ex05 were not
    assert header == ["student", *exercises, "total", "possible", "note"]
    table = {row[0]: dict(zip(header, row)) for row in rows[1:]}
    assert [row[0] for row in rows[1:]] == ["bob", "alice", "carol", "zoe"]  # the roster's order, then the others
    possible = SOURCES["ex01"].max_score + SOURCES["ex02"].max_score
    assert table["alice"]["ex01"] == 14 and table["alice"]["ex02"] == NOT_ATTEMPTED
    assert table["alice"]["total"] == 14 and table["bob"]["ex02"] == MISSING
    assert table["bob"]["total"] == 5 and table["bob"]["possible"] == possible
    assert all(table["carol"][exercise] == MISSING for exercise in exercises) and table["carol"]["total"] == 0
    assert "not on the roster" in table["zoe"]["note"] and "zoe/notes.ipynb" in table["zoe"]["note"]


def test_a_grader_error_is_marked_apart_from_a_zero_and_counts_in_no_total():
    failed = {**report("alice/ex02_corruption_boundary.ipynb", "ex02", 0), "status": "error"}
    rows = gradebook_rows([report("alice/ex01_last_turn_replay.ipynb", "ex01", 14), failed,
                           report("bob/ex02_corruption_boundary.ipynb", "ex02", 0)], SOURCES)
    table = {row[0]: dict(zip(rows[0], row)) for row in rows[1:]}
    assert table["alice"]["ex02"] == GRADER_ERROR != 0 and table["alice"]["total"] == 14
    assert "the grader failed on ex02: not graded, regrade" in table["alice"]["note"]
    assert table["bob"]["ex02"] == 0 and table["bob"]["note"] == ""


def test_of_two_submissions_of_one_exercise_the_last_modified_counts():
    older = report("alice/ex01_last_turn_replay.ipynb", "ex01", 14, modified="2026-12-01T10:00:00+00:00")
    newer = report("alice/ex01_last_turn_replay (2).ipynb", "ex01", 3, modified="2026-12-01T11:00:00+00:00")
    for reports in ([older, newer], [newer, older]):
        assert gradebook_rows(reports, SOURCES)[1][1] == 3


def test_an_untouched_stub_is_told_from_an_attempt(tmp_path):
    stub = student_path("ex02")
    assert untouched(stub, SOURCES["ex02"])
    notebook = json.loads(stub.read_text(encoding="utf-8"))
    answer_ids = {answer.cell_id for answer in SOURCES["ex02"].answers}
    cell = next(cell for cell in notebook["cells"] if cell.get("id") in answer_ids)
    cell["source"] = "def classify_damage(path):\n    return 'clean'\n"
    assert not untouched(write_notebook(tmp_path / "ex02_corruption_boundary.ipynb", notebook), SOURCES["ex02"])
    assert not untouched(SOURCES["ex02"].path, SOURCES["ex02"])  # the reference answers


@pytest.mark.slow  # grades a class through the real grader
def test_a_class_and_a_regrade_keep_every_table_true(tmp_path, capsys):
    folder, reports = tmp_path / "class", tmp_path / "reports"
    shutil.copy(SOURCES["ex01"].path, (folder / "alice").mkdir(parents=True) or folder / "alice" / "ex01_a.ipynb")
    shutil.copy(student_path("ex02"), folder / "alice" / "ex02_corruption_boundary.ipynb")  # untouched
    (folder / "bob").mkdir()
    (folder / "bob" / "ex01_last_turn_replay.ipynb").write_bytes(BROKEN)
    (folder / "ex05").mkdir()
    (folder / "ex05" / "carol.ipynb").write_bytes(b"")  # empty, in a folder per exercise
    roster = tmp_path / "roster.txt"
    roster.write_text("alice\nbob\ncarol\ndave\n", encoding="utf-8")
    arguments = ["--reports", str(reports), "--jobs", "2", "--seed", "11", "--sandbox", "auto"]

    assert main(["grade", str(folder), "--roster", str(roster), *arguments]) == 0
    printed = capsys.readouterr().out
    first = {row["submission"]: row for row in csv.DictReader(open(reports / "class.csv", encoding="utf-8"))}
    assert first["bob/ex01_last_turn_replay.ipynb"]["max_score"] == str(SOURCES["ex01"].max_score)
    assert first["ex05/carol.ipynb"]["exercise"] == "ex05"
    assert first["ex05/carol.ipynb"]["max_score"] == str(SOURCES["ex05"].max_score)
    reason = first["bob/ex01_last_turn_replay.ipynb"]["reason"]
    assert reason and reason in " ".join(printed.split())  # the class table prints the reason whole
    book = by_student(reports / "gradebook.csv")
    assert list(book) == ["alice", "bob", "carol", "dave"]
    assert book["alice"]["ex01"] == str(SOURCES["ex01"].max_score) and book["alice"]["ex02"] == NOT_ATTEMPTED
    assert book["bob"]["ex01"] == "0" and book["carol"]["ex05"] == "0" and book["carol"]["ex01"] == MISSING
    assert [name for name in book["dave"] if name.startswith("ex")] == ["ex01", "ex02", "ex05"]  # those graded
    assert all(book["dave"][exercise] == MISSING for exercise in ("ex01", "ex02", "ex05"))
    assert book["dave"]["total"] == "0" and book["dave"]["possible"] == str(
        sum(SOURCES[exercise].max_score for exercise in ("ex01", "ex02", "ex05")))
    alice = json.loads((reports / "alice" / "ex01_a.json").read_text(encoding="utf-8"))
    assert alice["modified"] and alice["modified"].endswith("+00:00") and alice["path"]

    shutil.copy(SOURCES["ex01"].path, folder / "bob" / "ex01_last_turn_replay.ipynb")  # bob fixes his file
    os.utime(folder / "bob" / "ex01_last_turn_replay.ipynb", (1_800_000_000, 1_800_000_000))
    assert main(["grade", str(folder / "bob"), *arguments]) == 0  # only bob, with a label of its own folder
    files = sorted(path.relative_to(reports).as_posix() for path in reports.rglob("*.json"))
    assert files == ["alice/ex01_a.json", "alice/ex02_corruption_boundary.json",
                     "bob/ex01_last_turn_replay.json", "ex05/carol.json"]  # bob's report replaced, none added
    again = {row["submission"]: row for row in csv.DictReader(open(reports / "class.csv", encoding="utf-8"))}
    assert set(again) == set(first)
    assert again["bob/ex01_last_turn_replay.ipynb"]["score"] == str(SOURCES["ex01"].max_score)
    assert again["alice/ex01_a.ipynb"] == first["alice/ex01_a.ipynb"]
    book = by_student(reports / "gradebook.csv")
    assert book["bob"]["ex01"] == str(SOURCES["ex01"].max_score)
    assert list(book) == ["alice", "bob", "carol"]  # no roster this time: whoever submitted
    bob = json.loads((reports / "bob" / "ex01_last_turn_replay.json").read_text(encoding="utf-8"))
    assert bob["modified"] == "2027-01-15T08:00:00+00:00"


def test_a_class_table_in_the_terminal_keeps_a_long_reason_whole():
    reason = "word " * 80 + "the end of the reason"
    row = {"submission": "a.ipynb", "exercise": "ex01", "status": "rejected", "reason": reason, "score": 0,
           "max_score": 14}
    assert format_class([row]).rstrip().endswith("the end of the reason]")


@pytest.mark.slow  # grades a class through the real grader
def test_run_autograder_grades_with_the_seed_s09_seed_pins(tmp_path):
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    shutil.copy(SOURCES["ex04"].path, root / "submission" / "ex04_tail_reader.ipynb")
    done = subprocess.run(["bash", str(ROOT / "s09_jsonl_transcript" / "grading" / "autograder" / "run_autograder")],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "AUTOGRADER_ROOT": str(root), "S09_KIT": str(ROOT),
                               "S09_PYTHON": sys.executable, "S09_SEED": "424242", "S09_SANDBOX": "auto"})
    assert done.returncode == 0, done.stderr
    results = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    assert results["extra_data"]["seed"] == 424242
    assert results["score"] == SOURCES["ex04"].max_score
    assert results["extra_data"]["modified"]


@pytest.fixture
def english_afterwards():
    yield
    i18n.use("en")


@pytest.mark.parametrize("argv, environment", [(["--lang", "zh", "grade", "--help"], {}),
                                               (["grade", "--help"], {"LC_ALL": "zh_CN.UTF-8"})])
def test_the_graders_help_is_in_chinese_under_lang_zh_or_a_chinese_locale(argv, environment, monkeypatch, capsys,
                                                                          english_afterwards):
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    printed = capsys.readouterr().out
    assert stopped.value.code == 0
    assert printed.startswith("用法：") and "给笔记本评分" in printed and "gradebook.csv 为每人一行" in printed


def test_the_graders_help_stays_english_otherwise(monkeypatch, capsys, english_afterwards):
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    with pytest.raises(SystemExit):
        main(["grade", "--help"])
    printed = capsys.readouterr().out
    assert printed.startswith("usage:") and "--roster" in printed and "用法" not in printed
