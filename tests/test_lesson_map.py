"""The lesson map (docs/teaching.md in both languages, linked from chapter 1) links every lesson section to a place.

Each notebook place names a heading; the test for that notebook fails until the heading is there,
so a renamed heading, or a map that points at a heading not written yet, is caught. The map exists
in both languages: in Chinese its header and glosses are Chinese and its places are the Chinese
notebooks, with the headings those notebooks have.
"""

import json
import re
from collections import defaultdict
from pathlib import Path

import pytest

from s09_jsonl_transcript.lessons.lesson_map import (
    Place,
    lesson_map,
    lesson_map_markdown,
    notebook_headings,
    translated_heading,
)
from s09_jsonl_transcript.text import i18n
from s09_jsonl_transcript.text.bilingual import numbers_in

REPO = Path(__file__).resolve().parent.parent
TEACHING = REPO / "docs" / "teaching.md"
TEACHING_ZH = REPO / "docs" / "zh" / "teaching.md"
CJK = re.compile(r"[\u4e00-\u9fff]")

HEADINGS_BY_NOTEBOOK = defaultdict(set)
for _, _, places in lesson_map("en"):
    for place in places:
        if place.is_notebook and place.heading:
            HEADINGS_BY_NOTEBOOK[place.path].add(place.heading)


@pytest.fixture(autouse=True)
def english_afterwards():
    yield
    i18n.use("en")


@pytest.mark.parametrize("language", ["en", "zh"])
def test_every_section_has_at_least_one_place_and_a_gloss(language):
    rows = lesson_map(language)
    assert len(rows) >= 30
    for section, gloss, places in rows:
        assert section and gloss and places, section
        assert CJK.search(section), f"{section!r}: name the section as the lesson does"
        assert bool(CJK.search(gloss)) == (language == "zh"), f"{gloss!r} is not in {language}"
    assert [section for section, _, _ in rows] == [section for section, _, _ in lesson_map("en")]


def test_the_map_covers_the_lesson_three_common_mistakes_and_three_exercises():
    sections = [section for section, _, _ in lesson_map()]
    assert sum(section.startswith("常见误区") for section in sections) == 3
    assert sum(section.startswith("练习") for section in sections) == 3
    assert sum(section.startswith("问题") for section in sections) == 5
    assert sum(section.startswith("为什么选 JSONL") for section in sections) == 5


def test_every_place_exists():
    for _, _, places in lesson_map("en"):
        for place in places:
            assert (REPO / place.path).is_file(), place.path


def test_every_chinese_place_exists_and_is_chinese_where_the_kit_has_a_chinese_file():
    for _, _, places in lesson_map("zh"):
        for place in places:
            chinese = place.in_language("zh")
            assert (REPO / chinese.path).is_file(), chinese.path
            twin = (place.path.replace("notebooks/en/", "notebooks/zh/").replace("exercises/", "exercises/zh/")
                    .replace(".svg", ".zh.svg"))
            assert chinese.path == (twin if (REPO / twin).is_file() else place.path)


@pytest.mark.parametrize("notebook", sorted(HEADINGS_BY_NOTEBOOK), ids=lambda path: Path(path).stem)
def test_every_heading_the_map_names_is_in_its_notebook(notebook):
    missing = HEADINGS_BY_NOTEBOOK[notebook] - set(notebook_headings(REPO / notebook))
    assert not missing, f"{notebook} has no heading {sorted(missing)}"


@pytest.mark.parametrize("notebook", sorted(HEADINGS_BY_NOTEBOOK), ids=lambda path: Path(path).stem)
def test_the_chinese_map_names_headings_the_chinese_notebook_has(notebook):
    chinese = REPO / notebook.replace("notebooks/en/", "notebooks/zh/", 1)
    if not chinese.is_file():
        pytest.skip(f"{chinese.name} is not translated yet: the map shows its English headings")
    headings = set(notebook_headings(chinese))
    for heading in HEADINGS_BY_NOTEBOOK[notebook]:
        shown = translated_heading(notebook, heading, "zh")
        assert shown in headings, f"{chinese.name} has no heading {shown!r}"
        assert CJK.search(shown), f"{heading!r} is shown untranslated"


def test_notebooks_1_to_3_are_linked_with_their_chinese_headings():
    place = Place("notebooks/en/03_partial_tail_vs_corruption.ipynb", "The rule: only a partial tail is forgiven")
    chinese = place.in_language("zh")
    assert chinese.path == "notebooks/zh/03_partial_tail_vs_corruption.ipynb"
    assert chinese.heading == "规则：只放过 partial tail"
    assert chinese.markdown("notebooks/zh", "zh") == (
        "[03_partial_tail_vs_corruption](03_partial_tail_vs_corruption.ipynb)：“规则：只放过 partial tail”")
    assert place.in_language("en") == place


