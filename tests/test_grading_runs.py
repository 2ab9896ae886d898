"""The grader end to end: real nbval runs, in two batches through the command line.

The class batch holds the reference solutions (full marks), the unmodified student notebooks
(zero on every check), a sample of the wrong answers in tests/grading_data/wrong_answers (each loses
exactly the checks its header names) and a sample of the wrong answers made by removing or swapping
one branch or guard of a reference answer (each loses exactly the checks it loses run in plain
Python, a hidden one among them). The tamper batch holds notebooks that try to score without solving
anything; each must score 0 and leave the grader standing.

The capstone (ex06, crash-graded) has a batch of its own, through the same grader, in
test_grading_capstone.py: this class holds the exercises whose checks call the answers (IN_KERNEL).

Every wrong answer and every branch removal is run in plain Python by test_grader_seeds.py; here the
real grader grades two of each kind per exercise, one in English and one in Chinese, under one seed
for the whole class, and must score them as plain Python does. Both batches hold Chinese submissions
(exercises/zh/, in a zh/ folder of the class, with the same file names as the English ones): every
Chinese reference and release, half the sample and four tamperings of different kinds. The grader
takes nothing from a submission but its answer cells' code:
test_a_chinese_submission_assembles_to_exactly_the_english_run proves, without a kernel, that each
Chinese wrong answer and tampering builds the very notebook its English twin builds.
"""

import csv
import json
import os
import re
import secrets

import psutil
import pytest
from test_grading_support import (
    IN_KERNEL,
    INSTRUCTOR,
    SOURCES,
    assert_same_program,
    branch_mutants,
    failed_checks,
    grade_folder,
    notebook_json,
    plain_run,
    reference_answers,
    reported_json,
    sandbox_processes,
    student_path,
    with_answers,
    write_notebook,
    wrong_answers,
)

from s09_jsonl_transcript.grading.assemble import answer_sources, build_notebook
from s09_jsonl_transcript.grading.benchmark import run_benchmark
from s09_jsonl_transcript.grading.grader import GradingOptions, grade_submission
from s09_jsonl_transcript.grading.probe import HIDDEN_FAILED
from s09_jsonl_transcript.grading.release import write_bundle
from s09_jsonl_transcript.grading.source import load_sources, pass_line

# The grader hands pytest a pipe (pass_fds) and the tampering uses SIGKILL: POSIX only.
pytestmark = [pytest.mark.slow,  # the grader's long suite: tests/test_grader_fast.py is its default-run part
              pytest.mark.skipif(os.name != "posix", reason="the grader runs on POSIX systems (Linux, macOS)")]

WRONG = wrong_answers()
SEED = secrets.randbelow(10**9)  # the class run's seed: the plain runs the sample is compared with use it too
# The sample graded here, per exercise: one wrong answer of the file in English, another in Chinese; likewise one
# branch removal in each language. Every one of them is run in plain Python by test_grader_seeds.py.
WRONG_SAMPLE = [(wrong, language) for exercise in IN_KERNEL
                for wrong, language in zip([wrong for wrong in WRONG if wrong.exercise == exercise][::3][:2],
                                           ("en", "zh"))]
MUTANT_SAMPLE = [(exercise, *mutant, language) for exercise in IN_KERNEL
                 for mutant, language in zip(branch_mutants(exercise)[::2][:2], ("zh", "en"))]


def assert_nothing_left_running(report: dict, pid=None) -> None:
    """After grading: no process of the run is left (the sandbox's users, or the unsandboxed kernel's pid)."""
    if report["sandbox"].startswith("sandboxed"):
        if os.geteuid() == 0:
            assert sandbox_processes() == [], "a process of the sandbox outlived its grading"
        return  # an unprivileged sandbox's PID namespace ended with it; its pids mean nothing out here
    assert pid is not None and (not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)


# --------------------------------------------------------------------------- the class batch


def wrong_answer_notebook(wrong, language: str = "en") -> dict:
    return with_answers(wrong.exercise, {**reference_answers(wrong.exercise), **wrong.answers}, language)


# Where each kind of submission sits in the class folder, by language (a report's label is this path).
PLACES = {"en": "", "zh": "zh/"}


