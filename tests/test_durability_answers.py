"""The reference answer keeps every promise; each named wrong answer loses exactly the properties it
lists (capstone_answers.WRONG_ANSWERS), through the real engine: strace, the sandbox, real kills.

The fast tier grades the reference and one wrong answer of each kind of loss at a small size; the
slow tier grades every named answer at .ci/run's size, and the reference at the grader's full size.
"""

import json

import pytest
from capstone_answers import QUICK, REFERENCE, SMALL, TINY, WRONG_ANSWERS, require_recorder, wrong

from s09_jsonl_transcript.grading.durability.engine import FULL, PROPERTIES, grade
from s09_jsonl_transcript.grading.durability.states import DAMAGE, HELD_KILL, POWER_LOSS, REPAIR_KILL

pytestmark = pytest.mark.usefixtures("recorder")


@pytest.fixture
def recorder():
    require_recorder()


def _lost(source: str, size=TINY, seed: int = 21) -> set:
    verdict = grade(source, seed=seed, size=size)
    assert verdict.problem is None, verdict.problem.reason
    return verdict.lost()


def test_the_reference_keeps_every_promise_at_a_small_size():
    verdict = grade(REFERENCE, seed=21, size=TINY)
    assert verdict.problem is None and verdict.lost() == set()
    assert all(result["judged"] > 0 for result in verdict.results.values())  # every property was looked at
    assert verdict.counts[POWER_LOSS] > 10 * TINY.events and verdict.counts[HELD_KILL] == 2 * TINY.events


@pytest.mark.parametrize("name", ["forgives_mid_file_damage", "rejects_partial_tail"])
def test_a_wrong_answer_of_each_kind_loses_exactly_its_properties(name):
    assert _lost(wrong(name)) == WRONG_ANSWERS[name]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(WRONG_ANSWERS))
def test_each_named_wrong_answer_loses_exactly_its_properties(name):
    assert _lost(wrong(name), SMALL, seed=5) == WRONG_ANSWERS[name]


@pytest.mark.slow
@pytest.mark.prerelease  # a full-size run: .ci/prerelease
def test_the_reference_scores_zero_findings_on_every_property_at_full_size():
    verdict = grade(REFERENCE, seed=8, size=FULL)
    assert verdict.problem is None
    assert {name: len(result["findings"]) for name, result in verdict.results.items()} == dict.fromkeys(PROPERTIES, 0)
    assert verdict.counts[POWER_LOSS] >= 8_000 and verdict.counts[HELD_KILL] >= 40
    assert verdict.counts[DAMAGE] >= 20_000 and verdict.counts[REPAIR_KILL] >= 60


def _without_times(verdict) -> str:
    data = verdict.as_json()
    del data["stages"]
    return json.dumps(data, sort_keys=True, ensure_ascii=False)


def test_a_regrade_with_the_same_seed_gives_identical_ids_and_counts():
    first, second = (grade(wrong("no_fsync"), seed=33, size=QUICK) for _ in range(2))
    assert first.lost() == WRONG_ANSWERS["no_fsync"]
    assert _without_times(first) == _without_times(second)
    ids = [finding["id"] for entry in first.as_json()["properties"] for finding in entry["findings"]]
    assert len(ids) == len(set(ids)) > 0
    other = grade(wrong("no_fsync"), seed=34, size=QUICK)
    assert _without_times(other) != _without_times(first)  # another seed: other events, other states


def test_the_verdict_is_plain_data_for_the_check_cells():
    data = grade(wrong("keeps_torn_tail"), seed=21, size=QUICK).as_json()
    assert json.loads(json.dumps(data)) == data
    tail = next(entry for entry in data["properties"] if entry["id"] == "tail")
    assert not tail["passed"] and tail["findings"]
    finding = tail["findings"][0]
    assert set(finding) == {"id", "property", "campaign", "message", "acknowledged", "returned", "byte_map", "runs",
                            "size"}
    assert " · " in finding["message"] and finding["byte_map"].startswith(finding["id"])
