"""Write grading reports and print them readably.

Two formats. "json" (the default): one JSON report per submission and, for a folder, a class CSV
(`class.csv`). "gradescope": one Gradescope autograder results file per submission (the shape
Gradescope reads from /autograder/results/results.json; `results.json` itself when one submission
was graded) and an otter-style `final_grades.csv` (a row per file, a column per check, total, possible).

Whatever a submission is called, it gets its own report file and its own row: report names are
made of safe characters, cut to a length every file system takes, never equal to each other, to a
folder another report needs, or to the class table. Text reaches a terminal without control
characters, and a CSV cell that a spreadsheet would read as a formula starts with a single quote
(OWASP's rule against CSV injection).
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
import sys
import unicodedata
from pathlib import Path

from .words import HIDDEN, SELF_CHECK, STATUS, TOTAL, UNKNOWN_EXERCISE, both, csv_cell, labelled, printable

CSV_COLUMNS = ["submission", "exercise", "status", "score", "max_score", "reason"]
FORMATS = ("json", "gradescope")
GRADESCOPE_RESULTS = "results.json"
FINAL_GRADES = "final_grades.csv"
_UNSAFE = re.compile(r"[^\w.-]")  # a label's path parts keep letters, digits and _.-; anything else becomes "_"
_PART_BYTES = 150  # of UTF-8 in a file name part, well below the 255 of common file systems
CLASS_CSV = "class.csv"
GRADEBOOK = "gradebook.csv"
TABLES = (CLASS_CSV, FINAL_GRADES, GRADEBOOK)
RESERVED_NAMES = (*TABLES, GRADESCOPE_RESULTS)  # what the reports folder holds besides the reports


def _safe_parts(label: str) -> tuple:
    """The label's path parts made safe, and whether anything had to change."""
    parts, changed = [], False
    for part in label.split("/"):
        safe = _UNSAFE.sub("_", part)
        if safe in ("", ".", ".."):
            safe = "_"
        if len(safe.encode("utf-8")) > _PART_BYTES:
            safe = safe.encode("utf-8")[:_PART_BYTES].decode("utf-8", "ignore")
        changed |= safe != part
        parts.append(safe)
    if len(parts) > 1 and parts[0].casefold() in RESERVED_NAMES:  # a folder may not take the class table's name
        parts[0], changed = parts[0] + "_", True
    return parts, changed


