"""Every notebook with a Chinese text agrees with its English source: `bilingual check` as a test."""

import pytest

from s09_jsonl_transcript.text import bilingual

TRANSLATED = [pair for pair in bilingual.pairs() if pair.text.exists()]


@pytest.mark.parametrize("pair", TRANSLATED, ids=lambda pair: pair.name)
def test_every_translated_notebook_agrees_with_its_english_source(pair):
    problems = bilingual.problems(pair)
    assert not problems, f"{pair.name}:\n  " + "\n  ".join(problems)
