"""Code the earlier chapters wrote in their cells, for the later chapters that use it.

Each definition is copied exactly as its chapter's cell wrote it (tests/test_previous_chapters.py checks
that against the English notebooks), so a later chapter imports what the student already built instead of
writing it again: chapter 4 reads with chapter 3's reader, and chapter 5 joins chapters 1 to 5 into one
transcript.
"""

import json
import os
from datetime import timezone
from pathlib import Path

from ..code import (
    SCHEMA_VERSION,
    SESSION_MAX_ITEMS,
    TYPE_AI_TITLE,
    TYPE_FILE_SNAPSHOT,
    TYPE_FUNCTION_CALL,
    TYPE_FUNCTION_CALL_RESULT,
    TYPE_MESSAGE,
    TYPE_REASONING,
    TranscriptCorruptionError,
    regular,
    shape_problem,
)


# ---------------------------------------- chapter 1: 01_events_on_disk.ipynb
def envelope(session_id, sequence, now):
    """The five fields append puts in front of the event numbered `sequence`, written at `now` (an aware datetime)."""
    return {
        "schema_version": 1,
        "sequence": sequence,
        "event_id": f"transcript:{session_id}:{sequence}",
        "session_id": session_id,
        "recorded_at": now.astimezone(timezone.utc).isoformat(),
    }


