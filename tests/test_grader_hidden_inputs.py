"""Hidden inputs do not repeat (issue 25): over 100 seeds, every hidden check that draws from the seed
draws 100 different inputs, and the checks that draw are the ones docs/grading.md names. A check draws
by its stable id (issue 42): adding a check before it, which renumbers its name, changes none of its draws.

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


def draws_of(exercise: str, seed: int, monkeypatch, notebook=None) -> dict:
    """Check id -> the tuple of values it drew, for one run of the notebook (the source's, or the one given)."""
    drawn = {}

    def recording(check_id):
        return RecordingRandom(f"{seed}/{check_id}", drawn.setdefault(check_id, []))

    monkeypatch.setenv(SEED_VARIABLE, str(seed))
    monkeypatch.setattr(checks, "check_random", recording)
    monkeypatch.setattr(os, "fsync", lambda descriptor: None)
    notebook = notebook or SOURCES[exercise].notebook
    namespace = {}
    with tempfile.TemporaryDirectory() as folder, contextlib.chdir(folder):
        for position, cell in enumerate(notebook.cells):
            if cell.cell_type != "code" or cell.metadata.get("s09", {}).get("role") == "answer":
                continue
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    exec(compile(cell.source, f"<{exercise} cell {position}>", "exec"), namespace)  # noqa: S102
            except Exception:  # noqa: BLE001 - without answers a check fails; its draws are already made
                pass
    return {name: tuple(values) for name, values in drawn.items()}


@pytest.fixture(scope="module")
def draws() -> dict:
    """Check id -> the list of its records over RUNS seeds."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        found = {}
        for exercise in sorted(SOURCES):
            for seed in range(RUNS):
                for name, record in draws_of(exercise, seed, monkeypatch).items():
                    found.setdefault(name, []).append(record)
        return found


def hidden_checks() -> set:
    return {check.id for source in SOURCES.values() for check in source.checks if check.hidden}


NAMES = {check.id: check.name for source in SOURCES.values() for check in source.checks}


def test_every_drawing_check_is_hidden_and_named_in_the_docs(draws):
    named = set(re.findall(r"`(ex\d\d-[a-z-]+)`", re.search(r"The hidden checks (.*?) draw from the seed",
                                                          DOCS.read_text(encoding="utf-8"), re.S).group(1)))
    assert set(draws) == named  # by id: a check added before them renames them, never changes their ids
    assert named <= hidden_checks()


def test_no_hidden_input_repeats_in_100_runs(draws):
    repeating = {name: len(set(records)) for name, records in draws.items() if len(set(records)) < RUNS}
    assert not repeating, f"distinct inputs in {RUNS} runs: {repeating}"
    assert all(len(records) == RUNS for records in draws.values())


def test_adding_a_check_before_the_others_changes_none_of_their_inputs(monkeypatch):
    """A maintainer adds a visible check at the top of exercise 4 and renumbers the names, as students read them:
    every other check draws, by its id, exactly what it drew before."""
    import copy

    source = SOURCES["ex04"]
    notebook = source.fresh_notebook()
    checks = [cell for cell in notebook.cells if cell.metadata.get("s09", {}).get("role") == "check"]
    added = copy.deepcopy(checks[0])
    added.metadata["s09"].update(id="ex04-added-first", name="ex04.1")
    added.source = 'rng = check_random("ex04-added-first")\ncount = rng.randint(1, 10)\n'
    for number, cell in enumerate(checks, start=2):
        cell.metadata["s09"]["name"] = f"ex04.{number}"
    notebook.cells.insert(notebook.cells.index(checks[0]), added)
    for seed in (0, 1, 2):
        before, after = draws_of("ex04", seed, monkeypatch), draws_of("ex04", seed, monkeypatch, notebook)
        assert after.pop("ex04-added-first") and before == after
