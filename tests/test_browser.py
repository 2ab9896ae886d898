"""The notebooks in a real JupyterLab, in a real browser (Debian's Chromium, headless).

nbval proves that the notebooks compute the right things in a kernel; it cannot see what a
student sees. For every notebook (notebooks/<language>/ and its beyond-s09/) this test opens it in JupyterLab, runs all
cells, and fails on an error or stderr output, a widget that does not render ("Error displaying
widget", "Loading widget..." left over, a widget shown as text), a plot not shown as an image, or a
markdown image that does not load. Where the notebook has a main control (a Button with class
s09-main-control) it clicks it and requires the s09-result widget's text to change.

One JupyterLab serves a temporary copy of the repository for the whole module, so the run never
writes into the checkout. A screenshot per notebook goes to artifacts/browser/, named by its place in
notebooks/ (en-01_events_on_disk.png, zh-beyond-s09-06_crash_lab.png): the two languages do not overwrite each other.

Run it alone:  python -m pytest -m browser tests/test_browser.py
Without Chromium it skips (locally) or fails (when CI=true).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from browser_notebook import (
    CLICK_SECONDS,
    click_main_control,
    has_main_control,
    open_notebook,
    output_problems,
    record_browser_errors,
    run_all_cells,
    screenshot_whole_notebook,
    wait_until_settled,
)
from browser_support import (
    copy_repository,
    find_chromium,
    headless_chromium,
    running_jupyterlab,
    tree_changes,
    tree_snapshot,
)

from s09_jsonl_transcript.text.bilingual import notebook_files

REPO = Path(__file__).resolve().parent.parent
# every notebook in both languages, the chapters first, then the notebooks beyond s09
NOTEBOOKS = [path.relative_to(REPO).as_posix() for language in ("en", "zh") for path in notebook_files(language)]
SCREENSHOTS = REPO / "artifacts" / "browser"

pytestmark = pytest.mark.browser


def _unavailable(reason: str):
    """Skip with reason; under CI=true a missing browser is a failure, not a skip."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {reason}", pytrace=False)
    pytest.skip(reason)


def _widget_class_names() -> list[str]:
    """Names of every displayable ipywidgets class: a text output starting 'Button(...' is a widget repr."""
    import ipywidgets

    names, pending = set(), [ipywidgets.DOMWidget]
    while pending:
        widget_class = pending.pop()
        names.add(widget_class.__name__)
        pending.extend(widget_class.__subclasses__())
    return sorted(names)


@pytest.fixture(scope="module")
def scratch():
    """A temporary folder for the module: the served copy, Jupyter's state, Chromium's profile."""
    with tempfile.TemporaryDirectory(prefix="s09-browser-") as folder:
        yield Path(folder)


@pytest.fixture(scope="module")
def browser(scratch):
    """A headless Chromium context (fresh profile) shared by every notebook of the module."""
    try:
        import playwright  # noqa: F401
    except ImportError:
        _unavailable("the Python package playwright is not installed")
    executable = find_chromium()
    if executable is None:
        _unavailable("Debian's chromium is not installed (apt-get install chromium)")
    with headless_chromium(executable, scratch / "chromium-profile") as context:
        yield context


