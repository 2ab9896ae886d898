"""The benchmark machinery at small sizes: synthetic transcripts, fair baselines, figures, the command."""

import json
import math
import os
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from s09_jsonl_transcript import bench
from s09_jsonl_transcript.code import TYPE_FUNCTION_CALL, TYPE_FUNCTION_CALL_RESULT, TYPE_MESSAGE, TYPE_REASONING
from s09_jsonl_transcript.lab import RESERVED_FIELDS, DurableTranscript


def payload(record):
    return {key: value for key, value in record.items() if key not in RESERVED_FIELDS}


# --------------------------------------------------------------------------- synthetic transcripts


def test_synthetic_events_cycle_through_the_kinds_replay_folds():
    kinds = [(e["type"], e.get("role")) for e in (bench.synthetic_event(n, 50) for n in range(5))]
    assert kinds == [(TYPE_MESSAGE, "user"), (TYPE_REASONING, None), (TYPE_FUNCTION_CALL, None),
                     (TYPE_FUNCTION_CALL_RESULT, None), (TYPE_MESSAGE, "assistant")]
    call, result = bench.synthetic_event(7, 50), bench.synthetic_event(8, 50)
    assert call["callId"] == result["callId"] != bench.synthetic_event(12, 50)["callId"]


@pytest.mark.parametrize("text_bytes", [1, 900, bench.MAX_TEXT_BYTES])
def test_a_synthetic_event_carries_the_text_length_asked_for(text_bytes):
    for n in range(5):
        event = bench.synthetic_event(n, text_bytes)
        text = event.get("content") or event.get("output") or event["arguments"]["pattern"]
        assert len(text) == text_bytes


@pytest.mark.parametrize("text_bytes", [0, -5, bench.MAX_TEXT_BYTES + 1])
def test_a_bad_text_length_is_refused(text_bytes):
    with pytest.raises(ValueError, match="text_bytes"):
        bench.synthetic_event(0, text_bytes)


def test_a_bulk_written_transcript_passes_the_readers_validation(tmp_path):
    path = tmp_path / "bulk.jsonl"
    size = bench.write_bulk_transcript(path, 25, 120, chunk=7)  # chunks that do not divide the count
    assert size == path.stat().st_size
    events = DurableTranscript(path).read_events()
    assert [event["sequence"] for event in events] == list(range(1, 26))
    assert [payload(event) for event in events] == [bench.synthetic_event(n, 120) for n in range(25)]
    assert DurableTranscript(path).replay_state(10).total_events == 25
    with DurableTranscript(path) as writer:  # a later writer carries on where the bulk writer stopped
        assert writer.append({"type": TYPE_MESSAGE, "role": "user", "content": "next"})["sequence"] == 26


def test_the_bulk_writer_never_touches_an_existing_file(tmp_path):
    path = tmp_path / "bulk.jsonl"
    path.write_bytes(b"precious\n")
    with pytest.raises(FileExistsError):
        bench.write_bulk_transcript(path, 3, 10)
    assert path.read_bytes() == b"precious\n"


# --------------------------------------------------------------------------- measuring


def test_interleaved_alternates_the_measurements_and_keeps_every_sample():
    calls = []

    def measure(name, seconds):
        def run():
            calls.append(name)
            return seconds
        return run

    samples = bench.interleaved({"a": measure("a", 1.0), "b": measure("b", 2.0)}, 3)
    assert calls == ["a", "b", "a", "b", "a", "b"]
    assert samples == {"a": [1.0, 1.0, 1.0], "b": [2.0, 2.0, 2.0]}
    with pytest.raises(ValueError):
        bench.interleaved({"a": measure("a", 1.0)}, 0)
    calls.clear()
    samples = bench.interleaved({"a": measure("a", 1.0), "b": measure("b", 2.0), "c": measure("c", 3.0)}, 3,
                                alternate=True)
    assert calls == ["a", "b", "c", "c", "b", "a", "a", "b", "c"]
    assert samples == {"a": [1.0] * 3, "b": [2.0] * 3, "c": [3.0] * 3}


def test_paired_ratio_is_the_median_of_ratios_within_rounds():
    samples = {"a": [1.0, 4.0, 9.0], "b": [2.0, 2.0, 3.0]}  # ratios 0.5, 2, 3
    assert bench.paired_ratio(samples, "a", "b") == 2.0
    assert bench.medians(samples) == {"a": 4.0, "b": 2.0}


def without_time(line: bytes) -> dict:
    record = json.loads(line)
    record.pop("recorded_at")
    return record


