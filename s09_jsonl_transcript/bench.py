"""Benchmarks: the lesson's transcript measured against bare baselines and fair peers, as ratios.

    python -m s09_jsonl_transcript.bench            full sizes: 1,000,000 events, about 1 GB (a minute or two)
    python -m s09_jsonl_transcript.bench --quick    small sizes, a second or two (the test suite runs this)
    options: --json FILE (raw numbers; default artifacts/bench.json), --dir DIR (where the temporary
             transcripts go; default the system's temporary folder; about 2.5 GB free are needed)

Absolute times depend on the machine and on whatever else it is running, so every figure is a
ratio of two measurements taken in the same run, on the same disk, interleaved A, B, A, B, ...:
the median over rounds of the ratio within each round. The large transcripts are written by the
library's own append_batch without the per-write fsync (one at the end), in a temporary folder
that is removed afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from . import fast
from .code import (
    TYPE_FUNCTION_CALL,
    TYPE_FUNCTION_CALL_RESULT,
    TYPE_MESSAGE,
    TYPE_REASONING,
    JSONLTranscript,
    event_id_for,
    ticking_clock,
)
from .lab import BATCH_END_FIELD, DurableTranscript, OsFileIO, child_process_env

# --------------------------------------------------------------------------- sizes


@dataclass(frozen=True)
class Sizes:
    """How much work each figure does. FULL is the issue's sizes; QUICK only proves the code runs."""

    single_rounds: int  # interleaved rounds of the single-append comparison
    single_per_round: int  # events each side writes per round
    batch_rounds: int
    batch_size: int
    big_events: int  # the large transcript of figures 4, 5 and 7
    small_events: int  # the small transcript figure 4 compares against
    text_bytes: int  # text per synthetic event: about 1 KB lines, so 1,000,000 events make about 1 GB
    read_rounds: int
    recover_events: int
    recover_rounds: int
    window: int = 1000  # replay(window)


FULL = Sizes(single_rounds=40, single_per_round=25, batch_rounds=40, batch_size=100,
             big_events=1_000_000, small_events=10_000, text_bytes=900, read_rounds=21,
             recover_events=100_000, recover_rounds=5)
QUICK = Sizes(single_rounds=3, single_per_round=5, batch_rounds=3, batch_size=100,
              big_events=12_000, small_events=1_500, text_bytes=900, read_rounds=3,
              recover_events=2_000, recover_rounds=3)

# --------------------------------------------------------------------------- synthetic transcripts

_WORDS = ("append fsync replay sequence envelope session torn tail evidence state rebuild record "
          "crash durable window memory candidate index search turn offset newline").split()
_FILLER = " ".join(_WORDS[(i * 7) % len(_WORDS)] + str(i % 10) for i in range(8000))  # about 60 KB of text
MAX_TEXT_BYTES = 50_000


def synthetic_event(n: int, text_bytes: int) -> dict:
    """Event n of a deterministic agent-like session; its text field holds text_bytes characters.

    Events cycle through user message, reasoning, tool call, tool result and assistant message,
    with a fresh callId every cycle, so replay meets every kind of event it folds.
    """
    if not 0 < text_bytes <= MAX_TEXT_BYTES:
        raise ValueError(f"text_bytes must be between 1 and {MAX_TEXT_BYTES}, not {text_bytes!r}")
    start = (n * 37) % (len(_FILLER) - text_bytes)
    text = _FILLER[start:start + text_bytes]
    call_id = f"call_{n // 5}"
    kind = n % 5
    if kind == 0:
        return {"type": TYPE_MESSAGE, "role": "user", "content": text}
    if kind == 1:
        return {"type": TYPE_REASONING, "content": text}
    if kind == 2:
        return {"type": TYPE_FUNCTION_CALL, "callId": call_id, "name": "grep", "arguments": {"pattern": text}}
    if kind == 3:
        return {"type": TYPE_FUNCTION_CALL_RESULT, "callId": call_id, "output": text}
    return {"type": TYPE_MESSAGE, "role": "assistant", "content": text}


class _OneSyncAtTheEnd(OsFileIO):
    """File I/O that leaves out the fsync after each write: the bulk writer syncs once when done."""

    def fsync(self, fd):
        pass


