"""s09 JSONL transcript: evidence is append-only, runtime state is rebuilt. The five chapters'
code in their order (no name is used above its definition), then the course's class and the demo.
Standard library only; POSIX. The demo: python s09_jsonl_transcript/code.py [--lang zh]"""

import argparse
import copy
import errno
import fcntl  # POSIX advisory locks: one writer per file
import itertools
import json
import os
import signal
import stat
import subprocess
import sys
import tempfile
import weakref
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

# ================================================== 1. the envelope, and append: write, then fsync
SCHEMA_VERSION = 1  # the newest record layout this code understands
SESSION_MAX_ITEMS = 1000  # replay's window: about 100-200 rounds of a typical session
MAX_RECORD_BYTES = 8 * 1024 * 1024  # append refuses a longer line; the lab's readers refuse it too
TYPE_MESSAGE = "message"  # a user or assistant message
TYPE_REASONING = "reasoning"  # the model thinking aloud: kept, never sent back as a message
TYPE_FUNCTION_CALL = "function_call"  # a tool call: a tool_use block in an assistant message
TYPE_FUNCTION_CALL_RESULT = "function_call_result"  # its result: a tool_result in a user message
TYPE_FILE_SNAPSHOT = "file-history-snapshot"  # files as they were: for tracking, not the model
TYPE_AI_TITLE = "ai-title"  # the session's generated title: metadata
EVENT_TYPES: dict[str, dict] = {  # the one table of types: the fields replay needs (None: any type)
    TYPE_MESSAGE: {"role": str, "content": None}, TYPE_REASONING: {},
    TYPE_FUNCTION_CALL: {"callId": str, "name": str}, TYPE_FUNCTION_CALL_RESULT: {"callId": str},
    TYPE_FILE_SNAPSHOT: {}, TYPE_AI_TITLE: {"title": str}}
MEMORY_ELIGIBLE_EVENT_TYPES = frozenset({TYPE_MESSAGE, TYPE_FILE_SNAPSHOT})
TRANSCRIPT_SOURCE_TYPE = "transcript"
ENVELOPE_FIELDS = frozenset({"schema_version", "sequence", "event_id", "session_id", "recorded_at"})
FIELDS_APPEND_WRITES = ENVELOPE_FIELDS | {"batch_end", "chain"}  # and the lab's, which reads these
ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))  # built once
DECODER = json.JSONDecoder(parse_constant=int)  # NaN, Infinity: not JSON (int() refuses them)

class TranscriptValidationError(ValueError):
    """append refused an event: not a byte of it was written."""

class TranscriptLockedError(RuntimeError):
    """Another writer holds this transcript: a session has one writer at a time."""

def ticking_clock(start=datetime(2026, 1, 5, 9, 0, tzinfo=timezone.utc), step=timedelta(seconds=1)):
    """A deterministic clock for tests and notebooks: start, start + step, start + 2 * step, ..."""
    ticks = itertools.count()
    return lambda: start + step * next(ticks)

def event_id_for(session_id: str, sequence) -> str:
    """The durable id of one event: transcript:<session_id>:<sequence>."""
    return f"{TRANSCRIPT_SOURCE_TYPE}:{session_id}:{sequence}"

def envelope(session_id: str, sequence: int, now: datetime) -> dict:
    """The five fields append puts in front of the event numbered sequence, written at now."""
    return {"schema_version": SCHEMA_VERSION, "sequence": sequence,
            "event_id": event_id_for(session_id, sequence), "session_id": session_id,
            "recorded_at": now.astimezone(timezone.utc).isoformat()}

def encode(record: dict) -> bytes:
    """One record as one line of UTF-8 JSON, its newline included."""
    return ENCODER.encode(record).encode("utf-8") + b"\n"

def shape_problem(event: dict) -> str | None:
    """What an event lacks for replay to map it (see EVENT_TYPES), or None if it lacks nothing."""
    for name, kind in EVENT_TYPES.get(event["type"], {}).items():
        if kind is None and name not in event:
            return f"a {event['type']} event needs {name!r}"
        if kind is str and type(event.get(name)) is not str:
            return f"a {event['type']} event needs a string {name!r}"
    return None

