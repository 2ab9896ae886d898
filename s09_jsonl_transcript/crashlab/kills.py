"""Campaign 1: kill real writer processes with SIGKILL at random moments, then read the file.

Each trial starts a victim process (crashlab/victim.py) on a fresh transcript, waits a
random time, kills it, and compares what a fresh reader recovers with what the victim
acknowledged through its pipe. Then a fresh writer appends one more event, to prove the
file can be continued after the crash (this is where a partial tail gets cut off).

Where a random kill lands depends on the machine's timing. A held trial does not: its
victim stops just before a chosen write, fsync or truncate of the transcript (the k-th
since it said "ready"), says "inside" over its pipe and waits, and the parent kills it
there. So a held kill lands inside a commit on any machine, however loaded.
"""

from __future__ import annotations

import random
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..code import TranscriptCorruptionError
from ..lab import DurableTranscript
from ..production.live import SessionEventLog
from ..production.turns import TYPE_FORKED, materialize
from .children import kill_child, start_child
from .damage import CLEAN, PARTIAL_TAIL
from .subjects import CLASS_NAMES, SUBJECTS, open_transcript, read_back
from .victim import FORK_EVERY, WRITER_MODES, fork_name
from .workload import (
    ALL_MODES,
    LESSON_MODES,
    MODES,
    Tally,
    expected_event,
    payload_of,
    subject_of,
    tally,
    workload_event,
)

ACCEPTABLE_VERDICTS = (CLEAN, PARTIAL_TAIL)
# A held victim stops before its k-th disk call, k drawn from this range: every mode has
# acknowledged at least one event by its 8th call (tests/test_crashlab_kills.py holds it to that).
HELD_CALLS = range(8, 25)
# A victim that neither says what the parent waits for nor dies within this long is hung:
# it is killed and the trial fails. Only a hang takes this long, never a slow machine.
HANG_SECONDS = 300


@dataclass(frozen=True)
class KillTrial:
    """One killed writer: what it acknowledged, what a fresh reader recovered, and the verdict."""

    trial: int
    mode: str  # "append", "batch", "repair", "stream", "validated", "lesson", ... (see crashlab/victim.py)
    acknowledged: int  # events whose append returned before the kill
    recovered: int  # events a fresh reader returned after the kill
    lost: int  # acknowledged events missing from the file: must be 0
    duplicated: int  # events found twice: must be 0
    verdict: str  # "clean", "partial tail ignored", or what went wrong
    spliced: int = 0  # recovered events that are not what was written: must be 0
    partial_batches: int = 0  # batches recovered in part (some records, not all): must be 0
    integrity: bool = False  # whether the transcript carried the hash chain
    delay_ms: float = 0.0  # how long after "ready" (and wait_for_acknowledged events) the kill was sent
    killed_inside: bool = False  # the kill landed inside a stream or a commit (a held kill always does)
    held_at: int = 0  # a held trial: killed before its held_at-th write, fsync or truncate; 0: after delay_ms

    @property
    def subject(self) -> str:
        """Whose class the victim wrote with and the reader read with: "lab" or "lesson"."""
        return subject_of(self.mode)

    @property
    def ok(self) -> bool:
        """True when nothing acknowledged was lost, doubled or altered, no batch came back in part,
        and the file read back."""
        return (self.lost == self.duplicated == self.spliced == self.partial_batches == 0
                and self.verdict in ACCEPTABLE_VERDICTS)


@dataclass(frozen=True)
class _Plan:
    trial: int
    mode: str
    integrity: bool
    delay: float
    seed: int
    held_at: int = 0  # > 0: the victim stops before its held_at-th disk call and is killed there
    wait_for_acknowledged: int = 0  # a kill after a delay: the delay starts once this many were acknowledged


