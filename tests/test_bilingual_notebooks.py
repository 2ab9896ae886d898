"""Every notebook translated so far agrees with its English source (bilingual.problems finds nothing)."""

import pytest

from s09_jsonl_transcript.bilingual import pairs, problems

TRANSLATED = [pair for pair in pairs() if pair.text.exists()]


@pytest.mark.parametrize("pair", TRANSLATED, ids=lambda pair: pair.name)
def test_every_translated_notebook_agrees_with_its_english_source(pair):
    assert problems(pair) == []
