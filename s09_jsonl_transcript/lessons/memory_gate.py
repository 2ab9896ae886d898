"""Notebook 5 (the memory candidate gate): what select_memory_candidate allows and refuses, and a form
that submits one event id, a summary and a reason to it.

The gate is JSONLTranscript.select_memory_candidate; this module only calls it and shows its answer.
"""

from __future__ import annotations

import dataclasses
import hashlib
import html
from pathlib import Path

import ipywidgets as widgets

from ..code import JSONLTranscript, MemorySelectionError, TranscriptCorruptionError, TranscriptMemoryCandidate
from .display import MAIN_CONTROL_CLASS, RESULT_CLASS, html_table
from .style import OKABE_ITO


def ask_gate(transcript: JSONLTranscript, event_id, summary, reason):
    """The candidate the gate returns for this selection, or the error it raises.

    The error is a MemorySelectionError for a refused selection, or a TranscriptCorruptionError when
    the transcript is damaged: the gate validates the evidence before it points at any of it.
    """
    try:
        return transcript.select_memory_candidate(event_id, summary, reason)
    except (MemorySelectionError, TranscriptCorruptionError) as refusal:
        return refusal


def describe_answer(answer) -> tuple[str, str]:
    """(verdict, detail) for one answer of ask_gate: the candidate's source id, or the refusal message."""
    if isinstance(answer, TranscriptMemoryCandidate):
        return "allowed", f"candidate for {answer.source_id}"
    if isinstance(answer, TranscriptCorruptionError):
        return "refused", f"the transcript is damaged: {answer}"
    return "refused", str(answer)


def event_type_rows(transcript: JSONLTranscript, summary: str, reason: str) -> list[tuple]:
    """One row per event type in the transcript (its first event): type, event id, verdict, detail."""
    first_of_type = {}
    for event in transcript.read_events():
        first_of_type.setdefault(event["type"], event)
    return [(event_type, event["event_id"], *describe_answer(ask_gate(transcript, event["event_id"], summary, reason)))
            for event_type, event in first_of_type.items()]


def selection_rows(transcript: JSONLTranscript, selections) -> list[tuple]:
    """One row per (label, event_id, summary, reason) selection: label, event id, verdict, detail."""
    return [(label, repr(event_id), *describe_answer(ask_gate(transcript, event_id, summary, reason)))
            for label, event_id, summary, reason in selections]


def carries_text(candidate: TranscriptMemoryCandidate, text: str) -> bool:
    """Whether text appears inside any field of the candidate."""
    return any(text in str(value) for value in dataclasses.asdict(candidate).values())


def files_under(folder) -> dict[str, str]:
    """Every file under folder, by relative path, with the sha256 of its bytes: equal dicts mean nothing was written."""
    folder = Path(folder)
    return {path.relative_to(folder).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(folder.rglob("*")) if path.is_file()}


def answer_html(answer) -> str:
    """The form's result: the candidate's fields as a table, or the refusal in words."""
    if not isinstance(answer, TranscriptMemoryCandidate):
        return (f"<span style='color:{OKABE_ITO['vermillion']}'>&#10007;</span> <b>refused</b>: "
                f"{html.escape(describe_answer(answer)[1])}")
    rows = list(dataclasses.asdict(answer).items())
    return (f"<span style='color:{OKABE_ITO['green']}'>&#10003;</span> <b>candidate</b> (no event body inside)"
            + html_table(["field", "value"], rows).data)


class MemoryGateForm:
    """Pick an event id, type a summary and a reason, and submit them to the memory gate.

    `submit` is a plain method: call it directly. The form never changes the transcript.
    """

    def __init__(self, transcript: JSONLTranscript):
        self.transcript = transcript
        self.submissions = 0
        self.answer = None  # the gate's last answer: a candidate or the error that refused the selection
        choices = [(f"{event['sequence']}: {event['type']}", event["event_id"]) for event in transcript.read_events()]
        self.event_id = widgets.Dropdown(options=choices, description="Event")
        self.summary = widgets.Text(description="Summary", placeholder="what is worth remembering")
        self.reason = widgets.Text(description="Reason", placeholder="why it should outlive this session")
        self.submit_button = widgets.Button(description="Submit to the gate", button_style="primary")
        self.submit_button.add_class(MAIN_CONTROL_CLASS)
        self.result = widgets.HTML("Choose an event, write a summary and a reason, then submit.")
        self.result.add_class(RESULT_CLASS)
        self.submit_button.on_click(
            lambda _button: self.submit(self.event_id.value, self.summary.value, self.reason.value))

    def submit(self, event_id, summary, reason):
        """Ask the gate, show its answer, and return it (a candidate or the error, as ask_gate does)."""
        self.answer = ask_gate(self.transcript, event_id, summary, reason)
        self.submissions += 1
        self.result.value = f"Submission {self.submissions} ({html.escape(str(event_id))}): " + answer_html(self.answer)
        return self.answer

    def widget(self) -> widgets.VBox:
        """The form and its result, ready to display."""
        return widgets.VBox([self.event_id, self.summary, self.reason, self.submit_button, self.result])
