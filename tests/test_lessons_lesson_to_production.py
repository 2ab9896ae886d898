"""Notebook 7's helpers and the saved notebook: the measurement and its sanity check, the recovery
plans after a crash inside a turn, the crash lab pressed like a student would, and what was saved
(in both languages: notebooks/en and notebooks/zh, each against the module's text in that language)."""

import json
import random
import re
import statistics
from html import escape
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # a plain pytest module draws off screen

import ipykernel.kernelspec  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import nbformat  # noqa: E402
import pytest  # noqa: E402
from jupyter_client import KernelManager  # noqa: E402
from jupyter_client.kernelspec import KernelSpecManager  # noqa: E402
from nbclient import NotebookClient  # noqa: E402

from s09_jsonl_transcript.lab import DurableTranscript  # noqa: E402
from s09_jsonl_transcript.lessons import lesson_to_production as production  # noqa: E402
from s09_jsonl_transcript.lessons.display import MAIN_CONTROL_CLASS, RESULT_CLASS  # noqa: E402
from s09_jsonl_transcript.production.turns import (  # noqa: E402
    DEPARTURES,
    RERUN,
    RUNNING,
    STATES,
    TRANSITIONS,
    TURNS_SCRIPT,
    audit,
    command_event,
    session_status,
    turn_end_event,
    turn_start_event,
)
from s09_jsonl_transcript.text import i18n, saving  # noqa: E402

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOK_NAME = "beyond-s09/07_lesson_to_production.ipynb"
LANGUAGES = ("en", "zh")
HTML_TAG = re.compile(r"</?(div|table|thead|tbody|tr|td|th|span|b|i|p|br|em|strong|code|pre|ul|li|a)\b[^>]*>",
                      re.IGNORECASE)


def prefix(count):
    """The first count events of TURNS_SCRIPT as a reader returns them (with sequences)."""
    return [{**event, "sequence": number} for number, event in enumerate(TURNS_SCRIPT[:count], 1)]


# --------------------------------------------------------------------------- the sanity check on the measurement


def paired(library, bare):
    return {"append": list(library), "bare": list(bare)}


def test_the_faster_rounds_are_counted_and_said_without_a_verdict():
    """Notebook 7 once plotted append at 249 us against 609 us: a count to show, which no run can make false."""
    rng = random.Random(7)
    samples = paired([249e-6 * rng.uniform(0.9, 1.1) for _ in range(20)],
                     [609e-6 * rng.uniform(0.9, 1.1) for _ in range(20)])
    check = production.library_vs_bare(samples)
    assert (check.rounds, check.faster_rounds) == (20, 20)
    assert "in 20 of 20 rounds" in str(check) and "shown, not checked" in str(check)
    slower = production.library_vs_bare(paired([2.0] * 5 + [0.5], [1.0] * 6))
    assert (slower.rounds, slower.faster_rounds) == (6, 1)
    with pytest.raises(ValueError):
        production.library_vs_bare(paired([], []))


# --------------------------------------------------------------------------- the measurement and its plots


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    folder = tmp_path_factory.mktemp("writes")
    return folder, production.measure_write_costs(folder, rounds=3, batch_sizes=(4, 8), text_bytes=60)


def test_every_measurement_has_one_sample_per_round_from_the_same_run(measured):
    _, samples = measured
    assert set(samples) == {"append", "bare", "write_only", "sqlite_FULL", "sqlite_NORMAL", "batch_4", "batch_8"}
    assert all(len(values) == 3 and all(value > 0 for value in values) for values in samples.values())


def test_the_bare_sides_write_the_very_bytes_the_library_wrote(measured):
    folder, _ = measured
    library = (folder / "append.jsonl").read_bytes().split(b"\n")  # the warm-up line, then one per round
    # Round 1 runs append first, round 2 last (reversed order), round 3 first again: the bare sides
    # write the line append wrote last, which in round 2 is round 1's line.
    expected = [library[1], library[1], library[3], b""]
    assert (folder / "bare.jsonl").read_bytes().split(b"\n") == expected
    assert (folder / "unsynced.jsonl").read_bytes().split(b"\n") == expected
    batches = DurableTranscript(folder / "batches.jsonl").read_events()
    assert len(batches) == 1 + 3 * (4 + 8)  # the warm-up event, then one batch of each size per round


