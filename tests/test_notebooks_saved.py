"""The notebooks are saved the way nbval needs them: executed top to bottom, with outputs, each
machine-dependent cell with only its verdict lines, every one of which held; and a student sees where the
lesson ends: its five chapters in notebooks/<language>/, the notebooks beyond it in
notebooks/<language>/beyond-s09/, each of those opening with a banner that says so.

nbval compares each cell against the outputs stored in the file, and skips a cell saved with
execution_count null: a notebook saved unexecuted would pass while checking nothing.
"""

import json
import re
from pathlib import Path

import nbformat
import pytest

from s09_jsonl_transcript.text import saving
from s09_jsonl_transcript.text.bilingual import BEYOND, notebook_files

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
LANGUAGES = ("en", "zh")
LESSON_NOTEBOOKS = [path for language in LANGUAGES for path in notebook_files(language)]  # chapters, then beyond
ABSOLUTE_PATH = re.compile(r"(?<![\w.~])/(tmp|root|home|Users|var|private|work)/[\w.-]+")
CHAPTERS = ["01_events_on_disk", "02_crash_injection", "03_partial_tail_vs_corruption", "04_replay_window",
            "05_memory_gate"]
# What a notebook beyond the lesson opens with, in each language: the words of its banner, up to its question.
BANNER = {"en": "> **Beyond s09.** The lesson ends with chapter 5, [05_memory_gate](../05_memory_gate.ipynb). "
                "This notebook goes past it to answer a question production asks: **",
          "zh": "> **s09 之外。** 课文到第 5 章 [05_memory_gate](../05_memory_gate.ipynb) 就讲完了。"
                "本笔记本越过课文，回答一个生产环境会问的问题：**"}
QUESTION_MARK = {"en": "?**", "zh": "？**"}


def code_cells(path):
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [cell for cell in cells if cell["cell_type"] == "code" and "".join(cell["source"]).strip()]


def test_the_lesson_s_chapters_come_first_and_the_notebooks_beyond_it_follow_in_their_own_folder():
    for language in LANGUAGES:
        chapters = [path.stem for path in sorted((NOTEBOOKS / language).glob("*.ipynb"))]
        assert chapters == CHAPTERS, f"notebooks/{language}/ holds the lesson's chapters and nothing else"
        beyond = [path.stem for path in sorted((NOTEBOOKS / language / BEYOND).glob("*.ipynb"))]
        assert len(beyond) >= 4, beyond
        # the numbers go on from chapter 5, so "notebook 6" names one notebook across the kit
        assert [stem[:2] for stem in CHAPTERS + beyond] == [f"{n:02d}" for n in range(1, len(CHAPTERS + beyond) + 1)]
        assert [path.relative_to(NOTEBOOKS / language).as_posix() for path in notebook_files(language)] == [
            *(f"{stem}.ipynb" for stem in chapters), *(f"{BEYOND}/{stem}.ipynb" for stem in beyond)]
    assert ([path.relative_to(NOTEBOOKS / "en") for path in notebook_files("en")]
            == [path.relative_to(NOTEBOOKS / "zh") for path in notebook_files("zh")])


@pytest.mark.parametrize("path", LESSON_NOTEBOOKS, ids=lambda path: path.relative_to(NOTEBOOKS).as_posix())
def test_a_notebook_beyond_the_lesson_opens_with_a_banner_that_says_so_and_names_its_question(path):
    language = path.relative_to(NOTEBOOKS).parts[0]
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    first = "".join(cells[0]["source"])
    if path.parent.name != BEYOND:
        assert not any(BANNER[language] in "".join(cell["source"]) for cell in cells), "a chapter is the lesson"
        return
    assert cells[0]["cell_type"] == "markdown" and first.startswith(BANNER[language]), first[:200]
    assert QUESTION_MARK[language] in first.split("\n", 1)[0], "the banner's first line ends on its question"
    assert (path.parent / "../05_memory_gate.ipynb").resolve().is_file()
    assert len(first) < 800, "a banner is short"


@pytest.mark.parametrize("path", LESSON_NOTEBOOKS, ids=lambda path: path.relative_to(NOTEBOOKS).as_posix())
def test_saved_after_a_clean_top_to_bottom_run(path):
    cells = code_cells(path)
    counts = [cell["execution_count"] for cell in cells]
    assert None not in counts, "a code cell was saved unexecuted: nbval would check nothing there"
    assert counts == list(range(1, len(cells) + 1)), "cells were not run once each, top to bottom"
    assert any(cell["outputs"] for cell in cells), "saved without outputs"


@pytest.mark.parametrize("path", LESSON_NOTEBOOKS, ids=lambda path: path.relative_to(NOTEBOOKS).as_posix())
def test_no_errors_warnings_or_machine_specific_paths_in_outputs(path):
    for number, cell in enumerate(code_cells(path), start=1):
        for output in cell["outputs"]:
            assert output["output_type"] != "error", f"cell {number} saved with an error"
            assert output.get("name") != "stderr", f"cell {number} wrote to stderr"
            text = json.dumps(output.get("text", "")) + json.dumps(output.get("data", {}).get("text/plain", ""))
            assert not ABSOLUTE_PATH.search(text), f"cell {number} shows an absolute path"


@pytest.mark.parametrize("path", LESSON_NOTEBOOKS, ids=lambda path: path.relative_to(NOTEBOOKS).as_posix())
def test_machine_dependent_cells_are_saved_with_their_verdicts_only_and_every_saved_verdict_held(path):
    """The rule of saving.py, read back from the file: a tagged cell keeps its verdict lines and nothing else
    (no plot, no measured number), and no cell was saved with a verdict that failed."""
    for number, cell in enumerate(nbformat.read(path, as_version=4).cells, start=1):
        if cell.cell_type != "code":
            continue
        if saving.is_machine_dependent(cell):
            assert cell.outputs == saving.verdict_outputs(cell.outputs), f"cell {number} keeps more than its verdicts"
        printed = "".join(output.get("text", "") for output in cell.outputs if output.output_type == "stream")
        failed = [line for line in printed.splitlines() if line.startswith(saving.FAILS)]
        assert not failed, f"cell {number} was saved with a verdict that failed: {failed}"
