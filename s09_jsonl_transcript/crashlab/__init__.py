"""The crash lab: campaigns that test the promise "crash? just read the file".

  1. kills        SIGKILL real writer processes at random moments      kill_campaign
  2. power loss   rebuild every disk state a power cut may leave       power_loss_campaign
  3./4. damage    every truncation, bit flip and line edit, chain off and on   damage_campaign
  5. races        eight writers on one session, and on eight           race_campaign
  6. hostile input: the hypothesis tests in tests/test_fuzz_reader.py
  and the chain's cost per append                                      measure_integrity_cost

Campaigns 1-6 run against both transcript classes (crashlab/subjects.py): the lab's
DurableTranscript and the lesson's own code.JSONLTranscript; the commands run both and
report each apart. Each campaign is also a command:  python -m s09_jsonl_transcript.crashlab --help
Notebook 6's plots and widgets are in lessons/crash_lab.py: the lessons import the crash
lab, never the other way round.
"""

from .cost import IntegrityCost, measure_integrity_cost
from .damage_maps import DamageReport, damage_campaign, damage_rows
from .kills import KillTrial, class_summary, kill_campaign, kill_summary
from .powerloss import PowerLossReport, crash_states, power_loss_campaign, record_workload
from .races import RaceResult, race_campaign
from .subjects import SUBJECTS
from .workload import Tally, tally, workload_event

__all__ = [
    "DamageReport", "IntegrityCost", "KillTrial", "PowerLossReport", "RaceResult", "SUBJECTS", "Tally",
    "class_summary", "crash_states", "damage_campaign", "damage_rows", "kill_campaign", "kill_summary",
    "measure_integrity_cost", "power_loss_campaign", "race_campaign", "record_workload",
    "tally", "workload_event",
]
