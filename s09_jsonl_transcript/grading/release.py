"""Make what students get from the instructor sources, and refresh the sources' saved outputs.

- `student_notebook`: answers replaced by stubs that raise NotImplementedError, hidden cells
  removed, no outputs. These are the notebooks in exercises/.
- The Chinese student notebooks, exercises/zh/exNN_name.ipynb: the English student notebook with
  the Chinese text of its markdown cells from exercises/zh/text/exNN_name.md (the format of
  notebooks/zh/text/, built with `bilingual`'s functions). Cell ids, answer and check cells and the
  s09 metadata are the English notebook's (plus s09.language = "zh"), and so is the code: a setup or
  answer cell's section in the same text file gives its Chinese comments and docstrings, and may
  differ from the English code in nothing else (bilingual.same_code), so the grader grades either
  language's notebook the same way; checks print in both languages.
- `selfcheck_notebook`: the same stubs and no hidden cells, but the visible checks keep their
  saved pass lines, so a student can grade against it without the instructor's copy.
- `write_bundle`: a student-only folder holding both kinds, in both languages, and neither
  solutions nor hidden checks.
- `refresh`: run the instructor sources top to bottom and save them with outputs (the pristine
  copies the grader compares against).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from . import kit
from .source import (
    ANSWER,
    BEGIN_SOLUTION,
    CHECK,
    END_SOLUTION,
    KIND_SELFCHECK,
    METADATA_KEY,
    ExerciseSource,
    SourceError,
    cell_role,
    is_hidden,
    load_source,
    load_sources,
    notebook_json,
)

bilingual = kit.bilingual()  # the exercises' Chinese text beside their English notebooks

STUB = 'raise NotImplementedError("replace this line with your answer · 把这一行换成你的答案")'
SELFCHECK_FOLDER = "selfcheck"
CHINESE_FOLDER = "zh"  # the Chinese student notebooks, beside the English ones
TEXT_FOLDER = "text"  # exercises/zh/text: the Chinese text of their markdown cells
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
BUNDLE_README = """\
# s09 exercises · s09 练习

## Install, once · 安装（只需一次）

Python 3.11 or newer. In this folder, one command makes an environment in `.venv` and installs the
kit with what the notebooks and the self-check need:

    python3 -m venv .venv && .venv/bin/pip install "./{wheel}[notebooks,grader]"

Every command below runs the environment's Python, `.venv/bin/python`, as written (on Windows:
`.venv\\Scripts\\python`); or enter it once with `source .venv/bin/activate` and type `python`.

## Work · 做练习

    .venv/bin/jupyter lab

Work in the exercise notebooks (exNN_*.ipynb): write your code in the cells under "Your answer"
and run the notebook top to bottom; every check prints one "passed" line or says what went wrong.

## Self-check · 自检

Save the notebook, then:

    .venv/bin/python -m s09_jsonl_transcript.grading grade ex01_last_turn_replay.ipynb --source selfcheck

It runs your answers in a fresh kernel against the visible checks and prints a score out of their
points. That score is advice, not your grade: the course's grader also runs hidden checks on other
inputs, which this folder does not hold. The folder selfcheck/ holds the visible checks' expected
outputs; leave it as it is.

---

中文练习在 zh/ 文件夹里（文件名和英文版相同）。

安装（只需一次）：需要 Python 3.11 或更新的版本。在这个文件夹里，下面一条命令在 `.venv` 里建好环境，
并装上本套件以及笔记本和自检所需的一切：

    python3 -m venv .venv && .venv/bin/pip install "./{wheel}[notebooks,grader]"

下面的命令都照原样用环境里的 Python，`.venv/bin/python`（Windows 上是 `.venv\\Scripts\\python`）；也可以先用
`source .venv/bin/activate` 进入环境，然后直接输入 `python`。

做练习：运行 `.venv/bin/jupyter lab`，在"你的答案"下面的单元里写代码，然后从头到尾运行笔记本；每个检查
要么打印一行"通过"，要么说明哪里出了错。

自检：先保存笔记本，然后运行

    .venv/bin/python -m s09_jsonl_transcript.grading grade zh/ex01_last_turn_replay.ipynb --source selfcheck

