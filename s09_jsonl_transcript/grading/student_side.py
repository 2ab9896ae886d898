"""The student's end of the grader's channel: it runs in the student's kernel and only relays.

The trusted kernel (channel.py) asks this kernel to call one answer, with arguments written by
wire.py; this module rebuilds the arguments, calls the answer, and sends back its return value (or
what it raised) the same way. Everything else the answer needs from the trusted side (the bytes of a
file, the next item of an iterator, the time of a clock) it asks for on a Unix socket in the
channel's folder, one request and one answer at a time.

Once the result is sent, the call waits for the trusted side's word that it has copied back what the
answer left in the exchange folder (the student's side frozen meanwhile, where the grader has a
freezer): only then does the call end and let go of what the answer returned.

A served file keeps its size and position here, so `seek` and `tell` cost no request: only a read
does, and it carries the position to read at. A seek that a real file would refuse (before the
start of the file, an odd whence or offset) is asked of the trusted side, whose file raises its own
error, raised here at the same call.

Nothing here is trusted. Student code shares this process and may change any of it; it can only
change what this kernel sends, and what it sends is read as data on the other side.
"""

from __future__ import annotations

import io
import json
import os
import socket
import sys
import threading
from pathlib import Path

from . import kit, wire

_objects: dict = {}  # handle -> an object an answer made (an instance of an answer's class)
_current = {"call": None, "socket": None}  # the call being served: a stand-in kept from an earlier one asks under it
_files: dict = {}  # number -> the RemoteFile of that stand-in
_connection = {"path": None, "socket": None}
_lock = threading.Lock()


def call(request_text: str) -> None:
    """Carry out one call from the trusted kernel and send back its result."""
    request = json.loads(request_text)
    _current["call"], _current["socket"] = request["call"], request["socket"]
    printed = _printed()
    try:
        target = _target(request)
        if "attribute" in request:
            value = getattr(target, request["attribute"])
            if callable(value):
                _send_result(printed, callable=True)
                return
        else:
            args = wire.decode(request["args"], _argument)
            kwargs = wire.decode(request["kwargs"], _argument)
            value = target(*args, **kwargs)
    except BaseException as error:  # noqa: BLE001 - what the answer raises is its result
        _send_result(printed, raised=wire.describe_exception(error))
        return
    if request.get("keep"):
        handle = len(_objects) + 1
        _objects[handle] = value
        _send_result(printed, object=handle)
        return
    try:
        text = wire.encode(value)
    except wire.TooLarge:
        _send_result(printed, too_large=True)
        return
    _send_result(printed, text.encode("ascii"), value=True)


def _target(request: dict):
    if "object" in request:
        subject = _objects[request["object"]]
        return subject if "attribute" in request else getattr(subject, request["method"])
    import __main__

    name = request["name"]
    if not hasattr(__main__, name):  # as the student's notebook would say it
        raise NameError(f"name {name!r} is not defined")
    return getattr(__main__, name)


# --------------------------------------------------------------------------- what the answers print


def _printed():
    """(characters printed so far, the guard's record) when the grader's guard caps the output, else None."""
    guard = sys.modules.get(f"{__package__}.guard")
    record = getattr(guard, "output", None)
    return (record.characters, record) if record is not None else None


def _send_result(printed, data: bytes = b"", **fields) -> None:
    if printed is not None:
        before, record = printed
        fields["printed"] = record.characters - before
        fields["tail"] = record.tail(min(fields["printed"], 1000))
    fields["positions"] = {str(number): file._position for number, file in _files.items() if file._position is not None}
    for file in _files.values():
        file.forget()  # the check may read or move the file before the next call: ask again then
    with _lock:
        connection = _socket()
        connection.sendall(wire.frame({"call": _current["call"], "op": "result", **fields}, data))
        # The trusted side's word that it copied back what the answer left: only then does the call end, and
        # with it what the answer returned (a pipe it holds closes here). A trusted side that gave up on the
        # call says nothing: the call ends after its own limit.
        connection.settimeout(_call_limit())
        try:
            wire.read_frame(connection)
        except (OSError, wire.Malformed):
            pass
        finally:
            connection.settimeout(None)


