"""Notebook 5 (the memory candidate gate): what select_memory_candidate allows and refuses, and a form
that submits one event id, a summary and a reason to it.

The gate is DurableTranscript.select_memory_candidate; this module only calls it and shows its answer.
"""

from __future__ import annotations

import dataclasses
import hashlib
import html
from pathlib import Path

import ipywidgets as widgets

from .. import i18n
from ..code import (
    MEMORY_ELIGIBLE_EVENT_TYPES,
    MemorySelectionError,
    TranscriptCorruptionError,
    TranscriptMemoryCandidate,
    event_id_for,
)
from ..lab import DurableTranscript
from .display import MAIN_CONTROL_CLASS, RESULT_CLASS, html_table
from .replay_window import plot_window
from .style import OKABE_ITO

tr = i18n.translator("memory_gate")


def ask_gate(transcript: DurableTranscript, event_id, summary, reason):
    """The candidate the gate returns for this selection, or the error it raises.

    The error is a MemorySelectionError for a refused selection, or a TranscriptCorruptionError when
    the transcript is damaged: the gate validates the evidence before it points at any of it.
    """
    try:
        return transcript.select_memory_candidate(event_id, summary, reason)
    except (MemorySelectionError, TranscriptCorruptionError) as refusal:
        return refusal


def describe_answer(answer) -> tuple[str, str]:
    """(verdict, detail) for one answer of ask_gate, in the language in use: the candidate's source id, or
    the refusal (the library's own message, shown through i18n.library_text)."""
    if isinstance(answer, TranscriptMemoryCandidate):
        return tr("allowed"), tr("candidate for {source_id}", source_id=answer.source_id)
    if isinstance(answer, TranscriptCorruptionError):
        return tr("refused"), tr("the transcript is damaged: {error}", error=i18n.library_text(answer))
    return tr("refused"), i18n.library_text(answer)


def answer_text(answer) -> str:
    """One answer of ask_gate as one line: the verdict, then the candidate's source id or the refusal."""
    return tr("{verdict}: {detail}", verdict=describe_answer(answer)[0], detail=describe_answer(answer)[1])


def sequence_answer_text(sequence: int, answer) -> str:
    """The gate's answer for the event at this sequence, as one line."""
    return tr("sequence {sequence}: {answer}", sequence=sequence, answer=answer_text(answer))


def far_outside_text(sequence: int, answer) -> str:
    """The gate's answer for an event far outside the replay window, as one line."""
    return tr("sequence {sequence}, far outside the window: {answer}", sequence=sequence, answer=answer_text(answer))


def count_candidates(answers) -> int:
    """How many of ask_gate's answers are candidates."""
    return sum(isinstance(answer, TranscriptMemoryCandidate) for answer in answers)


def eligible_types_text(events: list[dict]) -> str:
    """How many events there are and which event types the gate lets through."""
    return tr("{count} events; eligible types: {types}", count=len(events),
              types=sorted(MEMORY_ELIGIBLE_EVENT_TYPES))


def event_type_rows(transcript: DurableTranscript, summary: str, reason: str) -> list[tuple]:
    """One row per event type in the transcript (its first event): type, event id, verdict, detail."""
    first_of_type = {}
    for event in transcript.read_events():
        first_of_type.setdefault(event["type"], event)
    return [(event_type, event["event_id"], *describe_answer(ask_gate(transcript, event["event_id"], summary, reason)))
            for event_type, event in first_of_type.items()]


def event_type_table(transcript: DurableTranscript, summary: str, reason: str):
    """event_type_rows as a table."""
    return html_table([tr("event type"), tr("event id"), tr("gate"), tr("candidate or refusal")],
                      event_type_rows(transcript, summary, reason))


def selection_rows(transcript: DurableTranscript, selections) -> list[tuple]:
    """One row per (label, event_id, summary, reason) selection: label, event id, verdict, detail."""
    return [(label, repr(event_id), *describe_answer(ask_gate(transcript, event_id, summary, reason)))
            for label, event_id, summary, reason in selections]


def example_selections(session_id: str) -> list[tuple]:
    """Notebook 5's selections, one per way to get it wrong and one good one: (label, event_id, summary, reason).

    The summaries and reasons are what a selector typed: the gate checks that they are there, not what they say.
    """
    return [
        (tr("an id from another session"), "transcript:other-session:1", "a fact", "a reason"),
        (tr("a sequence with a leading zero"), event_id_for(session_id, "01"), "a fact", "a reason"),
        (tr("a sequence past the end"), event_id_for(session_id, 99), "a fact", "a reason"),
        (tr("a bare number"), 1, "a fact", "a reason"),
        (tr("a blank summary"), event_id_for(session_id, 1), "   ", "a reason"),
        (tr("no reason"), event_id_for(session_id, 1), "a fact", None),
        (tr("a good selection"), event_id_for(session_id, 1), "add(2, 3) returned -1", "the bug this session fixed"),
    ]


