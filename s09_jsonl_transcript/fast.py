"""Moved to s09_jsonl_transcript.lab.fast in 0.2; this name works, with a warning, until 0.3."""

from ._moved import forward

forward(__name__, "s09_jsonl_transcript.lab.fast")
