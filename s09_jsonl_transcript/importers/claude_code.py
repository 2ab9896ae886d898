"""Claude Code sessions (~/.claude/projects/<cwd with / as ->/<session uuid>.jsonl) to the lesson's events.

The format is documented by the community, not by its authors. Each line is a record whose `type` is
user, assistant, system, summary, progress, file-history-snapshot or queue-operation; conversation
records carry `uuid`, `parentUuid` (a tree, not a sequence), `sessionId`, `timestamp`, `isSidechain`,
`cwd` and `version`. `message.content` is a string or a list of text, thinking, tool_use and
tool_result blocks, and one API message is often written as several lines sharing `message.id`, one
block each.

    user / assistant text   -> message            thinking            -> reasoning
    tool_use                -> function_call      tool_result         -> function_call_result
    file-history-snapshot   -> file-history-snapshot                  summary -> ai-title
    anything else (system, progress, queue-operation, images, newer types) -> source-record (evidence)

Duplicates: a line whose uuid was seen before, or a block of an API message (message.id) identical to
one already imported (the last RECENT_MESSAGES API messages are remembered), is merged: counted, not
written again. Sidechains: inside a main session, records with isSidechain true belong to a subagent;
they are kept as evidence, so replay never mixes a subagent's turns into the main conversation. A
subagent's own file (agent-*.jsonl) is a session of its own: import it by itself, and there its records
are its conversation.

What a chat API must accept when the import is replayed:
- Meta lines are not prompts: a user record with isMeta true, a slash command's echo (<command-name>,
  <command-message>, <local-command-stdout> and friends) and "[Request interrupted by user...]" are kept
  as evidence (`user meta`). A slash command given arguments is the user's request, though: its
  <command-args> text becomes the user's message (the command is kept in the event's source).
- A text block (or string content) holding only white space is kept as evidence (`<role> blank text`).
- A tool_use id, or a tool_result's tool_use_id, imported before is merged (a resumed session repeats
  earlier results under new uuids): each call is answered once.
- Parallel tool calls are written in the order they finished, so a result can come before the next call
  in the file; the parentUuid tree holds the real order. A conversation record whose parent has not been
  imported yet is held back until its parent is (at most HOLD_LINES lines, then in file order): the
  events follow the tree, not the file.
- The API's grouping is kept: the parallel calls of one API message (message.id) are written together,
  and the results that answer them wait until the message's last call is out, then follow, before any
  other conversation event. Evidence (progress records and the like) interleaving them does not count.

Two sessions: a conversation record that starts a new tree (parentUuid null) with another sessionId, after
the first session's records, means two files were concatenated: the import is refused (SecondSession).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import OrderedDict
from pathlib import Path

from ..code import (
    TYPE_AI_TITLE,
    TYPE_FILE_SNAPSHOT,
    TYPE_FUNCTION_CALL,
    TYPE_FUNCTION_CALL_RESULT,
    TYPE_MESSAGE,
    TYPE_REASONING,
)
from .common import DUPLICATE, EVIDENCE, MAPPED, SecondSession, evidence, is_blank_text, key_of, seen_before

FORMAT = "claude-code"
RECORD_TYPES = frozenset({"user", "assistant", "system", "summary", "progress", "file-history-snapshot",
                          "queue-operation"})
TREE_FIELDS = ("uuid", "parentUuid", "sessionId")
RECENT_MESSAGES = 256  # API messages whose blocks are remembered, to merge a repeated block (memory stays flat)
HOLD_LINES = 64  # how long a record waits for a parent that has not come yet, in source lines
COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.S)
COMMAND_NAME = re.compile(r"<command-name>(.*?)</command-name>", re.S)
META_PREFIXES = ("<command-name>", "<command-message>", "<command-args>", "<local-command-stdout>",
                 "<local-command-stderr>", "<local-command-caveat>", "[Request interrupted by user")


def looks_like(record) -> bool:
    """True when one parsed line looks like a Claude Code record."""
    if not isinstance(record, dict) or record.get("type") not in RECORD_TYPES:
        return False
    return any(name in record for name in TREE_FIELDS) or record["type"] in ("summary", "file-history-snapshot")


def is_subagent_file(path) -> bool:
    """True for a subagent's own session file: agent-*.jsonl."""
    return Path(path).name.startswith("agent-")


