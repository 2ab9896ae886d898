"""Run one assembled notebook under nbval in strict mode, in a subprocess, and collect cell outcomes.

The run happens in a fresh folder with its own pytest configuration (so the kit's pyproject
options do not apply), a private IPython folder (no startup files), a time limit on each call of
the student's code (the channel's) and an overall timeout (ours). Cell outcomes arrive from the
probe plugin on a pipe; pytest's own output goes to another pipe, of which only the end is kept.

With a sandbox (see sandbox.py) the whole run, pytest, the kernel and anything they start, happens
inside bubblewrap: the folder is a private tmpfs, and when the run ends its PID namespace ends with
it; the channel's folder, which the student's sandbox shares, is a tmpfs of its own, unmounted at
the end. Without one the run is a process tree in a temporary folder, killed with psutil at the end.
Whatever happens, nothing of the run is left when this returns: what remains on disk is removed
without recursion (exchange.remove_tree), whatever tree the student made.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import psutil

from . import channel, exchange, sandbox
from .checks import SEED_VARIABLE
from .freezer import FreezeServer
from .source import notebook_json
from .words import both

PROBE_PLUGIN = f"{__package__}.probe"
GUARD_EXTENSION = f"{__package__}.guard"
LOG_TAIL_BYTES = 4000
_KILL_WAIT_SECONDS = 5
_MESSAGE_LIMIT = 64 * 1024  # a probe line longer than this is not the probe's


@dataclass(frozen=True)
class CellOutcome:
    """What the probe reported for one code cell."""

    passed: bool
    feedback: str
    outputs: tuple = ()  # the cell's outputs, reported only in a reference run
    printed: dict | None = None  # what the answers printed while a visible check that failed ran


@dataclass(frozen=True)
class Evidence:
    """One tampering verdict: what the guard found (kernel text), the watched items it names (guard.WATCHED's
    keys), where it looked (the channel's {"cell": answer or setup label} or {"call": name, "cell": label})
    and the check cell that ended on it."""

    what: str
    items: tuple = ()
    where: tuple = ()  # (key, value) pairs of the channel's "where"
    check: str | None = None

    @classmethod
    def of(cls, message: dict) -> Evidence:
        """The evidence in a probe message, every part made a string (the message is the probe's, its text the
        kernel's)."""
        where = message.get("where")
        items = message.get("items")
        check = message.get("check")
        return cls(str(message.get("what", "")),
                   tuple(str(item)[:40] for item in items[:20]) if isinstance(items, list) else (),
                   tuple((str(key)[:20], str(value)[:200]) for key, value in list(where.items())[:4])
                   if isinstance(where, dict) else (),
                   str(check)[:40] if check is not None else None)


@dataclass
class RunResult:
    """Everything one nbval run produced."""

    cells: dict = field(default_factory=dict)  # code-cell index -> CellOutcome
    timed_out: bool = False  # the overall time limit stopped the run
    exit_code: int | None = None  # pytest's exit status (None when it was killed)
    log_tail: str = ""  # the end of pytest's own output, for diagnosing the grader
    seconds: float = 0.0
    tampering: list = field(default_factory=list)  # what the guard or the probe caught: Evidence, one each
    stopped: str | None = None  # why the probe stopped the notebook early (output limit, stopped kernel)
    memory_exceeded: str | None = None  # why, when the student's side (or the checks' side) ran out of memory
    clean_up: str | None = None  # what could not be removed afterwards (the grader's problem, not the notebook's)
    guard: str | None = None  # "ready", or why the guard did not start (None when it was not asked for)


@dataclass(frozen=True)
class RunSettings:
    """How to run: timeouts, the sandbox (None for none), its limits, and whether the guard watches."""

    cell_timeout: float
    total_timeout: float
    sandboxed: bool = False
    limits: sandbox.Limits = sandbox.Limits()
    guard: bool = True
    seed: int = 0  # the grading run's seed, in the kernel's environment as S09_SEED
    collect_outputs: bool = False  # a reference run: report every check cell's outputs


def run_notebook(notebook, settings: RunSettings, program: tuple | None = None, data: dict | None = None) -> RunResult:
    """Run the notebook under nbval; never raises for the notebook's sake.

    With program ((label, code) cells, see assemble.student_program), two kernels run side by side:
    nbval's kernel (the trusted one) runs the notebook, and a kernel of the student's own, in a
    sandbox of its own, runs only the program's cells and the calls the checks make (channel.py).
    The guard, when asked for, watches the student's kernel.

    data maps an environment variable (named S09_...) to the text of a file the checks read, such as
    the capstone's verdict, decided outside both kernels: the trusted side alone sees the file, read
    only, at the path the variable holds; the student's side has neither the file nor the variable.
    """
    started = time.monotonic()
    scratch = Path(tempfile.mkdtemp(prefix="s09-grade-"))
    quota = None  # the channel's folder, once a tmpfs is mounted on it
    try:
        if program is not None:  # both sandboxes run as one user: the task limit counts both kernels' threads
            settings = replace(settings, limits=replace(settings.limits, tasks=2 * settings.limits.tasks))
        trusted = settings if program is None else replace(settings, guard=False)
        files = _prepare_files(scratch, notebook, trusted)
        data_files = _write_data(scratch, data or {})
        if program is not None and settings.sandboxed and sandbox.quota_problem() is None:
            quota = scratch / "channel"
            quota.mkdir(mode=0o777)
            sandbox.mount_quota(quota, settings.limits.channel_bytes)
        student = _prepare_student(scratch, files, program, settings) if program is not None else None
        if settings.sandboxed:
            view = sandbox.write_package_view(scratch / "package")
            with sandbox.acquire_slot() as slot, sandbox.grading_groups(settings.limits) as groups:
                with _student_kernel(student, settings, groups.freezer, slot=slot, groups=groups, view=view):
                    result = _run_sandboxed(scratch, files, trusted, slot, groups, view, student, data_files)
                if groups.student is not None and groups.student.ran_out():
                    result.memory_exceeded = _out_of_memory(settings.limits)
                elif groups.trusted is not None and groups.trusted.ran_out():  # one kernel: it was the student's
                    result.memory_exceeded = (_out_of_memory if program is None else _checks_out_of_memory)(
                        settings.limits)
        else:
            with sandbox.freezer_group() as freezer, _student_kernel(student, settings, freezer):
                result = _run_unsandboxed(scratch, files, trusted, student, data_files)
    finally:
        if quota is not None:
            sandbox.unmount(quota)  # whatever the student left there goes at once, however deep
        problem = exchange.remove_quietly(scratch)
    result.clean_up = problem
    result.seconds = time.monotonic() - started
    return result


# --------------------------------------------------------------------------- the student's kernel

SANDBOX_CHANNEL = "/tmp/channel"  # the folder both sandboxes of a grading see, at the same path
PROGRAM = "student_program.json"  # in the trusted run's folder only
STUDENT_GUARD = "student_guard.json"  # the guard's key, for the trusted side
SANDBOX_WATCH = "/tmp/watch"  # the trusted sandbox's view of the folder where the grader says how the student's
STUDENT_STATE = "state"  # kernel is (the file in it); the student's sandbox does not see it
FREEZER_SOCKET = "freezer.sock"  # in the watch folder: where the trusted side asks for a freeze (freezer.py)
_WATCH_SECONDS = 0.1


@dataclass
class _Student:
    """Where the student's kernel lives: its files on the host and the channel's folder."""

    folder: Path  # the student kernel's own run folder (ipython profile, working folder)
    channel: Path  # the shared folder: the connection file, the exchange folder
    files: dict  # relative path -> host file, for the student's sandbox
    environment: dict  # what the trusted kernel needs to know about the channel
    watch: Path | None = None  # on the host: the folder where the watcher says the kernel stopped or went
    process: subprocess.Popen | None = None


def _prepare_student(scratch: Path, files: dict, program: tuple, settings: RunSettings) -> _Student:
    """Write the student kernel's files, the connection file and the program; return where they are."""
    folder, shared = scratch / "student", scratch / "channel"
    for path in (shared, shared / "exchange"):
        path.mkdir(parents=True, exist_ok=True)  # the channel may be a tmpfs mounted already
        os.chmod(path, 0o777)  # the sandboxes run as a user of their own
    inside = SANDBOX_CHANNEL if settings.sandboxed else str(shared)
    key = secrets.token_hex(32)
    if settings.sandboxed:  # unix sockets in the shared folder: the sandboxes have no common network
        ports = {name: number for number, name in enumerate(_PORT_NAMES, start=1)}
        connection = {"transport": "ipc", "ip": f"{inside}/kernel", **ports}
    else:
        from jupyter_client.connect import write_connection_file

        write_connection_file(str(shared / "ports.json"), ip="127.0.0.1", key=key.encode())
        connection = {name: value for name, value in json.loads((shared / "ports.json").read_text()).items()
                      if name in _PORT_NAMES or name in ("transport", "ip")}
    connection.update({"key": key, "signature_scheme": "hmac-sha256"})
    (shared / "kernel.json").write_text(json.dumps(connection), encoding="utf-8")
    os.chmod(shared / "kernel.json", 0o644)
    contents = {KERNEL_CONFIG: _kernel_config(settings)}
    environment = {channel.CONNECTION_VARIABLE: f"{inside}/kernel.json",
                   channel.EXCHANGE_VARIABLE: f"{inside}/exchange",
                   channel.TIMEOUT_VARIABLE: f"{settings.cell_timeout:g}"}  # each call, each answer cell
    trusted_root = sandbox.SANDBOX_ROOT if settings.sandboxed else str(scratch)
    trusted = {PROGRAM: json.dumps([{"label": label, "code": code} for label, code in program])}
    watch = scratch / "watch"
    watch.mkdir(mode=0o755)  # the grader writes here; the trusted sandbox (another user) only reads
    if settings.guard:
        guard_settings = json.dumps({"key": secrets.token_hex(32), "output_limit": settings.limits.output_bytes})
        contents[f"{Path(KERNEL_CONFIG).parent}/{GUARD_KEY_FILE}"] = guard_settings
        trusted[STUDENT_GUARD] = guard_settings
        environment[channel.GUARD_VARIABLE] = f"{trusted_root}/{STUDENT_GUARD}"
    environment[channel.PROGRAM_VARIABLE] = f"{trusted_root}/{PROGRAM}"
    environment[channel.STATE_VARIABLE] = f"{SANDBOX_WATCH if settings.sandboxed else watch}/{STUDENT_STATE}"
    environment[channel.FREEZER_VARIABLE] = f"{SANDBOX_WATCH if settings.sandboxed else watch}/{FREEZER_SOCKET}"
    for relative, text in trusted.items():
        (scratch / relative).write_text(text, encoding="utf-8")
        files[relative] = scratch / relative
    for relative, text in contents.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (folder / "run").mkdir()
    return _Student(folder, shared, {relative: folder / relative for relative in contents}, environment, watch)


_PORT_NAMES = ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")
GUARD_KEY_FILE = "s09_guard.json"  # the guard reads it from its kernel's profile folder, then deletes it


class _student_kernel:
    """Context manager: the student's kernel runs while the trusted run does; then it is killed.

    With a freezer group (sandbox.FreezerGroup), the kernel and everything it starts are in it, and a
    FreezeServer freezes and thaws them when the trusted side asks.
    """

    def __init__(self, student: _Student | None, settings: RunSettings, freezer=None, **sandboxing):
        self.student, self.settings, self.freezer, self.sandboxing = student, settings, freezer, sandboxing
        self.ending = threading.Event()
        self.watcher = self.server = None

    def __enter__(self):
        if self.student is None:
            return None
        self.server = FreezeServer(self.student.watch / FREEZER_SOCKET, self.freezer)
        if self.settings.sandboxed:  # the sandbox joins the freezer group before it starts (groups.joined_by)
            self.student.process = _start_student_sandboxed(self.student, self.settings, **self.sandboxing)
        else:
            self.student.process = _start_student_unsandboxed(self.student)
            if self.freezer is not None:  # before the kernel runs a line of the student's: it waits for cells
                self.freezer.add(self.student.process.pid)
        self.watcher = threading.Thread(target=_watch_student, args=(self.student, self.ending, self.server),
                                        daemon=True)
        self.watcher.start()
        return self.student

    def __exit__(self, *exc_info):
        if self.server is not None:
            self.server.close()  # thawed: a frozen process could not be killed
        process = self.student.process if self.student is not None else None
        if process is None:
            return
        self.ending.set()
        self.watcher.join()
        if self.settings.sandboxed:
            _end_sandbox(process)
        else:
            _kill_tree([_process_or_none(process.pid)] + (_process_or_none(process.pid).children(recursive=True)
                                                         if _process_or_none(process.pid) else []))
            process.wait()


def _watch_student(student: _Student, ending: threading.Event, server: FreezeServer) -> None:
    """Until ending is set: once the student's kernel is stopped (SIGSTOP) or gone, say so in its state file.

    The trusted side cannot see the student's processes (another sandbox); from here they are in view.
    It reads the file only when the heartbeat has stopped, to tell a stopped kernel from a dead one.
    A kernel the grader froze is neither: while the server has it frozen, nothing is said.
    """
    said = ""
    while not ending.wait(_WATCH_SECONDS) and said != channel.GONE:
        if server.frozen:
            continue
        state = _student_state(student.process)
        if state != said:
            fresh = student.watch / f".{STUDENT_STATE}"
            fresh.write_text(state, encoding="utf-8")
            fresh.replace(student.watch / STUDENT_STATE)  # whole: the trusted side never reads half of it
            said = state


def _student_state(process: subprocess.Popen) -> str:
    """channel.STOPPED while the student's kernel is stopped, channel.GONE once it ended, else ""."""
    if process.poll() is not None:
        return channel.GONE
    try:
        tree = [psutil.Process(process.pid)]
        tree += tree[0].children(recursive=True)  # sandboxed: bwrap, then the namespace's processes
        kernels = [member for member in tree if "ipykernel_launcher" in member.cmdline()]
        if any(kernel.status() in (psutil.STATUS_STOPPED, psutil.STATUS_TRACING_STOP) for kernel in kernels):
            return channel.STOPPED
    except psutil.Error:
        pass  # a process went while we looked: the next look sees what is left
    return ""


def _kernel_command(connection_file: str) -> list:
    return [sys.executable, "-m", "ipykernel_launcher", "-f", connection_file]


def _start_student_sandboxed(student: _Student, settings: RunSettings, *, slot, groups, view) -> subprocess.Popen:
    root = sandbox.SANDBOX_ROOT
    environment = {
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": sandbox.SANDBOX_HOME, "TMPDIR": "/tmp", "LANG": "C.UTF-8", "MALLOC_ARENA_MAX": "2",
        **_common_environment(root, settings),
    }
    del environment[SEED_VARIABLE]  # the seed stays on the trusted side
    command = sandbox.build_command(
        _kernel_command(f"{SANDBOX_CHANNEL}/kernel.json"),
        scratch_files={f"{root}/{relative}": str(path) for relative, path in student.files.items()},
        slot=slot, limits=settings.limits, environment=environment, cwd=root, groups=groups.joined_by("student"),
        package_view=view, shared_folders={SANDBOX_CHANNEL: str(student.channel)})
    try:
        return subprocess.Popen(command.argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, pass_fds=command.pass_fds, **command.popen_options)
    finally:
        command.close()


def _start_student_unsandboxed(student: _Student) -> subprocess.Popen:
    dropped = {"MPLBACKEND", "PYTHONSTARTUP", "PYTHONBREAKPOINT"}
    environment = {name: value for name, value in os.environ.items()
                   if name not in dropped and not name.startswith(("PYTEST_", "S09_"))}
    environment.update({"IPYTHONDIR": str(student.folder / "ipython"), "JUPYTER_PLATFORM_DIRS": "1",
                        "PYTHONDONTWRITEBYTECODE": "1", "PYDEVD_DISABLE_FILE_VALIDATION": "1"})
    return subprocess.Popen(_kernel_command(str(student.channel / "kernel.json")), stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=student.folder / "run",
                            env=environment, start_new_session=True)


# --------------------------------------------------------------------------- the run folder

# Paths relative to the run folder: on the host for an unsandboxed run, under sandbox.SANDBOX_ROOT inside one.
PYTEST_INI = "pytest.ini"
KERNEL_CONFIG = "ipython/profile_default/ipython_kernel_config.py"
NOTEBOOK = "run/submission.ipynb"  # the kernel's working folder is run/; the probe deletes the notebook


def _prepare_files(scratch: Path, notebook, settings: RunSettings) -> dict:
    """Write the run's files under scratch; return them by relative path."""
    contents = {PYTEST_INI: "[pytest]\n", NOTEBOOK: notebook_json(notebook),
                KERNEL_CONFIG: _kernel_config(settings)}
    for relative, text in contents.items():
        path = scratch / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return {relative: scratch / relative for relative in contents}


DATA_FOLDER = "data"  # the trusted side's read-only data files (run_notebook's data)


def _write_data(scratch: Path, data: dict) -> dict:
    """Write each data file (read-only) under scratch; return variable -> (its path relative to the run folder,
    its host path)."""
    written = {}
    wrong = [variable for variable in data if not variable.startswith("S09_")]
    if wrong:  # the student's kernel never inherits an S09_ variable (_start_student_unsandboxed drops them)
        raise ValueError(f"a data file's variable must start with S09_, not {wrong[0]!r}")
    if data:
        (scratch / DATA_FOLDER).mkdir(mode=0o755)
    for variable, text in data.items():
        relative = f"{DATA_FOLDER}/{variable.lower()}.json"
        host = scratch / relative
        host.write_text(text, encoding="utf-8")
        host.chmod(0o444)
        written[variable] = (relative, host)
    return written


def _kernel_config(settings: RunSettings) -> str:
    lines = ["c = get_config()  # noqa", "c.InteractiveShellApp.exec_files = []",
             "c.InteractiveShellApp.exec_lines = []"]
    if settings.guard:  # loaded while the kernel starts, before any cell runs
        lines.append(f"c.InteractiveShellApp.extensions = [{GUARD_EXTENSION!r}]")
    return "\n".join(lines) + "\n"


def _pytest_command(root: str, report_fd: int, settings: RunSettings) -> list:
    command = [
        sys.executable, "-m", "pytest", f"{root}/{NOTEBOOK}",
        "-c", f"{root}/{PYTEST_INI}", "--rootdir", root, "--confcutdir", root,
        "-p", "no:cacheprovider", "-p", PROBE_PLUGIN, "-p", "nbval", f"--s09-report-fd={report_fd}",
        f"--s09-output-limit={settings.limits.output_bytes}",
        # The trusted kernel's cells wait on the student's calls, each of which the channel stops at
        # cell_timeout. nbval's limit is only a backstop: were it cell_timeout too, a busy machine could
        # spend a cell's time before the call starts, and a slow answer would read as a wrong one.
        "--nbval", "--nbval-current-env", f"--nbval-cell-timeout={settings.total_timeout}",
        f"--nbval-kernel-startup-timeout={min(60.0, settings.total_timeout)}",
        "-q", "--color=no", "--capture=no",  # the kernel inherits our pipe, not a capture file pytest reads back
    ]
    if settings.guard:
        command.append("--s09-guard")
    if settings.collect_outputs:
        command.append("--s09-collect-outputs")
    return command


def _common_environment(root: str, settings: RunSettings) -> dict:
    return {
        SEED_VARIABLE: str(settings.seed),
        "IPYTHONDIR": f"{root}/ipython",  # no profile but ours, no startup files, no shared history
        "JUPYTER_PLATFORM_DIRS": "1",  # silences jupyter_core's migration warning
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",  # silences the debugger's frozen-modules warning
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",  # only the plugins named with -p: the probe first, then nbval
    }


# --------------------------------------------------------------------------- two ways to run


def _out_of_memory(limits: sandbox.Limits) -> str:
    total = limits.total_memory >> 20
    return both(f"out of memory: the notebook's processes together went over the memory limit of {total} MiB "
                "(memfds, /tmp and shared memory included), so the kernel was stopped",
                f"内存不足：笔记本的所有进程合计超过了 {total} MiB 的内存上限（memfd、/tmp 和共享内存都计入），"
                "因此内核被终止")


def _checks_out_of_memory(limits: sandbox.Limits) -> str:
    total = limits.trusted_memory >> 20
    return both(f"out of memory: the checks' side went over its memory limit of {total} MiB holding what the answers "
                "returned, so it was stopped",
                f"内存不足：检查一方保存答案返回的值时超过了 {total} MiB 的内存上限，因此被终止")


def _run_sandboxed(scratch: Path, files: dict, settings: RunSettings, slot: int, groups, view: str,
                   student: _Student | None = None, data_files: dict | None = None) -> RunResult:
    root = sandbox.SANDBOX_ROOT
    data_files = data_files or {}
    environment = {
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": sandbox.SANDBOX_HOME, "TMPDIR": "/tmp", "LANG": "C.UTF-8",
        "MALLOC_ARENA_MAX": "2",  # fewer 64 MiB arena reservations: the address-space limit is for data
        **_common_environment(root, settings),
        **(student.environment if student else {}),
        **{variable: f"{root}/{relative}" for variable, (relative, _) in data_files.items()},
    }
    read_fd, write_fd = os.pipe()
    command = sandbox.build_command(
        _pytest_command(root, write_fd, settings),
        scratch_files={f"{root}/{relative}": str(path) for relative, path in files.items()},
        slot=slot, limits=settings.limits, environment=environment, keep_fds=(write_fd,), cwd=root,
        groups=groups.joined_by("trusted"),
        package_view=view,
        shared_folders={SANDBOX_CHANNEL: str(student.channel), SANDBOX_WATCH: str(student.watch)} if student else None,
        read_only_files={f"{root}/{relative}": str(host) for relative, host in data_files.values()})
    try:
        process = _start(command.argv, read_fd, write_fd, pass_fds=command.pass_fds, **command.popen_options)
    finally:
        command.close()
    return _supervise(process, read_fd, settings, stop=lambda: _end_sandbox(process))


def _run_unsandboxed(scratch: Path, files: dict, settings: RunSettings, student: _Student | None = None,
                     data_files: dict | None = None) -> RunResult:
    root = str(scratch)
    dropped = {"MPLBACKEND", "PYTHONSTARTUP", "PYTHONBREAKPOINT"}
    environment = {name: value for name, value in os.environ.items()
                   if name not in dropped and not name.startswith(("PYTEST_", "S09_"))}
    environment.update(_common_environment(root, settings))
    environment.update(student.environment if student else {})
    environment.update({variable: str(host) for variable, (_, host) in (data_files or {}).items()})
    read_fd, write_fd = os.pipe()
    process = _start(_pytest_command(root, write_fd, settings), read_fd, write_fd, pass_fds=(write_fd,),
                     cwd=root, env=environment, start_new_session=True)
    pytest_process = _process_or_none(process.pid)  # taken before we reap it: the pid is still ours
    result_holder = {}

    def stop():
        listener = result_holder["listener"]
        _kill_tree([pytest_process] + listener.kernels)
        process.wait()
        listener.join(timeout=_KILL_WAIT_SECONDS)
        _kill_tree(listener.kernels)  # in case the kernel was reported after the first kill

    return _supervise(process, read_fd, settings, stop=stop, trust_pids=True, holder=result_holder)


def _start(argv: list, read_fd: int, write_fd: int, **options) -> subprocess.Popen:
    """Start pytest (perhaps inside bwrap); only it holds the pipe's writing end afterwards."""
    try:
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                **options)
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)


