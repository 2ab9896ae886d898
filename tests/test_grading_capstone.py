"""The capstone (ex06) through the real grader: notebooks graded end to end, the crash campaign run outside both
kernels (strace, the sandbox, real kills), its verdict read by the check cells in the trusted kernel and compared by
nbval with the reference run's.

One class, graded once at a small campaign size (capstone_answers.TINY) with one seed: the reference and the release
in both languages, each named wrong answer of tests/grading_data/wrong_answers/ex06.txt in both languages (each must
lose exactly the checks it names), and the attacks of tests/capstone_data/attacks (each scores what its answer
deserves, with its reason, never the grader's error). Then a regrade of two wrong answers with the same seed, which
must give the same finding ids and counts. .ci/run grades the reference and the wrong answers again through the
command line at the reduced size.
"""

import json
import os
import re
import secrets

import pytest
from capstone_answers import TINY, attack, require_recorder
from test_grading_support import (
    SOURCES,
    failed_checks,
    notebook_json,
    reference_answers,
    with_answers,
    write_notebook,
    wrong_answers,
)

from s09_jsonl_transcript.grading.durability import runs
from s09_jsonl_transcript.grading.grader import ERROR, GRADED, GradingOptions, find_submissions, grade_many
from s09_jsonl_transcript.grading.reports import format_report, gradescope_results

pytestmark = [pytest.mark.slow, pytest.mark.skipif(os.name != "posix", reason="the grader runs on POSIX systems")]

EXERCISE = "ex06"
SOURCE = SOURCES[EXERCISE]
NAME = SOURCE.path.name
ANSWER = SOURCE.crash_graded
WRONG = [wrong for wrong in wrong_answers() if wrong.exercise == EXERCISE]
SEED = secrets.randbelow(10**9)
LANGUAGES = {"en": "", "zh": "zh/"}
CHECK_OF = {check.property: check.id for check in SOURCE.checks}  # the tests key checks by id, as the others do
NAME_OF = {check.id: check.name for check in SOURCE.checks}  # what Gradescope's results call a check
EVERY_CHECK = set(NAME_OF)
FINDING_ID = re.compile(r"^(pl-|kill-|mix-|dmg-|rep:|rk:|session-e)\S+$")  # grading/durability/states.py's ids

# attack -> (what it scores: "all" or "nothing", words its report's reason holds)
ATTACKS = {
    "mmap_write": ("nothing", "stores through shared memory reach the file without a system call the recorder sees"),
    "o_direct": ("nothing", "direct I/O bypasses the page cache"),
    "io_uring": ("nothing", "io_uring submits I/O through shared memory the recorder cannot read"),
    "hard_link": ("nothing", "a second name for the transcript"),
    "child_outlives": ("nothing", "a child or thread that writes later is work the acknowledgement did not wait for"),
    "thread_outlives": ("nothing", "a child or thread that writes later is work the acknowledgement did not wait for"),
    "forged_ack": ("nothing", "append returned something other than the record it wrote"),
    "predicts_events": ("nothing", "record 6 is not the contract's record of event 6"),
    "kills_everything": ("nothing", "the driver's process ended"),
    "closes_channel": ("nothing", "the driver's process ended"),
    "imports_the_kit": ("nothing", "ModuleNotFoundError: No module named 's09_jsonl_transcript'"),
    "proc_fd": ("all", None),
    "confuses_recorder": ("all", None),
}
# The answer cell also tries, in the student's kernel, to reach the verdict's file and to write one of its own.
REWRITES_THE_VERDICT = '''
import glob as _glob
for _path in [os.environ.get("S09_CRASH_VERDICT", ""), *_glob.glob("/tmp/**/*verdict*", recursive=True)]:
    try:
        with open(_path, "w") as _file:
            _file.write('{"refused": null, "properties": []}')
    except OSError:
        pass
'''


