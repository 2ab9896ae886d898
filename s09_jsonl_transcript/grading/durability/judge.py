"""The capstone's properties, and how each crash state is judged against them.

The properties, each scored on 0 findings; each stops looking after FINDINGS_PER_PROPERTY:

  kept       no acknowledged event is lost
  whole      no record is duplicated or spliced
  tail       a partial tail is forgiven and cut, also when the repair itself crashes
  closed     mid-file damage fails closed
  one-write  each event is one write

On which states each is judged, and how a raise counts. For every state the grader first reads it
with the lesson's reader (the reference): the state is clean, torn (its only damage is at the end: a
partial tail, or a last record that lost its newline) or refused (damage the reader does not forgive).

  kept     the state itself, for power-loss and held-kill states: an acknowledged event missing from
           the disk, or on a line the reference refuses, is lost (the writer's fault, whatever recover
           then does; a record on the disk that is not the event sent is a finding of "whole"). Then
           recover: fewer records than were acknowledged, or a raise on a clean state, loses them too.
           A raise on a torn state counts against "tail", not here.
  whole    recover on a clean or torn state must return exactly the records the file commits (a last
           record that lost its newline may be kept or cut); a record returned twice, changed, or never
           written is a finding, and so is a recover that changes a clean file. Then the continuation:
           one more append after a correct repair must add exactly the next record (sequence k + 1,
           the event sent) after the committed ones. On interleavings: another writer's line landing
           inside one event's record (an append of several writes) is a finding of its own.
  tail     on a torn state, recover must not raise, and must leave exactly the records it returned in
           the file: the tail cut, durably, at its first byte (a lost newline may be put back). Every
           finding on a state made by crashing a repair (repair, repair kill) is judged here, whatever
           it is: the repair is what failed.
  closed   on a refused state (power loss, interleaving, damage), recover must raise the contract's
           TranscriptCorruptionError and leave the file as it was; returning records, or raising any
           other exception, is a finding. A raise on mid-file damage is what passes.
  one-write  the recorded session: each append must make exactly one write on the transcript,
           holding its whole record.

A state whose first finding is judged no further: its later checks would only repeat it.

Not judged: the durability of the continuation's own append (the states are built from the session's
appends and from recover's repairs), anything across files, and a failed fsync (the model's fsync
always succeeds).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from ..words import both
from .bytemap import render
from .contract import record_hash
from .states import DAMAGE, HELD_KILL, INTERLEAVING, POWER_LOSS, REPAIR, REPAIR_KILL, State

FINDINGS_PER_PROPERTY = 25

KEPT, WHOLE, TAIL, CLOSED, ONE_WRITE = "kept", "whole", "tail", "closed", "one-write"
PROPERTIES = {
    KEPT: both("no acknowledged event is lost", "已确认的事件一个也不丢"),
    WHOLE: both("no record is duplicated or spliced", "没有重复或内容不符的记录"),
    TAIL: both("a partial tail is forgiven and cut, also when the repair itself crashes",
               "partial tail 被放过并截掉，修复本身崩溃时也一样"),
    CLOSED: both("mid-file damage fails closed", "文件中间的损坏一律失败关闭"),
    ONE_WRITE: both("each event is one write", "每个事件只写一次"),
}


@dataclass
class Finding:
    """One broken promise: which property, on which state (its id replays it), and what happened."""

    property: str
    state_id: str
    campaign: str
    message: str  # both languages
    acknowledged: int = 0
    returned: str = ""  # what recover returned or raised, in words (both languages)
    byte_map: str = ""  # filled for the findings a report shows
    runs: list = field(default_factory=list)
    size: int = 0

    def as_json(self) -> dict:
        """The finding as plain data (what crosses to the check cells)."""
        return {"id": self.state_id, "property": self.property, "campaign": self.campaign,
                "message": self.message, "acknowledged": self.acknowledged, "returned": self.returned,
                "byte_map": self.byte_map, "runs": [list(run) for run in self.runs], "size": self.size}


@dataclass
class Expected:
    """What the grader expects of the answer: the session's records, and each continuation's."""

    records: list  # the contract's record for events 1..N
    continuation: object  # k -> the record the next append writes after k committed records

    def __post_init__(self):
        self.hashes = [record_hash(record) for record in self.records]


def returned_words(outcome: dict | None) -> tuple:
    """What one call gave, in words: (English, Chinese)."""
    if not outcome:
        return "gave nothing (the call never answered)", "什么也没给（调用始终没有回答）"
    if "raised" in outcome:
        raised = outcome["raised"]
        return f"raised {raised['class']}: {raised['message']}", f"抛出了 {raised['class']}：{raised['message']}"
    returned = outcome["returned"]
    if returned.get("type") != "list":
        return f"returned a {returned.get('type')}, not a list", f"返回了 {returned.get('type')}，不是列表"
    sequences = returned.get("sequences") or []
    shown = ", ".join(str(number) for number in sequences[:12]) + (" ..." if len(sequences) > 12 else "")
    if not sequences:
        return "returned no records", "没有返回任何记录"
    return (f"returned {len(sequences)} record{'s' if len(sequences) != 1 else ''} (sequence"
            f"{'s' if len(sequences) != 1 else ''} {shown})",
            f"返回了 {len(sequences)} 条记录（序号 {shown}）")


def _line_ends(content: bytes, count: int | None = None) -> list:
    """Where each line ends (one past its newline), the first count lines only if count is given."""
    ends, end = [], content.find(b"\n")
    while end >= 0 and (count is None or len(ends) < count):
        ends.append(end + 1)
        end = content.find(b"\n", end + 1)
    return ends


def _expected_after(content: bytes | None, reading, kept: int) -> bytes | None:
    """The file recover must leave when it returned kept records of this state."""
    if content is None:
        return None
    if reading.unterminated and kept == len(reading.records):
        return content + b"\n"
    return content[:_line_ends(content, kept)[-1]] if kept else b""


class Judge:
    """Judge states one at a time; collect findings, at most FINDINGS_PER_PROPERTY per property."""

    def __init__(self, expected: Expected, limit: int = FINDINGS_PER_PROPERTY):
        self.expected, self.limit = expected, limit
        self.findings = {name: [] for name in PROPERTIES}
        self.stopped = {name: False for name in PROPERTIES}
        self.judged = {name: 0 for name in PROPERTIES}
        self.campaigns = {}  # campaign -> {"judged": states, "broken": states with a finding}, never capped

    def add(self, name: str, state, message: str, returned: str = "") -> None:
        """Record a finding (or, past the limit, only that the property stopped looking)."""
        if len(self.findings[name]) >= self.limit:
            self.stopped[name] = True
            return
        finding = Finding(name, state.id, state.campaign, message, state.acknowledged, returned)
        if isinstance(state, State):
            finding.runs, finding.size = state.byte_runs(), len(state.content or b"")
            finding.byte_map = render(state.id, finding.runs, finding.size, state.acknowledged, returned)
        self.findings[name].append(finding)

    def one_write(self, writes: list, final: bytes) -> None:
        """Each event's append made one write, holding its whole record (the recorded session)."""
        self.judged[ONE_WRITE] += len(writes)
        ends = _line_ends(final or b"")
        starts = [0] + ends
        for number, made in enumerate(writes, start=1):
            line = (starts[number - 1], ends[number - 1]) if number <= len(ends) else None
            whole = line is not None and len(made) == 1 and (made[0][0], made[0][0] + made[0][1]) == line
            if not whole:
                sizes = ", ".join(f"{size} bytes at {offset}" for offset, size in made) or "none"
                sizes_zh = "，".join(f"字节 {offset} 处 {size} 字节" for offset, size in made) or "无"
                self.add(ONE_WRITE, _Session(number), both(
                    f"event {number}'s append made {len(made)} writes on the transcript ({sizes}); its record "
                    f"is one line of {line[1] - line[0] if line else '?'} bytes",
                    f"第 {number} 个事件的 append 在记录文件上写了 {len(made)} 次（{sizes_zh}）；"
                    f"它的记录是一行 {line[1] - line[0] if line else '?'} 字节"))

    def state(self, state, reading, observed) -> bool:
        """Judge one state: its reading by the reference, and what the answer's calls did on it.
        True when it broke no promise."""
        repairing = state.campaign in (REPAIR, REPAIR_KILL)
        found = []

        def note(name: str, english: str, chinese: str, returned: tuple = ()) -> None:
            found.append((TAIL if repairing else name, both(english, chinese), both(*returned) if returned else ""))

        self._judge(state, reading, observed, note)
        for name in {TAIL} if repairing else {KEPT, WHOLE, TAIL, CLOSED} & self._judged_on(state, reading):
            self.judged[name] += 1
        for name, message, returned in found[:1] if not state.campaign == INTERLEAVING else found:
            self.add(name, state, message, returned)
        self.count(state.campaign, bool(found))
        return not found

    def count(self, campaign: str, broken: bool) -> None:
        """Count one state of a campaign, and whether it broke a promise (uncapped, unlike the findings)."""
        tally = self.campaigns.setdefault(campaign, {"judged": 0, "broken": 0})
        tally["judged"] += 1
        tally["broken"] += broken

    def _judged_on(self, state, reading) -> set:
        if state.campaign == DAMAGE:
            return {CLOSED}
        if state.campaign == INTERLEAVING:
            return {WHOLE, CLOSED}
        if reading.refused:
            return {KEPT, CLOSED}
        return {KEPT, WHOLE, TAIL} if reading.torn else {KEPT, WHOLE}

    def _judge(self, state, reading, observed, note) -> None:
        acknowledged = state.acknowledged
        if state.campaign == INTERLEAVING:
            note(WHOLE, f"another writer's line landed inside event {acknowledged}'s record: an append made of "
                        "several writes can be spliced by any other writer of the file",
                 f"另一个写入者的一行落进了第 {acknowledged} 个事件的记录里：由多次写组成的 append 可能被"
                 "文件的任何其他写入者插进来，内容不符")
            if not reading.refused:
                return
        elif state.campaign in (POWER_LOSS, HELD_KILL, REPAIR, REPAIR_KILL):
            lost = self._lost_on_disk(state, reading)
            if lost:
                english, chinese, name = lost
                note(name, english, chinese)
                return
        recovered = observed.outcomes.get("a")
        words = returned_words(recovered)
        if reading.refused:
            self._fails_closed(state, reading, observed, recovered, note, words)
            return
        if state.campaign == DAMAGE:
            return
        if recovered is None or "raised" in recovered:
            if reading.torn:
                note(TAIL, f"recover raised on a file whose only damage is a partial tail: {words[0]}",
                     f"文件唯一的损坏是 partial tail，recover 却抛出了异常：{words[1]}", words)
            else:
                note(KEPT, f"recover raised on a file with no damage ({acknowledged} acknowledged): {words[0]}",
                     f"文件没有损坏（已确认 {acknowledged} 个事件），recover 却抛出了异常：{words[1]}", words)
            return
        kept = self._returned_problem(state, reading, recovered, note, words)
        if kept is None:
            return
        expected = _expected_after(state.content, reading, kept)
        if observed.after_a != expected and not (state.content is None and observed.after_a == b""):
            self._left_wrong(state, reading, observed.after_a, expected, note, words)
            return
        self._continuation(state, observed, kept, expected, note)

    def _lost_on_disk(self, state, reading):
        """What the state itself (the writer's bytes, before recover runs) lost or invented, or None."""
        acknowledged = state.acknowledged
        sent = self.expected.records
        if not reading.refused and reading.records != sent[:len(reading.records)]:
            wrong = next(index for index, record in enumerate(reading.records)
                         if index >= len(sent) or record != sent[index]) + 1
            return (f"the file holds a record that is not the event sent at sequence {wrong} (written ahead, "
                    "or twice?)", f"文件里有一条记录不是序号 {wrong} 处发送的事件（提前写了，还是写了两次？）",
                    WHOLE)
        if reading.refused and reading.refused_line <= acknowledged:
            return (f"the disk lost acknowledged event {reading.refused_line}: its line is damaged "
                    f"({reading.reason})", f"磁盘丢了已确认的第 {reading.refused_line} 个事件：它那一行损坏了"
                                           f"（{reading.reason}）", KEPT)
        if not reading.refused and len(reading.records) < acknowledged:
            first = len(reading.records) + 1
            events = f"event {first}" if first == acknowledged else f"events {first} to {acknowledged}"
            events_zh = f"第 {first} 个事件" if first == acknowledged else f"第 {first} 到 {acknowledged} 个事件"
            return (f"acknowledged {events} not on the disk after {state.words[0]}",
                    f"{state.words[1]}：已确认的{events_zh}不在磁盘上", KEPT)
        return None

    def _fails_closed(self, state, reading, observed, recovered, note, words) -> None:
        where = f"line {reading.refused_line} is damaged ({reading.reason})"
        where_zh = f"第 {reading.refused_line} 行损坏了（{reading.reason}）"
        if recovered is not None and "raised" in recovered and recovered["raised"]["contract"]:
            if observed.after_a != state.content:
                note(CLOSED, f"recover raised, as it must ({where}), but changed the file first",
                     f"recover 按要求抛出了异常（{where_zh}），但先改动了文件", words)
            return
        if recovered is not None and "raised" in recovered:
            note(CLOSED, f"{where}: recover must raise the given cell's TranscriptCorruptionError; it {words[0]}",
                 f"{where_zh}：recover 必须抛出给定单元格的 TranscriptCorruptionError；它{words[1]}", words)
        else:
            note(CLOSED, f"{where}, yet recover {words[0]}", f"{where_zh}，recover 却{words[1]}", words)

    def _returned_problem(self, state, reading, recovered, note, words) -> int | None:
        """How many records recover kept, or None (after a finding) when that is not what the file commits."""
        returned = recovered["returned"]
        acknowledged = state.acknowledged
        if returned.get("type") != "list":
            note(KEPT, f"recover must return a list of records; it {words[0]}",
                 f"recover 必须返回记录列表；它{words[1]}", words)
            return None
        hashes = returned["hashes"]
        committed = [record_hash(record) for record in reading.records]
        options = [committed] + ([committed[:-1]] if reading.unterminated else [])
        if hashes in options and len(hashes) >= acknowledged:
            return len(hashes)
        if len(hashes) < acknowledged:
            events = "1 event was" if acknowledged == 1 else f"{acknowledged} events were"
            note(KEPT, f"recover {words[0]}; {events} acknowledged",
                 f"recover {words[1]}；已确认 {acknowledged} 个事件", words)
        elif len(set(hashes)) < len(hashes):
            note(WHOLE, f"recover returned a record twice: it {words[0]}",
                 f"recover 把一条记录返回了两次：它{words[1]}", words)
        else:
            wrong = next((index for index, (got, want) in enumerate(zip(hashes, committed)) if got != want), None)
            detail = (f"record {wrong + 1} is not the one written at sequence {wrong + 1}" if wrong is not None
                      else f"the file commits {len(committed)} records")
            detail_zh = (f"第 {wrong + 1} 条不是序号 {wrong + 1} 处写入的记录" if wrong is not None
                         else f"文件提交了 {len(committed)} 条记录")
            note(WHOLE, f"recover {words[0]}: {detail}", f"recover {words[1]}：{detail_zh}", words)
        return None

    def _left_wrong(self, state, reading, after, expected, note, words) -> None:
        found = "no file" if after is None else f"{len(after)} byte{'s' if len(after) != 1 else ''}"
        found_zh = "没有文件" if after is None else f"{len(after)} 字节"
        if reading.torn:
            cut_at = reading.partial_tail_offset if reading.partial_tail_offset is not None else len(state.content)
            if after == state.content:
                english, chinese = (f"recover left the partial tail (bytes {cut_at} to {len(state.content)}) in the "
                                    "file: the next append would land on it",
                                    f"recover 把 partial tail（字节 {cut_at} 到 {len(state.content)}）留在了文件里："
                                    "下一次 append 会接在它后面")
            else:
                english, chinese = (f"recover must leave the committed records only ({len(expected)} bytes, the tail "
                                    f"cut at byte {cut_at}); the file holds {found}",
                                    f"recover 必须只留下已提交的记录（{len(expected)} 字节，尾部在字节 {cut_at} 处"
                                    f"截掉）；文件里是 {found_zh}")
            note(TAIL, english, chinese, words)
        else:
            before = len(state.content or b"")
            note(WHOLE, f"recover changed a file that had no damage: {found} afterwards, {before} bytes before",
                 f"recover 改动了没有损坏的文件：之后是 {found_zh}，之前是 {before} 字节", words)

    def _continuation(self, state, observed, kept: int, prefix: bytes | None, note) -> None:
        appended = observed.outcomes.get("c")
        expected = self.expected.continuation(kept)
        words = returned_words(appended) if appended and "raised" in appended else ("", "")
        if appended is None or "raised" in appended:
            note(WHOLE, f"after recover kept {kept} records, the next append {words[0] or 'never answered'}",
                 f"recover 保留 {kept} 条记录之后，下一次 append {words[1] or '始终没有回答'}")
            return
        if appended["returned"].get("hash") != record_hash(expected):
            note(WHOLE, f"after {kept} committed records the next append returned sequence "
                        f"{appended['returned'].get('sequence')}, not the record of sequence {kept + 1}",
                 f"在 {kept} 条已提交记录之后，下一次 append 返回了序号 {appended['returned'].get('sequence')}，"
                 f"而不是序号 {kept + 1} 的记录")
            return
        after, prefix = observed.after_b, prefix or b""
        rest = after[len(prefix):] if after is not None and after.startswith(prefix) else None
        if rest is None or rest.count(b"\n") != 1 or not rest.endswith(b"\n") or _parsed(rest) != expected:
            note(WHOLE, f"after the next append the file must hold the {kept} committed records, then the new one "
                        f"(sequence {kept + 1}) on one line", f"下一次 append 之后，文件必须是 {kept} 条已提交的"
                                                              f"记录，再加一行新记录（序号 {kept + 1}）")

    def results(self) -> dict:
        """Per property: its findings, whether it stopped looking, how many states it judged."""
        return {name: {"findings": self.findings[name], "stopped": self.stopped[name], "judged": self.judged[name]}
                for name in PROPERTIES}


def _parsed(line: bytes):
    try:
        return json.loads(line)
    except ValueError:
        return None


@dataclass
class _Session:
    """The recorded session as the subject of a one-write finding: event n's append."""

    number: int
    campaign: str = "session"
    acknowledged: int = 0

    @property
    def id(self) -> str:
        return f"session-e{self.number}"
