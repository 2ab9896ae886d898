"""Run one grading under bubblewrap (bwrap), with resource limits from util-linux's prlimit.

What the sandbox holds, and nothing else:

- read-only: /usr (and the /bin, /lib ... links or folders next to it), a few files of /etc the
  dynamic linker and Python read, the Python installation and environment the grader runs in, and
  the kit's package folder. Not the instructor sources, not the submissions, not the reports, not
  the home folder, not the checkout around the package;
- writable: a private, size-limited tmpfs at /tmp (the grading folder, HOME) and at /dev/shm;
- its own PID, network (loopback only), IPC, UTS and cgroup namespaces: nothing started inside can
  outlive the sandbox, see the grader's processes, or reach the network;
- limits (prlimit): address space per process, tasks (threads and processes) of the sandbox's
  user, file size, CPU seconds, open files, no core dumps;
- a memory limit on everything each side of a grading holds (the student's kernel and what it
  starts; pytest, nbval and the checks' kernel), all its processes together, memfds, /tmp and
  /dev/shm included: a cgroup v1 memory group made for each side, and a cgroup v1 cpu group for the
  grading that weighs it the same as every other grading, where this process may make them (root,
  with the controllers mounted at /sys/fs/cgroup). Elsewhere only the limits above hold, and the
  sandbox's note says so: memory that is never mapped (a memfd, a tmpfs file) is then not counted
  per process, so the total is bounded only by /tmp's and /dev/shm's sizes and whatever memfds hold;
- the channel's folder, which both sandboxes of a grading share, a size-limited tmpfs of its own
  where this process may mount one (root).

When the grader runs as root, bwrap sets up the mounts as root and `setpriv` then drops to a
dedicated user id with no capabilities (the process limit is not enforced for root). Run as an
ordinary user, bwrap uses an unprivileged user namespace instead.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import functools
import itertools
import os
import secrets
import shlex
import shutil
import site
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from . import kit
from .words import both, labelled

AUTO, REQUIRED, OFF = "auto", "required", "off"
MODES = (AUTO, REQUIRED, OFF)
SANDBOX_ROOT = "/tmp/grading"  # the grading folder inside the sandbox
SANDBOX_HOME = "/tmp/home"
_UID_BASE = 3_700_000_000  # far above any real account; one id per grading running at once
_SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "passwd", "group", "nsswitch.conf",
              "hosts", "host.conf", "gai.conf")
_PROBE_TIMEOUT = 30


class SandboxUnavailable(RuntimeError):
    """`--sandbox required` was asked for, but bubblewrap cannot run here; the message says why."""


@dataclass(frozen=True)
class Limits:
    """What one grading may use. Memory is address space per process, tasks count threads too."""

    memory_bytes: int = 1 << 30
    total_memory_bytes: int | None = None  # all processes together; None: memory_bytes + 256 MiB
    tasks: int = 32
    file_bytes: int = 64 << 20
    tmp_bytes: int = 256 << 20
    shm_bytes: int = 64 << 20
    open_files: int = 1024
    output_bytes: int = 1 << 20  # what the notebook may print, in all (enforced by the guard and the probe)
    trusted_memory_bytes: int | None = None  # the trusted side's processes together; None: as total_memory
    channel_bytes: int = 256 << 20  # the channel's folder, which both sandboxes of a grading see
    cpu_shares: int = 1024  # each grading's weight against the others (cgroup v1 cpu.shares)

    @property
    def total_memory(self) -> int:
        """Bytes of memory all the grading's processes may hold together (the cgroup's limit)."""
        return self.total_memory_bytes if self.total_memory_bytes is not None else self.memory_bytes + (256 << 20)

    @property
    def trusted_memory(self) -> int:
        """Bytes of memory the trusted side (pytest, nbval, the checks' kernel) may hold together."""
        return self.trusted_memory_bytes if self.trusted_memory_bytes is not None else self.total_memory

    def describe(self) -> str:
        """The limits in words, in both languages."""
        memory, files, tmp, output = (self.memory_bytes >> 20, self.file_bytes >> 20, self.tmp_bytes >> 20,
                                      self.output_bytes >> 10)
        channel = self.channel_bytes >> 20
        return both(f"{memory} MiB of address space per process, {self.tasks} tasks (threads and processes), files "
                    f"up to {files} MiB, {tmp} MiB in /tmp, {channel} MiB in the channel's folder, {output} KiB of "
                    "printed output let through (the rest is cut)",
                    f"每个进程 {memory} MiB 地址空间，{self.tasks} 个任务（线程和进程），文件最大 {files} MiB，"
                    f"/tmp 共 {tmp} MiB，通道文件夹共 {channel} MiB，打印输出放行 {output} KiB（其余截掉）")


SANDBOXED = both("sandboxed with bubblewrap", "在 bubblewrap 沙箱中运行")
UNSANDBOXED = both("unsandboxed", "未使用沙箱")


@dataclass(frozen=True)
class Status:
    """Whether gradings run sandboxed, and a one-line note saying how (or why not)."""

    enabled: bool
    note: str


@functools.lru_cache(maxsize=None)
def _tools() -> tuple:
    return shutil.which("bwrap"), shutil.which("prlimit"), shutil.which("setpriv")


def status(mode: str = AUTO) -> Status:
    """The sandbox this process can use in mode; SandboxUnavailable when mode is required and there is none."""
    if mode not in MODES:
        raise ValueError(f"sandbox mode must be one of {', '.join(MODES)}")
    if mode == OFF:
        return Status(False, labelled(UNSANDBOXED, "; ".join((both("--sandbox off was given", "指定了 --sandbox off"),
                                                              freezer_note()))))
    problem = _probe()
    if problem is None:
        limits = Limits()
        return Status(True, labelled(SANDBOXED, "; ".join((limits.describe(), memory_note(limits),
                                                            quota_note(limits), freezer_note()))))
    english, chinese = problem
    if mode == REQUIRED:
        raise SandboxUnavailable(both(f"--sandbox required, but {english}", f"指定了 --sandbox required，但{chinese}"))
    return Status(False, labelled(UNSANDBOXED, "; ".join((both(
        f"{english}; the kernel runs as the grader's own user and can reach everything that user can",
        f"{chinese}；内核以评分程序自己的用户身份运行，这个用户能访问的一切它都能访问"), freezer_note()))))


@functools.lru_cache(maxsize=None)
def _probe() -> tuple | None:
    """None when a trivial command runs in the sandbox, else why it does not (in English, in Chinese)."""
    if os.name != "posix" or not sys.platform.startswith("linux"):
        return "bubblewrap needs Linux", "bubblewrap 只能在 Linux 上运行"
    bwrap, prlimit, setpriv = _tools()
    missing = [names for names, path in ((("bwrap (Debian package bubblewrap)", "bwrap（Debian 软件包 bubblewrap）"),
                                          bwrap), (("prlimit",) * 2, prlimit),
                                         (("setpriv",) * 2, setpriv if os.geteuid() == 0 else "-")) if path is None]
    if missing:
        return ("not found: " + ", ".join(english for english, _ in missing),
                "找不到 " + "、".join(chinese for _, chinese in missing))
    with _slot() as slot:
        command = build_command(["true"], scratch_files={}, slot=slot, limits=Limits())
        try:
            done = subprocess.run(command.argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=_PROBE_TIMEOUT,
                                  pass_fds=command.pass_fds, **command.popen_options)
        except (OSError, subprocess.SubprocessError) as error:
            return f"bwrap could not start ({error})", f"bwrap 无法启动（{error}）"
        finally:
            command.close()
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip()[:200]
        return (f"bwrap failed (exit status {done.returncode}: {said})",
                f"bwrap 运行失败（退出状态 {done.returncode}：{said}）")
    return None


# --------------------------------------------------------------------------- control groups

CGROUP_MEMORY = Path("/sys/fs/cgroup/memory")  # cgroup v1's memory controller
CGROUP_CPU = Path("/sys/fs/cgroup/cpu")  # ... and its CPU controller
_CGROUP_PARENT = "s09-grading"


class MemoryGroup:
    """A cgroup v1 group (of the memory or the CPU controller): every process started in it is charged to it."""

    def __init__(self, path: Path):
        self.path = path

    @property
    def procs(self) -> str:
        """The file a process writes its pid to, to join the group."""
        return str(self.path / "cgroup.procs")

    def ran_out(self) -> bool:
        """True when the kernel's OOM killer ended a process of the group (or, on old kernels, the limit was hit)."""
        try:
            control = dict(line.split() for line in (self.path / "memory.oom_control").read_text().splitlines())
            if "oom_kill" in control:
                return int(control["oom_kill"]) > 0
            return int((self.path / "memory.failcnt").read_text()) > 0
        except (OSError, ValueError):
            return False

    def remove(self, attempts: int = 50) -> bool:
        """Remove the group once its processes are gone (they are killed when the sandbox ends); True if gone."""
        for attempt in range(attempts):
            try:
                self.path.rmdir()
                return True
            except FileNotFoundError:
                return True
            except OSError:
                if attempt + 1 < attempts:
                    time.sleep(0.1)
        return False


class MemoryGroupFailed(RuntimeError):
    """This machine can make control groups, but not this grading's: it must not run without its limits."""


_group_numbers = itertools.count()
_GROUP_TAG = secrets.token_hex(4)  # a group left by an earlier process with this pid keeps its own name
_left_behind: list = []  # groups whose processes outlived their grading; removed by a later grading
_left_behind_lock = threading.Lock()


def _remove_left_behind() -> None:
    with _left_behind_lock:
        _left_behind[:] = [group for group in _left_behind if not group.remove(attempts=1)]


atexit.register(_remove_left_behind)  # and once more as the grader ends


def _make_group(name: str, limit: int) -> MemoryGroup:
    """A memory group whose processes may hold limit bytes together (swap included where it is counted)."""
    return _made(CGROUP_MEMORY, name, {"memory.limit_in_bytes": limit, "memory.memsw.limit_in_bytes": limit})


def _make_cpu_group(name: str, shares: int) -> MemoryGroup:
    """A CPU group of the given weight, under a parent that weighs as much as the cores every grading may use."""
    parent = CGROUP_CPU / _CGROUP_PARENT
    parent.mkdir(exist_ok=True)
    (parent / "cpu.shares").write_text(str(1024 * max(1, len(os.sched_getaffinity(0)))))
    return _made(CGROUP_CPU, name, {"cpu.shares": shares})


def _made(controller: Path, name: str, settings: dict) -> MemoryGroup:
    parent = controller / _CGROUP_PARENT
    parent.mkdir(exist_ok=True)
    path = parent / name
    path.mkdir()
    group = MemoryGroup(path)
    try:
        for setting, value in settings.items():
            if setting == "memory.memsw.limit_in_bytes" and not (path / setting).exists():
                continue  # no swap accounting here
            (path / setting).write_text(str(value))
    except OSError:
        group.remove()
        raise
    return group


@functools.lru_cache(maxsize=None)
def memory_cgroup_problem() -> tuple | None:
    """None when this process can make memory and CPU cgroups, else why not (in English, in Chinese)."""
    if not (CGROUP_MEMORY / "cgroup.procs").exists() or not (CGROUP_CPU / "cpu.shares").exists():
        return ("no cgroup v1 memory and cpu controllers at /sys/fs/cgroup",
                "/sys/fs/cgroup 下没有 cgroup v1 的内存和 CPU 控制器")
    try:
        _make_group(f"probe-{os.getpid()}-{_GROUP_TAG}", 1 << 30).remove()
        _make_cpu_group(f"probe-{os.getpid()}-{_GROUP_TAG}", 1024).remove()
    except OSError as error:
        return (f"cannot make a cgroup ({error.strerror or error})",
                f"无法创建 cgroup（{error.strerror or error}）")
    return None


def memory_note(limits: Limits) -> str:
    """How memory and CPU are shared out here, in both languages."""
    student, trusted = limits.total_memory >> 20, limits.trusted_memory >> 20
    problem = memory_cgroup_problem()
    if problem is None:
        return both(f"{student} MiB of memory for the student's kernel and what it starts, {trusted} MiB for the "
                    f"checks' side, each a cgroup v1 memory group; a CPU weight of {limits.cpu_shares} per grading "
                    "(a cgroup v1 cpu group)",
                    f"学生内核及其启动的进程共 {student} MiB 内存，检查一方共 {trusted} MiB，"
                    f"各是一个 cgroup v1 内存组；每次评分的 CPU 权重为 {limits.cpu_shares}（cgroup v1 cpu 组）")
    return both(f"no total memory limit and no CPU share: {problem[0]}; memory that is never mapped (memfd) is not "
                "counted", f"没有总内存上限，也没有 CPU 份额：{problem[1]}；从不映射的内存（memfd）不计入")


def _new_group(make, what: tuple, *arguments) -> MemoryGroup:
    name = f"{os.getpid()}-{_GROUP_TAG}-{next(_group_numbers)}"  # never reused: an old one may linger
    try:
        return make(name, *arguments)
    except OSError as error:
        why = error.strerror or repr(error)
        raise MemoryGroupFailed(both(f"could not make the grading's {what[0]} ({why}): not graded",
                                     f"无法创建本次评分的{what[1]}（{why}）：未评分")) from error


def _release(groups) -> None:
    for group in groups:
        if group is not None and not group.remove():
            with _left_behind_lock:
                _left_behind.append(group)


@contextlib.contextmanager
def memory_group(slot: int, limits: Limits):
    """A memory cgroup of its own (limits.total_memory), removed afterwards; None where this machine has none.

    Where the probe could make one, failing to make this one raises MemoryGroupFailed: a grading
    that ran without its limit would score memory it was not allowed to hold.
    """
    if memory_cgroup_problem() is not None:
        yield None
        return
    _remove_left_behind()
    group = _new_group(_make_group, ("memory group", "内存组"), limits.total_memory)
    try:
        yield group
    finally:
        _release([group])


@dataclass(frozen=True)
class Groups:
    """One grading's control groups: a memory group per side (the student's, the checks'), one CPU group, and a
    freezer group for the student's side."""

    student: MemoryGroup | None = None
    trusted: MemoryGroup | None = None
    cpu: MemoryGroup | None = None
    freezer: FreezerGroup | None = None

    def joined_by(self, side: str) -> tuple:
        """The groups a side's sandbox joins ("student" or "trusted"); only the student's joins the freezer group."""
        extra = self.freezer if side == "student" else None
        return tuple(group for group in (getattr(self, side), self.cpu, extra) if group is not None)


@contextlib.contextmanager
def grading_groups(limits: Limits):
    """The control groups of one grading (Groups), removed afterwards; empty where this machine has none.

    Each kernel's side gets its own memory limit (a large value copied on the checks' side is not
    charged to the student's, nor the other way round), and the grading one CPU weight, so that a
    submission that keeps every core busy slows no neighbour more than its share. The student's
    side gets a freezer group (freezer_group), wherever one can be made.
    """
    with freezer_group() as freezer:
        if memory_cgroup_problem() is not None:
            yield Groups(freezer=freezer)
            return
        _remove_left_behind()
        made = []
        try:
            made.append(_new_group(_make_group, ("memory group", "内存组"), limits.total_memory))
            made.append(_new_group(_make_group, ("memory group", "内存组"), limits.trusted_memory))
            made.append(_new_group(_make_cpu_group, ("CPU group", "CPU 组"), limits.cpu_shares))
            yield Groups(*made, freezer=freezer)
        finally:
            _release(made)


# --------------------------------------------------------------------------- the freezer

CGROUP_FREEZER = Path("/sys/fs/cgroup/freezer")  # cgroup v1's freezer
CGROUP_UNIFIED = (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified"))  # where cgroup v2 may be mounted
FREEZE_WAIT = 5.0  # seconds a freeze may take before the copy goes on regardless


class FreezerGroup(MemoryGroup):
    """A cgroup whose processes the grader freezes and thaws, from outside: cgroup v1's freezer (freezer.state)
    or cgroup v2's cgroup.freeze (unified). A frozen process runs no instruction, in no thread, and even a
    kill waits until it is thawed: remove() thaws first."""

    def __init__(self, path: Path, unified: bool = False):
        super().__init__(path)
        self.unified = unified

    def freeze(self, wait: float = FREEZE_WAIT) -> bool:
        """Freeze every process of the group; True once all are frozen, False if wait seconds were not enough."""
        self._write("1" if self.unified else "FROZEN")
        deadline = time.monotonic() + wait
        while not self.is_frozen():
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.001)
        return True

    def is_frozen(self) -> bool:
        """True while every process of the group is frozen."""
        try:
            if self.unified:
                return "frozen 1" in (self.path / "cgroup.events").read_text().splitlines()
            return (self.path / "freezer.state").read_text().strip() == "FROZEN"
        except OSError:
            return False

    def thaw(self) -> None:
        """Let the group's processes run again (nothing happens to a group that is not frozen)."""
        try:
            self._write("0" if self.unified else "THAWED")
        except OSError:
            pass

    def add(self, pid: int) -> None:
        """Put a process (and so everything it starts from then on) in the group."""
        Path(self.procs).write_text(str(pid))

    def remove(self, attempts: int = 50) -> bool:
        """Thaw, then remove the group once its processes are gone; True if gone."""
        self.thaw()
        return super().remove(attempts)

    def _write(self, value: str) -> None:
        (self.path / ("cgroup.freeze" if self.unified else "freezer.state")).write_text(value)


def _freezer_root() -> tuple | None:
    """(the hierarchy's folder, whether it is cgroup v2) of the freezer this machine mounts, or None."""
    if (CGROUP_FREEZER / "cgroup.procs").exists():
        return CGROUP_FREEZER, False
    for root in CGROUP_UNIFIED:
        if (root / "cgroup.controllers").exists():
            return root, True
    return None


def _make_freezer_group(name: str, root: tuple | None = None) -> FreezerGroup:
    folder, unified = root or _freezer_root()
    parent = folder / _CGROUP_PARENT
    parent.mkdir(exist_ok=True)
    path = parent / name
    path.mkdir()
    group = FreezerGroup(path, unified)
    if not (path / ("cgroup.freeze" if unified else "freezer.state")).exists():
        group.remove()
        raise OSError(errno.EOPNOTSUPP, "the group has no freezer")
    return group


@functools.lru_cache(maxsize=None)
def freezer_problem() -> tuple | None:
    """None when this process can make a freezer group, else why not (in English, in Chinese)."""
    if os.geteuid() != 0:
        return "only root can freeze a group of processes", "只有 root 才能冻结一组进程"
    if _freezer_root() is None:
        return ("no cgroup freezer (neither cgroup v1's at /sys/fs/cgroup/freezer nor cgroup v2's cgroup.freeze)",
                "没有 cgroup 冻结器（/sys/fs/cgroup/freezer 下没有 cgroup v1 的，也没有 cgroup v2 的 cgroup.freeze）")
    try:
        _make_freezer_group(f"probe-{os.getpid()}-{_GROUP_TAG}").remove()
    except OSError as error:
        return (f"cannot make a freezer group ({error.strerror or error})",
                f"无法创建冻结组（{error.strerror or error}）")
    return None


def freezer_note() -> str:
    """Whether the student's side is frozen while what an answer left is copied back, in both languages."""
    problem = freezer_problem()
    if problem is None:
        return both("the student's side is frozen (a cgroup freezer) from each answer's return until what it left "
                    "is copied back", "从每个答案返回到把它留下的东西复制回来为止，学生一方被冻结（cgroup 冻结器）")
    return both(f"no freezer: {problem[0]}; the answer's processes and threads run on while what it left is copied "
                "back, so work they finish after it returned may be copied too",
                f"没有冻结器：{problem[1]}；复制答案留下的东西时，它的进程和线程还在运行，所以它返回之后才完成的工作也可能"
                "被复制回来")


@contextlib.contextmanager
def freezer_group():
    """A freezer group of its own for the student's side of one grading (thawed and removed afterwards), or None
    where this machine has no freezer. MemoryGroupFailed when one could be made but not this one."""
    if freezer_problem() is not None:
        yield None
        return
    _remove_left_behind()
    group = _new_group(_make_freezer_group, ("freezer group", "冻结组"))
    try:
        yield group
    finally:
        _release([group])


# --------------------------------------------------------------------------- the channel's quota


@functools.lru_cache(maxsize=None)
def quota_problem() -> tuple | None:
    """None when this process can give a folder a size limit (a tmpfs mounted on it), else why not."""
    if os.geteuid() != 0 or shutil.which("mount") is None or shutil.which("umount") is None:
        return "only root can mount a size-limited tmpfs", "只有 root 才能挂载限定大小的 tmpfs"
    import tempfile

    folder = tempfile.mkdtemp(prefix="s09-quota-probe-")
    try:
        mount_quota(folder, 1 << 20)
        unmount(folder)
    except OSError as error:
        return f"cannot mount a tmpfs ({error})", f"无法挂载 tmpfs（{error}）"
    finally:
        os.rmdir(folder)
    return None


def mount_quota(folder, size: int) -> None:
    """Mount a tmpfs of size bytes on folder (root only): whatever is written there counts against it."""
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},nr_inodes=65536,mode=0777,nosuid,nodev",
                           "s09-channel", str(folder)], capture_output=True, text=True)
    if done.returncode != 0:
        raise OSError(done.stderr.strip()[:200] or f"mount exited with status {done.returncode}")


