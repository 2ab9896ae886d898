"""s09 JSONL transcript teaching kit: the reference library lives in `code.py`."""

from .code import (
    MAX_RECORD_BYTES,
    MEMORY_ELIGIBLE_EVENT_TYPES,
    RESERVED_ENVELOPE_FIELDS,
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

__all__ = [name for name in dir() if not name.startswith("_") and name != "code"]
