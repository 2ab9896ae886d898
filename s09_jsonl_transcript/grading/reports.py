"""Write grading reports (one JSON per submission, a CSV for a class) and print them readably."""

from __future__ import annotations

import csv
import hashlib
import json
import re
import sys
from pathlib import Path

CSV_COLUMNS = ["submission", "exercise", "status", "score", "max_score", "reason"]
_UNSAFE = re.compile(r"[^\w./-]")  # labels are relative paths; anything else becomes "_"


def report_names(labels: list) -> list:
    """A relative report path (ending in .json) per submission label, never two alike.

    A label that had characters replaced gets a short hash of the original, so "a b.ipynb" and
    "a_b.ipynb" keep two reports; names still alike (ignoring case, for case-insensitive file
    systems, or given twice) get -2, -3, ... in order.
    """
    names, taken = [], set()
    for label in labels:
        safe = _UNSAFE.sub("_", label)
        parts = [part if part not in ("", ".", "..") else "_" for part in safe.split("/")]
        stem = "/".join(parts)
        if stem.endswith(".ipynb"):
            stem = stem[: -len(".ipynb")]
        if safe != label:
            stem += "-" + hashlib.sha256(label.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        name, number = f"{stem}.json", 2
        while name.casefold() in taken:
            name, number = f"{stem}-{number}.json", number + 1
        taken.add(name.casefold())
        names.append(Path(name))
    return names


def report_path(folder, label: str) -> Path:
    """Where the JSON report for a single submission label goes."""
    return Path(folder) / report_names([label])[0]


def write_report(report: dict, folder) -> Path:
    """Write one submission's report as JSON under folder; return its path."""
    return write_reports([report], folder)[0]


def write_reports(reports: list, folder) -> list:
    """Write every report of a batch under folder, each to its own file; return the paths."""
    paths = []
    for report, name in zip(reports, report_names([report["submission"] for report in reports])):
        path = Path(folder) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


def write_class_csv(reports: list, path) -> Path:
    """One row per submission: the totals, then one column per check (named like ex01.1)."""
    check_names = []
    for report in reports:
        check_names += [check["name"] for check in report["checks"] if check["name"] not in check_names]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(CSV_COLUMNS + check_names)
        for report in reports:
            scores = {check["name"]: check["score"] for check in report["checks"]}
            writer.writerow([report.get(column) if report.get(column) is not None else "" for column in CSV_COLUMNS]
                            + [scores.get(name, "") for name in check_names])
    return path


def format_report(report: dict) -> str:
    """One submission's result: a line per check with its feedback, then the total."""
    kind = ", self-check: visible checks only" if report["source"] == "selfcheck" else ""
    lines = [f"{report['submission']}  ({report['exercise'] or 'unknown exercise'}{kind})"]
    if report["reason"]:
        lines.append(f"  {report['status']}: {report['reason']}")
    if (report.get("sandbox") or "").startswith("unsandboxed"):
        lines.append(f"  {report['sandbox']}")
    if report["status"] == "graded":
        for check in report["checks"]:
            hidden = " (hidden)" if check["visibility"] == "hidden" else ""
            score = f"{check['score']}/{check['max_score']}"
            lines.append(f"  {check['name']:<8} {score}{hidden:<9} {_one_line(check['feedback'])}")
    lines.append(f"  total {report['score']}/{report['max_score']}")
    return "\n".join(lines)


def format_class(reports: list) -> str:
    """A table of a batch: one line per submission."""
    width = max([len(report["submission"]) for report in reports] + [10])
    lines = [f"{'submission':<{width}}  exercise  score"]
    for report in reports:
        note = f"  [{report['status']}: {_one_line(report['reason'])}]" if report["reason"] else ""
        lines.append(f"{report['submission']:<{width}}  {report['exercise'] or '-':<8}  "
                     f"{report['score']:>3}/{report['max_score']:<3}{note}")
    return "\n".join(lines)


def _one_line(text: str, limit: int = 110) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


class ProgressBar:
    """A progress bar on a stream: redrawn in place on a terminal, one line per step elsewhere."""

    def __init__(self, total: int, stream=None, width: int = 30):
        self.total, self.width = total, width
        self.stream = stream or sys.stderr
        self.live = hasattr(self.stream, "isatty") and self.stream.isatty()

    def update(self, done: int, label: str = "") -> None:
        """Show that done of total steps are finished; label names the last one."""
        filled = self.width * done // max(self.total, 1)
        bar = f"[{'#' * filled}{'.' * (self.width - filled)}] {done}/{self.total}"
        if self.live:
            self.stream.write(f"\r{bar} {label[:40]:<40}")
            if done == self.total:
                self.stream.write("\n")
        else:
            self.stream.write(f"{bar} {label}\n")
        self.stream.flush()
