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

event_msg lines repeat, for the terminal, what response_item lines hold; they are kept as evidence.
Codex lines carry no id: a line identical byte for byte to an earlier one (its timestamp included) is
counted as a duplicate and merged.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ..code import TYPE_FUNCTION_CALL, TYPE_FUNCTION_CALL_RESULT, TYPE_MESSAGE, TYPE_REASONING
from .common import DUPLICATE, EVIDENCE, MAPPED, evidence, text_of

FORMAT = "codex"
LINE_TYPES = frozenset({"session_meta", "turn_context", "response_item", "event_msg", "compacted"})
MESSAGE_TEXT = ("input_text", "output_text", "text")


def looks_like(record) -> bool:
    """True when one parsed line looks like a Codex rollout line."""
    return (isinstance(record, dict) and record.get("type") in LINE_TYPES and "payload" in record
            and "timestamp" in record)


class Mapper:
    """Turns Codex rollout lines, one at a time, into lesson events (see the module's table)."""

    format = FORMAT

    def __init__(self, source_path):
        self.session_hint = None  # session_meta's id
        self.workspace_hint = None  # the last folder of session_meta's cwd
        self.streamed_lines = 0  # Codex writes whole items: nothing is streamed across lines
        self.sidechain_records = 0
        self._seen_lines = set()

    def convert(self, record: dict, provenance: dict, raw: bytes = b"") -> tuple[str, list[dict]]:
        """(outcome, events) for one line; provenance is the line's, extended with the line's timestamp."""
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
        if kind == "response_item" and isinstance(payload, dict):
            event = _response_item(payload)
            if event is not None:
                return MAPPED, [{**event, "source": provenance}]
            source_type = f"response_item {payload.get('type')}"
        else:
            source_type = f"{kind} {payload.get('type')}" if kind == "event_msg" and isinstance(payload, dict) \
                else str(kind)
        return EVIDENCE, [{**evidence(record, source_type), "source": provenance}]

    def _learn_names(self, payload: dict) -> None:
        if self.session_hint is None and isinstance(payload.get("id"), str):
            self.session_hint = payload["id"]
        if self.workspace_hint is None and isinstance(payload.get("cwd"), str):
            self.workspace_hint = Path(payload["cwd"]).name or None


def _response_item(payload: dict) -> dict | None:
    """The lesson event for one response_item payload, or None when the lesson has no type for it."""
    kind = payload.get("type")
    if kind == "message" and payload.get("role") in ("user", "assistant"):
        content = payload.get("content")
        text = text_of(content, MESSAGE_TEXT) if isinstance(content, list) else content
        return {"type": TYPE_MESSAGE, "role": payload["role"], "content": text} if isinstance(text, str) else None
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
