"""The class's tables: what each report says about its submission, and the gradebook across exercises.

`gradebook.csv` has one row per student and one column per exercise graded into the folder, then
the total and the points possible (of those exercises). The students are the roster's (a file
given with --roster), in its order, then anyone who submitted without being on it; without a
roster, whoever the submissions' names say.
A cell holds the score, "missing" when the student submitted nothing for that exercise,
"not attempted" when every answer cell still holds the released stub (scored 0), or "grader error"
when the grader itself failed on the submission (its reference run, its sandbox, its own files):
that is not a 0, it counts in no total, and the row's note says to regrade it.

Who a submission belongs to comes from its label (its path relative to the folder graded):

    alice/ex01_last_turn_replay.ipynb     alice   (a folder per student)
    ex01/alice.ipynb                      alice   (a folder per exercise)
    alice_ex01_last_turn_replay.ipynb     alice   (one folder; the exercise's name is taken off)

When a student has two submissions of one exercise, the one modified last counts.
"""

from __future__ import annotations

import csv
import re
from datetime import datetime, timezone
from pathlib import Path

from .assemble import SubmissionError, answer_sources, read_submission
from .source import ExerciseSource, SourceError
from .words import csv_cell

MISSING = "missing"
NOT_ATTEMPTED = "not attempted"
GRADER_ERROR = "grader error"
_EXERCISE_PART = re.compile(r"^ex\d\d(?:$|[_-])")
_EXERCISE_TOKEN = re.compile(r"(?:^|[_\-. ])ex\d\d(?=$|[_\-. ])")


def modified_at(path) -> str | None:
    """The submission's modification time, in UTC (ISO 8601), or None when it cannot be read."""
    try:
        seconds = Path(path).stat().st_mtime
    except OSError:
        return None
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="seconds")


def untouched(path, source: ExerciseSource) -> bool:
    """True when every answer cell of the submission still holds exactly what release gave the student."""
    try:
        answers = answer_sources(read_submission(path), source)
    except SubmissionError:
        return False
    return all(answers.get(answer.name, "").strip() == _released_stub(source, answer).strip()
               for answer in source.answers)


def _released_stub(source: ExerciseSource, answer) -> str:
    from .release import stub_solutions  # release needs nbclient; only this function needs release

    cell = source.notebook.cells[answer.cell_index]
    try:
        return stub_solutions(cell.source)
    except SourceError:  # a self-check copy: its answer cells are the stubs already
        return cell.source


def describe_submission(report: dict, path, sources: dict) -> dict:
    """Add to a report what the file says: its path, its modification time and whether it was attempted."""
    report["path"] = str(Path(path).resolve())
    report["modified"] = modified_at(path)
    source = sources.get(report.get("exercise"))
    report["attempted"] = not (source is not None and report.get("status") == "graded" and untouched(path, source))
    return report


def student_of(label: str, exercise_stems=()) -> str:
    """The student a submission label names (see the module's docstring)."""
    parts = label.split("/")
    folders = [part for part in parts[:-1] if not _EXERCISE_PART.match(part)]
    if folders:
        return folders[0]
    stem = parts[-1][: -len(".ipynb")] if parts[-1].endswith(".ipynb") else parts[-1]
    if len(parts) > 1:  # a folder per exercise: the file is the student's
        return stem
    for exercise_stem in sorted(exercise_stems, key=len, reverse=True):
        stem = stem.replace(exercise_stem, "")
    stem = _EXERCISE_TOKEN.sub("", stem).strip("_-. ")
    return stem or label


def read_roster(path) -> list:
    """The students of a roster file: one a line (a CSV's first column); blank lines, # comments and a
    first line "student" are skipped."""
    students = []
    with open(path, newline="", encoding="utf-8-sig") as file:
        for row in csv.reader(file):
            name = row[0].strip() if row else ""
            if not name or name.startswith("#") or (not students and name.casefold() == "student"):
                continue
            if name not in students:
                students.append(name)
    return students


def gradebook_rows(reports: list, sources: dict, roster: list | None = None) -> list:
    """The gradebook as rows: a header, then one row per student (see the module's docstring)."""
    exercises = sorted({report.get("exercise") for report in reports} & set(sources)) or sorted(sources)
    stems = [source.path.stem for source in sources.values()]
    chosen = {}  # (student, exercise) -> report; the last modified wins
    for report in reports:
        key = (student_of(report["submission"], stems), report.get("exercise"))
        if key not in chosen or (report.get("modified") or "") >= (chosen[key].get("modified") or ""):
            chosen[key] = report
    students = list(roster or [])
    students += sorted({student for student, _ in chosen} - set(students))
    possible = sum(sources[exercise].max_score for exercise in exercises)
    rows = [["student", *exercises, "total", "possible", "note"]]
    for student in students:
        cells, total = [], 0
        for exercise in exercises:
            report = chosen.get((student, exercise))
            if report is None:
                cells.append(MISSING)
            elif report.get("status") == "error":
                cells.append(GRADER_ERROR)
            elif report.get("attempted") is False:
                cells.append(NOT_ATTEMPTED)
            else:
                cells.append(report["score"])
                total += report["score"]
        unknown = [report["submission"] for (who, exercise), report in chosen.items()
                   if who == student and exercise not in sources]
        notes = []
        failed = [exercise for exercise, cell in zip(exercises, cells) if cell == GRADER_ERROR]
        if failed:
            notes.append(f"the grader failed on {', '.join(failed)}: not graded, regrade")
        if roster is not None and student not in roster:
            notes.append("not on the roster")
        if unknown:
            notes.append("exercise unknown: " + ", ".join(sorted(unknown)))
        rows.append([student, *cells, total, possible, "; ".join(notes)])
    return rows


def write_gradebook(reports: list, sources: dict, path, roster: list | None = None) -> Path:
    """Write gradebook.csv (cells made safe for a spreadsheet); return its path."""

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        for row in gradebook_rows(reports, sources, roster):
            writer.writerow([csv_cell(value) for value in row])
    return path
