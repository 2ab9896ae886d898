"""The lesson map: each section of the lesson text (s09, in Chinese) and where the kit shows it.

One table, rendered in two languages and from any folder: in docs/teaching.md (links from docs/),
docs/zh/teaching.md (links from docs/zh/), and wherever else it is wanted; chapter 1 links to it.

    lesson_map_markdown("docs", language="en")          # docs/teaching.md (also lesson_map_markdown("docs"):
                                                        # English is the language in use until i18n.use("zh"))
    lesson_map_markdown("docs/zh", language="zh")       # docs/zh/teaching.md

A place is a notebook and one of its headings, or a file. The map names each heading as the English
notebook has it; in Chinese the place is the Chinese notebook, and its heading is read from the
same markdown cell of the Chinese notebook (notebooks/zh/NN_name.ipynb, or notebooks/zh/beyond-s09/NN_name.ipynb
for a notebook beyond the lesson), found by the cell's id. A link to a notebook beyond the lesson is
named with its folder ("beyond-s09/06_crash_lab"), so the map shows where the lesson ends. Files have a Chinese twin
too: the Chinese diagram and the Chinese exercises (exercises/zh). Until the Chinese file exists,
the map links the English one, with its English heading, so every link works. (So after a Chinese
notebook or exercise is added, or a heading's translation changes, build that notebook first, then
paste the map into the teaching pages again.)
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass
from pathlib import Path

from ..text import i18n
from ..text.bilingual import BEYOND

NOTEBOOKS = "notebooks/en"
REPO = Path(__file__).resolve().parents[2]  # the repository the package lives in: notebooks/, images/


def language_translator(domain: str, language: str | None = None):
    """A module's translator that answers in `language` (default: the language in use).

    i18n.translator follows the language in use; the README wants the English table in any case.
    """
    chosen = language or i18n.current()
    if chosen not in i18n.LANGUAGES:
        raise ValueError(f"language must be one of {i18n.LANGUAGES}, not {chosen!r}")
    catalog = i18n.catalog(domain, chosen)

    def translate(text: str, **fields) -> str:
        translated = catalog.get(text, text)
        return translated.format(**fields) if fields else translated

    return translate


def headings_of(markdown: str) -> list[str]:
    """The Markdown headings of one cell's text, without their leading #s."""
    return [line.lstrip("#").strip() for line in markdown.splitlines() if line.startswith("#")]


def _markdown_by_id(path: Path) -> dict[str, str]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"] if path.is_file() else []
    return {cell.get("id"): "".join(cell["source"]) for cell in cells if cell["cell_type"] == "markdown"}


def translated_heading(notebook: str, heading: str, language: str) -> str:
    """One heading of an English notebook (path from the repository's root) as the notebook in language has it.

    The heading is found in a markdown cell of the English notebook; the other language's notebook
    (notebooks/<language>/, the same place) has the same cell, by id, with its headings in the
    same order. Where that notebook, that cell or a heading in the same place is missing, the
    English heading is returned.
    """
    translated = _markdown_by_id(REPO / "notebooks" / language / notebook.removeprefix(f"{NOTEBOOKS}/"))
    for cell_id, text in _markdown_by_id(REPO / notebook).items():
        found = headings_of(text)
        if heading in found:
            theirs = headings_of(translated.get(cell_id, ""))
            return theirs[found.index(heading)] if len(theirs) == len(found) else heading
    return heading


