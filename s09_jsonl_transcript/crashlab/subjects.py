"""The two transcript classes every crash-lab campaign runs against, and one way to read either.

  lab     lab.DurableTranscript: group commit, the hash chain, tail reads, the file_io seam
  lesson  code.JSONLTranscript: the compact lesson, which calls os.open/os.write/os.fsync itself

The lesson's class has no integrity option and no scan(); `read_back` asks it only through
its public API (read_events, replay_state), so both classes are judged by the same numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..code import JSONLTranscript
from ..lab import DurableTranscript

LAB = "lab"
LESSON = "lesson"
SUBJECTS = (LAB, LESSON)
CLASS_NAMES = {LAB: "DurableTranscript", LESSON: "JSONLTranscript"}


def checked_subject(subject: str, integrity: bool = False) -> str:
    """Return subject if it names a class, and the class can do what is asked; else raise ValueError."""
    if subject not in SUBJECTS:
        raise ValueError(f"subject must be one of {SUBJECTS}, not {subject!r}")
    if subject == LESSON and integrity:
        raise ValueError("the lesson's JSONLTranscript has no hash chain: integrity is for the lab only")
    return subject


def open_transcript(subject: str, path, *, integrity: bool = False, **lab_options):
    """A transcript of the subject's class at path (clock= goes to both; the rest to the lab only)."""
    checked_subject(subject, integrity)
    if subject == LESSON:
        return JSONLTranscript(path, clock=lab_options.get("clock"))
    return DurableTranscript(path, integrity=integrity, **lab_options)


@dataclass
class ReadBack:
    """What a fresh reader of either class returned for a file."""

    events: list = field(default_factory=list)
    ignored_partial_tail: bool = False  # the file ends in a partial tail that was left out
    last_line_unterminated: bool = False  # the last record is whole but lost its newline


def read_back(subject: str, path, *, integrity: bool = False) -> ReadBack:
    """Read the file with a fresh reader of the subject's class; TranscriptCorruptionError on damage."""
    if checked_subject(subject, integrity) == LAB:
        scanned = DurableTranscript(path, integrity=integrity).scan()
        return ReadBack(scanned.events, scanned.ignored_partial_tail, scanned.last_line_unterminated)
    reader = JSONLTranscript(path)
    events = reader.read_events()
    try:
        unterminated = not Path(path).read_bytes().endswith(b"\n")
    except FileNotFoundError:
        return ReadBack(events)
    # Only an unterminated last line can be a partial tail: ask (a second read) only then.
    torn = unterminated and reader.replay_state(0).ignored_partial_tail
    return ReadBack(events, torn, unterminated and not torn and bool(events))
