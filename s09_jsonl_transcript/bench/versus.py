"""recover() of this checkout against another commit's, paired in one run (issue 50: recover's figures stay
within 3% of the previous commit's).

    python -m s09_jsonl_transcript.bench.versus [REV] [--events N] [--rounds N] [--text-bytes N] [--dir DIR]

REV (default HEAD~1) is exported with `git archive` into a temporary folder under another package name,
so both builds load in this one process. This checkout's library writes one transcript; every round
times DurableTranscript(path).recover() of it with each build, in turn (A, B, then B, A: no build always
runs first), for each decoder both builds have. The report gives, per decoder, the median over rounds
of the ratio this / REV with the interval that holds it with 95% confidence (stats.median_interval),
and whether that interval lies under 1.03. Both builds must recover the same state, or it stops.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import io
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from .. import lab
from .stats import median_interval
from .workload import write_bulk_transcript

PACKAGE = "s09_jsonl_transcript"
BOUND = 1.03  # this build may take at most 3% longer than REV's


@dataclass(frozen=True)
class Comparison:
    """One decoder's paired rounds: this build's recover() time over REV's, per round."""

    decoder: str
    ratios: list

    @property
    def median(self) -> float:
        """The median ratio over rounds."""
        return statistics.median(self.ratios)

    @property
    def interval(self) -> tuple[float, float]:
        """The interval that holds the median ratio with 95% confidence."""
        return median_interval(self.ratios)

    def verdict(self) -> str:
        """"within" when the interval lies under BOUND, "over" when above it, else "undecided"."""
        low, high = self.interval
        return "within" if high < BOUND else "over" if low > BOUND else "undecided"


def exported(rev: str, folder: Path, name: str) -> ModuleType:
    """The package as commit rev of this checkout holds it, imported as `name` from folder."""
    root = Path(subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True, check=True,
                               cwd=Path(__file__).parent).stdout.strip())
    archive = subprocess.run(["git", "archive", "--format=tar", rev, PACKAGE], capture_output=True, check=True,
                             cwd=root).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")
    (folder / PACKAGE).rename(folder / name)
    sys.path.insert(0, str(folder))
    return importlib.import_module(f"{name}.lab")


def timed_recover(lab_module: ModuleType, path: Path, decoder: str) -> tuple[float, str]:
    """Seconds of one recover() of path by lab_module's DurableTranscript, and the state it gave (as repr)."""
    gc.collect()
    with lab_module.fast.decoding_with(decoder):
        start = time.perf_counter()
        state = lab_module.DurableTranscript(path).recover()
        seconds = time.perf_counter() - start
    return seconds, repr(state)


def compare(other_lab: ModuleType, path: Path, rounds: int, decoders: list[str]) -> list[Comparison]:
    """Time both builds' recover() of path, interleaved, for each decoder; stop if their states differ."""
    results = []
    for decoder in decoders:
        ratios = []
        for number in range(rounds):
            builds = [("this", lab), ("other", other_lab)]
            times = {}
            for name, module in builds if number % 2 == 0 else builds[::-1]:
                times[name] = timed_recover(module, path, decoder)
            if times["this"][1] != times["other"][1]:
                raise AssertionError(f"the two builds recover different states with {decoder}")
            ratios.append(times["this"][0] / times["other"][0])
        results.append(Comparison(decoder, ratios))
    return results


def report(rev: str, results: list[Comparison], events: int) -> list[str]:
    """The report's lines: one per decoder."""
    lines = [f"recover() of {events:,} events, this checkout / {rev}, paired rounds (lower is faster):"]
    for result in results:
        low, high = result.interval
        lines.append(f"  [{result.decoder}] median {result.median:.3f}, 95% interval {low:.3f} to {high:.3f} "
                     f"over {len(result.ratios)} rounds: {result.verdict()} {BOUND:.2f}")
    return lines


def main(argv=None) -> int:
    """Run the comparison; exit 1 when a decoder's interval lies above the bound."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rev", nargs="?", default="HEAD~1", help="the commit to compare with (default HEAD~1)")
    parser.add_argument("--events", type=int, default=50_000, help="events in the transcript (default 50,000)")
    parser.add_argument("--rounds", type=int, default=31, help="paired rounds per decoder (default 31)")
    parser.add_argument("--text-bytes", type=int, default=200, help="characters of text per event (default 200)")
    parser.add_argument("--dir", help="where the temporary files go (default: the system's temporary folder)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="s09-versus-", dir=args.dir) as scratch:
        folder = Path(scratch)
        (folder / "other").mkdir()
        other_lab = exported(args.rev, folder / "other", "s09_other_build")
        path = folder / "recover.jsonl"
        write_bulk_transcript(path, args.events, args.text_bytes)
        decoders = [name for name in lab.fast.DECODERS
                    if name in other_lab.fast.DECODERS and (name == "stdlib" or lab.fast.msgspec is not None)]
        results = compare(other_lab, path, args.rounds, decoders)
        shutil.rmtree(folder / "other")
    print("\n".join(report(args.rev, results, args.events)))
    return 1 if any(result.verdict() == "over" for result in results) else 0


if __name__ == "__main__":
    raise SystemExit(main())
