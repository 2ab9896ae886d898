"""Acting on a session's whole file: fork it, migrate it to another harness, delete it when a check holds.

A fork or a migration writes its new file whole in a hidden staging folder (.fork-<pid>-...,
.migrate-<pid>-...) and only then gives it its name, exclusively: no reader ever sees one in part,
and a racing fork or migration loses. clean_staging removes the folders that a killed process
left behind. Fork and rewind cut only between commits (a batch is one commit, seed 003).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable, Self

from ..lab import BATCH_END_FIELD, CHAIN_FIELD, DurableTranscript, OsFileIO, make_folders, regular
from .cursors import ends_a_commit
from .errors import CommitRefused, LiveInputError, MigrationError, SessionMigratedError
from .inputs import check_callable, check_folder, check_session_id
from .state import LiveState
from .turns import TYPE_FORKED, TYPE_MIGRATED, shown

STAGING_PREFIXES = (".fork-", ".migrate-")  # hidden folders fork and migrate_to write in: .fork-<pid>-...
_ENVELOPE = frozenset({"schema_version", "sequence", "recorded_at", "session_id", "event_id", BATCH_END_FIELD,
                       CHAIN_FIELD})


def _pid_alive(pid: int) -> bool:
    """True while process pid runs (a process of another user counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    return True


def _staging_folder(prefix: str, folder: Path) -> Path:
    """A hidden folder for a file written whole before it gets its name: <prefix><pid>-<random>."""
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=folder))


def clean_staging(project_path) -> list[str]:
    """Remove the staging folders (.fork-<pid>-*, .migrate-<pid>-*) of processes that no longer run.

    A fork or migration killed half way leaves its folder; one of a live process (this one
    included) is never touched, so a fork running elsewhere is not disturbed. Returns the names
    removed. fork, migrate_to and archive_expired call it.
    """
    folder = check_folder("project_path", project_path)
    removed = []
    for path in sorted(folder.glob(".*-*")) if folder.is_dir() else ():
        prefix = next((p for p in STAGING_PREFIXES if path.name.startswith(p)), None)
        pid = path.name[len(prefix):].split("-", 1)[0] if prefix else ""
        if path.is_dir() and pid.isdigit() and not _pid_alive(int(pid)):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path.name)
    return removed


def _payload(record: dict) -> dict:
    """A record without its envelope and chain: what was given to append."""
    return {key: value for key, value in record.items() if key not in _ENVELOPE}


def _publish_exclusively(complete: Path, target: Path) -> None:
    """Give the complete, synced file `complete` the name `target`, only if no such name exists.

    os.link fails with FileExistsError when target exists: the file appears under its name
    whole or not at all (the design's createExclusive), and a racing fork or migration loses.
    """
    os.link(complete, target)
    OsFileIO().fsync_dir(target.parent)


