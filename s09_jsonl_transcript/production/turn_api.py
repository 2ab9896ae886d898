"""The session's steps as validated commits: messages, turns, commands, tool calls and results, rewind.

Each step reads the current state, checks it and appends, as one step under transcript.lock
(commit_validated): of two racing attempts to close one turn exactly one wins. A step the state
machine would report as an anomaly (a second turn_start, a turn_end with no open turn, a result for
an unknown call) is refused with CommitRefused and writes nothing; bad input is refused with
LiveInputError before anything is read.
"""

from __future__ import annotations

from ..code import TYPE_FUNCTION_CALL
from ..lab import BATCH_END_FIELD
from .cursors import ends_a_commit
from .errors import CommitRefused, LiveInputError
from .inputs import check_text, check_whole
from .state import LiveState
from .turns import (
    PERMISSION_DECISIONS,
    REASON_COMPLETE,
    RUNNING,
    START_REASONS,
    START_USER,
    TYPE_PAUSE,
    TYPE_RESUME,
    TYPE_RETRY,
    SessionFold,
    command_event,
    handoff_event,
    materialize,
    permission_event,
    rewind_event,
    shown,
    tool_result_event,
    turn_end_event,
    turn_start_event,
)

CRASH_ERROR = "the runtime stopped before this call returned a result"


