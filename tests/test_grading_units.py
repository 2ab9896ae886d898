"""The grader's parts without a kernel: sources, release, assembly, bad input, reports, command line."""

import copy
import csv
import io
import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from s09_jsonl_transcript.grading import assemble, cli, release
from s09_jsonl_transcript.grading.assemble import (
    SubmissionError,
    answer_sources,
    build_notebook,
    exercise_of,
    read_submission,
    strip_nbval_markers,
)
from s09_jsonl_transcript.grading.checks import CountingFile
from s09_jsonl_transcript.grading.grader import find_submissions, grade_submission
from s09_jsonl_transcript.grading.reports import ProgressBar, format_report, report_names, write_class_csv
from s09_jsonl_transcript.grading.source import (
    BEGIN_SOLUTION,
    END_SOLUTION,
    SourceError,
    load_source,
    load_sources,
    pass_line,
)
from s09_jsonl_transcript.grading.words import SEPARATOR
from s09_jsonl_transcript.text.bilingual import has_chinese, same_code

ROOT = Path(__file__).resolve().parent.parent
INSTRUCTOR = ROOT / "exercises" / "instructor"
SOURCES = load_sources(INSTRUCTOR)


def solution_only_lines(source) -> set:
    """Lines of the reference solutions that appear nowhere else in the public cells of the source.

    None of them may reach a student: their presence would mean a solution leaked.
    """
    solution, public = set(), set()
    for cell in source.notebook.cells:
        inside = False
        for line in cell.source.split("\n"):
            if line.strip() in (BEGIN_SOLUTION, END_SOLUTION):
                inside = line.strip() == BEGIN_SOLUTION
            elif inside:
                solution.add(line.strip())
            elif not cell.metadata.get("s09", {}).get("hidden"):
                public.add(line.strip())
    lines = {line for line in solution - public if len(line) > 8}
    assert len(lines) >= 3, f"{source.exercise}: too few distinctive solution lines to test for leaks"
    return lines


def stripped_lines(path: Path) -> set:
    """Every line of a released file, stripped; for a notebook, the lines of its cells' sources."""
    if path.suffix != ".ipynb":
        return {line.strip() for line in path.read_text(encoding="utf-8").split("\n")}
    notebook = nbformat.read(path, as_version=4)
    return {line.strip() for cell in notebook.cells for line in cell.source.split("\n")}


def as_json(notebook) -> dict:
    return json.loads(nbformat.writes(notebook))


