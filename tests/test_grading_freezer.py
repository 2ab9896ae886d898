"""The freezer (issue 49): the grader freezes the student's side on the trusted side's request and thaws it after.

A real process in a real freezer group of each kind this machine has (cgroup v1's freezer, cgroup v2's
cgroup.freeze), frozen through the grader's FreezeServer by the channel's own client, as a grading does between an
answer's return and the end of its copy back. The grader's real gradings meet it in
tests/test_grading_after_the_return.py.
"""

import os
import subprocess
import time

import pytest

from s09_jsonl_transcript.grading import channel, sandbox
from s09_jsonl_transcript.grading.freezer import FreezeServer

HANG_GUARD = 30  # seconds: only so that a server that never thaws fails the test instead of hanging the suite


def hierarchies() -> list:
    """(label, (folder, is cgroup v2)) of each freezer hierarchy mounted here."""
    found = []
    if (sandbox.CGROUP_FREEZER / "cgroup.procs").exists():
        found.append(("cgroup v1", (sandbox.CGROUP_FREEZER, False)))
    found += [("cgroup v2", (root, True)) for root in sandbox.CGROUP_UNIFIED if (root / "cgroup.controllers").exists()]
    return found


@pytest.fixture(params=hierarchies() or [("none", None)], ids=lambda param: param[0])
def frozen_process(request, tmp_path):
    """(a sleeping process in a freezer group of its own, the group, the server, the channel's client)."""
    label, root = request.param
    if root is None or os.geteuid() != 0:
        pytest.skip("no freezer hierarchy this process may use")
    group = sandbox._make_freezer_group(f"test-{os.getpid()}-{label[-2:]}", root)
    sleeper = subprocess.Popen(["sleep", "600"])
    server = FreezeServer(tmp_path / "freezer.sock", group)
    try:
        group.add(sleeper.pid)
        yield sleeper, group, server, channel._Freezer(str(tmp_path / "freezer.sock"))
    finally:
        server.close()
        sleeper.kill()
        sleeper.wait()
        assert group.remove()


def process_is_frozen(pid: int, group) -> bool:
    if group.unified:
        return group.is_frozen()
    with open(f"/proc/{pid}/stat", "rb") as stat:
        return stat.read().rsplit(b")", 1)[1].split()[0] == b"D"  # a v1-frozen task sleeps uninterruptibly


def test_the_channel_freezes_the_student_side_through_the_grader_and_thaws_it(frozen_process):
    sleeper, group, server, client = frozen_process
    assert not group.is_frozen()
    with client.frozen():
        assert group.is_frozen() and server.frozen
        assert process_is_frozen(sleeper.pid, group)
    assert not group.is_frozen() and not server.frozen
    assert not process_is_frozen(sleeper.pid, group)


def test_a_line_that_closes_while_frozen_leaves_nothing_frozen(frozen_process):
    _, group, server, client = frozen_process
    assert client._ask(b"F") and group.is_frozen()
    client.connection.close()  # the trusted kernel died between the freeze and the thaw
    deadline = time.monotonic() + HANG_GUARD
    while (group.is_frozen() or server.frozen) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not group.is_frozen() and not server.frozen


def test_without_a_group_the_copy_goes_on_unfrozen(tmp_path):
    server = FreezeServer(tmp_path / "freezer.sock", None)
    try:
        client = channel._Freezer(str(tmp_path / "freezer.sock"))
        with client.frozen():
            assert not server.frozen
        assert client.connection is not None  # the grader answered: "no freezer"
    finally:
        server.close()


def test_a_socket_deeper_than_a_socket_path_holds_is_served(tmp_path):
    """An unsandboxed grading under a deep temporary folder puts the server's socket past 107 bytes."""
    folder = tmp_path / ("a-long-folder-name-" * 6) / "watch"
    folder.mkdir(parents=True)
    server = FreezeServer(folder / "freezer.sock", None)
    try:
        client = channel._Freezer(str(folder / "freezer.sock"))
        with client.frozen():
            pass
        assert client.connection is not None
    finally:
        server.close()


def test_without_the_graders_socket_nothing_is_asked(tmp_path):
    client = channel._Freezer(str(tmp_path / "no-such.sock"))
    with client.frozen():
        pass
    assert client.connection is None
    with channel._Freezer(None).frozen():
        pass