它在一个新内核里用可见检查检验你的答案，给出这些检查的得分。这个分数只是参考，不是你的成绩：课程的
评分程序还会用别的输入运行隐藏检查，而这个文件夹里没有隐藏检查。selfcheck/ 文件夹存放可见检查的预期
输出，两种语言共用；请不要改动它。
"""


def kit_checkout() -> Path | None:
    """The checkout this package runs from (the folder holding its pyproject.toml), or None."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "pyproject.toml").is_file() and (root / kit.KIT).is_dir() else None


def build_kit_wheel(folder) -> Path:
    """Build the kit's wheel (no solutions: they live in exercises/, outside the package) into folder."""
    root = kit_checkout()
    if root is None:
        raise SourceError("release --bundle builds the kit's wheel for students: run it from the kit's checkout")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", str(folder),
                           str(root)], capture_output=True, text=True)
    built = sorted(folder.glob(f"{kit.KIT}-*.whl"))
    if done.returncode != 0 or not built:
        raise SourceError(f"pip could not build the kit's wheel: {done.stderr.strip()[-600:]}")
    return built[-1]


def stub_solutions(code: str, where: str = "answer cell") -> str:
    """Replace every BEGIN/END SOLUTION region with a stub that raises NotImplementedError."""
    kept, inside, regions = [], False, 0
    for line in code.split("\n"):
        marker = line.strip()
        if marker == BEGIN_SOLUTION:
            if inside:
                raise SourceError(f"{where}: {BEGIN_SOLUTION} inside another solution region")
            inside, regions = True, regions + 1
            indent = line[: len(line) - len(line.lstrip())]
            kept.append(indent + STUB)
        elif marker == END_SOLUTION:
            if not inside:
                raise SourceError(f"{where}: {END_SOLUTION} without {BEGIN_SOLUTION}")
            inside = False
        elif not inside:
            kept.append(line)
    if inside:
        raise SourceError(f"{where}: {BEGIN_SOLUTION} is never closed")
    if not regions:
        raise SourceError(f"{where}: no {BEGIN_SOLUTION} region, so release would give the answer away")
    return "\n".join(kept)


def _public_cells(source: ExerciseSource) -> list:
    """Copies of the source's cells without hidden ones, answers stubbed, metadata reduced to s09."""
    cells = []
    for cell in source.fresh_notebook().cells:
        if is_hidden(cell):
            continue
        role = cell_role(cell)
        cell.metadata = {METADATA_KEY: role} if role else {}
        if role.get("role") == ANSWER:
            cell.source = stub_solutions(cell.source, f"{source.path.name}, cell {cell.id}")
        cells.append(cell)
    return cells


def _notebook(source: ExerciseSource, cells: list, **extra_info) -> nbformat.NotebookNode:
    notebook = nbformat.v4.new_notebook()
    notebook.nbformat_minor = max(notebook.nbformat_minor, 5)  # 4.5 and later keep cell ids
    notebook.metadata = {
        "kernelspec": dict(KERNELSPEC),
        "language_info": {"name": "python"},
        METADATA_KEY: {"exercise": source.exercise, "title": source.title, **extra_info},
    }
    if source.crash_graded is not None:  # a self-check grades it the same way; a replay finds its answer cell
        notebook.metadata[METADATA_KEY]["crash_graded"] = source.crash_graded
    notebook.cells = cells
    return notebook


def student_notebook(source: ExerciseSource) -> nbformat.NotebookNode:
    """The notebook a student works in: stubs, no hidden cells, no outputs, checks locked."""
    cells = _public_cells(source)
    for cell in cells:
        if cell.cell_type != "code":
            continue
        cell.outputs, cell.execution_count = [], None
        role = cell_role(cell).get("role")
        if role in (ANSWER, CHECK):
            cell.metadata["deletable"] = False
        if role == CHECK:
            cell.metadata["editable"] = False  # JupyterLab honours these two flags
    return _notebook(source, cells)


def selfcheck_notebook(source: ExerciseSource) -> nbformat.NotebookNode:
    """A pristine copy without solutions or hidden checks: what a student grades against."""
    return _notebook(source, _public_cells(source), kind=KIND_SELFCHECK)


# --------------------------------------------------------------------------- the Chinese notebooks


def text_folder_of(source_folder) -> Path:
    """Where the Chinese text of the exercises lives: exercises/zh/text beside exercises/instructor."""
    return Path(source_folder).parent / CHINESE_FOLDER / TEXT_FOLDER