def encode(record):
    """One record as one line of UTF-8 JSON, its newline included."""
    text = json.dumps(record, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return text.encode("utf-8") + b"\n"


class Transcript:
    """Chapter 1's transcript: a new append-only JSONL file, one line per event."""

    def __init__(self, path, clock):
        self.path, self.clock = Path(path), clock
        self.session_id = self.path.stem  # the file's name is the session id
        self.next_sequence = 1
        # O_APPEND: every write lands at the current end of the file; O_CREAT: make the file if it is missing
        self.fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def append(self, event):
        """Write the event, in its envelope, as one line; return the record once it is on the disk."""
        record = {**envelope(self.session_id, self.next_sequence, self.clock()), **event}
        line = encode(record)
        written = os.write(self.fd, line)  # one write: the whole line
        if written != len(line):  # only a full disk writes less to a file
            raise OSError(f"the disk is full: {written} of {len(line)} bytes written")
        os.fsync(self.fd)  # the durable boundary: on the disk before append returns
        self.next_sequence += 1
        return record

    def close(self):
        """Close the file's descriptor: the transcript writes nothing more."""
        os.close(self.fd)



# ---------------------------------------- chapter 3: 03_partial_tail_vs_corruption.ipynb
def line_problem(record, sequence, session_id):
    """What is wrong with the record parsed from one complete line, which must be event `sequence`; or None."""
    if type(record) is not dict:
        return "record must be a JSON object"
    if not record.keys() & {"schema_version", "sequence", "session_id", "event_id"}:
        return "line has no envelope (schema_version, sequence, ...): not a transcript in the lesson's format"
    expected = {"sequence": sequence, "session_id": session_id, "event_id": f"transcript:{session_id}:{sequence}"}
    for name, value in expected.items():  # each line carries its own place: no gap, no repeat, no stranger
        if type(record.get(name)) is not type(value) or record[name] != value:
            return f"expected {name} {value!r}, got {record.get(name)!r}"
    if type(record.get("schema_version")) is not int or record["schema_version"] < 1:
        return f"bad schema_version {record.get('schema_version')!r}"
    if type(record.get("type")) is not str:
        return "record has no string 'type'"
    if record["schema_version"] > SCHEMA_VERSION:
        return None  # a newer layout: kept as evidence, never interpreted
    return shape_problem(record)


def read_transcript(path):
    """The file's events and whether a partial tail was left out. A partial tail (the last line, with no
    newline, that does not parse) is forgiven; any bad complete line raises TranscriptCorruptionError."""
    path = Path(path)
    try:
        with open(regular(path), "rb") as file:  # a FIFO or a device: refused, never waited on
            pieces = file.read().split(b"\n")  # the last piece follows the last newline
    except FileNotFoundError:
        return [], False  # no file yet: no events
    events = []
    offset = 0  # where the line being read starts
    for number, piece in enumerate(pieces, start=1):
        complete = number < len(pieces)  # a newline ends it
        if not complete and piece == b"":
            break  # every line was finished
        try:
            record = json.loads(piece.decode("utf-8"), parse_constant=int)
        except (ValueError, RecursionError):  # not UTF-8, not JSON, or nested too deep to read
            if not complete:
                return events, True  # a partial tail: an append that never returned. Forgiven, and reported
            raise TranscriptCorruptionError(path, number, offset, "invalid complete JSON record")
        problem = line_problem(record, len(events) + 1, path.stem)
        if problem:
            raise TranscriptCorruptionError(path, number, offset, problem)
        events.append(record)
        offset += len(piece) + 1
    return events, False



# ---------------------------------------- chapter 4: 04_replay_window.ipynb
def event_to_message(event):
    """The chat message for one event, or None for an event that is metadata."""
    if event["type"] == TYPE_MESSAGE:
        return {"role": event["role"], "content": event["content"]}
    if event["type"] == TYPE_FUNCTION_CALL:
        tool_use = {"type": "tool_use", "id": event["callId"], "name": event["name"],
                    "input": event.get("arguments", {})}
        return {"role": "assistant", "content": [tool_use]}
    if event["type"] == TYPE_FUNCTION_CALL_RESULT:
        tool_result = {"type": "tool_result", "tool_use_id": event["callId"], "content": event.get("output", "")}
        return {"role": "user", "content": [tool_result]}
    return None


def fold(events):
    """Everything a replacement runtime needs besides the messages, in one pass over the events."""
    title, snapshots, reasoning, newer, open_calls = None, [], 0, 0, {}
    for event in events:
        kind = event["type"]
        if event["schema_version"] > SCHEMA_VERSION:
            newer += 1  # evidence this code cannot interpret: counted, nothing more
        elif kind == TYPE_AI_TITLE:
            title = event["title"]  # the latest title wins
        elif kind == TYPE_FILE_SNAPSHOT:
            snapshots.append(event)
        elif kind == TYPE_REASONING:
            reasoning += 1
        elif kind == TYPE_FUNCTION_CALL:
            open_calls[event["callId"]] = event  # a call opens an entry...
        elif kind == TYPE_FUNCTION_CALL_RESULT:
            open_calls.pop(event["callId"], None)  # ...and its result closes it
    return {"title": title, "file_snapshots": snapshots, "reasoning_count": reasoning,
            "pending_calls": list(open_calls.values()), "unknown_schema_events": newer}


def window_of(events, max_items=SESSION_MAX_ITEMS):
    """The last max_items events (all of them when there are fewer, none for 0)."""
    if type(max_items) is not int or max_items < 0:
        raise ValueError(f"max_items must be a whole number >= 0, not {max_items!r}")
    return events[max(len(events) - max_items, 0):]


def sendable(window):
    """The events of a window that replay maps: no orphan tool result, no record of a newer schema."""
    known = [event for event in window if event["schema_version"] <= SCHEMA_VERSION]
    calls = {event["callId"] for event in known if event["type"] == TYPE_FUNCTION_CALL}
    return [event for event in known if event["type"] != TYPE_FUNCTION_CALL_RESULT or event["callId"] in calls]


def messages_of(window):
    """The messages replay sends for a window of events."""
    return [message for message in map(event_to_message, sendable(window)) if message is not None]


def replay_state(events, max_items=SESSION_MAX_ITEMS):
    """As JSONLTranscript.replay_state: the messages and everything else from the window only."""
    window = window_of(events, max_items)
    return {**fold(window), "messages": messages_of(window), "total_events": len(events),
            "next_sequence": len(events) + 1}


def recover(events, max_items=SESSION_MAX_ITEMS):
    """As JSONLTranscript.recover: the messages from the window, everything else from every event."""
    return {**replay_state(events, max_items), **fold(events)}
