"""The red team of issue 19: every attack class as a real notebook (tests/grading_data/red_team).

Each attack here beat the grader before verdicts were decided outside the student's kernel:

- untouched stubs with three in-kernel techniques the guard does not see: the code object of
  IPython's run_cell swapped, `exec` shadowed in IPython's cell runner module, assertions turned off
  through the interpreter's configuration;
- a patched check helper (exercise 4's byte counter), and objects equal to anything;
- a class folder of ordinary but odd files: names that are not UTF-8, names of about 250 bytes, a
  folder named class.csv, a name equal to another student's report, punctuation twins, file names
  that a spreadsheet reads as formulas or that carry terminal escapes, a kernel thread whose name
  holds a lone surrogate;
- a hidden check's source carried into the Gradescope-visible output;
- memory held in a memfd, past the address-space limit.

The goal for each: 0 points beyond what the submission's real answers earn, every neighbour graded,
nothing hidden or raw leaked. The stub attacks are graded with the guard off as well: no score
relies on the guard.
"""

import csv
import io
import json
import os
from contextlib import redirect_stdout

import pytest
from test_grading_support import (
    GRADING_DATA,
    SOURCES,
    answer_cells,
    reference_answers,
    with_answers,
    write_notebook,
    wrong_answers,
)

from s09_jsonl_transcript.grading import sandbox
from s09_jsonl_transcript.grading.cli import main
from s09_jsonl_transcript.grading.grader import GradingOptions, find_submissions, grade_many, grade_submission

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not os.sys.platform.startswith("linux"), reason="the grader's red team runs on Linux")]

RED_TEAM = GRADING_DATA / "red_team"
STUB_ATTACKS = ["ex01_code_object_of_run_cell", "ex01_shadowed_exec", "ex01_assertions_off"]
HIDDEN_SOURCE_MARK = "lines longer than a block"  # a phrase of the hidden check ex04-block-boundaries' source
NAME = {check.id: check.name for source in SOURCES.values() for check in source.checks}  # what students read


def attack(name: str) -> dict:
    """The student notebook of the attack's exercise with the attack's answer cells in it."""
    answers = answer_cells((RED_TEAM / f"{name}.py").read_text(encoding="utf-8"))
    return with_answers(name[:4], answers)


def wrong_answer(name: str) -> dict:
    wrong = next(wrong for wrong in wrong_answers() if wrong.name == name)
    return with_answers(name[:4], {**reference_answers(name[:4]), **wrong.answers})


def by_label(reports: list) -> dict:
    return {report["submission"]: report for report in reports}


@pytest.fixture(scope="module")
def attacks_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("red-team")
    for name in [*STUB_ATTACKS, "ex01_look_alike", "ex04_patched_counter", "ex04_leaks_hidden_source"]:
        write_notebook(folder / f"{name}.ipynb", attack(name))
    write_notebook(folder / "ex04_reads_whole_file.ipynb", wrong_answer("ex04_reads_whole_file"))
    return folder


@pytest.fixture(scope="module")
def guarded(attacks_folder):
    return by_label(grade_many(find_submissions([attacks_folder]), SOURCES, jobs=2))


@pytest.fixture(scope="module")
def unguarded(attacks_folder, tmp_path_factory):
    folder = tmp_path_factory.mktemp("red-team-unguarded")
    for name in STUB_ATTACKS:
        write_notebook(folder / f"{name}.ipynb", attack(name))
    return by_label(grade_many(find_submissions([folder]), SOURCES, jobs=2,
                               options=GradingOptions(detect_tampering=False)))


def scores(report: dict) -> list:
    return [(check["name"], check["score"], check["feedback"][:100]) for check in report["checks"]]


@pytest.mark.parametrize("name", STUB_ATTACKS)
def test_untouched_stubs_score_nothing_whatever_the_kernel_does(guarded, unguarded, name):
    for reports in (guarded, unguarded):
        report = reports[f"{name}.ipynb"]
        assert report["status"] == "graded"
        assert report["score"] == 0, scores(report)


def test_objects_equal_to_anything_score_nothing(guarded):
    report = guarded["ex01_look_alike.ipynb"]
    assert report["score"] == 0, scores(report)


def test_a_patched_byte_counter_gains_nothing_over_the_plain_whole_file_reader(guarded):
    plain, patched = guarded["ex04_reads_whole_file.ipynb"], guarded["ex04_patched_counter.ipynb"]
    lost = {check["id"] for check in plain["checks"] if check["score"] == 0}
    assert lost == {"ex04-reads-little", "ex04-read-budget"}, scores(plain)
    assert patched["score"] == plain["score"], scores(patched)


def test_no_hidden_source_reaches_what_a_student_sees(attacks_folder, tmp_path):
    reports = tmp_path / "reports"
    with redirect_stdout(io.StringIO()) as printed:
        status = main(["grade", str(attacks_folder / "ex04_leaks_hidden_source.ipynb"), "--reports", str(reports),
                       "--format", "gradescope"])
    assert status == 0
    results = json.loads((reports / "results.json").read_text(encoding="utf-8"))
    student_visible = [results["output"], printed.getvalue()]
    student_visible += [test["output"] for test in results["tests"]]
    for text in student_visible:
        assert HIDDEN_SOURCE_MARK not in text and f"{NAME['ex04-block-boundaries']}:" not in text, text


# --------------------------------------------------------------------------- a class run of odd files

