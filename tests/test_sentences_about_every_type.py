"""The sentences that speak of every event type stay true when the lesson's table changes (issue 50).

Texts never count the types (tests/test_stated_counts.py), but a few say "every event type" or list the
types one by one, because that is what a student needs to read there. A type added to code.EVENT_TYPES
makes each of these tests fail, naming what to update, instead of leaving a false sentence behind:
the scripted session that notebooks 1 and 5 say uses every type, chapter 4's table of what each type
becomes in messages[], and chapter 5's list of the types the gate refuses.
"""

import json
import re
from pathlib import Path

import pytest

from s09_jsonl_transcript.code import BUG_FIX_SCRIPT, EVENT_TYPES, MEMORY_ELIGIBLE_EVENT_TYPES

ROOT = Path(__file__).resolve().parents[1]
LANGUAGES = ["en", "zh"]


def markdown_cell(notebook: str, language: str, starts: str) -> str:
    """The markdown cell of the notebook (by stem) that holds the code span `starts` at the start of a line
    or table row, in the given language: its text."""
    path = ROOT / "notebooks" / language / f"{notebook}.ipynb"
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    found = [text for text in ("".join(cell["source"]) for cell in cells if cell["cell_type"] == "markdown")
             if re.search(starts, text, re.MULTILINE)]
    assert len(found) == 1, f"{path.name}: {len(found)} cells match {starts!r}"
    return found[0]


def code_spans(text: str) -> set:
    return set(re.findall(r"`([^`]+)`", text))


def test_the_scripted_session_uses_every_type_of_the_table():
    """MockLLM's docstring and notebooks 1 and 5 say the bug-fix session uses every event type."""
    used = {event["type"] for event in BUG_FIX_SCRIPT}
    assert used == set(EVENT_TYPES), f"add an event of each new type to code.BUG_FIX_SCRIPT: {set(EVENT_TYPES) - used}"


@pytest.mark.parametrize("language", LANGUAGES)
def test_chapter_4_s_table_says_what_every_type_becomes(language):
    table = markdown_cell("04_replay_window", language, r"^\| `function_call_result` \|")
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    named = set().union(*(code_spans(row.split("|")[1]) for row in rows))
    assert named == set(EVENT_TYPES), f"chapter 4's table of types ({language}): {named ^ set(EVENT_TYPES)}"


@pytest.mark.parametrize("language", LANGUAGES)
def test_chapter_5_lists_every_type_the_gate_refuses(language):
    listed = markdown_cell("05_memory_gate", language, r"^- `reasoning`")
    items = [line for line in listed.splitlines() if line.startswith("- ")]
    named = set().union(*(code_spans(item) for item in items))
    refused = set(EVENT_TYPES) - MEMORY_ELIGIBLE_EVENT_TYPES
    assert refused <= named, f"chapter 5's list of refused types ({language}) leaves out {refused - named}"
    assert not named & MEMORY_ELIGIBLE_EVENT_TYPES
