"""Notebooks 1-3's and 7's modules in Chinese: every plot draws every glyph, and what a student reads is Chinese.

Each module is rendered after i18n.use("zh"), as the Chinese notebooks do: its plots are drawn to
PNG with warnings turned into errors (a glyph missing from the fonts is a warning), and the texts
shown (titles, axis labels, legends, widget labels, a widget's result after a press, printed
sentences) hold Chinese characters. A text that is code or data (a field name, an event type,
a library's exception message) may stay as it is; the sentence around it is Chinese.
"""

import io
import re
import warnings

import matplotlib

matplotlib.use("Agg")  # plain pytest module: no display, no inline backend

import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from s09_jsonl_transcript import damage, i18n  # noqa: E402
from s09_jsonl_transcript.code import BUG_FIX_SCRIPT, MockLLM, run_agent, ticking_clock  # noqa: E402
from s09_jsonl_transcript.crashlab import KillTrial  # noqa: E402
from s09_jsonl_transcript.index import TranscriptIndex, format_hits, format_sessions  # noqa: E402
from s09_jsonl_transcript.lab import DurableTranscript  # noqa: E402
from s09_jsonl_transcript.lessons import crash_injection
from s09_jsonl_transcript.lessons import events_on_disk as growth
from s09_jsonl_transcript.lessons import lesson_to_production as production
from s09_jsonl_transcript.lessons import partial_tail_vs_corruption as corruption  # noqa: E402
from s09_jsonl_transcript.turns import audit  # noqa: E402

CJK = re.compile(r"[\u4e00-\u9fff]")


def chinese(text: str) -> bool:
    return bool(CJK.search(text))


@pytest.fixture(autouse=True)
def in_chinese():
    i18n.use("zh")
    yield
    i18n.use("en")


