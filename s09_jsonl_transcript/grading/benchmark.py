"""Time the grader: grade copies of the reference solutions, as a class's submissions would be.

    python -m s09_jsonl_transcript.grading benchmark [--copies 30] [--jobs 2]           ex01 to ex05 in turn
    python -m s09_jsonl_transcript.grading benchmark --exercise ex06 --copies 30 --jobs 2  the capstone

The default folder holds every exercise but a crash-graded one, in turn: its figure stays comparable
with the figures measured before the capstone existed. The capstone's copies are graded each with its
own crash campaign (nothing is shared between submissions but the one reference run per seed).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

from .grader import GradingOptions, find_submissions, grade_many


def benchmark_sources(sources: dict, exercise: str | None = None) -> list:
    """The sources whose references a benchmark copies: exercise's alone, or every exercise but a crash-graded one."""
    if exercise is not None:
        return [sources[exercise]]
    return sorted((source for source in sources.values() if source.crash_graded is None),
                  key=lambda source: source.exercise)


def run_benchmark(sources: dict, *, copies: int = 30, jobs: int | None = None,
                  options: GradingOptions = GradingOptions(), on_graded=None, exercise: str | None = None) -> dict:
    """Grade `copies` submissions (the instructor sources in turn, or exercise's only) as one folder; return
    the timings.

    The result holds the wall-clock seconds for the folder, the slowest and the mean single
    submission, whether every copy scored full marks, how they ran (sandboxed or not) and the load
    average before and after. For a crash-graded exercise, also the mean seconds of a submission's
    crash campaign and the fewest states each campaign judged in any submission.
    """
    if copies < 1:
        raise ValueError("copies must be at least 1")
    ordered = benchmark_sources(sources, exercise)
    load_before = os.getloadavg()
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
    result = {
        "submissions": copies,
        "exercises": sorted({source.exercise for source in ordered}),
        "jobs": jobs,
        "folder_seconds": round(elapsed, 1),
        "slowest_submission_seconds": round(max(singles), 1),
        "mean_submission_seconds": round(sum(singles) / len(singles), 1),
        "all_full_marks": all(report["score"] == report["max_score"] for report in reports),
        "sandbox": reports[0]["sandbox"],
        "load_average_before": [round(load, 2) for load in load_before],
        "load_average_after": [round(load, 2) for load in os.getloadavg()],
    }
    crashes = [report["crash"] for report in reports if report.get("crash")]
    if crashes:
        result["mean_crash_campaign_seconds"] = round(sum(part["seconds"] for part in crashes) / len(crashes), 1)
        result["fewest_states_per_campaign"] = {campaign: min(part["counts"].get(campaign, 0) for part in crashes)
                                                for campaign in crashes[0]["counts"]}
    return result
