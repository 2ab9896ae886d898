"""Every number the kit's texts state about its own parts agrees with the code (issue 44).

A count written in prose ("six event types", "fourteen hidden checks", "under 650 lines") goes stale the
day someone adds a type, a check or a page, and no other test notices. Each row of COUNTED says how such a
count is written, in English and in Chinese, and how to compute the true value; every text file of the kit
is searched for it.
"""

import re
from pathlib import Path

import pytest

from s09_jsonl_transcript import code

ROOT = Path(__file__).resolve().parent.parent
TEXTS = sorted({*ROOT.glob("README*.md"), *ROOT.glob("docs/**/*.md"), *ROOT.glob("exercises/**/*.md"),
                *ROOT.glob("notebooks/**/*.md"), *ROOT.glob("notebooks/**/*.ipynb"), *ROOT.glob("exercises/**/*.ipynb"),
                *ROOT.glob("s09_jsonl_transcript/**/*.py"), *ROOT.glob("s09_jsonl_transcript/text/locale/**/*.json")})
ENGLISH = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
           "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"]
CHINESE = "零一二三四五六七八九十"
EN_NUMBER = r"(?P<n>\d+|" + "|".join(ENGLISH) + r")"
ZH_NUMBER = r"(?P<n>\d+|[一二两三四五六七八九十]+)"


def value_of(word: str) -> int:
    """The number a word, a numeral or a Chinese numeral up to 99 stands for."""
    word = word.lower()
    if word.isdigit():
        return int(word)
    if word in ENGLISH:
        return ENGLISH.index(word)
    word = word.replace("两", "二")
    tens, _, ones = word.partition("十")
    if "十" not in word:
        return CHINESE.index(word)
    return (CHINESE.index(tens) if tens else 1) * 10 + (CHINESE.index(ones) if ones else 0)


def event_types() -> int:
    return len({value for name, value in vars(code).items() if name.startswith("TYPE_")})


def lines_of_the_lesson() -> int:
    return len((ROOT / "s09_jsonl_transcript" / "code.py").read_text(encoding="utf-8").splitlines())


def route_stops() -> int:
    """The numbered stops of the 15-minute route in docs/teaching.md, each at one widget."""
    text = (ROOT / "docs" / "teaching.md").read_text(encoding="utf-8")
    route = text.split("## A 15-minute live route", 1)[1].split("\n## ", 1)[0]
    return len(re.findall(r"^\d+\. \*\*", route, flags=re.M))


# what is counted: (its name, its patterns in English and Chinese, the true value, how the text may state it)
# "exactly": the text states the count; "under" and "at most": a bound the count must keep to.
COUNTED = [
    ("event types", [rf"\b{EN_NUMBER} event types\b", rf"\blesson's {EN_NUMBER} types\b", rf"{ZH_NUMBER} ?种事件"],
     event_types, "exactly"),
    ("code.py's lines", [rf"\bunder {EN_NUMBER} lines\b", rf"不到 ?{ZH_NUMBER} ?行"], lines_of_the_lesson, "under"),
    ("code.py's lines", [rf"\bat most {EN_NUMBER} lines\b", rf"最多 ?{ZH_NUMBER} ?行"], lines_of_the_lesson, "at most"),
    ("widgets on the 15-minute route", [rf"\bthrough {EN_NUMBER} widgets\b", rf"走过{ZH_NUMBER}个控件"],
     route_stops, "exactly"),
]


def statements(patterns: list[str]):
    for path in TEXTS:
        text = path.read_text(encoding="utf-8")
        for pattern in patterns:
            for match in re.finditer(pattern, text, flags=re.IGNORECASE):
                line = text.count("\n", 0, match.start()) + 1
                yield f"{path.relative_to(ROOT)}:{line}: {match.group(0)!r}", value_of(match.group("n"))


@pytest.mark.parametrize("name, patterns, truth, kind", COUNTED, ids=[row[0] for row in COUNTED])
def test_every_stated_count_agrees_with_the_code(name, patterns, truth, kind):
    true_value = truth()
    keeps = {"exactly": lambda stated: true_value == stated, "under": lambda stated: true_value < stated,
             "at most": lambda stated: true_value <= stated}[kind]
    wrong = [where for where, stated in statements(patterns) if not keeps(stated)]
    assert not wrong, f"{name} is {true_value}, but:\n" + "\n".join(wrong)


def test_the_numbers_are_read_right():
    assert [value_of(word) for word in ("six", "14", "六", "十四", "二十", "十", "两")] == [6, 14, 6, 14, 20, 10, 2]
