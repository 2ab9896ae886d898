"""The lab and the live log on a real failing device (issue 53; tests/failing_device.py): ext4 on a loop device
over a small tmpfs that fills up, a reboot made by unmounting and mounting again.

On Linux a failed writeback is reported to one fsync; the pages are then marked clean, and the page cache
keeps serving bytes the device never got (PostgreSQL's "fsyncgate"). Injected EIO cannot show this (it never
runs the fsync, so the pages stay dirty): these tests fail real writebacks. In each, whatever the kit
acknowledged is checked after a reboot, when only what the device holds reads back:

- a writer (or a live log) opening a file a crashed writer left behind never counts, or appends after,
  bytes only the page cache holds;
- after TranscriptOutcomeUnknownError, durable_commit says "found" only for a commit on the device;
- a record a crashed writer wrote whole but never synced is made durable before it is counted, or not
  counted at all.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from failing_device import failing_device
from fault_injection import message

from s09_jsonl_transcript.code import TranscriptCorruptionError, ticking_clock
from s09_jsonl_transcript.lab import DurableTranscript, OsFileIO, TranscriptIOError, TranscriptOutcomeUnknownError
from s09_jsonl_transcript.production.live import SessionEventLog

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
LONG = "two " * 2500  # 10 KB: its record needs blocks the device has never held


@pytest.fixture
def device(tmp_path):
    """A fresh failing device, released at the end."""
    with failing_device(tmp_path / "device") as made:
        yield made


CRASHING_WRITER = textwrap.dedent("""
    import os, signal, sys
    from s09_jsonl_transcript.lab import DurableTranscript, OsFileIO

    class DiesAfterAFailedFsync(OsFileIO):  # a crash between the failed fsync and its undo
        def fsync(self, fd):
            try:
                super().fsync(fd)
            except OSError:
                os.kill(os.getpid(), signal.SIGKILL)

    class DiesBeforeItsFsync(OsFileIO):  # a crash between the write and its fsync: a whole record, never synced
        def fsync(self, fd):
            os.kill(os.getpid(), signal.SIGKILL)

    path, when, text = sys.argv[1:]
    file_io = DiesAfterAFailedFsync() if when == "after a failed fsync" else DiesBeforeItsFsync()
    DurableTranscript(path, file_io=file_io).append({"type": "message", "role": "user", "content": text})
    print("the append returned")
