"""A guard of the fast paths broken on purpose: the differential tests show they notice."""

from contextlib import contextmanager

from s09_jsonl_transcript.lab import fast


@contextmanager
def broken(name: str, value):
    """The fast module with its module-level name set to value while inside, then restored."""
    before = getattr(fast, name)
    setattr(fast, name, value)
    try:
        yield
    finally:
        setattr(fast, name, before)
