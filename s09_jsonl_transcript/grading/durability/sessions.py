"""Run the answer through the driver and observe it: the recorded session, the held kills, the
batches of states. What the answer did is read from the recorder's log (or, in the local check,
from the calls its driver sent), never from what the answer says it did; what a file holds
afterwards is read by the grader.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..words import both
from .calls import KILLABLE, Refusal, Tracker
from .contract import TRANSCRIPT_NAME
from .runs import DriverGone, Runner
from .trace import Call, call_from_json, parse_log
from .workspace import discard, new_dir, read_file, write_file


@dataclass(frozen=True)
class Problem:
    """Why an answer could not be judged, scored against it: a refused call, or what went wrong."""

    kind: str  # "syscall" (a row of calls.ROWS), "load", "contract", "timeout", "ended", "replay"
    reason: str  # both languages
    row: str | None = None

    @classmethod
    def refused(cls, refusal: Refusal) -> Problem:
        """A refused call as a Problem."""
        return cls("syscall", refusal.reason, refusal.row)


def _stream(driver, runner: Runner) -> tuple[list, int | None]:
    """The run as one ordered stream of ("call", Call) and ("answer", dict) items, and the driver's pid."""
    if not runner.recorded:
        pid = driver.ready.get("pid")
        items = [("call", call_from_json(message, pid)) if "call" in message else ("answer", message)
                 for message in driver.answers[1:]]
        return items, pid
    log = parse_log(driver.log_lines())
    items, pid, channel = [], None, None
    for call in log.calls:
        if call.name == "write" and pid is None and (call.data or b"").startswith(b'{"ready":true'):
            pid, channel = call.pid, call.fd
            continue
        if pid is None:
            continue  # the driver's own start, and bubblewrap's
        if call.pid == pid and call.name == "write" and call.fd == channel and not call.killed:
            items.extend(("answer", message) for message in _answer_lines(call.data or b""))
        else:
            items.append(("call", call))
    return items, pid


def _answer_lines(data: bytes) -> list:
    messages = []
    for line in data.split(b"\n"):
        if line.strip():
            try:
                messages.append(json.loads(line))
            except ValueError:
                messages.append({"unreadable": True})
    return messages


def _load_problem(driver) -> Problem | None:
    loaded = driver.loaded or {}
    if loaded.get("loaded"):
        return None
    if "missing" in loaded:
        names = ", ".join(loaded["missing"])
        return Problem("load", both(f"the answer cell defines no function {names}", f"答案单元格没有定义函数 {names}"))
    raised = loaded.get("raised", {})
    what = f"{raised.get('class', '?')}: {raised.get('message', '')}"
    cell = loaded.get("cell", "answer cell")
    which = "给定" if "given" in cell else "答案"
    return Problem("load", both(f"the {cell} raised {what} when run", f"运行{which}单元格时抛出 {what}"))


@dataclass
class Recording:
    """The recorded session: the model's changes, and what the answer's appends did."""

    path: str = ""  # the transcript, as the driver saw it
    changes: list = field(default_factory=list)
    appended: list = field(default_factory=list)  # per event: the append's outcome (the driver's answer)
    writes: list = field(default_factory=list)  # per event: (offset, bytes) of each write it made
    kill_points: list = field(default_factory=list)  # (system call, its number among those on the file)
    final: bytes | None = None
    problem: Problem | None = None

    @property
    def acknowledged(self) -> int:
        """How many appends returned without raising."""
        return sum(1 for outcome in self.appended if "returned" in outcome)


def _timing_problem(error: DriverGone, english: str, chinese: str) -> Problem:
    """A call that ran past its time (timeout), or a driver that ended (ended), during what the words say."""
    if error.over_limit:
        return Problem("timeout", both(
            f"the grading went over its time limit of {error.time_limit:g} s during {english}: the answer's calls "
            "are too slow to judge every crash state", f"评分在{chinese}期间超过了 {error.time_limit:g} 秒的总时限："
            "答案的调用太慢，无法评判所有崩溃状态"))
    if error.timed_out:
        return Problem("timeout", both(f"{english} did not return within its time", f"{chinese}没有在规定时间内返回"))
    return Problem("ended", both(f"the driver's process ended during {english}", f"驱动进程在{chinese}期间结束了"))


