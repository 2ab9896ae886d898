"""The kit's one rule for saved notebooks (s09_jsonl_transcript/text/saving.py), on notebooks made here.

A cell tagged machine-dependent is saved with its verdict lines only: no image, no measured number, no
widget that only it showed; a notebook whose verdict failed is not saved at all; and under nbval the fresh
output of such a cell is reduced the same way before it is compared. The saved notebooks themselves are
checked in test_notebooks_saved.py, and rebuilt from scratch in test_notebooks_rebuild.py.
"""

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from s09_jsonl_transcript.text import saving
from s09_jsonl_transcript.text.bilingual import execute

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
PNG = "iVBORw0KGgo="  # the start of a PNG: what nbclient saves for a plot, base64
VIEW = saving.WIDGET_VIEW


def stream(text, name="stdout"):
    return nbformat.v4.new_output("stream", name=name, text=text)


def shown(data):
    return nbformat.v4.new_output("display_data", data=data)


def widget_view(model_id):
    return shown({VIEW: {"model_id": model_id, "version_major": 2, "version_minor": 0}, "text/plain": "IntProgress()"})


def model(name, **state):
    return {"model_module": "@jupyter-widgets/controls", "model_name": name, "model_module_version": "2.0.0",
            "state": state}


def measured_notebook(tags=(saving.MACHINE_DEPENDENT,)):
    """A plot cell as the kit writes one: a live plot and bar, measured numbers, then its verdicts; and a plain cell."""
    plot = nbformat.v4.new_code_cell("plot(); print(summary); print(verdicts)", id="plot",
                                     metadata={"tags": list(tags)}, execution_count=1)
    plot.outputs = [widget_view("b" * 32),
                    shown({"image/png": PNG, "text/plain": "<Figure size 700x400 with 1 Axes>"}),
                    stream("events per second, median: 15,943\n"),
                    stream(saving.verdict(True, "fsync costs more than a bare write") + "\n"),
                    stream("append / SQLite FULL: 1.59\n" + saving.verdict(True, "a batch shares its fsync") + "\n"),
                    nbformat.v4.new_output("execute_result", data={"text/plain": "0.0031"}, execution_count=1)]
    plain = nbformat.v4.new_code_cell("panel.widget", id="plain", execution_count=2)
    plain.outputs = [widget_view("a" * 32), stream("a count that is the same on every run: 30\n")]
    notebook = nbformat.v4.new_notebook(cells=[plot, plain])
    notebook.metadata["widgets"] = {saving.WIDGET_STATE: {"version_major": 2, "version_minor": 0, "state": {
        "a" * 32: model("IntSliderModel", value=3, layout="IPY_MODEL_" + "c" * 32),
        "b" * 32: model("IntProgressModel", value=1287, layout="IPY_MODEL_" + "d" * 32),  # a measured count
        "c" * 32: model("LayoutModel"), "d" * 32: model("LayoutModel")}}}
    return notebook


def test_a_machine_dependent_cell_is_saved_with_its_verdict_lines_only():
    saved = saving.saved_form(measured_notebook())
    plot, plain = saved.cells
    assert plot.outputs == [stream("✔ fsync costs more than a bare write\n✔ a batch shares its fsync\n")]
    assert "image/png" not in nbformat.writes(saved)
    assert plain.outputs[1] == stream("a count that is the same on every run: 30\n"), "an untagged cell is kept whole"


def test_the_widgets_only_a_machine_dependent_cell_showed_are_not_saved():
    saved = saving.saved_form(measured_notebook())
    models = saved.metadata["widgets"][saving.WIDGET_STATE]["state"]
    assert sorted(model["model_name"] for model in models.values()) == ["IntSliderModel", "LayoutModel"]
    assert saved.cells[1].outputs[0].data[VIEW]["model_id"] == f"{1:032x}", "the rest are numbered as before"
    assert "1287" not in nbformat.writes(saved)


def test_without_the_tag_the_same_cell_is_saved_whole():
    saved = saving.saved_form(measured_notebook(tags=()))
    assert len(saved.cells[0].outputs) == 4  # its three adjacent streams joined into one, nothing dropped
    assert len(saved.metadata["widgets"][saving.WIDGET_STATE]["state"]) == 4


def test_a_cell_with_no_verdict_keeps_no_output_but_its_stderr():
    outputs = [stream("12.5 us\n"), stream("a warning\n", name="stderr"), shown({"image/png": PNG})]
    assert saving.verdict_outputs(outputs) == [stream("a warning\n", name="stderr")]


def test_the_saved_form_is_already_saved():
    once = saving.saved_form(measured_notebook())
    assert nbformat.writes(saving.saved_form(nbformat.from_dict(once))) == nbformat.writes(once)


def test_a_notebook_whose_verdict_failed_is_not_saved(tmp_path):
    path = tmp_path / "measured.ipynb"
    path.write_text("as it was", encoding="utf-8")
    notebook = measured_notebook()
    notebook.cells[0].outputs.append(stream(saving.verdict(False, "recover() slowed down more than replay") + "\n"))
    with pytest.raises(RuntimeError, match="code cell 1: a verdict did not hold on this run: ✘ recover"):
        saving.save_checked(saving.saved_form(notebook), path)
    assert path.read_text(encoding="utf-8") == "as it was"
    saving.save_checked(saving.saved_form(measured_notebook()), path)
    assert "✔ a batch shares its fsync" in path.read_text(encoding="utf-8")


