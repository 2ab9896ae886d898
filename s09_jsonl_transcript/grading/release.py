"""Make what students get from the instructor sources, and refresh the sources' saved outputs.

- `student_notebook`: answers replaced by stubs that raise NotImplementedError, hidden cells
  removed, no outputs. These are the notebooks in exercises/.
- `selfcheck_notebook`: the same stubs and no hidden cells, but the visible checks keep their
  saved pass lines, so a student can grade against it without the instructor's copy.
- `write_bundle`: a student-only folder holding both kinds and neither solutions nor hidden checks.
- `refresh`: run the instructor sources top to bottom and save them with outputs (the pristine
  copies the grader compares against).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from .source import (
    ANSWER,
    BEGIN_SOLUTION,
    CHECK,
    END_SOLUTION,
    KIND_SELFCHECK,
    METADATA_KEY,
    ExerciseSource,
    SourceError,
    cell_role,
    is_hidden,
    load_source,
    load_sources,
    notebook_json,
)

STUB = 'raise NotImplementedError("replace this line with your answer")'
SELFCHECK_FOLDER = "selfcheck"
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
BUNDLE_README = """\
# s09 exercises

Work in the exercise notebooks (exNN_*.ipynb): write your code in the cells under "Your answer"
and run the notebook; every check prints one "passed" line or explains what went wrong.

Self-check (the visible checks only, graded the way the grader does it):

    python -m s09_jsonl_transcript.grading grade ex01_last_turn_replay.ipynb --source selfcheck

The folder selfcheck/ holds the checks' expected outputs; leave it as it is.
"""


def stub_solutions(code: str, where: str = "answer cell") -> str:
    """Replace every BEGIN/END SOLUTION region with a stub that raises NotImplementedError."""
    kept, inside, regions = [], False, 0
    for line in code.split("\n"):
        marker = line.strip()
        if marker == BEGIN_SOLUTION:
            if inside:
                raise SourceError(f"{where}: {BEGIN_SOLUTION} inside another solution region")
            inside, regions = True, regions + 1
            indent = line[: len(line) - len(line.lstrip())]
            kept.append(indent + STUB)
        elif marker == END_SOLUTION:
            if not inside:
                raise SourceError(f"{where}: {END_SOLUTION} without {BEGIN_SOLUTION}")
            inside = False
        elif not inside:
            kept.append(line)
    if inside:
        raise SourceError(f"{where}: {BEGIN_SOLUTION} is never closed")
    if not regions:
        raise SourceError(f"{where}: no {BEGIN_SOLUTION} region, so release would give the answer away")
    return "\n".join(kept)


def _public_cells(source: ExerciseSource) -> list:
    """Copies of the source's cells without hidden ones, answers stubbed, metadata reduced to s09."""
    cells = []
    for cell in source.fresh_notebook().cells:
        if is_hidden(cell):
            continue
        role = cell_role(cell)
        cell.metadata = {METADATA_KEY: role} if role else {}
        if role.get("role") == ANSWER:
            cell.source = stub_solutions(cell.source, f"{source.path.name}, cell {cell.id}")
        cells.append(cell)
    return cells


def _notebook(source: ExerciseSource, cells: list, **extra_info) -> nbformat.NotebookNode:
    notebook = nbformat.v4.new_notebook()
    notebook.nbformat_minor = max(notebook.nbformat_minor, 5)  # 4.5 and later keep cell ids
    notebook.metadata = {
        "kernelspec": dict(KERNELSPEC),
        "language_info": {"name": "python"},
        METADATA_KEY: {"exercise": source.exercise, "title": source.title, **extra_info},
    }
    notebook.cells = cells
    return notebook


def student_notebook(source: ExerciseSource) -> nbformat.NotebookNode:
    """The notebook a student works in: stubs, no hidden cells, no outputs, checks locked."""
    cells = _public_cells(source)
    for cell in cells:
        if cell.cell_type != "code":
            continue
        cell.outputs, cell.execution_count = [], None
        role = cell_role(cell).get("role")
        if role in (ANSWER, CHECK):
            cell.metadata["deletable"] = False
        if role == CHECK:
            cell.metadata["editable"] = False  # JupyterLab honours these two flags
    return _notebook(source, cells)


def selfcheck_notebook(source: ExerciseSource) -> nbformat.NotebookNode:
    """A pristine copy without solutions or hidden checks: what a student grades against."""
    return _notebook(source, _public_cells(source), kind=KIND_SELFCHECK)


def release(source_folder, out_folder) -> list:
    """Write the student notebook of every exercise in source_folder to out_folder; return the paths."""
    out_folder = Path(out_folder)
    out_folder.mkdir(parents=True, exist_ok=True)
    written = []
    for source in load_sources(source_folder).values():
        path = out_folder / source.path.name
        path.write_text(notebook_json(student_notebook(source)), encoding="utf-8")
        written.append(path)
    return written


def write_bundle(source_folder, bundle_folder) -> list:
    """Write a student-only bundle: the student notebooks, selfcheck/ copies and a short README."""
    bundle_folder = Path(bundle_folder)
    written = release(source_folder, bundle_folder)
    selfcheck = bundle_folder / SELFCHECK_FOLDER
    selfcheck.mkdir(exist_ok=True)
    for source in load_sources(source_folder).values():
        path = selfcheck / source.path.name
        path.write_text(notebook_json(selfcheck_notebook(source)), encoding="utf-8")
        written.append(path)
    readme = bundle_folder / "README.md"
    readme.write_text(BUNDLE_README, encoding="utf-8")
    return written + [readme]


def stale_notebooks(source_folder, out_folder) -> list:
    """Names of student notebooks in out_folder that differ from what release would write."""
    stale = []
    for source in load_sources(source_folder).values():
        path = Path(out_folder) / source.path.name
        expected = notebook_json(student_notebook(source))
        if not path.exists() or path.read_text(encoding="utf-8") != expected:
            stale.append(path.name)
    return stale


def refresh(source_folder, *, timeout: float = 120) -> list:
    """Run every instructor source top to bottom and save it with its outputs; return the paths.

    Each runs in an empty temporary folder. Raises SourceError when a check does not pass.
    """
    paths = sorted(Path(source_folder).glob("ex[0-9][0-9]_*.ipynb"))
    for path in paths:
        notebook = nbformat.read(path, as_version=4)
        for cell in notebook.cells:
            cell.metadata.pop("execution", None)  # timings left by other tools would make noisy diffs
        with tempfile.TemporaryDirectory(prefix="s09-refresh-") as folder:
            client = NotebookClient(notebook, timeout=timeout, kernel_name="python3",
                                    record_timing=False, resources={"metadata": {"path": folder}})
            try:
                client.execute()
            except Exception as error:  # nbclient raises CellExecutionError and kernel errors
                raise SourceError(f"{path.name}: the reference run failed: {error}") from None
        path.write_text(notebook_json(notebook), encoding="utf-8")
        load_source(path)  # every check saved its pass line
    return paths
