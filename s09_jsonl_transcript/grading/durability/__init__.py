"""ex06, the capstone: each student writes a durable transcript, and real crashes grade it.

The engine the grader calls (grading.py's integration wires it in):

    from s09_jsonl_transcript.grading.durability import grade, RecorderUnavailable
    verdict = grade(answer_source, seed=seed)        # raises RecorderUnavailable when it cannot record
    verdict.as_json()                                # what the check cells get, read-only

Modules, in the order a grading meets them:
  contract   the given cell the engine ships (GIVEN_CELL) and the events a grading sends
  driver     the program that runs the answer in the student's sandbox (standard library only)
  runs       starting drivers under the recorder (strace outside bubblewrap); held kills
  trace      the recorder's log, parsed into calls
  calls      the table of system calls (ROWS: modelled or refused, with why) and the tracker that
             turns calls into the power-loss model's changes
  sessions   the recorded session, held kills, batches of states, observed
  states     the crash states a grading judges, each with a stable id that replays it
  damage     damaged files written by the reference
  judge      the properties and how each state is judged (its module doc says on which states)
  bytemap    a finding's byte map, as text
  engine     one grading: the stages, their timing, the Verdict
  local      the notebook's local crash check (no strace: the driver wraps os)
  replay     replaying one finding by its id
  bench      the benchmark command
  kit        the one module that imports from the rest of the kit (the model, the lesson's reader)
  workspace  the grading's memory-backed folders

    python -m s09_jsonl_transcript.grading.durability --help
"""

from .calls import ROWS
from .contract import GIVEN_CELL
from .engine import FULL, LOCAL, REDUCED, CampaignSize, Verdict, grade
from .judge import PROPERTIES
from .local import local_check
from .replay import replay
from .runs import RecorderUnavailable, check_recorder, recorder_problem

__all__ = ["FULL", "GIVEN_CELL", "LOCAL", "PROPERTIES", "REDUCED", "ROWS", "CampaignSize", "RecorderUnavailable",
           "Verdict", "check_recorder", "grade", "local_check", "recorder_problem", "replay"]
