from ._moved import forward

forward(__name__, "s09_jsonl_transcript.text.i18n")
