"""WorkBuddy's own JSONL (the lesson's section "WorkBuddy 架构对照 · 事件格式") to the lesson's events.

WorkBuddy's lines have the lesson's event types and more fields (streaming ids, a `uuid`, model
information, a `timestamp`) but no envelope: no schema_version, sequence, session_id or event_id.
Importing adds the envelope. Lines of the lesson's types keep their fields (the uuid and timestamp move
into the provenance); other types are kept as evidence. `uuid` is the idempotency key.
"""

from __future__ import annotations

from ..code import EVENT_TYPES, FIELDS_APPEND_WRITES, shape_problem
from .common import DUPLICATE, EVIDENCE, MAPPED, evidence, seen_before

FORMAT = "workbuddy"
LESSON_TYPES = frozenset(EVENT_TYPES)  # the lesson's table: WorkBuddy writes the same types
ENVELOPE = frozenset({"schema_version", "sequence", "session_id", "event_id"})
WRITER_FIELDS = FIELDS_APPEND_WRITES  # the writer's own: never in a payload
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
    return shape_problem(record) is None  # the fields the lesson's table needs for replay
