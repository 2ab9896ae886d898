"""Benchmarks: the lesson's transcript measured against bare baselines and fair peers, as ratios.

    python -m s09_jsonl_transcript.bench            full sizes: 1,000,000 events, about 1 GB (half a minute or more)
    python -m s09_jsonl_transcript.bench --quick    small sizes, a second or two (the test suite runs this)
    options: --json FILE (raw numbers; default artifacts/bench.json), --dir DIR (where the temporary
             transcripts go; default the system's temporary folder; about 2.5 GB free are needed)

Absolute times depend on the machine and on whatever else it is running, so every figure is a
ratio (or a difference) of two measurements taken in the same run, on the same disk, interleaved
A, B, A, B, ...: the median over rounds of the ratio within each round, printed with its spread
(the quartiles of the rounds) and the interval that holds the median with 95% confidence. A
target is met or missed only when that interval lies on one side of its bound; otherwise the
report says the run's spread is too wide to decide. Figure 1 measures the lab's append against
its floor, a plain writer of the same bytes that is frozen here (SameBytesPeer: no code of the
kit's), each side taking its turn for every event. The large transcripts are written by the
library's own append_batch without the per-write fsync (one at the end), in a temporary folder
that is removed afterwards.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
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
from json.encoder import c_make_encoder, encode_basestring
from pathlib import Path
from typing import Callable

from . import fast
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


# Figure 1: 100 rounds of 24 events (a multiple of its 8 or 12 sides: each order of balanced_orders
# runs equally often in a round). Figure 6: 31 rounds of 50,000 lines, short enough that both
# sides of a round meet the same load.
FULL = Sizes(single_rounds=100, single_per_round=24, batch_rounds=40, batch_size=100,
             big_events=1_000_000, small_events=10_000, text_bytes=900, read_rounds=21,
             recover_events=50_000, recover_rounds=31)
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


def balanced_orders(names: list[str]) -> list[list[str]]:
    """Orders in which to run names, one order per event, so that across them each name runs right
    after each other name equally often (a Williams design), and first and last equally often.

    What ran just before a side colours its time (a heavy neighbour empties the caches), so no
    side may have the same neighbour more often than another side does.
    """
    n = len(names)
    first = [0] + [(j + 1) // 2 if j % 2 else n - j // 2 for j in range(1, n)]  # 0, 1, n-1, 2, n-2, ...
    orders = [[names[(position + shift) % n] for position in first] for shift in range(n)]
    return orders if n % 2 == 0 else orders + [order[::-1] for order in orders]


def paired_ratios(samples: dict[str, list[float]], numerator: str, denominator: str) -> list[float]:
    """numerator / denominator in each round, each pair measured in the same round.

    Pairing cancels load that changes from one round to the next.
    """
    return [a / b for a, b in zip(samples[numerator], samples[denominator])]


def paired_differences(samples: dict[str, list[float]], minuend: str, subtrahend: str) -> list[float]:
    """minuend - subtrahend in each round, each pair measured in the same round."""
    return [a - b for a, b in zip(samples[minuend], samples[subtrahend])]


def paired_ratio(samples: dict[str, list[float]], numerator: str, denominator: str) -> float:
    """The median over rounds of numerator / denominator, each pair measured in the same round."""
    return statistics.median(paired_ratios(samples, numerator, denominator))


def paired_difference(samples: dict[str, list[float]], minuend: str, subtrahend: str) -> float:
    """The median over rounds of minuend - subtrahend, each pair measured in the same round."""
    return statistics.median(paired_differences(samples, minuend, subtrahend))


CONFIDENCE = 0.95  # of the interval that must lie on one side of a target's bound for a verdict


def median_interval(values, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """An interval that holds the median of what was sampled with at least that confidence (or
    from the least to the greatest value, when there are too few values for it).

    Distribution-free: the k-th smallest and the k-th largest of n values, for the largest k
    such that fewer than k values fall below the median with a chance of at most
    (1 - confidence) / 2, each value falling below it with a chance of one half.
    """
    ordered = sorted(values)
    n = len(ordered)
    if not n:
        raise ValueError("no values")

    def fewer_below(k: int) -> float:  # the chance that fewer than k of the n values fall below the median
        return sum(math.comb(n, i) for i in range(k)) / 2**n

    k = 1
    while k + 1 <= (n + 1) // 2 and 1 - 2 * fewer_below(k + 1) >= confidence:
        k += 1
    return ordered[k - 1], ordered[n - k]


def quartiles(values) -> tuple[float, float]:
    """The first and third quartile of values: their spread."""
    if len(values) < 2:
        return values[0], values[0]
    first, _, third = statistics.quantiles(values, n=4, method="inclusive")
    return first, third


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

    def warm_up(self, line: bytes, *, chunk: int = 50) -> int:
        """Insert line until the write-ahead log stops growing (SQLite has checkpointed it and writes
        over it from its start, as it does from then on), then delete those rows; return how many.

        A fresh database's first commits grow the log, and a commit that grows a file costs more
        than one that writes over it: figure 3 compares the lab with SQLite as it runs for good.
        """
        log = Path(self.connection.execute("PRAGMA database_list").fetchone()[2] + "-wal")
        pages = self.connection.execute("PRAGMA wal_autocheckpoint").fetchone()[0]
        inserted, size = 0, -1
        while inserted < 4 * pages and log.stat().st_size != size:  # a chunk that did not grow it: written over
            size = log.stat().st_size
            for _ in range(chunk):
                self.insert(line)
            inserted += chunk
        self.connection.execute("DELETE FROM events")
        return inserted

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


def single_write_costs(folder, rounds: int, per_round: int, text_bytes: int, sqlite_modes=("FULL",),
                       decoders: list[str] | None = None) -> dict[str, list[float]]:
    """Seconds per single-event write, one sample per round (the mean of its events), side by side.

    For each decoder d (default: every one installed), the lab's fast paths using it:
    "append[d]" (the lab's DurableTranscript, one fsync each) and "plain_writer[d]" (figure 1's
    floor: SameBytesPeer with d's own encoder, the same record stamped, encoded, written and
    synced, with no checks, and no code of the kit's), and issue 43's pair: "checked[d]" (the
    lab's append as it is) and "unchecked[d]" (WithoutTheFileCheck: its per-append check turned
    off), each through FsyncTimed, with "checked_work[d]" and "unchecked_work[d]" their seconds
    outside fsync. Besides: "lesson_append" (code.py's JSONLTranscript, the same events), "bare"
    (os.write + fsync of the bytes the first decoder's append wrote for that event), "fsync" (the
    fsync alone, inside "bare"), "write_only" (the same os.write with no fsync: not durable, for
    scale) and "sqlite_<MODE>" for each SQLite synchronous mode (one insert per transaction). The
    sides take turns for every event, in balanced_orders: each side runs as often right after
    each other side (a heavy one such as SQLite's empties the caches the next one finds).
    """
    folder = Path(folder)
    decoders = decoders or available_decoders()
    lesson = JSONLTranscript(folder / "single-lesson.jsonl")
    bare = BareLog(folder / "single-bare.jsonl")
    unsynced = BareLog(folder / "single-unsynced.jsonl")
    databases = {mode: SqliteLog(folder / f"single-{mode}.sqlite3", mode) for mode in sqlite_modes}
    events = [synthetic_event(n, text_bytes) for n in range(per_round)]
    written: list[bytes] = [b""] * per_round  # the line append last wrote for each event: the others write it too
    spent: dict[str, float] = {}
    writers: list = [lesson, bare, unsynced, *databases.values()]  # closed at the end
    descriptors: list[int] = []
    sides: dict[str, Callable[[int], None]] = {}
    measured_only: list[str] = ["fsync"]  # parts of a side's time, not sides

    def decoder_sides(decoder: str) -> Callable[[], None]:
        """Add decoder's four sides; return their warm-up."""
        room = folder / decoder  # the same file names in each room: the same session id, the same bytes
        room.mkdir(exist_ok=True)
        transcript = DurableTranscript(room / "single-append.jsonl")
        pair = {"checked": DurableTranscript(room / "single-checked.jsonl", file_io=FsyncTimed()),
                "unchecked": WithoutTheFileCheck(room / "single-unchecked.jsonl", file_io=FsyncTimed())}
        # the lab's session id and sequences (after the warm-up), so the lines are the lab's
        plain = SameBytesPeer(room / "single-plain.jsonl", transcript.session_id, per_round + 1, encoder=decoder)
        writers.extend([transcript, *pair.values(), plain])
        reader = os.open(transcript.path, os.O_RDONLY | os.O_CREAT, 0o600)  # the lines append wrote, read back
        descriptors.append(reader)
        offset = 0
        first = decoder == decoders[0]

        def library(index: int) -> None:
            nonlocal offset
            spent[f"append[{decoder}]"] += timed(lambda: transcript.append(events[index]))
            line = os.pread(reader, 1 << 24, offset)  # read after the timing, and without the path
            offset += len(line)
            if first:
                written[index] = line

        def plain_writer(index: int) -> None:
            spent[f"plain_writer[{decoder}]"] += timed(lambda: plain.append(events[index]))

        def issue_43_side(name: str) -> Callable[[int], None]:
            writer = pair[name]

            def append(index: int) -> None:
                synced_before = writer.file_io.seconds
                elapsed = timed(lambda: writer.append(events[index]))
                spent[f"{name}[{decoder}]"] += elapsed
                spent[f"{name}_work[{decoder}]"] += elapsed - (writer.file_io.seconds - synced_before)
            return append

        for name, side in {"append": library, "plain_writer": plain_writer, "checked": issue_43_side("checked"),
                           "unchecked": issue_43_side("unchecked")}.items():
            sides[f"{name}[{decoder}]"] = _using(decoder, side)
        measured_only.extend([f"checked_work[{decoder}]", f"unchecked_work[{decoder}]"])

        def warm_up() -> None:  # opens and locks the writers, learns each event's line
            spent[f"append[{decoder}]"] = 0.0
            for index in range(per_round):
                sides[f"append[{decoder}]"](index)
                with fast.decoding_with(decoder):
                    for writer in pair.values():
                        writer.append(events[index])
        return warm_up

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

    def write_only(index: int) -> None:
        spent["write_only"] += timed(lambda: unsynced.write(written[index]))

    def sqlite_side(mode: str, database: SqliteLog) -> Callable[[int], None]:
        def insert(index: int) -> None:
            spent[f"sqlite_{mode}"] += timed(lambda: database.insert(written[index]))
        return insert

    try:
        warm_ups = [decoder_sides(decoder) for decoder in decoders]
        sides.update({"lesson_append": lesson_side, "bare": bare_side, "write_only": write_only})
        sides.update({f"sqlite_{mode}": sqlite_side(mode, db) for mode, db in databases.items()})
        names = list(sides)

        orders = itertools.cycle(balanced_orders(names))  # one order per event, on from round to round

        def one_round() -> dict[str, float]:
            spent.clear()
            spent.update({name: 0.0 for name in [*names, *measured_only]})
            for index in range(per_round):
                for name in next(orders):
                    sides[name](index)
            return {name: seconds / per_round for name, seconds in spent.items()}

        for warm_up in warm_ups:
            warm_up()
        for database in databases.values():
            database.warm_up(written[0])
        for event in events:
            lesson.append(event)
        samples: dict[str, list[float]] = {name: [] for name in [*names, *measured_only]}
        for _ in range(rounds):
            for name, seconds in one_round().items():
                samples[name].append(seconds)
        return samples
    finally:
        for writer in writers:
            writer.close()
        for descriptor in descriptors:
            os.close(descriptor)


def _using(decoder: str, side: Callable[[int], None]) -> Callable[[int], None]:
    """side, run with the lab's fast paths using decoder (switched outside the side's timing)."""
    def run(index: int) -> None:
        with fast.decoding_with(decoder):
            side(index)
    return run


class SameBytesPeer:
    """The fair peer: what a plain program writes for the same group commit, or the same single event.

    The same records as the lab's (its envelope, batch_end, the payload) with one encoder: "dumps"
    (json.dumps with the lab's separators, a call a record: figure 2's peer), "stdlib" (the
    standard library's C encoder with the same options, made once) or "msgspec" (made once); all
    lines in one write, one fsync:
    the same bytes as the lab's file, but for recorded_at (another moment). No checks, no lock,
    no writer check. It is figure 1's floor, so it is frozen: it builds its envelope, its stamp
    and its encoder here and calls no code of the kit's (not the lab's, not the lesson's), so a
    change to the lab never moves it. tests/test_bench.py checks its bytes against the lab's.
    """

    def __init__(self, path, session_id: str, first_sequence: int = 1, encoder: str = "dumps"):
        self.log = BareLog(path)
        self.session_id, self.next_sequence = session_id, first_sequence
        self.encode = PEER_ENCODERS[encoder]()
        self._second, self._date_and_time = None, ""  # the stamp's whole second, and its text

    def stamp(self) -> str:
        """Now in UTC as datetime.now(timezone.utc).isoformat() writes it, the date and time of day
        formatted once a second: the cheapest stamp of the lab's form."""
        micros = time.time_ns() // 1000
        second, micro = divmod(micros, 1_000_000)
        if second != self._second:
            self._second, self._date_and_time = second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        return f"{self._date_and_time}.{micro:06d}+00:00" if micro else f"{self._date_and_time}+00:00"

    def record(self, sequence: int, event: dict, recorded_at: str, batch_end: int | None = None) -> dict:
        """The lab's record of event at sequence: the envelope, batch_end if given, then the payload."""
        batch = {} if batch_end is None else {"batch_end": batch_end}
        return {"schema_version": 1, "sequence": sequence, "event_id": f"transcript:{self.session_id}:{sequence}",
                "session_id": self.session_id, "recorded_at": recorded_at, **batch, **event}

    def append_batch(self, events: list) -> None:
        """Encode the batch's records, write them once and fsync once."""
        first, last = self.next_sequence, self.next_sequence + len(events) - 1
        recorded_at = self.stamp()
        records = [self.record(sequence, event, recorded_at, batch_end=last)
                   for sequence, event in enumerate(events, start=first)]
        self.log.write(b"".join([self.encode(record) + b"\n" for record in records]))
        self.log.sync()
        self.next_sequence = last + 1

    def append(self, event: dict) -> None:
        """One record, stamped now, in one write and one fsync: figure 1's plain writer, its floor."""
        sequence = self.next_sequence
        self.log.write(self.encode(self.record(sequence, event, self.stamp())) + b"\n")
        self.log.sync()
        self.next_sequence = sequence + 1

    def close(self) -> None:
        """Release the descriptor."""
        self.log.close()


def _dumps_encoder() -> Callable[[dict], bytes]:
    """json.dumps with the lab's options, called for each record (it builds an encoder a call)."""
    return lambda record: json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _stdlib_encoder() -> Callable[[dict], bytes]:
    """The standard library's C encoder with the lab's options (UTF-8 unescaped, no NaN, no spaces), made once."""
    encode = c_make_encoder(None, _not_json, encode_basestring, None, ":", ",", False, False, False)
    return lambda record: "".join(encode(record, 0)).encode("utf-8")


def _not_json(value):
    raise TypeError(f"{type(value).__name__} is not a JSON type")


def _msgspec_encoder() -> Callable[[dict], bytes]:
    """msgspec's JSON encoder, made once (it writes the lab's bytes for a record without floats)."""
    import msgspec  # the optional `fast` extra: only asked for when installed

    return msgspec.json.Encoder().encode


PEER_ENCODERS = {"dumps": _dumps_encoder, "stdlib": _stdlib_encoder, "msgspec": _msgspec_encoder}


def batch_costs(folder, rounds: int, batch_size: int, singles_per_round: int,
                text_bytes: int, peer_encoder: str = "dumps") -> dict[str, list[float]]:
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
    """One measured figure (the median over rounds of a paired ratio or difference) and the bound the
    issue sets for it.

    With the rounds' values, a verdict needs the median's 95% interval (median_interval) on one
    side of the bound; where the interval holds the bound, the run's spread is too wide to decide.
    """

    label: str
    value: float
    bound: float | None = None  # None: shown for context, no target
    at_most: bool = False  # False: the value must be at least the bound
    rounds: tuple = ()  # the value of each round (value is their median); empty: one measurement

    @property
    def interval(self) -> tuple[float, float]:
        """Where the median lies with 95% confidence, from the rounds (the value itself without them)."""
        return median_interval(self.rounds) if self.rounds else (self.value, self.value)

    @property
    def verdict(self) -> str:
        """"met", "MISSED", "undecided" (the median's interval holds the bound) or "context" (no bound)."""
        if self.bound is None:
            return "context"
        low, high = self.interval
        if self.at_most:
            low, high = -high, -low  # at most b is -value at least -b
        bound = -self.bound if self.at_most else self.bound
        if low >= bound:
            return "met"
        return "MISSED" if high < bound else "undecided"

    @property
    def met(self) -> bool:
        """Whether the value is on the right side of the bound, decidedly (a context line always is)."""
        return self.verdict in ("met", "context")

    def __str__(self):
        spread = ""
        if len(self.rounds) > 1:
            (first, third), (low, high) = quartiles(self.rounds), self.interval
            spread = f"  quartiles {first:.2f}..{third:.2f}, median's 95% interval {low:.2f}..{high:.2f}"
        text = f"{self.label:<86} {self.value:8.2f}{spread}"
        if self.bound is None:
            return f"{text}   (context, no target)"
        verdict = {"undecided": "UNDECIDED: the spread is too wide to decide"}.get(self.verdict, self.verdict)
        return f"{text}   target {'<=' if self.at_most else '>='} {self.bound:g} {verdict}"


def target(label: str, rounds: list[float], bound: float | None = None, at_most: bool = False,
           scale: float = 1.0) -> Target:
    """A Target whose value is the median of rounds (each multiplied by scale: 1e6 for microseconds)."""
    scaled = tuple(value * scale for value in rounds)
    return Target(label, statistics.median(scaled), bound, at_most, scaled)


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


# The issues' goals for each decoder: append / its floor (issue 45), µs append adds to its floor
# (None: context), batch / same-bytes peer and recover / json.loads (issue 29)
GOALS = {"stdlib": (0.97, 15, 1.0, 1.15), "msgspec": (0.97, None, 1.3, 2.2)}
OWN_DECODER_GOAL = 0.85  # msgspec: recover() / a bare loop of msgspec's own decode
CHECK_GOAL_US = 3  # issue 43: what its check adds to each append
US = 1e6


def single_targets(single: dict, decoders: list[str]) -> list[Target]:
    """Figure 1: for each decoder, the lab's append against its floor (the plain writer of the same
    bytes), the bare write + fsync as information, and issue 43's check before and after."""
    lines = []
    for name in decoders:
        append, plain = f"append[{name}]", f"plain_writer[{name}]"
        floor_goal, added_goal = GOALS[name][:2]
        fsync_us = statistics.median(single["fsync"]) * US
        lines += [
            target(f"[{name}] lab append / the plain writer of the same bytes (its floor), events per s",
                   paired_ratios(single, plain, append), floor_goal),
            target(f"[{name}] us the lab's append adds to the plain writer",
                   paired_differences(single, append, plain), added_goal, at_most=True, scale=US),
            target(f"[{name}] lab append / bare os.write + fsync, events per s (median fsync {fsync_us:.0f} us)",
                   paired_ratios(single, "bare", append)),
            target(f"[{name}] us the lab's append adds to each bare write + fsync",
                   paired_differences(single, append, "bare"), scale=US),
            target(f"[{name}] us the plain writer adds to each bare write + fsync",
                   paired_differences(single, plain, "bare"), scale=US)]
    if len(decoders) > 1:
        first, *others = decoders
        for name in others:
            ratios = [(p / a) / (first_p / first_a) for p, a, first_p, first_a in zip(
                single[f"plain_writer[{name}]"], single[f"append[{name}]"],
                single[f"plain_writer[{first}]"], single[f"append[{first}]"])]
            lines.append(target(f"[{name}] its append / floor ratio over [{first}]'s, paired by round",
                                ratios, 1.0))
    for name in decoders:
        if f"checked[{name}]" not in single:
            continue
        checked, unchecked = f"checked[{name}]", f"unchecked[{name}]"
        lines += [  # issue 43: the same append with and without its check, side by side
            target(f"[{name}] us the lab's append adds to the plain writer, before issue 43's check",
                   paired_differences(single, unchecked, f"plain_writer[{name}]"), scale=US),
            target(f"[{name}] us the lab's append adds to the plain writer, after it",
                   paired_differences(single, checked, f"plain_writer[{name}]"), scale=US),
            target(f"[{name}] us issue 43's check adds to each append (after - before, paired by round)",
                   paired_differences(single, checked, unchecked), CHECK_GOAL_US, at_most=True, scale=US),
            target(f"[{name}] us the check adds outside the fsync (each side's time less its fsync's)",
                   paired_differences(single, f"checked_work[{name}]", f"unchecked_work[{name}]"), scale=US)]
    lines.append(target("lesson append (code.py) / bare os.write + fsync, events per s",
                        paired_ratios(single, "bare", "lesson_append"), 0.9))
    return lines


def figures_from(measured: dict, sizes: Sizes) -> list[Figure]:
    """Turn the samples of run_all into the seven figures (ratios of paired samples, see paired_ratio).

    Figures 1, 2 and 6 depend on the decoder the lab's fast paths use: they hold lines for each.
    """
    by_decoder, single = measured["decoders"], measured["single"]
    decoders = list(by_decoder)
    replay, opened, memory = measured["replay"], measured["open_append"], measured["memory"]
    extra_mb = (memory["peak_bytes"] - memory["baseline_bytes"]) / 2**20
    big, small, batch_size = f"{sizes.big_events:,}", f"{sizes.small_events:,}", sizes.batch_size

    def raw(samples):
        return {"median_seconds": medians(samples), "samples": samples}

    batch_lines, recover_lines = [], []
    for name, samples in by_decoder.items():
        batch, recover = samples["batch"], samples["recover"]
        batch_goal, recover_goal = GOALS[name][2:]
        batch_lines += [
            target(f"[{name}] append_batch({batch_size}) / same bytes by json.dumps each, one write, one fsync",
                   paired_ratios(batch, "dumps_batch", "append_batch"), batch_goal),
            target(f"[{name}] append_batch({batch_size}) / single append, events per s",
                   paired_ratios(batch, "append", "append_batch"), 20),
            target(f"[{name}] append_batch({batch_size}) / bare writes of encoded bytes + one fsync",
                   paired_ratios(batch, "bare", "append_batch"))]
        recover_lines.append(target(f"[{name}] recover() / bare json.loads per line, lines per s",
                                    paired_ratios(recover, "json_loads", "recover"), recover_goal))
        if "own_decoder" in recover:
            recover_lines.append(target(f"[{name}] recover() / bare loop of its own decoder, lines per s",
                                        paired_ratios(recover, "own_decoder", "recover"), OWN_DECODER_GOAL))
    return [
        Figure(1, tuple(single_targets(single, decoders)), raw(single)),
        Figure(2, tuple(batch_lines), {name: raw(samples["batch"]) for name, samples in by_decoder.items()}),
        Figure(3, (target("append / SQLite WAL synchronous=FULL insert, events per s",
                          paired_ratios(single, "sqlite_FULL", f"append[{decoders[0]}]"), 1.0),), raw(single)),
        Figure(4, (target(f"replay({sizes.window}) time, {big} events / {small} events",
                          paired_ratios(replay, "big", "small"), 1.5, at_most=True),), raw(replay)),
        Figure(5, (target(f"open + append one event time, {big} events / empty",
                          paired_ratios(opened, "big", "empty"), 2.0, at_most=True),), raw(opened)),
        Figure(6, tuple(recover_lines), {name: raw(samples["recover"]) for name, samples in by_decoder.items()}),
        Figure(7, (Target(f"replay({sizes.window}) peak memory above baseline, MB "
                          f"({measured['big_bytes'] / 2**30:.2f} GiB file)", extra_mb, 50, at_most=True),), memory),
    ]


def run_all(folder, sizes: Sizes, progress: Callable[[str], None] = lambda message: None,
            decoders: list[str] | None = None) -> dict:
    """Measure everything the seven figures need, in folder (which must be empty and is left full).

    Figures 1, 2 and 6 are measured for each decoder (default: every one installed); figure 1's
    sides for all of them take turns in one loop.
    """
    folder = Path(folder)
    decoders = decoders or available_decoders()
    measured = {"decoders": {}}
    progress(f"single appends ({', '.join(decoders)}) vs their plain writers vs bare writes vs SQLite")
    (folder / "single").mkdir()
    measured["single"] = single_write_costs(folder / "single", sizes.single_rounds, sizes.single_per_round,
                                            sizes.text_bytes, decoders=decoders)
    recover_path = folder / "recover.jsonl"
    progress(f"writing a {sizes.recover_events:,}-event transcript for recover()")
    write_bulk_transcript(recover_path, sizes.recover_events, sizes.text_bytes)
    for name in decoders:
        with fast.decoding_with(name):
            room = folder / name
            room.mkdir()
            progress(f"[{name}] batches")
            batch = batch_costs(room, sizes.batch_rounds, sizes.batch_size, sizes.single_per_round, sizes.text_bytes)
            progress(f"[{name}] recover() over {sizes.recover_events:,} events, {sizes.recover_rounds} rounds")
            recover = recover_costs(recover_path, sizes.recover_rounds, name)
            measured["decoders"][name] = {"batch": batch, "recover": recover}
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
    """The printed report: one line per target, then how many were met, missed and left undecided."""
    sizes = "quick sizes: proves the code runs, not the targets" if quick else "full sizes"
    header = (f"s09 transcript benchmarks ({sizes})"
              f"\nmachine: {machine['platform']}, {machine['cpus']} CPUs ({machine['cpu']}), "
              f"Python {machine['python']}, SQLite {machine['sqlite']}, "
              f"load average at start {machine['load_average']}")
    if machine.get("load_average_at_end") is not None:
        header += f", at the end {machine['load_average_at_end']}"
    lines = [header]
    for figure in figures:
        for index, line in enumerate(figure.targets):
            lines.append(f"{figure.number if index == 0 else ' '}. {line}")
    verdicts = [line.verdict for figure in figures for line in figure.targets if line.bound is not None]
    lines.append(f"{verdicts.count('met')} of {len(verdicts)} targets met, {verdicts.count('MISSED')} missed, "
                 f"{verdicts.count('undecided')} undecided (the run's spread too wide to decide)")
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
    machine["load_average_at_end"] = machine_description()["load_average"]
    figures = figures_from(measured, sizes)
    print("\n".join(report_lines(figures, machine, args.quick)))
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps({"machine": machine, "sizes": asdict(sizes), "quick": args.quick,
                                     "figures": [asdict(figure) for figure in figures]}, indent=2) + "\n")
    print(f"raw numbers: {json_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
