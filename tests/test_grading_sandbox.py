"""The sandbox (issue 14, part 1), with real hostile submissions: files planted outside, a daemon
that double-forks to rewrite reports after the grader exits, sockets, memory and output bombs, a
kernel that stops itself, a forger writing to pytest's report pipe through /proc; and the
fallback where bubblewrap is missing.

Each attack is also run unsandboxed where that is safe, to show the submission really does what it
claims when nothing stops it (so a pass here is the sandbox's doing, not a broken attack).
Tests of sandbox-only behaviour skip where bubblewrap cannot run, and fail under CI=true.
"""

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import psutil
import pytest
from test_grading_support import (
    INSTRUCTOR,
    ROOT,
    SOURCES,
    feedback_of,
    processes_mentioning,
    reported_json,
    require_sandbox,
    sandbox_processes,
    with_answers,
    write_notebook,
)

from s09_jsonl_transcript.grading import sandbox
from s09_jsonl_transcript.grading.grader import GradingOptions, grade_submission

pytestmark = [pytest.mark.slow,  # the grader's long suite: tests/test_grader_fast.py is its default-run part
              pytest.mark.skipif(os.name != "posix", reason="the grader runs on POSIX systems (Linux, macOS)")]

SANDBOXED = GradingOptions(cell_timeout=20, total_timeout=90, sandbox=sandbox.REQUIRED)
UNSANDBOXED = GradingOptions(cell_timeout=20, total_timeout=90, sandbox=sandbox.OFF)
FULL_MARKS = SOURCES["ex01"].max_score


def submission(folder: Path, name: str, turn_length_cell: str) -> Path:
    """An ex01 notebook whose first answer cell is the given code (the other answer stays a stub)."""
    return write_notebook(folder / f"ex01_{name}.ipynb", with_answers("ex01", {"ex01-turn-length": turn_length_cell}))


def reporting(name: str, code: str) -> str:
    """Answer code that runs code (which fills the dict `seen`) and shows `seen` in the feedback of the check
    ex01-turn-of-four."""
    return (f"import json\nseen = {{}}\n{code}\n\n\ndef last_turn_length(events):\n"
            f"    raise AssertionError({name!r} + ' ' + json.dumps(seen))\n")


# --------------------------------------------------------------------------- writing outside


PLANT = """
import os
for folder in FOLDERS:
    path = os.path.join(folder, MARKER)
    try:
        os.makedirs(folder, exist_ok=True)
        with open(path, "w") as planted:
            planted.write("print('planted by a submission')\\n")
        seen[folder] = "written"
    except OSError as error:
        seen[folder] = error.strerror
"""


def planting(folders: list, marker: str) -> str:
    return reporting("PLANTED", f"FOLDERS = {folders!r}\nMARKER = {marker!r}\n{PLANT}")


def test_a_submission_cannot_plant_files_in_the_kit_the_environment_the_sources_or_the_reports(tmp_path):
    require_sandbox()
    import s09_jsonl_transcript

    reports = tmp_path / "reports"
    reports.mkdir()
    targets = [str(Path(s09_jsonl_transcript.__file__).parent), str(Path(s09_jsonl_transcript.__file__).parent
               / "grading"), sys.prefix, next(path for path in sys.path if path.endswith("site-packages")),
               str(INSTRUCTOR), str(reports), str(Path.home()), "/etc", "/usr/local/bin"]
    marker = f"planted_{uuid.uuid4().hex}.py"
    path = submission(tmp_path, "planter", planting(targets, marker))
    report = grade_submission(path, SOURCES, options=SANDBOXED)
    attempts = reported_json(report, "ex01-turn-of-four", "PLANTED")
    assert set(attempts) == set(targets)
    for folder in targets:
        assert not (Path(folder) / marker).exists(), f"the submission planted a file in {folder}"
    # The kit, the environment and the system are there to read, and read-only:
    assert attempts[str(Path(s09_jsonl_transcript.__file__).parent)] == "Read-only file system", attempts
    assert attempts[sys.prefix] == "Read-only file system", attempts


def test_the_planting_submission_does_plant_when_nothing_stops_it(tmp_path):
    control = tmp_path / "control"  # a harmless target: unsandboxed, the same code writes where it is told
    marker = f"planted_{uuid.uuid4().hex}.py"
    path = submission(tmp_path, "planter", planting([str(control)], marker))
    report = grade_submission(path, SOURCES, options=UNSANDBOXED)
    assert reported_json(report, "ex01-turn-of-four", "PLANTED") == {str(control): "written"}
    assert (control / marker).exists()


