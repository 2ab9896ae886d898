"""A pytest plugin loaded into the grader's nbval run (`-p s09_jsonl_transcript.grading.probe`).

It reports each cell's outcome to the grader as one JSON line on a pipe whose descriptor the
grader passes with `--s09-report-fd`; the kernel never inherits that descriptor, and pytest makes
itself non-dumpable so that a kernel running as the same user cannot open it through /proc. It also:

- deletes the notebook file once nbval has read it, so the folder the kernel runs in holds neither
  the expected outputs nor anything else;
- fails a cell at once when the kernel dies or is stopped (SIGSTOP), where nbval would wait for the
  whole cell timeout;
- fails a cell whose execution the kernel reported as an error even if no error was displayed
  (student code can silence the traceback display);
- counts what the notebook prints and stops it past twice the output limit (`--s09-output-limit`):
  the trusted kernel prints only what the checks print, and a check may quote a value it got;
- after a visible check fails, asks the trusted kernel what the answers printed while it ran;
- with `--s09-guard`, asks the grader's guard (guard.py, loaded into the kernel before any answer
  code) for a signed verdict after each check cell, and fails the check, reporting tampering, when
  the verdict is missing, forged, about another cell, or names an interference;
- tells the grader the kernel's process id, so that an unsandboxed grader can kill it whatever happens;
- with `--s09-collect-outputs` (the grader's reference run), sends each check cell's outputs, which
  become the expected outputs of the students' runs;
- never puts text from the kernel in the feedback of a hidden check: the student's code produced
  that text while a hidden check ran, and it may quote the check.
"""

from __future__ import annotations

import ast
import hashlib
import hmac
import json
import os
import re
import resource
import secrets
import signal
import sys
import time
from pathlib import Path
from queue import Empty

import pytest

from .words import (
    FAILED,
    NOT_RUN,
    OUT_OF_MEMORY,
    PASSED,
    REFUSED,
    STOPPED,
    TAMPERING,
    TIMED_OUT,
    TOO_MUCH_OUTPUT,
    both,
    labelled,
)

# nbval imports nbformat, which imports jsonschema, which imports rfc3987_syntax if it can: that
# builds a parser for IRIs at import time, about 3 s of CPU in every grading run, for a format no
# notebook schema uses. jsonschema treats the module as optional; this process goes without it.
# (The grader loads this plugin before nbval for this reason.)
sys.modules.setdefault("rfc3987_syntax", None)

_POLL_SECONDS = 0.2
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_FEEDBACK_LIMIT = 2000
_HELLO_TIMEOUT = 30
HIDDEN_ERROR = both("the cell raised an error that was kept from its output (was the error display changed?)",
                    "这个单元抛出了错误，但错误没有出现在输出里（错误的显示方式被改过了吗？）")
GUARD_KEY_FILE = "s09_guard.json"  # in the kernel's IPython profile folder; the guard reads and deletes it
VERDICT = "s09_verdict"
CONNECTION_VARIABLE = "S09_STUDENT_CONNECTION"  # set (channel.py's name) when the answers run in a kernel of their own
# The channel's verdicts on a call, by the name of what it raises in the check cell (an answer's own exception of
# one of these names crosses renamed), and the label each lost point gets. Their messages are the grader's words,
# but for AnswerFailed's, which may quote what the answer raised (a hidden check shows none of it).
CHANNEL_LABELS = {"AnswerTimedOut": TIMED_OUT, "AnswerRefused": REFUSED, "AnswerNotCalled": NOT_RUN,
                  "AnswerFailed": FAILED}


KERNEL_STOPPED = both("the kernel was stopped (SIGSTOP) while running a cell, so it was ended",
                      "内核在运行单元时被暂停（SIGSTOP），因此被终止")


class KernelDiedError(RuntimeError):
    """The kernel process ended while a cell was running."""


class KernelStoppedError(RuntimeError):
    """The kernel was stopped (SIGSTOP, SIGTSTP) while a cell was running."""


class OutputLimitError(RuntimeError):
    """The notebook printed more than the output limit."""


