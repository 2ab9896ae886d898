"""The CI scripts name only test files and modules that exist (a renamed test once failed CI at minute 15)."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(path for path in (ROOT / ".ci").iterdir() if path.is_file())
TEST_PATH = re.compile(r"(?<![\w/])(tests/[\w/]+\.py)")
MODULE = re.compile(r"-m (s09_jsonl_transcript(?:\.\w+)*)")


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda path: path.name)
def test_every_test_file_a_ci_script_names_exists(script):
    named = set(TEST_PATH.findall(script.read_text(encoding="utf-8")))
    missing = sorted(path for path in named if not (ROOT / path).is_file())
    assert not missing, f"{script.name} names test files that do not exist: {missing}"


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda path: path.name)
def test_every_module_a_ci_script_runs_exists(script):
    named = set(MODULE.findall(script.read_text(encoding="utf-8")))
    missing = []
    for module in sorted(named):
        relative = Path(*module.split("."))
        if not ((ROOT / relative).with_suffix(".py").is_file() or (ROOT / relative / "__main__.py").is_file()):
            missing.append(module)
    assert not missing, f"{script.name} runs modules that do not exist: {missing}"


def test_the_ci_scripts_are_found():
    assert {path.name for path in SCRIPTS} >= {"run", "prerelease"}
