"""The whole benchmark: run every figure, describe the machine, print the report (python -m
s09_jsonl_transcript.bench)."""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sqlite3
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Callable

from ..lab import fast
from .costs import (
    available_decoders,
    batch_costs,
    open_and_append_costs,
    recover_costs,
    replay_costs,
    replay_peak_memory,
    single_write_costs,
)
from .figures import Figure, figures_from
from .workload import FULL, QUICK, Sizes, write_bulk_transcript


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


