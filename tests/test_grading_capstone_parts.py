"""The capstone's parts in the grader, without a kernel: which cells a grading runs (the local crash check in neither
kernel), how a source names its crash-graded answer and properties, how the verdict crosses to the check cells (a
read-only file, named by a variable only the trusted side gets), what a report shows of it, the refusal at once
where nothing can be recorded, and the local check's own pieces (the cell's text, the answer without fsync, the
figure). The notebooks graded end to end: tests/test_grading_capstone.py.
"""

import copy
import json
import linecache
import os
import stat
import sys
from pathlib import Path

import nbformat
import pytest
from test_grading_support import (
    CRASH_GRADED,
    IN_KERNEL,
    SOURCES,
    reference_answers,
    student_path,
    with_answers,
    write_notebook,
)

from s09_jsonl_transcript.grading import checks, crash, runner, sandbox
from s09_jsonl_transcript.grading.assemble import LOCAL_PLACEHOLDER, student_program, trusted_notebook
from s09_jsonl_transcript.grading.benchmark import benchmark_sources
from s09_jsonl_transcript.grading.cli import main
from s09_jsonl_transcript.grading.durability import RecorderUnavailable, runs
from s09_jsonl_transcript.grading.durability.cli import answer_cell
from s09_jsonl_transcript.grading.durability.local import cell_source_of, local_check, without_fsync
from s09_jsonl_transcript.grading.grader import GradingOptions, find_submissions, grade_many
from s09_jsonl_transcript.grading.reports import format_report
from s09_jsonl_transcript.grading.source import SourceError, is_local, load_source

SOURCE = SOURCES["ex06"]
ANSWER = SOURCE.crash_graded


def test_the_capstone_is_the_crash_graded_exercise():
    assert CRASH_GRADED == ["ex06"] and "ex06" not in IN_KERNEL
    assert ANSWER == "ex06-transcript" and SOURCE.max_score == 20
    assert {check.property: check.points for check in SOURCE.checks} == {
        "kept": 6, "whole": 4, "tail": 4, "closed": 3, "one-write": 3}


# --------------------------------------------------------------------------- which cells a grading runs


def test_the_local_crash_check_runs_in_neither_kernel_and_the_checks_keep_their_numbers():
    local = [cell for cell in SOURCE.notebook.cells if is_local(cell)]
    assert len(local) == 2
    program = student_program(SOURCE, reference_answers("ex06"))
    assert [label for label, _ in program] == ["setup-1", "setup-2", ANSWER]
    assert not any("local_check" in code for _, code in program)
    trusted = trusted_notebook(SOURCE)
    code_cells = [cell for cell in trusted.cells if cell.cell_type == "code"]
    placeholders = [cell for cell in code_cells if cell.source == LOCAL_PLACEHOLDER]
    assert len(placeholders) == 2 and all(cell.outputs == [] for cell in placeholders)
    for check in SOURCE.checks:  # nbval numbers code cells: each check is where the reference run had it
        assert f'crash_property("{check.property}"' in code_cells[check.cell_index].source


def _source_with(tmp_path, change) -> Path:
    notebook = copy.deepcopy(SOURCE.notebook)
    change(notebook)
    path = tmp_path / SOURCE.path.name
    nbformat.write(notebook, path)
    return path


@pytest.mark.parametrize("change, reason", [
    (lambda notebook: notebook.metadata["s09"].update(crash_graded="ex06-nothing"), "which is no answer cell"),
    (lambda notebook: notebook.metadata["s09"].pop("crash_graded"), "names no crash_graded answer"),
    (lambda notebook: next(cell for cell in notebook.cells if cell.metadata.get("s09", {}).get("property") == "tail")
     .metadata["s09"].update(property="kept"), "each once"),
])
def test_a_crash_graded_source_names_its_answer_and_each_property_once(tmp_path, change, reason):
    with pytest.raises(SourceError, match=reason):
        load_source(_source_with(tmp_path, change))


# --------------------------------------------------------------------------- how the verdict crosses


def _verdict(passed: bool, refused: str | None = None) -> dict:
    finding = {"id": "pl-p4-k", "property": "kept", "campaign": "power loss", "message": "event 1 lost · 丢了",
               "acknowledged": 1, "returned": "", "byte_map": "pl-p4-k\n[no file] · [没有文件]", "runs": [], "size": 0}
    return {"exercise": "ex06", "seed": 5, "recorder": "strace", "sandboxed": True, "size": "full",
            "refused": {"kind": "syscall", "row": "mmap-shared", "reason": refused} if refused else None,
            "counts": {"power loss": 10}, "stages": {"record": 0.5}, "session": {}, "campaigns": {},
            "properties": [{"id": name, "title": name, "passed": passed or name != "kept", "stopped": False,
                            "judged": 3, "findings": [finding] if name == "kept" and not passed else []}
                           for name in ("kept", "whole", "tail", "closed", "one-write")]}


