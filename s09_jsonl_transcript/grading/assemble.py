"""Build the notebook the grader runs: the pristine copy with the student's answer code in it.

From a submission only the *source* of the answer cells is taken, found by cell id (or, for a
notebook saved without ids, by the answer name in the cell's s09 metadata). Its outputs, tags,
metadata, kernelspec and extra cells are never read, so editing a check, its expected output or
an nbval tag changes nothing. nbval comment markers are removed from the answer code as well.
"""

from __future__ import annotations

import ast
import json
import os
import re
import stat
from pathlib import Path

import nbformat

from .source import EXERCISE_NAME, METADATA_KEY, ExerciseSource, cell_role, is_local, source_text
from .words import both, labelled

MAX_SUBMISSION_BYTES = 20 * 1024 * 1024
# nbval acts on comment lines such as "# NBVAL_SKIP"; any comment naming a marker goes.
_NBVAL_MARKER_LINE = re.compile(r"^\s*#.*(NBVAL_|PYTEST_VALIDATE_)", re.IGNORECASE)
_EXERCISE_PREFIX = re.compile(r"^(ex\d\d)(_|\.|$)")


class SubmissionError(ValueError):
    """A submission that cannot be graded: it scores 0, and the message is the reason given (in both languages)."""


def read_submission(path) -> dict:
    """The submission's notebook JSON, or SubmissionError saying why it is not a usable notebook."""
    path = Path(path)
    if path.suffix != ".ipynb":
        raise SubmissionError(both(f"not a notebook: {path.name} is not an .ipynb file",
                                   f"不是笔记本：{path.name} 不是 .ipynb 文件"))
    text = _read_regular_file(path)
    try:
        text = text.decode("utf-8")
    except UnicodeDecodeError:
        raise SubmissionError(both("not a notebook: the file is not UTF-8 text",
                                   "不是笔记本：文件不是 UTF-8 文本")) from None
    try:
        notebook = json.loads(text)
    except json.JSONDecodeError as error:
        where = both(f"invalid JSON at line {error.lineno}, column {error.colno}",
                     f"JSON 无效，位于第 {error.lineno} 行第 {error.colno} 列")
        raise SubmissionError(labelled(where, error.msg)) from None  # the decoder's own words stay English
    except RecursionError:
        raise SubmissionError(both("invalid JSON: nested too deeply", "JSON 无效：嵌套太深")) from None
    if not isinstance(notebook, dict):
        raise SubmissionError(_NO_CELLS)
    version = notebook.get("nbformat")
    if isinstance(version, int) and not isinstance(version, bool) and version < 4:
        raise SubmissionError(both(f"a notebook in the old format {version} (this grader reads format 4): open it "
                                   "in a current Jupyter and save it, which converts it",
                                   f"这是旧格式 {version} 的笔记本（评分程序只读格式 4）：用新版 Jupyter 打开它"
                                   "并保存一次，就会转换成新格式"))
    if not isinstance(notebook.get("cells"), list):
        raise SubmissionError(_NO_CELLS)
    if version != 4:
        raise SubmissionError(both(f"not a notebook in format 4 (nbformat is {version!r})",
                                   f"不是格式 4 的笔记本（nbformat 为 {version!r}）"))
    return notebook


def _read_regular_file(path: Path) -> bytes:
    """The bytes of a regular file, at most MAX_SUBMISSION_BYTES of them, or SubmissionError.

    The file is opened without following a symbolic link and without blocking (a named pipe would
    otherwise wait forever for a writer); only then is its type checked, on the open descriptor. It
    is read up to the limit whatever its size claims to be (a device reports 0 and never ends).
    """
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        descriptor = os.open(path, flags)
    except FileNotFoundError:
        raise SubmissionError(both(f"no such file: {path}", f"找不到文件：{path}")) from None
    except OSError as error:
        if path.is_symlink():
            raise SubmissionError(both("not a regular file: a symbolic link (submit the notebook itself)",
                                       "不是普通文件：这是符号链接（请提交笔记本文件本身）")) from None
        kind = _kind_of(path)
        if kind:
            raise SubmissionError(_not_regular(kind)) from None
        raise SubmissionError(labelled(_CANNOT_READ, error.strerror or str(error))) from None
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            raise SubmissionError(_not_regular(_KINDS.get(stat.S_IFMT(mode), ("not a file", "不是文件"))))
        chunks, total = [], 0
        while total <= MAX_SUBMISSION_BYTES:
            chunk = os.read(descriptor, min(1 << 20, MAX_SUBMISSION_BYTES + 1 - total))
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            total += len(chunk)
        raise SubmissionError(both(f"the file holds more than {MAX_SUBMISSION_BYTES:,} bytes; the limit is "
                                   f"{MAX_SUBMISSION_BYTES:,}",
                                   f"文件超过 {MAX_SUBMISSION_BYTES:,} 字节；上限是 {MAX_SUBMISSION_BYTES:,} 字节"))
    except OSError as error:
        raise SubmissionError(labelled(_CANNOT_READ, error.strerror or str(error))) from None
    finally:
        os.close(descriptor)