def test_the_plots_draw_the_samples_the_check_and_the_summaries_use(measured):
    _, samples = measured
    figure, (left, right) = plt.subplots(1, 2)
    try:
        production.draw_fsync_cost(left, samples)
        production.draw_pairs(right, samples)
        written = [text.get_text() for text in left.texts]
        assert written == [f"{statistics.median(samples[name]) * 1e6:,.0f}" for name in ("write_only", "bare",
                                                                                           "append")]
        longer = sum(a > b for a, b in zip(samples["append"], samples["bare"]))
        assert f"append took longer in {longer} of 3" in right.get_legend().get_texts()[0].get_text()
        assert production.library_vs_bare(samples).rounds == 3
    finally:
        plt.close(figure)
    summary = production.fsync_summary(samples)
    assert f"{statistics.median(samples['append']) * 1e6:,.1f}" in summary
    assert "the physical limit" not in summary


def test_the_batch_of_one_is_the_append_measurement():
    samples = {"append": [0.001, 0.002, 0.004], "batch_4": [0.0005, 0.0005, 0.001]}
    rates = production.batch_rates(samples)
    assert list(rates) == [1, 4] and rates[1] == [1000.0, 500.0, 250.0]
    lines = production.batching_summary(samples).splitlines()
    assert lines[1].split() == ["1", "500", "1.0", "(in", "proportion:", "1)"]
    assert lines[2].split()[:3] == ["4", "2,000", "4.0"]


def test_the_sqlite_and_read_summaries_are_computed_from_the_medians():
    samples = {"append": [1e-3] * 3, "sqlite_FULL": [2e-3] * 3, "sqlite_NORMAL": [1e-4] * 3}
    assert "append / SQLite FULL: 2.00; SQLite NORMAL / SQLite FULL: 20.0" in production.sqlite_summary(samples)
    costs = {100: {"recover": [1.0, 1.0], "replay": [2.0, 2.0]}, 400: {"recover": [4.0, 4.0], "replay": [2.0, 2.0]}}
    summary = production.reads_summary(costs)
    assert "(4 times the events)" in summary and "4.00 times" in summary and "1.00 times" in summary


def test_the_read_measurement_and_plot(tmp_path):
    costs = production.measure_read_costs(tmp_path, (50, 200), rounds=2, window=20, text_bytes=40)
    assert set(costs) == {50, 200} and all(len(costs[n]["recover"]) == 2 for n in costs)
    figure, axes = plt.subplots()
    try:
        production.draw_reads(axes, costs)
        assert axes.get_title() and axes.get_legend() is not None
    finally:
        plt.close(figure)


def test_the_other_plots_have_titles_labels_and_legends(measured):
    _, samples = measured
    for draw in (production.draw_batching, production.draw_jsonl_vs_sqlite):
        figure, axes = plt.subplots()
        try:
            draw(axes, samples)
            assert axes.get_title() and axes.get_ylabel() and axes.has_data()
        finally:
            plt.close(figure)


# --------------------------------------------------------------------------- recovery plans


# Where TURNS_SCRIPT leaves the session outside a running one: before any marker, after turns 1 and 3
# (complete), 2 (error), the pause in turn 3, turns 4 (user_interrupt), 5 (compaction_trigger) and 6 (expired).
OUTSIDE_A_RUN = (0, 9, 14, 19, 22, 25, 29, 35)


