"""The capstone's driver: the program that runs the student's append and recover for the grader.

    python -S -B capstone_driver.py GIVEN.py ANSWER.py [--wrap-os] [--kill-before NAME:K]

Standard library only, and nothing of the kit: the grader copies this file into the student's
sandbox, where the kit is not in view, and runs it in a fresh interpreter under its recorder
(strace, outside the sandbox). It runs the given cell, then the answer cell, in one namespace (as
a notebook's cells share one), then follows the grader's commands, one JSON line each on standard
input, and answers each with JSON lines on the descriptor it names in its first line:

  {"op": "append", "path": P, "event": E}     append(P, E); the answer line is the acknowledgement
  {"op": "recover", "path": P}                recover(P)
  {"op": "batch", "items": [[A, B, STEPS], ...], "event": E}
      for each item, in order, each step of STEPS: "a": recover(A); "b": recover(B); "c": append(B, E);
      one answer line after each step
  {"op": "exit"}

The grader sends an event only after the previous one was acknowledged. Every answer line is one
os.write on the answer descriptor: the recorder sees it in order among the answer's own calls, and
a kill held before the K-th write of the transcript (strace -P counts only the transcript's calls)
never counts it. The answer's own standard input and output are /dev/null.

What a call gave crosses as JSON: a list of records as its length and a short hash of each record
(the grader hashes what it expects the same way, see record_hash); an exception as its class's
name, its bases' names, whether it is the given cell's TranscriptCorruptionError, and its message.

Only for the notebook's local crash check (where there is no strace): --wrap-os records the
answer's os calls in-process and sends each as an answer line before it returns; --kill-before
NAME:K (a system call's name: write, writev, pwrite64, fsync, fdatasync, ftruncate, truncate) makes
the process SIGKILL itself just before its K-th call of that name on a transcript (a file whose name
ends in .jsonl).
"""

import hashlib
import json
import os
import signal
import sys
import traceback

SHORT_HASH = 16  # hex digits of a record's hash
MESSAGE_CHARS = 300  # of an exception's message, in an answer line


def record_hash(value) -> str:
    """A short hash of one returned value, as the grader computes it for what it expects."""
    try:
        text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=True)
    except (TypeError, ValueError, RecursionError):
        return "not-json:" + type(value).__name__
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:SHORT_HASH]


