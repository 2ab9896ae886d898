"""Two things nbval does not do by itself for the kit's notebooks.

- A cell tagged machine-dependent (s09_jsonl_transcript/text/saving.py: timings, kill counts, measured
  plots) is saved with its verdict lines only. nbval compares the fresh outputs of every cell with the saved
  ones; for such a cell, the fresh outputs go through the same reduction first (saving.verdict_outputs),
  so only its verdict lines are compared, and anything it writes to stderr still fails it.
- Each notebook's nbval kernel gets its own TMPDIR, removed once nbval has stopped that kernel. nbval stops
  a kernel with a SIGKILL (shutdown_kernel(now=True)), so the kernel's TemporaryDirectory finalizers never
  run: without this, every test run left one folder per notebook in /tmp. In Jupyter a kernel is shut down
  gently, and each notebook removes its own folder.
"""

import os
import shutil
import tempfile

import pytest

from s09_jsonl_transcript.text import saving

kernel_folders = {}  # notebook node -> the TMPDIR its kernel was started with


def pytest_collection_modifyitems(items):
    """Make nbval compare only the verdict lines of each machine-dependent cell's fresh output."""
    for item in items:
        cell = getattr(item, "cell", None)  # an nbval cell item; other items have no cell
        if cell is not None and hasattr(item, "compare_outputs") and saving.is_machine_dependent(cell):
            item.compare_outputs = verdicts_compared(item.compare_outputs)


def verdicts_compared(compare_outputs):
    """nbval's compare_outputs(fresh, saved), given the fresh outputs as saving.saved_form keeps them."""
    def compare(test, ref, skip_compare=None):
        return compare_outputs(saving.verdict_outputs(test), ref, skip_compare)
    return compare


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    """Start the notebook's kernel (nbval does it in its first cell's setup) with a TMPDIR of its own."""
    notebook = item.parent
    if notebook in kernel_folders:
        return (yield)
    kernel_folders[notebook] = tempfile.mkdtemp(prefix="s09-nbval-kernel-")
    before = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = kernel_folders[notebook]  # the kernel copies os.environ as it starts
    try:
        return (yield)
    finally:
        if before is None:
            del os.environ["TMPDIR"]
        else:
            os.environ["TMPDIR"] = before


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """After a notebook's last cell, nbval has stopped its kernel: remove the kernel's TMPDIR."""
    try:
        return (yield)
    finally:
        if item.parent in kernel_folders and (nextitem is None or nextitem.parent is not item.parent):
            remove_kernel_folder(item.parent)


def pytest_sessionfinish(session):
    """Remove the folders of notebooks a stopped run (-x, Ctrl-C) did not finish."""
    for notebook in list(kernel_folders):
        remove_kernel_folder(notebook)


def remove_kernel_folder(notebook) -> None:
    """Housekeeping, not a check: a file a killed kernel left open is no reason to fail a cell."""
    shutil.rmtree(kernel_folders.pop(notebook), ignore_errors=True)