def subagent_files_beside(path) -> list[Path]:
    """The subagent files that belong with a main session: <session>/subagents/agent-*.jsonl."""
    path = Path(path)
    if is_subagent_file(path):
        return []
    return sorted((path.parent / path.stem / "subagents").glob("agent-*.jsonl"))


class Mapper:
    """Turns Claude Code records, one at a time, into lesson events (see the module's table)."""

    format = FORMAT

    def __init__(self, source_path):
        self.subagent_file = is_subagent_file(source_path)
        self.session_hint = None  # the sessionId the records carry
        self.workspace_hint = None  # the last folder of their cwd
        self.streamed_lines = 0
        self.sidechain_records = 0
        self._seen_uuids = set()  # compact keys (common.key_of) of every uuid imported
        self._answered = set()  # compact keys of the tool_use ids and tool_result ids imported
        self._blocks_of_message = OrderedDict()  # message.id -> fingerprints of its blocks already imported
        self._held = []  # [uuid key, parent key, events, lines waited]: records waiting for their parent
        self._first_session = None  # the sessionId of the first conversation record
        self._conversation_seen = False
        self._group = None  # the API message (message.id) whose parallel calls were written last
        self._group_calls = set()  # their call ids
        self._group_results = []  # results of those calls that wait for the message's last call

    def convert(self, record: dict, provenance: dict, raw: bytes = b"") -> tuple[str, list[dict]]:
        """(outcome, events) for one record; provenance is the line's, and is extended with the record's own.

        The events returned are those ready to be written: this record's, unless it waits for its parent,
        and those of held records whose parent has now come.
        """
        outcome, events = self._outcome(record, provenance)
        return outcome, self._grouped(self._in_tree_order(record, outcome, events))

    def finish(self) -> list[dict]:
        """The events still held at the end of the source (their parent never came, or the results of the
        last parallel calls), in file order."""
        released = [event for held in self._held for event in held[2]]
        self._held = []
        return self._grouped(released) + self._end_group()

    def _outcome(self, record: dict, provenance: dict) -> tuple[str, list[dict]]:
        if seen_before(record, self._seen_uuids):
            return DUPLICATE, []
        self._check_one_session(record)
        self._learn_names(record)
        provenance = {**provenance, **_own_provenance(record)}
        kind = record.get("type")
        if record.get("isSidechain") is True and not self.subagent_file:
            self.sidechain_records += 1
            return EVIDENCE, [{**evidence(record, f"sidechain {kind}"), "source": provenance}]
        arguments = command_arguments(_message_content(record)) if kind == "user" else None
        if arguments is not None:  # a slash command's arguments: the user's own request
            command = COMMAND_NAME.search(_text(_message_content(record)))
            source = {**provenance, "command": command.group(1).strip()} if command else provenance
            return MAPPED, [{"type": TYPE_MESSAGE, "role": "user", "content": arguments, "source": source}]
        if kind == "user" and (record.get("isMeta") is True or is_meta_text(_message_content(record))):
            return EVIDENCE, [{**evidence(record, "user meta"), "source": provenance}]
        if kind in ("user", "assistant"):
            return self._conversation(record, kind, provenance)
        if kind == "summary" and isinstance(record.get("summary"), str):
            event = {"type": TYPE_AI_TITLE, "title": record["summary"], "source": provenance}
            if isinstance(record.get("leafUuid"), str):
                event["source"] = {**provenance, "leaf_uuid": record["leafUuid"]}  # the conversation it names
            return MAPPED, [event]
        if kind == "file-history-snapshot":
            return MAPPED, [_snapshot(record, provenance)]
        return EVIDENCE, [{**evidence(record, str(kind)), "source": provenance}]

    def _check_one_session(self, record: dict) -> None:
        """SecondSession when a new tree of another sessionId starts after this session's records."""
        if record.get("type") not in ("user", "assistant") or record.get("isSidechain") is True:
            return
        session = record.get("sessionId")
        if self._conversation_seen and record.get("parentUuid", "") is None and isinstance(session, str) \
                and self._first_session is not None and session != self._first_session:
            raise SecondSession(self._first_session, session)
        if self._first_session is None and isinstance(session, str):
            self._first_session = session
        self._conversation_seen = True

    def _in_tree_order(self, record: dict, outcome: str, events: list) -> list:
        """This record's events now, or held until its parent's are written; plus the held ones now free."""
        uuid, parent = record.get("uuid"), record.get("parentUuid")
        ready = list(events)
        if outcome != DUPLICATE and isinstance(uuid, str) and isinstance(parent, str):
            parent_key = key_of(parent)
            if parent_key not in self._seen_uuids or self._is_held(parent_key):
                self._held.append([key_of(uuid), parent_key, events, 0])
                ready = []
        for held in self._held:
            held[3] += 1
        return ready + self._released()

    def _grouped(self, events: list) -> list:
        """events as the API grouped them: the results of one API message's parallel calls wait until that
        message's last call is out, then follow it before any other conversation event."""
        out = []
        for event in events:
            kind, message_id = event["type"], event["source"].get("message_id")
            if kind == TYPE_FUNCTION_CALL:
                if message_id is None or message_id != self._group:
                    out += self._end_group()
                    self._group = message_id
                self._group_calls.add(event["callId"])
                out.append(event)
            elif kind == TYPE_FUNCTION_CALL_RESULT and event["callId"] in self._group_calls:
                self._group_results.append(event)
            elif kind in (TYPE_MESSAGE, TYPE_REASONING, TYPE_FUNCTION_CALL_RESULT) and not (
                    message_id is not None and message_id == self._group):
                out += self._end_group()
                out.append(event)
            else:  # evidence, titles, snapshots, and text of the grouped message itself: no conversation turn
                out.append(event)
        return out

    def _end_group(self) -> list:
        """The results held for the last API message's calls; the group ends."""
        results = self._group_results
        self._group, self._group_calls, self._group_results = None, set(), []
        return results

    def _is_held(self, key: int) -> bool:
        return any(held[0] == key for held in self._held)

    def _released(self) -> list:
        """The events of held records whose parent is written (or that waited HOLD_LINES lines), in order."""
        released = []
        while self._held:
            free = next((held for held in self._held
                         if held[1] in self._seen_uuids and not self._is_held(held[1])), None)
            if free is None and self._held[0][3] > HOLD_LINES:
                free = self._held[0]  # its parent is not coming: write it in file order
            if free is None:
                break
            self._held.remove(free)
            released.extend(free[2])
        return released

    def _learn_names(self, record: dict) -> None:
        # a subagent's file carries its parent's sessionId: its own name is the file's
        if self.session_hint is None and not self.subagent_file and isinstance(record.get("sessionId"), str):
            self.session_hint = record["sessionId"]
        if self.workspace_hint is None and isinstance(record.get("cwd"), str):
            self.workspace_hint = Path(record["cwd"]).name or None

    def _conversation(self, record: dict, role: str, provenance: dict) -> tuple[str, list[dict]]:
        message = record.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            if is_blank_text(content):
                return EVIDENCE, [{**evidence(record, f"{role} blank text"), "source": provenance}]
            return MAPPED, [{"type": TYPE_MESSAGE, "role": role, "content": content, "source": provenance}]
        if not isinstance(content, list) or not content:
            return EVIDENCE, [{**evidence(record, role), "source": provenance}]
        blocks = self._new_blocks(message, content)
        blocks = [block for block in blocks if self._first_answer(block)] if blocks is not None else None
        if not blocks:
            return DUPLICATE, []
        events = [_block_event(block, role, record, provenance) for block in blocks]
        return (MAPPED if any(e["type"] != "source-record" for e in events) else EVIDENCE), events

    def _first_answer(self, block) -> bool:
        """False for a tool_use or tool_result whose id was imported before (a resumed session repeats them)."""
        kind = block.get("type") if isinstance(block, dict) else None
        call_id = block.get("id") if kind == "tool_use" else block.get("tool_use_id") if kind == "tool_result" else None
        if not isinstance(call_id, str):
            return True
        key = key_of(call_id, kind)
        if key in self._answered:
            return False
        self._answered.add(key)
        return True

    def _new_blocks(self, message: dict, content: list) -> list | None:
        """The blocks of this line not yet imported for its API message; None when all of them were."""
        message_id = message.get("id")
        if not isinstance(message_id, str):
            return content
        continues = message_id in self._blocks_of_message
        seen = self._blocks_of_message.setdefault(message_id, set())
        self._blocks_of_message.move_to_end(message_id)
        if len(self._blocks_of_message) > RECENT_MESSAGES:
            self._blocks_of_message.popitem(last=False)  # a streamed message's lines follow one another
        fingerprints = [_fingerprint(block) for block in content]
        fresh = [block for block, fingerprint in zip(content, fingerprints) if fingerprint not in seen]
        seen.update(fingerprints)
        if not fresh:
            return None  # every block was imported from an earlier line: a repeat, merged
        self.streamed_lines += continues
        return fresh


