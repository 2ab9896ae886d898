"""The crash lab's command line. Every campaign exits 1 when it finds a broken promise.

    python -m s09_jsonl_transcript.crashlab kill --trials 1000
"""

from __future__ import annotations

import argparse
import sys
import time

from .kills import kill_campaign, kill_summary


def format_table(rows: list[dict]) -> str:
    """Rows of equal keys as an aligned text table, one header line first."""
    if not rows:
        return "(no rows)"
    headers = list(rows[0])
    cells = [[str(row[name]) for name in headers] for row in rows]
    widths = [max(len(name), *(len(line[i]) for line in cells)) for i, name in enumerate(headers)]
    lines = [headers, *cells]
    return "\n".join("  ".join(value.rjust(width) for value, width in zip(line, widths)) for line in lines)


def progress_bar(label: str, stream=None, width: int = 30):
    """A progress(done, total) callback drawing a text bar: redrawn in place on a terminal,
    a line per tenth elsewhere (a CI log)."""
    stream = stream or sys.stderr
    interactive = stream.isatty()
    started = time.monotonic()

    def show(done: int, total: int) -> None:
        tenth = max(1, total // 10)
        if not interactive and done % tenth and done != total:
            return
        filled = width * done // max(total, 1)
        bar = f"{label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total} {time.monotonic() - started:.0f}s"
        stream.write(("\r" + bar) if interactive else bar + "\n")
        if interactive and done == total:
            stream.write("\n")
        stream.flush()

    return show


def _kill(args) -> int:
    results = kill_campaign(args.trials, seed=args.seed, root=args.root, workers=args.workers,
                            max_delay=args.max_delay_ms / 1000, progress=progress_bar("kills"))
    print(format_table(kill_summary(results)))
    failures = [result for result in results if not result.ok]
    for result in failures[:20]:
        print(f"FAILED trial {result.trial} ({result.mode}, integrity={result.integrity}): "
              f"lost {result.lost}, duplicated {result.duplicated}, spliced {result.spliced}; {result.verdict}")
    print(f"{len(results) - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m s09_jsonl_transcript.crashlab",
                                     description="Crash-lab campaigns: exit status 1 on any broken promise.")
    commands = parser.add_subparsers(dest="command", required=True)
    kill = commands.add_parser("kill", help="SIGKILL writer processes at random moments")
    kill.add_argument("--trials", type=int, default=100)
    kill.add_argument("--seed", type=int, default=0)
    kill.add_argument("--workers", type=int, default=2, help="victims running at once (default 2)")
    kill.add_argument("--max-delay-ms", type=float, default=20.0, help="latest kill after the victim is ready")
    kill.add_argument("--root", help="keep the killed transcripts in this folder")
    kill.set_defaults(run=_kill)
    return parser


def main(argv=None) -> int:
    """Parse the command line, run one campaign, return the exit status."""
    args = _parser().parse_args(argv)
    if getattr(args, "trials", 0) < 0:
        print("crashlab: error: --trials must be 0 or more", file=sys.stderr)
        return 2
    return args.run(args)
