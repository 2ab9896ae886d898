"""Real crashes: the kit's one child-process spawner, and the scripted agent killed in a child.

Every real crash in the kit (the crash lab's kill campaigns, the lessons, the tests) starts a child
Python process here (`start_child`) and ends it with SIGKILL (`kill_child`). `AgentProcess` runs the
lesson's scripted agent in such a child, one event per request, and can stop it in the middle of a
write, so that a partial tail on disk is real; `crash_agent_in_child` and `simulate_agent_crash` use it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Callable

from ..code import BUG_FIX_SCRIPT, MockLLM, messages_of, ticking_clock
from ..lab import DurableTranscript, OsFileIO


def child_process_env() -> dict:
    """This process's environment, with PYTHONPATH set so a child Python imports this very package."""
    package_parent = str(Path(__file__).resolve().parents[2])
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package_parent, os.environ.get("PYTHONPATH")]))}


def start_child(target: str, *args) -> subprocess.Popen:
    """Start target ("package.module:function") in a new Python process, called with args as strings.

    The child imports this very package; its stdin, stdout and stderr are text pipes.
    Every real crash in the kit (the lessons, the crash lab, the tests) starts here.
    """
    module, function = target.split(":")
    program = f"import sys; from {module} import {function}; {function}(*sys.argv[1:])"
    return subprocess.Popen([sys.executable, "-c", program, *map(str, args)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_process_env())


def kill_child(child: subprocess.Popen) -> tuple[str, str]:
    """Kill the child at once (SIGKILL on POSIX): none of its code runs again.

    Returns what it wrote to stdout and stderr that had not been read yet.
    """
    child.kill()
    return child.communicate()


class AgentProcess:
    """The scripted agent (MockLLM + the agent loop) running in a child process, one event per request."""

    def __init__(self, path, *, ticking: bool = False):
        self.child = start_child(f"{__name__}:agent_child", path, "ticking" if ticking else "real")

    def append_next(self) -> dict:
        """Let the agent append its next event; returns the record once append has returned (acknowledged)."""
        return json.loads(self._ask("go"))

    def messages(self) -> list[dict]:
        """The messages[] the agent holds in its memory right now."""
        return json.loads(self._ask("messages"))

    def tear_next(self) -> None:
        """Let the agent start its next append and stop it halfway through the write (a staged crash point)."""
        if self._ask("tear") != "torn":
            raise RuntimeError("the agent did not reach the middle of its write")

    def kill(self) -> int:
        """SIGKILL the agent and return its exit status (-9 on POSIX)."""
        kill_child(self.child)
        return self.child.returncode

    def _ask(self, command: str) -> str:
        self.child.stdin.write(command + "\n")
        self.child.stdin.flush()
        reply = self.child.stdout.readline().strip()
        if not reply:
            raise RuntimeError(f"the agent process died: {kill_child(self.child)[1].strip()[-500:]}")
        return reply


class _StopMidWrite(OsFileIO):
    """File I/O whose next write, once armed, puts half its bytes on disk and then never returns."""

    def __init__(self, on_torn: Callable[[], None]):
        self.armed, self.on_torn, self.torn = False, on_torn, False

    def write(self, fd, data):
        if not self.armed:
            return super().write(fd, data)
        super().write(fd, data[: len(data) // 2])
        self.torn = True
        self.on_torn()  # blocks until the process is killed, or raises to abandon the writer
        raise AssertionError("a torn write must not return")

    def truncate(self, fd, length):
        if self.torn:  # a dying process cleans nothing up: its half record stays on disk
            self.torn = False  # a later writer's repair does
            return
        super().truncate(fd, length)


def agent_child(path: str, clock: str = "real") -> None:
    """Body of the agent's child process. Reads commands on stdin, one reply line each:

    'go' appends the next event and prints its record once append has returned;
    'messages' prints the messages[] the agent holds in memory;
    'tear' starts the next append, puts half of its record on disk, prints 'torn' and
    waits, in the middle of the write, for the parent to kill the process.
    """
    def torn():
        print("torn", flush=True)
        sys.stdin.readline()  # blocks until the parent kills us

    file_io = _StopMidWrite(torn)
    transcript = DurableTranscript(path, clock=ticking_clock() if clock == "ticking" else None, file_io=file_io)
    llm, records = MockLLM(), []
    for command in sys.stdin:
        if command.strip() == "messages":
            print(json.dumps(messages_of(records)), flush=True)  # the lesson's own message builder
            continue
        event = llm.next_event()
        file_io.armed = command.strip() == "tear"
        records.append(transcript.append(event))
        print(json.dumps(records[-1]), flush=True)


def _check_kill_point(kill_after, tear: bool) -> None:
    last = len(BUG_FIX_SCRIPT) - (1 if tear else 0)  # a tear needs a next event to tear
    if not isinstance(kill_after, int) or isinstance(kill_after, bool) or not 0 <= kill_after <= last:
        raise ValueError(f"kill_after must be between 0 and {last}, not {kill_after!r}")


def crash_agent_in_child(path, kill_after: int, tear: bool = True, *, ticking: bool = False) -> list[int]:
    """Run the agent in a child process and kill it (SIGKILL) after kill_after acknowledged appends.

    Returns the sequences the child acknowledged. With tear, the child is killed in
    the middle of its next append, with half of that record on disk: a real partial tail.
    """
    _check_kill_point(kill_after, tear)
    agent = AgentProcess(path, ticking=ticking)
    try:
        acknowledged = [agent.append_next()["sequence"] for _ in range(kill_after)]
        if tear:
            agent.tear_next()
    finally:
        agent.kill()
    return acknowledged


class _AbandonWriter(Exception):
    """Raised inside a torn write to leave it as a dying process would."""


def simulate_agent_crash(path, kill_after: int, tear: bool = True, *, ticking: bool = False) -> list[int]:
    """The same crash as crash_agent_in_child, acted out in this process (where no SIGKILL exists).

    Appends kill_after events, optionally puts half of the next record on disk, then
    abandons the writer as a dying process would. Returns the acknowledged sequences.
    """
    _check_kill_point(kill_after, tear)

    def abandon():
        raise _AbandonWriter

    file_io = _StopMidWrite(abandon)
    transcript = DurableTranscript(path, clock=ticking_clock() if ticking else None, file_io=file_io)
    llm = MockLLM()
    acknowledged = [transcript.append(llm.next_event())["sequence"] for _ in range(kill_after)]
    if tear:
        file_io.armed = True
        try:
            transcript.append(llm.next_event())
        except _AbandonWriter:
            pass
    transcript.close()  # the operating system closes a dead process's descriptors and locks
    return acknowledged
