"""Helpers the promise tests of the lesson (test_lesson_promises.py) and of the lab (test_lab_promises.py) share:
events, records built by hand, and a recorder of what reaches the disk."""

from __future__ import annotations

import json
import os

from s09_jsonl_transcript.code import SCHEMA_VERSION


def message(text, role="user") -> dict:
    """A message event."""
    return {"type": "message", "role": role, "content": text}


def call(call_id, name="read_file") -> dict:
    """A tool call event."""
    return {"type": "function_call", "callId": call_id, "name": name, "arguments": {}}


def result(call_id, output="ok") -> dict:
    """A tool result event."""
    return {"type": "function_call_result", "callId": call_id, "output": output}


def enveloped(session, sequence, payload, schema_version=SCHEMA_VERSION) -> dict:
    """A record as append would write it, built by hand (for a newer schema_version, say)."""
    return {"schema_version": schema_version, "sequence": sequence, "event_id": f"transcript:{session}:{sequence}",
            "session_id": session, "recorded_at": "2026-01-05T09:00:00+00:00", **payload}


def write_lines(path, records) -> None:
    """Write the records as lines of JSON, each ending with a newline."""
    path.write_bytes(b"".join(json.dumps(record).encode() + b"\n" for record in records))


class Recorder:
    """Wraps os.write / os.fsync (through monkeypatch) to see what reaches the disk, and in what order;
    short_by > 0 makes every write of more than one byte lose its last short_by bytes."""

    def __init__(self, monkeypatch, short_by=0):
        self.calls, self.short_by = [], short_by
        real_write, real_fsync = os.write, os.fsync

        def write(fd, data):
            if self.short_by and len(data) > 1:
                data = data[: len(data) - self.short_by]
            self.calls.append(("write", fd, bytes(data)))
            return real_write(fd, data)

        def fsync(fd):
            self.calls.append(("fsync", fd, os.readlink(f"/proc/self/fd/{fd}")))
            return real_fsync(fd)

        monkeypatch.setattr(os, "write", write)
        monkeypatch.setattr(os, "fsync", fsync)

    def names(self) -> list[str]:
        """The calls, in order: "write" or "fsync"."""
        return [name for name, *_ in self.calls]

    def fsynced_paths(self) -> list[str]:
        """What each fsync synced: the path its descriptor names."""
        return [target for name, _, target in self.calls if name == "fsync"]
