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
Notebook 6 draws its plots in its own cells; its widget panels are in lessons/crash_lab.py: the
lessons import the crash lab, never the other way round. The power-loss model itself is
crashlab/model.py: standard library only, so the capstone's grader builds its states with it
without loading the kit.
"""

import importlib

_HOMES = {  # each public name and the submodule that defines it, loaded on first use (PEP 562)
    ".cost": ("IntegrityCost", "measure_integrity_cost"),
    ".damage_maps": ("DamageReport", "damage_campaign", "damage_rows"),
    ".kills": ("KillTrial", "class_summary", "kill_campaign", "kill_summary"),
    ".powerloss": ("PowerLossReport", "crash_states", "power_loss_campaign", "record_workload"),
    ".races": ("RaceResult", "race_campaign"),
    ".subjects": ("SUBJECTS",),
    ".workload": ("Tally", "tally", "workload_event"),
}
_HOME = {name: module for module, names in _HOMES.items() for name in names}

__all__ = sorted(_HOME)


def __getattr__(name: str):
    """Load a public name from its submodule the first time it is asked for: importing the crash
    lab's stand-alone power-loss model (crashlab.model) then loads nothing else of the kit."""
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOME[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(__all__))
