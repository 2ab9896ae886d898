"""Moving a session to another harness (seed 002's migration flow), all or nothing under any single failure.

Two files hold the session while it moves: A (the source) and B (the copy in the target folder).
Exactly one of them takes commits at every moment, and one durable write switches them: the
session_migrated marker A appends.

    1. B is written whole in a staging folder: A's bytes, then a session_migrating record naming A.
       It gets its name exclusively and the folder that holds the name is fsynced. A B that waits
       (its last migration record is session_migrating) refuses every commit while A is not marked.
    2. B is opened and replayed; its state and events (its migration records left out) must be A's.
    3. A appends session_migrated (to: B's path). From here A refuses every commit, B takes them.
    4. B appends session_arrived, so that it no longer needs A: a B that waits and finds A marked
       appends it itself before its next commit (it reads A's end from the device, under A's lock).

A failure before 3 leaves A taking the commits and B (if its name stayed) waiting; a failure after
3 leaves A refusing and B taking them. migrate_to again completes the migration or recognises it as
done: it reuses B if B still holds A's bytes, replaces it if A took commits since (a waiting B never
took one), and after 3 only finishes step 4.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Self

from ..code import TranscriptCorruptionError, TranscriptLockedError
from ..lab import DurableTranscript, OsFileIO, holding_folder, make_folders, regular
from . import cache
from .errors import CommitRefused, MigrationError, SessionMigratedError
from .fork_migrate_delete import (
    clean_staging,
    in_library_words,
    payload_of,
    publish_exclusively,
    staging_folder,
    take_back,
)
from .inputs import check_folder
from .turns import TYPE_ARRIVED, TYPE_MIGRATED, TYPE_MIGRATING

MIGRATION_TYPES = frozenset({TYPE_MIGRATING, TYPE_ARRIVED})  # B's own records: left out when B is compared with A


class MigrationMixin:
    """SessionEventLog's migrate_to, and a waiting copy's arrival (uses transcript, _fold, _end,
    _last_sequence, _source_marked, _fresh, _append, limits, clock)."""

    def migrate_to(self, target_folder) -> Self:
        """Move the session to another harness's folder (seed 002's migration flow); returns harness B's log.

        1. the whole JSONL is the payload: copied byte for byte, and a session_migrating record after it,
        created exclusively and whole (B waits: it refuses commits); 2. B loads and replays it; 3. B's
        state and materialized events are checked equal to this log's (else B's copy is deleted and
        MigrationError raised); 4. this copy is marked migrated (a session_migrated event): from then
        on it refuses every commit (SessionMigratedError), after a restart too; 5. B records that it
        arrived and takes every later commit. Called again after a failure, it completes what is left
        (see the module's docstring).
        """
        folder = check_folder("target_folder", target_folder)
        target = folder / self.transcript.path.name
        with in_library_words("migrate", target), self.transcript.lock:
            make_folders(folder)  # each new folder's name made durable in its parent
            clean_staging(folder)
            self._fresh()
            if self._fold.migrated_to is not None:
                if self._fold.migrated_to != str(target):
                    raise SessionMigratedError(f"session {self.session_id} already migrated to "
                                               f"{self._fold.migrated_to}")
                harness_b = self._harness_b(folder)  # marked already: only B's arrival may be missing
            else:
                if self._fold.migrating_from is not None:
                    raise SessionMigratedError(f"session {self.session_id} is still arriving from "
                                               f"{self._fold.migrating_from}: it cannot move on yet")
                self._place_copy(target)
                harness_b = self._harness_b(folder)
                if not self._same_as(harness_b):
                    harness_b.delete_validated(lambda state: True)
                    raise MigrationError(f"the copy in {folder} does not replay to this session's state")
                self._append([{"type": TYPE_MIGRATED, "to": str(target)}])  # the switch: B takes the commits now
            self.transcript.close()  # marked: this copy never writes again, and lets B read that it is marked
            harness_b._source_marked = True
            harness_b.arrive()
        self.stop_watchdog()
        return harness_b

    def _harness_b(self, folder: Path) -> Self:
        return type(self).for_session(self.session_id, folder, limits=self.limits, clock=self.clock,
                                      integrity=self.transcript.integrity)

    def _same_as(self, harness_b) -> bool:
        """True when B replays to this log's state and events (B's migration records left out)."""
        theirs = [payload_of(event) for event in harness_b.materialized() if event["type"] not in MIGRATION_TYPES]
        return harness_b.status() == self._fold.status() and theirs == [payload_of(e) for e in self.materialized()]

    def _place_copy(self, target: Path) -> None:
        """Have at target a waiting copy of this session as it is now, its name durable: an earlier try's
        copy is kept if it still holds this file's bytes, else replaced; anything else there is refused."""
        with open(regular(self.transcript.path), "rb") as source:
            payload = source.read(self._end)
        if os.path.lexists(target):
            if self._holds_waiting_copy(target, payload):
                OsFileIO().fsync_dir(holding_folder(target))  # an earlier try's copy: its name made durable
                return
            self._remove_stale_copy(target)
        scratch = staging_folder(".migrate-", target.parent)
        try:
            staged = scratch / target.name
            with open(staged, "wb") as file:
                file.write(payload)
                file.flush()
                os.fsync(file.fileno())
            with DurableTranscript(staged, clock=self.clock, integrity=self.transcript.integrity) as copy:
                copy.append({"type": TYPE_MIGRATING, "from": str(self.transcript.path)})
            publish_exclusively(staged, target)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def _holds_waiting_copy(self, target: Path, payload: bytes) -> bool:
        """True when target is this session's waiting copy and holds exactly this file's bytes before its
        session_migrating record; FileExistsError when target is not a waiting copy of this session."""
        events = _events_or_none(target)
        last = events[-1] if events else None
        if not (last and last["type"] == TYPE_MIGRATING and last.get("from") == str(self.transcript.path)):
            raise FileExistsError(f"{target} exists: a migration never overwrites another session's file")
        with open(regular(target), "rb") as copy:
            return copy.read(len(payload)) == payload and last["sequence"] == self._last_sequence + 1

    def _remove_stale_copy(self, target: Path) -> None:
        """Remove an earlier try's waiting copy that this session has outgrown (it never took a commit)."""
        waiting = cache.held((os.path.abspath(target.parent), target.stem))
        if waiting is not None:
            waiting.close()
        copy = DurableTranscript(target)
        try:
            copy.acquire_writer()  # nobody else holds it while it goes
        except TranscriptLockedError:
            raise MigrationError(f"the copy waiting at {target} is open elsewhere: close it, then migrate "
                                 "again") from None
        try:
            if not take_back(target):
                raise MigrationError(f"the copy waiting at {target} could not be removed")
        finally:
            copy.close()

    # -- B's side --------------------------------------------------------------------

    def arrive(self) -> None:
        """If this log is a copy waiting for its source, append session_arrived once the source is marked
        migrated here; SessionMigratedError (naming why) while it is not. Nothing when it is not waiting."""
        with self.transcript.lock:
            self._fresh()
            if self._fold.migrating_from is None:
                return
            why_not = None if self._source_marked else self._why_source_not_marked()
            if why_not is not None:
                raise SessionMigratedError(f"session {self.session_id} is still arriving from "
                                           f"{self._fold.migrating_from}: {why_not}; commit there")
            self._append([{"type": TYPE_ARRIVED, "from": self._fold.migrating_from}])

    def _why_source_not_marked(self) -> str | None:
        """None when the source's last record is its session_migrated marker naming this copy, at this
        copy's session_migrating sequence, read from the device under the source's lock; else why not."""
        source = Path(self._fold.migrating_from)
        held = cache.held((os.path.abspath(source.parent), source.stem))
        try:
            if held is not None and not held.closed and held.transcript.outcome_unknown is None:
                with held.transcript.lock:
                    held._fresh()  # it holds the source's writer, opened from the device: its end is the file's
                    last = held.transcript.read_recent(1).events
            else:
                last = DurableTranscript(source).read_settled_end().events
        except TranscriptLockedError:
            return "the source is open in another process"
        except (OSError, TranscriptCorruptionError, CommitRefused) as error:
            return f"the source cannot be read ({error})"
        marked = last and last[-1]["type"] == TYPE_MIGRATED and last[-1].get("to") == str(self.transcript.path)
        if not marked or last[-1]["sequence"] != self._fold.migrating_at:
            return "the source is not marked migrated here"
        return None


def _events_or_none(path: Path) -> list | None:
    """The events of the transcript at path, or None when it cannot be read as one."""
    try:
        return DurableTranscript(path).read_events()
    except (OSError, TranscriptCorruptionError):
        return None
