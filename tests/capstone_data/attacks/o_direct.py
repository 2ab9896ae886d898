# Attack: the transcript is opened with O_DIRECT, past the page cache. Refused (o-direct).
# ruff: noqa: F821
def _open_for_append(path):
    return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_DIRECT, 0o644)