class ForkMigrateDeleteMixin:
    """SessionEventLog's whole-file operations: delete_validated, fork and migrate_to.

    Each checks the state under transcript.lock with the writer held (_fresh), as a validated commit
    does; migrate_to writes its session_migrated record through _append, the one writer of it.
    """

    def delete_validated(self, predicate: Callable[[LiveState], bool]) -> bool:
        """Delete the session's file if predicate(latest committed state) is true; return whether it did.

        The predicate sees the state read from the file's tail under the writer's lock, so no
        commit can slip in between the check and the delete. A deleted log takes no more commits
        and no more reads: both raise SessionGoneError.
        """
        check_callable("predicate", predicate)
        with self.transcript.lock:
            self._fresh()
            if not predicate(self._state()):
                return False
            self._gone = "deleted"
            self.transcript.path.unlink()
            OsFileIO().fsync_dir(self.transcript.path.parent)
        self.close()
        return True

    def fork(self, new_session_id: str, upto_sequence: int | None = None) -> Self:
        """A new session in the same folder holding this one's events 1..upto_sequence (all when None).

        The new transcript is written whole in a hidden temporary folder (its events, then a
        session_forked event naming the source, as one batch: one write, one fsync) and only then
        given its name, exclusively (FileExistsError if the session exists): no reader ever sees
        a fork in part. Sequences and payloads are the source's; the envelope (session id, event
        id, recorded_at) is the new session's. Returns the new session's shared log.

        A fork cuts at a commit boundary only (seed 003: a batch is one commit): upto_sequence
        inside a batch is refused (CommitRefused). Staging folders that killed forks left behind
        are removed first (clean_staging).
        """
        target = self.transcript.path.parent / f"{check_session_id(new_session_id)}.jsonl"
        with self.transcript.lock:
            self._fresh()
            upto = self._last_sequence if upto_sequence is None else upto_sequence
            if not isinstance(upto, int) or isinstance(upto, bool) or not 0 <= upto <= self._last_sequence:
                raise LiveInputError(f"upto_sequence must be between 0 and {self._last_sequence}, "
                                     f"not {shown(upto_sequence)}")
            events = [event for event in self.transcript.read_events() if event["sequence"] <= upto]
            if events and not ends_a_commit(events[-1]):
                raise CommitRefused(f"event {upto} is inside a batch (it ends at {events[-1][BATCH_END_FIELD]}): "
                                    f"a fork cuts only between commits")
        if target.exists():
            raise FileExistsError(f"session {new_session_id} exists: a fork never overwrites")
        clean_staging(target.parent)
        marker = {"type": TYPE_FORKED, "from_session": self.session_id, "upto_sequence": upto}
        scratch = _staging_folder(".fork-", target.parent)
        try:
            staged = DurableTranscript.create(scratch / target.name, clock=self.clock,
                                              integrity=self.transcript.integrity)
            with staged:
                staged.append_batch([*(_payload(event) for event in events), marker])
            _publish_exclusively(staged.path, target)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return type(self).for_session(new_session_id, target.parent, limits=self.limits, clock=self.clock,
                                      integrity=self.transcript.integrity)

    def migrate_to(self, target_folder) -> Self:
        """Move the session to another harness's folder (seed 002's migration flow); returns harness B's log.

        1. the whole JSONL is the payload: copied byte for byte, created exclusively and whole;
        2. B loads and replays it; 3. B's state and materialized events are checked equal to this
        log's (else B's copy is deleted and MigrationError raised); 4. this copy is marked
        migrated (a session_migrated event): from then on it refuses every commit
        (SessionMigratedError), after a restart too; 5. B takes every later commit.
        """
        folder = check_folder("target_folder", target_folder)
        make_folders(folder)  # each new folder's name made durable in its parent
        clean_staging(folder)
        target = folder / self.transcript.path.name
        with self.transcript.lock:
            self._fresh()
            if self._fold.migrated_to is not None:
                raise SessionMigratedError(f"session {self.session_id} already migrated to {self._fold.migrated_to}")
            with open(regular(self.transcript.path), "rb") as source:
                payload = source.read(self._end)
            scratch = _staging_folder(".migrate-", folder)
            try:
                staged = scratch / target.name
                with open(staged, "wb") as file:
                    file.write(payload)
                    file.flush()
                    os.fsync(file.fileno())
                _publish_exclusively(staged, target)
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
            harness_b = type(self).for_session(self.session_id, folder, limits=self.limits, clock=self.clock,
                                               integrity=self.transcript.integrity)
            same = (harness_b.status() == self._fold.status()
                    and [_payload(e) for e in harness_b.materialized()] == [_payload(e) for e in self.materialized()])
            if not same:
                harness_b.delete_validated(lambda state: True)
                raise MigrationError(f"the copy in {folder} does not replay to this session's state")
            self._append([{"type": TYPE_MIGRATED, "to": str(target)}])  # the one writer of this control record
        self.stop_watchdog()
        return harness_b
