"""Notebook 10, your own agent's transcript: a real agent's file seen through the lesson, imported, replayed.

The notebook writes an importer for Codex CLI's format in its cells; with the kit's importers it imports the
bundled synthetic samples (importers.SAMPLES), and this module says what they did: the import summary, a
turn's events, damaged copies for the lesson's rules (a partial tail, a bad line in the middle), the tree of
Claude Code's parentUuid links against the sequence the import gives, and finally the student's own
sessions when there are any. That last step
prints counts only, never a file name, a path or a line of content, so a saved notebook holds
nothing of the machine it ran on.

Every sentence is in the language in use (i18n.use); the Chinese is in locale/zh/your_agents_transcript.json.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ..code import TYPE_AI_TITLE, TYPE_MESSAGE
from ..importers import ImportRefused, ImportSummary, import_session
from ..lab import DurableTranscript
from ..text import i18n

tr = i18n.translator("your_agents_transcript")

OWN_SESSION_LIMIT = 3  # the newest sessions of each agent imported by the last cell
CLAUDE_FOLDER = (".claude", "projects")
CODEX_FOLDER = (".codex", "sessions")
AGENT_HOME_VARIABLE = "S09_AGENT_HOME"


def target_name(summary: ImportSummary) -> str:
    """The imported transcript's path below the root: projects/<workspace>/<session>.jsonl."""
    return "/".join(Path(summary.target).parts[-3:])


def summary_text(summary: ImportSummary) -> str:
    """The import summary as a few sentences, every line of the source accounted for."""
    lines = summary.as_dict()["lines"]
    written = ", ".join(f"{name} {count}" for name, count in sorted(summary.records_written.items()))
    evidence = ", ".join(f"{name} {count}" for name, count in sorted(summary.kept_as_evidence.items())) or tr("none")
    return "\n".join([
        tr("written to {target}", target=target_name(summary)),
        tr("{total} source lines = {mapped} mapped + {evidence} kept as evidence + {duplicate} duplicates merged "
           "+ {blank} blank + {partial_tail} partial tail", total=summary.source_lines, **lines),
        tr("records written: {types}", types=written),
        tr("kept as evidence, by source type: {types}", types=evidence),
        tr("tool calls: {paired} paired, {unpaired} unpaired; streamed lines joined: {streamed}; "
           "sidechain records: {sidechain}", paired=summary.tool_calls_paired,
           unpaired=summary.tool_calls_unpaired, streamed=summary.streamed_lines,
           sidechain=summary.sidechain_records),
    ])


def is_user_text(event: dict) -> bool:
    """True for a message the user typed (not a tool result, which the lesson keeps as its own type)."""
    return event["type"] == TYPE_MESSAGE and event["role"] == "user" and isinstance(event["content"], str)


def events_text(events: list, width: int = 88) -> str:
    """One line per event: its sequence, type and a short view of what it holds."""
    shown = []
    for event in events:
        if event["type"] == TYPE_MESSAGE:
            body = f"{event['role']}: {event['content']}" if isinstance(event["content"], str) else event["role"]
        elif event["type"] == TYPE_AI_TITLE:
            body = event["title"]
        else:
            body = event.get("source_type") or event.get("name") or ""
        line = f"{event['sequence']:>3}  {event['type']:<22} {body}"
        shown.append(line if len(line) <= width else line[:width - 1] + "…")
    return "\n".join(shown)


