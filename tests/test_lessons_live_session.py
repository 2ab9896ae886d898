"""Notebook 9's panels and mechanisms: the live view streaming with the notebook's own stream_reply, the crash
in the middle of a stream, the state-machine panel drawing with the notebook's own figure, the subscriber with a
cursor written in its cells, and what the saved notebook shows, in both languages."""

from __future__ import annotations

import json
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
from chapter_code import run_cells  # noqa: E402
from saved_widgets import displayed_widgets, load, one  # noqa: E402

from s09_jsonl_transcript.lab import DurableTranscript  # noqa: E402
from s09_jsonl_transcript.lessons import live_child, live_session  # noqa: E402
from s09_jsonl_transcript.production import turns  # noqa: E402
from s09_jsonl_transcript.production.live import SessionEventLog  # noqa: E402
from s09_jsonl_transcript.production.timeouts import ManualClock  # noqa: E402
from s09_jsonl_transcript.text import i18n  # noqa: E402
from s09_jsonl_transcript.text.bilingual import has_chinese  # noqa: E402

HANG_SECONDS = 300  # a subscriber's delivery may take this long before a test calls it hung (never a slow machine)
NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
NAME = "beyond-s09/09_live_session"
# the notebook's setup, its stream_reply, its subscriber with a cursor and its drawing of the state machine
CELLS = ["language", "6e312a32", "stream-reply", "98517b5b", "state-machine-figure"]


@pytest.fixture(params=["en", "zh"])
def cells(request):
    """The notebook's own code, run in the language of its notebook (the module speaks it too)."""
    namespace = run_cells(NAME, CELLS, request.param)
    yield namespace
    namespace["workspace"].cleanup()
    i18n.use("en")


@pytest.fixture
def log(tmp_path):
    with SessionEventLog.create(tmp_path / "live.jsonl", clock=ManualClock()) as opened:
        yield opened


def test_the_reply_is_cut_into_pieces_that_add_up_to_it():
    pieces = live_child.reply_pieces()
    assert len(pieces) > 5 and "".join(pieces) == live_child.REPLY


def test_the_stream_button_streams_a_turn_with_the_notebook_s_own_function(cells, log):
    view = live_session.LiveView(log, reply=cells["stream_reply"], pace=0)
    before = view.screen.value
    view.button.click()
    assert view.screen.value != before
    assert view.deltas_seen == len(live_child.reply_pieces()) and len(view.committed) == 5  # with part_start
    events = DurableTranscript(log.transcript.path).read_events()
    assert [e["type"] for e in events] == ["turn_start", "message", "part_start", "message", "turn_end"]
    assert events[3]["content"] == live_child.REPLY and events[3]["part_id"] == events[2]["part_id"]
    assert [kind for kind, _ in view.timeline].count("delta") == view.deltas_seen
    assert view.status.value == live_session.tr("turn {turn}: {deltas} deltas, then 1 committed final part",
                                                turn=1, deltas=view.deltas_seen)
    shown = view.screen.value
    view.button.click()  # a second press streams a second turn: the result changes again
    assert view.screen.value != shown and len(view.committed) == 10
    assert "s09-main-control" in view.button._dom_classes and "s09-result" in view.screen._dom_classes
    assert has_chinese(view.screen.value) == (i18n.current() == "zh")


def test_the_view_shows_a_part_while_it_streams_and_a_refusal_when_no_turn_can_start(cells, log):
    view = live_session.LiveView(log, reply=cells["stream_reply"], pace=0)
    log.start_turn()
    stream = log.open_stream()
    stream.delta("half of it")
    assert view.subscription.wait_delivered(timeout=HANG_SECONDS)
    assert ": half of it" in view.screen.value or "：half of it" in view.screen.value
    view.button.click()  # a turn is open: start_turn is refused, the library's reason in the language in use
    assert view.status.value.startswith(live_session.tr("refused: {why}", why="")[:2])
    log.end_turn(1, turns.REASON_ERROR)  # the turn ends without the part: the part's text leaves the screen
    assert view.subscription.wait_delivered(timeout=HANG_SECONDS)
    assert "half of it" not in view.screen.value and "turn_end error" in view.screen.value


