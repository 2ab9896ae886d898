"""Real agents' transcripts through the lesson's lens: detect, inspect and import them.

    from s09_jsonl_transcript.importers import detect_format, import_session, inspect_raw
    detect_format(path)                 # "claude-code", "codex", "seed-002", "workbuddy", "lesson", ...
    summary = import_session(path, root)  # a new transcript at root/projects/<workspace>/<session>.jsonl
    inspect_raw(path)                   # what the lesson would say about a raw agent file
    replay_imported(summary.target)     # its messages: the window counts the lesson's events, not evidence

One module per source format (claude_code, codex, seed002, workbuddy), each documenting its mapping
to the lesson's event types; whatever a format holds that the lesson has no type for is kept as a
`source-record` event (evidence), never dropped. Bundled synthetic samples: SAMPLES.
"""

from pathlib import Path

from .common import TYPE_SOURCE_RECORD, ImportRefused, ImportSummary
from .detect import (
    CODEX_HISTORY,
    DAMAGED,
    EMPTY,
    IMPORTABLE,
    JSON_DOCUMENT,
    LESSON,
    NOT_SESSIONS,
    RAW_FORMATS,
    UNKNOWN,
    detect_format,
    format_of_record,
)
from .importer import AUTO, FORMAT_CHOICES, import_session
from .raw import foreign_format_message, format_raw_inspection, inspect_raw
from .replay import replay_imported, window_events

SAMPLES_DIR = Path(__file__).resolve().parent / "samples"
SAMPLES = {
    "claude-code": SAMPLES_DIR / "claude-code" / "7f3c2a9e-5b1d-4e8a-9c6f-2d4b8e1a0c57.jsonl",
    "codex": SAMPLES_DIR / "codex" / "rollout-2026-01-05T09-00-00-0c9d8e7f-6a5b-4c3d-8e2f-1a0b9c8d7e6f.jsonl",
    "seed-002": SAMPLES_DIR / "seed-002" / "http-server.jsonl",
    "workbuddy": SAMPLES_DIR / "workbuddy" / "session_abc123.jsonl",
}
# Codex CLI's older layout (before mid-September 2025): a synthetic session, kept out of SAMPLES (notebook 10's)
LEGACY_CODEX_SAMPLE = SAMPLES_DIR / "codex" / "rollout-2025-08-20T10-00-00-5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d.jsonl"

__all__ = [
    "AUTO", "CODEX_HISTORY", "DAMAGED", "EMPTY", "FORMAT_CHOICES", "IMPORTABLE", "JSON_DOCUMENT", "LEGACY_CODEX_SAMPLE",
    "LESSON", "NOT_SESSIONS", "RAW_FORMATS", "SAMPLES", "SAMPLES_DIR", "TYPE_SOURCE_RECORD", "UNKNOWN", "ImportRefused",
    "ImportSummary", "detect_format", "foreign_format_message", "format_of_record", "format_raw_inspection",
    "import_session", "inspect_raw", "replay_imported", "window_events",
]
