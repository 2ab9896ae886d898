"""One function per measured cost: single appends, batches, replay, recover, open-and-append, and
replay's peak memory in a fresh interpreter."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from ..code import (
    JSONLTranscript,
)
from ..crashlab.children import child_process_env
from ..lab import DurableTranscript, fast
from .sides import BareLog, FsyncTimed, SameBytesPeer, SqliteLog, WithoutTheFileCheck
from .stats import balanced_orders, interleaved, timed
from .workload import synthetic_event


def timed_append(transcript: DurableTranscript, action: Callable[[], object]) -> tuple[float, list[bytes]]:
    """Seconds action took, and the complete lines (with newlines) it added to the transcript's file."""
    start = transcript.path.stat().st_size if transcript.path.exists() else 0
    elapsed = timed(action)
    with open(transcript.path, "rb") as file:
        file.seek(start)
        *lines, _ = file.read().split(b"\n")  # split on newline only: records never contain one
    return elapsed, [line + b"\n" for line in lines]


def _using(decoder: str, side: Callable[[int], None]) -> Callable[[int], None]:
    """side, run with the lab's fast paths using decoder (switched outside the side's timing)."""
    def run(index: int) -> None:
        with fast.decoding_with(decoder):
            side(index)
    return run


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
