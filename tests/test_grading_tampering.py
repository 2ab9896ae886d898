"""In-kernel tampering (issue 14, part 3): each technique in tests/grading_data/tampering is a real
submission that fakes every check of exercise 1 while its answers are still stubs.

Each used to score full marks with the guard off. Since verdicts are decided outside the student's
kernel (issue 19), each scores 0 with the guard off too: no score relies on the guard. With the
guard on, each scores 0 and the reason says "tampering detected", which watched item changed and which answer
cell to look at; what was found goes to the instructor's report (guard_findings), with where the guard saw it,
never to the student's, since it is kernel text. Well-known
extensions (matplotlib's inline backend, autoreload) are not taken for tampering. A submission
written against the guard itself, which forges its verdicts, used to score full marks; it now
scores 0 as well.

One technique also runs from the Chinese student notebook: the guard sees the same kernel either way
(test_grading_runs.py shows that a Chinese submission assembles to the very notebook of its English twin).
"""

import os

import pytest
from test_grading_support import (
    GRADING_DATA,
    SOURCES,
    answer_cells,
    reference_answers,
    with_answers,
    write_notebook,
)

from s09_jsonl_transcript.grading.grader import GradingOptions, find_submissions, grade_many
from s09_jsonl_transcript.grading.words import TAMPERING as TAMPERING_DETECTED

pytestmark = [pytest.mark.slow,  # the grader's long suite: tests/test_grader_fast.py is its default-run part
              pytest.mark.skipif(os.name != "posix", reason="the grader runs on POSIX systems (Linux, macOS)")]

TAMPERING = GRADING_DATA / "tampering"
TECHNIQUES = sorted(path.stem for path in TAMPERING.glob("*.py") if not path.stem.startswith("innocent"))
CHINESE_TECHNIQUE = "post_run_cell_hook"  # the one that beat two checks before the guard
FULL_MARKS = SOURCES["ex01"].max_score

AGAINST_THE_GUARD = '''
import hashlib, hmac, json, sys

_guard_module = sys.modules["s09_jsonl_transcript.grading.guard"]
_cells = {type(cell.cell_contents).__name__: cell.cell_contents for cell in _guard_module.verdict.__closure__}
_key, _guard = _cells["bytes"], _cells["_Guard"]


def _forged(nonce):
    mac = hmac.new(_key, json.dumps([nonce, _guard.cell_hash, []]).encode(), hashlib.sha256).hexdigest()
    return json.dumps({"nonce": nonce, "cell": _guard.cell_hash, "problems": [], "mac": mac})


_guard_module.verdict = _forged
'''


def tampered_folder(folder, techniques: list, language: str = "en") -> None:
    for name in techniques:
        answers = answer_cells((TAMPERING / f"{name}.py").read_text(encoding="utf-8"))
        write_notebook(folder / f"ex01_{name}.ipynb", with_answers("ex01", answers, language))


def graded(folder, detect: bool) -> dict:
    """Reports by technique: "post_run_cell_hook", or "zh/post_run_cell_hook" for a Chinese notebook."""
    reports = grade_many(find_submissions([folder]), SOURCES, options=GradingOptions(detect_tampering=detect))
    return {report["submission"].replace("ex01_", "")[:-len(".ipynb")]: report for report in reports}


