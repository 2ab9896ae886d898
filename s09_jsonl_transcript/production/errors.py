"""What the live log raises in its own words: a refused commit, a session gone or migrated, bad input."""

from __future__ import annotations


class CommitRefused(RuntimeError):
    """A validated commit's check failed against the current state: nothing was written."""


class SessionMigratedError(CommitRefused):
    """This copy of the session was migrated to another harness: it takes no more commits."""


class MigrationError(RuntimeError):
    """The migrated copy's replayed state is not the source's: the migration was undone."""


class SessionGoneError(CommitRefused):
    """The session's file was deleted (delete_validated) or archived (archive_expired): no read, no commit."""


class LiveInputError(TypeError, ValueError):
    """A public call got input it cannot take; it was refused before anything was written.

    It is a TypeError and a ValueError, so code that caught either for a bad argument still does.
    """
