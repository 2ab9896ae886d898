"""Shared fixtures (a transcript in a temporary folder with a deterministic clock) and the two test tiers.

The default run (`python -m pytest`) is the fast tier, at most 3 minutes on an idle 2-core machine: the
library's promises, the lesson modules, the English chapters of the lesson (notebooks 1 to 5) under
strict nbval and one grading of a reference and of a release. `--full` adds the slow tier: the Chinese
notebooks, the notebooks beyond the lesson, the grader's full and red-team suites, the browser test and
the crash-lab campaigns at a reduced size. A test joins the slow tier by `@pytest.mark.slow`, by living
in a module listed in SLOW_MODULES, or by being a notebook that is not an English chapter of the lesson.
"""

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from s09_jsonl_transcript.code import MockLLM, run_agent, ticking_clock
from s09_jsonl_transcript.lab import DurableTranscript

# No hypothesis test may fail for being slow: its per-example deadline and its "too slow" health
# check time the machine, not the code. Loaded here, before any test module builds its settings,
# this is the default every @settings(...) in the suite starts from.
settings.register_profile("any-machine", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("any-machine")


@pytest.fixture
def transcript(tmp_path):
    """An empty transcript (session id 'session') whose clock ticks one second per event."""
    with DurableTranscript(tmp_path / "session.jsonl", clock=ticking_clock()) as opened:
        yield opened


@pytest.fixture
def bug_fix(transcript):
    """A closed transcript holding the twelve events of MockLLM's bug-fix session."""
    run_agent(transcript, MockLLM())
    transcript.close()
    return transcript


LESSON_CHAPTER = re.compile(r"0[1-5]_\w+\.ipynb")  # the default run's notebooks: the lesson's chapters, in English
SLOW_MODULES = {
    "test_browser.py",  # JupyterLab in headless Chromium, every notebook in both languages
    # the capstone's crash engine, run on answers (each a campaign of driver processes): about 23 s
    "test_durability_answers.py",
    "test_durability_calls.py",
    "test_durability_replay.py",
    "test_bilingual_notebooks.py",  # builds and compares both languages' notebooks
    "test_live_route.py",  # the instructor's live route, run twice after Run All
    "test_lessons_chinese.py",  # the lesson modules in Chinese (the fast tier runs them in English)
    "test_lessons_repeat.py",  # every widget pressed again and again
    "test_transcript_properties.py",  # hypothesis over every byte of damaged files
}


def pytest_addoption(parser):
    parser.addoption("--full", action="store_true",
                     help="run the slow tier too (Chinese notebooks, grader suites, browser, long campaigns)")


def _is_slow(item) -> bool:
    path = Path(str(item.fspath))
    in_chinese = "[zh" in item.nodeid or (path.suffix == ".ipynb" and "zh" in path.parent.parts)
    # notebooks/en/NN_*.ipynb only: notebooks/<language>/beyond-s09/ holds the notebooks beyond the lesson
    a_chapter = path.parent.name == "en" and LESSON_CHAPTER.fullmatch(path.name)
    beyond_the_lesson = path.suffix == ".ipynb" and not a_chapter
    return (item.get_closest_marker("slow") is not None or path.name in SLOW_MODULES or in_chinese
            or beyond_the_lesson)


def pytest_collection_modifyitems(config, items):
    """Deselect the slow tier unless --full (or an explicit -m expression) asks for it."""
    for item in items:
        if _is_slow(item):
            item.add_marker(pytest.mark.slow)
    if config.getoption("--full") or config.getoption("markexpr"):
        return
    slow = [item for item in items if _is_slow(item)]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if not _is_slow(item)]
