"""Notebook 5's helpers: the gate's answers as rows, the body check, and the form driven like a kernel would."""

import pytest

from s09_jsonl_transcript import damage
from s09_jsonl_transcript.code import (
    MEMORY_ELIGIBLE_EVENT_TYPES,
    MemorySelectionError,
    MockLLM,
    TranscriptCorruptionError,
    TranscriptMemoryCandidate,
    event_id_for,
    run_agent,
    ticking_clock,
)
from s09_jsonl_transcript.lab import DurableTranscript
from s09_jsonl_transcript.lessons.memory_gate import (
    MemoryGateForm,
    answer_html,
    ask_gate,
    carries_text,
    describe_answer,
    event_type_rows,
    files_under,
    selection_rows,
)


@pytest.fixture
def session(tmp_path):
    """The bug-fix session plus one event of a type the library does not know."""
    path = tmp_path / "session-5.jsonl"
    with DurableTranscript(path, clock=ticking_clock()) as writer:
        run_agent(writer, MockLLM())
        writer.append({"type": "progress", "content": "100%"})
    return DurableTranscript(path)


def test_every_event_type_gets_one_row_and_only_eligible_types_pass(session):
    rows = event_type_rows(session, "a summary", "a reason")
    types = [row[0] for row in rows]
    assert sorted(types) == sorted({event["type"] for event in session.read_events()})
    for event_type, event_id, verdict, detail in rows:
        if event_type in MEMORY_ELIGIBLE_EVENT_TYPES:
            assert (verdict, detail) == ("allowed", f"candidate for {event_id}")
        else:
            assert verdict == "refused" and f"{event_type!r} is not eligible" in detail


def test_selection_rows_report_each_refusal_in_the_gates_words(session):
    good = event_id_for(session.session_id, 1)
    rows = selection_rows(session, [
        ("past the end", event_id_for(session.session_id, 99), "s", "r"),
        ("blank summary", good, " ", "r"),
        ("fine", good, "s", "r"),
    ])
    assert rows[0][2:] == ("refused", f"unknown transcript event: {event_id_for(session.session_id, 99)}")
    assert rows[1][2:] == ("refused", "summary is required (a non-blank string)")
    assert rows[2][2:] == ("allowed", f"candidate for {good}")
    assert rows[2][1] == repr(good)


def test_ask_gate_returns_the_error_instead_of_raising(session):
    assert isinstance(ask_gate(session, "nonsense", "s", "r"), MemorySelectionError)
    assert isinstance(ask_gate(session, event_id_for(session.session_id, 1), "s", "r"), TranscriptMemoryCandidate)


def test_the_gate_will_not_cite_a_damaged_transcript(session):
    damage.duplicate_line(session.path, 2)
    answer = ask_gate(session, event_id_for(session.session_id, 1), "s", "r")
    assert isinstance(answer, TranscriptCorruptionError)
    assert describe_answer(answer)[1].startswith("the transcript is damaged: session-5.jsonl:3")
    assert "refused" in answer_html(answer)


def test_a_candidate_carries_no_event_body(session):
    snapshot = session.read_events()[6]
    candidate = ask_gate(session, snapshot["event_id"], "calc.py before the fix", "undo")
    assert not carries_text(candidate, snapshot["files"]["calc.py"])
    assert carries_text(candidate, "calc.py before")  # the check does see what a candidate holds


def test_clicking_submit_shows_the_candidate(session):
    form = MemoryGateForm(session)
    before = form.result.value
    form.event_id.value = event_id_for(session.session_id, 7)
    form.summary.value = "calc.py before the fix"
    form.reason.value = "undo"
    form.submit_button.click()
    assert form.result.value != before
    assert form.result.value.startswith(f"Submission 1 ({event_id_for(session.session_id, 7)}): ")
    assert isinstance(form.answer, TranscriptMemoryCandidate) and form.answer.sequence == 7
    assert "<b>candidate</b>" in form.result.value and "calc.py before the fix" in form.result.value
    assert event_id_for(session.session_id, 7) in form.result.value


def test_every_submission_is_numbered_so_the_same_answer_still_shows_a_change(session):
    form = MemoryGateForm(session)
    form.event_id.value = event_id_for(session.session_id, 1)
    form.summary.value, form.reason.value = "s", "r"
    form.submit_button.click()
    first = form.result.value
    form.submit_button.click()
    assert form.result.value != first and form.result.value.startswith("Submission 2 ")
    assert form.result.value.split(":", 1)[1] == first.split(":", 1)[1]


def test_the_gate_takes_its_arguments_in_the_lessons_order(session):
    """ask_gate passes event_id, summary, reason positionally, as the lesson writes the call."""
    class Positional:
        def select_memory_candidate(self, event_id, summary, reason, /):
            return session.select_memory_candidate(event_id, summary, reason)

    answer = ask_gate(Positional(), event_id_for(session.session_id, 1), "a summary", "a reason")
    assert (answer.summary, answer.selection_reason) == ("a summary", "a reason")


