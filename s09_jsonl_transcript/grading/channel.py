"""The trusted end of the grader's channel: check cells call the student's answers across it.

In a grading run two kernels work side by side. The *student's kernel* runs the instructor's
setup cells and the student's answer cells, nothing else. The *trusted kernel*, the one nbval
runs, runs the setup cells and the check cells; it never executes a line of the student's code.
In the trusted kernel each answer's name is bound to a proxy (`student.answer("verify")`), so a
check cell reads as it does in the student's notebook: `got = verify(path, head)`.

Only data crosses, as JSON text written and read by wire.py: a call sends its arguments, and gets
back the return value or the exception the answer raised. What JSON cannot hold crosses as a typed
description (a tuple, a set, bytes, a path); anything else as an `Unreadable` that equals nothing,
so a check that ignores it is not failed by it. An exception crosses as the classes the student's end
names (wire.rebuild_exception): a built-in or lesson class named first is that class; any other becomes
a class of the same name derived from the built-in and lesson classes named after it, so `except
ValueError` in a check catches an answer's subclass of it. The student's end may name any classes,
which is no more than raising them.
Arguments that are not data cross as stand-ins served from this side:

- a binary file (a CountingFile): every read is a request answered here, so the file's own counter
  counts exactly the bytes the answer asked for; its data never enters the student's sandbox.
  Seeking and telling cost no request: the student's end knows the file's size and keeps the
  position, which the next read carries. A seek that would fail is asked here, and the file's
  own error is raised in the answer at that call;
- an iterator: each item is handed out when the answer asks for the next one, and what the
  iterator raises is raised in the answer;
- a clock (any other callable): each tick is asked for;
- a path (pathlib.Path) or a transcript (JSONLTranscript): the file or folder is copied into the
  exchange folder, which both kernels see, before the call, and copied back once the answer has
  returned, the student's side frozen meanwhile where the grader has a freezer (exchange.py: regular
  files and folders only, no link in any part of a path, nothing opened that can block), so the check
  inspects what the answer left when it returned; a path the answer returns into that folder comes
  back as the check's own path;
- an object an answer's class made: it stays in the student's kernel; here it is a handle whose
  methods and attributes are calls.

The requests travel on a Unix socket in the channel's folder, one round trip each; the call itself
and its verdict travel as an execute request to the student's kernel. A call that fails says why,
by the class of what it raises: AnswerTimedOut, AnswerRefused (a value too large, or not what the
student's end writes), AnswerNotCalled (an earlier call ended the calls), AnswerFailed (the kernel
died).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import socket
import time
from pathlib import Path

from . import exchange, kit, wire

CONNECTION_VARIABLE = "S09_STUDENT_CONNECTION"  # the student kernel's connection file
PROGRAM_VARIABLE = "S09_STUDENT_PROGRAM"  # the cells the student's kernel runs, as JSON
EXCHANGE_VARIABLE = "S09_EXCHANGE"  # the folder both kernels see
TIMEOUT_VARIABLE = "S09_CALL_TIMEOUT"  # seconds one call (or one cell of the program) may take
GUARD_VARIABLE = "S09_STUDENT_GUARD"  # the guard's key file, when the student's kernel has the guard
STATE_VARIABLE = "S09_STUDENT_STATE"  # a file the grader fills in, from outside, once the kernel stops or goes
FREEZER_VARIABLE = "S09_FREEZER"  # the grader's socket that freezes and thaws the student's side (freezer.py)
SOCKET_NAME = "calls.sock"  # beside the connection file: where the student's end asks for what its stand-ins need
MESSAGE_LIMIT = 64 << 20  # bytes: a longer message from the student's kernel on its zmq channels is dropped unread
EXCHANGE_LIMIT = 64 << 20  # bytes copied back from the exchange folder after one call
_HEARTBEAT_GRACE = 3.0  # seconds without a heartbeat before the student's kernel counts as dead
OUTPUT_TAIL = 1000  # characters of what the answers printed during one check that the report keeps


class AnswerFailed(RuntimeError):
    """A call gave no result: the student's kernel died, or stopped answering."""


