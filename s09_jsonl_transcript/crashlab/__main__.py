"""`python -m s09_jsonl_transcript.crashlab COMMAND`: run a campaign, print its table, exit 1 on a finding."""

import sys

from .cli import main

sys.exit(main())
