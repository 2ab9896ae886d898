"""What crosses the grader's channel, and how: JSON text, with a typed description for what JSON cannot hold.

Both ends use it: channel.py in the trusted kernel, student_side.py in the student's kernel. A value
is written as JSON where JSON holds it exactly (None, booleans, numbers, strings, lists, dicts with
string keys). Anything else is written as an object with one key that starts with "$" and names its
type, so the other side rebuilds the same kind of value:

    tuple, namedtuple     {"$tuple": [...]}          a tuple (a namedtuple equals it)
    set, frozenset        {"$set": [...]}            {"$frozenset": [...]}
    bytes, bytearray      {"$bytes": "<base64>"}     {"$bytearray": "<base64>"}
    pathlib paths         {"$path": "/tmp/..."}      a Path
    datetime              {"$datetime": "<ISO 8601>"}
    other dicts           {"$dict": [[key, value], ...]}   non-string keys, or a key starting with "$"
    NaN, infinities       {"$float": "nan"}          huge integers {"$int": "<hex>"}
    anything else         {"$unreadable": {"type": "Foo", "repr": "..."}}

An unreadable value becomes an `Unreadable` on the other side: it equals nothing but itself, so a
check that compares it fails and a check that ignores it does not. Subclasses of str, int, float,
list and dict cross as the plain type (an `__eq__` that always says yes does not cross). Exceptions
cross with the built-in and lesson classes they derive from (`describe_exception`,
`rebuild_exception`).

A side may add its own kinds (a file served from the other side, an object kept there) through the
`special` hooks. This module imports nothing of the kit: the student's kernel loads it too.
"""

from __future__ import annotations

import base64
import builtins
import json
import math
import os
import struct
from datetime import datetime
from pathlib import Path, PurePath

VALUE_LIMIT = 16 << 20  # characters of one encoded value: a larger one is refused, not copied
DEPTH_LIMIT = 100  # containers nested deeper than this cross as unreadable
_REPR_LIMIT = 200
_BIG_INT_BITS = 12_000  # below Python's 4,300-digit limit on int <-> str conversion
TYPED = ("$tuple", "$set", "$frozenset", "$bytes", "$bytearray", "$path", "$datetime", "$dict", "$float", "$int",
         "$unreadable")


class TooLarge(ValueError):
    """The value's JSON would be longer than VALUE_LIMIT characters."""


class Malformed(ValueError):
    """Text that is not what the other side's `encode` writes."""


class Unreadable:
    """A value that could not cross as data: only its type's name and its repr did."""

    def __init__(self, type_name: str, text: str):
        self.type_name, self.text = type_name, text

    def __eq__(self, other):
        return self is other

    def __hash__(self):
        return id(self)

    def __repr__(self):
        return f"<a {self.type_name} that cannot cross as data: {self.text}>"


# --------------------------------------------------------------------------- encoding


def encode(value, special=None, limit: int = VALUE_LIMIT) -> str:
    """value as JSON text (see the module's docstring); TooLarge past limit characters.

    special(value) may return a JSON-ready replacement (a dict with one "$" key) or None.
    """
    budget = [limit]
    text = json.dumps(_data(value, special, budget, 0), ensure_ascii=True, allow_nan=False,
                      separators=(",", ":"))
    if len(text) > limit:
        raise TooLarge(f"more than {limit:,} characters")
    return text


def _spend(budget: list, amount: int) -> None:
    budget[0] -= amount
    if budget[0] < 0:
        raise TooLarge("too large")


