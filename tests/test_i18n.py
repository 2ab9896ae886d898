"""The kit's two languages: translators, complete catalogs, and plots that draw Chinese without missing glyphs."""

import ast
import importlib
import json
import re
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from s09_jsonl_transcript.text import i18n  # noqa: E402

PACKAGE = Path(__file__).resolve().parents[1] / "s09_jsonl_transcript"
GRADING_LOCALE = PACKAGE / "grading" / "locale"
FIELD = re.compile(r"{(\w*)[^}]*}")


@pytest.fixture(autouse=True)
def english_afterwards():
    yield
    i18n.use("en")


def translated_strings(path: Path) -> tuple[str | None, list[str], list[str]]:
    """(domain, literal strings passed to the module's translator, calls whose text is not a literal)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    domain, name = None, None
    for node in ast.walk(tree):
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                and ast.unparse(node.value.func).endswith("translator") and node.value.args
                and isinstance(node.value.args[0], ast.Constant)):
            domain, name = node.value.args[0].value, node.targets[0].id
    if name is None:
        return None, [], []
    literals, dynamic = [], []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name:
            first = node.args[0] if node.args else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                literals.append(first.value)
            else:
                dynamic.append(f"line {node.lineno}: {ast.unparse(node)}")
    return domain, literals, dynamic


MODULES = sorted(PACKAGE.rglob("*.py"))


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)


@pytest.mark.parametrize("path", MODULES, ids=lambda path: str(path.relative_to(PACKAGE)))
def test_every_translated_string_has_chinese_and_no_entry_is_left_over(path):
    domain, literals, dynamic = translated_strings(path)
    if domain is None:
        return
    assert dynamic == [], "translate literal strings only, so this test can see them"
    locale = GRADING_LOCALE if "grading" in path.relative_to(PACKAGE).parts else i18n.LOCALE_DIR  # the grader's own
    catalog = json.loads((locale / "zh" / f"{domain}.json").read_text(encoding="utf-8"))
    assert sorted(set(literals) - set(catalog)) == [], "strings without Chinese"
    data = set(getattr(importlib.import_module(module_name(path)), "TRANSLATED_DATA", ()))  # looked up by tr.data
    assert sorted(set(catalog) - set(literals) - data) == [], "Chinese entries no string asks for"
    for english, chinese in catalog.items():
        assert chinese.strip(), f"empty Chinese for {english!r}"
        assert FIELD.findall(chinese) and sorted(FIELD.findall(chinese)) == sorted(FIELD.findall(english)) or (
            not FIELD.findall(english) and not FIELD.findall(chinese)), f"fields differ: {english!r} / {chinese!r}"


def test_the_catalog_check_can_fail(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text('from s09_jsonl_transcript import i18n\ntr = i18n.translator("probe")\n'
                     'tr("Next event")\ntr(f"{1} lines")\n')
    domain, literals, dynamic = translated_strings(probe)
    assert (domain, literals, len(dynamic)) == ("probe", ["Next event"], 1)


def test_a_translator_answers_in_the_language_in_use(tmp_path, monkeypatch):
    monkeypatch.setattr(i18n, "LOCALE_DIR", tmp_path)
    i18n.catalog.cache_clear()
    (tmp_path / "zh").mkdir()
    (tmp_path / "zh" / "demo.json").write_text(json.dumps({"{count} lines": "{count} 行", "Reset": "重置"}))
    tr = i18n.translator("demo")
    assert tr("{count} lines", count=3) == "3 lines" and tr("Reset") == "Reset"
    i18n.use("zh")
    assert tr("{count} lines", count=3) == "3 行" and tr("Reset") == "重置"
    assert tr("Not in the catalog") == "Not in the catalog"
    i18n.catalog.cache_clear()


def test_only_known_languages_are_accepted():
    with pytest.raises(ValueError, match="language must be one of"):
        i18n.use("fr")


@pytest.mark.parametrize("environ, language", [
    ({"LANG": "zh_CN.UTF-8"}, "zh"), ({"LANG": "en_US.UTF-8"}, "en"), ({}, "en"),
    ({"LC_ALL": "zh_TW.UTF-8", "LANG": "en_US.UTF-8"}, "zh"), ({"LC_ALL": "C", "LANG": "zh_CN.UTF-8"}, "en"),
])
def test_the_language_follows_the_locale(environ, language):
    assert i18n.language_from_environment(environ) == language


def test_chinese_plots_draw_every_glyph():
    i18n.use("zh")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a missing glyph is a UserWarning: make it fail
        figure, axes = plt.subplots()
        axes.set_title("追加写入 append：部分尾行被忽略 → ✓ µs")
        axes.set_xlabel("事件序号 sequence")
        figure.canvas.draw()
        plt.close(figure)


def test_without_the_cjk_font_a_chinese_plot_warns():
    """The check above can fail: with only DejaVu Sans, Chinese glyphs are missing."""
    matplotlib.rcParams["font.family"] = ["DejaVu Sans"]
    with pytest.warns(UserWarning, match="missing from font"):
        figure, axes = plt.subplots()
        axes.set_title("追加写入")
        figure.canvas.draw()
        plt.close(figure)