""")


def crash_while_appending(path: Path, when: str, text: str = LONG) -> None:
    """A writer in a child process appends text to path and is killed at `when`; it never returns."""
    child = subprocess.run([sys.executable, "-c", CRASHING_WRITER, str(path), when, text], capture_output=True,
                           text=True, cwd=REPO, timeout=120)
    assert child.returncode == -9 and "returned" not in child.stdout, (child.returncode, child.stderr)


def contents(path: Path) -> list:
    return [event["content"] for event in DurableTranscript(path).read_events()]


class UndoFails(OsFileIO):
    """The truncate that would undo a failed append fails: the outcome is unknown."""

    def truncate(self, fd, length):
        raise OSError(5, "injected: the undo fails")


# --------------------------------------------------------------------------- the lab


def _one_event(path: Path, file_io=None) -> DurableTranscript:
    writer = DurableTranscript(path, clock=ticking_clock(), file_io=file_io)
    writer.append(message("one"))
    return writer


def test_a_writer_after_a_crash_never_appends_after_bytes_the_device_lost(device):
    """The crashed writer's fsync failed; the cache still shows its record whole. The next writer reads the
    device, cuts what is not there, and its acknowledged event survives the reboot."""
    path = device.mount / "s.jsonl"
    _one_event(path).close()
    device.fill()
    crash_while_appending(path, "after a failed fsync")
    assert LONG in contents(path)  # what a reader of the page cache sees: a whole, valid record
    device.free()
    with DurableTranscript(path, clock=ticking_clock()) as writer:
        acknowledged = writer.append(message("three"))
    assert acknowledged["sequence"] == 2  # the lost record was never counted
    device.reboot()
    assert contents(path) == ["one", "three"]


def test_found_after_an_unknown_outcome_means_on_the_device(device):
    """The protocol after TranscriptOutcomeUnknownError, on a device that lost the record: durable_commit
    does not find it, so the caller appends it again, and after a reboot it is there once."""
    path = device.mount / "s.jsonl"
    writer = _one_event(path, UndoFails())
    device.fill()
    with pytest.raises(TranscriptOutcomeUnknownError) as unknown:
        writer.append(message(LONG))
    writer.close()
    assert LONG in contents(path)  # the page cache shows it
    fresh = DurableTranscript(path, clock=ticking_clock())
    assert fresh.durable_commit(unknown.value.event_id) is None  # the device does not hold it
    device.free()
    assert fresh.append(message(LONG))["sequence"] == 2
    fresh.append(message("three"))
    fresh.close()
    device.reboot()
    assert contents(path) == ["one", LONG, "three"]


def test_a_whole_record_never_synced_is_made_durable_before_it_counts(device):
    """A crashed writer wrote a whole record and died before its fsync. On a full device the next writer's
    open fails (writing that record back fails) rather than count it; once there is room the record is
    gone (the failed writeback lost it) and is not counted either."""
    path = device.mount / "s.jsonl"
    _one_event(path).close()
    device.fill()
    crash_while_appending(path, "before its fsync")
    with pytest.raises(TranscriptIOError, match="open the writer failed: writing back the file's end failed"):
        DurableTranscript(path).durable_commit("transcript:s:2")
    device.free()
    fresh = DurableTranscript(path, clock=ticking_clock())
    assert fresh.durable_commit("transcript:s:2") is None
    fresh.append(message("three"))
    fresh.close()
    device.reboot()
    assert contents(path) == ["one", "three"]


def test_a_whole_record_never_synced_counts_once_it_is_durable(device):
    """With room on the device, the open's fsync makes the crashed writer's whole record durable: it is
    committed (the lab's rule for a whole record) and found, and the reboot keeps it."""
    path = device.mount / "s.jsonl"
    _one_event(path).close()
    crash_while_appending(path, "before its fsync")
    fresh = DurableTranscript(path, clock=ticking_clock())
    assert [record["content"] for record in fresh.durable_commit("transcript:s:2")] == [LONG]
    fresh.close()
    device.reboot(free=False)
    assert contents(path) == ["one", LONG]


def _outsider_record(sequence: int, text: str) -> bytes:
    return (f'{{"schema_version":1,"sequence":{sequence},"event_id":"transcript:s:{sequence}","session_id":"s",'
            f'"recorded_at":"2026-01-05T09:00:09+00:00","type":"message","role":"user","content":"{text}"}}\n').encode()


def test_durable_commit_refuses_a_commit_only_the_cache_holds_in_front_of_the_end(device):
    """A writer outside the kit appended two records after bytes the device lost, the first long enough to
    reach blocks of its own: the end is on the device, the record in front of it is not. durable_commit
    fails closed instead of calling that record found."""
    path = device.mount / "s.jsonl"
    _one_event(path).close()
    device.fill()
    crash_while_appending(path, "after a failed fsync")
    device.free()
    with open(path, "ab") as outsider:  # no look at the device, and no fsync
        outsider.write(_outsider_record(3, "x" * 6000) + _outsider_record(4, "y"))
    assert LONG in contents(path)  # the page cache shows all four
    with pytest.raises(TranscriptCorruptionError, match="the device does not"):
        DurableTranscript(path).durable_commit("transcript:s:2")


# --------------------------------------------------------------------------- the live log


def test_a_live_log_after_a_crash_never_commits_after_bytes_the_device_lost(device):
    path = device.mount / "s.jsonl"
    with SessionEventLog.open(path, clock=ticking_clock()) as log:
        log.commit(message("one"))
    device.fill()
    crash_while_appending(path, "after a failed fsync")
    device.free()
    with SessionEventLog.open(path, clock=ticking_clock()) as log:
        subscription = log.subscribe(from_sequence=1)
        assert log.last_sequence == 1  # the lost record is not in the log's state
        assert log.commit(message("three"))["sequence"] == 2
        assert [item["content"] for item in subscription.poll() if isinstance(item, dict)] == ["one", "three"]
        subscription.release()
    device.reboot()
    assert contents(path) == ["one", "three"]


def test_a_live_log_after_an_unknown_outcome_finds_only_what_the_device_holds(device):
    path = device.mount / "s.jsonl"
    log = SessionEventLog.for_session("s", device.mount, clock=ticking_clock(), file_io=UndoFails())
    log.commit(message("one"))
    device.fill()
    with pytest.raises(TranscriptOutcomeUnknownError) as unknown:
        log.commit(message(LONG))
    fresh = SessionEventLog.for_session("s", device.mount, clock=ticking_clock())
    assert fresh is not log and fresh.last_sequence == 1  # it opened from the device: the record is not there
    assert fresh.durable_commit(unknown.value.event_id) is None
    device.free()
    assert fresh.commit(message(LONG))["sequence"] == 2
    SessionEventLog.close_cached()
    log.close()
    device.reboot()
    assert contents(path) == ["one", LONG]


def test_an_append_undone_on_a_full_device_is_retried_once_and_survives_a_reboot(device):
    """The everyday road: the fsync fails for real, the undo (truncate, fsync) succeeds, the caller retries
    once there is room. The file is back at the size its last clean close marked (lab/device.py), so the
    retry's open may trust the cache: what it counts is the device's."""
    path = device.mount / "s.jsonl"
    _one_event(path).close()
    writer = DurableTranscript(path, clock=ticking_clock())
    device.fill()
    with pytest.raises(TranscriptIOError, match="fsync failed") as refused:
        writer.append(message(LONG))
    assert refused.value.errno in (28, 5) and contents(path) == ["one"]  # ENOSPC or EIO: undone
    device.free()
    assert writer.append(message(LONG))["sequence"] == 2
    writer.close()
    device.reboot()
    assert contents(path) == ["one", LONG]


# --------------------------------------------------------------------------- the device itself


def test_the_device_is_released_even_when_the_test_fails(tmp_path):
    with pytest.raises(RuntimeError, match="the test failed"):
        with failing_device(tmp_path / "device") as made:
            (made.mount / "f").write_bytes(b"x")
            held = open(made.mount / "f", "rb")  # a file left open: the unmount must still happen
            raise RuntimeError("the test failed")
    held.close()
    assert made.loop is None and not os.path.ismount(made.mount) and not os.path.ismount(made.store)


def test_devices_made_at_once_never_share_a_loop_device(tmp_path):
    """What two pytest-xdist workers do: set devices up at the same moment. The kernel hands each its own."""
    from concurrent.futures import ThreadPoolExecutor
    from contextlib import ExitStack

    with ExitStack() as stack, ThreadPoolExecutor(4) as pool:
        made = list(pool.map(lambda number: stack.enter_context(failing_device(tmp_path / f"d{number}")), range(4)))
        assert len({device.loop for device in made}) == 4
        for number, device in enumerate(made):
            (device.mount / "n").write_text(str(number))
        assert [(device.mount / "n").read_text() for device in made] == ["0", "1", "2", "3"]


def test_a_migration_on_a_device_that_fills_leaves_one_copy_and_survives_a_reboot(device):
    """The copy's writeback fails for real: the migration raises, A takes the next commit, B (if its name
    stayed) refuses. With room again, migrate_to completes; after a reboot B holds the session and takes
    commits, A refuses."""
    from s09_jsonl_transcript.production.live import SessionMigratedError

    source = SessionEventLog.for_session("s", device.mount / "a", clock=ticking_clock())
    source.commit(message(LONG))
    device.fill()
    with pytest.raises(TranscriptIOError):
        source.migrate_to(device.mount / "b")
    device.free()
    assert source.commit(message("still here"))["sequence"] == 2  # A goes on
    waiting = device.mount / "b" / "s.jsonl"
    if waiting.exists():
        with SessionEventLog.open(waiting, clock=ticking_clock()) as copy, pytest.raises(SessionMigratedError):
            copy.commit(message("refused"))
    moved = source.migrate_to(device.mount / "b")
    assert moved.commit(message("in b"))["sequence"] == 5  # A's two, B's two migration records, then this
    SessionEventLog.close_cached()
    device.reboot()
    with SessionEventLog.open(device.mount / "a" / "s.jsonl") as a, pytest.raises(SessionMigratedError):
        a.commit(message("refused"))
    with SessionEventLog.open(waiting, clock=ticking_clock()) as b:
        assert b.commit(message("after the reboot"))["sequence"] == 6
    assert [event["content"] for event in DurableTranscript(waiting).read_events()
            if event["type"] == "message"] == [LONG, "still here", "in b", "after the reboot"]
