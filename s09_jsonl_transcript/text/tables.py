"""Tables and lists the READMEs show whose facts the code decides, generated rather than written by hand.

    python -m s09_jsonl_transcript.text.tables           rewrite every generated block in place
    python -m s09_jsonl_transcript.text.tables --check   exit 1, naming the blocks that are stale

A generated block sits between two markers in a Markdown file:

    <!-- generated: exercises (python -m s09_jsonl_transcript.text.tables) -->
    ...
    <!-- end generated: exercises -->

Its content comes from BLOCKS: the lesson's event types from `code.EVENT_TYPES` (so adding a type
changes the READMEs by regeneration alone), and the exercises' points from the checks in each
instructor source (so adding a check does the same). What a block says in words besides those facts
comes from the instructor source's metadata (`s09.summary`, one sentence per language).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Callable

from ..code import EVENT_TYPES

ROOT = Path(__file__).resolve().parents[2]
INSTRUCTOR = ROOT / "exercises" / "instructor"
FILES = {"en": ROOT / "README.md", "zh": ROOT / "README.zh-CN.md"}
COMMAND = "python -m s09_jsonl_transcript.text.tables"
BLOCK = re.compile(r"(<!-- generated: (?P<name>[\w-]+) \(.*?\) -->\n)(?P<body>.*?)(<!-- end generated: (?P=name) -->)",
                   re.S)
HEADINGS = {"en": ("notebook", "you write", "points (visible + hidden)"),
            "zh": ("笔记本", "你要写的", "分数（可见 + 隐藏）")}


def event_types_markdown(language: str) -> str:
    """The lesson's event types, in the table's order, each with the fields replay needs of it."""
    needs = {"en": "needs", "zh": "需要"}[language]
    items = []
    for name, fields in EVENT_TYPES.items():
        wanted = ", ".join(f"`{field}`" for field in fields)
        items.append(f"`{name}`" + (f" ({needs} {wanted})" if wanted else ""))
    return ("; " if language == "en" else "；").join(items) + "\n"


def exercise_rows(folder: Path = INSTRUCTOR) -> list[dict]:
    """For each instructor source, in name order: its file stem, summaries and visible and hidden points."""
    rows = []
    for path in sorted(folder.glob("ex*.ipynb")):
        notebook = json.loads(path.read_text(encoding="utf-8"))
        checks = [cell["metadata"]["s09"] for cell in notebook["cells"]
                  if cell.get("metadata", {}).get("s09", {}).get("role") == "check"]
        rows.append({"stem": path.stem, "summary": notebook["metadata"]["s09"].get("summary", {}),
                     "visible": sum(check["points"] for check in checks if not check.get("hidden")),
                     "hidden": sum(check["points"] for check in checks if check.get("hidden"))})
    return rows


def exercises_markdown(language: str) -> str:
    """The exercises' table: what a student writes in each, and its visible and hidden points."""
    lines = ["| " + " | ".join(HEADINGS[language]) + " |", "|---|---|---|"]
    for row in exercise_rows():
        summary = row["summary"].get(language) or row["summary"].get("en", "")
        lines.append(f"| `{row['stem']}` | {summary} | {row['visible']} + {row['hidden']} |")
    return "\n".join(lines) + "\n"


BLOCKS: dict[str, Callable[[str], str]] = {"event-types": event_types_markdown, "exercises": exercises_markdown}


def regenerated(text: str, language: str) -> str:
    """text with every generated block's body made anew; KeyError for a block BLOCKS does not know."""
    return BLOCK.sub(lambda match: match.group(1) + BLOCKS[match["name"]](language) + match.group(4), text)


def stale_blocks() -> list[str]:
    """'<file>: <block>' for each generated block whose body is not what the code gives now."""
    stale = []
    for language, path in FILES.items():
        text = path.read_text(encoding="utf-8")
        for match in BLOCK.finditer(text):
            if match["body"] != BLOCKS[match["name"]](language):
                stale.append(f"{path.relative_to(ROOT)}: {match['name']}")
    return stale


def main(argv=None) -> int:
    """Rewrite the READMEs' generated blocks, or with --check say which are stale (exit 1)."""
    parser = argparse.ArgumentParser(prog=COMMAND, description="The READMEs' generated tables and lists.")
    parser.add_argument("--check", action="store_true", help="exit 1 if a block is stale; change nothing")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_blocks()
        for where in stale:
            print(f"stale: {where} (run {COMMAND})", file=sys.stderr)
        return 1 if stale else 0
    for language, path in FILES.items():
        text = path.read_text(encoding="utf-8")
        path.write_text(regenerated(text, language), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
