"""Notebook 8's lesson module: the widgets driven in the kernel, the crash, the hand-overs, the drawings.

In English first; then the same widgets pressed, texts said and plots drawn in Chinese (i18n.use("zh"):
a glyph missing from the fonts is an error), and the notebook as saved in both languages.
"""

import re
import unicodedata
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.patches import FancyArrowPatch  # noqa: E402
from saved_widgets import displayed_widgets, load, one  # noqa: E402

from s09_jsonl_transcript.lab import DurableTranscript  # noqa: E402
from s09_jsonl_transcript.lessons import live_child, live_session  # noqa: E402
from s09_jsonl_transcript.lessons.display import figure_png  # noqa: E402
from s09_jsonl_transcript.production import turns  # noqa: E402
from s09_jsonl_transcript.production.live import SessionEventLog  # noqa: E402
from s09_jsonl_transcript.production.timeouts import ManualClock  # noqa: E402
from s09_jsonl_transcript.text import i18n  # noqa: E402
from s09_jsonl_transcript.text.bilingual import has_chinese  # noqa: E402

HANG_SECONDS = 300  # a subscriber's delivery may take this long before a test calls it hung (never a slow machine)

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


@pytest.fixture
def log(tmp_path):
    with SessionEventLog.create(tmp_path / "live.jsonl", clock=ManualClock()) as opened:
        yield opened


@pytest.fixture
def chinese():
    """Chinese for the test, English again afterwards (the kit's default)."""
    i18n.use("zh")
    yield
    i18n.use("en")


def test_the_reply_is_cut_into_pieces_that_add_up_to_it():
    pieces = live_session.reply_pieces()
    assert len(pieces) > 5 and "".join(pieces) == live_child.REPLY


def test_the_stream_button_streams_a_turn_the_subscriber_shows(log):
    view = live_session.LiveView(log, pace=0)
    before = view.screen.value
    view.button.click()
    assert view.screen.value != before
    assert view.deltas_seen == len(live_session.reply_pieces()) and len(view.committed) == 5  # with part_start
    assert "5 committed events" in view.screen.value and "streaming" not in view.screen.value  # overlay gone
    assert view.status.value.startswith("turn 1:")
    events = DurableTranscript(log.transcript.path).read_events()
    assert [e["type"] for e in events] == ["turn_start", "message", "part_start", "message", "turn_end"]
    assert events[3]["content"] == live_child.REPLY and events[3]["part_id"] == events[2]["part_id"]
    assert [kind for kind, _ in view.timeline].count("delta") == view.deltas_seen
    shown = view.screen.value
    view.button.click()  # a second press streams a second turn: the result changes again
    assert view.screen.value != shown and "10 committed events" in view.screen.value
    assert "s09-main-control" in view.button._dom_classes and "s09-result" in view.screen._dom_classes


def test_the_view_shows_a_part_while_it_streams_and_a_refusal_when_no_turn_can_start(log):
    view = live_session.LiveView(log, pace=0)
    log.start_turn()
    stream = log.open_stream()
    stream.delta("half of it")
    assert view.subscription.wait_delivered(timeout=HANG_SECONDS)
    assert "streaming (memory only): half of it" in view.screen.value
    view.button.click()  # a turn is open: start_turn is refused
    assert view.status.value.startswith("refused: turn 2 started while turn 1 was open")
    log.end_turn(1, turns.REASON_ERROR)  # the turn ends without the part: the part's text leaves the screen
    assert view.subscription.wait_delivered(timeout=HANG_SECONDS)
    assert "streaming" not in view.screen.value and "turn_end error" in view.screen.value


def test_a_crash_in_the_middle_of_a_stream_keeps_committed_events_and_no_delta(tmp_path):
    crash = live_session.crash_mid_stream(tmp_path / "crash.jsonl", deltas=5)
    assert crash.client_deltas == tuple(live_session.reply_pieces()[:5])
    assert crash.client_committed == crash.file_sequences == (1, 2, 3, 4)  # 4: the stream's part_start
    assert crash.deltas_in_file == 0 and "".join(crash.client_deltas).strip() not in crash.file_text
    assert crash.status.state == turns.RUNNING and crash.status.pending_calls == ("call_1",)
    assert "deltas found in it: 0" in str(crash)
    figure = Figure()
    live_session.draw_crash(figure.subplots(), crash)
    with pytest.raises(ValueError, match="deltas"):
        live_session.crash_mid_stream(tmp_path / "other.jsonl", deltas=0)