class Channel:
    """The answer descriptor, moved out of the answer's way before any of its code runs."""

    def __init__(self):
        self.commands = os.fdopen(os.dup(0), "rb", buffering=0)
        self.fd = os.dup(1)
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)
        os.close(null)
        self._write = os.write  # held here: an answer that replaces os.write does not reach it

    def send(self, message: dict) -> None:
        """One answer line, in one write."""
        data = (json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8", "replace")
        view = memoryview(data)
        while view:
            view = view[self._write(self.fd, view):]

    def command(self):
        """The next command, or None when the grader closed the pipe."""
        line = self.commands.readline()
        return json.loads(line) if line else None


def describe_error(error: BaseException, contract_error) -> dict:
    """An exception as JSON: its class, its bases, whether it is the contract's, its message."""
    try:
        message = str(error)[:MESSAGE_CHARS]
    except Exception:  # noqa: BLE001 - a __str__ that raises still leaves the class to report
        message = "(its message could not be read)"
    kind = type(error)
    return {"class": kind.__name__, "mro": [base.__name__ for base in kind.__mro__[1:]],
            "contract": isinstance(error, contract_error) if contract_error is not None else False,
            "message": message}


def outcome_of(function, arguments: tuple, contract_error) -> dict:
    """Call function; what it returned (lengths and hashes only) or what it raised."""
    try:
        value = function(*arguments)
    except BaseException as error:  # noqa: BLE001 - whatever the answer raises is its outcome
        return {"raised": describe_error(error, contract_error)}
    if isinstance(value, list):
        return {"returned": {"type": "list", "hashes": [record_hash(item) for item in value],
                             "sequences": [item.get("sequence") if isinstance(item, dict) else None
                                           for item in value]}}
    returned = {"type": type(value).__name__, "hash": record_hash(value)}
    if isinstance(value, dict):
        returned["sequence"] = value.get("sequence")
    return {"returned": returned}


# ---------------------------------------------------------------- the local check's in-process recorder

WATCHED = ("open", "write", "writev", "pwrite", "fsync", "fdatasync", "ftruncate", "truncate", "close",
           "dup", "dup2", "rename", "replace", "link", "symlink", "unlink", "remove", "sync",
           "posix_fallocate", "copy_file_range", "sendfile", "splice", "fork")


class OsRecorder:
    """Wraps the os functions an answer changes files with; sends each call as an answer line.

    Only the notebook's local check uses this (there is no strace there): a patched os module is
    no recorder a grader could trust, since the answer can undo it and builtin open() bypasses it.
    The grader compares the file it finds with what the recorded calls build, and says so when
    they differ.
    """

    def __init__(self, channel: Channel, kill_before: str | None):
        self.channel = channel
        self.paths = {}  # descriptor -> absolute path it was opened with
        self.flags = {}  # descriptor -> flags it was opened with
        self.counts = {}
        self.existed = False  # whether the file an open names was there before it
        self.kill_name, self.kill_at = (kill_before.split(":")[0], int(kill_before.split(":")[1])) \
            if kill_before else (None, 0)
        self.original = {name: getattr(os, name) for name in WATCHED if hasattr(os, name)}

    def install(self) -> None:
        """Put the wrappers in place of the os functions."""
        for name, function in self.original.items():
            setattr(os, name, self._wrapper(name, function))

    def _transcript(self, path) -> bool:
        return isinstance(path, str) and path.endswith(".jsonl")

    def _path_of(self, fd):
        return self.paths.get(fd) if isinstance(fd, int) else None

    def _before(self, name: str, path) -> None:
        name = {"pwrite": "pwrite64"}.get(name, name)  # the names strace gives the same calls
        if self.kill_name == name and self._transcript(path):
            self.counts[name] = self.counts.get(name, 0) + 1
            if self.counts[name] == self.kill_at:
                os.kill(os.getpid(), signal.SIGKILL)

    def _wrapper(self, name: str, function):
        recorder = self

        def wrapped(*arguments, **options):
            path = recorder._call_path(name, arguments)
            recorder.existed = name == "open" and path is not None and os.path.exists(path)
            recorder._before(name, path)
            result = function(*arguments, **options)
            recorder._after(name, arguments, result, path)
            return result

        wrapped.__name__ = name
        wrapped.__wrapped__ = function
        return wrapped

    def _call_path(self, name: str, arguments: tuple):
        if name in ("open", "truncate", "rename", "replace", "link", "symlink", "unlink", "remove"):
            first = arguments[0] if arguments else None
            return os.path.abspath(os.fsdecode(first)) if isinstance(first, (str, bytes, os.PathLike)) else None
        return self._path_of(arguments[0]) if arguments and name in FD_CALLS else None

    def _after(self, name: str, arguments: tuple, result, path) -> None:
        call = {"call": name, "path": path, "pid": os.getpid()}
        if name in FD_CALLS:
            call["fd"] = arguments[0]
            call["flags"] = self.flags.get(arguments[0])
        if name == "open":
            fd, flags = result, arguments[1] if len(arguments) > 1 else os.O_RDONLY
            self.paths[fd], self.flags[fd] = path, flags
            call.update(flags=flags, fd=fd, existed=self.existed)
        elif name in ("dup", "dup2"):
            new = result if name == "dup" else arguments[1]
            self.paths[new], self.flags[new] = self.paths.get(arguments[0]), self.flags.get(arguments[0])
            call["new"] = new
        elif name == "close":
            self.paths.pop(arguments[0], None)
            self.flags.pop(arguments[0], None)
        elif name in ("write", "pwrite", "writev"):
            pieces = arguments[1] if name == "writev" else [arguments[1]]
            call["data"] = b"".join(bytes(piece) for piece in pieces)[:result].hex()
            if name == "pwrite":
                call["offset"] = arguments[2]
        elif name in ("ftruncate", "truncate"):
            call["length"] = arguments[1]
        elif name in ("rename", "replace", "link", "symlink"):
            call["target"] = os.path.abspath(os.fsdecode(arguments[1]))
        elif name in ("copy_file_range", "sendfile", "splice"):
            call["target"] = self._path_of(arguments[1] if name != "sendfile" else arguments[0])
            call["path"] = self._path_of(arguments[0] if name != "sendfile" else arguments[1])
        self.channel.send(call)


FD_CALLS = ("write", "writev", "pwrite", "fsync", "fdatasync", "ftruncate", "close", "dup", "dup2",
            "posix_fallocate")


# ---------------------------------------------------------------- the answer cell, as a notebook runs it


class NotebookShell:
    """What get_ipython() gives the answer cell here: IPython's translation of a line magic or a shell
    escape calls it (grading/durability/cell.py translates the cell on the grader's side). The magics
    that time a statement run it once; the rest (%matplotlib, !ls, ...) only change what a notebook
    shows, and do nothing here."""

    TIMING = ("time", "timeit", "prun")

    def __init__(self, namespace: dict):
        self.namespace = namespace

    def run_line_magic(self, name: str, line: str, _stack_depth: int = 1):
        """%time STATEMENT and its kind run STATEMENT once, its options left out; the others do nothing."""
        words = line.split()
        while name in self.TIMING and words and words[0].startswith("-"):  # -n 3, -r 1, -q, ...
            words = words[2:] if words[0] in ("-n", "-r", "-p", "-o", "-s", "-l", "-T", "-D") else words[1:]
        statement = line[line.find(words[0]):] if words else ""
        if name in self.TIMING and statement:
            return run_source(statement, "<a timed line>", self.namespace)
        return None

    def run_cell_magic(self, name: str, line: str, cell: str):
        """A cell magic nested in a cell: a timing one runs its body once, any other does nothing."""
        if name in self.TIMING or name == "capture":
            run_source(cell, "<a magic's cell>", self.namespace)

    def system(self, command: str) -> None:
        """!command: a notebook shows its output; here it runs nothing."""

    def getoutput(self, command: str) -> list:
        """x = !command: nothing ran, so nothing was printed."""
        return []


def run_source(source: str, label: str, namespace: dict):
    """Run source in namespace as a notebook cell runs: top-level await allowed (the cell is then
    awaited in an event loop of its own)."""
    import ast

    code = compile(source, label, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    if code.co_flags & 0x80:  # inspect.CO_COROUTINE: the cell awaits at its top level
        import asyncio

        return asyncio.run(eval(code, namespace))  # noqa: S307 - the driver's whole purpose
    exec(code, namespace)  # noqa: S102 - the driver's whole purpose
    return None


# ---------------------------------------------------------------- the commands


def run_batch(channel: Channel, command: dict, functions: dict, contract_error) -> None:
    """Judge a batch of states: each step's outcome goes out as soon as it is known."""
    event = command.get("event")
    for index, (first, second, steps) in enumerate(command["items"]):
        for step in steps:
            if step == "c":
                outcome = outcome_of(functions["append"], (second, dict(event)), contract_error)
            else:
                outcome = outcome_of(functions["recover"], (first if step == "a" else second,), contract_error)
            channel.send({"i": index, "step": step, **outcome})
    channel.send({"batch_done": len(command["items"])})


def load(channel: Channel, given_path: str, answer_path: str):
    """Run the given cell, then the answer cell; return (namespace, the contract's error class)."""
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    shell = NotebookShell(namespace)
    namespace["get_ipython"] = lambda: shell  # as in a notebook, where every cell can call it
    for label, path in (("given cell", given_path), ("answer cell", answer_path)):
        with open(path, encoding="utf-8") as file:
            source = file.read()
        try:
            run_source(source, f"<{label}>", namespace)
        except BaseException as error:  # noqa: BLE001
            channel.send({"loaded": False, "cell": label, "raised": describe_error(error, None),
                          "traceback": traceback.format_exc()[-2000:]})
            return None, None
        if label == "given cell":
            contract_error = namespace.get("TranscriptCorruptionError")
    missing = [name for name in ("append", "recover") if not callable(namespace.get(name))]
    if missing:
        channel.send({"loaded": False, "cell": "answer cell", "missing": missing})
        return None, None
    channel.send({"loaded": True})
    return namespace, contract_error


def main(argv) -> int:
    """Run the driver (see the module doc)."""
    given_path, answer_path = argv[0], argv[1]
    options = argv[2:]
    channel = Channel()
    channel.send({"ready": True, "pid": os.getpid(), "fd": channel.fd})
    if "--wrap-os" in options:
        kill_before = options[options.index("--kill-before") + 1] if "--kill-before" in options else None
        OsRecorder(channel, kill_before).install()
    namespace, contract_error = load(channel, given_path, answer_path)
    if namespace is None:
        return 1
    functions = {"append": namespace["append"], "recover": namespace["recover"]}
    while True:
        command = channel.command()
        if command is None or command.get("op") == "exit":
            return 0
        if command["op"] == "append":
            outcome = outcome_of(functions["append"], (command["path"], dict(command["event"])), contract_error)
            channel.send({"op": "append", **outcome})
        elif command["op"] == "recover":
            channel.send({"op": "recover", **outcome_of(functions["recover"], (command["path"],), contract_error)})
        elif command["op"] == "batch":
            run_batch(channel, command, functions, contract_error)


if __name__ == "__main__":
    # os._exit: a thread the answer left running must not keep the driver (and the grading) waiting
    os._exit(main(sys.argv[1:]))
