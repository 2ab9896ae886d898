"""The bilingual notebook build: one English source, Chinese text beside it, and a check that fails on drift."""

import nbformat
import pytest

from s09_jsonl_transcript.text.bilingual import (
    Pair,
    Section,
    accept,
    build,
    chinese_notebook,
    extract,
    fingerprint,
    numbers_in,
    orphans,
    pairs,
    problems,
    read_text,
    write_text,
)


@pytest.fixture
def folder(tmp_path):
    """notebooks/en/01_toy.ipynb: a heading, a setup cell, prose, and a cell that prints numbers."""
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_markdown_cell("# 1. A toy", id="intro"),
        nbformat.v4.new_code_cell('from s09_jsonl_transcript import i18n\ni18n.use("en")', id="setup"),
        nbformat.v4.new_markdown_cell("Twelve events become **five** messages.", id="prose"),
        nbformat.v4.new_code_cell("print(12, 5)", id="count"),
    ]
    (tmp_path / "en").mkdir()
    nbformat.write(notebook, tmp_path / "en" / "01_toy.ipynb")
    return tmp_path


def translate(pair, texts):
    sections = read_text(pair.text)
    english = {c.id: c.source for c in nbformat.read(pair.english, as_version=4).cells}
    write_text(pair.text, pair.name, [Section(cell_id, fingerprint(english[cell_id]), texts[cell_id])
                                      for cell_id in sections])


@pytest.fixture
def translated(folder):
    pair = Pair.named("01_toy", folder)
    assert extract(pair) == ["intro", "prose"]  # both need translating
    translate(pair, {"intro": "# 1. 一个玩具", "prose": "十二个事件变成**五**条消息。"})
    assert extract(pair) == []
    build(pair, run=False)
    return pair


def test_the_chinese_notebook_has_the_english_structure_and_code(translated):
    chinese = nbformat.read(translated.chinese, as_version=4)
    assert [c.id for c in chinese.cells] == ["intro", "setup", "prose", "count"]
    assert chinese.cells[0].source == "# 1. 一个玩具"
    assert chinese.cells[1].source == 'from s09_jsonl_transcript import i18n\ni18n.use("zh")'
    assert chinese.cells[3].source == "print(12, 5)"
    assert chinese.metadata["s09"]["language"] == "zh"


def test_the_two_languages_agree_after_a_build(translated):
    assert problems(translated) == []


def test_a_changed_english_cell_marks_its_translation_stale(translated):
    english = nbformat.read(translated.english, as_version=4)
    english.cells[2].source = "Twelve events become **six** messages."
    nbformat.write(english, translated.english)
    assert problems(translated) == ["cell prose: the English text changed after it was translated"]
    assert extract(translated) == ["prose"]  # kept, and marked for work
    assert read_text(translated.text)["prose"].text == "十二个事件变成**五**条消息。"
    assert problems(translated) == ["cell prose: the Chinese text is marked todo"]


def test_a_cell_in_one_language_only_is_caught(translated):
    chinese = nbformat.read(translated.chinese, as_version=4)
    chinese.cells.append(nbformat.v4.new_markdown_cell("多出来的", id="extra"))
    nbformat.write(chinese, translated.chinese)
    assert "do not have the same cells" in problems(translated)[0]


def test_code_that_differs_beyond_the_language_line_is_caught(translated):
    chinese = nbformat.read(translated.chinese, as_version=4)
    chinese.cells[3].source = "print(12, 6)"
    nbformat.write(chinese, translated.chinese)
    assert problems(translated) == ["cell count: the code differs between the languages"]


def with_chinese_code(pair, code: str) -> None:
    """Give the "count" code cell a section (its Chinese version) and rebuild."""
    english = {c.id: c.source for c in nbformat.read(pair.english, as_version=4).cells}
    sections = list(read_text(pair.text).values()) + [Section("count", fingerprint(english["count"]), code)]
    write_text(pair.text, pair.name, sections)
    build(pair, run=False)


def test_a_code_cell_may_say_its_comments_in_chinese(translated):
    with_chinese_code(translated, "# 打印两个数\nprint(12, 5)  # 十二和五")
    assert nbformat.read(translated.chinese, as_version=4).cells[3].source == "# 打印两个数\nprint(12, 5)  # 十二和五"
    assert problems(translated) == []
    assert extract(translated) == []  # the code cell's section is kept


def test_chinese_code_that_is_another_program_is_caught(translated):
    with_chinese_code(translated, "# 打印两个数\nprint(12, 6)")
    assert problems(translated) == ["cell count: the Chinese code is not the English code (only comments and "
                                    "docstrings may differ)"]


def test_a_changed_english_code_cell_marks_its_chinese_comments_stale(translated):
    with_chinese_code(translated, "# 打印两个数\nprint(12, 5)")
    english = nbformat.read(translated.english, as_version=4)
    english.cells[3].source = "print(12, 5, 1)"
    nbformat.write(english, translated.english)
    assert problems(translated) == ["cell count: the English code changed after its comments were translated"]
    assert extract(translated) == ["count"]


def test_a_chinese_notebook_not_rebuilt_after_a_translation_is_stale(translated):
    translate(translated, {"intro": "# 1. 玩具", "prose": "十二个事件变成**五**条消息。"})
    assert problems(translated) == ["cell intro: the Chinese notebook is stale (run build)"]


