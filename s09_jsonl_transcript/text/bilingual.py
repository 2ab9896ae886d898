"""The notebooks in two languages from one source: build the Chinese notebooks, and check both agree.

    python -m s09_jsonl_transcript.text.bilingual extract    add the new or changed English cells to the Chinese text
    python -m s09_jsonl_transcript.text.bilingual accept     mark the translated sections done (they hold Chinese)
    python -m s09_jsonl_transcript.text.bilingual build      write notebooks/zh/*.ipynb and run both languages
    python -m s09_jsonl_transcript.text.bilingual check      exit 1 (saying why) when the two languages disagree
    python -m s09_jsonl_transcript.text.bilingual tidy       re-save the notebooks in their saved form (saving.py)

The English notebook (notebooks/en/NN_name.ipynb for a chapter of the lesson, notebooks/en/beyond-s09/
NN_name.ipynb for a notebook beyond it) is the source of the structure and the code. The Chinese notebook
has the same place under notebooks/zh/. The Chinese text of its markdown cells lives in one folder for
both parts, notebooks/zh/text/NN_name.md, one section per markdown cell:

    <!-- cell 3b953fd5 | en 1a2b3c4d -->
    # 1. 磁盘上的事件 ...

"cell" is the cell's id in both notebooks; "en" fingerprints the English text that was
translated, so a change to the English cell marks its translation stale. A section whose
text still needs translating says "todo" instead of a fingerprint. The Chinese notebook is
the English one with that text in its markdown cells and one code line changed: the first
code cell's `i18n.use("en")` becomes `i18n.use("zh")`.

A code cell may have a section too (the exercises' setup and answer cells do): the Chinese version
of the cell, whose comments and docstrings are Chinese. It must be the English code but for its
comments and docstrings (same_code), so both languages run the same program; "en" fingerprints the
English code, and a change to it marks the section stale like a markdown cell's.
"""

from __future__ import annotations

import argparse
import ast
import copy
import hashlib
import os
import re
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import nbformat

from . import saving

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
LANGUAGE_LINE = {"en": 'i18n.use("en")', "zh": 'i18n.use("zh")'}
_SECTION = re.compile(r"^<!-- cell (?P<id>[\w-]+) \| en (?P<fingerprint>[0-9a-f]{8}|todo) -->\n", re.M)
BEYOND = "beyond-s09"  # notebooks/<language>/beyond-s09/: the notebooks that go past the lesson's five chapters
PARTS = ("", BEYOND)  # in reading order: the lesson's chapters, then the notebooks beyond s09
NOTEBOOK_NAME = "[0-9][0-9]_*.ipynb"
_HEADER = "<!-- The Chinese text of notebooks/zh/{name}.ipynb: one section per markdown cell of " \
          "notebooks/en/{name}.ipynb (see s09_jsonl_transcript/text/bilingual.py). -->\n"
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:[.,]\d+)*")
_TAG = re.compile(r"<[^>]+>")

MOVED_TO_SAVING = {"tidy": "saved_form", "save_checked": "save_checked"}  # in 0.2; the old names go in 0.3


def __getattr__(name: str):
    """bilingual.tidy and bilingual.save_checked, moved to saving.py in 0.2: they work, with a warning, until 0.3."""
    if name not in MOVED_TO_SAVING:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(f"{__name__}.{name} moved to {saving.__name__}.{MOVED_TO_SAVING[name]}; the old name is removed "
                  "in version 0.3", DeprecationWarning, stacklevel=2)
    return getattr(saving, MOVED_TO_SAVING[name])


@dataclass(frozen=True)
class Pair:
    """One notebook in both languages, and the Chinese text of its markdown cells."""

    name: str
    english: Path
    chinese: Path
    text: Path
    language_cell: bool = True  # the first code cell says i18n.use("en"); exercises print both languages instead

    @classmethod
    def named(cls, name: str, folder: Path = NOTEBOOKS) -> Pair:
        """The pair for notebooks/en/<name>.ipynb, or for notebooks/en/beyond-s09/<name>.ipynb when that is where
        the notebook is (a name may also be given with its part: "beyond-s09/06_crash_lab")."""
        name = Path(name).name
        part = next((part for part in PARTS if (folder / "en" / part / f"{name}.ipynb").is_file()), "")
        return cls(name, folder / "en" / part / f"{name}.ipynb", folder / "zh" / part / f"{name}.ipynb",
                   folder / "zh" / "text" / f"{name}.md")

    @property
    def place(self) -> str:
        """Where the notebook is inside notebooks/<language>/, without .ipynb: "01_events_on_disk",
        "beyond-s09/06_crash_lab"."""
        return f"{BEYOND}/{self.name}" if self.english.parent.name == BEYOND else self.name


