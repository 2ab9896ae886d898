"""The student notebooks in exercises/ (English) and exercises/zh/ (Chinese): the exercises, laid out
the way students and the grader need, the same in both languages but for the words of their markdown.

Whether they score what they should is tested in test_grading_runs.py, through the grader.
"""

import ast
import io
import re
import tokenize
import tomllib
from pathlib import Path

import nbformat
import pytest
from test_glossary import avoided_words

from s09_jsonl_transcript.grading.source import load_sources, pass_line
from s09_jsonl_transcript.grading.words import SEPARATOR
from s09_jsonl_transcript.text.bilingual import has_chinese, read_text, same_code

ROOT = Path(__file__).resolve().parent.parent
EXERCISES = ROOT / "exercises"
FOLDERS = {"en": EXERCISES, "zh": EXERCISES / "zh"}
LANGUAGES = sorted(FOLDERS)
NAMES = ["ex01_last_turn_replay.ipynb", "ex02_corruption_boundary.ipynb", "ex03_sharding.ipynb",
         "ex04_tail_reader.ipynb", "ex05_hash_chain.ipynb", "ex06_your_own_transcript.ipynb"]
SOURCES = load_sources(EXERCISES / "instructor")
# What each language's notebook says where the other says it.
WORDS = {
    "en": {"aims": "**What you will practise:**", "recap": "## Recap", "points": r"\*\*Points:\*\* (\d+) from the "
           r"visible checks(?:.*?, (\d+) more)?", "later": ("Notebook", "Exercise"),
           "readme": "](../README.md#exercises-and-grading)", "notebooks": "../notebooks/en/"},
    "zh": {"aims": "**练什么：**", "recap": "## 小结", "points": r"\*\*分数：\*\* 本笔记本里的可见检查共 (\d+) 分"
           r"(?:，另有 (\d+) 分)?", "later": ("笔记本", "练习"), "readme": "](../../README.zh-CN.md#练习与自测)",
           "notebooks": "../../notebooks/zh/"},
}
LINK = re.compile(r"\]\(([^)#]+)(#[^)]*)?\)")


def student(name: str, language: str = "en") -> nbformat.NotebookNode:
    return nbformat.read(FOLDERS[language] / name, as_version=4)


def role(cell) -> str | None:
    return cell.metadata.get("s09", {}).get("role")


def test_the_exercises_are_there_for_students_in_both_languages_and_for_instructors():
    for folder in (EXERCISES, EXERCISES / "zh", EXERCISES / "instructor"):
        assert sorted(path.name for path in folder.glob("ex*.ipynb")) == NAMES
    assert sorted(path.name for path in (EXERCISES / "zh" / "text").glob("*.md")) == [
        name.replace(".ipynb", ".md") for name in NAMES]


def test_the_default_test_run_does_not_collect_the_exercise_notebooks():
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]["ini_options"]
    assert not any(path.startswith("exercises") for path in settings["testpaths"]), (
        "the student notebooks raise NotImplementedError by design; nbval must not collect them")


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("name", NAMES)
def test_a_notebook_opens_with_its_aims_and_ends_with_a_recap(name, language):
    cells = student(name, language).cells
    words = WORDS[language]
    assert cells[0].cell_type == "markdown" and words["aims"] in cells[0].source
    assert "python -m s09_jsonl_transcript.grading grade" in cells[0].source
    assert words["readme"] in cells[0].source, "the intro links the README's section on self-checking"
    assert cells[-1].cell_type == "markdown" and cells[-1].source.startswith(words["recap"])
    assert any(word in cells[-1].source for word in words["later"])


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("name", NAMES)
def test_each_intro_states_the_points_the_checks_give(name, language):
    source = SOURCES[name[:4]]
    stated = re.search(WORDS[language]["points"], student(name, language).cells[0].source, re.S)
    visible, hidden = (int(points or 0) for points in stated.groups())
    assert visible == sum(check.points for check in source.checks if not check.hidden)
    assert hidden == sum(check.points for check in source.checks if check.hidden)


