"""A real failing device for the fault suites (issue 53): ext4 on a loop device whose backing file sits on a
small tmpfs (this kind of machine has loop devices but no device-mapper).

The tmpfs is the device. While it has room, the file system works. `fill()` takes the rest of it: from
then on a block the image never held cannot be written (the loop device fails the request with ENOSPC),
while blocks it holds already can be rewritten, as on a thin-provisioned disk that ran out of space.
The file system stays writable (no journal to abort), so a failed writeback does what it does on Linux:
one fsync reports it, the pages are marked clean, and the page cache keeps serving the bytes the device
never got. `reboot()` unmounts the file system (its page cache goes), detaches the loop device and
attaches and mounts the image again: what reads back then is what the device holds.

Two settings keep the device honest. A loop request that was written in part is ended as a success
(found here on Linux 6.18: fsync returned 0 while 17 of 19 KiB never reached the image), so requests
are capped at one page (max_sectors_kb = 4) and the file system's blocks are one page: each request is
then written whole or fails. Each device lives in its test's own temporary folder and gets its loop
device from the kernel (`losetup --find`, which retries when another process takes the one it found),
so two pytest-xdist workers never share a name; whatever happens, its mounts and its loop device are
released at the end. Without root, loop devices or the tools, `failing_device` skips with the reason,
except under CI=true, where it fails.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

TMPFS_SIZE = "8m"  # the device's capacity: the image's metadata and a few MiB of data
IMAGE_SIZE = "32M"  # the file system's size: larger than the device, so the device runs out first
TOOLS = ("losetup", "mkfs.ext4", "mount", "umount")


def _run(*command: str) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


class DeviceSetupError(RuntimeError):
    """A command that sets the device up failed (no privilege to mount, no free loop device, ...)."""


def _checked(*command: str) -> str:
    done = _run(*command)
    if done.returncode != 0:
        raise DeviceSetupError(f"{' '.join(command)} failed: {done.stderr.strip()}")
    return done.stdout.strip()


def why_no_device() -> str | None:
    """Why this machine cannot give a failing device here, or None when it can."""
    if os.geteuid() != 0:
        return "a loop device and mounts need root"
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        return f"missing tools: {', '.join(missing)}"
    if not Path("/dev/loop-control").exists():
        return "no loop devices (/dev/loop-control)"
    return None


def unavailable(reason: str):
    """Skip with the reason, or under CI=true fail: CI must run these suites."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"the failing device is required under CI=true: {reason}")
    pytest.skip(f"no failing device: {reason}")


class FailingDevice:
    """ext4 mounted at `mount`, on a loop device over `image`, which sits on a tmpfs at `store`."""

    def __init__(self, folder: Path):
        self.store, self.mount = folder / "store", folder / "mnt"
        self.image, self.filler = self.store / "disk.img", self.store / "filler"
        self.loop: str | None = None

    def fill(self) -> None:
        """Take every free byte of the device: from now on new blocks cannot be written."""
        with open(self.filler, "ab") as filler:
            try:
                while True:
                    filler.write(b"\xff" * 65536)
                    filler.flush()
            except OSError:
                pass

    def free(self) -> None:
        """Give the device its room back."""
        self.filler.unlink(missing_ok=True)

    def reboot(self, *, free: bool = True) -> None:
        """Unmount (the page cache goes; whatever is dirty is written back now, or lost if the device is
        full), detach, then (space freed, unless free=False) attach and mount the image again. Every
        file on the device must be closed: a busy file system is an error here, never unmounted lazily
        (the image would be mounted twice)."""
        self._detach(lazy=False)
        if free:
            self.free()
        self._attach()

    def _attach(self) -> None:
        for attempt in range(5):  # another process may take the free device losetup found
            done = _run("losetup", "--find", "--show", str(self.image))
            if done.returncode == 0:
                self.loop = done.stdout.strip()
                break
            time.sleep(0.1 * (attempt + 1))
        else:
            raise DeviceSetupError(f"losetup failed: {done.stderr.strip()}")
        Path(f"/sys/block/{Path(self.loop).name}/queue/max_sectors_kb").write_text("4")  # whole requests only
        _checked("mount", "-t", "ext4", self.loop, str(self.mount))

    def _detach(self, *, lazy: bool = True) -> None:
        done = _run("umount", str(self.mount))
        if done.returncode != 0 and not lazy and os.path.ismount(self.mount):
            raise OSError(f"cannot reboot: {done.stderr.strip()} (close every file on the device first)")
        if done.returncode != 0:
            _run("umount", "-l", str(self.mount))
        if self.loop is not None:
            _run("losetup", "--detach", self.loop)
            self.loop = None

    def start(self) -> None:
        self.store.mkdir(parents=True)
        self.mount.mkdir()
        _checked("mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE}", "tmpfs", str(self.store))
        _checked("truncate", "-s", IMAGE_SIZE, str(self.image))
        _checked("mkfs.ext4", "-q", "-F", "-b", "4096", "-O", "^has_journal",
                 "-E", "lazy_itable_init=0,nodiscard", str(self.image))
        self._attach()

    def stop(self) -> None:
        self._detach()
        if _run("umount", str(self.store)).returncode != 0:
            _run("umount", "-l", str(self.store))


@contextmanager
def failing_device(folder: Path):
    """A FailingDevice in folder (which must not exist), released at the end whatever happens."""
    reason = why_no_device()
    if reason:
        unavailable(reason)
    device = FailingDevice(folder)
    try:
        device.start()
    except DeviceSetupError as error:
        device.stop()
        unavailable(str(error))
    try:
        yield device
    finally:
        device.stop()
