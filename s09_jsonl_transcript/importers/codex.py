"""Codex CLI sessions (~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl) to the lesson's events.

The format is documented by the community, not by its authors. Every line is {timestamp, type, payload};
the types are session_meta, turn_context, response_item, event_msg and compacted. The payloads of
response_item are those of OpenAI's Responses API, close to the lesson's own names:

    message (role user or assistant)          -> message
    reasoning (its summary text)              -> reasoning
    function_call, custom_tool_call           -> function_call (arguments parsed from their JSON text)
    function_call_output, custom_tool_call_output -> function_call_result (paired by call_id)
    everything else (session_meta, turn_context, event_msg, compacted, web_search_call, developer
    messages, newer payloads)                 -> source-record (evidence)

event_msg lines repeat, for the terminal, what response_item lines hold; they are kept as evidence,
with one exception: a prompt. Some sessions hold a prompt only as event_msg / user_message. A prompt is
imported once, from whichever comes first of a response_item user message and an event_msg user_message
with the same text; the other one is kept as evidence (the echo).

The older layout (Codex before mid-September 2025, at the same path): a first line {id, timestamp,
instructions, git}, then {"record_type": "state"} lines, then the items at top level, with no payload
wrapper. Its items map as response_item payloads do; its first line and state lines are evidence.

Codex lines carry no id: a line of the newer layout identical byte for byte to an earlier one (its
timestamp included) is counted as a duplicate and merged. Items of the older layout carry no timestamp,
so two identical ones (the user typing "continue" twice) are both imported.

Two sessions: a second session_meta (or a second first line of the older layout) with another id means
two sessions were concatenated into one file: the import is refused, naming the line (SecondSession).
"""

from __future__ import annotations

import hashlib
import json
from collections import deque
from pathlib import Path

from ..code import TYPE_FUNCTION_CALL, TYPE_FUNCTION_CALL_RESULT, TYPE_MESSAGE, TYPE_REASONING
from .common import DUPLICATE, EVIDENCE, MAPPED, SecondSession, evidence, is_blank_text, text_of

FORMAT = "codex"
LINE_TYPES = frozenset({"session_meta", "turn_context", "response_item", "event_msg", "compacted"})
MESSAGE_TEXT = ("input_text", "output_text", "text")
# The older layout's items, at top level: the Responses API's item types.
LEGACY_ITEM_TYPES = frozenset({"message", "reasoning", "function_call", "function_call_output", "custom_tool_call",
                               "custom_tool_call_output", "local_shell_call", "web_search_call"})
PROMPT_ECHOES = 16  # prompts remembered, to know the second copy of one (its echo) when it comes


def looks_like(record) -> bool:
    """True when one parsed line looks like a line of a Codex rollout, in either layout."""
    if not isinstance(record, dict):
        return False
    if record.get("type") in LINE_TYPES and "payload" in record and "timestamp" in record:
        return True
    return is_legacy_meta(record) or is_legacy_state(record) or is_legacy_item(record)


def is_legacy_meta(record: dict) -> bool:
    """The first line of the older layout: the session's id and start, its instructions and git state."""
    return ("type" not in record and isinstance(record.get("id"), str) and "timestamp" in record
            and ("instructions" in record or "git" in record))


def is_legacy_state(record: dict) -> bool:
    """A {"record_type": "state"} line of the older layout."""
    return record.get("record_type") == "state"


def is_legacy_item(record: dict) -> bool:
    """An item of the older layout: a Responses API item at top level (no payload, no uuid, no envelope)."""
    if record.get("type") not in LEGACY_ITEM_TYPES or record.keys() & {"payload", "uuid", "sequence", "session_id"}:
        return False
    if record["type"] == "message":
        return record.get("role") in ("user", "assistant", "developer", "system") and "content" in record
    return "call_id" in record or record["type"] in ("reasoning", "web_search_call", "local_shell_call")