def write(path: Path, notebook: dict) -> Path:
    path.write_text(json.dumps(notebook), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- sources


def test_the_exercises_have_sources():
    assert sorted(SOURCES) == ["ex01", "ex02", "ex03", "ex04", "ex05", "ex06"]
    for source in SOURCES.values():
        # the capstone's checks are its crash properties, all visible: the rest have hidden checks too
        assert any(check.hidden for check in source.checks) == (source.crash_graded is None)
        assert any(not check.hidden for check in source.checks)
        numbers = range(1, len(source.checks) + 1)
        assert [check.name for check in source.checks] == [f"{source.exercise}.{n}" for n in numbers]


@pytest.mark.parametrize("exercise", sorted(SOURCES))
def test_each_intro_states_the_points_the_checks_give(exercise):
    source = SOURCES[exercise]
    intro = source.notebook.cells[0].source
    points = re.search(r"\*\*Points:\*\* (\d+) from the visible checks(?:.*?, (\d+) more)?", intro, re.S)
    visible, hidden = (int(found or 0) for found in points.groups())
    assert visible == sum(check.points for check in source.checks if not check.hidden)
    assert hidden == sum(check.points for check in source.checks if check.hidden)


def test_a_pass_line_counts_its_points_in_both_languages():
    assert pass_line("ex01.2", 2) == "ex01.2 passed (2 points) · 通过（2 分）"
    assert pass_line("ex04.7", 1) == "ex04.7 passed (1 point) · 通过（1 分）"


def test_a_source_saved_without_its_pass_lines_is_refused(tmp_path):
    notebook = copy.deepcopy(SOURCES["ex01"].notebook)
    check = next(cell for cell in notebook.cells if cell.metadata.get("s09", {}).get("role") == "check")
    check.outputs = []
    path = tmp_path / "ex01_stale.ipynb"
    nbformat.write(notebook, path)
    with pytest.raises(SourceError, match="was not saved passing"):
        load_source(path)


def test_a_source_with_a_repeated_cell_id_is_refused(tmp_path):
    notebook = json.loads(SOURCES["ex02"].path.read_text(encoding="utf-8"))
    notebook["cells"][2]["id"] = notebook["cells"][1]["id"]
    path = write(tmp_path / "ex02_twice.ipynb", notebook)
    with pytest.raises(SourceError, match="missing or repeated: ex02-setup"):
        load_source(path)


def with_check_changed(tmp_path, name, change) -> Path:
    """A copy of ex04's source in which change(metadata, cell) changed the check named name."""
    notebook = copy.deepcopy(SOURCES["ex04"].notebook)
    cell = next(cell for cell in notebook.cells if cell.metadata.get("s09", {}).get("name") == name)
    change(cell.metadata["s09"], cell)
    path = tmp_path / "ex04_changed.ipynb"
    nbformat.write(notebook, path)
    return path


@pytest.mark.parametrize("name, change, reason", [
    ("ex04.7", lambda role, cell: role.pop("id"), "needs a stable id"),
    ("ex04.7", lambda role, cell: role.update(id="ex04.7"), "needs a stable id"),  # a position is not an id
    ("ex04.7", lambda role, cell: role.update(id="ex04-read-budget"), "check id names used twice: ex04-read-budget"),
    ("ex04.5", lambda role, cell: setattr(cell, "source", cell.source.replace(
        'check_random("ex04-block-boundaries")', 'check_random("ex04-read-budget")')),
     r"draws its inputs with check_random\('ex04-block-boundaries'\)"),
    ("ex04.5", lambda role, cell: setattr(cell, "source", cell.source.replace(
        'check_random("ex04-block-boundaries")', 'check_random(NAME)')), "and only so"),
], ids=["no id", "a position", "twice", "another's inputs", "a name not given"])
def test_a_check_needs_a_stable_id_of_its_own_and_draws_by_it(tmp_path, name, change, reason):
    with pytest.raises(SourceError, match=reason):
        load_source(with_check_changed(tmp_path, name, change))


def test_every_check_has_a_stable_id_that_names_what_it_checks():
    ids = [check.id for source in SOURCES.values() for check in source.checks]
    assert len(set(ids)) == len(ids) and all(re.match(r"^ex\d\d(-[a-z0-9]+)+$", check_id) for check_id in ids)


# --------------------------------------------------------------------------- release


class FakeClient:
    """Stands in for nbclient's NotebookClient: the outputs a kernel would give, chosen by the test."""

    outputs = None  # check name -> the outputs to give that check's cell

    def __init__(self, notebook, **options):
        self.notebook = notebook

    def execute(self):
        for cell in self.notebook.cells:
            role = cell.metadata.get("s09", {})
            if cell.cell_type == "code":
                cell.execution_count = 1
                cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)
                                for text in FakeClient.outputs(role)]


def test_refresh_joins_a_pass_line_sent_in_pieces(tmp_path, monkeypatch):
    """On a busy machine a kernel can send one line as two stream outputs: saved apart, the source was broken."""
    for source in SOURCES.values():
        (tmp_path / source.path.name).write_bytes(source.path.read_bytes())
    monkeypatch.setattr(release, "NotebookClient", FakeClient)
    monkeypatch.setattr(FakeClient, "outputs", staticmethod(
        lambda role: [] if role.get("role") != "check" else [pass_line(role["name"], role["points"])[:9],
                                                             pass_line(role["name"], role["points"])[9:] + "\n"]))
    release.refresh(tmp_path)
    assert {name: source.max_score for name, source in load_sources(tmp_path).items()} == {
        name: source.max_score for name, source in SOURCES.items()}


def test_refresh_replaces_a_source_only_when_every_check_passed(tmp_path, monkeypatch):
    for source in SOURCES.values():
        (tmp_path / source.path.name).write_bytes(source.path.read_bytes())
    before = {path.name: path.read_bytes() for path in tmp_path.iterdir()}
    monkeypatch.setattr(release, "NotebookClient", FakeClient)
    monkeypatch.setattr(FakeClient, "outputs", staticmethod(
        lambda role: ["a line of the check's own\n", pass_line(role["name"], role["points"]) + "\n"]
        if role.get("role") == "check" else []))
    with pytest.raises(SourceError, match="left as it was: .*was not saved passing"):
        release.refresh(tmp_path)
    assert {path.name: path.read_bytes() for path in tmp_path.iterdir()} == before, "nothing written, nothing left"


def test_the_committed_student_notebooks_are_what_release_writes():
    assert release.stale_notebooks(INSTRUCTOR, INSTRUCTOR.parent) == []
    assert release.translation_problems(INSTRUCTOR) == []