def test_outputs_with_different_numbers_are_caught(translated):
    outputs = {translated.english: "12 events, 5 messages\n", translated.chinese: "12 个事件，6 条消息\n"}
    for path, printed in outputs.items():
        notebook = nbformat.read(path, as_version=4)
        notebook.cells[3].outputs = [nbformat.v4.new_output("stream", name="stdout", text=printed)]
        nbformat.write(notebook, path)
    assert problems(translated) == ["cell count: the outputs hold different numbers (en ['12', '5']..., "
                                    "zh ['12', '6']...)"]


def test_numbers_are_not_compared_where_nbval_ignores_the_output(translated):
    """A timing cell (# NBVAL_IGNORE_OUTPUT) prints other numbers on every run, in either language."""
    outputs = {translated.english: "append: 412.5 us\n", translated.chinese: "append：388.1 微秒\n"}
    for path, printed in outputs.items():
        notebook = nbformat.read(path, as_version=4)
        notebook.cells[3].source = "# NBVAL_IGNORE_OUTPUT\n" + notebook.cells[3].source
        notebook.cells[3].outputs = [nbformat.v4.new_output("stream", name="stdout", text=printed)]
        nbformat.write(notebook, path)
    assert problems(translated) == []
    for path in outputs:  # the same cell without the marker: the numbers are compared again
        notebook = nbformat.read(path, as_version=4)
        notebook.cells[3].source = notebook.cells[3].source.removeprefix("# NBVAL_IGNORE_OUTPUT\n")
        nbformat.write(notebook, path)
    assert problems(translated) == ["cell count: the outputs hold different numbers (en ['412.5']..., "
                                    "zh ['388.1']...)"]


def test_numbers_are_read_from_text_and_html_outputs_in_any_order():
    cell = nbformat.v4.new_code_cell("x", id="x")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="lines: 1,204 and 3.5\n"),
                    nbformat.v4.new_output("display_data", data={"text/html": "<td>7</td><td>x8y</td>"})]
    assert numbers_in(cell) == ["1204", "3.5", "7"]


def test_the_english_setup_cell_must_choose_the_language(folder):
    pair = Pair.named("01_toy", folder)
    english = nbformat.read(pair.english, as_version=4)
    english.cells[1].source = "from s09_jsonl_transcript import i18n"
    nbformat.write(english, pair.english)
    extract(pair)
    translate(pair, {"intro": "# 1", "prose": "十二"})
    build(pair, run=False)
    assert problems(pair) == ['the first code cell of 01_toy.ipynb must say i18n.use("en")']


def test_a_missing_translation_stops_the_build(folder):
    pair = Pair.named("01_toy", folder)
    with pytest.raises(ValueError, match="no Chinese text for markdown cell intro"):
        chinese_notebook(pair)


def test_chinese_files_without_an_english_notebook_are_orphans(translated, folder):
    (folder / "zh" / "02_gone.ipynb").write_text("{}")
    assert orphans(folder) == ["zh/02_gone.ipynb"]


def beyond_the_lesson(folder, name: str = "06_past") -> Pair:
    """Move a copy of the toy to notebooks/en/beyond-s09/<name>.ipynb, as a notebook past the lesson's chapters."""
    (folder / "en" / "beyond-s09").mkdir()
    notebook = nbformat.read(folder / "en" / "01_toy.ipynb", as_version=4)
    nbformat.write(notebook, folder / "en" / "beyond-s09" / f"{name}.ipynb")
    return Pair.named(name, folder)


def test_a_notebook_beyond_the_lesson_keeps_its_part_in_both_languages_and_its_text_beside_the_others(folder):
    pair = beyond_the_lesson(folder)
    assert pair == Pair.named("beyond-s09/06_past", folder)
    assert (pair.english, pair.chinese, pair.text) == (folder / "en" / "beyond-s09" / "06_past.ipynb",
                                                         folder / "zh" / "beyond-s09" / "06_past.ipynb",
                                                         folder / "zh" / "text" / "06_past.md")
    assert [one.place for one in pairs(folder)] == ["01_toy", "beyond-s09/06_past"]  # the chapters come first
    extract(pair)
    assert "notebooks/zh/beyond-s09/06_past.ipynb" in pair.text.read_text(encoding="utf-8").splitlines()[0]
    translate(pair, {"intro": "# 6. 课文之外", "prose": "十二个事件变成**五**条消息。"})
    build(pair, run=False)
    assert problems(pair) == []
    assert nbformat.read(pair.chinese, as_version=4).metadata["s09"]["source"] == "../../en/beyond-s09/06_past.ipynb"


def test_a_chinese_notebook_left_where_its_english_one_used_to_be_is_an_orphan(translated, folder):
    nbformat.write(nbformat.read(translated.chinese, as_version=4), folder / "zh" / "06_past.ipynb")
    (folder / "zh" / "text" / "06_past.md").write_text("", encoding="utf-8")
    beyond_the_lesson(folder)
    assert orphans(folder) == ["zh/06_past.ipynb"]  # its text is still the beyond notebook's: not an orphan


def test_a_section_repeated_in_the_text_file_is_refused(translated):
    content = translated.text.read_text(encoding="utf-8")
    translated.text.write_text(content + content.split("\n", 1)[1], encoding="utf-8")
    with pytest.raises(ValueError, match="two sections"):
        read_text(translated.text)


def test_accept_marks_only_sections_that_hold_chinese(folder):
    pair = Pair.named("01_toy", folder)
    extract(pair)
    sections = read_text(pair.text)
    write_text(pair.text, pair.name, [Section("intro", "todo", "# 1. 一个玩具"), sections["prose"]])
    assert accept(pair) == (["intro"], ["prose"])
    after = read_text(pair.text)
    assert after["intro"].english_fingerprint == fingerprint("# 1. A toy")
    assert after["prose"].english_fingerprint == "todo"  # still English: left for the translator