@pytest.fixture(scope="module")
def class_reports(tmp_path_factory):
    folder = tmp_path_factory.mktemp("class")
    for exercise, source in SOURCES.items():
        if exercise not in IN_KERNEL:
            continue
        write_notebook(folder / "reference" / source.path.name, notebook_json(source.path))
        write_notebook(folder / "zh" / "reference" / source.path.name,
                       with_answers(exercise, reference_answers(exercise), "zh"))
        for language, place in PLACES.items():
            write_notebook(folder / place / "release" / source.path.name, notebook_json(student_path(exercise,
                                                                                                    language)))
    for wrong, language in WRONG_SAMPLE:
        write_notebook(folder / PLACES[language] / "wrong" / f"{wrong.name}.ipynb",
                       wrong_answer_notebook(wrong, language))
    for exercise, name, answers, _, language in MUTANT_SAMPLE:
        write_notebook(folder / PLACES[language] / "branch" / f"{name}.ipynb",
                       with_answers(exercise, {**reference_answers(exercise), **answers}, language))
    reports = tmp_path_factory.mktemp("class-reports")
    return grade_folder(folder, reports, "--seed", str(SEED)), reports


@pytest.mark.parametrize("language", PLACES)
@pytest.mark.parametrize("exercise", IN_KERNEL)
def test_the_reference_solution_scores_full_marks(class_reports, exercise, language):
    report = class_reports[0][f"{PLACES[language]}reference/{SOURCES[exercise].path.name}"]
    assert report["status"] == "graded", report["reason"]
    assert report["score"] == report["max_score"] == SOURCES[exercise].max_score, failed_checks(report)
    assert {check["visibility"] for check in report["checks"]} == {"visible", "hidden"}
    assert all(check["feedback"] == "passed · 通过" for check in report["checks"])


@pytest.mark.parametrize("language", PLACES)
@pytest.mark.parametrize("exercise", IN_KERNEL)
def test_the_unmodified_student_notebook_scores_zero_on_every_check(class_reports, exercise, language):
    report = class_reports[0][f"{PLACES[language]}release/{SOURCES[exercise].path.name}"]
    assert report["status"] == "graded", report["reason"]
    assert [check["score"] for check in report["checks"]] == [0] * len(SOURCES[exercise].checks)
    stub = "failed · 未通过: NotImplementedError: replace this line with your answer · 把这一行换成你的答案"
    expected = {"visible": stub, "hidden": HIDDEN_FAILED}  # a hidden check's feedback holds no kernel text
    assert all(check["feedback"] == expected[check["visibility"]] for check in report["checks"]), report["checks"]


@pytest.mark.parametrize("wrong, language", WRONG_SAMPLE,
                         ids=[f"{language}-{wrong.name}" for wrong, language in WRONG_SAMPLE])
def test_a_wrong_answer_loses_exactly_the_checks_it_should(class_reports, wrong, language):
    report = class_reports[0][f"{PLACES[language]}wrong/{wrong.name}.ipynb"]
    assert report["status"] == "graded", report["reason"]
    assert report["exercise"] == wrong.exercise
    assert failed_checks(report) == wrong.loses, (SEED, [(c["id"], c["feedback"]) for c in report["checks"]])
    assert report["score"] < report["max_score"]


@pytest.mark.parametrize("exercise, name, answers, words, language", MUTANT_SAMPLE,
                         ids=[f"{mutant[-1]}-{mutant[1]}" for mutant in MUTANT_SAMPLE])
def test_a_branch_removed_from_a_reference_answer_loses_what_it_loses_in_plain_python(class_reports, exercise,
                                                                                        name, answers, words,
                                                                                        language):
    report = class_reports[0][f"{PLACES[language]}branch/{name}.ipynb"]
    assert report["status"] == "graded", report["reason"]
    plain = plain_run(exercise, {**reference_answers(exercise), **answers}, SEED)
    assert failed_checks(report) == plain, (words, SEED, [(c["id"], c["feedback"]) for c in report["checks"]])
    hidden = {check.id for check in SOURCES[exercise].checks if check.hidden}
    assert plain & hidden and report["score"] < report["max_score"], words


def test_the_sample_holds_every_exercise_in_both_languages():
    for sample in ([(wrong.exercise, language) for wrong, language in WRONG_SAMPLE],
                   [(exercise, language) for exercise, *_, language in MUTANT_SAMPLE]):
        assert sorted(sample) == sorted((exercise, language) for exercise in IN_KERNEL for language in PLACES)