@dataclass(frozen=True)
class Place:
    """A file of the repository (path from its root), and for a notebook one of its headings (in English)."""

    path: str
    heading: str | None = None

    @property
    def is_notebook(self) -> bool:
        return self.path.endswith(".ipynb")

    def in_language(self, language: str) -> Place:
        """The same place for a reader of language: the notebook, diagram or exercise in that language.

        Where the kit has no such file yet, the English place is kept, so every link works.
        """
        if language == "en":
            return self
        path = self.path
        if path.startswith(f"{NOTEBOOKS}/"):
            translated = Place(f"notebooks/{language}/" + path.removeprefix(f"{NOTEBOOKS}/"),
                               translated_heading(path, self.heading, language) if self.heading else None)
        elif path == "images/jsonl-transcript.svg":
            translated = Place(f"images/jsonl-transcript.{language}.svg")
        elif path.startswith("exercises/") and path.count("/") == 1:
            translated = Place(f"exercises/{language}/" + path.removeprefix("exercises/"))
        else:
            return self
        return translated if (REPO / translated.path).is_file() else self

    def markdown(self, start: str, language: str | None = None) -> str:
        """A Markdown link to the file, relative to the folder start, then the heading in quotes."""
        tr = language_translator("lesson_map", language)
        link = posixpath.relpath(self.path, start)
        name = Path(self.path).stem if self.is_notebook else Path(self.path).name
        if Path(self.path).parent.name == BEYOND:
            name = f"{BEYOND}/{name}"  # a notebook past the lesson's chapters says so
        text = f"[{name}]({link})"
        return tr('{link}: "{heading}"', link=text, heading=self.heading) if self.heading else text


def _nb(stem: str, heading: str) -> Place:
    return Place(f"{NOTEBOOKS}/{stem}.ipynb", heading)


NB1, NB2, NB3 = "01_events_on_disk", "02_crash_injection", "03_partial_tail_vs_corruption"
NB4, NB5 = "04_replay_window", "05_memory_gate"
# beyond the lesson: notebooks/<language>/beyond-s09/
NB6, NB7 = f"{BEYOND}/06_crash_lab", f"{BEYOND}/07_what_durability_costs"
NB8, NB9 = f"{BEYOND}/08_read_model_and_turns", f"{BEYOND}/09_live_session"
NB10 = f"{BEYOND}/10_your_agents_transcript"
RAW_FILE = "1. A raw agent file, through the lesson's eyes"

NB1_TITLE = "1. Events on disk: writing `append` from scratch"
ACT_0 = "Act 0: the demo, one story on one session"
SCRIPTED_EVENTS = "The events: the lesson's scripted session"
ONE_LINE = "One event, one line"
ENVELOPE = "The envelope: what every line promises"
APPEND = "`append`: one write, then fsync"
WRITE_PATH = "Where an appended line lives: process, page cache, disk"
GROWTH = "The growth plot, drawn from the file"

MID_RECORD = "A kill in the middle of a record"
REBUILT = "What the fresh process rebuilds, and what it creates anew"
ONE_WRITER = "One writer per session: the kit's lock"
THIRTY_KILLS = "From one crash to evidence: 30 kills at random moments"

THE_RULE = "The rule: only a partial tail is forgiven"
SIX_TOOLS = "Damage, one kind at a time"
BYTE_MAP = "The bit-flip experiment: a verdict for every byte"
PORTABILITY = "Portability: grep, jq and cp on a transcript"
SKIPPING = "A common mistake: skipping bad lines"

TO_MESSAGES = "2. From events to messages"
FOLD = "3. The rest of the state: one fold over the events"
NEWER_SCHEMA = "A record written by newer code"
WINDOW = "5. The replay window: the last `max_items` events"
WHY_1000 = "8. Why the window is 1000 events"
FINAL_ONLY = "10. A common mistake: saving only the final answer"