def report_names(labels: list) -> list:
    """A relative report path (ending in .json) per submission label, never two alike.

    A label that had characters replaced or was cut gets a short hash of the original, so
    "a b.ipynb" and "a_b.ipynb" keep two reports; names still alike (ignoring case, for
    case-insensitive file systems, or given twice), or equal to a folder another report needs or to
    a file the reports folder holds, get -2, -3, ... in order.
    """
    stems = []
    for label in labels:
        parts, changed = _safe_parts(label)
        if parts[-1].endswith(".ipynb"):
            parts[-1] = parts[-1][: -len(".ipynb")] or "_"
        stem = "/".join(parts)
        if changed:
            stem += "-" + hashlib.sha256(label.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        stems.append(stem)
    folders = {"/".join(stem.split("/")[:depth]).casefold()
               for stem in stems for depth in range(1, stem.count("/") + 1)}
    names, taken = [], {name.casefold() for name in RESERVED_NAMES} | folders
    for stem in stems:
        name, number = f"{stem}.json", 2
        while name.casefold() in taken:
            name, number = f"{stem}-{number}.json", number + 1
        taken.add(name.casefold())
        names.append(Path(name))
    return names


def write_reports(reports: list, folder, format: str = "json", known: dict | None = None) -> list:
    """Write every report of a batch under folder, each to its own file; return the paths.

    In the gradescope format each file holds Gradescope's results shape, and a single report is
    also written to results.json. known maps a label to the report file (relative to folder) an
    earlier run wrote for that submission: a regrade overwrites it rather than add a second one.
    """
    paths = []
    names = report_names([report["submission"] for report in reports])
    names = [Path((known or {}).get(report["submission"], name)) for report, name in zip(reports, names)]
    for number, (report, name) in enumerate(zip(reports, names), start=1):
        content = gradescope_results(report) if format == "gradescope" else report
        try:
            paths.append(_write_json(Path(folder) / name, content))
        except OSError as error:  # this submission's report only: the class goes on
            report["report_problem"] = printable(f"could not write {name}: {error.strerror or error}")
            paths.append(_write_json(Path(folder) / f"unwritable-report-{number}.json", content))
    if format == "gradescope" and len(reports) == 1:
        paths.append(_write_json(Path(folder) / GRADESCOPE_RESULTS, gradescope_results(reports[0])))
    return paths


def _write_json(path: Path, content: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(content, indent=2, ensure_ascii=False) + "\n", encoding="utf-8",
                    errors="backslashreplace")  # a lone surrogate that got this far is written as an escape
    return path


def gradescope_results(report: dict) -> dict:
    """A report in the shape of a Gradescope autograder's results.json.

    Hidden checks become tests visible "after_published": students see them once grades are published.
    """
    summary = [f"{report['submission']}: {report['score']}/{report['max_score']}"]
    if report.get("reason"):
        summary.append(labelled(status_label(report["status"]), report["reason"]))
    if (report.get("crash") or {}).get("replay"):
        summary.append(report["crash"]["replay"])
    if report.get("sandbox"):
        summary.append(report["sandbox"])
    return {
        "score": report["score"],
        "execution_time": report.get("seconds", 0),
        "output": "\n".join(summary),
        "output_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": [{"name": check["name"], "score": check["score"], "max_score": check["max_score"],
                   "status": "passed" if check["score"] == check["max_score"] else "failed",
                   "visibility": "visible" if check["visibility"] == "visible" else "after_published",
                   "output": "\n\n".join(filter(None, (check["feedback"], check.get("printed"),
                                                         *check.get("findings", ())))),
                   "output_format": "text"}
                  for check in report["checks"]],
        "extra_data": {key: report.get(key) for key in _EXTRA_KEYS},
    }


_EXTRA_KEYS = ("submission", "exercise", "status", "reason", "source", "seed", "path", "modified", "attempted")


def report_from_file(content) -> dict | None:
    """A report as written in either format, back in the report's own shape (None: not a report).

    From the gradescope shape only what the tables need comes back: the checks' names and scores.
    """
    if not isinstance(content, dict):
        return None
    if isinstance(content.get("submission"), str) and isinstance(content.get("checks"), list):
        return content
    extra, tests = content.get("extra_data"), content.get("tests")
    if not (isinstance(extra, dict) and isinstance(extra.get("submission"), str) and isinstance(tests, list)):
        return None
    checks = [{"name": test["name"], "score": test["score"], "max_score": test["max_score"]} for test in tests]
    return {**{key: extra.get(key) for key in _EXTRA_KEYS}, "score": content.get("score", 0),
            "max_score": sum(check["max_score"] for check in checks), "checks": checks}


def read_folder(folder) -> dict:
    """Every report in a reports folder: report file (relative, POSIX) -> report, in file order."""
    folder, found = Path(folder), {}
    for path in sorted(folder.rglob("*.json")) if folder.is_dir() else ():
        name = path.relative_to(folder).as_posix()
        if name in RESERVED_NAMES:
            continue
        try:
            report = report_from_file(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue
        if report is not None:
            found[name] = report
    return found


def known_reports(folder, reports: list) -> dict:
    """For each report of this batch whose submission (same file) already has a report in folder:
    its earlier label -> that report's file. The batch's reports take their earlier labels."""
    by_path = {report.get("path"): (name, report["submission"]) for name, report in read_folder(folder).items()
               if report.get("path")}
    known = {}
    for report in reports:
        if report.get("path") in by_path:
            name, label = by_path[report["path"]]
            report["submission"], known[label] = label, name
    return known


def write_tables(folder, format: str, sources: dict, roster: list | None = None) -> list:
    """Rewrite the folder's tables from every report it holds, so that a regrade leaves none stale.

    class.csv (json format) or final_grades.csv (gradescope), and gradebook.csv; returns their paths.
    """
    from .gradebook import write_gradebook

    folder = Path(folder)
    reports = sorted(read_folder(folder).values(), key=lambda report: report["submission"])
    table = (write_final_grades(reports, folder / FINAL_GRADES) if format == "gradescope"
             else write_class_csv(reports, folder / CLASS_CSV))
    return [table, write_gradebook(reports, sources, folder / GRADEBOOK, roster)]


def tables_in(folder) -> bool:
    """True when the folder already holds a class table (an earlier batch was graded into it)."""
    return any((Path(folder) / name).is_file() for name in TABLES)


def write_final_grades(reports: list, path) -> Path:
    """An otter-style summary: a row per file, a column per check, then total and possible."""
    check_names = _check_names(reports)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(_csv_row(["file", *check_names, "total", "possible"]))
        for report in reports:
            scores = {check["name"]: check["score"] for check in report["checks"]}
            writer.writerow(_csv_row([report["submission"], *[scores.get(name, "") for name in check_names],
                                      report["score"], report["max_score"]]))
    return path


def _check_names(reports: list) -> list:
    names = []
    for report in reports:
        names += [check["name"] for check in report["checks"] if check["name"] not in names]
    return names


def write_class_csv(reports: list, path) -> Path:
    """One row per submission: the totals, then one column per check (named like ex01.1)."""
    check_names = _check_names(reports)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(_csv_row(CSV_COLUMNS + check_names))
        for report in reports:
            scores = {check["name"]: check["score"] for check in report["checks"]}
            writer.writerow(_csv_row([report.get(column) if report.get(column) is not None else ""
                                      for column in CSV_COLUMNS] + [scores.get(name, "") for name in check_names]))
    return path


def _csv_row(values: list) -> list:
    return [csv_cell(value) for value in values]


def status_label(status: str) -> str:
    """A report's status ("graded", "rejected", "error") in words, in both languages."""
    return STATUS.get(status, status)


def format_report(report: dict) -> str:
    """One submission's result: a line per check with its feedback, then the total (words in both languages)."""
    kind = f", {SELF_CHECK}" if report["source"] == "selfcheck" else ""
    lines = [f"{_terminal(report['submission'])}  ({report['exercise'] or UNKNOWN_EXERCISE}{kind})"]
    if report["reason"]:
        lines.append(f"  {_terminal(labelled(status_label(report['status']), report['reason']))}")
    if (report.get("sandbox") or "").startswith("unsandboxed"):
        lines.append(f"  {report['sandbox']}")
    if report["status"] == "graded":
        hidden_mark = f" ({HIDDEN})"
        for check in report["checks"]:
            hidden = hidden_mark if check["visibility"] == "hidden" else ""
            score = f"{check['score']}/{check['max_score']}"
            shown = check["feedback"].split("\n", 1)[0] if check.get("findings") else check["feedback"]
            feedback = _one_line(_terminal(shown), FEEDBACK_WIDTH)  # a crash check's findings follow, line by line
            lines.append(f"  {check['name']:<8} {score}{_padded(hidden, _width(hidden_mark))} {feedback}")
            if check.get("printed"):  # what the answers printed while a visible check that failed ran
                lines.append(f"  {'':<8} {_one_line(_terminal(check['printed']), FEEDBACK_WIDTH)}")
            lines += _findings_lines(check)
    if (report.get("crash") or {}).get("replay"):
        lines.append(f"  {_terminal(report['crash']['replay'])}")
    total = f"{report['score']}/{report['max_score']}"
    lines.append(f"  {labelled(TOTAL, total)}")
    return "\n".join(lines)


def _findings_lines(check: dict) -> list:
    """A crash check's first findings, each a message and its byte map, line by line (a map needs its lines)."""
    if not check.get("findings"):
        return []
    shown = len(check["findings"])
    lines = [f"  {'':<8} " + both(f"{check.get('findings_found', shown)} findings; the first {shown}:",
                                  f"{check.get('findings_found', shown)} 个发现；最先的 {shown} 个：")]
    for finding in check["findings"]:
        lines += [f"  {'':<10}{_terminal(line)}" for line in str(finding).split("\n")] + [""]
    return lines


CLASS_HEADER = (both("submission", "提交"), both("exercise", "练习"), both("score", "得分"))


def format_class(reports: list) -> str:
    """A table of a batch: one line per submission."""
    submission, exercise, score = CLASS_HEADER
    width = max([len(_terminal(report["submission"])) for report in reports] + [len(submission)])
    lines = [f"{submission:<{width}}  {exercise}  {score}"]
    for report in reports:
        reason = report["reason"]
        note = f"  [{labelled(status_label(report['status']), _one_line(_terminal(reason), None))}]" if reason else ""
        lines.append(f"{_terminal(report['submission']):<{width}}  {report['exercise'] or '-':<{len(exercise)}}  "
                     f"{report['score']:>3}/{report['max_score']:<3}{note}")
    return "\n".join(lines)


def _terminal(text) -> str:
    """Text for a terminal: one line, every control character shown as an escape instead of acting."""
    return printable(text, newlines=False)


def _width(text: str) -> int:
    """Columns text takes on a terminal: Chinese characters take two."""
    return sum(2 if unicodedata.east_asian_width(character) in "WF" else 1 for character in text)


def _padded(text: str, width: int) -> str:
    return text + " " * max(0, width - _width(text))


FEEDBACK_WIDTH = 600  # a check's feedback holds both languages: keep the Chinese half on the screen too


def _one_line(text: str, limit: int | None = 200) -> str:
    """text on one line; cut to limit characters (None: never cut)."""
    text = " ".join(str(text).split())
    return text if limit is None or len(text) <= limit else text[: limit - 3] + "..."


class ProgressBar:
    """A progress bar on a stream: redrawn in place on a terminal, one line per step elsewhere."""

    def __init__(self, total: int, stream=None, width: int = 30):
        self.total, self.width = total, width
        self.stream = stream or sys.stderr
        self.live = hasattr(self.stream, "isatty") and self.stream.isatty()

    def update(self, done: int, label: str = "") -> None:
        """Show that done of total steps are finished; label names the last one."""
        label = _terminal(label)
        filled = self.width * done // max(self.total, 1)
        bar = f"[{'#' * filled}{'.' * (self.width - filled)}] {done}/{self.total}"
        if self.live:
            self.stream.write(f"\r{bar} {label[:40]:<40}")
            if done == self.total:
                self.stream.write("\n")
        else:
            self.stream.write(f"{bar} {label}\n")
        self.stream.flush()
