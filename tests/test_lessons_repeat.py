"""The main controls of notebooks 1-3, pressed again and again, in different orders, with the other controls
changed in between, as an instructor does in front of a class. After every press the panel shows the new
state (read back from the file on disk), and no callback raised. Every test runs in both languages: the
panels are built after i18n.use(language), as in the notebooks, and what they show is in that language.

ipywidgets catches an exception raised in a button's handler and, outside IPython, only logs it: the
`callbacks` fixture turns such a log record into a test failure.
"""

import logging

import matplotlib

matplotlib.use("Agg")  # plain pytest module: no display, no inline backend

import html
import re

import ipywidgets as widgets
import pytest

from s09_jsonl_transcript import damage, i18n
from s09_jsonl_transcript.code import BUG_FIX_SCRIPT, ticking_clock
from s09_jsonl_transcript.lab import DurableTranscript
from s09_jsonl_transcript.lessons import crash_injection
from s09_jsonl_transcript.lessons import events_on_disk as growth
from s09_jsonl_transcript.lessons import partial_tail_vs_corruption as corruption
from s09_jsonl_transcript.lessons.crash_injection import SIGKILL_AVAILABLE, CampaignPanel, CrashPanel
from s09_jsonl_transcript.lessons.events_on_disk import EventStepper, StepperPanel
from s09_jsonl_transcript.lessons.partial_tail_vs_corruption import DamageLab, damage_description, verdict_text

SCRIPT_LENGTH = len(BUG_FIX_SCRIPT)
CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture(params=["en", "zh"])
def language(request):
    """The language the panels are built in; English again afterwards."""
    i18n.use(request.param)
    yield request.param
    i18n.use("en")


def in_language(text: str, language: str) -> bool:
    """True when text holds Chinese exactly when the language is Chinese."""
    return bool(CJK.search(text)) == (language == "zh")


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


def check_stepper_panel(panel: StepperPanel, expected: int, language: str) -> None:
    """The panel and the file agree: expected events on disk, and every view says so, in the language."""
    assert lines_on_disk(panel) == expected == panel.stepper.appended == panel.slider.value
    status = growth.tr("{count} of {total} events on disk", count=expected, total=SCRIPT_LENGTH)
    assert panel.status.value.startswith(status) and in_language(panel.status.value, language)
    assert panel.next_button.disabled == (expected == SCRIPT_LENGTH)
    if expected:
        size = growth.tr("{lines} lines, {size} bytes", lines=expected, size=panel.stepper.path.stat().st_size)
        assert f"transcript:session:{expected}" in panel.listing.value and size in panel.listing.value
        assert f"transcript:session:{expected}" in panel.envelope.value
    else:
        assert growth.tr("{name} is empty: no event appended yet.", name="<code>session.jsonl</code>") \
            in panel.listing.value
    assert in_language(panel.listing.value, language) and in_language(panel.envelope.value, language)
    assert bytes(panel.plot.value).startswith(b"\x89PNG")


def shown_count(status: str) -> int:
    return int(re.search(r"\d+", status).group())


@pytest.fixture
def stepper_panel(tmp_path, language):
    panel = StepperPanel(EventStepper(tmp_path, session_id="session"))
    yield panel
    panel.stepper.close()


def test_next_event_pressed_again_and_again_with_the_slider_and_reset_in_between(stepper_panel, language, callbacks):
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
        check_stepper_panel(panel, expected, language)
        changed = (panel.listing.value, panel.status.value) != before
        was = shown_count(before[1])
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
def test_crash_now_pressed_again_and_again_with_the_slider_and_the_box_changed_in_between(tmp_path, language,
                                                                                         callbacks):
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
        assert [event["sequence"] for event in DurableTranscript(path).read_events()] == list(range(1, kill_after + 1))
        assert data.endswith(b"\n") != halfway  # half a record is left only when the box was ticked
        kept = crash_injection.tr("nothing acknowledged was lost ({count} of {count} recovered)", count=kill_after)
        assert html.escape(kept) in panel.result.value and in_language(panel.result.value, language)
        assert path.name in panel.result.value and panel.result.value != shown[-1]
        shown.append(panel.result.value)
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(f"crash-{n}.jsonl" for n in range(1, 8))


