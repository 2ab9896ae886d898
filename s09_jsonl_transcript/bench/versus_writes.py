"""A writer's open and an append of this checkout against another commit's, paired and interleaved in one run
(issue 53: its work may add at most 2 µs per append and at most 10% to a writer's open).

    python -m s09_jsonl_transcript.bench.versus_writes [REV] [--events N] [--rounds N] [--opens N]
                                                       [--appends N] [--dir DIR]

REV (default HEAD~1) is loaded as bench.versus loads it (git archive, under another package name). A
round runs a few operations of every side, one operation of each side in turn, in balanced orders
(stats.balanced_orders: no side always follows the same one), and each side's figure for the round is
the median of its operations' times (a rare stall of the shared disk moves a mean, not a median):

  - open: DurableTranscript(path).acquire_writer() then close(), on one transcript of N events whose
    writer closed it cleanly, by this build and by REV's; and by this build after a crash: its clean
    close's mark (lab.device.SETTLED) removed before each open, outside the timing, so that the open
    reads the end from the device. The open after a crash is reported with its ratio to REV's, and
    with what the device read adds, without a verdict: it is the road after a crash, not the usual one;
  - append, fsync: one append of the same event on an open writer, fsync included, each build on its
    own file;
  - append, CPU: the same, with the crash lab's SimulatedSyncFileIO (its fsync does nothing), which
    leaves the code's own cost without the disk's.

For the open, the verdict is on the paired ratio this / REV against 1.10; for an append, on the paired
difference this - REV in microseconds against +2. "within" when the 95% interval of the median lies
under the bound, "over" when it lies above, "undecided" otherwise: the spread does not decide. The load
average is printed before and after. Exit status 1 when a verdict is "over".
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Callable

from .. import lab
from ..crashlab.powerloss import SimulatedSyncFileIO
from ..lab import device
from .stats import balanced_orders, median_interval
from .versus import exported
from .workload import synthetic_event, write_bulk_transcript

OPEN_BOUND = 1.10  # a writer's open may take at most 10% longer than REV's
APPEND_BOUND_US = 2.0  # an append may take at most 2 microseconds longer than REV's


@dataclass(frozen=True)
class Verdict:
    """One paired comparison: the per-round values (ratios or differences) and the bound they are held to."""

    name: str
    values: list
    bound: float
    unit: str  # "x" for a ratio, "us" for a difference in microseconds

    def verdict(self) -> str:
        """"within" when the 95% interval of the median lies under the bound, "over" when above it,
        else "undecided"."""
        low, high = median_interval(self.values)
        return "within" if high < self.bound else "over" if low > self.bound else "undecided"

    def line(self) -> str:
        """The report's line for this comparison."""
        low, high = median_interval(self.values)
        bound = f"{self.bound:.2f}x" if self.unit == "x" else f"+{self.bound:.1f} us"
        figures = (f"{statistics.median(self.values):.3f}x, 95% interval {low:.3f} to {high:.3f}" if self.unit == "x"
                   else f"{statistics.median(self.values):+.2f} us, 95% interval {low:+.2f} to {high:+.2f}")
        return f"  {self.name}: median {figures} over {len(self.values)} rounds: {self.verdict()} {bound}"


def seconds(action: Callable[[], object]) -> float:
    """The wall-clock seconds of one call of action."""
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def open_sides(other: ModuleType, path: Path) -> dict[str, Callable[[], float]]:
    """The open's three sides: seconds of one writer's open and close on path."""
    def opened(module: ModuleType) -> Callable[[], None]:
        def open_and_close() -> None:
            writer = module.DurableTranscript(path)
            writer.acquire_writer()
            writer.close()
        return open_and_close

    def after_a_crash() -> float:
        try:
            os.removexattr(path, device.SETTLED)  # as a writer that crashed leaves it: no mark of a clean close
        except OSError:
            pass
        return seconds(opened(lab))

    opened(lab)()  # a clean close by this build: the file carries its mark
    return {"this": lambda: seconds(opened(lab)), "other": lambda: seconds(opened(other)),
            "this, after a crash": after_a_crash}


def append_sides(other: ModuleType, folder: Path, text_bytes: int,
                 simulated_sync: bool) -> tuple[dict[str, Callable[[], float]], list]:
    """An append's two sides (this build, REV's), each on its own open writer; and the writers, to close."""
    event = synthetic_event(1, text_bytes)
    kind = "cpu" if simulated_sync else "fsync"
    writers = []
    for name, module in (("this", lab), ("other", other)):
        file_io = SimulatedSyncFileIO() if simulated_sync else None
        writer = module.DurableTranscript(folder / f"append-{kind}-{name}.jsonl", file_io=file_io)
        writer.append(event)  # opened, locked, its end read: from now on appends only
        writers.append(writer)
    this_writer, other_writer = writers
    return ({"this": lambda: seconds(lambda: this_writer.append(event)),
             "other": lambda: seconds(lambda: other_writer.append(event))}, writers)


