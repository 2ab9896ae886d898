"""Notebooks 6 to 10, beyond the lesson, are built in cells as chapters 1 to 5 are (issue 54).

Each writes its mechanism in its own cells and checks it against the kit on the same inputs in a cell nbval
compares; it keeps widget panels and earlier chapters' code in lessons/, at most 1.5 helper lines for each line
of code in its cells (every lessons/ module it imports, and the lessons/ modules those import); it has a "try"
cell and a question in both languages. In the slow tier each English notebook runs once with matplotlib watched:
every figure must be created in one of its cells, and no function of the kit may create or draw on one.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import tempfile
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell
from test_chapters import SKIPPED_OUTPUT, code_lines, code_sources, kit_imports, module_file, python_of

from s09_jsonl_transcript.text.bilingual import BEYOND, notebook_files

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "s09_jsonl_transcript"
BEYOND_NOTEBOOKS = [path for path in notebook_files("en") if path.parent.name == BEYOND]
MAX_HELPER_LINES_PER_CELL_LINE = 1.5
# What each notebook writes in its cells: for each entry, a def or class whose body holds every one of the names.
MECHANISM = {
    "06": [("SIGKILL", "inside"), ("fsync", "combinations", "pending")],  # the held kill; the power-loss model
    "07": [("os.write", "os.fsync"), ("seek", "count")],  # the ways to write an event; the tail read
    "08": [("st_size", "st_mtime_ns"), ("TRANSITIONS", "trigger_of")],  # the read model's sync; the turn fold
    "09": [("cursor", "offset", "poll")],  # the subscriber with a cursor
    "10": [("response_item", "function_call", "source-record")],  # the Codex importer
}
# What each notebook checks its cells against: every name appears in a cell that nbval compares and that holds ==.
CHECKED_AGAINST = {
    "06": ("kill_campaign", "crash_states", "one_append_states"),
    "07": ("append_batch", "read_recent"),
    "08": ("TranscriptIndex", "session_status"),
    "09": ("subscribe(",),
    "10": ("import_session",),
}


def notebook_id(path: Path) -> str:
    return path.stem


def test_the_notebooks_beyond_the_lesson_are_numbered_6_to_10():
    assert [path.stem[:2] for path in BEYOND_NOTEBOOKS] == list(MECHANISM) == list(CHECKED_AGAINST)


def definitions(path: Path) -> list[str]:
    """The source of every function and class written in the notebook's cells."""
    found = []
    for source in code_sources(path):
        text = python_of(source)
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                found.append(ast.get_source_segment(text, node))
    return found


@pytest.mark.parametrize("path", BEYOND_NOTEBOOKS, ids=notebook_id)
def test_the_mechanism_is_written_in_cells(path):
    defined = definitions(path)
    for wanted in MECHANISM[path.stem[:2]]:
        assert any(all(name in body for name in wanted) for body in defined), f"no def in the cells holds {wanted}"


@pytest.mark.parametrize("path", BEYOND_NOTEBOOKS, ids=notebook_id)
def test_a_compared_cell_checks_the_cells_against_the_kit(path):
    compared = [source for source in code_sources(path) if not SKIPPED_OUTPUT.search(source) and "==" in source]
    for name in CHECKED_AGAINST[path.stem[:2]]:
        assert any(name in source for source in compared), f"no compared cell checks against {name}"