def pairs(folder: Path = NOTEBOOKS) -> list[Pair]:
    """Every English notebook's pair, in reading order: the lesson's chapters, then the notebooks beyond s09."""
    return [Pair.named(path.stem, folder) for path in notebook_files("en", folder)]


def notebook_files(language: str, folder: Path = NOTEBOOKS) -> list[Path]:
    """The saved notebooks of one language (notebooks/<language>/), in reading order: the chapters, then beyond s09."""
    return [path for part in PARTS for path in sorted((folder / language / part).glob(NOTEBOOK_NAME))]


def fingerprint(text: str) -> str:
    """Eight hex digits that change whenever the English text does."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]


# --------------------------------------------------------------------------- the Chinese text


@dataclass(frozen=True)
class Section:
    """The Chinese text of one markdown cell, and the fingerprint of the English it translates."""

    cell_id: str
    english_fingerprint: str  # "todo" while it still needs translating
    text: str


def read_text(path: Path) -> dict[str, Section]:
    """The sections of a Chinese text file, by cell id; a repeated id raises ValueError."""
    if not path.exists():
        return {}
    content = path.read_text(encoding="utf-8")
    marks = list(_SECTION.finditer(content))
    sections = {}
    for mark, following in zip(marks, marks[1:] + [None]):
        body = content[mark.end(): following.start() if following else len(content)]
        cell_id = mark["id"]
        if cell_id in sections:
            raise ValueError(f"{path.name}: cell {cell_id} has two sections")
        sections[cell_id] = Section(cell_id, mark["fingerprint"], body.strip("\n"))
    return sections


def write_text(path: Path, name: str, sections: list[Section]) -> None:
    """Write the sections, in the given order, as a Chinese text file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    parts = [_HEADER.format(name=name)]
    for section in sections:
        parts.append(f"\n<!-- cell {section.cell_id} | en {section.english_fingerprint} -->\n{section.text}\n")
    path.write_text("".join(parts), encoding="utf-8")


def extract(pair: Pair) -> list[str]:
    """Bring the Chinese text up to date with the English notebook; return the cell ids that need work.

    Sections of cells that no longer exist are dropped; new cells get a section holding the
    English text, marked todo; a section whose English changed keeps its old Chinese text and
    is marked todo too.
    """
    english = nbformat.read(pair.english, as_version=4)
    old = read_text(pair.text)
    sections, work = [], []
    for cell in english.cells:
        if cell.cell_type != "markdown" and cell.id not in old:  # a code cell keeps English code unless translated
            continue
        current = fingerprint(cell.source)
        section = old.get(cell.id)
        if section is None:
            section = Section(cell.id, "todo", cell.source)
        elif section.english_fingerprint not in (current, "todo"):
            section = Section(cell.id, "todo", section.text)
        if section.english_fingerprint == "todo":
            work.append(cell.id)
        sections.append(section)
    write_text(pair.text, pair.place, sections)
    return work


def accept(pair: Pair) -> tuple[list[str], list[str]]:
    """Mark translated sections done: each todo section whose text holds Chinese gets the English fingerprint.

    Returns (the cell ids accepted, the cell ids still todo because their text has no Chinese).
    """
    english = {cell.id: cell.source for cell in nbformat.read(pair.english, as_version=4).cells}
    sections, accepted, left = [], [], []
    for section in read_text(pair.text).values():
        if section.english_fingerprint == "todo":
            if has_chinese(section.text):
                section = Section(section.cell_id, fingerprint(english[section.cell_id]), section.text)
                accepted.append(section.cell_id)
            else:
                left.append(section.cell_id)
        sections.append(section)
    write_text(pair.text, pair.place, sections)
    return accepted, left


def has_chinese(text: str) -> bool:
    """True when text holds at least one CJK ideograph."""
    return any("\u4e00" <= character <= "\u9fff" for character in text)


# --------------------------------------------------------------------------- building