def _supervise(process: subprocess.Popen, read_fd: int, settings: RunSettings, *, stop, trust_pids: bool = False,
               holder: dict | None = None) -> RunResult:
    """Collect the probe's messages and pytest's output until pytest ends or the time is up; then stop."""
    result = RunResult(guard=None)
    listener = _Listener(read_fd, result, trust_pids)
    tail = _Tail(process.stdout)
    if holder is not None:
        holder["listener"] = listener
    listener.start()
    tail.start()
    try:
        result.exit_code = process.wait(timeout=settings.total_timeout)
    except subprocess.TimeoutExpired:
        result.timed_out = True
    finally:
        stop()
        listener.join(timeout=_KILL_WAIT_SECONDS)
        tail.join(timeout=_KILL_WAIT_SECONDS)
        process.stdout.close()
    result.log_tail = tail.text()
    return result


def _end_sandbox(process: subprocess.Popen) -> None:
    """Kill bwrap; its PID namespace, and everything in it, goes with the namespace's first process."""
    inner = []
    if process.poll() is None:  # not reaped yet, so the pid is still bwrap's
        try:
            inner = psutil.Process(process.pid).children()
        except psutil.Error:
            pass
    for victim in [*inner]:
        try:
            victim.kill()  # the namespace's init: the kernel kills every other process in the namespace
        except psutil.Error:
            pass
    process.kill()
    process.wait()
    psutil.wait_procs(inner, timeout=_KILL_WAIT_SECONDS)