def test_release_check_notices_a_stale_chinese_notebook(tmp_path, capsys):
    release.release(INSTRUCTOR, tmp_path)
    assert cli.main(["release", "--check", "--out", str(tmp_path)]) == 0
    chinese = tmp_path / "zh" / "ex02_corruption_boundary.ipynb"
    chinese.write_text(chinese.read_text(encoding="utf-8").replace("损坏边界", "损坏的边界"), encoding="utf-8")
    assert cli.main(["release", "--check", "--out", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "zh/ex02_corruption_boundary.ipynb differs" in out
    assert "ex02_corruption_boundary: cell ex02-intro: the Chinese notebook is stale" in out


def kit_copy(tmp_path: Path) -> Path:
    """A copy of exercises/ (instructor sources and Chinese text) to release from; returns its instructor folder."""
    exercises = tmp_path / "exercises"
    (exercises / "zh").mkdir(parents=True)
    for path in INSTRUCTOR.glob("ex*.ipynb"):
        (exercises / "instructor").mkdir(exist_ok=True)
        (exercises / "instructor" / path.name).write_bytes(path.read_bytes())
    (exercises / "zh" / "text").mkdir()
    for path in release.text_folder_of(INSTRUCTOR).glob("*.md"):
        (exercises / "zh" / "text" / path.name).write_bytes(path.read_bytes())
    return exercises / "instructor"


def test_a_changed_english_cell_makes_its_translation_todo_until_it_is_accepted(tmp_path, capsys):
    source = kit_copy(tmp_path)
    assert cli.main(["release", "--source", str(source)]) == 0
    assert cli.main(["release", "--check", "--source", str(source)]) == 0
    path = source / "ex01_last_turn_replay.ipynb"
    notebook = json.loads(path.read_text(encoding="utf-8"))
    recap = next(cell for cell in notebook["cells"] if cell["id"] == "ex01-recap")
    recap["source"] = "".join(recap["source"]) + "\n- One more point."
    path.write_text(json.dumps(notebook), encoding="utf-8")
    capsys.readouterr()
    assert cli.main(["release", "--check", "--source", str(source)]) == 1
    assert "ex01_last_turn_replay.ipynb differs" in capsys.readouterr().out
    assert cli.main(["release", "--source", str(source)]) == 1  # writes both languages, then says what is left
    out = capsys.readouterr().out
    assert "ex01_last_turn_replay: cell ex01-recap: the Chinese text is marked todo" in out
    text = (source.parent / "zh" / "text" / "ex01_last_turn_replay.md").read_text(encoding="utf-8")
    assert "<!-- cell ex01-recap | en todo -->\n## 小结" in text, "the old Chinese stays, marked todo"
    assert text.startswith("<!-- The Chinese text of exercises/zh/ex01_last_turn_replay.ipynb")
    assert cli.main(["release", "--check", "--source", str(source)]) == 1
    assert "marked todo" in capsys.readouterr().out
    assert cli.main(["accept", "--source", str(source)]) == 0  # the translator has updated the section
    assert cli.main(["release", "--check", "--source", str(source)]) == 0


def test_release_check_notices_an_edited_student_notebook(tmp_path, capsys):
    release.release(INSTRUCTOR, tmp_path)
    edited = tmp_path / "ex03_sharding.ipynb"
    edited.write_text(edited.read_text(encoding="utf-8").replace("max_lines", "max_rows"), encoding="utf-8")
    assert cli.main(["release", "--check", "--out", str(tmp_path)]) == 1
    assert "ex03_sharding.ipynb differs" in capsys.readouterr().out
    assert not (tmp_path / "zh" / "text").exists(), "a release elsewhere leaves the Chinese text where it is"


@pytest.mark.parametrize("language", ["en", "zh"])
@pytest.mark.parametrize("exercise", sorted(SOURCES))
def test_a_student_notebook_has_stubs_no_solutions_no_hidden_checks_no_outputs(exercise, language):
    source = SOURCES[exercise]
    path = (INSTRUCTOR.parent if language == "en" else INSTRUCTOR.parent / "zh") / source.path.name
    text = path.read_text(encoding="utf-8")
    student = nbformat.reads(text, as_version=4)
    assert not solution_only_lines(source) & stripped_lines(path)
    assert BEGIN_SOLUTION not in text and END_SOLUTION not in text
    hidden = {check.name for check in source.checks if check.hidden}
    assert not any(name in text for name in hidden)
    code = [cell for cell in student.cells if cell.cell_type == "code"]
    assert all(cell.outputs == [] and cell.execution_count is None for cell in code)
    answer_ids = {answer.cell_id for answer in source.answers}
    answers = [cell for cell in student.cells if cell.id in answer_ids]
    assert len(answers) == len(source.answers)
    assert all(release.STUB in cell.source for cell in answers)
    assert student.metadata["s09"]["exercise"] == exercise
    assert student.metadata["s09"].get("language", "en") == language


def test_stubs_keep_the_indentation_and_refuse_unbalanced_markers():
    code = "def f():\n    x = 1\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION\n"
    assert release.stub_solutions(code) == f"def f():\n    x = 1\n    {release.STUB}\n"
    for broken in ("### BEGIN SOLUTION\nx = 1\n", "x = 1\n### END SOLUTION\n", "x = 1\n"):
        with pytest.raises(SourceError):
            release.stub_solutions(broken)


def test_a_student_bundle_holds_neither_solutions_nor_hidden_checks(tmp_path):
    written = release.write_bundle(INSTRUCTOR, tmp_path / "bundle", with_kit=False)  # the wheel: test_packaging.py
    assert {path.relative_to(tmp_path / "bundle").as_posix() for path in written} == (
        {source.path.name for source in SOURCES.values()} | {f"zh/{source.path.name}" for source in SOURCES.values()}
        | {f"selfcheck/{source.path.name}" for source in SOURCES.values()} | {"README.md"})
    for path in written:
        text = path.read_text(encoding="utf-8")
        assert "Hidden checks (instructor copy only)" not in text
        for source in SOURCES.values():
            hidden = [check for check in source.checks if check.hidden]
            assert not any(pass_line(check.name, check.points) in text for check in hidden), path
            if path.name == source.path.name:
                assert not solution_only_lines(source) & stripped_lines(path), path
    selfcheck = load_sources(tmp_path / "bundle" / "selfcheck")
    assert all(source.kind == "selfcheck" and not any(c.hidden for c in source.checks) for source in selfcheck.values())


# --------------------------------------------------------------------------- assembly


def test_only_the_answer_code_is_taken_from_a_submission():
    source = SOURCES["ex01"]
    submission = as_json(source.notebook)
    submission["metadata"]["kernelspec"] = {"name": "evil", "display_name": "evil", "language": "python"}
    for cell in submission["cells"]:
        cell["metadata"]["tags"] = ["nbval-skip"]
        if cell["cell_type"] == "code":
            cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "anything\n"}]
            if cell["metadata"].get("s09", {}).get("role") != "answer":
                cell["source"] = "print('edited')"
            else:
                cell["source"] = "# NBVAL_SKIP\ndef answer():\n    return 42\n"
    submission["cells"].append({"cell_type": "code", "id": "extra", "metadata": {}, "outputs": [],
                                "execution_count": None, "source": "print('extra cell')"})
    built = build_notebook(source, answer_sources(submission, source))
    answer_positions = {answer.cell_index for answer in source.answers}
    assert len(built.cells) == len(source.notebook.cells)
    for position, (got, pristine) in enumerate(zip(built.cells, source.notebook.cells)):
        if position in answer_positions:
            assert got.source == "def answer():\n    return 42\n"
            assert got.metadata == pristine.metadata and got.get("outputs") == pristine.get("outputs")
        else:
            assert got == pristine
    assert built.metadata == source.notebook.metadata


