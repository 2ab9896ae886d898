"""What a validated commit's builder sees: LiveState, the state folded from every committed event."""

from __future__ import annotations

from dataclasses import dataclass

from .turns import SessionFold, SessionStatus


@dataclass(frozen=True)
class LiveState:
    """What a validated commit's builder sees: the state folded from every committed event.

    fold is the log's own SessionFold: read it, never change it.
    """

    fold: SessionFold
    last_sequence: int
    open_parts: dict  # part_id -> the turn that was open when its stream began
    now: object  # the transcript clock's time (an aware datetime)

    @property
    def status(self) -> SessionStatus:
        """The session's state and the decision after a crash, as SessionFold.status gives them."""
        return self.fold.status()