def notebook_of(answer: str, language: str = "en") -> dict:
    return with_answers(EXERCISE, {ANSWER: answer}, language)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Every submission of the class, graded: label -> report."""
    require_recorder()
    folder = tmp_path_factory.mktemp("capstone")
    reference = reference_answers(EXERCISE)[ANSWER]
    for language, place in LANGUAGES.items():
        write_notebook(folder / place / "reference" / NAME, notebook_of(reference, language))
        write_notebook(folder / place / "release" / NAME, notebook_json(SOURCE.path.parent.parent / place / NAME))
        for wrong in WRONG:
            write_notebook(folder / place / "wrong" / f"{wrong.name}.ipynb", notebook_of(wrong.answers[ANSWER],
                                                                                          language))
    for name in ATTACKS:
        write_notebook(folder / "attack" / f"{name}.ipynb", notebook_of(attack(name)))
    write_notebook(folder / "attack" / "rewrites_the_verdict.ipynb", notebook_of(reference + REWRITES_THE_VERDICT))
    reports = grade_many(find_submissions([folder]), SOURCES, exercise=EXERCISE, jobs=2,
                         options=GradingOptions(seed=SEED, crash_size=TINY))
    return {report["submission"]: report for report in reports}


def lost(report: dict) -> set:
    return failed_checks(report)


def explained(report: dict) -> str:
    return json.dumps([report["reason"]] + [(check["name"], check["feedback"]) for check in report["checks"]],
                      ensure_ascii=False)[:3000]


@pytest.mark.parametrize("place", LANGUAGES.values(), ids=LANGUAGES.keys())
def test_the_reference_scores_full_marks_in_both_languages(graded, place):
    report = graded[f"{place}reference/{NAME}"]
    assert report["status"] == GRADED and report["score"] == report["max_score"] == SOURCE.max_score, explained(report)
    assert all(check["feedback"] == "passed · 通过" for check in report["checks"])
    crash = report["crash"]
    assert crash["seed"] == SEED and crash["recorder"] == "strace" and crash["refused"] is None
    assert crash["counts"]["power loss"] > 0 and crash["counts"]["held kill"] == 2 * TINY.events
    assert crash["replay"] is None  # nothing to replay


@pytest.mark.parametrize("place", LANGUAGES.values(), ids=LANGUAGES.keys())
def test_the_release_scores_nothing_and_says_why(graded, place):
    report = graded[f"{place}release/{NAME}"]
    assert report["status"] == GRADED and report["score"] == 0, explained(report)
    assert "NotImplementedError" in report["reason"] and "replace this line with your answer" in report["reason"]
    assert all("your answer was refused" in check["feedback"] for check in report["checks"])


@pytest.mark.parametrize("place", LANGUAGES.values(), ids=LANGUAGES.keys())
@pytest.mark.parametrize("wrong", WRONG, ids=lambda wrong: wrong.name)
def test_a_named_wrong_answer_loses_exactly_its_checks(graded, wrong, place):
    report = graded[f"{place}wrong/{wrong.name}.ipynb"]
    assert report["status"] == GRADED and report["reason"] is None, explained(report)
    assert lost(report) == wrong.loses, (SEED, explained(report))
    for check in report["checks"]:
        if check["id"] in wrong.loses:  # the report shows the first findings as byte maps, with their ids
            assert check["findings"] and all(FINDING_ID.match(finding.split("\n")[1]) for finding in check["findings"])
            if check["id"] != CHECK_OF["one-write"]:  # a crash state's map: what had been acknowledged
                assert "acknowledged · 已确认" in check["findings"][0]
        else:
            assert "findings" not in check
    assert f"--seed {SEED}" in report["crash"]["replay"] and f"replay {wrong.name}.ipynb" in report["crash"]["replay"]


def test_the_readable_and_gradescope_reports_show_the_byte_maps(graded):
    report = graded["wrong/ex06_no_fsync.ipynb"]
    text = format_report(report)
    findings = next(check for check in report["checks"] if check["id"] == CHECK_OF["kept"])["findings"]
    assert findings[0].split("\n")[1] in text  # a byte map keeps its lines
    assert "python -m s09_jsonl_transcript.grading.durability replay ex06_no_fsync.ipynb <id>" in text
    tests = gradescope_results(report)["tests"]
    kept = next(test for test in tests if test["name"] == NAME_OF[CHECK_OF["kept"]])
    assert findings[0] in kept["output"] and kept["score"] == 0


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_an_attack_scores_what_its_answer_deserves_with_its_reason(graded, name):
    report = graded[f"attack/{name}.ipynb"]
    deserves, words = ATTACKS[name]
    assert report["status"] == GRADED, explained(report)  # never the grader's error
    if deserves == "all":
        assert report["score"] == report["max_score"] and report["reason"] is None, explained(report)
    else:
        assert report["score"] == 0 and lost(report) == EVERY_CHECK, explained(report)
        assert report["reason"].startswith("the crash grading refused your answer") and words in report["reason"], (
            report["reason"])


def test_what_the_students_kernel_writes_cannot_reach_the_verdict(graded):
    report = graded["attack/rewrites_the_verdict.ipynb"]
    assert report["status"] == GRADED and report["score"] == report["max_score"], explained(report)


def test_no_submission_of_the_class_is_called_the_graders_error(graded):
    assert [label for label, report in graded.items() if report["status"] == ERROR] == []


def test_a_regrade_with_the_same_seed_gives_the_same_ids_and_counts(graded, tmp_path):
    names = ["ex06_no_fsync", "ex06_two_writes"]
    for name in names:
        wrong = next(wrong for wrong in WRONG if wrong.name == name)
        write_notebook(tmp_path / f"{name}.ipynb", notebook_of(wrong.answers[ANSWER]))
    again = {report["submission"]: report for report in grade_many(
        find_submissions([tmp_path]), SOURCES, exercise=EXERCISE, jobs=2,
        options=GradingOptions(seed=SEED, crash_size=TINY))}
    for name in names:
        first, second = graded[f"wrong/{name}.ipynb"], again[f"{name}.ipynb"]
        assert first["crash"]["counts"] == second["crash"]["counts"]
        assert first["crash"]["campaigns"] == second["crash"]["campaigns"]
        assert [check.get("findings") for check in first["checks"]] == [check.get("findings") for check in
                                                                          second["checks"]]
        assert [check["score"] for check in first["checks"]] == [check["score"] for check in second["checks"]]


def test_an_answer_too_slow_to_judge_is_stopped_at_its_time_limits(tmp_path, monkeypatch):
    """A call that never returns meets the call's limit; calls slow enough to make the campaign take hours meet the
    grading's. Either is scored against the submission, with its reason."""
    require_recorder()
    monkeypatch.setattr(runs, "STEP_SECONDS", 3.0)
    reference = reference_answers(EXERCISE)[ANSWER]
    slow = reference.replace("    return records\n    ### END SOLUTION",
                             "    import time\n    time.sleep(0.2)\n    return records\n    ### END SOLUTION")
    assert slow != reference
    write_notebook(tmp_path / "withheld.ipynb", notebook_of(attack("withheld_ack")))
    write_notebook(tmp_path / "slow.ipynb", notebook_of(slow))
    reports = {report["submission"]: report for report in grade_many(
        find_submissions([tmp_path]), SOURCES, exercise=EXERCISE, jobs=2,
        options=GradingOptions(seed=SEED, crash_size=TINY, crash_timeout=15))}
    withheld, too_slow = reports["withheld.ipynb"], reports["slow.ipynb"]
    assert withheld["status"] == too_slow["status"] == GRADED
    assert withheld["score"] == too_slow["score"] == 0
    assert "append (event 2) did not return within its time" in withheld["reason"], withheld["reason"]
    assert "went over its time limit of 15 s" in too_slow["reason"], too_slow["reason"]
    assert too_slow["seconds"] < 120


def test_the_instructor_source_passes_strict_nbval_as_saved(tmp_path):
    """The pristine copy, as refresh saved it, run again under strict nbval: the local crash check's text, its
    figures' reprs and every pass line come out the same (its verdicts are seeded, its timings never printed)."""
    import shutil
    import subprocess
    import sys

    shutil.copy(SOURCE.path, tmp_path / NAME)
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--nbval", "--nbval-current-env",
                           "-c", str(tmp_path / "pytest.ini"), "--rootdir", str(tmp_path), "-q", str(tmp_path / NAME)],
                          capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:]
    assert f"{sum(cell.cell_type == 'code' for cell in SOURCE.notebook.cells)} passed" in done.stdout
