"""The main controls of chapters 1-3, pressed again and again, in different orders, with the other controls
changed in between, as an instructor does in front of a class. After every press the panel shows the new
state (read back from the file on disk), and no callback raised. Every test runs in both languages: the
chapters' cells are run as in that language's notebook (chapter_code), and what the panels show is in that
language.

ipywidgets catches an exception raised in a button's handler and, outside IPython, only logs it: the
`callbacks` fixture turns such a log record into a test failure.
"""

import logging

import matplotlib

matplotlib.use("Agg")  # plain pytest module: no display, no inline backend

import html  # noqa: E402
import re  # noqa: E402

import ipywidgets as widgets  # noqa: E402
import pytest  # noqa: E402
from chapter_code import run_cells  # noqa: E402

from s09_jsonl_transcript.code import BUG_FIX_SCRIPT, JSONLTranscript  # noqa: E402
from s09_jsonl_transcript.lessons import crash_injection  # noqa: E402
from s09_jsonl_transcript.lessons import events_on_disk as growth  # noqa: E402
from s09_jsonl_transcript.lessons import partial_tail_vs_corruption as corruption  # noqa: E402
from s09_jsonl_transcript.lessons.crash_injection import CampaignPanel, CrashPanel  # noqa: E402
from s09_jsonl_transcript.lessons.events_on_disk import StepperPanel  # noqa: E402
from s09_jsonl_transcript.lessons.partial_tail_vs_corruption import DamageLab  # noqa: E402
from s09_jsonl_transcript.text import i18n  # noqa: E402

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


# --------------------------------------------------------------------------- chapter 1


def lines_on_disk(panel: StepperPanel) -> int:
    return panel.path.read_bytes().count(b"\n") if panel.path.exists() else 0


def check_stepper_panel(panel: StepperPanel, expected: int, language: str) -> None:
    """The panel and the file agree: expected events on disk, and every view says so, in the language."""
    assert lines_on_disk(panel) == expected == panel.appended == panel.slider.value
    status = growth.tr("{count} of {total} events on disk ({name} exists: {exists})", count=expected,
                       total=SCRIPT_LENGTH, name=panel.path.name, exists=expected > 0)
    assert panel.status.value == status and in_language(panel.status.value, language)
    assert panel.next_button.disabled == (expected == SCRIPT_LENGTH)
    if expected:
        size = growth.tr("{name}: {lines} lines, {size} bytes", name=panel.path.name, lines=expected,
                         size=panel.path.stat().st_size)
        assert f"transcript:session-2:{expected}" in panel.listing.value and html.escape(size) in panel.listing.value
    assert in_language(panel.listing.value, language) and bytes(panel.plot.value).startswith(b"\x89PNG")


@pytest.fixture
def stepper_panel(tmp_path, language):
    chapter = run_cells("01_events_on_disk", ["language", "imports", "envelope", "encode", "transcript",
                                              "plot-growth", "panel"], language=language)
    panel = StepperPanel(tmp_path, transcript=chapter["Transcript"], draw=chapter["growth_picture"])
    yield panel
    panel.remove_file()


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
        was = int(re.search(r"\d+", before[1]).group())
        assert changed == (expected != was), f"after {step}: the panel {'changed' if changed else 'did not change'}"
        callbacks.assert_none()


def test_the_same_steps_write_the_same_file_whatever_came_before(stepper_panel, callbacks):
    panel = stepper_panel
    panel.slider.value = 6
    first = panel.path.read_bytes()
    for _ in range(3):
        panel.next_button.click()
    panel.reset_button.click()
    for _ in range(6):
        panel.next_button.click()
    assert panel.path.read_bytes() == first
    callbacks.assert_none()


# --------------------------------------------------------------------------- chapter 2


@pytest.fixture
def chapter_2(language):
    return run_cells("02_crash_injection", ["language", "imports", "agent", "crash", "recovery", "plot-crash",
                                            "crash-and-recover", "crash-panel", "writer", "kill-random"],
                     language=language)


