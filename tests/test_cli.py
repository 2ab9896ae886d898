"""The demo and the command line, run end to end in subprocesses as a student would."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from s09_jsonl_transcript.code import MockLLM, run_agent, ticking_clock
from s09_jsonl_transcript.importers import SAMPLES
from s09_jsonl_transcript.lab import DurableTranscript

REPO = Path(__file__).resolve().parent.parent
CODE_PY = REPO / "s09_jsonl_transcript" / "code.py"


def run(*args, cwd=None, stdin="", env=None, program=(str(CODE_PY),)):
    """Run `python s09_jsonl_transcript/code.py ARGS` from another folder; return the finished process."""
    english = {"LC_ALL": "", "LC_MESSAGES": "", "LANG": "C.UTF-8"}  # the tests' own locale: English unless asked
    environment = {**os.environ, **english, **(env or {})}
    return subprocess.run([sys.executable, *program, *args], capture_output=True, text=True,
                          input=stdin, cwd=cwd, env=environment, timeout=120)


def kit(*args, **options):
    """Run the kit's command line, `python -m s09_jsonl_transcript ARGS`."""
    return run(*args, program=("-m", "s09_jsonl_transcript"), **options)


@pytest.fixture
def bug_fix_file(tmp_path):
    with DurableTranscript(tmp_path / "session.jsonl", clock=ticking_clock()) as transcript:
        run_agent(transcript, MockLLM())
    return transcript.path


def test_the_demo_runs_three_acts_and_cleans_up(tmp_path):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    result = run(cwd=tmp_path, env={"TMPDIR": str(scratch)})
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    out = result.stdout
    for part in ("Part 1", "Part 2", "Part 3"):
        assert part in out
    # One story on one session: Part 1 appends 8 events, Part 2 kills that very agent, Part 3 reads its file.
    assert [line.split()[-1] for line in out.splitlines() if "jsonl line:" in line] == [str(n) for n in range(1, 9)]
    assert "the agent holds 5 messages in memory" in out
    assert "writes half of event 9, then kills itself with SIGKILL" in out and "exit status -9" in out
    assert "on disk: 8 complete lines and half a record" in out
    assert "recovered 8 events, 5 messages" in out
    assert "check: recovered messages == the messages Part 1 acknowledged: True" in out
    assert "partial tail ignored: True" in out
    assert "tool calls still pending: ['call_2']" in out
    assert "\033[" not in out  # not a terminal: no colours
    assert list(scratch.iterdir()) == []  # temporary files removed


def test_the_kit_keeps_the_demo_s_files_under_root_and_starts_over_there(tmp_path):
    """code.py's demo runs in a temporary folder; the kit's command line keeps its files under --root."""
    assert "--root" in kit("--help").stdout and "--root" not in run("--help").stdout
    result = kit("--root", str(tmp_path / "demo-root"))
    assert result.returncode == 0, result.stderr
    kept = tmp_path / "demo-root" / "projects" / "demo"
    assert sorted(p.name for p in kept.iterdir()) == ["session-1.jsonl"]
    scanned = DurableTranscript(kept / "session-1.jsonl").scan()
    assert (len(scanned.events), scanned.ignored_partial_tail) == (8, True)
    again = kit("--root", str(tmp_path / "demo-root"))  # a second demo never appends to the first
    assert again.returncode == 0 and "recovered 8 events, 5 messages" in again.stdout


def test_the_package_runs_as_a_module_too(tmp_path):
    result = subprocess.run([sys.executable, "-m", "s09_jsonl_transcript", "--help"], capture_output=True,
                            text=True, cwd=tmp_path)
    assert result.returncode == 0 and "inspect" in result.stdout


def test_inspect_summarises_a_valid_transcript(bug_fix_file):
    result = kit("inspect", str(bug_fix_file))
    assert result.returncode == 0
    assert "events:        12 (ai-title 1, file-history-snapshot 1, function_call 3, function_call_result 3, " \
           "message 3, reasoning 1)" in result.stdout
    assert "last sequence: 12" in result.stdout and "verdict:       valid" in result.stdout


