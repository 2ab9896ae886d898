"""Helpers shared by the grader's test modules (no tests here): notebooks with given answers, grading
a folder through the command line, and what is left running afterwards.
"""

import json
import os
import re
from pathlib import Path

import psutil
import pytest

from s09_jsonl_transcript.grading import sandbox
from s09_jsonl_transcript.grading.cli import main
from s09_jsonl_transcript.grading.source import load_sources

ROOT = Path(__file__).resolve().parent.parent
INSTRUCTOR = ROOT / "exercises" / "instructor"
STUDENT = ROOT / "exercises"
LANGUAGES = ("en", "zh")  # the student notebooks: exercises/ and exercises/zh/
GRADING_DATA = Path(__file__).resolve().parent / "grading_data"
SOURCES = load_sources(INSTRUCTOR)
EXERCISES = sorted(SOURCES)
CELL_MARKER = re.compile(r"^# %% (\S+)$", re.MULTILINE)


def notebook_json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def student_path(exercise: str, language: str = "en") -> Path:
    """The student notebook of exercise in language."""
    return (STUDENT if language == "en" else STUDENT / language) / SOURCES[exercise].path.name


def with_answers(exercise: str, answers: dict, language: str = "en") -> dict:
    """The student notebook of exercise (in language) with the named answer cells' sources replaced."""
    notebook = notebook_json(student_path(exercise, language))
    by_name = {answer.cell_id: answer.name for answer in SOURCES[exercise].answers}
    unknown = set(answers) - set(by_name.values())
    assert not unknown, f"no such answer cells: {unknown}"
    for cell in notebook["cells"]:
        name = by_name.get(cell.get("id"))
        if name in answers:
            cell["source"] = answers[name]
    return notebook


def reference_answers(exercise: str) -> dict:
    """The instructor's answer code for an exercise, by answer name."""
    notebook = notebook_json(SOURCES[exercise].path)
    by_id = {answer.cell_id: answer.name for answer in SOURCES[exercise].answers}
    return {by_id[cell["id"]]: "".join(cell["source"]) for cell in notebook["cells"] if cell.get("id") in by_id}


def answer_cells(text: str) -> dict:
    """{answer name: code} from a file whose "# %% <answer name>" lines start each answer cell."""
    pieces = CELL_MARKER.split(text)
    return {name: code.strip("\n") for name, code in zip(pieces[1::2], pieces[2::2])}


def write_notebook(path: Path, notebook: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(notebook, indent=1), encoding="utf-8")
    return path


def grade_folder(folder: Path, reports: Path, *options: str) -> dict:
    """Run `grade FOLDER` through the command line; return the reports by submission label."""
    status = main(["grade", str(folder), "--reports", str(reports), "--jobs", "2", *options])
    assert status == 0, "the grader reported a failure of its own"
    found = {}
    for path in reports.rglob("*.json"):
        report = json.loads(path.read_text(encoding="utf-8"))
        found[report["submission"]] = report
    return found


def failed_checks(report: dict) -> set:
    return {check["name"] for check in report["checks"] if check["score"] < check["max_score"]}


def feedback_of(report: dict, check: str) -> str:
    return next(entry["feedback"] for entry in report["checks"] if entry["name"] == check)


def reported_json(report: dict, check: str, tag: str):
    """The JSON a spying answer put in an AssertionError that starts with tag, as the check's feedback shows it."""
    feedback = feedback_of(report, check)
    assert tag in feedback, feedback
    return json.loads(feedback.split(tag, 1)[1].strip())


def require_sandbox() -> None:
    """Skip (with the reason) where bubblewrap cannot run; under CI=true, fail instead."""
    box = sandbox.status(sandbox.AUTO)
    if not box.enabled:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true, but the grader cannot sandbox here: {box.note}")
        pytest.skip(box.note)


def sandbox_processes() -> list:
    """Processes running as a user id that this test process's gradings use (when the grader runs as root).

    Only this process's ids: another grading on the same machine (another checkout's tests, a class
    run) uses ids of its own, and its processes are none of this test's business.
    """
    own = {sandbox.sandbox_uid(slot) for slot in range(64)}
    found = []
    for process in psutil.process_iter(["uids"]):
        try:
            if process.info["uids"] and process.info["uids"].real in own:
                found.append(process)
        except psutil.Error:
            continue
    return found


def processes_mentioning(token: str) -> list:
    """Live processes whose command line contains token."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        try:
            if any(token in part for part in process.info["cmdline"] or ()):
                found.append(process)
        except psutil.Error:
            continue
    return found


def assert_same_program(english, chinese) -> None:
    """Two built notebooks run the same code: the cells alike but for comments and docstrings (a Chinese stub's)."""
    from s09_jsonl_transcript.bilingual import same_code

    assert [(cell.cell_type, cell.metadata) for cell in english.cells] == [
        (cell.cell_type, cell.metadata) for cell in chinese.cells]
    assert {key: value for key, value in english.items() if key != "cells"} == {
        key: value for key, value in chinese.items() if key != "cells"}
    for english_cell, chinese_cell in zip(english.cells, chinese.cells):
        assert english_cell.source == chinese_cell.source or same_code(english_cell.source, chinese_cell.source), (
            english_cell.get("id"))