def _message_content(record: dict):
    message = record.get("message")
    return message.get("content") if isinstance(message, dict) else None


def _text(content) -> str:
    """The text of a user content: the string, or its text blocks joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(block["text"] for block in content
                         if isinstance(block, dict) and isinstance(block.get("text"), str))
    return ""


def command_arguments(content) -> str | None:
    """The arguments of a slash command's echo (<command-args>), when it has any that are not blank."""
    text = _text(content)
    if "<command-name>" not in text:
        return None
    found = COMMAND_ARGS.search(text)
    return found.group(1).strip() if found and found.group(1).strip() else None


def is_meta_text(content) -> bool:
    """True for a user content that is Claude Code's own note, not a prompt: a command's echo, an interruption."""
    if isinstance(content, list):
        texts = [block.get("text") for block in content if isinstance(block, dict) and block.get("type") == "text"]
        return bool(texts) and len(texts) == len(content) and all(is_meta_text(text) for text in texts)
    return isinstance(content, str) and content.lstrip().startswith(META_PREFIXES)


def _fingerprint(block) -> bytes:
    """16 bytes that stand for one content block: the importer keeps these, not the blocks."""
    text = json.dumps(block, sort_keys=True, ensure_ascii=False)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _own_provenance(record: dict) -> dict:
    """The record's ids and place in the tree, kept on every event made from it."""
    message = record.get("message") if isinstance(record.get("message"), dict) else {}
    found = {
        "uuid": record.get("uuid"),
        "parent_uuid": record.get("parentUuid"),
        "timestamp": record.get("timestamp"),
        "message_id": message.get("id"),
        "model": message.get("model"),
    }
    if record.get("isSidechain") is True:
        found["sidechain"] = True
    return {name: value for name, value in found.items() if value is not None}


