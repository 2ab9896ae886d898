"""What the saved notebooks show a student who reads them on the web, before running anything.

- No output prints raw HTML markup as text (a widget's HTML value passed to print, say): markup belongs
  in a text/html output, where it is rendered, or is replaced by plain text.
- In notebooks 1-3, each saved widget shows the state that the cell driving it printed: what a
  student sees in the panel after Run All agrees with the text beside it. Both languages are checked
  (notebooks/en and notebooks/zh), each against the module's text in that language.
"""

import html
import json
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # plain pytest module: the panels rebuilt here draw their plots without a display

import pytest  # noqa: E402
from chapter_code import run_cells  # noqa: E402

from s09_jsonl_transcript.lessons import partial_tail_vs_corruption  # noqa: E402
from s09_jsonl_transcript.lessons.events_on_disk import StepperPanel  # noqa: E402
from s09_jsonl_transcript.text import i18n  # noqa: E402
from s09_jsonl_transcript.text.bilingual import notebook_files  # noqa: E402

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
LANGUAGES = ("en", "zh")
ALL_NOTEBOOKS = [*notebook_files("en"), *notebook_files("zh")]  # both languages, the chapters and beyond s09
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


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=lambda path: path.relative_to(NOTEBOOKS).as_posix())
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


@pytest.fixture(autouse=True)
def english_afterwards():
    yield
    i18n.use("en")


def first_number(text: str) -> int:
    return int(re.search(r"\d+", text).group())


@pytest.mark.parametrize("language", LANGUAGES)
def test_notebook_1_saved_panel_shows_what_its_driving_cell_printed(language, tmp_path):
    i18n.use(language)
    notebook = load(NOTEBOOKS / language / "01_events_on_disk.ipynb")
    models = saved_widgets(notebook, driving_cell(notebook, "panel.widget"))
    printed = stdout(driving_cell(notebook, "panel.next_button.click()")).splitlines()
    (status,) = widgets_named(models, "LabelModel")
    (slider,) = widgets_named(models, "IntSliderModel")
    (listing,) = widgets_named(models, "HTMLModel")
    assert status["value"] == printed[-1] and str(slider["value"]) in printed[-1]
    # The same steps, taken again here with the chapter's own code, give the panel the notebook saved.
    chapter = run_cells("01_events_on_disk", ["language", "imports", "envelope", "encode", "transcript",
                                              "plot-growth", "panel"], language=language)
    again = StepperPanel(tmp_path, transcript=chapter["Transcript"], draw=chapter["growth_picture"])
    again.slider.value = slider["value"]
    assert again.status.value == status["value"] and again.listing.value == listing["value"]
    again.remove_file()


@pytest.mark.parametrize("language", LANGUAGES)
def test_notebook_2_saved_panels_show_the_crash_and_the_campaign_printed_beside_them(language):
    i18n.use(language)
    notebook = load(NOTEBOOKS / language / "02_crash_injection.ipynb")
    crash = saved_widgets(notebook, driving_cell(notebook, "crash_panel.widget"))
    printed = stdout(driving_cell(notebook, "crash_panel.crash_button.click()")).splitlines()[-1]
    (slider,) = widgets_named(crash, "IntSliderModel")
    (tear,) = widgets_named(crash, "CheckboxModel")
    (result,) = widgets_named(crash, "HTMLModel")
    assert result["value"] == f"<p>{html.escape(printed)}</p>"
    assert printed.startswith("crash-1.jsonl") and f" {slider['value']} " in printed
    assert tear["value"] and printed.endswith("True")

    campaign = saved_widgets(notebook, driving_cell(notebook, "campaign.widget"))
    (progress,) = widgets_named(campaign, "IntProgressModel")
    (shown,) = widgets_named(campaign, "HTMLModel")
    assert progress["value"] == progress["max"] == 30
    assert " 30 " in shown["value"]  # the round's summary: 30 kills, and nothing lost
    assert shown["value"].endswith("True</p>")


@pytest.mark.parametrize("language", LANGUAGES)
def test_notebook_3_saved_damage_lab_shows_the_verdict_printed_beside_it(language):
    i18n.use(language)
    notebook = load(NOTEBOOKS / language / "03_partial_tail_vs_corruption.ipynb")
    models = saved_widgets(notebook, driving_cell(notebook, "lab.widget"))
    printed = stdout(driving_cell(notebook, "lab.apply_button.click()")).splitlines()
    (picker,) = widgets_named(models, "DropdownModel")
    (position,) = widgets_named(models, "IntSliderModel")
    (result,) = widgets_named(models, "HTMLModel")
    assert picker["_options_labels"][picker["index"]] in printed[0] and printed[0].endswith(str(position["value"]))
    # The panel shows the last result printed: the undamaged file, restored.
    assert printed[-1].endswith(partial_tail_vs_corruption.tr("file restored"))
    assert result["value"].endswith(html.escape(printed[-1]) + "</p>")
