"""Deltas and streams: pieces of a part handed to subscribers in memory, and the part's final commit.

A **delta** (a piece of streamed text, of reasoning, of tool progress) is handed to the subscribers
in memory only: it has no sequence, is never written and is never replayed. The final part of a
stream is committed as an ordinary event that names the stream's part_id. After a crash the deltas
are gone and every committed event is there.

    stream = log.open_stream("text")
    stream.delta("Hel"); stream.delta("lo")                         # subscribers only
    stream.commit({"type": "message", "role": "assistant", "content": stream.text})

A Stream knows nothing of the log: it is given the two things it does, handing pieces to the
subscribers (publish) and committing its final part (commit_part). StreamsMixin is the log's side.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .errors import LiveInputError
from .inputs import check_event, check_text
from .turns import part_start_event, shown

CHANNELS = ("text", "reasoning", "tool_progress")  # what a delta carries a piece of


@dataclass(frozen=True)
class Delta:
    """A piece of a stream, for subscribers only: no sequence, never written, never replayed."""

    part_id: str
    channel: str  # one of CHANNELS
    text: str
    index: int  # 0, 1, 2, ... within its part


def is_delta(item) -> bool:
    """True for a Delta, False for a committed event (a dict with a sequence)."""
    return isinstance(item, Delta)


class Stream:
    """One part being streamed: deltas go to subscribers; commit() writes the final part and ends it.

    publish(items) hands deltas to the subscribers; commit_part(stream, event) commits the final
    part and ends the stream (the log that opened it gives both).
    """

    def __init__(self, part_id: str, channel: str, turn_number: int | None, *,
                 publish: Callable[[list], None], commit_part: Callable[[Stream, dict], dict]):
        self.part_id, self.channel, self.turn_number = part_id, channel, turn_number
        self._publish, self._commit_part = publish, commit_part
        self.text = ""  # what the deltas said so far, kept by the writer to build the final part
        self.deltas = 0
        self.outcome = None  # None while open; "committed", or "unfinished" when its turn ended first

    def delta(self, text: str) -> Delta:
        """Hand one piece to the subscribers (in memory only) and return it."""
        if self.outcome is not None:
            raise RuntimeError(f"stream {self.part_id} is {self.outcome}: no more deltas")
        if not isinstance(text, str):
            raise LiveInputError(f"a delta carries text, not {type(text).__name__}")
        piece = Delta(self.part_id, self.channel, text, self.deltas)
        self.deltas += 1
        self.text += text
        self._publish([piece])
        return piece

    def commit(self, event: dict) -> dict:
        """Commit the final part: event, with this stream's part_id added. Ends the stream."""
        if self.outcome is not None:
            raise RuntimeError(f"stream {self.part_id} is {self.outcome}")
        return self._commit_part(self, check_event(event))


class StreamsMixin:
    """SessionEventLog's streams: open one, emit a delta, commit a final part, and close the unfinished.

    Keeps the open streams in _streams (part_id -> Stream); reads the fold's open turn and parts;
    writes through _append and hands deltas out through _publish, under transcript.lock.
    """

    def open_stream(self, channel: str = "text", part_id: str | None = None) -> Stream:
        """Begin streaming one part (text, reasoning or tool progress).

        Inside a turn the beginning is committed (a part_start event): until the part's final
        payload is committed the turn cannot complete, in this process or, after a crash, in the
        next. Pass the part_id of a part_start already on disk to stream that part again after a
        restart. Outside any turn a stream is in memory only.
        """
        if not isinstance(channel, str) or channel not in CHANNELS:
            raise LiveInputError(f"channel must be one of {', '.join(CHANNELS)}, not {shown(channel)}")
        if part_id is not None:
            check_text("part_id", part_id)
        with self.transcript.lock:
            self._readable()
            if self._stale:
                self._sync()
            turn = self._fold.open_turn
            part_id = part_id or self._new_part_id()
            if part_id in self._streams:
                raise LiveInputError(f"stream {part_id} is already open")
            if turn is not None and part_id not in self._fold.open_parts:
                self._append([part_start_event(part_id, channel, turn)])
            stream = Stream(part_id, channel, turn, publish=self._publish, commit_part=self._commit_part)
            self._streams[part_id] = stream
        return stream

    def _new_part_id(self) -> str:
        """part-<the sequence its part_start gets>: unique in the file, across restarts too."""
        part_id = base = f"part-{self._last_sequence + 1}"
        while part_id in self._streams or part_id in self._fold.open_parts:
            part_id = f"{base}.{next(self._parts)}"
        return part_id

    def emit_delta(self, delta: Delta) -> None:
        """Hand one delta to the subscribers: memory only, no sequence, no write."""
        if not is_delta(delta):
            raise LiveInputError(f"emit_delta takes a Delta, not {type(delta).__name__}")
        self._publish([delta])

    def _commit_part(self, stream: Stream, event: dict) -> dict:
        with self.transcript.lock:
            if self._streams.get(stream.part_id) is not stream:
                raise RuntimeError(f"stream {stream.part_id} is {stream.outcome or 'not open'}")
            record = self._append([{**event, "part_id": stream.part_id}])[0]
            stream.outcome = "committed"
            del self._streams[stream.part_id]
        return record

    def _unfinished(self, turn_number) -> list[str]:
        """The parts of turn turn_number with no committed final part: on disk, then in memory only."""
        on_disk = self._fold.parts_of(turn_number) if turn_number is not None else []
        in_memory = [part for part, stream in self._streams.items()
                     if stream.turn_number is None and part not in on_disk]
        return on_disk + in_memory

    def _close_streams(self, parts) -> None:
        for part in parts:
            stream = self._streams.pop(part, None)
            if stream is not None:
                stream.outcome = "unfinished"
