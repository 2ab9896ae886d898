"""Chapter 5's instructor widget, and the file its last cell runs the demo from.

The chapter writes the gate in its cells, `select_candidate(transcript, event_id, summary, reason)`,
and hands it to the form, so a press runs the code the chapter wrote. The form only shows the answer:
the candidate's fields, or the refusal in the library's words (through i18n.library_text).

The chapter ends by joining the five chapters into one transcript class and running code.py's demo on it.
The demo starts its agent and its recovery as new Pythons, which can only run code from a file:
demo_program writes one, from the chapter's class and functions as their cells wrote them.
"""

from __future__ import annotations

import ast
import dataclasses
import html
import inspect
import linecache
from pathlib import Path

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


# What the finale's class and gate use: code.py's names, and the earlier chapters' code.
PROGRAM_IMPORTS = """import sys

from s09_jsonl_transcript.code import (
    MEMORY_ELIGIBLE_EVENT_TYPES, SCHEMA_VERSION, SESSION_MAX_ITEMS, MemorySelectionError, TranscriptMemoryCandidate,
    event_id_for, main)
from s09_jsonl_transcript.lessons.previous_chapters import Transcript, read_transcript, recover"""


def cell_source(definition) -> str:
    """A function's or a class's source as its notebook cell wrote it. (inspect finds a function's, but not a
    class's: a kernel's cells are no module file; the class's methods know their cell.)"""
    if not inspect.isclass(definition):
        return inspect.getsource(definition).rstrip("\n")
    method = next(member for member in vars(definition).values() if inspect.isfunction(member))
    cell = linecache.getlines(method.__code__.co_filename)
    node = next(node for node in ast.walk(ast.parse("".join(cell)))
                if isinstance(node, ast.ClassDef) and node.name == definition.__name__)
    return "".join(cell[node.lineno - 1:node.end_lineno]).rstrip("\n")  # whole lines: comments included


def demo_program(path, transcript_class, *functions) -> Path:
    """Write a program for code.py's demo(program=...) and return its path: the imports, the functions and the
    class as their cells wrote them, then code.py's main with the class as the demo's transcript."""
    parts = [PROGRAM_IMPORTS, *map(cell_source, functions), cell_source(transcript_class),
             f"sys.exit(main(sys.argv[1:], transcript={transcript_class.__name__}))"]
    Path(path).write_text("\n\n\n".join(parts) + "\n", encoding="utf-8")
    return Path(path)
