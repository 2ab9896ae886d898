# Attack: append sets up an io_uring first (the I/O it would submit never passes the recorder).
# Refused (io-uring), whether or not the kernel lets it have the ring.
# ruff: noqa: F821
import ctypes

_IO_URING_SETUP = 425  # x86-64 and arm64
_libc = ctypes.CDLL(None, use_errno=True)
_plain_append = append


def append(path, event):
    parameters = ctypes.create_string_buffer(120)
    ring = _libc.syscall(_IO_URING_SETUP, 8, parameters)
    if ring >= 0:
        os.close(ring)
    return _plain_append(path, event)