@pytest.mark.parametrize("verdict, passed, words", [
    (_verdict(True), True, ""),
    (_verdict(False), False, "pl-p4-k\n[no file]"),
    (_verdict(False, refused="refused · 被拒绝: shared memory"), False, "your answer was refused"),
])
def test_a_check_reads_the_verdict_the_grader_left_and_calls_nothing(tmp_path, monkeypatch, verdict, passed, words):
    path = tmp_path / "verdict.json"
    path.write_text(json.dumps(verdict), encoding="utf-8")
    monkeypatch.setenv(checks.CRASH_VERDICT_VARIABLE, str(path))

    def never_called(*arguments):
        raise AssertionError("a check in a grading never calls the answer")

    result = checks.crash_property("kept", never_called, never_called)
    assert result.passed is passed and words in result.findings
    if not passed and verdict["refused"] is None:
        assert "replay <notebook> <id> --seed 5" in result.findings


def test_outside_a_grading_a_check_crash_tests_the_cell_that_defined_the_answer(monkeypatch):
    monkeypatch.delenv(checks.CRASH_VERDICT_VARIABLE, raising=False)
    monkeypatch.delenv(checks.SEED_VARIABLE, raising=False)
    cell = reference_answers("ex06")[ANSWER]
    namespace = {}
    linecache.cache["<answer cell>"] = (len(cell), None, cell.splitlines(True), "<answer cell>")  # as Jupyter does
    exec(compile(SOURCE.notebook.cells[2].source, "<given cell>", "exec"), namespace)  # noqa: S102 - the kit's own
    exec(compile(cell, "<answer cell>", "exec"), namespace)  # noqa: S102
    assert cell_source_of(namespace["append"], namespace["recover"]) == cell
    result = checks.crash_property("tail", namespace["append"], namespace["recover"])
    assert result.passed and result.property == "tail"
    exec(compile("def orphan(): pass", "<never kept>", "exec"), namespace)  # noqa: S102
    with pytest.raises(ValueError, match="cannot be found"):
        cell_source_of(namespace["orphan"])


def test_the_data_file_is_read_only_and_named_for_the_trusted_side_only(tmp_path):
    written = runner._write_data(tmp_path, {checks.CRASH_VERDICT_VARIABLE: "{}"})
    relative, host = written[checks.CRASH_VERDICT_VARIABLE]
    assert relative == "data/s09_crash_verdict.json" and host.read_text() == "{}"
    assert stat.S_IMODE(host.stat().st_mode) == 0o444
    (tmp_path / "other").mkdir()
    with pytest.raises(ValueError, match="must start with S09_"):
        runner._write_data(tmp_path / "other", {"VERDICT": "{}"})
    assert list((tmp_path / "other").iterdir()) == [], "bad input writes nothing"


def test_a_read_only_file_is_bound_read_only_in_the_sandbox(tmp_path):
    host = tmp_path / "verdict.json"
    host.write_text("{}")
    command = sandbox.build_command(["true"], scratch_files={}, slot=0, limits=sandbox.Limits(),
                                    read_only_files={"/tmp/grading/data/verdict.json": str(host)})
    try:
        at = command.argv.index("--ro-bind-data")
        assert command.argv[at - 2:at] == ["--perms", "0444"]
        assert command.argv[at + 2] == "/tmp/grading/data/verdict.json"
    finally:
        command.close()


# --------------------------------------------------------------------------- what a report shows


def _checks_entries(lost: set) -> list:
    return [{"id": check.id, "name": check.name, "score": 0 if check.property in lost else check.points,
             "max_score": check.points,
             "visibility": "visible", "feedback": "failed · 未通过: AssertionError: what the crash campaign found\nmore"
             if check.property in lost else "passed · 通过"} for check in SOURCE.checks]


def test_a_report_shows_the_findings_of_each_lost_property_and_how_to_replay_them():
    entries = _checks_entries({"kept"})
    settings = crash.CrashSettings(size=crash.REDUCED)
    part = crash.report_part(_verdict(False), "alice/ex06_your_own_transcript.ipynb", settings, entries, SOURCE)
    kept = next(entry for entry in entries if entry["id"] == "ex06-nothing-lost")
    assert kept["findings"] == ["event 1 lost · 丢了\npl-p4-k\n[no file] · [没有文件]"]
    assert kept["findings_found"] == "1"
    assert all("findings" not in entry for entry in entries if entry["id"] != "ex06-nothing-lost")
    assert part["replay"].endswith("replay ex06_your_own_transcript.ipynb <id> --seed 5 --size reduced")
    report = {"submission": "alice/ex06_your_own_transcript.ipynb", "exercise": "ex06", "status": "graded",
              "reason": None, "source": "instructor", "sandbox": "sandboxed", "score": 14, "max_score": 20,
              "checks": entries, "crash": part}
    text = format_report(report)
    assert "\n            pl-p4-k\n            [no file] · [没有文件]\n" in text and "more" not in text
    assert crash.report_part(_verdict(True), "a.ipynb", settings, _checks_entries(set()), SOURCE)["replay"] is None


