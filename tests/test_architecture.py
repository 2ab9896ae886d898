"""The package's layout keeps the promises of issue #10: modules talk through public names only,
the lesson modules sit above the crash lab (never the other way round), and every real crash
starts its child process through the lab's one spawner (code.py's demo starts its own agent).
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


def lesson_private_names(path: Path = PACKAGE / "code.py") -> set[str]:
    """Every private name the lesson defines: module names, class members, and attributes it sets on self."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
    return {name for name in names if _is_private(name)}


def uses_of_lesson_privates(path: Path, private: set[str]) -> list[str]:
    """Where a module reaches a private name of the lesson: obj._x read or set (self included), or a
    class member of that name (an override of the lesson's private method)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in private:
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.ClassDef):
            for member in node.body:
                targets = member.targets if isinstance(member, ast.Assign) else [member]
                for target in targets:
                    name = getattr(target, "name", None) or getattr(target, "id", None)
                    if name in private:
                        found.append(f"line {member.lineno}: {node.name}.{name} overrides the lesson's private name")
    return found


@pytest.mark.parametrize("path", [path for path in MODULES if path.name != "code.py" or path.parent != PACKAGE],
                         ids=lambda path: str(path.relative_to(PACKAGE)))
def test_no_module_reaches_a_private_name_of_the_lesson(path):
    """The lab extends code.py through its public surface (envelope, record_problem, rebuild, open_writer,
    read_for_writer, write_durably, file_io, next_sequence), never through what the lesson keeps to itself."""
    assert uses_of_lesson_privates(path, lesson_private_names()) == []


def test_the_lesson_private_name_check_can_fail(tmp_path):
    private = lesson_private_names()
    assert {"_fd", "_drop_writer", "_file_state", "_closer"} <= private
    probe = tmp_path / "probe.py"
    probe.write_text("class T(JSONLTranscript):\n    def _drop_writer(self):\n        return self._fd\n"
                     "    _read_all_events = None\n\nt = T('x')\nt._file_state\n")
    assert len(uses_of_lesson_privates(probe, private)) == 4


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
# benchmark measures memory in a fresh interpreter, the handout builds the kit's wheel with pip.
# None runs the kit's own transcript writers to kill them; the capstone's grader (durability/runs.py)
# runs a student's writer, in the student's sandbox under strace, which holds its kills.
NOT_WRITER_SPAWNERS = {"grading/runner.py", "grading/sandbox.py", "grading/release.py", "bench/costs.py",
                       "grading/durability/runs.py"}


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
