"""Grade submissions: assemble each one, run it under nbval, and score every check.

A report is a plain dict, written as JSON:

    {"submission": "alice/ex01_last_turn_replay.ipynb", "exercise": "ex01",
     "status": "graded" | "rejected" | "error", "reason": null, or why it was not graded, or
     why a graded notebook scored what it did (tampering detected, too much output, out of memory),
     in English and Chinese (see words.py),
     "score": 7, "max_score": 14, "source": "instructor" | "selfcheck", "seconds": 4.2,
     "sandbox": "sandboxed with bubblewrap: ..." | "unsandboxed: ...",
     "seed": 912877, the grading run's seed, from which the hidden checks drew their inputs,
     "guard_findings": ["..."], for the instructor only: what the guard saw (kernel text, escaped),
     "checks": [{"name": "ex01.1", "score": 2, "max_score": 2, "visibility": "visible",
                 "feedback": "passed · 通过"}, ...]}

"rejected" is bad input (score 0 and the reason); "error" is a fault of the grader or of its
sources, which an instructor should look at. Nothing a submission does makes this module raise.
A notebook in which tampering was detected is graded 0 on every check, with the reason.

No verdict depends on code in the student's kernel. For an instructor source, each grading run
picks a seed; the instructor's reference answers run first, in a kernel of their own, with the
same two-kernel notebook and that seed; what each check cell printed there is what the trusted
kernel's run of the same cell must print, compared by nbval in the pytest process. A read budget
is counted by the trusted side, which serves the file (channel.py). The guard stays as
a second line, and for its feedback; no score relies on it. Every text of a report is made
printable (words.printable): a kernel's text reaches no terminal or file raw.
"""

from __future__ import annotations

import os
import secrets
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import crash
from . import sandbox as sandboxing
from .assemble import (
    SubmissionError,
    answer_sources,
    exercise_of,
    read_submission,
    reference_program,
    student_program,
    trusted_notebook,
)
from .evidence import instructor_findings, student_reason
from .runner import RunResult, RunSettings, run_notebook
from .source import KIND_INSTRUCTOR, ExerciseSource, pass_line, source_text
from .words import NOT_GRADED, NOT_RUN, OUT_OF_MEMORY, both, labelled, printable

GRADED, REJECTED, ERROR = "graded", "rejected", "error"


@dataclass(frozen=True)
class GradingOptions:
    """How to run each submission.

    cell_timeout is the seconds each run of the student's code may take (an answer cell, or one
    call from a check), total_timeout the seconds for the whole notebook; sandbox is "auto"
    (bubblewrap when it works here), "required" or "off"; limits are the sandbox's resource limits
    and the output limit. detect_tampering=False turns the guard off: tests use it to show that no
    score relies on it. seed is the grading run's seed (None: grade_many or grade_submission picks
    one at random). crash_size and crash_timeout are a crash-graded exercise's (crash.py): the size
    of its campaign (grading/durability's CampaignSize) and the seconds it may take.
    """

    cell_timeout: float = 20.0
    total_timeout: float = 120.0
    sandbox: str = sandboxing.AUTO
    limits: sandboxing.Limits = field(default_factory=sandboxing.Limits)
    detect_tampering: bool = True
    seed: int | None = None
    crash_size: object = crash.FULL
    crash_timeout: float = crash.TIME_LIMIT

    def __post_init__(self):
        if not (self.cell_timeout > 0 and self.total_timeout > 0 and self.crash_timeout > 0):
            raise ValueError("timeouts must be positive numbers of seconds")
        if self.sandbox not in sandboxing.MODES:
            raise ValueError(f"sandbox must be one of {', '.join(sandboxing.MODES)}")
        if self.seed is not None and not (type(self.seed) is int and 0 <= self.seed < 2**63):
            raise ValueError("the seed must be a whole number from 0 to 2**63 - 1")


def new_seed() -> int:
    """A seed for one grading run."""
    return secrets.randbelow(10**9)

