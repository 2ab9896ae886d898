"""Chapter 5's instructor widget: the form submits to the gate it is given and shows its candidate or its refusal,
in the library's words, in the language in use; it never writes, and a gate's own bug is not shown as a refusal."""

import dataclasses

import pytest
from chapter_reference import bug_fix_session, code_py_gate
from chinese_texts import has_chinese

from s09_jsonl_transcript.code import JSONLTranscript, MemorySelectionError, TranscriptCorruptionError, event_id_for
from s09_jsonl_transcript.lessons.memory_gate import MemoryGateForm, answer_html
from s09_jsonl_transcript.text import i18n


@pytest.fixture
def session(tmp_path):
    """The bug-fix session plus one event of a type the library does not know."""
    return bug_fix_session(tmp_path, "session-5", [{"type": "progress", "content": "100%"}])


def test_clicking_submit_shows_the_candidate_field_by_field(session):
    form = MemoryGateForm(session, code_py_gate)
    form.event_id.value = event_id_for(session.session_id, 7)
    form.summary.value, form.reason.value = "calc.py before the fix", "to undo the edit if needed"
    form.submit_button.click()
    candidate = session.select_memory_candidate(form.event_id.value, form.summary.value, form.reason.value)
    assert form.answer == candidate
    assert form.result.value == "Submission 1 (transcript:session-5:7): " + answer_html(candidate)
    assert "<b>candidate</b> (no event body inside)" in form.result.value
    for name, value in dataclasses.asdict(candidate).items():
        assert f"<td style='text-align:left'>{name}</td><td style='text-align:left'>{value}</td>" in form.result.value
    assert "return a - b" not in form.result.value  # the snapshot's body stays in the transcript


def test_clicking_submit_shows_a_refusal_in_the_gates_words(session):
    form = MemoryGateForm(session, code_py_gate)
    answer = form.submit(event_id_for(session.session_id, 3), "s", "r")
    assert isinstance(answer, MemorySelectionError)
    assert form.result.value.endswith("<b>refused</b>: event type &#x27;reasoning&#x27; is not eligible for "
                                      "memory selection")
    form.submit(event_id_for(session.session_id, 7), "s", "  ")
    assert form.result.value.startswith("Submission 2 (")
    assert form.result.value.endswith("reason is required (a non-blank string)")


def test_a_damaged_transcript_is_refused_as_damaged(session, tmp_path):
    damaged = tmp_path / "damaged" / session.path.name  # the same name: the same session id
    damaged.parent.mkdir()
    lines = session.path.read_bytes().splitlines(keepends=True)
    damaged.write_bytes(b"".join(lines[:2] + lines[3:]))
    form = MemoryGateForm(JSONLTranscript(session.path), code_py_gate)
    form.transcript = JSONLTranscript(damaged)  # the file is damaged after the form was built
    answer = form.submit(event_id_for(session.session_id, 1), "s", "r")
    assert isinstance(answer, TranscriptCorruptionError)
    assert "the transcript is damaged: session-5.jsonl:3: expected sequence 3, got 4" in form.result.value


def test_a_bug_in_the_gate_is_not_shown_as_a_refusal(session):
    def broken_gate(transcript, event_id, summary, reason):
        raise KeyError("type")

    form = MemoryGateForm(session, broken_gate)
    before = form.result.value
    with pytest.raises(KeyError):
        form.submit(event_id_for(session.session_id, 1), "s", "r")
    assert form.result.value == before and form.answer is None


def test_the_form_submits_to_the_gate_it_is_given(session):
    asked = []

    def recording_gate(transcript, event_id, summary, reason):
        asked.append((transcript, event_id, summary, reason))
        return code_py_gate(transcript, event_id, summary, reason)

    form = MemoryGateForm(session, recording_gate)
    form.submit(event_id_for(session.session_id, 1), "s", "r")
    assert asked == [(session, event_id_for(session.session_id, 1), "s", "r")]


def test_the_form_lists_every_event_and_never_writes(session):
    before = session.path.read_bytes()
    form = MemoryGateForm(session, code_py_gate)
    ids = [event_id for _, event_id in form.event_id.options]
    assert ids == [event["event_id"] for event in session.read_events()]
    for event_id in ids:
        form.submit(event_id, "s", "r")
    assert form.submissions == len(ids) and session.path.read_bytes() == before
    assert "s09-main-control" in form.submit_button._dom_classes
    assert "s09-result" in form.result._dom_classes


def test_answer_html_escapes_what_the_selector_typed(session):
    candidate = session.select_memory_candidate(event_id_for(session.session_id, 1), "<b>bold</b>", "r")
    assert "&lt;b&gt;bold&lt;/b&gt;" in answer_html(candidate)
    form = MemoryGateForm(session, code_py_gate)
    form.submit("<script>", "s", "r")
    assert "<script>" not in form.result.value


def test_in_chinese_the_form_and_its_answers_are_chinese(session):
    i18n.use("zh")
    try:
        form = MemoryGateForm(session, code_py_gate)
        for text in (form.event_id.description, form.summary.description, form.summary.placeholder,
                     form.reason.description, form.reason.placeholder, form.submit_button.description,
                     form.result.value):
            assert has_chinese(text), text
        form.submit(event_id_for(session.session_id, 7), "calc.py before the fix", "undo")
        assert form.result.value.startswith("第 1 次提交（transcript:session-5:7）：")
        assert "<b>候选</b>" in form.result.value
        form.submit(event_id_for(session.session_id, 3), "s", "r")
        assert "<b>拒绝</b>" in form.result.value and "不能被选作 Memory 候选" in form.result.value
    finally:
        i18n.use("en")