class TurnApiMixin:
    """SessionEventLog's session steps, each a validated commit (commit_validated, or _commit_built for
    the rewind marker, a control record); end_turn closes the streams its turn leaves unfinished."""

    def user_message(self, content: str) -> dict:
        """Commit what the user said (refused while paused, after an error, or once expired)."""
        check_text("content", content)
        return self.commit_validated(lambda state: {"type": "message", "role": "user", "content": content})[0]

    def start_turn(self, reason: str = START_USER) -> dict:
        """Open the next turn (refused while a turn is open, paused, after an error without retry, or expired)."""
        if not isinstance(reason, str) or reason not in START_REASONS:
            raise LiveInputError(f"reason must be one of {', '.join(START_REASONS)}, not {shown(reason)}")
        return self.commit_validated(
            lambda state: turn_start_event((state.fold.last_turn or 0) + 1, reason))[0]

    def end_turn(self, turn_number: int, reason: str = REASON_COMPLETE, token_summary: dict | None = None) -> dict:
        """Close turn turn_number. Refused when it is not the open turn: of racing closes one wins.

        A turn that completes must have committed the final part of every stream it began (the
        part_start events on disk say which, after a restart too); ending any other way records
        the unfinished streams (unfinished_parts) on the turn_end.
        """
        try:
            turn_end_event(turn_number, reason, token_summary)  # refuses a bad number, reason or summary
        except (TypeError, ValueError) as problem:
            raise LiveInputError(str(problem)) from None

        def build(state: LiveState):
            unfinished = self._unfinished(turn_number) if state.fold.open_turn == turn_number else []
            if unfinished and reason == REASON_COMPLETE:
                raise CommitRefused(f"turn {turn_number} cannot complete: {', '.join(unfinished)} "
                                    f"has no committed final part")
            return turn_end_event(turn_number, reason, token_summary, unfinished_parts=unfinished)

        with self.transcript.lock:  # the turn_end and the end of its streams: one step
            record = self.commit_validated(build)[0]
            self._close_streams(record.get("unfinished_parts", ()))
        return record

    def pause(self) -> dict:
        """pause_command: running -> paused."""
        return self.commit_validated(lambda state: command_event(TYPE_PAUSE))[0]

    def resume(self) -> dict:
        """resume_command: paused -> running."""
        return self.commit_validated(lambda state: command_event(TYPE_RESUME))[0]

    def retry(self) -> dict:
        """retry_command: error -> running (then start_turn("retry"))."""
        return self.commit_validated(lambda state: command_event(TYPE_RETRY))[0]

    def rewind(self, to_sequence: int) -> dict:
        """Append a rewind marker: every projection then leaves out the events after to_sequence.

        Nothing on disk is changed or removed: the marker is the undo. Refused (CommitRefused)
        while a turn is open (end it first), for a sequence past the last one, for a sequence
        inside a batch (a batch is one commit: a rewind cuts between commits), for a point
        where a turn was open (the rewind would reopen that turn, and the next timeout check
        would expire it for good: rewind to before its turn_start or after its turn_end), and for
        a point where a migrated copy waited for its source (migration.py).
        Returns the marker's record.
        """
        check_whole("to_sequence", to_sequence)

        def build(state: LiveState):
            if state.fold.open_turn is not None:
                raise CommitRefused(f"turn {state.fold.open_turn} is open: end it before rewinding")
            if to_sequence > state.last_sequence:
                raise CommitRefused(f"to_sequence must be between 0 and {state.last_sequence}, not {to_sequence!r}")
            kept = [event for event in materialize(self.transcript.read_events()) if event["sequence"] <= to_sequence]
            if kept and kept[-1]["sequence"] == to_sequence and not ends_a_commit(kept[-1]):
                raise CommitRefused(f"event {to_sequence} is inside a batch (it ends at "
                                    f"{kept[-1][BATCH_END_FIELD]}): a rewind cuts only between commits")
            reopened = SessionFold()
            reopened.add_all(kept)
            if reopened.open_turn is not None:
                raise CommitRefused(f"turn {reopened.open_turn} was open at event {to_sequence}: a rewind there would "
                                    f"reopen it; rewind to before its turn_start or after its turn_end")
            if reopened.migrating_from is not None:
                raise CommitRefused(f"at event {to_sequence} the session waited for its migration's source: rewind "
                                    f"to before its session_migrating or after its session_arrived")
            return rewind_event(to_sequence)

        return self._commit_built(build, control=True)[0]

    def record_handoff(self, reason: str, summary: str) -> dict:
        """Commit a token-budget handoff: it takes a sequence, and no client ever sees it (CLIENT_HIDDEN_TYPES)."""
        check_text("reason", reason)
        check_text("summary", summary)
        return self.commit_validated(lambda state: handoff_event(reason, summary))[0]

    def record_permission(self, call_id: str, tool: str, decision: str, *, by: str = "user",
                          reason: str = "") -> dict:
        """Commit who allowed or denied a tool call, and why (turns.audit lists these decisions)."""
        for name, value in (("call_id", call_id), ("tool", tool), ("by", by)):
            check_text(name, value)
        check_text("reason", reason, empty=True)
        if decision not in PERMISSION_DECISIONS:
            raise LiveInputError(f"decision must be one of {', '.join(PERMISSION_DECISIONS)}, not {shown(decision)}")
        return self.commit_validated(lambda state: permission_event(call_id, tool, decision, by=by, reason=reason))[0]

    def record_tool_call(self, call_id: str, name: str, arguments: dict | None = None) -> dict:
        """Commit a function_call of the open turn (refused outside a running turn and past the turn's limit)."""
        check_text("call_id", call_id)
        check_text("name", name)
        if arguments is not None and not isinstance(arguments, dict):
            raise LiveInputError(f"arguments must be a dict or None, not {shown(arguments)}")

        def build(state: LiveState):
            fold = state.fold
            if fold.state != RUNNING or fold.open_turn is None:
                raise CommitRefused(f"a tool call needs a running turn (the session is {fold.state}, "
                                    f"open turn {fold.open_turn})")
            if fold.calls_in_turn >= self.limits.max_tool_calls_per_turn:
                raise CommitRefused(f"turn {fold.open_turn} already made {fold.calls_in_turn} tool calls "
                                    f"(max_tool_calls_per_turn is {self.limits.max_tool_calls_per_turn})")
            return {"type": TYPE_FUNCTION_CALL, "callId": call_id, "name": name, "arguments": arguments or {}}

        return self.commit_validated(build)[0]

    def record_tool_result(self, call_id: str, output=None, *, error: str | None = None) -> dict:
        """Commit a call's result (or its error). Refused for an unknown call or one already answered."""
        check_text("call_id", call_id)
        if error is not None:
            check_text("error", error)
        return self.commit_validated(lambda state: tool_result_event(call_id, output, error=error))[0]

    def answer_pending_calls(self, error: str = CRASH_ERROR) -> list[dict]:
        """After a crash: answer every call still waiting for a result with an error result, in one batch."""
        check_text("error", error)
        return self.commit_validated(
            lambda state: [tool_result_event(call_id, error=error) for call_id in state.fold.pending])
