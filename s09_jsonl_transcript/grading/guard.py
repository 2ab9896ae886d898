"""The grader's guard: an IPython extension the grading kernel loads while it starts, before any cell.

Answer code runs in the same interpreter as the checks, so it can change how a check cell runs:
rewrite its source (input transformers), its syntax tree (AST transformers), its result
(`post_run_cell` hooks, custom exception handlers), or replace the machinery itself (the shell's
methods, the kernel's message sending, `sys` hooks, builtins). The guard takes a snapshot of all
of that when the grader's probe first greets it, before any cell has run, and compares the live
state with it before and after every cell. After each check the probe asks it, through the
execute request's `user_expressions`, for a verdict: the hash of the cell it saw run and every
interference it has found so far, signed with a key that only the probe and the guard hold (the
probe writes it to the kernel's profile folder; the guard deletes it on loading).

What this cannot stop: code that targets the guard itself (reads its key from memory, or
restores everything between the guard's looks, for instance from a thread or a finalizer) and
checks that are fooled without touching the machinery (for example by an answer that inspects the
check's own frame). README section "What the grader does and does not stop" keeps the list.

It also caps what the notebook prints (the output limit), inside the kernel where the printing
happens: past the limit, output is cut, not sent, and never an error (nobody reads the student's
kernel's output). It counts every character and keeps the last few thousand, which the channel
reports to the grader after each call.
"""

from __future__ import annotations

import builtins
import gc
import hashlib
import hmac
import inspect
import json
import signal
import sys
import threading
from pathlib import Path

KEY_FILE = "s09_guard.json"
_MAX_PROBLEMS = 20
# Hooks that well-known extensions register, allowed by identity: matplotlib (pyplot, the inline backend), autoreload.
_ALLOWED_HOOKS = (("matplotlib_inline.backend_inline", "flush_figures"),
                  ("matplotlib.pyplot", "_draw_all_if_interactive"),
                  ("matplotlib_inline.backend_inline", "configure_once"),
                  ("IPython.extensions.autoreload", "AutoreloadMagics.pre_run_cell"),
                  ("IPython.extensions.autoreload", "AutoreloadMagics.post_execute_hook"))


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
    """Read and delete the key, cap the output, and hook every cell; the probe's first greeting takes the snapshot."""
    path = Path(shell.profile_dir.location) / KEY_FILE
    settings = json.loads(path.read_text(encoding="utf-8"))
    path.unlink()
    global output
    guard = _Guard(shell, int(settings["output_limit"]))
    output = guard.output
    key = bytes.fromhex(settings["key"])
    del settings

    def verdict(nonce: str) -> str:
        """The signed verdict for the probe (see probe.verdict_mac): the cell seen, and every problem found."""
        problems = guard.look()
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
        self.problems = []
        self.cell_hash = ""
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

    def look(self) -> list:
        """Take the snapshot the first time; later, note what changed since. Returns every problem so far."""
        if self.snapshot is None:
            self.snapshot = _State(self.shell)
        else:
            self._note(self.snapshot.differences(_State(self.shell)))
        return list(self.problems)

    def pre_run_cell(self, info) -> None:
        self.cell_hash = hashlib.sha256(info.raw_cell.encode()).hexdigest()
        if self.snapshot is None:
            return
        self.look()
        try:  # the static transforms (the shell's single-line prefilter is left out: checks are not single lines)
            rewritten = (self.shell.input_transformer_manager.transform_cell(info.raw_cell)
                         != self.pristine.transform_cell(info.raw_cell))
        except Exception:  # noqa: BLE001 - a cell IPython cannot parse is rejected elsewhere
            rewritten = False
        if rewritten:
            self._note(["the cell's source is rewritten before it runs"])

    def post_run_cell(self, result) -> None:
        if self.snapshot is not None:
            self.look()

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


