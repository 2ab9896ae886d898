"""Notebook 4 (replay window and recovery): what falls inside replay(max_items), a crash in the middle of
a tool call, what recover() rebuilds, why the default window is 1000 events, what a large tool output
does to what replay sends, and the cost of a full read against a tail read.

Every answer here comes from the library's own replay, replay_state, read_recent and recover; this
module only writes sample sessions and lines the library's results up so they read as tables and plots.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import random
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import ipywidgets as widgets
import matplotlib.pyplot as plt
from matplotlib.patches import Patch

from .. import i18n
from ..code import (
    BUG_FIX_SCRIPT,
    SESSION_MAX_ITEMS,
    TYPE_FILE_SNAPSHOT,
    TYPE_FUNCTION_CALL,
    TYPE_FUNCTION_CALL_RESULT,
    TYPE_MESSAGE,
    TYPE_REASONING,
    event_to_message,
    ticking_clock,
)
from ..lab import DurableTranscript, OsFileIO, crash_agent_in_child, simulate_agent_crash
from .display import MAIN_CONTROL_CLASS, RESULT_CLASS, html_table
from .style import EVENT_COLORS, OKABE_ITO

# The crash of section 3 comes while the result of BUG_FIX_SCRIPT's write_file call is being written:
# the agent has acknowledged every event up to and including that call.
WRITE_FILE_CALL = 1 + next(number for number, event in enumerate(BUG_FIX_SCRIPT)
                           if event.get("name") == "write_file")

SENT = "sent as a message"
METADATA = "metadata: not sent"
ORPHAN = "dropped: its tool call is outside the window"
OUTSIDE = "outside the window"

OTHER_TYPE_COLOR = OKABE_ITO["black"]  # event types outside the lesson's six

tr = i18n.translator("replay_window")


def fate_label(fate: str) -> str:
    """A window entry's fate (SENT, METADATA, ORPHAN, OUTSIDE) in the language in use, for display."""
    labels = {
        SENT: tr("sent as a message"),
        METADATA: tr("metadata: not sent"),
        ORPHAN: tr("dropped: its tool call is outside the window"),
        OUTSIDE: tr("outside the window"),
    }
    return labels.get(fate, fate)


def yes_no(flag: bool) -> str:
    """A check's outcome as a word: True / False in English, 是 / 否 in Chinese."""
    return tr("True") if flag else tr("False")


@dataclass(frozen=True)
class WindowEntry:
    """One event of the transcript and what replay(max_items) did with it."""

    sequence: int
    event_type: str
    fate: str  # SENT, METADATA, ORPHAN or OUTSIDE


def window_entries(transcript: DurableTranscript, max_items: int) -> list[WindowEntry]:
    """Every event with its fate under replay(max_items), worked out from what replay returned."""
    events = transcript.read_events()
    messages = iter(transcript.replay(max_items))
    next_message = next(messages, None)
    inside_from = len(events) - min(max_items, len(events))
    entries = []
    for position, event in enumerate(events):
        if position < inside_from:
            fate = OUTSIDE
        elif event_to_message(event) is None:
            fate = METADATA
        elif event_to_message(event) == next_message:
            fate, next_message = SENT, next(messages, None)
        else:  # a chat event that replay left out
            fate = ORPHAN
        entries.append(WindowEntry(event["sequence"], event["type"], fate))
    return entries


def describe_content(content, width: int = 60) -> str:
    """A one-line description of a chat message's content: the text, or its tool blocks."""
    if isinstance(content, str):
        text = content.replace("\n", " ")
    else:
        text = "; ".join(
            f"tool_use {block['id']}: {block['name']}({json.dumps(block['input'])})" if block["type"] == "tool_use"
            else tr("tool_result for {call}: {content}", call=block["tool_use_id"],
                    content=json.dumps(block["content"]))
            for block in content
        )
    return text if len(text) <= width else text[: width - 3] + "..."


