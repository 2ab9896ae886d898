"""The tree passes ruff with the configuration in pyproject.toml (line length, import order, pyflakes), and the
lesson and the lab pass mypy."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_passes_on_the_whole_tree():
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is None:
        pytest.fail("ruff is not installed: it is in requirements.txt")
    result = subprocess.run([ruff, "check", "--no-cache", str(ROOT)], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_passes_on_the_lesson_and_the_lab():
    """The type checker CI runs (issue 50): mypy --check-untyped-defs on code.py and lab/, with no cache written."""
    mypy = shutil.which("mypy", path=str(Path(sys.executable).parent)) or shutil.which("mypy")
    if mypy is None:
        pytest.fail("mypy is not installed: it is in the dev extra (pip install -e '.[dev]')")
    result = subprocess.run([mypy, "--check-untyped-defs", "--cache-dir", os.devnull, "s09_jsonl_transcript/code.py",
                             "s09_jsonl_transcript/lab/"], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
