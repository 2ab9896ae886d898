"""A chapter's printed sentences and plot labels exist in Chinese: every tr("...") of its cells has an entry.

The chapters write their code in their cells, so what they print is there too, passed to the notebook's own
translator (`tr = i18n.translator("<domain>")`); the Chinese notebook finds it in locale/zh/<domain>.json.
"""

import re

import pytest
from chapter_texts import catalog_of, notebook_translator, translated_texts

from s09_jsonl_transcript.text.bilingual import notebook_files

WITH_TRANSLATOR = [path for path in notebook_files("en") if notebook_translator(path)[0]]
FIELD = re.compile(r"{(\w*)[^}]*}")
CJK = re.compile(r"[\u4e00-\u9fff]")


def test_the_chapters_have_their_own_translator():
    assert {"01_events_on_disk", "02_crash_injection", "03_partial_tail_vs_corruption", "04_replay_window",
            "05_memory_gate"} <= {path.stem for path in WITH_TRANSLATOR}


@pytest.mark.parametrize("path", WITH_TRANSLATOR, ids=lambda path: path.stem)
def test_every_sentence_has_chinese_and_no_entry_is_left_over(path):
    domain, _ = notebook_translator(path)
    literals, dynamic = translated_texts(path)
    catalog = catalog_of(domain)
    assert dynamic == [], "pass literal strings to tr, so this test can see them"
    assert sorted(set(literals) - set(catalog)) == [], "sentences without Chinese"
    assert sorted(set(catalog) - set(literals)) == [], "Chinese entries no cell asks for"
    for english, chinese in catalog.items():
        # "{label}: {answer}" has no words to translate, and "replay window (max_items=4)" only terms the
        # Chinese text keeps in English (notebooks/glossary.md): its punctuation still becomes Chinese
        words = re.search(r"[A-Za-z]", FIELD.sub("", english))
        assert CJK.search(chinese) or not words or chinese != english, f"no Chinese for {english!r}"
        assert sorted(FIELD.findall(chinese)) == sorted(FIELD.findall(english)), f"fields differ: {english!r}"


def test_the_check_sees_literals_and_calls_that_are_not(tmp_path):
    import json

    cells = ['from s09_jsonl_transcript import i18n\ntr = i18n.translator("probe")',
             'print(tr("{n} lines", n=1))\nname = "x"\nprint(tr(name))\n!ls']
    path = tmp_path / "01_probe.ipynb"
    path.write_text(json.dumps({"cells": [{"cell_type": "code", "source": [cell]} for cell in cells]}))
    assert notebook_translator(path) == ("probe", "tr")
    assert translated_texts(path) == (["{n} lines"], ["tr(name)"])