class AnswerTimedOut(AnswerFailed):
    """A call ran longer than its time limit."""


class AnswerRefused(AnswerFailed):
    """The grader refused what the student's kernel sent: a value over the size limit, or not what its end writes."""


class AnswerNotCalled(AnswerFailed):
    """The call was not made: an earlier one ended the calls (a timeout, a dead kernel)."""


class TamperingDetected(BaseException):
    """The guard in the student's kernel saw its machinery changed (not an Exception: checks cannot catch it)."""


class StudentKernelStopped(BaseException):
    """The student's kernel was stopped (SIGSTOP), as the grader saw from outside; the notebook stops here."""


STOPPED = "stopped"  # what the grader writes in the state file for a kernel stopped by a signal
GONE = "gone"  # ... and for a kernel that is no longer there
# The names of this side's verdicts: an answer's exception of the same name crosses renamed.
RESERVED = ("AnswerFailed", "AnswerTimedOut", "AnswerRefused", "AnswerNotCalled", "TamperingDetected",
            "StudentKernelStopped")


CALL_CODE = f"__import__({__package__ + '.student_side'!r}, fromlist=['call']).call"
EVIDENCE_LIMIT = 8  # findings a tampering verdict carries to the reports (of the guard's 20 at most)
_DETAIL_LIMIT = 200  # characters of each finding's kernel text


def tampering_evidence(where: dict, problems: list) -> str:
    """TamperingDetected's message: JSON of where the guard looked (the cell, or the call and its answer cell)
    and what it found, [watched item, what changed] each; the probe reads it back (probe.read_evidence)."""
    found = []
    for problem in problems[:EVIDENCE_LIMIT]:
        item, detail = problem if isinstance(problem, list) and len(problem) == 2 else ("?", problem)
        found.append([str(item)[:40], str(detail)[:_DETAIL_LIMIT]])
    return json.dumps({"where": where, "found": found})


def _exchange_words(error: Exception) -> str:
    """Why the exchange folder could not be copied, in the grader's words (Interfered says it itself)."""
    if isinstance(error, exchange.Interfered):
        return str(error)
    return f"the exchange folder could not hold the check's files ({getattr(error, 'strerror', None) or error})"


def known_exceptions() -> dict:
    """The exceptions a crossing one may be rebuilt as: the built-in ones and the lesson's."""
    return wire.known_exceptions(kit.lesson())