def translation_pair(name: str, out_folder, text_folder) -> bilingual.Pair:
    """One exercise in both languages: out/<name>.ipynb, out/zh/<name>.ipynb and the Chinese text."""
    out_folder = Path(out_folder)
    return bilingual.Pair(name, out_folder / f"{name}.ipynb", out_folder / CHINESE_FOLDER / f"{name}.ipynb",
                          Path(text_folder) / f"{name}.md", language_cell=False)


_TEXT_HEADER = ("<!-- The Chinese text of exercises/zh/{name}.ipynb: one section per markdown cell of "
                "exercises/{name}.ipynb (written by `python -m s09_jsonl_transcript.grading release`; "
                "see s09_jsonl_transcript/grading/release.py). -->\n")


def _exercise_header(pair: bilingual.Pair) -> None:
    """bilingual writes the notebooks' header line; an exercise's text file names the exercise instead.

    read_text ignores everything before the first section, so only this line changes.
    """
    lines = pair.text.read_text(encoding="utf-8").split("\n", 1)
    pair.text.write_text(_TEXT_HEADER.format(name=pair.name) + lines[1], encoding="utf-8")


def extract_text(pair: bilingual.Pair) -> list:
    """Bring the exercise's Chinese text up to date with its English notebook; the cell ids that need work."""
    work = bilingual.extract(pair)
    _exercise_header(pair)
    return work


def accept_text(pair: bilingual.Pair) -> tuple:
    """Mark the translated sections done (see bilingual.accept): (ids accepted, ids still todo)."""
    accepted, left = bilingual.accept(pair)
    _exercise_header(pair)
    return accepted, left


def chinese_json(pair: bilingual.Pair) -> str:
    """The Chinese student notebook's file contents, from the English one on disk and the Chinese text."""
    try:
        return notebook_json(bilingual.chinese_notebook(pair))
    except ValueError as error:  # a markdown cell without a section
        raise SourceError(f"{error}; run `python -m s09_jsonl_transcript.grading release`, then translate") from None


def translation_problems(source_folder, out_folder=None, text_folder=None) -> list:
    """Every way the two languages of the released exercises disagree (todo or stale text, stale notebook)."""
    out_folder = Path(out_folder or Path(source_folder).parent)
    text_folder = text_folder or text_folder_of(source_folder)
    found, names = [], set()
    for source in load_sources(source_folder).values():
        pair = translation_pair(source.path.stem, out_folder, text_folder)
        found += [f"{pair.name}: {problem}" for problem in bilingual.problems(pair)]
        names.add(pair.name)
    found += [f"{path}: a Chinese text for no exercise" for path in sorted(Path(text_folder).glob("*.md"))
              if path.stem not in names]
    return found


# --------------------------------------------------------------------------- release


def release(source_folder, out_folder, *, text_folder=None, extract: bool | None = None) -> list:
    """Write the student notebooks of every exercise in source_folder, both languages; return the paths.

    The English ones go to out_folder, the Chinese ones to out_folder/zh, built from the Chinese
    text in text_folder (default: exercises/zh/text beside the sources). With extract, that text is
    first brought up to date (new or changed English cells become todo sections); by default only
    when out_folder is the folder above the sources (exercises/), never for a release elsewhere.
    """
    out_folder = Path(out_folder)
    text_folder = Path(text_folder or text_folder_of(source_folder))
    if extract is None:
        extract = out_folder.resolve() == Path(source_folder).resolve().parent
    (out_folder / CHINESE_FOLDER).mkdir(parents=True, exist_ok=True)
    written = []
    for source in load_sources(source_folder).values():
        path = out_folder / source.path.name
        path.write_text(notebook_json(student_notebook(source)), encoding="utf-8")
        written.append(path)
        pair = translation_pair(source.path.stem, out_folder, text_folder)
        if extract:
            extract_text(pair)
        pair.chinese.write_text(chinese_json(pair), encoding="utf-8")
        written.append(pair.chinese)
    return written