def test_a_heading_without_a_translation_is_shown_in_english(tmp_path):
    assert translated_heading("notebooks/en/01_events_on_disk.ipynb", "No such heading", "zh") == "No such heading"


def test_the_teaching_page_shows_the_map_with_links_from_its_folder():
    text = TEACHING.read_text(encoding="utf-8")
    assert "## The lesson map" in text
    assert lesson_map_markdown("docs", language="en") in text


def test_the_chinese_teaching_page_shows_the_chinese_map():
    assert lesson_map_markdown("docs/zh", language="zh") in TEACHING_ZH.read_text(encoding="utf-8")


def test_the_chinese_map_is_chinese_and_links_the_chinese_kit():
    table = lesson_map_markdown(".", language="zh")
    header = table.splitlines()[0]
    assert header == "| 课文章节 | 说明 | 本教具在哪里展示 |"
    assert "](notebooks/zh/01_events_on_disk.ipynb)：“1. 磁盘上的事件" in table
    assert "](images/jsonl-transcript.zh.svg)" in table
    for stem in ("02_crash_injection", "03_partial_tail_vs_corruption"):
        assert f"](notebooks/zh/{stem}.ipynb)：“" in table
    # the notebook's check compares the numbers of both languages' outputs: the two tables hold the same ones
    english = lesson_map_markdown(".", language="en")
    as_output = [{"cell_type": "code", "outputs": [{"output_type": "display_data",
                                                    "data": {"text/markdown": text}}]} for text in (english, table)]
    assert sorted(numbers_in(as_output[0])) == sorted(numbers_in(as_output[1]))


def test_the_language_in_use_is_the_default():
    i18n.use("zh")
    assert lesson_map_markdown("notebooks/zh") == lesson_map_markdown("notebooks/zh", language="zh")
    i18n.use("en")
    assert lesson_map_markdown("notebooks/en") == lesson_map_markdown("notebooks/en", language="en")
    with pytest.raises(ValueError, match="language must be one of"):
        lesson_map_markdown(".", language="fr")


@pytest.mark.parametrize("language, page, heading", [("en", "docs/teaching.md#the-lesson-map", "## The lesson map"),
                                                      ("zh", "docs/zh/teaching.md#课文地图", "## 课文地图")])
def test_chapter_1_links_to_the_map_on_the_teaching_page_of_its_language(language, page, heading):
    path = REPO / "notebooks" / language / "01_events_on_disk.ipynb"
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    markdown = "\n".join("".join(cell["source"]) for cell in cells if cell["cell_type"] == "markdown")
    assert f"](../../{page})" in markdown
    assert f"\n{heading}\n" in (REPO / page.split("#")[0]).read_text(encoding="utf-8")


def test_links_from_the_notebooks_folder_climb_out_of_it():
    table = lesson_map_markdown("notebooks/en", language="en")
    assert "](02_crash_injection.ipynb)" in table and "](../../exercises/ex01_last_turn_replay.ipynb)" in table
    assert "](notebooks/en/" in lesson_map_markdown(".", language="en")
    chinese = lesson_map_markdown("notebooks/zh", language="zh")
    exercises = "exercises/zh" if (REPO / "exercises" / "zh" / "ex01_last_turn_replay.ipynb").is_file() else "exercises"
    assert "](02_crash_injection.ipynb)" in chinese and f"](../../{exercises}/ex01_last_turn_replay.ipynb)" in chinese


def test_notebook_10_shows_the_lesson_s_comparison_with_real_agents_formats():
    rows = {section: places for section, _, places in lesson_map("en")}
    nb10 = "notebooks/en/beyond-s09/10_your_agents_transcript.ipynb"
    for section in ("WorkBuddy 架构对照 · 事件格式", "WorkBuddy 架构对照 · 文件位置", "练习 1. 截断回放",
                    "常见误区：对任意坏行都静默跳过"):
        assert nb10 in [place.path for place in rows[section]], section
    chinese = Place(nb10, "A partial tail").in_language("zh")
    assert chinese.path == "notebooks/zh/beyond-s09/10_your_agents_transcript.ipynb"
    assert chinese.heading == "这里的 partial tail"


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_notebook_beyond_the_lesson_is_named_with_its_folder_in_the_map(language):
    table = lesson_map_markdown(f"docs/{language}".removesuffix("/en"), language=language)
    assert "[beyond-s09/06_crash_lab](" in table and "[06_crash_lab](" not in table
    assert "[05_memory_gate](" in table and "[beyond-s09/05" not in table  # a chapter is named as it was
