"""One word per concept in each language, held to notebooks/glossary.md.

- The glossary's 'not used' words stay out of the notebooks: a notebook may name them in one markdown
  cell, the one that introduces the kit's word with its synonyms; anywhere else they are the drift the
  glossary exists to stop.
- The Chinese path (the Chinese notebooks' text, the exercises' Chinese text, the locale/zh catalogs,
  README.zh-CN.md, docs/zh) never uses a 'not used' Chinese word (a notebook's text may name the English
  ones in its one introducing cell), and never lets the English word of a concept stand in for the
  Chinese one in its prose: a concept is not translated two ways.
"""

import ast
import io
import json
import re
import tokenize
from pathlib import Path

import pytest

from s09_jsonl_transcript.lessons.lesson_map import lesson_map
from s09_jsonl_transcript.text import bilingual

REPO = Path(__file__).resolve().parents[1]
GLOSSARY = REPO / "notebooks" / "glossary.md"


def glossary_rows() -> list[list[str]]:
    """The glossary table's rows, as their five cells: concept, lesson, English, Chinese, not used."""
    rows = [line for line in GLOSSARY.read_text(encoding="utf-8").splitlines() if line.startswith("| ")][2:]
    return [[cell.strip() for cell in row.strip().strip("|").split("|")] for row in rows]


def listed(cell: str) -> list[str]:
    """The comma-separated words of one glossary cell."""
    return [word.strip() for word in cell.split(",") if word.strip()]


def avoided_words() -> dict[str, list[str]]:
    """The kit's English word of each concept, and the words the kit does not use for it."""
    return {row[2]: listed(row[4]) for row in glossary_rows()}


def markdown_cells(path: Path) -> list[str]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "markdown"]


NOTEBOOKS = [*bilingual.notebook_files("en"), *bilingual.notebook_files("zh")]  # chapters, then beyond s09


def test_the_glossary_has_one_row_per_concept_with_both_languages():
    rows = glossary_rows()
    english = [row[2] for row in rows]
    chinese = [row[3] for row in rows]
    assert len(rows) >= 20 and all(english) and all(chinese)
    assert len(set(english)) == len(english) and len(set(chinese)) == len(chinese)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.relative_to(REPO / "notebooks").as_posix())
def test_words_the_kit_does_not_use_appear_in_one_cell_at_most(path):
    cells = markdown_cells(path)
    kit_words = {row[3] for row in glossary_rows()}
    for concept, words in avoided_words().items():
        for word in words:
            pattern = re.compile(re.escape(word), re.IGNORECASE)
            holders = [kit_word for kit_word in kit_words if word in kit_word and kit_word != word]  # 单写者锁
            holding = [n for n, text in enumerate(cells) if pattern.search(without(text, holders))]
            assert len(holding) <= 1, f"{word!r} (the kit says {concept!r}) in markdown cells {holding}"


def test_the_check_can_fail(tmp_path):
    notebook = {"cells": [{"cell_type": "markdown", "source": ["a torn tail here"]},
                          {"cell_type": "markdown", "source": ["and a torn tail there"]}]}
    path = tmp_path / "01_x.ipynb"
    path.write_text(json.dumps(notebook))
    with pytest.raises(AssertionError, match="torn tail"):
        test_words_the_kit_does_not_use_appear_in_one_cell_at_most(path)


# --------------------------------------------------------------------------- the Chinese path


def chinese_path(repo: Path = REPO) -> list[Path]:
    """Every file of Chinese text a student or an instructor reads, besides the notebooks built from them."""
    files = [*sorted((repo / "notebooks" / "zh" / "text").glob("*.md")),
             *sorted((repo / "exercises" / "zh" / "text").glob("*.md")),
             *sorted((repo / "s09_jsonl_transcript" / "text" / "locale" / "zh").glob("*.json")),
             repo / "README.zh-CN.md",
             *sorted((repo / "docs" / "zh").glob("**/*.md"))]
    return [path for path in files if path.exists()]


def units(path: Path) -> list[tuple[str, str]]:
    """The file's texts as (where, text): a section per notebook cell, an entry per catalog key, a paragraph else."""
    if path.suffix == ".json":
        return [(f"key {key!r}", text) for key, text in json.loads(path.read_text(encoding="utf-8")).items()]
    sections = bilingual.read_text(path)
    if sections:
        code = code_cell_ids(path)
        return [(f"cell {section.cell_id}", prose_of_code(section.text) if section.cell_id in code else section.text)
                for section in sections.values()]
    paragraphs = path.read_text(encoding="utf-8").split("\n\n")
    return [(f"paragraph {number}", text) for number, text in enumerate(paragraphs, start=1)]


