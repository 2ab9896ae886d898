"""A chapter notebook's own code, run outside the notebook: the tests of its panels drive the real thing.

The chapters write their mechanism in their cells (chapter 2's crash, chapter 3's reading rule), and their
panels only call what they are given. The tests give the panels what the chapters give them, taken from the
English notebook's code cells and run in one namespace, as the kernel runs them. Each cell is registered with
linecache under a name of its own, as IPython does, so inspect.getsource finds the functions it defines
(chapter 2 sends the agent's source to its child process).
"""

from __future__ import annotations

import itertools
import json
import linecache
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
_runs = itertools.count()


def chapter_cells(name: str) -> dict[str, str]:
    """The code cells of notebooks/en/<name>.ipynb, by cell id."""
    cells = json.loads((NOTEBOOKS / "en" / f"{name}.ipynb").read_text(encoding="utf-8"))["cells"]
    return {cell["id"]: "".join(cell["source"]) for cell in cells if cell["cell_type"] == "code"}


def run_cells(name: str, cell_ids: list[str], language: str = "en") -> dict:
    """Run the chapter's code cells with these ids, in this order, in one new namespace; return the namespace.

    language: as in that language's notebook, whose language cell says i18n.use("<language>").
    """
    cells = chapter_cells(name)
    namespace = {"__name__": f"chapter_{name}"}
    for cell_id in cell_ids:
        source = cells[cell_id].replace('i18n.use("en")', f'i18n.use("{language}")')
        filename = f"<{name} cell {cell_id} run {next(_runs)}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
        exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - the kit's own notebook cells
    return namespace