def test_a_crash_in_the_middle_of_a_stream_keeps_committed_events_and_no_delta(tmp_path):
    crash = live_session.crash_mid_stream(tmp_path / "crash.jsonl", deltas=5)
    assert crash.client_deltas == tuple(live_child.reply_pieces()[:5])
    assert crash.client_committed == crash.file_sequences == (1, 2, 3, 4)  # 4: the stream's part_start
    assert crash.deltas_in_file == 0 and "".join(crash.client_deltas).strip() not in crash.file_text
    assert crash.status.state == turns.RUNNING and crash.status.pending_calls == ("call_1",)
    assert "deltas found in it: 0" in str(crash)
    with pytest.raises(ValueError, match="deltas"):
        live_session.crash_mid_stream(tmp_path / "other.jsonl", deltas=0)


def test_the_state_machine_panel_applies_steps_and_draws_with_the_notebook_s_figure(cells, tmp_path):
    drawn = []

    def draw(state):
        drawn.append(state)
        return cells["state_machine_figure"](state)

    panel = live_session.StateMachinePanel(tmp_path, draw=draw)
    picture = panel.picture.value
    assert bytes(picture).startswith(b"\x89PNG") and drawn == [turns.IDLE]
    for step in ("start turn", "end turn: error", "start turn"):  # the last is refused: error needs a retry
        panel.step.value = step
        panel.button.click()
    assert live_session.tr("refused: {why}", why="")[:2] in panel.last_step and panel.log.status().state == turns.ERROR
    assert panel.picture.value != picture and drawn == [turns.IDLE, turns.RUNNING, turns.ERROR]  # once per state
    panel.step.value = "retry"
    panel.button.click()
    assert drawn == [turns.IDLE, turns.RUNNING, turns.ERROR]  # running was drawn already
    panel.new.click()
    assert panel.sessions == 2 and panel.log.status().state == turns.IDLE
    assert has_chinese(panel.result.value) == (i18n.current() == "zh")


def test_the_drawing_has_an_arrow_per_pair_of_states_and_fills_the_current_one(cells):
    from matplotlib.patches import FancyArrowPatch

    figure = cells["state_machine_figure"](turns.PAUSED)
    (axes,) = figure.axes
    arrows = [patch for patch in axes.patches if isinstance(patch, FancyArrowPatch)]
    pairs = {(state, target) for (state, trigger), target in turns.TRANSITIONS.items()
             if state != target and turns.SESSION_MAX_DURATION not in trigger}
    assert len(arrows) == len(pairs)
    filled = [text.get_text() for text in axes.texts if text.get_bbox_patch() is not None
              and text.get_bbox_patch().get_facecolor()[:3] != (1.0, 1.0, 1.0) and text.get_text() in turns.STATES]
    assert filled == [turns.PAUSED]


def append_raw(path: Path, data: bytes) -> None:
    with open(path, "ab") as file:
        file.write(data)


def test_the_cursor_subscriber_takes_complete_lines_only_and_whole_batches(cells, log):
    subscriber = cells["CursorSubscriber"](log.transcript.path, cursor=0)
    log.commit({"type": "message", "role": "user", "content": "one"})
    assert [event["sequence"] for event in subscriber.poll()] == [1]
    log.commit_batch([{"type": "message", "role": "user", "content": f"batch {n}"} for n in range(3)])
    lines = log.transcript.path.read_bytes().splitlines(keepends=True)
    # a reader that comes while the batch's last line is half written: it holds the batch back
    copy = log.transcript.path.with_name("copy.jsonl")
    copy.write_bytes(b"".join(lines[:3]) + lines[3][:10])
    early = cells["CursorSubscriber"](copy, cursor=1)
    assert early.poll() == []  # records 2 and 3 are the batch's, whose last line is not complete
    append_raw(copy, lines[3][10:])
    assert [event["sequence"] for event in early.poll()] == [2, 3, 4]
    assert [event["sequence"] for event in subscriber.poll()] == [2, 3, 4]
    assert subscriber.poll() == []  # nothing twice


