"""The judge's rules, one state at a time (no process runs here): on which states each property is
judged, and how a raise counts (judge.py's module doc)."""

import pytest

from s09_jsonl_transcript.grading.durability.contract import Contract, continuation_event, record_hash, session_events
from s09_jsonl_transcript.grading.durability.judge import (
    CLOSED,
    FINDINGS_PER_PROPERTY,
    KEPT,
    ONE_WRITE,
    TAIL,
    WHOLE,
    Expected,
    Judge,
)
from s09_jsonl_transcript.grading.durability.kit import ReferenceReading
from s09_jsonl_transcript.grading.durability.sessions import Observed
from s09_jsonl_transcript.grading.durability.states import DAMAGE, INTERLEAVING, POWER_LOSS, REPAIR, State

PATH = "/tmp/work/session/capstone.jsonl"
CONTRACT = Contract()
EVENTS = session_events(5, 4)
RECORDS = CONTRACT.records(PATH, EVENTS)
LINES = [CONTRACT.encode_line(record) for record in RECORDS]
NEXT = continuation_event(5)


def judge() -> Judge:
    return Judge(Expected(RECORDS, lambda kept: CONTRACT.record(PATH, kept + 1, NEXT)))


def returned(records) -> dict:
    return {"returned": {"type": "list", "hashes": [record_hash(record) for record in records],
                         "sequences": [record["sequence"] for record in records]}}


def raised(name="TranscriptCorruptionError", contract=True) -> dict:
    return {"raised": {"class": name, "mro": ["RuntimeError"], "contract": contract, "message": "line 2"}}


def appended(kept: int) -> dict:
    record = CONTRACT.record(PATH, kept + 1, NEXT)
    return {"returned": {"type": "dict", "hash": record_hash(record), "sequence": kept + 1}}


def state(content, acknowledged, campaign=POWER_LOSS) -> State:
    return State("pl-test", campaign, content, acknowledged, ("a test state", "测试状态"), runs=[])


def observed_well(content_after: bytes, kept: int, recovered=None) -> Observed:
    """What a correct answer does: recover returns kept records and leaves content_after; the next append."""
    return Observed({"a": recovered or returned(RECORDS[:kept]), "b": returned(RECORDS[:kept]), "c": appended(kept)},
                    after_a=content_after, after_b=content_after + CONTRACT.encode_line(
                        CONTRACT.record(PATH, kept + 1, NEXT)))


def lost_by(state_, reading, observed) -> set:
    judging = judge()
    judging.state(state_, reading, observed)
    return {name for name, result in judging.results().items() if result["findings"]}


CLEAN = b"".join(LINES[:2])
TORN = CLEAN + LINES[2][:30]


def test_a_correct_answer_on_a_torn_state_breaks_nothing():
    reading = ReferenceReading(RECORDS[:2], partial_tail_offset=len(CLEAN))
    assert lost_by(state(TORN, 2), reading, observed_well(CLEAN, 2)) == set()


def test_a_raise_on_a_state_whose_only_damage_is_a_torn_tail_fails_tail_not_kept():
    reading = ReferenceReading(RECORDS[:2], partial_tail_offset=len(CLEAN))
    observed = observed_well(CLEAN, 2, recovered=raised())
    observed.after_a = TORN
    assert lost_by(state(TORN, 2), reading, observed) == {TAIL}


def test_a_raise_on_a_clean_file_loses_the_acknowledged_events():
    observed = observed_well(CLEAN, 2, recovered=raised())
    assert lost_by(state(CLEAN, 2), ReferenceReading(RECORDS[:2]), observed) == {KEPT}


def test_a_raise_on_mid_file_damage_passes_closed():
    damaged = LINES[0] + b"garbage\n" + LINES[2]
    reading = ReferenceReading(refused_line=2, refused_offset=len(LINES[0]), reason="invalid")
    observed = Observed({"a": raised()}, after_a=damaged)
    assert lost_by(state(damaged, 0, DAMAGE), reading, observed) == set()
    for wrong in (Observed({"a": raised("ValueError", contract=False)}, after_a=damaged),
                  Observed({"a": returned(RECORDS[:1])}, after_a=damaged),
                  Observed({"a": raised()}, after_a=LINES[0])):  # raised, but cut the file first
        assert lost_by(state(damaged, 0, DAMAGE), reading, wrong) == {CLOSED}


def test_acknowledged_events_missing_from_the_disk_are_lost_whatever_recover_does():
    observed = observed_well(CLEAN, 2)
    assert lost_by(state(CLEAN, 3), ReferenceReading(RECORDS[:2]), observed) == {KEPT}
    damaged = LINES[0] + b"\x00" * 10 + b"\n"
    reading = ReferenceReading(refused_line=2, refused_offset=len(LINES[0]), reason="invalid")
    assert lost_by(state(damaged, 2), reading, Observed({"a": raised()}, after_a=damaged)) == {KEPT}


def test_recover_returning_fewer_records_than_acknowledged_loses_them():
    observed = observed_well(LINES[0], 1, recovered=returned(RECORDS[:1]))
    assert lost_by(state(CLEAN, 2), ReferenceReading(RECORDS[:2]), observed) == {KEPT}


