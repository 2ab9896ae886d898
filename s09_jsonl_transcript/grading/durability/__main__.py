"""python -m s09_jsonl_transcript.grading.durability: grade, replay, bench, calls (see cli.py)."""

import sys

from .cli import main

sys.exit(main())
