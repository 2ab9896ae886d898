"""The child process the kill campaign shoots: it appends workload events until it is killed.

    python -m s09_jsonl_transcript.crashlab.victim FILE MODE SEED INTEGRITY
    (the kill campaign starts it with code.start_child)

It prints "ready" once it is about to append, then the number n of every event whose
append has returned, one per line, flushed at once: the parent counts only what it
read from this pipe as acknowledged. Modes:

  append   one append per event
  batch    append_batch of 2 to 8 events (one write, one fsync)
  repair   every round, a write cut short (as by a crash) leaves a torn tail; the next
           append must repair it first. The cut may fall inside a record, between
           records of a batch, or just before the final newline.
"""

from __future__ import annotations

import random
import sys

from ..code import JSONLTranscript, OsFileIO, ticking_clock
from .workload import MODES, workload_event

MAX_EVENTS = 5000  # a victim nobody kills stops here rather than fill the disk


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


def _acknowledge(numbers) -> None:
    sys.stdout.write("".join(f"{n}\n" for n in numbers))
    sys.stdout.flush()


def run(path: str, mode: str, seed: int, integrity: bool) -> None:
    """Append workload events to path in the given mode until MAX_EVENTS or a kill."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")
    rng = random.Random(seed)
    file_io = TearingFileIO()
    transcript = JSONLTranscript(path, integrity=integrity, clock=ticking_clock(), file_io=file_io)
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


def _tear_one_write(transcript: JSONLTranscript, file_io: TearingFileIO, rng: random.Random, n: int) -> int:
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


def main(path: str, mode: str, seed: str, integrity: str) -> None:
    """Entry point of the child process (code.start_child passes its arguments as strings)."""
    run(path, mode, int(seed), integrity == "1")


if __name__ == "__main__":
    main(*sys.argv[1:])