def messages_table(messages):
    """messages[] as a table: position, role, and what each message holds."""
    return html_table(["#", tr("role"), tr("content")],
                      [(number, message["role"], describe_content(message["content"]))
                       for number, message in enumerate(messages, start=1)])


def window_table(entries):
    """The window entries as a table."""
    return html_table(["sequence", tr("type"), tr("replay did")],
                      [(entry.sequence, entry.event_type, fate_label(entry.fate)) for entry in entries])


def orphan_summary(entries: list[WindowEntry], messages: list[dict]) -> str:
    """Which events of the window replay dropped, and the first message it sends."""
    dropped = [(entry.sequence, entry.event_type) for entry in entries if entry.fate == ORPHAN]
    first = messages[0] if messages else None
    return "\n".join([
        tr("dropped: {dropped}", dropped=dropped),
        tr("first message sent: {role} - {content}", role=first["role"], content=first["content"]) if first
        else tr("no message sent"),
    ])


def window_start(transcript: DurableTranscript, max_items: int) -> str:
    """Where replay(max_items)'s window starts, what became of that first event, and how many messages it sends."""
    inside = [entry for entry in window_entries(transcript, max_items) if entry.fate != OUTSIDE]
    if not inside:
        return tr("max_items={max_items}: the window is empty; messages sent: 0", max_items=max_items)
    sent = sum(entry.fate == SENT for entry in inside)
    return tr("max_items={max_items}: starts at sequence {sequence} ({fate}); messages sent: {sent}",
              max_items=max_items, sequence=inside[0].sequence, fate=fate_label(inside[0].fate), sent=sent)


def last_message_text(messages: list[dict], width: int = 120) -> str:
    """The last message of messages[], described on one line."""
    return tr("last message: {content}", content=describe_content(messages[-1]["content"], width=width))


def unchanged_by_replay(path, digest: str) -> str:
    """Whether the file still has the sha256 digest it had before replay read it (file_digest)."""
    return tr("file unchanged by replay: {unchanged}", unchanged=yes_no(file_digest(path) == digest))


def unterminated_last_line(path) -> str:
    """The file's last line, after its last newline (empty when the file ends with one), with a heading."""
    return tr("the file's last line, never terminated:") + "\n" + Path(path).read_bytes().split(b"\n")[-1].decode(
        "utf-8", errors="replace")


def _call_ids(calls) -> str:
    return ", ".join(f"{call['callId']} ({call['name']})" for call in calls) or tr("none")


def recovery_rows(transcript: DurableTranscript, max_items: int) -> list[tuple]:
    """What replay_state(max_items) and recover(max_items) rebuild, field by field, side by side."""
    tail = transcript.replay_state(max_items)
    full = transcript.recover(max_items)
    return [
        (tr("messages in the window"), len(tail.messages), full["message_count"]),
        (tr("title"), tail.title, full["title"]),
        (tr("file snapshots"), len(tail.file_snapshots), len(full["file_snapshots"])),
        (tr("reasoning events"), tail.reasoning_count, full["reasoning_count"]),
        (tr("total events"), tail.total_events, full["total_events"]),
        (tr("next sequence"), tail.next_sequence, full["next_sequence"]),
        (tr("partial tail ignored"), tail.ignored_partial_tail, full["ignored_partial_tail"]),
        (tr("tool calls pending"), _call_ids(tail.pending_calls), _call_ids(full["pending_calls"])),
    ]


def recovery_table(transcript: DurableTranscript, max_items: int):
    """recovery_rows as a table: the field, what the tail read rebuilds, what the whole-file read rebuilds."""
    return html_table([tr("field"), tr("replay_state({max_items}): the tail only", max_items=max_items),
                       tr("recover({max_items}): the whole file", max_items=max_items)],
                      recovery_rows(transcript, max_items))


def snapshot_line(snapshot: dict) -> str:
    """One file snapshot recover() found: its sequence and the files it holds."""
    return tr("snapshot at sequence {sequence}: {files}", sequence=snapshot["sequence"], files=dict(snapshot["files"]))


