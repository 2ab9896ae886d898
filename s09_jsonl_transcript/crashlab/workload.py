"""The events every crash-lab writer appends, and the check of what a reader got back.

Event n is a pure function of n, so a checker rebuilds exactly what a writer meant to
write without talking to it. Each event carries its own number n beside the sequence the
transcript gives it: a duplicate shows as an n seen twice, a spliced record as content
that is not the event its n promises.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..code import TYPE_MESSAGE
from ..lab import BATCH_END_FIELD, CHAIN_FIELD, RESERVED_FIELDS

_ENVELOPE = RESERVED_FIELDS | {CHAIN_FIELD}
MODES = ("append", "batch", "repair")  # how a crash-lab writer appends (see victim.py); kill_campaign's default
LIVE_MODES = ("stream", "validated")  # through a live SessionEventLog (live.py)
LESSON_MODES = ("lesson", "lesson-repair")  # through the lesson's own code.JSONLTranscript (no chain, no batches)
ALL_MODES = MODES + LIVE_MODES + LESSON_MODES  # the full campaign (python -m s09_jsonl_transcript.crashlab kill)
STREAMING_MODES = ("stream",)  # their events are final parts of a stream: they carry its part_id


def subject_of(mode: str) -> str:
    """Whose class a writer mode appends with: "lesson" (code.JSONLTranscript) or "lab" (DurableTranscript)."""
    return "lesson" if mode in LESSON_MODES else "lab"


def workload_event(n: int) -> dict:
    """The n-th event (n >= 1) a crash-lab writer appends: the same for every writer and run.

    Lengths vary with n and the text holds multi-byte UTF-8, so torn writes land anywhere
    inside a character as well as between records.
    """
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"event numbers start at 1, not {n!r}")
    role = "user" if n % 2 else "assistant"
    filler = "é✓ab" * ((n * 37) % 23)
    return {"type": TYPE_MESSAGE, "role": role, "content": f"event {n} {filler}", "n": n}


def part_id_of(n: int) -> str:
    """The part_id of the stream whose final part is event n (stream mode)."""
    return f"part-{n}"


def expected_event(n: int, mode: str = "append") -> dict:
    """What event n is on disk in this mode: the workload event, plus its part_id when it ended a stream."""
    event = workload_event(n)
    return {**event, "part_id": part_id_of(n)} if mode in STREAMING_MODES else event


def stream_pieces(n: int) -> list[str]:
    """The deltas a streaming writer sends before committing event n: its content cut into pieces."""
    content = workload_event(n)["content"]
    cuts = sorted({(len(content) * k) // 4 for k in range(1, 4)})
    return [content[start:end] for start, end in zip([0, *cuts], [*cuts, len(content)]) if end > start]


def payload_of(record: dict) -> dict:
    """A record read back from the file without its envelope and chain: what append was given."""
    return {key: value for key, value in record.items() if key not in _ENVELOPE}


@dataclass(frozen=True)
class Tally:
    """How the events a reader returned compare with what the writer acknowledged."""

    acknowledged: int  # appends that returned (the writer said so before it died)
    recovered: int  # events the reader returned
    lost: int  # acknowledged but not recovered: must always be 0
    duplicated: int  # recovered events whose n was already seen: must always be 0
    spliced: int  # recovered events that are not the event their place promises: must always be 0
    partial_batches: int = 0  # batches of which some records but not all were recovered: must always be 0

    @property
    def ok(self) -> bool:
        """True when nothing acknowledged is missing, doubled or altered, and no batch came back in part."""
        return self.lost == self.duplicated == self.spliced == self.partial_batches == 0


def tally(events: list[dict], acknowledged, mode: str = "append") -> Tally:
    """Compare the events a reader returned with the event numbers a writer acknowledged.

    Event i of the file (sequence i) must be expected_event(i, mode): a single writer appends
    events 1, 2, 3, ... and a torn write is cut off before the next one is written.
    """
    acknowledged = set(acknowledged)
    numbers = [event.get("n") for event in events]
    spliced = sum(
        1 for place, event in enumerate(events, start=1)
        if event.get("sequence") != place or payload_of(event) != expected_event(place, mode)
    )
    return Tally(
        acknowledged=len(acknowledged),
        recovered=len(events),
        lost=len(acknowledged - set(numbers)),
        duplicated=len(numbers) - len(set(numbers)),
        spliced=spliced,
        partial_batches=partial_batches(events),
    )


def partial_batches(events: list[dict]) -> int:
    """How many batches the events hold only in part: a record says its batch ends past the last event."""
    last = events[-1]["sequence"] if events else 0
    return len({event[BATCH_END_FIELD] for event in events if event.get(BATCH_END_FIELD, 0) > last})
