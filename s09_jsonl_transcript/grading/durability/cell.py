"""An answer cell as the capstone's driver runs it: plain Python, whatever Jupyter syntax the student used.

    source = as_python(cell_text)

The driver runs the answer cell in a plain interpreter (no IPython: it runs with `python -S` in the
student's sandbox), so the notebook's own syntax has to become Python first, on the grader's side:

- a cell that is Python already (the usual case, top-level `await` included) is left as it is;
- a cell magic whose body is Python and whose work is output or timing (`%%capture`, `%%time`,
  `%%timeit`, `%%prun`) becomes its body, run once: what the body defines is what the notebook
  defined; a cell magic whose body is not Python (`%%bash`, `%%html`, `%%writefile`, ...) defines
  nothing and becomes `pass`;
- line magics and shell escapes (`%matplotlib inline`, `%time append(...)`, `!ls`) become IPython's
  own translation, calls of `get_ipython()`, which the driver answers (driver.NotebookShell).

The first line of a cell magic stays as a blank line, so the line numbers of a traceback are the
cell's. An honest answer scores the same, however the student uses Jupyter
(tests/grading_data/jupyter_forms/ex06.txt).
"""

from __future__ import annotations

import ast

# cell magics whose body is Python and whose own work is output or timing: the body runs once
BODY_RUNS_ONCE = frozenset({"capture", "time", "timeit", "prun"})


def is_python(source: str) -> bool:
    """Whether source compiles as Python, top-level await allowed (as the driver compiles it)."""
    try:
        compile(source, "<answer cell>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    except (SyntaxError, ValueError):
        return False
    return True


def as_python(source: str) -> str:
    """The answer cell's text as plain Python the driver can run (see the module doc). Text that is
    neither Python nor Jupyter's syntax is returned as it is: the driver reports its SyntaxError."""
    if is_python(source):
        return source
    first, _, body = source.lstrip("\n").partition("\n")
    blank_lines = "\n" * (len(source) - len(source.lstrip("\n")))
    if first.startswith("%%"):
        words = first[2:].split()
        if words and words[0] in BODY_RUNS_ONCE:
            return blank_lines + "\n" + as_python(body)
        return blank_lines + "pass\n"
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except ImportError:  # the grader's extra installs IPython; without it the text stays as written
        return source
    translated = TransformerManager().transform_cell(source)
    return translated if is_python(translated) else source