def damaged_copy(source, folder, how: str) -> Path:
    """A copy of source in folder, damaged as a crash would ("partial tail") or as corruption ("bad line")."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / Path(source).name
    data = Path(source).read_bytes()
    if how == "partial tail":
        data += data.split(b"\n")[2][:40]  # the first 40 bytes of a record, as an append cut short leaves them
    elif how == "bad line":
        lines = data.split(b"\n")
        lines[len(lines) // 2] = lines[len(lines) // 2][:-7]  # a record cut short, with its newline: not a crash
        data = b"\n".join(lines)
    else:
        raise ValueError(f"how must be 'partial tail' or 'bad line', not {how!r}")
    copy.write_bytes(data)
    return copy


def branch_points(events: list) -> dict:
    """Source uuid -> the events whose parent it is, for the uuids with two or more children (a branch)."""
    children = {}
    for event in events:
        parent = event.get("source", {}).get("parent_uuid")
        if parent and event["source"].get("uuid") not in {e["source"].get("uuid") for e in children.get(parent, [])}:
            children.setdefault(parent, []).append(event)
    return {parent: kids for parent, kids in children.items() if len(kids) > 1}


def walk_to_root(events: list, leaf_uuid: str) -> list:
    """The events on the path from the record leaf_uuid back to its root, root first (the tree's conversation)."""
    by_uuid = {}
    for event in events:
        uuid = event.get("source", {}).get("uuid")
        if uuid is not None:
            by_uuid.setdefault(uuid, event)
    path, uuid, seen = [], leaf_uuid, set()
    while uuid in by_uuid and uuid not in seen:  # a file could hold a cycle: stop rather than loop
        seen.add(uuid)
        path.append(by_uuid[uuid])
        uuid = by_uuid[uuid]["source"].get("parent_uuid")
    return path[::-1]


def tree_text(events: list) -> str:
    """What the tree holds that the sequence flattens: the branch, and the conversation the title names."""
    lines = []
    for parent, kids in branch_points(events).items():
        lines.append(tr("a branch: {count} records share one parent; the sequence keeps them all, in file order:",
                        count=len(kids)))
        lines.extend(f"    {kid['sequence']:>3}  {kid['content']}" for kid in kids if kid["type"] == TYPE_MESSAGE)
    titles = [e for e in events if e["type"] == TYPE_AI_TITLE and e["source"].get("leaf_uuid")]
    if titles:
        path = walk_to_root(events, titles[-1]["source"]["leaf_uuid"])
        on_path = {event["sequence"] for event in path}
        left_out = [e for e in events if e["sequence"] not in on_path and is_user_text(e)]
        lines.append(tr("walking parentUuid back from the leaf the title names: {path} events of {total}; the user "
                        "messages left out: {left}", path=len(path), total=len(events),
                        left=", ".join(str(e["sequence"]) for e in left_out) or tr("none")))
    return "\n".join(lines)


def own_session_files(home) -> dict:
    """The main session files of each agent under home (subagent files aside), newest first."""
    home = Path(home)
    found = {
        "Claude Code": [path for path in home.joinpath(*CLAUDE_FOLDER).glob("*/*.jsonl")
                        if not path.name.startswith("agent-")],
        "Codex CLI": list(home.joinpath(*CODEX_FOLDER).glob("*/*/*/rollout-*.jsonl")),
    }
    return {agent: sorted(paths, key=lambda path: path.stat().st_mtime, reverse=True)
            for agent, paths in found.items() if paths}


def agent_home() -> Path:
    """Where the agents' folders are looked for: $S09_AGENT_HOME when set (automated runs point it at an empty
    folder, so they never read a machine's sessions), else the user's home."""
    return Path(os.environ.get(AGENT_HOME_VARIABLE) or Path.home())


def own_sessions(home=None, limit: int = OWN_SESSION_LIMIT) -> str:
    """Import the newest sessions of the student's own agents into a temporary root, and say what was found.

    Only counts are printed: no file name, path, id or content. Without such sessions: one sentence.
    """
    found = own_session_files(agent_home() if home is None else home)
    if not found:
        return tr("No Claude Code or Codex sessions on this machine (~/.claude/projects, ~/.codex/sessions): "
                  "nothing to import here; the samples above show what an import does.")
    lines = []
    with tempfile.TemporaryDirectory(prefix="s09-own-") as root:
        for agent, paths in found.items():
            lines.append(tr("{agent}: {count} sessions found; importing the newest {shown}", agent=agent,
                            count=len(paths), shown=min(limit, len(paths))))
            for number, path in enumerate(paths[:limit], start=1):
                lines.append(f"  {number}. " + _own_session_line(path, Path(root), number))
    return "\n".join(lines)


def _own_session_line(path: Path, root: Path, number: int) -> str:
    try:
        summary = import_session(path, root, workspace="own", session=f"session-{number}-{path.stat().st_mtime_ns}")
    except ImportRefused:
        return tr("refused: run the import command on it to see why (nothing was written)")
    return tr("{lines} lines: {mapped} mapped, {evidence} kept as evidence, {duplicates} duplicates merged; "
              "{calls} tool calls ({unpaired} unpaired); partial tail: {tail}", lines=summary.source_lines,
              mapped=summary.lines["mapped"], evidence=summary.lines["evidence"],
              duplicates=summary.lines["duplicate"], calls=summary.tool_calls_paired + summary.tool_calls_unpaired,
              unpaired=summary.tool_calls_unpaired, tail=tr("yes") if summary.partial_tail else tr("no"))


def refused_text(error: Exception) -> str:
    """A refusal, as the notebook prints it (the library's message in the language in use)."""
    return tr("refused: {error}", error=i18n.library_text(error))


def files_under(root) -> str:
    """How many transcript files a root holds (0 when it does not exist)."""
    count = len(list(Path(root).rglob("*.jsonl"))) if Path(root).exists() else 0
    return tr("transcript files under that root: {count}", count=count)


def pending_text(summary: ImportSummary) -> str:
    """What replay rebuilds from an imported session: its messages and the tool calls still waiting."""
    state = DurableTranscript(summary.target).replay_state()
    pending = ", ".join(f"{call['name']} ({call['callId']})" for call in state.pending_calls) or tr("none")
    return tr("{format}: {messages} messages; pending calls: {pending}", format=summary.format,
              messages=len(state.messages), pending=pending)