def _block_event(block, role: str, record: dict, provenance: dict) -> dict:
    """The lesson event for one content block, or evidence for a block the lesson has no type for."""
    kind = block.get("type") if isinstance(block, dict) else None
    if kind == "text" and is_blank_text(block.get("text")):
        return {**evidence(block, f"{role} blank text"), "source": provenance}
    if kind == "text" and role == "user" and is_meta_text(block.get("text")):
        return {**evidence(block, "user meta"), "source": provenance}  # "[Request interrupted...]" beside results
    if kind == "text" and isinstance(block.get("text"), str):
        return {"type": TYPE_MESSAGE, "role": role, "content": block["text"], "source": provenance}
    if kind == "thinking" and isinstance(block.get("thinking"), str):
        return {"type": TYPE_REASONING, "content": block["thinking"], "source": provenance}
    if kind == "tool_use" and isinstance(block.get("id"), str) and isinstance(block.get("name"), str):
        return {"type": TYPE_FUNCTION_CALL, "callId": block["id"], "name": block["name"],
                "arguments": block.get("input", {}), "source": provenance}
    if kind == "tool_result" and isinstance(block.get("tool_use_id"), str):
        event = {"type": TYPE_FUNCTION_CALL_RESULT, "callId": block["tool_use_id"],
                 "output": block.get("content", ""), "source": provenance}
        if block.get("is_error") is True:
            event["is_error"] = True
        return event
    return {**evidence(block, f"{role} {kind or 'block'}"), "source": provenance}


def _snapshot(record: dict, provenance: dict) -> dict:
    """A file-history-snapshot stays one, with the paths it tracks listed."""
    snapshot = record.get("snapshot") if isinstance(record.get("snapshot"), dict) else {}
    backups = snapshot.get("trackedFileBackups")
    paths = sorted(backups) if isinstance(backups, dict) else []
    event = {"type": TYPE_FILE_SNAPSHOT, "paths": paths, "snapshot": snapshot, "source": provenance}
    if isinstance(record.get("messageId"), str):
        event["message_id"] = record["messageId"]
    return event
