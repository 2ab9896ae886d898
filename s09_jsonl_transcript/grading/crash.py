"""The grader's side of a crash-graded exercise (the capstone, ex06): the verdict is decided outside
both kernels, before the notebook runs.

For an exercise whose source names a crash-graded answer cell (ExerciseSource.crash_graded):

1. The grader, in its own process, hands that cell's source, taken from the submission as every
   answer is (assemble.answer_sources), to the engine (grading/durability) with the grading's seed.
   The engine's driver runs the given cell and the answer in the student's sandbox profile, a view
   without code.py or the kit, under strace, which runs outside the sandbox; the grader builds and
   judges every crash state. The reference run does the same with the reference answer, which must
   keep every promise (or the grader, not the student, is at fault).
2. The verdict, plain JSON, goes to the trusted kernel as a read-only file (runner.run_notebook's
   data); each check cell reads its property through checks.crash_property and prints its pass line
   or fails with its first findings, and nbval compares it with the reference run's. The student's
   kernel runs the given and answer cells as usual, and its calls decide nothing.
3. The report gets, beside each check that failed, its property's first findings as text byte maps,
   and the campaign's counts, seed and the command that replays a finding.

When this machine cannot record (no strace, ptrace refused), the grading of such an exercise is
refused at once, with the reason (RecorderUnavailable), as `--sandbox required` is without bubblewrap:
no student gets a silent 0.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .checks import CRASH_VERDICT_VARIABLE
from .durability import FULL, LOCAL, REDUCED, CampaignSize, RecorderUnavailable, check_recorder, grade
from .words import both

__all__ = ["SIZES", "CrashSettings", "RecorderUnavailable", "check_recorder", "checks_data", "report_part",
           "run_campaign"]

SIZES = {"full": FULL, "reduced": REDUCED, "local": LOCAL}  # the command line's names for the campaign's sizes
FINDINGS_IN_REPORT = 3  # per property: the first findings a report shows beside its check
TIME_LIMIT = 600.0  # seconds one crash grading may take: a slower answer is refused with that reason


@dataclass(frozen=True)
class CrashSettings:
    """How the crash campaign of one grading runs: its size, its time limit, sandboxed or not, the sandbox's limits."""

    size: CampaignSize = FULL
    time_limit: float = TIME_LIMIT
    sandboxed: bool = True
    limits: object = None  # grading/sandbox.py's Limits

    def __post_init__(self):
        if not self.time_limit > 0:
            raise ValueError("the crash campaign's time limit must be a positive number of seconds")


def run_campaign(answer_source: str, *, seed: int, settings: CrashSettings) -> dict:
    """The engine's verdict on one answer cell's source, as plain data (Verdict.as_json()).

    RecorderUnavailable when this machine cannot record; anything the answer does is in the verdict.
    """
    verdict = grade(answer_source, seed=seed, size=settings.size, sandboxed=settings.sandboxed,
                    limits=settings.limits, time_limit=settings.time_limit)
    return verdict.as_json()


def checks_data(verdict: dict) -> dict:
    """What run_notebook hands the trusted side: the verdict's file, named by the checks' variable."""
    return {CRASH_VERDICT_VARIABLE: json.dumps(verdict, ensure_ascii=False)}


def seconds_of(verdict: dict) -> float:
    """The crash campaign's own time, all its stages together."""
    return sum(verdict.get("stages", {}).values())


def kept_every_promise(verdict: dict) -> bool:
    """True when the answer was judged and every property held (what the reference answer must do)."""
    return verdict["refused"] is None and all(entry["passed"] for entry in verdict["properties"])


def broken_words(verdict: dict) -> str:
    """Why an answer did not keep every promise, in English (for the instructor, when it is the reference)."""
    if verdict["refused"] is not None:
        return f"it was refused: {verdict['refused']['reason']}"
    broken = [f"{entry['id']} ({entry['findings'][0]['id'] if entry['findings'] else '?'})"
              for entry in verdict["properties"] if not entry["passed"]]
    return "it broke " + ", ".join(broken)


def size_name(size: CampaignSize) -> str | None:
    """The command line's name of a campaign size, or None for a size of a test's own."""
    return next((name for name, known in SIZES.items() if known == size), None)


def replay_command(label: str, verdict: dict, settings: CrashSettings, finding: str = "<id>") -> str:
    """The command that replays a finding of this grading on the student's own machine."""
    size = size_name(settings.size)
    sized = f" --size {size}" if size not in (None, "full") else ""
    return (f"python -m {__package__}.durability replay {Path(label).name} {finding} "
            f"--seed {verdict['seed']}{sized}")


def refusal_reason(verdict: dict) -> str | None:
    """The report's reason for an answer the engine refused (None when it was judged)."""
    if verdict["refused"] is None:
        return None
    return both("the crash grading refused your answer, so no property holds",
                "崩溃评分拒绝了你的答案，所以每个属性都不成立") + ": " + verdict["refused"]["reason"]


def report_part(verdict: dict, label: str, settings: CrashSettings, checks: list, source) -> dict:
    """Add to each crash check entry that failed its property's first findings; return the report's "crash"
    entry: seed, size, recorder, the states judged per campaign, why the answer was refused, how to replay."""
    by_property = {entry["id"]: entry for entry in verdict["properties"]}
    property_of = {check.id: check.property for check in source.checks}
    for entry in checks:
        judged = by_property.get(property_of.get(entry["id"]))
        if judged is not None and entry["score"] < entry["max_score"] and judged["findings"]:
            entry["findings"] = [f"{finding['message']}\n{finding['byte_map'] or finding['id']}"
                                 for finding in judged["findings"][:FINDINGS_IN_REPORT]]  # a map starts with its id
            entry["findings_found"] = f"{len(judged['findings'])}{'+' if judged['stopped'] else ''}"
    return {"seed": verdict["seed"], "size": verdict["size"], "recorder": verdict["recorder"],
            "sandboxed": verdict["sandboxed"], "counts": verdict["counts"], "campaigns": verdict["campaigns"],
            "refused": verdict["refused"]["reason"] if verdict["refused"] else None,
            "seconds": round(seconds_of(verdict), 2),
            "replay": both("replay a finding on your own machine", "在自己的机器上重放一个发现") + ": "
            + replay_command(label, verdict, settings) if any(entry["findings"] for entry in by_property.values())
            else None}
