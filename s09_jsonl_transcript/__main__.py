"""`python -m s09_jsonl_transcript` runs the same command line as code.py."""

import sys

from .cli import main

sys.exit(main())
