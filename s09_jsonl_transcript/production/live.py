"""A live session's event log, every public name in one place: `from s09_jsonl_transcript.production.live import ...`.

SessionEventLog (log.py) commits events durably, hands them and ephemeral deltas to subscribers with
cursors, validates commits against the session's state machine and keeps that state up to date.
Each idea has its own module in this package; this one only gathers their public names, so a
caller imports from one place and need not know the split.
"""

from __future__ import annotations

from .archive import ARCHIVE_FOLDER, ArchiveReport, archive_expired
from .cache import CACHE_LIMIT
from .cursors import (
    BLOCK,
    CLIENT_HIDDEN_TYPES,
    Page,
    committed_end,
    is_client_visible,
    page_back,
    read_after,
    read_from,
    read_range,
)
from .errors import CommitRefused, LiveInputError, MigrationError, SessionGoneError, SessionMigratedError
from .fork_migrate_delete import STAGING_PREFIXES, clean_staging
from .inputs import CONTROL_TYPES, PATH_MAX
from .log import SessionEventLog
from .state import LiveState
from .streams import CHANNELS, Delta, Stream, is_delta
from .subscription import DEFAULT_MAX_QUEUED, DELIVERY_WAIT, Subscription
from .turn_api import CRASH_ERROR
from .watchdog import DEFAULT_WATCHDOG_INTERVAL

__all__ = [
    "ARCHIVE_FOLDER",
    "BLOCK",
    "CACHE_LIMIT",
    "CHANNELS",
    "CLIENT_HIDDEN_TYPES",
    "CONTROL_TYPES",
    "CRASH_ERROR",
    "DEFAULT_MAX_QUEUED",
    "DEFAULT_WATCHDOG_INTERVAL",
    "DELIVERY_WAIT",
    "PATH_MAX",
    "STAGING_PREFIXES",
    "ArchiveReport",
    "CommitRefused",
    "Delta",
    "LiveInputError",
    "LiveState",
    "MigrationError",
    "Page",
    "SessionEventLog",
    "SessionGoneError",
    "SessionMigratedError",
    "Stream",
    "Subscription",
    "archive_expired",
    "clean_staging",
    "committed_end",
    "is_client_visible",
    "is_delta",
    "page_back",
    "read_after",
    "read_from",
    "read_range",
]
