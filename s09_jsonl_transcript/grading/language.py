"""The grader's own two languages for its command line: which one is in use, and its Chinese text.

Students always read reports in both languages (words.py). The command line's help and its errors
are in one: --lang, else the locale's. The grader keeps this apart from the kit it ships in, so it
can run without it; its Chinese text is in locale/zh/<domain>.json beside this module.
"""

from __future__ import annotations

import argparse
import json
import os
from functools import cache
from pathlib import Path

LANGUAGES = ("en", "zh")
LOCALE_DIR = Path(__file__).resolve().parent / "locale"
_state = {"language": "en"}


def use(language: str) -> None:
    """Make every translator of the grader answer in language ("en" or "zh") from now on."""
    if language not in LANGUAGES:
        raise ValueError(f"language must be one of {LANGUAGES}, not {language!r}")
    _state["language"] = language


def from_environment(environ=None) -> str:
    """ "zh" when the locale (LC_ALL, LC_MESSAGES or LANG, in that order) is Chinese, else "en"."""
    environ = os.environ if environ is None else environ
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        if environ.get(name):
            return "zh" if environ[name].lower().startswith("zh") else "en"
    return "en"


def language_of(argv) -> str:
    """The language asked for: --lang in argv, else the locale's (so --help is already in it)."""
    for index, argument in enumerate(argv):
        if argument == "--lang" and index + 1 < len(argv) and argv[index + 1] in LANGUAGES:
            return argv[index + 1]
        if argument.startswith("--lang=") and argument.removeprefix("--lang=") in LANGUAGES:
            return argument.removeprefix("--lang=")
    return from_environment()


@cache
def catalog(domain: str, language: str) -> dict:
    """One module's translations ({English text: text in language}); empty for English."""
    path = LOCALE_DIR / language / f"{domain}.json"
    return json.loads(path.read_text(encoding="utf-8")) if language != "en" and path.exists() else {}


def translator(domain: str):
    """tr(text, **fields): text in the language in use, its {fields} filled in."""
    def tr(text: str, **fields) -> str:
        translated = catalog(domain, _state["language"]).get(text, text)
        return translated.format(**fields) if fields else translated
    return tr


_tr = translator("help")  # argparse's own words


class HelpFormatter(argparse.HelpFormatter):
    """argparse's help, with its own words (usage, the section titles) in the language in use."""

    def add_usage(self, usage, actions, groups, prefix=None):
        super().add_usage(usage, actions, groups, _tr("usage: ") if prefix is None else prefix)

    def start_section(self, heading):
        titles = {"positional arguments": _tr("positional arguments"), "options": _tr("options"),
                  "optional arguments": _tr("options")}
        super().start_section(titles.get(heading, heading))
