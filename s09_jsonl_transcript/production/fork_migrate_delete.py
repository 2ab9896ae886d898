"""Acting on a session's whole file: fork it, delete it when a check holds, and the staging a fork and a
migration (migration.py) share.

A fork or a migration writes its new file whole in a hidden staging folder (.fork-<pid>-...,
.migrate-<pid>-...) and only then gives it its name, exclusively, and syncs the folder that holds
the name: no reader ever sees one in part, and a racing fork or migration loses. clean_staging
removes the folders that a killed process left behind. Fork and rewind cut only between commits (a
batch is one commit, seed 003).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Self

from ..code import TranscriptCorruptionError
from ..lab import BATCH_END_FIELD, CHAIN_FIELD, DurableTranscript, OsFileIO, as_io_error, holding_folder
from .cursors import ends_a_commit
from .errors import CommitRefused, LiveInputError
from .inputs import check_callable, check_folder, check_session_id
from .state import LiveState
from .turns import TYPE_ARRIVED, TYPE_FORKED, TYPE_MIGRATING, shown

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


def staging_folder(prefix: str, folder: Path) -> Path:
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


def payload_of(record: dict) -> dict:
    """A record without its envelope and chain: what was given to append."""
    return {key: value for key, value in record.items() if key not in _ENVELOPE}


def publish_exclusively(complete: Path, target: Path) -> None:
    """Give the complete, synced file `complete` the name `target`, only if no such name exists, and
    make the name durable: the folder that holds it is fsynced.

    os.link fails with FileExistsError when target exists: the file appears under its name
    whole or not at all (the design's createExclusive), and a racing fork or migration loses.
    When the folder's fsync fails, the name is taken back before the error is raised (as the
    lab's TranscriptIOError); a name that stays is one its caller's retry recognises as its own.
    """
    os.link(complete, target)
    try:
        OsFileIO().fsync_dir(holding_folder(target))
    except OSError as error:
        take_back(target)
        raise as_io_error(error, "sync the folder of a new name", target) from None


@contextmanager
def in_library_words(step: str, path: Path):
    """Inside, a failed file call (an OSError but FileExistsError) is raised as the lab's TranscriptIOError
    naming the step and the path."""
    try:
        yield
    except FileExistsError:
        raise
    except OSError as error:
        raise as_io_error(error, step, path) from None


def take_back(name: Path) -> bool:
    """Remove a name just made and sync its folder; False when that fails too (the name may stay)."""
    try:
        os.unlink(name)
        OsFileIO().fsync_dir(holding_folder(name))
    except OSError:
        return False
    return True


def waiting_state(events: list) -> str | None:
    """The source a session waits for after these events (a session_migrating record without its
    session_arrived), or None: a fork or a rewind never cuts there."""
    waiting = None
    for event in events:
        if event["type"] == TYPE_MIGRATING:
            waiting = event.get("from", "another harness")
        elif event["type"] == TYPE_ARRIVED:
            waiting = None
    return waiting


class ForkMigrateDeleteMixin:
    """SessionEventLog's whole-file operations: delete_validated and fork (migrate_to: migration.py).

    Each checks the state under transcript.lock with the writer held (_fresh), as a validated commit
    does. fork notes in the core's _forks_named the names it made and has not yet returned.
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
        given its name, exclusively (FileExistsError if another session has it), and the name
        synced in its folder: no reader ever sees a fork in part. Sequences and payloads are the
        source's; the envelope (session id, event id, recorded_at) is the new session's. Returns the
        new session's shared log.

        All or nothing: a fork that fails leaves no name, or (when taking the name back failed too, or
        the new log could not be opened) one that the same call on this log recognises as its own
        (noted in _forks_named, and holding this session's events 1..upto and the same
        session_forked record) and completes; any other existing name is FileExistsError. A fork cuts
        at a commit boundary only (seed 003: a batch is one commit): upto_sequence inside a batch, or
        where the session waited for a migration's source, is refused (CommitRefused). Staging
        folders that killed forks left behind are removed first (clean_staging).
        """
        target = self.transcript.path.parent / f"{check_session_id(new_session_id)}.jsonl"
        with in_library_words("fork", target), self.transcript.lock:
            self._fresh()
            upto = self._last_sequence if upto_sequence is None else upto_sequence
            if not isinstance(upto, int) or isinstance(upto, bool) or not 0 <= upto <= self._last_sequence:
                raise LiveInputError(f"upto_sequence must be between 0 and {self._last_sequence}, "
                                     f"not {shown(upto_sequence)}")
            events = [event for event in self.transcript.read_events() if event["sequence"] <= upto]
            if events and not ends_a_commit(events[-1]):
                raise CommitRefused(f"event {upto} is inside a batch (it ends at {events[-1][BATCH_END_FIELD]}): "
                                    f"a fork cuts only between commits")
            if waiting_state(events) is not None:
                raise CommitRefused(f"at event {upto} the session waited for its migration's source: a fork "
                                    f"cuts after its session_arrived")
        payloads = [*(payload_of(event) for event in events),
                    {"type": TYPE_FORKED, "from_session": self.session_id, "upto_sequence": upto}]
        with in_library_words("fork", target):
            if os.path.lexists(target):
                if self._forks_named.get(target) != payloads or not _holds(target, payloads):
                    raise FileExistsError(f"session {new_session_id} exists: a fork never overwrites")
                OsFileIO().fsync_dir(holding_folder(target))  # this fork's earlier try: its name made durable
            else:
                self._write_fork(target, payloads)
            forked = type(self).for_session(new_session_id, target.parent, limits=self.limits, clock=self.clock,
                                            integrity=self.transcript.integrity)
        self._forks_named.pop(target, None)
        return forked

    def _write_fork(self, target: Path, payloads: list) -> None:
        """Write the fork whole in a staging folder, then give it its name (see publish_exclusively). Once
        the name is this fork's, it is noted in _forks_named until fork returns: a retry recognises it."""
        clean_staging(target.parent)
        scratch = staging_folder(".fork-", target.parent)
        try:
            staged = DurableTranscript.create(scratch / target.name, clock=self.clock,
                                              integrity=self.transcript.integrity)
            with staged:
                staged.append_batch(payloads)
            try:
                publish_exclusively(staged.path, target)
            except OSError:
                if os.path.lexists(target) and os.path.samefile(target, staged.path):
                    self._forks_named[target] = payloads  # the name stayed: this fork's retry completes it
                raise
            self._forks_named[target] = payloads
        finally:
            shutil.rmtree(scratch, ignore_errors=True)


def _holds(path: Path, payloads: list) -> bool:
    """True when the transcript at path holds exactly these payloads (a fork's, recognised by its retry)."""
    try:
        events = DurableTranscript(path).read_events()
    except (OSError, TranscriptCorruptionError):
        return False
    return [payload_of(event) for event in events] == payloads
