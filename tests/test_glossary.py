"""One word per concept in each language: the glossary's 'not used' words stay out of the notebooks.

A notebook may name them in one markdown cell, the one that introduces the kit's word with its
synonyms; anywhere else they are the drift the glossary exists to stop.
"""

import json
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
GLOSSARY = REPO / "notebooks" / "glossary.md"


def avoided_words() -> dict[str, list[str]]:
    """The kit's English word of each concept, and the words the kit does not use for it."""
    rows = [line for line in GLOSSARY.read_text(encoding="utf-8").splitlines() if line.startswith("| ")][2:]
    words = {}
    for row in rows:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        words[cells[2]] = [word.strip() for word in cells[4].split(",") if word.strip()]
    return words


def markdown_cells(path: Path) -> list[str]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "markdown"]


NOTEBOOKS = sorted((REPO / "notebooks").glob("*/[0-9][0-9]_*.ipynb"))


def test_the_glossary_has_one_row_per_concept_with_both_languages():
    rows = [line for line in GLOSSARY.read_text(encoding="utf-8").splitlines() if line.startswith("| ")][2:]
    english = [[c.strip() for c in row.strip("|").split("|")][2] for row in rows]
    chinese = [[c.strip() for c in row.strip("|").split("|")][3] for row in rows]
    assert len(rows) >= 20 and all(english) and all(chinese)
    assert len(set(english)) == len(english) and len(set(chinese)) == len(chinese)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: f"{path.parent.name}/{path.stem}")
def test_words_the_kit_does_not_use_appear_in_one_cell_at_most(path):
    cells = markdown_cells(path)
    for concept, words in avoided_words().items():
        for word in words:
            pattern = re.compile(re.escape(word), re.IGNORECASE)
            holding = [n for n, text in enumerate(cells) if pattern.search(text)]
            assert len(holding) <= 1, f"{word!r} (the kit says {concept!r}) in markdown cells {holding}"


def test_the_check_can_fail(tmp_path):
    notebook = {"cells": [{"cell_type": "markdown", "source": ["a torn tail here"]},
                          {"cell_type": "markdown", "source": ["and a torn tail there"]}]}
    path = tmp_path / "01_x.ipynb"
    path.write_text(json.dumps(notebook))
    with pytest.raises(AssertionError, match="torn tail"):
        test_words_the_kit_does_not_use_appear_in_one_cell_at_most(path)
