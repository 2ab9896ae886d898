"""Notebook 2's helpers: real SIGKILLed agents, the simulated crash, the repair, the plots and the widgets."""

import matplotlib

matplotlib.use("Agg")  # plain pytest module: no display, no inline backend

import json
import threading

import pytest
from matplotlib.figure import Figure

from s09_jsonl_transcript import damage
from s09_jsonl_transcript.code import MockLLM, run_agent, ticking_clock
from s09_jsonl_transcript.crashlab import KillTrial
from s09_jsonl_transcript.lab import DurableTranscript, simulate_agent_crash
from s09_jsonl_transcript.lessons.crash_injection import (
    KILL_POINTS,
    SIGKILL_AVAILABLE,
    CampaignPanel,
    CrashPanel,
    CrashReport,
    campaign_skipped_text,
    campaign_summary,
    crash_and_recover,
    describe_crash,
    disk_listing,
    draw_campaign,
    draw_crash,
    intended_record,
    is_plain_data,
    kill_mode_text,
    new_record_text,
    partial_tail_vs_record,
    plain_data_text,
    rebuilt_state_rows,
    rebuilt_state_table,
)
from s09_jsonl_transcript.lessons.display import MAIN_CONTROL_CLASS, RESULT_CLASS

needs_sigkill = pytest.mark.skipif(not SIGKILL_AVAILABLE, reason="kills a real process with SIGKILL (POSIX)")


def complete_sequences(path):
    """Sequences read by the validated reader, independently of the report under test."""
    return [event["sequence"] for event in DurableTranscript(path).read_events()]


@needs_sigkill
@pytest.mark.parametrize("kill_after", [1, 6, KILL_POINTS.stop - 1])
def test_a_killed_agent_keeps_every_acknowledged_event(tmp_path, kill_after):
    path = tmp_path / "crash.jsonl"
    report = crash_and_recover(path, kill_after, tear=False)
    assert report.real_kill
    assert report.acknowledged == tuple(range(1, kill_after + 1))
    assert report.recovered == report.acknowledged == tuple(complete_sequences(path))
    assert report.partial_tail == b"" and path.read_bytes().endswith(b"\n")
    assert report.lost == () and report.verdict.startswith("nothing acknowledged was lost")
    assert damage.verdict(path).kind == damage.CLEAN


@needs_sigkill
def test_a_kill_mid_record_leaves_a_partial_tail_that_replay_ignores(tmp_path):
    path = tmp_path / "crash.jsonl"
    report = crash_and_recover(path, 5, tear=True)
    data = path.read_bytes()
    assert report.partial_tail and data.endswith(report.partial_tail) and not data.endswith(b"\n")
    assert report.complete_lines == data.count(b"\n") == 5
    assert report.recovered == report.acknowledged == (1, 2, 3, 4, 5)
    assert damage.verdict(path).kind == damage.PARTIAL_TAIL


