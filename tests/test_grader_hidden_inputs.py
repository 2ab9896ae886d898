"""Hidden inputs do not repeat (issue 25): over 100 seeds, every hidden check that draws from the seed
draws 100 different inputs, and the checks that draw are the ones docs/grading.md names.

A check's input is what its code builds from the values it draws (the rest of the cell is fixed
code), so the test records every draw each check makes and counts the distinct records. The
notebooks run without a kernel, their cells executed in order with no answers (a check fails once it
calls one, after its draws); fsync is skipped, since only the draws are looked at.
"""

import contextlib
import io
import os
import random
import re
import tempfile
from pathlib import Path

import pytest
from test_grading_support import SOURCES

from s09_jsonl_transcript.grading import checks
from s09_jsonl_transcript.grading.checks import SEED_VARIABLE

pytestmark = pytest.mark.slow

RUNS = 100
DOCS = Path(__file__).resolve().parent.parent / "docs" / "grading.md"


class RecordingRandom(random.Random):
    """A check's generator that writes down every value it hands out."""

    def __init__(self, seed, record: list):
        self.record = record
        super().__init__(seed)

    def getrandbits(self, bits):
        value = super().getrandbits(bits)
        self.record.append(value)
        return value

    def random(self):
        value = super().random()
        self.record.append(value)
        return value


def draws_of(exercise: str, seed: int, monkeypatch) -> dict:
    """Check name -> the tuple of values it drew, for one run of the notebook under seed."""
    drawn = {}

    def recording(check_name):
        return RecordingRandom(f"{seed}/{check_name}", drawn.setdefault(check_name, []))

    monkeypatch.setenv(SEED_VARIABLE, str(seed))
    monkeypatch.setattr(checks, "check_random", recording)
    monkeypatch.setattr(os, "fsync", lambda descriptor: None)
    source = SOURCES[exercise]
    answers = {answer.cell_index for answer in source.answers}
    namespace = {}
    with tempfile.TemporaryDirectory() as folder, contextlib.chdir(folder):
        for position, cell in enumerate(source.notebook.cells):
            if cell.cell_type != "code" or position in answers:
                continue
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    exec(compile(cell.source, f"<{exercise} cell {position}>", "exec"), namespace)  # noqa: S102
            except Exception:  # noqa: BLE001 - without answers a check fails; its draws are already made
                pass
    return {name: tuple(values) for name, values in drawn.items()}


@pytest.fixture(scope="module")
def draws() -> dict:
    """Check name -> the list of its records over RUNS seeds."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        found = {}
        for exercise in sorted(SOURCES):
            for seed in range(RUNS):
                for name, record in draws_of(exercise, seed, monkeypatch).items():
                    found.setdefault(name, []).append(record)
        return found


def hidden_checks() -> set:
    return {check.name for source in SOURCES.values() for check in source.checks if check.hidden}


def test_every_drawing_check_is_hidden_and_named_in_the_docs(draws):
    named = set(re.findall(r"ex\d\d\.\d+", re.search(r"The hidden checks (.*?) draw from the seed",
                                                      DOCS.read_text(encoding="utf-8"), re.S).group(1)))
    assert set(draws) == named
    assert named <= hidden_checks()


def test_no_hidden_input_repeats_in_100_runs(draws):
    repeating = {name: len(set(records)) for name, records in draws.items() if len(set(records)) < RUNS}
    assert not repeating, f"distinct inputs in {RUNS} runs: {repeating}"
    assert all(len(records) == RUNS for records in draws.values())
