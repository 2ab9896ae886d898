"""The capstone engine's commands.

    python -m s09_jsonl_transcript.grading.durability grade ANSWER.py [--seed N] [--size full|reduced|local]
                                                      [--local] [--json]
    python -m s09_jsonl_transcript.grading.durability replay ANSWER.py FINDING_ID [--seed N] [--size ...] [--local]
    python -m s09_jsonl_transcript.grading.durability bench [ANSWER.py] [--runs N]
    python -m s09_jsonl_transcript.grading.durability calls [--lang zh]

ANSWER.py holds an answer cell's source (append and recover); a notebook (ex06's, .ipynb) may be given
instead: its crash-graded answer cell is taken, as the grader takes it. grade exits 0 when every
property holds, 1 when one does not, 2 when the answer was refused or the grader cannot record here.

A report names each finding by an id and the grading's seed; on a student's own machine,

    python -m s09_jsonl_transcript.grading.durability replay ex06_your_own_transcript.ipynb ID --seed N

rebuilds that one crash state from the notebook's answer cell and judges it again, with strace when it
is there, else with the local check's recorder (a Mac).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..words import SEPARATOR, both
from .calls import ROWS
from .engine import FULL, LOCAL, REDUCED, grade
from .judge import PROPERTIES
from .runs import RecorderUnavailable

SIZES = {"full": FULL, "reduced": REDUCED, "local": LOCAL}
REFERENCE = Path(__file__).resolve().parents[3] / "tests" / "capstone_data" / "reference.py"  # in a checkout


def _source(path: str) -> str:
    """The answer's source: the file's text, or a notebook's crash-graded answer cell."""
    text = Path(path).read_text(encoding="utf-8")
    return answer_cell(json.loads(text), path) if path.endswith(".ipynb") else text


def answer_cell(notebook: dict, name: str = "the notebook") -> str:
    """The source of a notebook's crash-graded answer cell: the one its metadata names (s09.crash_graded), or
    its only answer cell. ValueError when there is none, or more than one to choose from."""
    named = (notebook.get("metadata") or {}).get("s09", {}).get("crash_graded")
    answers = [cell for cell in notebook.get("cells", []) if isinstance(cell, dict)
               and ((cell.get("metadata") or {}).get("s09") or {}).get("role") == "answer"]
    chosen = [cell for cell in answers if cell["metadata"]["s09"].get("name") == named] if named else answers
    if len(chosen) != 1:
        raise ValueError(both(f"{name}: found {len(chosen)} crash-graded answer cells, not one",
                              f"{name}：找到 {len(chosen)} 个要做崩溃测试的答案单元格，而不是一个"))
    source = chosen[0].get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _grade(args) -> int:
    try:
        verdict = grade(_source(args.answer), seed=args.seed, size=SIZES[args.size], recorded=not args.local,
                        sandboxed=not args.local and not args.no_sandbox)
    except RecorderUnavailable as error:
        print(error, file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(verdict.as_json(), ensure_ascii=False, indent=1))
    else:
        print(f"seed {verdict.seed}, {verdict.recorder}, {verdict.seconds:.1f} s; states: {verdict.counts}")
        if verdict.problem is not None:
            print(verdict.problem.reason)
        for name, title in PROPERTIES.items():
            result = verdict.results.get(name, {"findings": [], "stopped": False})
            mark = both("passed", "通过") if verdict.passed(name) else both("failed", "未通过")
            more = "+" if result["stopped"] else ""
            print(f"{mark}: {title} ({len(result['findings'])}{more} findings)")
            for finding in result["findings"][:args.show]:
                print(f"  {finding.state_id}: {finding.message}\n" + "\n".join(
                    "    " + line for line in finding.byte_map.splitlines()))
    if verdict.problem is not None:
        return 2
    return 0 if not verdict.lost() else 1


def _replay(args) -> int:
    from .replay import replay

    result = replay(_source(args.answer), args.finding, seed=args.seed, size=SIZES[args.size],
                    recorded=False if args.local else None)
    print(result.report())
    return 0 if result.problem is None else 2


def _bench(args) -> int:
    from .bench import run_bench

    answer = args.answer or (str(REFERENCE) if REFERENCE.exists() else None)
    if answer is None:
        print("give the answer cell to grade (ANSWER.py): the reference is in the kit's checkout, "
              "tests/capstone_data/reference.py", file=sys.stderr)
        return 2
    figures = run_bench(_source(answer), runs=args.runs)
    return 0 if figures["goals_met"] else 1


DECISIONS_ZH = {"modelled": "按模型处理", "refused": "拒绝", "no change": "无变化"}


def calls_table(language: str = "en") -> str:
    """The table of system calls (calls.ROWS) as Markdown: docs/grading.md holds it, docs/zh/grading.md its
    Chinese (the calls' names as they are, what the model does and why in Chinese)."""
    if language == "zh":
        lines = ["| 系统调用 | 模型 | 原因 |", "| --- | --- | --- |"]
        lines += [f"| {row.calls} | {DECISIONS_ZH[row.decision]} | {row.how.split(SEPARATOR, 1)[1]} |" for row in ROWS]
    else:
        lines = ["| system calls | the model | why |", "| --- | --- | --- |"]
        lines += [f"| {row.calls} | {row.decision} | {row.how.split(SEPARATOR, 1)[0]} |" for row in ROWS]
    return "\n".join(lines)


def _calls(args) -> int:
    print(calls_table(args.lang))
    return 0


def parser() -> argparse.ArgumentParser:
    """The command line's parser."""
    top = argparse.ArgumentParser(prog="python -m s09_jsonl_transcript.grading.durability",
                                  description="ex06, the capstone: grade a durable transcript with real crashes")
    commands = top.add_subparsers(dest="command", required=True)
    graded = commands.add_parser("grade", help="grade an answer cell's source")
    graded.add_argument("answer", help="the answer cell's source (a .py file), or the exercise's notebook")
    graded.add_argument("--seed", type=int, default=None)
    graded.add_argument("--size", choices=sorted(SIZES), default="full")
    graded.add_argument("--local", action="store_true", help="no strace: the local check's recorder")
    graded.add_argument("--no-sandbox", action="store_true", help="record with strace, without bubblewrap")
    graded.add_argument("--json", action="store_true")
    graded.add_argument("--show", type=int, default=2, help="findings shown per property")
    graded.set_defaults(run=_grade)
    replayed = commands.add_parser("replay", help="replay one finding by its id")
    replayed.add_argument("answer", help="the answer cell's source (a .py file), or the exercise's notebook")
    replayed.add_argument("finding")
    replayed.add_argument("--seed", type=int, required=True)
    replayed.add_argument("--size", choices=sorted(SIZES), default="full")
    replayed.add_argument("--local", action="store_true")
    replayed.set_defaults(run=_replay)
    bench = commands.add_parser("bench", help="time the grading of one submission at full size")
    bench.add_argument("answer", nargs="?")
    bench.add_argument("--runs", type=int, default=3)
    bench.set_defaults(run=_bench)
    table = commands.add_parser("calls", help="the system calls the model follows or refuses")
    table.add_argument("--lang", choices=("en", "zh"), default="en", help="the table's language")
    table.set_defaults(run=_calls)
    return top


def main(argv=None) -> int:
    """Run one command; its exit status."""
    args = parser().parse_args(argv)
    try:
        return args.run(args)
    except (OSError, ValueError) as error:  # an answer file that cannot be read, a notebook without the cell
        print(error, file=sys.stderr)
        return 2