def _check_written(tracker: Tracker, found: bytes | None, runner: Runner) -> Problem | None:
    if tracker.refusal is not None:
        return Problem.refused(tracker.refusal)
    expected = bytes(tracker.image) if tracker.exists else None
    if found != expected:
        detail = (f"{len(found) if found is not None else 'no'} bytes found, "
                  f"{len(expected) if expected is not None else 'no'} bytes recorded")
        if not runner.recorded:  # the local check sees os calls only
            return Problem("syscall", both(
                f"the local check could not follow how the answer writes ({detail}): it sees os.open, os.write, "
                "os.fsync and their kind only, not open().write; the grader's recorder sees every system call",
                f"本地检查跟不上答案的写法（{detail}）：它只看得到 os.open、os.write、os.fsync 这类调用，"
                "看不到 open().write；评分程序的记录器能看到每个系统调用"), "unseen-bytes")
        return Problem.refused(Refusal("unseen-bytes", detail))
    return None


def _feed(tracker: Tracker, items: list, on_answer) -> None:
    """Feed a run's stream to a tracker; on_answer(message) is called at each answer line."""
    for kind, item in items:
        if kind == "answer":
            on_answer(item)
        else:
            tracker.feed(item)


def record_session(runner: Runner, workspace, events: list) -> Recording:
    """Run the answer's append on every event in turn, recorded; the grader reads the file afterwards."""
    folder = workspace.fresh("session")
    host = folder / TRANSCRIPT_NAME
    recording = Recording(path=workspace.inside(host))
    try:
        driver = runner.start()
    except DriverGone as error:
        recording.problem = Problem("ended", both(f"the driver did not start: {error}", f"驱动程序没有启动：{error}"))
        return recording
    recording.problem = _load_problem(driver)
    try:
        for number, event in enumerate(events, start=1):
            if recording.problem is not None:
                break
            driver.send({"op": "append", "path": recording.path, "event": event})
            answer = driver.receive()
            if answer is None or answer.get("op") != "append":
                recording.problem = Problem("ended", both(
                    f"the driver's process ended, or its channel was written to, during the append of event {number}",
                    f"追加第 {number} 个事件时驱动进程结束了，或者有别的东西写了它的通道"))
                break
            recording.appended.append(answer)
            if "raised" in answer:
                raised = answer["raised"]
                recording.problem = Problem("contract", both(
                    f"append raised {raised['class']} on event {number} of the session: {raised['message']}",
                    f"append 在会话的第 {number} 个事件上抛出 {raised['class']}：{raised['message']}"))
    except DriverGone as error:
        number = len(recording.appended) + 1
        recording.problem = _timing_problem(error, f"append (event {number})", f"append（第 {number} 个事件）")
        driver.stop()
    driver.send({"op": "exit"})
    driver.finish()
    _build_recording(recording, driver, runner, host)
    return recording


def _build_recording(recording: Recording, driver, runner: Runner, host: Path) -> None:
    items, pid = _stream(driver, runner)
    tracker = Tracker(recording.path, driver=pid)
    acks = iter(range(1, len(recording.appended) + 1))

    def on_answer(message: dict) -> None:
        if message.get("op") == "append":
            number = next(acks, None)
            recording.writes.append(tracker.mark())
            if number is not None and "returned" in message:
                tracker.acknowledge([number])

    _feed(tracker, items, on_answer)
    recording.changes = tracker.changes
    recording.kill_points = _numbered(tracker.kill_points)
    recording.final = read_file(host)
    if tracker.refusal is not None:  # the clearest reason, whatever else went wrong after the refused call
        recording.problem = Problem.refused(tracker.refusal)
    elif recording.problem is None:
        recording.problem = _check_written(tracker, recording.final, runner) or _links_problem(host)


def _numbered(names: list) -> list:
    counts, numbered = {}, []
    for name in names:
        counts[name] = counts.get(name, 0) + 1
        numbered.append((name, counts[name]))
    return numbered


def _links_problem(host: Path) -> Problem | None:
    try:
        info = os.lstat(host)
    except FileNotFoundError:
        return None
    if not os.path.isfile(host) or os.path.islink(host) or info.st_nlink != 1:
        return Problem.refused(Refusal("link", f"{host.name}: {info.st_nlink} names, or not a regular file"))
    return None


@dataclass
class KillRun:
    """One held kill: where it was held, whether it landed there, and what the file held afterwards."""

    name: str
    number: int
    acknowledged: int = 0
    content: bytes | None = None
    landed: bool = False
    problem: Problem | None = None


