"""A finding's byte map, as text: where each byte of the crash state came from, what had been
acknowledged, and what recover returned.

    pl-p17-k16-t45-zeros
    [SSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSTTzz]  4,102 bytes, 64 per mark
    S synced  T a torn write: the bytes that reached the disk  z zeros  ...
    acknowledged: events 1 to 17 · ...
    recover: returned 16 records (sequences 1, 2, ...) · ...

The runs are the ones a notebook cell draws too (Finding.runs: start, end, kind).
"""

from __future__ import annotations

from ..words import both

WIDTH = 64
MARKS = {  # kind -> (mark, legend)
    "synced": ("S", both("synced", "已同步")),
    "unsynced": ("U", both("written, not synced", "已写入、未同步")),
    "torn": ("T", both("a torn write: the bytes that reached the disk", "断在中途的写：到达磁盘的字节")),
    "zeros": ("z", both("zeros (the rest of a torn write)", "零（断在中途的写的其余部分）")),
    "garbage": ("g", both("garbage (the rest of a torn write)", "垃圾字节（断在中途的写的其余部分）")),
    "hole": ("h", both("a hole (reads as zeros)", "空洞（读出来是零）")),
    "page cache": ("K", both("in the page cache when the process was killed", "进程被杀时在页缓存里")),
    "damaged": ("D", both("damaged", "损坏")),
    "another writer": ("F", both("another writer's line", "另一个写入者的一行")),
}


def _mark_at(runs: list, start: int, end: int) -> str:
    """The mark of the kind that covers most of bytes start..end (a damaged or torn byte wins)."""
    covered = {}
    for run_start, run_end, kind in runs:
        overlap = min(end, run_end) - max(start, run_start)
        if overlap > 0:
            covered[kind] = covered.get(kind, 0) + overlap
    for urgent in ("damaged", "another writer", "torn", "garbage", "zeros", "hole"):
        if urgent in covered:
            return MARKS[urgent][0]
    if not covered:
        return " "
    return MARKS.get(max(covered, key=covered.get), ("?", ""))[0]


def render(state_id: str, runs: list, size: int, acknowledged: int, returned: str) -> str:
    """The byte map of one finding's state (see the module doc)."""
    lines = [state_id]
    if size == 0:
        lines.append(both("[no file, or an empty one]", "[没有文件，或是空文件]"))
    else:
        step = max(1, -(-size // WIDTH))
        bar = "".join(_mark_at(runs, start, min(start + step, size)) for start in range(0, size, step))
        lines.append(f"[{bar}]  " + both(f"{size:,} byte{'s' if size != 1 else ''}, {step} per mark",
                                         f"{size:,} 字节，每格 {step} 字节"))
        kinds = [kind for kind in MARKS if any(run[2] == kind for run in runs)]
        lines.append("  ".join(f"{MARKS[kind][0]} {MARKS[kind][1]}" for kind in kinds))
    if acknowledged > 1:
        events = both(f"events 1 to {acknowledged}", f"第 1 到 {acknowledged} 个事件")
    else:
        events = both("event 1", "第 1 个事件") if acknowledged else both("none", "无")
    lines.append(both("acknowledged", "已确认") + f": {events}")
    if returned:
        lines.append(f"recover: {returned}")
    return "\n".join(lines)
