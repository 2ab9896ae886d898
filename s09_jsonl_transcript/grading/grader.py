"""Grade submissions: assemble each one, run it under nbval, and score every check.

A report is a plain dict, written as JSON:

    {"submission": "alice/ex01_last_turn_replay.ipynb", "exercise": "ex01",
     "status": "graded" | "rejected" | "error", "reason": null, or why it was not graded, or
     why a graded notebook scored what it did (tampering detected, output limit, out of memory),
     in English and Chinese (see words.py),
     "score": 7, "max_score": 14, "source": "instructor" | "selfcheck", "seconds": 4.2,
     "sandbox": "sandboxed with bubblewrap: ..." | "unsandboxed: ...",
     "checks": [{"name": "ex01.1", "score": 2, "max_score": 2, "visibility": "visible",
                 "feedback": "passed · 通过"}, ...]}

"rejected" is bad input (score 0 and the reason); "error" is a fault of the grader or of its
sources, which an instructor should look at. Nothing a submission does makes this module raise.
A notebook in which tampering was detected is graded 0 on every check, with the reason.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from . import sandbox as sandboxing
from .assemble import SubmissionError, answer_sources, build_notebook, exercise_of, read_submission
from .runner import RunResult, RunSettings, run_notebook
from .source import ExerciseSource
from .words import NOT_GRADED, NOT_RUN, TAMPERING, both, labelled

GRADED, REJECTED, ERROR = "graded", "rejected", "error"


@dataclass(frozen=True)
class GradingOptions:
    """How to run each submission.

    cell_timeout and total_timeout are seconds per cell (nbval's timeout) and for the whole
    notebook; sandbox is "auto" (bubblewrap when it works here), "required" or "off"; limits are
    the sandbox's resource limits and the output limit. detect_tampering=False turns the guard off:
    tests use it to show that each tampering they try would score without it.
    """

    cell_timeout: float = 20.0
    total_timeout: float = 120.0
    sandbox: str = sandboxing.AUTO
    limits: sandboxing.Limits = field(default_factory=sandboxing.Limits)
    detect_tampering: bool = True

    def __post_init__(self):
        if not (self.cell_timeout > 0 and self.total_timeout > 0):
            raise ValueError("timeouts must be positive numbers of seconds")
        if self.sandbox not in sandboxing.MODES:
            raise ValueError(f"sandbox must be one of {', '.join(sandboxing.MODES)}")


def available_cores() -> int:
    """The CPU cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def grade_submission(path, sources: dict, *, exercise: str | None = None, label: str | None = None,
                     options: GradingOptions = GradingOptions()) -> dict:
    """Grade one notebook against the matching source in sources (exercise name -> ExerciseSource).

    With exercise, the submission must be that exercise. Always returns a report.
    """
    label = label or Path(path).name
    box = sandboxing.status(options.sandbox)  # SandboxUnavailable when required and missing
    try:
        notebook = read_submission(path)
        source = _source_for(notebook, path, sources, exercise)
    except SubmissionError as problem:  # still name the exercise when the file name tells it
        known = sources.get(exercise or exercise_of({}, path))
        return _report(label, known, REJECTED, str(problem), sandbox_note=box.note)
    try:
        assembled = build_notebook(source, answer_sources(notebook, source))
    except SubmissionError as problem:
        return _report(label, source, REJECTED, str(problem), sandbox_note=box.note)
    settings = RunSettings(options.cell_timeout, options.total_timeout, sandboxed=box.enabled,
                           limits=options.limits, guard=options.detect_tampering)
    try:
        run = run_notebook(assembled, settings)
    except Exception as error:  # a fault of this machine or of the grader, not of the submission
        return _report(label, source, ERROR, labelled(_GRADER_FAULT, f"could not run the notebook: {error!r}"),
                       sandbox_note=box.note)
    if options.detect_tampering and run.guard != "ready" and (run.cells or run.guard):
        return _report(label, source, ERROR, labelled(_GRADER_FAULT, "the grader's guard did not start: "
                                                      f"{run.guard or 'no word from it'}"),
                       seconds=run.seconds, sandbox_note=box.note)
    if not run.cells and not run.timed_out and not run.stopped:
        return _report(label, source, ERROR, labelled(_GRADER_FAULT, "the nbval run reported no cells; its output "
                                                      "ends with:\n" + run.log_tail[-1000:]),
                       seconds=run.seconds, sandbox_note=box.note)
    if run.tampering:
        reason = labelled(TAMPERING, run.tampering[0])
        checks = [_check_entry(check, 0, reason) for check in source.checks]
        return _report(label, source, GRADED, reason, checks, run.seconds, sandbox_note=box.note)
    checks = _scored_checks(source, run, options)
    return _report(label, source, GRADED, _graded_reason(run, checks), checks, run.seconds, sandbox_note=box.note)


# A fault of the grader, for the instructor; what follows it is a diagnosis in English.
_GRADER_FAULT = both("the grader failed, not the notebook", "出错的是评分程序，不是笔记本")


def _graded_reason(run: RunResult, checks: list) -> str | None:
    """Why a graded notebook lost points wholesale: stopped by a limit, or out of memory; else None."""
    if run.stopped:
        return run.stopped
    memory = [check["feedback"] for check in checks if "out of memory" in check["feedback"]]
    return memory[0] if memory else None


def _source_for(notebook: dict, path, sources: dict, expected: str | None) -> ExerciseSource:
    claimed = exercise_of(notebook, path)
    if expected and claimed and claimed != expected:
        raise SubmissionError(both(f"wrong exercise: this is the notebook of {claimed}, but {expected} was expected",
                                   f"练习不对：这是 {claimed} 的笔记本，这里要的是 {expected}"))
    name = expected or claimed
    if name is None:
        raise SubmissionError(both("cannot tell which exercise this is: its metadata names none and its "
                                   "file name does not start with exNN_ (use --exercise)",
                                   "看不出这是哪个练习：元数据里没有写，文件名也不以 exNN_ 开头（请用 --exercise）"))
    if name not in sources:
        known = ", ".join(sorted(sources))
        raise SubmissionError(both(f"unknown exercise {name!r} (known: {known})",
                                   f"未知练习 {name!r}（已知：{known}）"))
    return sources[name]


def _scored_checks(source: ExerciseSource, run: RunResult, options: GradingOptions) -> list:
    checks = []
    for check in source.checks:
        outcome = run.cells.get(check.cell_index)
        if outcome is not None:
            feedback = outcome.feedback
        elif run.stopped:
            feedback = labelled(NOT_RUN, run.stopped)
        elif run.timed_out:
            limit = f"{options.total_timeout:g}"
            feedback = labelled(NOT_RUN, both(f"the notebook went over the overall time limit of {limit} s",
                                              f"整个笔记本超过了 {limit} 秒的总时限"))
        else:
            feedback = labelled(NOT_RUN, both(f"the grading run ended early (pytest exit status {run.exit_code})",
                                              f"评分运行提前结束了（pytest 退出状态 {run.exit_code}）"))
        passed = outcome is not None and outcome.passed
        checks.append(_check_entry(check, check.points if passed else 0, feedback))
    return checks


def _check_entry(check, score: int, feedback: str) -> dict:
    return {"name": check.name, "score": score, "max_score": check.points,
            "visibility": "hidden" if check.hidden else "visible", "feedback": feedback}


def _report(label: str, source: ExerciseSource | None, status: str, reason: str | None,
            checks: list | None = None, seconds: float = 0.0, sandbox_note: str | None = None) -> dict:
    if checks is None:  # not graded: every check scores 0 and says why
        checks = [_check_entry(check, 0, labelled(NOT_GRADED, reason)) for check in (source.checks if source else ())]
    return {
        "submission": label,
        "exercise": source.exercise if source else None,
        "status": status,
        "reason": reason,
        "score": sum(check["score"] for check in checks),
        "max_score": source.max_score if source else 0,
        "source": source.kind if source else None,
        "seconds": round(seconds, 2),
        "sandbox": sandbox_note,
        "checks": checks,
    }


def grade_many(submissions: list, sources: dict, *, exercise: str | None = None,
               options: GradingOptions = GradingOptions(), jobs: int | None = None,
               on_graded=None) -> list:
    """Grade (path, label) pairs, jobs at a time; reports come back in the order given.

    on_graded(done, total, report) is called as each submission finishes (for a progress bar).
    """
    jobs = max(1, jobs or available_cores())
    reports = [None] * len(submissions)
    with ThreadPoolExecutor(max_workers=jobs) as pool:  # each job waits on its own subprocess
        futures = {pool.submit(grade_submission, path, sources, exercise=exercise, label=label,
                               options=options): index
                   for index, (path, label) in enumerate(submissions)}
        for done, future in enumerate(as_completed(futures), start=1):
            index = futures[future]
            try:
                reports[index] = future.result()
            except Exception as error:  # a grader bug must not lose the rest of the class
                path, label = submissions[index]
                reports[index] = _report(label, None, ERROR, labelled(_GRADER_FAULT, repr(error)))
            if on_graded:
                on_graded(done, len(submissions), reports[index])
    return reports


def find_submissions(arguments) -> list:
    """(path, label) for each notebook named or found in a named folder (checkpoints skipped).

    A label is the path relative to the folder it was found in, or the file name. Folders are
    searched without following symbolic links (a link to the instructor's folder must not bring
    its notebooks in); anything named *.ipynb is listed, so that what is not a regular notebook
    file is reported with its reason rather than left out.
    """
    found, labels = [], set()
    for argument in map(Path, arguments):
        if argument.is_dir():
            paths = []
            for folder, folders, files in os.walk(argument, followlinks=False):
                folders[:] = sorted(name for name in folders if name != ".ipynb_checkpoints")
                paths += [Path(folder) / name for name in files + folders if name.endswith(".ipynb")]
            pairs = [(path, path.relative_to(argument).as_posix()) for path in sorted(paths)]
        else:
            pairs = [(argument, argument.name)]
        for path, label in pairs:
            unique, number = label, 2
            while unique in labels:
                unique, number = f"{label} ({number})", number + 1
            labels.add(unique)
            found.append((path, unique))
    return found