def test_a_client_reconnecting_from_its_cursor_sees_every_event_once(log):
    client = live_session.Client(log)
    client.connect()
    live_session.chat(log, 2)
    client.disconnect()
    live_session.chat(log, 2)
    client.connect()
    live_session.chat(log, 1)
    client.read()
    assert client.received == list(range(1, log.last_sequence + 1)) and client.connections == 2
    assert client.report().endswith("no gap, no duplicate, in order")
    client.received.append(3)
    assert "REPEATS [3]" in client.report()


def test_the_naive_hand_overs_miss_or_repeat_and_subscribe_does_neither(log):
    live_session.chat(log, 2)

    def meanwhile():
        log.commit({"type": "message", "role": "user", "content": "meanwhile"})

    missed = live_session.handover(log, "replay, then subscribe", meanwhile)
    twice = live_session.handover(log, "subscribe, then replay", meanwhile)
    right = live_session.handover(log, "subscribe(from_sequence)", meanwhile)
    assert "missed [" in missed and "twice nothing" in missed
    assert "missed nothing" in twice and "twice [" in twice
    assert right.endswith("missed nothing, twice nothing")


def test_the_stress_hand_over_finds_no_subscriber_that_missed_or_repeated(tmp_path):
    said = live_session.stress_handover(tmp_path / "stress.jsonl", events=120, attaches=20)
    assert said.endswith("20 saw every event after their cursor exactly once, in order; 0 did not")


def test_of_two_threads_closing_a_turn_one_wins(log):
    said = live_session.race_to_close(log, racers=2)
    assert "1 won, 1 refused" in said and said.endswith("in the file: 1")


def test_a_timed_out_session_records_its_timeouts_and_refuses_a_new_turn(tmp_path):
    events, said = live_session.timeout_session(tmp_path / "t.jsonl")
    rows = live_session.timeline_rows(events)
    assert [row[2] for row in rows if row[2] == "timeout"] == ["timeout", "timeout"]
    assert ["31", "121"] == [row[1] for row in rows if row[2] == "timeout"]
    assert "tool_timeout: allowed 30, observed 31" in [row[3] for row in rows]
    assert said.splitlines()[0] == "after 31 s: state running, turn 1 open, calls waiting []"
    assert said.splitlines()[1].startswith("after 121 s: state expired")
    assert "refused: turn_start after the session expired" in said


def test_the_state_machine_panel_applies_steps_and_redraws(tmp_path):
    panel = live_session.StateMachinePanel(tmp_path)
    picture, shown = panel.picture.value, panel.result.value
    panel.step.value = "start turn"
    assert panel.do().startswith("accepted: #1 turn_start")
    assert panel.result.value != shown and "state <b>running</b>" in panel.result.value
    assert panel.picture.value != picture
    panel.step.value = "resume"
    panel.button.click()
    assert "refused: resume_command while running" in panel.result.value
    panel.step.value = "end turn: timeout"
    panel.button.click()
    assert panel.log.status().state == turns.EXPIRED
    panel.new.click()
    assert panel.log.status().state == turns.IDLE and "session 2" in panel.result.value
    assert sorted(path.name for path in tmp_path.glob("machine-*.jsonl")) == ["machine-1.jsonl", "machine-2.jsonl"]
    for step in live_session.STEPS:  # every step either commits or is refused: none raises
        panel.step.value = step
        assert panel.do().startswith(("accepted", "refused"))


def test_the_drawing_has_an_arrow_per_transition_and_fills_the_current_state():
    labels = live_session.edge_labels()
    moving = {(state, target) for (state, trigger), target in turns.TRANSITIONS.items()
              if state != target and turns.SESSION_MAX_DURATION not in trigger}
    assert set(labels) == moving
    figure = Figure()
    axes = figure.subplots()
    live_session.draw_state_machine(axes, turns.PAUSED)
    assert sum(isinstance(patch, FancyArrowPatch) for patch in axes.patches) == len(moving)
    filled = [text for text in axes.texts if text.get_text() == turns.PAUSED][0]
    assert filled.get_bbox_patch().get_facecolor()[:3] != (1.0, 1.0, 1.0)
    assert "now: paused" in axes.get_title()


