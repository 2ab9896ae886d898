"""Seed 002's session format (a session as a write-ahead log) to the lesson's events.

Seed 002 writes `user_message`, `assistant_text`, `tool_use`, `tool_result`, `turn_start` and `turn_end`
lines with `timestamp` and `uuid`; a result names its call by `tool_use_uuid`, an assistant text carries
`model` and `token_count`. There is no envelope and no sequence. Read by the lesson's reader as it is,
such a file would replay 0 messages and hide a pending tool call; so it is read only through this adapter:

    user_message    -> message (role user)       assistant_text -> message (role assistant)
    tool_use        -> function_call (callId: its uuid)
    tool_result     -> function_call_result (callId: its tool_use_uuid; output, or error when it failed)
    turn_start, turn_end -> the kit's own turn_start and turn_end (production/turns.py), fields unchanged
    anything else   -> source-record (evidence)

`uuid` is the idempotency key, as the seed asks ("事件去重：基于 uuid 幂等写入"): a line whose uuid was
imported before is counted as a duplicate and not written again.
"""

from __future__ import annotations

from ..code import TYPE_FUNCTION_CALL, TYPE_FUNCTION_CALL_RESULT, TYPE_MESSAGE
from ..lab import BATCH_END_FIELD, CHAIN_FIELD
from .common import DUPLICATE, EVIDENCE, MAPPED, evidence, seen_before

FORMAT = "seed-002"
LINE_TYPES = frozenset({"user_message", "assistant_text", "tool_use", "tool_result", "turn_start", "turn_end"})
TURN_TYPES = ("turn_start", "turn_end")
# The writer's own fields: a line carrying one cannot be copied into an event, so it is kept as evidence.
WRITER_FIELDS = frozenset({"schema_version", "sequence", "session_id", "event_id", "recorded_at", BATCH_END_FIELD,
                           CHAIN_FIELD})


def looks_like(record) -> bool:
    """True when one parsed line looks like a line of seed 002's format."""
    return isinstance(record, dict) and record.get("type") in LINE_TYPES and "uuid" in record


class Mapper:
    """Turns seed 002's lines, one at a time, into lesson events (see the module's table)."""

    format = FORMAT

    def __init__(self, source_path):
        self.session_hint = None  # the format has no session id inside: the file's name is used
        self.workspace_hint = None
        self.streamed_lines = 0
        self.sidechain_records = 0
        self._seen_uuids = set()

    def convert(self, record: dict, provenance: dict, raw: bytes = b"") -> tuple[str, list[dict]]:
        """(outcome, events) for one line; provenance is the line's, extended with its uuid and timestamp."""
        if seen_before(record, self._seen_uuids):
            return DUPLICATE, []
        provenance = {**provenance, **{name: record[name] for name in ("uuid", "timestamp") if name in record}}
        event = _event(record)
        if event is None:
            return EVIDENCE, [{**evidence(record, str(record.get("type"))), "source": provenance}]
        return MAPPED, [{**event, "source": provenance}]

    def finish(self) -> list[dict]:
        """Events held back until the end of the source: none (the file's order is the format's order)."""
        return []


def _event(record: dict) -> dict | None:
    """The lesson event for one line, or None when the lesson has no type for it."""
    kind = record.get("type")
    if kind == "user_message" and "content" in record:
        return {"type": TYPE_MESSAGE, "role": "user", "content": record["content"]}
    if kind == "assistant_text" and "content" in record:
        event = {"type": TYPE_MESSAGE, "role": "assistant", "content": record["content"]}
        event.update({name: record[name] for name in ("model", "token_count") if name in record})
        return event
    if kind == "tool_use" and isinstance(record.get("uuid"), str) and isinstance(record.get("tool_name"), str):
        event = {"type": TYPE_FUNCTION_CALL, "callId": record["uuid"], "name": record["tool_name"],
                 "arguments": record.get("arguments", {})}
        if "parent_message_uuid" in record:
            event["parent_message_uuid"] = record["parent_message_uuid"]
        return event
    if kind == "tool_result" and isinstance(record.get("tool_use_uuid"), str):
        failed = record.get("success") is False
        output = record.get("error", "") if failed else record.get("output", "")
        return {"type": TYPE_FUNCTION_CALL_RESULT, "callId": record["tool_use_uuid"], "output": output,
                "success": not failed}
    if kind in TURN_TYPES and not record.keys() & WRITER_FIELDS:
        return {name: value for name, value in record.items() if name not in ("uuid", "timestamp")}
    return None
