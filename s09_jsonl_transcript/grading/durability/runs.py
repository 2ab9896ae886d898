"""Start the capstone's driver and talk to it: under the recorder (strace, outside the student's
sandbox), or, for the notebook's local check, as a plain child process. Every process the capstone's
grader starts, it starts here.

The recorder is strace run by the grader, outside bubblewrap: `strace -f ... prlimit ... bwrap ...
python capstone_driver.py`. Its log goes to the grader's own folder, which the sandbox does not
see; the driver in the sandbox sees neither strace (its own PID namespace) nor the kit (the
package's folder is an empty one in its view, and Python starts without site-packages). Every run
of the driver is recorded, the batches that only judge states included, so an answer cannot tell a
recorded run from another (in each, PTRACE_TRACEME fails, and /proc shows no tracer: strace is
outside the sandbox's PID namespace).

A held kill is strace's own: `-P <transcript> -e inject=write:signal=SIGKILL:when=K` kills the
driver as it enters its K-th write on the transcript, before the write runs (-P makes strace count
only the calls on that path, so the driver's acknowledgements never count).
"""

from __future__ import annotations

import functools
import json
import os
import queue
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ..words import both
from .calls import TRACED
from .workspace import SANDBOX_WORK, sandbox_module

DRIVER_SOURCE = Path(__file__).with_name("driver.py")
SANDBOX_FILES = "/tmp/grading"  # where the driver and the two cells are, in the sandbox
STRING_LIMIT = 1 << 20  # bytes of a string the recorder prints; a longer write is refused
STEP_SECONDS = 20.0  # the longest one call of the answer may take (a batch: each of its steps)
START_SECONDS = 30.0  # Python, the given cell and the answer cell, loaded
LINE_BYTES = 1 << 20  # the longest answer line read; a longer one is cut
ANSWER_BYTES = 1 << 28  # all the answer lines of one driver; past that it is stopped


class RecorderUnavailable(RuntimeError):
    """The grader cannot record system calls here (no strace, ptrace refused, no sandbox): the
    capstone is refused at once with this reason, never scored 0."""


