"""The grader's guard: an IPython extension the student's kernel loads while it starts, before any cell.

Answer code runs in the same interpreter as the grader's end of the channel, so it can change how a
cell or a call runs: rewrite its source (input transformers), its syntax tree (AST transformers), its
result (hooks, custom exception handlers), or replace the machinery itself (the shell's methods, the
kernel's message sending, the interpreter's hooks, builtins). The guard takes a snapshot of what it
watches (WATCHED: each item with the reason an honest cell cannot change it) when the channel first
greets it, before any cell has run, and compares the live state with it *between* cells: in the
verdict that the trusted side asks for, through the execute request's `user_expressions`, after each
cell and each call. IPython's own machinery changes the kernel while a cell runs and undoes it before
the cell ends (%%capture swaps the streams and the display publisher, top-level await installs its
own SIGINT handler, a nested run_cell fires its own hooks), so the guard never compares mid-cell; and
it compares only what no honest use of Jupyter changes for good: not the display hook's output cache
(`_`, `__`, `___`), not the import system (libraries add finders when imported), not handlers of
signals the grader does not use.

Threads: a thread that a cell of the notebook starts (an executor's workers, a helper thread) is
the notebook's, as in plain Python. A thread that a call of an answer starts and that still runs when
the call has returned is work the check cannot see finish: a finding. An executor's threads that wait for their
next work item are not (their work is done), nor are the threads a library starts for itself on first use.

The verdict carries the hash of the cell the guard saw start, and every problem found so far, each
[watched item, what changed], signed with a key that only the trusted side and the guard hold (the
grader writes it to the kernel's profile folder; the guard deletes it on loading).

What this cannot stop: code that targets the guard itself (reads its key from memory, or restores
everything between the guard's looks, for instance from a thread a cell started, or a finalizer).
No score relies on the guard: the checks decide outside this kernel.

It also caps what the notebook prints (the output limit), inside the kernel where the printing
happens: past the limit, output is cut, not sent, and never an error (nobody reads the student's
kernel's output). It counts every character and keeps the last few thousand, which the channel
reports to the grader after each call.
"""

from __future__ import annotations

import builtins
import hashlib
import hmac
import inspect
import json
import signal
import sys
import threading
from collections import namedtuple
from pathlib import Path

KEY_FILE = "s09_guard.json"
_MAX_PROBLEMS = 20
# Hooks that well-known extensions register, allowed by identity: matplotlib (pyplot, the inline backend), autoreload.
_ALLOWED_HOOKS = (("matplotlib_inline.backend_inline", "flush_figures"),
                  ("matplotlib.pyplot", "_draw_all_if_interactive"),
                  ("matplotlib_inline.backend_inline", "configure_once"),
                  ("IPython.extensions.autoreload", "AutoreloadMagics.pre_run_cell"),
                  ("IPython.extensions.autoreload", "AutoreloadMagics.post_execute_hook"))
# The signals with which Jupyter stops a kernel's code: the interrupt (a running cell) and the shutdown.
GRADER_SIGNALS = ("SIGINT", "SIGTERM")

Watched = namedtuple("Watched", "key what why")
Watched.__doc__ = "One thing the guard watches: its key, what it is (English, Chinese), why no honest cell changes it."

