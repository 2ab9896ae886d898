"""The grader's resources belong to the grader (issue 42): whatever a submission does in its sandbox or in the
channel's folder is scored against that submission, with its reason, and never turns into "the grader failed".

Each attack is a real notebook graded by the real grader, in English and in Chinese:

- filling the channel's folder: it is a tmpfs of its own with a size limit, so the writes stop there;
- a folder tree a few thousand levels deep, in the channel's folder and in the kernel's own folder: the grading
  keeps its scores and leaves nothing behind (a tmpfs unmounted; an iterative removal when unsandboxed);
- a return value far over the size of what crosses: refused, with its reason, the checks' kernel untouched;
- a link planted in a folder of the exchange: never followed, in any part of a path.

While they run, the test reads the control groups from outside: each kernel's side in a memory group of its own,
with the stated limit, both in one CPU group per grading with the stated weight (settings, never times).
"""

import os
import re
import tempfile
import threading
from pathlib import Path

import pytest
from test_grading_support import (
    SOURCES,
    feedback_of,
    reference_answers,
    reported_json,
    require_sandbox,
    with_answers,
    write_notebook,
)

from s09_jsonl_transcript.grading import runner, sandbox
from s09_jsonl_transcript.grading.grader import GradingOptions, find_submissions, grade_many, grade_submission

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not os.sys.platform.startswith("linux"), reason="the grader runs on Linux")]

LANGUAGES = ("en", "zh")
LIMITS = sandbox.Limits()

FILL_THE_CHANNEL = """
import json, os

written, reason = 0, None
try:
    for number in range(64):  # files of 32 MiB: each stays under the file size limit
        with open(f"/tmp/channel/filler-{number}", "wb") as filler:
            for _ in range(32):
                filler.write(b"x" * (1 << 20))
                filler.flush()
                written += 1 << 20
except OSError as error:
    reason = error.strerror


def last_turn_length(events):
    raise AssertionError("WROTE " + json.dumps({"written": written, "reason": reason}))
"""

DEEP_TREES = """
import os


def deep_tree(root, levels=3000):
    folder = os.open(root, os.O_RDONLY)
    for _ in range(levels):
        os.mkdir("d", dir_fd=folder)
        inner = os.open("d", os.O_RDONLY, dir_fd=folder)
        os.close(folder)
        folder = inner
    os.close(folder)


for root in ("/tmp/channel", "/tmp/channel/exchange", "."):  # the channel's folders, and the kernel's own
    if os.path.isdir(root) and os.access(root, os.W_OK):
        deep_tree(root)
"""

HUGE_VALUE = """


def replay_last_turn(transcript):
    return "x" * (100 << 20)  # 100 MiB: more than crosses to the checks
"""

LINKED_FOLDER = """
import os
import uuid


def make_bad_line(path, line_number):
    # The same edit, written in a folder beside the one the file is in; then that folder is replaced by a link
    # to it. Read through the link, the file is right: the trusted side must not read through it.
    path = Path(path)
    lines = file_lines(path)
    lines[line_number - 1] = b"this line is not a JSON record"
    elsewhere = path.parent.parent / f"elsewhere-{uuid.uuid4().hex}"
    elsewhere.mkdir()
    (elsewhere / path.name).write_bytes(b"\\n".join(lines))
    path.parent.rename(path.parent.with_name(path.parent.name + "-moved"))
    os.symlink(elsewhere, path.parent)
"""


def attack(name: str, language: str) -> dict:
    if name == "ex01_fills_the_channel":
        return with_answers("ex01", {"ex01-turn-length": FILL_THE_CHANNEL}, language)
    if name == "ex01_deep_trees":
        answers = reference_answers("ex01")
        answers["ex01-turn-length"] = DEEP_TREES + "\n\n" + answers["ex01-turn-length"]
        return with_answers("ex01", answers, language)
    if name == "ex01_huge_value":
        answers = reference_answers("ex01")
        answers["ex01-replay"] += HUGE_VALUE
        return with_answers("ex01", answers, language)
    if name == "ex02_linked_folder":
        return with_answers("ex02", {**reference_answers("ex02"), "ex02-bad-line": LINKED_FOLDER}, language)
    raise KeyError(name)


