"""The package's layout as a test (issue 50): one subpackage per job, which job may import which, no
import circle, and no module over 800 lines.

A newcomer should guess where a thing lives from the folder names, and a change to one job should not
ripple into jobs below it. So every module of the package belongs to one part (the lesson `code.py`, a
subpackage, or a root module), and PARTS says which other parts each may import. The lesson stands
alone; the grader reaches the kit through one adapter module and nothing else, so that it could grade
another subject's exercises.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "s09_jsonl_transcript"
NAME = PACKAGE.name
MAX_LINES = 800  # a package module over this holds more than one idea (code.py keeps its own budget)
GRADER_ADAPTER = "grading/kit.py"  # the grader's one door into the kit

# Each part of the package, and the parts it may import (besides itself and the standard library).
# "shims" are the old paths of moved modules (each forwards to its new place until 0.3); "root" is the
# package's __init__ and __main__.
PARTS = {
    "code": set(),
    "moved": set(),
    "lab": {"code"},
    "text": {"code"},
    "production": {"code", "lab", "text"},
    "importers": {"code", "lab", "text"},
    "crashlab": {"code", "lab", "production", "text"},
    "bench": {"code", "lab", "crashlab", "production"},
    "cli": {"code", "lab", "production", "importers", "text"},
    "lessons": {"code", "lab", "text", "production", "crashlab", "importers", "bench"},
    "grading": {"grading-adapter"},  # everything the grader needs of the kit comes through GRADER_ADAPTER
    "grading-adapter": {"code", "crashlab", "text"},
    "root": {"code", "lab", "cli"},
    "shims": {"moved"},
}
SHIMS = {"fast.py", "damage.py", "i18n.py", "bilingual.py", "live.py", "turns.py", "timeouts.py", "index.py"}


def part_of(path: Path) -> str:
    """The part a module of the package belongs to."""
    relative = path.relative_to(PACKAGE)
    if relative.as_posix() == GRADER_ADAPTER:
        return "grading-adapter"
    if len(relative.parts) > 1:
        return relative.parts[0]
    name = relative.name
    if name in SHIMS:
        return "shims"
    return {"code.py": "code", "cli.py": "cli", "_moved.py": "moved", "__init__.py": "root",
            "__main__.py": "root"}.get(name, name.removesuffix(".py"))


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def kit_imports(path: Path) -> set[str]:
    """The kit's modules this file imports, anywhere in it (a function-level import is still a dependency):
    `from .x import y` counts as module x.y when that is a module, else as x."""
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            names = [f"{module}.{alias.name}" if f"{module}.{alias.name}" in MODULES else module
                     for alias in node.names]
        else:
            continue
        found |= {name for name in names if name == NAME or name.startswith(NAME + ".")}
    return found - {module_name(path)}


def part_of_module(name: str) -> str:
    if name == NAME:
        return "root"
    return part_of(MODULES[name]) if name in MODULES else "missing"


@pytest.mark.parametrize("path", MODULES.values(), ids=lambda path: path.relative_to(PACKAGE).as_posix())
def test_a_module_imports_only_the_parts_its_job_may_use(path):
    own = part_of(path)
    assert own in PARTS, f"{path.relative_to(PACKAGE)} belongs to no known part ({own}): add it to PARTS"
    allowed = PARTS[own] | {own}
    if own == "grading-adapter":
        allowed |= {"grading"}
    wrong = sorted(name for name in kit_imports(path) if part_of_module(name) not in allowed)
    assert not wrong, f"{path.relative_to(PACKAGE)} ({own}) may import only {sorted(allowed)}, not {wrong}"


def test_the_grader_reaches_the_kit_through_one_adapter():
    """Every import of the kit by a grading module outside the adapter stays inside grading/."""
    outside = {module: sorted(name for name in kit_imports(path)
                              if part_of_module(name) not in ("grading", "grading-adapter"))
               for module, path in MODULES.items() if part_of(path) == "grading"}
    assert not {module: names for module, names in outside.items() if names}


def import_graph() -> dict[str, set[str]]:
    return {module: {name for name in kit_imports(path) if name in MODULES or name == NAME}
            for module, path in MODULES.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm), each sorted."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_circle():
    graph = import_graph()
    graph.pop(NAME, None)  # the package's __init__ re-exports; its submodules import it only for those names
    for imports in graph.values():
        imports.discard(NAME)
    assert circles(graph) == []


def test_the_circle_check_can_fail():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_part_check_can_fail(tmp_path):
    assert part_of_module(f"{NAME}.code") == "code"
    assert "grading" not in PARTS["lab"] and PARTS["code"] == set()


@pytest.mark.parametrize("path", [path for path in MODULES.values() if path != PACKAGE / "code.py"],
                         ids=lambda path: path.relative_to(PACKAGE).as_posix())
def test_no_package_module_is_over_the_line_budget(path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(PACKAGE)} has {lines} lines: split it by idea"