@pytest.mark.parametrize("wrong", WRONG, ids=lambda wrong: wrong.name)
def test_a_chinese_submission_assembles_to_exactly_the_english_run(wrong):
    """What the grader runs for a Chinese wrong answer is what it runs for the English one (so it scores the same)."""
    source = SOURCES[wrong.exercise]
    built = {language: build_notebook(source, answer_sources(wrong_answer_notebook(wrong, language), source))
             for language in PLACES}
    assert built["zh"] == built["en"]


def test_every_exercise_has_at_least_five_wrong_answers():
    counts = {exercise: sum(wrong.exercise == exercise for wrong in WRONG) for exercise in SOURCES}
    assert all(count >= 5 for count in counts.values()), counts


def test_the_class_csv_has_one_row_per_submission(class_reports):
    reports, folder = class_reports
    with open(folder / "class.csv", newline="", encoding="utf-8") as file:
        rows = list(csv.DictReader(file))
    assert sorted(row["submission"] for row in rows) == sorted(reports)
    for row in rows:
        report = reports[row["submission"]]
        assert int(row["score"]) == report["score"]
        assert [int(row[check["name"]]) for check in report["checks"]] == [check["score"] for check in report["checks"]]


# --------------------------------------------------------------------------- the tamper batch
# Every tampered notebook starts from the unmodified student notebook of exercise 1, whose
# answers are stubs: whatever the tampering does, the score must stay 0.

TAMPER_EXERCISE = "ex01"


def student_notebook(language: str = "en") -> dict:
    return notebook_json(student_path(TAMPER_EXERCISE, language))


def cells_with_role(notebook: dict, role: str) -> list:
    return [cell for cell in notebook["cells"] if cell.get("metadata", {}).get("s09", {}).get("role") == role]


def pass_lines() -> list:
    return [pass_line(check.name, check.points) for check in SOURCES[TAMPER_EXERCISE].checks]


def edited_expected_outputs(language: str = "en") -> dict:
    notebook = student_notebook(language)
    for number, cell in enumerate(cells_with_role(notebook, "check"), start=1):
        cell["execution_count"] = number
        cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": pass_lines()[number - 1] + "\n"}]
    return notebook


def checks_replaced_by_pass_lines(language: str = "en") -> dict:
    notebook = edited_expected_outputs(language)
    for line, cell in zip(pass_lines(), cells_with_role(notebook, "check")):
        cell["source"] = f"print({line!r})"
    return notebook


def checks_deleted(language: str = "en") -> dict:
    notebook = student_notebook(language)
    notebook["cells"] = [cell for cell in notebook["cells"] if cell not in cells_with_role(notebook, "check")]
    return notebook


def answers_print_pass_lines(language: str = "en") -> dict:
    prints = "\n".join(f"print({line!r})" for line in pass_lines())
    fake = (f"def last_turn_length(events):\n    {prints.replace(chr(10), chr(10) + '    ')}\n\n\n"
            f"def replay_last_turn(transcript):\n    {prints.replace(chr(10), chr(10) + '    ')}\n\n\n{prints}\n")
    return with_answers(TAMPER_EXERCISE, {"ex01-turn-length": fake, "ex01-replay": prints}, language)


def nbval_markers_and_tags(language: str = "en") -> dict:
    notebook = student_notebook(language)
    markers = "# NBVAL_SKIP\n#NBVAL_IGNORE_OUTPUT\n  # NBVAL_RAISES_EXCEPTION\n# nbval_check_output\n"
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            cell["source"] = markers + "".join(cell["source"])
            cell["metadata"]["tags"] = ["nbval-skip", "nbval-ignore-output", "raises-exception",
                                        "nbval-raises-exception"]
    return notebook


def exits_with(statement: str, language: str = "en") -> dict:
    body = f"def last_turn_length(events):\n    {statement}\n\n\ndef replay_last_turn(transcript):\n    {statement}\n"
    return with_answers(TAMPER_EXERCISE, {"ex01-turn-length": body}, language)


def top_level(code: str, language: str = "en") -> dict:
    return with_answers(TAMPER_EXERCISE, {"ex01-turn-length": code}, language)


FORGE_PROBE_LINES = '''
import json, os, stat
for fd in range(3, 256):
    try:
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            continue
        for cell in range(40):
            line = json.dumps({"kind": "cell", "cell": cell, "outcome": "passed", "feedback": "passed"})
            os.write(fd, (line + "\\n").encode())
    except OSError:
        pass
'''