def pytest_addoption(parser):
    parser.addoption("--s09-report-fd", type=int, default=None,
                     help="file descriptor on which to report cell outcomes as JSON lines")
    parser.addoption("--s09-output-limit", type=int, default=1 << 20,
                     help="bytes of output the notebook may produce in all")
    parser.addoption("--s09-guard", action="store_true", default=False,
                     help="load the grader's guard into the kernel and require its verdict on every check")
    parser.addoption("--s09-collect-outputs", action="store_true", default=False,
                     help="report each check cell's outputs and bytes read (the reference run)")


def pytest_configure(config):
    fd = config.getoption("--s09-report-fd")
    if fd is None:
        return
    _not_dumpable()
    os.set_inheritable(fd, False)  # the kernel, started later, must not get the grader's pipe
    config._s09_report = os.fdopen(fd, "w", encoding="utf-8", buffering=1)
    config._s09_output_limit = config.getoption("--s09-output-limit")
    config._s09_stopped = None  # why the notebook was stopped early, once it is
    config._s09_key = None
    config._s09_collect = config.getoption("--s09-collect-outputs")
    if config.getoption("--s09-guard"):
        config._s09_key = secrets.token_bytes(32)
        _write_guard_file(config)
    _watch_the_kernel(config)


def _not_dumpable() -> None:
    """Make this process non-dumpable: /proc/<pid>/fd and ptrace are then closed to same-user processes."""
    if sys.platform.startswith("linux"):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0


def _write_guard_file(config) -> None:
    folder = Path(os.environ["IPYTHONDIR"]) / "profile_default"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / GUARD_KEY_FILE
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with open(descriptor, "w", encoding="utf-8") as file:
        json.dump({"key": config._s09_key.hex(), "output_limit": config._s09_output_limit}, file)


def _send(config, message: dict) -> None:
    report = getattr(config, "_s09_report", None)
    if report is not None:
        report.write(json.dumps(message) + "\n")


def _stop(config, kernel, why: str) -> None:
    """Kill the kernel and remember why: the remaining cells are then reported as not run, for this reason."""
    if config._s09_stopped is None:
        config._s09_stopped = why
        _send(config, {"kind": "stopped", "why": why})
    pid = _pid_of(kernel)
    if pid is not None:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


# --------------------------------------------------------------------------- watching nbval's kernel