ATTACKS = ("ex01_fills_the_channel", "ex01_deep_trees", "ex01_huge_value", "ex02_linked_folder")


class Observer:
    """Reads, from outside, the control groups and the channel's mount of every grading while its kernels run.

    The grading's own watcher (runner._student_state, called about ten times a second while the student's kernel
    lives) looks, once both sides of that grading have joined their groups.
    """

    def __init__(self, monkeypatch):
        self.seen, self.students, self.trusted = [], {}, {}
        real_student, real_start, real_state = runner._start_student_sandboxed, runner._start, runner._student_state

        def start_student(*args, **options):
            process = real_student(*args, **options)
            self.students[threading.get_ident()] = process
            return process

        def start(*args, **options):
            process = real_start(*args, **options)
            student = self.students.get(threading.get_ident())
            if student is not None:
                self.trusted[student.pid] = process
            return process

        def student_state(process):
            trusted = self.trusted.get(process.pid)
            if trusted is not None and process.pid not in [seen["student"] for seen in self.seen]:
                try:
                    seen = self.look(process, trusted)
                except (OSError, KeyError, ValueError):
                    seen = None  # not joined yet, or gone: look again at the next tick
                if seen is not None:
                    self.seen.append(seen)
            return real_state(process)

        monkeypatch.setattr(runner, "_start_student_sandboxed", start_student)
        monkeypatch.setattr(runner, "_start", start)
        monkeypatch.setattr(runner, "_student_state", student_state)

    @staticmethod
    def groups_of(pid: int) -> dict:
        groups = {}
        for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            for controller in controllers.split(","):
                groups[controller] = path
        if not (groups["memory"].startswith("/s09-grading/") and groups["cpu"].startswith("/s09-grading/")):
            raise KeyError("not in its groups yet")
        return groups

    def look(self, student, trusted):
        seen = {"student": student.pid, "student_groups": self.groups_of(student.pid),
                "trusted_groups": self.groups_of(trusted.pid)}
        for side in ("student", "trusted"):
            memory = sandbox.CGROUP_MEMORY / seen[f"{side}_groups"]["memory"].lstrip("/")
            seen[f"{side}_memory_limit"] = int((memory / "memory.limit_in_bytes").read_text())
        cpu = sandbox.CGROUP_CPU / seen["student_groups"]["cpu"].lstrip("/")
        seen["cpu_shares"] = int((cpu / "cpu.shares").read_text())
        seen["parent_shares"] = int((cpu.parent / "cpu.shares").read_text())
        seen["mounts"] = [line.split() for line in Path("/proc/mounts").read_text().splitlines()
                          if line.startswith("s09-channel ") and line.split()[1].startswith(tempfile.gettempdir())]
        return seen


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    require_sandbox()
    folder = tmp_path_factory.mktemp("resources")
    scratch = tmp_path_factory.mktemp("scratch")  # where the gradings make their temporary folders
    for name in ATTACKS:
        for language in LANGUAGES:
            write_notebook(folder / language / f"{name}.ipynb", attack(name, language))
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(tempfile, "tempdir", str(scratch))
        observer = Observer(monkeypatch)
        reports = grade_many(find_submissions([folder]), SOURCES, jobs=2, options=GradingOptions(sandbox="required"))
    left = sorted(path.name for path in scratch.iterdir())
    return {report["submission"][:-len(".ipynb")]: report for report in reports}, observer.seen, left


