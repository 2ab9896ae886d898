"""The child process the kill campaign shoots: it appends workload events until it is killed.

    python -m s09_jsonl_transcript.crashlab.victim FILE MODE SEED INTEGRITY [HOLD]
    (the kill campaign starts it with crashlab.children.start_child)

It prints "ready" once it is about to append, then the number n of every event whose
append has returned, one per line, flushed at once: the parent counts only what it
read from this pipe as acknowledged. In stream and validated modes (and rewind, fork)
it also prints "begin" when a stream or a commit starts, so the parent can tell a kill
that landed inside one. With HOLD = k > 0 the victim stops just before its k-th write,
fsync or truncate of the transcript (counted from "ready"), prints "inside" and waits:
the parent kills it there, so that kill lands inside a commit on any machine, however
loaded. Modes:

  append   one append per event
  batch    append_batch of 2 to 8 events (one write, one fsync)
  repair   every round, a write is cut short (as by a full disk); the writer must cut off
           what it left, and a kill before it does leaves a partial tail the next writer
           repairs. The cut may fall inside a record, between records of a batch, or just
           before the final newline.
  stream   through a live SessionEventLog with a subscriber attached: each event is
           streamed as deltas (memory only), then its final part is committed; a kill
           lands in the middle of a stream, or of its commit
  validated  two threads race through commit_validated, each trying to write the next 1
           to 3 events as one commit if the file's last sequence is still what it saw;
           exactly one of them wins each race
  rewind   through a live SessionEventLog: event n, then a draft of event n + 1, then a
           rewind marker that takes the draft back; n is acknowledged after the marker
  fork     through a live SessionEventLog: event n, and after every third one a fork of
           the session up to n (<file>-fork-<n>.jsonl); n is acknowledged after the fork
  lesson   one append per event with the lesson's own code.JSONLTranscript
  lesson-repair  the lesson's class again; every round, the writer is closed and the next
           record is left on disk cut short at a random byte (as a writer that died in the
           middle of its write leaves it); a fresh JSONLTranscript must repair it first
"""

from __future__ import annotations

import os
import random
import signal
import sys
import threading
from pathlib import Path

from ..code import SCHEMA_VERSION, JSONLTranscript, encode, event_id_for, ticking_clock
from ..lab import DurableTranscript, OsFileIO
from ..production.live import CommitRefused, SessionEventLog
from .workload import ALL_MODES, LESSON_MODES, part_id_of, stream_pieces, workload_event

MAX_EVENTS = 5000  # a victim nobody kills stops here rather than fill the disk
WRITER_MODES = ("rewind", "fork")  # the live log's whole-session writers (issue 20)
FORK_EVERY = 3  # fork mode forks after every third event


def fork_name(path, n: int) -> str:
    """The session id of the fork taken after event n of the victim writing path."""
    return f"{Path(path).stem}-fork-{n}"


class TearingFileIO(OsFileIO):
    """File I/O whose next write, once armed, reaches the file only up to a chosen byte."""

    def __init__(self):
        self.keep_fraction = None

    def arm(self, keep_fraction: float) -> None:
        """Cut the next write short: keep this fraction of its bytes (0 <= fraction < 1)."""
        self.keep_fraction = keep_fraction

    def write(self, fd, data):
        if self.keep_fraction is None:
            return super().write(fd, data)
        kept = int(len(data) * self.keep_fraction)
        self.keep_fraction = None
        return super().write(fd, data[:kept]) if kept else 0


class HoldingFileIO(TearingFileIO):
    """TearingFileIO that, given hold = k > 0, stops before its k-th write, fsync or truncate.

    There it prints "inside" and waits on standard input for the parent's SIGKILL. (A folder's
    fsync is not counted: it is not part of a record's commit.) With hold = 0 it never stops.
    """

    def __init__(self, hold: int = 0):
        super().__init__()
        self.hold = hold
        self.calls = 0

    def _count_one_call(self) -> None:
        self.calls += 1
        if self.calls == self.hold:
            _acknowledge(["inside"])
            sys.stdin.readline()  # the parent kills us while we wait; a line or end of file is a broken protocol
            os.kill(os.getpid(), signal.SIGKILL)  # die as the parent would have killed us

    def write(self, fd, data):
        self._count_one_call()
        return super().write(fd, data)

    def fsync(self, fd):
        self._count_one_call()
        return super().fsync(fd)

    def truncate(self, fd, length):
        self._count_one_call()
        return super().truncate(fd, length)

    def fsync_dir(self, path):
        # with the real os: the inherited one calls code.py, whose os may be routed back here (lesson modes)
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


_PIPE = threading.Lock()  # two threads acknowledge in validated mode: one line each, whole


def _acknowledge(numbers) -> None:
    with _PIPE:
        sys.stdout.write("".join(f"{n}\n" for n in numbers))
        sys.stdout.flush()


def run(path: str, mode: str, seed: int, integrity: bool, hold: int = 0) -> None:
    """Append workload events to path in the given mode until MAX_EVENTS or a kill.

    hold = k > 0: stop before the k-th write, fsync or truncate, say "inside" and wait for the kill.
    """
    if mode not in ALL_MODES + WRITER_MODES:
        raise ValueError(f"unknown mode {mode!r}; expected one of {', '.join(ALL_MODES + WRITER_MODES)}")
    file_io = HoldingFileIO(hold)
    if mode in WRITER_MODES:
        log = SessionEventLog(DurableTranscript(path, integrity=integrity, clock=ticking_clock(), file_io=file_io))
        return _rewind(log) if mode == "rewind" else _fork(log)
    rng = random.Random(seed)
    if mode in LESSON_MODES:
        return run_lesson(path, mode, rng, file_io)
    transcript = DurableTranscript(path, integrity=integrity, clock=ticking_clock(), file_io=file_io)
    if mode == "stream":
        return _stream(SessionEventLog(transcript))
    if mode == "validated":
        return _race_validated(SessionEventLog(transcript), seed)
    _acknowledge(["ready"])
    n = 1
    while n <= MAX_EVENTS:
        if mode == "batch":
            numbers = list(range(n, n + rng.randint(2, 8)))
            transcript.append_batch([workload_event(k) for k in numbers])
        else:
            if mode == "repair":
                n = _tear_one_write(transcript, file_io, rng, n)
            numbers = [n]
            transcript.append(workload_event(n))
        _acknowledge(numbers)
        n = numbers[-1] + 1


