"""Graded as it runs (issue 42): an honest answer scores what it scores run in plain Python, and a lost point says
why. Each notebook here is real, graded by the real grader, in English and in Chinese:

- a reader that seeks before the start of its file and catches the OSError (the error is raised in the answer,
  at the call);
- damage functions that return a Path, which no check looks at (it crosses as a typed value);
- answers that raise their own subclasses of ValueError and of the lesson's TranscriptCorruptionError (the
  checks' `except ValueError` catches them);
- a reader that prints about 3 MB that nobody reads (cut, never an error);
- a reader that reads one byte at a time (one round trip per read; the channel counts them);
- the reference answers saved other honest ways: 256-byte steps, a namedtuple, CRLF endings, nbformat 4.4
  without cell ids;
- a hidden check whose call runs too long says "timed out", and the checks after it "not run".

Each honest answer is also run in plain Python (test_grading_support.plain_run), where it passes every check.
"""

import os

import pytest
from test_grading_support import (
    HONEST,
    SOURCES,
    answer_cells,
    feedback_of,
    plain_run,
    reference_answers,
    with_answers,
    write_notebook,
    wrong_answers,
)

from s09_jsonl_transcript.grading.grader import GradingOptions, find_submissions, grade_many

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not os.sys.platform.startswith("linux"), reason="the grader runs on Linux")]

LANGUAGES = ("en", "zh")
ALTERNATIVES = {wrong.name: wrong for wrong in wrong_answers(HONEST)}
# The reference answers saved another honest way (these were the boundary suite's honest variants).
SAVED_OTHERWISE = {"ex04_small_steps": "ex04", "ex02_namedtuple": "ex02", "ex05_crlf": "ex05",
                   "ex03_nbformat_4_4": "ex03"}


def honest_answers(name: str) -> dict:
    """The answer cells of an honest alternative, by answer name."""
    if name in ALTERNATIVES:
        return {**reference_answers(name[:4]), **ALTERNATIVES[name].answers}
    cells = HONEST / f"{name}.py"  # a whole answer written another way
    if cells.exists():
        return {**reference_answers(name[:4]), **answer_cells(cells.read_text(encoding="utf-8"))}
    if name.endswith("_crlf"):
        return {answer: code.replace("\n", "\r\n") for answer, code in reference_answers(name[:4]).items()}
    return reference_answers(name[:4])


def honest_notebook(name: str, language: str) -> dict:
    notebook = with_answers(name[:4], honest_answers(name), language)
    if name.endswith("_nbformat_4_4"):
        notebook["nbformat_minor"] = 4
        for cell in notebook["cells"]:
            cell.pop("id", None)
    return notebook


@pytest.fixture(scope="module")
def honest_reports(tmp_path_factory):
    folder = tmp_path_factory.mktemp("honest")
    for name in ALTERNATIVES:
        for language in LANGUAGES:
            write_notebook(folder / language / f"{name}.ipynb", honest_notebook(name, language))
    for name in SAVED_OTHERWISE:
        write_notebook(folder / "en" / f"{name}.ipynb", honest_notebook(name, "en"))
    # A call may take 60 s here, not 20: these answers are judged on what they return, and the one-byte reader's
    # ~98,000 round trips take 11 s on an idle machine (docs/grading.md); a loaded CI must not make it a timeout.
    options = GradingOptions(seed=20261204, cell_timeout=60)
    reports = grade_many(find_submissions([folder]), SOURCES, jobs=2, options=options)
    return {report["submission"][:-len(".ipynb")]: report for report in reports}


def failures(report: dict) -> list:
    return [(check["name"], check["feedback"][:300]) for check in report["checks"]
            if check["score"] < check["max_score"]]


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("name", sorted(ALTERNATIVES))
def test_an_honest_alternative_scores_full_marks_as_it_does_in_plain_python(honest_reports, name, language):
    assert plain_run(name[:4], honest_answers(name), 20261204) == set(), "the alternative is not honest"
    report = honest_reports[f"{language}/{name}"]
    assert report["status"] == "graded", report["reason"]
    assert report["score"] == report["max_score"] == SOURCES[name[:4]].max_score, failures(report)
    assert report["reason"] is None


@pytest.mark.parametrize("name", sorted(SAVED_OTHERWISE))
def test_the_reference_saved_another_honest_way_scores_full_marks(honest_reports, name):
    report = honest_reports[f"en/{name}"]
    assert report["status"] == "graded", report["reason"]
    assert report["score"] == report["max_score"], failures(report)


# --------------------------------------------------------------------------- why a point was lost

SLOW_ON_SMALL_BLOCKS = """
import time

_tail_records = tail_records


def tail_records(file, count, block_size=4096):
    if block_size != 4096:  # only the hidden checks ask for other blocks
        time.sleep(60)
    return _tail_records(file, count, block_size)
"""


PRINTS_AND_MISCOUNTS = """
def last_turn_length(events_newest_first):
    length = 0
    for event in events_newest_first:
        print("seen", event["type"], event.get("role"))
        if event["type"] == TYPE_MESSAGE and event.get("role") == "user":
            break
        length += 1
    return length
"""


@pytest.fixture(scope="module")
def timed_out(tmp_path_factory):
    folder = tmp_path_factory.mktemp("timed-out")
    answers = reference_answers("ex04")
    answers["ex04-tail"] += "\n\n" + SLOW_ON_SMALL_BLOCKS
    for language in LANGUAGES:
        write_notebook(folder / language / "ex04_slow_on_small_blocks.ipynb", with_answers("ex04", answers, language))
    write_notebook(folder / "printing" / "ex01_prints_and_miscounts.ipynb",
                   with_answers("ex01", {**reference_answers("ex01"), "ex01-turn-length": PRINTS_AND_MISCOUNTS}))
    reports = grade_many(find_submissions([folder]), SOURCES, jobs=2, options=GradingOptions(cell_timeout=3))
    return {report["submission"].split("/")[0]: report for report in reports}


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_hidden_check_that_runs_too_long_says_it_timed_out(timed_out, language):
    report = timed_out[language]
    assert report["status"] == "graded", report["reason"]
    visible = [check for check in SOURCES["ex04"].checks if not check.hidden]
    assert report["score"] == sum(check.points for check in visible), failures(report)
    assert feedback_of(report, "ex04-block-boundaries") == (
        "timed out · 超时: the call ran longer than 3 s (a hidden check: the grader shows no details · "
        "隐藏检查：评分程序不显示细节)")
    for name in ("ex04-last-line-endings", "ex04-negative-count", "ex04-read-budget"):
        assert feedback_of(report, name).startswith("not run · 未运行: not called: an earlier call ran longer than 3 s")


def test_a_visible_check_that_failed_shows_the_end_of_what_the_answers_printed(timed_out):
    report = timed_out["printing"]
    ex01_1 = next(check for check in report["checks"] if check["id"] == "ex01-turn-of-four")
    assert ex01_1["score"] == 0 and ex01_1["feedback"].startswith("failed · 未通过: AssertionError")
    printed = ex01_1["printed"]
    assert printed.startswith("your answers printed 96 characters during this check; the last ones:"), printed
    assert printed.endswith("seen message user\n")  # the fourth event it took, where it stopped
    assert all("printed" not in check for check in report["checks"] if check["visibility"] == "hidden")
