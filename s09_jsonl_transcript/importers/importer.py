"""Import one agent session file into a new transcript in the lesson's format.

    summary = import_session("~/.claude/projects/-home-me-calc/1f0e....jsonl", root)
    summary.target        # root/projects/<workspace>/<session>.jsonl
    summary.as_dict()     # every source line accounted for

The source is read twice and never written. The first pass checks every line and counts what the
import will write, without writing; a bad complete line, a file of another format or an empty file
is refused there, before the target exists. The second pass creates the target exclusively (an
existing session is refused) and writes through the lab's DurableTranscript with group commit, in
chunks of at most CHUNK_EVENTS events, so memory stays bounded however long the source is. If the
second pass fails, the target it created is removed: nothing is left half written. A crash of the
importing process itself can still leave a valid prefix of the target: remove it and import again.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from ..code import TYPE_FUNCTION_CALL, TYPE_FUNCTION_CALL_RESULT, TranscriptValidationError
from ..lab import DurableTranscript
from ..text import i18n
from . import claude_code
from .common import (
    BLANK,
    PARTIAL_TAIL,
    TYPE_SOURCE_RECORD,
    ImportRefused,
    ImportSummary,
    SecondSession,
    key_of,
    parse_line,
    source_lines,
)
from .detect import (
    CODEX_HISTORY,
    DAMAGED,
    EMPTY,
    IMPORTABLE,
    JSON_DOCUMENT,
    LESSON,
    MAPPERS,
    UNKNOWN,
    detect_format,
)

tr = i18n.translator("importer")

AUTO = "auto"
FORMAT_CHOICES = (AUTO,) + IMPORTABLE
CHUNK_EVENTS = 512  # events per group commit: one write and one fsync
CHUNK_BYTES = 4 * 1024 * 1024  # ...or fewer, when their source lines hold this many bytes
DEFAULT_WORKSPACE = "imported"
MAX_NAME = 128
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def import_session(source, root, *, source_format: str = AUTO, workspace: str | None = None,
                   session: str | None = None, clock=None, dry_run: bool = False,
                   chunk_events: int = CHUNK_EVENTS) -> ImportSummary:
    """Import one session file under root as a new transcript; return the summary (ImportRefused if it cannot).

    With dry_run=True nothing is written: the summary says what the import would write.
    """
    source = Path(source)
    chosen = _chosen_format(source, source_format)
    planned = _convert(source, MAPPERS[chosen], None, chunk_events)
    planned.workspace = _safe_name(workspace or planned.workspace or DEFAULT_WORKSPACE)
    planned.session_id = _safe_name(session or planned.session_id or source.stem)
    if chosen == claude_code.FORMAT:
        planned.subagent_files = len(claude_code.subagent_files_beside(source))
    if dry_run:
        return planned
    transcript = _new_target(root, planned, clock)
    try:
        written = _convert(source, MAPPERS[chosen], transcript, chunk_events, stop_at=planned.bytes_read)
        _check_same(planned, written)
    except BaseException:
        transcript.close()
        transcript.path.unlink(missing_ok=True)  # ours alone: created exclusively, never acknowledged
        raise
    transcript.close()
    planned.target = str(transcript.path)
    planned.batches = written.batches
    return planned


def _chosen_format(source: Path, source_format: str) -> str:
    """The format to import source as, or ImportRefused (missing, empty, a transcript already, another format)."""
    if source_format not in FORMAT_CHOICES:
        raise ImportRefused(tr("unknown format {name!r}: choose one of {choices}", name=source_format,
                               choices=", ".join(FORMAT_CHOICES)))
    if not source.is_file():
        raise ImportRefused(tr("no such file: {name}", name=source.name))
    detected = detect_format(source)
    if detected == EMPTY:
        raise ImportRefused(tr("{name} holds no complete record (it is empty, or its only line is a partial tail): "
                               "nothing to import, nothing written", name=source.name))
    if detected == LESSON:
        raise ImportRefused(tr("{name} is already a transcript in the lesson's format (its lines have the "
                               "envelope): inspect or replay it as it is; nothing written", name=source.name))
    if detected in (CODEX_HISTORY, JSON_DOCUMENT, DAMAGED):
        raise ImportRefused(_not_a_session(source, detected))
    if detected == UNKNOWN:
        raise ImportRefused(tr("{name} is in no format the kit can import: none of its first lines is a record "
                               "of {choices}; nothing written", name=source.name, choices=", ".join(IMPORTABLE)))
    if source_format not in (AUTO, detected):
        raise ImportRefused(tr("{name} is not a {expected} session: its records are {found} records; "
                               "nothing written", name=source.name, expected=source_format, found=detected))
    return detected


def _not_a_session(source: Path, detected: str) -> str:
    """Why a file that is no agent session is refused: what it is, in one sentence."""
    if detected == CODEX_HISTORY:
        return tr("{name} is Codex CLI's prompt history (~/.codex/history.jsonl: one session_id, ts and text per "
                  "prompt typed, of every session), not a session: import the session's rollout file under "
                  "~/.codex/sessions instead; nothing written", name=source.name)
    if detected == JSON_DOCUMENT:
        return tr("{name} is one JSON document written over several lines (pretty-printed), not JSONL, which "
                  "holds one record per line: nothing to import, nothing written", name=source.name)
    line = next(line for line in source_lines(source) if line.raw.strip())
    return tr("line {line} (byte {offset}) of {name} is a complete line but not JSON, and no line before it is a "
              "record: the file is damaged from its first record; nothing written",
              line=line.number, offset=line.offset, name=source.name)


def _new_target(root, planned: ImportSummary, clock) -> DurableTranscript:
    try:
        return DurableTranscript.for_session(root, planned.workspace, planned.session_id, new=True, clock=clock)
    except FileExistsError:
        raise ImportRefused(tr("the session {workspace}/{session} already exists under this root: it was imported "
                               "before, or another session has its name (pass --session NAME); nothing written",
                               workspace=planned.workspace, session=planned.session_id)) from None


def _safe_name(name: str) -> str:
    """name as one safe path component: characters other than letters, digits, '.', '_' and '-' become '-'."""
    cleaned = re.sub(r"\.{2,}", ".", _UNSAFE.sub("-", name)).lstrip(".-")[:MAX_NAME]  # ".." could climb out
    return cleaned or DEFAULT_WORKSPACE


def _convert(source: Path, module, transcript: DurableTranscript | None, chunk_events: int,
             stop_at: int | None = None) -> ImportSummary:
    """One pass over the source: each line's outcome counted, its events written when transcript is given."""
    summary = ImportSummary(source=source.name, format=module.FORMAT)
    mapper = module.Mapper(source)
    calls, results = Counter(), Counter()
    pending, pending_bytes = [], 0
    for line in source_lines(source, stop_at=stop_at):
        summary.source_lines += 1
        summary.bytes_read = line.offset + len(line.raw) + line.terminated
        try:
            outcome, events = _line_outcome(line, mapper, module.FORMAT, summary)
        except SecondSession as second:
            raise ImportRefused(tr("{name} holds two sessions: line {line} (byte {offset}) begins session {second} "
                                   "after session {first}; split the file at that byte (head -c {offset}, "
                                   "tail -c +{next}) and import each part; nothing written", name=source.name,
                                   line=line.number, offset=line.offset, next=line.offset + 1,
                                   second=second.second, first=second.first)) from None
        summary.lines[outcome] += 1
        for event in events:
            _count_event(event, summary, calls, results)
        if transcript is not None and events:
            pending.extend(events)
            pending_bytes += len(line.raw)
            if len(pending) >= chunk_events or pending_bytes >= CHUNK_BYTES:
                _commit(transcript, pending, summary)
                pending, pending_bytes = [], 0
    held = mapper.finish()  # records that waited for a parent to the end of the source
    for event in held:
        _count_event(event, summary, calls, results)
    pending.extend(held if transcript is not None else [])
    if transcript is not None and pending:
        _commit(transcript, pending, summary)
    summary.workspace, summary.session_id = mapper.workspace_hint or "", mapper.session_hint or ""
    summary.streamed_lines, summary.sidechain_records = mapper.streamed_lines, mapper.sidechain_records
    summary.tool_calls_paired = sum(n for call_id, n in calls.items() if call_id in results)
    summary.tool_calls_unpaired = sum(calls.values()) - summary.tool_calls_paired
    summary.results_without_call = sum(n for call_id, n in results.items() if call_id not in calls)
    return summary


