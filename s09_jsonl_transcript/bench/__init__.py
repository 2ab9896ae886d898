"""Benchmarks: the lesson's transcript measured against bare baselines and fair peers, as ratios.

    python -m s09_jsonl_transcript.bench            full sizes: 1,000,000 events, about 1 GB (half a minute or more)
    python -m s09_jsonl_transcript.bench --quick    small sizes, a second or two (the test suite runs this)
    options: --json FILE (raw numbers; default artifacts/bench.json), --dir DIR (where the temporary
             transcripts go; default the system's temporary folder; about 2.5 GB free are needed)

Absolute times depend on the machine and on whatever else it is running, so every figure is a
ratio (or a difference) of two measurements taken in the same run, on the same disk, interleaved
A, B, A, B, ...: the median over rounds of the ratio within each round, printed with its spread
(the quartiles of the rounds) and the interval that holds the median with 95% confidence. A
target is met or missed only when that interval lies on one side of its bound; otherwise the
report says the run's spread is too wide to decide. Figure 1 measures the lab's append against
its floor, a plain writer of the same bytes that is frozen here (SameBytesPeer: no code of the
kit's), each side taking its turn for every event. The large transcripts are written by the
library's own append_batch without the per-write fsync (one at the end), in a temporary folder
that is removed afterwards.

The package, one module per job:

    workload.py   the sizes (FULL, QUICK) and the synthetic transcripts the figures read and write
    stats.py      interleaved, balanced measuring; paired ratios and differences; the median's interval
    sides.py      what the lab is measured against: bare writers, SQLite, the frozen floor (SameBytesPeer)
    costs.py      one function per measured cost
    figures.py    the figures, their goals and verdicts
    run.py        the whole run and its report (python -m s09_jsonl_transcript.bench runs it)
"""

from .costs import (
    available_decoders,
    batch_costs,
    open_and_append_costs,
    recover_costs,
    replay_costs,
    replay_peak_memory,
    single_write_costs,
    timed_append,
)
from .figures import (
    CHECK_GOAL_US,
    GOALS,
    OWN_DECODER_GOAL,
    US,
    Figure,
    Target,
    figures_from,
    single_targets,
    target,
)
from .run import (
    cpu_model,
    disk_needed,
    machine_description,
    main,
    report_lines,
    run_all,
)
from .sides import (
    PEER_ENCODERS,
    BareLog,
    FsyncTimed,
    SameBytesPeer,
    SqliteLog,
    WithoutTheFileCheck,
)
from .stats import (
    CONFIDENCE,
    balanced_orders,
    interleaved,
    median_interval,
    medians,
    paired_difference,
    paired_differences,
    paired_ratio,
    paired_ratios,
    quartiles,
    timed,
)
from .workload import (
    FULL,
    MAX_TEXT_BYTES,
    QUICK,
    Sizes,
    synthetic_event,
    write_bulk_transcript,
)

__all__ = [
    "available_decoders",
    "balanced_orders",
    "BareLog",
    "batch_costs",
    "CHECK_GOAL_US",
    "CONFIDENCE",
    "cpu_model",
    "disk_needed",
    "Figure",
    "figures_from",
    "FsyncTimed",
    "FULL",
    "GOALS",
    "interleaved",
    "machine_description",
    "main",
    "MAX_TEXT_BYTES",
    "median_interval",
    "medians",
    "open_and_append_costs",
    "OWN_DECODER_GOAL",
    "paired_difference",
    "paired_differences",
    "paired_ratio",
    "paired_ratios",
    "PEER_ENCODERS",
    "quartiles",
    "QUICK",
    "recover_costs",
    "replay_costs",
    "replay_peak_memory",
    "report_lines",
    "run_all",
    "SameBytesPeer",
    "single_targets",
    "single_write_costs",
    "Sizes",
    "SqliteLog",
    "synthetic_event",
    "Target",
    "target",
    "timed",
    "timed_append",
    "US",
    "WithoutTheFileCheck",
    "write_bulk_transcript",
]