def checked_event(event) -> dict:
    """The event as readers read it back, or TranscriptValidationError before a byte is written."""
    if not isinstance(event, dict) or type(event.get("type")) is not str or not event["type"]:
        raise TranscriptValidationError("an event must be a dict with a non-empty string 'type'")
    if reserved := ", ".join(sorted(FIELDS_APPEND_WRITES & set(event))):
        raise TranscriptValidationError(
            f"event carries reserved envelope fields append writes itself: {reserved}")
    try:  # NaN, a set, a lone surrogate, an integer of 5000 digits... and then a tuple, a key 1:
        copied = json.loads(encode(event))
    except (ValueError, TypeError, RecursionError) as error:
        raise TranscriptValidationError(f"not JSON that reads back as written: {error}") from None
    if problem := "it does not read back as written" if copied != event else shape_problem(copied):
        raise TranscriptValidationError(problem)
    return copied

class FileIO:
    """The writer's I/O calls, each the os call of its name: the crash lab records them."""
    def open(self, path, flags: int, mode: int) -> int: return os.open(path, flags, mode)
    def write(self, fd: int, data: bytes) -> int: return os.write(fd, data)
    def fsync(self, fd: int) -> None: os.fsync(fd)
    def truncate(self, fd: int, length: int) -> None: os.ftruncate(fd, length)
    def close(self, fd: int) -> None: os.close(fd)

    def fsync_dir(self, folder) -> None:
        """fsync a folder, so the names created in it survive a power loss."""
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

def regular(path, flags: int = os.O_RDONLY, opener=None) -> int:
    """path opened without blocking (as a FIFO would): its descriptor, or OSError if not a file."""
    fd = (opener or os.open)(path, flags | os.O_NONBLOCK | os.O_CLOEXEC, 0o600)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file (a FIFO, a device?)", str(path))
    return fd

def open_for_append(path: Path, file_io: FileIO) -> int:
    """The writer's descriptor: O_APPEND (each write lands at the end), locked, folder synced."""
    path.parent.mkdir(parents=True, exist_ok=True)  # (the lab also syncs each folder it makes)
    fd = regular(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, file_io.open)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # BlockingIOError: another writer holds it
        if os.fstat(fd).st_size == 0:  # a new file (or one never acknowledged): sync its name
            file_io.fsync_dir(path.parent)
        return fd
    except BaseException as error:
        file_io.close(fd)
        if isinstance(error, BlockingIOError):
            raise TranscriptLockedError(f"{path.name} is being written by another writer (one "
                                        "writer per transcript)") from None
        raise

def append_line(fd: int, line: bytes, file_io: FileIO) -> None:
    """One os.write of the whole line, then fsync: on disk when it returns; cut back if it fails."""
    end = os.lseek(fd, 0, os.SEEK_END)  # where the line lands
    try:
        if (written := file_io.write(fd, line)) != len(line):  # only a full disk writes less
            raise OSError(errno.ENOSPC, f"the disk is full: {written} of {len(line)} bytes written")
        file_io.fsync(fd)
    except BaseException:
        file_io.truncate(fd, end)  # synced, so nothing of it counts later; if the undo fails
        file_io.fsync(fd)  # too, its error is raised, and nothing more is promised
        raise

