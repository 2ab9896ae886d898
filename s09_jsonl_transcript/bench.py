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
from pathlib import Path
from typing import Callable

from .code import (
    TYPE_FUNCTION_CALL,
    TYPE_FUNCTION_CALL_RESULT,
    TYPE_MESSAGE,
    TYPE_REASONING,
    JSONLTranscript,
    ticking_clock,
)
from .lab import DurableTranscript, OsFileIO, child_process_env

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
    """Seconds per single-event write, one sample per round, measured side by side.

    Keys: "append" (the lab's DurableTranscript, one fsync each), "lesson_append" (code.py's
    JSONLTranscript, the same events), "bare" (os.write + fsync of the very bytes append wrote),
    "write_only" (the same os.write with no fsync: not durable, for scale) and "sqlite_<MODE>"
    for each SQLite synchronous mode (one insert per transaction).
    """
    folder = Path(folder)
    transcript = DurableTranscript(folder / "single-append.jsonl")
    lesson = JSONLTranscript(folder / "single-lesson.jsonl")
    bare = BareLog(folder / "single-bare.jsonl")
    unsynced = BareLog(folder / "single-unsynced.jsonl")
    databases = {mode: SqliteLog(folder / f"single-{mode}.sqlite3", mode) for mode in sqlite_modes}
    events = [synthetic_event(n, text_bytes) for n in range(per_round)]
    written: list[bytes] = []  # what the last library round wrote: the others write the same bytes

    def library() -> float:
        elapsed, lines = timed_append(transcript, lambda: [transcript.append(event) for event in events])
        written[:] = lines
        return elapsed / per_round

    def lesson_loop() -> float:
        return timed(lambda: [lesson.append(event) for event in events]) / per_round

    def bare_loop() -> float:
        def write_each():
            for line in written:
                bare.write(line)
                bare.sync()
        return timed(write_each) / per_round

    def write_only() -> float:
        return timed(lambda: [unsynced.write(line) for line in written]) / per_round

    def sqlite_loop(database: SqliteLog) -> Callable[[], float]:
        return lambda: timed(lambda: [database.insert(line) for line in written]) / per_round

    measurements = {"append": library, "lesson_append": lesson_loop, "bare": bare_loop, "write_only": write_only}
    measurements.update({f"sqlite_{mode}": sqlite_loop(db) for mode, db in databases.items()})
    try:
        library()  # warm-up: opens and locks the writers, creates the files
        lesson_loop()
        return interleaved(measurements, rounds)
    finally:
        transcript.close()
        lesson.close()
        bare.close()
        unsynced.close()
        for database in databases.values():
            database.close()


def batch_costs(folder, rounds: int, batch_size: int, singles_per_round: int,
                text_bytes: int) -> dict[str, list[float]]:
    """Seconds per event, one sample per round, measured side by side.

    "append_batch": append_batch(batch_size); "dumps_batch": the fair peer, what a plain program
    does for the same group commit: json.dumps each event, one write of all the lines, one fsync;
    "bare": a loop writing the very lines append_batch wrote (already encoded: no JSON writer can
    go this fast), then one fsync; "append": single appends, one fsync each.
    """
    folder = Path(folder)
    batched = DurableTranscript(folder / "batch-append.jsonl")
    single = DurableTranscript(folder / "batch-single.jsonl")
    bare = BareLog(folder / "batch-bare.jsonl")
    plain = BareLog(folder / "batch-dumps.jsonl")
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
        def encode_all_write_once_then_sync():
            plain.write(b"".join([json.dumps(event).encode("utf-8") + b"\n" for event in events]))
            plain.sync()
        return timed(encode_all_write_once_then_sync) / batch_size

    def library_singles() -> float:
        return timed(lambda: [single.append(event) for event in events[:singles_per_round]]) / singles_per_round

    try:
        library_batch()  # warm-up
        single.append(events[0])
        return interleaved({"append_batch": library_batch, "dumps_batch": dumps_batch, "bare": bare_batch,
                            "append": library_singles}, rounds)
    finally:
        batched.close()
        single.close()
        bare.close()
        plain.close()


def replay_costs(paths: dict[str, Path], rounds: int, window: int) -> dict[str, list[float]]:
    """Seconds of replay(window) by a fresh DurableTranscript, for each named transcript, per round."""
    def replay(path):
        return lambda: timed(lambda: DurableTranscript(path).replay(window))
    return interleaved({name: replay(path) for name, path in paths.items()}, rounds)


