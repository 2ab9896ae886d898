"""The trusted end of the grader's channel: check cells call the student's answers across it.

In a grading run two kernels work side by side. The *student's kernel* runs the instructor's
setup cells and the student's answer cells, nothing else. The *trusted kernel*, the one nbval
runs, runs the setup cells and the check cells; it never executes a line of the student's code.
In the trusted kernel each answer's name is bound to a proxy (`student.answer("verify")`), so a
check cell reads as it does in the student's notebook: `got = verify(path, head)`.

Only plain data crosses. A call sends its arguments as JSON and gets the return value back as
JSON text, which is parsed here: whatever the answer returned, the check sees lists, dicts,
strings, numbers, booleans and None. An exception the answer raised is raised again here under
its name (a built-in or lesson exception, so `except ValueError` in a check works); a value that
is not JSON, a call that takes too long, or a kernel that died is raised as an AnswerFailed.
Arguments that are not plain data cross as stand-ins served from this side:

- a binary file (a CountingFile): every read, readline, seek and tell is a request answered here,
  so the file's own counter counts exactly the bytes the answer asked for; its data never enters
  the student's sandbox;
- an iterator: each item is handed out when the answer asks for the next one;
- a clock (any other callable): each tick is asked for;
- a path (pathlib.Path) or a transcript (JSONLTranscript): the file or folder is copied into the
  exchange folder, which both kernels see, before the call, and copied back after it (regular
  files only, no links), so the check inspects what the answer wrote;
- an object an answer's class made: it stays in the student's kernel; here it is a handle whose
  methods and attributes are calls.
"""

from __future__ import annotations

import base64
import builtins
import io
import json
import os
import shutil
import stat
import time
from datetime import datetime
from pathlib import Path

CONNECTION_VARIABLE = "S09_STUDENT_CONNECTION"  # the student kernel's connection file
PROGRAM_VARIABLE = "S09_STUDENT_PROGRAM"  # the cells the student's kernel runs, as JSON
EXCHANGE_VARIABLE = "S09_EXCHANGE"  # the folder both kernels see
TIMEOUT_VARIABLE = "S09_CALL_TIMEOUT"  # seconds one call (or one cell of the program) may take
GUARD_VARIABLE = "S09_STUDENT_GUARD"  # the guard's key file, when the student's kernel has the guard
STATE_VARIABLE = "S09_STUDENT_STATE"  # a file the grader fills in, from outside, once the kernel stops or goes
MESSAGE_LIMIT = 64 << 20  # bytes: a longer message from the student's kernel is dropped unread
EXCHANGE_LIMIT = 64 << 20  # bytes copied back from the exchange folder after one call
_HEARTBEAT_GRACE = 3.0  # seconds without a heartbeat before the student's kernel counts as dead


class AnswerFailed(RuntimeError):
    """A call gave no usable result: not JSON, too slow, or the student's kernel stopped answering."""


class TamperingDetected(BaseException):
    """The guard in the student's kernel saw its machinery changed (not an Exception: checks cannot catch it)."""


class StudentOutputLimit(BaseException):
    """The student's kernel printed more than the output limit (its guard said so); the notebook stops here."""


class StudentKernelStopped(BaseException):
    """The student's kernel was stopped (SIGSTOP), as the grader saw from outside; the notebook stops here."""


OUTPUT_LIMIT_ERROR = "OutputLimitExceeded"  # the guard's exception, raised inside the student's kernel
STOPPED = "stopped"  # what the grader writes in the state file for a kernel stopped by a signal
GONE = "gone"  # ... and for a kernel that is no longer there


def _lesson_exceptions() -> dict:
    from s09_jsonl_transcript import code

    return {name: value for name, value in vars(code).items()
            if isinstance(value, type) and issubclass(value, Exception)}


def raised_again(name: str, message: str) -> BaseException:
    """The exception an answer raised, rebuilt here from its name and message (RuntimeError if unknown)."""
    known = {name: value for name, value in vars(builtins).items()
             if isinstance(value, type) and issubclass(value, Exception)}
    known.update(_lesson_exceptions())
    kind = known.get(name)
    if kind is None:
        return AnswerFailed(f"the answer raised {name}: {message}" if message else f"the answer raised {name}")
    error = kind.__new__(kind)
    error.args = (message,) if message else ()
    return error


