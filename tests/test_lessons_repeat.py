"""The main controls of notebooks 1-3, pressed again and again, in different orders, with the other controls
changed in between, as an instructor does in front of a class. After every press the panel shows the new
state (read back from the file on disk), and no callback raised.

ipywidgets catches an exception raised in a button's handler and, outside IPython, only logs it: the
`callbacks` fixture turns such a log record into a test failure.
"""

import logging

import matplotlib

matplotlib.use("Agg")  # plain pytest module: no display, no inline backend

import ipywidgets as widgets
import pytest

from s09_jsonl_transcript.code import BUG_FIX_SCRIPT, JSONLTranscript, MockLLM, ticking_clock
from s09_jsonl_transcript.lessons.corruption import DAMAGE_TOOLS, DamageLab
from s09_jsonl_transcript.lessons.crash_injection import SIGKILL_AVAILABLE, CampaignPanel, CrashPanel
from s09_jsonl_transcript.lessons.growth import EventStepper, StepperPanel

SCRIPT_LENGTH = len(MockLLM())


class CallbackErrors(logging.Handler):
    """Collects the records ipywidgets logs when a widget callback raises."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.records = []

    def emit(self, record):
        if "Exception in callback" in record.getMessage():
            self.records.append(record)

    def assert_none(self):
        assert not self.records, "a widget callback raised: " + "; ".join(
            f"{record.getMessage()} {record.exc_info[1]!r}" for record in self.records)


@pytest.fixture
def callbacks():
    """Fails the test on any exception a widget callback raised (ipywidgets logs it on the 'traitlets' logger)."""
    handler = CallbackErrors()
    logger = logging.getLogger("traitlets")
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


def test_the_callback_check_sees_an_exception_in_a_button_handler(callbacks):
    button = widgets.Button()
    button.on_click(lambda _button: 1 / 0)
    button.click()
    with pytest.raises(AssertionError, match="ZeroDivisionError"):
        callbacks.assert_none()


# --------------------------------------------------------------------------- notebook 1


def lines_on_disk(panel: StepperPanel) -> int:
    path = panel.stepper.path
    return path.read_bytes().count(b"\n") if path.exists() else 0


def check_stepper_panel(panel: StepperPanel, expected: int) -> None:
    """The panel and the file agree: expected events on disk, and every view says so."""
    assert lines_on_disk(panel) == expected == panel.stepper.appended == panel.slider.value
    assert panel.status.value.startswith(f"{expected} of {SCRIPT_LENGTH} events on disk")
    assert panel.next_button.disabled == (expected == SCRIPT_LENGTH)
    if expected:
        assert f"transcript:session:{expected}" in panel.listing.value and f"{expected} lines" in panel.listing.value
        assert f"transcript:session:{expected}" in panel.envelope.value
    else:
        assert "no event appended yet" in panel.listing.value
    assert bytes(panel.plot.value).startswith(b"\x89PNG")


@pytest.fixture
def stepper_panel(tmp_path):
    panel = StepperPanel(EventStepper(tmp_path, session_id="session"))
    yield panel
    panel.stepper.close()


def test_next_event_pressed_again_and_again_with_the_slider_and_reset_in_between(stepper_panel, callbacks):
    panel, expected = stepper_panel, 0
    steps = ["next", "next", "next", ("slider", 10), "next", "next", "next", "next", "reset", "next",
             ("slider", 5), "reset", "reset", ("slider", SCRIPT_LENGTH), "next", ("slider", 0), "next", "next"]
    for step in steps:
        before = (panel.listing.value, panel.status.value)
        if step == "next":
            panel.next_button.click()
            expected = min(expected + 1, SCRIPT_LENGTH)
        elif step == "reset":
            panel.reset_button.click()
            expected = 0
        else:
            panel.slider.value = expected = step[1]
        check_stepper_panel(panel, expected)
        changed = (panel.listing.value, panel.status.value) != before
        was = int(before[1].split(" of ")[0])
        assert changed == (expected != was), f"after {step}: the panel {'changed' if changed else 'did not change'}"
        callbacks.assert_none()


def test_the_same_steps_write_the_same_file_whatever_came_before(stepper_panel, tmp_path, callbacks):
    panel = stepper_panel
    panel.slider.value = 6
    first = panel.stepper.path.read_bytes()
    for _ in range(3):
        panel.next_button.click()
    panel.reset_button.click()
    for _ in range(6):
        panel.next_button.click()
    assert panel.stepper.path.read_bytes() == first
    callbacks.assert_none()


# --------------------------------------------------------------------------- notebook 2

needs_sigkill = pytest.mark.skipif(not SIGKILL_AVAILABLE, reason="kills a real process with SIGKILL (POSIX)")


@needs_sigkill
def test_crash_now_pressed_again_and_again_with_the_slider_and_the_box_changed_in_between(tmp_path, callbacks):
    panel = CrashPanel(tmp_path)
    presses = [(5, True), (5, True), (2, True), (2, False), (11, False), (11, True), (1, True)]
    shown = [panel.result.value]
    for number, (kill_after, halfway) in enumerate(presses, start=1):
        panel.slider.value, panel.tear.value = kill_after, halfway
        panel.crash_button.click()
        callbacks.assert_none()
        path = tmp_path / f"crash-{number}.jsonl"
        data = path.read_bytes()
        assert panel.report.file_name == path.name and panel.report.kill_after == kill_after
        assert [event["sequence"] for event in JSONLTranscript(path).read_events()] == list(range(1, kill_after + 1))
        assert data.endswith(b"\n") != halfway  # half a record is left only when the box was ticked
        assert f"nothing acknowledged was lost ({kill_after} of {kill_after}" in panel.result.value
        assert path.name in panel.result.value and panel.result.value != shown[-1]
        shown.append(panel.result.value)
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(f"crash-{n}.jsonl" for n in range(1, 8))


@needs_sigkill
def test_the_campaign_button_pressed_twice_runs_two_campaigns(callbacks):
    panel = CampaignPanel(trials=3, seed=2)
    for _ in range(2):
        panel.progress.value, panel.summary.value, panel.plot.value = 0, "", b""  # so a second run must redo them
        panel.run_button.click()
        callbacks.assert_none()
        assert panel.progress.value == panel.progress.max == 3 and not panel.run_button.disabled
        assert len(panel.results) == 3 and all(trial.ok for trial in panel.results)
        assert "every kill: True" in panel.summary.value
        assert bytes(panel.plot.value).startswith(b"\x89PNG")


# --------------------------------------------------------------------------- notebook 3


@pytest.fixture
def lab(tmp_path):
    path = tmp_path / "session-3.jsonl"
    with JSONLTranscript(path, clock=ticking_clock()) as transcript:
        for event in BUG_FIX_SCRIPT[:5]:
            transcript.append(event)
    return DamageLab(path)


def press_apply(lab: DamageLab, name: str, position: int) -> str:
    lab.picker.value = name
    lab.position.value = position
    lab.apply_button.click()
    return lab.result.value


def test_apply_damage_pressed_again_and_again_in_different_orders(lab, callbacks):
    presses = [("delete a line", 5), ("delete a line", 5), ("flip a byte", 191), ("flip a byte", 1104),
               ("truncate at byte", 646), ("restore", None), ("duplicate a line", 2), ("insert a garbage line", 6),
               ("append zero bytes", 64), ("append zero bytes", 64), ("restore", None), ("restore", None),
               ("flip a byte", 0), ("delete a line", 1)]
    shown, damaged = [], {}
    for name, position in presses:
        if name == "restore":
            lab.restore_button.click()
            assert lab.path.read_bytes() == lab.pristine
            assert lab.result_text.startswith("File restored: clean (5 events)")
        else:
            press_apply(lab, name, position)
            assert lab.path.read_bytes() != lab.pristine  # every one of these changes the file
            # each press starts from the undamaged file: the same press always leaves the same bytes
            assert damaged.setdefault((name, position), lab.path.read_bytes()) == lab.path.read_bytes()
            assert lab.result_text.endswith(f"{name}, {DAMAGE_TOOLS[name].unit} {position}")
        callbacks.assert_none()
        assert lab.result_text.split(" - ")[0].removeprefix("File restored: ") in lab.result.value
        shown.append(lab.result.value)
    same = [shown[i] == shown[i - 1] for i in range(1, len(shown))]
    # the panel changes on every press except where the press repeats the one before it
    assert same == [presses[i] == presses[i - 1] for i in range(1, len(presses))]


def test_the_slider_follows_the_picker_between_presses(lab, callbacks):
    lines = lab.pristine.count(b"\n")
    press_apply(lab, "truncate at byte", len(lab.pristine))  # the widest range first
    assert lab.result_text.startswith("clean (5 events)")
    lab.picker.value = "delete a line"  # the position is pulled back into 1..lines
    assert lab.position.max == lines and lab.position.value == lines
    lab.apply_button.click()
    assert lab.result_text == f"clean ({lines - 1} events) - delete a line, line number {lines}"
    callbacks.assert_none()
