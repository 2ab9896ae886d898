"""Each notebook's nbval kernel gets its own TMPDIR, removed once nbval has stopped that kernel.

nbval stops a kernel with a SIGKILL (shutdown_kernel(now=True)), so the kernel's TemporaryDirectory
finalizers never run: without this, every test run left one folder per notebook in /tmp. In Jupyter a
kernel is shut down gently, and each notebook removes its own folder.
"""

import os
import shutil
import tempfile

import pytest

kernel_folders = {}  # notebook node -> the TMPDIR its kernel was started with


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
