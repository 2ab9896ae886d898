"""The exchange folder, where the student's kernel can change anything while the trusted side copies (issue 42):
no link is followed in any part of a path, either way, and no tree a student makes defeats the clean-up. Nothing
the student's side puts where the trusted side copies makes it wait (issue 49): a named pipe, a socket or a link
is set aside, and one re-created as fast as it is set aside costs the copy, with its reason; the exchange
folder's numbers are never given twice.

Without a kernel: the folders the student would change are changed by the test, between the steps a grading
takes (the real grader meets the same in tests/test_grading_resources.py).
"""

import os
import socket
import stat
import threading
from pathlib import Path

import pytest

from s09_jsonl_transcript.grading import channel, exchange


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
    assert exchange.NOT_FILES in budget.left_out


def test_a_tree_deeper_than_the_limit_is_copied_to_the_limit_and_said(folders):
    root, shared, check, _ = folders
    (check / "deep").mkdir()
    copy_out(root, ["files", "1"], check / "deep")
    make_deep_tree(shared / "files" / "1" / "deep", 40)
    budget = copy_back(root, ["files", "1"], check / "deep")
    depth = sum(1 for _ in (check / "deep").rglob("d"))
    assert depth == exchange.FOLDER_DEPTH - 1
    assert any(f"folders more than {exchange.FOLDER_DEPTH} levels deep" in why for why in budget.left_out)


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


# --------------------------------------------------------------------------- what the student's side puts in the way

HANG_GUARD = 60  # seconds: only so that a copy that does block fails the test instead of hanging the suite


def copied_out_in_a_thread(root: int, source: Path) -> list:
    """copy_out in a thread: [] once it returned, [the error] once it raised; a copy still waiting fails the test."""
    ended = []

    def copy():
        try:
            copy_out(root, ["files", "1"], source)
            ended.append(None)
        except Exception as error:  # noqa: BLE001 - what it raised is the result
            ended.append(error)

    thread = threading.Thread(target=copy, daemon=True)
    thread.start()
    thread.join(HANG_GUARD)
    assert ended, "copy_out is still waiting on what the student's side put there"
    return [error for error in ended if error is not None]


def planted(shared: Path, kind: str) -> Path:
    """A named pipe (with no reader), a socket or a link where the check's file goes in the exchange folder."""
    folder = shared / "files" / "1"
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "session.jsonl"
    if kind == "pipe":
        os.mkfifo(target)
    elif kind == "socket":
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(target))
        listener.close()  # the socket file stays
    else:
        target.symlink_to(shared.parent / "secret" / "session.jsonl")
    return target


@pytest.mark.parametrize("kind", ["pipe", "socket", "link"])
def test_a_pipe_a_socket_or_a_link_where_the_file_goes_is_set_aside_without_waiting(folders, kind):
    root, shared, check, secret = folders
    (check / "session.jsonl").write_text("the check's file\n")
    target = planted(shared, kind)
    assert copied_out_in_a_thread(root, check / "session.jsonl") == []
    assert stat.S_ISREG(os.lstat(target).st_mode) and target.read_text() == "the check's file\n"
    assert (secret / "session.jsonl").read_text() == "the trusted side's own file\n"
    aside = [name for name in os.listdir(target.parent) if name.startswith(".set-aside-")]
    assert len(aside) == 1


def test_a_pipe_with_a_reader_is_not_written_into(folders):
    root, shared, check, _ = folders
    (check / "session.jsonl").write_text("the check's file\n")
    target = planted(shared, "pipe")
    reader = os.open(target, os.O_RDONLY | os.O_NONBLOCK)  # a child of the answer holds the other end
    try:
        assert copied_out_in_a_thread(root, check / "session.jsonl") == []
        assert os.read(reader, 100) == b"", "the check's bytes went into the student's pipe"
    finally:
        os.close(reader)
    assert target.read_text() == "the check's file\n"


def test_a_pipe_put_back_as_fast_as_it_is_set_aside_costs_the_copy_with_its_reason(folders, monkeypatch):
    """The student's side wins every race: each time the trusted side moves the pipe aside, a new one is there."""
    root, shared, check, _ = folders
    (check / "session.jsonl").write_text("the check's file\n")
    target = planted(shared, "pipe")
    set_aside = exchange.set_aside
    put_back = []

    def and_put_back(parent, name):
        set_aside(parent, name)
        os.mkfifo(name, dir_fd=parent)
        put_back.append(name)

    monkeypatch.setattr(exchange, "set_aside", and_put_back)
    errors = copied_out_in_a_thread(root, check / "session.jsonl")
    assert len(errors) == 1 and isinstance(errors[0], exchange.Interfered), errors
    assert "kept putting something that is not a file" in str(errors[0]) and "session.jsonl" in str(errors[0])
    assert len(put_back) == exchange.ATTEMPTS
    assert stat.S_ISFIFO(os.lstat(target).st_mode)  # left as the student's side made it


def test_a_pipe_left_where_the_answer_wrote_is_left_out_of_the_copy_back_with_its_reason(folders):
    root, shared, check, _ = folders
    (check / "session.jsonl").write_text("the check's file\n")
    copy_out(root, ["files", "1"], check / "session.jsonl")
    copied = shared / "files" / "1" / "session.jsonl"
    copied.unlink()
    os.mkfifo(copied)  # no writer: a blocking open for reading would wait for ever
    budget = copy_back(root, ["files", "1"], check / "session.jsonl")
    assert exchange.NOT_FILES in budget.left_out
    assert not (check / "session.jsonl").exists(), "the answer left no file at the path it was given"


def test_an_exchange_number_is_never_given_twice(tmp_path, monkeypatch):
    """A path whose folder is gone is dropped; the next path gets a number of its own, not the dropped one's."""
    shared = tmp_path / "exchange"
    shared.mkdir()
    monkeypatch.setenv(channel.EXCHANGE_VARIABLE, str(shared))
    kernel = channel.StudentKernel()
    kernel._exchange = exchange.open_root(shared)
    try:
        first, second = tmp_path / "first", tmp_path / "second"
        for folder in (first, second):
            folder.mkdir()
            (folder / "session.jsonl").write_text(f"{folder.name}\n")
        first_inside = kernel._exchange_path(first / "session.jsonl")
        kernel._sync_out()
        (first / "session.jsonl").unlink()
        first.rmdir()  # the first check's folder is gone: so is its path
        kernel._sync_out()
        second_inside = kernel._exchange_path(second / "session.jsonl")
        kernel._sync_out()
    finally:
        os.close(kernel._exchange)
    assert Path(first_inside).parent != Path(second_inside).parent
    assert Path(second_inside).read_text() == "second\n"
