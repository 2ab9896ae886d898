"""The lesson map: each section of the lesson text (s09, in Chinese) and where the kit shows it.

One table, rendered twice: in the README (links from the repository's root) and in notebook 1
(links from the notebooks folder). A place is a notebook and one of its headings, or a file.
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass
from pathlib import Path

NOTEBOOKS = "notebooks/en"


@dataclass(frozen=True)
class Place:
    """A file of the repository (path from its root), and for a notebook one of its headings."""

    path: str
    heading: str | None = None

    @property
    def is_notebook(self) -> bool:
        return self.path.endswith(".ipynb")

    def markdown(self, start: str) -> str:
        """A Markdown link to the file, relative to the folder start, then the heading in quotes."""
        link = posixpath.relpath(self.path, start)
        name = Path(self.path).stem if self.is_notebook else Path(self.path).name
        text = f"[{name}]({link})"
        return f'{text}: "{self.heading}"' if self.heading else text


def _nb(stem: str, heading: str) -> Place:
    return Place(f"{NOTEBOOKS}/{stem}.ipynb", heading)


NB1, NB2, NB3 = "01_events_on_disk", "02_crash_injection", "03_partial_tail_vs_corruption"
NB4, NB5, NB6, NB7 = "04_replay_window", "05_memory_gate", "06_crash_lab", "07_lesson_to_production"

NB1_TITLE = "1. Events on disk: watching a JSONL transcript grow"
ACT_0 = "Act 0: the demo, one story on one session"
ONE_LINE = "One event, one line"
ENVELOPE = "The envelope: what every line promises"
NEWER_SCHEMA = "A record written by newer code"
WRITE_PATH = "Where an appended line lives: process, page cache, disk"
ONE_WRITER = "One writer per session: the kit's lock"
GROWTH = "Growth over a whole session"
MESSAGES = "Which lines become chat messages?"
FINAL_ONLY = "A common mistake: saving only the final answer"
PORTABILITY = "Portability: grep, jq and cp on a transcript"

MID_RECORD = "A kill in the middle of a record"
REBUILT = "What the fresh process rebuilds, and what it creates anew"
THIRTY_KILLS = "From one crash to evidence: 30 kills at random moments"

THE_RULE = "The rule: only a partial tail is forgiven"
SIX_TOOLS = "Six damage tools, one verdict each"
BYTE_MAP = "A verdict map over every byte"
SKIPPING = "A common mistake: skipping bad lines"

# (lesson section as the lesson names it, English gloss, places that show it)
LESSON_MAP = (
    ("代码架构图", "code architecture diagram", (_nb(NB1, NB1_TITLE), Place("images/jsonl-transcript.svg"))),
    ("学习前置知识", "what to know first: one JSON event per line, complete lines, a failure policy, event_id",
     (_nb(NB1, ONE_LINE), _nb(NB1, ENVELOPE), _nb(NB3, THE_RULE))),
    ("本章抓住的 WorkBuddy-style 机制", "the mechanisms taken from WorkBuddy: every event written, state "
     "rebuilt by a fold, an explicit memory gate",
     (_nb(NB1, MESSAGES), _nb(NB2, REBUILT), _nb(NB5, "A selection names one exact event"))),
    ("常见误区：只保存最终回答", "common mistake: saving only the final answer", (_nb(NB1, FINAL_ONLY),)),
    ("常见误区：把大输出直接写入上下文", "common mistake: large tool outputs pushed back into the prompt",
     (_nb(NB4, "6. A common mistake: a large tool output in every prompt"),)),
    ("常见误区：对任意坏行都静默跳过", "common mistake: silently skipping bad lines", (_nb(NB3, SKIPPING),)),
    ("问题 1. 崩溃恢复", "the problem: crash recovery (messages[] gone with the process)",
     (_nb(NB1, ACT_0), _nb(NB2, MID_RECORD))),
    ("问题 2. 流式追加", "the problem: appending as events stream in", (_nb(NB1, GROWTH),)),
    ("问题 3. 移植", "the problem: export and portability", (_nb(NB1, PORTABILITY),)),
    ("问题 4. 并发", "the problem: concurrency", (_nb(NB1, ONE_WRITER),)),
    ("问题 5. Schema 迁移", "the problem: schema migration", (_nb(NB1, NEWER_SCHEMA),)),
    ("解决方案", "the solution: content in JSONL, metadata in SQLite; crash? read the file",
     (_nb(NB1, ACT_0), _nb(NB7, "2. JSONL and SQLite: who keeps what"))),
    ("工作原理 · JSONL 文件结构", "how it works: file layout, one object per line",
     (_nb(NB1, ACT_0), _nb(NB1, ONE_LINE))),
    ("工作原理 · 6 种事件类型", "how it works: the six event types", (_nb(NB1, MESSAGES),)),
    ("工作原理 · 追加写入", "how it works: appending (O_APPEND, one write, fsync, the durable boundary)",
     (_nb(NB1, WRITE_PATH), _nb(NB6, "Campaign 2: a power cut, simulated byte by byte"))),
    ("工作原理 · 会话回放 (replay <= 1000)", "how it works: replay of the last 1000 events",
     (_nb(NB4, "1. The window: the last `max_items` events"), _nb(NB4, "5. Why the window is 1000 events"))),
    ("工作原理 · 崩溃恢复", "how it works: crash recovery; a new process creates its own clients, locks, ports",
     (_nb(NB2, MID_RECORD), _nb(NB2, REBUILT), _nb(NB7, "3. The turn lifecycle: a state machine folded from events"))),
    ("工作原理 · 损坏处理为什么只放过 partial tail", "how it works: why only a partial tail is forgiven",
     (_nb(NB3, THE_RULE), _nb(NB3, SIX_TOOLS), _nb(NB3, BYTE_MAP))),
    ("工作原理 · Transcript 不是 Memory", "how it works: a transcript is not memory",
     (_nb(NB5, "The replay window is not a retention policy"), _nb(NB5, "The gate writes nothing"))),
    ("工作原理 · Transcript → Memory 必须经过显式选择", "how it works: transcript to memory only by explicit selection",
     (_nb(NB5, "A selection names one exact event"), _nb(NB5, "The candidate carries no body"),
      _nb(NB5, "After the gate: transcript, candidate, memory"))),
    ("JSONL vs SQLite 分工", "JSONL vs SQLite: the division of labour",
     (_nb(NB7, "2. JSONL and SQLite: who keeps what"),)),
    ("为什么选 JSONL · 1. 简单", "why JSONL: simple (a newer schema_version is appended, old lines stay)",
     (_nb(NB1, NEWER_SCHEMA),)),
    ("为什么选 JSONL · 2. 崩溃恢复", "why JSONL: crash recovery, measured",
     (_nb(NB2, THIRTY_KILLS), _nb(NB6, "Campaign 1: kill writers at random moments"))),
    ("为什么选 JSONL · 3. 可移植", "why JSONL: portable (jq, grep, cp)", (_nb(NB1, PORTABILITY),)),
    ("为什么选 JSONL · 4. 反向扫描", "why JSONL: reading from the end",
     (_nb(NB4, "7. The cost of a full read vs a tail read"), _nb(NB4, "Scrolling back: older history on demand"))),
    ("为什么选 JSONL · 5. 无锁竞争", "why JSONL: no lock contention (the kit adds one writer lock per file)",
     (_nb(NB1, ONE_WRITER), _nb(NB6, "Campaign 5: racing writers"))),
    ("WorkBuddy 架构对照 · 文件位置", "WorkBuddy comparison: where the files live", (_nb(NB1, ACT_0),)),
    ("WorkBuddy 架构对照 · 事件格式", "WorkBuddy comparison: the event format", (_nb(NB1, ENVELOPE),)),
    ("WorkBuddy 架构对照 · 回放上限", "WorkBuddy comparison: the replay limit",
     (_nb(NB4, "5. Why the window is 1000 events"),)),
    ("WorkBuddy 架构对照 · JSONL 写入时机", "WorkBuddy comparison: when JSONL is written (every event, at once)",
     (_nb(NB1, GROWTH), _nb(NB7, "Group commit: one fsync for many events"))),
    ("代码 walkthrough", "code walkthrough", (Place("s09_jsonl_transcript/code.py"),)),
    ("运行（观察重点）", "run it (what to watch)", (_nb(NB1, ACT_0),)),
    ("练习 1. 截断回放", "exercise 1: replay only the last turn", (Place("exercises/ex01_last_turn_replay.ipynb"),)),
    ("练习 2. 损坏边界", "exercise 2: the corruption boundary", (Place("exercises/ex02_corruption_boundary.ipynb"),)),
    ("练习 3. 会话分片", "exercise 3: sharding a session", (Place("exercises/ex03_sharding.ipynb"),)),
    ("下一课", "next lesson: s10 workspace memory", (_nb(NB5, "After the gate: transcript, candidate, memory"),)),
)

HEADERS = ("lesson section", "in English", "where the kit shows it")


def lesson_map_markdown(start: str = ".") -> str:
    """The lesson map as a Markdown table whose links work from the folder start (relative to the repository)."""
    rows = [f"| {' | '.join(HEADERS)} |", "|---|---|---|"]
    for section, gloss, places in LESSON_MAP:
        rows.append(f"| {section} | {gloss} | {'<br>'.join(place.markdown(start) for place in places)} |")
    return "\n".join(rows)


def notebook_headings(path) -> list[str]:
    """Every Markdown heading of a notebook, without its leading #s."""
    cells = json.loads(Path(path).read_text(encoding="utf-8"))["cells"]
    return [line.lstrip("#").strip() for cell in cells if cell["cell_type"] == "markdown"
            for line in "".join(cell["source"]).splitlines() if line.startswith("#")]
