"""Campaign 2: simulated power loss, the way crash-consistency tools test file systems.

The states themselves come from crashlab/model.py (standard library only), which the capstone's
grader builds its states with too; this module records the kit's own classes and checks them.

A process kill cannot lose what the kernel already holds; a power cut can lose everything
that was not fsynced. So we record every call by which a transcript changes the disk
(through the file_io seam both classes share: the lesson's FileIO, which the lab calls OsFileIO), then rebuild
what the disk might hold if power failed after any one of those calls:

  * everything after the last fsync dropped;
  * any subset of the unsynced writes and truncates kept (in order), the last kept write
    torn at every byte boundary, the rest of its room left out, filled with zeros, or
    filled with garbage (the file's size reached the disk but its data did not);
  * a newly created file lost, when its directory was not yet fsynced.

Each crash state is written to a real file and checked: every acknowledged event is
there, the reader returns an exact prefix of what was written or raises only
TranscriptCorruptionError after the acknowledged records, and a fresh writer either
continues the file cleanly or refuses (fails closed). States whose recovery must repair
a torn tail are then crashed again in the middle of that repair.
"""

from __future__ import annotations

import itertools
import os
import tempfile
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..code import TranscriptCorruptionError, ticking_clock
from ..lab import DurableTranscript, OsFileIO

# The model's names stay importable from here, where the lessons and the tests have always found them.
from .model import FILLS as FILLS
from .model import MAX_UNSYNCED_CHANGES as MAX_UNSYNCED_CHANGES
from .model import Change, CrashState, crash_states
from .subjects import LAB, LESSON, checked_subject, open_transcript, read_back
from .workload import tally, workload_event

# What a checked crash state turned out to be (anything else is a finding).
PREFIX_CLEAN = "exact prefix"
PREFIX_TORN = "exact prefix, partial tail ignored"
ABSENT = "file absent"
FAILS_CLOSED = "fails closed (corruption after the acknowledged records)"
GOOD_OUTCOMES = (PREFIX_CLEAN, PREFIX_TORN, ABSENT, FAILS_CLOSED)

WORKLOAD_NAME = "powerloss.jsonl"


class SimulatedSyncFileIO(OsFileIO):
    """File I/O whose fsyncs do nothing: in a simulation the crash model, not this disk, decides
    what survives, so checking thousands of states need not wait for real syncs."""

    def fsync(self, fd):
        pass

    def fsync_dir(self, path):
        pass


class RecordingFileIO(SimulatedSyncFileIO):
    """File I/O that records every change to the one file it writes, in order; fsyncs are recorded, not done."""

    def __init__(self):
        self.changes: list[Change] = []
        self._path = None

    def open(self, path, flags, mode):
        if self._path is not None and Path(path) != self._path:
            raise ValueError("a RecordingFileIO records one file")
        existed = os.path.exists(path)
        fd = super().open(path, flags, mode)
        self._path = Path(path)
        if not existed:
            self.changes.append(Change("create"))
        return fd

    def write(self, fd, data):
        offset = os.fstat(fd).st_size  # the transcript writes with O_APPEND: the data lands at the end
        written = super().write(fd, data)
        self.changes.append(Change("write", offset=offset, data=bytes(data[:written])))
        return written

    def fsync(self, fd):
        super().fsync(fd)
        self.changes.append(Change("fsync"))

    def truncate(self, fd, length):
        super().truncate(fd, length)
        self.changes.append(Change("truncate", length=length))

    def fsync_dir(self, path):
        if self._path is None or Path(path) != self._path.parent:
            return  # a folder above the file: the model knows only the file's own name
        super().fsync_dir(path)
        self.changes.append(Change("fsync_dir"))

    def acknowledge(self, numbers) -> None:
        """Mark that the appends of these workload events have returned."""
        self.changes.append(Change("ack", numbers=tuple(numbers)))


