"""Chapter 5's instructor widget: a form that submits one event id, a summary and a reason to a gate.

The chapter writes the gate in its cells, `select_candidate(transcript, event_id, summary, reason)`,
and hands it to the form, so a press runs the code the chapter wrote. The form only shows the answer:
the candidate's fields, or the refusal in the library's words (through i18n.library_text).
"""

from __future__ import annotations

import dataclasses
import html

import ipywidgets as widgets

from ..code import MemorySelectionError, TranscriptCorruptionError
from ..text import i18n
from .display import MAIN_CONTROL_CLASS, RESULT_CLASS, html_table
from .style import OKABE_ITO

tr = i18n.translator("memory_gate")


def answer_html(answer) -> str:
    """The form's result: a candidate's fields as a table, or a refusal in words."""
    if isinstance(answer, TranscriptCorruptionError):
        reason = tr("the transcript is damaged: {error}", error=i18n.library_text(answer))
    elif isinstance(answer, MemorySelectionError):
        reason = i18n.library_text(answer)
    else:
        rows = list(dataclasses.asdict(answer).items())
        return (f"<span style='color:{OKABE_ITO['green']}'>&#10003;</span> "
                + tr("<b>candidate</b> (no event body inside)") + html_table([tr("field"), tr("value")], rows).data)
    return (f"<span style='color:{OKABE_ITO['vermillion']}'>&#10007;</span> "
            + tr("<b>refused</b>: {reason}", reason=html.escape(reason)))


class MemoryGateForm:
    """Pick an event id, type a summary and a reason, and submit them to gate(transcript, event_id, summary, reason).

    `submit` is a plain method: call it directly. The form itself never writes.
    """

    def __init__(self, transcript, gate):
        self.transcript, self.gate = transcript, gate
        self.submissions = 0
        self.answer = None  # the gate's last answer: a candidate, or the error that refused the selection
        choices = [(f"{event['sequence']}: {event['type']}", event["event_id"]) for event in transcript.read_events()]
        self.event_id = widgets.Dropdown(options=choices, description=tr("Event"))
        self.summary = widgets.Text(description=tr("Summary"), placeholder=tr("what is worth remembering"))
        self.reason = widgets.Text(description=tr("Reason"), placeholder=tr("why it should outlive this session"))
        self.submit_button = widgets.Button(description=tr("Submit to the gate"), button_style="primary")
        self.submit_button.add_class(MAIN_CONTROL_CLASS)
        self.result = widgets.HTML(tr("Choose an event, write a summary and a reason, then submit."))
        self.result.add_class(RESULT_CLASS)
        self.submit_button.on_click(
            lambda _button: self.submit(self.event_id.value, self.summary.value, self.reason.value))

    def submit(self, event_id, summary, reason):
        """Ask the gate, show its answer, and return it (a candidate, or the error that refused it)."""
        try:
            self.answer = self.gate(self.transcript, event_id, summary, reason)
        except (MemorySelectionError, TranscriptCorruptionError) as refusal:
            self.answer = refusal
        self.submissions += 1
        self.result.value = (tr("Submission {number} ({event_id}): ", number=self.submissions,
                                event_id=html.escape(str(event_id))) + answer_html(self.answer))
        return self.answer

    def widget(self) -> widgets.VBox:
        """The form and its result, ready to display."""
        return widgets.VBox([self.event_id, self.summary, self.reason, self.submit_button, self.result])
