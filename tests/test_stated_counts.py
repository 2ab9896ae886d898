"""Every number the kit's texts state about its own parts agrees with the code (issues 44 and 50).

A count written in prose (a number of event types, of exercises, of hidden checks, of code.py's lines)
goes stale the day someone adds a type, a check or a page, and no other test notices. Each row of COUNTED
says how such a count is written, in English and in Chinese, and how to compute the true value from the
code (the event-type table itself, the exercise sources, the notebooks on disk); every text file of the
kit is searched for it. The kit's texts mostly avoid such counts; this test keeps the ones they state true.
The lesson's own section headings, quoted word for word in the lesson map, keep the lesson's numbers.
"""

import re
from pathlib import Path

import pytest

from s09_jsonl_transcript import code
from s09_jsonl_transcript.lessons.lesson_map import lesson_map

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
    """The lesson's event types: the entries of the one table of types."""
    return len(code.EVENT_TYPES)


def exercises() -> int:
    """The graded exercises: one instructor source each."""
    return len(list((ROOT / "exercises" / "instructor").glob("ex[0-9][0-9]_*.ipynb")))


def chapters() -> int:
    """The lesson's chapters: the notebooks directly in notebooks/en/."""
    return len(list((ROOT / "notebooks" / "en").glob("[0-9][0-9]_*.ipynb")))


def notebooks() -> int:
    """Every numbered notebook: the chapters, then those beyond the lesson."""
    return len(list((ROOT / "notebooks" / "en").rglob("[0-9][0-9]_*.ipynb")))


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
    ("event types", [rf"\b{EN_NUMBER} event types\b", rf"\blesson's {EN_NUMBER} types\b",
                     rf"(?<!每){ZH_NUMBER} ?种事件类型", rf"课文的{ZH_NUMBER} ?种类型"], event_types, "exactly"),
    ("graded exercises", [rf"\b{EN_NUMBER} graded exercises\b", rf"{ZH_NUMBER} ?个计分练习"], exercises, "exactly"),
    ("the lesson's chapters", [rf"\b(?:lesson's|lesson is the) {EN_NUMBER} chapters\b",
                               rf"课文(?:的|是[^。]*里的){ZH_NUMBER}章"], chapters, "exactly"),
    # the notebooks beyond the lesson, "notebooks 6 to 10": the range ends at the last notebook
    ("the last notebook", [rf"\b[Nn]otebooks 0?6 to {EN_NUMBER}\b", rf"第 ?6 ?到 ?{ZH_NUMBER} ?本"], notebooks,
     "exactly"),
    ("code.py's lines", [rf"\bunder {EN_NUMBER} lines\b", rf"不到 ?{ZH_NUMBER} ?行"], lines_of_the_lesson, "under"),
    ("code.py's lines", [rf"\bat most {EN_NUMBER} lines\b", rf"最多 ?{ZH_NUMBER} ?行"], lines_of_the_lesson, "at most"),
    ("widgets on the 15-minute route", [rf"\bthrough {EN_NUMBER} widgets\b", rf"走过{ZH_NUMBER}个控件",
                                        rf"\b{EN_NUMBER} stops\b"], route_stops, "exactly"),
]


LESSON_HEADINGS = [heading for heading, *_ in lesson_map("en")]  # the lesson's own words, with its numbers


def quotes_the_lesson(text: str, match: re.Match) -> bool:
    """True when the match lies inside one of the lesson's section headings, quoted on its line."""
    start = text.rfind("\n", 0, match.start()) + 1
    line = text[start:text.find("\n", match.end()) % (len(text) + 1)]
    return any(match.group(0) in heading and heading in line for heading in LESSON_HEADINGS)


def statements(patterns: list[str]):
    for path in TEXTS:
        text = path.read_text(encoding="utf-8")
        for pattern in patterns:
            for match in re.finditer(pattern, text, flags=re.IGNORECASE):
                if quotes_the_lesson(text, match):
                    continue
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
