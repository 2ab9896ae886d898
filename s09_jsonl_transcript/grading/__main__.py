"""`python -m s09_jsonl_transcript.grading` runs the grader's command line."""

import sys

from .cli import main

sys.exit(main())
