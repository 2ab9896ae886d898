# Wrong answer "fsync before the write": the fsync comes first, so the line is never synced when
# append returns (the next append's fsync syncs it, too late). Loses: kept.
# ruff: noqa: F821
def _write_durably(fd, line):
    os.fsync(fd)
    os.write(fd, line)
