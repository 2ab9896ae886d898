"""Damaged files written by the reference: what recover must refuse (fail closed).

Each starts from the file the reference writes for the session's events and damages it before
its last line, so the damage is never a partial tail:

  flip    one bit of one byte                           dmg-flip-<byte>.<bit>
  zero    1 to 64 bytes zeroed                          dmg-zero-<start>+<length>
  hole    a 512-byte sector, or a 4096-byte page, that reads as zeros    dmg-hole-<start>+<length>
  edit    one line edited: swap, dup, drop, join, seq, session, event-id, version0, type, role,
          content, array, garbage                       dmg-edit-<line>-<kind>

A candidate is kept only when the given cell's parse_record refuses one of its complete lines; the
engine then keeps only those the lesson's reader (the reference) refuses too. The candidates come
in an order fixed by the seed (every edit and hole first, then flips and zeroed ranges drawn at
random), and each id rebuilds its file exactly (damaged).
"""

from __future__ import annotations

import json
import random

EDITS = ("swap", "dup", "drop", "join", "seq", "session", "event-id", "version0", "type", "role", "content",
         "array", "garbage")
MAX_ZEROS = 64
HOLES = (512, 4096)


def _last_line_start(reference: bytes) -> int:
    return reference.rstrip(b"\n").rfind(b"\n") + 1


def _edited_record(line: bytes, kind: str, rng: random.Random) -> bytes:
    record = json.loads(line)
    if kind == "seq":
        record["sequence"] += 1
    elif kind == "session":
        record["session_id"] += "-other"
    elif kind == "event-id":
        record["event_id"] = record["event_id"].rsplit(":", 1)[0] + ":0"
    elif kind == "version0":
        record["schema_version"] = 0
    elif kind == "type":
        record["type"] = 7
    elif kind in ("role", "content"):
        del record[kind]
    elif kind == "array":
        return b"[]"
    elif kind == "garbage":
        return bytes(rng.choice(b"abcdefghijklmnopqrstuvwxyz{}:,\"0123456789 ") for _ in range(len(line)))
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode()


def _edit(reference: bytes, line_number: int, kind: str) -> bytes:
    lines = reference.split(b"\n")[:-1]  # the reference ends with a newline
    index = line_number - 1
    if kind == "swap":
        lines[index], lines[index + 1] = lines[index + 1], lines[index]
    elif kind == "dup":
        lines.insert(index, lines[index])
    elif kind == "drop":
        del lines[index]
    elif kind == "join":
        lines[index:index + 2] = [lines[index] + lines[index + 1]]
    else:
        lines[index] = _edited_record(lines[index], kind, random.Random(f"{line_number}:{kind}"))
    return b"\n".join(lines) + b"\n"


def damaged(reference: bytes, damage_id: str) -> bytes:
    """The damaged file a damage id names (see the module doc); ValueError for another id."""
    try:
        kind, rest = damage_id.removeprefix("dmg-").split("-", 1)
        if kind == "flip":
            offset, bit = (int(part) for part in rest.split("."))
            if not 0 <= offset < _last_line_start(reference) or not 0 <= bit < 8:
                raise ValueError
            content = bytearray(reference)
            content[offset] ^= 1 << bit
            return bytes(content)
        if kind in ("zero", "hole"):
            start, length = (int(part) for part in rest.split("+"))
            if start < 0 or length < 1 or start + length > _last_line_start(reference):
                raise ValueError
            return reference[:start] + bytes(length) + reference[start + length:]
        if kind == "edit":
            line, edit = rest.split("-", 1)
            if edit not in EDITS or not 1 <= int(line) < reference.count(b"\n"):
                raise ValueError
            return _edit(reference, int(line), edit)
    except ValueError:
        pass
    raise ValueError(f"not a damaged file's id: {damage_id!r}")


def _refused_near(content: bytes, start: int, end: int, parse_record, path) -> bool:
    """True when a complete line overlapping content[start:end] is not a valid record."""
    line_start = content.rfind(b"\n", 0, start) + 1
    number = content.count(b"\n", 0, line_start) + 1
    while line_start <= end:
        line_end = content.find(b"\n", line_start)
        if line_end < 0:
            return False  # the rest is the last line's piece: never damaged here
        if parse_record(content[line_start:line_end], path, number) is None:
            return True
        line_start, number = line_end + 1, number + 1
    return False


def _candidates(reference: bytes, seed):
    """Damage ids in the seed's order: every edit and hole, then flips and zeroed ranges at random."""
    lines = reference.count(b"\n")
    last = _last_line_start(reference)
    fixed = [f"dmg-edit-{line}-{kind}" for line in range(1, lines) for kind in EDITS
             if not (kind in ("swap", "join") and line + 1 > lines)]
    fixed += [f"dmg-hole-{start}+{size}" for size in HOLES for start in range(0, last - size + 1, size)]
    rng = random.Random(f"ex06-damage:{seed}")
    rng.shuffle(fixed)
    yield from fixed
    for _ in range(40 * last):
        if rng.random() < 0.6:
            yield f"dmg-flip-{rng.randrange(last)}.{rng.randrange(8)}"
        else:
            length = rng.randint(1, MAX_ZEROS)
            yield f"dmg-zero-{rng.randrange(max(1, last - length + 1))}+{min(length, last)}"


def damaged_files(reference: bytes, parse_record, path, *, count: int, seed) -> list[tuple[str, bytes]]:
    """Up to count distinct damaged files, (id, content), each refused by parse_record somewhere."""
    found, seen_ids, seen_contents = [], set(), set()
    for damage_id in _candidates(reference, seed):
        if len(found) >= count:
            break
        if damage_id in seen_ids:
            continue
        seen_ids.add(damage_id)
        content = damaged(reference, damage_id)
        if content in seen_contents:
            continue
        if damage_id.startswith("dmg-edit-"):
            refused = _refused_near(content, 0, len(content) - 1, parse_record, path)
        else:
            start = int(damage_id.split("-")[2].split(".")[0].split("+")[0])
            length = int(damage_id.split("+")[1]) if "+" in damage_id else 1
            refused = _refused_near(content, start, start + length, parse_record, path)
        if refused:
            seen_contents.add(content)
            found.append((damage_id, content))
    return found


def damaged_range(reference: bytes, damage_id: str) -> tuple[int, int]:
    """The bytes a damage touched, for a byte map: (start, end) in the damaged file."""
    kind, rest = damage_id.removeprefix("dmg-").split("-", 1)
    if kind == "flip":
        offset = int(rest.split(".")[0])
        return offset, offset + 1
    if kind in ("zero", "hole"):
        start, length = (int(part) for part in rest.split("+"))
        return start, start + length
    line = int(rest.split("-")[0])
    starts = [0] + [index + 1 for index, byte in enumerate(reference) if byte == 0x0A]
    content = damaged(reference, damage_id)
    end = content.find(b"\n", starts[line - 1])
    return starts[line - 1], (end + 1) if end >= 0 else len(content)
