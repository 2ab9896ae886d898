"""The student's end of the grader's channel: it runs in the student's kernel and only relays.

The trusted kernel (channel.py) asks this kernel to call one answer, with arguments written as
JSON; this module builds the arguments, calls the answer, and sends back its return value as JSON
text. Everything else the answer needs from the trusted side (the bytes of a file, the next item
of an iterator, the time of a clock) it asks for on the kernel's stdin channel, one request at a
time: `input(<request as JSON>)`, answered by the trusted side.

Nothing here is trusted. Student code shares this process and may change any of it; it can only
change what this kernel sends, and what it sends is parsed as plain JSON on the other side.
"""

from __future__ import annotations

import base64
import builtins
import io
import json
import os
from datetime import datetime
from pathlib import Path

_objects: dict = {}  # handle -> an object an answer made (an instance of an answer's class)
_current = {"call": None}  # the call being served: a stand-in kept from an earlier call asks under it


def call(request_text: str) -> None:
    """Carry out one call from the trusted kernel and send back its result."""
    request = json.loads(request_text)
    call_id = _current["call"] = request["call"]
    try:
        target = _target(request)
        if "attribute" in request:
            _send_attribute(call_id, target, request["attribute"])
            return
        args = [_from_wire(call_id, value) for value in request["args"]]
        kwargs = {name: _from_wire(call_id, value) for name, value in request["kwargs"].items()}
        value = target(*args, **kwargs)
    except BaseException as error:  # noqa: BLE001 - what the answer raises is its result
        _ask(call_id, "result", raised=type(error).__name__, message=str(error)[:2000])
        return
    if request.get("keep"):
        handle = len(_objects) + 1
        _objects[handle] = value
        _ask(call_id, "result", object=handle)
        return
    try:
        text = json.dumps(value, allow_nan=False, ensure_ascii=True)
    except (TypeError, ValueError, RecursionError):
        _ask(call_id, "result", not_json=type(value).__name__)
        return
    _ask(call_id, "result", value=text)


def _target(request: dict):
    if "object" in request:
        subject = _objects[request["object"]]
        return subject if "attribute" in request else getattr(subject, request["method"])
    import __main__

    name = request["name"]
    if not hasattr(__main__, name):  # as the student's notebook would say it
        raise NameError(f"name {name!r} is not defined")
    return getattr(__main__, name)


def _send_attribute(call_id, subject, name: str) -> None:
    value = getattr(subject, name)
    if callable(value):
        _ask(call_id, "result", callable=True)
        return
    try:
        _ask(call_id, "result", value=json.dumps(value, allow_nan=False, ensure_ascii=True))
    except (TypeError, ValueError, RecursionError):
        _ask(call_id, "result", not_json=type(value).__name__)


def _ask(call_id, op: str, **fields):
    """Send one request to the trusted side on the stdin channel; return its answer, parsed."""
    answer = builtins.input(json.dumps({"call": _current["call"], "op": op, **fields}))
    return json.loads(answer) if answer else None


def _from_wire(call_id, value):
    """An argument from its JSON form: plain data, or a stand-in that asks the trusted side."""
    if isinstance(value, list):
        return [_from_wire(call_id, item) for item in value]
    if not isinstance(value, dict):
        return value
    (kind, payload), = value.items()
    if kind == "$dict":
        return {key: _from_wire(call_id, item) for key, item in payload.items()}
    if kind == "$tuple":
        return tuple(_from_wire(call_id, item) for item in payload)
    if kind == "$path":
        return Path(payload)
    if kind == "$transcript":
        from s09_jsonl_transcript.code import JSONLTranscript

        return JSONLTranscript(Path(payload))
    if kind == "$file":
        return RemoteFile(call_id, payload)
    if kind == "$iterator":
        return RemoteIterator(call_id, payload)
    if kind == "$clock":
        return lambda: datetime.fromisoformat(_ask(call_id, "tick", clock=payload)["value"])
    if kind == "$object":
        return _objects[payload]
    raise ValueError(f"unknown argument kind {kind}")


class RemoteIterator:
    """An iterator whose items the trusted side hands out one at a time, when asked."""

    def __init__(self, call_id, number: int):
        self._call, self._number = call_id, number

    def __iter__(self):
        return self

    def __next__(self):
        answer = _ask(self._call, "next", iterator=self._number)
        if answer.get("stop"):
            raise StopIteration
        return _from_wire(self._call, answer["item"])


class RemoteFile(io.RawIOBase):
    """A read-only binary file held by the trusted side, which serves (and counts) every read."""

    def __init__(self, call_id, number: int):
        super().__init__()
        self._call, self._number = call_id, number

    def _request(self, op: str, **fields):
        return _ask(self._call, op, file=self._number, **fields)

    def read(self, size: int = -1) -> bytes:
        """Read up to size bytes (all that is left when size is negative or None)."""
        size = -1 if size is None else size
        return base64.b64decode(self._request("read", size=size)["data"])

    def readall(self) -> bytes:
        return self.read(-1)

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def readline(self, size: int = -1) -> bytes:
        """Read one line, newline included."""
        size = -1 if size is None else size
        return base64.b64decode(self._request("readline", size=size)["data"])

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        """Move to a position; seeking reads nothing."""
        return self._request("seek", offset=offset, whence=whence)["value"]

    def tell(self) -> int:
        return self._request("tell")["value"]

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def fileno(self) -> int:
        raise io.UnsupportedOperation("this file is served by the grader: it has no descriptor here")