def test_answers_are_found_by_metadata_when_a_notebook_has_no_cell_ids():
    source = SOURCES["ex05"]
    submission = as_json(source.notebook)
    for cell in submission["cells"]:
        cell.pop("id")
    assert set(answer_sources(submission, source)) == {answer.name for answer in source.answers}


@pytest.mark.parametrize("change, reason", [
    (lambda cells, answer: cells.remove(answer), "is missing"),
    (lambda cells, answer: cells.append(copy.deepcopy(answer)), "appears 2 times"),
    (lambda cells, answer: answer.update(cell_type="markdown"), "no longer a code cell"),
    (lambda cells, answer: answer.update(source=7), "malformed source"),
])
def test_damaged_answer_cells_are_refused_with_a_reason(change, reason):
    source = SOURCES["ex02"]
    submission = as_json(source.notebook)
    answer = next(cell for cell in submission["cells"] if cell["id"] == source.answers[0].cell_id)
    change(submission["cells"], answer)
    with pytest.raises(SubmissionError, match=reason):
        answer_sources(submission, source)


def test_nbval_markers_are_stripped_from_answer_code_and_nothing_else():
    code = ("# NBVAL_SKIP\n#NBVAL_IGNORE_OUTPUT\n    ## nbval_raises_exception\n# PYTEST_VALIDATE_IGNORE_OUTPUT\n"
            "x = 1  # a comment\n# keep me\ny = '# NBVAL_SKIP inside a string'\n")
    assert strip_nbval_markers(code) == "x = 1  # a comment\n# keep me\ny = '# NBVAL_SKIP inside a string'\n"