def chinese_notebook(pair: Pair) -> nbformat.NotebookNode:
    """The Chinese notebook: the English one, its markdown replaced, its language line switched, no outputs."""
    english = nbformat.read(pair.english, as_version=4)
    sections = read_text(pair.text)
    chinese = copy.deepcopy(english)
    chinese.metadata["language_info"] = english.metadata.get("language_info", {})
    source = Path(os.path.relpath(pair.english, pair.chinese.parent)).as_posix()
    chinese.metadata.setdefault("s09", {}).update({"language": "zh", "source": source})  # keeps an exercise's id
    for cell in chinese.cells:
        if cell.cell_type == "markdown":
            section = sections.get(cell.id)
            if section is None:
                raise ValueError(f"{pair.text.name}: no Chinese text for markdown cell {cell.id} (run extract)")
            cell.source = section.text
        elif cell.cell_type == "code":
            cell.source = chinese_code(cell, sections)
            cell.outputs, cell.execution_count = [], None
    return chinese


def chinese_code(english_cell, sections: dict) -> str:
    """A code cell's Chinese source: its section when it has one (Chinese comments), else the English code."""
    section = sections.get(english_cell.id)
    source = section.text if section is not None else english_cell.source
    return source.replace(LANGUAGE_LINE["en"], LANGUAGE_LINE["zh"])


def _without_docstrings(tree: ast.AST) -> str:
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(body, list) and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree)


def same_code(english: str, chinese: str) -> bool:
    """True when two cells are one program: the same code once comments and docstrings are left out."""
    try:
        return _without_docstrings(ast.parse(english)) == _without_docstrings(ast.parse(chinese))
    except SyntaxError:
        return english == chinese


