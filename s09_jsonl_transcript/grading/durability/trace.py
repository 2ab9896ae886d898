"""Read the recorder's log: strace's lines become Call records, one per system call that returned.

The recorder runs strace with -f (every process and thread), -yy (every descriptor printed with the
file it names, as the kernel resolves it: a write through a second descriptor, /proc/self/fd/N or a
dup is seen on the transcript's own path), -xx (every byte of every string and path as \\xHH, so no
byte the answer writes can forge a line of the log), -X raw (flags as numbers) and a string limit
far above any record. A call that a kill stopped before it ran ends in "= ?".

The notebook's local check has no strace: its driver sends its calls as JSON instead, and
call_from_json turns each into the same Call record.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass, field

_LINE = re.compile(r"^(?P<pid>\d+) +(?P<name>\w+)\((?P<args>.*)\) += (?P<ret>-?\d+|0x[0-9a-f]+|\?)"
                   r"(?:<(?P<retpath>.*)>)?(?: (?P<errno>E[A-Z0-9]+))?(?: \(.*\))?$")
_UNFINISHED = re.compile(r"^(?P<pid>\d+) +(?P<head>\w+\(.*) <unfinished \.\.\.>$")
_RESUMED = re.compile(r"^(?P<pid>\d+) +<\.\.\. (?P<name>\w+) resumed>(?P<rest>.*)$")
# The shapes most lines have, read in one match each (the general parser takes the rest).
_RETURN = r"\) += (?P<ret>-?\d+|\?)(?:<(?P<retpath>[^>]*)>)?(?: (?P<errno>E[A-Z0-9]+))?(?: \(.*\))?$"
_FD = r"(?P<fd>\d+)(?:<(?P<path>[^>]*)>)?"
_FAST = {
    "write": re.compile(r"^(?P<pid>\d+) +write\(" + _FD + r', "(?P<data>(?:\\x[0-9a-f]{2})*)"(?P<cut>\.\.\.)?, \d+'
                        + _RETURN),
    "fd": re.compile(r"^(?P<pid>\d+) +(?P<name>fsync|fdatasync|syncfs|dup)\(" + _FD + _RETURN),
    "ftruncate": re.compile(r"^(?P<pid>\d+) +ftruncate\(" + _FD + r", (?P<length>\d+)" + _RETURN),
    "openat": re.compile(r"^(?P<pid>\d+) +openat\((?P<dirfd>-?\d+)(?:<(?P<dir>[^>]*)>)?, "
                         r'"(?P<name>(?:\\x[0-9a-f]{2})*)", (?P<flags>0x[0-9a-f]+|\d+)(?:, 0?\d+)?' + _RETURN),
}
_EXIT = re.compile(r"^(?P<pid>\d+) +\+\+\+ (?P<what>.*) \+\+\+$")
_NUMBER = re.compile(r"^(?P<value>-?\d+|0x[0-9a-f]+)(?:<(?P<path>.*)>(?P<deleted>\(deleted\))?)?$")
_STRING = re.compile(r'^"(?P<body>(?:\\x[0-9a-f]{2})*)"(?P<cut>\.\.\.)?$')


@dataclass
class Call:
    """One system call that returned (or that a kill stopped: killed), in the terms the tracker needs.

    path is the file the call is on: its descriptor's file, or its path argument resolved against
    the directory it names (or the process's working directory); target the second file (the new
    name of a rename or link, the file a copy or splice writes). result is the return value (a
    negative errno on failure), result_path the file a returned descriptor names.
    """

    pid: int
    name: str
    fd: int | None = None
    path: str | None = None
    target: str | None = None
    flags: int | None = None
    data: bytes | None = None
    offset: int | None = None
    length: int | None = None
    new_fd: int | None = None
    result: int = 0
    result_path: str | None = None
    killed: bool = False
    truncated: bool = False  # a string longer than the recorder prints: its bytes are unknown
    raw: str = field(default="", repr=False)

    @property
    def failed(self) -> bool:
        """True when the call returned an error (and so changed nothing)."""
        return not self.killed and self.result < 0


@dataclass
class Arg:
    """One decoded argument: a number (value, with the file a descriptor names), a string, or raw text."""

    text: str
    value: int | None = None
    path: str | None = None
    data: bytes | None = None
    cut: bool = False
    items: list = field(default_factory=list)  # an array's elements, each a dict of its fields


def _bytes(body: str) -> bytes:
    return bytes.fromhex(body.replace("\\x", ""))


_ESCAPED = re.compile(r"((?:\\x[0-9a-f]{2})*)")


@functools.lru_cache(maxsize=4096)  # a log names the same few files on most of its lines
def _text(body: str) -> str:
    """A path as the log spells it as text: its \\xHH escapes decoded, and what follows them (-yy's note
    on a device, "<char 1:3>") dropped; or a name that is not a path, such as pipe:[12], as it is."""
    escaped = _ESCAPED.match(body).group(1)
    return os.fsdecode(_bytes(escaped)) if escaped else body


_SPECIAL = re.compile(r'["\[\]{}<>,]')


def split_top(text: str) -> list[str]:
    """Split an argument list on its top-level commas (not those inside [], {}, <> or strings).

    Under -xx a string holds only \\xHH escapes, never a quote: its end is the next quote, so the
    scan jumps over it (most of a log's bytes are in its strings).
    """
    parts, depth, start, index = [], 0, 0, 0
    while True:
        found = _SPECIAL.search(text, index)
        if found is None:
            break
        character, index = found.group(), found.end()
        if character == '"':
            index = text.find('"', index) + 1
            if index == 0:
                break
        elif character in "[{<":
            depth += 1
        elif character in "]}>":
            if character == ">" and text[found.start() - 1] in "=-":  # clone3's "=>", a socket's "1->2"
                continue
            depth -= 1
        elif character == "," and depth == 0:
            parts.append(text[start:found.start()].strip())
            start = index
    tail = text[start:].strip()
    if tail or parts:
        parts.append(tail)
    return parts


def parse_arg(text: str) -> Arg:
    """Decode one argument as the log prints it."""
    text = text.strip()
    if "=" in text and not text.startswith(('"', "[", "{")):  # name=value, as clone prints its arguments
        text = text.split("=", 1)[1]
    number = _NUMBER.match(text)
    if number:
        value = number["value"]
        path = _text(number["path"]) if number["path"] is not None else None
        if path is not None and number["deleted"]:
            path += " (deleted)"  # the file has no name any more: it is no longer the transcript
        return Arg(text, int(value, 16) if value.startswith("0x") else int(value), path)
    string = _STRING.match(text)
    if string:
        return Arg(text, data=_bytes(string["body"]), cut=bool(string["cut"]))
    if text.startswith("[") and text.endswith("]"):
        inner = text[1:-1]
        single = _NUMBER.match(inner.strip())
        if single:  # [N]: an offset passed by pointer
            return Arg(text, value=parse_arg(inner).value)
        return Arg(text, items=[_fields(item) for item in split_top(inner) if item.startswith("{")])
    if text.startswith("{"):
        return Arg(text, items=[_fields(text)])
    return Arg(text)


def _fields(text: str) -> dict:
    body = text.strip()[1:].split("}", 1)[0] if text.strip().startswith("{") else text
    fields = {}
    for part in split_top(body):
        if "=" in part:
            name, value = part.split("=", 1)
            fields[name.strip()] = parse_arg(value)
    return fields


def _joined(directory: str | None, path: bytes | None) -> str | None:
    if path is None:
        return None
    text = os.fsdecode(path)
    if not os.path.isabs(text) and directory:
        text = os.path.join(directory, text)
    return os.path.normpath(text) if os.path.isabs(text) else text


# The argument positions of each traced call: which is the descriptor, the path, the data ...
def _decode(call: Call, name: str, args: list[Arg], cwd: str | None) -> None:
    def arg(index):
        return args[index] if index < len(args) else Arg("")

    if name in ("open", "creat", "truncate", "unlink", "chdir"):
        call.path = _joined(cwd, arg(0).data)
        call.flags = {"open": arg(1).value, "creat": os.O_CREAT | os.O_WRONLY | os.O_TRUNC}.get(name)
        call.length = arg(1).value if name == "truncate" else None
    elif name in ("openat", "openat2", "unlinkat", "open_by_handle_at"):
        call.path = _joined(arg(0).path or cwd, arg(1).data)
        call.flags = arg(2).value
        if name == "openat2" and arg(2).items:
            flags = arg(2).items[0].get("flags")
            call.flags = flags.value if flags else None
    elif name in ("write", "pwrite64", "writev", "pwritev", "pwritev2"):
        call.fd, call.path = arg(0).value, arg(0).path
        if name in ("write", "pwrite64"):
            call.data, call.truncated = arg(1).data, arg(1).cut or arg(1).data is None  # bytes unknown
        else:
            pieces = [item.get("iov_base") for item in arg(1).items]
            call.data = b"".join(piece.data or b"" for piece in pieces if piece is not None)
            call.truncated = any(piece is None or piece.cut for piece in pieces)
        call.offset = {"pwrite64": arg(3).value, "pwritev": arg(3).value, "pwritev2": arg(3).value}.get(name)
        call.flags = arg(4).value if name == "pwritev2" else None
    elif name in ("fsync", "fdatasync", "syncfs", "fchdir", "dup"):
        call.fd, call.path = arg(0).value, arg(0).path
    elif name in ("ftruncate", "fallocate", "sync_file_range"):
        call.fd, call.path = arg(0).value, arg(0).path
        call.length = arg(1).value if name == "ftruncate" else None
    elif name in ("dup2", "dup3"):
        call.fd, call.path, call.new_fd = arg(0).value, arg(0).path, arg(1).value
    elif name == "fcntl":
        call.fd, call.path, call.flags, call.length = arg(0).value, arg(0).path, arg(1).value, arg(2).value
    elif name in ("copy_file_range", "splice"):
        call.path, call.target = arg(0).path, arg(2).path
    elif name == "sendfile":
        call.path, call.target = arg(1).path, arg(0).path
    elif name == "tee":
        call.path, call.target = arg(0).path, arg(1).path
    elif name in ("rename", "link", "symlink"):
        call.path, call.target = _joined(cwd, arg(0).data), _joined(cwd, arg(1).data)
        if name == "symlink":
            call.path = None  # a symlink's target is text, not a file it touches
    elif name in ("renameat", "renameat2", "linkat"):
        call.path = _joined(arg(0).path or cwd, arg(1).data) if arg(1).data else arg(0).path
        call.target = _joined(arg(2).path or cwd, arg(3).data)
    elif name == "symlinkat":
        call.target = _joined(arg(1).path or cwd, arg(2).data)
    elif name == "mmap":
        call.fd, call.path, call.flags, call.length = arg(4).value, arg(4).path, arg(3).value, arg(2).value


def _fast(line: str, cwds: dict) -> Call | None:
    """The Call of a line of one of the commonest shapes, or None (the general parser reads it)."""
    name = line[line.find(" "):line.find("(")].strip()
    pattern = _FAST.get(name) or (_FAST["fd"] if name in ("fsync", "fdatasync", "syncfs", "dup") else None)
    found = pattern.match(line) if pattern is not None else None
    if found is None:
        return None
    groups = found.groupdict()
    ret = groups["ret"]
    call = Call(int(groups["pid"]), name, result=0 if ret == "?" else int(ret), killed=ret == "?", raw=line,
                result_path=_text(groups["retpath"]) if groups["retpath"] is not None else None)
    if name == "openat":
        directory = _text(groups["dir"]) if groups["dir"] is not None else None
        if groups["dirfd"] == "-100" and directory:
            cwds[call.pid] = directory
        call.path = _joined(directory or cwds.get(call.pid), _bytes(groups["name"]))
        call.flags = int(groups["flags"], 16) if groups["flags"].startswith("0x") else int(groups["flags"])
        return call
    call.fd = int(groups["fd"])
    call.path = _text(groups["path"]) if groups["path"] is not None else None
    if name == "write":
        call.data, call.truncated = _bytes(groups["data"]), bool(groups["cut"])
    elif name == "ftruncate":
        call.length = int(groups["length"])
    return call


def parse_line(line: str, cwds: dict, fast: bool = True) -> Call | None:
    """The Call of one complete log line (None for lines that are not calls); cwds maps each
    process to the working directory its last AT_FDCWD argument showed. fast=False reads every
    line with the general parser (a test compares the two)."""
    quick = _fast(line, cwds) if fast else None
    if quick is not None:
        return quick
    found = _LINE.match(line)
    if not found:
        return None
    pid, name = int(found["pid"]), found["name"]
    args = [parse_arg(text) for text in split_top(found["args"])]
    for each in args:
        if each.value == -100 and each.path:  # AT_FDCWD, shown with the working directory
            cwds[pid] = each.path
    ret = found["ret"]
    killed = ret == "?"
    result = 0 if killed else (int(ret, 16) if ret.startswith("0x") else int(ret))
    call = Call(pid, name, result=result, killed=killed, raw=line,
                result_path=_text(found["retpath"]) if found["retpath"] is not None else None)
    _decode(call, name, args, cwds.get(pid))
    return call


@dataclass
class Log:
    """A parsed log: the calls in the order they returned, and how each process ended."""

    calls: list = field(default_factory=list)
    endings: dict = field(default_factory=dict)  # pid -> "exited with 0", "killed by SIGKILL", ...
    unparsed: list = field(default_factory=list)  # lines that were neither (kept for diagnosis)


def parse_log(lines) -> Log:
    """Parse strace's lines, joining each "<unfinished ...>" call with its "resumed" rest."""
    log, pending, cwds = Log(), {}, {}
    for line in lines:
        line = line.rstrip("\n")
        if not line:
            continue
        # the shapes below are rare: a look for their marks first spares most lines three matches
        unfinished = _UNFINISHED.match(line) if line.endswith(" <unfinished ...>") else None
        if unfinished:
            pending[int(unfinished["pid"])] = unfinished["head"]
            continue
        resumed = _RESUMED.match(line) if "<... " in line else None
        if resumed:
            head = pending.pop(int(resumed["pid"]), None)
            if head is None:
                log.unparsed.append(line)
                continue
            line = f"{resumed['pid']} {head}{resumed['rest']}"
        ending = _EXIT.match(line) if line.endswith(" +++") else None
        if ending:
            log.endings[int(ending["pid"])] = ending["what"]
            continue
        try:
            call = parse_line(line, cwds)
        except (ValueError, IndexError):  # a shape this reader does not know: kept, so it can be refused
            call = None
        if call is None:
            log.unparsed.append(line)
        else:
            log.calls.append(call)
    for pid, head in pending.items():  # a call that never came back: its process died inside it
        call = parse_line(f"{pid} {head}) = ?", cwds)
        if call is not None:
            log.calls.append(call)
    return log


def call_from_json(message: dict, pid: int) -> Call:
    """The Call of one call the local check's in-process recorder sent (see driver.OsRecorder)."""
    names = {"open": "openat", "pwrite": "pwrite64", "replace": "rename", "remove": "unlink",
             "posix_fallocate": "fallocate"}
    name = names.get(message["call"], message["call"])
    call = Call(message.get("pid", pid), name, fd=message.get("fd"), path=message.get("path"),
                target=message.get("target"), flags=message.get("flags"), offset=message.get("offset"),
                length=message.get("length"), new_fd=message.get("new"))
    if "data" in message:
        call.data = bytes.fromhex(message["data"])
        call.result = len(call.data)
    if name == "openat":
        call.result, call.result_path = message["fd"], message["path"]
    if name in ("dup", "dup2"):
        call.result, call.result_path = message["new"], message.get("path")
    if name == "fsync" and message.get("flags") is None and message.get("path"):
        call.path = message["path"]
    return call