def scores(report: dict) -> list:
    return [(check["name"], check["score"], check["feedback"][:200]) for check in report["checks"]]


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_channel_folder_has_a_quota_and_filling_it_costs_the_submission_only(graded, language):
    report = graded[0][f"{language}/ex01_fills_the_channel"]
    assert report["status"] == "graded", report["reason"]
    assert report["score"] == 0, scores(report)  # its answers are stubs and a constant error
    filled = reported_json(report, "ex01-turn-of-four", "WROTE")
    assert filled["reason"] == "No space left on device"
    assert filled["written"] <= LIMITS.channel_bytes


@pytest.mark.parametrize("language", LANGUAGES)
def test_trees_thousands_of_levels_deep_change_no_score_and_leave_nothing(graded, language):
    reports, _, left = graded
    report = reports[f"{language}/ex01_deep_trees"]
    assert report["status"] == "graded", report["reason"]
    assert report["score"] == report["max_score"] == SOURCES["ex01"].max_score, scores(report)
    assert left == [], "a grading left its temporary folder behind"


def test_unsandboxed_a_deep_tree_in_the_kernels_folder_is_removed_too(tmp_path, monkeypatch):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    path = write_notebook(tmp_path / "ex01_deep_trees.ipynb", attack("ex01_deep_trees", "en"))
    report = grade_submission(path, SOURCES, options=GradingOptions(sandbox="off"))
    assert report["status"] == "graded", report["reason"]
    assert report["score"] == report["max_score"], scores(report)
    assert list(scratch.iterdir()) == []


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_value_too_large_to_cross_is_refused_with_its_reason(graded, language):
    report = graded[0][f"{language}/ex01_huge_value"]
    assert report["status"] == "graded", report["reason"]
    passed = {check["id"] for check in report["checks"] if check["score"] == check["max_score"]}
    # last_turn_length is right; replay_last_turn is refused
    assert passed == {"ex01-turn-of-four", "ex01-stops-at-user"}, scores(report)
    refused = "refused · 被拒绝: the answer returned more than 16 MiB of data, the limit of what crosses to the checks"
    assert feedback_of(report, "ex01-second-turn") == refused
    long_turn = feedback_of(report, "ex01-long-turn")
    assert long_turn.startswith(refused) and "hidden check" in long_turn


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_link_in_a_folder_of_the_exchange_is_never_followed(graded, language):
    report = graded[0][f"{language}/ex02_linked_folder"]
    assert report["status"] == "graded", report["reason"]
    lost = {check["id"] for check in report["checks"] if check["score"] < check["max_score"]}
    assert lost == {"ex02-bad-line-made"}, scores(report)  # read through the link, its file would have passed
    bad_line = feedback_of(report, "ex02-bad-line-made")
    assert re.search(r"FileNotFoundError", bad_line), bad_line


def test_each_kernel_has_its_memory_group_and_each_grading_one_cpu_group(graded):
    _, seen, _ = graded
    if sandbox.memory_cgroup_problem() is not None:
        pytest.skip(sandbox.memory_cgroup_problem()[0])
    references = len({name[:4] for name in ATTACKS})  # one reference run per exercise, two kernels too
    assert len(seen) == len(LANGUAGES) * len(ATTACKS) + references
    for grading in seen:
        student, trusted = grading["student_groups"], grading["trusted_groups"]
        assert student["memory"] != trusted["memory"]
        assert student["memory"].startswith("/s09-grading/") and trusted["memory"].startswith("/s09-grading/")
        assert grading["student_memory_limit"] == LIMITS.total_memory
        assert grading["trusted_memory_limit"] == LIMITS.trusted_memory
        assert student["cpu"] == trusted["cpu"] and student["cpu"].startswith("/s09-grading/")
        assert grading["cpu_shares"] == LIMITS.cpu_shares
        assert grading["parent_shares"] == 1024 * len(os.sched_getaffinity(0))
    assert len({grading["student_groups"]["cpu"] for grading in seen}) == len(seen), "a CPU group per grading"
    channels = [mount for grading in seen for mount in grading["mounts"]]
    assert channels and all(mount[2] == "tmpfs" and f"size={LIMITS.channel_bytes >> 10}k" in mount[3]
                            for mount in channels), channels
