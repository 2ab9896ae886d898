"""Every call a notebook's text quotes (a `name(...)` span in a markdown cell) exists with that signature.

A sentence like "`JSONLTranscript(path, integrity=True)` seals every record" is a claim about the
package: here each quoted call is parsed, its callee is looked up among the names the notebook
imports (and the lesson's and the lab's public names, and the functions the notebook's own cells
define), and its arguments are bound to the callee's signature. A call that names nothing, or whose
arguments the callee would refuse with a TypeError, fails. The Chinese text quotes the same code and
is checked the same way.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import re
from pathlib import Path

import pytest

from s09_jsonl_transcript.text import bilingual

REPO = Path(__file__).resolve().parents[1]
ENGLISH = bilingual.notebook_files("en")  # the chapters and the notebooks beyond s09
# the lesson, the lab and the kit's modules whose calls any notebook's text may name
ALWAYS = ("s09_jsonl_transcript.code", "s09_jsonl_transcript.lab", "s09_jsonl_transcript.production.turns",
          "s09_jsonl_transcript.production.index", "s09_jsonl_transcript.production.live",
          "s09_jsonl_transcript.crashlab.kills")
# `os.write`, `Popen.kill()`: quoted from the standard library, by module or class only, so a bare
# `close()` or `fork(...)` is looked up among the kit's methods, not taken for `os.close` or `os.fork`
STDLIB = ("os", "subprocess", "json")

_SPAN = re.compile(r"`([^`\n]+)`")
_CALL = re.compile(r"^[A-Za-z_][\w.]*\(.*\)$")


def quoted_calls(texts) -> list[str]:
    """The `...` spans of the texts that look like a call: a dotted name, then parentheses."""
    return sorted({span.strip() for text in texts for span in _SPAN.findall(text) if _CALL.match(span.strip())})


def markdown_of(path: Path) -> list[str]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "markdown"]


def code_of(path: Path) -> list[str]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "code"]


def namespace_of(notebook: Path) -> dict:
    """The names a notebook's code can call: its imports, the lesson's and lab's public names, its own functions."""
    names: dict = {}
    for module in ALWAYS:
        loaded = importlib.import_module(module)
        names.update({name: getattr(loaded, name) for name in dir(loaded) if not name.startswith("_")})
    for module in STDLIB:
        loaded = names[module] = importlib.import_module(module)
        names.update({name: value for name, value in vars(loaded).items()
                      if not name.startswith("_") and inspect.isclass(value)})
    for source in code_of(notebook):
        lines = [line for line in source.splitlines() if not line.lstrip().startswith(("!", "%"))]
        try:
            tree = ast.parse("\n".join(lines))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                loaded = importlib.import_module(node.module)
                if node.module.startswith("s09_jsonl_transcript"):  # `turns.session_status` beside `audit`
                    names.update({name: value for name, value in vars(loaded).items()
                                  if not name.startswith("_") and name not in names and callable(value)})
                for alias in node.names:
                    value = getattr(loaded, alias.name, None)
                    if value is None:
                        value = importlib.import_module(f"{node.module}.{alias.name}")
                    names[alias.asname or alias.name] = value
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    names[alias.asname or alias.name.split(".")[0]] = importlib.import_module(alias.name.split(".")[0])
            elif isinstance(node, ast.FunctionDef) and node.col_offset == 0:
                exec(compile(ast.Module([node], []), str(notebook), "exec"), dict(names), defined := {})
                names.update(defined)
    return names


def classes_in(names: dict) -> list[type]:
    """Every class the notebook can reach: those it names, and the public classes of the modules they come from."""
    found = {value for value in names.values() if inspect.isclass(value)}
    modules = {inspect.getmodule(value) for value in names.values()
               if inspect.isclass(value) or inspect.isfunction(value)}
    modules |= {value for value in names.values() if inspect.ismodule(value) and value.__name__.startswith("s09")}
    for module in filter(None, modules):
        found |= {value for name, value in vars(module).items() if inspect.isclass(value) and not name.startswith("_")}
    return sorted(found, key=lambda cls: (cls.__module__, cls.__qualname__))


