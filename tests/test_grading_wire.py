"""What crosses between the grader's two kernels, and how (issue 42), without a kernel: values as JSON with typed
descriptions, exceptions with their classes, frames on the channel's socket, and a served file whose reads cost
one round trip each (the real grader grades the same answers in tests/test_grading_fidelity.py).
"""

import collections
import io
import math
import os
import socket
import threading
from pathlib import Path, PurePosixPath

import pytest

from s09_jsonl_transcript import code
from s09_jsonl_transcript.grading import channel, student_side, wire
from s09_jsonl_transcript.grading.checks import CountingFile, pair

KNOWN = wire.known_exceptions(code)


def crossed(value):
    return wire.decode(wire.encode(value))


class AlwaysEqual(str):
    def __eq__(self, other):
        return True

    __hash__ = str.__hash__


def test_plain_data_crosses_as_itself():
    value = {"a": [1, 2.5, None, True, "x"], "b": {"c": []}}
    assert crossed(value) == value and type(crossed(value)["a"]) is list


@pytest.mark.parametrize("value", [
    (1, None), frozenset({1, 2}), {3, 4}, b"\x00\xff", bytearray(b"ab"), Path("/tmp/x"), {1: "int key"},
    {"$path": "a key that looks typed"}, float("inf"), 2 ** 20_000, {(1, 2): [b"x"]},
], ids=lambda value: type(value).__name__)
def test_what_json_cannot_hold_crosses_typed_and_equal(value):
    assert crossed(value) == value and type(crossed(value)) is type(value)


def test_a_namedtuple_crosses_as_the_tuple_it_equals_and_nan_stays_nan():
    Verdict = collections.namedtuple("Verdict", "kind line")
    assert crossed(Verdict("corrupt", 5)) == ("corrupt", 5) == pair(crossed(Verdict("corrupt", 5)))
    assert math.isnan(crossed(float("nan")))


def test_a_subclass_that_lies_crosses_as_the_plain_value_it_holds():
    got = crossed([AlwaysEqual("anything")])
    assert got == ["anything"] and got != ["something else"] and type(got[0]) is str


def test_a_value_that_is_not_data_crosses_as_unreadable_which_equals_nothing():
    got = crossed({"gen": (n for n in ()), "obj": object()})
    assert isinstance(got["gen"], wire.Unreadable) and "generator" in repr(got["gen"])
    assert got["gen"] != got["obj"] and got["gen"] == got["gen"] and got["obj"] != object()


def test_too_deep_is_unreadable_and_too_large_is_refused():
    nested = []
    for _ in range(wire.DEPTH_LIMIT + 5):
        nested = [nested]
    assert isinstance(wire.value_of(wire.decode(wire.encode(nested))), list)
    assert "nested more than" in repr(eval_path(crossed(nested), wire.DEPTH_LIMIT))
    with pytest.raises(wire.TooLarge):
        wire.encode("x" * (wire.VALUE_LIMIT + 1))


def eval_path(value, depth):
    for _ in range(depth):
        value = value[0]
    return value


@pytest.mark.parametrize("text", ['{"$nope": 1}', "[", '{"$tuple": 3}', '{"$bytes": "%%%"}'])
def test_what_the_other_side_did_not_write_is_malformed(text):
    with pytest.raises(wire.Malformed):
        wire.decode(text)


# --------------------------------------------------------------------------- exceptions


def rebuilt(error):
    return wire.rebuild_exception(wire.describe_exception(error), KNOWN, reserved=channel.RESERVED)


def test_an_answers_subclass_of_value_error_is_caught_by_except_value_error():
    class PrevAlreadySet(ValueError):
        pass

    error = rebuilt(PrevAlreadySet("the event already has a 'prev' field"))
    assert isinstance(error, ValueError) and type(error).__name__ == "PrevAlreadySet"
    assert str(error) == "the event already has a 'prev' field"


def test_a_lesson_exception_and_an_os_error_keep_their_fields():
    error = rebuilt(code.TranscriptCorruptionError(Path("/x/s.jsonl"), 4, 120, "not JSON"))
    assert type(error) is code.TranscriptCorruptionError and (error.line_number, error.byte_offset) == (4, 120)
    assert error.path == Path("/x/s.jsonl") and str(error) == "s.jsonl:4: not JSON (byte offset 120)"
    error = rebuilt(OSError(22, "Invalid argument"))
    assert type(error) is OSError and error.errno == 22 and str(error) == "[Errno 22] Invalid argument"
    missing = rebuilt(FileNotFoundError(2, "No such file or directory", "gone.jsonl"))
    assert isinstance(missing, FileNotFoundError) and missing.filename == "gone.jsonl"


def test_a_subclass_of_the_lessons_exception_is_caught_as_it():
    class ShardsBroken(code.TranscriptCorruptionError):
        pass

    error = rebuilt(ShardsBroken("s.jsonl", None, None, "shard 2 is missing"))
    assert isinstance(error, code.TranscriptCorruptionError) and isinstance(error, RuntimeError)
    assert type(error).__name__ == "ShardsBroken" and "shard 2 is missing" in str(error)


def test_an_answer_cannot_raise_the_graders_own_verdicts():
    class AnswerTimedOut(Exception):
        pass

    error = rebuilt(AnswerTimedOut("fake"))
    assert type(error).__name__ == "AnswerTimedOut (from the answer)" and not isinstance(error, channel.AnswerFailed)


def test_bases_that_cannot_be_combined_keep_the_first():
    class Both(KeyError, OSError):
        pass

    error = rebuilt(Both("x"))
    assert isinstance(error, KeyError) and type(error).__name__ == "Both"


# --------------------------------------------------------------------------- frames