class Mapper:
    """Turns Codex rollout lines, one at a time, into lesson events (see the module's table)."""

    format = FORMAT

    def __init__(self, source_path):
        self.session_hint = None  # session_meta's id
        self.workspace_hint = None  # the last folder of session_meta's cwd
        self.streamed_lines = 0  # Codex writes whole items: nothing is streamed across lines
        self.sidechain_records = 0
        self._seen_lines = set()
        self._prompts = {"item": deque(maxlen=PROMPT_ECHOES), "event": deque(maxlen=PROMPT_ECHOES)}

    def convert(self, record: dict, provenance: dict, raw: bytes = b"") -> tuple[str, list[dict]]:
        """(outcome, events) for one line; provenance is the line's, extended with the line's timestamp."""
        if "payload" in record and isinstance(record.get("timestamp"), str):  # the newer layout: a timestamp each
            digest = hashlib.blake2b(raw, digest_size=16).digest()
            if digest in self._seen_lines:
                return DUPLICATE, []
            self._seen_lines.add(digest)
        if isinstance(record.get("timestamp"), str):
            provenance = {**provenance, "timestamp": record["timestamp"]}
        payload = record.get("payload")
        kind = record.get("type")
        if kind == "session_meta" and isinstance(payload, dict):
            self._learn_names(payload)
        if "payload" not in record:
            return self._legacy(record, provenance)
        if kind == "response_item" and isinstance(payload, dict):
            return self._item(payload, record, provenance, "response_item")
        if kind == "event_msg" and isinstance(payload, dict):
            if payload.get("type") == "user_message":
                return self._prompt_event(record, payload, provenance)
            return EVIDENCE, [{**evidence(record, f"event_msg {payload.get('type')}"), "source": provenance}]
        return EVIDENCE, [{**evidence(record, str(kind)), "source": provenance}]

    def finish(self) -> list[dict]:
        """Events held back until the end of the source: none (Codex's file order is its order)."""
        return []

    def _legacy(self, record: dict, provenance: dict) -> tuple[str, list[dict]]:
        if is_legacy_meta(record):
            self._learn_names(record)
            return EVIDENCE, [{**evidence(record, "legacy session_meta"), "source": provenance}]
        if is_legacy_state(record):
            return EVIDENCE, [{**evidence(record, "legacy state"), "source": provenance}]
        return self._item(record, record, {**provenance, "layout": "legacy"}, "legacy")

    def _item(self, item: dict, record: dict, provenance: dict, layout: str) -> tuple[str, list[dict]]:
        """A Responses API item (a response_item's payload, or a legacy line): mapped, or kept as evidence."""
        event = _response_item(item)
        if event is not None and event["type"] == TYPE_MESSAGE and event["role"] == "user":
            if self._is_echo(event["content"], "item"):
                event = None  # the same prompt came first as an event_msg: this one is its echo
        if event is None:
            return EVIDENCE, [{**evidence(record, f"{layout} {item.get('type')}"), "source": provenance}]
        return MAPPED, [{**event, "source": provenance}]

    def _prompt_event(self, record: dict, payload: dict, provenance: dict) -> tuple[str, list[dict]]:
        """An event_msg / user_message: the prompt itself when no response_item carried it first."""
        text = payload.get("message")
        is_prompt = (isinstance(text, str) and not is_blank_text(text)
                     and payload.get("kind") in (None, "plain"))  # 2025 builds also echoed instructions this way
        if not is_prompt or self._is_echo(text, "event"):
            return EVIDENCE, [{**evidence(record, "event_msg user_message"), "source": provenance}]
        return MAPPED, [{"type": TYPE_MESSAGE, "role": "user", "content": text,
                         "source": {**provenance, "from": "event_msg user_message"}}]

    def _is_echo(self, text, came_as: str) -> bool:
        """True when this prompt's text already came the other way (and is consumed); else it is remembered."""
        if not isinstance(text, str):
            return False
        other = self._prompts["event" if came_as == "item" else "item"]
        key = text.strip()
        if key in other:
            other.remove(key)
            return True
        self._prompts[came_as].append(key)
        return False

    def _learn_names(self, meta: dict) -> None:
        found = meta.get("id")
        if isinstance(found, str) and self.session_hint is not None and found != self.session_hint:
            raise SecondSession(self.session_hint, found)
        if self.session_hint is None and isinstance(found, str):
            self.session_hint = found
        if self.workspace_hint is None and isinstance(meta.get("cwd"), str):
            self.workspace_hint = Path(meta["cwd"]).name or None


def _response_item(payload: dict) -> dict | None:
    """The lesson event for one response_item payload, or None when the lesson has no type for it."""
    kind = payload.get("type")
    if kind == "message" and payload.get("role") in ("user", "assistant"):
        content = payload.get("content")
        text = text_of(content, MESSAGE_TEXT) if isinstance(content, list) else content
        if not isinstance(text, str) or is_blank_text(text):
            return None  # no text, or only white space: a chat API refuses it; kept as evidence
        return {"type": TYPE_MESSAGE, "role": payload["role"], "content": text}
    if kind == "reasoning":
        summary = payload.get("summary")
        text = text_of(summary, ("summary_text",)) if isinstance(summary, list) else None
        event = {"type": TYPE_REASONING, "content": text or ""}
        if payload.get("encrypted_content"):
            event["encrypted"] = True  # the model's own reasoning, unreadable here: only its summary is text
        return event
    call_id = payload.get("call_id")
    if not isinstance(call_id, str):
        return None
    if kind in ("function_call", "custom_tool_call") and isinstance(payload.get("name"), str):
        raw_arguments = payload.get("arguments") if kind == "function_call" else payload.get("input")
        return {"type": TYPE_FUNCTION_CALL, "callId": call_id, "name": payload["name"],
                "arguments": _arguments(raw_arguments), "tool_kind": kind}
    if kind in ("function_call_output", "custom_tool_call_output"):
        return {"type": TYPE_FUNCTION_CALL_RESULT, "callId": call_id, "output": payload.get("output", "")}
    return None


def _arguments(raw) -> dict:
    """A call's arguments as an object: Codex writes them as JSON text, a custom tool as free text."""
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            return parsed
        return {"input": raw}
    return {} if raw is None else {"input": raw}