@functools.lru_cache(maxsize=None)
def recorder_problem(sandboxed: bool = True) -> tuple | None:
    """None when strace can trace a child here (and bubblewrap runs, if sandboxed), else why not
    (in English, in Chinese)."""
    strace = shutil.which("strace")
    if strace is None:
        return ("strace is not installed (Debian package strace)", "没有安装 strace（Debian 软件包 strace）")
    try:
        done = subprocess.run([strace, "-f", "-qq", "-o", os.devnull, "--", sys.executable, "-S", "-c", "pass"],
                              stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as error:
        return f"strace could not start ({error})", f"strace 无法启动（{error}）"
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip()[:200]
        return (f"strace cannot trace here, ptrace refused? ({said})",
                f"strace 在这里无法跟踪，ptrace 被拒绝？（{said}）")
    if sandboxed:
        sandbox = sandbox_module()
        try:
            sandbox.status(sandbox.REQUIRED)
        except sandbox.SandboxUnavailable as error:
            return str(error), str(error)
    return None


def check_recorder(sandboxed: bool = True) -> None:
    """Raise RecorderUnavailable, with the reason in both languages, when the grader cannot record."""
    problem = recorder_problem(sandboxed)
    if problem is not None:
        raise RecorderUnavailable(both(f"ex06 refused: {problem[0]}", f"ex06 被拒绝：{problem[1]}"))


def strace_argv(log: Path, *, kill: tuple | None = None) -> list:
    """The recorder's command line. kill = (path, system call, K): kill before the K-th such call on path.

    --seccomp-bpf stops the traced process only at the calls it traces (the rest run at full
    speed); strace 6.1 then never fires an injection filtered by -P, so a held kill goes without it.
    """
    argv = ["strace", "-f", "-qq", "-e", "signal=none", "-X", "raw", "-yy", "-xx", "-s", str(STRING_LIMIT),
            "-o", str(log)]
    if kill is None:
        return argv + ["--seccomp-bpf", "-e", "trace=" + ",".join(TRACED)]
    path, name, number = kill
    return argv + ["-P", path, "-e", f"trace={name}", "-e", f"inject={name}:signal=SIGKILL:when={number}"]


@dataclass
class Runner:
    """How drivers start in one grading: recorded (strace) or local, sandboxed or not, and where."""

    workspace: object  # a Workspace
    given: Path  # the given cell's source, as a file
    answer: Path  # the answer cell's source, as a file
    recorded: bool = True  # False: the notebook's local check (no strace; the driver wraps os)
    sandboxed: bool = True
    limits: object = None  # grading/sandbox.py's Limits (its defaults when None)
    slot: int = 0
    groups: tuple = ()
    started: int = 0  # drivers started so far (each gets its own log)
    time_limit: float | None = None  # seconds the whole grading may take (None: no limit but each call's)
    deadline: float | None = None  # time.monotonic() when that time is up (set from time_limit at the start)

    def __post_init__(self):
        if self.time_limit is not None and self.deadline is None:
            self.deadline = time.monotonic() + self.time_limit

    def driver_argv(self, options: list) -> list:
        """The driver's command, as it runs (in the sandbox or not)."""
        if not self.sandboxed:
            return [sys.executable, "-S", "-B", str(DRIVER_SOURCE), str(self.given), str(self.answer), *options]
        return [sys.executable, "-S", "-B", f"{SANDBOX_FILES}/capstone_driver.py", f"{SANDBOX_FILES}/given.py",
                f"{SANDBOX_FILES}/answer.py", *options]

    def start(self, *, kill: tuple | None = None) -> Driver:
        """Start one driver, recorded (unless this is a local check) and ready to take commands.

        kill = (path, system call, K) holds a SIGKILL before the K-th such call on path: strace's
        injection, or in the local check the driver's own (it kills itself there).
        """
        self.started += 1
        log = self.workspace.logs / f"run-{self.started}.log"
        stderr = self.workspace.logs / f"run-{self.started}.err"
        options = []
        if not self.recorded:
            options = ["--wrap-os"] + (["--kill-before", f"{kill[1]}:{kill[2]}"] if kill else [])
        inner = self.driver_argv(options)
        environment = {"PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
                       "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1", "TMPDIR": "/tmp",
                       "HOME": "/tmp/home" if self.sandboxed else str(self.workspace.shared)}
        popen_options = {"start_new_session": True}
        if self.sandboxed:
            sandbox = sandbox_module()
            command = sandbox.build_command(
                inner, scratch_files={f"{SANDBOX_FILES}/capstone_driver.py": str(DRIVER_SOURCE),
                                      f"{SANDBOX_FILES}/given.py": str(self.given),
                                      f"{SANDBOX_FILES}/answer.py": str(self.answer)},
                slot=self.slot, limits=self.limits or sandbox.Limits(), environment=environment, cwd=SANDBOX_FILES,
                groups=self.groups, package_view=str(self.workspace.empty),
                shared_folders={SANDBOX_WORK: str(self.workspace.shared)})
            argv, popen_options = command.argv, command.popen_options
            pass_fds, environ, cwd = command.pass_fds, None, None
        else:
            argv, pass_fds, environ, cwd = inner, (), environment, str(self.workspace.shared)
        if self.recorded:
            argv = strace_argv(log, kill=kill) + ["--", *argv]
        with open(stderr, "wb") as error_file:
            process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=error_file,
                                       pass_fds=pass_fds, env=environ, cwd=cwd, **popen_options)
        if self.sandboxed:
            command.close()
        return Driver(process, log if self.recorded else None, stderr, deadline=self.deadline,
                      time_limit=self.time_limit)


class DriverGone(RuntimeError):
    """The driver stopped answering: it ended, or a call of the answer ran past its time (over_limit:
    the grading's whole time, time_limit seconds, ran out first)."""

    def __init__(self, message: str, timed_out: bool = False, time_limit: float | None = None):
        super().__init__(message)
        self.timed_out = timed_out
        self.time_limit = time_limit

    @property
    def over_limit(self) -> bool:
        """True when the grading's own time limit, not one call's, ran out."""
        return self.time_limit is not None


