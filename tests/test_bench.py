"""The benchmark machinery at small sizes: synthetic transcripts, fair baselines, figures, the command."""

import json
import math
import os
import platform
import sqlite3
import statistics
import time
import types
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import pytest

from s09_jsonl_transcript import bench
from s09_jsonl_transcript.code import TYPE_FUNCTION_CALL, TYPE_FUNCTION_CALL_RESULT, TYPE_MESSAGE, TYPE_REASONING
from s09_jsonl_transcript.lab import RESERVED_FIELDS, DurableTranscript, fast


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
    decoders = bench.available_decoders()
    samples = bench.single_write_costs(tmp_path, rounds=2, per_round=4, text_bytes=80, sqlite_modes=("FULL", "NORMAL"))
    per_decoder = {"append", "plain_writer", "checked", "unchecked", "checked_work", "unchecked_work"}
    assert set(samples) == {"lesson_append", "bare", "fsync", "write_only", "sqlite_FULL", "sqlite_NORMAL",
                            *(f"{side}[{name}]" for side in per_decoder for name in decoders)}
    assert all(len(values) == 2 and all(value > 0 for value in values) for values in samples.values())
    assert all(sync < bare for sync, bare in zip(samples["fsync"], samples["bare"]))  # the fsync is inside "bare"
    appended = {name: (tmp_path / name / "single-append.jsonl").read_bytes().splitlines(keepends=True)
                for name in decoders}
    for name in decoders:
        assert len(appended[name]) == 4 * 3  # the warm-up round and two measured rounds
        # the same session id and sequences for every decoder: the same lines, but for the moment
        assert [without_time(line) for line in appended[name]] == [without_time(line) for line in appended["stdlib"]]
        for side in ("checked", "unchecked"):  # issue 43's pair: each side's work is its time less its fsync's
            whole, work = samples[f"{side}[{name}]"], samples[f"{side}_work[{name}]"]
            assert all(0 < part < total for part, total in zip(work, whole))
            assert len((tmp_path / name / f"single-{side}.jsonl").read_bytes().splitlines()) == 4 * 3
        # the floor writes append's very records, but for recorded_at
        plain = (tmp_path / name / "single-plain.jsonl").read_bytes().splitlines(keepends=True)
        assert [without_time(line) for line in plain] == [without_time(line) for line in appended[name][4:]]
        assert all(line.endswith(b"\n") for line in plain)
    first = appended[decoders[0]]
    # each side writes, for each event, the line append last wrote for it: this round's or the round before's
    for file_name in ("single-bare.jsonl", "single-unsynced.jsonl"):
        lines = (tmp_path / file_name).read_bytes().splitlines(keepends=True)
        assert len(lines) == 8
        for number, line in enumerate(lines):
            round_number, index = divmod(number, 4)
            assert line in (first[4 * (round_number + 1) + index], first[4 * round_number + index])
    lesson = [json.loads(line) for line in (tmp_path / "single-lesson.jsonl").read_bytes().splitlines()]
    assert len(lesson) == 4 * 3
    for mode in ("FULL", "NORMAL"):
        with sqlite3.connect(tmp_path / f"single-{mode}.sqlite3") as connection:
            records = [row[0].encode() for row in connection.execute("SELECT record FROM events ORDER BY sequence")]
        assert [payload(json.loads(line)) for line in records] == [payload(json.loads(line)) for line in first[4:]]