def write_bulk_transcript(path, count: int, text_bytes: int, *, chunk: int = 10_000) -> int:
    """Write a new transcript of count synthetic events quickly and return its size in bytes.

    The library itself writes it (append_batch with a ticking clock, chunk events per write),
    so every line is a valid record; only the fsync per write is left out, with one at the end.
    Refuses to touch an existing file.
    """
    path = Path(path)
    if path.exists():
        raise FileExistsError(f"{path} exists; the bulk writer only makes new transcripts")
    with DurableTranscript(path, clock=ticking_clock(), file_io=_OneSyncAtTheEnd()) as transcript:
        for first in range(0, count, chunk):
            transcript.append_batch(synthetic_event(n, text_bytes) for n in range(first, min(first + chunk, count)))
    with open(path, "rb") as file:
        os.fsync(file.fileno())
    return path.stat().st_size


# --------------------------------------------------------------------------- measuring


def timed(action: Callable[[], object]) -> float:
    """Seconds action took on the wall clock."""
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def interleaved(measurements: dict[str, Callable[[], float]], rounds: int, *,
                alternate: bool = False) -> dict[str, list[float]]:
    """Run each measurement once per round, in turn (A, B, A, B, ...); return every sample of each.

    Interleaving spreads the machine's changing load evenly over the things compared. With
    alternate, every other round runs them in reverse order (A, B, B, A, ...), so that no
    measurement always runs right after the same other one.
    """
    if rounds < 1:
        raise ValueError("rounds must be at least 1")
    samples = {name: [] for name in measurements}
    for round_number in range(rounds):
        order = list(measurements.items())
        for name, measure in (reversed(order) if alternate and round_number % 2 else order):
            samples[name].append(measure())
    return samples


def paired_ratio(samples: dict[str, list[float]], numerator: str, denominator: str) -> float:
    """The median over rounds of numerator / denominator, each pair measured in the same round.

    Pairing cancels load that changes from one round to the next.
    """
    return statistics.median(a / b for a, b in zip(samples[numerator], samples[denominator]))


def paired_difference(samples: dict[str, list[float]], minuend: str, subtrahend: str) -> float:
    """The median over rounds of minuend - subtrahend, each pair measured in the same round."""
    return statistics.median(a - b for a, b in zip(samples[minuend], samples[subtrahend]))


def medians(samples: dict[str, list[float]]) -> dict[str, float]:
    """Each measurement's median sample."""
    return {name: statistics.median(values) for name, values in samples.items()}


class BareLog:
    """The physical limit: os.write on an O_APPEND descriptor and fsync, with no library around them."""

    def __init__(self, path):
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def write(self, line: bytes) -> None:
        """Write one line (no fsync)."""
        os.write(self.fd, line)

    def sync(self) -> None:
        """Make everything written so far durable."""
        os.fsync(self.fd)

    def close(self) -> None:
        """Release the descriptor."""
        os.close(self.fd)


class SqliteLog:
    """The same records in SQLite: WAL mode, one insert per transaction."""

    def __init__(self, path, synchronous: str = "FULL"):
        if synchronous not in ("FULL", "NORMAL"):
            raise ValueError(f"synchronous must be FULL or NORMAL, not {synchronous!r}")
        self.connection = sqlite3.connect(path, isolation_level=None)  # autocommit: each insert commits
        self.connection.execute("PRAGMA journal_mode=WAL")
        self.connection.execute(f"PRAGMA synchronous={synchronous}")
        self.connection.execute("CREATE TABLE IF NOT EXISTS events (sequence INTEGER PRIMARY KEY, record TEXT)")

    def insert(self, line: bytes) -> None:
        """Insert one record in its own transaction."""
        self.connection.execute("INSERT INTO events (record) VALUES (?)", (line.decode("utf-8"),))

    def close(self) -> None:
        """Close the connection."""
        self.connection.close()


class FsyncTimed(OsFileIO):
    """The lab's I/O calls, adding up the seconds spent inside fsync: what an append does besides it is
    its time minus these (figure 1's issue-43 pair, measured without the fsync's noise)."""

    def __init__(self):
        self.seconds = 0.0

    def fsync(self, fd):
        start = time.perf_counter()
        try:
            super().fsync(fd)
        finally:
            self.seconds += time.perf_counter() - start


