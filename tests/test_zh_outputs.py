"""The Chinese notebooks show the library's messages in Chinese, through i18n.library_text.

The library (code.py, the lab, the index, the turn fold, the live log) raises and reports in English, and
stays so: tests and callers match those words. A Chinese notebook's saved outputs must not hold one of them:
the display helpers pass each through i18n.library_text, whose patterns live in locale/zh/library.json.

A library message here is a sentence the library raises (`raise X("...")`), reports (`_report(..., "...")`)
or returns as a problem (`return "..."` in a function): its literal words, with each formatted value
matching any text. Code, names, numbers, paths and JSON are not sentences of that kind, and neither is
what a session wrote into its transcript (evidence, the same in both languages).
"""

import ast
import html
import json
import re
from functools import cache
from pathlib import Path

import pytest

from s09_jsonl_transcript.text import i18n
from s09_jsonl_transcript.text.bilingual import notebook_files

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "s09_jsonl_transcript"
# The modules whose messages a notebook may show: the lesson, the lab and the production log.
LIBRARY = [PACKAGE / "code.py", *sorted(PACKAGE.glob("lab/*.py")), *sorted((PACKAGE / "production").glob("*.py"))]
CHINESE_NOTEBOOKS = notebook_files("zh")  # the chapters and the notebooks beyond s09
CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")
WORD = re.compile(r"\b[A-Za-z]{2,}\b")  # a name_with_underscores is not words
# Messages of other libraries the index passes on (sqlite3's own words), translated in library.json too.
FOREIGN = {"file is not a database": "sqlite3.DatabaseError"}
# Messages the lesson builds in a loop (code.line_problem, one per envelope field it checks), whose
# literal words alone are too few to find.
LOOPED = {f"expected {name} {{0}}, got {{1}}" for name in ("sequence", "session_id", "event_id")}
# What a session wrote into its transcript: an error result is evidence, shown as it is on disk.
EVIDENCE = {"the runtime stopped before this call returned a result", "tool call timed out after"}