# --------------------------------------------------------------------------- a daemon


DAEMON = """
import glob, json, os, sys, time
reports, token = sys.argv[1], sys.argv[2]
if os.fork():
    os._exit(0)
os.setsid()
if os.fork():
    os._exit(0)
deadline = time.monotonic() + 90
while not glob.glob(os.path.join(reports, "**", "*.json"), recursive=True) and time.monotonic() < deadline:
    time.sleep(0.2)  # wait for the grader to write its report, then wait for it to exit
time.sleep(2)
for path in glob.glob(os.path.join(reports, "**", "*.json"), recursive=True):
    with open(path) as file:
        report = json.load(file)
    report["score"] = report["max_score"]
    for check in report["checks"]:
        check["score"] = check["max_score"]
    with open(path, "w") as file:
        json.dump(report, file)
"""


def daemon_starter(reports: Path, token: str) -> str:
    return (f"import subprocess, sys\nsubprocess.run([sys.executable, '-c', {DAEMON!r}, {str(reports)!r}, {token!r}],"
            " stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n")


def grade_with_daemon(tmp_path: Path, sandbox_mode: str) -> tuple:
    """Grade a daemon-starting submission through the command line; return (report path, its bytes, token)."""
    token = f"s09-daemon-{uuid.uuid4().hex}"
    reports = tmp_path / "reports"
    path = submission(tmp_path, "daemon", daemon_starter(reports, token))
    done = subprocess.run([sys.executable, "-m", "s09_jsonl_transcript.grading", "grade", str(path), "--reports",
                           str(reports), "--sandbox", sandbox_mode], capture_output=True, text=True, timeout=300,
                          cwd=ROOT)
    assert done.returncode == 0, done.stderr
    written = reports / "ex01_daemon.json"
    return written, written.read_bytes(), token


def test_a_double_forked_daemon_is_gone_when_grading_returns_and_changes_no_report(tmp_path):
    require_sandbox()
    written, before, token = grade_with_daemon(tmp_path, sandbox.REQUIRED)
    assert processes_mentioning(token) == [], "the daemon outlived the grading"
    if os.geteuid() == 0:
        assert sandbox_processes() == []
    time.sleep(4)  # longer than the daemon waits after the report appears
    assert written.read_bytes() == before
    assert json.loads(before)["score"] == 0


def test_unsandboxed_the_same_daemon_survives_and_rewrites_its_report(tmp_path):
    written, before, token = grade_with_daemon(tmp_path, sandbox.OFF)
    try:
        assert processes_mentioning(token), "unsandboxed, the double-forked daemon escapes the process-tree kill"
        deadline = time.monotonic() + 90  # the daemon needs about 2.2 s; a loaded machine may need far more
        while written.read_bytes() == before and time.monotonic() < deadline:
            time.sleep(0.5)
        assert json.loads(written.read_bytes())["score"] == FULL_MARKS, "the daemon rewrote the report to full marks"
    finally:
        for process in processes_mentioning(token):
            process.kill()


# --------------------------------------------------------------------------- the network


def connecting(port: int) -> str:
    return reporting("NETWORK", f"""
import signal
import socket
try:
    with socket.create_connection(("127.0.0.1", {port}), timeout=5) as connection:
        connection.sendall(b"grades, please")
    seen["loopback"] = "connected"
except OSError as error:
    seen["loopback"] = error.strerror or str(error)
try:
    socket.getaddrinfo("pypi.org", 443)
    seen["dns"] = "resolved"
except OSError as error:
    seen["dns"] = str(error)
try:
    socket.create_connection(("1.1.1.1", 53), timeout=5).close()
    seen["internet"] = "connected"
except OSError as error:
    seen["internet"] = error.strerror or str(error)
""")


class _Listener:
    """A TCP server on the host's loopback that records whoever connects."""

    def __init__(self):
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(0.5)
        self.port = self.server.getsockname()[1]
        self.connections = []
        self.stopping = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stopping:
            try:
                connection, _ = self.server.accept()
            except OSError:
                continue
            self.connections.append(connection.recv(100))
            connection.close()

    def close(self):
        self.stopping = True
        self.thread.join()
        self.server.close()