class WithoutTheFileCheck(DurableTranscript):
    """The lab's transcript with the check issue 43 added to every append turned off (check_unchanged
    does nothing): figure 1's "before" side, run beside the same transcript with it. Measuring only."""

    def check_unchanged(self, written: int) -> None:
        """Nothing: the path and size are not checked before the append is acknowledged."""


def timed_append(transcript: DurableTranscript, action: Callable[[], object]) -> tuple[float, list[bytes]]:
    """Seconds action took, and the complete lines (with newlines) it added to the transcript's file."""
    start = transcript.path.stat().st_size if transcript.path.exists() else 0
    elapsed = timed(action)
    with open(transcript.path, "rb") as file:
        file.seek(start)
        *lines, _ = file.read().split(b"\n")  # split on newline only: records never contain one
    return elapsed, [line + b"\n" for line in lines]


def single_write_costs(folder, rounds: int, per_round: int, text_bytes: int,
                       sqlite_modes=("FULL",)) -> dict[str, list[float]]:
    """Seconds per single-event write, one sample per round (the mean of its events), side by side.

    Keys: "append" (the lab's DurableTranscript, one fsync each), "lesson_append" (code.py's
    JSONLTranscript, the same events), "bare" (os.write + fsync of the bytes append wrote for
    that event), "fsync" (the fsync alone, inside "bare"), "plain_writer" (SameBytesPeer with the
    lab's encoder: the least any writer of the same record does, stamp, encode, write, fsync, with
    no checks), "write_only" (the same os.write with no fsync: not durable, for scale) and
    "sqlite_<MODE>" for each SQLite synchronous mode (one insert per transaction). Issue 43's pair:
    "checked" (the lab's append as it is) and "unchecked" (WithoutTheFileCheck: its per-append check
    turned off), each through FsyncTimed, with "checked_work" and "unchecked_work" their seconds
    outside fsync. The sides take turns for every event, in an order that changes from one event to
    the next, so each side runs as often right after another side's fsync.
    """
    folder = Path(folder)
    transcript = DurableTranscript(folder / "single-append.jsonl")
    lesson = JSONLTranscript(folder / "single-lesson.jsonl")
    pair = {"checked": DurableTranscript(folder / "single-checked.jsonl", file_io=FsyncTimed()),
            "unchecked": WithoutTheFileCheck(folder / "single-unchecked.jsonl", file_io=FsyncTimed())}
    bare = BareLog(folder / "single-bare.jsonl")
    unsynced = BareLog(folder / "single-unsynced.jsonl")
    databases = {mode: SqliteLog(folder / f"single-{mode}.sqlite3", mode) for mode in sqlite_modes}
    # the lab's session id and sequences (after the warm-up), so the lines are the lab's
    plain = SameBytesPeer(folder / "single-plain.jsonl", transcript.session_id, per_round + 1, encoder="lab")
    events = [synthetic_event(n, text_bytes) for n in range(per_round)]
    written: list[bytes] = [b""] * per_round  # the line append last wrote for each event: the others write it too
    spent: dict[str, float] = {}

    def library(index: int) -> None:
        elapsed, lines = timed_append(transcript, lambda: transcript.append(events[index]))
        written[index] = lines[0]
        spent["append"] += elapsed

    def lesson_side(index: int) -> None:
        spent["lesson_append"] += timed(lambda: lesson.append(events[index]))

    def bare_side(index: int) -> None:
        start = time.perf_counter()
        bare.write(written[index])
        synced_from = time.perf_counter()
        bare.sync()
        end = time.perf_counter()
        spent["bare"] += end - start
        spent["fsync"] += end - synced_from

    def plain_writer(index: int) -> None:
        spent["plain_writer"] += timed(lambda: plain.append(events[index]))

    def issue_43_side(name: str) -> Callable[[int], None]:
        writer = pair[name]

        def append(index: int) -> None:
            synced_before = writer.file_io.seconds
            elapsed = timed(lambda: writer.append(events[index]))
            spent[name] += elapsed
            spent[f"{name}_work"] += elapsed - (writer.file_io.seconds - synced_before)
        return append

    def write_only(index: int) -> None:
        spent["write_only"] += timed(lambda: unsynced.write(written[index]))

    def sqlite_side(mode: str, database: SqliteLog) -> Callable[[int], None]:
        def insert(index: int) -> None:
            spent[f"sqlite_{mode}"] += timed(lambda: database.insert(written[index]))
        return insert

    sides = {"append": library, "lesson_append": lesson_side, "bare": bare_side, "plain_writer": plain_writer,
             "write_only": write_only, "checked": issue_43_side("checked"), "unchecked": issue_43_side("unchecked")}
    sides.update({f"sqlite_{mode}": sqlite_side(mode, db) for mode, db in databases.items()})
    names = list(sides)

    measured_only = ["fsync", "checked_work", "unchecked_work"]  # parts of a side's time, not sides

    def one_round() -> dict[str, float]:
        spent.clear()
        spent.update({name: 0.0 for name in [*names, *measured_only]})
        for index in range(per_round):
            turn = index % len(names)  # rotate, and reverse every other event
            order = names[turn:] + names[:turn]
            for name in (reversed(order) if index % 2 else order):
                sides[name](index)
        return {name: seconds / per_round for name, seconds in spent.items()}

    try:
        spent["append"] = 0.0
        for index in range(per_round):  # warm-up: opens and locks the writers, learns each event's line
            library(index)
            lesson.append(events[index])
            for writer in pair.values():
                writer.append(events[index])
        samples: dict[str, list[float]] = {name: [] for name in [*names, *measured_only]}
        for _ in range(rounds):
            for name, seconds in one_round().items():
                samples[name].append(seconds)
        return samples
    finally:
        transcript.close()
        lesson.close()
        for writer in pair.values():
            writer.close()
        bare.close()
        unsynced.close()
        plain.close()
        for database in databases.values():
            database.close()