def test_the_exercise_comes_from_the_metadata_then_the_file_name():
    assert exercise_of({"metadata": {"s09": {"exercise": "ex03"}}}, "ex01_anything.ipynb") == "ex03"
    assert exercise_of({"metadata": {}}, "ex04_tail_reader.ipynb") == "ex04"
    assert exercise_of({"metadata": {"s09": {"exercise": "../x"}}}, "homework.ipynb") is None


# --------------------------------------------------------------------------- bad input scores 0


@pytest.mark.parametrize("name, content, reason", [
    ("ex01_notes.txt", b"hello", "not an .ipynb file"),
    ("ex01_broken.ipynb", b'{"cells": [', "invalid JSON at line 1"),
    ("ex01_list.ipynb", b"[1, 2, 3]", "no list of cells"),
    ("ex01_binary.ipynb", b"\x89PNG\r\n\x1a\n\xff\xfe", "not UTF-8"),
    ("ex01_old.ipynb", b'{"cells": [], "nbformat": 3}', "format 4"),
    ("ex01_empty.ipynb", b'{"cells": [], "nbformat": 4, "nbformat_minor": 5, "metadata": {}}', "is missing"),
    ("homework.ipynb", b'{"cells": [], "nbformat": 4, "nbformat_minor": 5, "metadata": {}}',
     "cannot tell which exercise"),
    ("ex09_future.ipynb", b'{"cells": [], "nbformat": 4, "nbformat_minor": 5, "metadata": {}}', "unknown exercise"),
])
def test_bad_input_scores_zero_with_a_reason(tmp_path, name, content, reason):
    path = tmp_path / name
    path.write_bytes(content)
    report = grade_submission(path, SOURCES)
    assert report["status"] == "rejected" and report["score"] == 0
    assert reason in report["reason"]
    assert SEPARATOR in report["reason"] and has_chinese(report["reason"]), "a student reads it in either language"


def test_the_wrong_exercise_scores_zero_against_every_check(tmp_path):
    path = write(tmp_path / "ex02_corruption_boundary.ipynb", as_json(SOURCES["ex02"].notebook))
    report = grade_submission(path, SOURCES, exercise="ex01")
    assert report["status"] == "rejected" and "wrong exercise" in report["reason"]
    assert report["max_score"] == SOURCES["ex01"].max_score
    assert [check["score"] for check in report["checks"]] == [0] * len(SOURCES["ex01"].checks)


def test_a_missing_file_and_a_huge_file_are_refused(tmp_path, monkeypatch):
    assert "no such file" in grade_submission(tmp_path / "ex01_gone.ipynb", SOURCES)["reason"]
    monkeypatch.setattr(assemble, "MAX_SUBMISSION_BYTES", 10)
    path = write(tmp_path / "ex01_big.ipynb", {"cells": []})
    with pytest.raises(SubmissionError, match="the limit is 10"):
        read_submission(path)


# --------------------------------------------------------------------------- files that are not notebooks
# Real named pipes, symbolic links, devices, sockets and folders: each is refused at once with its reason.


@pytest.mark.skipif(os.name != "posix", reason="named pipes, sockets and /dev/zero are POSIX")
@pytest.mark.parametrize("make, reason", [
    (lambda path: os.mkfifo(path), "not a regular file: a named pipe (FIFO)"),
    (lambda path: os.symlink("/dev/zero", path), "not a regular file: a symbolic link"),
    (lambda path: os.symlink(SOURCES["ex01"].path, path), "not a regular file: a symbolic link"),
    (lambda path: path.mkdir(), "not a regular file: a folder"),
    (lambda path: socket.socket(socket.AF_UNIX).bind(str(path)), "not a regular file: a socket"),
], ids=["fifo", "link-to-dev-zero", "link-to-the-solution", "folder", "socket"])
def test_only_regular_files_are_read(tmp_path, make, reason):
    path = tmp_path / "ex01_odd.ipynb"
    make(path)
    report = grade_submission(path, SOURCES)
    assert report["status"] == "rejected" and report["score"] == 0
    assert report["reason"].startswith(reason), report["reason"]
    assert report["max_score"] == SOURCES["ex01"].max_score


