"""The crash lab: campaigns that test the promise "crash? just read the file".

  1. kills       SIGKILL real writer processes at random moments (kill_campaign)

Run them from the command line:  python -m s09_jsonl_transcript.crashlab --help
"""

from .kills import KillTrial, kill_campaign, kill_summary
from .workload import Tally, tally, workload_event

__all__ = ["KillTrial", "Tally", "kill_campaign", "kill_summary", "tally", "workload_event"]
