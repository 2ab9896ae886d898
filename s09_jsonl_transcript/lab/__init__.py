"""The lab: the lesson's transcript hardened for production, and its fast paths.

    transcript.py   DurableTranscript: group commit, the hash chain, size limits, block reads from the end
    writer.py       the hardened write path: fork detection, short writes, the path check after fsync,
                    the undo, TranscriptOutcomeUnknownError and durable_commit
    device.py       what the device holds, not the page cache: the clean close's mark, and reads that
                    write back and drop the cache first (a failed fsync leaves bytes only the cache has)
    checks.py       the lab's input checks: events (precise refusals), paths, session names
    fast.py         the fast paths: a decoder loop for recover (msgspec or the standard library's JSON)
                    and the encoders of plain events, each held equal to the lesson by differential tests

The crash lab, the production log, the benchmarks, the importers and the CLI build on the lab; the
lab builds on the lesson (`code.py`) alone. What the lesson defines (event types, their fields, the
envelope, the reading rule's checks of a record, the fold, the memory gate, MAX_RECORD_BYTES) is
imported from there, never written again here.
"""

from ..code import MAX_RECORD_BYTES
from .checks import INT_LIMIT, MAX_NESTING, checked_event, checked_names, checked_path, json_copy
from .transcript import (
    BATCH_END_FIELD,
    BLOCK,
    CHAIN_FIELD,
    NOT_JSON,
    RESERVED_FIELDS,
    DurableTranscript,
    OsFileIO,
    ScanResult,
    SessionExistsError,
    chain_problem,
    parse_line,
    seal,
)
from .writer import (
    DurableWriter,
    TranscriptIOError,
    TranscriptOutcomeUnknownError,
    as_io_error,
    holding_folder,
    make_folders,
    regular,
)

__all__ = [
    "BATCH_END_FIELD", "BLOCK", "CHAIN_FIELD", "INT_LIMIT", "MAX_NESTING", "MAX_RECORD_BYTES", "NOT_JSON",
    "RESERVED_FIELDS", "DurableTranscript", "DurableWriter", "OsFileIO", "ScanResult", "SessionExistsError",
    "TranscriptIOError", "TranscriptOutcomeUnknownError", "as_io_error", "chain_problem", "checked_event",
    "checked_names", "checked_path", "holding_folder", "json_copy", "make_folders", "parse_line", "regular",
    "seal",
]
