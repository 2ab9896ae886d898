from ._moved import forward

forward(__name__, "s09_jsonl_transcript.production.timeouts")
