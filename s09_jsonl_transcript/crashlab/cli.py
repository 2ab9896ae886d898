"""The crash lab's command line. Every campaign exits 1 when it finds a broken promise.

    python -m s09_jsonl_transcript.crashlab kill --trials 1000     campaign 1: SIGKILL writers
    python -m s09_jsonl_transcript.crashlab powerloss              campaign 2: every power-cut state
    python -m s09_jsonl_transcript.crashlab damage --all-bits      campaigns 3 and 4: chain off and on
    python -m s09_jsonl_transcript.crashlab race                   campaign 5: eight racing writers
    python -m s09_jsonl_transcript.crashlab cost                   the chain's cost per append

Each ends with a line "N passed, N failed".
"""

from __future__ import annotations

import argparse
import sys
import time

from .cost import measure_integrity_cost
from .damage_maps import ALL_BIT_MASKS, damage_campaign, damage_rows
from .kills import class_summary, kill_campaign, kill_summary
from .powerloss import GOOD_OUTCOMES, power_loss_campaign
from .races import race_campaign
from .workload import ALL_MODES


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
    unknown = set(args.modes.split(",")) - set(ALL_MODES)
    if unknown:
        print(f"crashlab: error: unknown --modes {', '.join(sorted(unknown))} (choose from {', '.join(ALL_MODES)})",
              file=sys.stderr)
        return 2
    results = kill_campaign(args.trials, seed=args.seed, root=args.root, workers=args.workers,
                            max_delay=args.max_delay_ms / 1000, progress=progress_bar("kills"),
                            modes=tuple(args.modes.split(",")))
    print(format_table(kill_summary(results)))
    print("\nper class:")
    print(format_table(class_summary(results)))
    failures = [result for result in results if not result.ok]
    for result in failures[:20]:
        print(f"FAILED trial {result.trial} ({result.mode}, integrity={result.integrity}): "
              f"lost {result.lost}, duplicated {result.duplicated}, spliced {result.spliced}, "
              f"partial batches {result.partial_batches}; {result.verdict}")
    print(f"{len(results) - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


def _passed_failed(passed: int, failed: int) -> int:
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


def _powerloss(args) -> int:
    report = power_loss_campaign(every_byte=not args.quick, repair_every_byte=args.repair_every_byte,
                                 progress=progress_bar("power-loss states"))
    rows = [{"outcome": outcome, "states": report.outcomes[outcome]} for outcome in GOOD_OUTCOMES]
    rows.append({"outcome": "FINDING (lost, spliced, partial batch, foreign)", "states": len(report.findings)})
    print(format_table(rows))
    print(f"{report.states} states checked, {report.repair_states} of them crashed again during a repair")
    for check in report.findings[:20]:
        print(f"FINDING: {check.finding}\n  state: {check.state.description}\n  tail: {check.state.content[-120:]!r}")
    return _passed_failed(report.states - len(report.findings), len(report.findings))


def _damage(args) -> int:
    masks = ALL_BIT_MASKS if args.all_bits else (0x01,)
    reports = [damage_campaign(integrity=integrity, sessions=args.sessions, masks=masks,
                               progress=progress_bar(f"damage, chain {'on' if integrity else 'off'}"))
               for integrity in (False, True)]
    print(format_table(damage_rows(reports)))
    plain, chained = reports
    print(f"chain off: {plain.silent_flips} of {plain.flips_tried} flips accepted with different content "
          f"(the figure the chain exists to bring to 0)")
    print(f"chain on:  {chained.silent_flips} silent flips, {chained.silent_line_edits} silent line edits")
    # Only the chain's promise can fail here: without it, silent flips are the expected finding.
    checked = sum(len(report.truncations) + report.flips_tried
                  + sum(sum(counts.values()) for counts in report.line_edits.values()) for report in reports)
    failed = chained.silent_flips + chained.silent_line_edits
    return _passed_failed(checked - failed, failed)


def _race(args) -> int:
    results = race_campaign(racers=args.racers, events=args.events)
    print(format_table([{"scenario": result.scenario, "racers": result.racers, "wrote": result.wrote,
                         "refused (locked)": result.locked, "events in files": result.events,
                         "result": "ok" if result.ok else result.problem} for result in results]))
    failed = sum(not result.ok for result in results)
    return _passed_failed(len(results) - failed, failed)


def _cost(args) -> int:
    rows = []
    for synced in (True, False):
        cost = measure_integrity_cost(appends=args.appends, runs=args.runs, synced=synced)
        rows.append({"fsync": "real" if synced else "simulated", "appends x runs": f"{cost.appends} x {cost.runs}",
                     "us off": f"{cost.off_us:.1f}", "us on": f"{cost.on_us:.1f}", "ratio": f"{cost.ratio:.2f}",
                     "bytes off": f"{cost.off_bytes:.0f}", "bytes on": f"{cost.on_bytes:.0f}"})
    print(format_table(rows))
    print("(median of alternating runs; absolute times depend on the machine and its load)")
    return 0


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
    kill.add_argument("--modes", default=",".join(ALL_MODES),
                      help=f"comma-separated writer modes, taking turns (default: all, {','.join(ALL_MODES)})")
    kill.set_defaults(run=_kill)
    powerloss = commands.add_parser("powerloss", help="check every state a power cut may leave")
    powerloss.add_argument("--quick", action="store_true", help="tear writes at a few edges, not at every byte")
    powerloss.add_argument("--repair-every-byte", action="store_true",
                           help="also tear the repairs' writes at every byte (slow)")
    powerloss.set_defaults(run=_powerloss)
    damage = commands.add_parser("damage", help="every truncation, bit flip and line edit, chain off and on")
    damage.add_argument("--all-bits", action="store_true", help="flip each of the 8 bits of every byte")
    damage.add_argument("--sessions", type=int, default=2, help="bug-fix sessions in the sample (12 events each)")
    damage.set_defaults(run=_damage)
    race = commands.add_parser("race", help="racing writers on one session and on their own")
    race.add_argument("--racers", type=int, default=8)
    race.add_argument("--events", type=int, default=5)
    race.set_defaults(run=_race)
    cost = commands.add_parser("cost", help="the hash chain's cost per append")
    cost.add_argument("--appends", type=int, default=300)
    cost.add_argument("--runs", type=int, default=5)
    cost.set_defaults(run=_cost)
    return parser


def main(argv=None) -> int:
    """Parse the command line, run one campaign, return the exit status."""
    args = _parser().parse_args(argv)
    if getattr(args, "trials", 0) < 0:
        print("crashlab: error: --trials must be 0 or more", file=sys.stderr)
        return 2
    return args.run(args)