class StudentKernel:
    """The connection to the student's kernel, made on first use."""

    def __init__(self):
        self._client = None
        self._program = None
        self._ran = 0
        self._lost = None  # why the kernel no longer answers, once it does not
        self._calls = 0
        self._paths = {}  # resolved path on this side -> its folder's number in the exchange folder
        self._numbers = itertools.count(1)  # each path's own number, never reused while the grading lasts
        self._freezer = _Freezer(os.environ.get(FREEZER_VARIABLE))
        self._stand_ins = StandIns()
        self._link = None
        self._exchange = None  # a descriptor of the exchange folder, opened before any student code ran
        self._guard_key = None
        self._printed, self._tail = 0, ""  # what the answers printed during the current cell
        self._left_out = []  # ... and why their copies back left something out
        self._copy_problem = None  # why the last copy back could not be made, if it could not
        self._where = {}  # what the student's kernel is running: {"cell": label} or {"call": name, "cell": label}
        _reset_each_cell(self)

    # ------------------------------------------------------------------ the proxies

    def answer(self, name: str, cell: str | None = None):
        """A callable that calls the student's function name (defined in answer cell cell); its result is data."""
        return AnswerFunction(self, name, cell)

    def answer_class(self, name: str, cell: str | None = None):
        """A callable that makes an instance of the student's class name; its result is a handle."""
        return AnswerClass(self, name, cell)

    # ------------------------------------------------------------------ the student's program

    def run_up_to(self, label: str) -> None:
        """Run, in the student's kernel, every cell of its program up to the one labelled label."""
        program = self._load_program()
        labels = [cell["label"] for cell in program]
        stop = labels.index(label) + 1
        for cell in program[self._ran:stop]:
            if self._lost is None:
                self._where = {"cell": cell["label"]}
                self._execute(cell["code"])
        self._ran = max(self._ran, stop)

    def _load_program(self) -> list:
        if self._program is None:
            self._program = json.loads(Path(os.environ[PROGRAM_VARIABLE]).read_text(encoding="utf-8"))
        return self._program

    # ------------------------------------------------------------------ one call

    def call(self, request: dict, cell: str | None = None):
        """Send one call (of an answer defined in answer cell cell); return its result as data (or a handle);
        raise what it raised.

        The exchange folder is copied out before the call and copied back once the answer has
        returned, while the student's side is frozen (see _copy_back); a copy that the student's
        side makes impossible costs this call, with the reason (AnswerRefused), and no other.
        """
        if self._lost:
            raise AnswerNotCalled(f"not called: {self._lost}")
        self._calls += 1
        call_id = f"{self._calls}-{os.urandom(8).hex()}"
        self._connect()
        wire_request = {key: value for key, value in request.items() if key not in ("args", "kwargs")}
        wire_request.update(call=call_id, socket=self._link.path,
                            args=wire.encode(list(request.get("args", ())), self._argument),
                            kwargs=wire.encode(dict(request.get("kwargs", {})), self._argument))
        called = request.get("name") or request.get("method") or request.get("attribute")
        self._where = {"call": str(called), "cell": cell} if cell else {"call": str(called)}
        try:
            self._sync_out()
        except (exchange.Interfered, OSError) as error:
            raise AnswerRefused(f"not called: {_exchange_words(error)}") from None
        code = f"{CALL_CODE}({json.dumps(wire_request)!r})"
        self._copy_problem = None
        result = self._execute(code, call_id=call_id)
        if self._copy_problem is not None:
            raise AnswerRefused(f"the answer's files could not be copied back: {self._copy_problem}")
        return self._result(result)

    def _result(self, result):
        if result is None:
            raise AnswerRefused(self._link.broken or "the student's kernel sent no result for this call")
        header, data = result
        self._take_output(header)
        self._stand_ins.place(header.get("positions"))
        if "raised" in header:
            try:
                error = wire.rebuild_exception(header["raised"], known_exceptions(), self._returned, RESERVED)
            except wire.Malformed:
                raise AnswerRefused("the student's kernel described the answer's exception in a malformed "
                                    "way") from None
            if not isinstance(error, Exception):
                raise AnswerFailed(f"the answer raised {type(error).__name__}: {error}"[:2000])
            raise error
        if "too_large" in header:
            raise AnswerRefused(f"the answer returned more than {wire.VALUE_LIMIT >> 20} MiB of data, the limit of "
                                "what crosses to the checks")
        if type(header.get("object")) is int:
            return RemoteObject(self, header["object"], self._where.get("cell"))
        if header.get("callable") is True:
            return CALLABLE
        if "value" in header:
            try:
                return wire.decode(data.decode("ascii"), self._returned)
            except (wire.Malformed, UnicodeDecodeError):
                raise AnswerRefused("the student's kernel sent a result that is not what its end of the channel "
                                    "writes") from None
        raise AnswerRefused("the student's kernel sent a malformed result")

    def _take_output(self, header: dict) -> None:
        printed, tail = header.get("printed"), header.get("tail")
        if type(printed) is int and printed > 0:
            self._printed += printed
            self._tail = (self._tail + (tail if isinstance(tail, str) else ""))[-OUTPUT_TAIL:]

    def cell_output(self) -> str:
        """What the answers printed during the current cell, and what copying back their files left out, as JSON:
        {"characters": n, "tail": "...", "left_out": ["why", ...]}."""
        return json.dumps({"characters": self._printed, "tail": self._tail, "left_out": self._left_out})

    # ------------------------------------------------------------------ the kernel's messages

    def _connect(self):
        if self._client is None:
            import zmq
            from jupyter_client import BlockingKernelClient

            context = zmq.Context()
            context.setsockopt(zmq.MAXMSGSIZE, MESSAGE_LIMIT)  # a flood is cut off by zmq, not read
            client = BlockingKernelClient(context=context)
            connection = os.environ[CONNECTION_VARIABLE]
            client.load_connection_file(connection)
            client.start_channels(shell=True, iopub=False, stdin=False, hb=True, control=False)
            self._client = client
            # Before the student's kernel runs any code of the student's: the socket and the exchange
            # folder are this side's from the start.
            self._link = _Link(str(Path(connection).parent / SOCKET_NAME))
            self._exchange = exchange.open_root(os.environ[EXCHANGE_VARIABLE])
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
                    self._execute("")
                return
        self._lost = "the student's kernel did not start"

    def _execute(self, code: str, *, call_id: str | None = None, kind: str | None = None):
        """Run code in the student's kernel, serving its stand-ins' requests; return the call's result, if any.

        kind says what the guard's verdict is about: a "call" (call_id given) or a "cell".
        """
        kind = kind or ("call" if call_id else "cell")
        client = self._connect()
        if self._lost:
            raise AnswerNotCalled(f"not called: {self._lost}")
        import zmq

        message_id = client.execute(code, store_history=False, allow_stdin=False, stop_on_error=False,
                                    user_expressions=self._verdict_request(kind))
        shell = client.shell_channel.socket
        started = last_beat = time.monotonic()
        answered = []  # the call's result, once it came

        def answer(header, data):
            nonlocal started, last_beat
            if self._answer(header, data, call_id) is None:
                return False
            answered.append((header, data))
            paused = time.monotonic()
            self._copy_back()
            resumed = time.monotonic()
            started += resumed - paused  # the freeze is the grader's time, not the call's
            last_beat = resumed  # nor can a frozen kernel beat
            return True

        poller, watched = zmq.Poller(), None
        poller.register(shell, zmq.POLLIN)
        poller.register(self._link.listener, zmq.POLLIN)
        while True:
            now = time.monotonic()
            if now - started > _timeout():
                self._lost = f"an earlier call ran longer than {_timeout():g} s"
                raise AnswerTimedOut(f"the call ran longer than {_timeout():g} s")
            if client.hb_channel.is_beating():
                last_beat = now
            elif now - last_beat > min(_HEARTBEAT_GRACE, _timeout() / 3):
                self._no_heartbeat()
            if self._link.connection is not watched:  # a new connection: poll it instead
                if watched is not None:
                    poller.unregister(watched)
                watched = self._link.connection
                if watched is not None:
                    poller.register(watched, zmq.POLLIN)
            ready = dict(poller.poll(200))  # a plain socket comes back as its descriptor
            if len(ready) > (shell in ready):
                self._link.pump(answer, accept=self._link.listener.fileno() in ready,
                                until=min(started + _timeout(), time.monotonic() + 1))
            if shell in ready:
                reply = client.shell_channel.get_msg(timeout=0)
                if reply.get("parent_header", {}).get("msg_id") == message_id:
                    self._link.pump(answer, accept=True, until=0)  # what was sent before the reply
                    result = answered[-1] if answered else None
                    self._read_reply(reply, result, asked_again=not code, kind=kind)
                    return result

    def _copy_back(self) -> None:
        """The answer returned: copy back what it left in the exchange folder, the student's side frozen, then
        tell its end, which waits for this before it lets go of anything the answer returned.

        Frozen (the grader's cgroup freezer, freezer.py), none of the student's processes or threads
        can change a file while it is copied: what the check reads is what the answer left when it
        returned. Where there is no freezer, they can, until the copy is done.
        """
        with self._freezer.frozen():
            try:
                self._sync_back()
            except (exchange.Interfered, OSError) as error:
                self._copy_problem = _exchange_words(error)
        self._link.send({"copied": True})

    def _answer(self, header: dict, data: bytes, call_id: str | None):
        """Serve one request of the student's end: reply to it, or return it when it is the call's result."""
        if call_id is None or header.get("call") != call_id:
            if header.get("op") != "result":
                self._link.send({"refused": "no call of the grader's is running"})
            return None
        if header.get("op") == "result":
            return header, data
        reply, payload = self._stand_ins.serve(header)
        self._link.send(reply, payload)
        return None

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

    def _verdict_request(self, kind: str = "cell") -> dict:
        """The user expression that asks the guard for its verdict after a cell ("cell") or a call ("call")."""
        key = self._guard()
        if key is None:
            return {}
        self._nonce = os.urandom(16).hex()
        guard = f"__import__('sys').modules[{__package__ + '.guard'!r}]"
        return {"s09_verdict": f"{guard}.verdict({self._nonce!r}, {kind!r})"}

    def _guard(self):
        path = os.environ.get(GUARD_VARIABLE)
        if self._guard_key is None and path:
            self._guard_key = bytes.fromhex(json.loads(Path(path).read_text(encoding="utf-8"))["key"])
        return self._guard_key

    def _read_reply(self, reply: dict, result, asked_again: bool, kind: str) -> None:
        """Make sure of the guard's verdict, also after a cell that failed."""
        content = reply.get("content") or {}
        if content.get("status") == "ok" or asked_again:  # an empty cell that fails, too, brings no verdict
            self._read_verdict(reply)
        elif self._guard() is not None:  # no user expressions after an error: an empty cell brings the verdict
            self._execute("", kind=kind)

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
            problems = [["verdict", "the guard in the student's kernel gave no genuine verdict"]]
        if problems:
            self._lost = "the guard in the student's kernel found its machinery changed"
            raise TamperingDetected(tampering_evidence(self._where, problems))

    # ------------------------------------------------------------------ what crosses

    def _argument(self, value):
        """The typed form of an argument that is not plain data (wire.encode's special hook), or None."""
        if isinstance(value, RemoteObject):
            return {"$handle": value._handle}
        if isinstance(value, Path):
            return {"$path": self._exchange_path(value)}
        if isinstance(value, kit.lesson().JSONLTranscript):
            return {"$transcript": self._exchange_path(value.path)}
        if isinstance(value, (str, bytes, bytearray, list, tuple, dict, set, frozenset)):
            return None
        return self._stand_ins.add(value)

    def _returned(self, kind: str, payload):
        """A path the answer returned into the exchange folder is the check's own path again."""
        if kind != "$path" or not isinstance(payload, str):
            return NotImplemented
        inside = Path(os.environ.get(EXCHANGE_VARIABLE, "/nonexistent")) / "files"
        returned = Path(payload)
        for here, number in self._paths.items():
            copy = inside / str(number) / (here.name or "root")
            if returned == copy or copy in returned.parents:
                return here / returned.relative_to(copy)
        return returned

    # ------------------------------------------------------------------ the exchange folder

    def _exchange_path(self, path: Path) -> str:
        key = Path(os.path.abspath(path))
        if key not in self._paths:  # a number of its own: a path dropped below never gives its number away
            self._paths[key] = next(self._numbers)
        return f"{os.environ[EXCHANGE_VARIABLE]}/files/{self._paths[key]}/{key.name or 'root'}"

    def _folder_of(self, number: int) -> int:
        return exchange.open_path(self._exchange, ["files", str(number)], create=True)

    def _sync_out(self) -> None:
        """Before a call: the exchange folder holds what this side holds at every path a call was given."""
        for here, number in list(self._paths.items()):
            folder = self._folder_of(number)
            try:
                exchange.copy_out(here, folder, here.name or "root")
            finally:
                os.close(folder)
            if not here.parent.is_dir():  # the check's folder is gone: so is what it gave the answer
                del self._paths[here]

    def _sync_back(self) -> None:
        """After a call: this side holds what the answer left in the exchange folder (within limits)."""
        budget = exchange.Budget(EXCHANGE_LIMIT)
        for here, number in list(self._paths.items()):
            if not here.parent.is_dir():
                continue
            folder = self._folder_of(number)
            try:
                exchange.copy_back(folder, here.name or "root", here, budget)
            finally:
                os.close(folder)
        self._left_out += [why for why in budget.left_out if why not in self._left_out]