SPY = """import json, os
_seen = json.dumps({"files": sorted(os.listdir(".")), "pid": os.getpid()})


def last_turn_length(events):
    raise AssertionError("SEEN " + _seen)
"""


def tampered(language: str = "en") -> dict:
    """Every tampered notebook, by name, built from the student notebook in language."""
    return {
        "edited_expected_outputs": edited_expected_outputs(language),
        "checks_replaced_by_pass_lines": checks_replaced_by_pass_lines(language),
        "checks_deleted": checks_deleted(language),
        "answers_print_pass_lines": answers_print_pass_lines(language),
        "nbval_markers_and_tags": nbval_markers_and_tags(language),
        "sys_exit": exits_with("import sys; sys.exit(0)", language),
        "os_exit": exits_with("import os; os._exit(0)", language),
        "infinite_loop": exits_with("while True: pass", language),
        "kernel_crash": top_level("import ctypes\nctypes.string_at(0)\n", language),
        "forged_probe_lines": top_level(FORGE_PROBE_LINES, language),
        "hidden_tracebacks": top_level("get_ipython().showtraceback = lambda *args, **kwargs: None\n", language),
        "kills_pytest": top_level("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n", language),
        "spy": top_level(SPY, language),
    }


TAMPERS = ["edited_expected_outputs", "checks_replaced_by_pass_lines", "checks_deleted",
           "answers_print_pass_lines", "nbval_markers_and_tags", "sys_exit", "os_exit", "infinite_loop",
           "kernel_crash", "forged_probe_lines", "hidden_tracebacks", "kills_pytest", "spy"]
# Graded in Chinese too, one of each kind: expected outputs, checks, answers printing pass lines, a killed run.
CHINESE_TAMPERS = ["edited_expected_outputs", "checks_replaced_by_pass_lines", "answers_print_pass_lines",
                   "kills_pytest"]


