"""The grader's end of the freeze line: the trusted side asks, the grader freezes or thaws the student's side.

When an answer returns, the trusted kernel copies back what it left in the exchange folder. The
student's processes (a child the answer forked, a thread it started) could still be writing there,
so the trusted side asks the grader, outside both sandboxes, to freeze the student's side first
(sandbox.FreezerGroup: every process of the student's sandbox, and only those) and to thaw it once
the copy is done. The request travels on a Unix socket in the grader's watch folder, which only the
trusted sandbox sees: no answer can ask for a thaw, nor a freeze.

One byte a request, one byte an answer: b"F" freezes (answered b"F" once frozen, b"P" when the
freeze did not complete in time, b"N" when there is no freezer group), b"T" thaws (answered b"T").
A line that closes, and the server's end, thaw the group: the student's side is never left frozen.
While it is frozen, `frozen` is True, so the grader's stop watcher does not take a frozen kernel for
one stopped by a signal.
"""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path

from . import wire

FREEZE, THAW = b"F", b"T"
FROZEN, PARTLY, NO_FREEZER, THAWED = b"F", b"P", b"N", b"T"
_POLL = 0.2  # seconds between looks at whether the server should end


class FreezeServer:
    """Serves freeze and thaw requests for one grading, on a socket at path, in a thread of its own."""

    def __init__(self, path: Path, group):
        self.group = group  # a sandbox.FreezerGroup, or None where there is none
        self.frozen = False
        self._ending = threading.Event()
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        address, folder = wire.socket_address(str(path))  # a deep temporary folder makes a long path
        try:
            self._listener.bind(address)
        finally:
            if folder is not None:
                os.close(folder)
        os.chmod(path, 0o666)  # the trusted sandbox runs as a user of its own
        self._listener.listen(1)
        self._listener.settimeout(_POLL)
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop serving and thaw the group (a frozen process could not even be killed)."""
        self._ending.set()
        self._thread.join()
        self._listener.close()
        self._thaw()

    def _serve(self) -> None:
        while not self._ending.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with connection:
                self._serve_line(connection)
            self._thaw()

    def _serve_line(self, connection) -> None:
        connection.settimeout(_POLL)
        while not self._ending.is_set():
            try:
                request = connection.recv(1)
            except TimeoutError:
                continue
            except OSError:
                return
            if not request:
                return
            try:
                connection.sendall(self._answer(request))
            except OSError:
                return

    def _answer(self, request: bytes) -> bytes:
        if request == FREEZE:
            if self.group is None:
                return NO_FREEZER
            self.frozen = True
            return FROZEN if self.group.freeze() else PARTLY
        self._thaw()
        return THAWED

    def _thaw(self) -> None:
        if self.group is not None:
            self.group.thaw()
        self.frozen = False
