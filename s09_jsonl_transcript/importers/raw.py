"""What the lesson would say about a raw agent file: no envelope, complete lines or not, crash risks, tree vs sequence.

    report = inspect_raw(path)          # a dict: counts only, nothing of the file's content
    print(format_raw_inspection(report))

The file is read once, line by line, and never changed. For a format whose records carry
`uuid` and `parentUuid` (Claude Code), the report describes the tree they form: roots, branch
points (a record with two or more children: an edited message, a resumed session), leaves, the
deepest path, and parents that are not in the file.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from ..text import i18n
from .common import parse_line, source_lines
from .detect import CODEX_HISTORY, DAMAGED, EMPTY, ENVELOPE, JSON_DOCUMENT, LESSON, UNKNOWN, detect_format

tr = i18n.translator("raw_report")

NAMES = {"claude-code": "Claude Code", "codex": "Codex CLI", "seed-002": "seed 002", "workbuddy": "WorkBuddy",
         CODEX_HISTORY: "Codex CLI prompt history"}
IDS_WITHOUT_ORDER = ("seed-002", "workbuddy")  # records with a uuid, but no link to the one before
AGENT_CLIS = ("claude-code", "codex")  # documented (by the community) to append without fsync


def inspect_raw(path) -> dict:
    """Counts that describe a raw (non-lesson) JSONL file: lines, damage, and the tree its ids form."""
    path = Path(path)
    report = {"file": path.name, "format": detect_format(path), "lines": 0, "complete_lines": 0,
              "blank_lines": 0, "bad_lines": 0, "first_bad_line": None, "partial_tail_bytes": 0,
              "last_line_unterminated": False, "by_type": Counter(), "envelope_lines": 0}
    tree = _Tree()
    for line in source_lines(path):
        report["lines"] += 1
        report["complete_lines"] += line.terminated
        if not line.raw.strip():
            report["blank_lines"] += 1
            continue
        try:
            record = parse_line(line.raw)
        except ValueError:
            if line.terminated:
                report["bad_lines"] += 1
                report["first_bad_line"] = report["first_bad_line"] or line.number
            else:
                report["partial_tail_bytes"] = len(line.raw)
            continue
        report["last_line_unterminated"] = not line.terminated
        if isinstance(record, dict):
            report["by_type"][str(record.get("type"))] += 1
            report["envelope_lines"] += record.keys() >= ENVELOPE
            tree.add(record)
    report["by_type"] = dict(sorted(report["by_type"].items()))
    report["tree"] = tree.summary() if tree.nodes else None
    return report


class _Tree:
    """The parentUuid links of a file's records, folded one record at a time."""

    def __init__(self):
        self.depth = {}  # uuid -> length of the path from its root (when its parent came first)
        self.children = Counter()
        self.parents = set()
        self.roots = 0

    @property
    def nodes(self) -> int:
        return len(self.depth)

    def add(self, record: dict) -> None:
        uuid, parent = record.get("uuid"), record.get("parentUuid")
        if not isinstance(uuid, str) or "parentUuid" not in record or uuid in self.depth:
            return
        if parent is None:
            self.roots += 1
            self.depth[uuid] = 1
        else:
            self.children[parent] += 1
            self.parents.add(parent)
            self.depth[uuid] = self.depth.get(parent, 0) + 1

    def summary(self) -> dict:
        return {
            "records": self.nodes,
            "roots": self.roots,
            "branch_points": sum(1 for count in self.children.values() if count > 1),
            "leaves": sum(1 for uuid in self.depth if uuid not in self.parents),
            "deepest": max(self.depth.values()),
            "missing_parents": len(self.parents - self.depth.keys()),
        }


def format_name(source_format: str) -> str:
    """The human name of a detected format."""
    if source_format in NAMES:
        return NAMES[source_format]
    if source_format == JSON_DOCUMENT:
        return tr("one JSON document")
    if source_format == DAMAGED:
        return tr("damaged lines")
    return tr("an unknown format") if source_format == UNKNOWN else source_format