def test_a_file_is_read_up_to_the_limit_and_no_further(tmp_path, monkeypatch):
    monkeypatch.setattr(assemble, "MAX_SUBMISSION_BYTES", 1000)
    path = tmp_path / "ex01_long.ipynb"
    path.write_bytes(b" " * 5000)
    reads = []
    real_read = os.read
    monkeypatch.setattr(assemble.os, "read", lambda fd, size: reads.append(size) or real_read(fd, size))
    with pytest.raises(SubmissionError, match="holds more than 1,000 bytes; the limit is 1,000"):
        read_submission(path)
    assert sum(reads) <= 1001, "a file is never read past the limit"


def test_an_old_notebook_format_gets_its_own_reason(tmp_path):
    path = tmp_path / "ex01_v3.ipynb"
    path.write_text(json.dumps({"nbformat": 3, "nbformat_minor": 0, "metadata": {},
                                "worksheets": [{"cells": [], "metadata": {}}]}))
    report = grade_submission(path, SOURCES)
    assert report["status"] == "rejected"
    assert report["reason"].startswith("a notebook in the old format 3"), report["reason"]


def test_report_names_never_collide():
    labels = ["ex01_twin x.ipynb", "ex01_twin_x.ipynb", "Ex01_Twin_X.ipynb", "a/b.ipynb", "a/b.ipynb (2)",
              "a/../b.ipynb", "results.ipynb", "ex01_twin x.ipynb"]
    names = report_names(labels)
    assert len({str(name).casefold() for name in names}) == len(labels), names
    assert names[1] == Path("ex01_twin_x.json") and names[3] == Path("a/b.json")
    assert all(".." not in name.parts and name.suffix == ".json" for name in names)
    assert names == report_names(labels), "the same batch always gets the same names"


def test_the_same_file_name_in_the_english_and_chinese_folders_gets_two_reports():
    assert report_names(["en/ex01_x.ipynb", "zh/ex01_x.ipynb"]) == [Path("en/ex01_x.json"), Path("zh/ex01_x.json")]


@pytest.mark.parametrize("exercise", sorted(SOURCES))
def test_a_chinese_notebook_is_recognised_and_assembled_like_the_english_one(exercise):
    """Neither folder, file name nor markdown decides: the metadata names the exercise, cell ids the answers.

    The stubs differ only in their docstrings (Chinese in exercises/zh): the same program, so the same score.
    """
    source = SOURCES[exercise]
    english, chinese = (json.loads((folder / source.path.name).read_text(encoding="utf-8"))
                        for folder in (INSTRUCTOR.parent, INSTRUCTOR.parent / "zh"))
    assert exercise_of(chinese, "homework.ipynb") == exercise_of(english, "homework.ipynb") == exercise
    built = [build_notebook(source, answer_sources(notebook, source)) for notebook in (english, chinese)]
    assert [cell.cell_type for cell in built[0].cells] == [cell.cell_type for cell in built[1].cells]
    for english_cell, chinese_cell in zip(built[0].cells, built[1].cells):
        assert english_cell.metadata == chinese_cell.metadata
        assert english_cell.source == chinese_cell.source or same_code(english_cell.source, chinese_cell.source)
    assert any(english_cell.source != chinese_cell.source
               for english_cell, chinese_cell in zip(built[0].cells, built[1].cells))