def test_a_record_returned_twice_or_changed_is_whole():
    twice = observed_well(CLEAN, 2, recovered=returned([RECORDS[0], RECORDS[0]]))
    assert lost_by(state(CLEAN, 2), ReferenceReading(RECORDS[:2]), twice) == {WHOLE}
    changed = observed_well(CLEAN, 2, recovered=returned([RECORDS[0], {**RECORDS[1], "content": "edited"}]))
    assert lost_by(state(CLEAN, 2), ReferenceReading(RECORDS[:2]), changed) == {WHOLE}


def test_a_file_holding_a_record_never_sent_is_whole():
    ahead = {**RECORDS[2], "content": "a guess"}
    content = CLEAN + CONTRACT.encode_line(ahead)
    assert lost_by(state(content, 2), ReferenceReading(RECORDS[:2] + [ahead]),
                   observed_well(content, 3, recovered=returned(RECORDS[:2] + [ahead]))) == {WHOLE}


def test_a_tail_left_or_cut_at_the_wrong_byte_is_tail():
    reading = ReferenceReading(RECORDS[:2], partial_tail_offset=len(CLEAN))
    for after in (TORN, TORN[:len(CLEAN) + 1], CLEAN[:-1]):
        observed = observed_well(CLEAN, 2)
        observed.after_a = after
        assert lost_by(state(TORN, 2), reading, observed) == {TAIL}


def test_a_whole_record_that_lost_its_newline_may_be_kept_or_cut():
    content = CLEAN + LINES[2][:-1]
    reading = ReferenceReading(RECORDS[:3], unterminated=True)
    assert lost_by(state(content, 2), reading, observed_well(CLEAN, 2)) == set()
    assert lost_by(state(content, 2), reading, observed_well(content + b"\n", 3)) == set()


def test_the_next_append_must_add_exactly_the_next_record():
    wrong_sequence = observed_well(CLEAN, 2)
    wrong_sequence.outcomes["c"] = appended(3)
    assert lost_by(state(CLEAN, 2), ReferenceReading(RECORDS[:2]), wrong_sequence) == {WHOLE}
    spliced = observed_well(CLEAN, 2)
    spliced.after_b = CLEAN + b"{" + spliced.after_b[len(CLEAN):]
    assert lost_by(state(CLEAN, 2), ReferenceReading(RECORDS[:2]), spliced) == {WHOLE}
    failed = observed_well(CLEAN, 2)
    failed.outcomes["c"] = raised("OSError", contract=False)
    assert lost_by(state(CLEAN, 2), ReferenceReading(RECORDS[:2]), failed) == {WHOLE}


def test_an_interleaving_is_whole_and_its_spliced_file_must_fail_closed():
    spliced = LINES[0][:-1] + LINES[1] + b"\n"
    reading = ReferenceReading(refused_line=1, refused_offset=0, reason="invalid")
    assert lost_by(state(spliced, 1, INTERLEAVING), reading, Observed({"a": raised()}, after_a=spliced)) == {WHOLE}
    assert lost_by(state(spliced, 1, INTERLEAVING), reading,
                   Observed({"a": returned([])}, after_a=spliced)) == {WHOLE, CLOSED}


def test_everything_found_on_a_crashed_repair_counts_against_tail():
    observed = observed_well(LINES[0], 1, recovered=returned(RECORDS[:1]))
    assert lost_by(state(CLEAN, 2, REPAIR), ReferenceReading(RECORDS[:2]), observed) == {TAIL}


def test_a_property_stops_after_its_limit_of_findings():
    judging = judge()
    observed = observed_well(CLEAN, 2, recovered=raised())
    for _ in range(FINDINGS_PER_PROPERTY + 5):
        judging.state(state(CLEAN, 2), ReferenceReading(RECORDS[:2]), observed)
    result = judging.results()[KEPT]
    assert len(result["findings"]) == FINDINGS_PER_PROPERTY and result["stopped"]
    assert result["judged"] == FINDINGS_PER_PROPERTY + 5


@pytest.mark.parametrize("writes, found", [
    ([[(0, len(LINES[0]))], [(len(LINES[0]), len(LINES[1]))]], False),
    ([[(0, len(LINES[0]) - 1), (len(LINES[0]) - 1, 1)], [(len(LINES[0]), len(LINES[1]))]], True),
    ([[(0, len(LINES[0]) + len(LINES[1]))], []], True),
])
def test_each_event_must_be_one_write_of_its_whole_record(writes, found):
    judging = judge()
    judging.one_write(writes, LINES[0] + LINES[1])
    assert bool(judging.results()[ONE_WRITE]["findings"]) == found


def test_findings_carry_a_byte_map_and_their_runs():
    judging = judge()
    torn_state = State("pl-p4-k3-t30-cut", POWER_LOSS, TORN, 2, ("a test state", "测试状态"),
                       runs=[(0, len(CLEAN), "synced"), (len(CLEAN), len(TORN), "unsynced")])
    observed = observed_well(CLEAN, 2)
    observed.after_a = TORN
    judging.state(torn_state, ReferenceReading(RECORDS[:2], partial_tail_offset=len(CLEAN)), observed)
    finding = judging.results()[TAIL]["findings"][0]
    assert finding.state_id == "pl-p4-k3-t30-cut" and finding.size == len(TORN)
    assert finding.byte_map.splitlines()[0] == "pl-p4-k3-t30-cut"
    assert "S" in finding.byte_map and "U" in finding.byte_map and "returned 2 records" in finding.byte_map
    assert finding.as_json()["runs"] == [[0, len(CLEAN), "synced"], [len(CLEAN), len(TORN), "unsynced"]]
