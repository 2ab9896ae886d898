"""Notebooks 1 to 5 are from-scratch chapters of the lesson (issue 41).

Each chapter writes the mechanism it teaches in its own cells, draws its plots in its own cells, and
checks what it wrote against code.py on the same inputs in a cell nbval compares. What it imports
from the kit is code.py and, for widgets, HTML styling and earlier chapters' code, lessons/: never a
draw_* helper, never the lab, and no kit module it imports draws with matplotlib. The helper code it
imports is at most 1.5 lines for each line of code in its cells.
"""

import ast
import importlib.util
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "notebooks").glob("*/0[1-5]_*.ipynb"))
MAX_HELPER_LINES_PER_CELL_LINE = 1.5
# What each chapter writes in its cells: a def whose body holds every one of these names.
MECHANISM = {
    "01": ("os.write", "os.fsync", "O_APPEND"),  # the envelope and append: one write, then fsync
    "02": ("SIGKILL",),  # the crash: code.py's JSONLTranscript killed in a child process mid-write
    "03": ("TranscriptCorruptionError",),  # the reading rule: a partial tail versus a bad complete line
    "04": ("messages",),  # the replay fold
    "05": ("MemorySelectionError",),  # the memory gate
}
SKIPPED_OUTPUT = re.compile(r"#\s*NBVAL_(IGNORE_OUTPUT|SKIP)")


def cells_of(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def code_sources(path: Path) -> list[str]:
    return ["".join(cell["source"]) for cell in cells_of(path) if cell["cell_type"] == "code"]


def python_of(source: str) -> str:
    """The cell without IPython's ! and % lines, so ast can read it."""
    return "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("!", "%")))


def kit_imports(path: Path) -> set[str]:
    """The s09_jsonl_transcript modules a notebook imports."""
    modules = set()
    for source in code_sources(path):
        for node in ast.walk(ast.parse(python_of(source))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("s09_jsonl_transcript"):
                modules.add(node.module)
                modules.update(f"{node.module}.{alias.name}" for alias in node.names
                               if importlib.util.find_spec(node.module).submodule_search_locations)
            elif isinstance(node, ast.Import):
                modules.update(alias.name for alias in node.names if alias.name.startswith("s09_jsonl_transcript"))
    return {module for module in modules if importlib.util.find_spec(module) is not None}


def module_file(module: str) -> Path:
    return Path(importlib.util.find_spec(module).origin)


def code_lines(text: str) -> int:
    """Lines that are neither blank nor only a comment."""
    return sum(1 for line in text.splitlines() if line.strip() and not line.strip().startswith("#"))


def chapter_id(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


@pytest.mark.parametrize("path", CHAPTERS, ids=chapter_id)
def test_a_chapter_imports_only_the_lesson_and_lessons(path):
    for module in kit_imports(path):
        allowed = module in ("s09_jsonl_transcript", "s09_jsonl_transcript.code", "s09_jsonl_transcript.text",
                             "s09_jsonl_transcript.text.i18n")
        assert allowed or module.startswith("s09_jsonl_transcript.lessons"), f"{path.name} imports {module}"


@pytest.mark.parametrize("path", CHAPTERS, ids=chapter_id)
def test_no_draw_helper_and_no_helper_that_plots(path):
    text = "\n".join(code_sources(path))
    assert not re.search(r"\bdraw_\w+", text), "a chapter draws its plots in its cells"
    for module in kit_imports(path):
        if module.startswith("s09_jsonl_transcript.lessons"):
            source = module_file(module).read_text(encoding="utf-8")
            assert "matplotlib" not in source, f"{module} plots: a chapter's plots belong in its cells"


@pytest.mark.parametrize("path", CHAPTERS, ids=chapter_id)
def test_every_plot_is_drawn_in_its_own_cell(path):
    for cell in cells_of(path):
        if cell["cell_type"] != "code":
            continue
        images = [output for output in cell.get("outputs", []) if "image/png" in output.get("data", {})]
        if images:
            source = "".join(cell["source"])
            assert re.search(r"\b(plt|ax|axes|fig)\.", source), f"a plot comes from elsewhere:\n{source}"


@pytest.mark.parametrize("path", CHAPTERS, ids=chapter_id)
def test_the_mechanism_is_written_in_a_cell(path):
    wanted = MECHANISM[path.name[:2]]
    defined = []
    for source in code_sources(path):
        for node in ast.walk(ast.parse(python_of(source))):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                defined.append(ast.get_source_segment(python_of(source), node))
    assert defined, "no function or class is written in the chapter's cells"
    if path.name.startswith("02"):  # the crash: code.py's own class, killed for real
        text = "\n".join(code_sources(path))
        assert all(name in text for name in wanted) and "JSONLTranscript" in text
        return
    assert any(all(name in body for name in wanted) for body in defined), \
        f"no def in the cells holds {wanted}"


@pytest.mark.parametrize("path", CHAPTERS, ids=chapter_id)
def test_a_compared_cell_checks_the_chapter_against_code_py(path):
    """At least one cell nbval compares names code.py's class and compares (==) with what the cells built."""
    checks = [source for source in code_sources(path)
              if not SKIPPED_OUTPUT.search(source) and "==" in source
              and re.search(r"\b(code\.|JSONLTranscript\b)", source)]
    assert checks, "no compared cell checks the chapter's code against code.py"


@pytest.mark.parametrize("path", CHAPTERS, ids=chapter_id)
def test_helper_code_is_at_most_one_and_a_half_lines_per_cell_line(path):
    cell_lines = sum(code_lines(python_of(source)) for source in code_sources(path))
    helpers = {module for module in kit_imports(path) if module.startswith("s09_jsonl_transcript.lessons.")}
    helper_lines = sum(code_lines(module_file(module).read_text(encoding="utf-8")) for module in helpers)
    assert helper_lines <= MAX_HELPER_LINES_PER_CELL_LINE * cell_lines, \
        f"{helper_lines} helper lines for {cell_lines} lines of code in the cells"


@pytest.mark.parametrize("path", CHAPTERS, ids=chapter_id)
def test_a_try_cell_and_a_question(path):
    markdown = "\n".join("".join(cell["source"]) for cell in cells_of(path) if cell["cell_type"] == "markdown")
    assert re.search(r"\*\*(Try|试一试)", markdown), "each chapter keeps at least one try cell"
    assert re.search(r"\*\*(Question|问题)", markdown), "and one plain question a student answers from the output"