def test_the_bare_baseline_and_sqlite_write_the_lines_append_wrote_for_each_event(tmp_path):
    samples = bench.single_write_costs(tmp_path, rounds=2, per_round=4, text_bytes=80, sqlite_modes=("FULL", "NORMAL"))
    assert set(samples) == {"append", "lesson_append", "bare", "fsync", "plain_writer", "write_only",
                            "sqlite_FULL", "sqlite_NORMAL", "checked", "unchecked", "checked_work", "unchecked_work"}
    assert all(len(values) == 2 and all(value > 0 for value in values) for values in samples.values())
    for side in ("checked", "unchecked"):  # issue 43's pair: each side's work is its time less its fsync's
        assert all(0 < work < whole for work, whole in zip(samples[f"{side}_work"], samples[side]))
        assert len((tmp_path / f"single-{side}.jsonl").read_bytes().splitlines()) == 4 * 3
    assert all(sync < bare for sync, bare in zip(samples["fsync"], samples["bare"]))  # the fsync is inside "bare"
    appended = (tmp_path / "single-append.jsonl").read_bytes().splitlines(keepends=True)
    assert len(appended) == 4 * 3  # the warm-up round and two measured rounds
    # each side writes, for each event, the line append last wrote for it: this round's or the round before's
    for name in ("single-bare.jsonl", "single-unsynced.jsonl"):
        lines = (tmp_path / name).read_bytes().splitlines(keepends=True)
        assert len(lines) == 8
        for number, line in enumerate(lines):
            round_number, index = divmod(number, 4)
            assert line in (appended[4 * (round_number + 1) + index], appended[4 * round_number + index])
    plain = (tmp_path / "single-plain.jsonl").read_bytes().splitlines(keepends=True)
    assert [without_time(line) for line in plain] == [without_time(line) for line in appended[4:]]
    assert all(line.endswith(b"\n") for line in plain)
    lesson = [json.loads(line) for line in (tmp_path / "single-lesson.jsonl").read_bytes().splitlines()]
    assert len(lesson) == 4 * 3
    for mode in ("FULL", "NORMAL"):
        with sqlite3.connect(tmp_path / f"single-{mode}.sqlite3") as connection:
            records = [row[0].encode() for row in connection.execute("SELECT record FROM events ORDER BY sequence")]
        assert [payload(json.loads(line)) for line in records] == [payload(json.loads(line)) for line in appended[4:]]


def test_the_sides_of_figure_one_take_turns_for_every_event(tmp_path, monkeypatch):
    order = []
    real_append, real_write = DurableTranscript.append, bench.BareLog.write
    monkeypatch.setattr(DurableTranscript, "append", lambda self, item: order.append("lab") or real_append(self, item))
    monkeypatch.setattr(bench.BareLog, "write", lambda self, line: order.append("bare") or real_write(self, line))
    bench.single_write_costs(tmp_path, rounds=1, per_round=4, text_bytes=20, sqlite_modes=())
    measured = order[12:]  # after the warm-up's four appends of each of the three lab sides
    # per event: the lab's append, issue 43's checked and unchecked appends, bare, plain writer, write_only
    events = [measured[6 * index:6 * index + 6] for index in range(4)]
    assert all(sorted(calls) == ["bare"] * 3 + ["lab"] * 3 for calls in events) and len(measured) == 24
    assert len({calls.index("lab") for calls in events}) > 1  # the lab is not always first, nor always last


def test_the_batch_baselines_write_the_batches_bytes(tmp_path):
    samples = bench.batch_costs(tmp_path, rounds=2, batch_size=10, singles_per_round=3, text_bytes=50)
    assert set(samples) == {"append_batch", "dumps_batch", "bare", "append"}
    assert all(len(values) == 2 and all(value > 0 for value in values) for values in samples.values())
    batched = (tmp_path / "batch-append.jsonl").read_bytes().split(b"\n")[:-1]
    bare = (tmp_path / "batch-bare.jsonl").read_bytes().split(b"\n")[:-1]
    peer = (tmp_path / "batch-dumps.jsonl").read_bytes().split(b"\n")[:-1]
    assert len(batched) == 30  # the warm-up batch, then one batch per round
    assert bare == batched[10:20] * 2  # the second round runs in reverse: the bare loop before append_batch
    # the fair peer writes the lab's bytes: the same envelope, the same separators; only the time differs
    assert [without_time(line) for line in peer] == [without_time(line) for line in batched[10:]]
    assert [len(line) for line in peer] == [len(line) for line in batched[10:]]


