"""Build the notebook the grader runs: the pristine copy with the student's answer code in it.

From a submission only the *source* of the answer cells is taken, found by cell id (or, for a
notebook saved without ids, by the answer name in the cell's s09 metadata). Its outputs, tags,
metadata, kernelspec and extra cells are never read, so editing a check, its expected output or
an nbval tag changes nothing. nbval comment markers are removed from the answer code as well.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

import nbformat

from .source import EXERCISE_NAME, METADATA_KEY, ExerciseSource, cell_role

MAX_SUBMISSION_BYTES = 20 * 1024 * 1024
# nbval acts on comment lines such as "# NBVAL_SKIP"; any comment naming a marker goes.
_NBVAL_MARKER_LINE = re.compile(r"^\s*#.*(NBVAL_|PYTEST_VALIDATE_)", re.IGNORECASE)
_EXERCISE_PREFIX = re.compile(r"^(ex\d\d)(_|\.|$)")


class SubmissionError(ValueError):
    """A submission that cannot be graded: it scores 0, and the message is the reason given."""


def read_submission(path) -> dict:
    """The submission's notebook JSON, or SubmissionError saying why it is not a usable notebook."""
    path = Path(path)
    if path.suffix != ".ipynb":
        raise SubmissionError(f"not a notebook: {path.name} is not an .ipynb file")
    text = _read_regular_file(path)
    try:
        text = text.decode("utf-8")
    except UnicodeDecodeError:
        raise SubmissionError("not a notebook: the file is not UTF-8 text") from None
    try:
        notebook = json.loads(text)
    except json.JSONDecodeError as error:
        raise SubmissionError(f"invalid JSON at line {error.lineno}, column {error.colno}: {error.msg}") from None
    except RecursionError:
        raise SubmissionError("invalid JSON: nested too deeply") from None
    if not isinstance(notebook, dict):
        raise SubmissionError("not a notebook: the JSON has no list of cells")
    version = notebook.get("nbformat")
    if isinstance(version, int) and not isinstance(version, bool) and version < 4:
        raise SubmissionError(f"a notebook in the old format {version} (this grader reads format 4): open it in "
                              "a current Jupyter and save it, which converts it")
    if not isinstance(notebook.get("cells"), list):
        raise SubmissionError("not a notebook: the JSON has no list of cells")
    if version != 4:
        raise SubmissionError(f"not a notebook in format 4 (nbformat is {version!r})")
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
        raise SubmissionError(f"no such file: {path}") from None
    except OSError as error:
        if path.is_symlink():
            raise SubmissionError("not a regular file: a symbolic link (submit the notebook itself)") from None
        kind = _kind_of(path)
        if kind:
            raise SubmissionError(f"not a regular file: {kind}") from None
        raise SubmissionError(f"cannot read the file: {error.strerror or error}") from None
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            raise SubmissionError(f"not a regular file: {_KINDS.get(stat.S_IFMT(mode), 'not a file')}")
        chunks, total = [], 0
        while total <= MAX_SUBMISSION_BYTES:
            chunk = os.read(descriptor, min(1 << 20, MAX_SUBMISSION_BYTES + 1 - total))
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            total += len(chunk)
        raise SubmissionError(f"the file holds more than {MAX_SUBMISSION_BYTES:,} bytes; the limit is "
                              f"{MAX_SUBMISSION_BYTES:,}")
    except OSError as error:
        raise SubmissionError(f"cannot read the file: {error.strerror or error}") from None
    finally:
        os.close(descriptor)


_KINDS = {stat.S_IFDIR: "a folder", stat.S_IFIFO: "a named pipe (FIFO)", stat.S_IFCHR: "a character device",
          stat.S_IFBLK: "a block device", stat.S_IFSOCK: "a socket", stat.S_IFLNK: "a symbolic link"}


def _kind_of(path: Path) -> str | None:
    try:
        return _KINDS.get(stat.S_IFMT(os.lstat(path).st_mode))
    except OSError:
        return None


def exercise_of(notebook: dict, path) -> str | None:
    """Which exercise the notebook says it is: its s09 metadata, else its file name (exNN_...)."""
    metadata = notebook.get("metadata")
    info = metadata.get(METADATA_KEY) if isinstance(metadata, dict) else None
    named = info.get("exercise") if isinstance(info, dict) else None
    if isinstance(named, str) and EXERCISE_NAME.match(named):
        return named
    match = _EXERCISE_PREFIX.match(Path(path).name)
    return match.group(1) if match else None


def _cell_source(cell: dict, name: str) -> str:
    source = cell.get("source", "")
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        return "".join(source)
    if isinstance(source, str):
        return source
    raise SubmissionError(f"answer cell {name!r} has a malformed source")


def answer_sources(notebook: dict, source: ExerciseSource) -> dict:
    """The code of each answer cell of the submission, by answer name."""
    cells = [cell for cell in notebook["cells"] if isinstance(cell, dict)]
    answers = {}
    for answer in source.answers:
        matches = [cell for cell in cells if cell.get("id") == answer.cell_id]
        if not matches:  # saved without cell ids: fall back on the answer name in the metadata
            matches = [cell for cell in cells if cell_role(cell).get("name") == answer.name]
        if not matches:
            raise SubmissionError(
                f"answer cell {answer.name!r} is missing (cell id {answer.cell_id!r}): was it deleted, "
                "or was the answer typed into a new cell? Put your code back in the original cell")
        if len(matches) > 1:
            raise SubmissionError(f"answer cell {answer.name!r} appears {len(matches)} times; keep one")
        if matches[0].get("cell_type") != "code":
            raise SubmissionError(f"answer cell {answer.name!r} is no longer a code cell")
        answers[answer.name] = _cell_source(matches[0], answer.name)
    return answers


def strip_nbval_markers(code: str) -> str:
    """The code without comment lines that would give nbval an instruction (NBVAL_SKIP and the like)."""
    return "\n".join(line for line in code.split("\n") if not _NBVAL_MARKER_LINE.match(line))


def build_notebook(source: ExerciseSource, answers: dict) -> nbformat.NotebookNode:
    """The pristine notebook with each answer cell's source replaced by the student's code."""
    notebook = source.fresh_notebook()
    for answer in source.answers:
        notebook.cells[answer.cell_index].source = strip_nbval_markers(answers[answer.name])
    return notebook
