"""The student notebooks in exercises/: the five exercises, laid out the way students and the grader need.

Whether they score what they should is tested in test_grading_runs.py, through the grader.
"""

import ast
from pathlib import Path

import nbformat
import pytest
import tomllib

ROOT = Path(__file__).resolve().parent.parent
EXERCISES = ROOT / "exercises"
NAMES = ["ex01_last_turn_replay.ipynb", "ex02_corruption_boundary.ipynb", "ex03_sharding.ipynb",
         "ex04_tail_reader.ipynb", "ex05_hash_chain.ipynb"]


def student(name: str) -> nbformat.NotebookNode:
    return nbformat.read(EXERCISES / name, as_version=4)


def role(cell) -> str | None:
    return cell.metadata.get("s09", {}).get("role")


def test_the_five_exercises_are_there_for_students_and_instructors():
    assert sorted(path.name for path in EXERCISES.glob("ex*.ipynb")) == NAMES
    assert sorted(path.name for path in (EXERCISES / "instructor").glob("ex*.ipynb")) == NAMES


def test_the_default_test_run_does_not_collect_the_exercise_notebooks():
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]["ini_options"]
    assert not any(path.startswith("exercises") for path in settings["testpaths"]), (
        "the student notebooks raise NotImplementedError by design; nbval must not collect them")


@pytest.mark.parametrize("name", NAMES)
def test_a_notebook_opens_with_its_aims_and_ends_with_a_recap(name):
    cells = student(name).cells
    assert cells[0].cell_type == "markdown" and "**What you will practise:**" in cells[0].source
    assert "python -m s09_jsonl_transcript.grading grade" in cells[0].source
    assert cells[-1].cell_type == "markdown" and cells[-1].source.startswith("## Recap")
    assert "Notebook" in cells[-1].source or "Exercise" in cells[-1].source


@pytest.mark.parametrize("name", NAMES)
def test_every_code_cell_is_valid_python(name):
    for notebook in (student(name), nbformat.read(EXERCISES / "instructor" / name, as_version=4)):
        for cell in notebook.cells:
            if cell.cell_type == "code":
                ast.parse(cell.source)


@pytest.mark.parametrize("name", NAMES)
def test_checks_are_locked_and_answers_cannot_be_deleted(name):
    cells = student(name).cells
    checks = [cell for cell in cells if role(cell) == "check"]
    answers = [cell for cell in cells if role(cell) == "answer"]
    assert checks and answers
    assert all(cell.metadata.get("editable") is False and cell.metadata.get("deletable") is False for cell in checks)
    assert all(cell.metadata.get("deletable") is False and "editable" not in cell.metadata for cell in answers)


@pytest.mark.parametrize("name", NAMES)
def test_every_visible_check_prints_one_pass_line_and_explains_failures(name):
    for cell in student(name).cells:
        if role(cell) == "check":
            check = cell.metadata["s09"]
            lines = cell.source.rstrip().split("\n")
            unit = "point" if check["points"] == 1 else "points"
            assert lines[-1] == f'print("{check["name"]} passed ({check["points"]} {unit})")'
            assert cell.source.count("print(") == 1
            assert "assert " in cell.source or "AssertionError(" in cell.source
            asserts = [node for node in ast.walk(ast.parse(cell.source)) if isinstance(node, ast.Assert)]
            assert all(node.msg is not None for node in asserts), f"{check['name']}: every assert needs a message"


def test_exercise_1_builds_on_the_library():
    setup = student(NAMES[0]).cells[1].source
    assert "from s09_jsonl_transcript.code import" in setup
    for name in ("JSONLTranscript", "MockLLM", "run_agent"):
        assert name in setup
    answers = "\n".join(cell.source for cell in nbformat.read(EXERCISES / "instructor" / NAMES[0], as_version=4).cells
                        if role(cell) == "answer")
    assert "transcript.replay(max_items=" in answers