class _Tail(threading.Thread):
    """Drains pytest's output, keeping only its last LOG_TAIL_BYTES bytes (a flood costs no memory)."""

    def __init__(self, stream):
        super().__init__(daemon=True)
        self.stream = stream
        self.data = bytearray()
        self.total = 0

    def run(self):
        try:
            while chunk := self.stream.read1(65536):
                self.total += len(chunk)
                self.data += chunk
                del self.data[:-LOG_TAIL_BYTES]
        except (OSError, ValueError):
            pass

    def text(self) -> str:
        return bytes(self.data).decode("utf-8", "replace")


class _Listener(threading.Thread):
    """Reads the probe's JSON lines into a RunResult until pytest closes the pipe."""

    def __init__(self, read_fd: int, result: RunResult, trust_pids: bool):
        super().__init__(daemon=True)
        self.read_fd = read_fd
        self.result = result
        self.trust_pids = trust_pids  # a pid from inside a sandbox names some other process out here
        self.kernels = []  # psutil.Process objects: they notice if a pid is reused

    def run(self):
        with open(self.read_fd, "rb") as pipe:
            while line := pipe.readline(_MESSAGE_LIMIT):
                try:
                    message = json.loads(line)
                except ValueError:
                    continue
                if isinstance(message, dict):
                    self._take(message)

    def _take(self, message: dict) -> None:
        kind = message.get("kind")
        if kind == "kernel" and self.trust_pids:
            kernel = _process_or_none(message.get("pid"))
            if kernel is not None:
                self.kernels.append(kernel)
        elif kind == "cell" and isinstance(message.get("cell"), int):
            outputs = message.get("outputs")
            printed = message.get("printed")
            self.result.cells[message["cell"]] = CellOutcome(
                message.get("outcome") == "passed", str(message.get("feedback", "")),
                tuple(output for output in outputs if isinstance(output, dict)) if isinstance(outputs, list) else (),
                printed if isinstance(printed, dict) else None)
        elif kind == "tampering":
            self.result.tampering.append(Evidence.of(message))
        elif kind == "stopped":
            self.result.stopped = str(message.get("why", ""))
        elif kind == "guard":
            self.result.guard = str(message.get("status", ""))


def _process_or_none(pid):
    try:
        return psutil.Process(pid)
    except (psutil.Error, TypeError, ValueError):
        return None


def _kill_tree(processes: list) -> None:
    """Kill the given processes and all their descendants, and wait for them to go."""
    doomed = []
    for process in filter(None, processes):
        try:
            if process.is_running():  # False also when the pid now belongs to another process
                doomed += [process] + process.children(recursive=True)
        except psutil.Error:
            continue
    for process in doomed:
        try:
            process.kill()  # psutil refuses if the pid now belongs to another process
        except psutil.Error:
            pass
    psutil.wait_procs(doomed, timeout=_KILL_WAIT_SECONDS)