@pytest.mark.skipif(os.name != "posix", reason="named pipes and /dev/zero are POSIX")
def test_a_class_folder_of_bad_files_is_graded_to_the_end_with_a_report_each(tmp_path):
    folder = tmp_path / "class"
    for student in ("ann", "ben", "cat", "dan", "eve", "fay"):
        (folder / student).mkdir(parents=True)
    os.mkfifo(folder / "ann" / "ex01_last_turn_replay.ipynb")
    os.symlink("/dev/zero", folder / "ben" / "ex01_last_turn_replay.ipynb")
    (folder / "cat" / "ex01_twin x.ipynb").write_text("{not json")
    (folder / "cat" / "ex01_twin_x.ipynb").write_text("[]")
    (folder / "dan" / "ex01_old.ipynb").write_text('{"nbformat": 3, "worksheets": []}')
    os.symlink(INSTRUCTOR, folder / "eve" / "instructor")  # a link to the solutions is not followed
    os.symlink(SOURCES["ex01"].path, folder / "fay" / "ex01_last_turn_replay.ipynb")
    reports = tmp_path / "reports"
    done = subprocess.run([sys.executable, "-m", "s09_jsonl_transcript.grading", "grade", str(folder),
                           "--reports", str(reports)], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    found = {}
    for path in reports.rglob("*.json"):
        report = json.loads(path.read_text(encoding="utf-8"))
        found[report["submission"]] = report
    reasons = {label: report["reason"] for label, report in found.items()}
    link = ("not a regular file: a symbolic link (submit the notebook itself)"
            " · 不是普通文件：这是符号链接（请提交笔记本文件本身）")
    assert reasons == {
        "ann/ex01_last_turn_replay.ipynb": "not a regular file: a named pipe (FIFO) · 不是普通文件：命名管道（FIFO）",
        "ben/ex01_last_turn_replay.ipynb": link,
        "cat/ex01_twin x.ipynb": "invalid JSON at line 1, column 2 · JSON 无效，位于第 1 行第 2 列: "
                                 "Expecting property name enclosed in double quotes",
        "cat/ex01_twin_x.ipynb": "not a notebook: the JSON has no list of cells · 不是笔记本：JSON 里没有单元列表",
        "dan/ex01_old.ipynb": "a notebook in the old format 3 (this grader reads format 4): open it in a current "
                              "Jupyter and save it, which converts it · 这是旧格式 3 的笔记本（评分程序只读格式 4）："
                              "用新版 Jupyter 打开它并保存一次，就会转换成新格式",
        "fay/ex01_last_turn_replay.ipynb": link,
    }, reasons
    assert all(report["score"] == 0 for report in found.values())


# --------------------------------------------------------------------------- reports and command line


def test_submissions_in_folders_get_unique_labels_and_checkpoints_are_skipped(tmp_path):
    for relative in ("alice/ex01_a.ipynb", "bob/ex01_a.ipynb", "alice/.ipynb_checkpoints/ex01_a-checkpoint.ipynb"):
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text("{}")
    labels = [label for _, label in find_submissions([tmp_path, tmp_path / "alice" / "ex01_a.ipynb"])]
    assert labels == ["alice/ex01_a.ipynb", "bob/ex01_a.ipynb", "ex01_a.ipynb"]
    again = [label for _, label in find_submissions([tmp_path / "alice" / "ex01_a.ipynb"] * 2)]
    assert again == ["ex01_a.ipynb", "ex01_a.ipynb (2)"]


def test_the_class_csv_and_the_summary_show_every_check(tmp_path):
    path = tmp_path / "ex02_missing.ipynb"
    path.write_bytes(b'{"cells": [], "nbformat": 4, "metadata": {}}')
    rejected = grade_submission(path, SOURCES)
    unknown = grade_submission(tmp_path / "notes.txt", SOURCES)
    csv_path = write_class_csv([rejected, unknown], tmp_path / "out" / "class.csv")
    with open(csv_path, newline="", encoding="utf-8") as file:
        rows = list(csv.reader(file))
    assert rows[0][:6] == ["submission", "exercise", "status", "score", "max_score", "reason"]
    assert rows[0][6:] == [check.name for check in SOURCES["ex02"].checks]
    assert rows[1][:5] == ["ex02_missing.ipynb", "ex02", "rejected", "0", str(SOURCES["ex02"].max_score)]
    assert rows[2][:5] == ["notes.txt", "", "rejected", "0", "0"]
    text = format_report(rejected)
    assert "rejected · 已拒收: answer cell" in text and "找不到答案单元" in text
    assert f"total · 总分: 0/{SOURCES['ex02'].max_score}" in text


def test_the_progress_bar_writes_one_line_per_step_when_not_on_a_terminal():
    stream = io.StringIO()
    bar = ProgressBar(4, stream=stream, width=8)
    for done in range(1, 5):
        bar.update(done, f"student{done}")
    assert stream.getvalue().splitlines() == [
        "[##......] 1/4 student1", "[####....] 2/4 student2", "[######..] 3/4 student3", "[########] 4/4 student4"]


@pytest.mark.parametrize("arguments, message", [
    ([], "required"),
    (["grade"], "required"),
    (["grade", "x.ipynb", "--jobs", "0"], "--jobs must be at least 1"),
    (["grade", "x.ipynb", "--timeout", "-1"], "timeouts must be positive"),
    (["grade", "x.ipynb", "--exercise", "ex42"], "--exercise ex42"),
    (["grade", "no-such-folder/"], "no such file or folder"),
    (["grade", "x.ipynb", "--source", "no-such-folder"], "not a folder of exercise sources"),
    (["benchmark", "--copies", "0"], "--copies must be at least 1"),
])
def test_a_bad_command_line_gets_one_line_and_status_2(arguments, message, capsys):
    assert cli.main(arguments) == 2
    error = capsys.readouterr().err
    assert error.startswith("error · 错误: ") and message in error and error.count("\n") == 1


def test_grading_bad_input_through_the_command_line_writes_a_report(tmp_path, capsys):
    path = tmp_path / "ex01_broken.ipynb"
    path.write_text("{not json")
    assert cli.main(["grade", str(path), "--reports", str(tmp_path / "reports")]) == 0
    out = capsys.readouterr().out
    assert "rejected · 已拒收: invalid JSON" in out and f"total · 总分: 0/{SOURCES['ex01'].max_score}" in out
    report = json.loads((tmp_path / "reports" / "ex01_broken.json").read_text(encoding="utf-8"))
    assert report["status"] == "rejected" and report["score"] == 0
    assert len(report["checks"]) == len(SOURCES["ex01"].checks)


# --------------------------------------------------------------------------- the check helper


def test_a_counting_file_counts_every_byte_handed_out(tmp_path):
    path = tmp_path / "data.bin"
    path.write_bytes(b"one\ntwo\nthree\n")
    with CountingFile(open(path, "rb")) as file:
        assert file.seek(0, io.SEEK_END) == 14 and file.bytes_read == 0
        file.seek(-6, io.SEEK_END)
        assert file.read() == b"three\n" and file.bytes_read == 6
        file.seek(0)
        assert file.readline() == b"one\n" and list(file) == [b"two\n", b"three\n"]
        assert file.bytes_read == 20
        assert not hasattr(file, "fileno") and not hasattr(file, "name")


def test_a_counting_file_wraps_binary_files_only(tmp_path):
    path = tmp_path / "data.txt"
    path.write_text("text")
    with open(path) as text_file, pytest.raises(TypeError, match="binary"):
        CountingFile(text_file)


def test_the_calls_limit_stops_a_slow_answer_before_nbval_would():
    """A call of the student's code gets cell_timeout; the trusted cell around it only the notebook's limit.

    With the call at 0.8 x cell_timeout and the cell at 1 x, a busy machine could spend the difference
    before the call began: the cell ran out first, printed nothing, and a slow answer read as a wrong one.
    """
    from s09_jsonl_transcript.grading import runner

    settings = runner.RunSettings(cell_timeout=3, total_timeout=120)
    command = runner._pytest_command("/root", 9, settings)
    assert "--nbval-cell-timeout=120" in command  # the call's own limit, 3 s, is shown in test_grading_runs


NUMBER_WORDS = {"ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "十": 10, "十一": 11,
                "十二": 12, "十三": 13, "十四": 14}


def test_the_counts_of_hidden_checks_the_docs_state_are_the_sources():
    """docs/grading.md says how many hidden checks draw from the seed and how many have fixed inputs, in both
    languages: a check added or changed must not leave those numbers stale."""
    hidden = [check for source in SOURCES.values() for check in source.checks if check.hidden]
    drawing = [check for check in hidden if _draws(check)]
    english = (ROOT / "docs" / "grading.md").read_text(encoding="utf-8")
    chinese = (ROOT / "docs" / "zh" / "grading.md").read_text(encoding="utf-8")
    said = re.search(r"of the (\w+) hidden checks that draw from the seed", english)
    fixed = re.search(r"The other (\w+) hidden checks test one edge", english)
    assert (NUMBER_WORDS[said.group(1)], NUMBER_WORDS[fixed.group(1)]) == (len(drawing), len(hidden) - len(drawing))
    said = re.search(r"从种子取值的(\S+?)个隐藏检查里", chinese)
    fixed = re.search(r"其他(\S+?)个隐藏检查", chinese)
    assert (NUMBER_WORDS[said.group(1)], NUMBER_WORDS[fixed.group(1)]) == (len(drawing), len(hidden) - len(drawing))
    listed = set(re.findall(r"`(ex\d\d-[a-z-]+)`", re.search(r"The hidden checks (.*?) draw from the seed", english,
                                                          re.S).group(1)))
    assert listed == {check.id for check in drawing}


def _draws(check) -> bool:
    """True when the check's cell draws inputs from the seed."""
    code_cells = [cell for cell in SOURCES[check.name[:4]].notebook.cells if cell.cell_type == "code"]
    return "check_random(" in code_cells[check.cell_index].source
