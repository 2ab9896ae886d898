"""The exercise notebook format: which cells are answers, which are checks, and what they are worth.

An instructor source is an ordinary notebook whose cells carry an `s09` entry in their metadata:

    {"role": "answer", "name": "ex01-replay"}              the student writes this cell
    {"role": "check", "name": "ex01.3", "id": "ex01-second-turn",
     "points": 3}                                          a visible check
    {"role": "check", "name": "ex01.5", "id": "ex01-no-turn-edges",
     "points": 2, "hidden": true}                          a check only the grader runs
    {"role": "note", "hidden": true}                       an instructor-only markdown cell
    {"role": "local"}                                      a cell the student runs for themself, before
                                                           submitting (the capstone's local crash check):
                                                           the grader runs it in neither kernel

A check's *name* (ex01.3) is what students read, numbered in the order of the notebook; its *id*
never changes once given, wherever the check moves or whatever is added before it. A check that
draws inputs from the grading run's seed draws them by its id (`check_random("ex01-long-turn")`),
so adding a check changes no other check's inputs. Every other cell is locked text or setup code.
The notebook's own metadata names the exercise: {"s09": {"exercise": "ex01", "title": "Last-turn
replay"}}. A crash-graded exercise (the capstone, ex06) also names the answer cell the grader crash-tests
outside both kernels, {"crash_graded": "ex06-transcript"}, and each of its checks names the property it
scores, {"property": "kept"} (see grading/durability/judge.py). In an answer cell the reference
solution sits between `### BEGIN SOLUTION` and `### END SOLUTION` lines. A check prints exactly
one line when it passes, in both languages: `<name> passed (<points> points) · 通过（<points> 分）`.

The grader compares against a *pristine* copy: the source saved after a clean top-to-bottom run,
so that every check cell holds its pass line as output. `load_source` refuses anything else.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass
from pathlib import Path

import nbformat

from .words import both, point_words

METADATA_KEY = "s09"
ANSWER, CHECK, NOTE, LOCAL = "answer", "check", "note", "local"
BEGIN_SOLUTION = "### BEGIN SOLUTION"
END_SOLUTION = "### END SOLUTION"
EXERCISE_NAME = re.compile(r"^ex\d\d$")
CHECK_ID = re.compile(r"^ex\d\d-[a-z][a-z0-9]*(-[a-z0-9]+)*$")  # words, not a position: "ex04-block-boundaries"
DRAWS = re.compile(r"check_random\(\s*[\"']([^\"']*)[\"']\s*\)")
DRAWS_ANYTHING = re.compile(r"check_random\s*\(")
KIND_INSTRUCTOR = "instructor"  # solutions and hidden checks: the grader's full copy
KIND_SELFCHECK = "selfcheck"  # written by release for students: stubs, visible checks only


class SourceError(ValueError):
    """An instructor source (or self-check copy) cannot be used for grading; the message says why."""


@dataclass(frozen=True)
class Check:
    """One scored check cell."""

    name: str
    points: int
    hidden: bool
    cell_index: int  # position among the notebook's code cells, as nbval numbers them
    id: str = ""  # stable: see the module's docstring
    property: str | None = None  # a crash-graded exercise's check: the property it scores


@dataclass(frozen=True)
class Answer:
    """One cell the student writes."""

    name: str
    cell_id: str
    cell_index: int  # position in notebook.cells


@dataclass(frozen=True)
class ExerciseSource:
    """A pristine exercise notebook, ready to grade against."""

    exercise: str
    title: str
    kind: str  # KIND_INSTRUCTOR or KIND_SELFCHECK
    path: Path
    notebook: nbformat.NotebookNode
    answers: tuple
    checks: tuple
    crash_graded: str | None = None  # the answer the grader crash-tests outside both kernels (grading/durability)

    @property
    def max_score(self) -> int:
        """The points of every check in this copy."""
        return sum(check.points for check in self.checks)

    def fresh_notebook(self) -> nbformat.NotebookNode:
        """A deep copy of the pristine notebook, safe to change."""
        return copy.deepcopy(self.notebook)


def pass_line(name: str, points: int) -> str:
    """The one line a check prints when it passes, e.g. 'ex01.2 passed (2 points) · 通过（2 分）'."""
    english, chinese = point_words(points)
    return both(f"{name} passed ({english})", f"通过（{chinese}）")


def cell_role(cell) -> dict:
    """The cell's s09 metadata ({} for a plain cell)."""
    role = cell.get("metadata", {}).get(METADATA_KEY, {})
    return role if isinstance(role, dict) else {}


