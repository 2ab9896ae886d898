"""The notebook's local crash check: the grader's campaign, small, on a student's own machine.

A cell whose role keeps it out of grading calls local_check(ANSWER_SOURCE) before the student
submits. It needs no strace and no bubblewrap (a Mac has neither): the driver runs the answer in a
child process and records the answer's os calls in-process, by wrapping the os module, then the same
state builder and the same judge as the grader's run, at a smaller size (engine.LOCAL), and real
kills: the child SIGKILLs itself just before the chosen write or fsync.

It is not a grader: a wrapped os module misses writes made through builtin open() file objects (and
an answer could unwrap it). When the file holds bytes the wrapped calls do not build, the check says
so rather than guess; the grader's recorder (strace) sees every system call.
"""

from __future__ import annotations

import inspect

from .engine import LOCAL, CampaignSize, Verdict, grade


def local_check(answer_source: str, *, seed: int = 0, size: CampaignSize = LOCAL) -> Verdict:
    """Crash-test an answer cell's source (append and recover) here; the verdict's findings carry byte maps.

    The same seed gives the same states and the same finding ids, so a finding replays with
    `python -m s09_jsonl_transcript.grading.durability replay ANSWER.py ID --seed SEED --size local --local`.
    """
    return grade(answer_source, seed=seed, size=size, recorded=False, sandboxed=False)


def source_of(*functions) -> str:
    """The source of functions defined in a notebook (append, recover and their helpers), as one cell's text.

    A notebook can pass its answer cell's text instead; this is for an answer spread over cells.
    """
    return "\n\n".join(inspect.getsource(function) for function in functions)


def drawable(verdict: Verdict, per_property: int = 3) -> list[dict]:
    """The first findings of each property, as plain data a notebook cell draws: id, property,
    message, byte runs (start, end, kind), size, acknowledged, what recover returned, the text map."""
    shown = []
    for entry in verdict.as_json()["properties"]:
        shown.extend(entry["findings"][:per_property])
    return shown
