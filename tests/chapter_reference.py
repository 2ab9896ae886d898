"""What chapters 4 and 5 write in their cells, rebuilt from code.py alone, for the tests of their widgets.

The chapters hand their own functions to the widgets (ReplayExplorer takes `fates`, MemoryGateForm takes the
gate). A test that fed a widget the chapter's code would only check the chapter against itself; these are
built from code.py's public answers instead, so a widget test, or a saved notebook compared with them,
checks the chapter against the lesson.
"""

from __future__ import annotations

from s09_jsonl_transcript.code import (
    SCHEMA_VERSION,
    JSONLTranscript,
    MockLLM,
    event_to_message,
    run_agent,
    ticking_clock,
)


def code_py_fates(transcript: JSONLTranscript):
    """fates(events, max_items) as chapter 4 defines it, worked out from code.py's replay(max_items).

    Each event gets "outside" (before the window), "metadata" (maps to no message), "sent" (its message is
    the next one replay returned) or "dropped" (a chat event replay left out).
    """
    def fates(events, max_items):
        sent = iter(transcript.replay(max_items))
        next_message = next(sent, None)
        inside_from = len(events) - min(max_items, len(events))
        rows = []
        for position, event in enumerate(events):
            message = event_to_message(event) if event["schema_version"] <= SCHEMA_VERSION else None
            if position < inside_from:
                fate = "outside"
            elif message is None:
                fate = "metadata"
            elif message == next_message:
                fate, next_message = "sent", next(sent, None)
            else:
                fate = "dropped"
            rows.append((event["sequence"], event["type"], fate))
        return rows
    return fates


def code_py_gate(transcript: JSONLTranscript, event_id, summary, reason):
    """The gate as chapter 5 hands it to MemoryGateForm, answered by code.py's select_memory_candidate."""
    return transcript.select_memory_candidate(event_id, summary, reason)


def bug_fix_session(folder, name: str, extra=()) -> JSONLTranscript:
    """The scripted bug-fix session the chapters write (MockLLM, a ticking clock), then the extra events."""
    path = folder / f"{name}.jsonl"
    with JSONLTranscript(path, clock=ticking_clock()) as writer:
        run_agent(writer, MockLLM())
        for event in extra:
            writer.append(event)
    return JSONLTranscript(path)