def unmount(folder) -> None:
    """Unmount what mount_quota mounted; everything on it goes at once, however deep."""
    done = subprocess.run(["umount", str(folder)], capture_output=True, text=True)
    if done.returncode != 0:  # still busy: detach it now, the kernel frees it when the last user goes
        subprocess.run(["umount", "-l", str(folder)], capture_output=True, text=True)


def quota_note(limits: Limits) -> str:
    """How the channel's folder is limited here, in both languages."""
    problem = quota_problem()
    if problem is None:
        return both(f"the channel's folder is a tmpfs of {limits.channel_bytes >> 20} MiB",
                    f"通道文件夹是一个 {limits.channel_bytes >> 20} MiB 的 tmpfs")
    return both(f"no size limit on the channel's folder: {problem[0]}", f"通道文件夹没有大小上限：{problem[1]}")


# --------------------------------------------------------------------------- user ids


_slots_lock = threading.Lock()
_slots_taken: set = set()


class _slot:
    """A small number no other grading of this process holds at the same time (for its user id)."""

    def __enter__(self) -> int:
        with _slots_lock:
            number = 0
            while number in _slots_taken:
                number += 1
            _slots_taken.add(number)
        self.number = number
        return number

    def __exit__(self, *exc_info):
        with _slots_lock:
            _slots_taken.discard(self.number)