WATCHED = (
    Watched("transformers", ("input transformers", "输入转换器"),
            ("IPython's own transforms (magics, `!`, top-level await) are in place before the first cell; an honest "
             "cell adds, removes or replaces none, so a cell's source becomes the code IPython itself makes of it",
             "IPython 自己的转换（魔法命令、`!`、顶层 await）在第一个单元之前就已就位；"
             "诚实的单元不会增加、删除或替换任何转换器，所以单元的源码变成的就是 IPython 自己由它生成的代码")),
    Watched("ast", ("AST transformers", "AST 转换器"),
            ("neither IPython nor an honest cell adds one; one rewrites every later cell's code",
             "IPython 和诚实的单元都不会添加；添加一个就会改写之后每个单元的代码")),
    Watched("hooks", ("event hooks", "事件钩子"),
            ("hooks run around every cell; printing, display, plots and magics need none, and the hooks that "
             "matplotlib and autoreload register are recognised by identity",
             "钩子在每个单元前后运行；打印、显示、绘图和魔法命令都不需要钩子，"
             "matplotlib 和 autoreload 注册的钩子按身份识别")),
    Watched("exception_handler", ("the custom exception handler", "自定义异常处理器"),
            ("set_custom_exc decides what an error becomes; an honest cell lets errors be errors",
             "set_custom_exc 决定错误变成什么；诚实的单元让错误就是错误")),
    Watched("machinery", ("the kernel's machinery (its objects and their methods)", "内核的机制（它的对象和方法）"),
            ("the shell, the kernel, its session, the display hook and publisher, the compiler and the traceback "
             "formatter, and the code of their methods: %%capture, %%time, %timeit and display change only what "
             "these hold (the output cache `_`, a publisher swapped while a capture runs), and IPython restores what "
             "it swaps before the cell ends",
             "shell、内核、它的 session、显示钩子和发布器、编译器和回溯格式化器，以及它们方法的代码："
             "%%capture、%%time、%timeit 和显示只改变它们保存的数据（输出缓存 `_`，捕获期间被换下的发布器），"
             "而 IPython 会在单元结束前把换下的东西换回来")),
    Watched("handlers", ("the kernel's message handlers", "内核的消息处理函数"),
            ("they answer the grader's requests; nothing in a notebook replaces them",
             "它们回应评分程序的请求；笔记本里没有东西会替换它们")),
    Watched("interpreter", ("the interpreter's hooks", "解释器的钩子"),
            ("sys.settrace, sys.setprofile (and threading's), sys.displayhook, sys.excepthook, sys.breakpointhook, "
             "sys.unraisablehook, sys.stdin, sys.stdout and sys.stderr: magics that swap one (%%capture, %prun) put "
             "it back before the cell ends",
             "sys.settrace、sys.setprofile（以及 threading 的）、sys.displayhook、sys.excepthook、sys.breakpointhook、"
             "sys.unraisablehook、sys.stdin、sys.stdout 和 sys.stderr：换掉其中之一的魔法命令（%%capture、%prun）会在"
             "单元结束前换回来")),
    Watched("builtins", ("builtins", "内置名字"),
            ("a notebook's own names live in its namespace; replacing print or open in the builtins module changes "
             "them for the grader's code too",
             "笔记本自己的名字在它的命名空间里；替换 builtins 模块里的 print 或 open，也会改变评分程序代码看到的它们")),
    Watched("signals", ("handlers of SIGINT and SIGTERM", "SIGINT 和 SIGTERM 的处理函数"),
            ("these stop a kernel's code (Jupyter's interrupt, a kernel's shutdown); a handler for another signal "
             "(SIGALRM for a time limit of one's own, SIGUSR1, SIGCHLD) is the notebook's business",
             "这两个信号用来停止内核的代码（Jupyter 的中断、内核的关闭）；其他信号的处理函数（自己计时用的 SIGALRM、"
             "SIGUSR1、SIGCHLD）是笔记本自己的事")),
    Watched("threads", ("a thread a call left running", "调用留下仍在运行的线程"),
            ("a call's work is done when it returns (the check reads its result then); threads that a cell starts "
             "are the notebook's, and an executor's workers waiting for their next task are idle",
             "调用返回时它的工作就该做完（检查这时读取结果）；单元启动的线程属于笔记本，执行器里等待下一个任务的工作线程"
             "是空闲的")),
    Watched("verdict", ("the guard's verdict", "守卫的判定"),
            ("the trusted side asks for it after every cell and call; only code aimed at the guard makes it missing "
             "or forged", "可信一方在每个单元和每次调用之后索取它；只有针对守卫的代码才会让它缺失或被伪造")),
)
WATCHED_KEYS = {item.key for item in WATCHED}


