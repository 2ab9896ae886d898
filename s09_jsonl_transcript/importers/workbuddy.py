"""WorkBuddy's own JSONL (the lesson's section "WorkBuddy 架构对照 · 事件格式") to the lesson's events.

WorkBuddy's lines have the lesson's six types and more fields (streaming ids, a `uuid`, model
information, a `timestamp`) but no envelope: no schema_version, sequence, session_id or event_id.
Importing adds the envelope. Lines of the six types keep their fields (the uuid and timestamp move
into the provenance); other types are kept as evidence. `uuid` is the idempotency key.
"""

from __future__ import annotations

from ..code import (
    TYPE_AI_TITLE,
    TYPE_FILE_SNAPSHOT,
    TYPE_FUNCTION_CALL,
    TYPE_FUNCTION_CALL_RESULT,
    TYPE_MESSAGE,
    TYPE_REASONING,
)
from ..lab import BATCH_END_FIELD, CHAIN_FIELD
from .common import DUPLICATE, EVIDENCE, MAPPED, evidence, seen_before

FORMAT = "workbuddy"
LESSON_TYPES = frozenset({TYPE_MESSAGE, TYPE_REASONING, TYPE_FUNCTION_CALL, TYPE_FUNCTION_CALL_RESULT,
                          TYPE_FILE_SNAPSHOT, TYPE_AI_TITLE})
ENVELOPE = frozenset({"schema_version", "sequence", "session_id", "event_id"})
WRITER_FIELDS = ENVELOPE | {"recorded_at", BATCH_END_FIELD, CHAIN_FIELD}  # the writer's own: never in a payload
# Fields each type needs as strings for replay to map it (as the lesson's reader checks them).
REQUIRED_STRINGS = {TYPE_MESSAGE: ("role",), TYPE_FUNCTION_CALL: ("callId", "name"),
                    TYPE_FUNCTION_CALL_RESULT: ("callId",), TYPE_AI_TITLE: ("title",)}
MOVED_TO_PROVENANCE = ("uuid", "timestamp")


def looks_like(record) -> bool:
    """True when one parsed line has a lesson type and a uuid but no envelope."""
    return (isinstance(record, dict) and record.get("type") in LESSON_TYPES and "uuid" in record
            and not record.keys() & ENVELOPE)


class Mapper:
    """Adds the envelope to WorkBuddy's lines, one at a time (see the module's docstring)."""

    format = FORMAT

    def __init__(self, source_path):
        self.session_hint = None
        self.workspace_hint = None
        self.streamed_lines = 0
        self.sidechain_records = 0
        self._seen_uuids = set()

    def convert(self, record: dict, provenance: dict, raw: bytes = b"") -> tuple[str, list[dict]]:
        """(outcome, events) for one line; its uuid and timestamp join the provenance."""
        if seen_before(record, self._seen_uuids):
            return DUPLICATE, []
        provenance = {**provenance, **{name: record[name] for name in MOVED_TO_PROVENANCE if name in record}}
        if not _replayable(record):
            return EVIDENCE, [{**evidence(record, str(record.get("type"))), "source": provenance}]
        if "source" in record:
            provenance["original_source"] = record["source"]
        kept = {name: value for name, value in record.items() if name not in MOVED_TO_PROVENANCE and name != "source"}
        return MAPPED, [{**kept, "source": provenance}]

    def finish(self) -> list[dict]:
        """Events held back until the end of the source: none (the file's order is the format's order)."""
        return []


def _replayable(record: dict) -> bool:
    kind = record.get("type")
    if kind not in LESSON_TYPES or record.keys() & WRITER_FIELDS:
        return False
    if kind == TYPE_MESSAGE and "content" not in record:
        return False
    return all(isinstance(record.get(name), str) for name in REQUIRED_STRINGS.get(kind, ()))
