"""The command line of the reference library: the demo, a small shell, inspect and replay.

    python -m s09_jsonl_transcript                   the three-act crash demo (as code.py runs it)
    python -m s09_jsonl_transcript --interactive     append events by hand
    python -m s09_jsonl_transcript inspect FILE      validate and summarise a transcript
    python -m s09_jsonl_transcript replay FILE --max-items N
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

from .code import (
    DEMO_LANGUAGES,
    SESSION_MAX_ITEMS,
    TYPE_AI_TITLE,
    TYPE_FUNCTION_CALL,
    TYPE_FUNCTION_CALL_RESULT,
    TYPE_MESSAGE,
    TYPE_REASONING,
    TranscriptCorruptionError,
    TranscriptLockedError,
    TranscriptValidationError,
    demo,
)
from .i18n import language_from_environment
from .lab import DurableTranscript


class UsageError(Exception):
    """A bad command line: reported in one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(f"{message} (see --help)")


def inspect_transcript(path, *, integrity: bool = False) -> dict:
    """Validate a transcript and summarise it. Damage is reported in the result, not raised."""
    transcript = DurableTranscript(_existing_file(path), integrity=integrity)
    scanned = transcript.scan(report_damage=True)
    error = scanned.corruption
    corruption = error and {"line": error.line_number, "byte_offset": error.byte_offset,
                            "reason": error.reason, "message": str(error)}
    return {
        "file": transcript.path.name,
        "events": len(scanned.events),
        "by_type": dict(Counter(event["type"] for event in scanned.events)),
        "last_sequence": scanned.last_sequence,
        "ignored_partial_tail": scanned.ignored_partial_tail,
        "unfinished_batch": scanned.unfinished_batch,
        "unknown_schema_events": scanned.unknown_schema_events,
        "chained": scanned.chained,
        "corruption": corruption,
    }


def format_inspection(report: dict) -> str:
    """The inspect report as a few readable lines."""
    types = ", ".join(f"{name} {count}" for name, count in sorted(report["by_type"].items())) or "none"
    lines = [
        f"file:          {report['file']}",
        f"events:        {report['events']} ({types})",
        f"last sequence: {report['last_sequence']}",
        f"partial tail:  {_partial_tail_text(report)}",
        f"newer schema:  {report['unknown_schema_events']} events kept as evidence, not interpreted",
        f"integrity:     {'hash chain verified' if report['chained'] else 'no hash chain'}",
    ]
    corruption = report["corruption"]
    if corruption:
        lines.append(f"CORRUPT:       line {corruption['line']} (byte {corruption['byte_offset']}): "
                     f"{corruption['reason']}")
    else:
        lines.append("verdict:       valid")
    return "\n".join(lines)


def _partial_tail_text(report: dict) -> str:
    if not report["ignored_partial_tail"]:
        return "none"
    return "ignored (an unfinished batch)" if report["unfinished_batch"] else "ignored (an unterminated last line)"


def _existing_file(path) -> Path:
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"no such transcript file: {path}")
    return path


def new_session(root, workspace: str, name: str) -> DurableTranscript:
    """A new session under root: name-1, or name-2 if that exists, and so on; never an existing file."""
    for number in range(1, 10_000):
        try:
            return DurableTranscript.for_session(root, workspace, f"{name}-{number}", new=True)
        except FileExistsError:
            continue
    raise UsageError(f"no free session name {name}-N under {root}")


