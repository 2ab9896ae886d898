"""s09 JSONL transcript teaching kit.

The lesson lives in `code.py` (read it top to bottom); the lab, `lab/`, extends it with
what production and the crash lab add (`DurableTranscript`). Both are importable from here.

The names below are loaded on first use (PEP 562), so that importing a module of the package that
stands alone, such as the crash lab's power-loss model (crashlab/model.py), loads neither the lesson
nor the lab.
"""

__version__ = "0.2.0"  # CHANGELOG.md says what changed

import importlib

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

_HOME = {name: ".lab" if name in ("MAX_RECORD_BYTES", "DurableTranscript", "ScanResult") else ".code"
         for name in __all__ if name != "__version__"}


def __getattr__(name: str):
    """Load a name of __all__ from the lesson or the lab the first time it is asked for."""
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOME[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(__all__))
