"""How fast an import runs, and how much memory it holds, on synthetic Claude Code sessions.

    python -m s09_jsonl_transcript.importers.bench            # 3 MB / 1,500 lines, then 100 MB
    python -m s09_jsonl_transcript.importers.bench --big-mb 0 # the small one only

The issue's targets: a 3 MB, 1,500-line session in under 2 s on 2 cores, and a 100 MB one in bounded
memory. The figures are printed, never asserted (timings vary from run to run): the import time, the
lines and megabytes per second, the group commits, and the growth of the process's peak resident memory
during the import (ru_maxrss), next to the size of the source. Sources are written line by line and
removed afterwards; nothing outside a temporary folder is touched.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

from .importer import import_session

SESSION = "5e55a0c1-0000-4000-8000-00000000bench"
# What an import holds per source line, at most (the ids kept to merge duplicates and pair calls), as
# docs/importers.md says; tests/test_importers_real.py measures it with tracemalloc.
BYTES_PER_LINE_BOUND = 320  # the slope is about 170; up to about 300 just after a set's table has grown
LINES_PER_TURN = 5  # user text, assistant thinking, assistant tool_use, user tool_result, assistant text


def turn_records(turn: int, output_bytes: int) -> list[dict]:
    """One synthetic Claude Code turn: five records chained by parentUuid, one tool output of output_bytes."""
    base = {"isSidechain": False, "userType": "external", "cwd": "/home/student/bench", "sessionId": SESSION,
            "version": "2.0.0", "timestamp": "2026-01-05T09:00:00.000Z"}
    ids = [f"{turn:08d}-0000-4000-8000-{n:012d}" for n in range(LINES_PER_TURN)]
    parents = [f"{turn - 1:08d}-0000-4000-8000-{LINES_PER_TURN - 1:012d}" if turn else None] + ids[:-1]
    message_id, call_id = f"msg_{turn:08d}", f"toolu_{turn:08d}"

    def assistant(block):
        return {"role": "assistant", "id": message_id, "model": "claude-sonnet-4-5", "content": [block],
                "usage": {"input_tokens": 1000, "output_tokens": 50}}

    messages = [
        ("user", {"role": "user", "content": f"Step {turn}: read the next module and check it."}),
        ("assistant", assistant({"type": "thinking", "thinking": "Read the module, then run its tests. " * 4})),
        ("assistant", assistant({"type": "tool_use", "id": call_id, "name": "Read",
                                 "input": {"file_path": f"/home/student/bench/module_{turn}.py"}})),
        ("user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id,
                                                "content": "x = 1  # a line of the module\n" * (output_bytes // 30)}]}),
        ("assistant", assistant({"type": "text", "text": f"Module {turn} looks right."})),
    ]
    return [{**base, "parentUuid": parent, "type": kind, "message": message, "uuid": uuid}
            for (kind, message), uuid, parent in zip(messages, ids, parents)]


def write_session(path: Path, target_bytes: int, output_bytes: int = 7400) -> int:
    """Write a synthetic session of about target_bytes, turn by turn (memory stays flat); return its lines."""
    written, lines, turn = 0, 0, 0
    with open(path, "w", encoding="utf-8") as file:
        while written < target_bytes:
            for record in turn_records(turn, output_bytes):
                line = json.dumps(record, separators=(",", ":")) + "\n"
                file.write(line)
                written += len(line)
                lines += 1
            turn += 1
    return lines


def _status_mib(field: str) -> float | None:
    """One memory figure of /proc/self/status (VmRSS, VmHWM), in MiB; None where there is no /proc."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def reset_peak() -> bool:
    """Reset this process's peak resident memory (Linux: write 5 to /proc/self/clear_refs); False if impossible."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def measure_import(source: Path, root: Path) -> dict:
    """Import source under root once; the time it took and how far the peak resident memory rose above the start.

    The peak is reset first, so an earlier, larger allocation does not hide this one; where it cannot be
    reset, ru_maxrss is used, and the growth it shows is a lower bound.
    """
    exact = reset_peak()
    rss_before = _status_mib("VmRSS") if exact else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    started = time.perf_counter()
    summary = import_session(source, root)
    seconds = time.perf_counter() - started
    peak = _status_mib("VmHWM") if exact else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"lines": summary.source_lines, "mb": source.stat().st_size / 1e6, "seconds": seconds,
            "batches": summary.batches, "records": sum(summary.records_written.values()),
            "rss_growth_mib": max(0.0, peak - rss_before), "peak_exact": exact}


def describe(label: str, figures: dict) -> str:
    """One measurement as a sentence of figures."""
    return (f"{label}: {figures['lines']:,} lines, {figures['mb']:.1f} MB imported in {figures['seconds']:.2f} s "
            f"({figures['lines'] / figures['seconds']:,.0f} lines/s, {figures['mb'] / figures['seconds']:.1f} MB/s), "
            f"{figures['records']:,} records in {figures['batches']:,} group commits; peak resident memory grew "
            f"by {figures['rss_growth_mib']:.1f} MiB")


def run(big_mb: int = 100, out=print) -> dict:
    """Measure the small session (3 MB, about 1,500 lines), then one of big_mb megabytes (0: skip it)."""
    results = {}
    with tempfile.TemporaryDirectory(prefix="s09-import-bench-") as folder:
        folder = Path(folder)
        small = folder / "small" / f"{SESSION}.jsonl"
        small.parent.mkdir()
        write_session(small, 3_000_000)
        results["small"] = measure_import(small, folder / "root-small")
        out(describe("3 MB session", results["small"]))
        if big_mb:
            big = folder / "big" / f"{SESSION}.jsonl"
            big.parent.mkdir()
            write_session(big, big_mb * 1_000_000)
            results["big"] = measure_import(big, folder / "root-big")
            out(describe(f"{big_mb} MB session", results["big"]))
            out(f"memory: the {results['big']['mb']:.0f} MB import grew the peak by "
                f"{results['big']['rss_growth_mib']:.1f} MiB, "
                f"{results['big']['rss_growth_mib'] * 1.048576 / results['big']['mb']:.1%} of the source's size")
    return results


def main(argv=None) -> int:
    """The command line: prints the figures, returns 0."""
    parser = argparse.ArgumentParser(prog="python -m s09_jsonl_transcript.importers.bench",
                                     description="Time an import and measure its memory.")
    parser.add_argument("--big-mb", type=int, default=100, help="the large session's size in MB (0: skip it)")
    run(parser.parse_args(argv).big_mb)
    return 0


if __name__ == "__main__":
    sys.exit(main())