@pytest.fixture(scope="module")
def lab(scratch):
    """One JupyterLab for the module, serving a copy of the repository; its log goes to artifacts/browser."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    root = copy_repository(REPO, scratch / "repository")
    with running_jupyterlab(root, scratch / "jupyter", SCREENSHOTS / "jupyterlab.log") as server:
        yield server


def _problems_seen_in_browser(page, url: str, click_seconds: float = CLICK_SECONDS) -> list[str]:
    """Open, run all, check, click the main control, check again; return every problem found."""
    widget_names = _widget_class_names()
    browser_errors = record_browser_errors(page)
    open_notebook(page, url)
    run_all_cells(page)
    problems = output_problems(page, widget_names)
    if has_main_control(page):
        try:
            click_main_control(page, click_seconds)
        except AssertionError as failure:  # reported with the rest, after the outputs are checked again
            problems.append(str(failure))
        wait_until_settled(page)
        problems += [f"after the click: {problem}" for problem in output_problems(page, widget_names)
                     if problem not in problems]
    return problems + browser_errors


def screenshot_name(notebook: str) -> str:
    """The screenshot's file name: the notebook's place under notebooks/ (language and part included), or its path."""
    parts = Path(notebook).with_suffix("").parts
    return "-".join(parts[1:] if parts[0] == "notebooks" else parts) + ".png"


def test_each_notebook_has_a_screenshot_of_its_own():
    names = [screenshot_name(notebook) for notebook in NOTEBOOKS]
    assert len(set(names)) == len(names)
    assert "en-01_events_on_disk.png" in names and "zh-beyond-s09-06_crash_lab.png" in names


def _inspect(notebook: str, browser, lab, click_seconds: float = CLICK_SECONDS) -> list[str]:
    """Everything wrong with one notebook (path relative to the served root) in the browser."""
    tree_before = tree_snapshot(lab.root)
    page = browser.new_page()
    try:
        problems = _problems_seen_in_browser(page, lab.notebook_url(notebook), click_seconds)
    finally:
        screenshot_whole_notebook(page, SCREENSHOTS / screenshot_name(notebook))
        page.close()
        lab.shutdown_kernels()
    # Nothing may be saved or left behind: not the notebook (no autosave), not a file the notebook wrote.
    changes = tree_changes(tree_before, tree_snapshot(lab.root))
    return problems + [f"the served tree changed: {change}" for change in changes]


# `browser` comes before `lab`: without Chromium the test skips before a server is started.
@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_notebook_renders_and_responds_in_browser(notebook, browser, lab):
    """The notebook runs clean in JupyterLab, its widgets render, and its main control works."""
    problems = _inspect(notebook, browser, lab)
    assert not problems, f"{notebook} in the browser:\n  " + "\n  ".join(problems)


# A notebook with one of each failure, to prove the checks above can fail. Each cell's source is
# paired with a fragment of the problem the checks must report for it (None: no problem of its own).
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
BROKEN_CELLS = [
    ("markdown", "![a picture that is not there](no-such-picture.png)",
     "no-such-picture.png did not load"),
    ("code", "import sys\nimport ipywidgets\nfrom IPython.display import display", None),
    ("code", "print('a warning', file=sys.stderr)", "stderr: a warning"),
    ("code", f"display({{'{WIDGET_VIEW}': {{'model_id': 'no-such-model', 'version_major': 2, "
             f"'version_minor': 0}}, 'text/plain': 'Button()'}}, raw=True)", "Error displaying widget"),
    ("code", "print(ipywidgets.Button(description='shown as text'))", "widget repr printed as text"),
    ("code", "display({'text/plain': '<Figure size 640x480 with 1 Axes>'}, raw=True)",
     "figure shown as text"),
    ("code", "display(ipywidgets.Button(description='does nothing').add_class('s09-main-control'),\n"
             "        ipywidgets.HTML('never changes').add_class('s09-result'))", "did not change"),
    ("code", "open('left-behind.txt', 'w').close()", "added browser-self-test/left-behind.txt"),
    ("code", "raise ValueError('on purpose')", "error ValueError: on purpose"),
    ("code", "print('after the error')", "never ran"),
]


def _write_broken_notebook(path: Path) -> None:
    """Write the cells of BROKEN_CELLS to a new notebook at path."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

    make_cell = {"markdown": new_markdown_cell, "code": new_code_cell}
    notebook = new_notebook(cells=[make_cell[kind](source) for kind, source, _ in BROKEN_CELLS])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, path)


def test_browser_checks_catch_a_broken_notebook(browser, lab):
    """Every kind of failure the browser checks look for is reported when it is there."""
    _write_broken_notebook(lab.root / "browser-self-test" / "self_test_broken_on_purpose.ipynb")
    # Its button does nothing, so no wait can see its result change: 3 s only keeps the test short.
    problems = _inspect("browser-self-test/self_test_broken_on_purpose.ipynb", browser, lab, click_seconds=3)
    report = "\n".join(problems)
    missed = [expected for _, _, expected in BROKEN_CELLS if expected and expected not in report]
    assert not missed, f"the checks missed {missed}; they reported:\n{report}"
