"""Injecting I/O faults into the transcripts' own calls, one numbered call at a time (issue 43).

`Injector` replaces os.open, os.write, os.fsync and os.ftruncate while it is active and counts the
calls that touch files under one folder (other calls pass through uncounted): the writer's opens,
writes, fsyncs and truncates, the folder fsyncs of make_folders and of a new file, and the readers'
opens. A recording run learns the calls an operation makes; then the operation is run again with
call number k failing (an errno, or for a write a short write of half the bytes), and again with
call k and a later call m both failing: a fault during the recovery from the first. SQLite tests
every I/O error point this way, with a file layer that fails the Nth call.

An injector that counted nothing would make every fault test pass vacuously, so `record` refuses an
operation that made no call at all.
"""

from __future__ import annotations

import errno
import os
from contextlib import contextmanager
from dataclasses import dataclass, field

import pytest

from s09_jsonl_transcript.code import JSONLTranscript
from s09_jsonl_transcript.lab import DurableTranscript

KINDS = ("open", "write", "fsync", "truncate")
CLASSES = {"lesson": JSONLTranscript, "lab": DurableTranscript}  # the two transcript classes every fault test runs
BOTH = pytest.mark.parametrize("cls", list(CLASSES.values()), ids=list(CLASSES))


def message(content, role="user") -> dict:
    """A message event."""
    return {"type": "message", "role": role, "content": content}


def contents(cls, path) -> list:
    """The content of every event a fresh reader of cls finds at path."""
    return [event["content"] for event in cls(path).read_events()]


@dataclass(frozen=True)
class Fault:
    """What happens to one counted call: an OSError with this errno, or ("short") a write of half."""

    number: int  # the call's index among the counted calls, from 0
    how: str = "error"  # "error" or "short"
    code: int = errno.EIO

    def __str__(self):
        return f"call {self.number}: {'short write' if self.how == 'short' else errno.errorcode[self.code]}"


@dataclass
class Call:
    kind: str  # one of KINDS
    target: str  # the path opened, or the path the descriptor names
    failed: bool = False
    size: int = 0  # a write: how many bytes it was given


@dataclass
class Injector:
    """Counts (and fails, when told) the os calls that touch files under folder."""

    folder: str
    faults: dict = field(default_factory=dict)  # call number -> Fault
    calls: list = field(default_factory=list)

    def __post_init__(self):
        self.folder = str(self.folder)
        self._real = {}

    def _mine(self, target: str) -> bool:
        return target.startswith(self.folder)

    def _fd_target(self, fd: int) -> str:
        try:
            return os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return ""

    def _count(self, kind: str, target: str, size: int = 0) -> Fault | None:
        """Note a call; return the fault to apply to it, if any."""
        if not self._mine(target):
            return None
        fault = self.faults.get(len(self.calls))
        self.calls.append(Call(kind, target, fault is not None, size))
        return fault

    def _raise(self, fault: Fault, target: str):
        raise OSError(fault.code, os.strerror(fault.code), target)

    def open(self, path, flags, mode=0o777, *, dir_fd=None):
        target = os.fsdecode(path) if not isinstance(path, int) else ""
        fault = self._count("open", target)
        if fault is not None:
            self._raise(fault, target)
        return self._real["open"](path, flags, mode, dir_fd=dir_fd)

    def write(self, fd, data):
        target = self._fd_target(fd)
        fault = self._count("write", target, len(data))
        if fault is not None and fault.how == "short" and len(data) > 1:
            return self._real["write"](fd, bytes(data)[: len(data) // 2])
        if fault is not None:
            self._raise(fault, target)
        return self._real["write"](fd, data)

    def fsync(self, fd):
        target = self._fd_target(fd)
        fault = self._count("fsync", target)
        if fault is not None:
            self._raise(fault, target)
        return self._real["fsync"](fd)

    def ftruncate(self, fd, length):
        target = self._fd_target(fd)
        fault = self._count("truncate", target)
        if fault is not None:
            self._raise(fault, target)
        return self._real["ftruncate"](fd, length)

    def __enter__(self):
        for name in ("open", "write", "fsync", "ftruncate"):
            self._real[name] = getattr(os, name)
            setattr(os, name, getattr(self, name))
        return self

    def __exit__(self, *exc_info):
        for name, real in self._real.items():
            setattr(os, name, real)
        return False

    @contextmanager
    def paused(self):
        """Inside, the os calls are the real ones: a check's own reads are neither counted nor failed."""
        patched = {name: getattr(os, name) for name in self._real}
        for name, real in self._real.items():
            setattr(os, name, real)
        try:
            yield
        finally:
            for name, fake in patched.items():
                setattr(os, name, fake)


def record(folder, operation) -> list[Call]:
    """Run operation() once with no fault and return the counted calls it made (never none)."""
    with Injector(folder) as injector:
        operation()
    if not injector.calls:
        raise AssertionError("the injector counted no call: it would test nothing")
    return injector.calls


def faults_for(calls: list[Call]) -> list[Fault]:
    """Every single fault worth injecting into a run that makes these calls: EIO at each call, a
    short write at each write, ENOSPC at each write, EMFILE at each open."""
    faults = []
    for number, call in enumerate(calls):
        faults.append(Fault(number))
        if call.kind == "write":
            faults += [Fault(number, "short"), Fault(number, code=errno.ENOSPC)]
        if call.kind == "open":
            faults.append(Fault(number, code=errno.EMFILE))
    return faults
