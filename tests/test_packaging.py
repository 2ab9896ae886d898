"""The install declares what each part needs, and a fresh environment built as the pages say runs.

Fast: pyproject.toml's extras hold every third-party module each part imports (the lesson, the lab and
the command line: none), and requirements.txt installs them all. Slow: a fresh venv with a plain,
non-editable `pip install .` runs the command line; adding `[all]` runs the grader and a notebook;
a student bundle installs as its README says and self-checks a released notebook.
"""

import ast
import json
import os
import re
import subprocess
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
from test_grading_support import INSTRUCTOR, SOURCES, reference_answers, with_answers, write_notebook

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "s09_jsonl_transcript"
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
EXTRAS = PROJECT["optional-dependencies"]
# i18n: the CJK font of plots; the capstone's figure: drawn in the student's notebook, never by the grader
NOTEBOOK_MODULES = ("lessons", "text/bilingual.py", "text/saving.py", "text/i18n.py", "grading/durability/figure.py")


def requirement_name(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def declared(extra: str) -> set:
    return {requirement_name(requirement) for requirement in EXTRAS[extra]}


def third_party_imports(path: Path) -> set:
    """Top-level names of the modules a file imports that are neither the standard library nor the kit."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    # __main__ is the running program (the student's kernel's namespace), not a package
    return {name for name in names if name not in sys.stdlib_module_names
            and name not in ("__main__", "s09_jsonl_transcript")}


def part_of(path: Path) -> str:
    relative = path.relative_to(PACKAGE).as_posix()
    if any(relative == module or relative.startswith(module + "/") for module in NOTEBOOK_MODULES):
        return "notebooks"
    return "grader" if relative.startswith("grading/") else "core"


def distributions(module: str) -> set:
    return {name.lower().replace("_", "-") for name in packages_distributions().get(module, [module])}


def test_the_lesson_and_the_command_line_need_nothing_but_the_standard_library():
    assert PROJECT["dependencies"] == []
    core = {path.relative_to(PACKAGE).as_posix(): third_party_imports(path)
            for path in PACKAGE.rglob("*.py") if part_of(path) == "core"}
    assert "code.py" in core and "cli.py" in core and "lab/transcript.py" in core
    undeclared = {name: sorted(imports) for name, imports in core.items()
                  if any(not distributions(module) & declared("fast") for module in imports)}
    assert not undeclared, f"the stdlib-only part imports (only the optional `fast` extra may be): {undeclared}"
    assert not third_party_imports(PACKAGE / "code.py")  # the lesson: not even the optional one


@pytest.mark.parametrize("part", ["grader", "notebooks"])
def test_every_module_a_part_imports_is_in_its_extra(part):
    imports = set().union(*[third_party_imports(path) for path in PACKAGE.rglob("*.py") if part_of(path) == part])
    assert imports, part
    missing = sorted(module for module in imports if not distributions(module) & declared(part))
    assert not missing, f"the {part} extra does not declare {missing}"


def test_all_holds_every_extra_and_requirements_install_it_editable():
    others = sorted(set(EXTRAS) - {"all"})
    assert others == ["dev", "fast", "grader", "notebooks"]
    [everything] = EXTRAS["all"]
    name, extras = re.fullmatch(r"([\w-]+)\[([\w,]+)\]", everything).groups()
    assert name == PROJECT["name"] and sorted(extras.split(",")) == others
    assert declared("fast") == {"msgspec"}
    lines = [line.strip() for line in (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()]
    assert [line for line in lines if line and not line.startswith("#")] == ["-e .[all]"]


# --------------------------------------------------------------------------- fresh environments


def fresh_shell_environment() -> dict:
    """The environment of a fresh shell: no venv of this test run on PATH, nothing of Python's own."""
    hidden = {str(Path(sys.executable).parent)}
    path = os.pathsep.join(part for part in os.environ.get("PATH", "").split(os.pathsep) if part not in hidden)
    keep = {name: value for name, value in os.environ.items()
            if not name.startswith(("PYTHON", "VIRTUAL_ENV", "PYTEST", "S09_", "JUPYTER"))}
    return {**keep, "PATH": path, "LC_ALL": "C.UTF-8"}


def shell(command: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    done = subprocess.run(["bash", "-c", command], cwd=cwd, env=fresh_shell_environment(), capture_output=True,
                          text=True, timeout=timeout)
    assert done.returncode == 0, f"{command}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.mark.slow
@pytest.mark.prerelease  # a fresh install, as a release is installed: .ci/prerelease
def test_a_plain_install_runs_the_command_line_and_all_runs_the_grader_and_the_notebooks(tmp_path):
    shell(f"python3 -m venv venv && venv/bin/pip install -q '{ROOT}'", tmp_path)
    python = tmp_path / "venv" / "bin" / "python"
    where = shell(f"{python} -c 'import s09_jsonl_transcript; print(s09_jsonl_transcript.__file__)'", tmp_path)
    assert str(tmp_path / "venv") in where.stdout  # installed, not this checkout
    assert "inspect" in shell(f"{python} -m s09_jsonl_transcript --help", tmp_path).stdout
    assert "用法" in shell(f"{python} -m s09_jsonl_transcript --lang zh --help", tmp_path).stdout
    demo = shell(f"{python} -m s09_jsonl_transcript --root demo", tmp_path)
    assert list((tmp_path / "demo").rglob("*.jsonl")), demo.stdout[-500:]

    shell(f"venv/bin/pip install -q '{ROOT}[all]'", tmp_path)
    assert "grade" in shell(f"{python} -m s09_jsonl_transcript.grading --help", tmp_path).stdout
    assert "usage" in shell(f"{python} -m s09_jsonl_transcript.text.bilingual --help", tmp_path).stdout
    graded = shell(f"{python} -m s09_jsonl_transcript.grading grade '{SOURCES['ex01'].path}' --source '{INSTRUCTOR}'"
                   " --reports reports --seed 5", tmp_path)
    assert f"total · 总分: {SOURCES['ex01'].max_score}/{SOURCES['ex01'].max_score}" in graded.stdout
    notebook = tmp_path / "05_memory_gate.ipynb"
    notebook.write_bytes((ROOT / "notebooks" / "en" / notebook.name).read_bytes())
    (tmp_path / "sanitize.cfg").write_bytes((ROOT / "notebooks" / "nbval_sanitize.cfg").read_bytes())
    checked = shell(f"{python} -m pytest -p no:cacheprovider -q --nbval --nbval-current-env "
                    f"--nbval-sanitize-with=sanitize.cfg {notebook.name}", tmp_path)
    assert " passed" in checked.stdout and "failed" not in checked.stdout


def readme_commands(readme: str) -> list:
    """The commands of a bundle's README: its indented lines (Markdown code blocks), in order, once each."""
    found = []
    for line in readme.splitlines():
        if line.startswith("    ") and line.strip() not in found:
            found.append(line.strip())
    return found


@pytest.mark.slow
@pytest.mark.prerelease  # a fresh install, as a release is installed: .ci/prerelease
def test_a_student_bundle_installs_as_its_readme_says_and_self_checks_a_released_notebook(tmp_path):
    from s09_jsonl_transcript.grading.release import write_bundle

    bundle = tmp_path / "handout"
    written = write_bundle(INSTRUCTOR, bundle)
    wheels = [path for path in written if path.suffix == ".whl"]
    assert len(wheels) == 1
    listing = subprocess.run([sys.executable, "-m", "zipfile", "-l", str(wheels[0])], capture_output=True,
                             text=True, check=True).stdout
    assert ".ipynb" not in listing and "instructor" not in listing  # the wheel holds no solutions
    readme = (bundle / "README.md").read_text(encoding="utf-8")
    assert "advice, not your grade" in readme and "只是参考，不是你的成绩" in readme
    assert "Python 3.11" in readme and "Python 3.11" in readme.split("---")[1]
    commands = readme_commands(readme)
    install = [command for command in commands if "pip install" in command]
    selfcheck = [command for command in commands if "--source selfcheck" in command]
    assert len(install) == 1 and len(selfcheck) == 2, commands  # one install line; a self-check per language

    shell(install[0], bundle)
    solved = with_answers("ex01", reference_answers("ex01"))  # a student who solved it, in the released notebook
    write_notebook(bundle / SOURCES["ex01"].path.name, solved)
    visible = sum(check.points for check in SOURCES["ex01"].checks if not check.hidden)
    english = shell(selfcheck[0], bundle)
    assert f"total · 总分: {visible}/{visible}" in english.stdout
    chinese = shell(selfcheck[1], bundle)  # the untouched Chinese notebook: checked, and 0
    assert f"total · 总分: 0/{visible}" in chinese.stdout
    report = json.loads(next((bundle / "artifacts" / "grading").glob("ex01*.json")).read_text(encoding="utf-8"))
    assert report["source"] == "selfcheck"