@needs_sigkill
def test_the_partial_tail_is_the_first_half_of_the_enveloped_record_append_was_writing(tmp_path):
    path = tmp_path / "crash.jsonl"
    report = crash_and_recover(path, 8, tear=True)
    whole = intended_record(path, 9)
    assert report.partial_tail == whole[: len(whole) // 2]
    assert report.partial_tail.startswith(b'{"schema_version":1,"sequence":9,"event_id":"transcript:crash:9"')
    assert json.loads(whole)["type"] == MockLLM().script[8]["type"]


@needs_sigkill
def test_the_same_crash_writes_the_same_bytes_every_time(tmp_path):
    first, second = tmp_path / "a" / "crash.jsonl", tmp_path / "b" / "crash.jsonl"
    for path in (first, second):
        path.parent.mkdir()
        crash_and_recover(path, 6, tear=True)
    assert first.read_bytes() == second.read_bytes()


def test_intended_record_is_the_line_the_agent_loop_writes(tmp_path):
    path = tmp_path / "session.jsonl"
    with DurableTranscript(path, clock=ticking_clock()) as transcript:
        run_agent(transcript, MockLLM())
    lines = path.read_bytes().splitlines(keepends=True)
    assert [intended_record(tmp_path / "elsewhere" / "session.jsonl", n) for n in (1, 12)] == [lines[0], lines[11]]


def test_the_rebuilt_state_is_plain_data_and_every_field_is_listed(tmp_path):
    path = tmp_path / "simulated.jsonl"
    simulate_agent_crash(path, 8, tear=True)
    state = DurableTranscript(path).replay_state()
    rows = rebuilt_state_rows(state)
    assert [row[0] for row in rows] == list(vars(state)) and all(row[3] for row in rows)
    assert dict((row[0], row[2]) for row in rows)["pending_calls"] == "['call_2']"
    assert is_plain_data(vars(state))


def test_plain_data_check_can_fail():
    assert not is_plain_data({"client": object()})
    assert not is_plain_data([threading.Lock()])
    assert not is_plain_data({1: "a key that is not a string"})
    assert is_plain_data({"a": [1, 2.5, None, True, "x", {"b": []}]})


@needs_sigkill
def test_pending_tool_calls_are_the_ones_the_dead_agent_never_answered(tmp_path):
    script = MockLLM().script
    report = crash_and_recover(tmp_path / "crash.jsonl", 4, tear=False)
    assert script[3]["type"] == "function_call"  # the fourth event asks for a tool and dies waiting
    assert report.pending_calls == (script[3]["callId"],)


def test_the_simulated_crash_leaves_the_same_kind_of_file(tmp_path):
    path = tmp_path / "simulated.jsonl"
    acknowledged = simulate_agent_crash(path, 5, tear=True)
    assert acknowledged == [1, 2, 3, 4, 5] == complete_sequences(path)
    assert damage.verdict(path).kind == damage.PARTIAL_TAIL
    with DurableTranscript(path) as writer:  # the "dead" writer let go of the lock
        assert writer.append({"type": "message", "role": "user", "content": "again"})["sequence"] == 6


def test_the_next_append_cuts_off_the_partial_tail(tmp_path):
    path = tmp_path / "simulated.jsonl"
    simulate_agent_crash(path, 3, tear=True)
    fragment = path.read_bytes()[path.read_bytes().rfind(b"\n") + 1:]
    with DurableTranscript(path, clock=ticking_clock()) as transcript:  # the replacement agent's first append
        envelope = transcript.append({"type": "message", "role": "user", "content": "Please go on."})
    assert envelope["sequence"] == 4 and envelope["event_id"] == "transcript:simulated:4"
    assert fragment not in path.read_bytes() and path.read_bytes().endswith(b"\n")
    assert damage.verdict(path).kind == damage.CLEAN
    assert complete_sequences(path) == [1, 2, 3, 4]


def test_crash_and_recover_wants_a_new_file(tmp_path):
    path = tmp_path / "crash.jsonl"
    path.write_bytes(b"")
    with pytest.raises(FileExistsError, match="new file"):
        crash_and_recover(path, 3)


@pytest.mark.parametrize("kill_after", [0, KILL_POINTS.stop, -1, 2.5, "3", True])
def test_crash_and_recover_refuses_kill_points_outside_the_script(tmp_path, kill_after):
    with pytest.raises(ValueError, match="kill_after must be"):
        crash_and_recover(tmp_path / "crash.jsonl", kill_after)
    assert not (tmp_path / "crash.jsonl").exists()


def report_with(acknowledged, recovered, complete_lines, fragment=b""):
    return CrashReport("crash.jsonl", len(acknowledged), True, tuple(acknowledged), complete_lines, fragment,
                       tuple(recovered), 0, ())


def test_a_report_names_acknowledged_events_that_were_lost():
    report = report_with([1, 2, 3], [1, 2], 2)
    assert report.lost == (3,) and report.verdict.startswith("LOST")


def test_disk_listing_shows_each_complete_line_and_the_partial_tail(tmp_path):
    path = tmp_path / "simulated.jsonl"
    simulate_agent_crash(path, 2, tear=True)
    rows = disk_listing(path).splitlines()
    fragment = path.read_bytes().split(b"\n")[-1]
    assert len(rows) == 3 and "sequence  2" in rows[1]
    assert rows[2].startswith("line  3  partial tail") and f"{len(fragment)} bytes" in rows[2]


def test_crash_plot_draws_one_box_per_event_on_each_side_and_the_fragment():
    fig = draw_crash(Figure(), report_with([1, 2, 3], [1, 2], 3, fragment=b'{"ty'))
    ax = fig.axes[0]
    solid = [bar for bar in ax.patches if not bar.get_hatch()]
    tail = [bar for bar in ax.patches if bar.get_hatch()]
    rows = [round(bar.get_y() + bar.get_height() / 2) for bar in solid]
    assert (rows.count(0), rows.count(1), rows.count(2)) == (3, 3, 2)
    assert len(tail) == 1 and round(tail[0].get_x() + tail[0].get_width() / 2) == 4
    assert [tuple(point) for point in ax.collections[0].get_offsets()] == [(3, 2)]  # the lost event
    assert ax.get_title() and ax.get_xlabel() and ax.get_legend() is not None


def test_crash_plot_without_a_partial_tail_has_no_hatched_box():
    fig = draw_crash(Figure(), report_with([1, 2], [1, 2], 2))
    assert not [bar for bar in fig.axes[0].patches if bar.get_hatch()]


@needs_sigkill
def test_crash_panel_crashes_a_new_agent_at_the_slider_point(tmp_path):
    panel = CrashPanel(tmp_path)
    assert MAIN_CONTROL_CLASS in panel.crash_button._dom_classes and RESULT_CLASS in panel.result._dom_classes
    before = panel.result.value
    panel.slider.value = 7
    panel.crash_button.click()
    first = tmp_path / "crash-1.jsonl"
    assert complete_sequences(first) == list(range(1, 8))
    assert panel.result.value != before and "nothing acknowledged was lost (7 of 7" in panel.result.value
    assert bytes(panel.plot.value).startswith(b"\x89PNG")
    panel.tear.value = False
    panel.slider.value = 2
    panel.crash_button.click()
    second = tmp_path / "crash-2.jsonl"
    assert complete_sequences(second) == [1, 2] and second.read_bytes().endswith(b"\n")
    assert "(2 of 2" in panel.result.value and "partial tail:           none" in panel.result.value


def trial(number, acknowledged, recovered, lost=0):
    return KillTrial(trial=number, mode="append", acknowledged=acknowledged, recovered=recovered, lost=lost,
                     duplicated=0, verdict=damage.CLEAN)


def test_campaign_summary_reports_a_lost_event():
    assert campaign_summary([trial(0, 5, 5), trial(1, 7, 8)]).endswith("every kill: True")
    summary = campaign_summary([trial(0, 5, 5), trial(1, 7, 6, lost=1)])
    assert summary.endswith("every kill: False")
    header, append_row = summary.splitlines()[:2]
    assert append_row.split()[header.split().index("lost")] == "1"


def test_campaign_plot_draws_both_bars_per_trial_and_counts_the_lost():
    trials = [trial(0, 5, 5), trial(1, 7, 6, lost=1)]
    ax = draw_campaign(Figure(), trials).axes[0]
    assert [round(bar.get_height()) for bar in ax.patches] == [5, 7, 5, 6]
    assert [tuple(point) for point in ax.lines[0].get_xydata()] == [(1, 1)]  # a cross only where a loss was
    assert ax.get_title().endswith("= 1") and ax.get_legend() is not None
    assert not any("no trial lost" in text.get_text() for text in ax.texts)


def test_campaign_plot_says_so_when_nothing_was_lost():
    ax = draw_campaign(Figure(), [trial(0, 5, 5), trial(1, 7, 8)]).axes[0]
    assert len(ax.lines[0].get_xydata()) == 0
    assert any("no trial lost" in text.get_text() for text in ax.texts)


@needs_sigkill
def test_campaign_panel_runs_real_kills_and_moves_its_progress_bar():
    panel = CampaignPanel(trials=3, seed=1)
    panel.run_button.click()
    assert panel.progress.value == panel.progress.max == 3
    assert len(panel.results) == 3 and all(result.ok for result in panel.results)
    assert "every kill: True" in panel.summary.value and not panel.run_button.disabled


# --------------------------------------------------------------------------- the texts notebook 2 prints


def test_the_report_lines_up_its_values_and_says_what_survived():
    report = report_with([1, 2, 3], [1, 2, 3], 3, fragment=b'{"ty')
    lines = describe_crash(report).splitlines()
    assert lines[0] == "crash:                  SIGKILL to a real child process, after 3 acknowledged appends"
    assert {line.index(line.split(":", 1)[1].strip()) for line in lines} == {24}  # one column for the values
    assert "partial tail:           4 bytes, never acknowledged" in lines
    assert lines[-1] == "verdict:                nothing acknowledged was lost (3 of 3 recovered)"
    assert "partial tail:           none" in describe_crash(report_with([1], [1], 1))


def test_the_partial_tail_is_set_beside_the_whole_record():
    whole = b'{"sequence":6,"type":"message"}\n'
    report = report_with([1], [1], 1, fragment=whole[:16])
    lines = partial_tail_vs_record(report, whole, 6).splitlines()
    assert lines[0] == f"event 6 as append encodes it: {len(whole)} bytes; on disk: 16 bytes"
    assert lines[1] == "the partial tail is its first half: True"
    assert lines[2] == f"the half that never reached the file: {whole[16:]}"
    other = report_with([1], [1], 1, fragment=whole[:10])
    assert partial_tail_vs_record(other, whole, 6).splitlines()[1].endswith("False")


def test_small_texts_of_notebook_2(tmp_path):
    assert kill_mode_text().startswith("SIGKILL is available" if SIGKILL_AVAILABLE else "No SIGKILL")
    assert campaign_skipped_text() == "Skipped: the kill campaign needs SIGKILL."
    path = tmp_path / "simulated.jsonl"
    simulate_agent_crash(path, 3, tear=True)
    state = DurableTranscript(path).replay_state()
    assert plain_data_text(state) == "every value is plain data read from the file: True"
    table = rebuilt_state_table(state).data
    assert "what it is" in table and "the sequence the next append will take" in table
    with DurableTranscript(path, clock=ticking_clock()) as transcript:
        record = transcript.append({"type": "message", "role": "user", "content": "Please go on."})
    assert new_record_text(record) == "new record: sequence 4, event_id transcript:simulated:4"