def test_a_notebook_that_wrote_to_stderr_or_raised_is_not_saved(tmp_path):
    for bad in (stream("DeprecationWarning\n", name="stderr"),
                nbformat.v4.new_output("error", ename="ValueError", evalue="no", traceback=[])):
        notebook = measured_notebook()
        notebook.cells[1].outputs.append(bad)
        assert saving.refusals(saving.saved_form(notebook)) == [
            f"code cell 2 {'wrote to stderr' if bad.output_type == 'stream' else 'raised'}"]


def nbval_conftest():
    spec = importlib.util.spec_from_file_location("notebooks_conftest", NOTEBOOKS / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_nbval_is_given_the_verdict_lines_of_a_machine_dependent_cell_s_fresh_output():
    """notebooks/conftest.py wraps nbval's compare_outputs(fresh, saved) for tagged cells only."""
    compared = []

    class Cell:  # what the hook reads of an nbval cell item
        def __init__(self, tags):
            self.cell = nbformat.v4.new_code_cell("x", metadata={"tags": tags})

        def compare_outputs(self, test, ref, skip_compare=None):
            compared.append((test, ref))
            return True

    tagged, plain = Cell([saving.MACHINE_DEPENDENT]), Cell([])
    nbval_conftest().pytest_collection_modifyitems([tagged, plain, object()])
    fresh = measured_notebook().cells[0].outputs
    tagged.compare_outputs(fresh, ["saved"])
    plain.compare_outputs(fresh, ["saved"])
    assert compared[0] == (saving.verdict_outputs(fresh), ["saved"])
    assert compared[1] == (fresh, ["saved"])


RANDOM_PLOT_CELL = """import random
from IPython.display import HTML, display
display(HTML(f"<b>{random.random()}</b>"))  # drawn live, never saved
print("measured:", random.random())
print("\\u2714 the claim holds")"""


def nbval_results(folder: Path) -> dict[str, str]:
    """Strict nbval, with notebooks/conftest.py, on the notebooks in folder: {"<stem> cell <n>": PASSED or FAILED}."""
    shutil.copy(NOTEBOOKS / "conftest.py", folder / "conftest.py")
    (folder / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-v", "--nbval",
                          "--nbval-current-env", "-c", str(folder / "pytest.ini"), "--rootdir", str(folder),
                          str(folder)], capture_output=True, text=True, cwd=folder, timeout=300)
    results = {f"{stem} cell {number}": result  # nbval names an item "<stem>::ipynb::Cell <n>"
               for stem, number, result in re.findall(r"^(\w+)\S*::Cell (\d+) (PASSED|FAILED)", run.stdout, re.M)}
    assert results, run.stdout + run.stderr
    return results


@pytest.mark.slow
def test_strict_nbval_compares_only_the_verdicts_of_a_machine_dependent_cell(tmp_path):
    """A real kernel under nbval: a tagged cell whose HTML and numbers change at every run passes; the same
    cell fails when untagged, and when its saved verdict is not the one the run prints."""
    saved = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell(RANDOM_PLOT_CELL, id="plot", metadata={"tags": [saving.MACHINE_DEPENDENT]}),
        nbformat.v4.new_code_cell("print('the same on every run')", id="plain")],
        metadata={"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}})
    tagged = tmp_path / "tagged.ipynb"
    nbformat.write(saved, tagged)
    execute(tagged)  # run and saved through the rule, as `bilingual build` saves a notebook
    (kept,) = nbformat.read(tagged, as_version=4).cells[0].outputs
    assert kept.text == "\u2714 the claim holds\n"
    untagged = nbformat.read(tagged, as_version=4)
    untagged.cells[0].metadata["tags"] = []
    untagged.cells[0].outputs = [stream("measured: 0.5\n\u2714 the claim holds\n")]  # as an untagged save keeps it
    nbformat.write(untagged, tmp_path / "untagged.ipynb")
    other = nbformat.read(tagged, as_version=4)
    other.cells[0].outputs = [stream("\u2714 another claim holds\n")]
    nbformat.write(other, tmp_path / "other_verdict.ipynb")
    assert nbval_results(tmp_path) == {
        "tagged cell 0": "PASSED", "tagged cell 1": "PASSED", "untagged cell 0": "FAILED", "untagged cell 1": "PASSED",
        "other_verdict cell 0": "FAILED", "other_verdict cell 1": "PASSED"}


def test_the_old_names_in_bilingual_still_work_with_a_warning_until_0_3():
    from s09_jsonl_transcript.text import bilingual

    with pytest.warns(DeprecationWarning, match="removed in version 0.3"):
        assert bilingual.tidy is saving.saved_form
    with pytest.warns(DeprecationWarning):
        assert bilingual.save_checked is saving.save_checked
    with pytest.raises(AttributeError):
        bilingual.no_such_name
