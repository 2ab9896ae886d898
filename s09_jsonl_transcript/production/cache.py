"""The shared-instance cache behind SessionEventLog.for_session: one log per (project folder, session id).

The cache keeps at most CACHE_LIMIT logs alive that nobody else holds; past that it lets go of the
least recently used ones that are not pinned (no subscriber, no watchdog). Letting go closes
nothing: a log someone still holds keeps its writer, and stays findable here through a weak
reference, so for_session returns it again; one nobody holds is collected, and its writer's
descriptor closes with it. A log keeps its writer from open to close: the cache never takes it away.

The functions here hold the cache's lock themselves; none calls a log's code but `pinned` (to
choose what to let go of) and the reusable and make callbacks it is given.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from typing import Callable

CACHE_LIMIT = 256  # SessionEventLog.for_session keeps at most this many logs alive for nobody but itself

_CACHE: OrderedDict = OrderedDict()  # (project folder, session id) -> SessionEventLog, least recently used first
_OPEN: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # every for_session log someone still holds
_LOCK = threading.Lock()


def shared(key: tuple, reusable: Callable[[object], bool], make: Callable[[], object]):
    """The log cached or still held for key if reusable(log) says it can be, else make()'s, now cached for key.

    Marks it the most recently used, then lets go of the least recently used unpinned logs past CACHE_LIMIT.
    """
    with _LOCK:
        log = _CACHE.get(key) or _OPEN.get(key)
        if log is None or not reusable(log):
            log = make()
            _OPEN[key] = log
        _CACHE[key] = log
        _CACHE.move_to_end(key)
        _trim()
    return log


def _trim() -> None:
    """Past CACHE_LIMIT, let go of the least recently used logs with no subscriber or watchdog (under _LOCK)."""
    for key in [key for key, log in list(_CACHE.items())[:-1] if not log.pinned]:  # the last: just asked for
        if len(_CACHE) <= CACHE_LIMIT:
            return
        del _CACHE[key]


def cached_count() -> int:
    """How many logs the cache keeps alive now (logs callers hold are not counted: they are theirs)."""
    with _LOCK:
        return len(_CACHE)


def held(key: tuple):
    """The log for_session made for key that someone (the cache or a caller) still holds, or None."""
    with _LOCK:
        return _CACHE.get(key) or _OPEN.get(key)


def take_all() -> list:
    """Every log for_session made that is still held, once each; the cache is empty afterwards."""
    with _LOCK:
        logs = list({id(log): log for log in [*_CACHE.values(), *_OPEN.values()]}.values())
        _CACHE.clear()
    return logs


def forget(key: tuple, log) -> None:
    """Drop log from the cache and from the logs held, if it is the one registered under key (a log closing)."""
    with _LOCK:
        if _CACHE.get(key) is log:
            del _CACHE[key]
        if _OPEN.get(key) is log:
            del _OPEN[key]
