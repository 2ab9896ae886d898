"""Helpers shared by the grader's test modules (no tests here): notebooks with given answers, grading
a folder through the command line, and what is left running afterwards.
"""

import ast
import json
import os
import re
import sys
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
# The capstone's checks are its crash properties, judged by grading/durability on the answer's text: it has no
# hidden check, and its branch mutants are not compared (the local check and the grader judge at different sizes)
CRASH_GRADED = sorted(name for name, source in SOURCES.items() if source.crash_graded is not None)
IN_KERNEL = [name for name in EXERCISES if name not in CRASH_GRADED]  # the exercises whose checks call the answers
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
    """The ids of the checks that lost points (ids never change; names are numbered in notebook order)."""
    return {check["id"] for check in report["checks"] if check["score"] < check["max_score"]}


def feedback_of(report: dict, check: str) -> str:
    """The feedback of the check with this id."""
    return next(entry["feedback"] for entry in report["checks"] if entry["id"] == check)


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
    from s09_jsonl_transcript.text.bilingual import same_code

    assert [(cell.cell_type, cell.metadata) for cell in english.cells] == [
        (cell.cell_type, cell.metadata) for cell in chinese.cells]
    assert {key: value for key, value in english.items() if key != "cells"} == {
        key: value for key, value in chinese.items() if key != "cells"}
    for english_cell, chinese_cell in zip(english.cells, chinese.cells):
        assert english_cell.source == chinese_cell.source or same_code(english_cell.source, chinese_cell.source), (
            english_cell.get("id"))


# --------------------------------------------------------------------------- wrong answers made from the reference

SOLUTION = re.compile(r"^\s*### BEGIN SOLUTION\s*$(.*?)^\s*### END SOLUTION\s*$", re.MULTILINE | re.DOTALL)


def solution_lines(code: str) -> set:
    """The line numbers (1-based) of the code between the solution markers: what the student writes."""
    lines = set()
    for match in SOLUTION.finditer(code):
        first = code.count("\n", 0, match.start(1)) + 1
        lines.update(range(first, first + match.group(1).count("\n")))
    return lines


def without_markers(code: str) -> str:
    """The code without its solution marker lines (what a student's answer cell holds)."""
    return "\n".join(line for line in code.split("\n") if line.strip() not in ("### BEGIN SOLUTION",
                                                                           "### END SOLUTION"))


class _Mutation:
    """One way to change a node of a solution: (what it does, in words, and the new node or None to delete it)."""

    def __init__(self, target, replacement, words: str):
        self.target, self.replacement, self.words = target, replacement, words


def _mutations(tree, lines: set) -> list:
    """Every removal of a branch or guard, and every swap of a two-way branch, in the solution's lines."""
    found = []
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) not in lines:
            continue
        where = f"line {node.lineno}"
        if isinstance(node, ast.If):
            test = ast.unparse(node.test)
            if node.orelse:
                found.append(_Mutation(node, node.body, f"{where}: always the branch of `if {test}`"))
                found.append(_Mutation(node, node.orelse, f"{where}: never the branch of `if {test}`"))
            else:
                found.append(_Mutation(node, None, f"{where}: the guard `if {test}` removed"))
        if isinstance(node, (ast.If, ast.While)) and isinstance(node.test, ast.BoolOp) and len(node.test.values) > 1:
            for index, operand in enumerate(node.test.values):
                rest = [value for position, value in enumerate(node.test.values) if position != index]
                test = rest[0] if len(rest) == 1 else ast.BoolOp(op=node.test.op, values=rest)
                found.append(_Mutation(node.test, test, f"{where}: `{ast.unparse(operand)}` left out of the condition"))
        if isinstance(node, ast.IfExp):
            test = ast.unparse(node.test)
            found.append(_Mutation(node, node.body, f"{where}: always the first value of `if {test} else`"))
            found.append(_Mutation(node, node.orelse, f"{where}: always the value after `else` of `if {test}`"))
        if isinstance(node, ast.Try) and node.handlers:
            caught = ", ".join(ast.unparse(handler.type) if handler.type else "everything" for handler in node.handlers)
            found.append(_Mutation(node, node.body, f"{where}: the `except {caught}` removed"))
    return found


class _Replace(ast.NodeTransformer):
    def __init__(self, target, replacement):
        self.target, self.replacement = target, replacement

    def visit(self, node):
        if node is self.target:
            if self.replacement is None:
                return ast.Pass()
            return self.replacement
        return super().visit(node)


def branch_mutants(exercise: str) -> list:
    """(name, {answer name: code}, words) for every wrong answer made by removing or swapping one branch or guard
    of one reference answer; the other answers stay the reference's."""
    mutants = []
    for answer, code in reference_answers(exercise).items():
        lines = solution_lines(code)
        for number, mutation in enumerate(_mutations(ast.parse(code), lines), start=1):
            mutants.append((f"{answer}-{number}", {answer: _apply(code, lines, number)}, mutation.words))
    return mutants


def _apply(code: str, lines: set, number: int) -> str:
    """The code with its number-th mutation (1-based, in _mutations' order) made."""
    tree = ast.parse(code)
    mutation = _mutations(tree, lines)[number - 1]
    changed = _Replace(mutation.target, mutation.replacement).visit(tree)
    return ast.unparse(ast.fix_missing_locations(changed))


WRONG_ANSWERS = GRADING_DATA / "wrong_answers"