def _reset_each_cell(kernel: StudentKernel) -> None:
    """In the trusted kernel, forget what the answers printed when the next cell starts."""
    try:
        shell = get_ipython()  # noqa: F821 - defined in an IPython kernel
    except NameError:
        return

    def reset(*_):
        kernel._printed, kernel._tail, kernel._left_out = 0, "", []

    shell.events.register("pre_run_cell", reset)


_BURST_WAIT = 0.05  # seconds the channel waits for a stand-in's next request before it looks at the kernel again


_FREEZER_WAIT = 30.0  # seconds to wait for the grader to freeze or thaw (it answers sooner, frozen or not)


class _Freezer:
    """This side's line to the grader, outside both sandboxes, which freezes the student's side and thaws it.

    The socket is in a folder only the trusted sandbox sees (the grader's watch folder), so no answer can
    ask for a thaw. Without it (a run by hand, no freezer group), or when the grader does not answer,
    nothing is frozen and the copy goes on: the report says whether a freezer exists.
    """

    def __init__(self, path: str | None):
        self.path, self.connection = path, None

    @contextlib.contextmanager
    def frozen(self):
        """Context manager: the student's side frozen inside it, where the grader can freeze it."""
        asked = self._ask(b"F")
        try:
            yield
        finally:
            if asked:
                self._ask(b"T")

    def _ask(self, what: bytes) -> bool:
        """Send one request (F: freeze, T: thaw); True once the grader has answered it."""
        if not self.path:
            return False
        try:
            if self.connection is None:
                made = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                made.settimeout(_FREEZER_WAIT)
                address, folder = wire.socket_address(self.path)
                try:
                    made.connect(address)
                finally:
                    if folder is not None:
                        os.close(folder)
                self.connection = made
            self.connection.sendall(what)
            return bool(self.connection.recv(16))
        except OSError:
            if self.connection is not None:
                self.connection.close()
            self.connection = None
            return False