def test_inspect_reports_a_torn_tail_without_failing(bug_fix_file):
    with open(bug_fix_file, "ab") as file:
        file.write(b'{"half')
    result = kit("inspect", str(bug_fix_file), "--json")
    report = json.loads(result.stdout)
    assert result.returncode == 0 and report["ignored_partial_tail"] is True and report["corruption"] is None


def test_inspect_names_the_first_corrupt_line_and_exits_1(bug_fix_file):
    lines = bug_fix_file.read_bytes().split(b"\n")
    lines[6] = b"garbage"
    bug_fix_file.write_bytes(b"\n".join(lines))
    result = kit("inspect", str(bug_fix_file))
    assert result.returncode == 1
    assert "CORRUPT:       line 7" in result.stdout and "invalid complete JSON record" in result.stdout
    assert "events:        6" in result.stdout


def test_replay_prints_the_window_as_json(bug_fix_file):
    result = kit("replay", str(bug_fix_file), "--max-items", "2")
    assert result.returncode == 0
    assert json.loads(result.stdout) == [{"role": "assistant",
                                          "content": "Fixed: add() returns a + b and the test passes."}]


def test_replay_of_a_corrupt_file_is_one_clear_line(bug_fix_file):
    bug_fix_file.write_bytes(bug_fix_file.read_bytes().replace(b'"sequence":12', b'"sequence":13'))
    result = kit("replay", str(bug_fix_file))
    assert result.returncode == 1
    offset = bug_fix_file.read_bytes().rindex(b"\n", 0, -1) + 1  # where line 12 starts
    assert result.stderr == f"s09: session.jsonl:12: expected sequence 12, got 13 (byte offset {offset})\n"