def crash_mid_tool_call(path, *, real_kill: bool | None = None) -> str:
    """Leave at path what an agent killed during its write_file call leaves: its call acknowledged, its
    result half written (a partial tail).

    With real_kill (the default where SIGKILL exists) the agent runs in a child process that is
    SIGKILLed while writing the tool's result. Elsewhere the same bytes are written from this
    process: a simulated crash. Both use the ticking clock, so the bytes are the same on every run.
    Returns a sentence saying which happened.
    """
    if real_kill is None:
        real_kill = hasattr(signal, "SIGKILL")
    if real_kill:
        acknowledged = crash_agent_in_child(path, kill_after=WRITE_FILE_CALL, tear=True, ticking=True)
        return tr("SIGKILL: the child acknowledged sequences {first} to {last}, then died writing the next record",
                  first=acknowledged[0], last=acknowledged[-1])
    acknowledged = simulate_agent_crash(path, kill_after=WRITE_FILE_CALL, tear=True, ticking=True)
    return tr("simulated: sequences {first} to {last} written and acknowledged, then half of the next record",
              first=acknowledged[0], last=acknowledged[-1])


@dataclass(frozen=True)
class ReadCost:
    """How long the two reads took on a transcript of one length (the best of several tries)."""

    events: int
    size_bytes: int
    window_bytes: int  # bytes of the last `window` records: what the tail read must read (plus about one block)
    full_read_seconds: float
    tail_read_seconds: float