def test_a_plan_outside_a_turn_is_the_state_machines_decision():
    rows = production.crash_points()
    assert [row["events"] for row in rows if row["plan"].state != RUNNING] == list(OUTSIDE_A_RUN)
    for count in OUTSIDE_A_RUN:
        status = session_status(prefix(count))
        plan = production.recovery_plan(prefix(count))
        assert plan.state != RUNNING and plan.action == status.decision and plan.status == status
    assert {row["plan"].state for row in rows} == set(STATES)  # the script reaches every state


def test_an_unfinished_turn_is_resumed_never_re_run():
    for count, row in enumerate(production.crash_points()):
        assert row["events"] == count
        plan = row["plan"]
        assert "re-run" not in plan.action and "run it again" not in plan.action
        if plan.state == RUNNING and plan.status.open_turn is not None and count != 34:  # 34: the turn timed out
            assert plan.action.count("resume turn") == 1 and f"resume turn {plan.status.open_turn}" in plan.action


def test_the_state_machines_decision_and_the_plan_agree_an_open_turn_is_resumed():
    for row in production.crash_points():
        status, plan = row["status"], row["plan"]
        if status.state == RUNNING and status.open_turn is not None:
            assert status.decision == RERUN and RERUN.startswith("resume")
            if row["events"] != 34:  # 34: the turn's turn_timeout is on disk, it is closed instead
                assert f"resume turn {status.open_turn}" in plan.action


def test_a_pending_tool_that_changed_the_world_needs_an_idempotency_key_or_the_user():
    plan = production.recovery_plan(prefix(6))  # write_file called, no result on disk
    assert "write_file (call_2) may have run" in plan.action
    assert "idempotency key" in plan.action and "ask the user" in plan.action and "again" not in plan.action


@pytest.mark.parametrize("count, tool", [(4, "read_file (call_1)"), (12, "run_tests (call_3)"),
                                         (17, "run_tests (call_4)"), (31, "run_tests (call_5)")])
def test_a_pending_tool_that_is_safe_to_repeat_is_run_again(count, tool):
    assert production.recovery_plan(prefix(count)).action.startswith(f"run {tool} again (safe to repeat)")


def test_a_call_whose_tool_timeout_is_on_disk_gets_its_error_result_not_a_second_run():
    assert TURNS_SCRIPT[31]["limit"] == "tool_timeout"  # event 32: call_5 timed out, its result not yet written
    action = production.recovery_plan(prefix(32)).action
    assert action == ("run_tests (call_5) timed out (its tool_timeout is on disk): append its error result, "
                      "resume turn 6")


def test_a_turn_whose_turn_timeout_is_on_disk_gets_its_turn_end_and_the_session_expires():
    assert TURNS_SCRIPT[33]["limit"] == "turn_timeout"  # event 34: turn 6 timed out, its turn_end not yet written
    plan = production.recovery_plan(prefix(34))
    assert plan.state == RUNNING and "append its turn_end (timeout)" in plan.action
    assert "start a new session" in plan.action and "resume" not in plan.action
    assert production.recovery_plan(prefix(35)).state == "expired"  # which is where that turn_end leads


def test_a_run_begun_before_its_turn_starts_that_turn():
    retried = production.recovery_plan(prefix(15))  # the retry_command, no turn_start yet
    assert (retried.state, retried.status.open_turn) == (RUNNING, None)
    assert retried.action == "no turn is open: the retry_command is on disk; start turn 3 (reason retry)"
    asked = [turn_start_event(1), turn_end_event(1, "complete"),
             {"type": "message", "role": "user", "content": "and now?"}]
    asked = [{**event, "sequence": number} for number, event in enumerate(asked, 1)]
    assert production.recovery_plan(asked).action == (
        "no turn is open: the user's message is on disk; start turn 2 to answer it")


def test_every_pending_call_of_the_turn_gets_an_answer():
    events = [turn_start_event(1),
              {"type": "function_call", "callId": "a", "name": "read_file", "arguments": {}},
              {"type": "function_call", "callId": "b", "name": "write_file", "arguments": {}},
              command_event("pause_command"), command_event("resume_command")]
    action = production.recovery_plan([{**e, "sequence": n} for n, e in enumerate(events, 1)]).action
    assert action.startswith("run read_file (a) again (safe to repeat), append its result; write_file (b) may have run")
    assert action.endswith("append the answer, resume turn 1")


