"""Time the grader: grade copies of the reference solutions, as a class's submissions would be."""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

from .grader import GradingOptions, find_submissions, grade_many


def run_benchmark(sources: dict, *, copies: int = 30, jobs: int | None = None,
                  options: GradingOptions = GradingOptions(), on_graded=None) -> dict:
    """Grade `copies` submissions (the instructor sources in turn) as one folder; return the timings.

    The result holds the wall-clock seconds for the folder, the slowest and the mean single
    submission, whether every copy scored full marks, and how they ran (sandboxed or not).
    """
    if copies < 1:
        raise ValueError("copies must be at least 1")
    ordered = sorted(sources.values(), key=lambda source: source.exercise)
    with tempfile.TemporaryDirectory(prefix="s09-benchmark-") as folder:
        for number in range(copies):
            source = ordered[number % len(ordered)]
            student = Path(folder) / f"student{number + 1:02d}"
            student.mkdir()
            shutil.copy(source.path, student / source.path.name)
        started = time.monotonic()
        reports = grade_many(find_submissions([folder]), sources, options=options, jobs=jobs,
                             on_graded=on_graded)
        elapsed = time.monotonic() - started
    singles = [report["seconds"] for report in reports]
    return {
        "submissions": copies,
        "jobs": jobs,
        "folder_seconds": round(elapsed, 1),
        "slowest_submission_seconds": round(max(singles), 1),
        "mean_submission_seconds": round(sum(singles) / len(singles), 1),
        "all_full_marks": all(report["score"] == report["max_score"] for report in reports),
        "sandbox": reports[0]["sandbox"],
    }