# ================================================= 2. the agent, killed in the middle of a line
BUGGY, FIXED = "def add(a, b):\n    return a - b\n", "def add(a, b):\n    return a + b\n"  # calc.py
BUG_FIX_SCRIPT = (
    {"type": TYPE_MESSAGE, "role": "user",
     "content": "test_calc.py fails: add(2, 3) returns -1. Please fix it."},
    {"type": TYPE_AI_TITLE, "title": "Fix add() in calc.py"},
    {"type": TYPE_REASONING, "content": "add() probably subtracts. Read calc.py before editing."},
    {"type": TYPE_FUNCTION_CALL, "callId": "call_1", "name": "read_file",
     "arguments": {"path": "calc.py"}},
    {"type": TYPE_FUNCTION_CALL_RESULT, "callId": "call_1", "output": BUGGY},
    {"type": TYPE_MESSAGE, "role": "assistant",
     "content": "add() returns a - b. I will change it to a + b."},
    {"type": TYPE_FILE_SNAPSHOT, "files": {"calc.py": BUGGY}},
    {"type": TYPE_FUNCTION_CALL, "callId": "call_2", "name": "write_file",
     "arguments": {"path": "calc.py", "content": FIXED}},
    {"type": TYPE_FUNCTION_CALL_RESULT, "callId": "call_2", "output": "wrote 33 bytes to calc.py"},
    {"type": TYPE_FUNCTION_CALL, "callId": "call_3", "name": "run_tests", "arguments": {}},
    {"type": TYPE_FUNCTION_CALL_RESULT, "callId": "call_3", "output": "1 passed in 0.01s"},
    {"type": TYPE_MESSAGE, "role": "assistant",
     "content": "Fixed: add() returns a + b and the test passes."},
)

class MockLLM:
    """A deterministic scripted agent session that emits every event type, one at a time."""
    def __init__(self, script=BUG_FIX_SCRIPT):
        self.events = iter(copy.deepcopy(list(script)))  # its own copies: a caller changes none

    def next_event(self) -> dict | None:
        """The next event of the script, or None when the session is over."""
        return next(self.events, None)

def run_agent(transcript, llm: MockLLM) -> list[dict]:
    """The agent loop: append every event the model produces, in order; return the records."""
    return [transcript.append(event) for event in iter(llm.next_event, None)]