def format_raw_inspection(report: dict) -> str:
    """The raw-file report as a few readable lines, saying what the lesson would say."""
    types = ", ".join(f"{name} {count}" for name, count in report["by_type"].items()) or tr("none")
    lines = [
        tr("file:          {name}", name=report["file"]),
        tr("format:        {name} (not the lesson's format)", name=format_name(report["format"])),
        tr("lines:         {lines} ({types})", lines=report["lines"], types=types),
        tr("envelope:      none: no schema_version, sequence, session_id or event_id, so no line says "
           "where it belongs; the lesson's reader refuses the first line"),
        tr("complete:      ") + (_json_document_line(report) if report["format"] == JSON_DOCUMENT
                                   else _completeness(report)),
        _crash_line(report["format"]),
    ]
    lines.extend(_order_lines(report, has_ids=report["format"] in IDS_WITHOUT_ORDER))
    if report["format"] == CODEX_HISTORY:
        lines.append(tr("verdict:       not a session: Codex's list of the prompts typed, of every session; "
                        "import a rollout file under ~/.codex/sessions instead"))
    elif report["format"] == JSON_DOCUMENT:
        lines.append(tr("verdict:       not JSONL, so no transcript and nothing to import"))
    elif report["format"] == DAMAGED:
        lines.append(tr("verdict:       damaged from its first record: the lesson's reader stops at line {line}",
                        line=report["first_bad_line"]))
    elif report["format"] == UNKNOWN:
        lines.append(tr("verdict:       not a lesson transcript, and in no format the kit can import"))
    else:
        lines.append(tr("verdict:       not a lesson transcript: import it (python -m s09_jsonl_transcript import "
                        "{name} --root ROOT) to read it with the kit", name=report["file"]))
    return "\n".join(lines)


def _completeness(report: dict) -> str:
    if report["bad_lines"]:
        return tr("{count} complete lines are not JSON (the first is line {line}): damage in the middle, which "
                  "the lesson never forgives", count=report["bad_lines"], line=report["first_bad_line"])
    if report["partial_tail_bytes"]:
        return tr("the last line is a partial tail ({size} bytes, no newline, not JSON): what a crash in the "
                  "middle of a write leaves; the lesson ignores it and reports it", size=report["partial_tail_bytes"])
    if report["last_line_unterminated"]:
        return tr("every record is whole, but the last one lost its newline")
    return tr("yes: every line ends in a newline and holds one JSON record")


def _json_document_line(report: dict) -> str:
    return tr("no: the file is one JSON document written over {lines} lines (pretty-printed), not JSONL, which "
              "holds one whole record per line; its lines are not damaged records", lines=report["lines"])


def _crash_line(source_format: str) -> str:
    if source_format in AGENT_CLIS:
        return tr("after a crash: this agent appends without fsync and has no sequence: a crash can leave a partial "
                  "tail, and a power cut can lose lines it already showed, with nothing in the file to say so; "
                  "on resume it skips lines it cannot parse, where the lesson's reader stops and names the line")
    return tr("after a crash: nothing in the file says whether its writer synced each line, and with no sequence a "
              "lost line leaves no gap to see; a crash can also leave a partial tail")


def _order_lines(report: dict, *, has_ids: bool) -> list[str]:
    tree = report["tree"]
    if tree is None and has_ids:
        return [tr("order:         the file's order only: each record has a uuid (an idempotency key), but none "
                   "says what came before it, so a lost line leaves no trace; a sequence number would show the "
                   "gap at once")]
    if tree is None:
        return [tr("order:         the file's order only: no ids link the records, so a lost line leaves no "
                   "trace; a sequence number would show the gap at once")]
    return [
        tr("order:         a tree, not a sequence: {records} records linked by parentUuid, {roots} roots, "
           "{branches} branch points, {leaves} leaves, the deepest path {deepest} records long, {missing} "
           "parents not in the file", records=tree["records"], roots=tree["roots"],
           branches=tree["branch_points"], leaves=tree["leaves"], deepest=tree["deepest"],
           missing=tree["missing_parents"]),
        tr("tree:          gives branches (an edit, a resume) without rewriting a line; costs an index of every "
           "uuid to find the conversation (walk back from a leaf), and a lost line silently cuts off what "
           "hangs below it"),
        tr("sequence:      costs a new file for a branch (a fork); gives a gap check for free (next = last + 1) "
           "and a tail read from the end of the file with no index"),
    ]


def foreign_format_message(path) -> str | None:
    """A one-line refusal naming the format of a raw agent file, or None for a lesson transcript or an empty file.

    For any reader of the kit that meets a file before reading it as a transcript.
    """
    found = detect_format(path)
    if found in (LESSON, EMPTY, DAMAGED):
        return None  # a damaged file is the reader's to refuse: it names the line
    if found == CODEX_HISTORY:
        return tr("{name} is Codex CLI's prompt history (one session_id, ts and text per prompt typed), not a "
                  "session and not a transcript: it cannot be replayed or imported", name=Path(path).name)
    if found == JSON_DOCUMENT:
        return tr("{name} is one JSON document written over several lines, not JSONL: not a transcript",
                  name=Path(path).name)
    return tr("{name} is a {format} file, not a transcript in the lesson's format (its lines have no envelope): "
              "import it first (python -m s09_jsonl_transcript import {name} --root ROOT)",
              name=Path(path).name, format=format_name(found))
