"""Machinery for the browser test: a throwaway JupyterLab serving a copy of the repository, and Chromium.

Nothing here downloads a browser: Chromium is the one on PATH (Debian package `chromium`),
driven by the Python `playwright` package through `executable_path`.
"""

from __future__ import annotations

import http.cookiejar
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

# The repository is copied without these, so the served tree stays small and the checkout untouched.
NOT_COPIED = (".git", ".venv", "artifacts", "__pycache__", ".pytest_cache", ".hypothesis",
              ".ipynb_checkpoints", "*.egg-info", "build")

# JupyterLab user settings for the test run: no news or update toast over the screenshots, no
# autosave (the test must never write a notebook), every cell attached to the page so the checks
# see all outputs, not only the ones scrolled into view, and no blank space after the last cell.
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings":
        {"fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings":
        {"windowingMode": "none", "scrollPastEnd": False},
}

CHROMIUM_ARGS = ["--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--no-first-run", "--disable-sync"]

SERVER_START_SECONDS = 300  # bounds a hang only: a loaded machine starts JupyterLab well within it


def find_chromium() -> str | None:
    """The path of Debian's Chromium on PATH, or None when it is not installed."""
    return shutil.which("chromium")


def copy_repository(source: Path, target: Path) -> Path:
    """Copy the working tree at source to target (without git, venv, caches or artifacts)."""
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(*NOT_COPIED))
    return target


def write_lab_settings(settings_dir: Path) -> None:
    """Write LAB_SETTINGS as JupyterLab user settings files under settings_dir."""
    for relative_path, values in LAB_SETTINGS.items():
        path = settings_dir / relative_path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values), encoding="utf-8")


# Left out of tree snapshots: bytecode the kernel compiles, and the checkpoint JupyterLab copies a
# notebook to when it opens one that has none (a copy of the file, not a save of it).
NOT_SNAPSHOTTED = frozenset({"__pycache__", ".ipynb_checkpoints"})


def tree_snapshot(root: Path) -> dict[str, bytes]:
    """Every file under root (outside NOT_SNAPSHOTTED), by relative path, with its content."""
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and not NOT_SNAPSHOTTED & set(path.relative_to(root).parts)
    }


def tree_changes(before: dict[str, bytes], after: dict[str, bytes]) -> list[str]:
    """Describe the files added, removed or changed between two tree snapshots."""
    changes = [f"added {name}" for name in sorted(after.keys() - before.keys())]
    changes += [f"removed {name}" for name in sorted(before.keys() - after.keys())]
    changes += [f"changed {name}" for name in sorted(before.keys() & after.keys())
                if before[name] != after[name]]
    return changes


@dataclass
class LabServer:
    """A running JupyterLab: where it serves from and how to reach it."""

    url: str  # ends with "/"
    root: Path
    process: subprocess.Popen
    log_path: Path

    def notebook_url(self, relative_path: str) -> str:
        """The URL that opens one notebook in a fresh (reset) JupyterLab workspace."""
        return f"{self.url}lab/tree/{urllib.parse.quote(relative_path)}?reset"

    def shutdown_kernels(self) -> None:
        """Shut down every running kernel, so the next notebook gets the CPU to itself."""
        # Without a token the server still wants a DELETE to echo its XSRF cookie in a header;
        # the lab page sets that cookie.
        cookies = http.cookiejar.CookieJar()
        client = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(cookies))
        client.open(f"{self.url}lab", timeout=120).close()
        with client.open(f"{self.url}api/kernels", timeout=120) as response:
            kernels = json.load(response)
        xsrf = {cookie.name: cookie.value for cookie in cookies}.get("_xsrf", "")
        for kernel in kernels:
            request = urllib.request.Request(f"{self.url}api/kernels/{kernel['id']}", method="DELETE",
                                             headers={"X-XSRFToken": xsrf})
            client.open(request, timeout=120).close()


