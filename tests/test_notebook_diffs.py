"""Saved notebooks change only where their content does (issue 44): a reviewer reads the diff.

nbclient records each cell's execution timestamps and ipywidgets gives every widget a random model id;
saved as they come, a rebuild that changed one sentence rewrote every timestamp and every widget id.
saving.saved_form() (the kit's one rule for saved notebooks) saves neither, and coalesces a cell's stream
outputs; test_notebook_saving.py checks what it keeps of a machine-dependent cell.
"""

import difflib
import json
import re
from pathlib import Path

import nbformat
import pytest

from s09_jsonl_transcript.text.bilingual import execute, notebook_files
from s09_jsonl_transcript.text.saving import saved_form

ROOT = Path(__file__).resolve().parent.parent
SAVED = [*notebook_files("en"), *notebook_files("zh")]  # the chapters and the notebooks beyond s09
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
NUMBERED_ID = re.compile(r"0{16}[0-9a-f]{16}")


@pytest.mark.parametrize("path", SAVED, ids=lambda path: path.relative_to(ROOT / "notebooks").as_posix())
def test_a_saved_notebook_holds_no_run_dependent_metadata(path):
    notebook = json.loads(path.read_text(encoding="utf-8"))
    for number, cell in enumerate(notebook["cells"], start=1):
        assert "execution" not in cell.get("metadata", {}), f"cell {number} keeps its execution timestamps"
        streams = [output.get("name") for output in cell.get("outputs", []) if output["output_type"] == "stream"]
        outputs = [output.get("name") for output in cell.get("outputs", [])]
        assert all(a != b for a, b in zip(outputs, outputs[1:]) if a in streams), f"cell {number}: not coalesced"
    models = notebook["metadata"].get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    assert all(NUMBERED_ID.fullmatch(model_id) for model_id in models), "widget ids are random, not numbered"


def toy_notebook(sentence: str) -> nbformat.NotebookNode:
    """A small notebook with what makes big diffs: several prints, a plot, widgets."""
    cells = [
        nbformat.v4.new_code_cell("import ipywidgets as widgets\nimport matplotlib.pyplot as plt"),
        nbformat.v4.new_code_cell(f"print({sentence!r})\nfor n in range(3):\n    print('line', n)"),
        nbformat.v4.new_code_cell("fig, ax = plt.subplots(figsize=(3, 2))\nax.plot([1, 2, 3])\nplt.show()"),
        nbformat.v4.new_code_cell("widgets.VBox([widgets.Button(description='Next'), widgets.IntSlider(3)])"),
        nbformat.v4.new_code_cell("widgets.HTML('<b>done</b>')"),
    ]
    for number, cell in enumerate(cells):
        cell.id = f"cell-{number}"
    return nbformat.v4.new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "language": "python",
                                                                          "display_name": "Python 3"}})


@pytest.mark.slow
def test_changing_one_printed_sentence_changes_a_few_lines_of_the_saved_notebook(tmp_path):
    path = tmp_path / "toy.ipynb"
    saved = []
    for sentence in ("The file grows by one line per event.", "The file grows by exactly one line per event."):
        nbformat.write(toy_notebook(sentence), path)
        execute(path)
        saved.append(path.read_text(encoding="utf-8").splitlines())
    changed = [line for line in difflib.unified_diff(*saved, lineterm="", n=0)
               if line.startswith(("+", "-")) and not line.startswith(("+++", "---"))]
    assert 0 < len(changed) < 20, "\n".join(changed)


def test_the_saved_form_coalesces_streams_and_numbers_widget_ids():
    notebook = toy_notebook("hello")
    notebook.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="a\n"),
                                 nbformat.v4.new_output("stream", name="stdout", text="b\n")]
    notebook.cells[1].metadata["execution"] = {"iopub.status.busy": "2026-12-04T00:00:00Z"}
    random_id = "9f" * 16
    notebook.cells[3].outputs = [nbformat.v4.new_output(
        "display_data", data={"application/vnd.jupyter.widget-view+json": {"model_id": random_id}})]
    notebook.metadata["widgets"] = {WIDGET_STATE: {"state": {random_id: {"state": {"layout": "IPY_MODEL_x"}}}}}
    tidied = saved_form(notebook)
    assert [output.text for output in tidied.cells[1].outputs] == ["a\nb\n"]
    assert "execution" not in tidied.cells[1].metadata
    first = f"{1:032x}"
    assert tidied.cells[3].outputs[0].data["application/vnd.jupyter.widget-view+json"]["model_id"] == first
    assert list(tidied.metadata["widgets"][WIDGET_STATE]["state"]) == [first]