class StudentKernel:
    """The connection to the student's kernel, made on first use."""

    def __init__(self):
        self._client = None
        self._program = None
        self._ran = 0
        self._lost = None  # why the kernel no longer answers, once it does not
        self._calls = 0
        self._paths = {}  # resolved path on this side -> its copy in the exchange folder
        self._stand_ins = {}  # number -> the file, iterator or clock a call's stand-in asks for
        self._failure = None  # an error raised here while serving the current call
        self._guard_key = None

    # ------------------------------------------------------------------ the proxies

    def answer(self, name: str):
        """A callable that calls the student's function name; its result is plain data."""
        return AnswerFunction(self, name)

    def answer_class(self, name: str):
        """A callable that makes an instance of the student's class name; its result is a handle."""
        return AnswerClass(self, name)

    # ------------------------------------------------------------------ the student's program

    def run_up_to(self, label: str) -> None:
        """Run, in the student's kernel, every cell of its program up to the one labelled label."""
        program = self._load_program()
        labels = [cell["label"] for cell in program]
        stop = labels.index(label) + 1
        for cell in program[self._ran:stop]:
            if self._lost is None:
                self._execute(cell["code"], allow_stdin=False, serve=False)
        self._ran = max(self._ran, stop)

    def _load_program(self) -> list:
        if self._program is None:
            self._program = json.loads(Path(os.environ[PROGRAM_VARIABLE]).read_text(encoding="utf-8"))
        return self._program

    # ------------------------------------------------------------------ one call

    def call(self, request: dict):
        """Send one call; return its result as plain data (or a handle); raise what it raised."""
        if self._lost:
            raise AnswerFailed(f"not called: {self._lost}")
        self._calls += 1
        call_id = f"{self._calls}-{os.urandom(4).hex()}"
        self._failure = None
        wire = {**request, "call": call_id,
                "args": [self._to_wire(value) for value in request.get("args", ())],
                "kwargs": {key: self._to_wire(value) for key, value in request.get("kwargs", {}).items()}}
        self._sync_out()
        code = ("__import__('s09_jsonl_transcript.grading.student_side', fromlist=['call']).call("
                f"{json.dumps(wire)!r})")
        result = self._execute(code, allow_stdin=True, serve=True, call_id=call_id)
        self._sync_back()
        if self._failure is not None:
            raise self._failure
        return self._result(result)

    def _result(self, result):
        if result is None:
            raise AnswerFailed("the student's kernel sent no result for this call")
        if "raised" in result:
            return _raise(raised_again(str(result["raised"]), str(result.get("message", ""))))
        if "not_json" in result:
            raise AnswerFailed(f"the answer returned a {str(result['not_json'])[:80]}, which is not JSON data "
                               "(lists, dicts, strings, numbers, booleans and None cross to the grader)")
        if "object" in result and type(result["object"]) is int:
            return RemoteObject(self, result["object"])
        if result.get("callable") is True:
            return CALLABLE
        if isinstance(result.get("value"), str):
            try:
                return json.loads(result["value"])
            except (ValueError, RecursionError):
                raise AnswerFailed("the student's kernel sent a result that is not JSON") from None
        raise AnswerFailed("the student's kernel sent a malformed result")

    # ------------------------------------------------------------------ the kernel's messages

    def _connect(self):
        if self._client is None:
            import zmq
            from jupyter_client import BlockingKernelClient

            context = zmq.Context()
            context.setsockopt(zmq.MAXMSGSIZE, MESSAGE_LIMIT)  # a flood is cut off by zmq, not read
            client = BlockingKernelClient(context=context)
            client.load_connection_file(os.environ[CONNECTION_VARIABLE])
            client.start_channels(shell=True, iopub=False, stdin=True, hb=True, control=False)
            self._client = client
            self._wait_until_ready()
        return self._client

    def _wait_until_ready(self) -> None:
        deadline = time.monotonic() + _timeout() * 3
        while time.monotonic() < deadline:
            message_id = self._client.kernel_info()
            try:
                reply = self._client.get_shell_msg(timeout=1.0)
            except Exception:  # noqa: BLE001 - queue.Empty: not up yet
                continue
            if reply["parent_header"].get("msg_id") == message_id:
                if self._guard() is not None:  # the guard's snapshot, before any of the student's code runs
                    self._execute("", allow_stdin=False, serve=False)
                return
        self._lost = "the student's kernel did not start"

    def _execute(self, code: str, *, allow_stdin: bool, serve: bool, call_id: str | None = None):
        """Run code in the student's kernel, serving its stdin requests; return the call's result, if any."""
        client = self._connect()
        if self._lost:
            raise AnswerFailed(f"not called: {self._lost}")
        import zmq

        message_id = client.execute(code, store_history=False, allow_stdin=allow_stdin, stop_on_error=False,
                                    user_expressions=self._verdict_request())
        poller = zmq.Poller()
        poller.register(client.shell_channel.socket, zmq.POLLIN)
        poller.register(client.stdin_channel.socket, zmq.POLLIN)
        started = last_beat = time.monotonic()
        result = None
        while True:
            now = time.monotonic()
            if now - started > _timeout():
                self._lost = f"an earlier call ran longer than {_timeout():g} s"
                raise AnswerFailed(f"the call ran longer than {_timeout():g} s")
            if client.hb_channel.is_beating():
                last_beat = now
            elif now - last_beat > min(_HEARTBEAT_GRACE, _timeout() / 3):
                self._no_heartbeat()
            ready = dict(poller.poll(200))
            if client.stdin_channel.socket in ready:
                request = _parsed(client.stdin_channel.get_msg(timeout=0))
                if request is not None and serve and request.get("call") == call_id:
                    if request.get("op") == "result":
                        result = request
                        client.input("")
                    else:
                        client.input(self._serve(request))
                else:
                    client.input("\x04")  # EOF: nothing is asked for outside a call
            if client.shell_channel.socket in ready:
                reply = client.shell_channel.get_msg(timeout=0)
                if reply.get("parent_header", {}).get("msg_id") == message_id:
                    self._read_reply(reply, result, asked_again=not code)
                    return result

    def _no_heartbeat(self) -> None:
        """The heartbeat stopped: raise why, as the grader saw it from outside; return while it has not seen it.

        A kernel on a busy machine can miss its beats and still be running: then the call's own time
        limit decides. Without the grader's state file (a run by hand), no heartbeat means dead.
        """
        path = os.environ.get(STATE_VARIABLE)
        try:
            state = Path(path).read_text(encoding="utf-8").strip() if path else GONE
        except OSError:
            state = GONE
        if state == STOPPED:
            self._lost = "the student's kernel was stopped (SIGSTOP)"
            raise StudentKernelStopped(self._lost)
        if state == GONE:
            self._lost = "the student's kernel died"
            raise AnswerFailed("the student's kernel died during this call")

    # ------------------------------------------------------------------ the guard (defence in depth)

    def _verdict_request(self) -> dict:
        key = self._guard()
        if key is None:
            return {}
        self._nonce = os.urandom(16).hex()
        guard = "__import__('sys').modules['s09_jsonl_transcript.grading.guard']"
        return {"s09_verdict": f"{guard}.verdict({self._nonce!r})"}

    def _guard(self):
        path = os.environ.get(GUARD_VARIABLE)
        if self._guard_key is None and path:
            self._guard_key = bytes.fromhex(json.loads(Path(path).read_text(encoding="utf-8"))["key"])
        return self._guard_key

    def _read_reply(self, reply: dict, result, asked_again: bool) -> None:
        """Stop on the output limit; else make sure of the guard's verdict, also after a cell that failed."""
        content = reply.get("content") or {}
        raised = result.get("raised") if isinstance(result, dict) else content.get("ename")
        if self._guard() is not None and raised == OUTPUT_LIMIT_ERROR:
            self._lost = "the student's kernel printed more than the output limit"
            raise StudentOutputLimit(self._lost)
        if content.get("status") == "ok" or asked_again:  # an empty cell that fails, too, brings no verdict
            self._read_verdict(reply)
        elif self._guard() is not None:  # no user expressions after an error: an empty cell brings the verdict
            self._execute("", allow_stdin=False, serve=False)

    def _read_verdict(self, reply: dict) -> None:
        """Raise TamperingDetected when the guard's signed verdict is missing, forged or names a change."""
        key = self._guard()
        if key is None:
            return
        import ast
        import hashlib
        import hmac

        answer = ((reply.get("content") or {}).get("user_expressions") or {}).get("s09_verdict")
        try:
            verdict = json.loads(ast.literal_eval(answer["data"]["text/plain"]))
            problems, cell, mac = verdict["problems"], verdict["cell"], verdict["mac"]
            expected = hmac.new(key, json.dumps([self._nonce, cell, problems]).encode(), hashlib.sha256).hexdigest()
            genuine = verdict.get("nonce") == self._nonce and hmac.compare_digest(str(mac), expected)
        except Exception:  # noqa: BLE001 - anything malformed is no verdict
            genuine, problems = False, None
        if not genuine:
            self._lost = "the guard in the student's kernel gave no genuine verdict"
            raise TamperingDetected("the guard in the student's kernel gave no genuine verdict")
        if problems:
            self._lost = "the guard in the student's kernel found its machinery changed"
            raise TamperingDetected("; ".join(str(problem) for problem in problems)[:2000])

    # ------------------------------------------------------------------ stand-ins

    def _to_wire(self, value):
        if value is None or type(value) in (bool, int, float, str):
            return value
        if isinstance(value, RemoteObject):
            return {"$object": value._handle}
        if isinstance(value, Path):
            return {"$path": str(self._exchange_path(value))}
        from s09_jsonl_transcript.code import JSONLTranscript

        if isinstance(value, JSONLTranscript):
            return {"$transcript": str(self._exchange_path(value.path))}
        if isinstance(value, (list, tuple)):
            items = [self._to_wire(item) for item in value]
            return items if isinstance(value, list) else {"$tuple": items}
        if isinstance(value, dict):
            return {"$dict": {str(key): self._to_wire(item) for key, item in value.items()}}
        number = len(self._stand_ins) + 1  # kept for later calls: an object may hold on to a clock
        if hasattr(value, "read") and hasattr(value, "seek"):
            self._stand_ins[number] = value
            return {"$file": number}
        if hasattr(value, "__next__"):
            self._stand_ins[number] = value
            return {"$iterator": number}
        if callable(value):
            self._stand_ins[number] = value
            return {"$clock": number}
        raise TypeError(f"a {type(value).__name__} cannot cross to the student's kernel")

    def _serve(self, request: dict) -> str:
        """The answer to one request of a stand-in, as JSON text."""
        op = request.get("op")
        number = request.get("file", request.get("iterator", request.get("clock")))
        target = self._stand_ins.get(number) if type(number) is int else None
        if target is None:
            return "\x04"
        try:
            if op in ("read", "readline"):
                size = request.get("size")
                size = size if type(size) is int else -1
                data = target.read(size) if op == "read" else target.readline(size)
                return json.dumps({"data": base64.b64encode(data).decode()})
            if op == "seek":
                offset, whence = request.get("offset"), request.get("whence", io.SEEK_SET)
                if type(offset) is not int or whence not in (0, 1, 2):
                    return json.dumps({"value": target.tell()})
                return json.dumps({"value": target.seek(offset, whence)})
            if op == "tell":
                return json.dumps({"value": target.tell()})
            if op == "next":
                try:
                    item = next(target)
                except StopIteration:
                    return json.dumps({"stop": True})
                return json.dumps({"item": self._to_wire(item)})
            if op == "tick":
                now = target()
                return json.dumps({"value": now.isoformat() if isinstance(now, datetime) else str(now)})
        except Exception as error:  # noqa: BLE001 - the check's own stand-in raised: the check reports it
            self._failure = self._failure or error
            return json.dumps({"stop": True, "data": "", "value": 0})
        return "\x04"

    # ------------------------------------------------------------------ the exchange folder

    def _exchange_path(self, path: Path) -> Path:
        key = Path(os.path.abspath(path))
        if key not in self._paths:
            folder = Path(os.environ[EXCHANGE_VARIABLE]) / "files" / str(len(self._paths) + 1)
            folder.mkdir(parents=True, exist_ok=True)
            self._paths[key] = folder / (key.name or "root")
        return self._paths[key]

    def _sync_out(self) -> None:
        """Before a call: the exchange folder holds what this side holds at every path a call was given."""
        for here, there in list(self._paths.items()):
            if not here.parent.is_dir():  # the check's folder is gone: so is what it gave the answer
                mirror(here, there)
                del self._paths[here]
                continue
            mirror(here, there)

    def _sync_back(self) -> None:
        """After a call: this side holds what the answer left in the exchange folder."""
        budget = [EXCHANGE_LIMIT]
        for here, there in list(self._paths.items()):
            if here.parent.is_dir():
                mirror(there, here, budget)


