"""Notebook 6's widgets and plots, driven the way the kernel drives them."""

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402

from s09_jsonl_transcript.crashlab import damage_campaign, kill_campaign  # noqa: E402
from s09_jsonl_transcript.crashlab.damage import CLEAN, PARTIAL_TAIL  # noqa: E402
from s09_jsonl_transcript.crashlab.powerloss import one_append_states  # noqa: E402
from s09_jsonl_transcript.lessons.crash_lab import (  # noqa: E402
    FlipPanel,
    KillPanel,
    kill_plot_verdicts,
    kill_verdict,
    plot_kill_trials,
    plot_one_append,
    plot_verdict_maps,
    progress_bar,
    sample_bytes,
    visible_runs,
)
from s09_jsonl_transcript.lessons.display import MAIN_CONTROL_CLASS, RESULT_CLASS  # noqa: E402
from s09_jsonl_transcript.lessons.style import VERDICT_COLORS  # noqa: E402


def test_the_kill_button_kills_writers_and_shows_the_verdict(tmp_path):
    panel = KillPanel(trials=3, root=tmp_path)
    assert MAIN_CONTROL_CLASS in panel.button._dom_classes and RESULT_CLASS in panel.result._dom_classes
    before = panel.result.value
    panel.button.click()
    assert panel.result.value != before and "Round 1" in panel.result.value
    assert "every acknowledged event survived every kill" in panel.result.value
    assert (panel.progress.value, panel.progress.max) == (3, 3)
    assert len(list((tmp_path / "round-1").glob("kill-*.jsonl"))) == 3
    panel.button.click()
    assert "Round 2" in panel.result.value and (tmp_path / "round-2").is_dir()


def test_the_verdict_text_names_a_failed_trial():
    results = kill_campaign(2, seed=5, modes=("append",))
    assert kill_verdict(results).endswith("every acknowledged event survived every kill")
    broken = [results[0].__class__(**{**vars(results[0]), "lost": 1}), results[1]]
    assert kill_verdict(broken).endswith("A KILL BROKE THE PROMISE")
    assert "lost 1" in kill_verdict(broken)



def test_the_kill_plot_s_verdicts_hold_for_a_real_campaign_and_name_a_broken_trial():
    """What notebook 6 saves of its kill plot (a machine-dependent cell): two verdicts, never the counts."""
    results = kill_campaign(2, seed=5, modes=("append",))
    assert kill_plot_verdicts(results) == ("✔ left: the line of lost events stays on 0 in every trial\n"
                                           "✔ right: no trial recovered fewer events than its victim acknowledged")
    fewer = results[0].__class__(**{**vars(results[0]), "lost": 1, "recovered": results[0].acknowledged - 1})
    assert kill_plot_verdicts([fewer, results[1]]).splitlines() == [
        "✘ left: the line of lost events stays on 0 in every trial",
        "✘ right: no trial recovered fewer events than its victim acknowledged"]

def test_moving_the_flip_slider_damages_a_new_file_and_shows_its_verdict():
    panel = FlipPanel(offset=30)
    assert panel.result.value.startswith("TranscriptCorruptionError at line 1")
    panel.offset.value = 200
    assert panel.result.value == "accepted with different content (12 events)"
    panel.chain.value = True
    assert "chain mismatch" in panel.result.value
    assert panel.offset.max == panel.sizes[True] - 1 > panel.sizes[False] - 1


def test_the_last_byte_of_the_flip_slider_is_the_final_newline():
    panel = FlipPanel()
    for chained in (True, False):
        panel.chain.value = chained
        panel.offset.value = panel.offset.max
        assert sample_bytes(integrity=chained)[panel.offset.value] == ord("\n")
        assert panel.result.value == "partial tail ignored (11 events)"


def test_visible_runs_widen_single_bytes_and_draw_them_last():
    kinds = ["a"] * 50 + ["b"] + ["a"] * 48 + ["c"]
    drawn = visible_runs(kinds, narrowest=4)
    assert [kind for _, _, kind in drawn] == ["a", "a", "b", "c"]
    assert drawn[2] == (48.5, 4, "b")  # centred on byte 50
    assert drawn[3] == (96, 4, "c")  # the last byte: widened to the left, kept inside the strip
    assert visible_runs(["a"] * 3, narrowest=10) == [(0, 3, "a")]


