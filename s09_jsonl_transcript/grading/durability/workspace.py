"""Where a capstone grading keeps its files: memory-backed folders, unmounted at the end.

  shared   what the driver sees (bound into the student's sandbox at SANDBOX_WORK): the session's
           folder, the crash states to judge, the kills' folders. A tmpfs of its own, so that
           thousands of states are written and read without a disk, and fsync costs nothing.
  logs     what only the grader sees: the recorder's logs, the driver's standard error. A tmpfs
           of its own too: an answer that fills the shared folder cannot starve the recorder.

As root, each is a size-limited tmpfs mounted for this grading (grading/sandbox.py's mount_quota);
elsewhere (and for the notebook's local check), folders under /dev/shm when it is writable, else under
the system's temporary folder.
Everything the sandbox must write is made writable by anyone (the sandbox runs as a user of its
own), and everything goes when the workspace closes, however deep: the grader never walks a tree
the answer may have built while the grading runs (it removes only the files it wrote, and folders
left empty).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from ..exchange import remove_quietly

SANDBOX_WORK = "/tmp/work"  # the shared folder, as the driver sees it in the sandbox
SHARED_BYTES = 384 << 20
LOG_BYTES = 256 << 20


def sandbox_module():
    """grading/sandbox.py, loaded only when a sandbox or a mount is wanted: it needs psutil, which the
    machine a student runs the local check on may not have."""
    from .. import sandbox

    return sandbox


def _scratch_parent() -> str | None:
    shared_memory = Path("/dev/shm")
    return str(shared_memory) if shared_memory.is_dir() and os.access(shared_memory, os.W_OK) else None


def make_dir(path: Path) -> Path:
    """A folder (and its missing parents) anyone may write in: the sandbox's user writes there."""
    for folder in reversed([path, *path.parents]):
        if not folder.exists():
            folder.mkdir()
            folder.chmod(0o777)
    return path


def new_dir(path) -> None:
    """A new folder anyone may write in (its parent exists)."""
    os.mkdir(path)
    os.chmod(path, 0o777)


def write_file(path, content: bytes | None) -> None:
    """Put content at path (where no file is yet) as a file anyone may write; None: no file there."""
    if content is None:
        return
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        os.fchmod(fd, 0o666)
        view = memoryview(content)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def read_file(path) -> bytes | None:
    """The bytes at path, or None when there is no regular file there (nothing, a link, a folder ...)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


class Workspace:
    """A grading's shared and log folders (see the module doc); use it as a context manager."""

    def __init__(self, sandboxed: bool, mount: bool = True):
        self.sandboxed, self.mount = sandboxed, mount
        self.root = Path(tempfile.mkdtemp(prefix="s09-capstone-", dir=_scratch_parent()))
        self.mounted = []
        self.shared = self._folder("shared", SHARED_BYTES)
        self.logs = self._folder("logs", LOG_BYTES)
        self.empty = make_dir(self.root / "empty")  # what the sandbox sees where the kit was

    def _folder(self, name: str, size: int) -> Path:
        folder = make_dir(self.root / name)
        if self.mount and os.geteuid() == 0 and sandbox_module().quota_problem() is None:
            sandbox_module().mount_quota(folder, size)
            self.mounted.append(folder)
        return folder

    def inside(self, host: Path) -> str:
        """The path the driver uses for a host path under the shared folder."""
        if not self.sandboxed:
            return str(host)
        return str(Path(SANDBOX_WORK) / Path(host).relative_to(self.shared))

    def fresh(self, name: str) -> Path:
        """A new, empty folder under the shared folder; each name is used once per grading."""
        folder = self.shared / name
        if folder.exists():
            raise FileExistsError(f"{folder} was used before: every run of a grading gets a folder of its own")
        return make_dir(folder)

    def close(self) -> None:
        """Unmount and remove everything."""
        for folder in self.mounted:
            sandbox_module().unmount(folder)
        self.mounted = []
        remove_quietly(self.root)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()


def discard(files: list, folders: list) -> None:
    """Remove files the grader wrote and the folders that held them, when nothing else is left there."""
    for path in files:
        with contextlib.suppress(OSError):
            os.unlink(path)
    for folder in folders:
        with contextlib.suppress(OSError):
            os.rmdir(folder)
