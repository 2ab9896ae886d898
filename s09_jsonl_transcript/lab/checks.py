"""The lab's input checks: what production refuses before a byte is written, beyond the lesson.

The lesson's `code.checked_event` refuses an event that would not read back as written (it encodes
it and decodes it again). The lab's `checked_event` refuses the same events with a message that
names the part at fault (an integer of over 4,300 digits, a key that is not a string, NaN, a
tuple, nesting deeper than MAX_NESTING), copies the event into plain JSON types in one walk, and
is what `fast.plain_payload` stands in for. `checked_path` and `checked_names` refuse a path or a
session name no file system could hold, or one that would leave the session's folder.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from ..code import FIELDS_APPEND_WRITES, TranscriptValidationError, shape_problem

INT_LIMIT = 10 ** 4300  # json.loads refuses integers of more digits (Python's int_max_str_digits)
MAX_NESTING = 100  # deeper events are refused: every reader, at any depth of its stack, reads them back
NAME_BYTES = 255  # the longest name (one part of a path) a Linux or macOS file system takes
SESSION_NAME_LENGTH = 128  # the longest workspace or session id for_session takes


def json_copy(value, depth: int = 0):
    """A deep copy of value in plain JSON types, or raise TranscriptValidationError (json.dumps
    turns a tuple into a list, the key 1 into "1": replay would not match the event)."""
    if depth > MAX_NESTING:
        raise TranscriptValidationError(f"event is nested deeper than {MAX_NESTING} levels")
    if value is None or type(value) in (str, bool):
        return value
    if isinstance(value, int):  # an int or an IntEnum, say: json.loads must read it back
        if abs(value) >= INT_LIMIT:
            raise TranscriptValidationError("an integer of over 4300 digits: json.loads refuses it")
        return int.__int__(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise TranscriptValidationError(f"{value!r} has no exact JSON representation")
        return float.__float__(value)
    if isinstance(value, dict):
        bad_keys = [key for key in value if type(key) is not str]
        if bad_keys:
            raise TranscriptValidationError(f"object keys must be strings, not {bad_keys[0]!r}")
        return {key: json_copy(item, depth + 1) for key, item in value.items()}
    if isinstance(value, list):
        return [json_copy(item, depth + 1) for item in value]
    if isinstance(value, str):  # a subclass, such as a str Enum: str(Role.USER) is "Role.USER"
        return str.__str__(value)
    raise TranscriptValidationError(f"{type(value).__name__} is not a JSON type")


def checked_event(event) -> dict:
    """A private copy of an event that append may write, or raise TranscriptValidationError naming
    what is wrong. (A lone surrogate is refused when the record is encoded, before the write.)"""
    if not isinstance(event, dict):
        raise TranscriptValidationError(f"an event must be a dict, not {type(event).__name__}")
    if not isinstance(event.get("type"), str) or not event["type"]:
        raise TranscriptValidationError("an event needs a non-empty string 'type'")
    if not FIELDS_APPEND_WRITES.isdisjoint(event):  # one set test; the message only for a refusal
        spoofed = ", ".join(sorted(FIELDS_APPEND_WRITES & event.keys()))
        raise TranscriptValidationError(f"event carries reserved envelope fields append writes itself: {spoofed}")
    copied = json_copy(event)
    problem = shape_problem(copied)
    if problem:
        raise TranscriptValidationError(problem)
    return copied


def checked_path(filepath) -> Path:
    """filepath made absolute (the same file after a change of directory), or raise
    TranscriptValidationError for a path no file system could hold: a NUL, a lone surrogate, or a
    name over NAME_BYTES bytes. Nothing on disk is touched."""
    path = Path(filepath).absolute()
    try:
        fits = max(map(len, os.fsencode(path).split(b"/"))) <= NAME_BYTES
    except UnicodeEncodeError:  # a lone surrogate
        fits = False
    if not fits or "\0" in str(path):
        raise TranscriptValidationError(f"{str(path)!r}: a path may hold no NUL, no lone surrogate and no name "
                                        f"over {NAME_BYTES} bytes")
    return path


def checked_names(workspace: str, session_id: str) -> None:
    """Raise TranscriptValidationError unless both names are safe as one folder and one file name."""
    for kind, name in (("workspace", workspace), ("session_id", session_id)):
        unsafe = not isinstance(name, str) or not 0 < len(name) <= SESSION_NAME_LENGTH or name.startswith(".")
        if unsafe or any(bad in name for bad in ("/", "\\", "\0", "..")):
            raise TranscriptValidationError(f"{kind} must be 1 to {SESSION_NAME_LENGTH} characters, not start "
                                            "with '.', and hold no '/', '\\', '..' or NUL")