def _watch_the_kernel(config) -> None:
    """Wrap nbval's kernel: replies (dead or stopped kernel, reply status), output volume, check verdicts."""
    from nbval.kernel import RunningKernel

    original_get_message = RunningKernel.get_message
    original_execute = RunningKernel.execute_cell_input

    def await_reply(self, msg_id, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            _drain_output(self)  # nbval reads a cell's output only after its reply: count it as it comes
            try:
                message = self.get_message(stream="shell", timeout=_POLL_SECONDS)
            except Empty:
                if not self.is_alive():
                    self.stop()  # nbval then reports "Kernel dead on test start" for later cells
                    raise KernelDiedError("the kernel died while running this cell") from None
                if _is_stopped(self):
                    _stop(config, self, KERNEL_STOPPED)
                    raise KernelStoppedError(config._s09_stopped) from None
                if deadline is not None and time.monotonic() >= deadline:
                    raise
                continue
            if message["parent_header"].get("msg_id") == msg_id:
                self.s09_reply = message["content"]
                if message["content"].get("status") == "aborted":
                    raise RuntimeError("Kernel aborted execution request")
                return

    def count(self, message):
        self.s09_output = getattr(self, "s09_output", 0) + _output_size(message)
        # The guard stops prints past the limit inside the kernel; this catches what goes around it.
        if self.s09_output > 2 * config._s09_output_limit + 65536:
            limit = f"{config._s09_output_limit:,}"
            _stop(config, self, labelled(TOO_MUCH_OUTPUT, both(
                f"the checks printed more than {limit} characters (a check quotes the values it got), so the "
                "notebook was stopped",
                f"检查打印的内容超过了 {limit} 个字符（检查会引用它得到的值），因此笔记本被终止")))
            raise OutputLimitError(config._s09_stopped)
        return message

    def _drain_output(self):
        pending = self.__dict__.setdefault("s09_pending", [])
        while True:
            try:
                pending.append(count(self, original_get_message(self, "iopub", 0)))
            except Empty:
                return

    def get_message(self, stream, timeout=None):
        pending = self.__dict__.get("s09_pending")
        if stream == "iopub" and pending:
            return pending.pop(0)
        message = original_get_message(self, stream, timeout)
        return count(self, message) if stream == "iopub" else message

    def execute_cell_input(self, cell_input, allow_stdin=None):
        item = getattr(config, "_s09_item", None)
        self.s09_reply = None
        if config._s09_key is None or item is None or _role(item) != "check":
            return original_execute(self, cell_input, allow_stdin)
        item._s09_nonce = secrets.token_hex(16)
        return self.kc.execute(cell_input, store_history=False, allow_stdin=allow_stdin, stop_on_error=False,
                               user_expressions={VERDICT: _verdict_expression(item._s09_nonce)})

    RunningKernel.await_reply = await_reply
    RunningKernel.get_message = get_message
    RunningKernel.execute_cell_input = execute_cell_input


def _output_size(message: dict) -> int:
    content = message.get("content") or {}
    size = len(content.get("text") or "") + len(content.get("evalue") or "")
    size += sum(len(line) for line in content.get("traceback") or ())
    for value in (content.get("data") or {}).values():
        size += len(value) if isinstance(value, str) else len(json.dumps(value))
    return size


def _pid_of(kernel):
    try:
        return kernel.km.provisioner.process.pid
    except AttributeError:
        return None


def _is_stopped(kernel) -> bool:
    pid = _pid_of(kernel)
    if pid is None:
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            state = stat.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state in (b"T", b"t")


def _role(item) -> str | None:
    cell = getattr(item, "cell", None)
    role = (getattr(cell, "metadata", None) or {}).get("s09", {})
    return role.get("role") if isinstance(role, dict) else None


# --------------------------------------------------------------------------- the guard's verdicts


def _verdict_expression(nonce: str) -> str:
    return f"__import__('sys').modules[{__package__ + '.guard'!r}].verdict({nonce!r})"


def verdict_mac(key: bytes, nonce: str, cell: str, problems: list) -> str:
    """What the guard signs: this check's nonce, the hash of the cell it saw run, and what it found."""
    return hmac.new(key, json.dumps([nonce, cell, problems]).encode(), hashlib.sha256).hexdigest()


def _read_verdict(config, reply, nonce: str):
    """(problems, None) from a genuine verdict in an execute reply, else (None, why it is not one)."""
    expressions = (reply or {}).get("user_expressions") or {}
    answer = expressions.get(VERDICT)
    if not isinstance(answer, dict) or answer.get("status") != "ok":
        return None, both("the check's reply carries no verdict from the grader's guard",
                          "检查的回复里没有评分程序守卫的判定")
    try:
        verdict = json.loads(ast.literal_eval(answer["data"]["text/plain"]))
        cell, problems, mac = verdict["cell"], verdict["problems"], verdict["mac"]
        assert isinstance(problems, list) and isinstance(cell, str) and isinstance(mac, str)
    except Exception:  # anything malformed is a forgery
        return None, both("the guard's verdict on this check is malformed", "守卫对这个检查的判定格式不对")
    if verdict.get("nonce") != nonce or not hmac.compare_digest(mac, verdict_mac(config._s09_key, nonce, cell,
                                                                                problems)):
        return None, both("the guard's verdict on this check is forged", "守卫对这个检查的判定是伪造的")
    return (problems, cell), None


def _say_hello(config, kernel) -> None:
    """Before any cell runs: the guard must answer, signed, or the grader itself has a problem."""
    nonce = secrets.token_hex(16)
    kernel.s09_reply = None
    try:
        msg_id = kernel.kc.execute("", silent=True, store_history=False,
                                   user_expressions={VERDICT: _verdict_expression(nonce)})
        kernel.await_reply(msg_id, timeout=_HELLO_TIMEOUT)
    except Exception as error:  # noqa: BLE001 - any failure here is the grader's
        _send(config, {"kind": "guard", "status": f"no answer from the guard ({error!r})"})
        return
    found, why = _read_verdict(config, kernel.s09_reply, nonce)
    if found is None or found[0]:
        _send(config, {"kind": "guard", "status": why or f"the guard reported {found[0]} before any cell ran"})
    else:
        _send(config, {"kind": "guard", "status": "ready"})


# --------------------------------------------------------------------------- pytest hooks


def pytest_collection_finish(session):
    """nbval has read the notebooks: remove them before any kernel starts."""
    for path in {item.path for item in session.items}:
        path.unlink(missing_ok=True)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    yield  # nbval starts the kernel while setting up the notebook's first cell
    kernel = getattr(item.parent, "kernel", None)
    if kernel is None or getattr(item.config, "_s09_kernel_reported", False):
        return
    item.config._s09_kernel_reported = True
    pid = _pid_of(kernel)
    if pid is not None:
        _send(item.config, {"kind": "kernel", "pid": pid})
    if getattr(item.config, "_s09_key", None) is not None:
        _say_hello(item.config, kernel)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    item.config._s09_item = item
    try:
        yield
    finally:
        item.config._s09_item = None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    cell = getattr(item, "cell_num", None)
    if cell is None or report.when == "teardown" or (report.when == "setup" and report.passed):
        return
    try:
        result, feedback = _judge(item, call, report)
    except Exception as error:  # noqa: BLE001 - a fault of the probe costs this cell, never the run
        result, feedback = "failed", both(f"the grader failed on this cell ({type(error).__name__})",
                                          f"评分程序在这个单元上出错了（{type(error).__name__}）")
    message = {"kind": "cell", "cell": cell, "outcome": result, "feedback": feedback}
    if getattr(item.config, "_s09_collect", False) and _role(item) == "check" and report.when == "call":
        message["outputs"] = [dict(output) for output in getattr(item, "test_outputs", None) or []]
    elif result == "failed" and report.when == "call" and _role(item) == "check" and not _is_hidden(item):
        message["printed"] = _printed_by_the_answers(item)
        left_out = (message["printed"] or {}).get("left_out")
        if left_out:  # the grader's own words: why a file the check reads may be missing
            message["feedback"] = _limited(f"{feedback} ({labelled(LEFT_OUT, '; '.join(left_out))})")
    _send(item.config, message)


LEFT_OUT = both("copying back what the answers left in the exchange folder left out",
                "把答案留在交换文件夹里的东西复制回来时略去了")


_OUTPUT_EXPRESSION = (f"__import__({__package__ + '.channel'!r}, fromlist=['student'])"
                      ".student.cell_output()")


def _printed_by_the_answers(item):
    """What the answers printed in their own kernel while this check ran, as the trusted kernel recorded it, and
    why copying back their files left something out (exchange.Budget's words).

    Asked for after a visible check failed: the student reads it in the report. None when there is
    no second kernel or nothing could be asked.
    """
    kernel = getattr(item.parent, "kernel", None)
    if kernel is None or CONNECTION_VARIABLE not in os.environ or getattr(item.config, "_s09_stopped", None):
        return None
    try:
        kernel.s09_reply = None
        msg_id = kernel.kc.execute("", silent=True, store_history=False,
                                   user_expressions={"s09_output": _OUTPUT_EXPRESSION})
        kernel.await_reply(msg_id, timeout=10)
        answer = (kernel.s09_reply or {}).get("user_expressions", {}).get("s09_output", {})
        printed = json.loads(ast.literal_eval(answer["data"]["text/plain"]))
        return {"characters": int(printed["characters"]), "tail": str(printed["tail"])[-2000:],
                "left_out": [str(why)[:200] for why in printed.get("left_out", [])[:8]]}
    except Exception:  # noqa: BLE001 - the record is a help for the student, never a reason to fail
        return None


def _judge(item, call, report) -> tuple:
    """('passed' | 'failed', feedback) for one cell's setup or call phase."""
    reply = _last_reply(item)
    status = (reply or {}).get("status")
    if report.when == "call" and _role(item) == "check" and getattr(item.config, "_s09_key", None) is not None:
        interference = _check_verdict(item, reply, must_hold=report.passed and status in (None, "ok"))
        if interference:
            _send(item.config, {"kind": "tampering", "check": _check_name(item), **interference})
            return "failed", labelled(TAMPERING, interference["what"])
    found = _tampering_found(item) if report.when == "call" else None
    if found is not None:  # the channel's guard check (channel.TamperingDetected) stopped the calls
        _send(item.config, {"kind": "tampering", "check": _check_name(item), **found})
        return "failed", labelled(TAMPERING, STUDENT_GUARD_FOUND)
    stopped_kernel = report.when == "call" and "StudentKernelStopped" in _error_names(item)
    if stopped_kernel and getattr(item.config, "_s09_stopped", None) is None:
        _stop(item.config, item.parent.kernel, KERNEL_STOPPED)
        return "failed", labelled(STOPPED, KERNEL_STOPPED)
    if report.passed:
        if status not in (None, "ok"):
            return "failed", HIDDEN_ERROR
        return "passed", PASSED
    hidden = _is_hidden(item) and not getattr(item.config, "_s09_collect", False)
    feedback = _describe_failure(item, call.excinfo.value if call.excinfo else None, status, hidden)
    if hasattr(report, "wasxfail"):  # nbval expects every cell after a timeout to fail
        feedback += " (after an earlier cell timed out · 前面有单元超时)"
    return "failed", feedback


STUDENT_GUARD_FOUND = both("the guard in the student's kernel found its machinery changed",
                           "学生内核里的守卫发现内核的机制被改动过")


def _tampering_found(item) -> dict | None:
    """What the guard in the student's kernel reported, when a check cell ended on it (read_evidence), else None."""
    for output in getattr(item, "test_outputs", None) or []:
        if output.get("output_type") == "error" and output.get("ename") == "TamperingDetected":
            return read_evidence(_ANSI.sub("", str(output.get("evalue") or "")))
    return None


def read_evidence(text: str) -> dict:
    """{"what": the findings in the guard's words, "items": their watched items, "where": where they were seen}
    from channel.TamperingDetected's message (channel.tampering_evidence); plain text stays what it says."""
    try:
        evidence = json.loads(text)
        found = [pair for pair in evidence["found"] if isinstance(pair, list) and len(pair) == 2]
        where = {str(key): str(value) for key, value in evidence["where"].items() if value is not None}
    except (ValueError, KeyError, TypeError, AttributeError):
        return {"what": text[:_FEEDBACK_LIMIT], "items": [], "where": {}}
    return {"what": "; ".join(str(detail) for _, detail in found)[:_FEEDBACK_LIMIT],
            "items": [str(key) for key, _ in found], "where": where}


def _check_name(item) -> str | None:
    role = (getattr(getattr(item, "cell", None), "metadata", None) or {}).get("s09", {})
    name = role.get("name") if isinstance(role, dict) else None
    return name if isinstance(name, str) else None


def _is_hidden(item) -> bool:
    role = (getattr(getattr(item, "cell", None), "metadata", None) or {}).get("s09", {})
    return isinstance(role, dict) and role.get("hidden") is True


HIDDEN_DETAIL = both("a hidden check: the grader shows no details", "隐藏检查：评分程序不显示细节")
HIDDEN_FAILED = both("failed (a hidden check: the grader shows no details)", "未通过（隐藏检查：评分程序不显示细节）")


def _check_verdict(item, reply, must_hold: bool) -> dict | None:
    """What the guard's verdict on this check shows (as read_evidence gives it), or None when it shows nothing
    wrong (the one-kernel run, where the guard watches the kernel that runs the checks).

    A check that passed must carry a genuine verdict; on a check that failed, only a genuine
    verdict naming an interference counts.
    """
    found, why = _read_verdict(item.config, reply, getattr(item, "_s09_nonce", ""))
    if found is None:
        return {"what": why, "items": ["verdict"], "where": {}} if must_hold else None
    problems, cell = found
    if problems:
        pairs = [problem if isinstance(problem, list) and len(problem) == 2 else ["?", problem] for problem in problems]
        return {"what": "; ".join(str(detail) for _, detail in pairs)[:_FEEDBACK_LIMIT],
                "items": [str(key) for key, _ in pairs], "where": {}}
    if cell != hashlib.sha256(item.cell.source.encode()).hexdigest():
        return {"what": both("the code the kernel ran for this check is not the check's own",
                             "内核为这个检查运行的代码不是检查本身的代码"), "items": ["transformers"], "where": {}}
    return None


def _error_names(item) -> set:
    return {out.get("ename") for out in getattr(item, "test_outputs", None) or [] if out.get("output_type") == "error"}


def _last_reply(item):
    """The content of the kernel's last execute reply, or None."""
    return getattr(getattr(item.parent, "kernel", None), "s09_reply", None)


def _describe_failure(item, error, status, hidden: bool) -> str:
    """Why a cell failed, starting with its label (failed, timed out, refused, not run, ...).

    For a hidden check, only what the grader itself knows: never text that the kernel printed.
    """
    text = _ANSI.sub("", str(error or "")).strip()
    stopped = getattr(item.config, "_s09_stopped", None)
    if isinstance(error, KernelStoppedError):
        return labelled(STOPPED, text)
    if isinstance(error, OutputLimitError):
        return text
    if stopped:  # the kernel was ended on purpose in an earlier cell
        return labelled(NOT_RUN, stopped)
    if isinstance(error, KernelDiedError):
        return labelled(FAILED, both(
            "the kernel died while running this cell (os._exit, exit(), a crash or no memory left)",
            "内核在运行这个单元时退出了（os._exit、exit()、崩溃，或内存耗尽）"))
    if "Kernel dead on test start" in text:
        return labelled(NOT_RUN, both("the kernel had died in an earlier cell", "内核在前面的单元里就已退出"))
    if text.startswith("Timeout of"):
        return labelled(TIMED_OUT, HIDDEN_DETAIL if hidden else text.split("\n", 1)[0])  # nbval's own words
    outputs = getattr(item, "test_outputs", None) or []
    errors = [out for out in outputs if out.get("output_type") == "error"]
    if errors:
        name, value = errors[-1].get("ename"), _ANSI.sub("", str(errors[-1].get("evalue") or ""))
        if name in CHANNEL_LABELS and not (hidden and name == "AnswerFailed"):  # the grader's words about the call
            return _limited(labelled(CHANNEL_LABELS[name], value + (f" ({HIDDEN_DETAIL})" if hidden else "")))
        if name == "MemoryError":
            limit = resource.getrlimit(resource.RLIMIT_AS)[0]
            detail = (both(f"a process may use {limit >> 20} MiB here", f"这里每个进程最多可用 {limit >> 20} MiB")
                      if limit != resource.RLIM_INFINITY else name)
            return labelled(OUT_OF_MEMORY, HIDDEN_DETAIL if hidden else f"MemoryError: {value} ({detail})")
        if hidden:
            return HIDDEN_FAILED
        return _limited(labelled(FAILED, f"{name}: {value}" if value else str(name)))
    if status == "error":
        return HIDDEN_ERROR
    if hidden:
        return HIDDEN_FAILED
    if "Cell outputs differ" in text:
        printed = "".join(out.get("text", "") for out in outputs if out.get("output_type") == "stream")
        expected = "".join(out.get("text", "") for out in item.cell.get("outputs", ())
                           if out.get("output_type") == "stream")
        return _limited(labelled(FAILED, labelled(_VALUES_DIFFER, _first_difference(printed, expected))))
    return _limited(labelled(FAILED, text.split("\n", 1)[0] or type(error).__name__))


_VALUES_DIFFER = both("the values this check compares differ from the reference answer's, or the cell printed "
                      "something else (compared outside your kernel)",
                      "这个检查比较的值与参考答案的不同，或者单元打印了别的内容（在你的内核之外比较）")


def _first_difference(printed: str, expected: str) -> str:
    """The first line where the student's run printed something else than the reference's run."""
    got_lines, expected_lines = printed.splitlines(), expected.splitlines()
    for number, (got, wanted) in enumerate(zip(got_lines, expected_lines), start=1):
        if got != wanted:
            return f"line {number}: got {got[:300]!r}, expected {wanted[:300]!r}"
    if len(got_lines) < len(expected_lines):
        return f"line {len(got_lines) + 1}: got nothing, expected {expected_lines[len(got_lines)][:300]!r}"
    return f"line {len(expected_lines) + 1}: got {got_lines[len(expected_lines)][:300]!r}, expected nothing more"


def _limited(text: str) -> str:
    return text if len(text) <= _FEEDBACK_LIMIT else text[: _FEEDBACK_LIMIT - 3] + "..."