def _run_demo(args) -> int:
    root = Path(args.root) if args.root else Path(tempfile.mkdtemp(prefix="s09-demo-"))
    (root / "projects" / "demo" / "session-1.jsonl").unlink(missing_ok=True)  # a rerun in the same --root
    try:
        ok = demo(root, lang=args.lang)
    finally:
        if args.root or args.keep:
            kept = "transcripts kept in" if args.lang == "en" else "transcript 保存在"
            print(f"\n{kept} {root / 'projects' / 'demo'}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    return 0 if ok else 1


SHELL_HELP = """commands:
  user TEXT            append a user message
  assistant TEXT       append an assistant message
  reason TEXT          append a reasoning event
  tool NAME [JSON]     append a function call (arguments as a JSON object)
  result TEXT          append the result of the oldest pending call
  title TEXT           append an ai-title
  replay [N]           print the messages of the last N events
  recover              validate the whole file and summarise the rebuilt state
  raw                  print the file as it is on disk
  quit                 leave"""


def run_shell(transcript: DurableTranscript, lines, out=print) -> None:
    """A small line-oriented shell over one transcript, reading commands from lines."""
    calls = 0
    out(f"transcript: {transcript.path}\n{SHELL_HELP}")
    for line in lines:
        command, _, text = line.strip().partition(" ")
        try:
            if command in ("quit", "exit"):
                return
            if command in ("", "help"):
                out(SHELL_HELP) if command else None
                continue
            if command in ("user", "assistant"):
                event = {"type": TYPE_MESSAGE, "role": command, "content": text}
            elif command == "reason":
                event = {"type": TYPE_REASONING, "content": text}
            elif command == "title":
                event = {"type": TYPE_AI_TITLE, "title": text}
            elif command == "tool":
                name, _, arguments = text.partition(" ")
                calls += 1
                event = {"type": TYPE_FUNCTION_CALL, "callId": f"call_{calls}", "name": name,
                         "arguments": json.loads(arguments) if arguments.strip() else {}}
            elif command == "result":
                pending = transcript.replay_state().pending_calls
                if not pending:
                    out("no pending tool call to answer")
                    continue
                event = {"type": TYPE_FUNCTION_CALL_RESULT, "callId": pending[0]["callId"], "output": text}
            elif command == "replay":
                out(json.dumps(transcript.replay(int(text) if text else SESSION_MAX_ITEMS), indent=2,
                               ensure_ascii=False))
                continue
            elif command == "recover":
                state = transcript.recover()
                out(json.dumps({k: v for k, v in state.items() if k != "messages"}, indent=2, ensure_ascii=False))
                continue
            elif command == "raw":
                out(transcript.path.read_text(encoding="utf-8", errors="replace") if transcript.path.exists() else "")
                continue
            else:
                out(f"unknown command {command!r} (type help)")
                continue
            record = transcript.append(event)
            out(f"appended {record['event_id']} ({record['type']}); jsonl line: {transcript.count_lines()}")
        except (ValueError, TranscriptCorruptionError, TranscriptLockedError) as error:
            out(f"error: {error}")


def main(argv=None) -> int:
    """Entry point: returns the process exit status."""
    parser = _Parser(prog="python -m s09_jsonl_transcript",
                     description="s09 JSONL transcript: the three-act crash demo and tools.")
    parser.add_argument("--root", help="write the demo's transcripts under DIR and keep them")
    parser.add_argument("--keep", action="store_true", help="keep the demo's temporary folder")
    parser.add_argument("--lang", choices=DEMO_LANGUAGES, default=language_from_environment(),
                        help="the demo's language (default: zh when the locale is Chinese, else en)")
    parser.add_argument("--interactive", action="store_true", help="a small shell that appends events")
    commands = parser.add_subparsers(dest="command", metavar="{inspect,replay}")
    inspect = commands.add_parser("inspect", help="validate and summarise a transcript (exit 1 if corrupt)")
    inspect.add_argument("file")
    inspect.add_argument("--json", action="store_true", help="print the report as JSON")
    inspect.add_argument("--integrity", action="store_true", help="require the hash chain on every record")
    replay = commands.add_parser("replay", help="print the replayed messages as JSON")
    replay.add_argument("file")
    replay.add_argument("--max-items", type=int, default=SESSION_MAX_ITEMS)
    for sub in (inspect, replay):
        sub.error = parser.error
    try:
        args = parser.parse_args(argv)
        if args.command == "inspect":
            report = inspect_transcript(args.file, integrity=args.integrity)
            print(json.dumps(report, indent=2, ensure_ascii=False) if args.json else format_inspection(report))
            return 1 if report["corruption"] else 0
        if args.command == "replay":
            if args.max_items < 0:
                raise UsageError("--max-items must be 0 or more")
            messages = DurableTranscript(_existing_file(args.file)).replay(args.max_items)
            print(json.dumps(messages, indent=2, ensure_ascii=False))
            return 0
        if args.interactive:
            root = Path(args.root) if args.root else Path(tempfile.mkdtemp(prefix="s09-shell-"))
            with new_session(root, "shell", "interactive") as transcript:
                run_shell(transcript, sys.stdin)
            return 0
        return _run_demo(args)
    except UsageError as error:
        print(f"s09: error: {error}", file=sys.stderr)
        return 2
    except (TranscriptCorruptionError, TranscriptValidationError, OSError) as error:
        print(f"s09: {error}", file=sys.stderr)
        return 1
