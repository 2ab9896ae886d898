"""Chapters 1-3 and notebook 8's module in Chinese: every plot draws every glyph, and what a student reads is Chinese.

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
from chapter_code import run_cells  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from s09_jsonl_transcript.lessons import read_model_and_turns as production  # noqa: E402
from s09_jsonl_transcript.production.index import TranscriptIndex, format_hits, format_sessions  # noqa: E402
from s09_jsonl_transcript.production.turns import TURNS_SCRIPT  # noqa: E402
from s09_jsonl_transcript.text import i18n  # noqa: E402

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


# --------------------------------------------------------------------------- chapters 1-3: their plots and panels


def chapter(name: str, cells: list) -> dict:
    """The chapter's cells run in Chinese (their `tr` answers in the language in use)."""
    return run_cells(name, cells, language="zh")


CHAPTER_1 = ["language", "imports", "envelope", "encode", "transcript", "plot-growth", "panel"]
CHAPTER_2 = ["language", "imports", "agent", "crash", "recovery", "plot-crash", "crash-and-recover", "crash-panel",
             "writer", "kill-random"]
CHAPTER_3 = ["language", "imports", "file", "line-problem", "read-transcript", "read-run", "damage-functions",
             "examples", "verdict", "plot-map"]


def test_chapter_1_s_growth_plot_and_panel_are_chinese(tmp_path):
    one = chapter("01_events_on_disk", CHAPTER_1)
    panel = one["StepperPanel"](tmp_path, transcript=one["Transcript"], draw=one["growth_picture"])
    assert (panel.next_button.description, panel.reset_button.description) == ("下一个事件", "重置")
    assert chinese(panel.slider.description) and chinese(panel.status.value) and chinese(panel.listing.value)
    before = panel.status.value
    panel.slider.value = 12
    assert panel.status.value != before and panel.status.value.startswith("磁盘上有 12 个事件")
    figure = one["growth_picture"](panel.path.read_bytes())
    texts = drawn(figure)
    axis = figure.axes[0]
    assert axis.get_title() == "12 次追加，12 行，2726 字节"
    assert chinese(axis.get_xlabel()) and chinese(axis.get_ylabel())
    assert "已在磁盘上，从不改写" in texts
    panel.remove_file()


def test_chapter_2_s_crash_picture_and_panels_are_chinese(tmp_path):
    two = chapter("02_crash_injection", CHAPTER_2)
    panel = two["CrashPanel"](tmp_path, crash=two["crash_and_recover"], draw=two["crash_picture"], kill_after=3)
    assert panel.crash_button.description == "立即崩溃"
    assert chinese(panel.slider.description) and chinese(panel.tear.description) and chinese(panel.result.value)
    panel.crash_button.click()
    assert panel.result_text.startswith("crash-1.jsonl：已确认 3 个；磁盘上 3 个完整行")
    acknowledged, data, recovered = two["crash_and_recover"](tmp_path / "drawn.jsonl", 5, True)
    figure = two["crash_picture"](acknowledged, data, recovered)
    texts = drawn(figure)
    assert figure.axes[0].get_title() == "已确认 5 个，恢复出 5 个：记录完全相同：True"
    assert all(chinese(label.get_text()) for label in figure.axes[0].get_xticklabels())
    assert any(text.startswith("partial tail：") for text in texts)
    campaign = two["CampaignPanel"](tmp_path / "campaign", run_one=two["kill_at_random_moment"], trials=1)
    assert campaign.run_button.description == "运行 1 次杀进程" and chinese(campaign.progress.description)
    campaign.run_button.click()
    assert campaign.result_text.startswith("第 1 轮：杀了 1 次进程") and campaign.result_text.endswith("：True")


