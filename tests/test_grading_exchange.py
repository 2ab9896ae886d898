"""The exchange folder, where the student's kernel can change anything while the trusted side copies (issue 42):
no link is followed in any part of a path, either way, and no tree a student makes defeats the clean-up.

Without a kernel: the folders the student would change are changed by the test, between the steps a grading
takes (the real grader meets the same in tests/test_grading_resources.py).
"""

import os
from pathlib import Path

import pytest

from s09_jsonl_transcript.grading import exchange


@pytest.fixture
def folders(tmp_path):
    """(the exchange folder's descriptor, the exchange folder, the check's own folder, a secret folder)."""
    shared, check, secret = tmp_path / "exchange", tmp_path / "check", tmp_path / "secret"
    for folder in (shared, check, secret):
        folder.mkdir()
    (secret / "session.jsonl").write_text("the trusted side's own file\n")
    root = os.open(shared, os.O_RDONLY | os.O_DIRECTORY)
    yield root, shared, check, secret
    os.close(root)


def copy_out(root: int, parts: list, source: Path) -> None:
    folder = exchange.open_path(root, parts, create=True)
    try:
        exchange.copy_out(source, folder, source.name)
    finally:
        os.close(folder)


def copy_back(root: int, parts: list, target: Path) -> exchange.Budget:
    budget = exchange.Budget(1 << 20)
    folder = exchange.open_path(root, parts, create=True)
    try:
        exchange.copy_back(folder, target.name, target, budget)
    finally:
        os.close(folder)
    return budget


def test_a_link_in_a_folder_above_the_file_is_not_read_through(folders):
    root, shared, check, secret = folders
    (check / "session.jsonl").write_text("the check's file\n")
    copy_out(root, ["files", "1"], check / "session.jsonl")
    (shared / "files" / "1").rename(shared / "files" / "moved")  # what the answer does during the call
    (shared / "files" / "1").symlink_to(secret)
    copy_back(root, ["files", "1"], check / "session.jsonl")
    assert not (check / "session.jsonl").exists(), "the answer left no file at the path it was given"
    assert (secret / "session.jsonl").read_text() == "the trusted side's own file\n"


def test_a_link_in_a_folder_above_the_file_is_not_written_through(folders):
    root, shared, check, secret = folders
    (check / "session.jsonl").write_text("the check's file\n")
    (shared / "files").symlink_to(secret)  # planted before the trusted side writes
    copy_out(root, ["files", "1"], check / "session.jsonl")
    assert sorted(os.listdir(secret)) == ["session.jsonl"]
    assert (secret / "session.jsonl").read_text() == "the trusted side's own file\n"
    assert (shared / "files").is_dir() and not (shared / "files").is_symlink()
    assert (shared / "files" / "1" / "session.jsonl").read_text() == "the check's file\n"


def test_a_link_as_the_file_or_inside_a_folder_is_left_out(folders):
    root, shared, check, secret = folders
    (check / "notes").mkdir()
    (check / "notes" / "a.txt").write_text("a\n")
    copy_out(root, ["files", "1"], check / "notes")
    copied = shared / "files" / "1" / "notes"
    (copied / "a.txt").unlink()
    (copied / "a.txt").symlink_to(secret / "session.jsonl")
    (copied / "inner").symlink_to(secret)
    budget = copy_back(root, ["files", "1"], check / "notes")
    assert sorted(os.listdir(check / "notes")) == []
    assert "links, pipes or devices" in budget.left_out


def test_a_tree_deeper_than_the_limit_is_copied_to_the_limit_and_said(folders):
    root, shared, check, _ = folders
    (check / "deep").mkdir()
    copy_out(root, ["files", "1"], check / "deep")
    make_deep_tree(shared / "files" / "1" / "deep", 40)
    budget = copy_back(root, ["files", "1"], check / "deep")
    depth = sum(1 for _ in (check / "deep").rglob("d"))
    assert depth == exchange.FOLDER_DEPTH - 1
    assert f"folders more than {exchange.FOLDER_DEPTH} levels deep" in budget.left_out


def make_deep_tree(root: Path, levels: int) -> None:
    """A tree of levels folders named d, one in the other (deeper than any path a file system takes whole)."""
    folder = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(levels):
        os.mkdir("d", dir_fd=folder)
        inner = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=folder)
        os.close(folder)
        folder = inner
    with open(os.open("f", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=folder), "w") as leaf:
        leaf.write("the bottom\n")
    os.close(folder)


@pytest.mark.slow  # a second or two to make the tree
def test_the_clean_up_removes_a_tree_thousands_of_levels_deep(tmp_path):
    top = tmp_path / "scratch"
    top.mkdir()
    (top / "a file").write_text("x")
    os.symlink(tmp_path, top / "a link up")  # removed as a link, never followed
    make_deep_tree(top, 2500)  # a path to its bottom is ~5,000 bytes: more than PATH_MAX and the recursion limit
    exchange.remove_tree(top)
    assert not top.exists() and tmp_path.exists()
    assert exchange.remove_quietly(top) is None
