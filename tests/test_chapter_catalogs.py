"""A chapter's printed sentences and plot labels have Chinese: its cells' own catalog is complete.

A chapter writes its code in its cells, so the sentences it prints and the labels of the plots it draws are
in its cells too. Such a notebook makes a translator of its own (`tr = i18n.translator("04_replay_window")`);
its Chinese lives in locale/zh/<that name>.json. tests/test_i18n.py checks the package's modules; this
checks the notebooks the same way: every literal the cells pass to their translator has Chinese with the
same fields, and no entry is left over.
"""

import ast
import json
import re
from pathlib import Path

import pytest

from s09_jsonl_transcript import i18n

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks" / "en").glob("[0-9][0-9]_*.ipynb"))
FIELD = re.compile(r"{(\w*)[^}]*}")


def python_line(line: str) -> str:
    """The line, or pass in its place when it is IPython's (! or %), so ast can read the cell."""
    stripped = line.lstrip()
    return line[:len(line) - len(stripped)] + "pass" if stripped.startswith(("!", "%")) else line


def translated_literals(sources: list[str]) -> tuple[str | None, list[str], list[str]]:
    """(the cells' translator domain, the literals passed to it, the calls whose text is not a literal)."""
    trees = [ast.parse("\n".join(python_line(line) for line in source.splitlines())) for source in sources]
    domain, name = None, None
    for node in (node for tree in trees for node in ast.walk(tree)):
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                and ast.unparse(node.value.func).endswith("translator") and node.value.args
                and isinstance(node.value.args[0], ast.Constant)):
            domain, name = node.value.args[0].value, node.targets[0].id
    literals, dynamic = [], []
    for node in (node for tree in trees for node in ast.walk(tree)):
        if name and isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name:
            first = node.args[0] if node.args else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                literals.append(first.value)
            else:
                dynamic.append(ast.unparse(node))
    return domain, literals, dynamic


def code_sources(path: Path) -> list[str]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "code"]


CHAPTERS_WITH_A_TRANSLATOR = [path for path in NOTEBOOKS if translated_literals(code_sources(path))[0]]


def test_chapters_4_and_5_translate_their_cells():
    assert {path.stem for path in CHAPTERS_WITH_A_TRANSLATOR} >= {"04_replay_window", "05_memory_gate"}


@pytest.mark.parametrize("path", CHAPTERS_WITH_A_TRANSLATOR, ids=lambda path: path.stem)
def test_every_sentence_a_chapter_translates_has_chinese_and_no_entry_is_left_over(path):
    domain, literals, dynamic = translated_literals(code_sources(path))
    assert dynamic == [], "translate literal strings only, so this test can see them"
    catalog = json.loads((i18n.LOCALE_DIR / "zh" / f"{domain}.json").read_text(encoding="utf-8"))
    assert sorted(set(literals) - set(catalog)) == [], "sentences without Chinese"
    assert sorted(set(catalog) - set(literals)) == [], "Chinese entries no cell asks for"
    for english, chinese in catalog.items():
        assert chinese.strip(), f"empty Chinese for {english!r}"
        assert sorted(FIELD.findall(chinese)) == sorted(FIELD.findall(english)), f"fields differ: {english!r}"


def test_the_check_sees_literals_and_refuses_computed_text():
    sources = ['tr = i18n.translator("probe")', 'print(tr("{count} lines", count=3))\ntr(f"{1} lines")']
    assert translated_literals(sources) == ("probe", ["{count} lines"], ["tr(f'{1} lines')"])
    assert translated_literals(["print('no translator here')"]) == (None, [], [])