def test_a_submission_cannot_open_a_connection(tmp_path):
    require_sandbox()
    listener = _Listener()
    try:
        report = grade_submission(submission(tmp_path, "network", connecting(listener.port)), SOURCES,
                                  options=SANDBOXED)
    finally:
        listener.close()
    seen = reported_json(report, "ex01-turn-of-four", "NETWORK")
    assert seen["loopback"] == "Connection refused", seen  # its loopback is its own, and nothing listens there
    assert seen["internet"] == "Network is unreachable", seen
    assert seen["dns"] != "resolved", seen
    assert listener.connections == []


def test_unsandboxed_the_same_submission_reaches_the_grader_machine(tmp_path):
    listener = _Listener()
    try:
        report = grade_submission(submission(tmp_path, "network", connecting(listener.port)), SOURCES,
                                  options=UNSANDBOXED)
    finally:
        listener.close()
    assert reported_json(report, "ex01-turn-of-four", "NETWORK")["loopback"] == "connected"
    assert listener.connections == [b"grades, please"]


# --------------------------------------------------------------------------- memory and output bombs

MEMORY_BOMB = """
def last_turn_length(events):
    hoard = []
    while True:
        hoard.append(bytearray(16 << 20))
"""
OUTPUT_BOMB = 'print("x" * 50_000_000)\n'
PRINT_LOOP = 'while True:\n    print("y" * 1000)\n'
MEASURE = """
import json, sys
from s09_jsonl_transcript.grading.cli import main
status = main(sys.argv[1:])
# VmHWM, not ru_maxrss: a process started by vfork and exec keeps its parent's peak in ru_maxrss, so it would
# report the peak of the pytest that started it (about 200 MiB late in the slow tier), not the grader's own.
with open("/proc/self/status") as own:
    peak = next(int(line.split()[1]) for line in own if line.startswith("VmHWM"))
print(json.dumps({"status": status, "grader": peak}))
"""
# What the README states: the grader's own process stays under this; each sandboxed process under its limit.
GRADER_BOUND_KIB = 200 * 1024


class _PeakSampler:
    """Samples the peak resident memory (VmHWM) of every process below this one, by command line."""

    def __init__(self):
        import psutil

        self.me, self.peaks, self.stopping = psutil.Process(), {}, False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stopping:
            for process in self.me.children(recursive=True):
                try:
                    with open(f"/proc/{process.pid}/status") as status:
                        peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM"))
                    name = " ".join(process.cmdline())
                except (OSError, StopIteration, Exception):  # noqa: BLE001 - processes come and go
                    continue
                self.peaks[name] = max(self.peaks.get(name, 0), peak)
            time.sleep(0.05)

    def stop(self) -> dict:
        self.stopping = True
        self.thread.join()
        return self.peaks


def measured_grading(path: Path, reports: Path, *options: str) -> tuple:
    """Grade path in a fresh grader process; return (the report, the grader's peak KiB, every peak by command)."""
    sampler = _PeakSampler()
    done = subprocess.run([sys.executable, "-c", MEASURE, "grade", str(path), "--reports", str(reports),
                           "--sandbox", "required", *options], capture_output=True, text=True, timeout=300, cwd=ROOT)
    peaks = sampler.stop()
    assert done.returncode == 0, done.stderr
    measured = json.loads(done.stdout.strip().splitlines()[-1])
    report = json.loads(next(reports.glob("*.json")).read_text(encoding="utf-8"))
    return report, measured["grader"], peaks


def pytest_peak(peaks: dict) -> int:
    return max(peak for name, peak in peaks.items() if " -m pytest " in f" {name} " and "--s09-report-fd" in name)


def kernel_peak(peaks: dict) -> int:
    return max(peak for name, peak in peaks.items() if "ipykernel_launcher" in name)


def test_a_memory_bomb_scores_zero_with_its_reason_and_stays_under_the_limit(tmp_path):
    require_sandbox()
    report, grader, peaks = measured_grading(submission(tmp_path, "memory", MEMORY_BOMB), tmp_path / "reports")
    assert report["score"] == 0 and report["status"] == "graded"
    assert "MemoryError" in report["reason"] and "out of memory" in report["reason"], report["reason"]
    limit = sandbox.Limits().memory_bytes >> 10
    assert kernel_peak(peaks) <= limit
    assert kernel_peak(peaks) > limit // 2, "the bomb did grow until the limit stopped it"
    assert grader < GRADER_BOUND_KIB


