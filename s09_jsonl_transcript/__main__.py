"""`python -m s09_jsonl_transcript` runs the kit's command line: the demo, inspect, replay, a small shell."""

import sys

from .cli import main

sys.exit(main())
