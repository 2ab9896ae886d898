"""The command line: python -m s09_jsonl_transcript.grading COMMAND ...

    release [--source DIR] [--out DIR]      write the student notebooks, English (exercises/) and Chinese
                                            (exercises/zh/, from the Chinese text in exercises/zh/text/)
    release --check                         exit status 1 when exercises/ is not what release writes, or a
                                            translation is todo or stale
    release --bundle DIR                    a student-only folder: notebooks in both languages, selfcheck/, README
    accept [exNN_name ...]                  mark the translated sections of exercises/zh/text/ done
    refresh [--source DIR]                  re-run the instructor sources and save their outputs
    grade PATH ... [--exercise exNN]        grade notebooks, or every notebook under a folder; the reports
          [--roster FILE] [--reports DIR]   folder's tables (class.csv, gradebook.csv) cover every report in it
          [--format json|gradescope] [--sandbox auto|required|off] [--seed N]
          [--crash-size full|reduced] [--crash-timeout S]
    benchmark [--copies 30] [--exercise exNN]  time the grading of a folder of reference solutions (by
                                            default of every exercise but the crash-graded capstone's)

Exit status: 0 done; 1 `release --check` found differences, `release` left translations to do, or
the grader itself failed on a submission; 2 a bad command line, unusable sources, `--sandbox
required` where there is none, or a submission of the crash-graded exercise (ex06) where the grader
cannot record system calls (no strace, or ptrace refused). What students read (reports, feedback,
errors) is in English and Chinese.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import crash, language, sandbox
from .benchmark import run_benchmark
from .gradebook import describe_submission, read_roster
from .grader import ERROR, GradingOptions, available_cores, find_submissions, grade_many
from .release import (
    accept_text,
    refresh,
    release,
    stale_notebooks,
    text_folder_of,
    translation_pair,
    translation_problems,
    write_bundle,
)
from .reports import (
    FINAL_GRADES,
    FORMATS,
    GRADEBOOK,
    ProgressBar,
    format_class,
    format_report,
    known_reports,
    tables_in,
    write_reports,
    write_tables,
)
from .source import SourceError, default_source_folder, load_sources
from .words import ERROR_LABEL, REPORT, WARNING, both, labelled

DEFAULT_REPORTS = Path("artifacts") / "grading"
tr = language.translator("cli")


class UsageError(Exception):
    """A bad command line: one line of explanation, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(tr("{message} (see --help)", message=message))


def _parser() -> argparse.ArgumentParser:
    """The grader's parser, its help in the language in use (--lang, or the locale's)."""
    def parser_with_help(factory, **options):
        made = factory(formatter_class=language.HelpFormatter, add_help=False, **options)
        made.add_argument("-h", "--help", action="help", help=tr("show this help and exit"))
        made.add_argument("--lang", choices=language.LANGUAGES, default=argparse.SUPPRESS,
                          help=tr("the language of this help (default: zh when the locale is Chinese, else en); "
                                  "what students read is always in both"))
        return made

    parser = parser_with_help(_Parser, prog="python -m s09_jsonl_transcript.grading",
                              description=tr("Release and grade the s09 exercises."))
    commands = parser.add_subparsers(dest="command", required=True, metavar="{release,accept,refresh,grade,benchmark}")

    def command(name, text):
        return parser_with_help(lambda **options: commands.add_parser(name, help=text, **options), description=text)

    source_help = tr("folder of instructor (or selfcheck) notebooks; default: the checkout's exercises/instructor")
    release_command = command("release", tr("write the student notebooks from the instructor sources"))
    release_command.add_argument("--source", type=Path, help=source_help)
    release_command.add_argument("--out", type=Path, help=tr("where to write them; default: the folder above --source"))
    release_command.add_argument("--check", action="store_true", help=tr("only compare: exit 1 if --out differs"))
    release_command.add_argument("--bundle", type=Path, help=tr("write a student-only bundle to this folder instead"))

    accept_command = command("accept", tr("mark the translated sections of exercises/zh/text done"))
    accept_command.add_argument("names", nargs="*",
                                help=tr("exercise notebooks (default: all), e.g. ex01_last_turn_replay"))
    accept_command.add_argument("--source", type=Path, help=source_help)

    refresh_command = command("refresh", tr("re-run the instructor sources and save their outputs"))
    refresh_command.add_argument("--source", type=Path, help=source_help)

    grade = command("grade", tr("grade notebooks (files, or folders searched recursively)"))
    grade.add_argument("paths", nargs="+", type=Path, metavar="PATH",
                       help=tr("a submitted notebook, or a folder searched for notebooks"))
    grade.add_argument("--source", type=Path, help=source_help)
    grade.add_argument("--exercise", help=tr("grade every notebook as this exercise (e.g. ex01); a notebook of another "
                                             "exercise scores 0. Without it, each notebook's exercise comes from its "
                                             "metadata, its file name (ex01_...) or its folder (ex01/alice.ipynb)"))
    grade.add_argument("--roster", type=Path,
                       help=tr("students, one a line (a CSV's first column): {gradebook} gets a row for each, marked "
                               "missing where nothing was submitted", gradebook=GRADEBOOK))
    grade.add_argument("--reports", type=Path, default=DEFAULT_REPORTS,
                       help=tr("folder for the JSON reports and the tables of every report in it (default: {folder})",
                               folder=DEFAULT_REPORTS))
    grade.add_argument("--format", choices=FORMATS, default="json",
                       help=tr("json: a report per submission, class.csv and {gradebook} (default); gradescope: "
                               "Gradescope autograder results (results.json for one submission) and {final}",
                               gradebook=GRADEBOOK, final=FINAL_GRADES))
    _add_run_options(grade)

    benchmark = command("benchmark", tr("time grading a folder of reference solutions"))
    benchmark.add_argument("--source", type=Path, help=source_help)
    benchmark.add_argument("--copies", type=int, default=30, help=tr("how many submissions (default 30)"))
    benchmark.add_argument("--exercise", help=tr("copies of this exercise's reference only (e.g. ex06); default: "
                                                 "every exercise but a crash-graded one, in turn"))
    _add_run_options(benchmark)
    return parser