@pytest.mark.parametrize("bomb, feedback", [
    # Printing is cut, never an error: the cell goes on, and defines no answer (the notebook's own mistake).
    (OUTPUT_BOMB, "failed · 未通过: NameError: name 'last_turn_length' is not defined"),
    # A loop that never ends (it prints, which changes nothing) costs the call's time limit, and the calls after it.
    (PRINT_LOOP, "not run · 未运行: not called: an earlier call ran longer than 4 s"),
], ids=["one-50MB-print", "print-loop"])
def test_an_output_bomb_costs_the_submission_its_own_mistakes_only_and_pytest_stays_small(tmp_path, bomb, feedback):
    require_sandbox()
    report, grader, peaks = measured_grading(submission(tmp_path, "output", bomb), tmp_path / "reports",
                                             "--cell-timeout", "4")
    assert report["score"] == 0 and report["status"] == "graded" and report["reason"] is None, report["reason"]
    # the checks of the answer cell that printed (the other is the stub)
    for check in ("ex01-turn-of-four", "ex01-stops-at-user"):
        assert feedback_of(report, check).startswith(feedback), report["checks"]
    assert pytest_peak(peaks) < 150 * 1024, "pytest held the flood (it held ~360 MB for 50 MB of output before)"
    assert grader < GRADER_BOUND_KIB


def require_memory_groups() -> None:
    require_sandbox()
    problem = sandbox.memory_cgroup_problem()
    if problem is not None:
        pytest.skip(problem[0])


def test_a_grading_whose_memory_group_cannot_be_made_is_not_graded(tmp_path, monkeypatch):
    """Graded without its group, a notebook could hold memory past the limit and score for it."""
    require_memory_groups()

    def refuse(name, limit):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(sandbox, "_make_group", refuse)
    report = grade_submission(write_notebook(tmp_path / "ex01_reference.ipynb", with_answers("ex01", {})), SOURCES,
                              options=SANDBOXED)
    assert report["status"] == "error" and report["score"] == 0, report
    assert "could not make the grading's memory group (Permission denied): not graded" in report["reason"]
    assert "无法创建本次评分的内存组（Permission denied）：未评分" in report["reason"]


def join(group: sandbox.MemoryGroup) -> subprocess.Popen:
    """A process that sits in the group until it is killed; returns once the group lists it."""
    sleeper = subprocess.Popen(["/bin/sh", "-c", 'echo $$ > "$0" && exec sleep 600', group.procs])
    while str(sleeper.pid) not in (group.path / "cgroup.procs").read_text().split():
        assert sleeper.poll() is None, "the process could not join the group"
        time.sleep(0.01)
    return sleeper


def test_a_memory_group_whose_process_outlives_its_grading_is_never_reused_and_goes_later():
    require_memory_groups()
    limits = sandbox.Limits()
    with sandbox.memory_group(0, limits) as first:
        sleeper = join(first)
    try:
        assert first.path.exists(), "a group with a process in it cannot be removed"
        with sandbox.memory_group(0, limits) as second:  # the same slot: before, the same name, and no group
            assert second.path != first.path and second.path.exists()
            assert (second.path / "memory.limit_in_bytes").read_text().strip() == str(limits.total_memory)
    finally:
        sleeper.kill()
        sleeper.wait()
    with sandbox.memory_group(0, limits) as third:
        assert not first.path.exists(), "the next grading removes the group its process left behind"
    assert not third.path.exists()


# --------------------------------------------------------------------------- a stopped kernel


def test_a_kernel_that_stops_itself_is_reported_as_stopped_not_dead(tmp_path):
    code = "import os, signal\n\n\ndef last_turn_length(events):\n    os.kill(os.getpid(), signal.SIGSTOP)\n"
    report = grade_submission(submission(tmp_path, "sigstop", code), SOURCES,
                              options=GradingOptions(cell_timeout=60, total_timeout=120))
    assert report["score"] == 0 and report["seconds"] < 60, "a stopped kernel is noticed at once, not at the timeout"
    stopped = ("the kernel was stopped (SIGSTOP) while running a cell, so it was ended"
               " · 内核在运行单元时被暂停（SIGSTOP），因此被终止")
    assert report["reason"] == stopped
    assert feedback_of(report, "ex01-turn-of-four") == f"stopped · 已终止: {stopped}"
    assert all(feedback_of(report, check.id) == f"not run · 未运行: {stopped}"
               for check in SOURCES["ex01"].checks[1:])


