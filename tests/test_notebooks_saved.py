"""The lesson notebooks are saved the way nbval needs them: executed top to bottom, with outputs.

nbval compares each cell against the outputs stored in the file, and skips a cell saved with
execution_count null: a notebook saved unexecuted would pass while checking nothing.
"""

import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
LANGUAGES = ("en", "zh")
LESSON_NOTEBOOKS = sorted(NOTEBOOKS.glob("*/[0-9][0-9]_*.ipynb"))  # notebooks/en and notebooks/zh
ABSOLUTE_PATH = re.compile(r"(?<![\w.~])/(tmp|root|home|Users|var|private|work)/[\w.-]+")


def code_cells(path):
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [cell for cell in cells if cell["cell_type"] == "code" and "".join(cell["source"]).strip()]


def test_the_lesson_notebooks_exist_in_both_languages():
    english = [path.name for path in sorted((NOTEBOOKS / "en").glob("[0-9][0-9]_*.ipynb"))]
    assert len(english) >= 8, english
    assert [name[:2] for name in english] == [f"{n:02d}" for n in range(1, len(english) + 1)]
    assert {path.parent.name for path in LESSON_NOTEBOOKS} <= set(LANGUAGES)


@pytest.mark.parametrize("path", LESSON_NOTEBOOKS, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_saved_after_a_clean_top_to_bottom_run(path):
    cells = code_cells(path)
    counts = [cell["execution_count"] for cell in cells]
    assert None not in counts, "a code cell was saved unexecuted: nbval would check nothing there"
    assert counts == list(range(1, len(cells) + 1)), "cells were not run once each, top to bottom"
    assert any(cell["outputs"] for cell in cells), "saved without outputs"


@pytest.mark.parametrize("path", LESSON_NOTEBOOKS, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_no_errors_warnings_or_machine_specific_paths_in_outputs(path):
    for number, cell in enumerate(code_cells(path), start=1):
        for output in cell["outputs"]:
            assert output["output_type"] != "error", f"cell {number} saved with an error"
            assert output.get("name") != "stderr", f"cell {number} wrote to stderr"
            text = json.dumps(output.get("text", "")) + json.dumps(output.get("data", {}).get("text/plain", ""))
            assert not ABSOLUTE_PATH.search(text), f"cell {number} shows an absolute path"
