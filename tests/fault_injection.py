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
import subprocess
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

KINDS = ("open", "write", "fsync", "truncate")


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


# --------------------------------------------------------------------------- a real full disk


@contextmanager
def small_tmpfs(folder: Path, size: str = "256k"):
    """A real tmpfs of this size mounted at folder (root only), unmounted at the end."""
    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({mounted.stderr.strip()}): the I/O seam tests stand in")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True)


def outcomes_at_a_fifo_or_a_device(program: str, folder: Path, kind: str) -> dict:
    """Put a FIFO (kind "fifo") or a link to /dev/zero ("device") at folder/s.jsonl, run program on that path
    in a child with a timeout (a regression that blocks fails instead of hanging the suite), and return the
    JSON object it prints: what each call it made answered."""
    import json
    import sys

    path = folder / "s.jsonl"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        os.symlink("/dev/zero", path)  # reads forever, never ends in a newline
    child = subprocess.run([sys.executable, "-c", program, str(path)], capture_output=True, text=True,
                           cwd=Path(__file__).resolve().parents[1], timeout=120)
    assert child.returncode == 0, child.stderr
    return json.loads(child.stdout)


def full_disk_round_trip(cls, folder: Path):
    """On a real full disk (a tmpfs at folder): append one event, fill the disk, try a longer one (which must
    fail and be undone), free the space, retry it, and check each event is there once. Returns the error the
    failed append raised, for the caller to judge."""
    from s09_jsonl_transcript.code import ticking_clock

    with small_tmpfs(folder) as disk:
        path = disk / "s.jsonl"
        writer = cls(path, clock=ticking_clock())
        writer.append(message("one"))
        before = path.read_bytes()
        filler = fill(disk, leave=0)
        big = message("x" * 20_000)  # longer than any free block left
        try:
            writer.append(big)
        except OSError as error:
            refused = error
        else:
            raise AssertionError("an append to a full disk returned")
        assert path.read_bytes() == before and contents(cls, path) == ["one"]  # undone
        filler.unlink()
        assert writer.append(big)["sequence"] == 2  # the caller's retry
        writer.close()
        assert contents(cls, path) == ["one", "x" * 20_000]
    return refused


def fill(folder: Path, leave: int) -> Path:
    """Fill the file system under folder until about `leave` bytes are free; return the filler file."""
    filler = folder / "filler"
    stats = os.statvfs(folder)
    free = stats.f_bavail * stats.f_frsize
    with open(filler, "wb") as file:
        file.write(b"x" * max(free - leave, 0))
    return filler


# --------------------------------------------------------------------------- new names and the folders synced


@dataclass
class NameTracer:
    """Records, under folder, every new folder entry (os.mkdir, os.link, os.rename, os.replace, an os.open that
    creates its file) and every fsync of a folder, in order, while active: each new name must be followed by an
    fsync of the folder that really holds it (its parent, symbolic links resolved)."""

    folder: str
    events: list = field(default_factory=list)  # ("name", folder that holds it, name) or ("sync", folder)

    def __post_init__(self):
        self.folder = os.path.realpath(self.folder)
        self._real = {}

    def _named(self, path) -> None:
        real = os.path.realpath(os.fsdecode(path))
        if real.startswith(self.folder):
            self.events.append(("name", os.path.dirname(real), real))

    def _wrap(self, name: str, *path_positions: int, only_new: bool = False):
        real = self._real[name] = getattr(os, name)

        def traced(*args, **kwargs):
            paths = [args[position] for position in path_positions if position < len(args)]
            existed = only_new and bool(paths) and os.path.exists(paths[0])  # a dangling link names no file yet
            result = real(*args, **kwargs)
            if not (only_new and existed) and (not only_new or args[1] & os.O_CREAT):
                for path in paths:
                    self._named(path)
            return result

        return traced

    def __enter__(self):
        wrapped = {"mkdir": self._wrap("mkdir", 0), "link": self._wrap("link", 1), "rename": self._wrap("rename", 1),
                   "replace": self._wrap("replace", 1), "open": self._wrap("open", 0, only_new=True)}
        real_fsync = self._real["fsync"] = os.fsync

        def fsync(fd):
            result = real_fsync(fd)
            target = os.readlink(f"/proc/self/fd/{fd}")
            if os.path.isdir(target):
                self.events.append(("sync", os.path.realpath(target)))
            return result

        for name, function in {**wrapped, "fsync": fsync}.items():
            setattr(os, name, function)
        return self

    def __exit__(self, *exc_info):
        for name, real in self._real.items():
            setattr(os, name, real)
        return False

    def unsynced(self, *, temporary=(".fork-", ".migrate-")) -> list[str]:
        """The new names (outside temporary staging folders, and still there) no later fsync of their folder covers."""
        missing = []
        for index, event in enumerate(self.events):
            if event[0] != "name" or any(part.startswith(temporary) for part in event[2].split(os.sep)):
                continue
            if not os.path.lexists(event[2]):
                continue
            if ("sync", event[1]) not in self.events[index + 1:]:
                missing.append(event[2])
        return missing
