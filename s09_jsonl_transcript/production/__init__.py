"""What the two production designs add to the lesson: a live session log, the turn lifecycle, timeouts,
and a SQLite read model. docs/production.md explains the designs and where the kit departs from them.

Where things live, one idea per module:

    live.py                 every public name of the live log, gathered: import from here
    log.py                  SessionEventLog: opening (the state rebuilt from the file), the commit
                            core (commit, commit_batch, commit_validated) and the fan-out
    cache.py                the shared-instance cache behind SessionEventLog.for_session
    errors.py, inputs.py    what the live log raises, and its checks of every public call's input
    state.py                LiveState, what a validated commit's builder sees
    streams.py              deltas and streams (memory only) and a stream's committed final part
    cursors.py              reading from a cursor, paging back, the chat replay
    subscription.py         a subscriber's queue, its replay and resync from the file, and subscribe
    turn_api.py             the session's steps as validated commits (start_turn, end_turn, rewind, ...)
    watchdog.py             the timeout watchdog and check_timeouts, its one round
    fork_migrate_delete.py  fork and delete_validated, acting on the whole file, and the staging and
                            exclusive naming a fork and a migration share
    migration.py            migrate_to: exactly one copy takes commits at every point; a waiting copy's arrival
    archive.py              archive_expired: moving expired sessions into <project>/archive/
    turns.py                the turn markers and commands, the state machine (SessionFold), the audit
    departures.py           reads the departures table (design prose) from docs/production.md
    timeouts.py             the design's limits and the events that record them
    index.py                the disposable SQLite read model (python -m s09_jsonl_transcript.production.index)

How SessionEventLog is split: it is one object with one lock discipline (transcript.lock, then the
fan-out lock) and one state (the fold, the last sequence, where the file ends), and its methods are
the design's API, so it stays one class. Its methods are grouped by idea into mixins, one per module
(ReadingMixin, SubscribingMixin, StreamsMixin, TurnApiMixin, WatchdogMixin, ForkMigrateDeleteMixin,
MigrationMixin, ArchiveMixin), which log.py combines with the commit core. A mixin has no state of its own: it uses
the core's attributes, which each mixin's docstring names, and the core's private steps (_fresh,
_append, _publish, _readable). The objects a log hands out do not reach back into it: a Stream is
given a publish and a commit function, and a Subscription a paging function and an unregister
callback; the log calls their public offer() and start().

Imports: this package uses code.py, the lab and the standard library (and i18n, for the index's
reports in the language in use); it never imports lessons/, grading/, crashlab/, importers/ or the
benchmarks, which may import it.
"""