def test_frames_are_read_whole_whatever_the_chunks():
    data = wire.frame({"op": "read"}, b"abc") + wire.frame({"op": "tell"})
    reader = wire.FrameReader()
    frames = [frame for byte in range(len(data)) for frame in reader.feed(data[byte:byte + 1])]
    assert frames == [({"op": "read"}, b"abc"), ({"op": "tell"}, b"")]


def test_a_frame_over_the_limit_is_refused_before_it_is_read():
    reader = wire.FrameReader(data_limit=10)
    with pytest.raises(wire.Malformed):
        reader.feed(wire.frame({"op": "result"}, b"x" * 11)[:12])


# --------------------------------------------------------------------------- a served file


class Server:
    """The trusted side's part of the channel for stand-ins, in a thread, on a Unix socket in tmp_path."""

    def __init__(self, folder: Path, *values):
        self.stand_ins = channel.StandIns()
        self.wired = [self.stand_ins.add(value) for value in values]
        self.path = str(folder / "calls.sock")
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.path)
        self.listener.listen(1)
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        connection, _ = self.listener.accept()
        reader = wire.FrameReader()
        while chunk := connection.recv(1 << 20):
            for header, _ in reader.feed(chunk):
                if header["op"] == "result":
                    self.stand_ins.place(header.get("positions"))
                    connection.sendall(wire.frame({"copied": True}))  # the answer's call ends on this word
                    connection.close()
                    return
                connection.sendall(wire.frame(*self.stand_ins.serve(header)))

    def end(self):
        if self.thread.is_alive():  # once: the call's result ends the serving
            student_side._send_result(None)
            self.thread.join(5)
        student_side._connection.update(path=None, socket=None)
        student_side._files.clear()


@pytest.fixture
def served(tmp_path, monkeypatch):
    made = []

    def serve(*values):
        server = Server(tmp_path, *values)
        monkeypatch.setitem(student_side._current, "call", "call-1")
        monkeypatch.setitem(student_side._current, "socket", server.path)
        made.append(server)
        return server, [wire.value_of(typed, student_side._argument) for typed in server.wired]

    yield serve
    for server in made:
        server.end()


def test_a_one_byte_reader_costs_one_round_trip_per_byte_and_is_counted_exactly(tmp_path, served):
    path = tmp_path / "data.jsonl"
    path.write_bytes(b"".join(b'{"n": %d}\n' % n for n in range(500)))
    counted = CountingFile(open(path, "rb"))
    server, (file,) = served(counted)
    end = file.seek(0, io.SEEK_END)
    data = []
    for position in range(end - 1, end - 2001, -1):
        file.seek(position)  # seeks and tells ask nothing: the file's size and position are known here
        data.append(file.read(1))
    assert b"".join(reversed(data)) == path.read_bytes()[-2000:]
    assert counted.bytes_read == 2000
    assert server.stand_ins.served == 2000 + 1  # one read each, and the size and position once
    left_at = file.tell()
    server.end()
    assert counted.tell() == left_at == end - 1999  # the check's file is where the answer left it


def test_a_seek_before_the_start_raises_the_files_own_error_in_the_answer_at_that_call(tmp_path, served):
    path = tmp_path / "data.jsonl"
    path.write_bytes(b"0123456789")
    server, (file,) = served(CountingFile(open(path, "rb")))
    file.seek(4)
    for offset, whence in ((-1, os.SEEK_SET), (-20, os.SEEK_END), (-5, os.SEEK_CUR)):
        with pytest.raises(OSError) as raised:
            file.seek(offset, whence)
        assert raised.value.errno == 22
    assert file.tell() == 4 and file.read(2) == b"45"
    with pytest.raises(TypeError):
        file.seek(1.5)


def test_what_a_checks_iterator_raises_is_raised_in_the_answer(served):
    def alarm():
        yield {"type": "message"}
        raise AssertionError("asked for an older event")

    _, (events,) = served(alarm())
    assert next(events) == {"type": "message"}
    with pytest.raises(AssertionError, match="asked for an older event"):
        next(events)


def test_a_socket_deeper_than_a_socket_path_holds_is_reached_through_its_folder(tmp_path):
    folder = tmp_path / ("a-long-folder-name-" * 6) / "channel"
    folder.mkdir(parents=True)
    path = str(folder / "calls.sock")
    assert len(path) > 108
    listener, client = socket.socket(socket.AF_UNIX), socket.socket(socket.AF_UNIX)
    for each, act in ((listener, listener.bind), (client, client.connect)):
        if each is client:
            listener.listen(1)
        address, descriptor = wire.socket_address(path)
        act(address)
        os.close(descriptor)
    accepted, _ = listener.accept()
    client.sendall(b"x")
    assert accepted.recv(1) == b"x" and Path(path).is_socket()
    for each in (accepted, client, listener):
        each.close()


def test_a_clock_ticks_across_as_datetimes(served):
    _, (clock,) = served(code.ticking_clock())
    first, second = clock(), clock()
    assert (second - first).total_seconds() == 1 and first.tzinfo is not None


def test_a_path_returned_into_the_exchange_comes_back_as_the_checks_own(tmp_path, monkeypatch):
    monkeypatch.setenv(channel.EXCHANGE_VARIABLE, "/tmp/channel/exchange")
    kernel = channel.StudentKernel()
    here = tmp_path / "folder" / "session.jsonl"
    there = kernel._exchange_path(here)
    assert there == "/tmp/channel/exchange/files/1/session.jsonl"
    assert wire.decode(wire.encode(PurePosixPath(there)), kernel._returned) == here
    assert wire.decode(wire.encode(Path("/elsewhere")), kernel._returned) == Path("/elsewhere")
