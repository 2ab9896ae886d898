"""The command line of the reference library: the demo, a small shell, inspect, replay and import.

    python -m s09_jsonl_transcript                   the three-act crash demo (as code.py runs it)
    python -m s09_jsonl_transcript --interactive     append events by hand
    python -m s09_jsonl_transcript inspect FILE      validate and summarise a transcript, or say what
                                                     the lesson would say about a raw agent file
    python -m s09_jsonl_transcript replay FILE --max-items N
    python -m s09_jsonl_transcript import FILE --root ROOT [--format auto|claude-code|codex|...] [--json]

Everything it prints is in the language of --lang, or of the locale (Chinese when LC_ALL, LC_MESSAGES
or LANG says zh); the Chinese is in locale/zh/cli.json. Event types, field names and the library's
own error details stay as they are.
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
from .importers import (
    FORMAT_CHOICES,
    RAW_FORMATS,
    ImportRefused,
    detect_format,
    foreign_format_message,
    format_raw_inspection,
    import_session,
    inspect_raw,
)
from .lab import DurableTranscript
from .text import i18n

tr = i18n.translator("cli")


class UsageError(Exception):
    """A bad command line: reported in one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(tr("{message} (see --help)", message=message))


class HelpFormatter(argparse.HelpFormatter):
    """argparse's help, with its own words (usage, the section titles) in the language in use."""

    def add_usage(self, usage, actions, groups, prefix=None):
        super().add_usage(usage, actions, groups, tr("usage: ") if prefix is None else prefix)

    def start_section(self, heading):
        titles = {"positional arguments": tr("positional arguments"), "options": tr("options"),
                  "optional arguments": tr("options")}
        super().start_section(titles.get(heading, heading))


# --------------------------------------------------------------------------- inspect


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


def inspect_file(path, *, integrity: bool = False) -> tuple[str, dict]:
    """("transcript", report) for a lesson transcript; ("raw", report) for a raw agent file, detected first.

    The kit's reader refuses a line without the envelope; a raw agent file (Claude Code, Codex, seed 002,
    WorkBuddy, or an unknown format) is recognised before it is read as a transcript.
    """
    path = _existing_file(path)
    if detect_format(path) in RAW_FORMATS:
        return "raw", inspect_raw(path)
    return "transcript", inspect_transcript(path, integrity=integrity)


def format_inspection(report: dict) -> str:
    """The inspect report of a transcript as a few readable lines."""
    types = ", ".join(f"{name} {count}" for name, count in sorted(report["by_type"].items())) or tr("none")
    lines = [
        tr("file:          {name}", name=report["file"]),
        tr("events:        {count} ({types})", count=report["events"], types=types),
        tr("last sequence: {sequence}", sequence=report["last_sequence"]),
        tr("partial tail:  {value}", value=_partial_tail_text(report)),
        tr("newer schema:  {count} events kept as evidence, not interpreted", count=report["unknown_schema_events"]),
        tr("integrity:     hash chain verified") if report["chained"] else tr("integrity:     no hash chain"),
    ]
    corruption = report["corruption"]
    if corruption:
        lines.append(tr("CORRUPT:       line {line} (byte {offset}): {reason}", line=corruption["line"],
                        offset=corruption["byte_offset"], reason=corruption["reason"]))
    else:
        lines.append(tr("verdict:       valid"))
    return "\n".join(lines)


def _partial_tail_text(report: dict) -> str:
    if not report["ignored_partial_tail"]:
        return tr("none")
    if report["unfinished_batch"]:
        return tr("ignored (an unfinished batch)")
    return tr("ignored (an unterminated last line)")


def _existing_file(path) -> Path:
    path = Path(path)
    if not path.is_file():
        raise UsageError(tr("no such transcript file: {path}", path=path))
    return path


def _lesson_transcript(path) -> DurableTranscript:
    """The transcript at path, or UsageError naming the format of a raw agent file."""
    path = _existing_file(path)
    refusal = foreign_format_message(path)
    if refusal:
        raise UsageError(refusal)
    return DurableTranscript(path)


# --------------------------------------------------------------------------- import


