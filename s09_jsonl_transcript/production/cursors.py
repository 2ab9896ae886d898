"""Reading committed events from a cursor, and paging back through older history.

Cursors are inclusive, as in the design: read_from(N) starts AT sequence N; the exclusive form has
its own name (read_after(N)). Every reader here reads what it returns plus about one block
(read_recent before a known end), never the whole file. Events of CLIENT_HIDDEN_TYPES (a handoff)
take a sequence in the file but are left out of what a client reads: a client sees a gap in the
sequences, which is legal; the file itself has none.

The functions take any DurableTranscript (no writer needed); ReadingMixin gives SessionEventLog the
same reads, bounded by the log's last commit.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..code import TranscriptCorruptionError, messages_of
from ..lab import BATCH_END_FIELD, DurableTranscript, regular
from .errors import LiveInputError
from .inputs import check_cursor, check_whole
from .turns import TYPE_HANDOFF, materialize

CLIENT_HIDDEN_TYPES = frozenset({TYPE_HANDOFF})  # committed with a sequence, never delivered or replayed
BLOCK = 64 * 1024  # bytes read at a time when counting lines to page a subscriber's gap


@dataclass(frozen=True)
class Page:
    """One page of history, oldest event first, and the cursor to the page before it."""

    events: list
    cursor: int | None  # byte offset where the first event starts: page_back(count, before=cursor); None: empty

    @property
    def has_more(self) -> bool:
        """True when older events exist in front of this page."""
        return bool(self.events) and self.events[0]["sequence"] > 1


def is_client_visible(event: dict) -> bool:
    """False for committed events clients never see (CLIENT_HIDDEN_TYPES): they keep their sequence in the file."""
    return event.get("type") not in CLIENT_HIDDEN_TYPES


def ends_a_commit(record: dict) -> bool:
    """True when no event of the same commit follows this record (a batch is one commit, seed 003)."""
    return record.get(BATCH_END_FIELD, record["sequence"]) == record["sequence"]


def lines_back(path: Path, end: int, count: int) -> int:
    """The byte offset where the count-th line in front of byte end starts (reads those lines only).

    Every committed line ends with a newline, so this only counts newlines, reading backwards in
    blocks: memory stays at one block however many lines it crosses. The reader validates what
    is read from there (read_range).
    """
    position, newlines = end, 0
    with open(regular(path), "rb") as file:
        while position > 0:
            size = min(BLOCK, position)
            file.seek(position - size)
            block = file.read(size)
            for index in range(len(block) - 1, -1, -1):
                if block[index] == 0x0A and position - size + index != end - 1:
                    newlines += 1
                    if newlines == count:
                        return position - size + index + 1
            position -= size
    return 0


def lines_forward(path: Path, start: int, count: int) -> int:
    """The byte offset just past the count-th line from byte start (reads those lines only, a block at a time)."""
    position, newlines = start, 0
    with open(regular(path), "rb") as file:
        file.seek(start)
        while block := file.read(BLOCK):
            for index, byte in enumerate(block):
                if byte == 0x0A:
                    newlines += 1
                    if newlines == count:
                        return position + index + 1
            position += len(block)
    return position


def committed_end(transcript: DurableTranscript) -> tuple[int, int]:
    """(last committed sequence, byte offset where it ends), read from the tail (about one block)."""
    tail = transcript.read_recent(1)
    if not tail.events:
        return 0, 0
    end = tail.offsets[-1] + len(tail.last_line) + (0 if tail.last_line_unterminated else 1)
    return tail.last_sequence, end


def read_range(transcript: DurableTranscript, first: int, last: int, end: int) -> list[dict]:
    """The committed events with first <= sequence <= last (both included); event last ends at byte end.

    Validated, hidden events included. Reads what it returns plus about one block (read_recent
    before end), however much the file has grown past end meanwhile. Fails closed when the file
    does not hold exactly those events.
    """
    first = max(first, 1)
    if last < first:
        return []
    events = transcript.read_recent(last - first + 1, before=end).events
    if [event["sequence"] for event in events] != list(range(first, last + 1)):
        found = f"{events[0]['sequence']}..{events[-1]['sequence']}" if events else "nothing"
        raise TranscriptCorruptionError(transcript.path, None, end,
                                        f"expected sequences {first}..{last} before byte {end}, found {found}")
    return events


def read_from(transcript: DurableTranscript, from_sequence: int) -> list[dict]:
    """Every client-visible committed event with sequence >= from_sequence, oldest first, validated.

    Inclusive, as in the design: read_from(t, 5) starts at event 5 (0 and 1 both mean "from the
    first"). For any reader (no writer needed): one tail read finds the last committed event, a
    second reads the events from the cursor up to it.
    """
    first = check_cursor(from_sequence)
    last, end = committed_end(transcript)
    if first > last + 1:
        raise ValueError(f"cursor {first} is past the transcript's next sequence {last + 1}")
    return [event for event in read_range(transcript, first, last, end) if is_client_visible(event)]


def read_after(transcript: DurableTranscript, after_sequence: int) -> list[dict]:
    """The exclusive form, named as such: every client-visible event with sequence > after_sequence."""
    return read_from(transcript, check_cursor(after_sequence) + 1)


def page_back(transcript: DurableTranscript, count: int, before: int | None = None) -> Page:
    """The count events in front of byte cursor `before` (the newest when None), oldest first.

    Pass the page's cursor as `before` to read the page in front of it.
    """
    check_whole("count", count)
    if before is not None:
        check_whole("before", before)
    scanned = transcript.read_recent(count, before=before)
    return Page(scanned.events, scanned.offsets[0] if scanned.events else None)


class ReadingMixin:
    """SessionEventLog's reads: from a cursor, a page back, the materialized events and the chat replay.

    Reads the log's transcript, _last_sequence and _end (where its last commit ends) under
    transcript.lock, then the file outside it.
    """

    def read_from(self, from_sequence: int) -> list[dict]:
        """Every client-visible committed event with sequence >= from_sequence (inclusive), validated.

        Reads those plus about one block. read_after(n) is the exclusive form.
        """
        first = max(check_cursor(from_sequence), 1)
        with self.transcript.lock:
            self._readable()
            last, end = self._last_sequence, self._end
        if first > last + 1:
            raise LiveInputError(f"cursor {first} is past the log's next sequence {last + 1}")
        return [event for event in read_range(self.transcript, first, last, end) if is_client_visible(event)]

    def read_after(self, after_sequence: int) -> list[dict]:
        """The exclusive form of read_from: every client-visible event with sequence > after_sequence."""
        return self.read_from(check_cursor(after_sequence) + 1)

    def materialized(self) -> list[dict]:
        """Every committed event as the projections read them: rewind markers applied (turns.materialize)."""
        self._readable()
        return materialize(self.transcript.read_events())

    def replay(self) -> list[dict]:
        """The chat messages of the materialized session (rewound events left out), oldest first."""
        return messages_of([event for event in self.materialized() if is_client_visible(event)])

    def page_back(self, count: int, before: int | None = None) -> Page:
        """The count committed events in front of byte cursor before (the newest when None)."""
        check_whole("count", count)
        with self.transcript.lock:
            self._readable()
            if before is None:
                before = self._end
        check_whole("before", before)
        return page_back(self.transcript, count, before)