def code_cell_ids(path: Path) -> set[str]:
    """The ids of the code cells of the English notebook a Chinese text file translates (empty for other files)."""
    for english in (bilingual.Pair.named(path.stem).english, REPO / "exercises" / f"{path.stem}.ipynb"):
        if path.parent.name == "text" and english.is_file():
            cells = json.loads(english.read_text(encoding="utf-8"))["cells"]
            return {cell["id"] for cell in cells if cell["cell_type"] == "code"}
    return set()


def prose_of_code(source: str) -> str:
    """A code cell's comments and docstrings: the only parts of it that are translated (its names are code)."""
    texts = []
    try:
        texts += [token.string for token in tokenize.generate_tokens(io.StringIO(source).readline)
                  if token.type == tokenize.COMMENT]
        tree = ast.parse(source)
    except (SyntaxError, tokenize.TokenError):  # an IPython ! line: its comments, as far as they were read
        return "\n".join(texts)
    nodes = [node for node in ast.walk(tree) if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef))]
    return "\n".join(texts + [ast.get_docstring(node) or "" for node in nodes])


def introduces_synonyms(path: Path) -> bool:
    """A notebook's text may name other sources' words (English ones) in one cell, all in the same one."""
    return path.parent.parts[-3:] == ("notebooks", "zh", "text")


# Code is not translated: fenced blocks, `spans`, link targets, HTML tags, {placeholders} and calls like replay(...).
_CODE = re.compile(r"```.*?```|`[^`\n]*`|\]\([^)]*\)|<[^>\n]+>|\{[^{}\n]*\}|[A-Za-z_][\w.]*\(", re.S)
# Quotations are someone else's words: the lesson's headings, an English message, a button's label.
_QUOTED = re.compile(r"“[^”\n]*”|\"[^\"\n]*\"|'[^'\n]*'")


def prose(text: str) -> str:
    """The text with its code left out."""
    return _CODE.sub(" ", text)


def english_pattern(word: str) -> re.Pattern:
    """The English word as a whole word, in its plural and verb forms, in any case."""
    return re.compile(r"(?<![A-Za-z_])" + re.escape(word) + r"(?:s|es|d|ed|ing)?(?![A-Za-z_\-])", re.IGNORECASE)


def has_chinese(text: str) -> bool:
    """True when text holds at least one CJK ideograph."""
    return any("\u4e00" <= character <= "\u9fff" for character in text)


def banned_words_in(path: Path, rows: list[list[str]]) -> list[str]:
    """Where the file uses a word the glossary does not use (one cell of a notebook's text aside)."""
    chinese_words, foreign_words = [], []
    kit_words = {row[3] for row in rows}
    for _, _, _, chinese, avoided in rows:
        for word in listed(avoided):
            # a kit word that holds the banned one is not it: 单写者锁 is the lock, not 写者 for 写入者
            holders = [kit_word for kit_word in kit_words if word in kit_word and kit_word != word]
            hits = [(where, f"{where}: {word!r} (the kit says {chinese!r})")
                    for where, text in units(path) if word.lower() in without(prose(text), holders).lower()]
            (chinese_words if has_chinese(word) else foreign_words).extend(hits)
    if introduces_synonyms(path) and len({where for where, _ in foreign_words}) <= 1:
        foreign_words = []  # the cell that says what other sources call it ("torn write")
    return [line for _, line in chinese_words + foreign_words]


def without(text: str, words: list[str]) -> str:
    """The text with each of the words blanked out."""
    for word in words:
        text = text.replace(word, " ")
    return text


LESSON_HEADINGS = [section for section, _, _ in lesson_map("zh")]

# English words that name something else here, not the concept: the modes of the kill campaign.
NAMES = {"batch": "a kill mode's name (append, batch, repair)"}


def english_in_chinese(path: Path, rows: list[list[str]]) -> list[str]:
    """Where the file's Chinese prose uses a concept's English word although the glossary gives a Chinese one."""
    kit_words = sorted({row[3] for row in rows} | {row[2] for row in rows if row[2] == row[3]}, key=len, reverse=True)
    found = []
    for where, text in units(path):
        if not has_chinese(text):
            continue
        for heading in LESSON_HEADINGS:  # the lesson map quotes them: "工作原理 · 会话回放 (replay <= 1000)"
            text = text.replace(heading, " ")
        plain = _QUOTED.sub(" ", prose(text))
        for _, _, english, chinese, _ in rows:
            if english.lower() == chinese.lower():
                continue
            shown = plain
            for kit_word in kit_words:  # "replay window" is a word of its own, not "replay" untranslated
                if kit_word.lower() != english.lower() and re.search("[A-Za-z]", kit_word):
                    shown = re.sub(re.escape(kit_word), " ", shown, flags=re.IGNORECASE)
            for word in listed(english):
                if word in NAMES and path.suffix == ".json":
                    continue
                for match in english_pattern(word).finditer(shown):
                    context = shown[max(0, match.start() - 12): match.end() + 12].replace("\n", " ")
                    found.append(f"{where}: {match.group(0)!r} for {chinese!r}: ...{context}...")
    return found