@pytest.mark.parametrize("count", [7, 8])
def test_a_tool_that_changed_the_world_and_answered_is_never_repeated(count):
    action = production.recovery_plan(prefix(count)).action
    assert action == "resume turn 1 after its last event; never repeat write_file (call_2): its result is on disk"


def test_an_unknown_tool_is_taken_to_change_the_world():
    events = [{"type": "turn_start", "turn_number": 1, "sequence": 1},
              {"type": "function_call", "callId": "c", "name": "send_payment", "arguments": {}, "sequence": 2}]
    assert "idempotency key" in production.recovery_plan(events).action


# Seed 002's own example, cut after its tool_use: a write that may have happened (issue 20).
SEED_002_CUT = [
    {"type": "turn_start", "timestamp": "2025-01-15T10:30:00.001Z", "uuid": "a1b2", "turn_number": 1,
     "reason": "user_initiated"},
    {"type": "user_message", "timestamp": "2025-01-15T10:30:00.002Z", "uuid": "c3d4",
     "content": "create a Python HTTP server", "role": "user"},
    {"type": "tool_use", "timestamp": "2025-01-15T10:30:02.100Z", "uuid": "e5f6", "tool_name": "write",
     "arguments": {"path": "server.py", "content": "..."}, "parent_message_uuid": "g7h8"},
]


@pytest.mark.parametrize("keep", [2, 3])
def test_an_event_the_kit_does_not_understand_is_never_called_harmless(keep):
    events = [{**event, "sequence": n} for n, event in enumerate(SEED_002_CUT[:keep], 1)]
    plan = production.recovery_plan(events)
    assert "nothing in it changed the world" not in plan.action
    assert "does not understand" in plan.action and "ask the user" in plan.action
    assert SEED_002_CUT[keep - 1]["type"] in plan.action


def test_an_unknown_event_in_a_log_without_markers_is_not_replayed_as_usual():
    events = [{**event, "sequence": n} for n, event in enumerate(SEED_002_CUT[1:], 1)]
    plan = production.recovery_plan(events)
    assert "does not understand" in plan.action and "tool_use" in plan.action


def test_a_newer_schema_event_is_not_understood_either():
    events = prefix(9) + [{"type": "message", "role": "user", "content": "x", "schema_version": 99}]
    events = [*events, {**turn_start_event(2), "sequence": 11}, {**events[-1], "sequence": 12}]
    assert "does not understand" in production.recovery_plan(events).action


def test_a_turn_of_known_events_is_still_said_to_change_nothing():
    assert production.recovery_plan(prefix(2)).action.startswith("resume turn 1: nothing in it changed the world")


def test_the_table_has_one_row_per_run_of_equal_plans_and_covers_every_point():
    rows = production.crash_points()
    html = production.crash_point_table(rows).data
    cells = re.findall(r"<tr><td[^>]*>([^<]*)</td><td[^>]*>[^<]*</td><td[^>]*>[^<]*</td><td[^>]*>([^<]*)</td>", html)
    covered = []
    for span, _ in cells:
        first, _, last = span.partition(" to ")
        covered.extend(range(int(first), int(last or first) + 1))
    assert covered == list(range(len(TURNS_SCRIPT) + 1))
    actions = [action for _, action in cells]
    assert all(a != b for a, b in zip(actions, actions[1:])) and len(cells) < len(rows)


def test_the_transition_and_departure_tables_show_the_library_rows_in_order():
    html = production.transition_table().data
    rows = re.findall(r"<tr><td[^>]*>([^<]*)</td><td[^>]*>([^<]*)</td><td[^>]*>([^<]*)</td></tr>", html)
    assert rows == [(state, trigger, target) for (state, trigger), target in TRANSITIONS.items()]
    departures = production.departures_table().data
    assert departures.count("<tr><td") == len(DEPARTURES)
    for row in DEPARTURES:
        assert all(escape(row[key]) in departures for key in ("topic", "design", "kit", "why"))