def test_the_readmes_have_the_sections_the_intros_link():
    for readme, section in (("README.md", "## Exercises and grading"), ("README.zh-CN.md", "## 练习与自测")):
        headings = [line for line in (ROOT / readme).read_text(encoding="utf-8").splitlines() if line.startswith("#")]
        assert section in headings, readme


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("name", NAMES)
def test_links_go_to_notebooks_and_exercises_of_the_same_language(name, language):
    links = [match[1] for cell in student(name, language).cells if cell.cell_type == "markdown"
             for match in LINK.finditer(cell.source)]
    assert links, "each exercise links the lesson's notebooks or another exercise"
    for link in links:
        if "notebooks" in link:
            assert link.startswith(WORDS[language]["notebooks"]), link
            # The Chinese notebooks are built from the English ones, with the same names and folders.
            assert (ROOT / "notebooks" / "en" / link.split(WORDS[language]["notebooks"], 1)[1]).exists(), link
        elif link.endswith(".ipynb"):
            assert (FOLDERS[language] / link).exists(), link
        else:
            assert link.endswith(("README.md", "README.zh-CN.md")), link


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("name", NAMES)
def test_every_code_cell_is_valid_python(name, language):
    for notebook in (student(name, language), nbformat.read(EXERCISES / "instructor" / name, as_version=4)):
        for cell in notebook.cells:
            if cell.cell_type == "code":
                ast.parse(cell.source)


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("name", NAMES)
def test_checks_are_locked_and_answers_cannot_be_deleted(name, language):
    cells = student(name, language).cells
    checks = [cell for cell in cells if role(cell) == "check"]
    answers = [cell for cell in cells if role(cell) == "answer"]
    assert checks and answers
    assert all(cell.metadata.get("editable") is False and cell.metadata.get("deletable") is False for cell in checks)
    assert all(cell.metadata.get("deletable") is False and "editable" not in cell.metadata for cell in answers)


def message_text(node) -> str:
    """The literal text of an assertion message: its string constants, f-string parts included."""
    return "".join(part.value for part in ast.walk(node) if isinstance(part, ast.Constant)
                   and isinstance(part.value, str))


def is_bilingual(text: str) -> bool:
    return SEPARATOR in text and has_chinese(text) and re.search(r"[A-Za-z]{3}", text.split(SEPARATOR)[0]) is not None


@pytest.mark.parametrize("name", NAMES)
def test_every_check_prints_one_pass_line_and_explains_failures_in_both_languages(name):
    checks = [cell for cell in nbformat.read(EXERCISES / "instructor" / name, as_version=4).cells
              if role(cell) == "check"]
    assert len(checks) == len(SOURCES[name[:4]].checks)
    for cell in checks:
        check = cell.metadata["s09"]
        lines = cell.source.rstrip().split("\n")
        assert lines[-1] == f'print("{pass_line(check["name"], check["points"])}")'
        assert cell.source.count("print(") == 1
        assert "assert " in cell.source or "AssertionError(" in cell.source
        assert lines[0].startswith(f"# {check['name']}: ") and any(
            line.startswith(f"# {check['name']}：") and has_chinese(line) for line in lines[:4]), (
            f"{check['name']}: a comment says what the check tests, in English, then in Chinese")
        tree = ast.parse(cell.source)
        messages = [node.msg for node in ast.walk(tree) if isinstance(node, ast.Assert)]
        assert all(message is not None for message in messages), f"{check['name']}: every assert needs a message"
        messages += [node.args[0] for node in ast.walk(tree) if isinstance(node, ast.Call)
                     and getattr(node.func, "id", None) == "AssertionError"]
        for message in messages:
            assert is_bilingual(message_text(message)), f"{check['name']}: {message_text(message)!r}"


def test_the_bilingual_message_check_can_fail():
    assert not is_bilingual(message_text(ast.parse('f"expected {x}, got {y}"').body[0].value))
    assert not is_bilingual("只有中文 · 没有英文")
    assert is_bilingual(message_text(ast.parse('f"got {y} · 实际得到 {y}"').body[0].value))


@pytest.mark.parametrize("name", NAMES)
def test_the_chinese_notebook_is_the_english_one_with_chinese_markdown(name):
    english, chinese = student(name, "en"), student(name, "zh")
    layout = [(cell.id, cell.cell_type) for cell in english.cells]
    assert layout == [(cell.id, cell.cell_type) for cell in chinese.cells]
    assert chinese.metadata["s09"] == {**english.metadata["s09"], "language": "zh", "source": f"../{name}"}
    sections = read_text(EXERCISES / "zh" / "text" / name.replace(".ipynb", ".md"))
    for en_cell, zh_cell in zip(english.cells, chinese.cells):
        assert en_cell.metadata == zh_cell.metadata, "answer and check cells keep their s09 metadata and locks"
        if en_cell.cell_type == "code" and en_cell.id in sections:  # a setup or answer cell, Chinese comments
            assert role(en_cell) != "check", "a check cell is bilingual already: one cell for both languages"
            assert zh_cell.source == sections[en_cell.id].text != en_cell.source and has_chinese(zh_cell.source)
            assert same_code(en_cell.source, zh_cell.source), "the grader runs the same code for both languages"
        elif en_cell.cell_type == "code":
            assert zh_cell.source == en_cell.source, "the grader runs the same code for both languages"
        else:
            assert zh_cell.source == sections[en_cell.id].text != en_cell.source
            assert has_chinese(zh_cell.source)