class SameBytesPeer:
    """The fair peer: what a plain program writes for the same group commit, or the same single event.

    The same records as the lab's (its envelope, batch_end, the payload) with one encoder
    (json.dumps with the lab's separators by default; "lab": the lab's own, fast.encode_record),
    all lines in one write, one fsync: the same bytes as the lab's file, but for recorded_at
    (another moment). No checks, no lock, no writer check.
    """

    def __init__(self, path, session_id: str, first_sequence: int = 1, encoder: str = "stdlib"):
        self.log = BareLog(path)
        self.session_id, self.next_sequence = session_id, first_sequence
        self.encode = _PEER_ENCODERS[encoder]

    def record(self, sequence: int, event: dict, recorded_at: str, batch_end: int | None = None) -> dict:
        """The lab's record of event at sequence: the envelope, batch_end if given, then the payload."""
        batch = {} if batch_end is None else {BATCH_END_FIELD: batch_end}
        return {"schema_version": 1, "sequence": sequence, "event_id": event_id_for(self.session_id, sequence),
                "session_id": self.session_id, "recorded_at": recorded_at, **batch, **event}

    def append_batch(self, events: list) -> None:
        """Encode the batch's records, write them once and fsync once."""
        first, last = self.next_sequence, self.next_sequence + len(events) - 1
        recorded_at = datetime.now(timezone.utc).isoformat()
        records = [self.record(sequence, event, recorded_at, batch_end=last)
                   for sequence, event in enumerate(events, start=first)]
        self.log.write(b"".join([self.encode(record) + b"\n" for record in records]))
        self.log.sync()
        self.next_sequence = last + 1

    def append(self, event: dict) -> None:
        """One record, stamped now by fast.utc_stamp, in one write and one fsync: figure 1's plain writer."""
        sequence = self.next_sequence
        self.log.write(self.encode(self.record(sequence, event, fast.utc_stamp())) + b"\n")
        self.log.sync()
        self.next_sequence = sequence + 1

    def close(self) -> None:
        """Release the descriptor."""
        self.log.close()


def _dumps_bytes(record: dict) -> bytes:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _lab_encoder_bytes(record: dict) -> bytes:
    return fast.encode_record(record, floats=False)  # the fastest encoder the lab has (the decoder in use)


