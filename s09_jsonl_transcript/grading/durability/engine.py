"""Grade one capstone answer: record its session, build every crash state, judge them, report.

    verdict = grade(answer_source, seed=seed)      # the grader: strace + bubblewrap
    verdict = grade(answer_source, seed=seed, recorded=False, sandboxed=False, size=LOCAL)   # local.py

The stages, each timed (Verdict.stages):

  record        the answer's append on each event in turn, under the recorder
  power loss    the model's states of the recorded calls, judged in batches (one driver process each)
  held kills    a real SIGKILL before every write and fsync of the transcript, each state judged
  interleavings another writer's line between two writes of one append
  damaged files the reference's file damaged before its last line, kept when the reference refuses it
  repairs       recover's own repair of torn states crashed: its power-loss states, and real kills
                before its truncate, write and fsync (a seeded sample of them)

A state equal to one judged before (the same bytes, the same acknowledged events) is not judged
again. A refused call, a call that ran past its time, or an answer the grader cannot replay stops
the grading: the verdict is refused with the reason, scored against the submission.
"""

from __future__ import annotations

import contextlib
import hashlib
import random
import secrets
import time
from dataclasses import dataclass, field

from ..words import both
from .cell import as_python
from .contract import (
    GIVEN_CELL,
    SESSION_ID,
    TRANSCRIPT_NAME,
    Contract,
    continuation_event,
    record_hash,
    session_events,
)
from .damage import damaged_files
from .judge import PROPERTIES, Expected, Judge
from .kit import reference_read
from .runs import Runner, check_recorder
from .sessions import (
    Batch,
    Problem,
    finish_batch,
    held_kill,
    killed_recover,
    prepare_batch,
    record_session,
    start_batch,
)
from .states import (
    CAMPAIGNS,
    HELD_KILL,
    REPAIR,
    REPAIR_KILL,
    State,
    damage_states,
    interleavings,
    kill_state,
    power_loss_states,
    repair_states,
)
from .workspace import Workspace, sandbox_module


@dataclass(frozen=True)
class CampaignSize:
    """How much a grading tries. The defaults are the grader's (and the benchmark's)."""

    events: int = 20
    every_byte: bool = True  # tear writes at every byte (False: at a few edges)
    max_unsynced: int = 8  # every subset of up to this many unsynced changes at a point ...
    sample_per_point: int = 64  # ... past that, this many subsets drawn with the seed
    power_loss_limit: int = 12_000  # at most this many power-loss states: a seeded sample beyond
    held_kills: bool = True  # a kill before every write and fsync of the transcript ...
    max_held_kills: int = 400  # ... or, for an answer that makes more, a seeded sample of this many
    damaged_files: int = 20_000
    repair_kills: int = 60  # real kills of recover's repair, at most
    batch_size: int = 2_500  # states per driver process

    def describe(self) -> str:
        """The size in words, in both languages, for a report."""
        tears, tears_zh = ("every byte", "每个字节") if self.every_byte else ("a few edges", "几个边界")
        return both(
            f"{self.events} events; power loss: every state with up to {self.max_unsynced} unsynced changes (past "
            f"that {self.sample_per_point} sampled per crash point), writes torn at {tears}, at most "
            f"{self.power_loss_limit:,} states (a seeded sample beyond); a kill before every write and fsync (at most "
            f"{self.max_held_kills}, a seeded sample beyond); {self.damaged_files:,} damaged files; up to "
            f"{self.repair_kills} repairs killed",
            f"{self.events} 个事件；断电：未同步改动不超过 {self.max_unsynced} 个时的每个状态（超过时每个崩溃点按种子"
            f"抽取 {self.sample_per_point} 个），写在{tears_zh}处断开，最多 {self.power_loss_limit:,} 个状态（超过时"
            f"按种子抽样）；在每次 write 和 fsync 之前各杀一次进程（最多 {self.max_held_kills} 次，超过时按种子抽样）；"
            f"{self.damaged_files:,} 个损坏文件；最多杀掉 {self.repair_kills} 次修复")


FULL = CampaignSize()
REDUCED = CampaignSize(every_byte=False, power_loss_limit=3_000, damaged_files=1_000, repair_kills=8)
LOCAL = CampaignSize(events=8, every_byte=False, power_loss_limit=1_500, damaged_files=300, repair_kills=4,
                     batch_size=1_000)

STAGES = ("record", "power loss", "held kills", "interleavings", "damaged files", "repairs")


