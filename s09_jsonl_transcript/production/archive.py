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
from ..lab import DurableTranscript, OsFileIO, make_folders
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
    skipped: list = field(default_factory=list)  # (file name, why it stayed): in use, held, unreadable; no link made
    unfinished: list = field(default_factory=list)  # (file name, its archive place, why): linked there, the move
    # not finished (a folder's fsync or the old name's removal failed): archive_expired again finishes it
    staging_removed: list = field(default_factory=list)  # leftover .fork-*/.migrate-* folders removed

    def __str__(self):
        unfinished = f", {len(self.unfinished)} unfinished" if self.unfinished else ""
        return f"{len(self.archived)} archived, {len(self.skipped)} skipped{unfinished}"


class ArchiveUnfinished(OSError):
    """A session's file is linked into the archive but its move did not finish: place names the link."""

    def __init__(self, place: Path, error: OSError):
        super().__init__(error.errno, f"linked to {place}, but the move did not finish: {error.strerror or error}")
        self.place = place


def _archive_place(archive: Path, path: Path) -> tuple[Path, bool]:
    """Where this life of a session goes, and whether it is linked there already (an earlier try's link).

    archive/<id>.jsonl, then archive/life-2/<id>.jsonl, life-3, ...: a session id can be used again
    once its first life is archived; each life keeps its own file, under its own name (the reader
    checks the envelope's session id against it). A place that names path's own file is this life's.
    """
    place, life = archive / path.name, 1
    while os.path.lexists(place):
        if os.path.samefile(place, path):
            return place, True
        life += 1
        place = archive / f"life-{life}" / path.name
    return place, False


def _move_exclusively(path: Path, archive: Path) -> Path:
    """Give path the next free archive place (or the one an earlier try linked it to), never replacing
    a file there; sync the folders that hold the new names, then remove its old name and sync that.

    Once linked, a failure raises ArchiveUnfinished naming the place: a retry finds the link and finishes.
    """
    while True:
        place, linked = _archive_place(archive, path)
        if linked:
            break
        make_folders(place.parent)  # archive/ and life-N/: each new folder's name made durable in its parent
        try:
            os.link(path, place)  # fails when the name exists: an earlier life is never replaced
        except FileExistsError:
            continue
        break
    try:
        OsFileIO().fsync_dir(place.parent)
        os.unlink(path)
        OsFileIO().fsync_dir(path.parent)
    except OSError as error:
        raise ArchiveUnfinished(place, error) from None
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
    A move that fails once the file is linked into the archive is listed in unfinished, never in
    skipped; running archive_expired again finds that link and finishes the move (the same life is
    never archived twice). Every new folder and name is synced in the folder that holds it.
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
        except ArchiveUnfinished as unfinished:
            report.unfinished.append((path.name, unfinished.place, str(unfinished)))
            continue
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
            try:
                place = _move_exclusively(self.transcript.path, archive)
            except ArchiveUnfinished as unfinished:
                if os.path.lexists(self.transcript.path):
                    raise  # still here: the log goes on, and a retry finishes the move
                place, error = unfinished.place, unfinished
            else:
                error = None
            self._gone = f"archived to {place}"
            self.transcript.close()
        self.close()
        if error is not None:
            raise error  # gone from here, but its removal may not be durable: reported unfinished
        return place
