"""What the grader says to students, in English and Simplified Chinese, in one string.

The same check cells, reports and terminal output serve both languages' notebooks, so every
student-facing sentence carries both: English first, then " · ", then Chinese.

    both("passed", "通过")                                   'passed · 通过'
    labelled(NOT_RUN, "the kernel had died ...")             'not run · 未运行: the kernel had died ...'

A *label* (`both` of a short phrase) may head a detail after ": ". The detail is either a bilingual
sentence itself or text that stays in English: a library's error message (nbval's timeout, the
JSON decoder's), or the guard's description of what it found in the kernel, which names Python
machinery. Machine values in the reports ("graded", "passed" as a status, check names) stay as
they are; only the words a person reads are doubled.

This module imports nothing, so that the probe and the check helpers can use it cheaply.
"""

from __future__ import annotations

import unicodedata

SEPARATOR = " · "


def both(english: str, chinese: str) -> str:
    """One sentence in both languages: 'English · 中文'."""
    return f"{english}{SEPARATOR}{chinese}"


def labelled(label: str, detail: str) -> str:
    """A bilingual label and its detail: 'label · 标签: detail'."""
    return f"{label}: {detail}"


def point_words(points: int) -> tuple:
    """'1 point' / '2 points' and '1 分' / '2 分'."""
    return f"{points} {'point' if points == 1 else 'points'}", f"{points} 分"


# Labels the grader puts in front of a detail.
PASSED = both("passed", "通过")
# Why a check lost its points: every feedback that is not PASSED starts with one of these.
FAILED = both("failed", "未通过")
TIMED_OUT = both("timed out", "超时")
REFUSED = both("refused", "被拒绝")
TOO_MUCH_OUTPUT = both("too much output", "输出太多")
OUT_OF_MEMORY = both("out of memory", "内存不足")
NOT_RUN = both("not run", "未运行")
NOT_GRADED = both("not graded", "未评分")
STOPPED = both("stopped", "已终止")
TAMPERING = both("tampering detected", "检测到篡改")
STATUS = {"graded": both("graded", "已评分"), "rejected": both("rejected", "已拒收"),
          "error": both("grader error", "评分程序出错")}
TOTAL = both("total", "总分")
HIDDEN = both("hidden", "隐藏")
SELF_CHECK = both("self-check: visible checks only", "自检：只有可见检查")
UNKNOWN_EXERCISE = both("unknown exercise", "未知练习")
WARNING = both("warning", "警告")
ERROR_LABEL = both("error", "错误")
REPORT = both("report", "报告")


def printable(text, *, newlines: bool = True) -> str:
    """text safe for a terminal, a UTF-8 file and a spreadsheet cell's reader.

    Control characters (C0, C1, DEL; escape codes start with one) and format characters such as
    bidirectional overrides become visible escapes like \\x1b; so do lone surrogates, which no UTF-8
    file can hold. Newlines stay unless newlines is False.
    """
    pieces = []
    for character in str(text):
        code = ord(character)
        if character == "\n" and newlines:
            pieces.append(character)
        elif 0xD800 <= code <= 0xDFFF or unicodedata.category(character) in ("Cc", "Cf"):
            pieces.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            pieces.append(character)
    return "".join(pieces)


# OWASP's rule against CSV injection: a cell starting with one of these is read as a formula
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value):
    """A CSV cell a spreadsheet shows as text: text that starts like a formula gets a leading single quote."""
    if not isinstance(value, str):
        return value
    text = printable(value)
    return "'" + text if text.startswith(_FORMULA_STARTS) else text
