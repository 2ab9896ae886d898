"""What the capstone's grader uses of the kit, taken through the grader's one door (grading/kit.py):
nothing else in grading/durability reaches the kit.

Through it come the power-loss model (crashlab/model.py, standard library only), the lesson's
reading rule as the reference reader (code.read_transcript), the name of the lesson's error
class, which the exercise's given cell defines again for the student's sandbox, and the CJK font the
local check's figure draws Chinese with. Should the lesson
change its reader's shape, this module is what adapts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .. import kit

_model, _lesson = kit.power_loss_model(), kit.lesson()  # the grader's one door into the kit (grading/kit.py)
TranscriptCorruptionError, read_transcript = _lesson.TranscriptCorruptionError, _lesson.read_transcript
FILLS = _model.FILLS
GARBAGE = _model.GARBAGE
HOLE = _model.HOLE
MAX_UNSYNCED_CHANGES = _model.MAX_UNSYNCED_CHANGES
SYNCED = _model.SYNCED
TORN = _model.TORN
UNSYNCED = _model.UNSYNCED
ZEROS = _model.ZEROS
Change = _model.Change
CrashState = _model.CrashState
StateKey = _model.StateKey
apply_change = _model.apply_change
crash_states = _model.crash_states
layout = _model.layout
parse_key = _model.parse_key
plan_states = _model.plan_states
state_for = _model.state_for

CONTRACT_ERROR_NAME = TranscriptCorruptionError.__name__  # the given cell's class carries the same name

__all__ = [
    "CONTRACT_ERROR_NAME", "FILLS", "GARBAGE", "HOLE", "MAX_UNSYNCED_CHANGES", "SYNCED", "TORN", "UNSYNCED", "ZEROS",
    "Change", "CrashState", "ReferenceReading", "StateKey", "apply_change", "crash_states", "layout", "parse_key",
    "plan_states", "reference_read", "state_for", "use_cjk_font",
]


@dataclass(frozen=True)
class ReferenceReading:
    """What the lesson's reader makes of one file: its records, and how the file ends or why it is refused."""

    records: list = field(default_factory=list)
    partial_tail_offset: int | None = None  # where a forgiven partial tail starts
    unterminated: bool = False  # the last record is whole but lost its newline
    refused_line: int | None = None  # the first damaged line (the reader fails closed there)
    refused_offset: int | None = None
    reason: str | None = None

    @property
    def refused(self) -> bool:
        """True when the reader raised: damage it does not forgive."""
        return self.refused_line is not None

    @property
    def torn(self) -> bool:
        """True when the only damage is at the end: a partial tail, or a last record without its newline."""
        return not self.refused and (self.partial_tail_offset is not None or self.unterminated)


def use_cjk_font() -> str:
    """Let matplotlib draw the findings' Chinese words in this process (the kit's CJK font)."""
    return kit.use_cjk_font()


def reference_read(path, session_id: str) -> ReferenceReading:
    """Read the file at path with the lesson's reading rule (a missing file reads as no records).

    The rule names its session by the file's stem, so session_id must be that stem."""
    path = Path(path)
    if path.stem != session_id:
        raise ValueError(f"the lesson reads {path.name} as session {path.stem!r}, not {session_id!r}")
    try:
        records, partial_tail = read_transcript(path)
    except TranscriptCorruptionError as error:
        return ReferenceReading(refused_line=error.line_number, refused_offset=error.byte_offset,
                                reason=error.reason)
    data = path.read_bytes() if path.exists() else b""
    tail = data.rpartition(b"\n")[2]  # what follows the last newline: a partial tail or a whole record
    return ReferenceReading(records, len(data) - len(tail) if partial_tail else None,
                            bool(tail) and not partial_tail)