def _add_run_options(command) -> None:
    command.add_argument("--jobs", type=int, default=None,
                         help=tr("submissions graded at once (default: the cores available, here {cores})",
                                 cores=available_cores()))
    command.add_argument("--cell-timeout", type=float, default=GradingOptions.cell_timeout,
                         help=tr("seconds a cell may run (default %(default)g)"))
    command.add_argument("--timeout", type=float, default=GradingOptions.total_timeout,
                         help=tr("seconds a whole notebook may run (default %(default)g)"))
    command.add_argument("--sandbox", choices=sandbox.MODES, default=sandbox.AUTO,
                         help=tr("run each grading under bubblewrap: auto (when it works here, the default), "
                                 "required (refuse to grade without it), off"))
    command.add_argument("--seed", type=int, default=None,
                         help=tr("the seed hidden checks draw their inputs from (default: a new one for this run; "
                                 "every report names it, so a run can be reproduced)"))
    command.add_argument("--crash-size", choices=("full", "reduced"), default="full",
                         help=tr("how many crash states the capstone (ex06) is judged on: full (the default) or "
                                 "reduced (fewer torn writes and damaged files, for a quick run)"))
    command.add_argument("--crash-timeout", type=float, default=GradingOptions.crash_timeout,
                         help=tr("seconds the capstone's crash grading of one submission may take (default "
                                 "%(default)g)"))


def _source_folder(arguments) -> Path:
    folder = arguments.source or default_source_folder()
    if folder is None:
        raise UsageError(both("no instructor sources here: pass --source FOLDER (a selfcheck/ folder works too)",
                              "这里没有教师版源文件：请用 --source 指定文件夹（selfcheck/ 文件夹也可以）"))
    return folder


def _options(arguments) -> GradingOptions:
    if arguments.jobs is not None and arguments.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    try:
        options = GradingOptions(arguments.cell_timeout, arguments.timeout, sandbox=arguments.sandbox,
                                 seed=arguments.seed, crash_size=crash.SIZES[arguments.crash_size],
                                 crash_timeout=arguments.crash_timeout)
    except ValueError as error:
        raise UsageError(str(error)) from None
    box = sandbox.status(options.sandbox)  # SandboxUnavailable (exit status 2) when required and missing
    if not box.enabled:
        print(labelled(WARNING, box.note), file=sys.stderr)
    return options


def _release(arguments) -> int:
    source = _source_folder(arguments)
    if arguments.bundle:
        for path in write_bundle(source, arguments.bundle):
            print(f"wrote {path}")
        return _translation_status(source, arguments.bundle)
    out = arguments.out or source.parent
    if arguments.check:
        stale = stale_notebooks(source, out)
        for name in stale:
            print(f"{out / name} differs from what release writes")
        return 1 if _translation_status(source, out) or stale else 0
    for path in release(source, out):
        print(f"wrote {path}")
    return _translation_status(source, out)


