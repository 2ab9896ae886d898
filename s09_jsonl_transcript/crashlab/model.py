"""A power-loss model of one file: what the disk may hold after a power cut, rebuilt from recorded changes.

Standard library only, and nothing of the kit: the crash lab's campaign (powerloss.py) and the
capstone's grader (grading/durability) both build their states here.

A recording is a list of Change records, in the order the calls returned:

  create      the file was created (its name exists, but is durable only after fsync_dir)
  write       bytes landed at an offset (a write past the end leaves a hole that reads as zeros)
  truncate    the file was cut (or grown with zeros) to a length
  fsync       the file's data and size reached the disk: the synced image is now the file
  fsync_dir   the folder was fsynced: the file's name is durable from now on
  ack         the writer acknowledged these events (their appends returned)

A power cut after the first p changes (crash point p) may leave:

  * the synced image (the file as of its last fsync), with any in-order subset of the writes and
    truncates made since kept (the disk may have written some back on its own, never reordered);
  * the last kept write torn: only its first torn_at bytes reached the disk, the rest of its room
    cut off, filled with zeros, or filled with garbage (the file's size reached the disk, its data
    did not);
  * no file at all, while its name was never made durable by an fsync of its folder.

Every state has a StateKey (crash point, kept changes, tear, fill) whose text replays it exactly:
state_for(changes, key) rebuilds the same bytes, and layout(changes, key) says where each byte came
from (synced, unsynced, torn, zeros, garbage, hole) for a byte map. With up to max_unsynced unsynced
changes at a point every subset is built; past that, a seeded sample of sample_size subsets; and
with limit, a seeded sample of limit states over the whole recording (every candidate is counted
first, then only the sampled ones are built).
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import random
from dataclasses import dataclass, field
from typing import Iterator

FILLS = ("cut", "zeros", "garbage")  # what lies in a torn write's room beyond the torn byte
MAX_UNSYNCED_CHANGES = 8  # 2**8 subsets per crash point at most, unless a sample is asked for
KINDS = ("create", "write", "truncate", "fsync", "fsync_dir", "ack")

# What each byte of a state is, for a byte map (layout).
SYNCED, UNSYNCED, TORN, ZEROS, GARBAGE, HOLE = "synced", "unsynced", "torn", "zeros", "garbage", "hole"
_TAGS = (SYNCED, UNSYNCED, TORN, ZEROS, GARBAGE, HOLE)


@dataclass(frozen=True)
class Change:
    """One recorded call that changed the disk, or marked an acknowledgement."""

    kind: str  # one of KINDS
    offset: int = 0  # write: where the bytes landed
    data: bytes = b""  # write: the bytes
    length: int = 0  # truncate: the new size
    numbers: tuple = ()  # ack: the events whose append had returned


@dataclass(frozen=True)
class StateKey:
    """What identifies one crash state: replaying the key on the same changes rebuilds it exactly.

    point: the cut falls after the first `point` changes; kept: the indices (into the changes) of the
    unsynced writes and truncates that reached the disk; torn_at and fill: how much of the last kept
    write landed and what filled the rest of its room (None when it landed whole, or when the last
    kept change is a truncate); absent: the file's name never reached the disk.
    """

    point: int
    kept: tuple = ()
    torn_at: int | None = None
    fill: str | None = None
    absent: bool = False

    @property
    def text(self) -> str:
        """The key as text, e.g. "p12-k7+9-t45-zeros", "p12-k7" or "p3-absent"."""
        if self.absent:
            return f"p{self.point}-absent"
        parts = [f"p{self.point}", "k" + "+".join(map(str, self.kept)) if self.kept else "k"]
        if self.torn_at is not None:
            parts += [f"t{self.torn_at}", self.fill or "cut"]
        return "-".join(parts)


def parse_key(text: str) -> StateKey:
    """The StateKey whose text is `text` (see StateKey.text); ValueError for anything else."""
    parts = text.split("-")
    try:
        if not parts[0].startswith("p"):
            raise ValueError
        point = int(parts[0][1:])
        if parts[1:] == ["absent"]:
            return StateKey(point, absent=True)
        if not parts[1].startswith("k") or len(parts) not in (2, 4):
            raise ValueError
        kept = tuple(int(index) for index in parts[1][1:].split("+")) if parts[1] != "k" else ()
        if len(parts) == 2:
            return StateKey(point, kept)
        if not parts[2].startswith("t") or parts[3] not in FILLS:
            raise ValueError
        return StateKey(point, kept, int(parts[2][1:]), parts[3])
    except (ValueError, IndexError):
        raise ValueError(f"not a crash state's key: {text!r}") from None


@dataclass(frozen=True)
class CrashState:
    """What the disk might hold after a power cut: the file's bytes, or None when it is gone."""

    content: bytes | None
    acknowledged: frozenset  # events acknowledged before the cut
    description: str  # how this state arose, for reports
    torn_at: int | None = None  # bytes of the torn write that reached the disk
    fill: str | None = None  # what filled the rest of the torn write's room
    key: StateKey | None = None  # what rebuilds it (state_for)


