"""The crash states a grading judges, each with a stable id that rebuilds it exactly.

  power loss    pl-<key>            the model's states at every recorded call boundary (crashlab/model.py:
                                    the synced image, in-order subsets of the unsynced changes, torn writes
                                    cut, zeroed or garbage, a name the folder never made durable)
  held kill     kill-<call>-<K>     the file as a real SIGKILL before the K-th such call left it
  interleaving  mix-e<n>-w<i>       another writer's line landed after write i of event n's append
  damage        dmg-...             a file written by the reference, then damaged (damage.py)
  repair        rep:<state>:<key>   a power cut during recover's own repair of a state with a torn tail
  repair kill   rk:<state>:<call>-<K>  a SIGKILL before recover's K-th such call on that state

A state's acknowledged count is how many events' appends had returned when it was cut (always a
prefix: the grader sends an event only after the previous one was acknowledged).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .damage import damaged, damaged_range
from .kit import Change, apply_change, crash_states, layout, state_for

POWER_LOSS, HELD_KILL, INTERLEAVING, DAMAGE, REPAIR, REPAIR_KILL = (
    "power loss", "held kill", "interleaving", "damage", "repair", "repair kill")
CAMPAIGNS = (POWER_LOSS, HELD_KILL, INTERLEAVING, DAMAGE, REPAIR, REPAIR_KILL)

# Byte map kinds beyond the model's (synced, unsynced, zeros, garbage, hole).
PAGE_CACHE, DAMAGED, FOREIGN = "page cache", "damaged", "another writer"


@dataclass
class State:
    """One state to judge: its bytes (None: no file), what was acknowledged, and how it arose."""

    id: str
    campaign: str
    content: bytes | None
    acknowledged: int
    words: tuple  # how this state arose: (English, Chinese)
    runs: list | None = None  # (start, end, kind) byte runs for a byte map, when known without the model
    changes: list = field(default_factory=list, repr=False)  # the model's input, for its byte map
    initial: bytes | None = field(default=None, repr=False)
    key: object = None

    @property
    def continues(self) -> bool:
        """True when the continuation (recover, then one more append) is judged on this state."""
        return self.campaign != DAMAGE

    def byte_runs(self) -> list:
        """Where each byte came from, as (start, end, kind) runs."""
        if self.runs is not None:
            return self.runs
        return layout(self.changes, self.key, initial=self.initial)


def _acknowledged(numbers) -> int:
    return max(numbers, default=0)


_FILLS_ZH = {"cut": "被截掉", "zeros": "是零", "garbage": "是垃圾字节"}


def cut_words(changes: list[Change], key) -> tuple:
    """How a power-loss state arose (from its key), in English and Chinese."""
    where, where_zh = f"a power cut after call {key.point}", f"在第 {key.point} 个调用之后断电"
    if key.absent:
        return f"{where}: the file's name never reached the disk", f"{where_zh}：文件的名字没有到达磁盘"
    kept = len(key.kept)
    if key.torn_at is None and not kept:
        return f"{where}, nothing unsynced on the disk", f"{where_zh}，未同步的改动都没有到达磁盘"
    if key.torn_at is None:
        return (f"{where}, {kept} unsynced change{'s' if kept != 1 else ''} on the disk",
                f"{where_zh}，{kept} 个未同步的改动到了磁盘")
    last = changes[key.kept[-1]]
    return (f"{where}: a write at byte {last.offset} kept {key.torn_at} of {len(last.data)} bytes, the rest "
            f"{key.fill}", f"{where_zh}：字节 {last.offset} 处的一次写只留下 {len(last.data)} 字节中的 "
                           f"{key.torn_at} 字节，其余{_FILLS_ZH[key.fill]}")


def power_loss_states(changes: list[Change], size, seed) -> list[State]:
    """The model's states of the recorded session (see the module doc), as many as size allows."""
    return [State(f"pl-{state.key.text}", POWER_LOSS, state.content, _acknowledged(state.acknowledged),
                  cut_words(changes, state.key), changes=changes, key=state.key)
            for state in crash_states(changes, every_byte=size.every_byte, max_unsynced=size.max_unsynced,
                                      sample_size=size.sample_per_point, seed=seed, limit=size.power_loss_limit)]


def power_loss_state(changes: list[Change], state_id: str) -> State:
    """The power-loss state an id names, rebuilt (for a replay)."""
    state = state_for(changes, state_id.removeprefix("pl-"))
    return State(state_id, POWER_LOSS, state.content, _acknowledged(state.acknowledged),
                 cut_words(changes, state.key), changes=changes, key=state.key)