def execute(path: Path, timeout: int = 120) -> float:
    """Run a notebook top to bottom in its own folder and save it with its outputs; return the seconds taken.

    What is saved is the notebook's saved form (saving.saved_form: the kit's one rule for saved notebooks),
    through saving.save_checked: a temporary file next to the notebook replaces it only when no cell raised,
    wrote to stderr or printed a verdict that failed (a build under load never leaves a broken notebook
    behind)."""
    from nbclient import NotebookClient

    notebook = nbformat.read(path, as_version=4)
    started = time.monotonic()
    NotebookClient(notebook, timeout=timeout, kernel_name="python3", record_timing=False,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    elapsed = time.monotonic() - started
    saving.save_checked(saving.saved_form(notebook), path)
    return elapsed


def build(pair: Pair, *, run: bool = True) -> dict:
    """Write the Chinese notebook from the English one and the Chinese text, then run both languages."""
    pair.chinese.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(chinese_notebook(pair), pair.chinese)
    seconds = {}
    if run:
        for language, path in (("en", pair.english), ("zh", pair.chinese)):
            seconds[language] = round(execute(path), 1)
    return seconds


# --------------------------------------------------------------------------- checking


def problems(pair: Pair) -> list[str]:
    """Every way the two languages of one notebook disagree; empty when they agree."""
    found = []
    if not pair.chinese.exists():
        return [f"{pair.chinese.name}: the Chinese notebook is missing (run build)"]
    english = nbformat.read(pair.english, as_version=4)
    chinese = nbformat.read(pair.chinese, as_version=4)
    sections = read_text(pair.text)
    if [(c.id, c.cell_type) for c in english.cells] != [(c.id, c.cell_type) for c in chinese.cells]:
        found.append("the two notebooks do not have the same cells in the same order "
                     f"(en {len(english.cells)} cells, zh {len(chinese.cells)})")
        return found
    cell_ids = {c.id for c in english.cells if c.cell_type in ("markdown", "code")}
    for extra in sorted(set(sections) - cell_ids):
        found.append(f"{pair.text.name}: section for cell {extra}, which the English notebook does not have")
    for en_cell, zh_cell in zip(english.cells, chinese.cells):
        where = f"cell {en_cell.id}"
        if en_cell.cell_type == "markdown":
            section = sections.get(en_cell.id)
            if section is None:
                found.append(f"{where}: no Chinese text")
            elif section.english_fingerprint == "todo":
                found.append(f"{where}: the Chinese text is marked todo")
            elif section.english_fingerprint != fingerprint(en_cell.source):
                found.append(f"{where}: the English text changed after it was translated")
            elif zh_cell.source != section.text:
                found.append(f"{where}: the Chinese notebook is stale (run build)")
        elif en_cell.cell_type == "code":
            section = sections.get(en_cell.id)
            if section is not None and section.english_fingerprint == "todo":
                found.append(f"{where}: the Chinese code is marked todo")
            elif section is not None and section.english_fingerprint != fingerprint(en_cell.source):
                found.append(f"{where}: the English code changed after its comments were translated")
            elif section is not None and not same_code(en_cell.source, section.text):
                found.append(f"{where}: the Chinese code is not the English code (only comments and docstrings "
                             "may differ)")
            elif zh_cell.source != chinese_code(en_cell, sections):
                found.append(f"{where}: the code differs between the languages")
            elif not output_ignored(en_cell) and sorted(numbers_in(en_cell)) != sorted(numbers_in(zh_cell)):
                found.append(f"{where}: the outputs hold different numbers "
                             f"(en {sorted(numbers_in(en_cell))[:8]}..., zh {sorted(numbers_in(zh_cell))[:8]}...)")
    first_code = next((c for c in english.cells if c.cell_type == "code"), None)
    if pair.language_cell and (first_code is None or LANGUAGE_LINE["en"] not in first_code.source):
        found.append(f"the first code cell of {pair.english.name} must say {LANGUAGE_LINE['en']}")
    return found


def orphans(folder: Path = NOTEBOOKS) -> list[str]:
    """Chinese notebooks and text files with no English notebook in the same place (one moved, or removed)."""
    expected = {path for pair in pairs(folder) for path in (pair.chinese, pair.text)}
    chinese = [path for part in PARTS for path in (folder / "zh" / part).glob("*.ipynb")]
    chinese += list((folder / "zh" / "text").glob("*.md"))
    return sorted(str(path.relative_to(folder)) for path in chinese if path not in expected)


def output_ignored(cell) -> bool:
    """True when nbval does not compare the cell's output (timings, say): its numbers change from run to run."""
    marked = any(line.strip() == "# NBVAL_IGNORE_OUTPUT" for line in cell.source.splitlines())
    return marked or "nbval-ignore-output" in cell.get("metadata", {}).get("tags", [])


def numbers_in(cell) -> list[str]:
    """The numbers a code cell's outputs show (text, HTML without its tags), in order."""
    texts = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            texts.append(output.get("text", ""))
        for mime in ("text/plain", "text/html", "text/markdown"):
            value = output.get("data", {}).get(mime)
            if value and "application/vnd.jupyter.widget-view+json" not in output.get("data", {}):
                texts.append(_TAG.sub(" ", value if isinstance(value, str) else "".join(value)))
    return [number.replace(",", "") for text in texts for number in _NUMBER.findall(text)]


# --------------------------------------------------------------------------- command line


def main(argv=None) -> int:
    """The command line; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m s09_jsonl_transcript.text.bilingual",
                                     description="Build and check the Chinese notebooks from the English ones.")
    parser.add_argument("command", choices=("extract", "accept", "build", "check", "tidy"))
    parser.add_argument("names", nargs="*", help="notebook names (default: all), e.g. 01_events_on_disk 06_crash_lab")
    parser.add_argument("--no-run", action="store_true", help="build: write the notebooks without running them")
    args = parser.parse_args(argv)
    chosen = [Pair.named(name) for name in args.names] if args.names else pairs()
    status = 0
    for pair in chosen:
        if args.command == "extract":
            work = extract(pair)
            print(f"{pair.name}: {len(work)} section(s) to translate" + (f": {', '.join(work)}" if work else ""))
        elif args.command == "accept":
            accepted, left = accept(pair)
            print(f"{pair.name}: {len(accepted)} section(s) accepted" + (f"; still todo (no Chinese): {', '.join(left)}"
                                                                      if left else ""))
        elif args.command == "build":
            seconds = build(pair, run=not args.no_run)
            print(f"{pair.name}: built" + (f", run in {seconds} s" if seconds else " (not run)"))
        elif args.command == "tidy":
            for path in (pair.english, pair.chinese):
                saving.save_checked(saving.saved_form(nbformat.read(path, as_version=4)), path)
            print(f"{pair.name}: tidied")
        else:
            found = problems(pair)
            status |= bool(found)
            print(f"{pair.name}: " + ("the two languages agree" if not found else "\n  " + "\n  ".join(found)))
    if args.command == "check" and not args.names:
        for orphan in orphans():
            status = 1
            print(f"{orphan}: has no English notebook")
    return status


if __name__ == "__main__":
    sys.exit(main())