@needs_sigkill
def test_the_campaign_button_pressed_twice_runs_two_campaigns(language, callbacks):
    panel = CampaignPanel(trials=3, seed=2)
    for _ in range(2):
        panel.progress.value, panel.summary.value, panel.plot.value = 0, "", b""  # so a second run must redo them
        panel.run_button.click()
        callbacks.assert_none()
        assert panel.progress.value == panel.progress.max == 3 and not panel.run_button.disabled
        assert len(panel.results) == 3 and all(trial.ok for trial in panel.results)
        survived = crash_injection.tr("every acknowledged event survived every kill: {ok}", ok=True)
        assert html.escape(survived) in panel.summary.value and in_language(panel.summary.value, language)
        assert bytes(panel.plot.value).startswith(b"\x89PNG")


# --------------------------------------------------------------------------- notebook 3


@pytest.fixture
def lab(tmp_path, language):
    path = tmp_path / "session-3.jsonl"
    with DurableTranscript(path, clock=ticking_clock()) as transcript:
        for event in BUG_FIX_SCRIPT[:5]:
            transcript.append(event)
    return DamageLab(path)


def press_apply(lab: DamageLab, name: str, position: int) -> str:
    lab.picker.value = name
    lab.position.value = position
    lab.apply_button.click()
    return lab.result.value


def test_apply_damage_pressed_again_and_again_in_different_orders(lab, language, callbacks):
    presses = [("delete a line", 5), ("delete a line", 5), ("flip a byte", 191), ("flip a byte", 1104),
               ("truncate at byte", 646), ("restore", None), ("duplicate a line", 2), ("insert a garbage line", 6),
               ("append zero bytes", 64), ("append zero bytes", 64), ("restore", None), ("restore", None),
               ("flip a byte", 0), ("delete a line", 1)]
    shown, damaged = [], {}
    for name, position in presses:
        if name == "restore":
            lab.restore_button.click()
            assert lab.path.read_bytes() == lab.pristine
            restored = verdict_text(damage.Verdict(damage.CLEAN, 5))
            assert lab.result_text.startswith(corruption.tr("File restored: ") + restored)
        else:
            press_apply(lab, name, position)
            assert lab.path.read_bytes() != lab.pristine  # every one of these changes the file
            # each press starts from the undamaged file: the same press always leaves the same bytes
            assert damaged.setdefault((name, position), lab.path.read_bytes()) == lab.path.read_bytes()
            assert lab.result_text.endswith(damage_description(name, position))
        callbacks.assert_none()
        shown_verdict = verdict_text(damage.verdict(lab.path, lab.reference))
        assert shown_verdict in lab.result_text and html.escape(shown_verdict) in lab.result.value
        assert in_language(lab.result.value, language)
        shown.append(lab.result.value)
    same = [shown[i] == shown[i - 1] for i in range(1, len(shown))]
    # the panel changes on every press except where the press repeats the one before it
    assert same == [presses[i] == presses[i - 1] for i in range(1, len(presses))]


def test_the_slider_follows_the_picker_between_presses(lab, callbacks):
    lines = lab.pristine.count(b"\n")
    press_apply(lab, "truncate at byte", len(lab.pristine))  # the widest range first
    assert lab.result_text.startswith(verdict_text(damage.Verdict(damage.CLEAN, 5)))
    lab.picker.value = "delete a line"  # the position is pulled back into 1..lines
    assert lab.position.max == lines and lab.position.value == lines
    lab.apply_button.click()
    assert lab.result_text == corruption.tr("{verdict} - {description}",
                                            verdict=verdict_text(damage.Verdict(damage.CLEAN, lines - 1)),
                                            description=damage_description("delete a line", lines))
    callbacks.assert_none()