def is_local(cell) -> bool:
    """True for a cell the student runs for themself and the grader never runs (role "local")."""
    return cell_role(cell).get("role") == LOCAL


def is_hidden(cell) -> bool:
    """True for cells that only the instructor's copy holds."""
    return cell_role(cell).get("hidden") is True


def source_text(cell) -> str:
    """A cell's source as one string (notebooks may store it as a list of lines)."""
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def load_source(path) -> ExerciseSource:
    """Read and check one pristine exercise notebook; raise SourceError when it cannot grade."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
        cell_ids = [cell.get("id") for cell in json.loads(text)["cells"]]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise SourceError(f"{path}: cannot read the notebook ({error!r})") from None
    # Checked on the raw JSON: nbformat would rename repeated ids, and answers are matched by id.
    repeated = sorted({str(cell_id) for cell_id in cell_ids if not cell_id or cell_ids.count(cell_id) > 1})
    if repeated:
        raise SourceError(f"{path.name}: every cell needs its own id; missing or repeated: {', '.join(repeated)}")
    try:
        notebook = nbformat.reads(text, as_version=4)
    except ValueError as error:  # nbformat's reading errors are ValueErrors
        raise SourceError(f"{path}: not a readable notebook ({error})") from None
    info = notebook.metadata.get(METADATA_KEY, {})
    exercise = info.get("exercise")
    if not isinstance(exercise, str) or not EXERCISE_NAME.match(exercise):
        raise SourceError(f"{path.name}: notebook metadata needs s09.exercise like 'ex01'")
    answers, checks = [], []
    code_index = 0
    for position, cell in enumerate(notebook.cells):
        cell_id = cell.id
        role = cell_role(cell)
        if role.get("role") in (ANSWER, CHECK) and cell.cell_type != "code":
            raise SourceError(f"{path.name}: cell {cell_id} is a {role['role']} cell but not a code cell")
        if role.get("role") == ANSWER:
            answers.append(Answer(_required_name(path, cell_id, role), cell_id, position))
        elif role.get("role") == CHECK:
            checks.append(_check_of(path, cell, role, code_index))
        if cell.cell_type == "code":
            code_index += 1
    _refuse_duplicates(path, "answer", [answer.name for answer in answers])
    _refuse_duplicates(path, "check", [check.name for check in checks])
    _refuse_duplicates(path, "check id", [check.id for check in checks])
    if not answers or not checks:
        raise SourceError(f"{path.name}: an exercise needs at least one answer cell and one check cell")
    kind = info.get("kind", KIND_INSTRUCTOR)
    _refuse_unusable_checks(path, notebook, checks, kind)
    crash_graded = _crash_graded(path, info, answers, checks)
    return ExerciseSource(exercise, str(info.get("title", exercise)), kind, path, notebook,
                          tuple(answers), tuple(checks), crash_graded)


def _crash_graded(path: Path, info: dict, answers: list, checks: list) -> str | None:
    """The answer a crash-graded exercise names (None for the others), after checking that each of its
    checks scores one property of the crash grader, each property once."""
    answer = info.get("crash_graded")
    properties = [check.property for check in checks]
    if answer is None:
        if any(properties):
            raise SourceError(f"{path.name}: a check names a crash property, but the notebook names no crash_graded "
                              "answer")
        return None
    if answer not in {entry.name for entry in answers}:
        raise SourceError(f"{path.name}: crash_graded names {answer!r}, which is no answer cell of the notebook")
    from .durability.judge import PROPERTIES  # only a crash-graded source pays for the engine's import

    if sorted(map(str, properties)) != sorted(PROPERTIES):
        raise SourceError(f"{path.name}: the checks of a crash-graded exercise score the properties "
                          f"{', '.join(PROPERTIES)}, each once; they name {properties}")
    return answer


def _required_name(path: Path, cell_id: str, role: dict) -> str:
    name = role.get("name")
    if not isinstance(name, str) or not name:
        raise SourceError(f"{path.name}: cell {cell_id} needs a name in its s09 metadata")
    return name


def _check_of(path: Path, cell, role: dict, code_index: int) -> Check:
    """A Check for one check cell, after making sure the cell was saved passing."""
    name = _required_name(path, cell.id, role)
    points = role.get("points")
    if type(points) is not int or points < 1:
        raise SourceError(f"{path.name}: check {name} needs whole points >= 1, not {points!r}")
    outputs = cell.get("outputs", [])
    saved_passing = (
        cell.get("execution_count") is not None
        and len(outputs) == 1
        and outputs[0].get("output_type") == "stream"
        and outputs[0].get("name") == "stdout"
        and outputs[0].get("text") == pass_line(name, points) + "\n"  # nbformat.read joins the lines
    )
    if not saved_passing:
        raise SourceError(
            f"{path.name}: check {name} was not saved passing (its only output must be "
            f"{pass_line(name, points)!r}); run `python -m s09_jsonl_transcript.grading refresh`")
    check_id = role.get("id")
    if not isinstance(check_id, str) or not CHECK_ID.match(check_id) or not check_id.startswith(name.split(".")[0]):
        raise SourceError(f"{path.name}: check {name} needs a stable id in its s09 metadata, the exercise and a few "
                          f"words that say what it checks (like 'ex01-long-turn'), not {check_id!r}")
    code = source_text(cell)
    drawn = set(DRAWS.findall(code))
    if drawn - {check_id} or len(DRAWS_ANYTHING.findall(code)) != len(DRAWS.findall(code)):
        raise SourceError(f"{path.name}: check {name} draws its inputs with check_random({check_id!r}), its own id, "
                          f"and only so (found {sorted(drawn) or 'another call'})")
    crash_property = role.get("property")
    if crash_property is not None and not isinstance(crash_property, str):
        raise SourceError(f"{path.name}: check {name}'s property must be a property's name, not {crash_property!r}")
    return Check(name, points, role.get("hidden") is True, code_index, check_id, crash_property)


def _refuse_unusable_checks(path: Path, notebook, checks: list, kind: str) -> None:
    """Hidden checks come after every visible one; an instructor's check must have values to compare."""
    hidden = [check.hidden for check in checks]
    if hidden != sorted(hidden):
        raise SourceError(f"{path.name}: every hidden check must come after the visible ones (until a hidden "
                          "check has run, what a kernel prints cannot quote one)")


def _refuse_duplicates(path: Path, kind: str, names: list) -> None:
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise SourceError(f"{path.name}: {kind} names used twice: {', '.join(repeated)}")


def load_sources(folder) -> dict:
    """Every exercise notebook in folder (exNN_*.ipynb), by exercise name."""
    folder = Path(folder)
    if not folder.is_dir():
        raise SourceError(f"{folder} is not a folder of exercise sources")
    sources = {}
    for path in sorted(folder.glob("ex[0-9][0-9]_*.ipynb")):
        source = load_source(path)
        if source.exercise in sources:
            raise SourceError(f"{folder}: two sources for {source.exercise}")
        sources[source.exercise] = source
    if not sources:
        raise SourceError(f"{folder} holds no exercise notebooks (exNN_*.ipynb)")
    return sources


def default_source_folder() -> Path | None:
    """The checkout's exercises/instructor folder when the package runs from a checkout, else None."""
    folder = Path(__file__).resolve().parents[2] / "exercises" / "instructor"
    return folder if folder.is_dir() else None


def notebook_json(notebook) -> str:
    """The notebook's file contents, as nbformat.write saves them (sorted keys, a final newline)."""
    return nbformat.writes(notebook).rstrip("\n") + "\n"