_PEER_ENCODERS = {"stdlib": _dumps_bytes, "lab": _lab_encoder_bytes}
if fast.msgspec is not None:
    _PEER_ENCODERS["msgspec"] = fast.msgspec.json.encode


def batch_costs(folder, rounds: int, batch_size: int, singles_per_round: int,
                text_bytes: int, peer_encoder: str = "stdlib") -> dict[str, list[float]]:
    """Seconds per event, one sample per round, measured side by side.

    "append_batch": append_batch(batch_size); "dumps_batch": the fair peer (SameBytesPeer: the
    same bytes, one encoder, one write, one fsync); "bare": a loop writing the very lines
    append_batch wrote (already encoded: no JSON writer can go this fast), then one fsync;
    "append": single appends, one fsync each.
    """
    folder = Path(folder)
    batched = DurableTranscript(folder / "batch-append.jsonl")
    single = DurableTranscript(folder / "batch-single.jsonl")
    bare = BareLog(folder / "batch-bare.jsonl")
    # the lab's session id and sequences (after its warm-up batch), so the lines are the lab's
    peer = SameBytesPeer(folder / "batch-dumps.jsonl", batched.session_id, batch_size + 1, peer_encoder)
    events = [synthetic_event(n, text_bytes) for n in range(batch_size)]
    written: list[bytes] = []

    def library_batch() -> float:
        elapsed, lines = timed_append(batched, lambda: batched.append_batch(events))
        written[:] = lines
        return elapsed / batch_size

    def bare_batch() -> float:
        def write_all_then_sync():
            for line in written:
                bare.write(line)
            bare.sync()
        return timed(write_all_then_sync) / batch_size

    def dumps_batch() -> float:
        return timed(lambda: peer.append_batch(events)) / batch_size

    def library_singles() -> float:
        return timed(lambda: [single.append(event) for event in events[:singles_per_round]]) / singles_per_round

    try:
        library_batch()  # warm-up
        single.append(events[0])
        return interleaved({"append_batch": library_batch, "dumps_batch": dumps_batch, "bare": bare_batch,
                            "append": library_singles}, rounds, alternate=True)
    finally:
        batched.close()
        single.close()
        bare.close()
        peer.close()


def replay_costs(paths: dict[str, Path], rounds: int, window: int) -> dict[str, list[float]]:
    """Seconds of replay(window) by a fresh DurableTranscript, for each named transcript, per round."""
    def replay(path):
        return lambda: timed(lambda: DurableTranscript(path).replay(window))
    return interleaved({name: replay(path) for name, path in paths.items()}, rounds)


def recover_costs(path, rounds: int, decoder: str = "stdlib") -> dict[str, list[float]]:
    """Seconds to read one file with recover() and with bare loops decoding each line, per round.

    "json_loads": json.loads per line; with msgspec, also "own_decoder": msgspec's decode per line.
    """
    def bare_parse():
        with open(path, "rb") as file:
            for line in file:
                json.loads(line)

    def own_parse():
        decode = fast.msgspec.json.Decoder().decode
        with open(path, "rb") as file:
            for line in file:
                decode(line)

    sides = {"recover": lambda: timed(DurableTranscript(path).recover), "json_loads": lambda: timed(bare_parse)}
    if decoder == "msgspec":
        sides["own_decoder"] = lambda: timed(own_parse)
    return interleaved(sides, rounds, alternate=True)


def available_decoders() -> list[str]:
    """The decoders this machine has: stdlib, and msgspec when installed."""
    return [name for name in fast.DECODERS if name == "stdlib" or fast.msgspec is not None]


def open_and_append_costs(big_path, empty_path, rounds: int, text_bytes: int) -> dict[str, list[float]]:
    """Seconds for a fresh writer's first append (open, lock, read the tail, write, fsync), per round.

    "big" appends to the large transcript (one event longer each round); "empty" to a file
    emptied (and synced) before each round, outside the timing.
    """
    event = synthetic_event(0, text_bytes)

    def first_append(path):
        transcript = DurableTranscript(path)
        try:
            transcript.append(event)
        finally:
            transcript.close()

    def on_empty() -> float:
        with open(empty_path, "wb") as file:
            os.fsync(file.fileno())
        return timed(lambda: first_append(empty_path))

    return interleaved({"big": lambda: timed(lambda: first_append(big_path)), "empty": on_empty}, rounds)


