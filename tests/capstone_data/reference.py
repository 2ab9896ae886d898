# ex06's reference answer cell. It runs after the given cell, which defines envelope, encode_line,
# parse_record and TranscriptCorruptionError. Each step is a function of its own, so that each named
# wrong answer (wrong/*.py) is this answer with one function replaced.
# ruff: noqa: F821
import json
import os


def _read_all(path) -> bytes:
    """The file's bytes; b"" when there is no file yet."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return b""
    try:
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    finally:
        os.close(fd)


def _next_sequence(data: bytes) -> int:
    """One past the sequence of the file's last complete record (1 for an empty file)."""
    complete = data[: data.rfind(b"\n") + 1]
    if not complete:
        return 1
    return json.loads(complete[:-1].rsplit(b"\n", 1)[-1])["sequence"] + 1


def _open_for_append(path) -> int:
    """A descriptor whose every write lands at the end of the file (O_APPEND), creating it if needed."""
    return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)


def _write_durably(fd: int, line: bytes) -> None:
    """The whole line in one write, then fsync: on disk when this returns."""
    written = os.write(fd, line)
    if written != len(line):
        raise OSError(f"short write: {written} of {len(line)} bytes")
    os.fsync(fd)


def _fsync_folder(path) -> None:
    """Make the names in the file's folder durable: a new file survives a power cut only then."""
    fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def append(path, event) -> dict:
    """Append event durably and return its record."""
    data = _read_all(path)
    new = not os.path.exists(path)
    record = {**envelope(path, _next_sequence(data)), **event}
    fd = _open_for_append(path)
    try:
        _write_durably(fd, encode_line(record))
    finally:
        os.close(fd)
    if new:
        _fsync_folder(path)
    return record


def _committed(lines: list, path) -> list:
    """The records on the complete lines; the first damaged one raises."""
    records = []
    for number, line in enumerate(lines, start=1):
        record = parse_record(line, path, number)
        if record is None:
            raise TranscriptCorruptionError(f"{os.path.basename(path)}: line {number} is damaged")
        records.append(record)
    return records


def _cut_tail(path, length: int) -> None:
    """Cut the partial tail off at length bytes, durably (a cut is a change that needs an fsync)."""
    fd = os.open(path, os.O_WRONLY)
    try:
        os.ftruncate(fd, length)
        os.fsync(fd)
    finally:
        os.close(fd)


def recover(path) -> list:
    """The committed records; a partial last line is cut off; any other damage raises."""
    data = _read_all(path)
    lines = data.split(b"\n")
    records = _committed(lines[:-1], path)
    if lines[-1]:  # bytes after the last newline: a write that never finished, never acknowledged
        _cut_tail(path, len(data) - len(lines[-1]))
    return records