class _Link:
    """This side's end of the socket on which the student's end asks for what its stand-ins need."""

    def __init__(self, path: str):
        self.path = path
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        address, folder = wire.socket_address(path)
        try:
            self.listener.bind(address)
        finally:
            if folder is not None:
                os.close(folder)
        os.chmod(path, 0o666)
        self.listener.listen(4)
        self.listener.setblocking(False)
        self.connection = None
        self.reader = None
        self.broken = None  # why the student's end was cut off, once it was

    def pump(self, answer, *, accept: bool, until: float) -> None:
        """Take a new connection (accept), then serve whole frames with answer(header, data) as they come.

        After each frame it waits a moment for the next: a reader asking for one byte at a time
        then costs one round trip per request, without a trip through the kernel's poller. It
        returns at until, after a moment without a frame, or once answer says the call's result came
        (with until 0, once nothing more is waiting).
        """
        if accept:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                connection = None
            if connection is not None:
                self._close()
                self.connection, self.reader = connection, wire.FrameReader()
        while self.connection is not None:
            self.connection.settimeout(max(0.0, min(_BURST_WAIT, until - time.monotonic())))
            try:
                chunk = self.connection.recv(1 << 20)
            except (TimeoutError, BlockingIOError, InterruptedError):
                return
            except OSError:
                chunk = b""
            if not chunk:
                self._close()
                return
            try:
                frames = self.reader.feed(chunk)
            except wire.Malformed as error:
                self.broken = f"the student's kernel broke the channel: {error}"
                self._close()
                return
            if any([answer(header, data) for header, data in frames]) or 0 < until <= time.monotonic():
                return

    def send(self, header: dict, data: bytes = b"") -> None:
        if self.connection is None:
            return
        try:
            self.connection.settimeout(_timeout())
            self.connection.sendall(wire.frame(header, data))
        except OSError:
            self._close()

    def _close(self) -> None:
        if self.connection is not None:
            self.connection.close()
        self.connection = None