_MEMORY_PROBE = """
import json, sys
from pathlib import Path
from s09_jsonl_transcript.lab import DurableTranscript

def resident_kib(field):  # VmRSS: resident now; VmHWM: the high-water mark
    line = next(l for l in Path("/proc/self/status").read_text().splitlines() if l.startswith(field + ":"))
    return int(line.split()[1])

transcript = DurableTranscript(sys.argv[1])
baseline = resident_kib("VmRSS")
Path("/proc/self/clear_refs").write_text("5")  # reset the high-water mark to what is resident now
messages = transcript.replay(int(sys.argv[2]))
peak = resident_kib("VmHWM")
print(json.dumps({"baseline_bytes": baseline * 1024, "peak_bytes": peak * 1024, "messages": len(messages)}))
"""


def replay_peak_memory(path, window: int) -> dict:
    """Peak resident memory of replay(window) in a fresh interpreter, and that interpreter's baseline.

    A child process keeps this process's own memory (and the transcripts it generated) out of it.
    Linux only: it reads and resets the high-water mark in /proc/self.
    """
    result = subprocess.run([sys.executable, "-c", _MEMORY_PROBE, str(path), str(window)],
                            capture_output=True, text=True, env=child_process_env(), timeout=600, check=True)
    return json.loads(result.stdout)


# --------------------------------------------------------------------------- figures


@dataclass(frozen=True)
class Target:
    """One measured ratio and the bound the issue sets for it."""

    label: str
    value: float
    bound: float | None = None  # None: shown for context, no target
    at_most: bool = False  # False: the value must be at least the bound

    @property
    def met(self) -> bool:
        """Whether the value is on the right side of the bound (a context line always is)."""
        if self.bound is None:
            return True
        return self.value <= self.bound if self.at_most else self.value >= self.bound

    def __str__(self):
        if self.bound is None:
            return f"{self.label:<86} {self.value:8.2f}   (context, no target)"
        sign = "<=" if self.at_most else ">="
        return f"{self.label:<86} {self.value:8.2f}   target {sign} {self.bound:<5g} {'met' if self.met else 'MISSED'}"


@dataclass(frozen=True)
class Figure:
    """One of the seven benchmark figures: its ratios and the raw numbers behind them."""

    number: int
    targets: tuple
    raw: dict  # medians in seconds per event or per call, sizes in bytes

    @property
    def met(self) -> bool:
        """Whether every target of this figure is met."""
        return all(target.met for target in self.targets)


# The issue's goals for each decoder: (append / bare, µs added, batch / same-bytes peer, recover / json.loads)
GOALS = {"stdlib": (0.92, 14, 1.0, 1.15), "msgspec": (0.92, 12, 1.3, 2.2)}
OWN_DECODER_GOAL = 0.85  # msgspec: recover() / a bare loop of msgspec's own decode