@contextmanager
def writer_for(subject: str, path, file_io: OsFileIO, *, integrity: bool = False, clock=None):
    """A writer of the subject's class at path whose disk changes go through file_io; closed at the end."""
    if checked_subject(subject, integrity) == LAB:
        with DurableTranscript(path, integrity=integrity, clock=clock, file_io=file_io) as writer:
            yield writer
        return
    with open_transcript(LESSON, path, clock=clock) as writer:
        writer.file_io = file_io  # the lesson's writer I/O calls: the same seam as the lab's
        yield writer


@dataclass
class Recording:
    """A scripted workload's recorded changes and the events it wrote, in order."""

    changes: list
    written: list  # the events the workload's reader saw at the end: the reference
    integrity: bool
    subject: str = LAB  # whose class wrote it: "lab" or "lesson" (crashlab/subjects.py)

    @property
    def commit_points(self) -> frozenset:
        """Event counts a reader may return: 0 and the end of each acknowledged append or batch."""
        return commit_points(self.changes)


def commit_points(changes: list[Change]) -> frozenset:
    """0 and the number of events written when each acknowledged append (or whole batch) ended."""
    counts = itertools.accumulate(len(change.numbers) for change in changes if change.kind == "ack")
    return frozenset({0, *counts})


WORKLOAD_ROUNDS = {LAB: ((1, 1, 3), (1, 2)), LESSON: ((1, 1, 1), (1, 1, 1))}  # the lesson has no batches


def record_workload(folder, *, integrity: bool = False, name: str = WORKLOAD_NAME, subject: str = LAB) -> Recording:
    """Run a small scripted workload through a RecordingFileIO and return what it recorded.

    It creates the file, appends single events (and, in the lab, batches), closes and
    reopens the writer (which re-reads the tail), and appends again.
    """
    path = Path(folder) / name
    file_io = RecordingFileIO()
    n = 1
    for round_sizes in WORKLOAD_ROUNDS[checked_subject(subject, integrity)]:  # the second round reopens the file
        with writer_for(subject, path, file_io, integrity=integrity, clock=ticking_clock()) as writer:
            for size in round_sizes:
                numbers = list(range(n, n + size))
                _append_events(writer, [workload_event(k) for k in numbers])
                file_io.acknowledge(numbers)
                n += size
    return Recording(file_io.changes, read_back(subject, path, integrity=integrity).events, integrity, subject)


def _append_events(writer, events: list) -> None:
    """One append, or one batch (the lab's append_batch) when there are several events."""
    if len(events) == 1:
        writer.append(events[0])
    else:
        writer.append_batch(events)


@dataclass(frozen=True)
class StateCheck:
    """The outcome of one crash state: a good outcome, or a finding that says what broke."""

    outcome: str  # one of GOOD_OUTCOMES, or "FINDING"
    finding: str | None = None
    state: CrashState | None = None
    repair_needed: bool = False


def _scratch_root():
    """Where states are checked: a memory-backed folder when the system has one (they are many)."""
    shared_memory = Path("/dev/shm")
    return shared_memory if shared_memory.is_dir() and os.access(shared_memory, os.W_OK) else None


def _write_state(path: Path, state: CrashState) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)  # a new file each time: rewriting a truncated one makes ext4 flush it
    if state.content is not None:
        path.write_bytes(state.content)