def format_import_summary(summary: dict) -> str:
    """The import summary as a few readable lines (the --json output holds the same numbers)."""
    lines, written = summary["lines"], summary["records_written"]
    evidence = ", ".join(f"{name} {count}" for name, count in summary["kept_as_evidence"].items()) or tr("none")
    tail = tr("yes ({size} bytes, not imported)", size=summary["partial_tail_bytes"]) \
        if summary["partial_tail"] else tr("no")
    return "\n".join([
        tr("imported:      {source} ({format}) -> {target}", source=summary["source"], format=summary["format"],
           target=summary["target"]),
        tr("source lines:  {total}: {mapped} mapped, {evidence} kept as evidence, {duplicate} duplicates merged, "
           "{blank} blank, {partial_tail} partial tail", total=summary["source_lines"], **lines),
        tr("written:       {count} records ({types}) in {batches} group commits", count=sum(written.values()),
           types=", ".join(f"{name} {count}" for name, count in written.items()), batches=summary["batches"]),
        tr("evidence:      {types}", types=evidence),
        tr("tool calls:    {paired} paired with their result, {unpaired} unpaired, {orphans} results without "
           "their call", paired=summary["tool_calls_paired"], unpaired=summary["tool_calls_unpaired"],
           orphans=summary["results_without_call"]),
        tr("streamed:      {count} lines continued an API message begun on an earlier line",
           count=summary["streamed_lines"]),
        tr("sidechains:    {records} subagent records kept as evidence; {files} subagent files beside it "
           "(import each as its own session)", records=summary["sidechain_records"],
           files=summary["subagent_files"]),
        tr("partial tail:  {value}", value=tail),
    ])


def _run_import(args) -> int:
    summary = import_session(args.file, args.root, source_format=args.format, workspace=args.workspace,
                             session=args.session).as_dict()
    print(json.dumps(summary, indent=2, ensure_ascii=False) if args.json else format_import_summary(summary))
    return 0


# --------------------------------------------------------------------------- the demo and the shell


def new_session(root, workspace: str, name: str) -> DurableTranscript:
    """A new session under root: name-1, or name-2 if that exists, and so on; never an existing file."""
    for number in range(1, 10_000):
        try:
            return DurableTranscript.for_session(root, workspace, f"{name}-{number}", new=True)
        except FileExistsError:
            continue
    raise UsageError(tr("no free session name {name}-N under {root}", name=name, root=root))


def _run_demo(args) -> int:
    root = Path(args.root) if args.root else Path(tempfile.mkdtemp(prefix="s09-demo-"))
    (root / "projects" / "demo" / "session-1.jsonl").unlink(missing_ok=True)  # a rerun in the same --root
    try:
        ok = demo(root, lang=args.lang)
    finally:
        if args.root or args.keep:
            print("\n" + tr("transcripts kept in {folder}", folder=root / "projects" / "demo"))
        else:
            shutil.rmtree(root, ignore_errors=True)
    return 0 if ok else 1


def shell_help() -> str:
    """The shell's list of commands, in the language in use (the commands themselves are typed as they are)."""
    commands = [
        ("user TEXT", tr("append a user message")),
        ("assistant TEXT", tr("append an assistant message")),
        ("reason TEXT", tr("append a reasoning event")),
        ("tool NAME [JSON]", tr("append a function call (arguments as a JSON object)")),
        ("result TEXT", tr("append the result of the oldest pending call")),
        ("title TEXT", tr("append an ai-title")),
        ("replay [N]", tr("print the messages of the last N events")),
        ("recover", tr("validate the whole file and summarise the rebuilt state")),
        ("raw", tr("print the file as it is on disk")),
        ("quit", tr("leave")),
    ]
    return "\n".join([tr("commands:")] + [f"  {command:<20} {text}" for command, text in commands])


def run_shell(transcript: DurableTranscript, lines, out=print) -> None:
    """A small line-oriented shell over one transcript, reading commands from lines."""
    calls = 0
    out(tr("transcript: {path}", path=transcript.path) + "\n" + shell_help())
    for line in lines:
        command, _, text = line.strip().partition(" ")
        try:
            if command in ("quit", "exit"):
                return
            if command in ("", "help"):
                out(shell_help()) if command else None
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
                    out(tr("no pending tool call to answer"))
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
                out(tr("unknown command {command!r} (type help)", command=command))
                continue
            record = transcript.append(event)
            out(tr("appended {event_id} ({type}); jsonl line: {lines}", event_id=record["event_id"],
                   type=record["type"], lines=transcript.count_lines()))
        except (ValueError, TranscriptCorruptionError, TranscriptLockedError) as error:
            out(tr("error: {error}", error=error))


# --------------------------------------------------------------------------- the command line