def test_the_timeline_draws_deltas_and_committed_events_apart():
    figure = Figure()
    axes = figure.subplots()
    live_session.draw_timeline(axes, [("committed", 1), ("delta", None), ("delta", None), ("committed", 2)])
    sizes = [len(collection.get_offsets()) for collection in axes.collections]
    assert sizes == [2, 2]


def test_the_state_machine_panel_drives_by_english_keys_and_says_each_step_on_one_line(tmp_path):
    panel = live_session.StateMachinePanel(tmp_path)
    assert [value for _, value in panel.step.options] == list(live_session.STEPS)
    panel.step.value = "start turn"
    panel.button.click()
    assert panel.last_step == f"{'start turn':<26} accepted: #1 turn_start user_initiated"


def test_a_status_is_said_as_its_str_in_english_for_every_state_of_the_scripted_session():
    script = turns.TURNS_SCRIPT + ({"type": "message", "role": "user", "content": "more"},)  # work once expired
    said = set()
    for end in range(len(script) + 1):
        status = turns.session_status(script[:end])
        assert live_session.status_said(status) == str(status)
        said.add(status.state)
    assert said == set(turns.STATES) and "(1 anomalies)" in live_session.status_said(status)


# --------------------------------------------------------------------------- in Chinese


def columns(text: str) -> int:
    """How many columns a terminal gives text: two for a wide (Chinese) character."""
    return sum(2 if unicodedata.east_asian_width(character) in "WF" else 1 for character in text)