@pytest.fixture(scope="module")
def with_guard(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tampered")
    tampered_folder(folder, TECHNIQUES)
    tampered_folder(folder / "zh", [CHINESE_TECHNIQUE], "zh")
    innocent = answer_cells((TAMPERING / "innocent_extensions.py").read_text(encoding="utf-8"))
    write_notebook(folder / "ex01_innocent_extensions.ipynb",
                   with_answers("ex01", {**reference_answers("ex01"), **innocent}))
    post_run_cell = (TAMPERING / "post_run_cell_hook.py").read_text(encoding="utf-8")
    write_notebook(folder / "ex01_against_the_guard.ipynb", with_answers("ex01", {
        "ex01-turn-length": answer_cells(post_run_cell)["ex01-turn-length"] + "\n" + AGAINST_THE_GUARD}))
    return graded(folder, detect=True)


@pytest.fixture(scope="module")
def without_guard(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tampered-unguarded")
    tampered_folder(folder, TECHNIQUES)
    return graded(folder, detect=False)


def scores(report: dict) -> list:
    return [(check["name"], check["score"], check["feedback"][:80]) for check in report["checks"]]


@pytest.mark.parametrize("technique", TECHNIQUES)
def test_without_the_guard_the_technique_scores_nothing(without_guard, technique):
    report = without_guard[technique]
    assert report["status"] == "graded"
    assert report["score"] == 0, scores(report)


# Rewritten replies fake a check's output; with the values compared outside, its checks simply fail
# before the guard's verdict is asked for: 0 points, with no tampering to report.
CAUGHT_BY_THE_VALUES = {"rewritten_replies"}


@pytest.mark.parametrize("technique", sorted(set(TECHNIQUES) - CAUGHT_BY_THE_VALUES) + [f"zh/{CHINESE_TECHNIQUE}"])
def test_with_the_guard_the_technique_scores_zero(with_guard, technique):
    report = with_guard[technique]
    assert report["status"] == "graded" and report["score"] == 0, scores(report)
    assert len(report["checks"]) == len(SOURCES["ex01"].checks), "hidden checks count too"


@pytest.mark.parametrize("technique", sorted(set(TECHNIQUES) - CAUGHT_BY_THE_VALUES) + [f"zh/{CHINESE_TECHNIQUE}"])
def test_with_the_guard_the_technique_is_reported_as_tampering(with_guard, technique):
    report = with_guard[technique]
    assert report["reason"].startswith("tampering detected · 检测到篡改: ") and report["reason"].startswith(
        f"{TAMPERING_DETECTED}: "), report["reason"]
    assert all(check["feedback"] == report["reason"] for check in report["checks"])
    assert len(report["checks"]) == len(SOURCES["ex01"].checks), "hidden checks count too"


@pytest.mark.parametrize("technique, found", [
    ("input_transformer", "an input transformer was added or removed (cleanup_transforms)"),
    ("ast_transformer", "an AST transformer was added or removed"),
    ("post_run_cell_hook", "a post_run_cell hook was added"),
    (f"zh/{CHINESE_TECHNIQUE}", "a post_run_cell hook was added"),
    ("custom_exception_handler", "a custom exception handler was set (set_custom_exc)"),
    ("replaced_run_cell", "the shell had run_cell replaced"),
])
def test_the_instructors_report_names_what_was_found(with_guard, technique, found):
    assert found in " ".join(with_guard[technique]["guard_findings"])
    assert found not in with_guard[technique]["reason"]  # kernel text: never in what a student sees


@pytest.mark.parametrize("technique, item", [
    ("input_transformer", "input transformers"),
    ("ast_transformer", "AST transformers"),
    ("post_run_cell_hook", "event hooks"),
    ("custom_exception_handler", "the custom exception handler"),
    ("replaced_run_cell", "the kernel's machinery"),
])
def test_a_tamper_verdict_shows_where_to_look_and_the_instructor_what_changed(with_guard, technique, item):
    """The student reads which watched item changed and which answer cell to look at (the grader's own words and
    names); the instructor's report says after which cell the guard saw what."""
    report = with_guard[technique]
    assert item in report["reason"], report["reason"]
    assert "after your answer cell ex01-turn-length ran; look at your answer cell ex01-turn-length (the one that " \
           "defines last_turn_length)" in report["reason"], report["reason"]
    assert "你的答案单元 ex01-turn-length" in report["reason"]
    assert report["guard_findings"][0].startswith("after the answer cell ex01-turn-length ran: ")


@pytest.mark.parametrize("technique", sorted(CAUGHT_BY_THE_VALUES))
def test_with_the_guard_a_technique_the_values_catch_scores_zero(with_guard, technique):
    assert with_guard[technique]["score"] == 0, scores(with_guard[technique])


def test_matplotlib_and_autoreload_are_not_taken_for_tampering(with_guard):
    report = with_guard["innocent_extensions"]
    assert report["reason"] is None and report["score"] == FULL_MARKS, scores(report)


def test_a_submission_written_against_the_guard_itself_gains_nothing(with_guard):
    """Code that reads the guard's key from its memory forges its verdicts; the values still decide."""
    report = with_guard["against_the_guard"]
    assert report["score"] == 0, scores(report)


def test_a_slip_at_the_top_of_an_answer_cell_is_not_taken_for_tampering(tmp_path):
    """A cell that fails after defining its answer ends without the guard's verdict in its reply: the
    grader asks for the verdict again rather than calling an honest mistake tampering."""
    slipped = reference_answers("ex01")["ex01-turn-length"] + "\n\nundefined_name  # NameError after the answer\n"
    write_notebook(tmp_path / "ex01_slip.ipynb", with_answers("ex01", {"ex01-turn-length": slipped}))
    report = graded(tmp_path, detect=True)["slip"]
    assert report["reason"] is None and "guard_findings" not in report, report
    turn_length = [check for check in report["checks"] if check["id"] in ("ex01-turn-of-four", "ex01-stops-at-user")]
    assert all(check["score"] == check["max_score"] for check in turn_length), scores(report)