def _garbage(offset: int, kept: int, size: int) -> bytes:
    """The garbage a torn write's room holds: fixed by where the write landed and where it tore."""
    rng = random.Random(f"{offset}:{kept}")
    return bytes(rng.randrange(256) for _ in range(size))


def apply_change(image: bytearray, change: Change, kept: int | None = None, fill: str = "cut",
                 tags: bytearray | None = None, tag: int = 1) -> None:
    """Apply a write (at its recorded offset, as the disk blocks would) or a truncate to image.

    kept < len(change.data) tears the write: its first `kept` bytes land, the rest of its room is
    cut off, zeros or garbage (fill). With tags (one per byte of image), the bytes written are
    tagged `tag` (an index into the layout's kinds), a torn write's fill and any hole apart.
    """
    if change.kind == "truncate":
        grown = change.length - len(image)
        del image[change.length:]
        image.extend(bytes(max(grown, 0)))
        if tags is not None:
            del tags[change.length:]
            tags.extend(bytes([_TAGS.index(HOLE)]) * max(grown, 0))
        return
    size = len(change.data)
    kept = size if kept is None else kept
    room = change.data[:kept]
    if fill == "zeros":
        room += bytes(size - kept)
    elif fill == "garbage":
        room += _garbage(change.offset, kept, size - kept)
    end = change.offset + len(room)
    if len(image) < change.offset:
        if tags is not None:
            tags.extend(bytes([_TAGS.index(HOLE)]) * (change.offset - len(image)))
        image.extend(bytes(change.offset - len(image)))  # a hole reads as zeros
    image[change.offset:end] = room
    if tags is not None:
        if len(tags) < end:
            tags.extend(bytes(end - len(tags)))
        tags[change.offset:change.offset + kept] = bytes([tag]) * kept
        if end > change.offset + kept:  # a fill: zeros or garbage
            tags[change.offset + kept:end] = bytes([_TAGS.index(ZEROS if fill == "zeros" else GARBAGE)]) * (
                end - change.offset - kept)