def test_chapter_3_s_byte_map_and_damage_lab_are_chinese():
    three = chapter("03_partial_tail_vs_corruption", CHAPTER_3)
    maps = three["bit_flip_experiment"](three["read_transcript"])
    assert list(maps) == ["截断", "翻转一个比特"]
    figure = Figure(figsize=(10, 3.2))
    three["plot_byte_map"](figure.subplots(), maps, three["starts"])
    texts = drawn(figure)
    assert chinese(figure.axes[0].get_xlabel()) and {"完好", "已忽略 partial tail", "已损坏", "第 1 行"} <= set(texts)
    damages = [(three["tr"]("delete a line"), three["delete_line"], "line")]
    lab = three["DamageLab"](three["folder"] / "lab" / "session-3.jsonl", three["data"], damages=damages,
                             judge=lambda path: three["verdict"](three["read_transcript"], path, three["events"]),
                             colors=three["COLORS"], labels=three["KINDS"])
    assert lab.picker.options == (("删除一行", "delete_line"),)
    assert (lab.apply_button.description, lab.restore_button.description) == ("施加损坏", "恢复文件")
    assert lab.result_text == "完好（5 个事件）：文件已恢复"
    lab.position.value = 5
    lab.apply_button.click()
    assert lab.position.description == "行" and lab.result_text == "完好（4 个事件）：删除一行，位置 5"


# --------------------------------------------------------------------------- notebook 8: the read model and turns


def test_the_recovery_plans_and_tables_of_notebook_8_are_chinese():
    plans = [production.recovery_plan([{**event, "sequence": number}
                                       for number, event in enumerate(TURNS_SCRIPT[:count], 1)])
             for count in range(len(TURNS_SCRIPT) + 1)]
    assert all(chinese(plan.action) for plan in plans)
    pending = plans[6].action
    assert pending.startswith("write_file (call_2) 可能已经执行过") and "幂等键" in pending
    assert str(plans[7]) == ("running：从最后一个事件之后继续 turn 1；"
                             "绝不重复 write_file (call_2)：它的结果已在磁盘上")
    said = production.departure_texts()
    only_names = {"max_tool_calls_per_turn", "idle + user_message -> running", "user_interrupt, compaction_trigger"}
    assert all(chinese(text) for english, text in said.items() if english not in only_names)
    departures = production.departures_table().data
    assert "本教具" in departures and "放弃就是新建一个会话" in departures
    broken = production.recovery_plan([{"type": "turn_start", "turn_number": 1, "sequence": 1},
                                       {"type": "turn_start", "turn_number": 2, "sequence": 2}])
    assert str(broken).endswith("（1 个异常）")
    anomaly = i18n.library_text(broken.status.anomalies[0].message)  # the library's text, in Chinese too
    assert anomaly.startswith("turn 1 还开着时 turn 2 开始了")


def test_the_index_listings_of_notebook_8_are_chinese(tmp_path):
    production.build_sample_root(tmp_path)
    index = TranscriptIndex(tmp_path)
    scanned = format_sessions(index.sessions()).splitlines()
    assert scanned[0].startswith("（没有用索引：") and scanned[-1] == (
        "notes/chat  （无标题）  [2 个事件，更新于 2026-01-05T09:00:14+00:00]")
    assert str(index.sync()) == "新增 3，更新 0，未变 0，移除 0，损坏 0"
    assert format_hits(index.search("add()", limit=1)).splitlines()[-1] == "（命中数超过了上限 1）"


def test_the_crash_lab_speaks_chinese_before_and_after_a_press(tmp_path):
    lab = production.CrashLab(folder=tmp_path, point=7)
    assert (lab.point.description, lab.button.description) == ("崩溃点", "崩溃并恢复")
    before = lab.result.value
    assert chinese(before) and chinese(lab.summary)
    lab.button.click()
    assert lab.result.value != before and lab.result.value.startswith("<p>崩溃 1：写入 7 个事件后被杀")
    assert lab.summary.endswith("必须：从最后一个事件之后继续 turn 1；绝不重复 write_file (call_2)：它的结果已在磁盘上")
    lab.point.value = 6
    lab.button.click()
    assert lab.summary.startswith("崩溃 2：写入 6 个事件后被杀") and "幂等键" in lab.result.value