class Output:
    """What the notebook printed: every character counted, the first output_limit of them let through, the
    last TAIL kept for the grader's report.

    Nobody reads the student's kernel's output during a grading, so what goes past the limit is cut,
    not an error: printing never costs a check.
    """

    TAIL = 4000

    def __init__(self, limit: int):
        self.limit, self.characters, self._tail = limit, 0, ""

    def take(self, text) -> bool:
        """Count text; True while it is still within the limit (to be written)."""
        text = text if isinstance(text, str) else str(text)
        self.characters += len(text)
        self._tail = (self._tail + text)[-self.TAIL:]
        return self.characters <= self.limit

    def tail(self, characters: int) -> str:
        """The last characters printed (at most TAIL)."""
        return self._tail[-characters:] if characters > 0 else ""


output = None  # the notebook's Output, once the guard is loaded


def load_ipython_extension(shell) -> None:
    """Read and delete the key, cap the output, and hook every cell; the first verdict takes the snapshot."""
    path = Path(shell.profile_dir.location) / KEY_FILE
    settings = json.loads(path.read_text(encoding="utf-8"))
    path.unlink()
    global output
    guard = _Guard(shell, int(settings["output_limit"]))
    output = guard.output
    key = bytes.fromhex(settings["key"])
    del settings

    def verdict(nonce: str, kind: str = "cell") -> str:
        """The signed verdict (see probe.verdict_mac) after a "cell" or a "call": the cell seen, every problem."""
        problems = guard.look(kind)
        cell = guard.cell_hash
        mac = hmac.new(key, json.dumps([nonce, cell, problems]).encode(), hashlib.sha256).hexdigest()
        return json.dumps({"nonce": nonce, "cell": cell, "problems": problems, "mac": mac})

    shell.events.register("pre_run_cell", guard.pre_run_cell)
    shell.events.register("post_run_cell", guard.post_run_cell)
    sys.modules[__name__].verdict = verdict


class _Guard:
    def __init__(self, shell, output_limit: int):
        from IPython.core.inputtransformer2 import TransformerManager

        self.shell = shell
        self.snapshot = None
        self.problems = []  # [watched item's key, what changed]
        self.cell_hash = ""
        self.running = []  # the ExecutionInfo of each run_cell under way: the first is the top-level cell
        self.known_threads = set()  # the notebook's threads (Thread objects: an ident may be reused)
        self.pristine = TransformerManager()  # IPython's own transforms, out of reach of the cells' changes
        self.output = Output(output_limit)
        for stream in (sys.stdout, sys.stderr):
            stream.write = self._limited(stream.write, lambda text="", *args, **kwargs: text)
        shell.display_pub.publish = self._limited(shell.display_pub.publish,
                                                  lambda data=None, *args, **kwargs: repr(data))

    # ------------------------------------------------------------------ output limit

    def _limited(self, write, text_of):
        def limited(*args, **kwargs):
            text = text_of(*args, **kwargs)
            if self.output.take(text):
                return write(*args, **kwargs)
            return len(text) if isinstance(text, str) else None  # cut: as if written
        return limited

    # ------------------------------------------------------------------ looking

    def look(self, kind: str = "cell") -> list:
        """Between cells: take the snapshot the first time; later, note what changed since. Returns every problem.

        After a "call", a thread the call started that still runs is a finding; after a "cell", the
        threads running are the notebook's from then on.
        """
        self.running.clear()  # a verdict is asked between cells: whatever did not end cleanly has ended
        if self.snapshot is None:
            self.snapshot = _State(self.shell)
            self.known_threads = set(threading.enumerate())
            return list(self.problems)
        self._note(self.snapshot.differences(_State(self.shell)))
        alive = [thread for thread in threading.enumerate() if thread not in self.known_threads and thread.is_alive()]
        if kind == "call":
            frames = thread_frames()
            idle = [thread for thread in alive if _is_library_service(thread) or is_idle_worker(thread, frames)]
            self.known_threads.update(idle)
            left = [thread for thread in alive if thread not in idle]
            if left:
                name = left[0].name.encode("utf-8", "backslashreplace").decode("utf-8")  # a lone surrogate: escaped
                self._note([["threads", f"a thread the call started is still running after it returned ({name})"]])
                self.known_threads.update(left)  # said once
        else:
            self.known_threads.update(alive)
        return list(self.problems)

    def pre_run_cell(self, info) -> None:
        """A cell starts (also one a magic runs inside another, as %%capture does): check how it was transformed."""
        if not self.running:
            self.cell_hash = hashlib.sha256(info.raw_cell.encode()).hexdigest()
        self.running.append(info)
        if self.snapshot is None:
            return
        try:  # the static transforms (the shell's single-line prefilter is left out: checks are not single lines)
            rewritten = (self.shell.input_transformer_manager.transform_cell(info.raw_cell)
                         != self.pristine.transform_cell(info.raw_cell))
        except Exception:  # noqa: BLE001 - a cell IPython cannot parse is rejected elsewhere
            rewritten = False
        if rewritten:
            self._note([["transformers", "the cell's source is rewritten before it runs"]])

    def post_run_cell(self, result) -> None:
        info = getattr(result, "info", None)
        if self.running and info is self.running[-1]:
            self.running.pop()

    def _note(self, problems: list) -> None:
        for problem in problems:
            if problem not in self.problems and len(self.problems) < _MAX_PROBLEMS:
                self.problems.append(problem)