def _held(runner: Runner, workspace, label: str, content: bytes | None, point: tuple, commands) -> KillRun:
    """Send commands (each a function of the transcript's path) one at a time, each after the previous was
    answered, with a SIGKILL held before the point's call on the transcript; read the file afterwards."""
    name, number = point
    host = workspace.fresh(label) / TRANSCRIPT_NAME
    write_file(host, content)
    path = workspace.inside(host)
    run = KillRun(name, number)
    try:
        driver = runner.start(kill=(path, name, number))
    except DriverGone as error:
        run.problem = Problem("ended", both(f"the driver did not start: {error}", f"驱动程序没有启动：{error}"))
        return run
    try:
        for command in commands:
            driver.send(command(path))
            answer = driver.receive()
            if answer is None:
                break
            if answer.get("op") == "append" and "returned" in answer:
                run.acknowledged += 1
    except DriverGone as error:
        run.problem = _timing_problem(error, "a run under a held kill", "一次被按住终止的运行")
        driver.stop()
    driver.send({"op": "exit"})
    status = driver.finish()
    if run.problem is not None:
        return run
    run.content = read_file(host)
    run.landed = _kill_landed(driver, runner, status, name)
    return run


def held_kill(runner: Runner, workspace, events: list, point: tuple, label: str) -> KillRun:
    """Run the session again, killing the driver as it enters the point's call (a SIGKILL held by strace)."""
    appends = [lambda path, event=event: {"op": "append", "path": path, "event": event} for event in events]
    run = _held(runner, workspace, label, None, point, appends)
    name, number = point
    if run.problem is None and not run.landed:
        run.problem = Problem("replay", both(
            f"a kill held before {name} number {number} on the transcript never came: the answer did not repeat its "
            "own calls on a second run with the same events, so the grader cannot replay it",
            f"在记录文件上第 {number} 次 {name} 之前的终止始终没有发生：同样的事件第二次运行时答案没有重复"
            "自己的调用，评分程序无法重放它"))
    return run


def _kill_landed(driver, runner: Runner, status: int, name: str) -> bool:
    """True when the driver died of the held SIGKILL, inside the call it was held before."""
    if not runner.recorded:
        return status == -9
    # strace logs the call the kill stopped as "= ?" (the kill came as the call was entered)
    return any(call.killed and call.name == name for call in parse_log(driver.log_lines()).calls)


@dataclass
class Observed:
    """What one state's steps gave: the outcomes the driver sent, the files the grader read after,
    the changes its repair made (recover on the state, as recorded), and whether it was refused."""

    outcomes: dict = field(default_factory=dict)  # step ("a", "b", "c") -> the driver's answer
    after_a: bytes | None = None
    after_b: bytes | None = None
    repair: list = field(default_factory=list)  # the model's changes recover made on file a
    repair_points: list = field(default_factory=list)  # (system call, number) of recover's changes on file a
    problem: Problem | None = None


@dataclass
class Batch:
    """States judged by one driver process: prepared (files written, the reference's readings), then
    run, then observed. The engine prepares the next batch while the driver judges this one."""

    label: str
    items: list  # (content, steps): steps "a" (recover only) or "abc" (recover twice, then append)
    readings: list = field(default_factory=list)
    observed: list = field(default_factory=list)
    problem: Problem | None = None
    paths: list = field(default_factory=list)  # per state: (file a, file b or None) on the host
    entries: list = field(default_factory=list)  # per state: [a, b, steps] as the driver sees them
    folders: list = field(default_factory=list)
    driver: object = None


def prepare_batch(workspace, label: str, items: list, reference_read) -> Batch:
    """Write each state's files (a: for recover; b: for recover, then one more append) and read each
    with the reference reader, before the answer touches it."""
    batch = Batch(label, items)
    root = workspace.fresh(label)
    inside = workspace.inside(root)
    batch.folders.append(str(root))
    for index, (content, steps) in enumerate(items):
        folder = os.path.join(root, str(index))
        new_dir(folder)
        first = os.path.join(folder, TRANSCRIPT_NAME)
        write_file(first, content)
        second = None
        if "b" in steps:
            new_dir(os.path.join(folder, "b"))
            second = os.path.join(folder, "b", TRANSCRIPT_NAME)
            write_file(second, content)
            batch.folders.append(os.path.join(folder, "b"))
        batch.folders.append(folder)
        batch.paths.append((first, second))
        batch.readings.append(reference_read(first))
        batch.entries.append([f"{inside}/{index}/{TRANSCRIPT_NAME}",
                              f"{inside}/{index}/b/{TRANSCRIPT_NAME}" if second else None, steps])
    batch.observed = [Observed() for _ in items]
    return batch


