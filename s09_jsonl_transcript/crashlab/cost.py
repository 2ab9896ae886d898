"""What the hash chain costs per append: time with the chain on divided by time with it off.

Two measurements. With real fsyncs (what an agent pays), the disk dominates and the chain
hides in the noise. Without fsyncs (SimulatedSyncFileIO), only the CPU work is left: the
JSON encoding, the write system call and, with the chain on, one SHA-256 over two lines.
Runs alternate between off and on so that a busy machine slows both alike; the median
of the runs is reported. Compare ratios, never absolute times, across machines.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ..code import BUG_FIX_SCRIPT, ticking_clock
from ..lab import DurableTranscript, OsFileIO
from .powerloss import SimulatedSyncFileIO


@dataclass(frozen=True)
class IntegrityCost:
    """Median microseconds per append with the chain off and on, and bytes per record."""

    synced: bool  # True: real fsync after every append
    appends: int  # appends per run
    runs: int
    off_us: float
    on_us: float
    off_bytes: float  # mean bytes per record
    on_bytes: float

    @property
    def ratio(self) -> float:
        """Time per append with the chain on, as a multiple of the time with it off."""
        return self.on_us / self.off_us


def _one_run(folder: Path, name: str, integrity: bool, appends: int, synced: bool) -> tuple[float, float]:
    """Append `appends` events of the scripted session (BUG_FIX_SCRIPT) to a new file; return (us per append,
    bytes per record)."""
    path = folder / name
    events = BUG_FIX_SCRIPT
    file_io = OsFileIO() if synced else SimulatedSyncFileIO()
    with DurableTranscript(path, integrity=integrity, clock=ticking_clock(), file_io=file_io) as transcript:
        transcript.append(events[0])  # opens the file, takes the lock: not part of the cost per append
        started = time.perf_counter()
        for index in range(1, appends + 1):
            transcript.append(events[index % len(events)])
        elapsed = time.perf_counter() - started
    size = path.stat().st_size
    path.unlink()
    return elapsed / appends * 1e6, size / (appends + 1)


def measure_integrity_cost(*, appends: int = 500, runs: int = 5, synced: bool = True) -> IntegrityCost:
    """Measure the chain's cost per append (see the module doc)."""
    if appends < 1 or runs < 1:
        raise ValueError("appends and runs must be at least 1")
    timings = {False: [], True: []}
    sizes = {}
    with tempfile.TemporaryDirectory(prefix="s09-cost-") as folder:
        for run in range(runs):
            for integrity in (False, True):
                micros, sizes[integrity] = _one_run(Path(folder), f"cost-{run}-{integrity:d}.jsonl",
                                                    integrity, appends, synced)
                timings[integrity].append(micros)
    return IntegrityCost(synced, appends, runs, statistics.median(timings[False]), statistics.median(timings[True]),
                         sizes[False], sizes[True])
