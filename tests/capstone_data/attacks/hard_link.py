# Attack: append writes through a second name, a hard link to the transcript. Refused (link).
# ruff: noqa: F821
def _open_for_append(path):
    alias = str(path) + ".alias"
    if not os.path.exists(path):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o644))
    if not os.path.exists(alias):
        os.link(path, alias)
    return os.open(alias, os.O_WRONLY | os.O_APPEND)
