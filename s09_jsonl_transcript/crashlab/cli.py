"""The crash lab's command line. Every campaign exits 1 when it finds a broken promise.

    python -m s09_jsonl_transcript.crashlab kill --trials 1000     campaign 1: SIGKILL writers
    python -m s09_jsonl_transcript.crashlab kill --held            ... each held inside a commit first
    python -m s09_jsonl_transcript.crashlab powerloss              campaign 2: every power-cut state
    python -m s09_jsonl_transcript.crashlab damage --all-bits      campaigns 3 and 4: chain off and on
    python -m s09_jsonl_transcript.crashlab race                   campaign 5: eight racing writers
    python -m s09_jsonl_transcript.crashlab cost                   the chain's cost per append

Each ends with a line "N passed, N failed". kill, powerloss, damage and race run against
both transcript classes, the lab's DurableTranscript and the lesson's code.JSONLTranscript,
and print their results apart (--classes lab or --classes lesson runs one).
"""

from __future__ import annotations

import argparse
import sys
import time

from .cost import measure_integrity_cost
from .damage_maps import ALL_BIT_MASKS, damage_campaign, damage_rows, verdict_mismatches
from .kills import class_summary, kill_campaign, kill_summary
from .powerloss import GOOD_OUTCOMES, power_loss_campaign
from .races import race_campaign
from .subjects import CLASS_NAMES, LAB, LESSON, SUBJECTS
from .workload import ALL_MODES, subject_of


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
    modes = tuple(mode for mode in args.modes.split(",") if subject_of(mode) in args.classes)
    if not modes:
        print("crashlab: error: none of --modes writes with the --classes chosen", file=sys.stderr)
        return 2
    results = kill_campaign(args.trials, seed=args.seed, root=args.root, workers=args.workers,
                            max_delay=args.max_delay_ms / 1000, progress=progress_bar("kills"), modes=modes,
                            held=args.held)
    print(format_table(kill_summary(results)))
    if args.held:
        print(f"held: {sum(result.killed_inside for result in results)} of {len(results)} kills landed inside a commit")
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


def _label(subject: str) -> str:
    return f"{subject} ({CLASS_NAMES[subject]})"


def _powerloss(args) -> int:
    reports = [power_loss_campaign(every_byte=not args.quick, repair_every_byte=args.repair_every_byte,
                                   progress=progress_bar(f"power-loss states, {subject}"), subject=subject)
               for subject in args.classes]
    rows = [{"outcome": outcome, **{_label(report.subject): report.outcomes[outcome] for report in reports}}
            for outcome in GOOD_OUTCOMES]
    rows.append({"outcome": "FINDING (lost, spliced, partial batch, foreign)",
                 **{_label(report.subject): len(report.findings) for report in reports}})
    rows.append({"outcome": "states checked", **{_label(report.subject): report.states for report in reports}})
    print(format_table(rows))
    for report in reports:
        print(f"{_label(report.subject)}: {report.states} states checked, {report.repair_states} of them "
              f"crashed again during a repair, {len(report.findings)} findings")
        for check in report.findings[:20]:
            tail = check.state.content[-120:] if check.state.content is not None else None
            print(f"FINDING ({report.subject}): {check.finding}\n  state: {check.state.description}\n  tail: {tail!r}")
    states, findings = sum(report.states for report in reports), sum(len(report.findings) for report in reports)
    return _passed_failed(states - findings, findings)


def _damage_checked(report) -> int:
    """How many damaged copies a report judged."""
    edits = sum(sum(counts.values()) for counts in report.line_edits.values())
    return len(report.truncations) + report.flips_tried + edits