def _stream(log: SessionEventLog) -> None:
    """Stream each event as deltas to a subscriber, then commit its final part; acknowledge the commit."""
    subscription = log.subscribe(from_sequence=1)
    _acknowledge(["ready"])
    for n in range(1, MAX_EVENTS + 1):
        _acknowledge(["begin"])
        stream = log.open_stream("text", part_id_of(n))
        for piece in stream_pieces(n):
            stream.delta(piece)
        stream.commit(workload_event(n))
        _acknowledge([n])
        subscription.poll()  # the subscriber keeps up; it dies with the process


def _race_validated(log: SessionEventLog, seed: int) -> None:
    """Two threads race to write the next events; a validated commit lets exactly one win each race."""
    def racer(rng: random.Random) -> None:
        while log.last_sequence < MAX_EVENTS:
            first, count = log.last_sequence + 1, rng.randint(1, 3)

            def build(state, first=first, count=count):
                if state.last_sequence != first - 1:
                    raise CommitRefused(f"event {first} was written by the other thread")
                return [workload_event(k) for k in range(first, first + count)]

            _acknowledge(["begin"])
            try:
                records = log.commit_validated(build)
            except CommitRefused:
                continue
            _acknowledge([record["n"] for record in records])

    racers = [threading.Thread(target=racer, args=(random.Random(seed + k),), daemon=True) for k in range(2)]
    _acknowledge(["ready"])
    for thread in racers:
        thread.start()
    for thread in racers:
        thread.join()


def _rewind(log: SessionEventLog) -> None:
    """Commit event n and a draft of n + 1, take the draft back with a rewind marker, acknowledge n."""
    _acknowledge(["ready"])
    for n in range(1, MAX_EVENTS + 1):
        _acknowledge(["begin"])
        log.commit(workload_event(n))
        draft = log.commit(workload_event(n + 1))
        log.rewind(draft["sequence"] - 1)
        _acknowledge([n])


def _fork(log: SessionEventLog) -> None:
    """Commit event n; after every third, fork the session up to n; acknowledge n once both returned."""
    _acknowledge(["ready"])
    for n in range(1, MAX_EVENTS + 1):
        _acknowledge(["begin"])
        record = log.commit(workload_event(n))
        if n % FORK_EVERY == 0:
            log.fork(fork_name(log.transcript.path, n), upto_sequence=record["sequence"]).close()
        _acknowledge([n])


def _tear_one_write(transcript: DurableTranscript, file_io: TearingFileIO, rng: random.Random, n: int) -> int:
    """Let one append be cut short, and return the number of the event to write next.

    An append that raised may still have put whole records of a batch on disk, so the
    file, not the writer's hopes, says which event comes next.
    """
    file_io.arm(rng.random())
    try:
        transcript.append_batch([workload_event(k) for k in range(n, n + rng.randint(1, 3))])
    except OSError:
        pass  # the short write was refused and the writer closed: the next append repairs
    else:
        raise AssertionError("a short write was acknowledged")
    return transcript.replay_state(1).next_sequence


def run_lesson(path: str, mode: str, rng: random.Random, file_io: OsFileIO) -> None:
    """Append workload events one at a time with the lesson's JSONLTranscript until MAX_EVENTS or a kill;
    the writer's I/O calls go through file_io (the lesson's seam, as the lab's)."""
    clock = ticking_clock()
    transcript = JSONLTranscript(path, clock=clock)
    transcript.file_io = file_io
    _acknowledge(["ready"])
    n = 1
    while n <= MAX_EVENTS:
        if mode == "lesson-repair":
            transcript.close()
            n = _leave_a_torn_record(path, n, clock(), rng)
            transcript = JSONLTranscript(path, clock=clock)  # a fresh writer: it must repair first
            transcript.file_io = file_io
        transcript.append(workload_event(n))
        _acknowledge([n])
        n += 1


def _leave_a_torn_record(path: str, n: int, now, rng: random.Random) -> int:
    """Put record n on disk cut short at a random byte, as its dying writer would have left it;
    return the number of the event to write next. A cut just before the newline leaves a whole
    record, which a reader keeps: then the file, not this writer, says event n is there."""
    session_id = Path(path).stem
    record = {"schema_version": SCHEMA_VERSION, "sequence": n, "event_id": event_id_for(session_id, n),
              "session_id": session_id, "recorded_at": now.isoformat(), **workload_event(n)}
    line = encode(record)
    kept = rng.randrange(len(line))  # never the whole line: that would be an append nobody made
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line[:kept])
    finally:
        os.close(fd)
    return n + 1 if kept == len(line) - 1 else n


def main(path: str, mode: str, seed: str, integrity: str, hold: str = "0") -> None:
    """Entry point of the child process (crashlab.children.start_child passes its arguments as strings)."""
    run(path, mode, int(seed), integrity == "1", int(hold))


if __name__ == "__main__":
    main(*sys.argv[1:])
