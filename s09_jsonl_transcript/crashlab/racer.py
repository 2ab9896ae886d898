"""A child process of the racing-writers campaign.

    python -m s09_jsonl_transcript.crashlab.racer FILE RACER EVENTS INTEGRITY MODE [CLASS]

CLASS is "lab" (DurableTranscript, the default) or "lesson" (code.JSONLTranscript).
It prints "ready" and waits for a "go" line, so all racers start together. Modes:

  hold     append EVENTS events with one writer, print "wrote N" or "locked <message>",
           then keep the writer (and its lock) open until an "exit" line arrives;
  handover append EVENTS events one at a time, closing the writer after each one and
           retrying while another racer holds the lock; print "wrote N" at the end.
"""

from __future__ import annotations

import sys
import time

from ..code import TYPE_MESSAGE, TranscriptLockedError
from .subjects import LAB, open_transcript

RETRY_SECONDS = 0.001  # a pause between tries for the lock, so the racer holding it can work
# A racer never waits forever, but a slow, shared machine must never make it give up: only a
# writer that never lets go (a hang) keeps the lock this long.
GIVE_UP_SECONDS = 300


def racer_event(racer: int, index: int) -> dict:
    """Event `index` of racer `racer`: who wrote it is in the content."""
    return {"type": TYPE_MESSAGE, "role": "user", "content": f"racer {racer} event {index}"}


def _say(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def hold(path: str, racer: int, events: int, integrity: bool, subject: str = LAB) -> None:
    """Append every event with one writer, report, and hold the lock until told to exit."""
    transcript = open_transcript(subject, path, integrity=integrity)
    try:
        for index in range(events):
            transcript.append(racer_event(racer, index))
    except TranscriptLockedError as error:
        _say(f"locked {error}")
    else:
        _say(f"wrote {events}")
    sys.stdin.readline()  # "exit": the parent has heard from every racer
    transcript.close()


def handover(path: str, racer: int, events: int, integrity: bool, subject: str = LAB) -> None:
    """Append events one writer at a time, waiting for the lock whenever another racer holds it."""
    written = retries = 0
    give_up_at = time.monotonic() + GIVE_UP_SECONDS
    while written < events and time.monotonic() < give_up_at:
        transcript = open_transcript(subject, path, integrity=integrity)
        try:
            transcript.append(racer_event(racer, written))
            written += 1
        except TranscriptLockedError:
            retries += 1
            time.sleep(RETRY_SECONDS)
        finally:
            transcript.close()
    _say(f"wrote {written}" if written == events else f"gave up after {retries} retries")
    sys.stdin.readline()  # "exit", as in hold: every racer leaves when told


def main(path: str, racer: str, events: str, integrity: str, mode: str, subject: str = LAB) -> None:
    """Entry point of the child process (crashlab.children.start_child passes its arguments as strings)."""
    _say("ready")
    sys.stdin.readline()  # "go"
    run = {"hold": hold, "handover": handover}[mode]
    run(path, int(racer), int(events), integrity == "1", subject)


if __name__ == "__main__":
    main(*sys.argv[1:])
