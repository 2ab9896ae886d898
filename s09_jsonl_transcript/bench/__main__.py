"""python -m s09_jsonl_transcript.bench: the whole benchmark (see run.py)."""

from .run import main

raise SystemExit(main())