class Driver:
    """One running driver: send it commands, read its answer lines, then let it (or make it) end.

    A thread reads the driver's answers as they come (so a batch never waits on a full pipe while
    the grader prepares the next one); receive takes them in order, with a time limit.
    """

    def __init__(self, process: subprocess.Popen, log: Path | None, stderr: Path, *, deadline: float | None = None,
                 time_limit: float | None = None):
        self.process, self.log, self.stderr = process, log, stderr
        self.deadline, self.time_limit = deadline, time_limit
        self.answers = []  # every answer line read, in order
        self._queue = queue.Queue()
        self._reader = threading.Thread(target=self._read_answers, daemon=True)
        self._reader.start()
        self.ready = self.receive(START_SECONDS, deadline=False)  # a start has its own bound, whatever the time
        if self.ready is None or not self.ready.get("ready"):
            raise DriverGone(f"the driver did not start: {self.last_words()}")
        self.loaded = self.receive(START_SECONDS, deadline=False)

    def _read_answers(self) -> None:
        stream, total = self.process.stdout, 0
        while total < ANSWER_BYTES:
            line = stream.readline(LINE_BYTES)
            if not line:
                break
            total += len(line)
            while not line.endswith(b"\n"):  # longer than any answer the driver writes: skip the rest of it
                rest = stream.readline(LINE_BYTES)
                if not rest:
                    break
                total += len(rest)
                line = line[:200] + rest[-1:]
            try:
                message = json.loads(line)
            except ValueError:
                message = {"unreadable": line[:200].decode(errors="replace")}
            self.answers.append(message)
            if "call" not in message:  # the local check's calls are kept in answers only
                self._queue.put(message)
        if total >= ANSWER_BYTES:
            self.stop()  # something floods the channel: the driver's writes are bounded
        self._queue.put(None)

    def send(self, command: dict) -> None:
        """Send one command line (a driver that has ended is found out at the next receive)."""
        try:
            self.process.stdin.write((json.dumps(command, ensure_ascii=False) + "\n").encode())
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            pass

    def receive(self, seconds: float | None = None, *, deadline: bool = True) -> dict | None:
        """The next answer line as JSON; None when the driver ended; DriverGone when none came within seconds
        (STEP_SECONDS when not given), or before the grading's deadline."""
        seconds = STEP_SECONDS if seconds is None else seconds
        over = False
        if deadline and self.deadline is not None:
            left = self.deadline - time.monotonic()
            over, seconds = left <= seconds, max(0.0, min(seconds, left))
        try:
            message = self._queue.get(timeout=seconds)
        except queue.Empty:
            raise DriverGone("a call of the answer did not return in time", timed_out=True,
                             time_limit=self.time_limit if over else None) from None
        if message is None:
            self._queue.put(None)  # every later receive sees the end too
        return message

    def finish(self, seconds: float = 30.0) -> int:
        """Close the commands, wait for the driver (and the recorder, whose log is then complete)."""
        try:
            self.process.stdin.close()
        except OSError:
            pass
        try:
            status = self.process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            self.stop()
            status = self.process.wait()
        self._reader.join(timeout=5)  # a child the answer left (outside a sandbox) may hold the pipe open
        return status

    def stop(self) -> None:
        """Kill the driver's whole session (the recorder, the sandbox and what the answer started)."""
        try:
            os.killpg(self.process.pid, 9)
        except (ProcessLookupError, PermissionError):
            pass

    def last_words(self) -> str:
        """The end of the driver's standard error, for a message."""
        try:
            return self.stderr.read_bytes()[-400:].decode(errors="replace").strip() or "(nothing)"
        except OSError:
            return "(nothing)"

    def log_lines(self) -> list:
        """The recorder's log, line by line (after finish)."""
        if self.log is None or not self.log.exists():
            return []
        with open(self.log, encoding="utf-8", errors="replace") as file:
            return file.readlines()