def figures_from(measured: dict, sizes: Sizes) -> list[Figure]:
    """Turn the samples of run_all into the seven figures (ratios of paired samples, see paired_ratio).

    Figures 1, 2 and 6 depend on the decoder the lab's fast paths use: they hold a line for each.
    """
    by_decoder = measured["decoders"]
    first = next(iter(by_decoder))
    replay, opened, memory = measured["replay"], measured["open_append"], measured["memory"]
    extra_mb = (memory["peak_bytes"] - memory["baseline_bytes"]) / 2**20
    big, small, batch_size = f"{sizes.big_events:,}", f"{sizes.small_events:,}", sizes.batch_size

    def raw(samples):
        return {"median_seconds": medians(samples), "samples": samples}

    single_lines, batch_lines, recover_lines = [], [], []
    for name, samples in by_decoder.items():
        single, batch, recover = samples["single"], samples["batch"], samples["recover"]
        append_goal, added_goal, batch_goal, recover_goal = GOALS[name]
        fsync_us = statistics.median(single["fsync"]) * 1e6
        added_us = paired_difference(single, "append", "bare") * 1e6
        single_lines += [
            Target(f"[{name}] lab append / bare os.write + fsync, events per s "
                   f"(median fsync {fsync_us:.0f} us)", paired_ratio(single, "bare", "append"), append_goal),
            Target(f"[{name}] us the lab's append adds to each bare write + fsync", added_us, added_goal,
                   at_most=True)]
        floor_us = paired_difference(single, "plain_writer", "bare") * 1e6
        single_lines.append(Target(f"[{name}] us a plain writer (stamp, encode, write + fsync; no checks) adds: "
                                   "the floor", floor_us))
        if "checked" in single:  # issue 43: the same append with and without its check, side by side
            single_lines += [
                Target(f"[{name}] us the lab's append adds to the plain writer, before issue 43's check",
                       paired_difference(single, "unchecked", "plain_writer") * 1e6),
                Target(f"[{name}] us the lab's append adds to the plain writer, after it",
                       paired_difference(single, "checked", "plain_writer") * 1e6),
                Target(f"[{name}] us issue 43's check adds to each append (after - before, paired by round)",
                       paired_difference(single, "checked", "unchecked") * 1e6, 3, at_most=True),
                Target(f"[{name}] us the check adds outside the fsync (each side's time less its fsync's)",
                       paired_difference(single, "checked_work", "unchecked_work") * 1e6)]
        batch_lines += [
            Target(f"[{name}] append_batch({batch_size}) / same bytes by json.dumps each, one write, one fsync",
                   paired_ratio(batch, "dumps_batch", "append_batch"), batch_goal),
            Target(f"[{name}] append_batch({batch_size}) / single append, events per s",
                   paired_ratio(batch, "append", "append_batch"), 20),
            Target(f"[{name}] append_batch({batch_size}) / bare writes of encoded bytes + one fsync",
                   paired_ratio(batch, "bare", "append_batch"))]
        recover_lines.append(Target(f"[{name}] recover() / bare json.loads per line, lines per s",
                                    paired_ratio(recover, "json_loads", "recover"), recover_goal))
        if "own_decoder" in recover:
            recover_lines.append(Target(f"[{name}] recover() / bare loop of its own decoder, lines per s",
                                        paired_ratio(recover, "own_decoder", "recover"), OWN_DECODER_GOAL))
    lesson = by_decoder[first]["single"]
    single_lines.append(Target("lesson append (code.py) / bare os.write + fsync, events per s",
                               paired_ratio(lesson, "bare", "lesson_append"), 0.9))
    return [
        Figure(1, tuple(single_lines), {name: raw(samples["single"]) for name, samples in by_decoder.items()}),
        Figure(2, tuple(batch_lines), {name: raw(samples["batch"]) for name, samples in by_decoder.items()}),
        Figure(3, (Target("append / SQLite WAL synchronous=FULL insert, events per s",
                          paired_ratio(lesson, "sqlite_FULL", "append"), 1.0),), raw(lesson)),
        Figure(4, (Target(f"replay({sizes.window}) time, {big} events / {small} events",
                          paired_ratio(replay, "big", "small"), 1.5, at_most=True),), raw(replay)),
        Figure(5, (Target(f"open + append one event time, {big} events / empty",
                          paired_ratio(opened, "big", "empty"), 2.0, at_most=True),), raw(opened)),
        Figure(6, tuple(recover_lines), {name: raw(samples["recover"]) for name, samples in by_decoder.items()}),
        Figure(7, (Target(f"replay({sizes.window}) peak memory above baseline, MB "
                          f"({measured['big_bytes'] / 2**30:.2f} GiB file)", extra_mb, 50, at_most=True),), memory),
    ]