CALLABLE = object()  # an attribute that is a method: called through the handle


def _raise(error):
    raise error


def _timeout() -> float:
    try:
        return float(os.environ.get(TIMEOUT_VARIABLE, "15"))
    except ValueError:
        return 15.0


def _parsed(message: dict):
    """A stand-in's request (the input_request's prompt, as JSON), or None."""
    try:
        request = json.loads(message["content"]["prompt"])
    except (KeyError, TypeError, ValueError, RecursionError):
        return None
    return request if isinstance(request, dict) else None


def mirror(source: Path, target: Path, budget: list | None = None) -> None:
    """Make target hold what source holds: regular files and folders only, files changed in place.

    A link, a device or anything else that is not a regular file or folder is left out; past
    budget[0] bytes, the remaining files are left out.
    """
    try:
        info = os.lstat(source)
    except FileNotFoundError:
        _remove(target)
        return
    if stat.S_ISDIR(info.st_mode):
        if target.is_symlink() or (target.exists() and not target.is_dir()):
            _remove(target)
        target.mkdir(parents=True, exist_ok=True)
        names = {entry.name for entry in os.scandir(source)}
        for entry in os.scandir(target):
            if entry.name not in names:
                _remove(target / entry.name)
        for name in sorted(names):
            mirror(source / name, target / name, budget)
        return
    if not stat.S_ISREG(info.st_mode) or (budget is not None and budget[0] < info.st_size):
        _remove(target)
        return
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        descriptor = os.open(source, flags)
    except OSError:
        _remove(target)
        return
    with open(descriptor, "rb") as file:
        data = file.read(info.st_size + 1)
    if budget is not None:
        budget[0] -= len(data)
    if target.is_symlink() or target.is_dir():
        _remove(target)
    try:
        if target.read_bytes() == data:
            return
    except OSError:
        pass
    with open(target, "r+b" if target.exists() else "wb") as file:  # in place: open handles see the change
        file.write(data)
        file.truncate()


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)


class AnswerFunction:
    """Calls one of the student's functions across the channel."""

    def __init__(self, kernel: StudentKernel, name: str):
        self._kernel, self.__name__ = kernel, name

    def __call__(self, *args, **kwargs):
        return self._kernel.call({"name": self.__name__, "args": args, "kwargs": kwargs})

    def __repr__(self):
        return f"<the student's {self.__name__}, called in the student's kernel>"


class AnswerClass(AnswerFunction):
    """Makes an instance of one of the student's classes; the instance stays in the student's kernel."""

    def __call__(self, *args, **kwargs):
        return self._kernel.call({"name": self.__name__, "args": args, "kwargs": kwargs, "keep": True})


class RemoteObject:
    """A handle on an object in the student's kernel: its methods and attributes are calls."""

    def __init__(self, kernel: StudentKernel, handle: int):
        self._kernel, self._handle = kernel, handle

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        value = self._kernel.call({"object": self._handle, "attribute": name})
        if value is not CALLABLE:
            return value
        return lambda *args, **kwargs: self._kernel.call(
            {"object": self._handle, "method": name, "args": args, "kwargs": kwargs})


student = StudentKernel()
