"""Modules that moved into subpackages keep their old import paths until version 0.3, with a warning.

Each row of MOVED is an old path and the module it now stands for (s09_jsonl_transcript._moved.forward):
importing the old path warns (DeprecationWarning, naming both paths and the version that removes it) and
gives the new module itself, so names imported from either are the same objects. Each row of PROGRAMS is
an old `python -m` command: it warns and runs the new module as the program.
"""

import importlib
import subprocess
import sys
import warnings

import pytest

from s09_jsonl_transcript._moved import REMOVED_IN

# (old import path, new import path)
MOVED = [
    ("s09_jsonl_transcript.live", "s09_jsonl_transcript.production.live"),
    ("s09_jsonl_transcript.turns", "s09_jsonl_transcript.production.turns"),
    ("s09_jsonl_transcript.timeouts", "s09_jsonl_transcript.production.timeouts"),
    ("s09_jsonl_transcript.index", "s09_jsonl_transcript.production.index"),
    ("s09_jsonl_transcript.fast", "s09_jsonl_transcript.lab.fast"),
    ("s09_jsonl_transcript.damage", "s09_jsonl_transcript.crashlab.damage"),
    ("s09_jsonl_transcript.i18n", "s09_jsonl_transcript.text.i18n"),
    ("s09_jsonl_transcript.bilingual", "s09_jsonl_transcript.text.bilingual"),
]
# (old module run with python -m, its arguments, what its output says when the new module ran)
PROGRAMS = [
    ("s09_jsonl_transcript.index", ["--help"], "usage: python -m s09_jsonl_transcript.production.index"),
    ("s09_jsonl_transcript.bilingual", ["--help"], "usage: python -m s09_jsonl_transcript.text.bilingual"),
]


def import_afresh(name: str):
    """Import name as a first import would (the old module runs again), recording the warnings it gives."""
    sys.modules.pop(name, None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        __import__(name)  # as an import statement does: the warning names this line, not importlib's
    return sys.modules[name], [warning for warning in caught if issubclass(warning.category, DeprecationWarning)]


@pytest.mark.parametrize("old, new", MOVED, ids=[old for old, _ in MOVED])
def test_an_old_path_warns_and_gives_the_new_module(old, new, monkeypatch):
    monkeypatch.setitem(sys.modules, old, None)  # restored after the test, whatever the import leaves
    module, warned = import_afresh(old)
    assert module is importlib.import_module(new)
    assert [str(warning.message) for warning in warned] == [
        f"{old} moved to {new}; the old name is removed in version {REMOVED_IN}"]
    assert warned[0].filename == __file__, "the warning points at the line that imported the old path"


@pytest.mark.parametrize("old, new", MOVED, ids=[old for old, _ in MOVED])
def test_names_imported_from_an_old_path_are_the_new_modules_own(old, new):
    code = f"""
import warnings
warnings.simplefilter("error", DeprecationWarning)
import {new} as new
warnings.simplefilter("ignore", DeprecationWarning)
import {old} as old
names = [name for name in dir(new) if not name.startswith("_")]
assert names and all(getattr(old, name) is getattr(new, name) for name in names)
print(len(names))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) > 0


@pytest.mark.parametrize("old, arguments, said", PROGRAMS, ids=[old for old, *_ in PROGRAMS])
def test_an_old_program_path_warns_and_runs_the_new_module(old, arguments, said):
    done = subprocess.run([sys.executable, "-m", old, *arguments], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(said), done.stdout
    assert f"DeprecationWarning: {old} moved to" in done.stderr


def test_the_shims_are_the_only_code_at_the_old_paths():
    """An old module only forwards: what it did before lives at the new path, in one copy."""
    from pathlib import Path

    package = Path(importlib.import_module("s09_jsonl_transcript").__file__).parent
    for old, new in MOVED:
        shim = package / f"{old.rsplit('.', 1)[1]}.py"
        lines = [line for line in shim.read_text(encoding="utf-8").splitlines() if line.strip()]
        assert lines == ["from ._moved import forward", f'forward(__name__, "{new}")'], shim
