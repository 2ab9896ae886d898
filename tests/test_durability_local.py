"""The notebook's local crash check: no strace, no sandbox (a student's Mac has neither). The driver
records the answer's own os calls and kills itself before the chosen write or fsync; the states and
the judge are the grader's, at a smaller size, and each finding comes with what a cell draws."""

import pytest
from capstone_answers import REFERENCE, WRONG_ANSWERS, wrong

from s09_jsonl_transcript.grading.durability.engine import CampaignSize
from s09_jsonl_transcript.grading.durability.local import drawable, local_check, source_of

SMALLER = CampaignSize(events=5, every_byte=False, power_loss_limit=400, damaged_files=100, repair_kills=2,
                       batch_size=500)


def test_the_reference_keeps_every_promise_and_nothing_is_recorded_by_strace():
    verdict = local_check(REFERENCE, size=SMALLER)
    assert verdict.recorder == "local" and not verdict.sandboxed
    assert verdict.problem is None and verdict.lost() == set()
    assert verdict.counts["held kill"] == 2 * SMALLER.events  # real kills, held by the driver itself


def test_a_wrong_answer_gets_findings_a_cell_can_draw():
    verdict = local_check(wrong("no_fsync"), size=SMALLER)
    assert verdict.lost() == WRONG_ANSWERS["no_fsync"]
    # the lesson: an append without fsync survives every kill (the page cache outlives the process),
    # and loses acknowledged events to power loss
    assert verdict.campaigns["held kill"]["broken"] == 0 < verdict.campaigns["held kill"]["judged"]
    assert verdict.campaigns["power loss"]["broken"] > 0
    shown = drawable(verdict)
    assert shown and all(finding["property"] == "kept" for finding in shown)
    finding = next(finding for finding in shown if finding["size"])
    assert finding["runs"] and finding["runs"][-1][1] == finding["size"]
    assert finding["byte_map"].startswith(finding["id"])


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(WRONG_ANSWERS))
def test_each_named_wrong_answer_loses_the_same_properties_locally(name):
    assert local_check(wrong(name), size=SMALLER).lost() == WRONG_ANSWERS[name]


def test_writes_the_local_check_cannot_see_are_said_not_guessed():
    hidden = REFERENCE + '''

def _write_durably(fd, line):
    with open(fd, "ab", closefd=False) as stream:  # a file object's write never calls os.write
        stream.write(line)
    os.fsync(fd)
'''
    verdict = local_check(hidden, size=SMALLER)
    assert verdict.problem is not None and "local check could not follow" in verdict.problem.reason
    assert "本地检查" in verdict.problem.reason


def add(a, b):
    return a + b


def test_a_notebooks_functions_become_one_cells_source():
    assert source_of(add, source_of).startswith("def add(a, b):\n    return a + b\n")