class WrongAnswer:
    """A wrong answer: the reference answers of an exercise with a few lines edited (tests/grading_data/wrong_answers).

    name is "<exercise>_<what it does>", loses the checks it must lose, answers the edited answer cells'
    code by answer name (the other answer cells keep the reference's).
    """

    def __init__(self, exercise: str, slug: str, words: str, loses: set, edits: list):
        self.exercise, self.name, self.words, self.loses = exercise, f"{exercise}_{slug}", words, loses
        self.edits = edits  # (answer name, lines to find, lines to put in their place)

    @property
    def answers(self) -> dict:
        """Each edited answer cell's code: every edit found once in the reference, then all made at once."""
        edited = {}
        for answer, code in reference_answers(self.exercise).items():
            lines = without_markers(code).split("\n")
            placed = []
            for edit_answer, old, new in self.edits:
                if edit_answer != answer:
                    continue
                places = [start for start in range(len(lines) - len(old) + 1) if lines[start:start + len(old)] == old]
                assert len(places) == 1, f"{self.name}: the lines to edit occur {len(places)} times in {answer}: {old}"
                placed.append((places[0], old, new))
            for start, old, new in sorted(placed, key=lambda edit: edit[0], reverse=True):
                lines[start:start + len(old)] = new
            if placed:
                edited[answer] = "\n".join(lines)
        unknown = {answer for answer, _, _ in self.edits} - set(reference_answers(self.exercise))
        assert not unknown, f"{self.name}: no answer cells {unknown}"
        return edited

    def __repr__(self):
        return self.name


def read_wrong_answers(path: Path) -> list:
    """The wrong answers of one exercise's file (see its header for the format)."""
    exercise, found, hunk, added = path.stem, [], None, False
    for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), start=1):
        if line.startswith("## "):
            slug, _, words = line[3:].partition(": ")
            found.append(WrongAnswer(exercise, slug, words, set(), []))
            hunk = None
        elif line.startswith("# loses: "):
            found[-1].loses = set(line[len("# loses: "):].split()) - {"nothing"}
        elif line.startswith("# in "):
            answer, hunk = line[len("# in "):].strip(), None
        elif line[:1] in ("-", "+", " ") and found:
            if hunk is None or (line[0] == "-" and added):  # a "-" after "+" lines starts the next edit
                hunk, added = (answer, [], []), False
                found[-1].edits.append(hunk)
            added = added or line[0] == "+"
            if line[0] in "- ":
                hunk[1].append(line[1:])
            if line[0] in "+ ":
                hunk[2].append(line[1:])
        elif line.strip() and not line.startswith("#"):
            raise ValueError(f"{path.name}, line {number}: not part of the format: {line!r}")
        else:
            hunk = None
    return found


def wrong_answers(folder: Path = WRONG_ANSWERS) -> list:
    """Every edited answer in folder (the wrong answers by default), exercise by exercise."""
    return [wrong for path in sorted(folder.glob("ex[0-9][0-9].txt")) for wrong in read_wrong_answers(path)]


HONEST = GRADING_DATA / "honest"  # alternatives to the reference that pass every check in plain Python


# --------------------------------------------------------------------------- a notebook run in plain Python

PLAIN_CELL_SECONDS = 3  # a wrong answer that loops forever fails its check after this long
# a crash-graded exercise's cells run its local crash check (each a few seconds); its answers' calls run in child
# processes, each under the engine's own time limit per call
PLAIN_CRASH_CELL_SECONDS = 600


def plain_run(exercise: str, answers: dict, seed: int) -> set:
    """The checks that fail when the exercise's notebook runs top to bottom in this process, with these answers
    and this seed: setup, answer and check cells executed in order, as Python runs them without a grader."""
    import contextlib
    import io
    import linecache
    import signal
    import tempfile

    from s09_jsonl_transcript.grading.checks import SEED_VARIABLE

    def too_long(*_):
        raise TimeoutError(f"a cell ran longer than {PLAIN_CELL_SECONDS} s")

    source = SOURCES[exercise]
    seconds = PLAIN_CELL_SECONDS if source.crash_graded is None else PLAIN_CRASH_CELL_SECONDS
    answer_at = {answer.cell_index: answer.name for answer in source.answers}
    check_at = {check.cell_index: check.id for check in source.checks}
    namespace, failed, code_index = {}, set(), 0
    before = os.environ.get(SEED_VARIABLE)
    alarm = signal.signal(signal.SIGALRM, too_long)
    os.environ[SEED_VARIABLE] = str(seed)
    try:
        with tempfile.TemporaryDirectory() as folder, contextlib.chdir(folder):
            for position, cell in enumerate(source.notebook.cells):
                if cell.cell_type != "code":
                    continue
                code = answers[answer_at[position]] if position in answer_at else cell.source
                name = f"<cell {code_index}>"
                linecache.cache[name] = (len(code), None, code.splitlines(True), name)  # as Jupyter keeps a cell
                try:
                    signal.alarm(seconds)
                    with contextlib.redirect_stdout(io.StringIO()):
                        exec(compile(code, name, "exec"), namespace)  # noqa: S102 - the kit's own
                except Exception:  # noqa: BLE001 - a failing check is what is counted
                    if code_index in check_at:
                        failed.add(check_at[code_index])
                finally:
                    signal.alarm(0)
                code_index += 1
    finally:
        signal.signal(signal.SIGALRM, alarm)
        if "matplotlib.pyplot" in sys.modules:  # the figures a crash check drew
            sys.modules["matplotlib.pyplot"].close("all")
        if before is None:
            os.environ.pop(SEED_VARIABLE, None)
        else:
            os.environ[SEED_VARIABLE] = before
    return failed