def drawn(figure: Figure) -> list[str]:
    """Draw the figure to PNG, failing on any warning (a missing glyph); return every text it shows."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        figure.savefig(io.BytesIO(), format="png", dpi=40)
    texts = [text.get_text() for text in figure.findobj(matplotlib.text.Text)]
    return [text for text in texts if text.strip()]


def test_a_missing_glyph_fails_the_drawing():
    """The check above can fail: with only DejaVu Sans, a Chinese title cannot be drawn."""
    matplotlib.rcParams["font.family"] = ["DejaVu Sans"]  # before the text is made: it keeps the fonts it was made with
    figure = Figure()
    figure.suptitle("追加的一行")
    try:
        with pytest.raises(UserWarning, match="missing from font"):
            drawn(figure)
    finally:
        i18n.use("zh")


@pytest.fixture
def session(tmp_path):
    with DurableTranscript(tmp_path / "session.jsonl", clock=ticking_clock()) as transcript:
        run_agent(transcript, MockLLM())
    return DurableTranscript(tmp_path / "session.jsonl")


# --------------------------------------------------------------------------- notebook 1: growth


def test_growth_plots_are_drawn_in_chinese(session):
    growth_fig = growth.draw_growth(Figure(figsize=(9, 4)), growth.growth_of(session.path))
    texts = drawn(growth_fig)
    assert all(chinese(ax.get_title()) and chinese(ax.get_ylabel()) for ax in growth_fig.axes)
    assert chinese(growth_fig.legends[0].get_title().get_text()) and "已在磁盘上的字节" in texts
    mapping = growth.draw_message_mapping(Figure(figsize=(9, 5)), session.read_events())
    texts = drawn(mapping)
    assert chinese(mapping.axes[0].get_title()) and "user：文本" in texts
    assert all(chinese(label.get_text()) for label in mapping.axes[0].get_xticklabels())
    write_path = growth.draw_write_path(Figure(figsize=(9, 3.2)))
    texts = drawn(write_path)
    assert write_path.axes[0].get_title() == "追加的一行落在哪里"
    assert {"磁盘", "内核页缓存"} <= set(texts) and any(text.startswith("durable boundary：") for text in texts)
    empty = growth.draw_growth(Figure(), [])
    assert "还没有事件" in drawn(empty)


def test_the_stepper_panel_speaks_chinese_before_and_after_a_press(tmp_path):
    panel = growth.StepperPanel(growth.EventStepper(tmp_path, session_id="session"))
    assert (panel.next_button.description, panel.reset_button.description) == ("下一个事件", "重置")
    assert chinese(panel.slider.description) and chinese(panel.listing.value) and chinese(panel.envelope.value)
    before = panel.status.value
    panel.next_button.click()
    assert panel.status.value != before and panel.status.value == "磁盘上有 1 个事件（共 12 个）"
    assert "最新的一行" in panel.listing.value and "它承诺什么" in panel.envelope.value
    panel.slider.value = 12
    assert panel.status.value.endswith("会话已结束")
    assert chinese(panel.file_exists_text()) and panel.last_line_text().startswith("磁盘上的最后一行：")
    panel.stepper.close()


def test_the_sentences_notebook_1_prints_are_chinese(session, tmp_path):
    events = session.read_events()
    state = session.recover()
    texts = [growth.appended_text(events[0]), growth.read_back_text(session), growth.growth_table(
        growth.growth_of(session.path)), growth.replay_text(events, state), growth.jq_fallback_text(session.path),
        growth.complete_lines_text(session.path), growth.refused_text(ValueError("in English")),
        growth.same_events_text(session.path, events, start=tmp_path),
        growth.reader_verdict_text(session.path, start=tmp_path)]
    assert all(chinese(text.splitlines()[0]) for text in texts), texts
    assert growth.reader_verdict_text(session.path, start=tmp_path) == "session.jsonl：完好（12 个事件）"
    final = growth.save_final_answer_only(events, tmp_path / "final" / "session.jsonl").read_events()
    table = growth.replay_questions_table(events, final).data
    assert "只存最终回答" in table and "没有记录" in table


# --------------------------------------------------------------------------- notebook 2: crash injection


def report(tail: bytes = b"{\"sche", lost: bool = False) -> crash_injection.CrashReport:
    recovered = (1, 2) if lost else (1, 2, 3)
    return crash_injection.CrashReport("crash-1.jsonl", 3, True, (1, 2, 3), 3, tail, recovered, 2, ("call_1",))


def test_crash_plots_are_drawn_in_chinese():
    figure = crash_injection.draw_crash(Figure(figsize=(9, 2.8)), report(lost=True))
    texts = drawn(figure)
    axis = figure.axes[0]
    assert axis.get_title() == "3 次 append 后被杀：各方手里有什么"
    assert all(chinese(label.get_text()) for label in axis.get_yticklabels())
    assert {"已确认", "在磁盘上", "已恢复", "partial tail（半条记录）", "已确认却丢失"} <= set(texts)
    trials = [KillTrial(trial=n, mode="append", acknowledged=5, recovered=5, lost=0, duplicated=0,
                        verdict=damage.CLEAN) for n in range(3)]
    campaign = crash_injection.draw_campaign(Figure(figsize=(9, 3.5)), trials)
    texts = drawn(campaign)
    assert chinese(campaign.axes[0].get_title()) and chinese(campaign.axes[0].get_xlabel())
    assert "没有一次试验\n丢失已确认事件" in texts and "被杀前已确认" in texts


def test_the_crash_report_and_tables_of_notebook_2_are_chinese(tmp_path):
    lines = crash_injection.describe_crash(report()).splitlines()
    assert all(chinese(line) for line in lines)
    assert lines[-1].endswith("已确认事件一个没丢（3 个中恢复了 3 个）")
    assert report(lost=True).verdict == "丢失了已确认事件 [3]"
    assert chinese(crash_injection.kill_mode_text()) and chinese(crash_injection.campaign_skipped_text())
    summary = crash_injection.campaign_summary([KillTrial(trial=0, mode="batch", acknowledged=4, recovered=4,
                                                           lost=0, duplicated=0, verdict=damage.CLEAN)])
    header, *_, last = summary.splitlines()
    assert header.split() == ["模式", "次数", "丢失", "重复", "内容不符", "失败"] and last.endswith("True")
    path = tmp_path / "simulated.jsonl"
    crash_injection.simulate_agent_crash(path, 3, tear=True)
    listing = crash_injection.disk_listing(path).splitlines()
    assert listing[0].startswith("第  1 行  完整") and "没有换行" in listing[-1]
    state = DurableTranscript(path).replay_state()
    assert "含义" in crash_injection.rebuilt_state_table(state).data and chinese(crash_injection.plain_data_text(state))


@pytest.mark.skipif(not crash_injection.SIGKILL_AVAILABLE, reason="kills a real process with SIGKILL (POSIX)")
def test_the_crash_panel_speaks_chinese_before_and_after_a_press(tmp_path):
    panel = crash_injection.CrashPanel(tmp_path, kill_after=2)
    assert panel.crash_button.description == "立即崩溃"
    assert chinese(panel.slider.description) and chinese(panel.tear.description) and chinese(panel.result.value)
    before = panel.result.value
    panel.crash_button.click()
    assert panel.result.value != before and "已确认事件一个没丢（2 个中恢复了 2 个）" in panel.result.value
    assert "崩溃：" in panel.result.value and bytes(panel.plot.value).startswith(b"\x89PNG")
    campaign = crash_injection.CampaignPanel(trials=2, seed=3)
    assert campaign.run_button.description == "运行 2 次杀进程" and chinese(campaign.progress.description)
    campaign.run_button.click()
    assert "每次被杀之后，每个已确认事件都还在：True" in campaign.summary.value


# --------------------------------------------------------------------------- notebook 3: corruption


@pytest.fixture
def sample(tmp_path):
    path = tmp_path / "session-3.jsonl"
    with DurableTranscript(path, clock=ticking_clock()) as transcript:
        for event in BUG_FIX_SCRIPT[:5]:
            transcript.append(event)
    return path


def test_the_verdict_maps_are_drawn_in_chinese(sample):
    data = sample.read_bytes()
    figure = corruption.plot_verdict_maps({"truncation": (data, damage.truncation_map(sample)),
                                           "flips": (data, damage.flip_map(sample))})
    try:
        texts = drawn(figure)
        assert [axis.get_title(loc="left") for axis in figure.axes] == ["在第 N 个字节后截断", "在每个字节翻转一个比特"]
        assert chinese(figure.get_suptitle()) and all(chinese(axis.get_xlabel()) for axis in figure.axes)
        assert {"完好", "已忽略 partial tail", "损坏", "内容被改却照样接受"} <= set(texts)
    finally:
        matplotlib.pyplot.close(figure)


def test_the_damage_lab_speaks_chinese_before_and_after_a_press(sample):
    lab = corruption.DamageLab(sample)
    assert lab.picker.options[0] == ("在某个字节处截断", "truncate at byte")  # shown in Chinese, keyed in English
    assert all(chinese(label) for label, _ in lab.picker.options)
    assert (lab.apply_button.description, lab.restore_button.description) == ("施加损坏", "恢复文件")
    assert chinese(lab.unit.value) and chinese(lab.result.value)
    before = lab.result.value
    lab.picker.value = "delete a line"
    lab.position.value = 5
    lab.apply_button.click()
    assert lab.unit.value == "行号" and lab.result.value != before
    assert lab.result_text == "完好（4 个事件）——删除一行，行号 5"
    lab.restore_button.click()
    assert lab.result_text == "文件已恢复：完好（5 个事件）——没有损坏" and "完好（5 个事件）" in lab.result.value
    assert lab.lines_text() == "文件中现在的行数：5"


def test_the_tables_notebook_3_shows_are_chinese(sample, tmp_path):
    data = sample.read_bytes()
    assert all(chinese(line) for line in corruption.line_starts_text(data).splitlines())
    lab = corruption.DamageLab(sample)
    rows = [(name, position, what, lab.apply(name, position)) for name, position, what in
            corruption.example_damages(data)]
    lab.restore()
    table = corruption.damage_table(rows).data
    assert "reader 的判定" in table and "TranscriptCorruptionError（第 3 行）" in table and "完好（3 个事件）" in table
    assert all(chinese(what) for _, _, what, _ in rows)
    counts = corruption.verdict_counts_table({"flips": (data, damage.flip_map(sample))}).data
    assert "内容被改却照样接受" in counts and "在每个字节翻转一个比特" in counts
    readers = corruption.compare_readers(data, sample.name, tmp_path / "readers", [("delete a line", 4)])
    assert readers[0][1].startswith("照常继续：")
    assert readers[0][2].startswith("停下：TranscriptCorruptionError（第 4 行）")
    assert "跳过坏行的 reader" in corruption.readers_table(readers).data


# --------------------------------------------------------------------------- notebook 7: production

NUMBER = re.compile(r"(?<![\w.])-?\d+(?:[.,]\d+)*")


def samples(rounds: int = 6) -> dict:
    """Write costs as measure_write_costs returns them (seconds per event), made up and varied by round."""
    base = {"append": 480e-6, "bare": 360e-6, "write_only": 14e-6, "sqlite_FULL": 560e-6, "sqlite_NORMAL": 90e-6,
            "batch_4": 170e-6, "batch_16": 60e-6}
    return {name: [value * (1 + 0.1 * (n % 3)) for n in range(rounds)] for name, value in base.items()}


READS = {1_000: {"replay": [0.004, 0.005], "recover": [0.010, 0.012]},
         16_000: {"replay": [0.004, 0.004], "recover": [0.150, 0.160]}}


def in_english(function, *args, **kwargs):
    i18n.use("en")
    try:
        return function(*args, **kwargs)
    finally:
        i18n.use("zh")


def test_the_plots_of_notebook_7_are_drawn_in_chinese():
    measured = samples()
    for draw in (production.draw_fsync_cost, production.draw_pairs, production.draw_batching,
                 production.draw_jsonl_vs_sqlite):
        figure = Figure(figsize=(7, 4))
        axes = figure.subplots()
        draw(axes, measured)
        drawn(figure)
        assert chinese(axes.get_title()) and chinese(axes.get_ylabel()), draw.__name__
    pairs = Figure(figsize=(7, 4))
    production.draw_pairs(pairs.subplots(), measured)
    drawn(pairs)
    legend = [text.get_text() for text in pairs.axes[0].get_legend().get_texts()]
    assert legend[1] == "用时相同" and legend[0].startswith("一个点是一轮") and chinese(pairs.axes[0].get_xlabel())
    boxes = Figure(figsize=(7, 4))
    production.draw_fsync_cost(boxes.subplots(), measured)
    drawn(boxes)
    ticks = [label.get_text() for label in boxes.axes[0].get_xticklabels()]
    assert all(chinese(tick) for tick in ticks) and boxes.axes[0].get_ylabel() == "每个事件的微秒数（对数刻度）"
    reads = Figure(figsize=(7, 4))
    production.draw_reads(reads.subplots(), READS)
    texts = drawn(reads)
    assert "全量读取与尾部读取" in texts and "replay(1000)：只读尾部" in texts and chinese(reads.axes[0].get_xlabel())


def test_the_summaries_of_notebook_7_are_chinese_and_hold_the_english_numbers():
    measured = samples()
    for summary, argument in ((production.fsync_summary, measured), (production.batching_summary, measured),
                              (production.reads_summary, READS), (production.sqlite_summary, measured)):
        said = summary(argument)
        assert chinese(said.splitlines()[0]), said
        assert sorted(NUMBER.findall(said)) == sorted(NUMBER.findall(in_english(summary, argument))), summary.__name__
    header = production.batching_summary(measured).splitlines()[0]
    assert header.split() == ["批次大小", "每秒事件数（中位数）", "是逐条", "append", "速率的几倍"]
    for check in (production.LibraryVsBare(60, 20), production.LibraryVsBare(5, 5)):
        english = in_english(str, check)
        assert chinese(str(check)) and sorted(NUMBER.findall(str(check))) == sorted(NUMBER.findall(english))
    assert str(production.LibraryVsBare(60, 20)) == (
        "60 轮里有 20 轮 append 用时比裸的 os.write + fsync 还短（计时有噪声：这个次数只显示，不检查）")


def test_the_recovery_plans_and_tables_of_notebook_7_are_chinese():
    rows = production.crash_points()
    assert all(chinese(row["plan"].action) for row in rows)
    pending = rows[6]["plan"].action
    assert pending.startswith("write_file (call_2) 可能已经执行过") and "幂等键" in pending
    assert str(rows[7]["plan"]) == ("running：从最后一个事件之后继续 turn 1；"
                                    "绝不重复 write_file (call_2)：它的结果已在磁盘上")
    table = production.crash_point_table(rows).data
    assert "新进程必须做什么" in table and "1 到 3" in table and "（还没有）" in table
    assert "下一个状态" in production.transition_table().data
    said = production.departure_texts()
    only_names = {"max_tool_calls_per_turn", "idle + user_message -> running", "user_interrupt, compaction_trigger"}
    assert all(chinese(text) for english, text in said.items() if english not in only_names)
    departures = production.departures_table().data
    assert "本教具" in departures and "放弃就是新建一个会话" in departures
    broken = production.recovery_plan([{"type": "turn_start", "turn_number": 1, "sequence": 1},
                                       {"type": "turn_start", "turn_number": 2, "sequence": 2}])
    assert str(broken).endswith("（1 个异常）")
    anomaly = production.anomaly_text(broken.status.anomalies[0])  # the library's text, in Chinese too
    assert anomaly.startswith("事件 2：turn 1 还开着时 turn 2 开始了")
    assert production.same_as_folded_text(True) == "与 fold 前缀得到的计划相同：True"
    assert production.rebuild_text(True, False).splitlines() == ["每一行都和删除前一样：True", "改过的标题还在：False"]


def test_the_index_listings_and_the_audit_of_notebook_7_are_chinese(tmp_path):
    production.build_sample_root(tmp_path)
    index = TranscriptIndex(tmp_path)
    scanned = format_sessions(index.sessions()).splitlines()
    assert scanned[0].startswith("（没有用索引：") and scanned[-1] == (
        "notes/chat  （无标题）  [2 个事件，更新于 2026-01-05T09:00:14+00:00]")
    assert str(index.sync()) == "新增 3，更新 0，未变 0，移除 0，损坏 0"
    assert format_hits(index.search("add()", limit=1)).splitlines()[-1] == "（命中数超过了上限 1）"
    assert production.title_kept_text(index) == "改过的标题保存在 user-titles.sqlite3 里"
    report = audit(DurableTranscript(tmp_path / "projects" / "calc" / "with-turns.jsonl").read_events())
    lines = production.audit_text(report).splitlines()
    assert lines[0].startswith("共结束 6 个 turn") and lines[1] == "token：输入 13700，输出 400，费用 $0.0468"
    assert lines[-1].endswith("run_tests（call_5）：error")


def test_the_crash_lab_speaks_chinese_before_and_after_a_press(tmp_path):
    lab = production.CrashLab(folder=tmp_path, point=7)
    assert (lab.point.description, lab.button.description) == ("崩溃点", "崩溃并恢复")
    before = lab.result.value
    assert chinese(before) and chinese(lab.summary)
    lab.button.click()
    assert lab.result.value != before and lab.result.value.startswith("崩溃 1：<b>写入 7 个事件后被杀</b>")
    assert lab.summary.endswith("必须：从最后一个事件之后继续 turn 1；绝不重复 write_file (call_2)：它的结果已在磁盘上")
    lab.point.value = 6
    lab.button.click()
    assert lab.summary.startswith("崩溃 2：写入 6 个事件后被杀") and "幂等键" in lab.result.value