def run_all(folder, sizes: Sizes, progress: Callable[[str], None] = lambda message: None,
            decoders: list[str] | None = None) -> dict:
    """Measure everything the seven figures need, in folder (which must be empty and is left full).

    Figures 1, 2 and 6 are measured once for each decoder (default: every one installed).
    """
    folder = Path(folder)
    measured = {"decoders": {}}
    recover_path = folder / "recover.jsonl"
    progress(f"writing a {sizes.recover_events:,}-event transcript for recover()")
    write_bulk_transcript(recover_path, sizes.recover_events, sizes.text_bytes)
    for name in decoders or available_decoders():
        with fast.decoding_with(name):
            room = folder / name
            room.mkdir()
            progress(f"[{name}] single appends vs bare writes vs SQLite")
            single = single_write_costs(room, sizes.single_rounds, sizes.single_per_round, sizes.text_bytes)
            progress(f"[{name}] batches")
            batch = batch_costs(room, sizes.batch_rounds, sizes.batch_size, sizes.single_per_round, sizes.text_bytes)
            progress(f"[{name}] recover() over {sizes.recover_events:,} events")
            recover = recover_costs(recover_path, sizes.recover_rounds, name)
            measured["decoders"][name] = {"single": single, "batch": batch, "recover": recover}
    progress(f"writing a {sizes.big_events:,}-event transcript in bulk")
    big, small = folder / "big.jsonl", folder / "small.jsonl"
    measured["big_bytes"] = write_bulk_transcript(big, sizes.big_events, sizes.text_bytes)
    write_bulk_transcript(small, sizes.small_events, sizes.text_bytes)
    progress("replay from the tail")
    measured["replay"] = replay_costs({"big": big, "small": small}, sizes.read_rounds, sizes.window)
    progress("peak memory of replay")
    measured["memory"] = replay_peak_memory(big, sizes.window)
    progress("open and append")
    measured["open_append"] = open_and_append_costs(big, folder / "empty.jsonl", sizes.read_rounds, sizes.text_bytes)
    return measured


def cpu_model(cpuinfo_path="/proc/cpuinfo") -> str:
    """The processor's name as Linux gives it ("model name" in /proc/cpuinfo), else platform's guess."""
    try:
        with open(cpuinfo_path, encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_description() -> dict:
    """What the figures were measured on."""
    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu": cpu_model(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }


def disk_needed(sizes: Sizes) -> int:
    """A generous estimate of the bytes run_all writes."""
    line_bytes = sizes.text_bytes + 300
    return 2 * line_bytes * (sizes.big_events + sizes.small_events + sizes.recover_events) + 50 * 2**20


def report_lines(figures: list[Figure], machine: dict, quick: bool) -> list[str]:
    """The printed report: one line per target, then how many were met."""
    sizes = "quick sizes: proves the code runs, not the targets" if quick else "full sizes"
    header = (f"s09 transcript benchmarks ({sizes})"
              f"\nmachine: {machine['platform']}, {machine['cpus']} CPUs ({machine['cpu']}), "
              f"Python {machine['python']}, SQLite {machine['sqlite']}, "
              f"load average at start {machine['load_average']}")
    lines = [header]
    for figure in figures:
        for index, target in enumerate(figure.targets):
            lines.append(f"{figure.number if index == 0 else ' '}. {target}")
    targets = [target for figure in figures for target in figure.targets if target.bound is not None]
    lines.append(f"{sum(target.met for target in targets)} of {len(targets)} targets met")
    return lines


def main(argv=None) -> int:
    """Run the benchmarks, print the figures, write the raw numbers as JSON; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m s09_jsonl_transcript.bench", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (seconds): proves it runs")
    parser.add_argument("--json", default=None, help="where to write the raw numbers (default artifacts/bench.json)")
    parser.add_argument("--dir", default=None, help="folder for the temporary transcripts (default: system temp)")
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    json_path = Path(args.json or ("artifacts/bench-quick.json" if args.quick else "artifacts/bench.json"))
    free = shutil.disk_usage(args.dir or tempfile.gettempdir()).free
    if free < disk_needed(sizes):
        print(f"bench: needs about {disk_needed(sizes) / 2**30:.1f} GiB free in the temporary folder, "
              f"has {free / 2**30:.1f} GiB (choose another with --dir)", file=sys.stderr)
        return 2
    machine = machine_description()
    with tempfile.TemporaryDirectory(prefix="s09-bench-", dir=args.dir) as folder:
        measured = run_all(folder, sizes, progress=lambda message: print(f"  ... {message}", flush=True))
    figures = figures_from(measured, sizes)
    print("\n".join(report_lines(figures, machine, args.quick)))
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps({"machine": machine, "sizes": asdict(sizes), "quick": args.quick,
                                     "figures": [asdict(figure) for figure in figures]}, indent=2) + "\n")
    print(f"raw numbers: {json_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