def agent_child(transcript, llm: MockLLM, kill_after: int = 8) -> None:
    """The demo's agent (a child process): print kill_after acknowledged records, die mid-line."""
    for _ in range(kill_after):
        record = transcript.append(llm.next_event())  # acknowledged: print it, and the file's lines
        print(json.dumps([record, Path(transcript.path).read_bytes().count(b"\n")]), flush=True)
    whole_write = os.write
    def half_write(fd: int, data) -> int:  # half the line reaches the file, then the crash
        whole_write(fd, data[: len(data) // 2])
        os.kill(os.getpid(), signal.SIGKILL)
        return 0
    os.write = half_write  # in this process only, which dies in its next write
    transcript.append(llm.next_event())

# ================================================ 3. the reading rule, and the recovery of the end
class TranscriptCorruptionError(RuntimeError):
    """A complete line is damaged: nothing after it can be trusted, so reading stops there."""
    def __init__(self, path, line_number, byte_offset, reason):
        super().__init__(f"{Path(path).name}:{line_number}: {reason} (byte offset {byte_offset})")
        self.path, self.line_number = Path(path), line_number
        self.byte_offset, self.reason = byte_offset, reason

def line_problem(record, sequence: int, session_id: str) -> str | None:
    """What is wrong with the record on one complete line, event sequence of session_id, or None."""
    if type(record) is not dict:
        return "record must be a JSON object"
    if not record.keys() & {"schema_version", "sequence", "session_id", "event_id"}:
        return ("line has no envelope (schema_version, sequence, ...): not a transcript in the "
                "lesson's format")
    expected = {"sequence": sequence, "session_id": session_id,
                "event_id": event_id_for(session_id, sequence)}
    for name, value in expected.items():  # each line carries its own place: no gap, no stranger
        if type(record.get(name)) is not type(value) or record[name] != value:
            return f"expected {name} {value!r}, got {record.get(name)!r}"
    version = record.get("schema_version")
    if type(version) is not int or version < 1:
        return f"bad schema_version {version!r}"
    if type(record.get("type")) is not str:
        return "record has no string 'type'"
    return None if version > SCHEMA_VERSION else shape_problem(record)  # newer: kept, never read

def read_transcript(path) -> tuple[list[dict], bool]:
    """The reading rule: the events, and whether a partial tail (an unfinished last line, not JSON)
    was left out; any other damage raises TranscriptCorruptionError naming the line and its byte."""
    path = Path(path)
    try:
        with open(regular(path), "rb") as file:  # a FIFO or a device: refused, never waited on
            pieces = file.read().split(b"\n")  # on b"\n" only: splitlines splits on U+2028 too
    except FileNotFoundError:
        return [], False  # no file yet: no events
    events, offset = list[dict](), 0  # offset: where the line being read starts
    for number, piece in enumerate(pieces, start=1):
        complete = number < len(pieces)  # a newline ends it; the last piece has none
        if not complete and not piece:  # the file ends with a newline
            break
        try:
            record = DECODER.decode(piece.decode("utf-8"))
        except (ValueError, RecursionError):  # not UTF-8, not JSON, or nested too deep to read
            if not complete:
                return events, True  # a partial tail: an append that never returned. Reported
            raise TranscriptCorruptionError(path, number, offset, "invalid complete JSON record")
        problem = line_problem(record, len(events) + 1, path.stem)
        if problem:  # a bad complete line: nothing after it can be trusted
            raise TranscriptCorruptionError(path, number, offset, problem)
        events.append(record)
        offset += len(piece) + 1
    return events, False

def recover_end(fd: int, path: Path, file_io: FileIO) -> int:
    """A new writer's first step: cut a partial tail off, or end a whole last record's line."""
    events, partial_tail = read_transcript(path)  # damage raises: nothing is written after it
    with open(regular(path), "rb") as file:  # once more: the rule's answer holds no offsets
        tail = file.read().rpartition(b"\n")[2]  # what follows the last newline
    if partial_tail:  # never acknowledged: cut it, and sync the cut
        file_io.truncate(fd, os.fstat(fd).st_size - len(tail))
        file_io.fsync(fd)
    elif tail:  # a whole record: keep it, and end its line
        file_io.write(fd, b"\n")
        file_io.fsync(fd)
    return len(events) + 1

# ================================================================ 4. the replay fold
def event_to_message(event: dict) -> dict | None:
    """The chat message for one event, or None for an event that is metadata."""
    if event["type"] == TYPE_MESSAGE:
        return {"role": event["role"], "content": event["content"]}
    if event["type"] == TYPE_FUNCTION_CALL:
        return {"role": "assistant", "content": [{"type": "tool_use", "id": event["callId"],
                "name": event["name"], "input": event.get("arguments", {})}]}
    if event["type"] == TYPE_FUNCTION_CALL_RESULT:
        return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": event["callId"],
                "content": event.get("output", "")}]}
    return None  # reasoning, snapshots, titles, and any type this code does not know

def window_of(events: list, max_items: int = SESSION_MAX_ITEMS) -> list:
    """The last max_items events (all of them when there are fewer, none for 0)."""
    if type(max_items) is not int or max_items < 0:
        raise ValueError(f"max_items must be a whole number >= 0, not {max_items!r}")
    return events[max(len(events) - max_items, 0):]

def messages_of(window: list) -> list[dict]:
    """The messages replay sends for a window: none of a newer schema, no result without a call."""
    known = [event for event in window if event["schema_version"] <= SCHEMA_VERSION]
    calls = {event["callId"] for event in known if event["type"] == TYPE_FUNCTION_CALL}
    sendable = [event for event in known
                if event["type"] != TYPE_FUNCTION_CALL_RESULT or event["callId"] in calls]
    return [message for message in map(event_to_message, sendable) if message is not None]