def write_bundle(source_folder, bundle_folder, *, with_kit: bool = True) -> list:
    """Write a student-only bundle: the student notebooks in both languages, selfcheck/ copies, the kit's
    wheel (with_kit) and a README saying how to install and self-check."""
    bundle_folder = Path(bundle_folder)
    written = release(source_folder, bundle_folder)
    wheel = build_kit_wheel(bundle_folder) if with_kit else None
    if wheel:
        written.append(wheel)
    selfcheck = bundle_folder / SELFCHECK_FOLDER
    selfcheck.mkdir(exist_ok=True)
    for source in load_sources(source_folder).values():
        path = selfcheck / source.path.name
        path.write_text(notebook_json(selfcheck_notebook(source)), encoding="utf-8")
        written.append(path)
    readme = bundle_folder / "README.md"
    wheel_name = wheel.name if wheel else f"{kit.KIT}-<version>-py3-none-any.whl"
    readme.write_text(BUNDLE_README.format(wheel=wheel_name), encoding="utf-8")
    return written + [readme]


def stale_notebooks(source_folder, out_folder, text_folder=None) -> list:
    """Student notebooks in out_folder (exNN_name.ipynb, zh/exNN_name.ipynb) that differ from what release writes.

    Writes nothing: the Chinese notebook is compared with the one built from the English notebook
    release would write and the Chinese text as it is.
    """
    out_folder = Path(out_folder)
    text_folder = text_folder or text_folder_of(source_folder)
    stale = []
    with tempfile.TemporaryDirectory(prefix="s09-release-") as scratch:
        for source in load_sources(source_folder).values():
            expected = notebook_json(student_notebook(source))
            path = out_folder / source.path.name
            if not path.exists() or path.read_text(encoding="utf-8") != expected:
                stale.append(path.name)
            built = translation_pair(source.path.stem, scratch, text_folder)  # the same relative paths
            built.english.write_text(expected, encoding="utf-8")
            chinese = out_folder / CHINESE_FOLDER / source.path.name
            try:
                expected_chinese = chinese_json(built)
            except SourceError:
                expected_chinese = None
            if not chinese.exists() or chinese.read_text(encoding="utf-8") != expected_chinese:
                stale.append(f"{CHINESE_FOLDER}/{source.path.name}")
    return stale


def refresh(source_folder, *, timeout: float = 120) -> list:
    """Run every instructor source top to bottom and save it with its outputs; return the paths.

    Each runs in an empty temporary folder, and is saved to a file beside the source first: only
    when that file is a source the grader accepts (every check saved its one pass line) does it
    replace the source. Raises SourceError, and leaves the source as it was, when a check does not
    pass.
    """
    paths = sorted(Path(source_folder).glob("ex[0-9][0-9]_*.ipynb"))
    for path in paths:
        notebook = nbformat.read(path, as_version=4)
        for cell in notebook.cells:
            cell.metadata.pop("execution", None)  # timings left by other tools would make noisy diffs
        with tempfile.TemporaryDirectory(prefix="s09-refresh-") as folder:
            client = NotebookClient(notebook, timeout=timeout, kernel_name="python3",
                                    record_timing=False, resources={"metadata": {"path": folder}})
            try:
                client.execute()
            except Exception as error:  # nbclient raises CellExecutionError and kernel errors
                raise SourceError(f"{path.name}: the reference run failed: {error}") from None
        for cell in notebook.cells:
            if cell.cell_type == "code":
                cell.outputs = coalesced(cell.outputs)
        _replace_when_valid(path, notebook_json(notebook))
    return paths


def coalesced(outputs: list) -> list:
    """The outputs with each run of stream outputs to the same stream joined into one (as a reader sees them).

    A kernel may send one line in several messages on a busy machine; saved apart, they would make
    a check's single pass line look like two outputs.
    """
    joined = []
    for output in outputs:
        if (joined and output.get("output_type") == "stream" and joined[-1].get("output_type") == "stream"
                and joined[-1].get("name") == output.get("name")):
            joined[-1]["text"] = joined[-1]["text"] + output["text"]
        else:
            joined.append(output)
    return joined


def _replace_when_valid(path: Path, text: str) -> None:
    """Write text to a file beside path; replace path with it only when it is a source the grader accepts."""
    fresh = path.with_name(f".{path.stem}.refreshing.ipynb")
    fresh.write_text(text, encoding="utf-8")
    try:
        load_source(fresh)
    except SourceError as error:
        fresh.unlink()
        raise SourceError(f"{path.name} left as it was: {str(error).replace(fresh.name, path.name)}") from None
    fresh.replace(path)