def acquire_slot():
    """Context manager: a slot number for one grading (see sandbox_uid)."""
    return _slot()


def sandbox_uid(slot: int) -> int:
    """The user id a grading runs as when the grader is root: unique per grader process and slot."""
    return _UID_BASE + (os.getpid() % 1_000_000) * 64 + slot % 64


def is_sandbox_uid(uid: int) -> bool:
    """True for a user id that sandbox_uid hands out."""
    return _UID_BASE <= uid < _UID_BASE + 1_000_000 * 64


# --------------------------------------------------------------------------- the command


@dataclass
class Command:
    """An argv for Popen, the descriptors it must inherit, and extra Popen options."""

    argv: list
    pass_fds: tuple
    popen_options: dict
    _files: list

    def close(self) -> None:
        """Close the descriptors opened for bwrap's --file options (after Popen has started)."""
        for file in self._files:
            file.close()
        self._files = []


def build_command(inner: list, *, scratch_files: dict, slot: int, limits: Limits, environment: dict | None = None,
                  keep_fds: tuple = (), cwd: str = SANDBOX_ROOT, groups: tuple = (),
                  package_view: str | None = None, shared_folders: dict | None = None,
                  read_only_files: dict | None = None) -> Command:
    """The command that runs inner in a fresh sandbox.

    scratch_files maps a path inside the sandbox (under SANDBOX_ROOT) to a host file whose contents
    are copied there; read_only_files likewise, but the copy is mounted read-only; environment is
    the whole environment inside (nothing else passes through).
    The command joins the control groups in groups (see Groups.joined_by) before anything else
    starts, so every process it starts is charged to them. With package_view (a host folder, see package_view), that
    folder is what the sandbox sees at the kit's package path instead of the whole package.
    """
    bwrap, prlimit, setpriv = _tools()
    as_root = os.geteuid() == 0
    files, fds = [], list(keep_fds)
    arguments = [bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-net", "--unshare-ipc",
                 "--unshare-uts", "--unshare-cgroup-try", "--hostname", "grading"]
    if not as_root:
        arguments += ["--unshare-user", "--disable-userns"]
    made = set()

    def folder(path: str, perms: str) -> None:  # with every missing ancestor, as writable as itself
        for each in [*reversed(Path(path).parents[:-1]), Path(path)]:  # every ancestor but "/"
            if str(each) not in made:
                made.add(str(each))
                arguments.extend(["--perms", perms, "--dir", str(each)])

    for link in _SYSTEM_LINKS:
        if os.path.islink(link):
            arguments.extend(["--symlink", os.readlink(link), link])
        elif os.path.isdir(link):
            arguments.extend(["--ro-bind", link, link])
    def bind_read_only(path: str) -> None:
        for parent in reversed(Path(path).parents[:-1]):
            if str(parent) not in made and not any(str(parent).startswith(bound + "/") or str(parent) == bound
                                                   for bound in ("/usr",)):
                made.add(str(parent))
                arguments.extend(["--perms", "0755", "--dir", str(parent)])
        arguments.extend(["--ro-bind", path, path])

    # A kit cloned under /tmp is bound after the private /tmp is mounted, or the tmpfs would hide it.
    under_tmp = [path for path in read_only_paths() if path.startswith("/tmp/")]
    for path in read_only_paths():
        if path not in under_tmp:
            bind_read_only(path)
    for name in _ETC_FILES:
        arguments.extend(["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"])
    arguments += ["--proc", "/proc", "--dev", "/dev",
                  "--perms", "1777", "--size", str(limits.shm_bytes), "--tmpfs", "/dev/shm",
                  "--perms", "1777", "--size", str(limits.tmp_bytes), "--tmpfs", "/tmp"]
    made.add("/tmp")
    for path in under_tmp:
        bind_read_only(path)
    if package_view:  # over the package's folder, wherever it was bound from
        arguments.extend(["--ro-bind", package_view, package_folder()])
    folder(SANDBOX_HOME, "0777")
    folder(SANDBOX_ROOT, "0777")
    for inside, host in sorted((shared_folders or {}).items()):
        folder(str(Path(inside).parent), "0777")
        arguments.extend(["--bind", host, inside])
    for inside, host in sorted(scratch_files.items()):
        folder(str(Path(inside).parent), "0777")
        file = open(host, "rb")  # noqa: SIM115 - closed by Command.close once bwrap has it
        files.append(file)
        fds.append(file.fileno())
        arguments.extend(["--perms", "0666", "--file", str(file.fileno()), inside])
    for inside, host in sorted((read_only_files or {}).items()):
        folder(str(Path(inside).parent), "0755")
        file = open(host, "rb")  # noqa: SIM115 - closed by Command.close once bwrap has it
        files.append(file)
        fds.append(file.fileno())
        arguments.extend(["--perms", "0444", "--ro-bind-data", str(file.fileno()), inside])
    arguments.append("--clearenv")
    for name, value in sorted((environment or {}).items()):
        arguments.extend(["--setenv", name, value])
    arguments += ["--chdir", cwd, "--"]
    if as_root:  # bwrap ran as root to mount; the grading itself runs as a user of its own, capabilities gone
        uid = sandbox_uid(slot)
        arguments += [setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all",
                      "--bounding-set=-all", "--no-new-privs", "--"]
        tasks = limits.tasks
    else:
        tasks = _tasks_of_user(os.getuid()) + limits.tasks
    cpu_seconds = 3600
    argv = [prlimit, f"--as={limits.memory_bytes}", f"--nproc={tasks}", f"--fsize={limits.file_bytes}",
            "--core=0", f"--cpu={cpu_seconds}", f"--nofile={limits.open_files}", "--",
            *arguments, *inner]
    if groups:  # join the groups first: everything started afterwards is charged to them
        joins = " && ".join(f"echo $$ > {shlex.quote(group.procs)}" for group in groups)
        argv = ["/bin/sh", "-c", f'{joins} && exec "$@"', "sh", *argv]
    return Command(argv, tuple(fds), {"start_new_session": True}, files)