def crash_settings(options: GradingOptions, sandboxed: bool) -> crash.CrashSettings:
    """How a crash-graded exercise's campaign runs under these options."""
    return crash.CrashSettings(options.crash_size, options.crash_timeout, sandboxed, options.limits)


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
    label = printable(label or Path(path).name)
    if options.seed is None:
        options = replace(options, seed=new_seed())
    box = sandboxing.status(options.sandbox)  # SandboxUnavailable when required and missing
    try:
        notebook = read_submission(path)
        source = _source_for(notebook, path, sources, exercise)
    except SubmissionError as problem:  # still name the exercise when the file name tells it
        known = sources.get(exercise or exercise_of({}, path))
        return _report(label, known, REJECTED, str(problem), sandbox_note=box.note, seed=options.seed)
    if source.crash_graded is not None:  # RecorderUnavailable: refused at once, as a missing sandbox is
        crash.check_recorder(box.enabled)
    try:
        answers = answer_sources(notebook, source)
    except SubmissionError as problem:
        return _report(label, source, REJECTED, str(problem), sandbox_note=box.note, seed=options.seed)
    settings = RunSettings(options.cell_timeout, options.total_timeout, sandboxed=box.enabled,
                           limits=options.limits, guard=options.detect_tampering, seed=options.seed)
    crashes = crash_settings(options, box.enabled) if source.crash_graded is not None else None

    def grader_fault(reason: str) -> dict:  # not graded: the fault is this machine's or the grader's
        return _report(label, source, ERROR, labelled(_GRADER_FAULT, reason), sandbox_note=box.note, seed=options.seed)

    try:
        reference = reference_values(source, settings, crashes) if source.kind == KIND_INSTRUCTOR else None
    except (ReferenceFailed, sandboxing.MemoryGroupFailed) as error:
        return grader_fault(str(error))
    verdict = None
    if crashes is not None:  # decided here, outside both kernels, before the notebook runs (crash.py)
        try:
            verdict = crash.run_campaign(answers[source.crash_graded], seed=options.seed, settings=crashes)
        except Exception as error:  # the engine scores whatever the answer does: what escapes it is the grader's
            return grader_fault(f"the crash campaign failed: {error!r}")
    try:  # a self-check copy has no reference: its checks expect the pass lines saved in it
        run = run_notebook(trusted_notebook(source, reference), settings, student_program(source, answers),
                           data=crash.checks_data(verdict) if verdict is not None else None)
    except sandboxing.MemoryGroupFailed as error:
        return grader_fault(str(error))
    except Exception as error:  # a fault of this machine or of the grader, not of the submission
        return grader_fault(f"could not run the notebook: {error!r}")
    crash_seconds = crash.seconds_of(verdict) if verdict is not None else 0.0
    if not run.cells and not run.timed_out and not run.stopped and not run.memory_exceeded:
        return _report(label, source, ERROR, labelled(_GRADER_FAULT, "the nbval run reported no cells; its output "
                                                      "ends with:\n" + run.log_tail[-1000:]),
                       seconds=run.seconds + crash_seconds, sandbox_note=box.note, seed=options.seed)
    if run.tampering:
        reason = student_reason(run.tampering, source)
        checks = [_check_entry(check, 0, reason) for check in source.checks]
        report = _report(label, source, GRADED, reason, checks, run.seconds + crash_seconds, sandbox_note=box.note,
                         seed=options.seed)
        report["guard_findings"] = instructor_findings(run.tampering, source)
        return report
    checks = _scored_checks(source, run, options)
    reason = _graded_reason(run, checks)
    if verdict is not None:
        reason = reason or crash.refusal_reason(verdict)
    report = _report(label, source, GRADED, reason, checks, run.seconds + crash_seconds, sandbox_note=box.note,
                     seed=options.seed)
    if verdict is not None:
        report["crash"] = crash.report_part(verdict, label, crashes, report["checks"], source)
    return report




class ReferenceFailed(RuntimeError):
    """The instructor's reference answers did not pass every check under this seed: the grader's fault."""


@dataclass(frozen=True)
class ReferenceCell:
    """What one check cell printed in the reference run."""

    outputs: tuple


_references: dict = {}
_reference_locks: dict = {}
_references_lock = threading.Lock()


def reference_values(source: ExerciseSource, settings: RunSettings,
                     crashes: crash.CrashSettings | None = None) -> dict:
    """Code-cell index -> ReferenceCell for every check, from a run of the reference answers (cached per seed).

    The run is a notebook of its own, in a fresh kernel, with the same check cells and seed as the
    students' runs; it never sees a student's code. For a crash-graded exercise, the reference
    answer's crash campaign runs first, as a student's does (crashes: how), and must keep every
    promise. ReferenceFailed when a check did not pass there.
    """
    key = (str(source.path), settings.seed, settings.sandboxed, settings.cell_timeout, settings.limits, crashes)
    with _references_lock:
        lock = _reference_locks.setdefault(key, threading.Lock())
    with lock:  # one reference run per exercise and seed, however many students wait for it
        if key not in _references:
            _references[key] = _run_reference(source, settings, crashes)
    return _references[key]


def _reference_verdict(source: ExerciseSource, settings: RunSettings, crashes: crash.CrashSettings) -> dict:
    """The reference answer's crash verdict under this seed; ReferenceFailed unless it kept every promise."""
    answer = next(entry for entry in source.answers if entry.name == source.crash_graded)
    verdict = crash.run_campaign(source_text(source.notebook.cells[answer.cell_index]), seed=settings.seed,
                                 settings=crashes)
    if not crash.kept_every_promise(verdict):
        raise ReferenceFailed(f"the reference answer of {source.exercise} did not keep every promise of the crash "
                              f"campaign with seed {settings.seed} (reproduce with --seed {settings.seed}): "
                              + crash.broken_words(verdict)[:600])
    return verdict


