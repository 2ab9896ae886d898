"""A finding's id replays it exactly: the same seed, the same answer, the same state and the same
finding, through the Python call and through `python -m s09_jsonl_transcript.grading.durability replay`."""

import subprocess
import sys

import pytest
from capstone_answers import QUICK, REFERENCE, require_recorder, variant, wrong

from s09_jsonl_transcript.grading.durability.calls import ROWS
from s09_jsonl_transcript.grading.durability.cli import main
from s09_jsonl_transcript.grading.durability.engine import grade
from s09_jsonl_transcript.grading.durability.replay import replay

REWRITES_ON_REPAIR = variant("rewrites_on_repair")


def _first_findings(source: str, seed: int) -> dict:
    verdict = grade(source, seed=seed, size=QUICK)
    return {finding.state_id: finding for result in verdict.results.values() for finding in result["findings"]}


SLOW = pytest.mark.slow


@pytest.mark.parametrize("source, prefix", [
    (wrong("no_fsync"), "pl-"), (REWRITES_ON_REPAIR, "rep:"),
    pytest.param(wrong("forgives_mid_file_damage"), "dmg-", marks=SLOW),
    pytest.param(wrong("two_writes"), "mix-", marks=SLOW), pytest.param(wrong("two_writes"), "session-", marks=SLOW),
], ids=["power-loss", "repair", "damage", "interleaving", "session"])
def test_a_finding_replays_by_its_id(source, prefix):
    require_recorder()
    findings = _first_findings(source, seed=12)
    state_id = next(state_id for state_id in findings if state_id.startswith(prefix))
    replayed = replay(source, state_id, seed=12, size=QUICK)
    assert replayed.problem is None
    assert [(finding.property, finding.message, finding.byte_map) for finding in replayed.findings] == [
        (findings[state_id].property, findings[state_id].message, findings[state_id].byte_map)]


def test_a_repair_that_empties_the_file_first_loses_acknowledged_events_when_it_crashes():
    require_recorder()
    verdict = grade(REWRITES_ON_REPAIR, seed=12, size=QUICK)
    assert verdict.lost() == {"tail"}  # only a crash inside the repair finds it
    assert {finding.campaign for finding in verdict.results["tail"]["findings"]} <= {"repair", "repair kill"}


def test_an_id_no_grading_gives_is_refused():
    require_recorder()
    with pytest.raises(ValueError, match="no finding"):
        replay(REFERENCE, "nothing-7", seed=1, size=QUICK)


@pytest.mark.slow
def test_the_replay_command_prints_the_finding_and_its_byte_map(tmp_path):
    require_recorder()
    answer = tmp_path / "answer.py"
    answer.write_text(wrong("keeps_torn_tail"), encoding="utf-8")
    graded = subprocess.run([sys.executable, "-m", "s09_jsonl_transcript.grading.durability", "grade", str(answer),
                             "--seed", "3", "--size", "local", "--show", "1"], capture_output=True, text=True)
    assert graded.returncode == 1, graded.stderr
    assert "failed · 未通过: a partial tail is forgiven and cut" in graded.stdout
    state_id = next(line.split(":")[0].strip() for line in graded.stdout.splitlines() if line.startswith("  pl-"))
    done = subprocess.run([sys.executable, "-m", "s09_jsonl_transcript.grading.durability", "replay", str(answer),
                           state_id, "--seed", "3", "--size", "local"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(state_id) and "[tail]" in done.stdout
    assert "recover left the partial tail" in done.stdout


def test_the_calls_command_prints_the_table(capsys):
    assert main(["calls"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("| system calls |") and len(lines) == 2 + len(ROWS)