def _damage(args) -> int:
    masks = ALL_BIT_MASKS if args.all_bits else (0x01,)
    plans = [(LAB, False), (LAB, True)] if LAB in args.classes else []
    plans += [(LESSON, False)] if LESSON in args.classes else []
    if LESSON in args.classes and LAB not in args.classes:
        plans.insert(0, (LAB, False))  # the lesson's verdicts are checked against the lab's, chain off
    reports = [damage_campaign(integrity=integrity, sessions=args.sessions, masks=masks, subject=subject,
                               progress=progress_bar(f"damage, {subject}, chain {'on' if integrity else 'off'}"))
               for subject, integrity in plans]
    rows = damage_rows(reports)
    print(format_table([{"class": _label(report.subject), **row} for report, row in zip(reports, rows)]))
    # Only the chain's promise, and the lesson's agreement with the lab, can fail here:
    # without the chain, silent flips are the expected finding.
    checked = failed = 0
    for report in reports:
        if report.subject == LAB and not report.integrity:
            print(f"lab, chain off: {report.silent_flips} of {report.flips_tried} flips accepted with different "
                  f"content (the figure the chain exists to bring to 0)")
        elif report.subject == LAB:
            print(f"lab, chain on:  {report.silent_flips} silent flips, {report.silent_line_edits} silent line edits")
            failed += report.silent_flips + report.silent_line_edits
        else:
            mismatches = verdict_mismatches(report, reports[0])
            print(f"lesson: {report.silent_flips} of {report.flips_tried} flips silent (it has no chain); "
                  f"{mismatches} damaged files judged differently from the lab with the chain off")
            failed += mismatches
        if report.subject in args.classes:
            checked += _damage_checked(report)
    return _passed_failed(checked - failed, failed)


def _race(args) -> int:
    results = [result for subject in args.classes
               for result in race_campaign(racers=args.racers, events=args.events, subject=subject)]
    print(format_table([{"class": _label(result.subject), "scenario": result.scenario,
                         "racers": result.racers, "wrote": result.wrote,
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


def _classes(text: str) -> tuple:
    """The --classes argument: a comma-separated choice of lab and lesson."""
    chosen = tuple(dict.fromkeys(text.split(",")))
    if not chosen or set(chosen) - set(SUBJECTS):
        raise argparse.ArgumentTypeError(f"choose from {','.join(SUBJECTS)}, not {text!r}")
    return tuple(subject for subject in SUBJECTS if subject in chosen)


def _add_classes(command) -> None:
    command.add_argument("--classes", type=_classes, default=SUBJECTS,
                         help="whose transcript class to test: lab (DurableTranscript), lesson "
                              "(code.JSONLTranscript), or both (default: lab,lesson)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m s09_jsonl_transcript.crashlab",
                                     description="Crash-lab campaigns: exit status 1 on any broken promise.")
    commands = parser.add_subparsers(dest="command", required=True)
    kill = commands.add_parser("kill", help="SIGKILL writer processes at random moments")
    kill.add_argument("--trials", type=int, default=100)
    kill.add_argument("--seed", type=int, default=0)
    kill.add_argument("--workers", type=int, default=2, help="victims running at once (default 2)")
    kill.add_argument("--max-delay-ms", type=float, default=20.0, help="latest kill after the victim is ready")
    kill.add_argument("--held", action="store_true",
                      help="hold each victim just before a write or fsync of a commit and kill it there")
    kill.add_argument("--root", help="keep the killed transcripts in this folder")
    kill.add_argument("--modes", default=",".join(ALL_MODES),
                      help=f"comma-separated writer modes, taking turns (default: all, {','.join(ALL_MODES)})")
    _add_classes(kill)
    kill.set_defaults(run=_kill)
    powerloss = commands.add_parser("powerloss", help="check every state a power cut may leave")
    powerloss.add_argument("--quick", action="store_true", help="tear writes at a few edges, not at every byte")
    powerloss.add_argument("--repair-every-byte", action="store_true",
                           help="also tear the repairs' writes at every byte (slow)")
    _add_classes(powerloss)
    powerloss.set_defaults(run=_powerloss)
    damage = commands.add_parser("damage", help="every truncation, bit flip and line edit, chain off and on")
    damage.add_argument("--all-bits", action="store_true", help="flip each of the 8 bits of every byte")
    damage.add_argument("--sessions", type=int, default=2, help="bug-fix sessions in the sample (12 events each)")
    _add_classes(damage)
    damage.set_defaults(run=_damage)
    race = commands.add_parser("race", help="racing writers on one session and on their own")
    race.add_argument("--racers", type=int, default=8)
    race.add_argument("--events", type=int, default=5)
    _add_classes(race)
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
