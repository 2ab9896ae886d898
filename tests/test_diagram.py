"""The architecture diagram in both languages: drawn from lessons/diagram.py, readable without a CJK font."""

import html
import re
import warnings

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from s09_jsonl_transcript.lessons import diagram  # noqa: E402
from s09_jsonl_transcript.text import i18n  # noqa: E402


@pytest.fixture(autouse=True)
def english_afterwards():
    yield
    i18n.use("en")


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_saved_diagram_says_what_the_module_draws(language):
    svg = diagram.FILES[language].read_text(encoding="utf-8")
    described = html.unescape(re.search(r"<desc>(.*?)</desc>", svg, re.S).group(1))
    assert described == diagram.words(language), "run: python -m s09_jsonl_transcript.lessons.diagram"


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_diagram_needs_no_font_to_render(language):
    svg = diagram.FILES[language].read_text(encoding="utf-8")
    assert "<text" not in svg and "<path" in svg  # every glyph is an outline


def test_the_chinese_diagram_is_chinese_and_draws_every_glyph(tmp_path):
    for english, chinese in zip(diagram.words("en").split(" | "), diagram.words("zh").split(" | ")):
        if english == chinese:  # only code stays as it is: names, JSON, a single word
            assert any(c in english for c in '_{}[]":()<>.=') or " " not in english.strip(), english
        else:
            assert any("\u4e00" <= c <= "\u9fff" for c in chinese), chinese
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a missing glyph is a UserWarning
        path = diagram.write("zh", tmp_path / "zh.svg")
    assert path.stat().st_size > 10_000


def test_the_words_check_can_fail(tmp_path, monkeypatch):
    path = diagram.write("en", tmp_path / "en.svg")
    monkeypatch.setitem(diagram.FILES, "en", path)
    monkeypatch.setattr(diagram, "TITLE", {**diagram.TITLE})  # unchanged title, changed words below
    original = diagram.words
    monkeypatch.setattr(diagram, "words", lambda language="en": original(language) + " | a new box")
    with pytest.raises(AssertionError, match="run: python -m"):
        test_the_saved_diagram_says_what_the_module_draws("en")
