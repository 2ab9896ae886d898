"""The notebook's local crash check: the grader's campaign, small, on a student's own machine.

A cell whose role keeps it out of grading calls local_check(ANSWER_SOURCE) before the student
submits. It needs no strace and no bubblewrap (a Mac has neither): the driver runs the answer in a
child process and records the answer's os calls in-process, by wrapping the os module, then the same
state builder and the same judge as the grader's run, at a smaller size (engine.LOCAL), and real
kills: the child SIGKILLs itself just before the chosen write or fsync.

It is not a grader: a wrapped os module misses writes made through builtin open() file objects (and
an answer could unwrap it). When the file holds bytes the wrapped calls do not build, the check says
so rather than guess; the grader's recorder (strace) sees every system call.

    answer = cell_source_of(append, recover)     # the text of the cell (or cells) that defined them
    verdict = local_check(answer)
    print(summary(verdict))                      # figure.draw(verdict) draws it
    local_check(without_fsync(answer))           # the same answer, its fsyncs doing nothing
"""

from __future__ import annotations

import inspect
import linecache

from ..words import both
from .engine import LOCAL, CampaignSize, Verdict, grade
from .states import CAMPAIGNS, DAMAGE, HELD_KILL, INTERLEAVING, POWER_LOSS, REPAIR, REPAIR_KILL

_VERDICTS: dict = {}  # (source, seed, size) -> Verdict: a notebook's check cells reuse the local cell's verdict
_KEPT_VERDICTS = 8


def local_check(answer_source: str, *, seed: int = 0, size: CampaignSize = LOCAL) -> Verdict:
    """Crash-test an answer cell's source (append and recover) here; the verdict's findings carry byte maps.

    The same seed gives the same states and the same finding ids, so a finding replays with
    `python -m s09_jsonl_transcript.grading.durability replay ANSWER.py ID --seed SEED --size local --local`.
    The last few verdicts are kept: asking again for the same source, seed and size returns the same one.
    """
    key = (answer_source, seed, size)
    if key not in _VERDICTS:
        if len(_VERDICTS) >= _KEPT_VERDICTS:
            _VERDICTS.pop(next(iter(_VERDICTS)))
        _VERDICTS[key] = grade(answer_source, seed=seed, size=size, recorded=False, sandboxed=False)
    return _VERDICTS[key]


def source_of(*functions) -> str:
    """The source of functions defined in a notebook (append, recover and their helpers), as one cell's text.

    A notebook can pass its answer cell's text instead; this is for an answer spread over cells.
    """
    return "\n\n".join(inspect.getsource(function) for function in functions)


def cell_source_of(*functions) -> str:
    """The whole text of the cell that defined each function (each cell once, in the order given): what the
    grader takes of a notebook is the answer cell's text, helpers, imports and all.

    Jupyter keeps every cell's text where Python looks for source (linecache), under the name the cell's
    code was compiled with. A function defined in a plain file gives that file's text.
    """
    cells = []
    for function in functions:
        code = getattr(function, "__code__", None)
        if code is None:
            raise TypeError(both(f"{function!r} is not a function defined in Python: define append and recover in "
                                 "the answer cell", f"{function!r} 不是用 Python 定义的函数：请在答案单元格里定义 "
                                 "append 和 recover"))
        lines = linecache.getlines(code.co_filename)
        if not lines:
            raise ValueError(both(f"the text of the cell that defines {function.__name__} cannot be found: run that "
                                  "cell again", f"找不到定义 {function.__name__} 的单元格的文本：请重新运行那个单元格"))
        text = "".join(lines)
        if text not in cells:
            cells.append(text)
    return "\n\n".join(cells)


_WITHOUT_FSYNC = '''

# The local check's demonstration, added after the answer cell: every fsync and fdatasync it makes does nothing.
import os as _s09_os


def _s09_no_sync(fd):
    """A sync that syncs nothing."""


class _S09NoSyncOs:
    """The os module, but for fsync and fdatasync, which sync nothing."""

    def __getattr__(self, name):
        return _s09_no_sync if name in ("fsync", "fdatasync") else getattr(_s09_os, name)


for _s09_name, _s09_value in list(globals().items()):
    if _s09_name.startswith("_s09_"):
        continue
    if _s09_value is _s09_os:
        globals()[_s09_name] = _S09NoSyncOs()
    elif _s09_value is _s09_os.fsync or _s09_value is getattr(_s09_os, "fdatasync", None):
        globals()[_s09_name] = _s09_no_sync
'''


def without_fsync(answer_source: str) -> str:
    """The answer cell with its fsyncs doing nothing: what the campaign shows of an append without fsync.

    Its names for the os module, os.fsync and os.fdatasync are rebound, after the cell ran, to versions
    whose syncs do nothing (an answer that reaches fsync another way keeps it).
    """
    return answer_source + _WITHOUT_FSYNC


CAMPAIGN_WORDS = {  # campaign -> its name in both languages
    POWER_LOSS: both("power loss", "断电"),
    HELD_KILL: both("a kill (SIGKILL) before a write or fsync", "在 write 或 fsync 之前杀掉进程（SIGKILL）"),
    INTERLEAVING: both("another writer between two writes", "两次写之间另一个写入者"),
    DAMAGE: both("damaged files", "损坏的文件"),
    REPAIR: both("power loss during recover's repair", "recover 修复时断电"),
    REPAIR_KILL: both("a kill during recover's repair", "recover 修复时被杀"),
}


def summary(verdict: Verdict, per_property: int = 1) -> str:
    """The verdict in words: each campaign's states and how many broke a promise, each property with its
    findings (the first per_property of them as byte maps), or why the answer was refused."""
    lines = []
    if verdict.problem is not None:
        lines += [both("The crash check could not judge this answer:", "崩溃检查无法评判这个答案："),
                  verdict.problem.reason, ""]
    for campaign in CAMPAIGNS:
        tally = verdict.campaigns.get(campaign)
        if tally and tally["judged"]:
            lines.append(f"{CAMPAIGN_WORDS[campaign]}: " + both(
                f"{tally['judged']:,} states, {tally['broken']:,} broke a promise",
                f"{tally['judged']:,} 个状态，其中 {tally['broken']:,} 个违背了承诺"))
    if verdict.campaigns:
        lines.append("")
    for entry in verdict.as_json()["properties"]:
        findings = entry["findings"]
        count = f"{len(findings)}{'+' if entry['stopped'] else ''}"
        mark = both("holds", "成立") if entry["passed"] else both(f"broken, {count} findings", f"违背，{count} 个发现")
        lines.append(f"[{entry['id']}] {entry['title']}: {mark}")
        for finding in findings[:per_property]:
            lines += ["    " + finding["message"]] + ["    " + line for line in finding["byte_map"].splitlines()]
    return "\n".join(lines)


def drawable(verdict: Verdict, per_property: int = 3) -> list[dict]:
    """The first findings of each property, as plain data a notebook cell draws: id, property,
    message, byte runs (start, end, kind), size, acknowledged, what recover returned, the text map."""
    shown = []
    for entry in verdict.as_json()["properties"]:
        shown.extend(entry["findings"][:per_property])
    return shown