def tear_points(size: int, every_byte: bool) -> list[int]:
    """Where a write of `size` bytes may tear: every byte boundary, or a few edges."""
    if every_byte:
        return list(range(size + 1))
    return sorted({0, 1, size // 2, max(size - 1, 0), size})


@dataclass
class _Point:
    """What the model knows just before change `point`: the synced image and what is pending."""

    point: int
    synced: bytes
    unsynced: list  # indices of the writes and truncates since the last fsync
    acknowledged: frozenset
    exists: bool
    name_durable: bool


def _points(changes: list[Change], initial: bytes | None) -> Iterator[_Point]:
    """Walk the recording: one _Point per crash point, 0 to len(changes)."""
    for index, change in enumerate(changes):
        if change.kind not in KINDS:
            raise ValueError(f"change {index} is of no known kind: {change.kind!r}")
    synced = initial or b""
    exists = name_durable = initial is not None
    current = bytearray(synced)
    unsynced, acknowledged = [], frozenset()
    for point in range(len(changes) + 1):
        yield _Point(point, synced, list(unsynced), acknowledged, exists, name_durable)
        if point == len(changes):
            return
        change = changes[point]
        if change.kind == "create":
            exists = True
        elif change.kind == "fsync_dir":
            name_durable = name_durable or exists
        elif change.kind == "ack":
            acknowledged = acknowledged | set(change.numbers)
        elif change.kind == "fsync":
            synced, unsynced = bytes(current), []
        else:
            apply_change(current, change)
            unsynced.append(point)


def _variants(changes: list[Change], kept: tuple, every_byte: bool) -> list[tuple]:
    """The (torn_at, fill) ways a kept subset may end: one when its last change is not a write."""
    if not kept or changes[kept[-1]].kind == "truncate":
        return [(None, None)]
    size = len(changes[kept[-1]].data)
    return [(torn_at, fill) for torn_at in tear_points(size, every_byte)
            for fill in (FILLS if torn_at < size else ("cut",))]


def _subsets(point: _Point, max_unsynced: int, sample_size: int | None, seed) -> list[tuple]:
    """The kept subsets at a point: all of them, or past max_unsynced a seeded sample."""
    unsynced = point.unsynced
    if len(unsynced) <= max_unsynced:
        return [kept for size in range(len(unsynced) + 1) for kept in itertools.combinations(unsynced, size)]
    if sample_size is None:
        raise ValueError(f"{len(unsynced)} unsynced changes: too many subsets to enumerate")
    rng = random.Random(f"{seed}:subsets:{point.point}")
    chosen = {(), tuple(unsynced)}  # nothing written back, and everything
    attempts = 0
    while len(chosen) < sample_size and attempts < 20 * sample_size:
        attempts += 1
        chosen.add(tuple(index for index in unsynced if rng.random() < 0.5))
    return sorted(chosen, key=lambda kept: (len(kept), kept))


@dataclass
class _Plan:
    """Every candidate state of a recording, counted: a key is decoded only when it is built."""

    starts: list = field(default_factory=list)  # the first candidate number of each row
    rows: list = field(default_factory=list)  # (point, kept or None for "absent", variants)
    total: int = 0

    def add(self, point: int, kept, variants: list) -> None:
        self.starts.append(self.total)
        self.rows.append((point, kept, variants))
        self.total += len(variants)

    def key(self, number: int) -> StateKey:
        """The key of candidate `number` (0 <= number < total)."""
        row = bisect.bisect_right(self.starts, number) - 1
        point, kept, variants = self.rows[row]
        if kept is None:
            return StateKey(point, absent=True)
        torn_at, fill = variants[number - self.starts[row]]
        return StateKey(point, kept, torn_at, fill)


def plan_states(changes: list[Change], *, initial: bytes | None = None, every_byte: bool = True,
                max_unsynced: int = MAX_UNSYNCED_CHANGES, sample_size: int | None = None, seed=0) -> _Plan:
    """Count every candidate state of the recording, in the order crash_states builds them."""
    plan = _Plan()
    for point in _points(changes, initial):
        if not point.exists or not point.name_durable:
            plan.add(point.point, None, [None])
        if point.exists:
            for kept in _subsets(point, max_unsynced, sample_size, seed):
                plan.add(point.point, kept, _variants(changes, kept, every_byte))
    return plan


def _describe(key: StateKey, changes: list[Change], unsynced: int) -> str:
    if key.absent:
        return f"cut after change {key.point}: the file's name never reached the disk"
    if key.torn_at is None:
        return f"cut after change {key.point}, {len(key.kept)} of {unsynced} unsynced changes kept"
    last = changes[key.kept[-1]]
    return (f"cut after change {key.point}: a write at byte {last.offset} kept {key.torn_at} of "
            f"{len(last.data)} bytes, rest {key.fill}")


def _build(changes: list[Change], point: _Point, key: StateKey, tags: bytearray | None = None) -> CrashState:
    if key.absent:
        return CrashState(None, point.acknowledged, _describe(key, changes, len(point.unsynced)), key=key)
    image = bytearray(point.synced)
    if tags is not None:
        tags.extend(bytes(len(image)))  # 0: synced
    unsynced_tag = _TAGS.index(UNSYNCED)
    for index in key.kept[:-1] if key.torn_at is not None else key.kept:
        apply_change(image, changes[index], tags=tags, tag=unsynced_tag)
    if key.torn_at is not None:
        last = changes[key.kept[-1]]
        tag = _TAGS.index(TORN) if key.torn_at < len(last.data) else unsynced_tag
        apply_change(image, last, key.torn_at, key.fill, tags=tags, tag=tag)
    return CrashState(bytes(image), point.acknowledged, _describe(key, changes, len(point.unsynced)),
                      key.torn_at, key.fill, key)


def _point_of(changes: list[Change], initial: bytes | None, key: StateKey) -> _Point:
    """The crash point `key` names, after checking that the key can arise there."""
    if not 0 <= key.point <= len(changes):
        raise ValueError(f"crash point {key.point} is not between 0 and {len(changes)}")
    point = next(itertools.islice(_points(changes, initial), key.point, None))
    if key.absent:
        if point.exists and point.name_durable:
            raise ValueError(f"at crash point {key.point} the file's name is durable: it cannot be absent")
        return point
    if not point.exists:
        raise ValueError(f"at crash point {key.point} the file does not exist yet")
    if not set(key.kept) <= set(point.unsynced) or list(key.kept) != sorted(set(key.kept)):
        raise ValueError(f"{key.text}: the kept changes are not unsynced changes at that point, in order")
    last_is_write = bool(key.kept) and changes[key.kept[-1]].kind == "write"
    if last_is_write != (key.torn_at is not None):
        raise ValueError(f"{key.text}: a kept write last needs a tear (t<bytes>), and only a write can tear")
    if last_is_write and not 0 <= key.torn_at <= len(changes[key.kept[-1]].data):
        raise ValueError(f"{key.text}: the write has {len(changes[key.kept[-1]].data)} bytes")
    return point


def state_for(changes: list[Change], key: StateKey | str, *, initial: bytes | None = None) -> CrashState:
    """The crash state `key` names (a StateKey or its text), rebuilt from the same changes."""
    key = parse_key(key) if isinstance(key, str) else key
    return _build(changes, _point_of(changes, initial, key), key)


def layout(changes: list[Change], key: StateKey | str, *, initial: bytes | None = None) -> list[tuple]:
    """Where each byte of the state `key` came from, as (start, end, kind) runs in order.

    kind is synced (durable before the cut), unsynced (a kept write, or truncate), torn (the bytes of a
    torn write that landed), zeros or garbage (the rest of a torn write's room) or hole (a gap no
    write filled).
    """
    key = parse_key(key) if isinstance(key, str) else key
    tags = bytearray()
    _build(changes, _point_of(changes, initial, key), key, tags)
    runs = []
    for tag, group in itertools.groupby(enumerate(tags), key=lambda pair: pair[1]):
        indices = [index for index, _ in group]
        runs.append((indices[0], indices[-1] + 1, _TAGS[tag]))
    return runs


def _sampled(plan: _Plan, limit: int | None, seed) -> Iterator[int]:
    if limit is None or plan.total <= limit:
        return iter(range(plan.total))
    return iter(sorted(random.Random(f"{seed}:states").sample(range(plan.total), limit)))


def crash_states(changes: list[Change], *, initial: bytes | None = None, every_byte: bool = True,
                 max_unsynced: int = MAX_UNSYNCED_CHANGES, sample_size: int | None = None, seed=0,
                 limit: int | None = None) -> Iterator[CrashState]:
    """Every distinct state a power cut after any recorded change may leave (see the module doc).

    initial is the file's durable content before the first change (None: no file yet). Past
    max_unsynced unsynced changes at a point, sample_size subsets are drawn (seeded by seed and the
    point); without sample_size that is a ValueError. With limit, at most that many candidates are
    built, a seeded sample over all of them. A state equal to one already yielded (the same bytes,
    the same acknowledged events) is skipped: the first key stands.
    """
    plan = plan_states(changes, initial=initial, every_byte=every_byte, max_unsynced=max_unsynced,
                       sample_size=sample_size, seed=seed)
    walk = _points(changes, initial)  # the sampled candidates come in point order: walk once
    point = next(walk)
    seen = set()
    for number in _sampled(plan, limit, seed):
        key = plan.key(number)
        while point.point < key.point:
            point = next(walk)
        state = _build(changes, point, key)
        fingerprint = (None if state.content is None else hashlib.blake2b(state.content, digest_size=16).digest(),
                       state.acknowledged)
        if fingerprint not in seen:
            seen.add(fingerprint)
            yield state


def unsynced_count(changes: list[Change], *, initial: bytes | None = None) -> int:
    """The most unsynced changes pending at any crash point of the recording."""
    return max(len(point.unsynced) for point in _points(changes, initial))