def package_folder() -> str:
    """The kit's package folder, resolved."""
    return str(kit.package_folder())


# What a grading sees of the package: the kit's files the grader's door names (the lesson), the
# checks' helpers and the grader's plumbing that runs inside the sandbox. Not the lab, the damage
# tools or any other module that holds an exercise's answer (exercise 4's tail reader, exercise 5's
# hash chain).
_GRADER = __package__.rpartition(".")[2]  # the grader's folder in the package: grading/
PACKAGE_VIEW_FILES = (*kit.LESSON_FILES, *(f"{_GRADER}/{name}" for name in (
    "__init__.py", "kit.py", "checks.py", "guard.py", "probe.py", "words.py", "channel.py", "student_side.py",
    "wire.py", "exchange.py")))
_PACKAGE_INIT = '"""The s09 kit as a grading sandbox sees it: the lesson (code.py) and the checks\' helpers."""\n'


def write_package_view(folder) -> str:
    """Write, under folder, the package as a grading sees it (PACKAGE_VIEW_FILES); return its path."""
    view = Path(folder) / kit.KIT
    source = Path(package_folder())
    for relative in PACKAGE_VIEW_FILES:
        target = view / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / relative, target)
    (view / "__init__.py").write_text(_PACKAGE_INIT, encoding="utf-8")
    return str(view)


def read_only_paths() -> list:
    """Host folders the grading needs: Python, its environment, the kit's package; none inside another."""
    candidates = {"/usr", sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
                  os.path.dirname(os.path.realpath(sys.executable)), package_folder()}
    candidates.update(path for path in site.getsitepackages() if os.path.isdir(path))
    user_site = site.getusersitepackages()
    if isinstance(user_site, str) and user_site in sys.path and os.path.isdir(user_site):
        candidates.add(user_site)
    resolved = sorted({os.path.realpath(path) for path in candidates if os.path.isdir(path)} | {
        path for path in candidates if os.path.isdir(path)})
    kept = []
    for path in resolved:
        if path == "/" or any(path == other or path.startswith(other.rstrip("/") + "/") for other in kept):
            continue
        kept.append(path)
    return kept


def _tasks_of_user(uid: int) -> int:
    """Threads of every process of uid now: RLIMIT_NPROC counts them all, not only the sandbox's."""
    count = 0
    for process in psutil.process_iter(["uids", "num_threads"]):
        try:
            if process.info["uids"] and process.info["uids"].real == uid:
                count += process.info["num_threads"] or 1
        except psutil.Error:
            continue
    return count
