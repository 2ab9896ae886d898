"""The lesson defines the event types once (code.EVENT_TYPES); every other per-type table derives
from it (issue 44).

A maintainer who adds a type (a `compaction` summary, say) edits code.py: its table, its message
mapping and its fold. Nothing else has to change for the kit to stay right: the colours, the turn
fold, the importers and the message builders follow the table, and the fast paths, which spell the
table out for speed, stand aside until someone updates them. The last test adds such a type in a
fresh interpreter, changing code.py's objects only, and checks each of those.
"""

import json
import subprocess
import sys
from pathlib import Path

from s09_jsonl_transcript.code import EVENT_TYPES
from s09_jsonl_transcript.importers import workbuddy
from s09_jsonl_transcript.lab import fast
from s09_jsonl_transcript.lessons.style import EVENT_COLORS
from s09_jsonl_transcript.production import turns

ROOT = Path(__file__).resolve().parent.parent


def test_every_per_type_table_covers_every_type():
    assert set(EVENT_TYPES) <= set(EVENT_COLORS)
    assert set(EVENT_TYPES) <= turns.KNOWN_EVENT_TYPES
    assert workbuddy.LESSON_TYPES == set(EVENT_TYPES)
    assert fast.TYPES_FOLDED == EVENT_TYPES and fast.table_matches()


# A seventh type, added the way a maintainer would add it to code.py: its row in the table, a branch
# of event_to_message (a compaction summary becomes an assistant message) and nothing else.
SEVENTH_TYPE = r'''
import json, sys, tempfile
from pathlib import Path
from s09_jsonl_transcript import code

code.EVENT_TYPES["compaction"] = {"summary": str}
lesson_message = code.event_to_message
def event_to_message(event):
    if event["type"] == "compaction":
        return {"role": "assistant", "content": "Summary of earlier work: " + event["summary"]}
    return lesson_message(event)
code.event_to_message = event_to_message

from s09_jsonl_transcript.lab import fast
from s09_jsonl_transcript.production import turns
from s09_jsonl_transcript.code import JSONLTranscript, MockLLM, run_agent, ticking_clock
from s09_jsonl_transcript.importers import workbuddy
from s09_jsonl_transcript.lab import DurableTranscript
from s09_jsonl_transcript.lessons.style import EVENT_COLORS
from s09_jsonl_transcript.production.live import SessionEventLog

folder = Path(tempfile.mkdtemp())
with DurableTranscript(folder / "s.jsonl", clock=ticking_clock()) as lab:
    run_agent(lab, MockLLM())
    lab.append({"type": "compaction", "summary": "add() was fixed"})
    try:
        lab.append({"type": "compaction"})
        refused = False
    except code.TranscriptValidationError:
        refused = True
with SessionEventLog.open(folder / "live.jsonl", clock=ticking_clock()) as log:
    log.commit({"type": "compaction", "summary": "add() was fixed"})
    live_messages = log.replay()
lesson, careful = JSONLTranscript(folder / "s.jsonl").recover(), DurableTranscript(folder / "s.jsonl")
careful.fast_paths = False
print(json.dumps({
    "colour": "compaction" in EVENT_COLORS,
    "turns": "compaction" in turns.KNOWN_EVENT_TYPES,
    "workbuddy": "compaction" in workbuddy.LESSON_TYPES,
    "fast paths stand aside": not fast.table_matches() and fast.fast_recover(
        folder / "s.jsonl", "s", 1000, 8 * 1024 * 1024) is None,
    "lab recovers as the lesson": DurableTranscript(folder / "s.jsonl").recover() == lesson,
    "careful path as the lesson": careful.recover() == lesson,
    "last message": lesson["messages"][-1]["content"],
    "live log replays it": live_messages[-1]["content"],
    "refused without its field": refused,
}))
'''


def test_a_seventh_type_added_to_code_py_alone_reaches_the_whole_kit():
    done = subprocess.run([sys.executable, "-c", SEVENTH_TYPE], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    summary = "Summary of earlier work: add() was fixed"
    assert found == {"colour": True, "turns": True, "workbuddy": True, "fast paths stand aside": True,
                     "lab recovers as the lesson": True, "careful path as the lesson": True,
                     "last message": summary, "live log replays it": summary, "refused without its field": True}