def candidates(callee: list[str], names: dict) -> list:
    """What the quoted callee may name: a name in the namespace, or a method of a class the notebook reaches."""
    first, *rest = callee
    if rest and first in names:
        target = names[first]
        for part in rest:
            target = getattr(target, part, None)
        if target is not None:
            return [target]
    method = callee[-1]
    methods = [getattr(cls, method) for cls in classes_in(names)
               if method in dir(cls) and callable(getattr(cls, method))]
    # a bare `read_from(n)` may name a function the notebook reaches or a method of a class it reaches
    return ([names[first]] if not rest and first in names else []) + methods


def binds(target, call: ast.Call) -> bool:
    """True when the call's arguments fit the target's signature (`...` stands for arguments left out)."""
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return True  # a builtin without a signature: the name exists, nothing more to check
    positional = [arg for arg in call.args if not (isinstance(arg, ast.Constant) and arg.value is Ellipsis)]
    keywords = {keyword.arg: None for keyword in call.keywords if keyword.arg}
    elided = len(positional) < len(call.args)
    unbound_method = inspect.isfunction(target) and "." in target.__qualname__ and \
        next(iter(signature.parameters), None) == "self"
    arguments = [None] * (len(positional) + unbound_method)
    try:
        (signature.bind_partial if elided else signature.bind)(*arguments, **keywords)
    except TypeError:
        return False
    return True


def problems(texts, notebook: Path) -> list[str]:
    """Every quoted call that names nothing the notebook can reach, or that its callee would refuse."""
    names = namespace_of(notebook)
    found = []
    for quoted in quoted_calls(texts):
        try:
            call = ast.parse(quoted, mode="eval").body
        except SyntaxError:
            found.append(f"`{quoted}` is not Python")
            continue
        callee = ast.unparse(call.func).split(".")
        targets = candidates(callee, names)
        if not targets:
            found.append(f"`{quoted}`: nothing the notebook reaches is called {'.'.join(callee)}")
        elif not any(binds(target, call) for target in targets):
            found.append(f"`{quoted}`: {'.'.join(callee)} takes other arguments "
                         f"({', '.join(str(inspect.signature(target)) for target in targets[:3])})")
    return found


@pytest.mark.parametrize("notebook", ENGLISH, ids=lambda path: path.stem)
def test_every_call_the_english_text_quotes_exists_with_those_arguments(notebook):
    found = problems(markdown_of(notebook), notebook)
    assert not found, "\n".join(found)


@pytest.mark.parametrize("notebook", ENGLISH, ids=lambda path: path.stem)
def test_every_call_the_chinese_text_quotes_exists_with_those_arguments(notebook):
    text = bilingual.Pair.named(notebook.stem).text
    found = problems([section.text for section in bilingual.read_text(text).values()], notebook)
    assert not found, "\n".join(found)


def test_the_check_finds_calls_and_can_fail():
    notebook = ENGLISH[0]
    assert quoted_calls(["`append(event)` and `x = 1`, `replay(1000)`, `ticking_clock`"]) == [
        "append(event)", "replay(1000)"]
    assert problems(["`JSONLTranscript(path)` and `replay(1000)`"], notebook) == []
    found = problems(["`JSONLTranscript(path, integrity=True)`", "`no_such_function(1)`", "`replay(1, 2, 3)`",
                      "`subscribe(5)`", "`fork()`"], notebook)
    assert [line.split("`")[1] for line in found] == ["JSONLTranscript(path, integrity=True)", "fork()",
                                                      "no_such_function(1)", "replay(1, 2, 3)", "subscribe(5)"], found
    assert problems(["`os.write(fd, data)`", "`close()`", "`fork(name, 3)`",
                     "`DurableTranscript(path, integrity=True)`"], notebook) == []