# --------------------------------------------------------------------------- the probe's pipe


FORGE_THROUGH_PROC = """
import json, os, signal
parent = os.getppid()
lines = "".join(json.dumps({"kind": "cell", "cell": cell, "outcome": "passed", "feedback": "passed"}) + "\\n"
                for cell in range(40))
for name in os.listdir(f"/proc/{parent}/fd"):
    try:
        descriptor = os.open(f"/proc/{parent}/fd/{name}", os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        continue
    try:
        os.write(descriptor, lines.encode())
    except OSError:
        pass
    os.close(descriptor)
os.kill(parent, signal.SIGKILL)  # so that no genuine report follows the forged ones
"""


def test_a_kernel_cannot_forge_cell_reports_through_proc(tmp_path):
    require_sandbox()
    report = grade_submission(submission(tmp_path, "forger", FORGE_THROUGH_PROC), SOURCES, options=SANDBOXED)
    assert report["score"] == 0, [(check["name"], check["feedback"]) for check in report["checks"]]


@pytest.mark.skipif(os.name == "posix" and os.geteuid() != 0, reason="as an ordinary user, /proc is closed anyway")
def test_unsandboxed_as_root_the_same_forger_ends_the_grader_itself(tmp_path):
    """Why a root grader must sandbox: unsandboxed, the student's kernel is the grader's own child, and
    root reaches any process's descriptors: the forger writes into the grader's and kills it. No
    report is written, so nothing forged is believed; but the class run is gone (docs/grading.md)."""
    notebook = submission(tmp_path, "forger", FORGE_THROUGH_PROC)
    scratch = tmp_path / "scratch"  # the grading's temporary folders, so that what is left can be found
    scratch.mkdir()
    try:
        done = subprocess.run([sys.executable, "-m", "s09_jsonl_transcript.grading", "grade", str(notebook),
                               "--reports", str(tmp_path / "reports"), "--sandbox", "off"], capture_output=True,
                              timeout=300, cwd=ROOT, env={**os.environ, "TMPDIR": str(scratch)})
    finally:
        orphans = processes_mentioning(str(scratch))  # the trusted pytest and the student's kernel
        for orphan in orphans:
            with contextlib.suppress(psutil.Error):
                orphans += orphan.children(recursive=True)
        for orphan in orphans:
            with contextlib.suppress(psutil.Error):
                orphan.kill()
        psutil.wait_procs(orphans, timeout=10)
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]
    assert not list((tmp_path / "reports").glob("**/*.json"))


# --------------------------------------------------------------------------- without bubblewrap


def run_without_bubblewrap(tmp_path: Path, *options: str) -> subprocess.CompletedProcess:
    """The command line with a PATH where bwrap, prlimit and setpriv are not found (as on macOS)."""
    notebook = write_notebook(tmp_path / "ex01_last_turn_replay.ipynb", json.loads(SOURCES["ex01"].path.read_text()))
    environment = {**os.environ, "PATH": str(tmp_path / "empty")}
    return subprocess.run([sys.executable, "-m", "s09_jsonl_transcript.grading", "grade", str(notebook), "--reports",
                           str(tmp_path / "reports"), *options], capture_output=True, text=True, timeout=300,
                          cwd=ROOT, env=environment)


def test_without_bubblewrap_grading_still_works_and_says_it_ran_unsandboxed(tmp_path):
    done = run_without_bubblewrap(tmp_path)
    assert done.returncode == 0, done.stderr
    assert "warning · 警告: unsandboxed · 未使用沙箱: not found: bwrap (Debian package bubblewrap)" in done.stderr
    assert "找不到 bwrap（Debian 软件包 bubblewrap）" in done.stderr
    report = json.loads((tmp_path / "reports" / "ex01_last_turn_replay.json").read_text(encoding="utf-8"))
    assert report["score"] == report["max_score"] == FULL_MARKS
    assert report["sandbox"].startswith("unsandboxed · 未使用沙箱: not found: bwrap")
    assert "unsandboxed · 未使用沙箱: not found: bwrap" in done.stdout  # the summary says it too


