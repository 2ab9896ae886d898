"""Housekeeping: archive_expired moves expired sessions' files into <project>/archive/, never rewriting them.

A session counts as expired when its transcript says so (a turn that timed out, a session limit
reached: the watchdog records those). Each life of a reused session id keeps its own file:
archive/<id>.jsonl, then archive/life-2/<id>.jsonl, life-3, ...
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..code import TranscriptCorruptionError, TranscriptLockedError
from ..lab import DurableTranscript, OsFileIO
from . import cache
from .errors import CommitRefused, LiveInputError
from .fork_migrate_delete import clean_staging
from .inputs import check_folder
from .turns import EXPIRED, session_status

ARCHIVE_FOLDER = "archive"  # archive_expired moves expired sessions' files here, inside their project folder


@dataclass
class ArchiveReport:
    """What one archive_expired did: the sessions it moved and where, and the files it left, with why."""

    archived: list = field(default_factory=list)  # session ids, in file-name order
    archived_to: list = field(default_factory=list)  # where each went (a Path), in the same order
    skipped: list = field(default_factory=list)  # (file name, why it stayed): in use, held, unreadable
    staging_removed: list = field(default_factory=list)  # leftover .fork-*/.migrate-* folders removed

    def __str__(self):
        return f"{len(self.archived)} archived, {len(self.skipped)} skipped"


def _archive_place(archive: Path, name: str) -> Path:
    """Where the next life of a session goes: archive/<id>.jsonl, then archive/life-2/<id>.jsonl, life-3, ...

    A session id can be used again once its first life is archived; each life keeps its own
    file, under its own name (the reader checks the envelope's session id against it).
    """
    place, life = archive / name, 1
    while place.exists():
        life += 1
        place = archive / f"life-{life}" / name
    return place


def _move_exclusively(path: Path, archive: Path) -> Path:
    """Give path the next free archive place, never replacing a file there; then remove its old name."""
    while True:
        place = _archive_place(archive, path.name)
        place.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(path, place)  # fails when the name exists: an earlier life is never replaced
        except FileExistsError:
            continue
        OsFileIO().fsync_dir(place.parent)
        os.unlink(path)
        OsFileIO().fsync_dir(path.parent)
        return place


def archive_expired(project_path) -> ArchiveReport:
    """Move every expired session's file in project_path into project_path/archive; report what it did.

    A session counts as expired when its transcript says so (a turn that timed out, a session
    limit reached: the watchdog records those). Files are moved, never rewritten, and never
    replace an earlier life of the same session id (see _archive_place). Left where they are,
    and listed in skipped: a session with a subscriber or watchdog in this process, one another
    writer holds, and a file that cannot be read as a transcript (a foreign file, damage), as
    index.sync does. A session that is not expired is left alone, its log in this process
    untouched. An expired session whose log is open in this process is moved under that log's
    lock; the log then refuses reads and commits (SessionGoneError, naming where the file went).
    Leftover staging folders of killed forks are removed first (clean_staging).
    """
    folder = check_folder("project_path", project_path)
    if not folder.is_dir():
        raise LiveInputError(f"project_path {str(folder)!r} is not a folder")
    archive = folder / ARCHIVE_FOLDER
    report = ArchiveReport(staging_removed=clean_staging(folder))
    for path in sorted(folder.glob("*.jsonl")):
        log = cache.held((os.path.abspath(folder), path.stem))
        try:
            place = log._archive_if_expired(archive) if log is not None and not log.closed else \
                _archive_file(path, archive)
        except (TranscriptCorruptionError, TranscriptLockedError, CommitRefused, OSError, ValueError) as problem:
            report.skipped.append((path.name, str(problem)))
            continue
        if place is not None:
            report.archived.append(path.stem)
            report.archived_to.append(place)
    return report


def _archive_file(path: Path, archive: Path) -> Path | None:
    """Archive a session no log in this process has open, holding its writer while it moves."""
    transcript = DurableTranscript(path)
    try:
        transcript.acquire_writer()  # nobody else writes while it moves (TranscriptLockedError if held)
        if session_status(transcript.read_events()).state != EXPIRED:
            return None
        return _move_exclusively(path, archive)
    finally:
        transcript.close()


class ArchiveMixin:
    """SessionEventLog's side of archive_expired: move its own file away under its own lock."""

    def _archive_if_expired(self, archive: Path) -> Path | None:
        """Archive this log's session if it is expired and nothing watches it; None when it is not expired.

        The file moves under transcript.lock with the writer held; the log then refuses reads and
        commits (SessionGoneError, naming where the file went) and is closed.
        """
        if self.pinned:
            raise CommitRefused(f"session {self.session_id} has a subscriber or a watchdog in this process")
        with self.transcript.lock:
            self._fresh()
            if self._fold.state != EXPIRED:
                return None
            place = _move_exclusively(self.transcript.path, archive)
            self._gone = f"archived to {place}"
            self.transcript.close()
        self.close()
        return place