def selection_table(transcript: DurableTranscript, selections):
    """selection_rows as a table."""
    return html_table([tr("selection"), tr("event id"), tr("gate"), tr("candidate or refusal")],
                      selection_rows(transcript, selections))


def carries_text(candidate: TranscriptMemoryCandidate, text: str) -> bool:
    """Whether text appears inside any field of the candidate."""
    return any(text in str(value) for value in dataclasses.asdict(candidate).values())


def files_under(folder) -> dict[str, str]:
    """Every file under folder, by relative path, with the sha256 of its bytes: equal dicts mean nothing was written."""
    folder = Path(folder)
    return {path.relative_to(folder).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(folder.rglob("*")) if path.is_file()}


def _yes_no(flag: bool) -> str:
    return tr("True") if flag else tr("False")


def body_comparison(event: dict, candidate: TranscriptMemoryCandidate) -> str:
    """The event's fields next to the candidate's, whether any file text of the event is in the candidate, and
    what the candidate hands to a memory store."""
    texts = [text for text in event.get("files", {}).values() if isinstance(text, str)]
    return "\n".join([
        tr("event fields:     {fields}", fields=sorted(event)),
        tr("candidate fields: {fields}", fields=[field.name for field in dataclasses.fields(candidate)]),
        tr("the file's text is in the candidate: {found}",
           found=_yes_no(any(carries_text(candidate, text) for text in texts))),
        tr("what a memory store keeps beside the summary: {metadata}", metadata=candidate.source_metadata()),
    ])


def gate_wrote_nothing_text(answers, before: dict, after: dict) -> str:
    """How many selections and candidates there were, and whether every file is what it was before them."""
    return "\n".join([
        tr("{selections} selections, {candidates} candidates", selections=len(answers),
           candidates=count_candidates(answers)),
        tr("files under the folder: {count}; all unchanged after the selections: {unchanged}", count=len(before),
           unchanged=_yes_no(after == before)),
    ])


def replay_kept_lines_text(max_items: int, messages: list, lines_before: int, lines_after: int) -> str:
    """What replay(max_items) sent, and the file's line count before and after it."""
    return tr("replay({max_items}) sent {messages} messages; lines in the file before: {before}, after: {after}",
              max_items=max_items, messages=len(messages), before=lines_before, after=lines_after)


def plot_candidates(events: list[dict], max_items: int, candidates):
    """The transcript with the replay window framed and a star over each candidate's event. Returns the figure."""
    return plot_window(events, max_items, chosen=[candidate.sequence for candidate in candidates],
                       title=tr("Memory candidates can point anywhere in the file, not only into the replay window"))


def answer_html(answer) -> str:
    """The form's result: the candidate's fields as a table, or the refusal in words."""
    if not isinstance(answer, TranscriptMemoryCandidate):
        return (f"<span style='color:{OKABE_ITO['vermillion']}'>&#10007;</span> "
                + tr("<b>refused</b>: {reason}", reason=html.escape(describe_answer(answer)[1])))
    rows = list(dataclasses.asdict(answer).items())
    return (f"<span style='color:{OKABE_ITO['green']}'>&#10003;</span> " + tr("<b>candidate</b> (no event body inside)")
            + html_table([tr("field"), tr("value")], rows).data)


class MemoryGateForm:
    """Pick an event id, type a summary and a reason, and submit them to the memory gate.

    `submit` is a plain method: call it directly. The form never changes the transcript.
    """

    def __init__(self, transcript: DurableTranscript):
        self.transcript = transcript
        self.submissions = 0
        self.answer = None  # the gate's last answer: a candidate or the error that refused the selection
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
        """Ask the gate, show its answer, and return it (a candidate or the error, as ask_gate does)."""
        self.answer = ask_gate(self.transcript, event_id, summary, reason)
        self.submissions += 1
        self.result.value = (tr("Submission {number} ({event_id}): ", number=self.submissions,
                                event_id=html.escape(str(event_id))) + answer_html(self.answer))
        return self.answer

    def answer_text(self) -> str:
        """The form's last answer as one line (no submission yet: says so)."""
        if self.answer is None:
            return tr("the form: nothing submitted yet")
        return tr("the form: {answer}", answer=answer_text(self.answer))

    def widget(self) -> widgets.VBox:
        """The form and its result, ready to display."""
        return widgets.VBox([self.event_id, self.summary, self.reason, self.submit_button, self.result])