@pytest.mark.parametrize("name", NAMES)
def test_the_chinese_setup_and_answer_cells_say_their_comments_and_docstrings_in_chinese(name):
    """What a Chinese student reads in the code: every comment and docstring of a setup or answer cell."""
    for cell in student(name, "zh").cells:
        if cell.cell_type != "code" or role(cell) == "check":
            continue
        tree = ast.parse(cell.source)
        docstrings = [ast.get_docstring(node) for node in ast.walk(tree)
                      if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.Module)) and ast.get_docstring(node)]
        comments = [token.string for token in tokenize.generate_tokens(io.StringIO(cell.source).readline)
                    if token.type == tokenize.COMMENT]
        english = [text for text in docstrings + comments if not has_chinese(text)]
        assert english == [], f"cell {cell.id}: translate it in exercises/zh/text/{name.replace('.ipynb', '.md')}"


def test_only_comments_and_docstrings_may_differ():
    assert same_code('def f():\n    """Say it."""\n    return 1  # one\n',
                     'def f():\n    """说。"""\n    return 1  # 一\n')
    assert not same_code('def f():\n    return 1\n', 'def f():\n    return 2\n')
    assert not same_code('x = "a"\n', 'x = "甲"\n')  # a string the program uses is code


SOFT_BREAK = re.compile(r"[\u4e00-\u9fff\u3000-\u303f\uff00-\uffef]\n *[^\s\-#|`*\d]")


@pytest.mark.parametrize("name", NAMES)
def test_chinese_paragraphs_are_not_broken_inside_a_sentence(name):
    """A line break inside a paragraph renders as a space, which shows between Chinese characters."""
    for cell in student(name, "zh").cells:
        if cell.cell_type == "markdown":
            assert not SOFT_BREAK.search(cell.source), SOFT_BREAK.search(cell.source)
    assert SOFT_BREAK.search("第一行，\n第二行")


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("name", NAMES)
def test_the_exercises_use_the_glossary_words(name, language):
    cells = [cell.source for cell in student(name, language).cells]
    for concept, words in avoided_words().items():
        for word in words:
            found = [n for n, text in enumerate(cells) if word.lower() in text.lower()]
            assert not found, f"{word!r} (the kit says {concept!r}) in cells {found}"


def test_exercise_1_builds_on_the_library():
    setup = student(NAMES[0]).cells[1].source
    assert "from s09_jsonl_transcript.code import" in setup
    for name in ("JSONLTranscript", "MockLLM", "run_agent"):
        assert name in setup
    answers = "\n".join(cell.source for cell in nbformat.read(EXERCISES / "instructor" / NAMES[0], as_version=4).cells
                        if role(cell) == "answer")
    assert "transcript.replay(max_items=" in answers


# --------------------------------------------------------------------------- ex06, the capstone

CAPSTONE = "ex06_your_own_transcript.ipynb"


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_capstones_given_cell_is_the_one_the_grader_runs(language):
    from s09_jsonl_transcript.grading.durability import GIVEN_CELL

    given = next(cell for cell in student(CAPSTONE, language).cells if cell.id == "ex06-given")
    instructor = next(cell for cell in nbformat.read(EXERCISES / "instructor" / CAPSTONE, as_version=4).cells
                      if cell.id == "ex06-given")
    assert instructor.source == GIVEN_CELL.rstrip("\n")
    assert given.source == GIVEN_CELL.rstrip("\n") if language == "en" else same_code(given.source, GIVEN_CELL)


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_capstone_says_its_answer_runs_without_the_kit_and_how_it_is_crashed(language):
    intro = student(CAPSTONE, language).cells[0].source
    words = {"en": ("a view of the machine without `code.py`", "or the kit", "strace"),
             "zh": ("没有 `code.py`", "也没有本教具", "strace")}[language]
    assert all(word in intro for word in words), intro


def test_the_capstones_crash_check_runs_after_the_answer_and_is_kept_out_of_grading():
    cells = student(CAPSTONE).cells
    roles = [role(cell) for cell in cells]
    local = [index for index, found in enumerate(roles) if found == "local"]
    assert len(local) == 2 and roles.index("answer") < local[0] < local[1] < roles.index("check")
    assert "local_check(answer)" in cells[local[0]].source and "draw(verdict)" in cells[local[0]].source
    assert "without_fsync(answer)" in cells[local[1]].source
    source = SOURCES["ex06"]
    assert source.crash_graded == "ex06-transcript"
    assert sorted(check.property for check in source.checks) == sorted(
        ["kept", "whole", "tail", "closed", "one-write"])
    assert not any(check.hidden for check in source.checks)