def recover_costs(path, rounds: int) -> dict[str, list[float]]:
    """Seconds to read one file with recover() and with a bare json.loads per line, per round."""
    def bare_parse():
        with open(path, "rb") as file:
            for line in file:
                json.loads(line)
    return interleaved({"recover": lambda: timed(DurableTranscript(path).recover),
                        "json_loads": lambda: timed(bare_parse)}, rounds)


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
            return f"{self.label:<72} {self.value:8.2f}   (context, no target)"
        sign = "<=" if self.at_most else ">="
        return f"{self.label:<72} {self.value:8.2f}   target {sign} {self.bound:<5g} {'met' if self.met else 'MISSED'}"


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


def figures_from(measured: dict, sizes: Sizes) -> list[Figure]:
    """Turn the samples of run_all into the seven figures (ratios of paired samples, see paired_ratio)."""
    single, batch = measured["single"], measured["batch"]
    replay, opened, recover = measured["replay"], measured["open_append"], measured["recover"]
    memory = measured["memory"]
    extra_mb = (memory["peak_bytes"] - memory["baseline_bytes"]) / 2**20
    big, small, batch_size = f"{sizes.big_events:,}", f"{sizes.small_events:,}", sizes.batch_size

    def raw(samples):
        return {"median_seconds": medians(samples), "samples": samples}

    return [
        Figure(1, (Target("lab append (one fsync each) / bare os.write + fsync, events per s",
                          paired_ratio(single, "bare", "append"), 0.9),
                   Target("lesson append (code.py) / bare os.write + fsync, events per s",
                          paired_ratio(single, "bare", "lesson_append"), 0.9)), raw(single)),
        Figure(2, (Target(f"append_batch({batch_size}) / json.dumps each, one write, one fsync, events per s",
                          paired_ratio(batch, "dumps_batch", "append_batch"), 0.8),
                   Target(f"append_batch({batch_size}) / single append, events per s",
                          paired_ratio(batch, "append", "append_batch"), 20),
                   Target(f"append_batch({batch_size}) / bare writes of encoded bytes + one fsync",
                          paired_ratio(batch, "bare", "append_batch"))), raw(batch)),
        Figure(3, (Target("append / SQLite WAL synchronous=FULL insert, events per s",
                          paired_ratio(single, "sqlite_FULL", "append"), 1.0),), raw(single)),
        Figure(4, (Target(f"replay({sizes.window}) time, {big} events / {small} events",
                          paired_ratio(replay, "big", "small"), 1.5, at_most=True),), raw(replay)),
        Figure(5, (Target(f"open + append one event time, {big} events / empty",
                          paired_ratio(opened, "big", "empty"), 2.0, at_most=True),), raw(opened)),
        Figure(6, (Target("recover() / bare json.loads per line, lines per s",
                          paired_ratio(recover, "json_loads", "recover"), 0.9),), raw(recover)),
        Figure(7, (Target(f"replay({sizes.window}) peak memory above baseline, MB "
                          f"({measured['big_bytes'] / 2**30:.2f} GiB file)", extra_mb, 50, at_most=True),), memory),
    ]


def run_all(folder, sizes: Sizes, progress: Callable[[str], None] = lambda message: None) -> dict:
    """Measure everything the seven figures need, in folder (which must be empty and is left full)."""
    folder = Path(folder)
    measured = {}
    progress("single appends vs bare writes vs SQLite")
    measured["single"] = single_write_costs(folder, sizes.single_rounds, sizes.single_per_round, sizes.text_bytes)
    progress("batches")
    measured["batch"] = batch_costs(folder, sizes.batch_rounds, sizes.batch_size, sizes.single_per_round,
                                    sizes.text_bytes)
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
    progress(f"recover() over {sizes.recover_events:,} events")
    recover_path = folder / "recover.jsonl"
    write_bulk_transcript(recover_path, sizes.recover_events, sizes.text_bytes)
    measured["recover"] = recover_costs(recover_path, sizes.recover_rounds)
    return measured


def machine_description() -> dict:
    """What the figures were measured on."""
    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
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
              f"\nmachine: {machine['platform']}, {machine['cpus']} CPUs, Python {machine['python']}, "
              f"SQLite {machine['sqlite']}, load average at start {machine['load_average']}")
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
