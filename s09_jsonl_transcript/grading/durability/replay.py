"""Replay one finding: record the answer's session again with the grading's seed, rebuild the one
state the finding's id names, and judge it again, printing its byte map.

    python -m s09_jsonl_transcript.grading.durability replay ANSWER.py FINDING_ID --seed N

A finding's id is all it takes (with the seed, which fixes the events): pl-<key> rebuilds a
power-loss state from the recorded calls, kill-<call>-<K> kills a new run there, mix-e<n>-w<i>
lands the other writer's line again, dmg-... damages the reference's file again, rep:<state>:<key>
and rk:<state>:<call>-<K> rebuild the state first, then crash its repair the same way, and
session-e<n> judges event n's append again. With strace here, the calls are recorded as the grader
records them; without (a student's Mac), as the local check does.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..words import both
from .contract import SESSION_ID
from .engine import FULL, CampaignSize, Stopped, campaign
from .judge import PROPERTIES
from .kit import reference_read
from .runs import recorder_problem
from .sessions import Problem, held_kill, judge_batch, killed_recover
from .states import (
    REPAIR_KILL,
    State,
    damage_state,
    interleavings,
    kill_state,
    power_loss_state,
    repair_state,
)


@dataclass
class Replayed:
    """What a replay found: the state rebuilt, and the findings on it now (none: it keeps its promises)."""

    state_id: str
    state: State | None = None
    findings: list = field(default_factory=list)
    problem: Problem | None = None

    def report(self) -> str:
        """The replay in words, each finding with its byte map."""
        if self.problem is not None:
            return f"{self.state_id}: {self.problem.reason}"
        lines = [f"{self.state_id}: " + (both(*self.state.words) if self.state is not None else "")]
        if not self.findings:
            lines.append("no finding on this state now · 这个状态现在没有发现问题")
        for finding in self.findings:
            lines += [f"[{finding.property}] {PROPERTIES[finding.property]}", finding.message, finding.byte_map, ""]
        return "\n".join(lines)


def _parent_and_rest(state_id: str) -> tuple:
    """rep:<parent>:<key> and rk:<parent>:<call>-<K>: the parent's id and what follows it."""
    kind, rest = state_id.split(":", 1)
    parent, tail = rest.rsplit(":", 1)
    return parent, tail


def rebuild(run, state_id: str) -> State:
    """The state an id names, rebuilt within a campaign whose session is recorded."""
    recording = run.recording
    if state_id.startswith("pl-"):
        return power_loss_state(recording.changes, state_id)
    if state_id.startswith("dmg-"):
        return damage_state(run.reference_bytes(), state_id)
    if state_id.startswith("mix-"):
        found = [state for state in interleavings(recording.changes, recording.writes, run.foreign_line)
                 if state.id == state_id]
        if found:
            return found[0]
    elif state_id.startswith("kill-"):
        name, number = state_id.removeprefix("kill-").rsplit("-", 1)
        killed = held_kill(run.runner, run.workspace, run.events, (name, int(number)), "replay-kill")
        if killed.problem is not None:
            raise _Unreplayable(killed.problem)
        return kill_state(killed, state_id)
    elif state_id.startswith(("rep:", "rk:")):
        parent_id, tail = _parent_and_rest(state_id)
        parent = rebuild(run, parent_id)
        if state_id.startswith("rep:"):
            batch = judge_batch(run.runner, run.workspace, "replay-repair", [(parent.content, "a")],
                                run.continuation, lambda path: reference_read(path, SESSION_ID))
            return repair_state(parent, batch.observed[0].repair, state_id)
        name, number = tail.rsplit("-", 1)
        killed = killed_recover(run.runner, run.workspace, "replay-repair-kill", parent.content, (name, int(number)))
        if killed.problem is not None:
            raise _Unreplayable(killed.problem)
        killed.acknowledged = parent.acknowledged
        return kill_state(killed, state_id, REPAIR_KILL)
    raise ValueError(f"no finding of this grading has the id {state_id!r}")


class _Unreplayable(Exception):
    def __init__(self, problem: Problem):
        super().__init__(problem.reason)
        self.problem = problem


def replay(answer_source: str, state_id: str, *, seed: int, size: CampaignSize = FULL,
           recorded: bool | None = None) -> Replayed:
    """Replay one finding (see the module doc). recorded: strace (None: when it is here), else the local check."""
    if recorded is None:
        recorded = recorder_problem(False) is None
    sandboxed = recorded and recorder_problem(True) is None
    result = Replayed(state_id)
    with campaign(answer_source, seed=seed, size=size, sandboxed=sandboxed, recorded=recorded) as run:
        try:
            run.record()
        except Stopped:
            result.problem = run.verdict.problem
            return result
        if state_id.startswith("session-e"):
            result.findings = [finding for findings in run.judge.findings.values() for finding in findings
                               if finding.state_id == state_id]
            return result
        try:
            result.state = rebuild(run, state_id)
            run.judge_states([result.state], "replay")
        except _Unreplayable as error:
            result.problem = error.problem
            return result
        except Stopped:
            result.problem = run.verdict.problem
            return result
        result.findings = [finding for findings in run.judge.findings.values() for finding in findings
                           if finding.state_id == state_id]
    return result
