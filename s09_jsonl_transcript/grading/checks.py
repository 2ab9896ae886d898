"""Helpers that the exercises' notebooks and check cells use, and what a grading run prints.

They live in the package, not in the notebooks, so that they are tested once and every check
cell stays short enough to read. Inside the grading sandbox this module, the lesson (`code.py`)
and the grader's own plumbing are all of the kit a notebook can import: nothing here implements
an exercise's answer.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import random


class CountingFile:
    """A read-only binary file that counts the bytes handed out by its reads.

    Exercise 4 gives one to tail_records: only the methods below exist, so every byte the
    answer reads is counted. `bytes_read` is the total so far.
    """

    def __init__(self, file):
        if not isinstance(file, (io.BufferedIOBase, io.RawIOBase)) or not file.seekable():
            raise TypeError("CountingFile wraps a seekable binary file, e.g. open(path, 'rb')")
        self._file = file
        self.bytes_read = 0

    def _counted(self, data: bytes) -> bytes:
        self.bytes_read += len(data)
        return data

    def read(self, size: int = -1) -> bytes:
        """Read up to size bytes (all that is left when size is negative)."""
        return self._counted(self._file.read(size))

    def readline(self, size: int = -1) -> bytes:
        """Read one line, newline included."""
        return self._counted(self._file.readline(size))

    def __iter__(self):
        """Iterate over lines, as a file does; every line counts."""
        return iter(self.readline, b"")

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        """Move to a position, as file.seek does; returns the new position. Seeking reads nothing."""
        return self._file.seek(offset, whence)

    def tell(self) -> int:
        """The current position."""
        return self._file.tell()

    def seekable(self) -> bool:
        """Always True."""
        return True

    def readable(self) -> bool:
        """Always True."""
        return True

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self._file.close()

    def close(self) -> None:
        """Close the wrapped file."""
        self._file.close()


def pair(value):
    """value as a tuple when it is a list or a tuple, else value itself.

    In a grading run an answer's return value crosses to the checks as JSON, where a tuple (or a
    namedtuple) becomes a list; a check that expects a pair compares pair(got) with it.
    """
    return tuple(value) if isinstance(value, (list, tuple)) else value


# --------------------------------------------------------------------------- exercise 2's damage


CLEAN = "clean"
PARTIAL_TAIL = "partial tail ignored"
CORRUPT = "corrupt"


def insert_line(path, line_number: int, content: bytes = b"this is not json") -> None:
    """Insert a complete line before line `line_number` (1-based) of the file at path."""
    with open(path, "rb") as file:
        *lines, tail = file.read().split(b"\n")
    lines.insert(line_number - 1, content)
    with open(path, "wb") as file:
        file.write(b"".join(line + b"\n" for line in lines) + tail)


def append_zeros(path, count: int = 16) -> None:
    """Append NUL bytes with no newline, as a file system may after a crash mid-append."""
    with open(path, "ab") as file:
        file.write(b"\0" * count)


# --------------------------------------------------------------------------- what a grading run compares

SEED_VARIABLE = "S09_SEED"  # the grader sets it in the kernel's environment, one seed per grading run
_LONG_VALUE = 1000  # characters of canonical JSON past which an observed value is shown by its hash


def run_seed() -> int:
    """The grading run's seed (0 outside a grading run): hidden checks draw their inputs from it."""
    try:
        return int(os.environ.get(SEED_VARIABLE, "0"))
    except ValueError:
        return 0


def check_random(check_name: str) -> random.Random:
    """A random generator for one check: the same inputs for the same seed, other inputs for another."""
    return random.Random(f"{run_seed()}/{check_name}")


def plain_value(value, depth: int = 0):
    """value as plain JSON data, read through the base types' own methods.

    A subclass of str, int, list or dict is read as the base type's data (its overridden methods
    are not called), so an object that claims to equal anything is only what it holds. Exceptions
    become their type name; any other object becomes {"object": its type's name}.
    """
    if depth > 40:
        return {"object": "nested too deeply"}
    if value is None or type(value) in (bool, int, float, str):
        return value
    if isinstance(value, bool):
        return bool.__bool__(value)
    if isinstance(value, int):
        return int.__index__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, str):
        return str.__getitem__(value, slice(None))
    if isinstance(value, (bytes, bytearray)):
        return {"bytes": bytes.hex(bytes(value))}
    if isinstance(value, (list, tuple)):
        items = list.__iter__(value) if isinstance(value, list) else tuple.__iter__(value)
        return [plain_value(item, depth + 1) for item in items]
    if isinstance(value, dict):
        return {_key_text(key): plain_value(item, depth + 1) for key, item in dict.items(value)}
    if isinstance(value, (set, frozenset)):
        return {"set": sorted(json.dumps(plain_value(item, depth + 1), sort_keys=True)
                              for item in frozenset.__iter__(frozenset(value)))}
    if isinstance(value, BaseException):
        return {"exception": type(value).__name__}
    return {"object": type(value).__name__}


def _key_text(key) -> str:
    plain = plain_value(key)
    return plain if isinstance(plain, str) else json.dumps(plain, sort_keys=True)


def observed_text(*thunks) -> str:
    """One line of canonical JSON: what each thunk returns (or the type of what it raises)."""
    values = []
    for thunk in thunks:
        try:
            text = json.dumps(plain_value(thunk()), sort_keys=True, ensure_ascii=True)
        except Exception as error:  # noqa: BLE001 - what an answer raises is an observation too
            text = json.dumps({"raised": type(error).__name__})
        if len(text) > _LONG_VALUE:
            text = json.dumps({"sha256": hashlib.sha256(text.encode()).hexdigest(), "characters": len(text)})
        values.append(text)
    return "[" + ", ".join(values) + "]"


def observe(*thunks) -> None:
    """Print what the grader compares for one assertion of a check (a grading run calls it, see instrument.py)."""
    print(observed_text(*thunks))