def _message_parts(node) -> list | None:
    """A str literal or f-string as [text, None (a formatted value), text, ...]; None for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        return [value.value if isinstance(value, ast.Constant) else None for value in node.values]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):  # "..." f"..." split over lines with +
        left, right = _message_parts(node.left), _message_parts(node.right)
        return None if left is None or right is None else left + right
    return None


def library_messages(paths=LIBRARY, min_words: int = 3) -> list[str]:
    """The library's messages as catalog-style templates ("expected sequence {0}, got {1}"), those with at
    least min_words words: a sentence, not a repr or a location."""
    found = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            candidates = []
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                candidates = node.exc.args[:1]
            elif isinstance(node, ast.Call) and ast.unparse(node.func).endswith("_report"):
                candidates = node.args[1:2]
            elif isinstance(node, ast.Call) and ast.unparse(node.func) == "super().__init__":  # an exception's text
                candidates = node.args[:1]
            elif isinstance(node, ast.Return) and node.value is not None:
                candidates = [node.value]
            for candidate in candidates:
                parts = _message_parts(candidate)
                if parts is None:
                    continue
                fields = iter(range(len(parts)))
                template = "".join("{%d}" % next(fields) if part is None else
                                   part.replace("{", "{{").replace("}", "}}") for part in parts)
                if len(WORD.findall("".join(part or " " for part in parts))) >= min_words:
                    found.add(template)
    return sorted(found)


def template_pattern(template: str) -> re.Pattern:
    """A message template as a regular expression: its words exactly, each field any text."""
    pieces = re.split(r"(?<!{){\d+}(?!})", template)
    return re.compile(".+?".join(re.escape(piece.replace("{{", "{").replace("}}", "}")) for piece in pieces))


@cache
def library_patterns() -> list[tuple[str, re.Pattern]]:
    templates = library_messages() + sorted(FOREIGN) + sorted(LOOPED)
    return [(template, template_pattern(template)) for template in templates]


def output_texts(notebook: dict):
    """(cell number, text) for every saved output of a notebook: streams, errors and text/* data."""
    for number, cell in enumerate(notebook["cells"]):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream":
                yield number, "".join(output["text"])
            elif output.get("output_type") == "error":
                yield number, output["evalue"]
            for mime, value in output.get("data", {}).items():
                if mime.startswith("text/"):
                    yield number, "".join(value) if isinstance(value, list) else value


def english_library_sentences(notebook: dict) -> list[str]:
    """Where a notebook's outputs hold one of the library's English messages untranslated."""
    found = []
    for number, text in output_texts(notebook):
        text = html.unescape(re.sub(r"<[^>]+>", "\n", text))
        for run in CJK.split(text):  # a message inside a Chinese frame ("被拒绝：...") is its own run
            run = run.strip()
            if len(WORD.findall(run)) < 3 or any(evidence in run for evidence in EVIDENCE):
                continue
            for template, pattern in library_patterns():
                if pattern.search(run):
                    found.append(f"cell {number}: {run[:160]!r} (the library's {template!r})")
                    break
    return found


@pytest.mark.parametrize("path", CHINESE_NOTEBOOKS, ids=lambda path: path.stem)
def test_a_chinese_notebook_shows_no_english_library_message(path):
    notebook = json.loads(path.read_text(encoding="utf-8"))
    assert english_library_sentences(notebook) == [], "show it through i18n.library_text (locale/zh/library.json)"


def test_the_output_check_can_fail():
    """An English reason in a Chinese frame, HTML-escaped in a table, and a location around a reason are found."""
    outputs = [{"output_type": "stream", "name": "stdout",
                "text": "被拒绝：session-1.jsonl is being written by another writer (one writer per transcript)\n"},
               {"output_type": "display_data", "metadata": {},
                "data": {"text/html": "<td>event type &#x27;reasoning&#x27; is not eligible "
                                      "for memory selection</td>"}},
               {"output_type": "stream", "name": "stdout",
                "text": "拒绝（transcript 已损坏：session-5.jsonl:3: expected sequence 3, got 4 (byte offset 423)）"}]
    notebook = {"cells": [{"cell_type": "code", "outputs": outputs}]}
    assert len(english_library_sentences(notebook)) == 3
    i18n.use("zh")
    try:
        chinese = [{"output_type": "stream", "name": "stdout",
                    "text": "被拒绝：" + i18n.library_text(message) + "\n"}
                   for message in ("session-1.jsonl is being written by another writer (one writer per transcript)",
                                   "event type 'reasoning' is not eligible for memory selection")]
    finally:
        i18n.use("en")
    assert english_library_sentences({"cells": [{"cell_type": "code", "outputs": chinese}]}) == []


def test_the_library_messages_are_found_in_the_source():
    templates = library_messages()
    assert "record must be a JSON object" in templates
    assert any("is not eligible for memory selection" in template for template in templates)
    assert any("has no turn_end" in template for template in templates)


# --------------------------------------------------------------------------- the catalog of library messages


def catalog() -> dict:
    return json.loads((i18n.LOCALE_DIR / "zh" / f"{i18n.LIBRARY_DOMAIN}.json").read_text(encoding="utf-8"))


def library_literals() -> set[str]:
    """Every str literal of the library's modules (a hint in a table, filled into a message)."""
    return {node.value for path in LIBRARY for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)}


def test_every_library_pattern_is_a_message_the_library_says():
    """No entry is left over: each pattern's words are the words of a library message (or a foreign one)."""
    messages = [template_pattern(template) for template in library_messages(min_words=0)]
    literals = library_literals()
    left_over = []
    for english in catalog():
        sample = "X".join(re.split(r"{\w+}", english))  # the pattern with each field filled in
        if english not in FOREIGN and english not in literals and not any(
                pattern.fullmatch(sample) for pattern in messages):
            left_over.append(english)
    assert left_over == []


def test_every_library_pattern_keeps_its_fields():
    for english, chinese in catalog().items():
        assert sorted(set(re.findall(r"{(\w+)}", english))) == sorted(set(re.findall(r"{(\w+)}", chinese))), english
        assert CJK.search(chinese), f"no Chinese for {english!r}"


@pytest.fixture
def chinese():
    i18n.use("zh")
    yield
    i18n.use("en")


def test_library_text_translates_whole_messages_and_their_parts(chinese):
    assert i18n.library_text("session-5.jsonl:3: expected sequence 3, got 4 (byte offset 423)") == (
        "session-5.jsonl:3：应为 sequence 3，实际是 4（字节偏移 423）")
    assert i18n.library_text("turn 2 started while turn 1 was open: turn 1 has no turn_end") == (
        "turn 1 还开着时 turn 2 开始了：turn 1 没有 turn_end")
    assert i18n.library_text("turn 2 started while turn 1 was open: turn 3 has no turn_end").startswith("turn 2 ")
    assert i18n.library_text("a message no pattern knows") == "a message no pattern knows"


def test_library_text_leaves_english_alone():
    error = ValueError("event type 'reasoning' is not eligible for memory selection")
    assert i18n.library_text(error) == str(error)
