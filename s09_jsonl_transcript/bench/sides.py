"""The sides the lab's append is measured against: bare writers, SQLite, the frozen floor
(SameBytesPeer, no code of the kit's) and the lab with its file check turned off."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from json.encoder import c_make_encoder, encode_basestring
from pathlib import Path
from typing import Callable

from ..lab import DurableTranscript, OsFileIO


class BareLog:
    """The physical limit: os.write on an O_APPEND descriptor and fsync, with no library around them."""

    def __init__(self, path):
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def write(self, line: bytes) -> None:
        """Write one line (no fsync)."""
        os.write(self.fd, line)

    def sync(self) -> None:
        """Make everything written so far durable."""
        os.fsync(self.fd)

    def close(self) -> None:
        """Release the descriptor."""
        os.close(self.fd)


class SqliteLog:
    """The same records in SQLite: WAL mode, one insert per transaction."""

    def __init__(self, path, synchronous: str = "FULL"):
        if synchronous not in ("FULL", "NORMAL"):
            raise ValueError(f"synchronous must be FULL or NORMAL, not {synchronous!r}")
        self.connection = sqlite3.connect(path, isolation_level=None)  # autocommit: each insert commits
        self.connection.execute("PRAGMA journal_mode=WAL")
        self.connection.execute(f"PRAGMA synchronous={synchronous}")
        self.connection.execute("CREATE TABLE IF NOT EXISTS events (sequence INTEGER PRIMARY KEY, record TEXT)")

    def insert(self, line: bytes) -> None:
        """Insert one record in its own transaction."""
        self.connection.execute("INSERT INTO events (record) VALUES (?)", (line.decode("utf-8"),))

    def warm_up(self, line: bytes, *, chunk: int = 50) -> int:
        """Insert line until the write-ahead log stops growing (SQLite has checkpointed it and writes
        over it from its start, as it does from then on), then delete those rows; return how many.

        A fresh database's first commits grow the log, and a commit that grows a file costs more
        than one that writes over it: figure 3 compares the lab with SQLite as it runs for good.
        """
        log = Path(self.connection.execute("PRAGMA database_list").fetchone()[2] + "-wal")
        pages = self.connection.execute("PRAGMA wal_autocheckpoint").fetchone()[0]
        inserted, size = 0, -1
        while inserted < 4 * pages and log.stat().st_size != size:  # a chunk that did not grow it: written over
            size = log.stat().st_size
            for _ in range(chunk):
                self.insert(line)
            inserted += chunk
        self.connection.execute("DELETE FROM events")
        return inserted

    def close(self) -> None:
        """Close the connection."""
        self.connection.close()


class FsyncTimed(OsFileIO):
    """The lab's I/O calls, adding up the seconds spent inside fsync: what an append does besides it is
    its time minus these (figure 1's issue-43 pair, measured without the fsync's noise)."""

    def __init__(self):
        self.seconds = 0.0

    def fsync(self, fd):
        start = time.perf_counter()
        try:
            super().fsync(fd)
        finally:
            self.seconds += time.perf_counter() - start


class WithoutTheFileCheck(DurableTranscript):
    """The lab's transcript with the check issue 43 added to every append turned off (check_unchanged
    does nothing): figure 1's "before" side, run beside the same transcript with it. Measuring only."""

    def check_unchanged(self, written: int) -> None:
        """Nothing: the path and size are not checked before the append is acknowledged."""


class SameBytesPeer:
    """The fair peer: what a plain program writes for the same group commit, or the same single event.

    The same records as the lab's (its envelope, batch_end, the payload) with one encoder: "dumps"
    (json.dumps with the lab's separators, a call a record: figure 2's peer), "stdlib" (the
    standard library's C encoder with the same options, made once) or "msgspec" (made once); all
    lines in one write, one fsync:
    the same bytes as the lab's file, but for recorded_at (another moment). No checks, no lock,
    no writer check. It is figure 1's floor, so it is frozen: it builds its envelope, its stamp
    and its encoder here and calls no code of the kit's (not the lab's, not the lesson's), so a
    change to the lab never moves it. tests/test_bench.py checks its bytes against the lab's.
    """

    def __init__(self, path, session_id: str, first_sequence: int = 1, encoder: str = "dumps"):
        self.log = BareLog(path)
        self.session_id, self.next_sequence = session_id, first_sequence
        self.encode = PEER_ENCODERS[encoder]()
        self._second, self._date_and_time = None, ""  # the stamp's whole second, and its text

    def stamp(self) -> str:
        """Now in UTC as datetime.now(timezone.utc).isoformat() writes it, the date and time of day
        formatted once a second: the cheapest stamp of the lab's form."""
        micros = time.time_ns() // 1000
        second, micro = divmod(micros, 1_000_000)
        if second != self._second:
            self._second, self._date_and_time = second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        return f"{self._date_and_time}.{micro:06d}+00:00" if micro else f"{self._date_and_time}+00:00"

    def record(self, sequence: int, event: dict, recorded_at: str, batch_end: int | None = None) -> dict:
        """The lab's record of event at sequence: the envelope, batch_end if given, then the payload."""
        batch = {} if batch_end is None else {"batch_end": batch_end}
        return {"schema_version": 1, "sequence": sequence, "event_id": f"transcript:{self.session_id}:{sequence}",
                "session_id": self.session_id, "recorded_at": recorded_at, **batch, **event}

    def append_batch(self, events: list) -> None:
        """Encode the batch's records, write them once and fsync once."""
        first, last = self.next_sequence, self.next_sequence + len(events) - 1
        recorded_at = self.stamp()
        records = [self.record(sequence, event, recorded_at, batch_end=last)
                   for sequence, event in enumerate(events, start=first)]
        self.log.write(b"".join([self.encode(record) + b"\n" for record in records]))
        self.log.sync()
        self.next_sequence = last + 1

    def append(self, event: dict) -> None:
        """One record, stamped now, in one write and one fsync: figure 1's plain writer, its floor."""
        sequence = self.next_sequence
        self.log.write(self.encode(self.record(sequence, event, self.stamp())) + b"\n")
        self.log.sync()
        self.next_sequence = sequence + 1

    def close(self) -> None:
        """Release the descriptor."""
        self.log.close()


def _dumps_encoder() -> Callable[[dict], bytes]:
    """json.dumps with the lab's options, called for each record (it builds an encoder a call)."""
    return lambda record: json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _stdlib_encoder() -> Callable[[dict], bytes]:
    """The standard library's C encoder with the lab's options (UTF-8 unescaped, no NaN, no spaces), made once."""
    encode = c_make_encoder(None, _not_json, encode_basestring, None, ":", ",", False, False, False)
    return lambda record: "".join(encode(record, 0)).encode("utf-8")


def _not_json(value):
    raise TypeError(f"{type(value).__name__} is not a JSON type")


def _msgspec_encoder() -> Callable[[dict], bytes]:
    """msgspec's JSON encoder, made once (it writes the lab's bytes for a record without floats)."""
    import msgspec  # the optional `fast` extra: only asked for when installed

    return msgspec.json.Encoder().encode


PEER_ENCODERS = {"dumps": _dumps_encoder, "stdlib": _stdlib_encoder, "msgspec": _msgspec_encoder}
