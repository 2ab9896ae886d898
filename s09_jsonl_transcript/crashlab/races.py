"""Campaign 5: racing writers. A session has one writer; separate sessions do not interfere.

Eight processes start together (crashlab/racer.py). On one session, one of them writes
and every other one gets TranscriptLockedError; when they take turns, every event of
every racer lands exactly once; on eight sessions, all eight write. Every file must read
back valid. The racers and the reader are of one class: the lab's DurableTranscript, or
(subject="lesson") the lesson's code.JSONLTranscript.
"""

from __future__ import annotations

import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from ..code import TranscriptCorruptionError
from .children import kill_child, start_child
from .racer import racer_event
from .subjects import LAB, checked_subject, read_back

SCENARIOS = ("one session", "taking turns", "own sessions")


@dataclass(frozen=True)
class RaceResult:
    """What the racers of one scenario reported and what the files hold."""

    scenario: str
    racers: int
    wrote: int  # racers that reported writing all their events
    locked: int  # racers refused with TranscriptLockedError
    events: int  # events in the file(s) after the race
    problem: str | None  # None when the scenario's promise held
    subject: str = LAB  # whose class the racers wrote with: "lab" or "lesson"

    @property
    def ok(self) -> bool:
        """True when the scenario's promise held."""
        return self.problem is None


def _start(path: Path, racer: int, events: int, integrity: bool, mode: str, subject: str) -> subprocess.Popen:
    return start_child("s09_jsonl_transcript.crashlab.racer:main", path, racer, events,
                       "1" if integrity else "0", mode, subject)


def _race(paths: list[Path], events: int, integrity: bool, mode: str, subject: str = LAB) -> list[str]:
    """Start one racer per path, release them together, and return each one's report line."""
    racers = [_start(path, number, events, integrity, mode, subject) for number, path in enumerate(paths)]
    try:
        for racer in racers:
            racer.stdout.readline()  # "ready": imports done, about to wait for "go"
        for racer in racers:
            racer.stdin.write("go\n")
            racer.stdin.flush()
        reports = [racer.stdout.readline().strip() or f"no report: {racer.stderr.read().strip()}"
                   for racer in racers]
    finally:
        for racer in racers:
            try:
                racer.communicate("exit\n", timeout=30)
            except subprocess.TimeoutExpired:
                kill_child(racer)
    return reports


def _events_in(paths, integrity: bool, subject: str = LAB) -> tuple[list[list[dict]], str | None]:
    try:
        return [read_back(subject, path, integrity=integrity).events for path in dict.fromkeys(paths)], None
    except TranscriptCorruptionError as error:
        return [], f"the file does not read back: {error}"


def race(scenario: str, *, racers: int = 8, events: int = 5, integrity: bool = False, root=None,
         subject: str = LAB) -> RaceResult:
    """Run one scenario (see SCENARIOS) with `racers` processes of the subject's class appending `events` each."""
    if scenario not in SCENARIOS:
        raise ValueError(f"unknown scenario {scenario!r}; expected one of {SCENARIOS}")
    checked_subject(subject, integrity)
    with tempfile.TemporaryDirectory(prefix="s09-race-") as scratch:
        folder = Path(root) if root is not None else Path(scratch)
        folder = folder / scenario.replace(" ", "-") / ("" if subject == LAB else subject)
        folder.mkdir(parents=True, exist_ok=True)
        if scenario == "own sessions":
            paths = [folder / f"session-{number}.jsonl" for number in range(racers)]
        else:
            paths = [folder / "session.jsonl"] * racers
        reports = _race(paths, events, integrity, "handover" if scenario == "taking turns" else "hold", subject)
        files, problem = _events_in(paths, integrity, subject)
    kinds = Counter(report.split(" ", 1)[0] for report in reports)
    found = [event["content"] for events_of_file in files for event in events_of_file]
    problem = problem or _scenario_problem(scenario, reports, kinds, found, racers, events)
    return RaceResult(scenario, racers, kinds["wrote"], kinds["locked"], len(found), problem, subject)


def _scenario_problem(scenario, reports, kinds, found, racers, events) -> str | None:
    """Say how a scenario broke its promise, or None."""
    odd = [report for report in reports if not report.startswith(("wrote ", "locked "))]
    if odd:
        return f"a racer reported {odd[0]!r}"
    if scenario == "one session":
        winners = [number for number, report in enumerate(reports) if report.startswith("wrote")]
        if len(winners) != 1 or kinds["locked"] != racers - 1:
            return f"{len(winners)} racers wrote and {kinds['locked']} were refused; expected 1 and {racers - 1}"
        expected = [racer_event(winners[0], index)["content"] for index in range(events)]
        return None if found == expected else "the file does not hold exactly the winner's events"
    if kinds["wrote"] != racers:
        return f"only {kinds['wrote']} of {racers} racers wrote everything"
    expected = Counter(racer_event(racer, index)["content"] for racer in range(racers) for index in range(events))
    if Counter(found) != expected:
        return "events are missing or doubled"
    for racer in range(racers):
        own = [content for content in found if content.startswith(f"racer {racer} ")]
        if own != [racer_event(racer, index)["content"] for index in range(events)]:
            return f"racer {racer}'s events are out of order"
    return None


def race_campaign(*, racers: int = 8, events: int = 5, integrity: bool = False, root=None,
                  subject: str = LAB) -> list[RaceResult]:
    """Run every scenario once, with racers of the subject's class ("lab" or "lesson")."""
    return [race(scenario, racers=racers, events=events, integrity=integrity, root=root, subject=subject)
            for scenario in SCENARIOS]