def _name(thing) -> str:
    function = getattr(thing, "__func__", thing)
    return f"{getattr(function, '__module__', '?')}.{getattr(function, '__qualname__', type(thing).__name__)}"


def _allowed_hook(callback) -> bool:
    function = getattr(callback, "__func__", callback)
    for module_name, qualname in _ALLOWED_HOOKS:
        module = sys.modules.get(module_name)
        owner = module
        for part in qualname.split("."):
            owner = getattr(owner, part, None)
        if owner is not None and function is owner and getattr(function, "__module__", None) == module_name:
            return True
    return False


def _is_code(value) -> bool:
    return inspect.isfunction(value) or isinstance(value, (property, staticmethod, classmethod))


def _code_of(value):
    """Identities that change when a function, method or property is replaced or gets new code."""
    if isinstance(value, (staticmethod, classmethod)):
        value = value.__func__
    if isinstance(value, property):
        return tuple(_code_of(part) for part in (value.fget, value.fset, value.fdel))
    return (id(value), id(getattr(value, "__code__", None)))


def _shadowed_methods(thing) -> dict:
    """name -> identity of each attribute of thing's own that hides a method of its class (a replaced method).

    Data the object holds is left alone, callable or not: the display hook's output cache `_`, `__`,
    `___` holds whatever a cell's last line showed, a function included.
    """
    methods = {name for cls in type(thing).__mro__ for name, value in vars(cls).items() if _is_code(value)}
    return {name: id(value) for name, value in getattr(thing, "__dict__", {}).items() if name in methods}