@dataclass
class Verdict:
    """A capstone grading's outcome: per property its findings, or the reason the answer was refused."""

    seed: int
    recorder: str  # "strace" or "local"
    sandboxed: bool
    size: CampaignSize
    problem: Problem | None = None
    results: dict = field(default_factory=dict)  # property -> {"findings", "stopped", "judged"}
    counts: dict = field(default_factory=lambda: dict.fromkeys(CAMPAIGNS, 0))  # campaign -> states judged
    # (held kills and repair kills: the runs that landed; a state equal to one judged before is not counted)
    stages: dict = field(default_factory=dict)  # stage -> seconds
    session: dict = field(default_factory=dict)
    campaigns: dict = field(default_factory=dict)  # campaign -> {"judged", "broken"}: states, and those with a finding

    def passed(self, name: str) -> bool:
        """True when the property has no finding and the answer was not refused."""
        return self.problem is None and bool(self.results) and not self.results[name]["findings"]

    @property
    def seconds(self) -> float:
        """The grading's time, all stages together."""
        return sum(self.stages.values())

    def as_json(self) -> dict:
        """The verdict as plain data: what the grader hands the check cells, read-only."""
        refused = None if self.problem is None else {"kind": self.problem.kind, "row": self.problem.row,
                                                      "reason": self.problem.reason}
        return {
            "exercise": "ex06", "seed": self.seed, "recorder": self.recorder, "sandboxed": self.sandboxed,
            "size": self.size.describe(), "refused": refused, "counts": dict(self.counts),
            "stages": {stage: round(seconds, 3) for stage, seconds in self.stages.items()},
            "session": dict(self.session), "campaigns": {name: dict(tally) for name, tally in self.campaigns.items()},
            "properties": [self._property_json(name, title) for name, title in PROPERTIES.items()],
        }

    def _property_json(self, name: str, title: str) -> dict:
        result = self.results.get(name, {})
        return {"id": name, "title": title, "passed": self.passed(name),
                "findings": [finding.as_json() for finding in result.get("findings", [])],
                "stopped": result.get("stopped", False), "judged": result.get("judged", 0)}

    def lost(self) -> set:
        """The properties this answer loses (all of them when it was refused)."""
        return {name for name in PROPERTIES if not self.passed(name)}


class Stopped(Exception):
    """A problem ended the grading; it is in the verdict (Verdict.problem)."""


def _fingerprint(state: State) -> tuple:
    digest = None if state.content is None else hashlib.blake2b(state.content, digest_size=16).digest()
    return digest, state.acknowledged