def _rectangles(axis, color):
    """(x0, x1) of every bar of this colour drawn on the axis."""
    spans = []
    for collection in axis.collections:
        faces = collection.get_facecolors()
        if len(faces) and to_hex(faces[0]) == to_hex(color):
            spans += [(path.vertices[:, 0].min(), path.vertices[:, 0].max()) for path in collection.get_paths()]
    return spans


@pytest.fixture(scope="module")
def damage_reports():
    return [damage_campaign(integrity=chained, sessions=1) for chained in (False, True)]


def test_the_verdict_map_shows_every_record_boundary_and_the_final_newline(damage_reports):
    figure = plot_verdict_maps(damage_reports)
    try:
        axes = figure.axes
        assert len(axes) == 4
        longest = max(report.size for report in damage_reports) + 1
        for report, (truncate_axis, flip_axis) in zip(damage_reports, zip(axes[::2], axes[1::2])):
            newlines = [offset for offset, byte in enumerate(sample_bytes(integrity=report.integrity))
                        if byte == ord("\n")]
            assert len(newlines) == report.records == 12
            clean = _rectangles(truncate_axis, VERDICT_COLORS[CLEAN])
            for newline in newlines:  # cutting just before or just after the newline keeps whole records
                assert any(x0 <= newline and newline + 1 <= x1 and x1 - x0 >= 0.003 * longest for x0, x1 in clean)
            tail = _rectangles(flip_axis, VERDICT_COLORS[PARTIAL_TAIL])
            assert len(tail) == 1 and tail[0][1] == report.size and tail[0][1] - tail[0][0] >= 0.003 * longest
            ticks = truncate_axis.collections[-1].get_segments()
            assert sorted(segment[0][0] for segment in ticks) == newlines
    finally:
        matplotlib.pyplot.close(figure)


def test_the_progress_bar_follows_the_callback():
    bar, move = progress_bar("x")
    move(2, 5)
    assert (bar.value, bar.max) == (2, 5)


def test_the_states_bar_ends_at_the_number_of_states_the_table_shows(tmp_path):
    """The notebook's bar and table describe one campaign: the bar must not stop at the first-level states."""
    from s09_jsonl_transcript.crashlab import power_loss_campaign
    from s09_jsonl_transcript.lessons.crash_lab import power_loss_table

    bar, move = progress_bar("states")
    seen = []
    power = power_loss_campaign(integrity_modes=(False,), every_byte=False, root=tmp_path,
                                progress=lambda done, total: (seen.append((done, total)), move(done, total)))
    assert power.repair_states > 0  # there are states beyond the first level to count
    assert (bar.value, bar.max) == (power.states, power.states)
    assert f"{power.states} states" in power_loss_table(power).data
    assert all(done <= total for done, total in seen)
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)


def test_plots_have_titles_labels_and_legends(damage_reports):
    results = kill_campaign(3, seed=2, max_delay=0.0)
    figures = [
        plot_kill_trials(results),
        plot_verdict_maps(damage_reports),
        plot_one_append(*one_append_states()[1:]),
    ]
    for figure in figures:
        axes = figure.axes
        assert any(ax.get_title() for ax in axes)
        assert any(ax.get_xlabel() for ax in axes)
        assert any(ax.get_legend() for ax in axes) or figure.legends
    matplotlib.pyplot.close("all")


# --------------------------------------------------------------------------- the display path, in both languages


def test_in_english_the_display_path_says_what_the_crash_lab_says(damage_reports):
    from s09_jsonl_transcript.crashlab.damage_maps import flipped_example
    from s09_jsonl_transcript.crashlab.powerloss import GOOD_OUTCOMES
    from s09_jsonl_transcript.lessons.crash_lab import flip_text, outcome_label

    for chained in (False, True):
        last = len(sample_bytes(integrity=chained)) - 1
        for offset in (0, 30, 200, last):
            assert flip_text(integrity=chained, offset=offset) == flipped_example(integrity=chained, offset=offset)
    assert [outcome_label(outcome) for outcome in GOOD_OUTCOMES] == list(GOOD_OUTCOMES)
    assert outcome_label("acknowledged events 3..4 are missing") == "acknowledged events 3..4 are missing"