def _lab_environment(state_dir: Path, root: Path) -> dict[str, str]:
    """The server's environment: private Jupyter folders, and the copied package first on sys.path."""
    env = dict(os.environ)
    env.pop("MPLBACKEND", None)  # a kernel picks the inline backend only when this is unset
    folders = {
        "JUPYTER_CONFIG_DIR": "config",
        "JUPYTER_DATA_DIR": "data",
        "JUPYTER_RUNTIME_DIR": "runtime",
        "JUPYTERLAB_SETTINGS_DIR": "lab-settings",
        "JUPYTERLAB_WORKSPACES_DIR": "lab-workspaces",
        "IPYTHONDIR": "ipython",
        "S09_AGENT_HOME": "agent-home",  # notebook 10 looks for ~/.claude and ~/.codex here: an empty folder
    }
    for variable, name in folders.items():
        (state_dir / name).mkdir(parents=True, exist_ok=True)
        env[variable] = str(state_dir / name)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
    return env


def _lab_command(root: Path) -> list[str]:
    command = [
        sys.executable, "-m", "jupyterlab", "--no-browser",
        "--ip=127.0.0.1", "--port=0", "--ServerApp.port_retries=0",  # port 0: the OS picks a free one
        "--IdentityProvider.token=", "--ServerApp.password=",  # no token: loopback only
        f"--ServerApp.root_dir={root}",
        "--ServerApp.terminals_enabled=False",
        "--LabApp.expose_app_in_browser=True",  # window.jupyterapp, for the page checks
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")
    return command


def _server_url(runtime_dir: Path, process: subprocess.Popen) -> str | None:
    """The URL in the server's jpserver-<pid>.json once that file is complete, else None."""
    try:
        return json.loads((runtime_dir / f"jpserver-{process.pid}.json").read_text(encoding="utf-8"))["url"]
    except (OSError, ValueError, KeyError):  # not written yet, or caught half-written
        return None


def _answers(url: str) -> bool:
    """Whether the server at url answers its status API."""
    try:
        with urllib.request.urlopen(f"{url}api/status", timeout=5) as response:
            return response.status == 200
    except OSError:
        return False


def _wait_until_serving(runtime_dir: Path, process: subprocess.Popen, log_path: Path) -> str:
    """Wait until the server has written its URL and answers there; return the URL (ending with /)."""
    deadline = time.monotonic() + SERVER_START_SECONDS
    while True:
        url = _server_url(runtime_dir, process)
        if url is not None:
            url = url.rstrip("/") + "/"
            if _answers(url):
                return url
        if process.poll() is not None or time.monotonic() > deadline:
            log_tail = log_path.read_text(encoding="utf-8", errors="replace")[-3000:]
            raise RuntimeError(f"JupyterLab did not start (exit code {process.poll()}); log tail:\n{log_tail}")
        time.sleep(0.2)


def _stop(process: subprocess.Popen) -> None:
    """Stop the server we started (SIGTERM: it shuts its kernels down), and kill it if it lingers."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=60)  # time for its kernels' polite shutdowns on a loaded machine
        except subprocess.TimeoutExpired:
            if hasattr(os, "killpg"):
                os.killpg(process.pid, signal.SIGKILL)  # its own process group: the server and its kernels
            else:  # pragma: no cover
                process.kill()
            process.wait(timeout=10)


@contextmanager
def running_jupyterlab(root: Path, state_dir: Path, log_path: Path):
    """Serve root with JupyterLab on 127.0.0.1 (free port, no token); stopped on exit, whatever happens."""
    env = _lab_environment(state_dir, root)
    write_lab_settings(Path(env["JUPYTERLAB_SETTINGS_DIR"]))
    with open(log_path, "wb") as log:
        process = subprocess.Popen(_lab_command(root), cwd=root, env=env, stdin=subprocess.DEVNULL,
                                   stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        url = _wait_until_serving(Path(env["JUPYTER_RUNTIME_DIR"]), process, log_path)
        yield LabServer(url=url, root=root, process=process, log_path=log_path)
    finally:
        _stop(process)


@contextmanager
def headless_chromium(executable: str, user_data_dir: Path):
    """A Playwright browser context on Debian's Chromium, headless, with a fresh profile; closed on exit."""
    from playwright.sync_api import sync_playwright

    args = list(CHROMIUM_ARGS)
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        args.append("--no-sandbox")  # Chromium refuses to run as root inside its sandbox
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(user_data_dir), executable_path=executable, headless=True, args=args,
            viewport={"width": 1280, "height": 900},
        )
        try:
            yield context
        finally:
            context.close()