def test_the_cursor_subscriber_refuses_a_gap(cells, log):
    for n in range(3):
        log.commit({"type": "message", "role": "user", "content": f"{n}"})
    lines = log.transcript.path.read_bytes().splitlines(keepends=True)
    gapped = log.transcript.path.with_name("gapped.jsonl")
    gapped.write_bytes(lines[0] + lines[2])
    with pytest.raises(RuntimeError, match="gap: event 2 is missing"):
        cells["CursorSubscriber"](gapped).poll()


# --------------------------------------------------------------------------- the saved notebook

SAVED = {
    "en": {"stream": "Stream a reply", "do": "Do it", "new": "New session", "step": "step",
           "last": "wait 601 s, check limits", "state": "state <b>expired</b>",
           "committed": "<b>{n} committed events</b>"},
    "zh": {"stream": "流式输出一条回复", "do": "执行", "new": "新会话", "step": "步骤",
           "last": "等 601 秒，检查限制", "state": "状态 <b>expired</b>",
           "committed": "<b>{n} 个已提交事件</b>"},
}


def stdout_of(notebook: dict, cell_id: str) -> str:
    (cell,) = [cell for cell in notebook["cells"] if cell.get("id") == cell_id]
    return "".join("".join(output["text"]) for output in cell["outputs"] if output.get("name") == "stdout")


@pytest.mark.parametrize("language", sorted(SAVED))
def test_the_saved_panels_agree_with_the_printed_text_in_their_language(language):
    expected = SAVED[language]
    notebook = load(NOTEBOOKS / language / f"{NAME}.ipynb")
    markdown = "".join("".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "markdown")
    # the live panel: its button, and as many committed events as the main log holds at its last printed event
    live = displayed_widgets(notebook, "2253c576")
    assert one(live, "ButtonModel")["description"] == expected["stream"] and f"**{expected['stream']}**" in markdown
    last_sequence = int(re.findall(r"#(\d+) ", stdout_of(notebook, "a3db2319"))[-1])
    screen = [model for model in live if "s09-result" in model["_dom_classes"]][0]["value"]
    assert expected["committed"].format(n=last_sequence) in screen
    # the state machine: the step the cell below it drove last, and the state it printed
    machine = displayed_widgets(notebook, "7a1fc644")
    dropdown = one(machine, "DropdownModel")
    assert dropdown["description"] == expected["step"]
    assert dropdown["_options_labels"][dropdown["index"]] == expected["last"]
    assert [model["description"] for model in machine if model["model_name"] == "ButtonModel"] == [
        expected["do"], expected["new"]]
    assert f"**{expected['do']}**" in markdown and f"**{expected['new']}**" in markdown
    printed = stdout_of(notebook, "f9a8ce33").splitlines()
    assert printed[-2].startswith(expected["last"]) and "expired" in printed[-1]
    result = [model for model in machine if model["model_name"] == "HTMLModel"][0]["value"]
    assert expected["last"] in result and result.endswith(expected["state"])
    if language == "zh":
        texts = [screen, result, *dropdown["_options_labels"]]
        assert all(has_chinese(text) for text in texts)


def test_the_notebook_s_subscriber_check_is_saved_true():
    for language in ("en", "zh"):
        notebook = json.loads((NOTEBOOKS / language / f"{NAME}.ipynb").read_text(encoding="utf-8"))
        printed = stdout_of(notebook, "49bf676e").splitlines()
        assert len(printed) == 2 and all(line.endswith("True") for line in printed)