class Campaign:
    """One grading's stages, sharing its runner, workspace, contract and judge."""

    def __init__(self, runner: Runner, workspace: Workspace, seed: int, size: CampaignSize, verdict: Verdict,
                 progress=None):
        self.runner, self.workspace, self.seed, self.size, self.verdict = runner, workspace, seed, size, verdict
        self.progress = progress or (lambda stage, done, total: None)
        self.contract = Contract()
        self.events = session_events(seed, size.events)
        self.continuation = continuation_event(seed)
        self.seen = {}  # fingerprint -> whether that state broke a promise (None until it is judged)
        self.torn = []  # (state, observed) of torn states recover repaired, for the repairs stage
        self.batches = 0
        self.recording = None
        self.judge = None

    def run(self) -> None:
        """Every stage in turn (a problem stops them, and is in the verdict)."""
        try:
            for stage, step in zip(STAGES, (self.record, self._power_loss, self._held_kills, self._interleavings,
                                            self._damaged, self._repairs)):
                started = time.monotonic()
                try:
                    step()
                finally:
                    self.verdict.stages[stage] = time.monotonic() - started
        except Stopped:
            pass
        if self.judge is not None:
            self.verdict.results = self.judge.results()
            self.verdict.campaigns = {campaign: dict(tally) for campaign, tally in self.judge.campaigns.items()}

    def _stop(self, problem: Problem) -> None:
        self.verdict.problem = problem
        raise Stopped

    def _in_time(self, stage: str) -> None:
        """Stop the grading, against the answer, once its time limit is spent (checked before each driver)."""
        deadline, limit = self.runner.deadline, self.runner.time_limit
        if deadline is not None and time.monotonic() >= deadline:
            self._stop(Problem("timeout", both(
                f"the grading went over its time limit of {limit:g} s at the stage \"{stage}\": the answer's calls are "
                "too slow to judge every crash state",
                f"评分在\"{stage}\"阶段超过了 {limit:g} 秒的总时限：答案的调用太慢，无法评判所有崩溃状态")))

    # ----------------------------------------------------------------------------- stages

    def record(self) -> None:
        """The recorded session (stage "record"): its changes, its contract checked, one-write judged."""
        recording = record_session(self.runner, self.workspace, self.events)
        self.recording = recording
        self.verdict.session = {"events": len(self.events), "acknowledged": recording.acknowledged,
                                "changes": len(recording.changes), "kill points": len(recording.kill_points)}
        if recording.problem is not None:
            self._stop(recording.problem)
        expected = self.contract.records(recording.path, self.events)
        self._check_contract(recording, expected)
        self.judge = Judge(Expected(expected, lambda kept: self.contract.record(
            recording.path, kept + 1, self.continuation)))
        self.judge.one_write(recording.writes, recording.final)

    def _check_contract(self, recording, expected: list) -> None:
        folder = self.workspace.shared / "session"
        reading = reference_read(folder / TRANSCRIPT_NAME, SESSION_ID)
        returned = [outcome["returned"].get("hash") for outcome in recording.appended]
        problem = None
        if reading.refused:
            problem = (f"line {reading.refused_line} is damaged ({reading.reason})",
                       f"第 {reading.refused_line} 行损坏了（{reading.reason}）")
        elif reading.records != expected or reading.torn:
            first = next((index for index, (got, want) in enumerate(zip(reading.records, expected)) if got != want),
                         min(len(reading.records), len(expected)))
            problem = (f"record {first + 1} is not the contract's record of event {first + 1}",
                       f"第 {first + 1} 条记录不是约定中第 {first + 1} 个事件的记录")
        elif returned != [record_hash(record) for record in expected]:
            first = next(index for index, (got, want) in enumerate(zip(returned, expected))
                         if got != record_hash(want))
            problem = (f"append returned something other than the record it wrote for event {first + 1}",
                       f"append 为第 {first + 1} 个事件返回的不是它写下的记录")
        if problem is not None:
            self._stop(Problem("contract", both(
                f"after {len(self.events)} appends the transcript does not hold the events sent, as the given cell "
                f"builds them: {problem[0]}", f"追加 {len(self.events)} 次之后，记录文件里不是发送的事件"
                f"（按给定单元格的构造）：{problem[1]}")))

    def _power_loss(self) -> None:
        states = power_loss_states(self.recording.changes, self.size, self.seed)
        self.judge_states(states, "power loss")

    def _held_kills(self) -> None:
        if not self.size.held_kills:
            return
        points = self.recording.kill_points
        if len(points) > self.size.max_held_kills:
            chosen = set(random.Random(f"ex06-held-kills:{self.seed}").sample(range(len(points)),
                                                                               self.size.max_held_kills))
            points = [point for index, point in enumerate(points) if index in chosen]
        states = []
        for number, point in enumerate(points, start=1):
            self._in_time("held kills")
            run = held_kill(self.runner, self.workspace, self.events, point, f"kill-{number}")
            if run.problem is not None:
                self._stop(run.problem)
            states.append(kill_state(run, f"kill-{point[0]}-{point[1]}"))
            self.progress("held kills", number, len(points))
        self.verdict.counts[HELD_KILL] = len(states)
        self.judge_states(states, "held kills", count=False)

    def foreign_line(self, number: int) -> bytes:
        """Another writer's line, as it lands between two writes of event number's append."""
        other = {"type": "message", "role": "user", "content": f"another writer, event {number}"}
        return self.contract.encode_line(self.contract.record(self.recording.path, number, other))

    def _interleavings(self) -> None:
        self.judge_states(interleavings(self.recording.changes, self.recording.writes, self.foreign_line),
                           "interleavings")

    def reference_bytes(self) -> bytes:
        """The file the reference writes for the session's events (what the damaged files start from)."""
        return self.contract.file_bytes(self.recording.path, self.events)

    def _damaged(self) -> None:
        reference = self.reference_bytes()
        files = damaged_files(reference, self.contract.parse_record, self.recording.path,
                              count=self.size.damaged_files, seed=self.seed)
        self.judge_states(damage_states(reference, files), "damaged files")

    def _repairs(self) -> None:
        states = []
        for parent, observed in self.torn:
            states.extend(repair_states(parent, observed.repair, self.size, self.seed))
        self.judge_states(states, "repairs")
        kills = self._repair_kill_states()
        self.verdict.counts[REPAIR_KILL] = len(kills)
        self.judge_states(kills, "repair kills", count=False)

    def _repair_kill_states(self) -> list:
        candidates = [(parent, point) for parent, observed in self.torn for point in observed.repair_points]
        random.Random(f"ex06-repair-kills:{self.seed}").shuffle(candidates)
        states = []
        for number, (parent, point) in enumerate(candidates[:self.size.repair_kills], start=1):
            self._in_time("repair kills")
            run = killed_recover(self.runner, self.workspace, f"repair-kill-{number}", parent.content, point)
            if run.problem is not None:
                self._stop(run.problem)
            run.acknowledged = parent.acknowledged
            states.append(kill_state(run, f"rk:{parent.id}:{point[0]}-{point[1]}", REPAIR_KILL))
            self.progress("repair kills", number, min(len(candidates), self.size.repair_kills))
        return states

    # ----------------------------------------------------------------------------- judging

    def judge_states(self, states: list, stage: str, count: bool = True) -> None:
        """Judge states not judged before, in batches: while one batch's driver runs, the next is
        written and the previous one's record read (the grader and the driver work at once)."""
        fresh = []
        for state in states:
            fingerprint = _fingerprint(state)
            if fingerprint not in self.seen:
                self.seen[fingerprint] = None
                fresh.append(state)
            elif self.seen[fingerprint] is not None:  # judged already: its campaign counts the same verdict
                self.judge.count(state.campaign, self.seen[fingerprint])
        if count and fresh:
            campaign = fresh[0].campaign
            self.verdict.counts[campaign] = self.verdict.counts.get(campaign, 0) + len(fresh)
        chunks = [fresh[start:start + self.size.batch_size] for start in range(0, len(fresh), self.size.batch_size)]
        running, done = None, 0
        for chunk in chunks:
            self._in_time(stage)
            batch = self._prepared(chunk)
            start_batch(self.runner, batch, self.continuation)
            if running is not None:
                done += self._judged(*running)
                self.progress(stage, done, len(fresh))
            running = (batch, chunk)
        if running is not None:
            done += self._judged(*running)
            self.progress(stage, done, len(fresh))

    def _prepared(self, chunk: list) -> Batch:
        self.batches += 1
        items = [(state.content, "abc" if state.continues else "a") for state in chunk]
        return prepare_batch(self.workspace, f"batch-{self.batches}", items,
                             lambda path: reference_read(path, SESSION_ID))

    def _judged(self, batch: Batch, chunk: list) -> int:
        finish_batch(self.runner, batch)
        if batch.problem is not None:
            self._stop(batch.problem)
        for state, reading, seen in zip(chunk, batch.readings, batch.observed):
            if seen.problem is not None:
                self._stop(Problem(seen.problem.kind, f"{seen.problem.reason} [{state.id}]", seen.problem.row))
            kept_its_promises = self.judge.state(state, reading, seen)
            self.seen[_fingerprint(state)] = not kept_its_promises
            if kept_its_promises and reading.torn and seen.repair and state.campaign not in (REPAIR, REPAIR_KILL):
                self.torn.append((state, seen))  # a repair worth crashing: it starts from a sound state
        return len(chunk)


