"""The capstone's answer cell, written the ways students write cells in Jupyter, runs in the plain driver as the
notebook ran it (grading/durability/cell.py on the grader's side, driver.NotebookShell on the driver's)."""

import asyncio

import pytest

from s09_jsonl_transcript.grading.durability import driver
from s09_jsonl_transcript.grading.durability.cell import as_python, is_python

DEFINES = "def append(path, event):\n    return event\n"


def run_as_the_driver_does(cell: str) -> dict:
    """The namespace the driver leaves after running cell, translated as the grader translates it."""
    namespace = {"__name__": "__main__"}
    shell = driver.NotebookShell(namespace)
    namespace["get_ipython"] = lambda: shell
    driver.run_source(as_python(cell), "<answer cell>", namespace)
    return namespace


def test_python_is_left_as_it_is_top_level_await_included():
    for cell in (DEFINES, DEFINES + "append\n", "import asyncio\nawait asyncio.sleep(0)\n" + DEFINES):
        assert is_python(cell) and as_python(cell) == cell


@pytest.mark.parametrize("magic", ["%%capture", "%%capture out", "%%time", "%%timeit -n1 -r1", "%%prun"])
def test_a_cell_magic_that_only_shows_or_times_runs_its_body_once(magic):
    translated = as_python(f"{magic}\n{DEFINES}")
    assert translated == "\n" + DEFINES  # the magic's line stays blank: a traceback's line numbers are the cell's
    assert run_as_the_driver_does(f"{magic}\n{DEFINES}")["append"]("p", {"n": 1}) == {"n": 1}


def test_a_cell_magic_whose_body_is_not_python_defines_nothing():
    assert as_python("%%bash\necho hello\n") == "pass\n"
    assert "append" not in run_as_the_driver_does("%%writefile notes.txt\ndef append(): pass\n")


def test_line_magics_and_shell_escapes_run_as_a_notebook_runs_them():
    cell = ("%matplotlib inline\n!echo hello\nfiles = !ls\n%time first = 1 + 1\n%timeit -n 3 -r 1 second = 2 * 3\n"
            "%config InlineBackend.figure_format = 'svg'\n" + DEFINES + "append\n")
    namespace = run_as_the_driver_does(cell)
    assert namespace["first"] == 2 and namespace["second"] == 6  # a timed statement runs once
    assert namespace["files"] == [] and callable(namespace["append"])


def test_magics_inside_a_captured_cell_and_top_level_await():
    cell = "%%capture\nimport asyncio\n%matplotlib inline\nawait asyncio.sleep(0)\nready = True\n" + DEFINES
    namespace = run_as_the_driver_does(cell)
    assert namespace["ready"] is True and callable(namespace["append"])


def test_text_that_is_no_python_stays_as_written_for_the_driver_to_report():
    broken = "def append(path, event)\n    return event\n"
    assert as_python(broken) == broken
    with pytest.raises(SyntaxError):
        run_as_the_driver_does(broken)


def test_a_cell_awaiting_at_its_top_level_runs_in_a_loop_of_its_own():
    namespace = {"__name__": "__main__"}
    driver.run_source("import asyncio\nawait asyncio.sleep(0)\ndone = True\n", "<cell>", namespace)
    assert namespace["done"] is True
    asyncio.run(asyncio.sleep(0))  # no loop was left running or closed under the caller
