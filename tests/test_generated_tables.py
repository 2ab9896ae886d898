"""The READMEs' generated blocks (text/tables.py) are what the code gives today (issue 50).

The list of event types and the exercises' points table are facts of the code: a new type or a new
check changes them by `python -m s09_jsonl_transcript.text.tables` alone, and this test fails until
that has been run.
"""

import re

from s09_jsonl_transcript import code
from s09_jsonl_transcript.grading.source import load_sources
from s09_jsonl_transcript.text import tables


def test_every_generated_block_is_current():
    assert tables.stale_blocks() == [], f"run {tables.COMMAND}"


def test_each_readme_has_both_blocks():
    for path in tables.FILES.values():
        names = [match["name"] for match in tables.BLOCK.finditer(path.read_text(encoding="utf-8"))]
        assert sorted(names) == sorted(tables.BLOCKS), path.name


def test_the_types_list_names_every_type_of_the_table_in_its_order():
    listed = re.findall(r"`([\w-]+)`(?: \(|;|$)", tables.event_types_markdown("en").strip())
    assert listed == list(code.EVENT_TYPES)


def test_the_points_agree_with_the_grader_s_own_reading_of_the_sources():
    sources = load_sources(tables.INSTRUCTOR)
    for row in tables.exercise_rows():
        source = sources[row["stem"][:4]]
        assert row["visible"] + row["hidden"] == source.max_score
        assert row["hidden"] == sum(check.points for check in source.checks if check.hidden)
        assert row["summary"]["en"] and row["summary"]["zh"], f"{row['stem']} needs s09.summary in both languages"


def test_a_stale_block_is_found_and_regenerated():
    text = ("before\n<!-- generated: exercises (x) -->\n| old |\n<!-- end generated: exercises -->\nafter\n")
    fresh = tables.regenerated(text, "en")
    assert "| old |" not in fresh and tables.exercises_markdown("en") in fresh
    assert fresh.startswith("before\n") and fresh.endswith("after\n")
