"""s09 JSONL transcript teaching kit.

The lesson lives in `code.py` (read it top to bottom); the lab, `lab/`, extends it with
what production and the crash lab add (`DurableTranscript`). Both are importable from here.
"""

__version__ = "0.2.0"  # CHANGELOG.md says what changed

from .code import (
    MEMORY_ELIGIBLE_EVENT_TYPES,
    SCHEMA_VERSION,
    SESSION_MAX_ITEMS,
    TRANSCRIPT_SOURCE_TYPE,
    TYPE_AI_TITLE,
    TYPE_FILE_SNAPSHOT,
    TYPE_FUNCTION_CALL,
    TYPE_FUNCTION_CALL_RESULT,
    TYPE_MESSAGE,
    TYPE_REASONING,
    JSONLTranscript,
    MemorySelectionError,
    MockLLM,
    ReplayState,
    TranscriptCorruptionError,
    TranscriptLockedError,
    TranscriptMemoryCandidate,
    TranscriptValidationError,
    event_id_for,
    event_to_message,
    ticking_clock,
)
from .lab import MAX_RECORD_BYTES, DurableTranscript, ScanResult

__all__ = [
    "__version__",
    "MAX_RECORD_BYTES",
    "MEMORY_ELIGIBLE_EVENT_TYPES",
    "SCHEMA_VERSION",
    "SESSION_MAX_ITEMS",
    "TRANSCRIPT_SOURCE_TYPE",
    "TYPE_AI_TITLE",
    "TYPE_FILE_SNAPSHOT",
    "TYPE_FUNCTION_CALL",
    "TYPE_FUNCTION_CALL_RESULT",
    "TYPE_MESSAGE",
    "TYPE_REASONING",
    "DurableTranscript",
    "JSONLTranscript",
    "MemorySelectionError",
    "MockLLM",
    "ReplayState",
    "ScanResult",
    "TranscriptCorruptionError",
    "TranscriptLockedError",
    "TranscriptMemoryCandidate",
    "TranscriptValidationError",
    "event_id_for",
    "event_to_message",
    "ticking_clock",
]