_KINDS = {stat.S_IFDIR: ("a folder", "文件夹"), stat.S_IFIFO: ("a named pipe (FIFO)", "命名管道（FIFO）"),
          stat.S_IFCHR: ("a character device", "字符设备"), stat.S_IFBLK: ("a block device", "块设备"),
          stat.S_IFSOCK: ("a socket", "套接字"), stat.S_IFLNK: ("a symbolic link", "符号链接")}
_NO_CELLS = both("not a notebook: the JSON has no list of cells", "不是笔记本：JSON 里没有单元列表")
_CANNOT_READ = both("cannot read the file", "无法读取文件")


def _not_regular(kind: tuple) -> str:
    return both(f"not a regular file: {kind[0]}", f"不是普通文件：{kind[1]}")


def _kind_of(path: Path) -> tuple | None:
    try:
        return _KINDS.get(stat.S_IFMT(os.lstat(path).st_mode))
    except OSError:
        return None


def exercise_of(notebook: dict, path) -> str | None:
    """Which exercise the notebook says it is: its s09 metadata, else its file name (exNN_...), else the
    name of the folder it sits in (ex01/alice.ipynb)."""
    metadata = notebook.get("metadata")
    info = metadata.get(METADATA_KEY) if isinstance(metadata, dict) else None
    named = info.get("exercise") if isinstance(info, dict) else None
    if isinstance(named, str) and EXERCISE_NAME.match(named):
        return named
    for name in (Path(path).name, Path(path).parent.name):
        match = _EXERCISE_PREFIX.match(name)
        if match:
            return match.group(1)
    return None


def _cell_source(cell: dict, name: str) -> str:
    source = cell.get("source", "")
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        return "".join(source)
    if isinstance(source, str):
        return source
    raise SubmissionError(both(f"answer cell {name!r} has a malformed source", f"答案单元 {name!r} 的 source 格式不对"))


def answer_sources(notebook: dict, source: ExerciseSource) -> dict:
    """The code of each answer cell of the submission, by answer name."""
    cells = [cell for cell in notebook["cells"] if isinstance(cell, dict)]
    answers = {}
    for answer in source.answers:
        matches = [cell for cell in cells if cell.get("id") == answer.cell_id]
        if not matches:  # saved without cell ids: fall back on the answer name in the metadata
            matches = [cell for cell in cells if cell_role(cell).get("name") == answer.name]
        if not matches:
            raise SubmissionError(both(
                f"answer cell {answer.name!r} is missing (cell id {answer.cell_id!r}): was it deleted, "
                "or was the answer typed into a new cell? Put your code back in the original cell",
                f"找不到答案单元 {answer.name!r}（单元 id {answer.cell_id!r}）：它被删掉了，还是答案写进了"
                "新建的单元？请把代码放回原来的单元"))
        if len(matches) > 1:
            raise SubmissionError(both(f"answer cell {answer.name!r} appears {len(matches)} times; keep one",
                                       f"答案单元 {answer.name!r} 出现了 {len(matches)} 次；只保留一个"))
        if matches[0].get("cell_type") != "code":
            raise SubmissionError(both(f"answer cell {answer.name!r} is no longer a code cell",
                                       f"答案单元 {answer.name!r} 不再是代码单元"))
        answers[answer.name] = _cell_source(matches[0], answer.name)
    return answers