def run_rounds(sides: dict[str, Callable[[], float]], rounds: int, per_round: int) -> dict[str, list[float]]:
    """Rounds of per_round operations of each side, one of each side in turn, in balanced orders; per
    side, the median seconds of its operations in each round."""
    orders = balanced_orders(list(sides))
    samples = {name: [] for name in sides}
    for _ in range(rounds):
        gc.collect()
        times = {name: [] for name in sides}
        for turn in range(per_round):
            for name in orders[turn % len(orders)]:
                times[name].append(sides[name]())
        for name, measured in times.items():
            samples[name].append(statistics.median(measured))
    return samples


def compare(other: ModuleType, folder: Path, args) -> tuple[list[Verdict], dict, list[str]]:
    """Run the comparisons; return their verdicts, the medians of the raw figures (microseconds) and the
    report's line on the open after a crash (no verdict)."""
    path = folder / "open.jsonl"
    write_bulk_transcript(path, args.events, args.text_bytes)
    opened = run_rounds(open_sides(other, path), args.rounds, args.opens)
    verdicts = [Verdict("a writer's open, this / REV", [a / b for a, b in zip(opened["this"], opened["other"])],
                        OPEN_BOUND, "x")]
    raw = {f"open, {name}": statistics.median(values) * 1e6 for name, values in opened.items()}
    crashed = [a / b for a, b in zip(opened["this, after a crash"], opened["other"])]
    low, high = median_interval(crashed)
    added = statistics.median(a - b for a, b in zip(opened["this, after a crash"], opened["this"])) * 1e6
    notes = [f"  a writer's open after a crash (the end read from the device), this / REV: median "
             f"{statistics.median(crashed):.3f}x, 95% interval {low:.3f} to {high:.3f}; the device read adds "
             f"{added:.1f} us (no verdict: the road after a crash)"]
    for simulated, label, appends in ((True, "an append, CPU (fsync simulated)", args.appends * 10),
                                      (False, "an append, fsync", args.appends)):
        sides, writers = append_sides(other, folder, args.text_bytes, simulated)
        try:
            measured = run_rounds(sides, args.rounds, appends)
        finally:
            for writer in writers:
                writer.close()
        differences = [(a - b) * 1e6 for a, b in zip(measured["this"], measured["other"])]
        verdicts.append(Verdict(f"{label}, this - REV", differences, APPEND_BOUND_US, "us"))
        raw.update({f"{label}, {name}": statistics.median(values) * 1e6 for name, values in measured.items()})
    return verdicts, raw, notes


def main(argv=None) -> int:
    """Run the comparisons; exit 1 when a verdict is "over"."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rev", nargs="?", default="HEAD~1", help="the commit to compare with (default HEAD~1)")
    parser.add_argument("--events", type=int, default=10_000, help="events in the opened transcript (10,000)")
    parser.add_argument("--rounds", type=int, default=101, help="paired rounds per comparison (default 101)")
    parser.add_argument("--opens", type=int, default=24, help="opens per side per round (default 24)")
    parser.add_argument("--appends", type=int, default=12, help="synced appends per side per round (default 12; "
                                                                   "ten times as many with fsync simulated)")
    parser.add_argument("--text-bytes", type=int, default=200, help="characters of text per event (default 200)")
    parser.add_argument("--dir", help="where the temporary files go (default: the system's temporary folder)")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="s09-versus-writes-", dir=args.dir) as scratch:
        folder = Path(scratch)
        (folder / "other").mkdir()
        other = exported(args.rev, folder / "other", "s09_other_writes")
        verdicts, raw, notes = compare(other, folder, args)
        shutil.rmtree(folder / "other")
    load_after = os.getloadavg()
    lines = [f"a writer's open ({args.events:,} events) and an append, this checkout against {args.rev}, paired "
             f"rounds in balanced orders, one run:"]
    lines += [verdict.line() for verdict in verdicts] + notes
    lines.append("  medians per operation: " + "; ".join(f"{name} {value:.1f} us" for name, value in raw.items()))
    lines.append(f"  load average before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, after "
                 f"{load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")
    print("\n".join(lines))
    return 1 if any(verdict.verdict() == "over" for verdict in verdicts) else 0


if __name__ == "__main__":
    raise SystemExit(main())
