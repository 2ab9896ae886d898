"""Code the earlier chapters wrote in their cells, for the later chapters that use it.

Each definition is copied exactly as its chapter's cell wrote it (tests/test_previous_chapters.py checks
that against the English notebooks), so a later chapter imports what the student already built instead of
writing it again.
"""

import json
import os
from datetime import timezone
from pathlib import Path


# --------------------------------------------------------------------------- chapter 1: 01_events_on_disk.ipynb
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