def _best_time(action, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        best = min(best, time.perf_counter() - start)
    return best


def measure_read_costs(path, lengths, *, window: int = SESSION_MAX_ITEMS, repeats: int = 3) -> list[ReadCost]:
    """Grow one transcript at path through the given lengths and time a full read and a tail read at each.

    The full read is read_events() (every line validated); the tail read is replay_state(window).
    Events are appended in batches (one write and one fsync per length) to keep this quick.
    """
    lengths = list(lengths)
    if not lengths or lengths != sorted(set(lengths)) or lengths[0] < 1:
        raise ValueError(f"lengths must be increasing whole numbers >= 1, not {lengths!r}")
    if Path(path).exists():
        raise ValueError(f"{Path(path).name} already exists: measure_read_costs grows a new transcript")
    script = itertools.cycle(BUG_FIX_SCRIPT)
    costs, written = [], 0
    with DurableTranscript(path, clock=ticking_clock()) as writer:
        for length in lengths:
            writer.append_batch(next(script) for _ in range(length - written))
            written = length
            reader = DurableTranscript(path)
            size = Path(path).stat().st_size
            costs.append(ReadCost(
                events=length,
                size_bytes=size,
                window_bytes=size - reader.read_recent(min(window, length)).offsets[0] if window else 0,
                full_read_seconds=_best_time(reader.read_events, repeats),
                tail_read_seconds=_best_time(lambda: reader.replay_state(window), repeats),
            ))
    return costs


def read_costs_table(costs: list[ReadCost], window: int = SESSION_MAX_ITEMS):
    """The sizes measure_read_costs saw: events, file size, and the bytes of the window's records."""
    return html_table([tr("events"), tr("file size (bytes)"), tr("bytes of the last {window} records", window=window)],
                      [(f"{cost.events:,}", f"{cost.size_bytes:,}", f"{cost.window_bytes:,}") for cost in costs])


# --------------------------------------------------------------------------- why the window is 1000 events

TOOL_NAMES = ("read_file", "run_tests", "grep", "list_files")


class UnsyncedFileIO(OsFileIO):
    """File I/O that skips fsync, for writing large sample transcripts quickly.

    Durability is not what those samples show; the records are the same bytes a synced append
    writes. Every append the lesson itself makes is synced.
    """

    def fsync(self, fd):
        pass

    def fsync_dir(self, path):
        pass


def typical_round(number: int, rng: random.Random) -> list[dict]:
    """One round of a typical agent interaction, 5 to 10 events.

    A user message, a reasoning note, one to three tool calls each with its result, sometimes a
    file snapshot, and the assistant's answer.
    """
    module = f"module_{number}.py"
    events = [{"type": TYPE_MESSAGE, "role": "user", "content": f"Round {number}: please check {module}."},
              {"type": TYPE_REASONING, "content": f"Read {module} and run its tests."}]
    for call in range(1, rng.randint(1, 3) + 1):
        call_id, name = f"call_{number}_{call}", rng.choice(TOOL_NAMES)
        events.append({"type": TYPE_FUNCTION_CALL, "callId": call_id, "name": name, "arguments": {"path": module}})
        events.append({"type": TYPE_FUNCTION_CALL_RESULT, "callId": call_id,
                       "output": f"{name} {module}: " + "ok " * rng.randint(5, 40)})
    if rng.random() < 0.5:
        events.append({"type": TYPE_FILE_SNAPSHOT, "files": {module: f"# module {number}\n"}})
    events.append({"type": TYPE_MESSAGE, "role": "assistant", "content": f"Round {number} done: {module} is fine."})
    return events


def typical_rounds(count: int, *, seed: int = 0, first: int = 1) -> list[list[dict]]:
    """count rounds numbered from first, the same for the same seed."""
    rng = random.Random(seed)
    return [typical_round(number, rng) for number in range(first, first + count)]


def write_session(path, rounds: Iterable[list[dict]]) -> DurableTranscript:
    """Write the rounds' events to a new transcript at path, one append per event; return a reader.

    The appends skip fsync (UnsyncedFileIO) so that thousands of events take a moment.
    """
    with DurableTranscript.create(path, clock=ticking_clock(), file_io=UnsyncedFileIO()) as writer:
        for events in rounds:
            for event in events:
                writer.append(event)
    return DurableTranscript(path)


def _is_user_message(event: dict) -> bool:
    return event.get("type") == TYPE_MESSAGE and event.get("role") == "user"


@dataclass(frozen=True)
class WindowReport:
    """What replay(max_items) takes from one transcript, in numbers."""

    events: int  # in the whole transcript
    size_bytes: int  # the whole file
    max_items: int
    window_events: int  # events inside the window
    first_sequence: int | None  # the window's first event
    rounds: int  # user messages inside the window: rounds that start there
    messages: int  # chat messages replay sends
    window_bytes: int  # bytes of the window's records


def window_report(transcript: DurableTranscript, max_items: int = SESSION_MAX_ITEMS) -> WindowReport:
    """replay(max_items) on this transcript in numbers, from read_recent and replay_state."""
    recent = transcript.read_recent(max_items)
    size = transcript.path.stat().st_size
    return WindowReport(
        events=recent.last_sequence, size_bytes=size, max_items=max_items, window_events=len(recent.events),
        first_sequence=recent.events[0]["sequence"] if recent.events else None,
        rounds=sum(_is_user_message(event) for event in recent.events),
        messages=len(transcript.replay_state(max_items).messages),
        window_bytes=size - recent.offsets[0] if recent.offsets else 0,
    )


def window_rows(report: WindowReport) -> list[tuple[str, str]]:
    """The report as rows of (what, how much) for a table."""
    share = report.window_bytes / report.size_bytes if report.size_bytes else 0
    return [
        (tr("events in the transcript"), f"{report.events:,}"),
        (tr("file size"), tr("{size} bytes", size=f"{report.size_bytes:,}")),
        (tr("events replay({max_items}) reads", max_items=report.max_items),
         tr("{count} (sequences {first} to {last})", count=f"{report.window_events:,}",
            first=f"{report.first_sequence:,}", last=f"{report.events:,}") if report.window_events else "0"),
        (tr("rounds that start inside the window"), f"{report.rounds:,}"),
        (tr("chat messages it sends"), f"{report.messages:,}"),
        (tr("bytes of those records"), tr("{size} ({share} of the file)", size=f"{report.window_bytes:,}",
                                          share=f"{share:.0%}")),
    ]


def window_report_table(report: WindowReport):
    """window_rows as a two-column table headed by the replay it describes."""
    return html_table([tr("replay({max_items}) on a long session", max_items=report.max_items), ""],
                      window_rows(report))


@dataclass(frozen=True)
class Page:
    """One page of older history, read with read_recent(page_size, before=cursor)."""

    first_sequence: int
    last_sequence: int
    records: int
    size_bytes: int  # bytes these records span in the file
    cursor: int  # byte offset of the page's first record: pass it as `before` to read the page in front


def pages_back(transcript: DurableTranscript, page_size: int, pages: int) -> list[Page]:
    """The newest `pages` pages of page_size records, newest first, as a user scrolling back would load them."""
    result, before = [], None
    end = transcript.path.stat().st_size
    for _ in range(pages):
        page = transcript.read_recent(page_size, before=before)
        if not page.events:
            break
        result.append(Page(page.events[0]["sequence"], page.events[-1]["sequence"], len(page.events),
                           end - page.offsets[0], page.offsets[0]))
        before = end = page.offsets[0]
    return result


def pages_table(pages: list[Page]):
    """The pages as a table: number, sequences, records, bytes, and the cursor that reads the page in front."""
    return html_table([tr("page"), tr("sequences"), tr("records"), tr("bytes"), tr("next cursor (before=)")],
                      [(number, tr("{first} to {last}", first=f"{page.first_sequence:,}",
                                   last=f"{page.last_sequence:,}"),
                        f"{page.records:,}", f"{page.size_bytes:,}", f"{page.cursor:,}")
                       for number, page in enumerate(pages, start=1)])


# --------------------------------------------------------------------------- a large tool output

INLINE_LIMIT = 4096  # a tool output longer than this many bytes goes to an artifact; the event keeps a pointer
PREVIEW_LINES = 2  # lines of a stored output the pointer quotes


def build_log(lines: int = 8000) -> str:
    """A large, deterministic tool output: a test run's log, one line per test, one failure, a summary line."""
    failing = lines - 3
    rows = [f"09:{index // 60 % 60:02d}:{index % 60:02d} tests/test_module_{index % 400}.py::test_case_{index} "
            + ("FAILED: add(2, 3) returned -1" if index == failing else "PASSED")
            for index in range(lines - 1)]
    rows.append(f"1 failed, {lines - 2} passed")
    return "\n".join(rows) + "\n"


def store_artifact(folder, data: str) -> Path:
    """Write data durably to folder/<sha256>.txt (one write, fsync, then the folder's fsync) and return its path.

    The name is the content's hash, so a pointer to it can be checked, and the artifact is on disk
    before any event points at it.
    """
    encoded = data.encode("utf-8")
    path = Path(folder) / f"{hashlib.sha256(encoded).hexdigest()}.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        if os.write(descriptor, encoded) != len(encoded):
            raise OSError(f"short write storing {path.name}")
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
    OsFileIO().fsync_dir(path.parent)  # the new name is durable only once its folder is
    return path


def pointer_text(name: str, artifact: Path, output: str) -> str:
    """What the tool result records instead of a large output: size, where it is, its hash, a short preview."""
    lines = output.splitlines()
    preview = "\n".join(lines[-PREVIEW_LINES:])
    return (f"{name}: {len(output.encode('utf-8')):,} bytes, {len(lines):,} lines, stored as artifact "
            f"{artifact.name} (its name is its sha256). Last {PREVIEW_LINES} lines:\n{preview}")


def large_output_round(number: int, output: str, *, artifact_folder=None) -> list[dict]:
    """A round whose read_file call returns output (build.log).

    Without artifact_folder the whole output goes into the result event, and so into every replay
    (the mistake). With it, an output over INLINE_LIMIT bytes is stored there first and the result
    event holds a pointer and a preview.
    """
    call_id = f"call_{number}_1"
    result = output
    if artifact_folder is not None and len(output.encode("utf-8")) > INLINE_LIMIT:
        result = pointer_text("build.log", store_artifact(artifact_folder, output), output)
    return [
        {"type": TYPE_MESSAGE, "role": "user", "content": f"Round {number}: the nightly build failed, see build.log."},
        {"type": TYPE_REASONING, "content": "Read build.log and find the failing test."},
        {"type": TYPE_FUNCTION_CALL, "callId": call_id, "name": "read_file", "arguments": {"path": "build.log"}},
        {"type": TYPE_FUNCTION_CALL_RESULT, "callId": call_id, "output": result},
        {"type": TYPE_MESSAGE, "role": "assistant", "content": "One test fails in build.log: add(2, 3) returned -1."},
    ]


MISTAKE = "whole log in the result (the mistake)"
POINTER = "artifact + pointer in the result"


def session_label(label: str) -> str:
    """MISTAKE or POINTER in the language in use, for display."""
    return {MISTAKE: tr("whole log in the result (the mistake)"),
            POINTER: tr("artifact + pointer in the result")}.get(label, label)


def large_output_sessions(folder, output: str, *, before: int = 120, after: int = 20,
                          seed: int = 1) -> tuple[dict, str]:
    """Two copies of one session whose round number before + 1 reads build.log (output).

    Returns ({MISTAKE: transcript, POINTER: transcript}, the read_file call's callId). In the first
    the result event holds the whole output; in the second the output is stored under
    folder/pointer/artifacts and the event holds a pointer.
    """
    sessions = {}
    for label, name in ((MISTAKE, "mistake"), (POINTER, "pointer")):
        artifacts = Path(folder) / name / "artifacts" if label == POINTER else None
        rounds = [*typical_rounds(before, seed=seed), large_output_round(before + 1, output, artifact_folder=artifacts),
                  *typical_rounds(after, seed=seed + 1, first=before + 2)]
        sessions[label] = write_session(Path(folder) / name / "build-session.jsonl", rounds)
    return sessions, f"call_{before + 1}_1"


def result_event(transcript: DurableTranscript, call_id: str) -> dict:
    """The function_call_result event answering call_id."""
    return next(event for event in transcript.read_events()
                if event["type"] == TYPE_FUNCTION_CALL_RESULT and event["callId"] == call_id)


def artifact_matches_its_name(path) -> bool:
    """Whether an artifact's sha256 is still the name it was stored under."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest() == Path(path).stem


def events_until_out_of_window(transcript: DurableTranscript, sequence: int, max_items: int = SESSION_MAX_ITEMS) -> int:
    """How many more events can be appended before the event at sequence leaves replay(max_items)'s window."""
    newer = transcript.replay_state(0).total_events - sequence
    return max(max_items - newer, 0)


def message_bytes(message: dict) -> int:
    """Bytes of one chat message as JSON: roughly what it adds to a request to the model."""
    return len(json.dumps(message, ensure_ascii=False).encode("utf-8"))


def prompt_rows(transcripts: dict, call_id: str, max_items: int = SESSION_MAX_ITEMS) -> list[tuple]:
    """One row per labelled transcript: what replay(max_items) sends, and how much of it is call_id's result."""
    rows = []
    for label, transcript in transcripts.items():
        messages = transcript.replay(max_items)
        total = sum(message_bytes(message) for message in messages)
        result = sum(message_bytes(message) for message in messages if _result_of(message) == call_id)
        rows.append((session_label(label), f"{len(messages):,}", f"{total:,}", f"{result:,} ({result / total:.1%})",
                     f"{transcript.path.stat().st_size:,}"))
    return rows


def prompt_table(transcripts: dict, call_id: str, max_items: int = SESSION_MAX_ITEMS):
    """prompt_rows as a table."""
    return html_table([tr("session"), tr("messages replay({max_items}) sends", max_items=max_items), tr("their bytes"),
                       tr("of which build.log's result"), tr("transcript file (bytes)")],
                      prompt_rows(transcripts, call_id, max_items))


def log_in_window_text(transcript: DurableTranscript, call_id: str, max_items: int = SESSION_MAX_ITEMS) -> str:
    """Where call_id's result sits in the transcript, and how long replay(max_items) keeps sending it."""
    result = result_event(transcript, call_id)
    return tr("build.log's result is event {sequence} of {total}; replay({max_items}) sends it until {more} more "
              "events are appended", sequence=f"{result['sequence']:,}",
              total=f"{transcript.replay_state(0).total_events:,}", max_items=max_items,
              more=f"{events_until_out_of_window(transcript, result['sequence'], max_items):,}")


def pointer_recorded_text(transcript: DurableTranscript, call_id: str) -> str:
    """What the pointer session recorded as call_id's result (the recorded text itself is not translated)."""
    return tr("what the pointer session recorded instead:") + "\n" + result_event(transcript, call_id)["output"]


def artifacts_text(artifacts: list) -> str:
    """How many artifacts there are, and whether the first one's sha256 still matches its name."""
    return tr("artifacts: {count} | its sha256 still matches its name: {matches}", count=len(artifacts),
              matches=yes_no(bool(artifacts) and artifact_matches_its_name(artifacts[0])))


def _result_of(message: dict) -> str | None:
    content = message["content"]
    if isinstance(content, list) and content and content[0].get("type") == "tool_result":
        return content[0]["tool_use_id"]
    return None


def plot_read_costs(costs: list[ReadCost], window: int = SESSION_MAX_ITEMS):
    """Read time against transcript length, full read vs tail read, on log-log axes. Returns the figure."""
    figure, axis = plt.subplots(figsize=(8, 4.5))
    events = [cost.events for cost in costs]
    axis.plot(events, [cost.full_read_seconds * 1000 for cost in costs], marker="o",
              color=OKABE_ITO["vermillion"], label=tr("full read: read_events()"))
    axis.plot(events, [cost.tail_read_seconds * 1000 for cost in costs], marker="s",
              color=OKABE_ITO["blue"], label=tr("tail read: replay_state(max_items={window})", window=window))
    largest = costs[-1]
    if largest.tail_read_seconds > 0:
        ratio = f"{largest.full_read_seconds / largest.tail_read_seconds:.0f}"
        axis.annotate(tr("{ratio}× the tail read", ratio=ratio), (largest.events, largest.full_read_seconds * 1000),
                      xytext=(-8, 0), textcoords="offset points", ha="right", va="center",
                      color=OKABE_ITO["vermillion"])
    axis.set_xscale("log")
    axis.set_yscale("log")
    axis.set_xlabel(tr("events in the transcript"))
    axis.set_ylabel(tr("time to read (milliseconds)"))
    axis.set_title(tr("Rebuilding state: a full read grows with the file, a tail read does not"))
    axis.legend()
    axis.grid(True, which="major", alpha=0.3)
    figure.tight_layout()
    return figure


def plot_window(events: list[dict], max_items: int, *, dropped=(), chosen=(), title: str | None = None):
    """The transcript as a row of cells coloured by event type, with the last max_items events framed.

    Sequences in dropped get a cross (orphan tool results); sequences in chosen get a star
    (notebook 5's memory candidates). Returns the figure.
    """
    figure, axis = plt.subplots(figsize=(10, 3.4))
    for event in events:
        axis.broken_barh([(event["sequence"] - 0.45, 0.9)], (0, 1), facecolor=EVENT_COLORS.get(
            event["type"], OTHER_TYPE_COLOR), edgecolor=OKABE_ITO["black"], linewidth=0.5)
    if max_items and events:
        first = events[max(len(events) - max_items, 0)]["sequence"]
        last = events[-1]["sequence"]
        axis.axvspan(first - 0.5, last + 0.5, ymin=0.0, ymax=1.0, facecolor="none",
                     edgecolor=OKABE_ITO["black"], linewidth=2, linestyle="--")
    dropped, chosen = sorted(set(dropped)), sorted(set(chosen))
    if dropped:
        axis.plot(dropped, [0.5] * len(dropped), linestyle="none", marker="X", markersize=16,
                  color=OKABE_ITO["black"])
    if chosen:
        axis.plot(chosen, [1.35] * len(chosen), linestyle="none", marker="*", markersize=14,
                  color=OKABE_ITO["black"])
    types = {event["type"] for event in events}
    handles = [Patch(color=color, label=name) for name, color in EVENT_COLORS.items() if name in types]
    if types - EVENT_COLORS.keys():
        handles.append(Patch(color=OTHER_TYPE_COLOR, label=tr("a type the library does not know")))
    handles.append(Patch(facecolor="none", edgecolor=OKABE_ITO["black"], linestyle="--",
                         label=tr("replay window (max_items={max_items})", max_items=max_items)))
    if dropped:
        handles.append(plt.Line2D([], [], linestyle="none", marker="X", markersize=12,
                                  color=OKABE_ITO["black"], label=tr("dropped by replay")))
    if chosen:
        handles.append(plt.Line2D([], [], linestyle="none", marker="*", markersize=12,
                                  color=OKABE_ITO["black"], label=tr("memory candidate")))
    figure.legend(handles=handles, loc="lower center", ncol=4, frameon=False)
    axis.set_xlim(0.4, (events[-1]["sequence"] if events else 1) + 0.6)
    axis.set_ylim(-0.1, 1.6)
    axis.set_yticks([])
    axis.set_xticks([event["sequence"] for event in events])
    axis.set_xlabel("sequence")
    axis.set_title(title or tr("The replay window: the last {max_items} events", max_items=max_items))
    figure.tight_layout(rect=(0, 0.2, 1, 1))  # the bottom fifth holds the legend
    return figure


def file_digest(path) -> str:
    """The sha256 of a file's bytes: equal digests mean the file was not changed."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def replay_summary(press: int, max_items: int, entries: list[WindowEntry], unchanged: bool) -> str:
    """The explorer's sentence for one press: messages sent, sequences dropped, whether the file is unchanged."""
    sent = sum(entry.fate == SENT for entry in entries)
    dropped = [entry.sequence for entry in entries if entry.fate == ORPHAN]
    messages = tr("1 message") if sent == 1 else tr("{count} messages", count=sent)
    dropped_text = (tr("; dropped: sequence {sequences}", sequences=", ".join(map(str, dropped))) if dropped
                    else tr("; nothing dropped"))
    return tr("Replay {press}: <b>replay(max_items={max_items})</b> sends {messages}{dropped}. File unchanged: "
              "{unchanged}.", press=press, max_items=max_items, messages=messages, dropped=dropped_text,
              unchanged=yes_no(unchanged))


class ReplayExplorer:
    """A max_items slider and a "Replay" button showing what replay(max_items) does with each event.

    Each press reads the file again and checks it is unchanged: replay only reads. `replay` is a
    plain method: call it directly.
    """

    def __init__(self, transcript: DurableTranscript, max_items: int = 5):
        self.transcript = transcript
        self.presses = 0
        total = len(transcript.read_events())
        self.max_items = widgets.IntSlider(value=min(max_items, total), min=0, max=total, description="max_items")
        self.replay_button = widgets.Button(description=tr("Replay"), button_style="primary")
        self.replay_button.add_class(MAIN_CONTROL_CLASS)
        self.result = widgets.HTML(tr("Set max_items and press Replay."))
        self.result.add_class(RESULT_CLASS)
        self.replay_button.on_click(lambda _button: self.replay(self.max_items.value))

    def replay(self, max_items: int) -> list[WindowEntry]:
        """Show and return every event's fate under replay(max_items)."""
        before = file_digest(self.transcript.path)
        entries = window_entries(self.transcript, max_items)
        unchanged = file_digest(self.transcript.path) == before
        self.presses += 1
        self.result.value = replay_summary(self.presses, max_items, entries, unchanged) + window_table(entries).data
        return entries

    def widget(self) -> widgets.VBox:
        """The controls and the result, ready to display."""
        return widgets.VBox([widgets.HBox([self.max_items, self.replay_button]), self.result])