def _plans(trials: int, seed: int, max_delay: float, modes, held: bool = False,
           wait_for_acknowledged: int = 0) -> list[_Plan]:
    """Every trial's mode, integrity, kill delay (or held call) and victim seed, decided up front from seed."""
    rng = random.Random(seed)
    held_rng = random.Random(f"held {seed}")  # its own stream: holding leaves the delays and seeds as they were
    return [
        _Plan(trial, modes[trial % len(modes)], _chained(modes[trial % len(modes)], trial // len(modes)),
              rng.uniform(0.0, max_delay), rng.randrange(2**32),
              held_rng.choice(HELD_CALLS) if held else 0, wait_for_acknowledged)
        for trial in range(trials)
    ]


def _chained(mode: str, round_of_modes: int) -> bool:
    """Every other round of modes runs with the hash chain on; the lesson's class has none."""
    return round_of_modes % 2 == 1 and mode not in LESSON_MODES


def _listen_until_the_kill(victim, plan: _Plan) -> str:
    """Read the victim's pipe up to the moment of the kill; return what was read.

    A held trial reads until the victim says "inside" (it then waits to be killed). Any other
    reads "ready" and wait_for_acknowledged acknowledgements, then sleeps the planned delay.
    Either stops early when the pipe ends (the victim died on its own: a problem the caller reports).
    """
    heard = [victim.stdout.readline()]
    if heard[0].strip() != "ready":
        return heard[0]
    acknowledged = 0
    while heard[-1] and (heard[-1].strip() != "inside" if plan.held_at else acknowledged < plan.wait_for_acknowledged):
        heard.append(victim.stdout.readline())
        acknowledged += heard[-1].strip().isdigit()
    if not plan.held_at and heard[-1]:
        time.sleep(plan.delay)  # where this kill lands is left to chance: no result depends on it
    return "".join(heard)


def _run_victim(path: Path, plan: _Plan) -> tuple[list[int], str | None, bool]:
    """Start a victim, kill it as planned; return (acknowledged numbers, problem or None, killed inside)."""
    victim = start_child("s09_jsonl_transcript.crashlab.victim:main",
                         path, plan.mode, plan.seed, "1" if plan.integrity else "0", plan.held_at)
    watchdog = threading.Timer(HANG_SECONDS, victim.kill)  # bounds a hang only: see HANG_SECONDS
    watchdog.start()
    heard = ""
    try:
        heard = _listen_until_the_kill(victim, plan)
    finally:
        output, errors = kill_child(victim)  # SIGKILL: no cleanup, no flush, no finally block runs in the victim
        watchdog.cancel()
    lines = (heard + output).split()
    acknowledged = [int(line) for line in lines[1:] if line.isdigit()]
    # a stream or commit began (or a held victim stopped inside one) and was not acknowledged
    inside = len(lines) > 1 and lines[-1] in ("begin", "inside")
    if lines[:1] != ["ready"] or errors.strip():  # a killed victim says nothing on stderr
        last_error = errors.strip().splitlines()[-1:] or ["no output"]
        return acknowledged, f"victim failed before the kill: {last_error[0]}", inside
    if plan.held_at and "inside" not in lines:
        return acknowledged, f"victim never reached its disk call {plan.held_at}", inside
    return acknowledged, None, inside


def _read_verdict(path: Path, integrity: bool, subject: str = "lab") -> tuple[list[dict], str]:
    """What a fresh reader (of the subject's class) returns and its verdict; any error but corruption is foreign."""
    try:
        read = read_back(subject, path, integrity=integrity)
    except TranscriptCorruptionError as error:
        return [], f"corrupt at line {error.line_number}: {error.reason}"
    except Exception as error:  # noqa: BLE001 - the campaign exists to catch exactly these
        return [], f"foreign exception {type(error).__name__}: {error}"
    return read.events, PARTIAL_TAIL if read.ignored_partial_tail else CLEAN


def _resume_problem(path: Path, integrity: bool, recovered: int, mode: str) -> str | None:
    """Append the next event with a fresh writer (of the mode's class) and read back; say what failed, or None."""
    try:
        with open_transcript(subject_of(mode), path, integrity=integrity) as writer:
            writer.append(expected_event(recovered + 1, mode))
        events = read_back(subject_of(mode), path, integrity=integrity).events
    except Exception as error:  # noqa: BLE001 - any failure to continue is a finding
        return f"resume failed: {type(error).__name__}: {error}"
    if len(events) != recovered + 1 or not tally(events, [], mode).ok:
        return f"resume failed: {len(events)} events after appending to {recovered}"
    return None


def rewind_tally(events: list[dict], acknowledged) -> Tally:
    """Rewind mode: the materialized events must be workload events 1, 2, 3, ... each once.

    A draft taken back never shows; a kill between a draft and its marker leaves that draft as
    the last event (in order, not acknowledged). An acknowledged event missing is lost.
    """
    shown = materialize(events)
    numbers = [event.get("n") for event in shown]
    spliced = sum(1 for place, event in enumerate(shown, 1) if payload_of(event) != workload_event(place))
    return Tally(len(set(acknowledged)), len(shown), len(set(acknowledged) - set(numbers)),
                 len(numbers) - len(set(numbers)), spliced)


def fork_tally(path: Path, events: list[dict], acknowledged, integrity: bool) -> Tally:
    """Fork mode: the source as in append mode, and every fork whole: events 1..n, then session_forked.

    An acknowledged event n (n a multiple of FORK_EVERY) promises its fork: missing, it is lost;
    any fork file present must be complete (a fork half written would count as spliced).
    """
    source = tally(events, acknowledged, "append")
    lost, spliced = source.lost, source.spliced
    for n in range(FORK_EVERY, max([0, *acknowledged]) + FORK_EVERY + 1, FORK_EVERY):
        fork = path.with_name(f"{fork_name(path, n)}.jsonl")
        if not fork.exists():
            lost += n in set(acknowledged)
            continue
        try:
            copied = DurableTranscript(fork, integrity=integrity).read_events()
        except TranscriptCorruptionError:
            spliced += 1
            continue
        whole = [payload_of(event) for event in copied[:-1]] == [workload_event(k) for k in range(1, n + 1)]
        spliced += not (whole and copied[-1]["type"] == TYPE_FORKED and copied[-1]["upto_sequence"] == n)
    return Tally(source.acknowledged, source.recovered, lost, source.duplicated, spliced, source.partial_batches)


def _resume_rewind_problem(path: Path, integrity: bool, shown: int) -> str | None:
    """Rewind mode: a fresh live log continues with event shown + 1 and the materialized view stays 1..shown+1."""
    try:
        with SessionEventLog.open(path, integrity=integrity) as log:
            log.commit(workload_event(shown + 1))
        numbers = [event.get("n") for event in materialize(DurableTranscript(path, integrity=integrity).read_events())]
    except Exception as error:  # noqa: BLE001 - any failure to continue is a finding
        return f"resume failed: {type(error).__name__}: {error}"
    return None if numbers == list(range(1, shown + 2)) else f"resume failed: materialized {numbers[-3:]}"


def run_kill_trial(path, plan: _Plan) -> KillTrial:
    """Run one planned trial on a fresh file at path."""
    path = Path(path)
    acknowledged, problem, inside = _run_victim(path, plan)
    events, verdict = _read_verdict(path, plan.integrity, subject_of(plan.mode))
    if plan.mode == "rewind":
        counts = rewind_tally(events, acknowledged)
    elif plan.mode == "fork":
        counts = fork_tally(path, events, acknowledged, plan.integrity)
    else:
        counts = tally(events, acknowledged, plan.mode)
    if problem is None and verdict in ACCEPTABLE_VERDICTS and plan.mode == "rewind":
        problem = _resume_rewind_problem(path, plan.integrity, counts.recovered)
    elif problem is None and verdict in ACCEPTABLE_VERDICTS:
        resumed_as = "append" if plan.mode == "fork" else plan.mode  # a fork writer's source is a plain log
        problem = _resume_problem(path, plan.integrity, counts.recovered, resumed_as)
    return KillTrial(
        trial=plan.trial, mode=plan.mode, acknowledged=counts.acknowledged, recovered=counts.recovered,
        lost=counts.lost, duplicated=counts.duplicated, verdict=problem or verdict,
        spliced=counts.spliced, partial_batches=counts.partial_batches, integrity=plan.integrity,
        delay_ms=0.0 if plan.held_at else round(plan.delay * 1000, 3), killed_inside=inside,
        held_at=plan.held_at,
    )


def kill_campaign(trials: int, *, seed: int = 0, root=None, progress: Callable[[int, int], None] | None = None,
                  max_delay: float = 0.02, workers: int = 2, modes=MODES, held: bool = False,
                  wait_for_acknowledged: int = 0) -> list[KillTrial]:
    """Kill `trials` writer processes at random moments; one KillTrial per kill, in trial order.

    Modes take turns (by default the lab's append, batch and repair; ALL_MODES adds the live
    session's stream and validated, and the lesson class's lesson and lesson-repair;
    victim.WRITER_MODES are the live log's rewind and fork writers), and every other round of
    modes runs with the hash chain on (never the lesson's class: it has none). The plan
    (mode, kill delay) depends only on seed; where the kill lands inside the victim's work
    depends on the machine's timing. held=True makes every trial a held one instead: the
    victim stops before a write, fsync or truncate chosen from HELD_CALLS by seed, inside a
    commit, after at least one acknowledged event, and is killed there.
    wait_for_acknowledged=n starts a random kill's delay only once the victim has acknowledged
    n events (a handshake, so that "the victims really wrote" holds on a loaded machine too).
    Transcripts are written under root (kept) or a temporary folder (removed).
    progress(done, total) is called after each trial, from the calling thread.
    """
    if not isinstance(trials, int) or trials < 0:
        raise ValueError(f"trials must be a whole number >= 0, not {trials!r}")
    unknown = set(modes) - set(ALL_MODES + WRITER_MODES)
    if not modes or unknown:
        raise ValueError(f"modes must be chosen from {ALL_MODES + WRITER_MODES}, not {tuple(modes)!r}")
    if not isinstance(wait_for_acknowledged, int) or wait_for_acknowledged < 0:
        raise ValueError(f"wait_for_acknowledged must be a whole number >= 0, not {wait_for_acknowledged!r}")
    plans = _plans(trials, seed, max_delay, tuple(modes), held, wait_for_acknowledged)
    with tempfile.TemporaryDirectory(prefix="s09-kills-") as scratch:
        folder = Path(root) if root is not None else Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        results = []
        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            futures = [pool.submit(run_kill_trial, folder / f"kill-{plan.trial:04d}-{plan.mode}.jsonl", plan)
                       for plan in plans]
            for future in as_completed(futures):
                results.append(future.result())
                if progress is not None:
                    progress(len(results), trials)
    return sorted(results, key=lambda result: result.trial)


def kill_summary(results: list[KillTrial]) -> list[dict]:
    """One row per mode and a final "all" row: trials, totals and how many trials failed."""
    rows = []
    for mode in [*dict.fromkeys(result.mode for result in results), "all"]:
        chosen = [result for result in results if mode in ("all", result.mode)]
        verdicts = Counter(result.verdict if result.ok else "FAILED" for result in chosen)
        rows.append({
            "mode": mode,
            "trials": len(chosen),
            "acknowledged": sum(result.acknowledged for result in chosen),
            "recovered": sum(result.recovered for result in chosen),
            "lost": sum(result.lost for result in chosen),
            "duplicated": sum(result.duplicated for result in chosen),
            "spliced": sum(result.spliced for result in chosen),
            "partial batches": sum(result.partial_batches for result in chosen),
            "killed inside": sum(result.killed_inside for result in chosen),
            "clean": verdicts[CLEAN],
            "partial tail": verdicts[PARTIAL_TAIL],
            "failed": verdicts["FAILED"],
        })
    return rows


def class_summary(results: list[KillTrial]) -> list[dict]:
    """One row per transcript class (lab, lesson) that ran: its trials, totals and failures."""
    rows = []
    for subject in SUBJECTS:
        chosen = [result for result in results if result.subject == subject]
        if chosen:
            rows.append({
                "class": f"{subject} ({CLASS_NAMES[subject]})",
                "modes": ",".join(dict.fromkeys(result.mode for result in chosen)),
                "trials": len(chosen),
                "acknowledged": sum(result.acknowledged for result in chosen),
                "lost": sum(result.lost for result in chosen),
                "duplicated": sum(result.duplicated for result in chosen),
                "spliced": sum(result.spliced for result in chosen),
                "partial batches": sum(result.partial_batches for result in chosen),
                "partial tail": sum(result.ok and result.verdict == PARTIAL_TAIL for result in chosen),
                "failed": sum(not result.ok for result in chosen),
            })
    return rows