@contextlib.contextmanager
def campaign(answer_source: str, *, seed: int, size: CampaignSize = FULL, sandboxed: bool = True,
             recorded: bool = True, limits=None, progress=None, time_limit: float | None = None):
    """A Campaign for one answer, its workspace and sandbox set up (and taken down afterwards).

    time_limit: the seconds the whole grading may take, counted from the first driver's start."""
    verdict = Verdict(seed, "strace" if recorded else "local", sandboxed, size)
    with Workspace(sandboxed, mount=recorded) as workspace:
        given, answer = workspace.logs / "given.py", workspace.logs / "answer.py"
        given.write_text(GIVEN_CELL, encoding="utf-8")
        answer.write_text(as_python(answer_source), encoding="utf-8")  # the notebook's syntax as Python
        if not sandboxed:
            yield Campaign(Runner(workspace, given, answer, recorded=recorded, sandboxed=False, time_limit=time_limit),
                           workspace, seed, size, verdict, progress)
            return
        sandbox = sandbox_module()
        limits = limits or sandbox.Limits()
        with sandbox.acquire_slot() as slot, sandbox.grading_groups(limits) as groups:
            runner = Runner(workspace, given, answer, recorded=recorded, sandboxed=True, limits=limits, slot=slot,
                            groups=groups.joined_by("student"), time_limit=time_limit)
            yield Campaign(runner, workspace, seed, size, verdict, progress)


def grade(answer_source: str, *, seed: int | None = None, size: CampaignSize = FULL, sandboxed: bool = True,
          recorded: bool = True, limits=None, progress=None, time_limit: float | None = None) -> Verdict:
    """Grade one capstone answer cell (its source text). See the module doc.

    recorded=True (the grader) records with strace and raises RecorderUnavailable at once when it
    cannot; sandboxed runs the driver in the student's sandbox (bubblewrap). recorded=False is the
    notebook's local check: no strace, the driver records its own os calls. limits is the sandbox's
    (grading/sandbox.py's Limits; its defaults when None). seed fixes the events, the samples and
    the damaged files: the same seed gives the same ids and counts. time_limit (seconds, None for
    none) bounds the whole grading: an answer too slow to judge every state in it is refused, with
    that reason (each call of the answer has its own bound as well, runs.STEP_SECONDS).
    """
    if recorded:
        check_recorder(sandboxed)
    seed = secrets.randbits(32) if seed is None else seed
    with campaign(answer_source, seed=seed, size=size, sandboxed=sandboxed, recorded=recorded, limits=limits,
                  progress=progress, time_limit=time_limit) as run:
        run.run()
    return run.verdict