def check_state(path, state: CrashState, reference: list, integrity: bool,
                commit_points: frozenset | None = None, subject: str = LAB) -> StateCheck:
    """Put state on disk at path, read it, and let a fresh writer continue; judge the outcome.

    With commit_points, the reader must return a whole number of appends and batches. The
    reader and the writer are of the subject's class ("lab" or "lesson").
    """
    path = Path(path)
    _write_state(path, state)
    needed = max(state.acknowledged, default=0)  # events 1..needed must survive

    def finding(text):
        return StateCheck("FINDING", text, state)

    try:
        read = read_back(subject, path, integrity=integrity)
    except TranscriptCorruptionError as error:
        if error.line_number is None or error.line_number <= needed:
            return finding(f"acknowledged event lost to corruption at line {error.line_number}: {error.reason}")
        return _check_refusal(path, state, integrity, subject) or StateCheck(FAILS_CLOSED, None, state)
    except Exception as error:  # noqa: BLE001 - a foreign exception is a finding
        return finding(f"reader raised {type(error).__name__}: {error}")
    events = read.events
    if events != reference[: len(events)]:
        return finding("reader returned records that were never written (a spliced or altered record)")
    if len(events) < needed:
        return finding(f"acknowledged events {len(events) + 1}..{needed} are missing")
    if commit_points is not None and len(events) not in commit_points:
        return finding(f"the reader returned {len(events)} events: part of a batch (a batch is whole or absent)")
    problem = _continue_problem(path, events, integrity, subject)
    if problem:
        return finding(problem)
    if state.content is None:
        return StateCheck(ABSENT, None, state)
    repair = read.ignored_partial_tail or read.last_line_unterminated
    return StateCheck(PREFIX_TORN if read.ignored_partial_tail else PREFIX_CLEAN, None, state, repair)


def _check_refusal(path: Path, state: CrashState, integrity: bool, subject: str) -> StateCheck | None:
    """A damaged file must make a fresh writer refuse too, leaving the file as it was."""
    try:
        with writer_for(subject, path, SimulatedSyncFileIO(), integrity=integrity) as writer:
            writer.append(workload_event(1))
    except TranscriptCorruptionError:
        if path.read_bytes() != state.content:
            return StateCheck("FINDING", "a refused append changed the damaged file", state)
        return None
    except Exception as error:  # noqa: BLE001
        return StateCheck("FINDING", f"writer raised {type(error).__name__}: {error}", state)
    return StateCheck("FINDING", "a writer appended to a file its reader refuses", state)


def _continue_problem(path: Path, events: list, integrity: bool, subject: str) -> str | None:
    """Append the next event with a fresh writer; say what went wrong, or None."""
    try:
        with writer_for(subject, path, SimulatedSyncFileIO(), integrity=integrity) as writer:
            writer.append(workload_event(len(events) + 1))
        after = read_back(subject, path, integrity=integrity).events
    except Exception as error:  # noqa: BLE001
        return f"continuing the file failed: {type(error).__name__}: {error}"
    if after[:-1] != events or len(after) != len(events) + 1 or not tally(after, []).ok:
        return "continuing the file did not give the old events plus one"
    return None


@dataclass
class PowerLossReport:
    """What a power-loss enumeration found."""

    subject: str = LAB  # whose class was recorded, read and continued: "lab" or "lesson"
    states: int = 0
    repair_states: int = 0  # states crashed again during the repair a fresh writer made
    outcomes: Counter = field(default_factory=Counter)
    findings: list = field(default_factory=list)  # StateCheck objects with a finding

    @property
    def ok(self) -> bool:
        """True when no state broke a promise."""
        return not self.findings

    def add(self, check: StateCheck, during_repair: bool = False) -> None:
        """Count one checked state."""
        self.states += 1
        self.repair_states += during_repair
        self.outcomes[check.outcome] += 1
        if check.finding:
            self.findings.append(check)


def _recovery_changes(folder: Path, state: CrashState, integrity: bool, subject: str) -> tuple[list, list]:
    """Record a fresh writer repairing and continuing state; return (its changes, the events after)."""
    path = folder / "repair" / WORKLOAD_NAME  # the same name: the session id is the file's stem
    _write_state(path, state)
    file_io = RecordingFileIO()
    events = read_back(subject, path, integrity=integrity).events
    with writer_for(subject, path, file_io, integrity=integrity) as writer:
        writer.append(workload_event(len(events) + 1))
        file_io.acknowledge([len(events) + 1])
    return file_io.changes, read_back(subject, path, integrity=integrity).events