def test_sandbox_required_refuses_to_grade_without_bubblewrap(tmp_path):
    done = run_without_bubblewrap(tmp_path, "--sandbox", "required")
    assert done.returncode == 2
    assert done.stderr.startswith("error · 错误: --sandbox required, but not found: bwrap"), done.stderr
    assert not (tmp_path / "reports").exists()


LIMITS = """
import os, resource, socket
seen.update(uid=os.getuid(), memory=resource.getrlimit(resource.RLIMIT_AS)[0],
            file=resource.getrlimit(resource.RLIMIT_FSIZE)[0], core=resource.getrlimit(resource.RLIMIT_CORE)[0],
            capabilities=[line.split()[1] for line in open("/proc/self/status") if line.startswith("CapEff")][0],
            hostname=socket.gethostname(), home=os.environ.get("HOME"), variables=sorted(os.environ),
            root=sorted(os.listdir("/")), tmp=os.statvfs("/tmp").f_blocks * os.statvfs("/tmp").f_frsize)
"""


def test_a_sandboxed_kernel_runs_under_the_stated_limits_as_a_user_of_its_own(tmp_path):
    require_sandbox()
    report = grade_submission(submission(tmp_path, "limits", reporting("LIMITS", LIMITS)), SOURCES, options=SANDBOXED)
    assert report["sandbox"] == ("sandboxed with bubblewrap · 在 bubblewrap 沙箱中运行: " + sandbox.Limits().describe()
                                 + "; " + sandbox.memory_note(sandbox.Limits()) + "; "
                                 + sandbox.quota_note(sandbox.Limits()) + "; " + sandbox.freezer_note())
    if sandbox.memory_cgroup_problem() is None:
        assert ("1280 MiB of memory for the student's kernel and what it starts, 1280 MiB for the checks' side"
                in report["sandbox"])
    if sandbox.quota_problem() is None:
        assert "the channel's folder is a tmpfs of 256 MiB" in report["sandbox"]
    assert sandbox.Limits().describe().startswith("1024 MiB of address space per process")
    assert "每个进程 1024 MiB 地址空间" in sandbox.Limits().describe()
    seen = reported_json(report, "ex01-turn-of-four", "LIMITS")
    limits = sandbox.Limits()
    assert (seen["memory"], seen["file"], seen["core"]) == (limits.memory_bytes, limits.file_bytes, 0)
    assert seen["tmp"] == limits.tmp_bytes
    assert seen["capabilities"] == "0000000000000000"
    assert seen["hostname"] == "grading" and seen["home"] == sandbox.SANDBOX_HOME
    bound = {Path(path).parts[1] for path in sandbox.read_only_paths()}
    links = {link.strip("/") for link in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
             if os.path.lexists(link)}
    assert set(seen["root"]) == {"usr", "etc", "proc", "dev", "tmp"} | links | bound, seen["root"]
    assert not any(name.startswith(("CI", "GITHUB", "AWS")) for name in seen["variables"]), seen["variables"]
    if os.geteuid() == 0:
        assert sandbox.is_sandbox_uid(seen["uid"]), seen["uid"]


def test_a_kit_installed_under_tmp_is_still_seen_inside_the_sandbox(monkeypatch):
    """The sandbox mounts a private /tmp: host folders under /tmp (a clone in /tmp/ci) are bound after it."""
    require_sandbox()
    host = Path(tempfile.mkdtemp(prefix="s09-kit-under-tmp-", dir="/tmp"))
    try:
        host.chmod(0o755)
        (host / "marker.txt").write_text("the kit is here\n", encoding="utf-8")
        (host / "marker.txt").chmod(0o644)
        real_paths = sandbox.read_only_paths()
        monkeypatch.setattr(sandbox, "read_only_paths", lambda: [*real_paths, str(host)])
        inner = [sys.executable, "-c", f"print(open({str(host / 'marker.txt')!r}).read(), end='')"]
        command = sandbox.build_command(inner, scratch_files={}, slot=0, limits=sandbox.Limits(),
                                        environment={"PATH": "/usr/bin:/bin"})
        try:
            done = subprocess.run(command.argv, pass_fds=command.pass_fds, capture_output=True, text=True,
                                  timeout=60, **command.popen_options)
        finally:
            command.close()
        assert done.returncode == 0, done.stderr
        assert done.stdout == "the kit is here\n"
    finally:
        shutil.rmtree(host)
