"""A pytest plugin loaded into the grader's nbval run (`-p s09_jsonl_transcript.grading.probe`).

It reports each cell's outcome to the grader as one JSON line on a pipe whose descriptor the
grader passes with `--s09-report-fd`; the kernel never inherits that descriptor, so student code
cannot write results there. It also:

- deletes the notebook file once nbval has read it, so the folder the kernel runs in holds neither
  the expected outputs nor anything else;
- fails a cell at once when the kernel dies, where nbval would wait for the whole cell timeout;
- fails a cell whose execution the kernel reported as an error even if no error was displayed
  (student code can silence the traceback display);
- tells the grader the kernel's process id, so the grader can kill it whatever happens.
"""

from __future__ import annotations

import json
import os
import re
import time
from queue import Empty

import pytest

_POLL_SECONDS = 0.2
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_FEEDBACK_LIMIT = 2000
HIDDEN_ERROR = "the cell raised an error that was kept from its output (was the error display changed?)"


class KernelDiedError(RuntimeError):
    """The kernel process ended while a cell was running."""


def pytest_addoption(parser):
    parser.addoption("--s09-report-fd", type=int, default=None,
                     help="file descriptor on which to report cell outcomes as JSON lines")


def pytest_configure(config):
    fd = config.getoption("--s09-report-fd")
    if fd is None:
        return
    os.set_inheritable(fd, False)  # the kernel, started later, must not get the grader's pipe
    config._s09_report = os.fdopen(fd, "w", encoding="utf-8", buffering=1)
    _watch_kernel_replies()


def _send(config, message: dict) -> None:
    report = getattr(config, "_s09_report", None)
    if report is not None:
        report.write(json.dumps(message) + "\n")


def _watch_kernel_replies() -> None:
    """Wrap nbval's wait for a cell's reply: notice a dead kernel, and keep the reply's status."""
    from nbval.kernel import RunningKernel

    def await_reply(self, msg_id, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                message = self.get_message(stream="shell", timeout=_POLL_SECONDS)
            except Empty:
                if not self.is_alive():
                    self.stop()  # nbval then reports "Kernel dead on test start" for later cells
                    raise KernelDiedError("the kernel died while running this cell") from None
                if deadline is not None and time.monotonic() >= deadline:
                    raise
                continue
            if message["parent_header"].get("msg_id") == msg_id:
                self.s09_reply_status = message["content"].get("status")
                if self.s09_reply_status == "aborted":
                    raise RuntimeError("Kernel aborted execution request")
                return

    RunningKernel.await_reply = await_reply


def pytest_collection_finish(session):
    """nbval has read the notebooks: remove them before any kernel starts."""
    for path in {item.path for item in session.items}:
        path.unlink(missing_ok=True)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    yield  # nbval starts the kernel while setting up the notebook's first cell
    pid = _kernel_pid(item)
    if pid is not None and not getattr(item.config, "_s09_kernel_reported", False):
        item.config._s09_kernel_reported = True
        _send(item.config, {"kind": "kernel", "pid": pid})


def _kernel_pid(item):
    """The process id of the kernel nbval runs this cell in, or None."""
    try:
        return item.parent.kernel.km.provisioner.process.pid
    except AttributeError:  # not an nbval cell, or no kernel (yet, or any more)
        return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    cell = getattr(item, "cell_num", None)
    if cell is None or report.when == "teardown" or (report.when == "setup" and report.passed):
        return
    result, feedback = _judge(item, call, report)
    _send(item.config, {"kind": "cell", "cell": cell, "outcome": result, "feedback": feedback})


def _judge(item, call, report) -> tuple:
    """('passed' | 'failed', feedback) for one cell's setup or call phase."""
    status = _reply_status(item)
    if report.passed:
        if status not in (None, "ok"):
            return "failed", HIDDEN_ERROR
        return "passed", "passed"
    feedback = _describe_failure(item, call.excinfo.value if call.excinfo else None, status)
    if hasattr(report, "wasxfail"):  # nbval expects every cell after a timeout to fail
        feedback += " (after an earlier cell timed out)"
    return "failed", feedback


def _reply_status(item):
    """The status of the kernel's last execute reply ('ok', 'error', ...), or None."""
    return getattr(getattr(item.parent, "kernel", None), "s09_reply_status", None)


def _describe_failure(item, error, status) -> str:
    text = _ANSI.sub("", str(error or "")).strip()
    if isinstance(error, KernelDiedError):
        return "the kernel died while running this cell (os._exit, exit(), a crash or no memory left)"
    if "Kernel dead on test start" in text:
        return "not run: the kernel had died in an earlier cell"
    if text.startswith("Timeout of"):
        return "timed out: " + text.split("\n", 1)[0]
    outputs = getattr(item, "test_outputs", None) or []
    errors = [out for out in outputs if out.get("output_type") == "error"]
    if errors:
        return _limited(f"{errors[-1].get('ename')}: {_ANSI.sub('', str(errors[-1].get('evalue')))}")
    if status == "error":
        return HIDDEN_ERROR
    if "Cell outputs differ" in text:
        printed = "".join(out.get("text", "") for out in outputs if out.get("output_type") == "stream")
        return _limited(f"printed something other than its pass line: {printed!r}")
    return _limited(text.split("\n", 1)[0] or type(error).__name__)


def _limited(text: str) -> str:
    return text if len(text) <= _FEEDBACK_LIMIT else text[: _FEEDBACK_LIMIT - 3] + "..."
