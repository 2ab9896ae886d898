"""Run one assembled notebook under nbval in strict mode, in a subprocess, and collect cell outcomes.

The run happens in a fresh temporary folder with its own pytest configuration (so the kit's
pyproject options do not apply), a private IPython folder (no startup files), a per-cell timeout
(nbval's) and an overall timeout (ours). Cell outcomes arrive from the probe plugin on a pipe.
Whatever happens, pytest, the kernel and their children are killed before this returns.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from .source import notebook_json

PROBE_PLUGIN = "s09_jsonl_transcript.grading.probe"
LOG_TAIL_CHARACTERS = 4000
_KILL_WAIT_SECONDS = 5


@dataclass(frozen=True)
class CellOutcome:
    """What the probe reported for one code cell."""

    passed: bool
    feedback: str


@dataclass
class RunResult:
    """Everything one nbval run produced."""

    cells: dict = field(default_factory=dict)  # code-cell index -> CellOutcome
    timed_out: bool = False  # the overall time limit stopped the run
    exit_code: int | None = None  # pytest's exit status (None when it was killed)
    log_tail: str = ""  # the end of pytest's own output, for diagnosing the grader
    seconds: float = 0.0


def run_notebook(notebook, *, cell_timeout: float, total_timeout: float) -> RunResult:
    """Run the notebook under nbval in a fresh temporary folder; never raises for the notebook's sake."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="s09-grade-") as scratch:
        scratch = Path(scratch)
        notebook_path = _prepare_folder(scratch, notebook)
        result = _run_pytest(scratch, notebook_path, cell_timeout, total_timeout)
        result.log_tail = (scratch / "pytest.log").read_text("utf-8", "replace")[-LOG_TAIL_CHARACTERS:]
    result.seconds = time.monotonic() - started
    return result


def _run_pytest(scratch: Path, notebook_path: Path, cell_timeout: float, total_timeout: float) -> RunResult:
    """Start pytest with a pipe for the probe, wait up to total_timeout, then kill what is left."""
    read_fd, write_fd = os.pipe()
    try:
        with open(scratch / "pytest.log", "wb") as log:
            process = subprocess.Popen(
                _pytest_command(scratch, notebook_path, write_fd, cell_timeout, total_timeout),
                cwd=scratch, env=_environment(scratch), stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, pass_fds=(write_fd,), start_new_session=True)
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)  # only pytest holds the writing end now: EOF when it is gone
    pytest_process = _process_or_none(process.pid)  # taken before we reap it: the pid is still ours
    result = RunResult()
    listener = _Listener(read_fd, result)
    listener.start()
    try:
        result.exit_code = process.wait(timeout=total_timeout)
    except subprocess.TimeoutExpired:
        result.timed_out = True
    finally:
        _kill_tree([pytest_process] + listener.kernels)
        process.wait()
        listener.join(timeout=_KILL_WAIT_SECONDS)
        _kill_tree(listener.kernels)  # in case the kernel was reported after the first kill
    return result


def _prepare_folder(scratch: Path, notebook) -> Path:
    """Lay out scratch: an empty pytest config, a private IPython folder, run/ with the notebook."""
    (scratch / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (scratch / "ipython").mkdir()
    run = scratch / "run"  # the kernel's working folder: the probe deletes the notebook from it
    run.mkdir()
    notebook_path = run / "submission.ipynb"
    notebook_path.write_text(notebook_json(notebook), encoding="utf-8")
    return notebook_path


def _pytest_command(scratch: Path, notebook_path: Path, report_fd: int, cell_timeout: float,
                    total_timeout: float) -> list:
    return [
        sys.executable, "-m", "pytest", str(notebook_path),
        "-c", str(scratch / "pytest.ini"), "--rootdir", str(scratch), "--confcutdir", str(scratch),
        "-p", "no:cacheprovider", "-p", PROBE_PLUGIN, f"--s09-report-fd={report_fd}",
        "--nbval", "--nbval-current-env", f"--nbval-cell-timeout={cell_timeout}",
        f"--nbval-kernel-startup-timeout={min(60.0, total_timeout)}",
        "-q", "--color=no",
    ]


def _environment(scratch: Path) -> dict:
    """The grader's environment minus what could change how pytest or the kernel behave."""
    dropped = {"MPLBACKEND", "PYTHONSTARTUP", "PYTHONBREAKPOINT"}
    environment = {name: value for name, value in os.environ.items()
                   if name not in dropped and not name.startswith("PYTEST_")}
    environment.update(
        IPYTHONDIR=str(scratch / "ipython"),  # no profile, no startup files, no shared history
        JUPYTER_PLATFORM_DIRS="1",  # silences jupyter_core's migration warning
        PYTHONDONTWRITEBYTECODE="1",
        PYDEVD_DISABLE_FILE_VALIDATION="1",  # silences the debugger's frozen-modules warning
    )
    return environment


class _Listener(threading.Thread):
    """Reads the probe's JSON lines into a RunResult until pytest closes the pipe."""

    def __init__(self, read_fd: int, result: RunResult):
        super().__init__(daemon=True)
        self.read_fd = read_fd
        self.result = result
        self.kernels = []  # psutil.Process objects: they notice if a pid is reused

    def run(self):
        with open(self.read_fd, encoding="utf-8", errors="replace") as pipe:
            for line in pipe:
                try:
                    message = json.loads(line)
                except ValueError:
                    continue
                if message.get("kind") == "kernel":
                    kernel = _process_or_none(message.get("pid"))
                    if kernel is not None:
                        self.kernels.append(kernel)
                elif message.get("kind") == "cell" and isinstance(message.get("cell"), int):
                    self.result.cells[message["cell"]] = CellOutcome(
                        message.get("outcome") == "passed", str(message.get("feedback", "")))


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