def _data(value, special, budget: list, depth: int):
    """value as something json.dumps writes exactly (typed descriptions included)."""
    _spend(budget, 2)
    if value is None or value is True or value is False:
        return value
    if isinstance(value, str):
        text = str.__str__(value)
        _spend(budget, len(text))
        return text
    if isinstance(value, int):
        number = int.__int__(value)
        if number.bit_length() > _BIG_INT_BITS:
            text = format(number, "x")
            _spend(budget, len(text))
            return {"$int": text}
        _spend(budget, 20)
        return number
    if isinstance(value, float):
        number = float.__float__(value)
        return number if math.isfinite(number) else {"$float": repr(number)}
    if special is not None:
        replaced = special(value)
        if replaced is not None:
            return replaced
    if depth >= DEPTH_LIMIT:
        return _unreadable(value, f"nested more than {DEPTH_LIMIT} levels deep")
    inner = depth + 1
    if isinstance(value, tuple):
        return {"$tuple": [_data(item, special, budget, inner) for item in tuple.__iter__(value)]}
    if isinstance(value, list):
        return [_data(item, special, budget, inner) for item in list.__iter__(value)]
    if isinstance(value, dict):
        pairs = list(dict.items(value))
        if all(type(key) is str and not key.startswith("$") for key, _ in pairs):
            return {key: _data(item, special, budget, inner) for key, item in pairs}
        return {"$dict": [[_data(key, special, budget, inner), _data(item, special, budget, inner)]
                          for key, item in pairs]}
    if isinstance(value, (set, frozenset)):
        items = [_data(item, special, budget, inner) for item in (set.__iter__(value) if isinstance(value, set)
                                                                  else frozenset.__iter__(value))]
        return {"$set" if isinstance(value, set) else "$frozenset": items}
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        _spend(budget, len(raw) * 4 // 3 + 4)
        return {"$bytearray" if isinstance(value, bytearray) else "$bytes": base64.b64encode(raw).decode()}
    if isinstance(value, PurePath):
        text = PurePath.__str__(value)
        _spend(budget, len(text))
        return {"$path": text}
    if isinstance(value, datetime):
        return {"$datetime": datetime.isoformat(value)}
    return _unreadable(value)


def _unreadable(value, why: str | None = None) -> dict:
    try:
        text = why or repr(value)
    except Exception:  # noqa: BLE001 - a repr that raises is the value's own business
        text = "its repr raised an error"
    return {"$unreadable": {"type": type(value).__qualname__[:_REPR_LIMIT], "repr": str(text)[:_REPR_LIMIT]}}


# --------------------------------------------------------------------------- decoding


def decode(text, special=None):
    """The value that `encode` wrote as text. Malformed for anything else.

    special(kind, payload) may rebuild a kind of this side's own (a "$" key outside TYPED), or a
    TYPED one differently (return NotImplemented to leave it to this module).
    """
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        raise Malformed("not JSON") from None
    return value_of(data, special)


def value_of(data, special=None, depth: int = 0):
    """The value of already parsed JSON data (see decode)."""
    if depth > DEPTH_LIMIT + 2:
        raise Malformed("nested too deeply")
    if isinstance(data, list):
        return [value_of(item, special, depth + 1) for item in data]
    if not isinstance(data, dict):
        return data
    if len(data) != 1 or not next(iter(data)).startswith("$"):
        return {key: value_of(item, special, depth + 1) for key, item in data.items()}
    (kind, payload), = data.items()
    if special is not None:
        rebuilt = special(kind, payload)
        if rebuilt is not NotImplemented:
            return rebuilt
    try:
        return _typed(kind, payload, special, depth)
    except (TypeError, ValueError, AttributeError) as error:
        if isinstance(error, Malformed):
            raise
        raise Malformed(f"a malformed {kind}") from None


def _typed(kind: str, payload, special, depth: int):
    items = (lambda: [value_of(item, special, depth + 1) for item in payload]) if isinstance(payload, list) else None
    if kind == "$tuple" and items:
        return tuple(items())
    if kind == "$set" and items:
        return set(items())
    if kind == "$frozenset" and items:
        return frozenset(items())
    if kind in ("$bytes", "$bytearray") and isinstance(payload, str):
        raw = base64.b64decode(payload.encode("ascii"), validate=True)
        return bytearray(raw) if kind == "$bytearray" else raw
    if kind == "$path" and isinstance(payload, str):
        return Path(payload)
    if kind == "$datetime" and isinstance(payload, str):
        return datetime.fromisoformat(payload)
    if kind == "$dict" and isinstance(payload, list):
        return {value_of(key, special, depth + 1): value_of(item, special, depth + 1) for key, item in payload}
    if kind == "$float" and payload in ("nan", "inf", "-inf"):
        return float(payload)
    if kind == "$int" and isinstance(payload, str):
        return int(payload, 16)
    if kind == "$unreadable" and isinstance(payload, dict):
        return Unreadable(str(payload.get("type", "?"))[:_REPR_LIMIT], str(payload.get("repr", ""))[:_REPR_LIMIT])
    raise Malformed(f"an unknown kind of value {kind[:40]!r}")


# --------------------------------------------------------------------------- exceptions


def describe_exception(error: BaseException, special=None) -> dict:
    """What crosses of an exception: its classes (module, name), its args, its attributes and its message."""
    classes = [[getattr(cls, "__module__", "?"), getattr(cls, "__qualname__", "?")]
               for cls in type(error).__mro__ if cls is not object]
    described = {"classes": classes[:50], "message": _text_of(error)[:2000]}
    attributes = {name: item for name, item in getattr(error, "__dict__", {}).items()
                  if isinstance(name, str) and not name.startswith("_")}
    if isinstance(error, OSError):  # kept by OSError itself, not in its args
        attributes.update({name: getattr(error, name) for name in ("filename", "filename2")
                           if getattr(error, name, None) is not None})
    for field, value in (("args", tuple(getattr(error, "args", ()))), ("attributes", attributes)):
        try:
            described[field] = json.loads(encode(value, special, limit=64 << 10))
        except (TooLarge, ValueError, TypeError, RecursionError):
            pass
    return described


def _text_of(error: BaseException) -> str:
    try:
        return str(error)
    except Exception:  # noqa: BLE001 - a __str__ that raises
        return ""


def known_exceptions(*modules) -> dict:
    """(module, name) -> class for the built-in exceptions and those defined in modules."""
    known = {("builtins", name): value for name, value in vars(builtins).items()
             if isinstance(value, type) and issubclass(value, BaseException)}
    for module in modules:
        known.update({(module.__name__, name): value for name, value in vars(module).items()
                      if isinstance(value, type) and issubclass(value, BaseException)
                      and value.__module__ == module.__name__})
    return known


def rebuild_exception(described, known: dict, special=None, reserved=()) -> BaseException:
    """The exception described (see describe_exception), as an instance of the same class where it is
    known, else of a class of the same name derived from the known classes it derives from.

    A class whose name is in reserved (this side's own exceptions) is renamed, so that no answer can
    raise what reads as the grader's own verdict.
    """
    if not isinstance(described, dict) or not isinstance(described.get("classes"), list):
        raise Malformed("a malformed exception")
    classes = [tuple(pair) for pair in described["classes"]
               if isinstance(pair, list) and len(pair) == 2 and all(isinstance(part, str) for part in pair)]
    message = str(described.get("message", ""))[:2000]
    try:
        args = value_of(described["args"], special) if "args" in described else (message,)
        attributes = value_of(described.get("attributes", {}), special)
    except Malformed:
        args, attributes = (message,), {}
    args = tuple(args) if isinstance(args, (list, tuple)) else (message,)
    bases = [known[pair] for pair in classes if pair in known]
    if not bases:
        bases = [Exception]
    exact = bool(classes) and classes[0] in known
    if exact:
        cls = known[classes[0]]
    else:
        name = classes[0][1].rsplit(".", 1)[-1] if classes else "Exception"
        if name in reserved:
            name += " (from the answer)"
        cls = _derived(name, bases, message)
    error = _instance(cls, args)
    if isinstance(attributes, dict):
        for key, value in attributes.items():
            if isinstance(key, str) and not key.startswith("_"):
                try:
                    setattr(error, key, value)
                except (AttributeError, TypeError):
                    pass
    return error


def _derived(name: str, bases: list, message: str) -> type:
    """A class named name deriving from the most derived of bases (those that can be combined)."""
    leaves = [base for base in bases if not any(other is not base and issubclass(other, base) for other in bases)]
    namespace = {"__module__": "answer", "__str__": lambda self: message}
    for chosen in (tuple(dict.fromkeys(leaves)), (leaves[0],)):
        try:
            return type(name, chosen, namespace)
        except TypeError:  # two built-in bases with different layouts
            continue
    return type(name, (Exception,), namespace)


def _instance(cls: type, args: tuple) -> BaseException:
    try:
        return cls(*args)
    except Exception:  # noqa: BLE001 - an __init__ that wants other arguments: build it without calling it
        error = cls.__new__(cls)
        error.args = args
        return error


# --------------------------------------------------------------------------- frames on the channel's socket

HEADER_LIMIT = 1 << 20  # bytes of one frame's JSON header
DATA_LIMIT = VALUE_LIMIT + (1 << 20)  # bytes of one frame's data
_SIZES = struct.Struct(">II")


def frame(header: dict, data: bytes = b"") -> bytes:
    """One message on the channel's socket: the sizes of its JSON header and of its data, then both."""
    text = json.dumps(header, ensure_ascii=True, separators=(",", ":")).encode("ascii")
    return _SIZES.pack(len(text), len(data)) + text + data


class FrameReader:
    """Cuts the bytes that arrive on a socket into (header, data) frames; Malformed for anything else."""

    def __init__(self, data_limit: int = DATA_LIMIT):
        self.buffer = bytearray()
        self.data_limit = data_limit

    def feed(self, chunk: bytes) -> list:
        """Add what arrived; return every frame now complete."""
        self.buffer += chunk
        frames = []
        while len(self.buffer) >= _SIZES.size:
            header_size, data_size = _SIZES.unpack_from(self.buffer)
            if header_size > HEADER_LIMIT or data_size > self.data_limit:
                raise Malformed(f"a message of {header_size + data_size:,} bytes, over the limit")
            end = _SIZES.size + header_size + data_size
            if len(self.buffer) < end:
                break
            try:
                header = json.loads(bytes(self.buffer[_SIZES.size:_SIZES.size + header_size]))
            except (ValueError, RecursionError):
                raise Malformed("a message whose header is not JSON") from None
            if not isinstance(header, dict):
                raise Malformed("a message whose header is not a JSON object")
            frames.append((header, bytes(self.buffer[_SIZES.size + header_size:end])))
            del self.buffer[:end]
        return frames


def socket_address(path: str) -> tuple:
    """(an address a Unix socket can bind or connect to, the folder descriptor it needs open or None).

    A socket's path may hold about 107 bytes; a longer one (an unsandboxed grading under a deep
    temporary folder) is reached through its folder's descriptor, /proc/self/fd/N/name.
    """
    if len(os.fsencode(path)) < 100:
        return path, None
    folder, name = os.path.split(path)
    descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    return f"/proc/self/fd/{descriptor}/{name}", descriptor


def read_frame(sock) -> tuple:
    """One whole frame from a blocking socket (the student's end waits for its answer this way)."""
    reader = FrameReader()
    while True:
        chunk = sock.recv(1 << 20)
        if not chunk:
            raise ConnectionError("the grader closed the channel")
        frames = reader.feed(chunk)
        if frames:
            return frames[0]