def lesson_map(language: str | None = None) -> tuple:
    """(lesson section as the lesson names it, gloss in language, places that show it) for every section.

    The places are given as in English (English notebooks and headings); Place.in_language turns them
    into the places a reader of another language is sent to.
    """
    tr = language_translator("lesson_map", language)
    return (
        ("代码架构图", tr("code architecture diagram"), (_nb(NB1, NB1_TITLE), Place("images/jsonl-transcript.svg"))),
        ("学习前置知识", tr("what to know first: one JSON event per line, complete lines, a failure policy, event_id"),
         (_nb(NB1, ONE_LINE), _nb(NB1, ENVELOPE), _nb(NB3, THE_RULE))),
        ("本章抓住的 WorkBuddy-style 机制", tr("the mechanisms taken from WorkBuddy: every event written, state "
                                          "rebuilt by a fold, an explicit memory gate"),
         (_nb(NB1, GROWTH), _nb(NB2, REBUILT), _nb(NB4, FOLD), _nb(NB5, "A selection names one exact event"))),
        ("常见误区：只保存最终回答", tr("common mistake: saving only the final answer"), (_nb(NB4, FINAL_ONLY),)),
        ("常见误区：把大输出直接写入上下文", tr("common mistake: large tool outputs pushed back into the prompt"),
         (_nb(NB4, "9. A common mistake: a large tool output in every prompt"),)),
        ("常见误区：对任意坏行都静默跳过", tr("common mistake: silently skipping bad lines"),
         (_nb(NB3, SKIPPING), _nb(NB10, "A bad line in the middle"))),
        ("问题 1. 崩溃恢复", tr("the problem: crash recovery (messages[] gone with the process)"),
         (_nb(NB1, ACT_0), _nb(NB2, MID_RECORD))),
        ("问题 2. 流式追加", tr("the problem: appending as events stream in"),
         (_nb(NB1, GROWTH), _nb(NB9, "1. Committed events and deltas"))),
        ("问题 3. 移植", tr("the problem: export and portability"),
         (_nb(NB3, PORTABILITY), _nb(NB10, "2. An importer, written in cells: Codex CLI"),
          _nb(NB10, "3. The kit's importers: Claude Code, every line accounted for"))),
        ("问题 4. 并发", tr("the problem: concurrency"), (_nb(NB2, ONE_WRITER),)),
        ("问题 5. Schema 迁移", tr("the problem: schema migration"), (_nb(NB4, NEWER_SCHEMA),)),
        ("解决方案", tr("the solution: content in JSONL, metadata in SQLite; crash? read the file"),
         (_nb(NB1, ACT_0), _nb(NB8, "1. JSONL and SQLite: who keeps what"))),
        ("工作原理 · JSONL 文件结构", tr("how it works: file layout, one object per line"),
         (_nb(NB1, ACT_0), _nb(NB1, ONE_LINE))),
        ("工作原理 · 6 种事件类型", tr("how it works: the event types"),
         (_nb(NB1, SCRIPTED_EVENTS), _nb(NB4, TO_MESSAGES))),
        ("工作原理 · 追加写入", tr("how it works: appending (O_APPEND, one write, fsync, the durable boundary)"),
         (_nb(NB1, APPEND), _nb(NB1, WRITE_PATH), _nb(NB6, "3. A power cut, simulated byte by byte"))),
        ("工作原理 · 会话回放 (replay <= 1000)", tr("how it works: replay of the last 1000 events"),
         (_nb(NB4, WINDOW), _nb(NB4, WHY_1000))),
        ("工作原理 · 崩溃恢复", tr("how it works: crash recovery; a new process creates its own clients, locks, ports"),
         (_nb(NB2, MID_RECORD), _nb(NB2, REBUILT), _nb(NB4, "6. What `recover()` rebuilds that a window can miss"),
          _nb(NB8, "2. The turn lifecycle: a state machine folded from events"))),
        ("工作原理 · 损坏处理为什么只放过 partial tail", tr("how it works: why only a partial tail is forgiven"),
         (_nb(NB3, THE_RULE), _nb(NB3, SIX_TOOLS), _nb(NB3, BYTE_MAP), _nb(NB10, "A partial tail"))),
        ("工作原理 · Transcript 不是 Memory", tr("how it works: a transcript is not memory"),
         (_nb(NB5, "The replay window is not a retention policy"), _nb(NB5, "The gate writes nothing"))),
        ("工作原理 · Transcript → Memory 必须经过显式选择",
         tr("how it works: transcript to memory only by explicit selection"),
         (_nb(NB5, "The gate, step by step"), _nb(NB5, "A selection names one exact event"),
          _nb(NB5, "The candidate carries no body"),
          _nb(NB5, "After the gate: transcript, candidate, memory"))),
        ("JSONL vs SQLite 分工", tr("JSONL vs SQLite: the division of labour"),
         (_nb(NB8, "1. JSONL and SQLite: who keeps what"),)),
        ("为什么选 JSONL · 1. 简单", tr("why JSONL: simple (a newer schema_version is appended, old lines stay)"),
         (_nb(NB4, NEWER_SCHEMA),)),
        ("为什么选 JSONL · 2. 崩溃恢复", tr("why JSONL: crash recovery, measured"),
         (_nb(NB2, THIRTY_KILLS), _nb(NB6, "1. Kill writers at random moments"))),
        ("为什么选 JSONL · 3. 可移植", tr("why JSONL: portable (jq, grep, cp)"), (_nb(NB3, PORTABILITY),)),
        ("为什么选 JSONL · 4. 反向扫描", tr("why JSONL: reading from the end"),
         (_nb(NB4, WHY_1000), _nb(NB7, "3. Tail read against full read"), Place("exercises/ex04_tail_reader.ipynb"))),
        ("为什么选 JSONL · 5. 无锁竞争", tr("why JSONL: no lock contention (the kit adds one writer lock per file)"),
         (_nb(NB2, ONE_WRITER), _nb(NB6, "5. Racing writers"))),
        ("WorkBuddy 架构对照 · 文件位置", tr("WorkBuddy comparison: where the files live"),
         (_nb(NB1, ACT_0), _nb(NB10, "10. Your own agent's transcript"))),
        ("WorkBuddy 架构对照 · 事件格式", tr("WorkBuddy comparison: the event format"),
         (_nb(NB1, ENVELOPE), _nb(NB10, RAW_FILE))),
        ("WorkBuddy 架构对照 · 回放上限", tr("WorkBuddy comparison: the replay limit"),
         (_nb(NB4, WHY_1000),)),
        ("WorkBuddy 架构对照 · JSONL 写入时机",
         tr("WorkBuddy comparison: when JSONL is written (every event, at once)"),
         (_nb(NB1, GROWTH), _nb(NB7, "Group commit: one fsync for many events"))),
        ("代码 walkthrough", tr("code walkthrough"),
         (Place("s09_jsonl_transcript/code.py"), Place("s09_jsonl_transcript/lab/transcript.py"))),
        ("运行（观察重点）", tr("run it (what to watch)"), (_nb(NB1, ACT_0),)),
        ("练习 1. 截断回放", tr("exercise 1: replay only the last turn"),
         (Place("exercises/ex01_last_turn_replay.ipynb"),
          _nb(NB10, "4. Replay the last turn, and choose a memory candidate"))),
        ("练习 2. 损坏边界", tr("exercise 2: the corruption boundary"),
         (Place("exercises/ex02_corruption_boundary.ipynb"),)),
        ("练习 3. 会话分片", tr("exercise 3: sharding a session"), (Place("exercises/ex03_sharding.ipynb"),)),
        ("下一课", tr("next lesson: s10 workspace memory"),
         (_nb(NB5, "After the gate: transcript, candidate, memory"),)),
    )


def lesson_map_markdown(start: str = ".", language: str | None = None) -> str:
    """The lesson map as a Markdown table whose links work from the folder start (relative to the repository).

    language is "en" or "zh" (default: the language in use). In Chinese the header and the glosses are
    Chinese and the places are the Chinese notebooks, with their Chinese headings.
    """
    language = language or i18n.current()
    tr = language_translator("lesson_map", language)
    headers = (tr("lesson section"), tr("in English"), tr("where the kit shows it"))
    rows = [f"| {' | '.join(headers)} |", "|---|---|---|"]
    for section, gloss, places in lesson_map(language):
        shown = "<br>".join(place.in_language(language).markdown(start, language) for place in places)
        rows.append(f"| {section} | {gloss} | {shown} |")
    return "\n".join(rows)


def notebook_headings(path) -> list[str]:
    """Every Markdown heading of a notebook, without its leading #s."""
    cells = json.loads(Path(path).read_text(encoding="utf-8"))["cells"]
    return [heading for cell in cells if cell["cell_type"] == "markdown"
            for heading in headings_of("".join(cell["source"]))]