# Files other engineers own, with the fixes listed for the lead (see the report of branch zhwords), by test.
# Strict: once a file is fixed its test passes, fails as XPASS, and its line here must go.
OUTSTANDING = {
    "banned": {},
    "english": {},
}


def chinese_files(test: str) -> list:
    """The Chinese path as test parameters, the files still outstanding for this test marked as expected to fail."""
    params = []
    for path in chinese_path():
        reason = OUTSTANDING[test].get(path.name)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        params.append(pytest.param(path, id=str(path.relative_to(REPO)), marks=marks))
    return params


@pytest.mark.parametrize("path", chinese_files("banned"))
def test_the_chinese_path_uses_no_word_the_glossary_bans(path):
    found = banned_words_in(path, glossary_rows())
    assert not found, "\n".join(found)


@pytest.mark.parametrize("path", chinese_files("english"))
def test_the_chinese_path_translates_each_concept_one_way(path):
    found = english_in_chinese(path, glossary_rows())
    assert not found, "\n".join(found)


def test_the_chinese_path_is_all_there():
    names = {path.name for path in chinese_path()}
    assert {"01_events_on_disk.md", "ex01_last_turn_replay.md", "partial_tail_vs_corruption.json",
            "README.zh-CN.md"} <= names
    for outstanding in OUTSTANDING.values():
        assert set(outstanding) <= names  # an outstanding file that was renamed must leave the list


def test_a_code_section_is_checked_by_its_comments_and_docstrings_only():
    code = 'def plot(acknowledged, writer):\n    """画出已确认的事件。"""\n    return writer  # 写入者\n'
    assert prose_of_code(code).split("\n") == ["# 写入者", "", "画出已确认的事件。"]
    assert "writer" not in prose_of_code(code) and "acknowledged" not in prose_of_code(code)


def test_the_chinese_checks_can_fail(tmp_path):
    rows = glossary_rows()
    banned = tmp_path / "banned.json"
    banned.write_text(json.dumps({"damage": "一处损伤", "a": "reader 会原谅 partial tail"}, ensure_ascii=False))
    assert [line.split(":")[0] for line in banned_words_in(banned, rows)] == ["key 'a'", "key 'damage'"]
    twice = tmp_path / "twice.md"
    twice.write_text("第二个 writer 被拒绝。\n\n`acquire_writer` 是代码；replay window 是一个词。\n\n"
                     "崩溃后读取 reasoning 事件，回放 “the replay window” 这句引文。\n", encoding="utf-8")
    found = english_in_chinese(twice, rows)
    assert [line.split(": ")[1].split(" for")[0] for line in found] == ["'writer'", "'reasoning'"], found


def test_a_notebook_text_may_name_other_sources_words_in_one_cell_only(tmp_path):
    rows = glossary_rows()
    folder = tmp_path / "notebooks" / "zh" / "text"
    folder.mkdir(parents=True)
    text = folder / "01_x.md"

    def write(*cells):
        text.write_text("".join(f"<!-- cell c{n} | en todo -->\n{cell}\n" for n, cell in enumerate(cells)),
                        encoding="utf-8")
        return banned_words_in(text, rows)

    assert write("别的资料叫它 torn write 或 torn tail；本教具叫 partial tail。", "其余。") == []
    assert len(write("别的资料叫它 torn write。", "这里又说 torn tail。")) == 2
    assert write("reader 原谅了它。", "其余。") == ["cell c0: '原谅' (the kit says '放过')"]


def test_a_concept_said_two_ways_is_caught_but_a_longer_kit_word_is_not(tmp_path):
    doc = tmp_path / "docs" / "zh" / "x.md"
    doc.parent.mkdir(parents=True)
    doc.write_text("单写者锁只许一个写入者。\n\n每个写者追加，读者读回，组提交共用一次 fsync。\n", encoding="utf-8")
    found = banned_words_in(doc, glossary_rows())
    assert [line.split("'")[1] for line in found] == ["写者", "读者", "组提交"], found
    doc.write_text("单写者锁只许一个写入者。\n\nCrash lab 杀掉写入者。\n", encoding="utf-8")
    assert [line.split("'")[1] for line in english_in_chinese(doc, glossary_rows())] == ["Crash lab"]
