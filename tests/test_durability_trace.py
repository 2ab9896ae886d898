"""The recorder's log, read: the common lines' quick reading agrees with the general one, calls that
strace splits are joined, and nothing the answer writes can pass for a line of the log."""

import pytest
from capstone_answers import REFERENCE, TINY, attack, require_recorder, torn_file

from s09_jsonl_transcript.grading.durability.contract import SESSION_ID, continuation_event, session_events
from s09_jsonl_transcript.grading.durability.engine import campaign
from s09_jsonl_transcript.grading.durability.kit import reference_read
from s09_jsonl_transcript.grading.durability.sessions import judge_batch, record_session
from s09_jsonl_transcript.grading.durability.trace import call_from_json, parse_line, parse_log, split_top


def _logs(source: str) -> list:
    """Every log line of a recorded session and of a batch of two states (one torn), in the sandbox."""
    require_recorder()
    with campaign(source, seed=3, size=TINY) as run:
        record_session(run.runner, run.workspace, session_events(3, 4))
        judge_batch(run.runner, run.workspace, "two", [(torn_file(), "abc"), (None, "abc")], continuation_event(3),
                    lambda path: reference_read(path, SESSION_ID))
        return [line.rstrip("\n") for log in sorted(run.workspace.logs.glob("run-*.log"))
                for line in log.read_text(encoding="utf-8").splitlines()]


def test_the_quick_reading_of_common_lines_agrees_with_the_general_one():
    lines = _logs(REFERENCE)
    assert len(lines) > 300
    quick_cwds, general_cwds = {}, {}
    for line in lines:
        assert parse_line(line, quick_cwds) == parse_line(line, general_cwds, fast=False), line


def test_a_call_split_by_another_process_is_joined():
    log = parse_log([
        '10 write(3<\\x2f\\x61>, "\\x68\\x69", 2 <unfinished ...>',
        '11 fsync(4<\\x2f\\x62>) = 0',
        '10 <... write resumed>) = 2',
        '12 fsync(5<\\x2f\\x63> <unfinished ...>',
        '12 +++ killed by SIGKILL +++',
    ])
    assert [(call.pid, call.name) for call in log.calls] == [(11, "fsync"), (10, "write"), (12, "fsync")]
    assert log.calls[1].data == b"hi" and log.calls[1].path == "/a" and log.calls[1].result == 2
    assert log.calls[2].killed  # the call its process died in never returned
    assert log.endings == {12: "killed by SIGKILL"}


def test_paths_and_flags_are_read_as_the_kernel_gave_them():
    cwds = {}
    call = parse_line('7 openat(-100<\\x2f\\x74\\x6d\\x70>, "\\x78\\x2e\\x6a\\x73\\x6f\\x6e\\x6c", 0x80441, 0644)'
                      ' = 3<\\x2f\\x74\\x6d\\x70\\x2f\\x78\\x2e\\x6a\\x73\\x6f\\x6e\\x6c>', cwds)
    assert (call.path, call.flags, call.result, call.result_path) == ("/tmp/x.jsonl", 0x80441, 3, "/tmp/x.jsonl")
    assert cwds == {7: "/tmp"}
    relative = parse_line('7 truncate("\\x78\\x2e\\x6a\\x73\\x6f\\x6e\\x6c", 5) = 0', cwds)
    assert (relative.path, relative.length) == ("/tmp/x.jsonl", 5)  # against the working directory seen last
    failed = parse_line('7 openat(-100<\\x2f>, "\\x2f\\x6e\\x6f", 0) = -1 ENOENT (No such file or directory)', {})
    assert failed.failed and failed.result == -1
    device = parse_line('7 write(1<\\x2f\\x64\\x65\\x76\\x2f\\x6e\\x75\\x6c\\x6c<char 1:3>>, "\\x61", 1) = 1', {})
    assert device.path == "/dev/null"
    gone = parse_line('7 write(6<\\x2f\\x78>(deleted), "\\x61", 1) = 1', {})
    assert gone.path == "/x (deleted)"


def test_arguments_split_only_at_their_own_commas():
    assert split_top('3<\\x2f>, [{iov_base="\\x2c", iov_len=1}, {iov_base="\\x5d", iov_len=1}], 2') == [
        "3<\\x2f>", '[{iov_base="\\x2c", iov_len=1}, {iov_base="\\x5d", iov_len=1}]', "2"]
    assert split_top("{flags=0x3d0f00, stack=0x7f} => {parent_tid=[24155]}, 88") == [
        "{flags=0x3d0f00, stack=0x7f} => {parent_tid=[24155]}", "88"]
    assert split_top("3<UNIX-STREAM:[11->12]>, 4") == ["3<UNIX-STREAM:[11->12]>", "4"]


def test_a_line_this_reader_does_not_know_is_kept_not_fatal():
    log = parse_log(['7 write(3<\\x2f\\x78>, "\\xzz", 1) = 1', "not a line of strace at all"])
    assert log.unparsed == ["not a line of strace at all"]
    [write] = log.calls
    assert write.truncated and write.data is None  # bytes it cannot read: the tracker refuses the write


def test_what_the_answer_writes_cannot_pass_for_a_line_of_the_log():
    lines = _logs(attack("confuses_recorder"))
    calls = parse_log(lines).calls
    assert {call.pid for call in calls} == {int(line.split()[0]) for line in lines if line[:1].isdigit()}
    assert 1 not in {call.pid for call in calls}  # the forged lines say pid 1
    assert not any("killed by" in line for line in lines)  # every byte it wrote reached the log escaped


def test_the_local_checks_calls_read_as_the_recorders_do():
    call = call_from_json({"call": "write", "path": "/t/x.jsonl", "pid": 4, "fd": 3, "flags": 1025,
                           "data": b"ab\n".hex()}, 4)
    assert (call.name, call.fd, call.path, call.data, call.result) == ("write", 3, "/t/x.jsonl", b"ab\n", 3)
    opened = call_from_json({"call": "open", "path": "/t/x.jsonl", "pid": 4, "fd": 5, "flags": 1089}, 4)
    assert (opened.name, opened.result, opened.result_path) == ("openat", 5, "/t/x.jsonl")


@pytest.mark.parametrize("name", ["?open", "openat", "write", "fsync", "clone", "mmap", "?io_uring_setup"])
def test_the_recorder_traces_the_calls_the_table_names(name):
    from s09_jsonl_transcript.grading.durability.calls import TRACED

    assert name in TRACED
