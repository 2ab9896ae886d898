"""What the benchmarks write: their sizes (FULL, QUICK) and deterministic agent-like transcripts."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..code import (
    TYPE_FUNCTION_CALL,
    TYPE_FUNCTION_CALL_RESULT,
    TYPE_MESSAGE,
    TYPE_REASONING,
    ticking_clock,
)
from ..lab import DurableTranscript, OsFileIO


@dataclass(frozen=True)
class Sizes:
    """How much work each figure does. FULL is the issue's sizes; QUICK only proves the code runs."""

    single_rounds: int  # interleaved rounds of the single-append comparison
    single_per_round: int  # events each side writes per round
    batch_rounds: int
    batch_size: int
    big_events: int  # the large transcript of figures 4, 5 and 7
    small_events: int  # the small transcript figure 4 compares against
    text_bytes: int  # text per synthetic event: about 1 KB lines, so 1,000,000 events make about 1 GB
    read_rounds: int
    recover_events: int
    recover_rounds: int
    window: int = 1000  # replay(window)


# Figure 1: 100 rounds of 24 events (a multiple of its 8 or 12 sides: each order of balanced_orders
# runs equally often in a round). Figure 6: 31 rounds of 50,000 lines, short enough that both
# sides of a round meet the same load.
FULL = Sizes(single_rounds=100, single_per_round=24, batch_rounds=40, batch_size=100,
             big_events=1_000_000, small_events=10_000, text_bytes=900, read_rounds=21,
             recover_events=50_000, recover_rounds=31)


QUICK = Sizes(single_rounds=3, single_per_round=5, batch_rounds=3, batch_size=100,
              big_events=12_000, small_events=1_500, text_bytes=900, read_rounds=3,
              recover_events=2_000, recover_rounds=3)


_WORDS = ("append fsync replay sequence envelope session torn tail evidence state rebuild record "
          "crash durable window memory candidate index search turn offset newline").split()


_FILLER = " ".join(_WORDS[(i * 7) % len(_WORDS)] + str(i % 10) for i in range(8000))  # about 60 KB of text


MAX_TEXT_BYTES = 50_000


def synthetic_event(n: int, text_bytes: int) -> dict:
    """Event n of a deterministic agent-like session; its text field holds text_bytes characters.

    Events cycle through user message, reasoning, tool call, tool result and assistant message,
    with a fresh callId every cycle, so replay meets every kind of event it folds.
    """
    if not 0 < text_bytes <= MAX_TEXT_BYTES:
        raise ValueError(f"text_bytes must be between 1 and {MAX_TEXT_BYTES}, not {text_bytes!r}")
    start = (n * 37) % (len(_FILLER) - text_bytes)
    text = _FILLER[start:start + text_bytes]
    call_id = f"call_{n // 5}"
    kind = n % 5
    if kind == 0:
        return {"type": TYPE_MESSAGE, "role": "user", "content": text}
    if kind == 1:
        return {"type": TYPE_REASONING, "content": text}
    if kind == 2:
        return {"type": TYPE_FUNCTION_CALL, "callId": call_id, "name": "grep", "arguments": {"pattern": text}}
    if kind == 3:
        return {"type": TYPE_FUNCTION_CALL_RESULT, "callId": call_id, "output": text}
    return {"type": TYPE_MESSAGE, "role": "assistant", "content": text}


class _OneSyncAtTheEnd(OsFileIO):
    """File I/O that leaves out the fsync after each write: the bulk writer syncs once when done."""

    def fsync(self, fd):
        pass


def write_bulk_transcript(path, count: int, text_bytes: int, *, chunk: int = 10_000) -> int:
    """Write a new transcript of count synthetic events quickly and return its size in bytes.

    The library itself writes it (append_batch with a ticking clock, chunk events per write),
    so every line is a valid record; only the fsync per write is left out, with one at the end.
    Refuses to touch an existing file.
    """
    path = Path(path)
    if path.exists():
        raise FileExistsError(f"{path} exists; the bulk writer only makes new transcripts")
    with DurableTranscript(path, clock=ticking_clock(), file_io=_OneSyncAtTheEnd()) as transcript:
        for first in range(0, count, chunk):
            transcript.append_batch(synthetic_event(n, text_bytes) for n in range(first, min(first + chunk, count)))
    with open(path, "rb") as file:
        os.fsync(file.fileno())
    return path.stat().st_size
