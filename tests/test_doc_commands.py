"""Every shell command the pages show starts in a fresh shell, entered the way the page's top says.

The READMEs write `.venv/bin/python` (and `.venv/bin/...`) everywhere and say so at the top; the
docs/ pages say at the top to enter the environment with `source .venv/bin/activate`, and are run
that way. A command is taken from a shell code block (one a line, comments dropped) or from an inline
code span, when it starts with python, python3, pytest, jupyter, .venv/bin/ or VAR=value. Running a
command whole could grade a class or run the suite, so each runs with --help added: that proves the
interpreter is there, the module imports with what the environment holds, and the command exists.
Commands that install something (pip install, apt-get, python3 -m venv) are left to test_packaging.py.
Running them is the slow tier; what the pages say at the top is checked in the fast one.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from test_packaging import fresh_shell_environment, readme_commands

from s09_jsonl_transcript.grading.release import BUNDLE_README

ROOT = Path(__file__).resolve().parents[1]
READMES = [ROOT / "README.md", ROOT / "README.zh-CN.md"]
DOCS = sorted((ROOT / "docs").glob("*.md")) + sorted((ROOT / "docs" / "zh").glob("*.md"))
ACTIVATE = "source .venv/bin/activate"
TOP_LINES = 12  # "at the top": within the page's first lines
COMMAND_START = re.compile(r"^(?:[A-Z][A-Z0-9_]*=\S+ )*(?:python3?|pytest|jupyter|\.venv/bin/\S+)(?: |$)")
INSTALLS = re.compile(r"pip install|apt-get|-m venv")
FENCE = re.compile(r"^```(\w*)\s*$")
INLINE = re.compile(r"`([^`\n]+)`")


def commands_of(text: str) -> list:
    """The page's shell commands, in order, each once."""
    found, language = [], None
    for line in text.splitlines():
        fence = FENCE.match(line.strip())
        if fence:
            language = None if language is not None else fence.group(1)
            continue
        if language is not None:
            candidates = [line.split(" #", 1)[0].strip()] if language in ("", "bash", "sh", "shell") else []
        else:
            candidates = [span.strip() for span in INLINE.findall(line)]
        found += [command for command in candidates if COMMAND_START.match(command) and command not in found]
    return found


def page_id(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_the_extractor_finds_block_and_inline_commands_and_nothing_else():
    page = ("Run `python -m s09_jsonl_transcript inspect FILE` or read `code.py`.\n```bash\n"
            "python -m a.b --x   # a comment\n.venv/bin/python -m pytest\n```\n```python\npython = 3\n```\n"
            "`S09_SEED=1 pytest tests/x.py` and `pytest` again\n")
    assert commands_of(page) == ["python -m s09_jsonl_transcript inspect FILE", "python -m a.b --x",
                                 ".venv/bin/python -m pytest", "S09_SEED=1 pytest tests/x.py", "pytest"]


@pytest.mark.parametrize("path", READMES, ids=page_id)
def test_a_readme_says_at_the_top_that_its_commands_use_the_environments_python(path):
    top = "\n".join(path.read_text(encoding="utf-8").splitlines()[:TOP_LINES])
    assert ".venv/bin/python" in top and ACTIVATE in top


@pytest.mark.parametrize("path", DOCS, ids=page_id)
def test_a_doc_page_says_at_the_top_how_the_environment_is_entered(path):
    text = path.read_text(encoding="utf-8")
    top = "\n".join(text.splitlines()[:TOP_LINES])
    assert ACTIVATE in top, f"{page_id(path)} does not say at the top: {ACTIVATE}"
    assert text.count(ACTIVATE) == 1  # once


def test_the_handout_readme_says_how_to_install_and_which_python_in_both_languages():
    english, chinese = BUNDLE_README.split("\n---\n")
    for half in (english, chinese):
        assert "Python 3.11" in half and "python3 -m venv .venv && .venv/bin/pip install" in half
        assert ".venv/bin/python -m s09_jsonl_transcript.grading grade" in half and "--source selfcheck" in half
    assert "advice, not your grade" in english and "只是参考，不是你的成绩" in chinese
    commands = readme_commands(BUNDLE_README)  # its indented code lines
    assert commands and all(command.startswith((".venv/bin/", "python3 -m venv")) for command in commands)


def cases():
    """Each (command, run activated) once: the two languages' pages show mostly the same commands."""
    seen = set()
    for path, activated in [(path, False) for path in READMES] + [(path, True) for path in DOCS]:
        for command in commands_of(path.read_text(encoding="utf-8")):
            if not INSTALLS.search(command) and (command, activated) not in seen:
                seen.add((command, activated))
                yield pytest.param(command, activated, id=f"{page_id(path)}: {command}")


def this_environment_as_dot_venv(folder: Path) -> Path:
    """A `.venv` in folder that is the environment running these tests, wherever that lives: the
    environment itself when it is a venv, else a bin/ of links to its programs and an `activate`."""
    prefix = Path(sys.prefix)
    if sys.prefix != sys.base_prefix and (prefix / "bin" / "activate").exists():
        (folder / ".venv").symlink_to(prefix, target_is_directory=True)
        return folder / ".venv"
    programs = folder / ".venv" / "bin"
    programs.mkdir(parents=True)
    for name in ("python", "python3"):
        (programs / name).symlink_to(sys.executable)
    for program in Path(sys.executable).parent.iterdir():
        if not (programs / program.name).exists():
            (programs / program.name).symlink_to(program)
    (programs / "activate").write_text(f'export PATH="{programs}:$PATH"\n', encoding="utf-8")
    return folder / ".venv"


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    """Where the pages' commands run: this checkout when its `.venv` is the environment running the tests;
    else a folder of links to the checkout's files with this environment as its `.venv`, so the suite
    passes with the environment anywhere."""
    venv = ROOT / ".venv"
    if venv.exists() and os.path.samefile(venv, sys.prefix):
        return ROOT
    mirror = tmp_path_factory.mktemp("checkout")
    for entry in ROOT.iterdir():
        if entry.name != ".venv":
            (mirror / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    this_environment_as_dot_venv(mirror)
    return mirror


@pytest.mark.slow  # a fresh interpreter per command: about a minute on 2 cores
@pytest.mark.parametrize("command, activated", list(cases()))
def test_a_command_of_the_pages_starts_in_a_fresh_shell(command, activated, checkout):
    line = f"{ACTIVATE} && {command} --help" if activated else f"{command} --help"
    done = subprocess.run(["bash", "-c", line], cwd=checkout, env=fresh_shell_environment(), capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"{line}\n{done.stdout[-1000:]}\n{done.stderr[-2000:]}"
    assert "usage" in done.stdout.lower() or "用法" in done.stdout