def test_each_side_of_the_batch_figure_syncs_once_per_batch(tmp_path, monkeypatch):
    """The fair peer and append_batch: one write and one fsync per batch; the bare loop: one write per line."""
    writes, syncs = Counter(), Counter()
    real_write, real_fsync = os.write, os.fsync

    def name_of(fd):
        return Path(os.readlink(f"/proc/self/fd/{fd}")).name

    def counting_write(fd, data):
        writes[name_of(fd)] += 1
        return real_write(fd, data)

    def counting_fsync(fd):
        syncs[name_of(fd)] += 1
        return real_fsync(fd)

    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc/self/fd to name a descriptor's file")
    monkeypatch.setattr(os, "write", counting_write)
    monkeypatch.setattr(os, "fsync", counting_fsync)
    bench.batch_costs(tmp_path, rounds=3, batch_size=10, singles_per_round=2, text_bytes=50)
    assert (writes["batch-dumps.jsonl"], syncs["batch-dumps.jsonl"]) == (3, 3)
    assert (writes["batch-append.jsonl"], syncs["batch-append.jsonl"]) == (4, 4)  # the warm-up batch too
    assert (writes["batch-bare.jsonl"], syncs["batch-bare.jsonl"]) == (30, 3)
    assert (writes["batch-single.jsonl"], syncs["batch-single.jsonl"]) == (7, 7)  # one warm-up append, then 2 a round


def test_replay_costs_and_memory_probe_read_real_transcripts(tmp_path):
    big, small = tmp_path / "big.jsonl", tmp_path / "small.jsonl"
    bench.write_bulk_transcript(big, 600, 100)
    bench.write_bulk_transcript(small, 60, 100)
    samples = bench.replay_costs({"big": big, "small": small}, rounds=2, window=50)
    assert set(samples) == {"big", "small"} and all(len(v) == 2 for v in samples.values())
    memory = bench.replay_peak_memory(big, 50)
    assert memory["messages"] == len(DurableTranscript(big).replay(50))
    assert memory["peak_bytes"] >= memory["baseline_bytes"] > 0


def test_open_and_append_grows_the_big_file_and_restarts_the_empty_one(tmp_path):
    big = tmp_path / "big.jsonl"
    bench.write_bulk_transcript(big, 40, 30)
    bench.open_and_append_costs(big, tmp_path / "empty.jsonl", rounds=3, text_bytes=30)
    assert DurableTranscript(big).count_lines() == 43
    assert [e["sequence"] for e in DurableTranscript(tmp_path / "empty.jsonl").read_events()] == [1]


# --------------------------------------------------------------------------- figures and the command


@pytest.mark.parametrize("value, bound, at_most, met", [
    (0.9, 0.85, False, True), (0.8, 0.85, False, False), (1.2, 1.5, True, True), (1.6, 1.5, True, False),
])
def test_a_target_is_met_on_the_right_side_of_its_bound(value, bound, at_most, met):
    target = bench.Target("x", value, bound, at_most)
    assert target.met is met
    assert ("met" if met else "MISSED") in str(target)