def _call_limit() -> float:
    try:
        return float(os.environ.get("S09_CALL_TIMEOUT", "15"))  # channel.TIMEOUT_VARIABLE, set by the grader
    except ValueError:
        return 15.0


# --------------------------------------------------------------------------- the socket


def _socket():
    path = _current["socket"]
    if _connection["path"] != path or _connection["socket"] is None:
        made = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        address, folder = wire.socket_address(path)
        try:
            made.connect(address)
        finally:
            if folder is not None:
                os.close(folder)
        _connection.update(path=path, socket=made)
    return _connection["socket"]


def _ask(op: str, **fields) -> tuple:
    """Send one request to the trusted side; return its answer (header, data), or raise what it raised."""
    with _lock:
        connection = _socket()
        connection.sendall(wire.frame({"call": _current["call"], "op": op, **fields}))
        header, data = wire.read_frame(connection)
    if "raised" in header:
        raise wire.rebuild_exception(header["raised"], _known())
    if "refused" in header:
        raise RuntimeError(f"the grader refused this request: {header['refused']}")
    return header, data


def _known() -> dict:
    return wire.known_exceptions(kit.lesson())


# --------------------------------------------------------------------------- arguments


def _argument(kind: str, payload):
    """An argument of this side's own kinds: a stand-in that asks the trusted side, an object kept here."""
    if kind == "$file" and type(payload) is int:
        return _files.setdefault(payload, RemoteFile(payload))
    if kind == "$iterator" and type(payload) is int:
        return RemoteIterator(payload)
    if kind == "$clock" and type(payload) is int:
        return lambda: wire.decode(_ask("tick", clock=payload)[0]["value"])
    if kind == "$handle" and type(payload) is int:
        return _objects[payload]
    if kind == "$transcript" and isinstance(payload, str):
        return kit.lesson().JSONLTranscript(Path(payload))
    return NotImplemented


class RemoteIterator:
    """An iterator whose items the trusted side hands out one at a time, when asked."""

    def __init__(self, number: int):
        self._number = number

    def __iter__(self):
        return self

    def __next__(self):
        header, _ = _ask("next", iterator=self._number)
        if header.get("stop"):
            raise StopIteration
        return wire.decode(header["item"])


class RemoteFile(io.RawIOBase):
    """A read-only binary file held by the trusted side, which serves (and counts) every read."""

    def __init__(self, number: int):
        super().__init__()
        self._number = number
        self._size = self._position = None  # known for the current call once asked

    def forget(self) -> None:
        """The call ended: the file may change before the next one."""
        self._size = self._position = None

    def _state(self) -> None:
        if self._position is None:
            header, _ = _ask("state", file=self._number)
            self._size, self._position = header.get("size"), header.get("position")

    def _served(self, op: str, size) -> bytes:
        self._state()
        header, data = _ask(op, file=self._number, size=wire.encode(size), at=self._position)
        self._position = header.get("position")
        return data

    def read(self, size: int = -1) -> bytes:
        """Read up to size bytes (all that is left when size is negative or None)."""
        return self._served("read", size)

    def readall(self) -> bytes:
        return self._served("read", -1)

    def readinto(self, buffer) -> int:
        data = self._served("read", len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def readline(self, size: int = -1) -> bytes:
        """Read one line, newline included."""
        return self._served("readline", size)

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        """Move to a position; seeking reads nothing, and asks nothing when a real file would simply do it."""
        self._state()
        if type(offset) is int and type(whence) is int and whence in (0, 1, 2) and None not in (self._size,
                                                                                                 self._position):
            target = offset + (0, self._position, self._size)[whence]
            if target >= 0:
                self._position = target
                return target
        header, _ = _ask("seek", file=self._number, offset=wire.encode(offset), whence=wire.encode(whence),
                         at=self._position)
        self._position = header["value"]
        return self._position

    def tell(self) -> int:
        self._state()
        if self._position is None:
            return self.seek(0, os.SEEK_CUR)
        return self._position

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def fileno(self) -> int:
        raise io.UnsupportedOperation("this file is served by the grader: it has no descriptor here")