def power_loss_campaign(*, integrity_modes=None, every_byte: bool = True, repair_every_byte: bool = False,
                        progress: Callable[[int, int], None] | None = None, root=None,
                        subject: str = LAB) -> PowerLossReport:
    """Enumerate and check the crash states of the scripted workload, and of every repair.

    subject chooses whose class records, reads and continues: "lab" (DurableTranscript, by
    default with the chain off and on) or "lesson" (JSONLTranscript, which has no chain).
    every_byte tears the workload's writes at every byte (False: a few edges only);
    repair_every_byte does the same for the writes of the repairs. progress(done, total)
    is called after each first-level state and the repairs crashed from it: done counts
    the states checked so far, total adds the first-level states still to come (their
    repairs are not known yet), so at the end both are report.states.
    """
    if integrity_modes is None:
        integrity_modes = (False, True) if checked_subject(subject) == LAB else (False,)
    report = PowerLossReport(subject)
    with tempfile.TemporaryDirectory(prefix="s09-powerloss-", dir=root or _scratch_root()) as scratch:
        work = []  # (folder, integrity, recording, state) for every first-level state
        for integrity in integrity_modes:
            folder = Path(scratch) / ("integrity" if integrity else "plain")
            recording = record_workload(folder / "recorded", integrity=integrity, subject=subject)
            work += [(folder, integrity, recording, state)
                     for state in crash_states(recording.changes, every_byte=every_byte)]
        for done, (folder, integrity, recording, state) in enumerate(work, start=1):
            check = check_state(folder / "check" / WORKLOAD_NAME, state, recording.written, integrity,
                                recording.commit_points, subject)
            report.add(check)
            if check.repair_needed:
                _crash_the_repair(folder, state, integrity, repair_every_byte, report, recording.commit_points,
                                  subject)
            if progress is not None:
                progress(report.states, report.states + len(work) - done)
    return report


def _crash_the_repair(folder: Path, state: CrashState, integrity: bool, every_byte: bool,
                      report: PowerLossReport, points: frozenset, subject: str = LAB) -> None:
    """Crash a fresh writer at every point of its repair-and-append, and check each state."""
    changes, written = _recovery_changes(folder, state, integrity, subject)
    points = points | {len(written)}  # the repair's one append is a commit of its own
    for again in crash_states(changes, initial=state.content, every_byte=every_byte):
        again = CrashState(again.content, state.acknowledged, f"during repair: {again.description}",
                           again.torn_at, again.fill)
        report.add(check_state(folder / "check" / WORKLOAD_NAME, again, written, integrity, points, subject),
                   during_repair=True)


def one_append_states(*, integrity: bool = False) -> tuple[bytes, bytes, list[tuple[int, str, str]]]:
    """The crash states of one append laid out byte by byte, for a plot.

    Returns (the durable bytes before the append, the appended record, and one
    (torn_at, fill, outcome) per state of that append's write).
    """
    with tempfile.TemporaryDirectory(prefix="s09-one-append-", dir=_scratch_root()) as scratch:
        path = Path(scratch) / "recorded" / "one.jsonl"
        with DurableTranscript(path, integrity=integrity, clock=ticking_clock()) as writer:
            writer.append(workload_event(1))
        before = path.read_bytes()
        file_io = RecordingFileIO()
        with DurableTranscript(path, integrity=integrity, clock=ticking_clock(), file_io=file_io) as writer:
            writer.append(workload_event(2))
            file_io.acknowledge([2])
        reference = DurableTranscript(path, integrity=integrity).read_events()
        record = next(change.data for change in file_io.changes if change.kind == "write")
        rows = []
        for state in crash_states(file_io.changes, initial=before):
            # The state where none of the write reached the disk is the file as it was before.
            torn_at, fill = (0, "cut") if state.content == before else (state.torn_at, state.fill)
            if torn_at is not None:
                check = check_state(Path(scratch) / "check" / "one.jsonl", state, reference, integrity)
                rows.append((torn_at, fill, check.finding or check.outcome))
        return before, record, rows