def test_the_cpu_model_is_read_from_cpuinfo_else_platform(monkeypatch, tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: Example CPU 9000\n")
    assert bench.cpu_model(cpuinfo) == "Example CPU 9000"
    monkeypatch.setattr(bench.platform, "processor", lambda: "")
    cpuinfo.write_text("processor\t: 0\n")
    assert bench.cpu_model(cpuinfo) == "unknown"
    monkeypatch.setattr(bench.platform, "processor", lambda: "x86_64")
    assert bench.cpu_model(tmp_path / "missing") == "x86_64"


def test_a_context_line_has_no_target():
    assert bench.Target("x", 0.1).met and "no target" in str(bench.Target("x", 0.1))


def test_the_quick_command_prints_seven_figures_and_writes_the_raw_numbers(tmp_path, capsys):
    work = tmp_path / "work"
    work.mkdir()
    json_path = tmp_path / "out" / "bench.json"
    assert bench.main(["--quick", "--dir", str(work), "--json", str(json_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    numbered = [line.split(".")[0] for line in lines if line[:1].isdigit() and line[1:2] == "."]
    assert numbered == [str(number) for number in range(1, 8)]
    assert any(line.endswith("targets met") for line in lines)
    report = json.loads(json_path.read_text())
    assert [figure["number"] for figure in report["figures"]] == list(range(1, 8))
    assert report["quick"] is True and report["machine"]["cpus"] and report["machine"]["cpu"]
    assert any(f"CPUs ({report['machine']['cpu']})" in line for line in lines)
    for figure in report["figures"]:
        assert all(math.isfinite(target["value"]) for target in figure["targets"])
    figure_two = report["figures"][1]
    assert figure_two["targets"][0]["bound"] == 1.0 and "same bytes by json.dumps" in figure_two["targets"][0]["label"]
    for decoder in bench.available_decoders():
        assert all(len(figure_two["raw"][decoder]["samples"][name]) == bench.QUICK.batch_rounds
                   for name in ("append_batch", "dumps_batch", "bare", "append"))
        assert any(line.startswith(f". [{decoder}] recover()") or line.startswith(f"6. [{decoder}] recover()")
                   for line in (line.lstrip() for line in lines))
    assert any(line.startswith("2. [stdlib] append_batch(100) / same bytes") and "target >= 1" in line
               for line in lines)
    assert any("median fsync" in line for line in lines)
    assert list(work.iterdir()) == []  # the temporary transcripts are gone


def fake_measured(batch: dict) -> dict:
    """What run_all returns for the stdlib decoder, with the given batch samples and placeholders elsewhere."""
    single = {"append": [1.0], "lesson_append": [1.0], "bare": [1.0], "fsync": [0.5], "plain_writer": [1.0],
              "write_only": [0.1], "sqlite_FULL": [1.0]}
    return {"decoders": {"stdlib": {"single": single, "batch": batch,
                                    "recover": {"recover": [1.0], "json_loads": [1.0]}}},
            "replay": {"big": [2.0], "small": [1.0]}, "open_append": {"big": [2.0], "empty": [1.0]},
            "memory": {"baseline_bytes": 0, "peak_bytes": 2**20}, "big_bytes": 2**30}


def test_figure_two_is_append_batch_against_the_fair_peer_with_the_bare_loop_as_context():
    batch = {"append_batch": [10.0, 20.0, 40.0], "dumps_batch": [9.0, 22.0, 44.0],  # ratios 0.9, 1.1, 1.1
             "bare": [5.0, 5.0, 5.0], "append": [300.0, 300.0, 300.0]}
    figure = bench.figures_from(fake_measured(batch), bench.QUICK)[1]
    peer, singles, bare = figure.targets
    assert figure.number == 2 and "same bytes by json.dumps" in peer.label
    assert (round(peer.value, 6), peer.bound, peer.at_most) == (1.1, 1.0, False) and peer.met
    assert (singles.value, singles.bound) == (15.0, 20) and not singles.met
    assert bare.bound is None and bare.value == 0.25  # context: no JSON writer reaches it
    assert figure.raw["stdlib"]["samples"]["dumps_batch"] == batch["dumps_batch"]
    slower = bench.figures_from(fake_measured({**batch, "append_batch": [20.0, 20.0, 45.0]}), bench.QUICK)[1]
    assert not slower.targets[0].met  # ratios 0.45, 1.1, 0.98: median 0.98


def test_figure_one_prints_the_median_fsync_and_the_time_the_lab_adds():
    measured = fake_measured({"append_batch": [1.0], "dumps_batch": [1.0], "bare": [1.0], "append": [1.0]})
    measured["decoders"]["stdlib"]["single"].update(append=[130e-6, 150e-6, 170e-6], bare=[120e-6, 135e-6, 150e-6],
                                                    fsync=[100e-6, 110e-6, 300e-6], lesson_append=[1, 1, 1],
                                                    plain_writer=[125e-6, 142e-6, 150e-6], sqlite_FULL=[1, 1, 1])
    ratio, added, floor, lesson = bench.figures_from(measured, bench.QUICK)[0].targets
    assert "median fsync 110 us" in ratio.label
    assert round(added.value, 6) == 15.0 and added.at_most and added.bound == 14 and not added.met  # 10, 15, 20
    assert round(floor.value, 6) == 5.0 and floor.bound is None and "plain writer" in floor.label  # 5, 7, 0


def test_figure_one_prints_issue_43s_check_before_and_after_in_the_same_run():
    measured = fake_measured({"append_batch": [1.0], "dumps_batch": [1.0], "bare": [1.0], "append": [1.0]})
    measured["decoders"]["stdlib"]["single"].update(
        plain_writer=[100e-6, 200e-6, 100e-6], checked=[150e-6, 260e-6, 151e-6], unchecked=[148e-6, 255e-6, 149e-6],
        checked_work=[40e-6, 41e-6, 42e-6], unchecked_work=[39e-6, 39.5e-6, 40e-6])
    *_, before, after, check, work = bench.figures_from(measured, bench.QUICK)[0].targets[:-1]
    assert "before issue 43's check" in before.label and "after it" in after.label
    assert (round(before.value, 6), round(after.value, 6)) == (49.0, 51.0)  # medians of 48, 55, 49 and 50, 60, 51
    assert round(check.value, 6) == 2.0 and check.bound == 3 and check.at_most and check.met  # 2, 5, 2
    assert round(work.value, 6) == 1.5 and work.bound is None  # 1, 1.5, 2


def test_the_command_refuses_to_fill_a_disk_it_does_not_fit_on(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(bench, "disk_needed", lambda sizes: 10**18)
    assert bench.main(["--quick", "--dir", str(tmp_path), "--json", str(tmp_path / "b.json")]) == 2
    assert "needs about" in capsys.readouterr().err
    assert not (tmp_path / "b.json").exists()
