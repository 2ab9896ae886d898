"""Notebook 9's writer process: it streams part of a reply and waits to be killed.

Kept apart from live_session.py so the child process imports no widgets and no plotting: it
starts faster, and it is what a real agent process would load.
"""

from __future__ import annotations

import json
import sys
import threading

from ..production.live import SessionEventLog, is_delta
from ..production.timeouts import ManualClock

PROMPT = "test_calc.py fails: add(2, 3) returns -1. Please fix it."
REPLY = "I read calc.py: add() returns a - b. I will change it to a + b, then run the tests again."


def reply_pieces(text: str = REPLY) -> list[str]:
    """The reply cut into the pieces a model streams: a few words each."""
    words = text.split(" ")
    return [" ".join(words[i:i + 2]) + (" " if i + 2 < len(words) else "") for i in range(0, len(words), 2)]


def stream_writer_child(path: str, deltas: str) -> None:
    """Body of the child process: commit a turn's start, stream `deltas` pieces of a reply, then wait.

    Its subscriber forwards every item to stdout as one JSON line; the parent is the client.
    """
    out = threading.Lock()

    def forward(item) -> None:
        line = {"delta": vars(item)} if is_delta(item) else {"committed": item}
        with out:
            print(json.dumps(line), flush=True)

    log = SessionEventLog.create(path, clock=ManualClock())
    subscription = log.subscribe(from_sequence=1, on_event=forward)
    log.start_turn()
    log.user_message(PROMPT)
    log.record_tool_call("call_1", "read_file", {"path": "calc.py"})
    stream = log.open_stream("text")
    for piece in reply_pieces()[: int(deltas)]:
        stream.delta(piece)
    subscription.wait_delivered()
    with out:
        print(json.dumps({"waiting": True}), flush=True)
    sys.stdin.readline()  # the stream is open and its final part not committed: the parent kills us here
