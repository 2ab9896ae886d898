"""What a tampering verdict shows: to the instructor, what changed and where; to the student, which cell to look at.

The guard's findings are kernel text (a hook's name, a thread's name) and may quote what a hidden
check handed an answer, so they go to the instructor's report only (`guard_findings`, escaped). The
student's reason is made of the grader's own words and names: the watched items the guard named
(guard.WATCHED), the answer cell and the check where it looked, each checked against the exercise's
source before it is used, so nothing the kernel wrote reaches it.
"""

from __future__ import annotations

import re

from .assemble import answer_names
from .guard import WATCHED
from .source import ExerciseSource
from .words import TAMPERING, both, labelled, printable

FINDING_LIMIT = 500  # characters of each finding in the instructor's report
FINDINGS_KEPT = 5
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,79}")
_WHAT = {item.key: item.what for item in WATCHED}


def instructor_findings(evidence: list, source: ExerciseSource) -> list:
    """One line per verdict (runner.Evidence), for the instructor: where the guard looked, then what it found
    (escaped)."""
    lines = []
    for found in evidence[:FINDINGS_KEPT]:
        where = _where(found, source, whose="the")
        lines.append(printable(f"{where[0]}: {found.what}" if where else found.what)[:FINDING_LIMIT])
    return lines


def student_reason(evidence: list, source: ExerciseSource) -> str:
    """The reason a student reads: tampering detected, which watched items, where, and which cell to look at."""
    first = evidence[0]
    keys = [key for key in dict.fromkeys(first.items) if key in _WHAT] or ["machinery"]
    items = [_WHAT[key] for key in keys]
    where, look = _where(first, source, whose="your"), _look_at(first, source)
    english_items, chinese_items = "; ".join(pair[0] for pair in items), "；".join(pair[1] for pair in items)
    english = (f"the grader's guard found a change in what it watches ({english_items})"
               + (f" {where[0]}" if where else "") + f"; {look[0]}. The instructor's report lists what changed")
    chinese = ("评分程序的守卫" + (f"在{where[1]}" if where else "")
               + f"发现它监视的内容有变化（{chinese_items}）；{look[1]}。教师的报告里列出了改动的细节")
    return labelled(TAMPERING, both(english, chinese))


def _answer_cell(found, source: ExerciseSource) -> str | None:
    """The answer cell named in the evidence, when it is one of the exercise's."""
    cell = dict(found.where).get("cell")
    return cell if cell in {answer.name for answer in source.answers} else None


def _check(found, source: ExerciseSource) -> str | None:
    return found.check if found.check in {check.name for check in source.checks} else None


def _where(found, source: ExerciseSource, whose: str) -> tuple | None:
    """(English, Chinese) words for where the guard looked, from what the channel and the probe said; whose is
    "your" (the student's reason) or "the" (the instructor's report)."""
    where = dict(found.where)
    cell, check = _answer_cell(found, source), _check(found, source)
    call = where.get("call") if _IDENTIFIER.fullmatch(where.get("call") or "") else None
    if call and check:
        return f"after check {check} called {call}", f"检查 {check} 调用 {call} 之后"
    if call:
        return f"after a call of {call}", f"调用 {call} 之后"
    if cell:
        return f"after {whose} answer cell {cell} ran", f"{'你的' if whose == 'your' else ''}答案单元 {cell} 运行之后"
    if check:
        return f"during check {check}", f"检查 {check} 运行时"
    return None


def _look_at(found, source: ExerciseSource) -> tuple:
    """(English, Chinese): the answer cell the student should look at, with the names it defines."""
    cell = _answer_cell(found, source)
    if cell is None:
        return ("look at your answer cells: one of them changed it, or started something (a thread, a hook) "
                "that changed it later",
                "请检查你的答案单元：其中一个改动了它，或者启动了之后改动它的东西（线程、钩子）")
    answer = next(answer for answer in source.answers if answer.name == cell)
    names = ", ".join(name for name, _ in answer_names(source.notebook.cells[answer.cell_index].source))
    return (f"look at your answer cell {cell} (the one that defines {names})",
            f"请检查你的答案单元 {cell}（定义 {names} 的那个单元）")