def _translation_status(source: Path, out: Path) -> int:
    """Print what the Chinese text still needs; 1 when it needs anything."""
    problems = translation_problems(source, out)
    if problems:
        print(f"the Chinese exercises need work (translate in {text_folder_of(source)}, then run "
              "`accept` and `release`):\n  " + "\n  ".join(problems))
    return 1 if problems else 0


def _accept(arguments) -> int:
    source = _source_folder(arguments)
    names = arguments.names or [path.stem for path in sorted(source.glob("ex[0-9][0-9]_*.ipynb"))]
    for name in names:
        if not (source / f"{name}.ipynb").exists():
            raise UsageError(f"no exercise {name} in {source}")
        accepted, left = accept_text(translation_pair(name, source.parent, text_folder_of(source)))
        print(f"{name}: {len(accepted)} section(s) accepted"
              + (f"; still todo (no Chinese): {', '.join(left)}" if left else ""))
    return 0


def _refresh(arguments) -> int:
    for path in refresh(_source_folder(arguments)):
        print(f"refreshed {path}: every check passes")
    return 0


def _grade(arguments) -> int:
    options = _options(arguments)
    sources = load_sources(_source_folder(arguments))
    if arguments.exercise and arguments.exercise not in sources:
        raise UsageError(f"--exercise {arguments.exercise}: the sources hold {', '.join(sorted(sources))}")
    missing = ", ".join(str(path) for path in arguments.paths if not path.exists())
    if missing:
        raise UsageError(both(f"no such file or folder: {missing}", f"找不到文件或文件夹：{missing}"))
    submissions = find_submissions(arguments.paths)
    if not submissions:
        searched = ", ".join(map(str, arguments.paths))
        raise UsageError(both(f"no notebooks found in {searched}", f"在 {searched} 里没有找到笔记本"))
    batch = len(submissions) > 1 or any(path.is_dir() for path in arguments.paths)
    progress = ProgressBar(len(submissions))

    def show_progress(done, total, report):
        if batch:
            progress.update(done, report["submission"])

    roster = _roster(arguments.roster)
    reports = grade_many(submissions, sources, exercise=arguments.exercise, options=options,
                         jobs=arguments.jobs, on_graded=show_progress)
    for report, (path, _) in zip(reports, submissions):
        describe_submission(report, path, sources)
    regrade = tables_in(arguments.reports)
    known = known_reports(arguments.reports, reports)  # a regraded submission keeps its label and report file
    written = write_reports(reports, arguments.reports, arguments.format, known)
    if batch or regrade or roster is not None or arguments.format == "gradescope":
        tables = write_tables(arguments.reports, arguments.format, sources, roster)
    if batch:
        print(format_class(reports))
        listed = ", ".join(map(str, tables))
        print("\n" + both(f"reports in {arguments.reports}; tables of every report there: {listed}",
                          f"报告在 {arguments.reports}；那里全部报告的汇总表：{listed}"))
    else:
        print(format_report(reports[0]))
        print(labelled(REPORT, str(written[-1])))
        if regrade or roster is not None:
            print(both(f"tables of every report in {arguments.reports} rewritten",
                       f"{arguments.reports} 里全部报告的汇总表已重写"))
    return 1 if any(report["status"] == ERROR for report in reports) else 0


def _roster(path) -> list | None:
    if path is None:
        return None
    try:
        return read_roster(path)
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(both(f"cannot read the roster {path}: {error}", f"读不了名单 {path}：{error}")) from None


def _benchmark(arguments) -> int:
    options = _options(arguments)
    if arguments.copies < 1:
        raise UsageError("--copies must be at least 1")
    sources = load_sources(_source_folder(arguments))
    if arguments.exercise and arguments.exercise not in sources:
        raise UsageError(f"--exercise {arguments.exercise}: the sources hold {', '.join(sorted(sources))}")
    progress = ProgressBar(arguments.copies)
    result = run_benchmark(sources, copies=arguments.copies, jobs=arguments.jobs or available_cores(),
                           options=options, exercise=arguments.exercise,
                           on_graded=lambda done, total, report: progress.update(done, report["submission"]))
    print(json.dumps(result, indent=2, ensure_ascii=False))
    return 0 if result["all_full_marks"] else 1


def main(argv=None) -> int:
    """Run one command; return the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    language.use(language.language_of(argv))
    try:
        arguments = _parser().parse_args(argv)
        command = {"release": _release, "accept": _accept, "refresh": _refresh, "grade": _grade,
                   "benchmark": _benchmark}
        return command[arguments.command](arguments)
    except (UsageError, SourceError, sandbox.SandboxUnavailable, crash.RecorderUnavailable) as error:
        print(labelled(ERROR_LABEL, str(error)), file=sys.stderr)
        return 2