class StandIns:
    """The files, iterators and clocks this side holds for the answers, and the requests that read them."""

    def __init__(self):
        self.held = {}  # number -> the file, iterator or clock
        self.served = 0  # requests answered: a test counts them per byte read

    def add(self, value):
        """The typed form of a stand-in for value (numbered, kept for later calls), or None if it is none."""
        number = len(self.held) + 1  # kept: an object the answer made may hold on to a clock
        if hasattr(value, "read") and hasattr(value, "seek"):
            self.held[number] = value
            return {"$file": number}
        if hasattr(value, "__next__"):
            self.held[number] = value
            return {"$iterator": number}
        if callable(value):
            self.held[number] = value
            return {"$clock": number}
        return None

    def place(self, positions) -> None:
        """After a call: each file the answer used is where the answer left it (its seeks cost no request)."""
        for number, position in (positions.items() if isinstance(positions, dict) else ()):
            target = self.held.get(int(number)) if str(number).isdigit() else None
            if target is not None and type(position) is int and position >= 0:
                try:
                    target.seek(position)
                except Exception:  # noqa: BLE001 - the check's own file: it keeps its position
                    pass

    def serve(self, request: dict) -> tuple:
        """(reply header, reply data) for one request; what the stand-in raised is described, to raise there."""
        self.served += 1
        op = request.get("op")
        number = request.get("file", request.get("iterator", request.get("clock")))
        target = self.held.get(number) if type(number) is int else None
        if target is None:
            return {"refused": "no such stand-in"}, b""
        try:
            if op == "state":
                return _file_state(target), b""
            if op in ("read", "readline", "seek"):
                at = request.get("at")
                if type(at) is int and at >= 0:
                    target.seek(at)
                if op == "seek":
                    offset, whence = wire.decode(request.get("offset", "0")), wire.decode(request.get("whence", "0"))
                    return {"value": target.seek(offset, whence)}, b""
                size = wire.decode(request.get("size", "-1"))
                data = target.read(size) if op == "read" else target.readline(size)
                return {"position": target.tell()}, bytes(data)
            if op == "next":
                try:
                    item = next(target)
                except StopIteration:
                    return {"stop": True}, b""
                return {"item": wire.encode(item)}, b""
            if op == "tick":
                return {"value": wire.encode(target())}, b""
        except wire.Malformed:
            return {"refused": "a malformed request"}, b""
        except Exception as error:  # noqa: BLE001 - what the check's stand-in raises is raised in the answer
            return {"raised": wire.describe_exception(error)}, b""
        return {"refused": f"no such request {str(op)[:40]!r}"}, b""


