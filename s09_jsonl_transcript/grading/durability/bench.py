"""The capstone's benchmark (not a test): grade one submission at full size, N times, one at a time.

    python -m s09_jsonl_transcript.grading.durability bench [ANSWER.py] [--runs N]

It prints the mean seconds per submission, the time split by stage, the states each campaign
judged, and the load average before and after (the machine may be shared: read the figures with
it). The goal it is held to: at most 60 s per submission on an idle 2-core machine, with at least
8,000 power-loss states, 40 held kills, 20,000 damaged files and 60 crashed repairs.
"""

from __future__ import annotations

import os
import statistics
import time

from .engine import FULL, STAGES, CampaignSize, grade
from .states import DAMAGE, HELD_KILL, POWER_LOSS, REPAIR, REPAIR_KILL

GOALS = {POWER_LOSS: 8_000, HELD_KILL: 40, DAMAGE: 20_000, REPAIR_KILL: 60}


def run_bench(answer_source: str, *, runs: int = 3, size: CampaignSize = FULL, seed: int = 1, printer=print) -> dict:
    """Grade answer_source `runs` times (seeds seed, seed + 1, ...); print and return the figures."""
    load_before = os.getloadavg()
    verdicts, seconds = [], []
    for number in range(runs):
        started = time.monotonic()
        verdict = grade(answer_source, seed=seed + number, size=size)
        seconds.append(time.monotonic() - started)
        verdicts.append(verdict)
        printer(f"run {number + 1}: {seconds[-1]:.1f} s, lost {sorted(verdict.lost()) or 'nothing'}, "
                f"{verdict.counts}")
    load_after = os.getloadavg()
    stages = {stage: statistics.mean(verdict.stages.get(stage, 0.0) for verdict in verdicts) for stage in STAGES}
    counts = {campaign: min(verdict.counts.get(campaign, 0) for verdict in verdicts)
              for campaign in (POWER_LOSS, HELD_KILL, DAMAGE, REPAIR, REPAIR_KILL)}
    figures = {"runs": runs, "mean_seconds": statistics.mean(seconds), "slowest_seconds": max(seconds),
               "stages": stages, "counts": counts, "load_before": load_before, "load_after": load_after,
               "goals_met": all(counts[campaign] >= goal for campaign, goal in GOALS.items())}
    printer(f"mean per submission: {figures['mean_seconds']:.1f} s over {runs} runs (slowest "
            f"{figures['slowest_seconds']:.1f} s), one job; load average "
            f"{load_before[0]:.2f} before, {load_after[0]:.2f} after")
    printer("by stage: " + ", ".join(f"{stage} {seconds:.1f} s" for stage, seconds in stages.items()))
    printer("states judged (fewest over the runs): " + ", ".join(f"{campaign} {count:,}" for campaign, count
                                                                   in counts.items())
            + f"; the sizes asked for are {'met' if figures['goals_met'] else 'NOT met'}")
    printer("with the states equal to one judged before (they take its verdict), last run: " + ", ".join(
        f"{campaign} {tally['judged']:,}" for campaign, tally in verdicts[-1].campaigns.items()))
    return figures