def test_the_benchmark_keeps_its_class_of_ex01_to_ex05_unless_asked_for_the_capstone():
    assert [source.exercise for source in benchmark_sources(SOURCES, None)] == IN_KERNEL
    assert [source.exercise for source in benchmark_sources(SOURCES, "ex06")] == ["ex06"]


# --------------------------------------------------------------------------- refused at once


@pytest.fixture
def no_strace(monkeypatch, tmp_path):
    """A PATH with Python and bubblewrap's tools but no strace: the recorder's check runs for real."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for tool in ("bwrap", "prlimit", "setpriv"):
        found = sandbox.shutil.which(tool)
        if found:
            (folder / tool).symlink_to(found)
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:{folder}")
    runs.recorder_problem.cache_clear()
    yield
    runs.recorder_problem.cache_clear()


def test_where_nothing_can_be_recorded_the_capstone_is_refused_at_once(no_strace, tmp_path, capsys):
    classroom = tmp_path / "class"
    write_notebook(classroom / "alice" / SOURCE.path.name, with_answers("ex06", reference_answers("ex06")))
    write_notebook(classroom / "bob" / SOURCES["ex01"].path.name,
                   json.loads(student_path("ex01").read_text(encoding="utf-8")))
    graded = []
    with pytest.raises(RecorderUnavailable, match="ex06 refused: strace is not installed"):
        grade_many(find_submissions([classroom]), SOURCES, options=GradingOptions(sandbox="off"),
                   on_graded=lambda *done: graded.append(done))
    assert graded == [], "nothing is graded, so no student gets a silent 0"
    reports = tmp_path / "reports"
    assert main(["grade", str(classroom / "alice"), "--reports", str(reports), "--sandbox", "off"]) == 2
    said = capsys.readouterr().err
    assert "ex06 refused: strace is not installed" in said and "ex06 被拒绝" in said
    assert not reports.exists() or not list(reports.rglob("*.json"))


# --------------------------------------------------------------------------- the local check's pieces


def test_a_notebooks_crash_graded_answer_cell_is_what_a_replay_takes():
    notebook = json.loads(student_path("ex06", "zh").read_text(encoding="utf-8"))
    assert "def append(path, event)" in answer_cell(notebook)
    two = copy.deepcopy(notebook)
    del two["metadata"]["s09"]["crash_graded"]
    two["cells"].append(copy.deepcopy(next(cell for cell in notebook["cells"]
                                           if cell["metadata"].get("s09", {}).get("role") == "answer")))
    with pytest.raises(ValueError, match="found 2 crash-graded answer cells"):
        answer_cell(two)


def test_the_answer_without_fsync_survives_every_kill_and_loses_events_to_power_loss():
    verdict = local_check(without_fsync(reference_answers("ex06")[ANSWER]))
    assert verdict.lost() == {"kept"}
    assert verdict.campaigns["held kill"]["broken"] == 0 < verdict.campaigns["held kill"]["judged"]
    assert verdict.campaigns["power loss"]["broken"] > 0


def test_the_figure_draws_the_campaigns_and_a_strip_per_finding_shown(monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    from s09_jsonl_transcript.grading.durability.figure import draw

    verdict = local_check(without_fsync(reference_answers("ex06")[ANSWER]))
    figure = draw(verdict, per_property=2)
    assert len(figure.axes) == 1 + 2  # the campaigns, then the first two findings of "kept"
    assert "pl-" in figure.axes[1].get_title(loc="left")
    matplotlib.pyplot.close(figure)


def test_the_local_check_needs_no_strace(no_strace):
    verdict = local_check(reference_answers("ex06")[ANSWER], seed=3)
    assert verdict.recorder == "local" and verdict.problem is None and verdict.lost() == set()
    assert os.environ["PATH"].count(":") == 1  # the PATH without strace was in force


@pytest.mark.parametrize("language, page", [("en", "docs/grading.md"), ("zh", "docs/zh/grading.md")])
def test_the_docs_table_of_system_calls_is_the_engines(language, page):
    from s09_jsonl_transcript.grading.durability.calls import ROWS
    from s09_jsonl_transcript.grading.durability.cli import calls_table

    text = (Path(__file__).resolve().parent.parent / page).read_text(encoding="utf-8")
    start = text.index("<!-- generated: the capstone's system calls")
    block = text[text.index("\n", start) + 1:text.index("<!-- end generated: the capstone's system calls -->")]
    assert block.rstrip("\n") == calls_table(language)
    assert len(block.strip().splitlines()) == len(ROWS) + 2
