"""The lab: the lesson's transcript hardened for production, and its fast paths.

    transcript.py   DurableTranscript: group commit, the hash chain, size limits, block reads from the end
    fast.py         the fast paths: a decoder loop for recover (msgspec or the standard library's JSON)
                    and the encoders of plain events, each held equal to the lesson by differential tests

The crash lab, the production log, the benchmarks, the importers and the CLI build on the lab; the
lab builds on the lesson (`code.py`) alone. What the lesson defines (event types, their fields, how
messages are built) is imported from there, never written again here.
"""

from .transcript import (
    BATCH_END_FIELD,
    BLOCK,
    CHAIN_FIELD,
    MAX_RECORD_BYTES,
    RESERVED_FIELDS,
    DurableTranscript,
    OsFileIO,
    ScanResult,
    SessionExistsError,
    chain_problem,
    seal,
)

__all__ = [
    "BATCH_END_FIELD", "BLOCK", "CHAIN_FIELD", "MAX_RECORD_BYTES", "RESERVED_FIELDS", "DurableTranscript",
    "OsFileIO", "ScanResult", "SessionExistsError", "chain_problem", "seal",
]