def test_crash_now_pressed_again_and_again_with_the_slider_and_the_box_changed_in_between(chapter_2, tmp_path,
                                                                                         language, callbacks):
    panel = CrashPanel(tmp_path, crash=chapter_2["crash_and_recover"], draw=chapter_2["crash_picture"])
    presses = [(5, True), (5, True), (2, True), (2, False), (11, False), (11, True), (1, True)]
    shown = [panel.result.value]
    for number, (kill_after, halfway) in enumerate(presses, start=1):
        panel.slider.value, panel.tear.value = kill_after, halfway
        panel.crash_button.click()
        callbacks.assert_none()
        path = tmp_path / f"crash-{number}.jsonl"
        assert [event["sequence"] for event in JSONLTranscript(path).read_events()] == list(range(1, kill_after + 1))
        assert path.read_bytes().endswith(b"\n") != halfway  # half a record is left only when the box was ticked
        assert panel.result_text.startswith(path.name) and panel.result_text.endswith("True")
        assert in_language(panel.result.value, language) and panel.result.value != shown[-1]
        shown.append(panel.result.value)
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(f"crash-{n}.jsonl" for n in range(1, 8))


def test_the_campaign_button_pressed_twice_runs_two_campaigns(chapter_2, tmp_path, language, callbacks):
    panel = CampaignPanel(tmp_path, run_one=chapter_2["kill_at_random_moment"], trials=3)
    for round_number in (1, 2):
        panel.progress.value, panel.result.value = 0, ""  # so a second run must redo them
        panel.run_button.click()
        callbacks.assert_none()
        assert panel.progress.value == panel.progress.max == 3 and not panel.run_button.disabled
        assert len(panel.results) == 3 and not any(trial["lost"] or trial["spliced"] for trial in panel.results)
        assert panel.result_text.endswith("True") and in_language(panel.result.value, language)
        assert crash_injection.tr("Run {count} kills", count=3) == panel.run_button.description
        assert len(list((tmp_path / f"round-{round_number}").iterdir())) == 3


# --------------------------------------------------------------------------- chapter 3


@pytest.fixture
def lab(tmp_path, language):
    three = run_cells("03_partial_tail_vs_corruption", ["language", "imports", "file", "line-problem",
                                                         "read-transcript", "read-run", "damage-functions",
                                                         "verdict", "plot-map", "lab"], language=language)
    made = DamageLab(tmp_path / "session-3.jsonl", three["data"], damages=three["DAMAGES"], judge=three["judge"],
                     colors=three["COLORS"], labels=three["KINDS"])
    made.chapter = three
    return made


def press_apply(lab: DamageLab, name: str, position: int) -> str:
    lab.picker.value = name
    lab.position.value = position
    lab.apply_button.click()
    return lab.result.value


def test_apply_damage_pressed_again_and_again_in_different_orders(lab, language, callbacks):
    presses = [("delete_line", 5), ("delete_line", 5), ("flip", 191), ("flip", 1104), ("truncate", 646),
               ("restore", None), ("duplicate_line", 2), ("append_zeros", 64), ("append_zeros", 64),
               ("restore", None), ("restore", None), ("flip", 0), ("delete_line", 1)]
    shown, damaged = [], {}
    for name, position in presses:
        if name == "restore":
            lab.restore_button.click()
            assert lab.path.read_bytes() == lab.data
            assert lab.result_text.endswith(corruption.tr("file restored"))
        else:
            press_apply(lab, name, position)
            assert lab.path.read_bytes() != lab.data  # every one of these changes the file
            # each press starts from the undamaged file: the same press always leaves the same bytes
            assert damaged.setdefault((name, position), lab.path.read_bytes()) == lab.path.read_bytes()
            assert lab.result_text.endswith(corruption.tr("{damage} at {position}", damage=lab.picker.label,
                                                          position=position))
        callbacks.assert_none()
        kind, _ = lab.chapter["judge"](lab.path)
        assert lab.result_text.startswith(lab.chapter["KINDS"][kind])
        assert lab.chapter["COLORS"][kind] in lab.result.value
        assert in_language(lab.result.value, language)
        shown.append(lab.result.value)
    same = [shown[i] == shown[i - 1] for i in range(1, len(shown))]
    # the panel changes on every press except where the press repeats the one before it
    assert same == [presses[i] == presses[i - 1] for i in range(1, len(presses))]


def test_the_slider_follows_the_picker_between_presses(lab, callbacks):
    lines = lab.data.count(b"\n")
    press_apply(lab, "truncate", len(lab.data) - 1)  # the widest range first
    lab.picker.value = "delete_line"  # the position is pulled back into 1..lines
    assert lab.position.max == lines and lab.position.value == lines
    lab.apply_button.click()
    assert lab.result_text.startswith(lab.chapter["KINDS"]["clean"]) and str(lines - 1) in lab.result_text
    callbacks.assert_none()