@pytest.fixture(scope="module")
def tamper_reports(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tampered")
    for name, notebook in tampered().items():
        write_notebook(folder / f"{TAMPER_EXERCISE}_{name}.ipynb", notebook)
    for name, notebook in tampered("zh").items():
        if name in CHINESE_TAMPERS:
            write_notebook(folder / "zh" / f"{TAMPER_EXERCISE}_{name}.ipynb", notebook)
    reports = grade_folder(folder, tmp_path_factory.mktemp("tamper-reports"), "--cell-timeout", "3")
    return {label.replace(f"{TAMPER_EXERCISE}_", "")[:-len(".ipynb")]: report for label, report in reports.items()}


TAMPER_RUNS = TAMPERS + [f"zh/{name}" for name in CHINESE_TAMPERS]


@pytest.mark.parametrize("tamper", TAMPER_RUNS)
def test_tampering_earns_nothing(tamper_reports, tamper):
    report = tamper_reports[tamper]
    assert report["status"] == "graded", report["reason"]
    assert report["score"] == 0, [(c["name"], c["feedback"]) for c in report["checks"] if c["score"]]
    assert len(report["checks"]) == len(SOURCES[TAMPER_EXERCISE].checks), "hidden checks must still count"


@pytest.mark.parametrize("tamper", TAMPERS)
def test_a_chinese_tampering_assembles_to_exactly_the_english_run(tamper):
    source = SOURCES[TAMPER_EXERCISE]
    english, chinese = tampered()[tamper], tampered("zh")[tamper]
    assert_same_program(build_notebook(source, answer_sources(english, source)),
                        build_notebook(source, answer_sources(chinese, source)))


# The answer cell's top level ended the student's kernel (or ran past the call's limit): its names are bound in the
# trusted kernel all the same, so each check calls, and says why it was not called.
NOT_CALLED = re.compile(r"^not run · 未运行: not called: "
                        r"(the student's kernel died|an earlier call ran longer than 3 s)")


@pytest.mark.parametrize("tamper, feedback", [
    # The answer cell runs in the student's kernel: with this test's 3 s cell limit, its death is seen either
    # by the heartbeat or by the call's own time limit, whichever comes first. The loop meets the call's
    # limit, 3 s, never the trusted cell's (the notebook's), however busy the machine.
    ("os_exit", re.compile(r"^(failed · 未通过: the student's kernel died"
                           r"|timed out · 超时: the call ran longer than 3 s)")),
    ("infinite_loop", "timed out · 超时: the call ran longer than 3 s"),
    # Sabotage at the top level of an answer cell reaches only the student's kernel: the checks run in the
    # trusted kernel, which says that the student's kernel could not be called.
    ("kernel_crash", NOT_CALLED),
    # Hiding tracebacks replaces the shell's showtraceback: the guard in the student's kernel names it.
    ("hidden_tracebacks", "tampering detected"),
    # Its parent in the student's sandbox is not pytest, which it cannot see: the cell goes on and defines nothing.
    ("kills_pytest", "failed · 未通过: NameError: name 'last_turn_length' is not defined"),
    ("zh/kills_pytest", "failed · 未通过: NameError: name 'last_turn_length' is not defined"),
])
def test_a_sabotaged_run_explains_what_happened(tamper_reports, tamper, feedback):
    said = tamper_reports[tamper]["checks"][0]["feedback"]
    assert feedback.search(said) if isinstance(feedback, re.Pattern) else feedback in said, said


def test_the_kernel_runs_in_an_empty_folder_and_is_gone_afterwards(tamper_reports):
    report = tamper_reports["spy"]
    assert report["status"] == "graded"
    seen = reported_json(report, "ex01-turn-of-four", "SEEN")
    # the student's kernel keeps its own IPython profile there (IPYTHONDIR), nothing of the grading
    assert [name for name in seen["files"] if name != "ipython"] == [], \
        "the kernel's folder must not hold the notebook or its expected outputs"
    assert_nothing_left_running(report, seen["pid"])


def test_the_overall_time_limit_stops_a_notebook_and_its_kernel(tmp_path):
    record = tmp_path / "seen.json"
    sleeper = (f"import json, os, time\ntry:\n    open({str(record)!r}, 'w').write(json.dumps(os.getpid()))\n"
               "except OSError:\n    pass  # a sandboxed kernel cannot reach the grader's folders\ntime.sleep(600)\n")
    path = write_notebook(tmp_path / "sleeper.ipynb", top_level(sleeper))
    report = grade_submission(path, SOURCES, options=GradingOptions(cell_timeout=300, total_timeout=8))
    assert report["status"] == "graded" and report["score"] == 0
    assert all("overall time limit" in check["feedback"] for check in report["checks"]), report["checks"]
    assert report["seconds"] < 60
    assert_nothing_left_running(report, json.loads(record.read_text()) if record.exists() else None)


# --------------------------------------------------------------------------- self-check copies


def test_a_student_bundle_self_checks_the_visible_checks_only(tmp_path):
    bundle = tmp_path / "bundle"
    write_bundle(INSTRUCTOR, bundle)
    selfcheck = load_sources(bundle / "selfcheck")
    exercise = "ex04"
    source = SOURCES[exercise]
    solved = write_notebook(tmp_path / source.path.name, with_answers(exercise, reference_answers(exercise)))
    report = grade_submission(solved, selfcheck)
    visible = [check for check in source.checks if not check.hidden]
    assert report["source"] == "selfcheck"
    assert [check["name"] for check in report["checks"]] == [check.name for check in visible]
    assert report["score"] == report["max_score"] == sum(check.points for check in visible)


def test_a_student_self_checks_the_chinese_notebook_from_the_command_line(tmp_path, capsys):
    """The README's self-check, run on the committed Chinese notebook: graded like the English one, said in both."""
    from s09_jsonl_transcript.grading.cli import main

    path = student_path("ex01", "zh")
    assert main(["grade", str(path), "--reports", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"total · 总分: 0/{SOURCES['ex01'].max_score}" in out and "把这一行换成你的答案" in out
    report = json.loads((tmp_path / "ex01_last_turn_replay.json").read_text(encoding="utf-8"))
    assert report["exercise"] == "ex01" and report["status"] == "graded"
    assert len(report["checks"]) == len(SOURCES["ex01"].checks)


def test_the_benchmark_grades_copies_of_the_reference_solutions():
    result = run_benchmark({"ex04": SOURCES["ex04"]}, copies=2, jobs=2)
    assert result["submissions"] == 2 and result["all_full_marks"]
    assert 0 < result["mean_submission_seconds"] <= result["slowest_submission_seconds"] <= result["folder_seconds"]