def test_the_tables_show_the_campaigns_counts(damage_reports, tmp_path):
    from s09_jsonl_transcript.crashlab import damage_rows, power_loss_campaign
    from s09_jsonl_transcript.crashlab.races import race_campaign
    from s09_jsonl_transcript.lessons.crash_lab import damage_table, one_append_table, power_loss_table, race_table

    def cells(table):
        return [cell for cell in table.data.split("<td style='text-align:left'>")[1:]]

    _, _, rows = one_append_states()
    shown = [int(cell.split("<")[0]) for cell in cells(one_append_table(rows)) if cell.split("<")[0].isdigit()]
    assert sum(shown) == len(rows)
    power = power_loss_campaign(integrity_modes=(False,), every_byte=False)
    table = power_loss_table(power).data
    assert all(f">{count}<" in table for count in power.outcomes.values())
    assert f"{power.states} states ({power.repair_states} crashed during a repair), findings: 0" in table
    table = damage_table(damage_reports).data
    for row in damage_rows(damage_reports):
        assert all(f">{value}<" in table for value in row.values())
    races = race_campaign(racers=2, events=1, root=tmp_path)
    assert race_table(races).data.count(">yes<") == len(races) == 3


@pytest.mark.slow
def test_in_chinese_the_plots_the_widgets_and_every_text_shown_are_chinese(damage_reports, tmp_path):
    from chinese_texts import drawn_texts, has_chinese, in_chinese

    from s09_jsonl_transcript.crashlab.races import race_campaign
    from s09_jsonl_transcript.lessons.crash_lab import (
        damage_table,
        flip_comparison,
        flip_text,
        one_append_table,
        race_table,
    )

    results = kill_campaign(3, seed=2, max_delay=0.0)
    _, record, rows = one_append_states()
    races = race_campaign(racers=2, events=1, root=tmp_path / "races")
    with in_chinese():
        figures = [plot_kill_trials(results), plot_verdict_maps(damage_reports), plot_one_append(record, rows)]
        try:
            for figure in figures:
                shown = drawn_texts(figure)
                assert shown.titles and all(map(has_chinese, shown.titles)), shown.titles
                labels = [label for label in shown.axis_labels if label]
                assert labels and all(map(has_chinese, labels)), labels
                words = [label for label in shown.legend if label not in ("append", "batch", "repair")]
                assert words and all(map(has_chinese, words)), words
            strips = [label for label in drawn_texts(figures[1]).tick_labels if "\n" in label]
            assert len(strips) == 4 and all(map(has_chinese, strips))  # truncate / flip, chain off / on
            fills = [label for label in drawn_texts(figures[2]).tick_labels if has_chinese(label)]
            assert len(fills) == 3  # the three fillings of the rest of a torn write
        finally:
            for figure in figures:
                matplotlib.pyplot.close(figure)

        kills = KillPanel(trials=2, root=tmp_path / "kills")
        for text in (kills.button.description, kills.progress.description, kills.result.value):
            assert has_chinese(text), text
        kills.button.click()
        assert kills.result.value.startswith("<p>第 1 轮：</p>")
        assert "每个已确认的事件都挺过了每一次杀进程" in kills.result.value
        flips = FlipPanel(offset=200)
        for text in (flips.offset.description, flips.chain.description, flips.result.value):
            assert has_chinese(text), text
        assert flips.result.value == "内容被改却照样接受（12 个事件）" == flip_text(integrity=False, offset=200)
        bar, _move = progress_bar("maps")
        texts = [bar.description, kill_verdict(results), flip_comparison(flips, offsets=(30,)),
                 one_append_table(rows).data, damage_table(damage_reports).data, race_table(races).data]
        for text in texts:
            assert has_chinese(text), text
    assert flip_text(integrity=False, offset=200) == "accepted with different content (12 events)"
