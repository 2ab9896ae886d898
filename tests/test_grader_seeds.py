"""Hidden checks draw their inputs from the grading run's seed: every wrong answer must lose exactly the
checks it declares whatever the seed. A class run (test_grading_runs.py) tries one random seed; this
tries several for each wrong answer, without a kernel: the notebook's cells run with exec, in order,
the check cells as the instructor wrote them (the wrong answers are the kit's own test data).
"""

import contextlib
import io
import re
import tempfile

import pytest
from test_grading_support import GRADING_DATA, SOURCES, answer_cells, reference_answers

from s09_jsonl_transcript.grading.checks import SEED_VARIABLE

pytestmark = pytest.mark.slow

SEEDS = (0, 1, 2, 3)
WRONG_ANSWERS = sorted((GRADING_DATA / "wrong_answers").glob("*.py"))


def failed_checks(exercise: str, answers: dict, seed: int, monkeypatch, folder) -> set:
    """The checks that raise when the notebook runs top to bottom with these answers and this seed."""
    monkeypatch.setenv(SEED_VARIABLE, str(seed))
    monkeypatch.chdir(folder)
    source = SOURCES[exercise]
    answer_at = {answer.cell_index: answer.name for answer in source.answers}
    check_at = {check.cell_index: check.name for check in source.checks}
    namespace, failed, code_index = {}, set(), 0
    for position, cell in enumerate(source.notebook.cells):
        if cell.cell_type != "code":
            continue
        code = answers[answer_at[position]] if position in answer_at else cell.source
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(code, f"<cell {code_index}>", "exec"), namespace)  # noqa: S102 - the kit's own test data
        except Exception:  # noqa: BLE001 - a failing check is what is counted
            if code_index in check_at:
                failed.add(check_at[code_index])
        code_index += 1
    return failed


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("path", WRONG_ANSWERS, ids=lambda path: path.stem)
def test_a_wrong_answer_loses_exactly_its_checks_whatever_the_seed(path, seed, monkeypatch):
    text = path.read_text(encoding="utf-8")
    loses = set(re.search(r"^# loses: (.*)$", text, re.MULTILINE).group(1).split())
    exercise = path.stem[:4]
    answers = {**reference_answers(exercise), **answer_cells(text)}
    with tempfile.TemporaryDirectory() as folder:
        assert failed_checks(exercise, answers, seed, monkeypatch, folder) == loses


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("exercise", sorted(SOURCES))
def test_the_reference_passes_every_check_whatever_the_seed(exercise, seed, monkeypatch):
    with tempfile.TemporaryDirectory() as folder:
        assert failed_checks(exercise, reference_answers(exercise), seed, monkeypatch, folder) == set()