def kill_state(run, state_id: str, campaign: str = HELD_KILL) -> State:
    """The state a held kill left: the file's real bytes, what had been acknowledged before it."""
    size = len(run.content or b"")
    words = (f"a SIGKILL before {run.name} number {run.number} on the file",
             f"在文件上第 {run.number} 次 {run.name} 之前的 SIGKILL")
    return State(state_id, campaign, run.content, run.acknowledged, words,
                 runs=[(0, size, PAGE_CACHE)] if size else [])


def interleavings(changes: list[Change], writes: list, foreign_line) -> list[State]:
    """For each append made of several writes: another writer's line landing after each but its last.

    writes[n - 1] is event n's writes, as (offset, bytes); foreign_line(n) is the other writer's
    line (a whole record, as one O_APPEND write puts it). The state is cut when event n's append
    has returned (its acknowledgement), every write of it landed at the end of the file.
    """
    states = []
    for number, made in enumerate(writes, start=1):
        for split in range(1, len(made)):
            states.append(_interleaved(changes, number, split, foreign_line(number)))
    return states


def _interleaved(changes: list[Change], number: int, split: int, foreign: bytes) -> State:
    image, runs, acknowledged, writes_seen, inserted = bytearray(), [], 0, 0, False
    for change in changes:
        if change.kind == "ack":
            acknowledged = max(acknowledged, *change.numbers)
            if number in change.numbers:
                break
            continue
        if change.kind == "truncate":
            apply_change(image, change)
        elif change.kind == "write":
            if acknowledged == number - 1:  # a write of event n's append: each lands at the end
                writes_seen += 1
                runs.append((len(image), len(image) + len(change.data), "unsynced"))
                image.extend(change.data)
                if writes_seen == split and not inserted:
                    runs.append((len(image), len(image) + len(foreign), FOREIGN))
                    image.extend(foreign)
                    inserted = True
            else:
                apply_change(image, change)
    before = runs[0][0] if runs else len(image)
    return State(f"mix-e{number}-w{split}", INTERLEAVING, bytes(image), number,
                 (f"another writer's line landed after write {split} of event {number}'s append",
                  f"另一个写入者的一行落在第 {number} 个事件的 append 的第 {split} 次写之后"),
                 runs=([(0, before, "synced")] if before else []) + runs)


def damage_states(reference: bytes, files: list) -> list[State]:
    """The damaged files (id, content) as states: nothing of them was acknowledged to judge."""
    return [damage_state(reference, damage_id, content) for damage_id, content in files]


def damage_state(reference: bytes, damage_id: str, content: bytes | None = None) -> State:
    """The damaged file an id names (rebuilt when content is not given, for a replay)."""
    content = damaged(reference, damage_id) if content is None else content
    words = (f"the reference's file, damaged ({damage_id})", f"参考答案写的文件，被损坏了（{damage_id}）")
    return State(damage_id, DAMAGE, content, 0, words, runs=_damage_runs(reference, damage_id, len(content)))


def _damage_runs(reference: bytes, damage_id: str, size: int) -> list:
    start, end = damaged_range(reference, damage_id)
    return [run for run in ((0, start, "synced"), (start, end, DAMAGED), (end, size, "synced")) if run[0] < run[1]]


def repair_states(parent: State, repair: list[Change], size, seed) -> list[State]:
    """The power-loss states of recover's repair of parent (recover's recorded changes on it)."""
    if not repair:
        return []
    return [_repair(parent, repair, state) for state in
            crash_states(repair, initial=parent.content, every_byte=size.every_byte,
                         max_unsynced=size.max_unsynced, sample_size=size.sample_per_point, seed=seed)]


def _repair(parent: State, repair: list[Change], state) -> State:
    english, chinese = cut_words(repair, state.key)
    words = (f"during recover's repair of {parent.id}, {english}", f"在 recover 修复 {parent.id} 期间，{chinese}")
    return State(f"rep:{parent.id}:{state.key.text}", REPAIR, state.content, parent.acknowledged, words,
                 changes=repair, initial=parent.content, key=state.key)


def repair_state(parent: State, repair: list[Change], state_id: str) -> State:
    """The repair state an id names, rebuilt from its parent and the parent's repair (for a replay)."""
    return _repair(parent, repair, state_for(repair, state_id.removeprefix(f"rep:{parent.id}:"),
                                             initial=parent.content))
