"""The guard's rules (issue 49), in an IPython shell of their own: the notebook's own machinery is no finding, a
change to what the guard watches is, and so is a thread a call leaves running.

The shell runs in a subprocess (an IPython shell changes the interpreter it runs in): it loads the guard as a
kernel does, runs cells, and asks for the guard's verdict between them, as the channel does after each cell
("cell") and each call ("call"). The real grader meets the same in tests/test_grading_jupyter_forms.py and the
tampering suites.
"""

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import pytest

from s09_jsonl_transcript.grading import guard

SHELL = r'''
import json, sys
from pathlib import Path
from IPython.core.interactiveshell import InteractiveShell

shell = InteractiveShell.instance()
profile = Path(shell.profile_dir.location)  # in the IPYTHONDIR the test gives
(profile / "s09_guard.json").write_text(json.dumps({"key": "00" * 32, "output_limit": 1 << 20}))
shell.extension_manager.load_extension("s09_jsonl_transcript.grading.guard")
guard = sys.modules["s09_jsonl_transcript.grading.guard"]
guard.verdict("hello")  # the snapshot, before any cell
seen = []
for kind, cell in json.loads(sys.stdin.read()):
    shell.run_cell(cell)
    seen.append(json.loads(guard.verdict("nonce", kind))["problems"])
print("VERDICTS " + json.dumps(seen))
'''


def verdicts(*cells: tuple) -> list:
    """The problems the guard lists after each (kind, cell), each [watched item, what changed]."""
    with tempfile.TemporaryDirectory() as folder:
        environment = {**os.environ, "IPYTHONDIR": folder, "MPLBACKEND": "agg"}
        done = subprocess.run([sys.executable, "-c", SHELL], input=json.dumps(cells), capture_output=True, text=True,
                              timeout=120, cwd=folder, env=environment)
    lines = [line for line in done.stdout.splitlines() if line.startswith("VERDICTS ")]
    assert lines, done.stderr[-3000:]
    return json.loads(lines[-1][len("VERDICTS "):])


HONEST = [
    ("cell", "def answer():\n    return 42\n\nanswer"),  # the output cache holds a function
    ("cell", "%%capture\nprint('hidden')\nanswer"),
    ("cell", "%%time\nsum(range(1000))"),
    ("cell", "%timeit -n 1 -r 1 answer()"),
    ("cell", "import asyncio\nawait asyncio.sleep(0)"),
    ("cell", "import pkg_resources"),
    ("cell", "import signal\nsignal.signal(signal.SIGALRM, lambda *a: None)\n"
             "signal.signal(signal.SIGUSR1, signal.SIG_IGN)"),
    ("cell", "import threading\nhelper = threading.Event()\nthreading.Thread(target=helper.wait, daemon=True).start()"),
    ("cell", "from concurrent.futures import ThreadPoolExecutor\nPOOL = ThreadPoolExecutor(2)"),
    ("call", "POOL.submit(answer).result()"),  # the pool's worker starts in the call, then waits for work
    ("cell", "import logging\nlogging.basicConfig(level=logging.INFO)\nlogging.getLogger('x').info('hi')"),
]


def test_the_notebooks_own_machinery_is_no_finding():
    seen = verdicts(*HONEST)
    assert seen == [[]] * len(HONEST), list(zip([cell for _, cell in HONEST], seen))


def test_what_the_guard_watches_is_a_finding_with_its_item():
    seen = verdicts(
        ("cell", "get_ipython().events.register('post_run_cell', lambda result: None)"),
        ("cell", "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)"),
        ("cell", "get_ipython().run_cell = lambda *a, **k: None"))
    assert [key for key, _ in seen[0]] == ["hooks"]
    assert "a post_run_cell hook was added" in seen[0][0][1]
    assert ["signals", "signal handlers were set (SIGINT)"] in seen[1]
    assert ["machinery", "the shell had run_cell replaced"] in seen[2]


def test_a_thread_a_call_leaves_running_is_a_finding_and_one_a_cell_starts_is_not():
    start = "import threading, time\nthreading.Thread(target=time.sleep, args=(600,), name='late', daemon=True).start()"
    assert verdicts(("cell", start)) == [[]]
    seen = verdicts(("call", start))
    assert seen == [[["threads", "a thread the call started is still running after it returned (late)"]]]


def test_the_guard_lists_each_item_once_with_its_reasons_in_both_languages():
    keys = [item.key for item in guard.WATCHED]
    assert len(keys) == len(set(keys))
    for item in guard.WATCHED:
        assert all(item.what) and all(item.why), item.key


# --------------------------------------------------------------------------- an executor's idle workers


HANG_GUARD = 30  # seconds: only so that a thread that never comes back to wait fails the test instead of hanging it


def _worker_threads(pool) -> list:
    return list(pool._threads)


def test_an_executors_worker_waiting_for_work_is_idle_and_a_busy_one_is_not():
    with ThreadPoolExecutor(max_workers=1) as pool:
        assert pool.submit(sum, [1, 2]).result() == 3
        (worker,) = _worker_threads(pool)
        assert guard.is_idle_worker(worker)
        release, started = threading.Event(), threading.Event()
        busy = pool.submit(lambda: (started.set(), release.wait()))
        started.wait()
        assert not guard.is_idle_worker(worker)
        release.set()
        busy.result()


def test_a_process_pools_threads_are_idle_once_its_work_is_done():
    """A ProcessPoolExecutor keeps a manager thread and its call queue's feeder thread for as long as it lives."""
    import multiprocessing

    before = set(threading.enumerate())
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        assert pool.submit(pow, 2, 10).result() == 1024
        started = [thread for thread in threading.enumerate() if thread not in before]
        assert started, "the pool started no thread: this test would prove nothing"
        frames = guard.thread_frames()
        manager = [thread for thread in started if type(thread).__name__ == "_ExecutorManagerThread"]
        assert manager and all(guard.is_idle_worker(thread, frames) for thread in manager)
        feeders = [thread for thread in started if thread.name == "QueueFeederThread"]
        deadline = time.monotonic() + HANG_GUARD  # the feeder may still be handing over the item it was given
        while feeders and not all(guard.is_idle_worker(thread) for thread in feeders):
            assert time.monotonic() < deadline, "the feeder never came back to wait"
            time.sleep(0.01)


def test_a_thread_of_ones_own_is_no_executor_worker():
    release = threading.Event()
    thread = threading.Thread(target=release.wait, daemon=True)
    thread.start()
    try:
        assert not guard.is_idle_worker(thread)
    finally:
        release.set()
        thread.join()


@pytest.mark.parametrize("item", [item.key for item in guard.WATCHED])
def test_docs_say_what_the_guard_watches_and_why(item):
    from test_grading_support import ROOT

    watched = next(entry for entry in guard.WATCHED if entry.key == item)
    assert watched.what[0] in (ROOT / "docs" / "grading.md").read_text(encoding="utf-8")
    assert watched.what[1] in (ROOT / "docs" / "zh" / "grading.md").read_text(encoding="utf-8")
