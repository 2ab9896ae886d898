"""How every notebook of the kit is saved: one rule, so that a rebuild with no source change changes no line.

A notebook is saved after a clean top-to-bottom run, in its saved form (saved_form):

- no execution metadata (timestamps), each cell's stream outputs coalesced, widget model ids numbered
  in the order the cells show them instead of random ones;
- a cell tagged MACHINE_DEPENDENT ("machine-dependent": timings, kill counts, measured plots) keeps only
  its verdict lines. Its images, its other text and the widgets only it shows are drawn live for the
  reader and never saved.

A verdict line starts with HOLDS ("✔ ") when its claim held on this run, FAILS ("✘ ") when it did not;
verdict(holds, sentence) writes one. Its sentence names a side, never a measured value ("fsync costs
more than a bare write", "no trial lost an event"), with a margin wide enough to hold on a loaded
machine, so that it reads the same on any run on any machine. save_checked refuses a notebook in which
a cell raised, wrote to stderr or printed a verdict that failed: a saved verdict always holds.

Under nbval (notebooks/conftest.py), a tagged cell's fresh output goes through verdict_outputs, the
reduction saved_form applies, before it is compared with the saved one: only its verdict lines (and
anything it wrote to stderr, or an error) are compared.

Every save of a notebook in the kit goes through saved_form: `bilingual build` and `bilingual tidy`
for the notebooks; the exercises' refresh should call it on the notebook it ran, before it saves it.
This module needs nbformat and the standard library only.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import nbformat

MACHINE_DEPENDENT = "machine-dependent"  # the cell tag: this cell's output depends on the machine
HOLDS = "✔ "  # a verdict line that held on this run
FAILS = "✘ "  # a verdict line that did not
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
_MODEL_ID = re.compile(r"[0-9a-f]{32}")


def verdict(holds: bool, sentence: str) -> str:
    """The verdict line for sentence: marked HOLDS when holds is true, FAILS when not."""
    return (HOLDS if holds else FAILS) + sentence


def is_verdict(line: str) -> bool:
    """True when line is a verdict line (it starts with HOLDS or FAILS)."""
    return line.startswith((HOLDS, FAILS))


def is_machine_dependent(cell) -> bool:
    """True when the cell carries the MACHINE_DEPENDENT tag."""
    return MACHINE_DEPENDENT in cell.get("metadata", {}).get("tags", [])


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else value


def verdict_outputs(outputs: list) -> list:
    """What a machine-dependent cell keeps of its outputs: one stdout stream with its verdict lines, in
    order (none when it printed no verdict), then whatever it wrote to stderr and any error, as they came.

    Images, displayed values, widgets and every other line of text are left out. The same reduction
    serves the save and nbval's comparison, so both see the same thing."""
    printed = "".join(_text(output.get("text", "")) for output in outputs
                      if output.get("output_type") == "stream" and output.get("name") == "stdout")
    verdicts = "".join(line for line in printed.splitlines(keepends=True) if is_verdict(line))
    kept = [nbformat.v4.new_output("stream", name="stdout", text=verdicts)] if verdicts else []
    return kept + [output for output in outputs if output.get("output_type") == "error"
                   or (output.get("output_type") == "stream" and output.get("name") == "stderr")]


def coalesced(outputs: list) -> list:
    """The outputs with each run of stream outputs to the same stream joined into one, as a reader sees them
    (a kernel may send one line in several messages on a busy machine)."""
    merged = []
    for output in outputs:
        previous = merged[-1] if merged else None
        if (output.get("output_type") == "stream" and previous is not None
                and previous.get("output_type") == "stream" and previous.get("name") == output.get("name")):
            previous["text"] = _text(previous["text"]) + _text(output["text"])
        else:
            merged.append(output)
    return merged