@pytest.mark.parametrize("args", [
    ["inspect", "missing.jsonl"],
    ["replay", "missing.jsonl"],
    ["inspect"],
    ["--no-such-flag"],
    ["replay", "x.jsonl", "--max-items", "many"],
    ["frobnicate"],
])
def test_bad_arguments_get_one_line_and_a_nonzero_exit(tmp_path, args):
    result = kit(*args, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == "" and result.stderr.count("\n") == 1 and result.stderr.startswith("s09: error:")
    assert "Traceback" not in result.stderr


def test_the_interactive_shell_appends_and_replays(tmp_path):
    commands = "\n".join([
        "user The tests fail",
        "tool read_file {\"path\": \"calc.py\"}",
        "result def add(a, b): return a - b",
        "result nothing pending now",
        "title Fix add",
        "assistant Fixed",
        "tool broken {not json",
        "replay 3",
        "recover",
        "quit",
    ])
    result = kit("--interactive", "--root", str(tmp_path), stdin=commands)
    assert result.returncode == 0, result.stderr
    assert "appended transcript:interactive-1:1 (message); jsonl line: 1" in result.stdout
    assert "no pending tool call to answer" in result.stdout
    assert "error:" in result.stdout  # the bad JSON arguments, reported without a traceback
    path = tmp_path / "projects" / "shell" / "interactive-1.jsonl"
    events = DurableTranscript(path).read_events()
    assert [e["type"] for e in events] == ["message", "function_call", "function_call_result", "ai-title", "message"]
    assert events[2]["callId"] == events[1]["callId"]
    # a second shell in the same root starts a new session instead of appending to the first one's
    again = kit("--interactive", "--root", str(tmp_path), stdin="user hello again\nquit")
    assert "appended transcript:interactive-2:1 (message)" in again.stdout
    assert len(DurableTranscript(path).read_events()) == 5


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
def test_the_demo_on_a_terminal_prints_plain_text(tmp_path):
    import pty

    leader, follower = pty.openpty()
    child = subprocess.Popen([sys.executable, str(CODE_PY)], stdout=follower, stderr=follower, cwd=tmp_path)
    os.close(follower)
    output = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the terminal closes when the demo exits
            break
        if not chunk:
            break
        output += chunk
    os.close(leader)
    assert child.wait(timeout=120) == 0
    assert b"\033[" not in output
    assert b"recovered messages == the messages Part 1 acknowledged: True" in output


def _has_chinese(text):
    return any("\u4e00" <= character <= "\u9fff" for character in text)


@pytest.mark.parametrize("how", [("--lang", "zh"), "LANG=zh_CN.UTF-8"])
def test_the_demo_speaks_chinese_when_asked_or_when_the_locale_is_chinese(tmp_path, how):
    env = {"LANG": "zh_CN.UTF-8"} if how == "LANG=zh_CN.UTF-8" else {}
    result = run(*(how if isinstance(how, tuple) else ()), cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    narration = [line for line in lines if "jsonl line:" not in line and not line.startswith("    {")]
    assert narration and all(_has_chinese(line) for line in narration), narration
    assert "Part 1：" in result.stdout and "检查：恢复出的 messages == Part 1 确认过的 messages：True" in result.stdout
    # the numbers are the same as in English
    assert "磁盘上：8 个完整的行" in result.stdout and "恢复了 8 个事件、5 条消息" in result.stdout


def test_an_unknown_demo_language_is_a_usage_error(tmp_path):
    result = run("--lang", "fr", cwd=tmp_path)
    assert result.returncode == 2 and "invalid choice: 'fr'" in result.stderr


# --------------------------------------------------------------------------- real agents' files (issue 21)


def test_inspect_on_a_raw_claude_code_file_says_what_the_lesson_would_say():
    result = kit("inspect", str(SAMPLES["claude-code"]))
    assert result.returncode == 1, result.stderr  # not a transcript: never "valid"
    out = result.stdout
    assert "format:        Claude Code (not the lesson's format)" in out
    assert "envelope:      none: no schema_version, sequence, session_id or event_id" in out
    assert "complete:      yes: every line ends in a newline" in out
    assert "after a crash: this agent appends without fsync" in out
    assert "a tree, not a sequence: 17 records linked by parentUuid, 2 roots, 1 branch points, 3 leaves" in out
    assert "verdict:       valid" not in out and "not a lesson transcript: import it" in out


def test_inspect_on_a_raw_file_with_a_partial_tail_says_so(tmp_path):
    path = tmp_path / SAMPLES["codex"].name
    path.write_bytes(SAMPLES["codex"].read_bytes() + b'{"timestamp":"2026-01')
    report = json.loads(kit("inspect", str(path), "--json").stdout)
    assert report["kind"] == "raw" and report["format"] == "codex" and report["partial_tail_bytes"] == 21
    assert "the last line is a partial tail (21 bytes" in kit("inspect", str(path)).stdout


@pytest.mark.parametrize("name", ["seed-002", "claude-code"])
def test_replay_refuses_a_raw_file_naming_its_format(name):
    result = kit("replay", str(SAMPLES[name]))
    assert result.returncode == 2 and result.stdout == ""
    assert "not a transcript in the lesson's format" in result.stderr
    assert {"seed-002": "a seed 002 file", "claude-code": "a Claude Code file"}[name] in result.stderr


def test_import_writes_a_new_session_then_inspect_and_replay_read_it(tmp_path):
    source = SAMPLES["seed-002"]
    before = source.read_bytes()
    result = kit("import", str(source), "--root", str(tmp_path), "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    target = Path(summary["target"])
    assert target == tmp_path / "projects" / "imported" / "http-server.jsonl"
    assert summary["records_written"] == {"function_call": 2, "function_call_result": 1, "message": 3,
                                          "turn_end": 1, "turn_start": 2}
    assert summary["duplicates_merged"] == 1 and summary["tool_calls_unpaired"] == 1
    assert source.read_bytes() == before
    inspected = kit("inspect", str(target))
    assert inspected.returncode == 0 and "verdict:       valid" in inspected.stdout
    messages = json.loads(kit("replay", str(target)).stdout)
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant", "user", "assistant"]
    again = kit("import", str(source), "--root", str(tmp_path))
    assert again.returncode == 1 and "already exists under this root" in again.stderr
    assert again.stderr.startswith("s09: import refused:") and "Traceback" not in again.stderr


def test_import_prints_a_readable_summary(tmp_path):
    result = kit("import", str(SAMPLES["claude-code"]), "--root", str(tmp_path))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "source lines:  22: 16 mapped, 5 kept as evidence, 1 duplicates merged, 0 blank, 0 partial tail" in out
    assert "tool calls:    3 paired with their result, 0 unpaired, 0 results without their call" in out
    assert "sidechains:    2 subagent records kept as evidence; 1 subagent files beside it" in out


def test_import_of_a_damaged_file_is_refused_in_one_line(tmp_path):
    path = tmp_path / "broken.jsonl"
    lines = SAMPLES["codex"].read_bytes().split(b"\n")
    lines[2] = b"not json"
    path.write_bytes(b"\n".join(lines))
    result = kit("import", str(path), "--root", str(tmp_path / "root"))
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "line 3 (byte" in result.stderr
    assert not (tmp_path / "root" / "projects").exists() or not any((tmp_path / "root").rglob("*.jsonl"))


@pytest.mark.parametrize("how", [("--lang", "zh"), "LANG=zh_CN.UTF-8"])
def test_inspect_and_import_speak_chinese(tmp_path, how):
    env = {"LANG": "zh_CN.UTF-8"} if how == "LANG=zh_CN.UTF-8" else {}
    lang = list(how) if isinstance(how, tuple) else []
    raw = kit(*lang, "inspect", str(SAMPLES["claude-code"]), env=env)
    assert "信封：" in raw.stdout and "是一棵树，不是 sequence：17 条记录" in raw.stdout
    imported = kit(*lang, "import", str(SAMPLES["codex"]), "--root", str(tmp_path), env=env)
    assert imported.returncode == 0, imported.stderr
    assert "工具调用：      3 个与结果配对，1 个没有结果，0 个结果找不到它的调用" in imported.stdout
    target = next(tmp_path.rglob("*.jsonl"))
    assert "结论：          有效" in kit(*lang, "inspect", str(target), env=env).stdout
    again = kit(*lang, "import", str(SAMPLES["codex"]), "--root", str(tmp_path), env=env)
    assert again.stderr.startswith("s09：拒绝导入：") and "什么也没有写" in again.stderr


def test_the_language_can_follow_the_subcommand_too(tmp_path):
    result = kit("inspect", str(SAMPLES["seed-002"]), "--lang", "zh")
    assert "格式：          seed 002（不是课文的格式）" in result.stdout


@pytest.mark.parametrize("args", [["--help"], ["import", "--help"], ["inspect", "--help"]])
def test_help_is_chinese_under_a_chinese_locale(args):
    result = kit(*args, env={"LANG": "zh_CN.UTF-8"})
    assert result.returncode == 0
    assert result.stdout.startswith("用法：") and "显示这份帮助并退出" in result.stdout
    assert "选项" in result.stdout and "show this help" not in result.stdout


def test_the_interactive_shell_speaks_chinese(tmp_path):
    result = kit("--lang", "zh", "--interactive", "--root", str(tmp_path), stdin="user 你好\nresult x\nfrob\nquit")
    assert result.returncode == 0, result.stderr
    assert "命令：" in result.stdout and "已追加 transcript:interactive-1:1（message）；jsonl line: 1" in result.stdout
    assert "没有待回应的工具调用" in result.stdout and "未知命令 'frob'" in result.stdout


def test_a_usage_error_is_chinese_too(tmp_path):
    result = kit("--lang", "zh", "inspect", "missing.jsonl", cwd=tmp_path)
    assert result.returncode == 2 and result.stderr == "s09：错误：没有这个 transcript 文件：missing.jsonl\n"


def test_inspect_on_a_file_of_no_known_format_does_not_offer_an_import(tmp_path):
    path = tmp_path / "notes.jsonl"
    path.write_text('{"note": "hello"}\n{"note": "again"}\n')
    result = kit("inspect", str(path))
    assert result.returncode == 1
    assert "format:        an unknown format" in result.stdout and "no format the kit can import" in result.stdout
    assert "order:         the file's order only: no ids link the records" in result.stdout
