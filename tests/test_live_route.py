"""The live route of docs/teaching.md through notebooks 1 to 5 and its extras in 6 and 7, run as an instructor runs it.

Each notebook is run top to bottom in its own kernel (Run All), then the route's widget actions
(tests/live_route.py) are run in that same kernel, in order, twice. Every action must change what its
widget shows, show what the route promises in the notebook's language, and leave no error and no stderr
behind. The route is run in both languages: notebooks/en and notebooks/zh.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from live_route import ROUTE, step_cell
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
LANGUAGES = ("en", "zh")
ROUNDS = 2


def run_with_route(path: Path, steps, language: str = "en") -> list[list[dict]]:
    """Run the notebook, then each step ROUNDS times; return the outputs of the step cells."""
    notebook = nbformat.read(path, as_version=4)
    first_step = len(notebook.cells)
    notebook.cells += [new_code_cell(step_cell(step, language)) for _ in range(ROUNDS) for step in steps]
    # coalesce_streams: on a busy machine a kernel may send one print's "ok" and its newline apart
    client = NotebookClient(notebook, timeout=300, kernel_name="python3", record_timing=False,
                            coalesce_streams=True, resources={"metadata": {"path": str(path.parent)}})
    client.execute()  # raises CellExecutionError on the first cell that fails
    for number, cell in enumerate(notebook.cells[:first_step], start=1):
        for output in cell.get("outputs", []):
            assert output.get("name") != "stderr", f"cell {number} of the Run All wrote to stderr: {output['text']}"
    return [cell.outputs for cell in notebook.cells[first_step:]]


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("name", list(ROUTE))
def test_the_route_runs_twice_after_run_all(name, language):
    steps = ROUTE[name]
    outputs = run_with_route(NOTEBOOKS / language / name, steps, language)
    assert len(outputs) == ROUNDS * len(steps)
    for number, (step, cell_outputs) in enumerate(zip(steps * ROUNDS, outputs), start=1):
        assert [(output["output_type"], output.get("name"), output.get("text")) for output in cell_outputs] == [
            ("stream", "stdout", "ok\n")], f"step {number} ({step.settings}): {cell_outputs}"


def test_a_step_that_changes_nothing_fails(tmp_path):
    """The route's check can fail: pressing Replay on the window already shown changes only the press count,
    and a step whose text is not shown is reported."""
    from live_route import Step

    path = tmp_path / "probe.ipynb"
    notebook = nbformat.v4.new_notebook(cells=[new_code_cell("class W:\n    value = 'same'\nw = W()")])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, path)
    unchanged = Step("probe", "nothing", "pass", "w.value", "same")
    with pytest.raises(Exception, match="did not change the result"):
        run_with_route(path, [unchanged])
    not_shown = Step("probe", "a change", "w.value = 'other'", "w.value", "never shown")
    with pytest.raises(Exception, match="AssertionError"):
        run_with_route(path, [not_shown])


def test_every_step_says_what_it_shows_in_both_languages():
    """A step shows one text in both languages only when the text is the library's own (an error message)."""
    for name, steps in ROUTE.items():
        for step in steps:
            english, chinese = step.shown("en"), step.shown("zh")
            if isinstance(step.shows, dict):
                assert english != chinese and any("\u4e00" <= c <= "\u9fff" for c in chinese), (name, step.settings)
            else:
                assert not any("\u4e00" <= c <= "\u9fff" for c in english), (name, step.settings)