def fold(events) -> dict:
    """Everything a replacement runtime needs besides the messages, in one pass over the events."""
    title, snapshots, reasoning, newer, open_calls = None, [], 0, 0, {}
    for event in events:
        kind = event["type"]
        if event["schema_version"] > SCHEMA_VERSION:
            newer += 1  # evidence this code cannot interpret: counted, nothing more
        elif kind == TYPE_AI_TITLE:
            title = event["title"]  # the latest title wins
        elif kind == TYPE_FILE_SNAPSHOT:
            snapshots.append(event)
        elif kind == TYPE_REASONING:
            reasoning += 1
        elif kind == TYPE_FUNCTION_CALL:
            open_calls[event["callId"]] = event  # a call opens an entry...
        elif kind == TYPE_FUNCTION_CALL_RESULT:
            open_calls.pop(event["callId"], None)  # ...and its result closes it
    return {"title": title, "file_snapshots": snapshots, "reasoning_count": reasoning,
            "pending_calls": list(open_calls.values()), "unknown_schema_events": newer}

@dataclass(frozen=True)
class ReplayState:
    """What a replacement runtime needs, rebuilt from the transcript."""
    messages: list
    title: str | None
    file_snapshots: list
    total_events: int
    reasoning_count: int
    next_sequence: int
    ignored_partial_tail: bool
    pending_calls: list  # tool calls still waiting for their result
    unknown_schema_events: int  # records of a newer schema_version: kept as evidence, unmapped

# ================================================================ 5. the memory gate
class MemorySelectionError(ValueError):
    """The memory gate refused a selection."""

@dataclass(frozen=True)
class TranscriptMemoryCandidate:
    """A pointer to one durable event, proposed for long-term memory. It carries no event body."""
    source_id: str
    session_id: str
    sequence: int
    event_type: str
    captured_at: str | None
    summary: str
    selection_reason: str
    source_type: str = TRANSCRIPT_SOURCE_TYPE

    def source_metadata(self) -> dict:
        """The provenance a memory store keeps beside the summary."""
        title = f"{self.session_id} event {self.sequence}"
        return {"source_id": self.source_id, "source_type": self.source_type, "title": title,
                "captured_at": self.captured_at}

def sequence_of(transcript, event_id) -> int:
    """The sequence an event id of this transcript names, or MemorySelectionError."""
    prefix = event_id_for(transcript.session_id, "")  # "transcript:<session_id>:"
    ours = isinstance(event_id, str) and event_id.startswith(prefix)
    number = event_id[len(prefix):] if ours else ""
    if not (number.isascii() and number.isdigit() and not number.startswith("0")):  # not "07"
        raise MemorySelectionError(f"unknown transcript event: {event_id!r} (ids here look like "
                                   f"{prefix}<n>)")
    return int(number)

def required_text(name: str, value) -> str:
    """value without its surrounding blanks, or MemorySelectionError when it says nothing."""
    if not isinstance(value, str) or not value.strip():
        raise MemorySelectionError(f"{name} is required (a non-blank string)")
    return value.strip()

def select_candidate(transcript, event_id, summary, reason) -> TranscriptMemoryCandidate:
    """The gate: an eligible event's id, a summary and a reason make a candidate with no body."""
    events = transcript.read_events()  # first: damaged evidence refuses every selection
    sequence = sequence_of(transcript, event_id)
    summary, reason = required_text("summary", summary), required_text("reason", reason)
    refuse = MemorySelectionError
    if sequence > len(events):
        raise refuse(f"unknown transcript event: {event_id}")
    event = events[sequence - 1]
    if event["schema_version"] > SCHEMA_VERSION:
        raise refuse(f"{event_id} has a newer schema_version: kept as evidence, never selected")
    if event["type"] not in MEMORY_ELIGIBLE_EVENT_TYPES:
        raise refuse(f"event type {event['type']!r} is not eligible for memory selection")
    return TranscriptMemoryCandidate(event["event_id"], transcript.session_id, sequence,
                                     event["type"], event["recorded_at"], summary, reason)