def start_batch(runner: Runner, batch: Batch, event: dict) -> None:
    """Start the batch's driver and hand it every state (it answers as it goes)."""
    try:
        batch.driver = runner.start()
    except DriverGone as error:
        batch.problem = Problem("ended", both(f"the driver did not start: {error}", f"驱动程序没有启动：{error}"))
        return
    batch.problem = _load_problem(batch.driver)
    if batch.problem is None:
        batch.driver.send({"op": "batch", "items": batch.entries, "event": event})


def finish_batch(runner: Runner, batch: Batch) -> None:
    """Collect the batch's outcomes, read every file it left, split its record by state, clean up."""
    driver = batch.driver
    if driver is not None and batch.problem is None:
        try:
            while True:
                answer = driver.receive()
                if answer is None:
                    ended = "the driver's process ended while it judged a batch of states"
                    batch.problem = Problem("ended", both(ended, "驱动进程在评判一批状态时结束了"))
                    break
                if "batch_done" in answer:
                    break
                if "i" in answer and isinstance(answer["i"], int) and 0 <= answer["i"] < len(batch.items):
                    batch.observed[answer["i"]].outcomes[answer.get("step")] = answer
        except DriverGone as error:
            batch.problem = _timing_problem(error, "a call on a crash state", "在崩溃状态上的一次调用")
            driver.stop()
    if driver is not None:
        driver.send({"op": "exit"})
        driver.finish()
    for state, (first, second) in zip(batch.observed, batch.paths):
        state.after_a = read_file(first)
        state.after_b = read_file(second) if second else None
    if batch.problem is None:
        _trace_batch(driver, runner, batch)
    discard([path for pair in batch.paths for path in pair if path], reversed(batch.folders))


def judge_batch(runner: Runner, workspace, label: str, items: list, event: dict, reference_read) -> Batch:
    """Prepare, run and observe one batch (see Batch)."""
    batch = prepare_batch(workspace, label, items, reference_read)
    start_batch(runner, batch, event)
    finish_batch(runner, batch)
    return batch


def _trace_batch(driver, runner: Runner, batch: Batch) -> None:
    """Split the batch's record by state and step; rebuild each recover's changes on its file a."""
    stream, pid = _stream(driver, runner)
    current, segments = [], {}
    for kind, item in stream:
        if kind == "call":
            current.append(item)
        elif "i" in item:
            segments[(item["i"], item.get("step"))] = current
            current = []
    for index, (first, second, steps) in enumerate(batch.entries):
        content = batch.items[index][0]
        tracker = Tracker(first, exists=content is not None, initial=content or b"", driver=pid)
        _feed(tracker, [("call", call) for call in segments.get((index, "a"), [])], lambda message: None)
        folder = os.path.dirname(first)
        stray = [call for step in steps for call in segments.get((index, step), [])
                 if _writes_elsewhere(call, folder)]
        state = batch.observed[index]
        state.repair = tracker.changes
        state.repair_points = _numbered(tracker.kill_points)
        if stray:
            state.problem = Problem.refused(Refusal("unseen-bytes", f"a call on another state's file: {stray[0].raw}"))
        else:
            state.problem = _check_written(tracker, state.after_a, runner)


def _writes_elsewhere(call: Call, folder: str) -> bool:
    """True for a change the answer made to a file under the batch's folder but outside this state's."""
    changing = call.name in KILLABLE or call.name.startswith(("rename", "link", "unlink", "symlink"))
    root = os.path.dirname(folder)
    paths = [path for path in (call.path, call.target) if path]
    return changing and not call.failed and any(
        path.startswith(root + os.sep) and not path.startswith(folder + os.sep) for path in paths)


def killed_recover(runner: Runner, workspace, label: str, content: bytes | None, point: tuple) -> KillRun:
    """Kill recover as it enters one of its own calls (its truncate, write or fsync) on a state's file."""
    run = _held(runner, workspace, label, content, point, [lambda path: {"op": "recover", "path": path}])
    name, number = point
    if run.problem is None and not run.landed:
        run.problem = Problem("replay", both(
            f"a kill held before recover's {name} number {number} never came: recover did not repeat its own calls",
            f"在 recover 第 {number} 次 {name} 之前的终止始终没有发生：recover 没有重复自己的调用"))
    return run