@pytest.mark.parametrize("count", range(1, 14))
def test_balanced_orders_give_each_side_each_neighbour_equally_often(count):
    names = [f"side {number}" for number in range(count)]
    orders = bench.balanced_orders(names)
    assert all(sorted(order) == sorted(names) for order in orders)
    follows = Counter((order[place], order[place + 1]) for order in orders for place in range(count - 1))
    assert set(follows) == {(a, b) for a in names for b in names if a != b}  # every pair, in both directions
    assert len(set(follows.values())) <= 1  # equally often
    for end in (0, -1):
        assert Counter(order[end] for order in orders) == Counter({name: len(orders) // count for name in names})


def test_figure_one_runs_one_balanced_order_per_event_each_lab_side_with_its_decoder(tmp_path, monkeypatch):
    calls, orders = [], []
    real_orders, real_append, real_peer = bench.balanced_orders, DurableTranscript.append, bench.SameBytesPeer.append

    def lab_append(self, event):  # the room's name is the decoder its side uses
        assert fast.ACTIVE == self.path.parent.name
        calls.append(f"{self.path.stem.removeprefix('single-')}[{self.path.parent.name}]")
        return real_append(self, event)

    def peer_append(self, event):
        calls.append(f"plain_writer[{self.room}]")
        return real_peer(self, event)

    def spy_orders(names):
        orders.extend(real_orders(names))
        return real_orders(names)

    real_init = bench.SameBytesPeer.__init__

    def peer_init(self, path, *args, **options):
        self.room = Path(path).parent.name
        real_init(self, path, *args, **options)

    monkeypatch.setattr(bench.costs, "balanced_orders", spy_orders)  # where single_write_costs looks it up
    monkeypatch.setattr(DurableTranscript, "append", lab_append)
    monkeypatch.setattr(bench.SameBytesPeer, "append", peer_append)
    monkeypatch.setattr(bench.SameBytesPeer, "__init__", peer_init)
    per_round, rounds = 5, 3
    bench.single_write_costs(tmp_path, rounds=rounds, per_round=per_round, text_bytes=20, sqlite_modes=())
    watched = {name for name in orders[0] if name.startswith(("append[", "checked[", "unchecked[", "plain_writer["))}
    assert len(watched) == 4 * len(bench.available_decoders())
    measured = calls[-len(watched) * per_round * rounds:]  # after the warm-up
    expected = [name for event in range(per_round * rounds) for name in orders[event % len(orders)] if name in watched]
    assert measured == expected


def kit_code_reached(roots) -> set[str]:
    """The kit's modules, functions and classes (the bench's own aside) that the code of roots names,
    followed through the bench's own functions and classes (each read in its own module's names)."""
    found, seen = set(), set()

    def visit(code):
        if code in seen:
            return
        seen.add(code)
        for constant in code.co_consts:
            if isinstance(constant, types.CodeType):
                visit(constant)
        for name in code.co_names:
            value = namespaces[code].get(name)
            module = value.__name__ if isinstance(value, types.ModuleType) else getattr(value, "__module__", "")
            if (module or "").startswith(bench.__name__ + "."):
                visit_object(value)
            elif (module or "").startswith("s09_jsonl_transcript"):
                found.add(f"{module}.{name}")

    def visit_object(value):
        if isinstance(value, type):
            for member in vars(value).values():
                visit_object(member)
        elif callable(value) and hasattr(value, "__code__"):
            for code in all_code(value.__code__):
                namespaces[code] = value.__globals__  # the names its module defines
            visit(value.__code__)

    def all_code(code):
        yield code
        for constant in code.co_consts:
            if isinstance(constant, types.CodeType):
                yield from all_code(constant)

    namespaces = {}

    for root in roots:
        visit_object(root)
    return found


def test_the_floor_is_frozen_it_calls_no_code_of_the_kits():
    assert kit_code_reached([bench.SameBytesPeer, *bench.PEER_ENCODERS.values()]) == set()
    assert kit_code_reached([bench.single_write_costs]) >= {"s09_jsonl_transcript.lab.fast.fast"}  # the walk finds some


NASTY = {"type": TYPE_MESSAGE, "role": "user", "content": "é 中文 \u2028 \x00\x1f \\ \" \n \t 🙂",
         "meta": {"n": -12345678901234567890, "ok": True, "none": None, "list": [1, "a", [], {}]}}


@pytest.mark.parametrize("encoder", [name for name in bench.PEER_ENCODERS if name != "msgspec" or
                                     "msgspec" in bench.available_decoders()])
def test_the_peer_writes_the_labs_bytes_with_each_encoder(tmp_path, encoder):
    events = [NASTY, *(bench.synthetic_event(n, 60) for n in range(5))]
    with DurableTranscript(tmp_path / "lab" / "s.jsonl") as lab:
        for event in events:
            lab.append(event)
        lab.append_batch(events)
    peer = bench.SameBytesPeer(tmp_path / "s.jsonl", "s", encoder=encoder)
    for event in events:
        peer.append(event)
    peer.append_batch(events)
    peer.close()
    for ours, theirs in zip((tmp_path / "lab" / "s.jsonl").read_bytes().splitlines(keepends=True),
                            (tmp_path / "s.jsonl").read_bytes().splitlines(keepends=True), strict=True):
        stamps = [json.loads(line)["recorded_at"].encode() for line in (ours, theirs)]
        assert ours.replace(*stamps) == theirs  # byte for byte, but for the moment


@pytest.mark.parametrize("time_ns", [1_767_603_599_999_999_999, 1_767_603_600_000_000_000, 1_767_603_600_000_001_000,
                                     951_782_400_123_456_789])
def test_the_peers_own_stamp_is_what_isoformat_writes(time_ns, monkeypatch, tmp_path):
    peer = bench.SameBytesPeer(tmp_path / "s.jsonl", "s")
    for moment in (time_ns, time_ns + 10**9, time_ns):  # a new second makes the date again
        monkeypatch.setattr(time, "time_ns", lambda moment=moment: moment)
        expected = datetime.fromtimestamp(moment // 1000 / 10**6, timezone.utc)
        assert peer.stamp() == expected.replace(microsecond=moment // 1000 % 10**6).isoformat()
    peer.close()


def test_sqlite_is_warmed_up_until_its_log_is_written_over_and_left_empty(tmp_path):
    database = bench.SqliteLog(tmp_path / "s.sqlite3", "NORMAL")
    line = b"x" * 1200
    inserted = database.warm_up(line)
    log = tmp_path / "s.sqlite3-wal"
    size = log.stat().st_size
    pages, page_bytes = (database.connection.execute(f"PRAGMA {name}").fetchone()[0]
                         for name in ("wal_autocheckpoint", "page_size"))
    assert 0 < inserted < 4 * pages and size >= pages * page_bytes  # a log of wal_autocheckpoint pages
    assert database.connection.execute("SELECT count(*) FROM events").fetchone() == (0,)
    for _ in range(100):
        database.insert(line)
    assert log.stat().st_size == size  # SQLite writes over its log now: the state figure 3 measures
    database.close()


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
    monkeypatch.setattr(platform, "processor", lambda: "")
    cpuinfo.write_text("processor\t: 0\n")
    assert bench.cpu_model(cpuinfo) == "unknown"
    monkeypatch.setattr(platform, "processor", lambda: "x86_64")
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
    assert any(line.endswith("undecided (the run's spread too wide to decide)") for line in lines)
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
    single = {"append[stdlib]": [1.0], "lesson_append": [1.0], "bare": [1.0], "fsync": [0.5],
              "plain_writer[stdlib]": [1.0], "write_only": [0.1], "sqlite_FULL": [1.0]}
    recover = {"recover": [1.0], "json_loads": [1.0]}
    return {"single": single, "decoders": {"stdlib": {"batch": batch, "recover": recover}},
            "replay": {"big": [2.0], "small": [1.0]}, "open_append": {"big": [2.0], "empty": [1.0]},
            "memory": {"baseline_bytes": 0, "peak_bytes": 2**20}, "big_bytes": 2**30}


def test_figure_two_is_append_batch_against_the_fair_peer_with_the_bare_loop_as_context():
    batch = {"append_batch": [10.0, 20.0, 40.0], "dumps_batch": [9.0, 22.0, 44.0],  # ratios 0.9, 1.1, 1.1
             "bare": [5.0, 5.0, 5.0], "append": [300.0, 300.0, 300.0]}
    figure = bench.figures_from(fake_measured(batch), bench.QUICK)[1]
    peer, singles, bare = figure.targets
    assert figure.number == 2 and "same bytes by json.dumps" in peer.label
    assert (round(peer.value, 6), peer.bound, peer.at_most) == (1.1, 1.0, False)
    assert peer.verdict == "undecided"  # three rounds: the median's interval is all of them, 0.9 to 1.1
    assert (singles.value, singles.bound) == (15.0, 20) and singles.verdict == "undecided"  # 30, 15, 7.5
    assert bare.bound is None and bare.value == 0.25 and bare.verdict == "context"  # no JSON writer reaches it
    assert figure.raw["stdlib"]["samples"]["dumps_batch"] == batch["dumps_batch"]
    faster = bench.figures_from(fake_measured({**batch, "dumps_batch": [11.0, 22.0, 44.0]}), bench.QUICK)[1]
    assert faster.targets[0].verdict == "met"  # ratios 1.1, 1.1, 1.1


def figure_one(single: dict) -> dict:
    """Figure 1's targets for the stdlib decoder from single's samples (placeholders for the other sides)."""
    measured = fake_measured({"append_batch": [1.0], "dumps_batch": [1.0], "bare": [1.0], "append": [1.0]})
    rounds = len(next(iter(single.values())))
    measured["single"] = {name: [1.0] * rounds for name in measured["single"]} | single
    return {line.label: line for line in bench.figures_from(measured, bench.QUICK)[0].targets}


def find(targets: dict, *words: str):
    """The one target whose label holds every word."""
    (found,) = [line for label, line in targets.items() if all(word in label for word in words)]
    return found


def test_figure_one_measures_append_against_its_floor_and_keeps_the_bare_loop_as_information():
    targets = figure_one({"append[stdlib]": [130e-6, 150e-6, 170e-6], "plain_writer[stdlib]": [125e-6, 142e-6, 150e-6],
                          "bare": [120e-6, 135e-6, 150e-6], "fsync": [100e-6, 110e-6, 300e-6]})
    floor = find(targets, "[stdlib] lab append / the plain writer")
    assert (floor.bound, floor.at_most) == (0.97, False) and floor.value == pytest.approx(142 / 150)
    assert floor.rounds == pytest.approx((125 / 130, 142 / 150, 150 / 170))
    added = find(targets, "[stdlib] us the lab's append adds to the plain writer")
    assert (added.bound, added.at_most) == (15, True) and added.value == pytest.approx(8.0)  # 5, 8, 20
    assert added.verdict == "undecided"  # 5 to 20 us holds 15
    bare = find(targets, "[stdlib] lab append / bare")
    assert "median fsync 110 us" in bare.label and bare.bound is None  # information, no target
    assert find(targets, "adds to each bare write", "lab's append").value == pytest.approx(15.0)  # 10, 15, 20
    assert find(targets, "plain writer adds to each bare write").value == pytest.approx(5.0)  # 5, 7, 0
    assert bench.GOALS["msgspec"][:2] == (0.97, None)  # with msgspec: the ratio, and its µs for context


def test_figure_one_compares_msgspecs_ratio_to_the_stdlibs_round_by_round():
    measured = fake_measured({"append_batch": [1.0], "dumps_batch": [1.0], "bare": [1.0], "append": [1.0]})
    measured["decoders"]["msgspec"] = measured["decoders"]["stdlib"]
    measured["single"].update({"append[stdlib]": [2.0, 2.0, 2.0], "plain_writer[stdlib]": [1.0, 1.5, 1.8],
                               "append[msgspec]": [1.0, 1.0, 1.0], "plain_writer[msgspec]": [0.6, 0.9, 0.9]})
    targets = {line.label: line for line in bench.figures_from(measured, bench.QUICK)[0].targets}
    compared = find(targets, "[msgspec] its append / floor ratio over [stdlib]'s")
    assert compared.rounds == pytest.approx((1.2, 1.2, 0.9 / 0.9)) and compared.value == pytest.approx(1.2)
    assert compared.bound == 1.0 and compared.verdict == "met"


def test_figure_one_prints_issue_43s_check_before_and_after_in_the_same_run():
    targets = figure_one({
        "plain_writer[stdlib]": [100e-6, 200e-6, 100e-6], "checked[stdlib]": [150e-6, 260e-6, 151e-6],
        "unchecked[stdlib]": [148e-6, 255e-6, 149e-6], "checked_work[stdlib]": [40e-6, 41e-6, 42e-6],
        "unchecked_work[stdlib]": [39e-6, 39.5e-6, 40e-6]})
    before, after = find(targets, "before issue 43's check"), find(targets, "after it")
    assert (before.value, after.value) == pytest.approx((49.0, 51.0))  # medians of 48, 55, 49 and 50, 60, 51
    check = find(targets, "issue 43's check adds to each append")
    assert check.value == pytest.approx(2.0) and check.bound == 3 and check.at_most  # 2, 5, 2
    assert check.verdict == "undecided"  # 2 to 5 holds 3
    work = find(targets, "the check adds outside the fsync")
    assert work.value == pytest.approx(1.5) and work.bound is None  # 1, 1.5, 2


# --------------------------------------------------------------------------- verdicts from a run's spread


@pytest.mark.parametrize("count, places", [(1, (1, 1)), (5, (1, 5)), (6, (1, 6)), (10, (2, 9)), (21, (6, 16)),
                                           (40, (14, 27)), (101, (41, 61))])
def test_the_medians_interval_is_the_order_statistics_of_a_95_percent_binomial_interval(count, places):
    values = [float(value) for value in range(count, 0, -1)]  # any order
    assert bench.median_interval(values) == places
    low, high = places
    covered = sum(math.comb(count, below) for below in range(low, high)) / 2**count  # chance the median is inside
    assert covered >= 0.95 or places == (1, count)
    if low > 1:  # the next narrower interval would cover less than 95%
        assert sum(math.comb(count, below) for below in range(low + 1, high - 1)) / 2**count < 0.95


@pytest.mark.parametrize("rounds, bound, at_most, verdict", [
    ((1.2, 1.25, 1.3, 1.35, 1.4, 1.45), 1.15, False, "met"),
    ((1.0, 1.05, 1.1, 1.12, 1.13, 1.14), 1.15, False, "MISSED"),
    ((0.8, 1.0, 1.2, 1.3, 1.35, 1.4), 1.15, False, "undecided"),  # its median 1.25 is above, its spread is not
    ((1.0, 2.0, 2.5, 2.8, 2.9, 2.95), 3, True, "met"),
    ((1.0, 2.0, 2.5, 2.8, 2.9, 3.5), 3, True, "undecided"),
    ((3.1, 3.2, 3.3, 3.4, 3.5, 3.6), 3, True, "MISSED"),
    ((1.0, 2.0), None, False, "context"),
])
def test_a_verdict_needs_the_medians_interval_on_one_side_of_the_bound(rounds, bound, at_most, verdict):
    line = bench.target("x", list(rounds), bound, at_most)
    assert line.value == statistics.median(rounds) and line.verdict == verdict
    assert line.met is (verdict in ("met", "context"))
    assert ("UNDECIDED: the spread is too wide to decide" in str(line)) is (verdict == "undecided")
    first, third = bench.quartiles(list(rounds))
    assert f"quartiles {first:.2f}..{third:.2f}" in str(line)


def test_the_report_counts_targets_met_missed_and_undecided():
    figure = bench.Figure(1, (bench.target("a", [2.0] * 6, 1.0), bench.target("b", [0.5] * 6, 1.0),
                              bench.target("c", [0.5, 1.5] * 3, 1.0), bench.target("d", [0.5] * 6)), {})
    machine = {"platform": "p", "cpus": 2, "cpu": "c", "python": "3", "sqlite": "3", "load_average": [0.1],
               "load_average_at_end": [0.2]}
    lines = bench.report_lines([figure], machine, quick=False)
    assert "at the end [0.2]" in lines[0]
    assert lines[-1] == "1 of 3 targets met, 1 missed, 1 undecided (the run's spread too wide to decide)"


def test_the_command_refuses_to_fill_a_disk_it_does_not_fit_on(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(bench.run, "disk_needed", lambda sizes: 10**18)
    assert bench.main(["--quick", "--dir", str(tmp_path), "--json", str(tmp_path / "b.json")]) == 2
    assert "needs about" in capsys.readouterr().err
    assert not (tmp_path / "b.json").exists()


# --------------------------------------------------------------------------- the paired open and append bench


@pytest.mark.parametrize("values, verdict", [([0.9, 0.95, 1.0, 0.97, 0.92, 0.99, 0.94], "within"),
                                             ([1.2, 1.3, 1.25, 1.22, 1.4, 1.21, 1.3], "over"),
                                             ([0.9, 1.3, 1.0, 1.2, 0.95, 1.15, 1.05], "undecided")])
def test_the_paired_bench_decides_only_when_the_interval_lies_on_one_side(values, verdict):
    from s09_jsonl_transcript.bench.versus_writes import OPEN_BOUND, Verdict

    judged = Verdict("open", values, OPEN_BOUND, "x")
    assert judged.verdict() == verdict and judged.line().endswith(f"{verdict} 1.10x")


def test_the_paired_bench_runs_against_a_commit_and_reports_each_side(tmp_path, capsys):
    """Against HEAD (the last commit, loaded by git archive): three verdicts, the raw medians, the load."""
    from s09_jsonl_transcript.bench import versus_writes

    status = versus_writes.main(["HEAD", "--rounds", "3", "--opens", "2", "--appends", "1", "--events", "300",
                                 "--dir", str(tmp_path)])
    report = capsys.readouterr().out
    assert status in (0, 1) and "against HEAD" in report and "load average before" in report
    for name in ("a writer's open, this / REV", "an append, CPU (fsync simulated), this - REV",
                 "an append, fsync, this - REV", "a writer's open after a crash", "open, this, after a crash"):
        assert name in report
    assert list(tmp_path.iterdir()) == []  # its temporary files are gone