def strip_nbval_markers(code: str) -> str:
    """The code without comment lines that would give nbval an instruction (NBVAL_SKIP and the like)."""
    return "\n".join(line for line in code.split("\n") if not _NBVAL_MARKER_LINE.match(line))


LOCAL_PLACEHOLDER = ("# A cell the student runs for themself (the local crash check): the grader does not run it.\n"
                     "# 学生自己运行的单元（本地崩溃检查）：评分程序不运行它。\n")


def _without_local_cells(notebook) -> None:
    """Each local cell (role "local") becomes a comment with no output: neither kernel runs it, and the cells
    keep their places, so a check keeps its number."""
    for cell in notebook.cells:
        if is_local(cell):
            cell.source = LOCAL_PLACEHOLDER
            if cell.cell_type == "code":
                cell.outputs = []


def build_notebook(source: ExerciseSource, answers: dict) -> nbformat.NotebookNode:
    """The pristine notebook with each answer cell's source replaced by the student's code: the
    one-kernel run of a self-check copy, whose checks expect their pass lines."""
    notebook = source.fresh_notebook()
    for answer in source.answers:
        notebook.cells[answer.cell_index].source = strip_nbval_markers(answers[answer.name])
    _without_local_cells(notebook)
    return notebook


def _check_cells(notebook, source: ExerciseSource) -> list:
    """(Check, cell) for every check of source, in the notebook built from it."""
    code_cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    return [(check, code_cells[check.cell_index]) for check in source.checks]


# --------------------------------------------------------------------------- two kernels (channel.py)


def student_program(source: ExerciseSource, answers: dict) -> tuple:
    """(label, code) of every cell the student's kernel runs, in order: setup cells and answer cells.

    Check cells are not in it: they run in the trusted kernel. Cells after the last answer are left
    out: no answer can use them; so are local cells, which no kernel of a grading runs.
    """
    answer_at = {answer.cell_index: answer for answer in source.answers}
    check_cells = {id(cell) for _, cell in _check_cells(source.notebook, source)}
    last = max(answer_at)
    cells = []
    for position, cell in enumerate(source.notebook.cells[:last + 1]):
        if cell.cell_type != "code" or id(cell) in check_cells or is_local(cell):
            continue
        if position in answer_at:
            name = answer_at[position].name
            cells.append((name, strip_nbval_markers(answers[name])))
        else:
            cells.append((f"setup-{position}", cell.source))
    return tuple(cells)


def reference_program(source: ExerciseSource) -> tuple:
    """The student program with the instructor's own answers in it (the reference run's)."""
    return student_program(source, {answer.name: source_text(source.notebook.cells[answer.cell_index])
                                    for answer in source.answers})


def answer_names(code: str) -> list:
    """(name, is_class) for each function and class an answer cell defines at its top level."""
    tree = ast.parse(code)
    return [(node.name, isinstance(node, ast.ClassDef)) for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]


def proxy_cell(answer_name: str, code: str) -> str:
    """What an answer cell becomes in the trusted kernel: its answer runs elsewhere, its names call across.

    The names are bound before the student's cells run: if those end the calls (a timeout, a dead
    kernel), each check still calls, and says why it was not called.
    """
    lines = ["# The answer runs in the student's kernel; here its names call it across the channel (channel.py).",
             f"from {__package__}.channel import student"]
    for name, is_class in answer_names(code):
        lines.append(f"{name} = student.{'answer_class' if is_class else 'answer'}({name!r}, {answer_name!r})")
    lines.append(f"student.run_up_to({answer_name!r})")
    return "\n".join(lines) + "\n"


def trusted_notebook(source: ExerciseSource, reference: dict | None = None) -> nbformat.NotebookNode:
    """The notebook the trusted kernel runs: setup and check cells as the instructor wrote them, and
    in place of each answer cell, a cell that binds the answer's names to proxies (channel.py).

    With reference (code-cell index -> ReferenceCell from the reference run, same seed), each check
    cell expects what it printed there.
    """
    notebook = source.fresh_notebook()
    for answer in source.answers:
        cell = notebook.cells[answer.cell_index]
        cell.source = proxy_cell(answer.name, cell.source)
    _without_local_cells(notebook)
    if reference is not None:
        for check, cell in _check_cells(notebook, source):
            cell.outputs = [nbformat.from_dict(output) for output in reference[check.cell_index].outputs]
    return notebook
