"""lessons/previous_chapters.py holds code an earlier chapter wrote, exactly as that chapter's cell wrote it.

A later chapter imports what an earlier one wrote instead of writing it again (chapter 4 reads with chapter 3's
read_transcript; chapter 5 joins chapters 1 to 4 with its own gate); what it imports must be what the student
built, word for word (comments and docstrings included), or the later chapter would teach something the earlier
one did not. The first test fails the moment a cell and its copy drift apart.
"""

import ast
import inspect
import json
from pathlib import Path

import pytest
from chapter_texts import python_of

from s09_jsonl_transcript.code import BUG_FIX_SCRIPT, JSONLTranscript, ticking_clock
from s09_jsonl_transcript.lessons import previous_chapters

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks" / "en"
# Each definition kept for a later chapter, and the chapter that wrote it.
KEPT = {**dict.fromkeys(("envelope", "encode", "Transcript"), "01_events_on_disk"),
        **dict.fromkeys(("line_problem", "read_transcript"), "03_partial_tail_vs_corruption"),
        **dict.fromkeys(("event_to_message", "fold", "window_of", "sendable", "messages_of", "replay_state",
                         "recover"), "04_replay_window")}


def definitions_in_cells(notebook: Path) -> dict[str, str]:
    """The source of every function and class a notebook's code cells define, by name."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    found = {}
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        source = python_of("".join(cell["source"]))
        for node in ast.parse(source).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                found[node.name] = ast.get_source_segment(source, node)
    return found


@pytest.mark.parametrize("name", sorted(KEPT))
def test_each_definition_is_the_one_its_chapter_wrote(name):
    written = definitions_in_cells(NOTEBOOKS / f"{KEPT[name]}.ipynb")
    assert name in written, f"{KEPT[name]} no longer defines {name}"
    assert inspect.getsource(getattr(previous_chapters, name)).rstrip("\n") == written[name]


def test_the_module_keeps_nothing_else():
    defined = {node.name for node in ast.parse(inspect.getsource(previous_chapters)).body
               if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    assert defined == set(KEPT)


def test_the_copy_check_can_fail(tmp_path):
    notebook = {"cells": [{"cell_type": "code", "source": ["def encode(record):\n    return b''\n"]}]}
    path = tmp_path / "01_x.ipynb"
    path.write_text(json.dumps(notebook))
    assert definitions_in_cells(path)["encode"] != inspect.getsource(previous_chapters.encode).rstrip("\n")


def test_chapter_1_transcript_writes_code_py_s_bytes(tmp_path):
    """What chapter 1 checks in a cell, checked here too: the later chapters rely on it."""
    (tmp_path / "chapter").mkdir()
    written = previous_chapters.Transcript(tmp_path / "chapter" / "session-1.jsonl", clock=ticking_clock())
    reference = JSONLTranscript(tmp_path / "code-py" / "session-1.jsonl", clock=ticking_clock())
    for event in BUG_FIX_SCRIPT:
        assert written.append(event) == reference.append(event)
    written.close()
    reference.close()
    assert written.path.read_bytes() == reference.path.read_bytes()
