"""What the saved notebooks show a student who reads them on the web, before running anything.

- No output prints raw HTML markup as text (a widget's HTML value passed to print, say): markup belongs
  in a text/html output, where it is rendered, or is replaced by plain text.
- In notebooks 1-3, each saved widget shows the state that the cell driving it printed: what a
  student sees in the panel after Run All agrees with the text beside it.
"""

import html
import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks" / "en"
ALL_NOTEBOOKS = sorted(NOTEBOOKS.parent.glob("*/[0-9][0-9]_*.ipynb"))  # both languages
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"

# An HTML tag as it appears when markup is printed instead of rendered: <p>, <b>, <div style=...>, </span>, <br/>.
# Attributes need an "=", so a Python repr such as <a object at 0x7f...> is not taken for a tag.
MARKUP = re.compile(r"</?(div|table|thead|tbody|tr|td|th|p|b|i|em|strong|span|pre|code|br|small|ul|ol|li|h[1-6]|a|img)"
                    r"(\s[^<>]*=[^<>]*)?\s*/?>")


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def plain_texts(output: dict) -> list[str]:
    """The parts of one output that a notebook shows as plain text: a stream, or a text/plain value."""
    if output["output_type"] == "stream":
        return ["".join(output["text"])]
    plain = output.get("data", {}).get("text/plain")
    return ["".join(plain) if isinstance(plain, list) else plain] if plain else []


def markup_printed_as_text(notebook: dict) -> list[str]:
    """Every plain-text output that holds an HTML tag, as 'cell N: <the tag and what follows>'."""
    found = []
    for number, cell in enumerate(notebook["cells"]):
        for output in cell.get("outputs", []):
            for text in plain_texts(output):
                match = MARKUP.search(text)
                if match:
                    found.append(f"cell {number}: {text[match.start():match.start() + 80]!r}")
    return found


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=lambda path: f"{path.parent.name}/{path.stem}")
def test_no_output_prints_html_markup_as_text(path):
    found = markup_printed_as_text(load(path))
    assert not found, f"{path.name} prints HTML as text (render it, or print plain text):\n  " + "\n  ".join(found)


def test_the_markup_check_can_fail_and_leaves_reprs_alone():
    def notebook(*outputs):
        return {"cells": [{"cell_type": "code", "outputs": list(outputs)}]}

    printed = {"output_type": "stream", "name": "stdout",
               "text": ["<span style='color:red'>&#9632;</span> <b>ok</b>\n"]}
    as_plain = {"output_type": "execute_result", "data": {"text/plain": "'<p>a paragraph</p>'"}}
    assert len(markup_printed_as_text(notebook(printed, as_plain))) == 2
    reprs = [{"output_type": "display_data", "data": {"text/plain": text, "text/html": "<table></table>"}}
             for text in ("<IPython.core.display.HTML object>", "<Figure size 900x400 with 2 Axes>",
                          "<built-in function print>", "<bound method A.b of <A object>>",
                          "<a object at 0x7f00>", "<function <lambda> at 0x7f00>")]
    assert markup_printed_as_text(notebook(*reprs)) == []


# --------------------------------------------------------------------------- saved widgets agree with their text


def driving_cell(notebook: dict, fragment: str) -> dict:
    """The one code cell whose source holds fragment."""
    cells = [cell for cell in notebook["cells"] if cell["cell_type"] == "code" and fragment in "".join(cell["source"])]
    assert len(cells) == 1, f"{len(cells)} cells hold {fragment!r}"
    return cells[0]


def stdout(cell: dict) -> str:
    return "".join("".join(output["text"]) for output in cell["outputs"]
                   if output["output_type"] == "stream" and output["name"] == "stdout")


def saved_widgets(notebook: dict, cell: dict) -> list[dict]:
    """Every widget model saved for the widget the cell displays, its children first to last (depth first)."""
    state = notebook["metadata"]["widgets"][WIDGET_STATE]["state"]
    views = [output["data"][WIDGET_VIEW]["model_id"] for output in cell["outputs"]
             if WIDGET_VIEW in output.get("data", {})]
    assert len(views) == 1, "the cell should display one widget"
    models, pending = [], [views[0]]
    while pending:
        model = state[pending.pop(0)]
        models.append(model)
        pending[:0] = [child.removeprefix("IPY_MODEL_") for child in model["state"].get("children", [])]
    return models


def widgets_named(models: list[dict], name: str) -> list[dict]:
    return [model["state"] for model in models if model["model_name"] == name]


def test_notebook_1_saved_panel_shows_what_its_driving_cell_printed():
    notebook = load(NOTEBOOKS / "01_events_on_disk.ipynb")
    models = saved_widgets(notebook, driving_cell(notebook, "panel.widget"))
    printed = stdout(driving_cell(notebook, "panel.next_button.click()")).splitlines()
    count = int(printed[-1].split(" of ")[0])
    assert printed[-1] == f"{count} of 12 events on disk"
    (status,) = widgets_named(models, "LabelModel")
    (slider,) = widgets_named(models, "IntSliderModel")
    listing, envelope = widgets_named(models, "HTMLModel")
    assert status["value"] == printed[-1] and slider["value"] == count
    assert f"{count} lines" in listing["value"] and f"transcript:session-2:{count}" in envelope["value"]
    last_line = next(line for line in printed if line.startswith("last line on disk: "))
    shown = last_line.removeprefix("last line on disk: ").removesuffix(" ...")
    assert html.escape(shown) in listing["value"]


def test_notebook_2_saved_panels_show_the_crash_and_the_campaign_printed_beside_them():
    notebook = load(NOTEBOOKS / "02_crash_injection.ipynb")
    crash = saved_widgets(notebook, driving_cell(notebook, "crash_panel.widget"))
    printed = stdout(driving_cell(notebook, "crash_panel.crash_button.click()"))
    (slider,) = widgets_named(crash, "IntSliderModel")
    (tear,) = widgets_named(crash, "CheckboxModel")
    (result,) = widgets_named(crash, "HTMLModel")
    assert f"after {slider['value']} acknowledged appends" in printed
    assert ("partial tail:           none" in printed) != tear["value"]
    assert html.escape(printed.strip()) in result["value"]

    campaign = saved_widgets(notebook, driving_cell(notebook, "campaign.widget"))
    summary = stdout(driving_cell(notebook, "campaign.run_button.click()"))
    (progress,) = widgets_named(campaign, "IntProgressModel")
    (shown,) = widgets_named(campaign, "HTMLModel")
    assert progress["value"] == progress["max"] == 30
    assert html.escape(summary.strip()) in shown["value"]


def test_notebook_3_saved_damage_lab_shows_the_verdict_printed_beside_it():
    notebook = load(NOTEBOOKS / "03_partial_tail_vs_corruption.ipynb")
    models = saved_widgets(notebook, driving_cell(notebook, "lab.widget()"))
    printed = stdout(driving_cell(notebook, "lab.apply_button.click()")).splitlines()
    applied = printed[0].split(" - ")[1]
    (picker,) = widgets_named(models, "DropdownModel")
    (position,) = widgets_named(models, "IntSliderModel")
    (result,) = widgets_named(models, "HTMLModel")
    assert applied == f"{picker['_options_labels'][picker['index']]}, line number {position['value']}"
    prefix = "File restored: " if printed[-1].startswith("File restored: ") else ""
    verdict, description = printed[-1].removeprefix(prefix).split(" - ")  # the panel shows the last one printed
    assert result["value"].startswith(html.escape(prefix))
    assert html.escape(verdict) in result["value"] and html.escape(description) in result["value"]