def language_of(argv) -> str:
    """The language asked for: --lang in argv, else the locale's (so --help is already in it)."""
    for index, argument in enumerate(argv):
        if argument == "--lang" and index + 1 < len(argv) and argv[index + 1] in i18n.LANGUAGES:
            return argv[index + 1]
        if argument.startswith("--lang=") and argument.removeprefix("--lang=") in i18n.LANGUAGES:
            return argument.removeprefix("--lang=")
    return i18n.language_from_environment()


def build_parser() -> argparse.ArgumentParser:
    """The command line's parser, its help in the language in use."""
    def parser_with_help(factory, **options):
        made = factory(formatter_class=HelpFormatter, add_help=False, **options)
        made.add_argument("-h", "--help", action="help", help=tr("show this help and exit"))
        return made

    parser = parser_with_help(_Parser, prog="python -m s09_jsonl_transcript",
                              description=tr("s09 JSONL transcript: the three-act crash demo and tools."))
    parser.add_argument("--root", help=tr("write the demo's transcripts under DIR and keep them"))
    parser.add_argument("--keep", action="store_true", help=tr("keep the demo's temporary folder"))
    parser.add_argument("--lang", choices=i18n.LANGUAGES, default=i18n.current(),
                        help=tr("the language of everything printed (default: zh when the locale is Chinese, else en)"))
    parser.add_argument("--interactive", action="store_true", help=tr("a small shell that appends events"))
    commands = parser.add_subparsers(dest="command", metavar="{inspect,replay,import}")

    def command(name, text):
        made = parser_with_help(lambda **options: commands.add_parser(name, help=text, **options), description=text)
        made.add_argument("--lang", choices=i18n.LANGUAGES, default=argparse.SUPPRESS, help=tr("as above"))
        return made

    inspect = command("inspect", tr("validate and summarise a transcript, or say what the lesson would say about "
                                    "a raw agent file (exit 1 if corrupt or raw)"))
    inspect.add_argument("file")
    inspect.add_argument("--json", action="store_true", help=tr("print the report as JSON"))
    inspect.add_argument("--integrity", action="store_true", help=tr("require the hash chain on every record"))
    replay = command("replay", tr("print the replayed messages as JSON"))
    replay.add_argument("file")
    replay.add_argument("--max-items", type=int, default=SESSION_MAX_ITEMS)
    imported = command("import", tr("import one agent session file as a new transcript under ROOT "
                                    "(the source is never changed)"))
    imported.add_argument("file")
    imported.add_argument("--root", required=True, help=tr("write ROOT/projects/<workspace>/<session>.jsonl"))
    imported.add_argument("--format", choices=FORMAT_CHOICES, default="auto",
                          help=tr("the source's format (default: detected from its first lines)"))
    imported.add_argument("--workspace", help=tr("the workspace folder (default: the session's working folder)"))
    imported.add_argument("--session", help=tr("the new session's id (default: the source's session id)"))
    imported.add_argument("--json", action="store_true", help=tr("print the summary as one JSON object"))
    for sub in (inspect, replay, imported):
        sub.error = parser.error
    return parser


def main(argv=None) -> int:
    """Entry point: returns the process exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    i18n.use(language_of(argv))
    try:
        args = build_parser().parse_args(argv)
        i18n.use(args.lang)
        if args.command == "inspect":
            kind, report = inspect_file(args.file, integrity=args.integrity)
            text = format_inspection(report) if kind == "transcript" else format_raw_inspection(report)
            print(json.dumps({"kind": kind, **report}, indent=2, ensure_ascii=False) if args.json else text)
            return 1 if kind == "raw" or report["corruption"] else 0
        if args.command == "replay":
            if args.max_items < 0:
                raise UsageError(tr("--max-items must be 0 or more"))
            messages = _lesson_transcript(args.file).replay(args.max_items)
            print(json.dumps(messages, indent=2, ensure_ascii=False))
            return 0
        if args.command == "import":
            return _run_import(args)
        if args.interactive:
            root = Path(args.root) if args.root else Path(tempfile.mkdtemp(prefix="s09-shell-"))
            with new_session(root, "shell", "interactive") as transcript:
                run_shell(transcript, sys.stdin)
            return 0
        return _run_demo(args)
    except UsageError as error:
        print(tr("s09: error: {error}", error=error), file=sys.stderr)
        return 2
    except ImportRefused as error:
        print(tr("s09: import refused: {error}", error=error), file=sys.stderr)
        return 1
    except (TranscriptCorruptionError, TranscriptValidationError, OSError) as error:
        print(f"s09: {error}", file=sys.stderr)
        return 1