class _State:
    """Everything answer code could change to alter how a cell runs or what its reply says."""

    def __init__(self, shell):
        from IPython.core import interactiveshell

        kernel = getattr(shell, "kernel", None)
        manager = shell.input_transformer_manager
        objects = {"the shell": shell, "the kernel": kernel, "the kernel's session": getattr(kernel, "session", None),
                   "the event manager": shell.events, "the input transformer manager": manager,
                   "the display hook": shell.displayhook, "the display publisher": shell.display_pub,
                   "the compiler": shell.compile, "the traceback formatter": shell.InteractiveTB}
        # sys.stdout and sys.stderr are left to _sys_hooks (which object they are): IPython itself swaps
        # their write method around every cell to keep a history of outputs.
        self.transformers = {name: [id(item) for item in getattr(manager, name)]
                             for name in ("cleanup_transforms", "line_transforms", "token_transformers")}
        self.post_transformers = [id(item) for item in shell.input_transformers_post]
        self.ast_transformers = [id(item) for item in shell.ast_transformers]
        self.events = {name: [id(callback) for callback in callbacks]
                       for name, callbacks in shell.events.callbacks.items()}
        self.event_callbacks = {name: list(callbacks) for name, callbacks in shell.events.callbacks.items()}
        self.custom_exceptions = shell.custom_exceptions
        self.objects = {label: id(thing) for label, thing in objects.items()}
        self.instance_methods = {label: {name: id(value) for name, value in vars(thing).items() if callable(value)}
                                 for label, thing in objects.items() if hasattr(thing, "__dict__")}
        classes = {cls for thing in objects.values() for cls in type(thing).__mro__ if cls.__module__ != "builtins"}
        classes |= {interactiveshell.ExecutionResult, interactiveshell.ExecutionInfo}
        self.class_methods = {cls: {name: _code_of(value) for name, value in vars(cls).items() if _is_code(value)}
                              for cls in classes}
        self.handlers = {name: id(handler) for name, handler in (getattr(kernel, "shell_handlers", None) or {}).items()}
        self.hooks = _sys_hooks()
        managed = set(getattr(shell.builtin_trap, "auto_builtins", {})) | {"input"}  # the kernel swaps these itself
        self.builtins = {name: id(value) for name, value in vars(builtins).items() if name not in managed}
        self.user_builtins = id(shell.user_ns.get("__builtins__"))
        self.signals = _signal_handlers()
        self.threads = {thread.ident for thread in threading.enumerate()}

    def differences(self, now: _State) -> list:
        """One line per way the state now differs from this snapshot."""
        found = []
        for name, ids in now.transformers.items():
            if ids != self.transformers[name]:
                found.append(f"an input transformer was added or removed ({name})")
        if now.post_transformers != self.post_transformers:
            found.append("an input transformer was added or removed (input_transformers_post)")
        if now.ast_transformers != self.ast_transformers:
            found.append("an AST transformer was added or removed")
        for event in sorted(set(now.events) | set(self.events)):
            before, after = self.events.get(event, []), now.events.get(event, [])
            added = [callback for callback in now.event_callbacks.get(event, [])
                     if id(callback) not in before and not _allowed_hook(callback)]
            if added:
                found.append(f"a {event} hook was added ({', '.join(_name(callback) for callback in added)})")
            if any(identity not in after for identity in before):
                found.append(f"a {event} hook was removed")
        if now.custom_exceptions != self.custom_exceptions:
            found.append("a custom exception handler was set (set_custom_exc)")
        for label, identity in now.objects.items():
            if identity != self.objects[label]:
                found.append(f"{label} was replaced")
        for label, methods in now.instance_methods.items():
            changed = sorted(name for name in set(methods) | set(self.instance_methods.get(label, {}))
                             if methods.get(name) != self.instance_methods.get(label, {}).get(name))
            if changed:
                found.append(f"{label} had {', '.join(changed[:5])} replaced")
        for cls, methods in now.class_methods.items():
            before = self.class_methods.get(cls)
            if before is None:
                found.append(f"{label_of(cls)} appeared in the kernel's machinery")
                continue
            changed = sorted(name for name in set(methods) | set(before) if methods.get(name) != before.get(name))
            if changed:
                found.append(f"{label_of(cls)} had {', '.join(changed[:5])} replaced")
        if now.handlers != self.handlers:
            found.append("the kernel's message handlers were replaced")
        for name in sorted(set(now.hooks) | set(self.hooks)):
            if now.hooks.get(name) != self.hooks.get(name):
                found.append(f"{name} was changed")
        changed = sorted(name for name, identity in self.builtins.items() if now.builtins.get(name) != identity)
        if changed:
            found.append(f"builtins {', '.join(changed[:5])} were replaced")
        if now.user_builtins != self.user_builtins:
            found.append("the notebook's __builtins__ was replaced")
        changed = sorted(name for name in self.signals if now.signals.get(name) != self.signals[name])
        if changed:
            found.append(f"signal handlers were set ({', '.join(changed[:5])})")
        started = [thread for thread in threading.enumerate() if thread.ident not in self.threads and thread.is_alive()
                   and not _is_zmq_collector(thread)]
        if started:
            name = started[0].name.encode("utf-8", "backslashreplace").decode("utf-8")  # a lone surrogate survives JSON
            found.append(f"a thread started by the notebook is still running ({name})")
        return found


def label_of(cls) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _sys_hooks() -> dict:
    hooks = {"sys.settrace": id(sys.gettrace()), "sys.setprofile": id(sys.getprofile()),
             "threading.settrace": id(getattr(threading, "_trace_hook", None)),
             "threading.setprofile": id(getattr(threading, "_profile_hook", None)),
             "gc.callbacks": [id(callback) for callback in gc.callbacks],
             "sys.meta_path": [id(finder) for finder in sys.meta_path],
             "sys.path_hooks": [id(hook) for hook in sys.path_hooks]}
    for name in ("displayhook", "excepthook", "breakpointhook", "unraisablehook", "stdout", "stderr", "stdin"):
        hooks[f"sys.{name}"] = id(getattr(sys, name, None))
    return hooks


def _signal_handlers() -> dict:
    handlers = {}
    for number in signal.valid_signals():
        try:
            handlers[signal.Signals(number).name] = id(signal.getsignal(number))
        except (ValueError, OSError):
            continue
    return handlers


def _is_zmq_collector(thread) -> bool:
    """pyzmq's own garbage-collector thread, which it starts the first time it sends a large message."""
    garbage = sys.modules.get("zmq.utils.garbage")
    return garbage is not None and type(thread) is garbage.GarbageCollectorThread