# ================================================================ 6. JSONLTranscript, the class
class JSONLTranscript:
    """One session's transcript (sections 1 to 5 as the course's API): one writer, one thread."""
    def __init__(self, filepath, *, clock=None):
        self.path = Path(filepath).absolute()  # the same file if the process changes directory
        self.filepath, self.session_id = str(self.path), self.path.stem  # the name is the session
        self.clock = clock or (lambda: datetime.now(timezone.utc))
        self.file_io, self.next_sequence = FileIO(), 0  # next_sequence: known once the writer opens
        self._fd = self._closer = None  # the writer's descriptor and its finalizer, once opened

    def _writer(self) -> int:
        """The writer's descriptor: opened, locked and its end recovered on first use."""
        if self._fd is None:
            fd = open_for_append(self.path, self.file_io)
            try:
                self.next_sequence = recover_end(fd, self.path, self.file_io)
            except BaseException:
                self.file_io.close(fd)
                raise  # an instance dropped without close() closes it (the finalizer): unlocked
            self._fd, self._closer = fd, weakref.finalize(self, self.file_io.close, fd)
        return self._fd

    def close(self) -> None:
        """Release the writer's descriptor and its lock; a later append opens them again."""
        if self._closer is not None:  # the finalizer closes the descriptor once, and returns None
            self._fd, self._closer = None, self._closer()

    def append(self, event: dict) -> dict:
        """Durably append one event; return the record written. Acknowledged: on disk."""
        payload = checked_event(event)  # refused before a byte is written
        fd = self._writer()
        record = {**envelope(self.session_id, self.next_sequence, self.clock()), **payload}
        line = encode(record)
        if len(line) > MAX_RECORD_BYTES:
            raise TranscriptValidationError(f"{len(line)} bytes: over {MAX_RECORD_BYTES}")
        try:
            append_line(fd, line, self.file_io)
        except BaseException:
            self.close()  # the next append reopens, and reads where the file ends
            raise
        self.next_sequence += 1
        return record

    def __enter__(self): return self
    def __exit__(self, *exc_info): self.close()

    def read_events(self) -> list[dict]:
        """Section 3: every committed event, checked in order; damage raises."""
        return read_transcript(self.path)[0]

    _read_all_events = read_events  # the names the lesson text uses
    _event_to_message = staticmethod(event_to_message)

    def count_lines(self) -> int:
        """How many complete (newline-terminated) lines the file holds."""
        if not self.path.exists():
            return 0
        with open(regular(self.path), "rb") as file:
            return file.read().count(b"\n")

    def replay_state(self, max_items: int = SESSION_MAX_ITEMS) -> ReplayState:
        """Section 4 on the last max_items events alone."""
        events, partial_tail = read_transcript(self.path)
        window = window_of(events, max_items)
        return ReplayState(messages_of(window), **fold(window), total_events=len(events),
                           next_sequence=len(events) + 1, ignored_partial_tail=partial_tail)

    def replay(self, max_items: int = SESSION_MAX_ITEMS) -> list[dict]:
        """Chat messages for the last max_items events, oldest first, ready to send to a model."""
        return self.replay_state(max_items).messages

    def recover(self, max_items: int = SESSION_MAX_ITEMS) -> dict:
        """What a replacement runtime needs: messages from the window, the rest from every event."""
        events, partial_tail = read_transcript(self.path)
        state = ReplayState(messages_of(window_of(events, max_items)), **fold(events),
                            total_events=len(events), next_sequence=len(events) + 1,
                            ignored_partial_tail=partial_tail)
        return {**vars(state), "message_count": len(state.messages)}

    def select_memory_candidate(self, event_id, summary, reason) -> TranscriptMemoryCandidate:
        """Section 5 on this session: any eligible event, in the replay window or not."""
        return select_candidate(self, event_id, summary, reason)

