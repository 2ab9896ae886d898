"""The sentences a notebook prints and draws through its own translator, and the catalog that holds their Chinese.

A chapter notebook writes its code in its cells, so the sentences it prints (and its plot labels) live there
too: its setup cell makes `tr = i18n.translator("<domain>")`, and every `tr("...")` in its cells is looked up in
locale/zh/<domain>.json when the notebook runs in Chinese.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

from s09_jsonl_transcript.text import i18n


def python_of(source: str) -> str:
    """The cell without IPython's ! and % lines, so ast can read it."""
    return "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("!", "%")))


def code_cells(path: Path) -> list[str]:
    cells = json.loads(Path(path).read_text(encoding="utf-8"))["cells"]
    return [python_of("".join(cell["source"])) for cell in cells if cell["cell_type"] == "code"]


def notebook_translator(path: Path) -> tuple[str | None, str | None]:
    """(the domain, the name it is bound to) of the notebook's own translator, or (None, None)."""
    for source in code_cells(path):
        for node in ast.walk(ast.parse(source)):
            if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                    and ast.unparse(node.value.func).endswith("translator") and node.value.args
                    and isinstance(node.value.args[0], ast.Constant) and isinstance(node.targets[0], ast.Name)):
                return node.value.args[0].value, node.targets[0].id
    return None, None


def translated_texts(path: Path) -> tuple[list[str], list[str]]:
    """(the literal texts the notebook's cells pass to its translator, the calls whose text is not a literal)."""
    _, name = notebook_translator(path)
    literals, dynamic = [], []
    for source in code_cells(path):
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name:
                first = node.args[0] if node.args else None
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    literals.append(first.value)
                else:
                    dynamic.append(ast.unparse(node))
    return literals, dynamic


def catalog_of(domain: str) -> dict:
    path = i18n.LOCALE_DIR / "zh" / f"{domain}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
