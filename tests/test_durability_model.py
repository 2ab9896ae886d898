"""The power-loss model (crashlab/model.py): standard library only, every state replayable from its key,
and past a stated number of unsynced changes a seeded sample of a stated size."""

import subprocess
import sys

import pytest

from s09_jsonl_transcript.crashlab.model import (
    FILLS,
    Change,
    StateKey,
    crash_states,
    layout,
    parse_key,
    plan_states,
    state_for,
    unsynced_count,
)


def _session(events: int, *, fsync: bool = True, folder: bool = True) -> list:
    """The changes of a writer appending `events` lines, each line 10 bytes."""
    changes = [Change("create")]
    offset = 0
    for number in range(1, events + 1):
        line = f"event {number:03d}\n".encode()
        changes.append(Change("write", offset=offset, data=line))
        offset += len(line)
        if fsync:
            changes.append(Change("fsync"))
        if number == 1 and folder:
            changes.append(Change("fsync_dir"))
        changes.append(Change("ack", numbers=(number,)))
    return changes


def test_importing_the_model_loads_nothing_else_of_the_kit():
    code = ("import sys; import s09_jsonl_transcript.crashlab.model; "
            "print(sorted(name for name in sys.modules if name.startswith('s09_jsonl_transcript')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == str(["s09_jsonl_transcript", "s09_jsonl_transcript.crashlab",
                                       "s09_jsonl_transcript.crashlab.model"])


def test_the_model_module_imports_the_standard_library_only():
    import ast
    from pathlib import Path

    import s09_jsonl_transcript.crashlab.model as model

    tree = ast.parse(Path(model.__file__).read_text(encoding="utf-8"))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.level == 0}
    assert not any(node.level for node in ast.walk(tree) if isinstance(node, ast.ImportFrom))
    assert imported <= set(sys.stdlib_module_names)


def test_every_state_replays_from_its_key_alone():
    changes = _session(3)
    states = list(crash_states(changes))
    assert len(states) > 50
    for state in states:
        again = state_for(changes, parse_key(state.key.text))
        assert (again.content, again.acknowledged) == (state.content, state.acknowledged)


@pytest.mark.parametrize("text", ["p3-absent", "p4-k", "p4-k2", "p5-k2+4-t3-zeros", "p9-k1+4+6-t0-garbage"])
def test_a_key_reads_back_as_its_own_text(text):
    assert parse_key(text).text == text


@pytest.mark.parametrize("text", ["", "p", "px-k", "p3-k2-t1", "p3-k2-t1-glue", "p3-absent-k", "k2-p3"])
def test_a_malformed_key_is_refused(text):
    with pytest.raises(ValueError, match="key"):
        parse_key(text)


def test_a_key_that_cannot_arise_at_its_point_is_refused():
    changes = _session(2)
    with pytest.raises(ValueError, match="durable"):
        state_for(changes, "p6-absent")  # the folder was synced at change 3
    with pytest.raises(ValueError, match="unsynced"):
        state_for(changes, StateKey(6, (1,), 10, "cut"))  # write 1 was synced long before point 6
    with pytest.raises(ValueError, match="tear"):
        state_for(changes, StateKey(2, (1,)))  # a kept write last must say how it tore
    with pytest.raises(ValueError, match="bytes"):
        state_for(changes, StateKey(2, (1,), 11, "cut"))


def test_the_layout_says_where_each_byte_came_from():
    changes = _session(2)
    key = StateKey(6, (5,), 4, "zeros")  # event 1 synced; event 2's write kept 4 bytes, then zeros
    assert layout(changes, key) == [(0, 10, "synced"), (10, 14, "torn"), (14, 20, "zeros")]
    assert layout(changes, StateKey(6, (5,), 10, "cut")) == [(0, 10, "synced"), (10, 20, "unsynced")]  # whole
    assert layout(changes, StateKey(6, (5,), 4, "garbage"))[-1] == (14, 20, "garbage")
    hole = [Change("create"), Change("fsync_dir"), Change("write", offset=4, data=b"ab")]
    assert layout(hole, StateKey(3, (2,), 2, "cut")) == [(0, 4, "hole"), (4, 6, "unsynced")]
    assert layout(hole, StateKey(3, (2,), 1, "cut")) == [(0, 4, "hole"), (4, 5, "torn")]


def test_past_the_stated_number_of_unsynced_changes_the_model_refuses_or_samples():
    changes = _session(12, fsync=False)
    assert unsynced_count(changes) > 8
    with pytest.raises(ValueError, match="unsynced"):
        list(crash_states(changes, every_byte=False))
    sampled = list(crash_states(changes, every_byte=False, sample_size=16, seed=4))
    again = list(crash_states(changes, every_byte=False, sample_size=16, seed=4))
    other = list(crash_states(changes, every_byte=False, sample_size=16, seed=5))
    assert [state.key for state in sampled] == [state.key for state in again]
    assert [state.key for state in sampled] != [state.key for state in other]
    # up to 8 unsynced changes, every subset; past that, at most 16 subsets per crash point
    plan = plan_states(changes, every_byte=False, sample_size=16, seed=4)
    per_point = {}
    for point, kept, _ in plan.rows:
        per_point.setdefault(point, set()).add(kept)
    # changes 1, 4, 6, 8 and 10 are writes (2 is the folder's fsync, the odd ones after it acks):
    assert len(per_point[11]) == 2 ** 5  # 5 unsynced writes before change 11: all 32 subsets
    assert len(per_point[17]) == 2 ** 8  # 8 of them before change 17: still all
    assert all(len(subsets) <= 16 for point, subsets in per_point.items() if point > 18)  # 9 and more: sampled


def test_a_limit_draws_a_seeded_sample_over_the_whole_recording():
    changes = _session(6, fsync=False)
    everything = list(crash_states(changes))
    limited = list(crash_states(changes, limit=500, seed=1))
    assert len(everything) > 2000 and len(limited) <= 500
    # the same states (a sample may keep another key for bytes an earlier, unsampled key gave too)
    assert {(state.content, state.acknowledged) for state in limited} <= {
        (state.content, state.acknowledged) for state in everything}
    assert [state.key for state in crash_states(changes, limit=500, seed=1)] == [state.key for state in limited]


def test_torn_writes_cover_every_fill_and_byte():
    changes = [Change("create"), Change("fsync_dir"), Change("write", offset=0, data=b"0123456789\n")]
    torn = {(state.torn_at, state.fill) for state in crash_states(changes) if state.torn_at is not None}
    assert {torn_at for torn_at, _ in torn} == set(range(12))
    assert {fill for _, fill in torn} == set(FILLS)