def _file_state(target) -> dict:
    """The size of a served file and the position in it (the student's end seeks and tells by them)."""
    try:
        position = target.tell()
        size = target.seek(0, os.SEEK_END)
        target.seek(position)
    except Exception:  # noqa: BLE001 - a file that cannot tell: every seek is then asked here
        return {"size": None, "position": None}
    return {"size": size, "position": position}


CALLABLE = object()  # an attribute that is a method: called through the handle


def _timeout() -> float:
    try:
        return float(os.environ.get(TIMEOUT_VARIABLE, "15"))
    except ValueError:
        return 15.0


class AnswerFunction:
    """Calls one of the student's functions (defined in answer cell cell) across the channel."""

    def __init__(self, kernel: StudentKernel, name: str, cell: str | None = None):
        self._kernel, self.__name__, self._cell = kernel, name, cell

    def __call__(self, *args, **kwargs):
        return self._kernel.call({"name": self.__name__, "args": args, "kwargs": kwargs}, self._cell)

    def __repr__(self):
        return f"<the student's {self.__name__}, called in the student's kernel>"


class AnswerClass(AnswerFunction):
    """Makes an instance of one of the student's classes; the instance stays in the student's kernel."""

    def __call__(self, *args, **kwargs):
        return self._kernel.call({"name": self.__name__, "args": args, "kwargs": kwargs, "keep": True}, self._cell)


class RemoteObject:
    """A handle on an object in the student's kernel: its methods and attributes are calls."""

    def __init__(self, kernel: StudentKernel, handle: int, cell: str | None = None):
        self._kernel, self._handle, self._cell = kernel, handle, cell

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        value = self._kernel.call({"object": self._handle, "attribute": name}, self._cell)
        if value is not CALLABLE:
            return value
        return lambda *args, **kwargs: self._kernel.call(
            {"object": self._handle, "method": name, "args": args, "kwargs": kwargs}, self._cell)


student = StudentKernel()