# ================================================================ 7. the demo's three acts
def demo(root, ticking: bool = False, lang: str = "en", program=None) -> bool:
    """The three acts: an agent appends, is killed, a fresh process recovers: True if it all did."""
    def say(english: str, chinese: str, **fields):
        print((chinese if lang == "zh" else english).format(**fields))
    path = Path(root) / "projects" / "demo" / "session-1.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    python = [sys.executable, str(program or Path(__file__).resolve())]  # calls main(transcript=)
    say("Part 1: the agent runs in its own process; each event is appended (write + fsync)",
        "Part 1：agent 在自己的进程里运行；每个事件追加一行（write + fsync）")
    agent = subprocess.run(python + ["--agent-child", str(path)] + ["--ticking"] * ticking,
                           stdout=subprocess.PIPE, text=True)  # it ends killed, mid-line
    reports = [json.loads(line) for line in agent.stdout.splitlines()]  # what it acknowledged
    for record, lines in reports:
        print(f"  {record['sequence']:>2} {record['type']:<22} jsonl line: {lines}")
    acknowledged = messages_of([record for record, _ in reports])  # the agent's messages[]
    say("  the agent holds {count} messages in memory (its messages[])\n\n"
        "Part 2: crash: the agent writes half of event {number}, then kills itself with SIGKILL\n"
        "  its process is gone (exit status {status}), and its messages[] with it\n"
        "  on disk: {lines} complete lines and half a record with no newline\n\n"
        "Part 3: a fresh process (a new python) recovers the runtime state from the file",
        "  agent 的内存里有 {count} 条消息（它的 messages[]）\n\n"
        "Part 2：崩溃：agent 写了事件 {number} 的一半，然后用 SIGKILL 杀死自己\n"
        "  它的进程没了（退出状态 {status}），它的 messages[] 也随之消失\n"
        "  磁盘上：{lines} 个完整的行，外加半条没有换行符的记录\n\n"
        "Part 3：一个全新的进程（新启动的 python）从文件恢复运行时状态",
        count=len(acknowledged), number=len(reports) + 1, status=agent.returncode,
        lines=path.read_bytes().count(b"\n"))
    state = json.loads(subprocess.run(python + ["--recover-child", str(path)],  # a fresh process
                                      stdout=subprocess.PIPE, text=True, check=True).stdout)
    same = state["messages"] == acknowledged
    say("  recovered {events} events, {messages} messages, title {title!r}\n"
        "  partial tail ignored: {ignored}; tool calls still pending: {pending}\n"
        "  check: recovered messages == the messages Part 1 acknowledged: {same}\n"
        "  the raw JSONL (the last line is the partial tail, never acknowledged):",
        "  恢复了 {events} 个事件、{messages} 条消息，标题 {title!r}\n"
        "  已忽略 partial tail：{ignored}；待回应的工具调用：{pending}\n"
        "  检查：恢复出的 messages == Part 1 确认过的 messages：{same}\n"
        "  原始 JSONL（最后一行就是 partial tail，从未被确认）：",
        events=state["total_events"], messages=len(state["messages"]), title=state["title"],
        ignored=state["ignored_partial_tail"], same=same,
        pending=[call["callId"] for call in state["pending_calls"]])
    print("\n".join(f"    {line}" for line in path.read_text("utf-8", "replace").splitlines()))
    return same

def main(argv=None, transcript=JSONLTranscript) -> int:
    """Run the demo in a temporary folder, or one of its two processes with transcript's class."""
    parser = argparse.ArgumentParser(description="The s09 three-act crash demo.")
    locale = next(filter(None, map(os.environ.get, ("LC_ALL", "LC_MESSAGES", "LANG"))), "en")[:2]
    parser.add_argument("--lang", choices=("en", "zh"), default="zh" if locale == "zh" else "en")
    parser.add_argument("--ticking", action="store_true", help="a fixed clock, the same output")
    parser.add_argument("--agent-child", help=argparse.SUPPRESS)  # the demo's agent runs this file
    parser.add_argument("--recover-child", help=argparse.SUPPRESS)  # and so does its recovery
    args = parser.parse_args(argv)
    clock = ticking_clock() if args.ticking else None
    if args.agent_child:  # never returns: the child dies in the middle of a line
        agent_child(transcript(args.agent_child, clock=clock), MockLLM())
    if args.recover_child:
        print(json.dumps(transcript(args.recover_child, clock=clock).recover()))
        return 0
    with tempfile.TemporaryDirectory(prefix="s09-demo-") as scratch:
        return 0 if demo(scratch, ticking=args.ticking, lang=args.lang) else 1

if __name__ == "__main__":
    sys.exit(main())