def lessons_modules_used(path: Path) -> set[str]:
    """The lessons/ modules the notebook imports, and every lessons/ module they import in turn."""
    pending = [module for module in kit_imports(path) if module.startswith("s09_jsonl_transcript.lessons.")]
    used = set()
    while pending:
        module = pending.pop()
        if module in used:
            continue
        used.add(module)
        for node in ast.walk(ast.parse(module_file(module).read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = module.rsplit(".", node.level)[0]
                names = [f"{base}.{node.module}"] if node.module else [f"{base}.{alias.name}" for alias in node.names]
                pending += [name for name in names if name.startswith("s09_jsonl_transcript.lessons.")
                            and importlib.util.find_spec(name) is not None]
    return used


@pytest.mark.parametrize("path", BEYOND_NOTEBOOKS, ids=notebook_id)
def test_helper_code_is_at_most_one_and_a_half_lines_per_cell_line(path):
    cell_lines = sum(code_lines(python_of(source)) for source in code_sources(path))
    helpers = lessons_modules_used(path)
    helper_lines = sum(code_lines(module_file(module).read_text(encoding="utf-8")) for module in helpers)
    assert helper_lines <= MAX_HELPER_LINES_PER_CELL_LINE * cell_lines, \
        f"{helper_lines} helper lines ({sorted(helpers)}) for {cell_lines} lines of code in the cells"


def test_the_helper_count_follows_imports_between_lessons_modules():
    """Notebook 9's panels import the live child, the turn words and the display helpers: all of them count."""
    nine = next(path for path in BEYOND_NOTEBOOKS if path.stem.startswith("09"))
    used = {module.rsplit(".", 1)[1] for module in lessons_modules_used(nine)}
    assert {"live_session", "live_child", "turn_words", "display", "style"} <= used


@pytest.mark.parametrize("language", ("en", "zh"))
@pytest.mark.parametrize("path", BEYOND_NOTEBOOKS, ids=notebook_id)
def test_a_try_cell_and_a_question(path, language):
    notebook = ROOT / "notebooks" / language / BEYOND / path.name
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    markdown = "\n".join("".join(cell["source"]) for cell in cells if cell["cell_type"] == "markdown")
    assert re.search(r"\*\*(Try|试一试)", markdown), "each notebook keeps at least one try cell"
    assert re.search(r"\*\*(Question|问题)", markdown), "and one plain question a student answers from the output"


# --------------------------------------------------------------------------- where every figure is made

# Run first in the kernel: matplotlib's Figure and its drawing methods, wrapped to write down who called them.
# The caller is the first frame outside matplotlib: a notebook's cell (ipykernel compiles each one into a file
# of its own) or anything else, the kit's modules included.
WATCH = r'''
import functools, inspect, os
import matplotlib, matplotlib.axes, matplotlib.figure
_MPL = os.path.dirname(matplotlib.__file__)
_DRAWN = []
def _watched(owner, name):
    original = getattr(owner, name)
    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        frame = inspect.currentframe().f_back
        while frame is not None and frame.f_code.co_filename.startswith(_MPL):
            frame = frame.f_back
        _DRAWN.append((f"{owner.__name__}.{name}", frame.f_code.co_filename if frame else "?"))
        return original(*args, **kwargs)
    setattr(owner, name, wrapper)
for _name in ("__init__", "add_subplot", "add_axes", "subplots", "legend", "text", "suptitle"):
    _watched(matplotlib.figure.Figure, _name)
for _name in ("plot", "scatter", "bar", "barh", "boxplot", "errorbar", "imshow", "text", "annotate", "broken_barh",
              "vlines", "hlines", "axvline", "axhline", "axvspan", "axhspan", "fill_between", "hist", "step",
              "add_patch", "add_line", "add_collection", "legend", "set_title", "set_xlabel", "set_ylabel", "set"):
    _watched(matplotlib.axes.Axes, _name)
'''
REPORT = "import json\nprint(json.dumps(_DRAWN))"
CELL_FILE = re.compile(r"ipykernel_\d+/\d+\.py$")


def drawing_calls(path: Path, folder: Path) -> tuple[list, list]:
    """Run the notebook with matplotlib watched: (every (call, caller's file) made, the cells' outputs)."""
    notebook = nbformat.read(path, as_version=4)
    notebook.cells = [new_code_cell(WATCH), *notebook.cells, new_code_cell(REPORT)]
    client = NotebookClient(notebook, timeout=300, kernel_name="python3", record_timing=False,
                            resources={"metadata": {"path": str(path.parent)}})
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("S09_AGENT_HOME", str(folder))  # notebook 10 reads no machine's own sessions
        patch.setenv("TMPDIR", str(folder))
        client.execute()
    report = "".join(output.get("text", "") for output in notebook.cells[-1].outputs)
    return json.loads(report), notebook.cells[1:-1]


def misplaced(calls: list) -> list:
    """The calls made from somewhere else than a notebook's cell: any figure made outside one, and any call at
    all from the kit (s09_jsonl_transcript) or a helper of the tests."""
    return [(call, caller) for call, caller in calls
            if str(PACKAGE) in caller or str(ROOT / "tests") in caller
            or (call == "Figure.__init__" and not CELL_FILE.search(caller))]


@pytest.mark.slow
@pytest.mark.parametrize("path", BEYOND_NOTEBOOKS, ids=notebook_id)
def test_every_figure_is_created_and_drawn_in_the_notebook_s_own_cells(path, tmp_path):
    calls, cells = drawing_calls(path, tmp_path)
    images = sum("image/png" in output.get("data", {}) for cell in cells for output in cell.get("outputs", []))
    made = [caller for call, caller in calls if call == "Figure.__init__"]
    assert len(made) >= images, f"{images} plots shown, {len(made)} figures seen made: the watch missed some"
    assert misplaced(calls) == [], "a figure made or drawn outside the notebook's cells"


def test_the_watch_names_a_helper_that_draws(tmp_path):
    """A notebook whose cell calls a function of another file that makes and draws a figure is caught."""
    helper = tmp_path / "drawing_helper.py"
    helper.write_text("import matplotlib.pyplot as plt\n\ndef draw():\n    fig, ax = plt.subplots()\n"
                      "    ax.plot([1, 2])\n    return fig\n", encoding="utf-8")
    notebook = nbformat.v4.new_notebook(cells=[
        new_code_cell("import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.plot([1, 2])\nplt.show()"),
        new_code_cell("import sys\nsys.path.insert(0, '.')\nimport drawing_helper\ndrawing_helper.draw()")])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = tmp_path / "probe.ipynb"
    nbformat.write(notebook, path)
    with tempfile.TemporaryDirectory() as scratch:
        calls, _ = drawing_calls(path, Path(scratch))
    callers = {caller for _, caller in calls}
    assert any(CELL_FILE.search(caller) for caller in callers)  # the first cell's own figure
    outside = [(call, caller) for call, caller in calls if caller == str(helper)]
    assert ("Figure.__init__", str(helper)) in outside and ("Axes.plot", str(helper)) in outside
    assert ("Figure.__init__", str(helper)) in misplaced(calls)
