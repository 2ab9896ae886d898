"""The live log's input checks: every public call refuses bad input with LiveInputError before it writes.

Each check returns the value it was given (or the Path it names), so a caller checks and keeps in one
line: `folder = check_folder("project_path", project_path)`.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from ..code import TranscriptValidationError
from ..lab import INT_LIMIT, checked_path
from .errors import LiveInputError
from .timeouts import Limits
from .turns import TYPE_ARRIVED, TYPE_FORKED, TYPE_MIGRATED, TYPE_MIGRATING, TYPE_PART_START, TYPE_REWIND, shown

PATH_MAX = 4096  # bytes in a whole path (Linux): a longer one fails with ENAMETOOLONG
# Records only the log's own helpers write: rewind, migrate_to, fork, open_stream. A plain commit refuses them.
CONTROL_TYPES = frozenset({TYPE_REWIND, TYPE_MIGRATED, TYPE_FORKED, TYPE_PART_START, TYPE_MIGRATING, TYPE_ARRIVED})


def check_text(name: str, value, *, empty: bool = False) -> str:
    """value, if it is a string (a non-blank one unless empty=True); else LiveInputError."""
    if not isinstance(value, str) or (not empty and not value.strip()):
        raise LiveInputError(f"{name} must be {'a' if empty else 'a non-blank'} string, not {shown(value)}")
    return value


def check_callable(name: str, value, *, optional: bool = False):
    """value, if it can be called (or is None and optional=True); else LiveInputError."""
    if (value is None and not optional) or (value is not None and not callable(value)):
        raise LiveInputError(f"{name} must be callable, not {shown(value)}")
    return value


def check_seconds(name: str, value, *, optional: bool = False):
    """value, if it is a finite number of seconds > 0 (>= 0, or None, when optional=True); else LiveInputError."""
    if value is None and optional:
        return None
    if not isinstance(value, (int, float)) or isinstance(value, bool) or abs(value) >= INT_LIMIT \
            or not math.isfinite(value) or value < 0 or (value == 0 and not optional):
        raise LiveInputError(f"{name} must be a finite number of seconds {'>= 0' if optional else '> 0'}, "
                             f"not {shown(value)}")
    return value


def check_whole(name: str, value, *, least: int = 0) -> int:
    """value, if it is a whole number >= least that JSON can carry; else LiveInputError."""
    if not isinstance(value, int) or isinstance(value, bool) or not least <= value < INT_LIMIT:
        raise LiveInputError(f"{name} must be a whole number >= {least}, not {shown(value)}")
    return value


def check_cursor(sequence) -> int:
    """sequence, if it is a cursor (a sequence >= 0); else LiveInputError."""
    if not isinstance(sequence, int) or isinstance(sequence, bool) or not 0 <= sequence < INT_LIMIT:
        raise LiveInputError(f"a cursor is a sequence >= 0, not {shown(sequence)}")
    return sequence


def check_folder(name: str, value) -> Path:
    """A folder given as a non-blank str or a path: never "" (which would mean the current folder)."""
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str) or not value.strip():
        raise LiveInputError(f"{name} must be a non-blank path, not {shown(value)}")
    return check_names(name, Path(value))


def check_names(name: str, path: Path) -> Path:
    """path, if a file system takes it: the lesson's check of its names (no NUL, no lone surrogate, none
    over 255 bytes), and the whole of it under PATH_MAX bytes; else LiveInputError, before anything is made."""
    try:
        checked_path(path)  # the lab's check of the names, which touches nothing on disk
    except TranscriptValidationError as problem:
        raise LiveInputError(f"{name}: {problem}") from None
    if len(os.fsencode(os.path.abspath(path))) >= PATH_MAX:
        raise LiveInputError(f"{name}: a path of {PATH_MAX} bytes or more is longer than the file system takes")
    return path


def check_session_id(session_id) -> str:
    """session_id, if it is a plain file name the file system takes (not hidden, no folder); else LiveInputError."""
    if not isinstance(session_id, str) or not session_id.strip() or Path(session_id).name != session_id \
            or session_id in (".", "..") or session_id.startswith("."):
        raise LiveInputError(f"a session id is a plain file name, not {shown(session_id)}")
    check_names("a session id", Path(f"{session_id}.jsonl"))  # NUL, a lone surrogate, over 255 bytes
    return session_id


def check_limits(limits) -> Limits:
    """limits, if it is a timeouts.Limits; else LiveInputError."""
    if not isinstance(limits, Limits):
        raise LiveInputError(f"limits must be a timeouts.Limits, not {shown(limits)}")
    return limits


def check_event(event) -> dict:
    """An event for a plain commit: a dict with a non-blank string type, not one of CONTROL_TYPES."""
    if not isinstance(event, dict):
        raise LiveInputError(f"an event is a dict, not {type(event).__name__}")
    check_text("an event's type", event.get("type"))
    if event["type"] in CONTROL_TYPES:
        raise LiveInputError(f"{event['type']} is written by the log's own helper "
                             f"(rewind, migrate_to, fork, open_stream), never by a plain commit")
    return event
