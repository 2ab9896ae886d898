"""Files in a folder another process may change at any moment: copied without following a link anywhere in a
path, and removed whatever a student made of them.

The trusted kernel copies the files a check hands an answer into the channel's exchange folder, and
copies back what the answer left there. The student's kernel can change that folder while this
happens (a thread of its own keeps running), so every step here goes from an open folder to the
next by name, with O_NOFOLLOW: a link, wherever it sits in a path, is never followed; it is left
out when copying back and moved aside when copying out. A tree is never walked deeper than
FOLDER_DEPTH levels, nor wider than ENTRY_LIMIT entries in all, so a student's tree costs bounded
time and no recursion. What is moved aside stays in the exchange folder, on the channel's
size-limited file system, until the grading ends.

Nothing here waits on what a student made: every name in the exchange folder is opened with
O_NONBLOCK (a named pipe would otherwise wait for its other end) and O_NOFOLLOW, and the descriptor it
gives is checked with fstat to be a regular file before a byte moves. A name the student's side keeps
turning into something else while a copy runs (a child re-creating a pipe in a loop) makes the copy
give up on that name after a few attempts, with the reason (Interfered): it costs that call, never
the grading's time.

`remove_tree` is the grader's clean-up of a folder the student may have filled: iterative, one
open folder at a time, for trees of any depth.
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
from pathlib import Path

from .words import both

FOLDER_DEPTH = 16  # levels below a folder a check handed over that are copied back
ENTRY_LIMIT = 4096  # files and folders copied back after one call
_NOT_BLOCKING = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | _NOT_BLOCKING
_READ = os.O_RDONLY | _NOT_BLOCKING
_READ_WRITE = os.O_RDWR | os.O_CREAT | _NOT_BLOCKING
ATTEMPTS = 3  # times a name is set aside and opened again before a copy gives up on it


class Interfered(RuntimeError):
    """The student's side kept putting something that is not a regular file where a check's file goes."""


def _kind(parent: int, name: str):
    try:
        return stat.S_IFMT(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode)
    except FileNotFoundError:
        return None


def open_root(path) -> int:
    """A descriptor of the folder at path, itself not a link: what every copy starts from."""
    return os.open(path, _FOLDER)


def set_aside(parent: int, name: str) -> None:
    """Move the entry out of the way within its folder (renamed, never followed, never walked)."""
    try:
        os.rename(name, f".set-aside-{secrets.token_hex(8)}", src_dir_fd=parent, dst_dir_fd=parent)
    except FileNotFoundError:
        pass


def open_folder(parent: int, name: str, *, create: bool = False) -> int:
    """A descriptor of the folder name in parent, never through a link; with create, made if it is not one.

    With create, whatever else holds the name is set aside, ATTEMPTS times at most: then Interfered.
    """
    if not create:
        return os.open(name, _FOLDER, dir_fd=parent)
    for _ in range(ATTEMPTS):
        if _kind(parent, name) not in (stat.S_IFDIR, None):
            set_aside(parent, name)
        try:
            os.mkdir(name, 0o777, dir_fd=parent)
        except FileExistsError:
            pass
        try:
            return os.open(name, _FOLDER, dir_fd=parent)
        except OSError:  # swapped for a link, a file or nothing since the look: look again
            continue
    raise Interfered(f"the student's side kept putting something that is not a folder where the check's folder "
                     f"{name!r} goes in the exchange folder")


def open_path(root: int, parts, *, create: bool = False) -> int:
    """A descriptor of the folder root/parts[0]/parts[1]/..., no part of it a link."""
    fd = os.dup(root)
    try:
        for part in parts:
            inner = open_folder(fd, part, create=create)
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


def copy_out(source: Path, parent: int, name: str) -> None:
    """Make the entry name in folder parent hold what source (the check's own file or folder) holds."""
    try:
        info = os.lstat(source)
    except FileNotFoundError:
        if _kind(parent, name) is not None:
            set_aside(parent, name)
        return
    if stat.S_ISDIR(info.st_mode):
        fd = open_folder(parent, name, create=True)
        try:
            names = {entry.name for entry in os.scandir(source)}
            with os.scandir(fd) as entries:
                extra = [entry.name for entry in entries if entry.name not in names
                         and not entry.name.startswith(".set-aside-")]
            for other in extra:
                set_aside(fd, other)
            for child in sorted(names):
                copy_out(source / child, fd, child)
        finally:
            os.close(fd)
        return
    if not stat.S_ISREG(info.st_mode):
        set_aside(parent, name)
        return
    data = Path(source).read_bytes()
    for _ in range(ATTEMPTS):
        fd = _open_regular(parent, name)
        if fd is not None:
            break
    else:
        raise Interfered(f"the student's side kept putting something that is not a file (a pipe, a socket or a "
                         f"link) where the check's file {name!r} goes in the exchange folder")
    with open(fd, "r+b") as file:  # in place: what the answer opened sees the change
        if file.read(len(data) + 1) == data:
            return
        file.seek(0)
        file.write(data)
        file.truncate()


def _open_regular(parent: int, name: str) -> int | None:
    """A descriptor of the regular file name in parent, open for reading and writing (made if missing), or
    None after setting aside whatever else was there: a pipe, a socket, a link, a folder.

    It never blocks (O_NONBLOCK: a pipe's open would wait for its other end) and never follows a
    link (O_NOFOLLOW); what it opened is checked on the descriptor, so a name swapped between a look
    and the open is caught.
    """
    try:
        fd = os.open(name, _READ_WRITE, 0o666, dir_fd=parent)
    except FileNotFoundError:
        raise  # the folder itself went: the caller's error
    except OSError:  # ENXIO (a pipe with no reader, a socket), ELOOP (a link), EISDIR, ETXTBSY ...
        set_aside(parent, name)
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        set_aside(parent, name)
        return None
    return fd


# Why a copy back left something out, in the grader's words (a visible check that failed says them).
NOT_FILES = both("links, pipes, sockets or devices", "链接、管道、套接字或设备")
CHANGED_FOLDER = both("a folder that changed while it was copied", "复制时被改动的文件夹")
CHANGED_FILE = both("a file that changed while it was copied", "复制时被改动的文件")


class Budget:
    """What one copy back may still take: bytes and entries."""

    def __init__(self, size: int, entries: int = ENTRY_LIMIT):
        self.size, self.entries = size, entries
        self.left_out = []  # why some of it was not copied

    def note(self, why: str) -> None:
        if why not in self.left_out:
            self.left_out.append(why)


def copy_back(parent: int, name: str, target: Path, budget: Budget, depth: int = 0) -> None:
    """Make target (the check's own path) hold what the entry name in folder parent holds.

    Regular files and folders only; a link, device or pipe is left out, and so is whatever lies
    deeper than FOLDER_DEPTH or past the budget.
    """
    kind = _kind(parent, name)
    if kind is None:
        remove_tree(target)
        return
    budget.entries -= 1
    if budget.entries < 0:
        budget.note(both(f"more than {ENTRY_LIMIT:,} files and folders", f"超过 {ENTRY_LIMIT:,} 个文件和文件夹"))
        return
    if kind == stat.S_IFDIR:
        if depth >= FOLDER_DEPTH:
            budget.note(both(f"folders more than {FOLDER_DEPTH} levels deep", f"超过 {FOLDER_DEPTH} 层深的文件夹"))
            return
        try:
            fd = open_folder(parent, name)
        except OSError:
            budget.note(CHANGED_FOLDER)
            return
        try:
            if target.is_symlink() or (target.exists() and not target.is_dir()):
                remove_tree(target)
            target.mkdir(exist_ok=True)
            with os.scandir(fd) as entries:
                names = sorted(entry.name for entry in entries if not entry.name.startswith(".set-aside-"))
            for entry in os.scandir(target):
                if entry.name not in names:
                    remove_tree(target / entry.name)
            for child in names:
                copy_back(fd, child, target / child, budget, depth + 1)
        finally:
            os.close(fd)
        return
    if kind != stat.S_IFREG:
        budget.note(NOT_FILES)
        remove_tree(target)
        return
    try:
        fd = os.open(name, _READ, dir_fd=parent)
    except OSError:
        budget.note(CHANGED_FILE)
        return
    with open(fd, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):
            budget.note(NOT_FILES)
            return
        if info.st_size > budget.size:
            budget.note(both(f"files past {budget.size:,} bytes in all", f"合计超过 {budget.size:,} 字节的文件"))
            return
        data = file.read(budget.size + 1)
    budget.size -= len(data)
    if target.is_symlink() or target.is_dir():
        remove_tree(target)
    try:
        if target.read_bytes() == data:
            return
    except OSError:
        pass
    with open(target, "r+b" if target.exists() else "wb") as file:  # in place: open handles see the change
        file.write(data)
        file.truncate()


def remove_tree(path) -> None:
    """Remove path (a file, a link or a folder of any depth); never recursive, never through a link.

    Only two folders are open at a time: each folder is left through "..", which is safe once the
    processes that made the tree are gone (the grader's clean-up) or within a folder they can only
    rearrange (the channel's).
    """
    path = Path(path)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(info.st_mode):
        path.unlink()
        return
    top = os.open(path.parent, _FOLDER)
    try:
        _remove_below(top, path.name)
    finally:
        os.close(top)


def _remove_below(top: int, name: str) -> None:
    names = [name]  # the path from top to the folder being emptied
    fd = os.open(name, _FOLDER, dir_fd=top)
    try:
        while names:
            child = None
            with os.scandir(fd) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        child = entry.name
                        break
                    try:
                        os.unlink(entry.name, dir_fd=fd)
                    except FileNotFoundError:
                        pass
            if child is not None:
                inner = os.open(child, _FOLDER, dir_fd=fd)
                os.close(fd)
                fd, names = inner, names + [child]
                continue
            emptied = names.pop()
            if names:
                outer = os.open("..", _FOLDER & ~getattr(os, "O_NOFOLLOW", 0), dir_fd=fd)
                os.close(fd)
                fd = outer
                os.rmdir(emptied, dir_fd=fd)
            else:
                os.rmdir(emptied, dir_fd=top)
    finally:
        os.close(fd)


def remove_quietly(path) -> str | None:
    """remove_tree, but a failure is returned as words instead of raised (None when it is gone)."""
    try:
        remove_tree(path)
    except OSError as error:
        try:
            shutil.rmtree(path, ignore_errors=True)
        except RecursionError:
            pass
        return f"could not remove {path}: {error.strerror or error}"
    return None
