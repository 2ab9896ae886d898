"""The kit in two languages: which one is in use, the Chinese text of each module, a CJK font for plots.

    from s09_jsonl_transcript.text import i18n
    i18n.use("zh")                      # once, in the first cell of a Chinese notebook
    tr = i18n.translator("events_on_disk")      # in a module: its Chinese text is locale/zh/events_on_disk.json
    tr("Next event")                    # the Chinese text when Chinese is in use, else the text itself
    tr("{count} lines", count=3)        # fields are filled in after the lookup
    i18n.library_text(error)            # a library message (an exception's text), shown in the language in use

English is the source: a module's strings are written in English and looked up, whole, in its
catalog. tests/test_i18n.py checks that every string a module passes to its translator has a
Chinese entry and that no entry is left over.

The library's own messages (the lesson's exceptions, the reader's reasons, the gate's refusals, the
index's and the turn fold's notes) stay English: tests and callers match them, and code.py, the
lesson, imports nothing from the kit. Where a notebook shows one, it goes through library_text,
which matches the English message against the patterns of locale/zh/library.json
({"expected sequence {expected}, got {got}": "应为 sequence {expected}，实际为 {got}"}) and fills
the Chinese one with the same fields, each field itself translated (a reason inside a location).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import warnings
from functools import cache
from pathlib import Path

LANGUAGES = ("en", "zh")
LOCALE_DIR = Path(__file__).resolve().parent / "locale"
CJK_FONT_FILE = "NotoSansCJKsc-Regular.otf"  # shipped by the mplfonts package (requirements.txt)

_state = {"language": "en"}


def use(language: str) -> None:
    """Make every translator of the kit answer in language ("en" or "zh") from now on."""
    if language not in LANGUAGES:
        raise ValueError(f"language must be one of {LANGUAGES}, not {language!r}")
    _state["language"] = language
    if language == "zh" and importlib.util.find_spec("matplotlib") is not None:  # the lesson needs no matplotlib
        use_cjk_font()


def current() -> str:
    """The language in use: "en" or "zh"."""
    return _state["language"]


def language_from_environment(environ=None) -> str:
    """ "zh" when the locale (LC_ALL, LC_MESSAGES or LANG, in that order) is Chinese, else "en"."""
    environ = os.environ if environ is None else environ
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = environ.get(name)
        if value:
            return "zh" if value.lower().startswith("zh") else "en"
    return "en"


@cache
def catalog(domain: str, language: str = "zh") -> dict:
    """The translations of one module ({English text: text in language}); empty for English."""
    if language == "en":
        return {}
    path = LOCALE_DIR / language / f"{domain}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


class Translator:
    """Looks a module's English strings up in the language in use."""

    def __init__(self, domain: str):
        self.domain = domain

    def __call__(self, text: str, **fields) -> str:
        translated = catalog(self.domain, current()).get(text, text)
        return translated.format(**fields) if fields else translated

    def data(self, text: str) -> str:
        """A text from a module's data table (not a literal), in the language in use.

        The module lists every such text in TRANSLATED_DATA, so the catalog check can see them.
        """
        return self(text)

    def __repr__(self):
        return f"Translator({self.domain!r}, language={current()!r})"


def translator(domain: str) -> Translator:
    """The translator of one module: its Chinese text lives in locale/zh/<domain>.json."""
    return Translator(domain)


LIBRARY_DOMAIN = "library"  # locale/zh/library.json: the library's English messages as patterns
_PATTERN_FIELD = re.compile(r"{(\w+)}")


def message_pattern(english: str) -> re.Pattern:
    """The regular expression of one catalog pattern: its text exactly, each {field} any text (a repeated field
    the same text again)."""
    parts, seen, position = [], set(), 0
    for field in _PATTERN_FIELD.finditer(english):
        parts.append(re.escape(english[position:field.start()]))
        name = field.group(1)
        parts.append(f"(?P={name})" if name in seen else f"(?P<{name}>.+?)")
        seen.add(name)
        position = field.end()
    parts.append(re.escape(english[position:]))
    return re.compile("".join(parts), re.S)


@cache
def _library_patterns(language: str) -> tuple:
    return tuple((message_pattern(english), chinese) for english, chinese in catalog(LIBRARY_DOMAIN, language).items())


def library_text(message) -> str:
    """A library message (an exception or its text) in the language in use; in English, str(message) itself.

    The first pattern of locale/<language>/library.json that matches the whole message gives the text;
    a message no pattern matches is shown as it is.
    """
    text = str(message)
    language = current()
    if language == "en":
        return text
    for pattern, translated in _library_patterns(language):
        found = pattern.fullmatch(text)
        if found:
            return translated.format(**{name: library_text(value) for name, value in found.groupdict().items()})
    return text


def cjk_font_path() -> Path:
    """The CJK font file shipped with mplfonts (Noto Sans CJK SC, SIL Open Font License)."""
    import mplfonts

    path = Path(mplfonts.__file__).resolve().parent / "fonts" / CJK_FONT_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{CJK_FONT_FILE} is missing from mplfonts: reinstall it (pip install mplfonts)")
    return path


def use_cjk_font() -> str:
    """Let matplotlib draw Chinese: Latin text keeps DejaVu Sans, Chinese falls back to Noto Sans CJK SC.

    Nothing is installed or copied: the font file is registered for this process only.
    Returns the CJK font's family name.
    """
    import logging

    from matplotlib import font_manager, rcParams

    # The font has one weight: bold Chinese is drawn regular. Say nothing about it on stderr, where
    # it would land in a notebook's output; a glyph that is really missing still warns.
    logging.getLogger("matplotlib.font_manager").setLevel(logging.ERROR)
    path = str(cjk_font_path())
    if path not in {entry.fname for entry in font_manager.fontManager.ttflist}:
        font_manager.fontManager.addfont(path)
    family = font_manager.FontProperties(fname=path).get_name()
    rcParams["font.family"] = ["DejaVu Sans", family]
    # With the font in place no glyph should be missing: if one is, fail the cell instead of drawing a box.
    warnings.filterwarnings("error", message=r"Glyph \d+ .* missing from font", category=UserWarning)
    return family
