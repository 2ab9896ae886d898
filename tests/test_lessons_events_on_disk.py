"""Chapter 1's panel, driven with the chapter's own Transcript and growth picture, and its padding helpers.

The panel appends the scripted session with whatever transcript class it is given and shows the picture the
given drawing function makes of the file: here the chapter's own, taken from its cells (chapter_code).
"""

import matplotlib

matplotlib.use("Agg")  # plain pytest module: no display, no inline backend

import pytest
from chapter_code import run_cells

from s09_jsonl_transcript.code import BUG_FIX_SCRIPT, JSONLTranscript, ticking_clock
from s09_jsonl_transcript.lessons.display import MAIN_CONTROL_CLASS, RESULT_CLASS
from s09_jsonl_transcript.lessons.events_on_disk import StepperPanel, display_width, pad


@pytest.fixture(scope="module")
def chapter():
    """Chapter 1's cells: Transcript, plot_growth and growth_picture among them."""
    return run_cells("01_events_on_disk", ["language", "imports", "envelope", "encode", "transcript",
                                           "plot-growth", "panel"])


@pytest.fixture
def panel(chapter, tmp_path):
    made = StepperPanel(tmp_path, transcript=chapter["Transcript"], draw=chapter["growth_picture"])
    yield made
    made.remove_file()


def code_py_lines(tmp_path, count: int) -> bytes:
    """The first count lines code.py's append writes for the script, in a file of the panel's name."""
    with JSONLTranscript(tmp_path / f"code-py-{count}" / "session-2.jsonl", clock=ticking_clock()) as reference:
        for event in BUG_FIX_SCRIPT[:count]:
            reference.append(event)
    return reference.path.read_bytes()


def test_the_panel_marks_its_main_control_and_its_result(panel):
    assert MAIN_CONTROL_CLASS in panel.next_button._dom_classes and RESULT_CLASS in panel.listing._dom_classes


def test_it_starts_with_no_file(panel):
    assert not panel.path.exists() and panel.appended == 0 and panel.slider.value == 0
    assert "exists: False" in panel.status.value and "No file" in panel.listing.value


def test_each_press_appends_one_line_and_redraws_the_picture(panel, tmp_path):
    pictures = {panel.plot.value}
    for count in range(1, 4):
        panel.next_button.click()
        assert panel.path.read_bytes().count(b"\n") == count == panel.slider.value
        assert panel.status.value.startswith(f"{count} of {len(BUG_FIX_SCRIPT)} events on disk")
        pictures.add(panel.plot.value)
    assert len(pictures) == 4, "the picture did not change with the file"
    assert panel.path.read_bytes() == code_py_lines(tmp_path, 3)


def test_the_slider_goes_forward_and_back_through_a_new_file(panel, tmp_path):
    panel.slider.value = 12
    assert panel.path.read_bytes() == code_py_lines(tmp_path, 12) and panel.next_button.disabled
    panel.slider.value = 4
    assert panel.path.read_bytes() == code_py_lines(tmp_path, 4) and not panel.next_button.disabled
    assert panel.listing.value.count("<div") == 4
    assert panel.listing.value.count("background:#FFF3C4") == 1  # the newest line, and only it


def test_reset_removes_the_file(panel):
    panel.slider.value = 5
    panel.reset_button.click()
    assert not panel.path.exists() and panel.appended == 0 and panel.slider.value == 0


def test_the_picture_is_drawn_by_the_function_given_from_the_file_on_disk(chapter, tmp_path):
    seen = []

    def recording(data):
        seen.append(data)
        return chapter["growth_picture"](data)

    panel = StepperPanel(tmp_path, transcript=chapter["Transcript"], draw=recording)
    panel.slider.value = 2
    assert seen[0] == b"" and seen[-1] == panel.path.read_bytes() and seen[-1].count(b"\n") == 2
    panel.remove_file()


def test_code_py_s_class_drives_the_panel_to_the_same_file(chapter, tmp_path):
    ours = StepperPanel(tmp_path / "chapter", transcript=chapter["Transcript"], draw=chapter["growth_picture"])
    theirs = StepperPanel(tmp_path / "code-py", transcript=JSONLTranscript, draw=chapter["growth_picture"])
    ours.slider.value = theirs.slider.value = 7
    assert ours.path.read_bytes() == theirs.path.read_bytes()
    ours.remove_file()
    theirs.remove_file()


def test_a_chinese_character_takes_two_columns():
    """Tables in two languages pad with these (no notebook uses them since issue 54; the tests keep them honest)."""
    assert display_width("ab") == 2 and display_width("事件") == 4
    assert pad("事件", 6) == "事件  " and pad("ab", 4, right=True) == "  ab"