def saved_form(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The notebook as the kit saves it (changed in place, and returned): see the module's docstring."""
    dropped_views = []
    for cell in notebook.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type != "code":
            continue
        outputs = coalesced(cell.outputs)
        if is_machine_dependent(cell):
            dropped_views += _views(outputs)
            outputs = verdict_outputs(outputs)
        cell.outputs = outputs
    _drop_widgets_only_shown_by(dropped_views, notebook)
    _number_widget_ids(notebook)
    return notebook


def _views(outputs: list) -> list[str]:
    """The widget model ids the outputs display."""
    return [output["data"][WIDGET_VIEW]["model_id"] for output in outputs
            if WIDGET_VIEW in output.get("data", {})]


def _widget_models(notebook: nbformat.NotebookNode) -> dict:
    return notebook.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})


def _reachable(models: dict, roots: list[str]) -> set[str]:
    """The models roots refer to, directly or through their children, layouts and styles (roots included)."""
    seen, pending = set(), list(roots)
    while pending:
        model_id = pending.pop()
        if model_id in models and model_id not in seen:
            seen.add(model_id)
            pending += _MODEL_ID.findall(json.dumps(models[model_id], sort_keys=True))
    return seen


def _drop_widgets_only_shown_by(views: list[str], notebook: nbformat.NotebookNode) -> None:
    """Remove from the saved widget state the models that only the given (dropped) views reach."""
    models = _widget_models(notebook)
    if not views or not models:
        return
    still_shown = _reachable(models, [view for cell in notebook.cells for view in _views(cell.get("outputs", []))])
    for model_id in _reachable(models, views) - still_shown:
        del models[model_id]


def _number_widget_ids(notebook: nbformat.NotebookNode) -> None:
    """Replace each widget's random 32-hex model id by a number: the widgets the cells display in order,
    each followed by the models it refers to (its layout, style, children), depth first."""
    models = _widget_models(notebook)
    if not models:
        return
    order = {}

    def visit(model_id: str) -> None:
        if model_id in models and model_id not in order:
            order[model_id] = f"{len(order) + 1:032x}"
            for reference in _MODEL_ID.findall(json.dumps(models[model_id], sort_keys=True)):
                visit(reference)

    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            for reference in _MODEL_ID.findall(json.dumps(output.get("data", {}), sort_keys=True)):
                visit(reference)
    for model_id in sorted(models, key=lambda key: json.dumps(models[key], sort_keys=True)):
        visit(model_id)  # a model no output shows: ordered by what it holds
    renamed = _MODEL_ID.sub(lambda match: order.get(match.group(0), match.group(0)), nbformat.writes(notebook))
    numbered = nbformat.reads(renamed, as_version=4)
    widgets = numbered.metadata["widgets"][WIDGET_STATE]
    widgets["state"] = dict(sorted(widgets["state"].items()))
    notebook.clear()
    notebook.update(numbered)


def refusals(notebook: nbformat.NotebookNode) -> list[str]:
    """Why the notebook may not be saved, one reason per cell: it raised, wrote to stderr, or printed a
    verdict that failed on this run. Empty when it may be saved."""
    found = []
    code_cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    for number, cell in enumerate(code_cells, start=1):
        outputs = cell.get("outputs", [])
        failed = [line.rstrip("\n") for output in outputs if output.get("output_type") == "stream"
                  for line in _text(output.get("text", "")).splitlines() if line.startswith(FAILS)]
        if any(output.get("output_type") == "error" for output in outputs):
            found.append(f"code cell {number} raised")
        elif any(output.get("name") == "stderr" for output in outputs):
            found.append(f"code cell {number} wrote to stderr")
        elif failed:
            found.append(f"code cell {number}: a verdict did not hold on this run: {failed[0]}")
    return found


def save_checked(notebook: nbformat.NotebookNode, path: Path) -> None:
    """Write notebook to path only if nothing refuses it (refusals): it goes to a temporary file in the same
    folder first and replaces path in one rename. Raises RuntimeError, leaving path as it was, otherwise."""
    path = Path(path)
    found = refusals(notebook)
    if found:
        raise RuntimeError(f"{path.name}: {found[0]}; the saved notebook is unchanged")
    temporary = path.with_name(f".{path.name}.saving")
    nbformat.write(notebook, temporary)
    os.replace(temporary, path)