def _line_outcome(line, mapper, source_format: str, summary: ImportSummary):
    """(outcome, events) of one source line, or ImportRefused naming the line."""
    if not line.raw.strip():
        return BLANK, []
    try:
        record = parse_line(line.raw)
    except ValueError:
        if not line.terminated:
            summary.partial_tail_bytes = len(line.raw)
            return PARTIAL_TAIL, []
        raise ImportRefused(tr("line {line} (byte {offset}) of {name} is a complete line but not JSON: the "
                               "evidence is damaged in the middle; nothing written", line=line.number,
                               offset=line.offset, name=summary.source)) from None
    if not isinstance(record, dict):
        raise ImportRefused(tr("line {line} (byte {offset}) of {name} is JSON but not an object; nothing written",
                               line=line.number, offset=line.offset, name=summary.source))
    return mapper.convert(record, {"format": source_format, "line": line.number}, line.raw)


def _count_event(event: dict, summary: ImportSummary, calls: Counter, results: Counter) -> None:
    summary.records_written[event["type"]] += 1
    if event["type"] == TYPE_SOURCE_RECORD:
        summary.kept_as_evidence[event["source_type"]] += 1
    elif event["type"] == TYPE_FUNCTION_CALL:
        calls[key_of(event["callId"], "call")] += 1  # compact keys: the pairing grows with the session
    elif event["type"] == TYPE_FUNCTION_CALL_RESULT:
        results[key_of(event["callId"], "call")] += 1


def _commit(transcript: DurableTranscript, events: list, summary: ImportSummary) -> None:
    try:
        transcript.append_batch(events)
    except TranscriptValidationError as error:
        raise ImportRefused(tr("the writer refused an event of {name}: {error}; nothing written",
                               name=summary.source, error=error)) from None
    summary.batches += 1


def _check_same(planned: ImportSummary, written: ImportSummary) -> None:
    """The second pass must write what the first counted; the source changed under us otherwise."""
    if planned.lines != written.lines or planned.records_written != written.records_written:
        raise ImportRefused(tr("{name} changed while it was imported (its lines differ between the two passes); "
                               "nothing written", name=planned.source))
