"""The lesson map (README and notebook 1) links every section of the lesson text to a place that exists.

Each notebook place names a heading; the test for that notebook fails until the heading is there,
so a renamed heading, or a map that points at a heading not written yet, is caught.
"""

import json
import re
from collections import defaultdict
from pathlib import Path

import pytest

from s09_jsonl_transcript.lessons.lesson_map import LESSON_MAP, lesson_map_markdown, notebook_headings

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"

HEADINGS_BY_NOTEBOOK = defaultdict(set)
for _, _, places in LESSON_MAP:
    for place in places:
        if place.is_notebook and place.heading:
            HEADINGS_BY_NOTEBOOK[place.path].add(place.heading)


def readme_section(title: str) -> str:
    """The body of one '## title' section of the README, up to the next '## ' heading."""
    text = README.read_text(encoding="utf-8")
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## )", text, flags=re.S | re.M)
    assert match, f"the README has no '## {title}' section"
    return match.group(1)


def test_every_section_has_at_least_one_place_and_a_gloss():
    assert len(LESSON_MAP) >= 30
    for section, gloss, places in LESSON_MAP:
        assert section and gloss and places, section
        assert re.search(r"[\u4e00-\u9fff]", section), f"{section!r}: name the section as the lesson does"


def test_the_map_covers_the_lesson_three_common_mistakes_and_three_exercises():
    sections = [section for section, _, _ in LESSON_MAP]
    assert sum(section.startswith("常见误区") for section in sections) == 3
    assert sum(section.startswith("练习") for section in sections) == 3
    assert sum(section.startswith("问题") for section in sections) == 5
    assert sum(section.startswith("为什么选 JSONL") for section in sections) == 5


def test_every_place_exists():
    for _, _, places in LESSON_MAP:
        for place in places:
            assert (REPO / place.path).is_file(), place.path


@pytest.mark.parametrize("notebook", sorted(HEADINGS_BY_NOTEBOOK), ids=lambda path: Path(path).stem)
def test_every_heading_the_map_names_is_in_its_notebook(notebook):
    missing = HEADINGS_BY_NOTEBOOK[notebook] - set(notebook_headings(REPO / notebook))
    assert not missing, f"{notebook} has no heading {sorted(missing)}"


def test_the_readme_shows_the_map_right_after_the_five_ideas():
    text = README.read_text(encoding="utf-8")
    headings = re.findall(r"^## (.+)$", text, flags=re.M)
    assert headings[headings.index("The lesson in five ideas") + 1] == "The lesson map"
    assert lesson_map_markdown(".") in readme_section("The lesson map")


def test_notebook_1_shows_the_same_map_with_links_from_its_folder():
    cells = json.loads((REPO / "notebooks" / "en" / "01_events_on_disk.ipynb").read_text(encoding="utf-8"))["cells"]
    shown = ["".join(output["data"]["text/markdown"]) for cell in cells if cell["cell_type"] == "code"
             for output in cell["outputs"] if "text/markdown" in output.get("data", {})]
    assert lesson_map_markdown("notebooks/en") in shown


def test_links_from_the_notebooks_folder_climb_out_of_it():
    table = lesson_map_markdown("notebooks/en")
    assert "](02_crash_injection.ipynb)" in table and "](../../exercises/ex01_last_turn_replay.ipynb)" in table
    assert "](notebooks/en/" in lesson_map_markdown(".")
