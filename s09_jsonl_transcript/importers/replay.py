"""Replay an imported transcript with a window that counts the lesson's events, not the importer's evidence.

    messages = replay_imported(summary.target)          # the chat messages, ready for a model
    events = window_events(summary.target, 1000)        # the window they come from

The lesson's window (SESSION_MAX_ITEMS) is the last N events of a transcript, whatever their type:
the lesson writes only its own types. An imported transcript also holds `source-record` events, the
evidence an import keeps of what the lesson has no type for (a Codex session is about half evidence).
Counted in the window, they crowd the conversation out of it. Here the window is the last max_items
events that are NOT evidence: every other type counts, as it does in the lesson's window (a reasoning
or a snapshot is not a message either, and the lesson counts it). The transcript is read from its end,
one page at a time, through the lab's public read_recent: memory holds the window and one page.

The lab's own `replay` and `replay_state` keep the lesson's rule, evidence counted; this module is the
importers' rule for the transcripts they write.
"""

from __future__ import annotations

from collections import deque

from ..code import SESSION_MAX_ITEMS, messages_of, window_of
from ..lab import DurableTranscript
from .common import TYPE_SOURCE_RECORD


def window_events(path, max_items: int = SESSION_MAX_ITEMS) -> list[dict]:
    """The last max_items events of the transcript at path that are not evidence, oldest first."""
    window_of([], max_items)  # refuses a max_items that is not a whole number >= 0
    transcript = DurableTranscript(path)
    window, before = deque(), None
    while len(window) < max_items:
        page = transcript.read_recent(max_items, before=before)
        if not page.events:
            break
        kept = [event for event in page.events if event["type"] != TYPE_SOURCE_RECORD]
        window.extendleft(reversed(kept))
        if page.offsets[0] == 0:
            break
        before = page.offsets[0]
    return list(window)[max(len(window) - max_items, 0):]


def replay_imported(path, max_items: int = SESSION_MAX_ITEMS) -> list[dict]:
    """The chat messages of an imported transcript's window (window_events), as the lesson's replay maps them."""
    return messages_of(window_events(path, max_items))