def test_every_departure_text_has_its_translation_and_no_other():
    """departure_texts lists each text of turns.DEPARTURES once: a row changed there must be translated here too."""
    texts = {row[key] for row in DEPARTURES for key in ("topic", "design", "kit", "why")}
    said = production.departure_texts()
    assert set(said) == texts and all(said[text] == text for text in texts)  # English: the library's own words


# ---------------------------------------------------------------------- the crash lab, pressed as a student would

ORDER = [7, 7, 6, 0, 35, 19, 32, 15, 7]  # the same point twice, then back and forth


@pytest.mark.slow
def test_the_main_control_works_pressed_many_times_in_any_order(tmp_path):
    lab = production.CrashLab(folder=tmp_path)
    assert MAIN_CONTROL_CLASS in lab.button._dom_classes and RESULT_CLASS in lab.result._dom_classes
    shown = [lab.result.value]
    for number, point in enumerate(ORDER, start=1):
        lab.point.value = point
        lab.button.click()
        expected = production.recovery_plan(prefix(point))
        assert lab.crashes == number
        assert lab.summary == production.crash_text(number, point, expected)
        assert lab.result.value == production.crash_html(number, point, expected) != shown[-1]
        assert DurableTranscript(tmp_path / "crash-lab.jsonl").count_lines() == point  # a real writer, killed there
        shown.append(lab.result.value)


def test_the_crash_text_is_plain_and_the_html_escaped():
    plan = production.recovery_plan(prefix(6))
    assert not HTML_TAG.search(production.crash_text(1, 6, plan))
    assert production.crash_html(1, 6, plan).count("<b>") == 3


@pytest.mark.parametrize("count", [6, 7])
def test_a_real_crash_gets_the_plan_of_its_folded_prefix(tmp_path, count):
    plan = production.crash_and_plan(tmp_path / "killed.jsonl", count)
    assert plan == production.crash_points()[count]["plan"]
    assert production.crash_and_recover(tmp_path / "killed.jsonl", count) == plan.status


# --------------------------------------------------------------------------- the saved notebook


@pytest.fixture(params=LANGUAGES)
def language(request):
    """The language of the saved notebook a test reads; the module speaks it too. English again afterwards."""
    i18n.use(request.param)
    yield request.param
    i18n.use("en")


def saved(language):
    return json.loads((NOTEBOOKS / language / NOTEBOOK_NAME).read_text(encoding="utf-8"))


def code_cells(notebook):
    return [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]


def text_outputs(cell):
    """The outputs a reader sees as text: streams and text/plain."""
    for output in cell["outputs"]:
        if output["output_type"] == "stream":
            yield "".join(output["text"])
        elif "text/plain" in output.get("data", {}):
            yield "".join(output["data"]["text/plain"])


def test_no_output_prints_raw_html_as_text(language):
    for number, cell in enumerate(code_cells(saved(language)), start=1):
        for text in text_outputs(cell):
            assert not HTML_TAG.search(text), f"code cell {number} prints HTML markup as text: {text[:120]!r}"


