"""Rebuilding every notebook with no source change changes no line (issue 50), in both languages.

Each notebook is built again (`bilingual build`: the Chinese notebook from the English one and its text,
then both run top to bottom and saved by saving.py's rule) in a copy of notebooks/, and compared line by
line with the saved one. A cell whose output depends on the machine shows up here unless it is tagged
machine-dependent and prints only verdicts that hold on every run; the failure names each such cell, and
each widget whose saved state changed. It also fails when a saved notebook is stale (its source changed
and nobody rebuilt it). It costs one build of every notebook: about 75 s on 2 cores (slow tier).
"""

import difflib
import json
import shutil
from pathlib import Path

import nbformat
import pytest

from s09_jsonl_transcript.text import bilingual, saving

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
PLACES = [pair.place for pair in bilingual.pairs()]


def changed_lines(before: str, after: str) -> int:
    """How many lines a diff of the two texts adds or removes."""
    return sum(1 for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
               if line.startswith(("+", "-")) and not line.startswith(("+++", "---")))


def differences(saved: nbformat.NotebookNode, rebuilt: nbformat.NotebookNode) -> list[str]:
    """What changed from the saved notebook to the rebuilt one, cell by cell and widget by widget, in words."""
    found = []
    if [cell.id for cell in saved.cells] != [cell.id for cell in rebuilt.cells]:
        return ["the cells are not the same cells: the saved notebook is stale (run bilingual build)"]
    for number, (before, after) in enumerate(zip(saved.cells, rebuilt.cells), start=1):
        if before.source != after.source:
            found.append(f"cell {number} ({before.id}): its source changed: the saved notebook is stale")
        elif before.get("outputs") != after.get("outputs"):
            if saving.is_machine_dependent(before):
                found.append(f"cell {number} ({before.id}, machine-dependent): a verdict line changed: a verdict "
                             "must hold on every run, with a margin wide enough for a loaded machine")
            else:
                found.append(f"cell {number} ({before.id}): its output changed: if it depends on the machine, tag "
                             f"it {saving.MACHINE_DEPENDENT!r} and print verdict lines (saving.verdict)")
        elif before.metadata != after.metadata:
            found.append(f"cell {number} ({before.id}): its metadata changed")
    models = [notebook.metadata.get("widgets", {}).get(saving.WIDGET_STATE, {}).get("state", {})
              for notebook in (saved, rebuilt)]
    for model_id in sorted(set(models[0]) | set(models[1])):
        if models[0].get(model_id) != models[1].get(model_id):
            name = (models[0].get(model_id) or models[1][model_id])["model_name"]
            found.append(f"widget {model_id.lstrip('0')} ({name}): its saved state changed: a widget's saved "
                         "value must not depend on the machine")
    if not found and saved != rebuilt:
        found.append("the notebook's metadata changed")
    return found


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    """A copy of notebooks/ (both languages, the Chinese texts) to rebuild in."""
    folder = tmp_path_factory.mktemp("rebuild") / "notebooks"
    shutil.copytree(NOTEBOOKS, folder)
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("place", PLACES)
def test_a_rebuild_with_no_source_change_changes_no_line(copy, place):
    pair = bilingual.Pair.named(place, copy)
    bilingual.build(pair)
    found = []
    for rebuilt in (pair.english, pair.chinese):
        saved = NOTEBOOKS / rebuilt.relative_to(copy)
        lines = changed_lines(saved.read_text(encoding="utf-8"), rebuilt.read_text(encoding="utf-8"))
        if lines:
            found.append(f"{saved.relative_to(NOTEBOOKS)}: {lines} lines changed")
            found += ["  " + difference for difference in differences(nbformat.read(saved, as_version=4),
                                                                      nbformat.read(rebuilt, as_version=4))]
    assert not found, "\n".join(found)


def notebook(*cells, widgets=None):
    made = nbformat.v4.new_notebook(cells=list(cells))
    if widgets:
        made.metadata["widgets"] = {saving.WIDGET_STATE: {"state": widgets}}
    return made


def code(cell_id, printed, tags=()):
    cell = nbformat.v4.new_code_cell("print(result)", id=cell_id, metadata={"tags": list(tags)})
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=printed)]
    return cell


def test_the_differences_name_an_untagged_cell_a_changed_verdict_and_a_widget():
    timing = [code("timing", "12.5 us\n"), code("timing", "13.1 us\n")]
    verdicts = [code("plot", "✔ fsync costs more\n", [saving.MACHINE_DEPENDENT]),
                code("plot", "✘ fsync costs more\n", [saving.MACHINE_DEPENDENT])]
    bars = [{"b" * 32: {"model_name": "IntProgressModel", "state": {"value": value}}} for value in (1287, 1322)]
    saved = notebook(timing[0], verdicts[0], code("same", "30\n"), widgets=bars[0])
    rebuilt = notebook(timing[1], verdicts[1], code("same", "30\n"), widgets=bars[1])
    found = differences(saved, rebuilt)
    assert [line.split(":")[0] for line in found] == [
        "cell 1 (timing)", "cell 2 (plot, machine-dependent)", f"widget {'b' * 32} (IntProgressModel)"]
    assert "tag it 'machine-dependent'" in found[0]
    assert differences(saved, nbformat.from_dict(json.loads(json.dumps(saved)))) == []
    assert changed_lines(nbformat.writes(saved), nbformat.writes(rebuilt)) == 6  # 3 lines out, 3 in
