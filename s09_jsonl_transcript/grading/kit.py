"""The grader's one door into the kit whose exercises it grades (the s09 lesson).

The grader is a program of its own: it releases and grades any exercise notebook whose cells carry
its metadata, in two sandboxed kernels, and knows nothing about transcripts. What it uses of the kit
that ships it comes through this module and no other (tests/test_package_layout.py holds every other
grading module to that):

- the lesson (`code.py`), the one file of the kit a grading sandbox holds besides the grader
  (LESSON_FILES): its exception classes cross the channel as themselves, a `JSONLTranscript` given to
  an answer crosses as its file, and the checks' helpers build on its `FileIO`;
- the crash lab's power-loss model and the lesson's reader, which the capstone's grader
  (durability/) builds and judges crash states with;
- the text machinery that makes the exercises' Chinese notebooks (`bilingual`), saves a notebook
  the kit's way (`saving`) and lets a plot draw Chinese (`use_cjk_font`).

Each is loaded the first time it is asked for: inside a sandbox only the lesson is there, and an
exercise of another subject needs none of it.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

KIT = __name__.rsplit(".", 2)[0]  # the package the grader ships in
LESSON_FILES = ("code.py",)  # the kit's files a grading sandbox's package view holds, besides the grader's


def package_folder() -> Path:
    """The kit's package folder, resolved (the folder the grader's own package sits in)."""
    return Path(__file__).resolve().parents[1]


def lesson() -> ModuleType:
    """The lesson, code.py: the module whose exception classes and transcript class answers may use."""
    from .. import code

    return code


def power_loss_model() -> ModuleType:
    """The crash lab's power-loss model (crashlab/model.py, standard library only)."""
    from ..crashlab import model

    return model


def bilingual() -> ModuleType:
    """The kit's two-language text machinery: sections of Chinese text beside an English notebook."""
    from ..text import bilingual

    return bilingual


def use_cjk_font() -> str:
    """Let matplotlib draw Chinese in this process (the kit's CJK font, text/i18n.py); the font's family name.

    The capstone's local crash check draws its findings with words in both languages."""
    from ..text import i18n

    return i18n.use_cjk_font()


def saving() -> ModuleType:
    """How the kit saves a notebook after a run (text/saving.py: tidy, machine-dependent cells reduced)."""
    from ..text import saving

    return saving
