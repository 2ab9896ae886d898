# Wrong answer "no fsync": append writes its line and returns; nothing is ever synced.
# Added to the reference answer (the later definition wins). Loses: kept.
# ruff: noqa: F821
def _write_durably(fd, line):
    os.write(fd, line)