def draws_every_glyph(figure) -> None:
    """Render the figure as PNG; a glyph missing from the fonts raises (as i18n.use("zh") makes it in a notebook)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=r"Glyph \d+ .* missing from font", category=UserWarning)
        figure_png(figure)


def chinese_texts(axes) -> list[str]:
    """The title, axis labels, tick labels, legend and annotations of a drawing that hold Chinese."""
    texts = [axes.get_title(), axes.get_xlabel(), axes.get_ylabel()]
    texts += [label.get_text() for label in axes.get_xticklabels() + axes.get_yticklabels()]
    texts += [text.get_text() for text in axes.texts]
    if axes.get_legend() is not None:
        texts += [text.get_text() for text in axes.get_legend().get_texts()]
    return [text for text in texts if has_chinese(text)]


def test_the_stream_button_in_chinese_streams_a_turn_and_says_so_in_chinese(log, chinese):
    pieces = len(live_session.reply_pieces())
    view = live_session.LiveView(log, pace=0)
    assert view.button.description == "流式输出一条回复"
    before = view.screen.value
    view.button.click()
    assert view.status.value == f"turn 1：{pieces} 个增量，然后提交 1 个最终 part"
    assert view.screen.value != before
    assert view.screen.value.startswith(
        f"<b>5 个已提交事件</b>（在磁盘上，有 sequence）&middot; 收到 <b>{pieces} 个增量</b>")
    assert "committed" not in view.screen.value and "deltas" not in view.screen.value
    shown = view.screen.value
    view.button.click()
    assert view.screen.value != shown and "<b>10 个已提交事件</b>" in view.screen.value
    assert view.status.value.startswith("turn 2：")


def test_the_part_being_streamed_and_a_refusal_in_chinese(log, chinese):
    view = live_session.LiveView(log, pace=0)
    log.start_turn()
    log.open_stream().delta("half of it")
    assert view.subscription.wait_delivered(timeout=HANG_SECONDS)
    assert "part-2 正在流式输出（只在内存中）：half of it" in view.screen.value  # part-<its part_start's sequence>
    view.button.click()  # a turn is open: refused, the library's reason shown in Chinese (i18n.library_text)
    assert view.status.value.startswith("拒绝：turn 1 还开着时 turn 2 开始了")


def test_the_state_machine_panel_in_chinese(tmp_path, chinese):
    panel = live_session.StateMachinePanel(tmp_path)
    labels = [label for label, _ in panel.step.options]
    assert all(has_chinese(label) for label in labels) and len(set(labels)) == len(live_session.STEPS)
    assert (panel.step.description, panel.button.description, panel.new.description) == ("步骤", "执行", "新会话")
    assert panel.step.value == "start turn" and panel.step.label == "开始 turn"
    assert panel.result.value == "会话 1：新建，状态 <b>idle</b>"
    picture = panel.picture.value
    panel.button.click()
    assert panel.result.value == "【开始 turn】接受：#1 turn_start user_initiated &rarr; 状态 <b>running</b>"
    assert panel.last_step == "开始 turn" + " " * 17 + " 接受：#1 turn_start user_initiated"  # 26 columns
    assert panel.picture.value != picture
    panel.step.value = "pause"
    panel.button.click()
    panel.step.value = "user message"
    panel.button.click()
    assert panel.result.value.startswith("【用户消息】拒绝：paused 状态下的 user_message：状态机没有这样的转换")
    assert panel.result.value.endswith("状态 <b>paused</b>")
    panel.new.click()
    assert panel.result.value == "会话 2：新建，状态 <b>idle</b>"


def test_the_state_machine_picture_follows_the_language(chinese):
    chinese_picture = live_session.state_machine_png(turns.IDLE)
    i18n.use("en")
    assert live_session.state_machine_png(turns.IDLE) != chinese_picture


def test_the_drawings_in_chinese_draw_every_glyph(chinese):
    crash = live_session.StreamCrash(client_committed=(1, 2, 3), client_deltas=("I read ", "calc.py: "),
                                     file_sequences=(1, 2, 3), file_text="", status=turns.session_status([]))
    drawings = {
        "timeline": lambda axes: live_session.draw_timeline(axes, [("committed", 1), ("delta", None)]),
        "crash": lambda axes: live_session.draw_crash(axes, crash),
        "state machine": lambda axes: live_session.draw_state_machine(axes, turns.RUNNING),
    }
    for name, draw in drawings.items():
        figure = Figure()
        axes = figure.subplots()
        draw(axes)
        draws_every_glyph(figure)
        shown = chinese_texts(axes)
        assert has_chinese(axes.get_title()) and len(shown) >= 2, f"{name}: {shown}"
    assert axes.get_title() == "会话状态机（当前：running）"


def test_without_the_cjk_font_a_chinese_drawing_fails(chinese):
    """The glyph check above can fail: with DejaVu Sans alone the Chinese labels have no glyphs."""
    with matplotlib.rc_context({"font.family": ["DejaVu Sans"]}):
        figure = Figure()
        live_session.draw_timeline(figure.subplots(), [("committed", 1), ("delta", None)])
        with pytest.raises(UserWarning, match="missing from font"):
            draws_every_glyph(figure)


def test_a_crash_in_the_middle_of_a_stream_said_in_chinese(tmp_path, chinese):
    crash = live_session.crash_mid_stream(tmp_path / "crash.jsonl", deltas=3)
    lines = str(crash).splitlines()
    assert lines[0].startswith("客户端收到 4 个已提交事件 [1, 2, 3, 4] 和 3 个增量：'I read calc.py: add() returns ")
    assert lines[1] == "文件里有 4 个已提交事件 [1, 2, 3, 4]；在文件里找到的增量：0 个"
    assert lines[2] == "新进程读出：running：继续未完成的 turn 1；待回应的工具调用：['call_1']"


def test_cursors_reconnects_and_hand_overs_said_in_chinese(log, chinese):
    view = live_session.LiveView(log, pace=0)
    view.stream()
    on_disk = DurableTranscript(log.transcript.path).read_events()
    assert live_session.subscriber_and_file(view, on_disk).splitlines()[:2] == [
        f"订阅者：{len(live_session.reply_pieces())} 个增量，5 个已提交事件",
        "文件：5 行，类型 ['turn_start', 'message', 'part_start', 'message', 'turn_end']"]
    live_session.chat(log, 3)
    pages = [log.page_back(6), log.page_back(6, log.page_back(6).cursor)]
    assert live_session.cursor_reads(log, 18, log.read_from(19), pages).splitlines() == [
        "最后的 sequence：20", "游标 18 之后：[19, 20]", "第 1 页：事件 15-20", "第 2 页：事件 9-14"]
    client = live_session.Client(log)
    client.connect()
    client.disconnect()
    assert client.where() == "在游标 20 处断开"
    live_session.chat(log, 1)
    client.connect()
    assert client.where() == "已连接，游标 20"
    client.read()
    assert client.report() == "经 2 次连接收到 sequence 1-25（日志已到 25）：无缺口、无重复、顺序正确"
    client.received.append(3)
    assert client.report().endswith("缺口：[]，重复：[3]")

    def meanwhile():
        log.commit({"type": "message", "role": "user", "content": "meanwhile"})

    lines = [live_session.handover(log, way, meanwhile) for way in live_session.HANDOVERS]
    assert [line.split()[0] for line in lines] == ["先回放，再订阅", "先订阅，再回放", "subscribe(from_sequence)"]
    assert "漏掉：[" in lines[0] and lines[0].endswith("重复：无")
    assert "漏掉：无，重复：[" in lines[1] and lines[2].endswith("漏掉：无，重复：无")
    assert {columns(line[:line.index("收到")]) for line in lines} == {27}, "the lines line up, as a terminal shows them"
    with pytest.raises(ValueError, match="way must be one of"):
        live_session.handover(log, "先回放，再订阅", meanwhile)


def test_the_race_and_the_stress_said_in_chinese(log, tmp_path, chinese):
    said = live_session.race_to_close(log, racers=2)
    assert said == ("2 个线程同时尝试结束 turn 1：1 个成功，1 个被拒绝"
                    "（收到 turn 1 的 turn_end，但没有开着的 turn）；文件里 turn 1 的 turn_end 事件：1 个")
    assert live_session.stress_handover(tmp_path / "stress.jsonl", events=60, attaches=10) == (
        "一个线程提交 60 个事件的同时，10 个订阅者先后接入："
        "10 个按顺序、恰好一次地收到了各自游标之后的每个事件；0 个没有")
    assert live_session.refusal(lambda: log.record_tool_result("call_9", "?")) == (
        "拒绝：call_9 的结果：从没有过这个调用")
    assert live_session.refusal(lambda: []) == "接受：没有要记录的事件"


def test_a_timed_out_session_said_in_chinese(tmp_path, chinese):
    events, said = live_session.timeout_session(tmp_path / "t.jsonl")
    assert said.splitlines() == [
        "31 秒后：状态 running，turn 1 未结束，待回应的工具调用 []",
        "121 秒后：状态 expired，没有未结束的 turn，待回应的工具调用 []",
        "再开一个 turn → 拒绝：会话已过期（事件 9）之后的 turn_start：请开始一个新会话"]
    assert live_session.timeline_headers() == ("sequence", "记录时间（秒）", "类型", "内容")
    table = live_session.timeline_table(events).data
    assert "tool_timeout：上限 30，实测 31" in table and "turn 1（timeout）" in table and "记录时间（秒）" in table


def test_every_decision_after_a_crash_has_its_chinese():
    decisions = {*turns.DECISION_BY_STATE.values(), *turns.DECISION_AFTER_IDLE.values(), turns.NO_TURN_MARKERS}
    assert all(live_session.decision_label(decision) == decision for decision in decisions)
    i18n.use("zh")
    try:
        chinese = [live_session.decision_label(decision) for decision in decisions]
    finally:
        i18n.use("en")
    assert all(has_chinese(text) for text in chinese) and len(set(chinese)) == len(decisions)


# --------------------------------------------------------------------------- the notebook as saved, both languages

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
    notebook = load(NOTEBOOKS / language / "beyond-s09" / "08_live_session.ipynb")
    markdown = "".join("".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "markdown")
    # the live panel: its button, and as many committed events as the last printed sequence of the main log
    live = displayed_widgets(notebook, "2253c576")
    assert one(live, "ButtonModel")["description"] == expected["stream"] and f"**{expected['stream']}**" in markdown
    last_sequence = int(re.findall(r"#(\d+) ", stdout_of(notebook, "be680f0a"))[-1])
    screen = [model for model in live if "s09-result" in model["_dom_classes"]][0]["value"]
    assert expected["committed"].format(n=last_sequence) in screen
    # the state machine: the step the cell below it drove last, and the state it printed
    machine = displayed_widgets(notebook, "4bfebec0")
    dropdown = one(machine, "DropdownModel")
    assert dropdown["description"] == expected["step"]
    assert dropdown["_options_labels"][dropdown["index"]] == expected["last"]
    assert [model["description"] for model in machine if model["model_name"] == "ButtonModel"] == [
        expected["do"], expected["new"]]
    assert f"**{expected['do']}**" in markdown and f"**{expected['new']}**" in markdown
    printed = stdout_of(notebook, "7a1fc644").splitlines()
    assert printed[-2].startswith(expected["last"]) and "expired" in printed[-1]
    result = [model for model in machine if model["model_name"] == "HTMLModel"][0]["value"]
    assert expected["last"] in result and result.endswith(expected["state"])
    if language == "zh":
        texts = [screen, result, *dropdown["_options_labels"]]
        assert all(has_chinese(text) for text in texts)
