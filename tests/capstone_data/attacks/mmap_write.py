# Attack: append stores its line through a shared memory mapping; no write call carries the bytes.
# Refused (mmap-shared), scored against the submission.
# ruff: noqa: F821
import mmap


def _open_for_append(path):
    return os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)


def _write_durably(fd, line):
    end = os.fstat(fd).st_size
    os.ftruncate(fd, end + len(line))
    with mmap.mmap(fd, end + len(line), mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE) as mapped:
        mapped[end:] = line
        mapped.flush()
    os.fsync(fd)