ODD_NAMES = {
    "gbk": b"ex01_\xd5\xc5\xc8\xfd.ipynb",  # a Chinese name as a Chinese-locale Windows zip stores it
    "long": ("ex01_" + "a b" * 80 + ".ipynb").encode(),  # 251 bytes, and a space that adds a hash to the report
    "in class.csv": b"class.csv/ex01_inside.ipynb",
    "report": b"ex01_a.ipynb",
    "report twin": b"ex01_a.json/ex01_b.ipynb",  # its report needs a folder where ex01_a.json is written
    "twin space": b"ex01_twin x.ipynb",
    "twin underscore": b"ex01_twin_x.ipynb",
    "formula": b"=1+2 ex01.ipynb",
    "at": b"@SUM(A1) ex01.ipynb",
    "escape": b"ex01_\x1b[2K\r\x1b[32mfake 14-14.ipynb",
}


@pytest.fixture(scope="module")
def odd_class(tmp_path_factory):
    folder = tmp_path_factory.mktemp("odd-class")
    good = with_answers("ex01", reference_answers("ex01"))
    for raw in ODD_NAMES.values():
        path = os.path.join(os.fsencode(folder), raw)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as file:
            json.dump(good, file)
    write_notebook(folder / "ex01_surrogate_thread.ipynb", attack("ex01_surrogate_thread"))
    reports = tmp_path_factory.mktemp("odd-reports")
    with redirect_stdout(io.StringIO()) as printed:
        status = main(["grade", str(folder), "--reports", str(reports), "--jobs", "2"])
    return status, reports, printed.getvalue()


def test_every_odd_file_gets_its_own_report_and_row(odd_class):
    status, reports, _ = odd_class
    files = [path for path in reports.rglob("*.json") if path.is_file()]  # a student folder may end in .json
    found = [json.loads(path.read_text(encoding="utf-8")) for path in files]
    assert status == 0, [(report["submission"], report["reason"]) for report in found if report["status"] == "error"]
    assert len(found) == len(ODD_NAMES) + 1, sorted(map(str, files))
    assert len({report["submission"] for report in found}) == len(found)
    full = [report for report in found if report["score"] == report["max_score"]]
    assert len(full) == len(ODD_NAMES), [(report["submission"], report["reason"]) for report in found]
    odd_thread = next(report for report in found if report["submission"] == "ex01_surrogate_thread.ipynb")
    assert odd_thread["status"] == "graded"  # a thread left running is the guard's business: 0, as before
    assert "\\udcff" in " ".join(odd_thread["guard_findings"])  # the lone surrogate, as an escape
    where = f"after check {NAME['ex01-turn-of-four']} called last_turn_length"
    assert odd_thread["guard_findings"][0].startswith(f"{where}: a thread the call started is still running after it "
                                                      "returned")
    assert f"(a thread a call left running) {where}" in odd_thread["reason"]
    with open(reports / "class.csv", newline="", encoding="utf-8") as file:
        rows = list(csv.reader(file))
    assert len(rows) == len(ODD_NAMES) + 2  # the header, then one row each


def test_no_cell_of_the_class_table_is_a_formula(odd_class):
    _, reports, _ = odd_class
    with open(reports / "class.csv", newline="", encoding="utf-8") as file:
        cells = [cell for row in csv.reader(file) for cell in row]
    assert not [cell for cell in cells if cell[:1] in ("=", "+", "-", "@", "\t", "\r")]
    assert any(cell.startswith("'=1+2") for cell in cells)


def test_no_control_character_reaches_the_terminal(odd_class):
    _, _, printed = odd_class
    assert not [character for character in printed if ord(character) < 32 and character != "\n"]
    assert "\x7f" not in printed and "\x9b" not in printed


# --------------------------------------------------------------------------- memory


def test_memory_held_in_a_memfd_counts_against_the_limit(tmp_path):
    if not sandbox.status(sandbox.AUTO).enabled:
        pytest.skip("the memory limit is the sandbox's")
    path = write_notebook(tmp_path / "ex01_memfd_hog.ipynb", attack("ex01_memfd_hog"))
    limits = sandbox.Limits(memory_bytes=512 << 20)
    report = grade_submission(path, SOURCES, options=GradingOptions(limits=limits))
    assert report["status"] == "graded", report["reason"]  # a grader fault also says "memory group"
    assert report["score"] == 0, scores(report)
    assert "memory" in (report["reason"] or ""), report["reason"]


# --------------------------------------------------------------------------- the kit's own answers (issue 18, part 4)

KIT_ANSWERS = ["s09_jsonl_transcript.lab", "s09_jsonl_transcript.crashlab.damage", "s09_jsonl_transcript.bench",
               "s09_jsonl_transcript.crashlab", "s09_jsonl_transcript.production"]
IMPORTS_THE_KIT = f'''
import importlib

_reachable = []
for _name in {KIT_ANSWERS!r}:
    try:
        importlib.import_module(_name)
    except ImportError:
        continue
    _reachable.append(_name)
if _reachable:
    raise RuntimeError(f"the kit's own answers are importable here: {{_reachable}}")
'''


def test_inside_the_sandbox_the_kits_own_answers_cannot_be_imported(tmp_path):
    if not sandbox.status(sandbox.AUTO).enabled:
        pytest.skip("the sandbox decides what can be imported")
    answers = reference_answers("ex04")
    answers["ex04-tail"] = IMPORTS_THE_KIT + answers["ex04-tail"]
    path = write_notebook(tmp_path / "ex04_imports_the_kit.ipynb", with_answers("ex04", answers))
    report = grade_submission(path, SOURCES)
    assert report["score"] == report["max_score"], scores(report)  # every import failed, so the answer ran
