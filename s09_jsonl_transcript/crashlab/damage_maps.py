"""Campaigns 3 and 4: damage a small transcript in every way one fault can, with the hash chain off and on.

Built on damage.py: every truncation point, every single-bit flip (one mask per map),
and every complete-line edit (insert, delete, duplicate, swap with the next, rewrite).
With the chain off, many flips pass validation with different content; with it on, none
may. One edit no per-record check can see is deleting the last line: the file then looks
exactly like one whose last append never happened.

Each map runs with the lab's DurableTranscript as the reader, or (subject="lesson") with the
lesson's code.JSONLTranscript, which has no chain: with the chain off, both share the checks
of every record, so their verdicts over the same damaged files must be equal.
"""

from __future__ import annotations

import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..code import MockLLM, run_agent, ticking_clock
from ..lab import DurableTranscript
from .damage import (
    CLEAN,
    CORRUPT,
    SILENT,
    Verdict,
    delete_line,
    duplicate_line,
    flip_byte,
    flip_map,
    insert_line,
    judge,
    rewrite_line,
    swap_lines,
    truncation_map,
    verdict,
)
from .subjects import LAB, LESSON, checked_subject, open_transcript, read_back

SHORTER = "shorter prefix (looks like an append that never happened)"
LINE_EDITS = ("insert", "delete", "duplicate", "swap", "rewrite")
ALL_BIT_MASKS = tuple(1 << bit for bit in range(8))


def write_sample(path, *, sessions: int = 2, integrity: bool = False, subject: str = LAB) -> Path:
    """Write MockLLM's bug-fix session `sessions` times (12 events each) to a new file at path,
    with the subject's class ("lab" or "lesson")."""
    path = Path(path)
    if path.exists():
        raise FileExistsError(f"{path} exists: the sample is always written to a new file")
    with open_transcript(subject, path, integrity=integrity, clock=ticking_clock()) as transcript:
        for _ in range(sessions):
            run_agent(transcript, MockLLM())
    return path


def _edit(kind: str) -> Callable:
    """The damage.py tool for one kind of line edit, as edit(path, line_number, lines)."""
    return {
        "insert": lambda path, number, lines: insert_line(path, number, b'{"type":"message"}'),
        "delete": lambda path, number, lines: delete_line(path, number),
        "duplicate": lambda path, number, lines: duplicate_line(path, number),
        "swap": lambda path, number, lines: swap_lines(path, number) if number < lines else None,
        "rewrite": lambda path, number, lines: rewrite_line(path, number),
    }[kind]


@dataclass
class DamageReport:
    """The verdict for every damage of one sample file."""

    integrity: bool
    size: int  # bytes in the undamaged file
    records: int
    truncations: list = field(default_factory=list)  # verdict kind for each length kept, 0..size
    flips: dict = field(default_factory=dict)  # mask -> verdict kind for each offset flipped
    line_edits: dict = field(default_factory=dict)  # edit -> Counter of outcomes
    subject: str = LAB  # whose class wrote the sample and read every damaged copy: "lab" or "lesson"

    @property
    def truncation_counts(self) -> Counter:
        """How many truncation points gave each verdict."""
        return Counter(self.truncations)

    def flip_counts(self, mask: int) -> Counter:
        """How many flips with this mask gave each verdict."""
        return Counter(self.flips[mask])

    @property
    def silent_flips(self) -> int:
        """Flips the reader accepted with different content, over every mask tried."""
        return sum(kinds.count(SILENT) for kinds in self.flips.values())

    @property
    def flips_tried(self) -> int:
        """How many single-bit flips were tried, over every mask."""
        return sum(len(kinds) for kinds in self.flips.values())

    @property
    def silent_line_edits(self) -> int:
        """Line edits accepted with different content (never the last line's deletion, which is SHORTER)."""
        return sum(counts[SILENT] for counts in self.line_edits.values())


def lesson_verdict(path, reference_events: list | None = None) -> Verdict:
    """damage.verdict with the lesson's code.JSONLTranscript as the reader (it has no chain)."""
    return judge(lambda: read_back(LESSON, path), reference_events)


def subject_verdict(path, reference_events: list | None, *, integrity: bool, subject: str) -> Verdict:
    """The verdict of a fresh reader of the subject's class: damage.verdict for the lab, lesson_verdict."""
    if subject == LESSON:
        return lesson_verdict(path, reference_events)
    return verdict(path, reference_events, integrity=integrity)


def _lesson_map(path: Path, damaged_copies) -> list[Verdict]:
    """The lesson reader's verdict for each damaged copy of the file at path (damage.py's maps read with the lab)."""
    original = path.read_bytes()
    copy = path.parent / "copy" / path.name  # same name: the session id is the file's stem
    copy.parent.mkdir()
    reference = read_back(LESSON, path).events
    verdicts = []
    for data in damaged_copies(original):
        copy.unlink(missing_ok=True)  # a new file: rewriting a truncated one in place makes ext4 flush each time
        copy.write_bytes(data)
        verdicts.append(lesson_verdict(copy, reference))
    copy.unlink(missing_ok=True)
    copy.parent.rmdir()
    return verdicts


