"""Read the widget state a notebook was saved with: which widgets a cell displayed, and their values.

nbclient (and so `jupyter nbconvert --execute`) saves every live widget's final state in the notebook's
metadata; a cell's output names the model it displayed. A student who opens the saved notebook sees
exactly these values.
"""

from __future__ import annotations

import json
from pathlib import Path

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def load(path: Path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def cell_by_id(notebook: dict, cell_id: str) -> dict:
    (cell,) = [cell for cell in notebook["cells"] if cell.get("id") == cell_id]
    return cell


def displayed_widgets(notebook: dict, cell_id: str) -> list[dict]:
    """Every widget model the cell displayed, with the models inside it (children first met, first listed).

    Each item is {"model_name": ..., **state}.
    """
    states = notebook["metadata"]["widgets"][WIDGET_STATE]["state"]
    roots = [output["data"][WIDGET_VIEW]["model_id"] for output in cell_by_id(notebook, cell_id)["outputs"]
             if WIDGET_VIEW in output.get("data", {})]
    assert roots, f"cell {cell_id} displays no widget"
    found, pending = [], list(roots)
    while pending:
        model_id = pending.pop(0)
        model = states[model_id]
        found.append({"model_name": model["model_name"], **model["state"]})
        pending += [child.removeprefix("IPY_MODEL_") for child in model["state"].get("children", [])]
    return found


def one(models: list[dict], model_name: str, **where) -> dict:
    """The one model of this name whose state has the given values."""
    chosen = [model for model in models if model["model_name"] == model_name
              and all(model.get(key) == value for key, value in where.items())]
    assert len(chosen) == 1, f"{len(chosen)} {model_name} models with {where}"
    return chosen[0]


def result_model(models: list[dict]) -> dict:
    """The model carrying the s09-result class: what the main control changes."""
    chosen = [model for model in models if "s09-result" in model.get("_dom_classes", [])]
    assert len(chosen) == 1, f"{len(chosen)} result widgets"
    return chosen[0]