def _run_reference(source: ExerciseSource, settings: RunSettings, crashes: crash.CrashSettings | None = None) -> dict:
    verdict = _reference_verdict(source, settings, crashes) if crashes is not None else None
    run = run_notebook(trusted_notebook(source), replace(settings, guard=False, collect_outputs=True),
                       reference_program(source), data=crash.checks_data(verdict) if verdict is not None else None)
    found, failed = {}, []
    for check in source.checks:
        outcome = run.cells.get(check.cell_index)
        outputs = outcome.outputs if outcome else ()
        printed = "".join(str(output.get("text", "")) for output in outputs if output.get("output_type") == "stream")
        clean = all(output.get("output_type") == "stream" and output.get("name") == "stdout" for output in outputs)
        passed = printed.endswith(pass_line(check.name, check.points) + "\n")
        if outcome is None or not clean or not passed:
            failed.append(check.name)
        found[check.cell_index] = ReferenceCell(outputs)
    if failed:
        raise ReferenceFailed(f"the reference answers of {source.exercise} did not pass {', '.join(failed)} with seed "
                              f"{settings.seed} (reproduce with --seed {settings.seed}); pytest's output ends with:\n"
                              + run.log_tail[-600:])
    return found


# A fault of the grader, for the instructor; what follows it is a diagnosis in English.
_GRADER_FAULT = both("the grader failed, not the notebook", "出错的是评分程序，不是笔记本")


def _graded_reason(run: RunResult, checks: list) -> str | None:
    """Why a graded notebook lost points wholesale: stopped by a limit, or out of memory; else None."""
    if run.memory_exceeded:
        return run.memory_exceeded
    if run.stopped:
        return run.stopped
    memory = [check["feedback"] for check in checks if check["feedback"].startswith(OUT_OF_MEMORY)]
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
        elif run.memory_exceeded:
            feedback = labelled(NOT_RUN, run.memory_exceeded)
        else:
            feedback = labelled(NOT_RUN, both(f"the grading run ended early (pytest exit status {run.exit_code})",
                                              f"评分运行提前结束了（pytest 退出状态 {run.exit_code}）"))
        passed = outcome is not None and outcome.passed
        entry = _check_entry(check, check.points if passed else 0, feedback)
        if outcome is not None and outcome.printed and outcome.printed.get("characters"):
            entry["printed"] = _printed_words(outcome.printed)
        checks.append(entry)
    return checks


def _printed_words(printed: dict) -> str:
    """What the answers printed during a visible check that failed: how much, and its end."""
    characters, tail = printed.get("characters", 0), printable(str(printed.get("tail", "")))
    return both(f"your answers printed {characters:,} characters during this check; the last ones:",
                f"这个检查运行时你的答案打印了 {characters:,} 个字符；最后的部分：") + "\n" + tail


def _check_entry(check, score: int, feedback: str) -> dict:
    return {"name": check.name, "id": check.id, "score": score, "max_score": check.points,
            "visibility": "hidden" if check.hidden else "visible", "feedback": printable(feedback)}


def _report(label: str, source: ExerciseSource | None, status: str, reason: str | None,
            checks: list | None = None, seconds: float = 0.0, sandbox_note: str | None = None,
            seed: int | None = None) -> dict:
    reason = printable(reason) if reason is not None else None
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
        "seed": seed,
        "checks": checks,
    }


def grade_many(submissions: list, sources: dict, *, exercise: str | None = None,
               options: GradingOptions = GradingOptions(), jobs: int | None = None,
               on_graded=None) -> list:
    """Grade (path, label) pairs, jobs at a time; reports come back in the order given.

    on_graded(done, total, report) is called as each submission finishes (for a progress bar).
    """
    jobs = max(1, jobs or available_cores())
    if options.seed is None:  # one seed for the whole run: one reference run per exercise
        options = replace(options, seed=new_seed())
    _refuse_unrecordable(submissions, sources, exercise, options)
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
                reports[index] = _report(printable(label), None, ERROR, labelled(_GRADER_FAULT, repr(error)),
                                         seed=options.seed)
            if on_graded:
                on_graded(done, len(submissions), reports[index])
    return reports


def _refuse_unrecordable(submissions: list, sources: dict, exercise: str | None, options: GradingOptions) -> None:
    """Before any grading: RecorderUnavailable when a submission is of a crash-graded exercise and this
    machine cannot record system calls (crash.py). The whole run is refused at once, with the reason."""
    crash_graded = {name for name, source in sources.items() if source.crash_graded is not None}
    if not crash_graded:
        return
    claimed = {exercise} if exercise else {_claimed_exercise(path) for path, _ in submissions}
    if claimed & crash_graded:
        crash.check_recorder(sandboxing.status(options.sandbox).enabled)


def _claimed_exercise(path) -> str | None:
    """The exercise a submission says it is, or None (a submission that cannot be read is rejected later)."""
    try:
        return exercise_of(read_submission(path), path)
    except SubmissionError:
        return exercise_of({}, path)


def display_label(label: str) -> str:
    """A label any file and terminal can hold: bytes that are not UTF-8 become escapes such as \\xd5."""
    try:
        raw = os.fsencode(label)
    except UnicodeError:
        return printable(label)
    return printable(raw.decode("utf-8", "backslashreplace"))


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
            label = display_label(label)
            unique, number = label, 2
            while unique in labels:
                unique, number = f"{label} ({number})", number + 1
            labels.add(unique)
            found.append((path, unique))
    return found
