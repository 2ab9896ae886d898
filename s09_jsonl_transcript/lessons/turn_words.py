"""What a fresh process does after a crash (turns.SessionStatus), in the language in use: notebooks 8 and 9.

The turn fold (production/turns.py) says its decisions in English, as the library does; these say them in
the language chosen in the notebook's first cell (locale/zh/turn_words.json holds the Chinese).
"""

from __future__ import annotations

from ..production import turns
from ..text import i18n

tr = i18n.translator("turn_words")


def decision_label(decision: str) -> str:
    """What a fresh process does after a crash (turns.SessionStatus.decision) in the language in use."""
    labels = {
        turns.NOTHING_TO_DO: tr("nothing to do"),
        turns.WAIT_FOR_USER: tr("wait for the user"),
        turns.COMPACT_THEN_CONTINUE: tr("compact the context, then continue with the next turn"),
        turns.RERUN: tr("resume the unfinished turn"),
        turns.WAIT_FOR_RESUME: tr("wait for a resume_command"),
        turns.RETRY_OR_ABANDON: tr("offer retry or abandon"),
        turns.NEW_SESSION: tr("start a new session (expired is terminal)"),
        turns.NO_TURN_MARKERS: tr("no turn markers: replay as usual"),
    }
    return labels.get(decision, decision)


def status_said(status) -> str:
    """A turns.SessionStatus as its str() says it ('running: resume the unfinished turn 1'), in the language in use."""
    said = tr("{state}: {decision}", state=status.state, decision=decision_label(status.decision))
    if status.open_turn is not None and status.state == turns.RUNNING:
        said += f" {status.open_turn}"
    if status.anomalies:
        said += tr(" ({count} anomalies)", count=len(status.anomalies))
    return said