class _State:
    """What the guard compares between cells (WATCHED, threads aside)."""

    def __init__(self, shell):
        from IPython.core import interactiveshell

        kernel = getattr(shell, "kernel", None)
        manager = shell.input_transformer_manager
        objects = {"the shell": shell, "the kernel": kernel, "the kernel's session": getattr(kernel, "session", None),
                   "the event manager": shell.events, "the input transformer manager": manager,
                   "the display hook": shell.displayhook, "the display publisher": shell.display_pub,
                   "the compiler": shell.compile, "the traceback formatter": shell.InteractiveTB}
        self.transformers = {name: [id(item) for item in getattr(manager, name)]
                             for name in ("cleanup_transforms", "line_transforms", "token_transformers")}
        self.transformers["input_transformers_post"] = [id(item) for item in shell.input_transformers_post]
        self.ast_transformers = [id(item) for item in shell.ast_transformers]
        self.events = {name: [id(callback) for callback in callbacks]
                       for name, callbacks in shell.events.callbacks.items()}
        self.event_callbacks = {name: list(callbacks) for name, callbacks in shell.events.callbacks.items()}
        self.custom_exceptions = shell.custom_exceptions
        self.objects = {label: id(thing) for label, thing in objects.items()}
        self.shadowed = {label: _shadowed_methods(thing) for label, thing in objects.items() if thing is not None}
        classes = {cls for thing in objects.values() for cls in type(thing).__mro__ if cls.__module__ != "builtins"}
        classes |= {interactiveshell.ExecutionResult, interactiveshell.ExecutionInfo}
        self.class_methods = {cls: {name: _code_of(value) for name, value in vars(cls).items() if _is_code(value)}
                              for cls in classes}
        self.handlers = {name: id(handler) for name, handler in (getattr(kernel, "shell_handlers", None) or {}).items()}
        self.hooks = _interpreter_hooks()
        managed = set(getattr(shell.builtin_trap, "auto_builtins", {})) | {"input"}  # the kernel swaps these itself
        self.builtins = {name: id(value) for name, value in vars(builtins).items() if name not in managed}
        self.user_builtins = id(shell.user_ns.get("__builtins__"))
        self.signals = _signal_handlers()

    def differences(self, now: _State) -> list:
        """[watched item, what changed] for each way the state now differs from this snapshot."""
        found = []
        for name, ids in now.transformers.items():
            if ids != self.transformers[name]:
                found.append(["transformers", f"an input transformer was added or removed ({name})"])
        if now.ast_transformers != self.ast_transformers:
            found.append(["ast", "an AST transformer was added or removed"])
        found += self._hook_differences(now)
        if now.custom_exceptions != self.custom_exceptions:
            found.append(["exception_handler", "a custom exception handler was set (set_custom_exc)"])
        found += self._machinery_differences(now)
        if now.handlers != self.handlers:
            found.append(["handlers", "the kernel's message handlers were replaced"])
        for name in sorted(set(now.hooks) | set(self.hooks)):
            if now.hooks.get(name) != self.hooks.get(name):
                found.append(["interpreter", f"{name} was changed"])
        changed = sorted(name for name, identity in self.builtins.items() if now.builtins.get(name) != identity)
        if changed:
            found.append(["builtins", f"builtins {', '.join(changed[:5])} were replaced"])
        if now.user_builtins != self.user_builtins:
            found.append(["builtins", "the notebook's __builtins__ was replaced"])
        changed = sorted(name for name in self.signals if now.signals.get(name) != self.signals[name])
        if changed:
            found.append(["signals", f"signal handlers were set ({', '.join(changed)})"])
        return found

    def _hook_differences(self, now: _State) -> list:
        found = []
        for event in sorted(set(now.events) | set(self.events)):
            before, after = self.events.get(event, []), now.events.get(event, [])
            added = [callback for callback in now.event_callbacks.get(event, [])
                     if id(callback) not in before and not _allowed_hook(callback)]
            if added:
                names = ", ".join(_name(callback) for callback in added)
                found.append(["hooks", f"a {event} hook was added ({names})"])
            if any(identity not in after for identity in before):
                found.append(["hooks", f"a {event} hook was removed"])
        return found

    def _machinery_differences(self, now: _State) -> list:
        found = []
        for label, identity in now.objects.items():
            if identity != self.objects[label]:
                found.append(["machinery", f"{label} was replaced"])
        for label, methods in now.shadowed.items():
            before = self.shadowed.get(label, {})
            changed = sorted(name for name in set(methods) | set(before) if methods.get(name) != before.get(name))
            if changed:
                found.append(["machinery", f"{label} had {', '.join(changed[:5])} replaced"])
        for cls, methods in now.class_methods.items():
            before = self.class_methods.get(cls)
            if before is None:
                found.append(["machinery", f"{label_of(cls)} appeared in the kernel's machinery"])
                continue
            changed = sorted(name for name in set(methods) | set(before) if methods.get(name) != before.get(name))
            if changed:
                found.append(["machinery", f"{label_of(cls)} had {', '.join(changed[:5])} replaced"])
        return found