def test_files_under_sees_a_new_file_and_a_changed_byte(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.jsonl").write_bytes(b"1\n")
    before = files_under(tmp_path)
    assert list(before) == ["a/x.jsonl"]
    assert files_under(tmp_path) == before
    (tmp_path / "a" / "x.jsonl").write_bytes(b"2\n")
    assert files_under(tmp_path) != before
    (tmp_path / "a" / "x.jsonl").write_bytes(b"1\n")
    (tmp_path / "memory.json").write_text("{}")
    assert files_under(tmp_path) != before


def test_asking_the_gate_writes_nothing(session):
    before = files_under(session.path.parent)
    answers = [ask_gate(session, event["event_id"], "s", "r") for event in session.read_events()]
    assert sum(isinstance(answer, TranscriptMemoryCandidate) for answer in answers) == 4
    assert files_under(session.path.parent) == before


def test_clicking_submit_shows_a_refusal(session):
    form = MemoryGateForm(session)
    form.event_id.value = event_id_for(session.session_id, 3)
    form.summary.value, form.reason.value = "s", "r"
    form.submit_button.click()
    assert "refused" in form.result.value and "&#x27;reasoning&#x27; is not eligible" in form.result.value
    form.event_id.value = event_id_for(session.session_id, 1)
    form.reason.value = ""
    form.submit_button.click()
    assert "reason is required" in form.result.value


def test_the_form_lists_every_event_and_never_writes(session):
    before = session.path.read_bytes()
    form = MemoryGateForm(session)
    ids = [event_id for _, event_id in form.event_id.options]
    assert ids == [event["event_id"] for event in session.read_events()]
    for event_id in ids:
        form.submit(event_id, "s", "r")
    assert session.path.read_bytes() == before
    assert "s09-main-control" in form.submit_button._dom_classes
    assert "s09-result" in form.result._dom_classes


def test_answer_html_escapes_what_the_selector_typed(session):
    candidate = ask_gate(session, event_id_for(session.session_id, 1), "<b>bold</b>", "r")
    assert "&lt;b&gt;bold&lt;/b&gt;" in answer_html(candidate)


def test_in_chinese_the_plot_the_form_and_every_text_shown_are_chinese(session, tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from chinese_texts import drawn_texts, has_chinese, in_chinese

    from s09_jsonl_transcript.lessons.memory_gate import (
        answer_text,
        body_comparison,
        eligible_types_text,
        event_type_table,
        example_selections,
        far_outside_text,
        gate_wrote_nothing_text,
        plot_candidates,
        replay_kept_lines_text,
        selection_table,
        sequence_answer_text,
    )

    events = session.read_events()
    with in_chinese():
        candidates = [ask_gate(session, event_id_for(session.session_id, n), "s", "r") for n in (1, 7)]
        figure = plot_candidates(events, 4, candidates)
        try:
            shown = drawn_texts(figure)
            assert shown.titles and all(map(has_chinese, shown.titles))
            assert "Memory 候选" in shown.legend
        finally:
            plt.close(figure)

        form = MemoryGateForm(session)
        for text in (form.event_id.description, form.summary.description, form.summary.placeholder,
                     form.reason.description, form.reason.placeholder, form.submit_button.description,
                     form.result.value, form.answer_text()):
            assert has_chinese(text), text
        form.submit(event_id_for(session.session_id, 7), "calc.py before the fix", "undo")
        assert form.result.value.startswith("第 1 次提交（transcript:session-5:7）：")
        assert "<b>候选</b>" in form.result.value and has_chinese(form.answer_text())
        form.submit(event_id_for(session.session_id, 3), "s", "r")
        assert "<b>拒绝</b>" in form.result.value  # and the library's reason, through i18n.library_text
        assert "不能被选作 Memory 候选" in form.result.value

        refused = ask_gate(session, event_id_for(session.session_id, 3), "s", "r")
        damaged = tmp_path / "damaged" / session.path.name
        damaged.parent.mkdir()
        damaged.write_bytes(session.path.read_bytes())
        damage.delete_line(damaged, 3)
        texts = [
            eligible_types_text(events), answer_text(candidates[0]), answer_text(refused),
            answer_text(ask_gate(DurableTranscript(damaged), event_id_for(session.session_id, 1), "s", "r")),
            sequence_answer_text(3, refused), far_outside_text(1, candidates[0]),
            body_comparison(events[6], candidates[1]),
            gate_wrote_nothing_text(candidates, {}, {}), replay_kept_lines_text(4, [], 13, 13),
            event_type_table(session, "s", "r").data,
            selection_table(session, example_selections(session.session_id)).data,
        ]
        for text in texts:
            assert has_chinese(text), text
    assert not has_chinese(answer_text(refused))  # English again afterwards