def widget_states(notebook):
    states = notebook["metadata"]["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    return {model_id: model["state"] for model_id, model in states.items()}


def test_the_saved_widget_agrees_with_the_output_it_produced(language):
    notebook = saved(language)
    states = widget_states(notebook)
    label = production.CrashLab().point.description  # "crash after", in the notebook's language
    slider = next(s for s in states.values() if s.get("description") == label)
    result = next(s for s in states.values() if RESULT_CLASS in s.get("_dom_classes", []))
    point = slider["value"]
    plan = production.recovery_plan(prefix(point))
    assert result["value"] == production.crash_html(1, point, plan)  # pressed once, at the slider's value
    cells = code_cells(notebook)
    widget_cell = next(cell for cell in cells if "lab.view" in "".join(cell["source"]))
    assert f"lab.point.value = {point}" in "".join(widget_cell["source"])
    assert f"IntSlider(value={point}," in "".join(text_outputs(widget_cell))
    view_id = next(o["data"]["application/vnd.jupyter.widget-view+json"]["model_id"] for o in widget_cell["outputs"]
                   if "application/vnd.jupyter.widget-view+json" in o.get("data", {}))
    assert view_id in states
    later = cells[cells.index(widget_cell) + 1:]
    assert not any("lab.point" in "".join(cell["source"]) or "click" in "".join(cell["source"]) for cell in later)
    summary = next(cell for cell in later if "lab.summary" in "".join(cell["source"]))
    assert "".join(text_outputs(summary)).strip() == production.crash_text(1, point, plan)


def test_the_timing_cells_are_saved_with_their_verdicts_only_and_the_system_call_check_is_checked(language):
    """A timing can come out either way on a loaded machine: no cell asserts on one (issue 30). Each plot's cell
    is machine-dependent (saving.py): saved with one verdict line, the side that holds on any machine; its plot,
    its numbers and the count of rounds append came out ahead are shown live only."""
    cells = code_cells(saved(language))
    timing = [cell for cell in cells if "production.draw_" in "".join(cell["source"])]
    verdicts = [production.fsync_verdict, production.batching_verdict, production.reads_verdict,
                production.sqlite_verdict]
    assert len(timing) == len(verdicts)
    for cell, verdict in zip(timing, verdicts):
        source = "".join(cell["source"])
        assert saving.MACHINE_DEPENDENT in cell["metadata"]["tags"] and "assert" not in source
        assert f"print(production.{verdict.__name__}(" in source.splitlines()[-1]
        (shown,) = text_outputs(cell)
        assert shown.startswith(saving.HOLDS) and shown.count("\n") == 1 and not re.search(r"\d\.\d", shown)
    (count,) = [cell for cell in cells if "library_vs_bare" in "".join(cell["source"])]
    assert count in timing
    calls = next(cell for cell in cells if "system_calls_of(" in "".join(cell["source"]))
    assert saving.MACHINE_DEPENDENT not in calls["metadata"].get("tags", [])  # deterministic: nbval compares it
    assert "[('os.write', " in "".join(text_outputs(calls)) and "('os.fsync',)]" in "".join(text_outputs(calls))
    assert not any("cleanup(" in "".join(cell["source"]) for cell in cells)


def rounds(**sides):
    """Samples of a few sides over the same rounds, in seconds."""
    return {name: list(values) for name, values in sides.items()}


def test_each_verdict_says_a_side_and_can_fail():
    fsync = rounds(bare=[5e-5, 6e-5, 1e-6], write_only=[2e-6, 2e-6, 2e-6])  # longer in 2 of 3 rounds
    assert production.fsync_verdict(fsync).startswith(saving.HOLDS + "fsync costs more than a bare write")
    fsync["bare"][1] = 1e-6  # now in 1 of 3
    assert production.fsync_verdict(fsync).startswith(saving.FAILS)
    batches = rounds(append=[6e-5, 6e-5], batch_4=[1e-3, 1e-3], batch_16=[2e-5, 2e-5])  # the largest batch counts
    assert production.batching_verdict(batches) == saving.HOLDS + (
        "a batch shares its fsync: an event in a batch of 16 cost less than a single append in most rounds")
    batches["batch_16"] = [1e-4, 1e-5]  # cheaper in 1 of 2 rounds: not most
    assert production.batching_verdict(batches).startswith(saving.FAILS)
    reads = {1000: {"recover": [1.0], "replay": [1.0]}, 16000: {"recover": [8.0], "replay": [1.1]}}
    assert production.reads_verdict(reads) == saving.HOLDS + (
        "recover() slowed down more than replay(1000) as the transcript grew from 1,000 to 16,000 events")
    reads[16000]["replay"] = [9.0]
    assert production.reads_verdict(reads).startswith(saving.FAILS)
    for ratio, holds in ((0.7, True), (2.9, True), (3.1, False), (0.3, False)):
        sqlite = rounds(append=[ratio * 1e-4] * 3, sqlite_FULL=[1e-4] * 3)
        assert production.sqlite_verdict(sqlite).startswith(saving.HOLDS if holds else saving.FAILS), ratio


def test_the_saved_read_model_keeps_the_renamed_title_through_a_rebuild(language):
    cells = code_cells(saved(language))
    rebuilt = next(cell for cell in cells if "index.db_path.unlink()" in "".join(cell["source"]))
    shown = "".join(text_outputs(rebuilt))
    assert shown.rstrip().endswith(production.rebuild_text(same_rows=True, title_survived=True))
    assert "notes/chat  Why append-only?" in shown  # the JSONL scan shows it too, before the sync


def run_cell(client, notebook, source):
    cell = nbformat.v4.new_code_cell(source)
    notebook.cells.append(cell)
    client.execute_cell(cell, len(notebook.cells) - 1)
    return "".join(output.get("text", "") for output in cell.outputs if output["output_type"] == "stream")


class ThisEnvironment(KernelSpecManager):
    """The kernel of the interpreter running the tests, as nbval's --nbval-current-env starts it."""

    def get_kernel_spec(self, kernel_name):
        return self.kernel_spec_class(resource_dir=ipykernel.kernelspec.RESOURCES,
                                      **ipykernel.kernelspec.get_kernel_dict())


@pytest.mark.slow
def test_cells_run_again_after_run_all_and_the_folder_goes_when_the_kernel_stops(language):
    path = NOTEBOOKS / language / NOTEBOOK_NAME
    notebook = nbformat.read(path, as_version=4)
    # Deadlines that only bound a hang: a loaded machine starts a kernel and runs a cell well within them.
    # shutdown_wait_time is how long a polite shutdown may take before the kernel is killed (default 5 s):
    # a killed kernel runs no atexit, so a short one would leave the folder this test says goes.
    kernel = KernelManager(kernel_name="this-environment", kernel_spec_manager=ThisEnvironment(),
                           shutdown_wait_time=120)
    # coalesce_streams: a busy kernel may send one print in pieces; the rerun is compared as a reader sees it
    client = NotebookClient(notebook, km=kernel, timeout=600, startup_timeout=300, coalesce_streams=True,
                            resources={"metadata": {"path": str(path.parent)}})
    with client.setup_kernel():
        for index, cell in enumerate(list(notebook.cells)):
            if cell.cell_type == "code":
                client.execute_cell(cell, index)
        folder = Path(run_cell(client, notebook, "print(folder)").strip())
        assert folder.is_dir()
        audit_cell = next(c for c in notebook.cells if c.cell_type == "code" and "audit(events)" in c.source)
        first = [dict(output) for output in audit_cell.outputs]
        client.execute_cell(audit_cell, notebook.cells.index(audit_cell))  # run it again after Run All
        assert [dict(output) for output in audit_cell.outputs] == first
        written = DurableTranscript(folder / "root" / "projects" / "calc" / "with-turns.jsonl").read_events()
        expected = production.audit_text(audit(written))  # in the notebook's language
        assert expected.startswith(("6 turns ended", "共结束 6 个 turn"))
        assert run_cell(client, notebook, audit_cell.source).strip() == expected
        second = run_cell(client, notebook, "lab.point.value = 6\nlab.button.click()\nprint(lab.summary)")
        assert second.strip() == production.crash_text(2, 6, production.recovery_plan(prefix(6)))
    if kernel.is_alive():
        kernel.shutdown_kernel()  # a polite shutdown: the kernel exits as it does when a student stops it
    assert not folder.exists(), "the notebook's folder outlived its kernel"