def label_of(cls) -> str:
    """module.QualifiedName of a class."""
    return f"{cls.__module__}.{cls.__qualname__}"


def _interpreter_hooks() -> dict:
    hooks = {"sys.settrace": id(sys.gettrace()), "sys.setprofile": id(sys.getprofile()),
             "threading.settrace": id(getattr(threading, "_trace_hook", None)),
             "threading.setprofile": id(getattr(threading, "_profile_hook", None))}
    for name in ("displayhook", "excepthook", "breakpointhook", "unraisablehook", "stdout", "stderr", "stdin"):
        hooks[f"sys.{name}"] = id(getattr(sys, name, None))
    return hooks


def _signal_handlers() -> dict:
    handlers = {}
    for name in GRADER_SIGNALS:
        number = getattr(signal, name, None)
        if number is not None:
            handlers[name] = id(signal.getsignal(number))
    return handlers


def _is_library_service(thread) -> bool:
    """A thread a library starts for itself the first time it is used and keeps: pyzmq's garbage collector (its
    first large message), tqdm's monitor (its first progress bar)."""
    garbage = sys.modules.get("zmq.utils.garbage")
    if garbage is not None and type(thread) is garbage.GarbageCollectorThread:
        return True
    return (type(thread).__module__, type(thread).__name__) == ("tqdm._monitor", "TMonitor")


def thread_frames() -> dict:
    """Thread ident -> the frame that thread runs now: the interpreter's one view of other threads' stacks
    (sys._current_frames, documented in the sys module as meant for debugging; read by name, like threading's hooks
    above)."""
    return getattr(sys, "_current_frames")()


def is_idle_worker(thread, frames: dict | None = None) -> bool:
    """True for an executor's thread that waits for its next work item, its last one done: a ThreadPoolExecutor's
    worker, a ProcessPoolExecutor's manager with no work pending, or the feeder of its queue with nothing to feed.
    frames: thread_frames(), taken once for many threads."""
    frames = thread_frames() if frames is None else frames
    return (_waits_in_a_thread_pool(thread, frames) or _manages_an_idle_process_pool(thread)
            or _feeds_nothing(thread, frames))


def _code(module_name: str, *path: str):
    owner = sys.modules.get(module_name)
    for part in path:
        owner = getattr(owner, part, None)
    return getattr(owner, "__code__", None)


def _stack(thread, frames: dict):
    frame = frames.get(thread.ident)
    while frame is not None:
        yield frame
        frame = frame.f_back


def _waits_in_a_thread_pool(thread, frames: dict) -> bool:
    worker = _code("concurrent.futures.thread", "_worker")
    run = _code("concurrent.futures.thread", "_WorkItem", "run")
    in_worker = False
    for frame in _stack(thread, frames) if worker is not None else ():
        if frame.f_code is worker:
            in_worker = True
        elif frame.f_code is run:  # running a work item: idle only once the item's future holds its result
            item = frame.f_locals.get("self")
            future = getattr(item, "future", None)
            if item is not None and not (future is not None and future.done()):
                return False
    return in_worker


def _manages_an_idle_process_pool(thread) -> bool:
    kind = type(thread)
    return ((kind.__module__, kind.__name__) == ("concurrent.futures.process", "_ExecutorManagerThread")
            and not getattr(thread, "pending_work_items", True))


def _feeds_nothing(thread, frames: dict) -> bool:
    """A multiprocessing queue's feeder thread (a process pool's call queue has one) with nothing left to send."""
    feed = _code("multiprocessing.queues", "Queue", "_feed")
    for frame in _stack(thread, frames) if feed is not None else ():
        if frame.f_code is feed:
            buffer = frame.f_locals.get("buffer")
            return buffer is not None and len(buffer) == 0
    return False
