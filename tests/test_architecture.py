"""The package's layout keeps the promises of issues #10 and #51: modules talk through public names only,
the lab is built from the lesson's functions and never on its class, the lesson modules sit above the
crash lab (never the other way round), and every real crash starts its child process through the lab's
one spawner (code.py's demo starts its own agent).
"""

import ast
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "s09_jsonl_transcript"
MODULES = sorted(PACKAGE.rglob("*.py"))


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_uses(path: Path) -> list[str]:
    """Private names this module takes from another module: imported, or read off a module object."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported_modules = set()
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if _is_private(alias.name):
                    found.append(f"line {node.lineno}: from {node.module or '.'} import {alias.name}")
                else:
                    imported_modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):  # the standard library's own (os._exit) are its public API
            imported_modules.update((alias.asname or alias.name).split(".")[0] for alias in node.names
                                    if alias.name.split(".")[0] not in sys.stdlib_module_names)
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and _is_private(node.attr)
                and isinstance(node.value, ast.Name) and node.value.id in imported_modules):
            found.append(f"line {node.lineno}: {node.value.id}.{node.attr}")
    return found


@pytest.mark.parametrize("path", MODULES, ids=lambda path: str(path.relative_to(PACKAGE)))
def test_no_module_uses_a_private_name_of_another_module(path):
    assert private_uses(path) == []


def test_the_private_name_check_can_fail(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("from .code import _parse_json\nfrom . import code\nx = code._BLOCK\n")
    assert len(private_uses(probe)) == 2


def subclasses_of_the_lessons_class(path: Path) -> list[str]:
    """Every class the module defines on the lesson's JSONLTranscript (named, or read off a module)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [f"line {node.lineno}: {node.name}" for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
            for base in node.bases if ast.unparse(base).split(".")[-1] == "JSONLTranscript"]


@pytest.mark.parametrize("path", MODULES, ids=lambda path: str(path.relative_to(PACKAGE)))
def test_no_module_builds_on_the_lessons_class(path):
    """The lab is built from the lesson's functions (line_problem, fold, select_candidate, ...), never on its
    class (issue 51): the class is the course's API, free to keep its writer simple, and the lab keeps the
    hardening it needs in its own writer (lab/writer.py)."""
    assert subclasses_of_the_lessons_class(path) == []


def test_the_subclass_check_can_fail(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("from . import code\n\nclass T(JSONLTranscript):\n    pass\n\n"
                     "class U(code.JSONLTranscript):\n    pass\n")
    assert len(subclasses_of_the_lessons_class(probe)) == 2


def test_the_labs_careful_reader_judges_each_record_by_the_lessons_rule():
    """The lesson's reading rule stays the oracle: the lab's careful reader calls the lesson's line_problem on
    every record and folds with the lesson's fold; the fast paths are held to the careful reader."""
    tree = ast.parse((PACKAGE / "lab" / "transcript.py").read_text(encoding="utf-8"))
    from_lesson = {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                   and node.module == "code" and node.level == 2 for alias in node.names}
    called = {node.func.id for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
    assert {"line_problem", "fold", "messages_of", "select_candidate"} <= from_lesson & called


def _is_main_guard(node) -> bool:
    return isinstance(node, ast.If) and "__main__" in ast.unparse(node.test)


def _imports(path: Path) -> set[str]:
    """Every module name the file imports, except inside its `if __name__ == "__main__":` block."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    tree.body = [node for node in tree.body if not _is_main_guard(node)]
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            names.add("." * node.level + module)
            names.update("." * node.level + (module + "." if module else "") + alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


@pytest.mark.parametrize("path", sorted((PACKAGE / "crashlab").glob("*.py")), ids=lambda path: path.name)
def test_the_crash_lab_never_imports_the_lesson_modules(path):
    assert not [name for name in _imports(path) if "lessons" in name]


def test_code_py_imports_nothing_from_the_kit():
    """The course loads code.py on its own, from its path: it must stand alone."""
    assert not [name for name in _imports(PACKAGE / "code.py") if name.startswith(".") or "s09" in name]


# Modules that start processes for other reasons: the grader runs pytest (under bubblewrap), the
# benchmark measures memory in a fresh interpreter, the handout builds the kit's wheel with pip, the
# paired bench asks git for another commit's files. None runs the kit's own transcript writers to kill
# them; the capstone's grader (durability/runs.py) runs a student's writer, in the student's sandbox
# under strace, which holds its kills.
NOT_WRITER_SPAWNERS = {"grading/runner.py", "grading/sandbox.py", "grading/release.py", "bench/costs.py",
                       "bench/versus.py", "grading/durability/runs.py"}


@pytest.mark.parametrize("path", MODULES, ids=lambda path: str(path.relative_to(PACKAGE)))
def test_child_processes_start_only_through_the_lab(path):
    relative = str(path.relative_to(PACKAGE))
    if relative in ("code.py", "crashlab/children.py") or relative in NOT_WRITER_SPAWNERS:
        return
    text = path.read_text(encoding="utf-8")
    assert "subprocess.Popen(" not in text and "subprocess.run(" not in text and ".kill()" not in text


# The production package stands on the lesson and the lab (and text.i18n, for the index's reports in the language
# in use); the parts that teach, grade, crash or measure may import it, never the other way round (issue 50).
PRODUCTION_MAY_IMPORT = {"code", "lab", "text"}


@pytest.mark.parametrize("path", sorted((PACKAGE / "production").glob("*.py")), ids=lambda path: path.name)
def test_the_production_package_imports_only_the_lesson_the_lab_and_itself(path):
    kit_parts = {name[2:].split(".")[0] for name in _imports(path) if name.startswith("..")}
    assert kit_parts <= PRODUCTION_MAY_IMPORT, f"{path.name} imports {sorted(kit_parts - PRODUCTION_MAY_IMPORT)}"
    assert not [name for name in _imports(path) if name.startswith("s09_jsonl_transcript")]
