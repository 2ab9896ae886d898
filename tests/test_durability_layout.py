"""How the capstone's engine is laid out: no module imports from the kit outside grading/ (kit.py takes
what the engine needs through the grader's one door, grading/kit.py), the driver and the power-loss model
stand on the standard library alone, and no module is over 800 lines."""

import ast
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "s09_jsonl_transcript"
ENGINE = PACKAGE / "grading" / "durability"
MODULES = sorted(ENGINE.glob("*.py"))


def _imports(path: Path) -> list:
    """(level, module) of every import in the file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            found.append((node.level, node.module or ""))
        elif isinstance(node, ast.Import):
            found.extend((0, alias.name) for alias in node.names)
    return found


def _outside_grading(level: int, module: str) -> bool:
    return level >= 3 or (level == 0 and module.startswith("s09_jsonl_transcript"))


@pytest.mark.parametrize("path", MODULES, ids=lambda path: path.name)
def test_no_module_imports_from_outside_grading(path):
    outside = [module for level, module in _imports(path) if _outside_grading(level, module)]
    assert outside == [], outside


def test_the_kit_module_goes_through_the_graders_one_door():
    tree = ast.parse((ENGINE / "kit.py").read_text(encoding="utf-8"))
    doors = [node for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level == 2]
    assert [(node.module, [alias.name for alias in node.names]) for node in doors] == [(None, ["kit"])]


@pytest.mark.parametrize("name", ["driver.py"])
def test_the_driver_runs_on_the_standard_library_alone(name):
    imported = {module.split(".")[0] for level, module in _imports(ENGINE / name) if level == 0}
    assert all(level == 0 for level, _ in _imports(ENGINE / name))
    assert imported <= set(sys.stdlib_module_names)


@pytest.mark.parametrize("path", MODULES, ids=lambda path: path.name)
def test_no_module_is_over_800_lines(path):
    assert len(path.read_text(encoding="utf-8").splitlines()) <= 800


def test_the_subpackage_loads_nothing_heavy_until_asked():
    import subprocess

    code = ("import sys, s09_jsonl_transcript.grading.durability.engine; "
            "print('psutil' in sys.modules, 's09_jsonl_transcript.grading.sandbox' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False"]  # the local check runs where psutil is not installed