def _truncations(original: bytes):
    return (original[:offset] for offset in range(len(original) + 1))


def _flips(mask: int):
    def flipped(original: bytes):
        return (original[:offset] + bytes([original[offset] ^ mask]) + original[offset + 1:]
                for offset in range(len(original)))
    return flipped


def _truncation_map(path: Path, integrity: bool, subject: str) -> list[Verdict]:
    if subject == LESSON:
        return _lesson_map(path, _truncations)
    return truncation_map(path, integrity=integrity)


def _flip_map(path: Path, mask: int, integrity: bool, subject: str) -> list[Verdict]:
    if subject == LESSON:
        return _lesson_map(path, _flips(mask))
    return flip_map(path, mask, integrity=integrity)


def _line_edit_outcome(path: Path, original: bytes, reference: list, kind: str, number: int,
                       integrity: bool, subject: str = LAB) -> str:
    path.unlink(missing_ok=True)  # a new file: rewriting a truncated one makes ext4 flush it (auto_da_alloc)
    path.write_bytes(original)
    _edit(kind)(path, number, len(reference))
    found = subject_verdict(path, reference, integrity=integrity, subject=subject)
    if found.kind == CLEAN and found.events < len(reference):
        return SHORTER
    return found.kind


def damage_campaign(*, integrity: bool, sessions: int = 2, masks=(0x01,),
                    progress: Callable[[int, int], None] | None = None, subject: str = LAB) -> DamageReport:
    """Damage a sample of `sessions` bug-fix sessions in every way listed in the module doc.

    subject: whose class writes the sample and reads every damaged copy, "lab" or "lesson"
    (the lesson's class has no chain: integrity must be False). progress(done, total) is
    called after each map (truncations, each mask, line edits).
    """
    checked_subject(subject, integrity)
    if not masks or any(not 0 < mask < 256 for mask in masks):
        raise ValueError(f"masks must be byte values 1..255, not {masks!r}")
    steps, done = 2 + len(masks), 0

    def step():
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, steps)

    with tempfile.TemporaryDirectory(prefix="s09-damage-") as folder:
        path = write_sample(Path(folder) / "sample.jsonl", sessions=sessions, integrity=integrity, subject=subject)
        original = path.read_bytes()
        reference = read_back(subject, path, integrity=integrity).events
        report = DamageReport(integrity, len(original), len(reference), subject=subject)
        report.truncations = [found.kind for found in _truncation_map(path, integrity, subject)]
        step()
        for mask in masks:
            report.flips[mask] = [found.kind for found in _flip_map(path, mask, integrity, subject)]
            step()
        edited = Path(folder) / "edited" / path.name  # same name: the session id is the file's stem
        edited.parent.mkdir()
        for kind in LINE_EDITS:
            numbers = range(1, len(reference) + (0 if kind == "swap" else 1))
            report.line_edits[kind] = Counter(
                _line_edit_outcome(edited, original, reference, kind, number, integrity, subject)
                for number in numbers
            )
        step()
    return report


def damage_rows(reports: list[DamageReport]) -> list[dict]:
    """One summary row per report, for a table."""
    return [{
        "integrity": "on" if report.integrity else "off",
        "bytes": report.size,
        "records": report.records,
        "flips": report.flips_tried,
        "flips caught": sum(kinds.count(CORRUPT) for kinds in report.flips.values()),
        "flips silent": report.silent_flips,
        "line edits": sum(sum(counts.values()) for counts in report.line_edits.values()),
        "edits silent": report.silent_line_edits,
        "last line deleted": report.line_edits["delete"][SHORTER],
    } for report in reports]


def flipped_example(*, integrity: bool, offset: int, mask: int = 0x01) -> str:
    """The reader's verdict, in words, for one flipped bit of the one-session sample."""
    with tempfile.TemporaryDirectory(prefix="s09-flip-") as folder:
        path = write_sample(Path(folder) / "sample.jsonl", sessions=1, integrity=integrity)
        reference = DurableTranscript(path, integrity=integrity).read_events()
        flip_byte(path, offset, mask)
        return str(verdict(path, reference, integrity=integrity))


def verdict_mismatches(lesson: DamageReport, lab: DamageReport) -> int:
    """How many damaged copies the lesson's reader judged differently from the lab's (chain off).

    Both reports must come from the same sample, so the damaged files are the same.
    """
    if lesson.subject != LESSON or lab.subject != LAB or lab.integrity or lesson.size != lab.size:
        raise ValueError("compare a lesson report with a lab report (chain off) of the same sample")
    mismatches = sum(a != b for a, b in zip(lesson.truncations, lab.truncations))
    for mask in lesson.flips:
        mismatches += sum(a != b for a, b in zip(lesson.flips[mask], lab.flips[mask]))
    for kind in lesson.line_edits:
        mismatches += sum(((lesson.line_edits[kind] - lab.line_edits[kind])
                           + (lab.line_edits[kind] - lesson.line_edits[kind])).values())
    return mismatches
