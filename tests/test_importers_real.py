"""The importers as real users meet them (issue 27, section 2): each test here failed on the code before it.

Every source is synthetic, written here or bundled in importers/samples/, in the layouts the field notes
describe (Claude Code, Codex CLI's two layouts, ~/.codex/history.jsonl): no one's real session.
`api_problems` checks a replayed messages[] against the rules a chat API enforces.
"""

import json
import random
import tracemalloc
from collections import Counter
from pathlib import Path

import pytest
from chat_api import api_problems, every_replay_checked, turns_of

from s09_jsonl_transcript.code import messages_of
from s09_jsonl_transcript.importers import (
    CODEX_HISTORY,
    LEGACY_CODEX_SAMPLE,
    SAMPLES,
    TYPE_SOURCE_RECORD,
    ImportRefused,
    bench,
    detect_format,
    foreign_format_message,
    format_raw_inspection,
    import_session,
    inspect_raw,
    replay_imported,
    window_events,
)
from s09_jsonl_transcript.lab import DurableTranscript

SESSION_A = "aaaaaaaa-0000-4000-8000-000000000001"
SESSION_B = "bbbbbbbb-0000-4000-8000-000000000002"


def write_jsonl(path: Path, records) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


def events_of(summary):
    return DurableTranscript(summary.target).read_events()


every_replay = every_replay_checked()  # autouse: each import's replay passes the chat API's rules


def use(call):
    return {"role": "assistant", "content": [{"type": "tool_use", "id": call, "name": "Read", "input": {}}]}


def result(call):
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call, "content": "ok"}]}


def test_the_api_checker_can_fail():
    prompt = {"role": "user", "content": "go"}
    assert api_problems([prompt, use("A"), use("B"), result("A"), result("B")]) == []
    assert api_problems([prompt, use("A"), result("A"), use("B")]) == []  # B is still running
    assert api_problems([prompt, use("A"), use("B"), result("B"), use("C"), result("A"), result("C")])
    assert api_problems([prompt, use("A"), result("A"), result("A")])
    assert api_problems([prompt, {"role": "assistant", "content": " \n"}])
    assert api_problems([prompt, use("A"), {"role": "user", "content": "x"}, result("A")])


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_every_bundled_sample_replays_as_the_api_accepts(tmp_path, name):
    summary = import_session(SAMPLES[name], tmp_path)
    assert api_problems(replay_imported(summary.target)) == []


# --------------------------------------------------------------------------- Claude Code


def claude(uuid, parent, kind, content, *, message_id=None, session=SESSION_A, **extra):
    message = {"role": kind, "content": content}
    if message_id:
        message.update(id=message_id, model="claude-sonnet-4-5")
    return {"parentUuid": parent, "isSidechain": False, "cwd": "/home/student/calc", "sessionId": session,
            "version": "2.1.0", "type": kind, "message": message, "uuid": uuid,
            "timestamp": "2026-01-05T09:00:00.000Z", **extra}


def u(n):
    return f"00000000-0000-4000-8000-{n:012d}"


def tool_use(call):
    return [{"type": "tool_use", "id": call, "name": "Read", "input": {"file_path": f"{call}.py"}}]


def tool_result(call):
    return [{"type": "tool_result", "tool_use_id": call, "content": f"contents of {call}.py"}]


def parallel_session(path):
    """Three parallel calls, written in the order they finished; the parentUuid chain is the real order."""
    return write_jsonl(path, [
        claude(u(1), None, "user", "Read a.py, b.py and c.py."),
        claude(u(2), u(1), "assistant", tool_use("A"), message_id="msg_1"),
        claude(u(3), u(2), "assistant", tool_use("B"), message_id="msg_1"),
        claude(u(6), u(5), "user", tool_result("B")),  # B finished first: its parent, A's result, comes later
        claude(u(4), u(3), "assistant", tool_use("C"), message_id="msg_1"),
        claude(u(5), u(4), "user", tool_result("A")),
        claude(u(7), u(6), "user", tool_result("C")),
        claude(u(8), u(7), "assistant", [{"type": "text", "text": "All three read."}], message_id="msg_2"),
    ])


def test_parallel_tool_calls_replay_in_the_trees_order(tmp_path):
    source = parallel_session(tmp_path / "parallel.jsonl")
    in_file_order = [{"role": r["type"], "content": r["message"]["content"]} for r in map(json.loads, source.open())]
    assert api_problems(in_file_order), "the sample must be one the file's order breaks"
    summary = import_session(source, tmp_path / "root")
    assert api_problems(replay_imported(summary.target)) == []
    uuids = [event["source"]["uuid"] for event in events_of(summary)]
    assert uuids == [u(n) for n in range(1, 9)]
    assert summary.lines["mapped"] == 8 and summary.tool_calls_paired == 3


def progress(uuid, parent, call):
    """A progress record (a hook or a tool reporting progress): Claude Code chains it like any record."""
    return {"parentUuid": parent, "isSidechain": False, "sessionId": SESSION_A, "type": "progress", "uuid": uuid,
            "data": {"type": "hook_progress", "hookEvent": "PreToolUse"}, "toolUseID": call,
            "timestamp": "2026-01-05T09:00:00.000Z"}


def chained(records):
    """records with each parentUuid set to the record written before it: the chain follows the file."""
    for before, record in zip([None, *records], records):
        record["parentUuid"] = before["uuid"] if before else None
    return records


def groups_kept(messages, calls_of_message: dict) -> bool:
    """True when each API message's calls share one assistant turn and the next turn holds their results."""
    turns = turns_of(messages)
    for calls in calls_of_message.values():
        where = [index for index, (_, blocks) in enumerate(turns)
                 if any(block.get("id") in calls for block in blocks if block["type"] == "tool_use")]
        if len(where) != 1:
            return False
        answers = {block.get("tool_use_id") for block in turns[where[0] + 1][1] if block["type"] == "tool_result"}
        if not calls <= answers:
            return False
    return True


def test_parallel_calls_keep_the_api_messages_grouping_when_progress_records_interleave_the_chain(tmp_path):
    """Issue 43: B finished first and its result was written before C's call; progress records sit between.
    The chain follows the file, so the tree's order alone split the calls from their results."""
    records = chained([
        claude(u(1), None, "user", "Read a.py, b.py and c.py."),
        claude(u(2), None, "assistant", tool_use("A"), message_id="msg_1"),
        progress(u(3), None, "A"),
        claude(u(4), None, "assistant", tool_use("B"), message_id="msg_1"),
        progress(u(5), None, "B"),
        claude(u(6), None, "user", tool_result("B")),
        claude(u(7), None, "assistant", tool_use("C"), message_id="msg_1"),
        claude(u(8), None, "user", tool_result("A")),
        progress(u(9), None, "C"),
        claude(u(10), None, "user", tool_result("C")),
        claude(u(11), None, "assistant", [{"type": "text", "text": "All three read."}], message_id="msg_2"),
    ])
    source = write_jsonl(tmp_path / "interleaved.jsonl", records)
    conversation = [{"role": r["type"], "content": r["message"]["content"]} for r in records if "message" in r]
    assert api_problems(conversation), "the file's own order must be one a chat API refuses"
    summary = import_session(source, tmp_path / "root")
    messages = replay_imported(summary.target)
    assert api_problems(messages) == [] and groups_kept(messages, {"msg_1": {"A", "B", "C"}})
    assert summary.tool_calls_paired == 3 and summary.kept_as_evidence == Counter({"progress": 3})


def random_parallel_session(rng, messages: int = 3) -> tuple[list, dict]:
    """A session whose API messages each make 2-3 parallel calls; results finish in any order, some before
    the message's next call is written, progress records between; the chain follows the file."""
    records, calls_of_message, number = [claude(u(1), None, "user", "Go.")], {}, 1

    def next_uuid():
        nonlocal number
        number += 1
        return u(number)

    for index in range(messages):
        calls = [f"T{index}{n}" for n in range(rng.randint(2, 3))]
        calls_of_message[f"msg_{index}"] = set(calls)
        running = []
        for call in calls:
            records.append(claude(next_uuid(), None, "assistant", tool_use(call), message_id=f"msg_{index}"))
            if rng.random() < 0.5:
                records.append(progress(next_uuid(), None, call))
            running.append(call)
            while running and rng.random() < 0.4:  # a call finishes before the next one is written
                records.append(claude(next_uuid(), None, "user", tool_result(running.pop(rng.randrange(len(running))))))
        rng.shuffle(running)
        for call in running:
            records.append(claude(next_uuid(), None, "user", tool_result(call)))
        records.append(claude(next_uuid(), None, "assistant", [{"type": "text", "text": f"step {index} done"}],
                              message_id=f"msg_text_{index}"))
        records.append(claude(next_uuid(), None, "user", f"now step {index + 1}"))
    return chained(records), calls_of_message


@pytest.mark.parametrize("seed", range(40))
def test_parallel_calls_in_any_finishing_order_replay_grouped_as_the_api_sent_them(tmp_path, seed):
    records, calls_of_message = random_parallel_session(random.Random(seed))
    summary = import_session(write_jsonl(tmp_path / "s.jsonl", records), tmp_path / "root")
    messages = replay_imported(summary.target)
    assert api_problems(messages) == [] and groups_kept(messages, calls_of_message)
    assert summary.tool_calls_unpaired == 0 and summary.results_without_call == 0


def test_a_slash_commands_arguments_are_the_users_prompt(tmp_path):
    echo = ("<command-message>review is running\u2026</command-message>\n<command-name>/review</command-name>\n"
            "<command-args>check the auth module for unchecked tokens</command-args>")
    source = write_jsonl(tmp_path / "command.jsonl", chained([
        claude(u(1), None, "user", echo),
        claude(u(2), None, "user", [{"type": "text", "text": "# Review\nReview the code the user names: check the "
                                                              "auth module for unchecked tokens"}], isMeta=True),
        claude(u(3), None, "assistant", tool_use("A"), message_id="msg_1"),
        claude(u(4), None, "user", tool_result("A")),
        claude(u(5), None, "assistant", [{"type": "text", "text": "Two tokens go unchecked."}], message_id="msg_2"),
        claude(u(6), None, "user", "<command-name>/clear</command-name>\n<command-message>clear</command-message>\n"
                                   "<command-args></command-args>"),
    ]))
    summary = import_session(source, tmp_path / "root")
    prompts = [e for e in events_of(summary) if e["type"] == "message" and e["role"] == "user"]
    assert [e["content"] for e in prompts] == ["check the auth module for unchecked tokens"]
    assert prompts[0]["source"]["command"] == "/review"
    assert summary.kept_as_evidence["user meta"] == 2  # the expanded prompt (isMeta) and /clear, with no arguments
    messages = replay_imported(summary.target)
    assert messages[0] == {"role": "user", "content": "check the auth module for unchecked tokens"}
    assert api_problems(messages) == []


def test_every_import_in_these_tests_has_its_replay_checked(tmp_path, every_replay):
    summary = import_session(SAMPLES["claude-code"], tmp_path)
    assert every_replay == [Path(summary.target)]  # the autouse check will replay it after the test


def test_a_resumed_session_repeating_results_under_new_uuids_answers_each_call_once(tmp_path):
    records = [claude(u(1), None, "user", "Read a.py."),
               claude(u(2), u(1), "assistant", tool_use("A"), message_id="msg_1"),
               claude(u(3), u(2), "user", tool_result("A")),
               claude(u(4), u(3), "assistant", [{"type": "text", "text": "Read."}], message_id="msg_2")]
    resumed = [claude(u(10 + n), u(9 + n) if n else u(4), r["type"], r["message"]["content"],
                      message_id=r["message"].get("id")) for n, r in enumerate(records[1:3])]
    source = write_jsonl(tmp_path / "resumed.jsonl", records + resumed + [
        claude(u(20), u(11), "user", "Now b.py."),
        claude(u(21), u(20), "assistant", tool_use("B"), message_id="msg_3"),
        claude(u(22), u(21), "user", tool_result("B"))])
    summary = import_session(source, tmp_path / "root")
    assert api_problems(replay_imported(summary.target)) == []
    results = [e["callId"] for e in events_of(summary) if e["type"] == "function_call_result"]
    assert results == ["A", "B"]
    assert summary.lines["duplicate"] == 2 and summary.tool_calls_paired == 2


def test_whitespace_only_text_is_kept_as_evidence_not_replayed(tmp_path):
    source = write_jsonl(tmp_path / "blank.jsonl", [
        claude(u(1), None, "user", "Fix calc.py."),
        claude(u(2), u(1), "assistant", [{"type": "text", "text": "\n\n"}], message_id="msg_1"),
        claude(u(3), u(2), "assistant", tool_use("A"), message_id="msg_1"),
        claude(u(4), u(3), "user", tool_result("A")),
        claude(u(5), u(4), "assistant", [{"type": "text", "text": " "}], message_id="msg_2")])
    summary = import_session(source, tmp_path / "root")
    assert api_problems(replay_imported(summary.target)) == []
    assert summary.kept_as_evidence == Counter({"assistant blank text": 2})


def test_meta_lines_are_evidence_not_user_messages(tmp_path):
    source = write_jsonl(tmp_path / "meta.jsonl", [
        claude(u(1), None, "user", "<local-command-caveat>Caveat: the messages below were generated by the user "
               "while running local commands.</local-command-caveat>", isMeta=True),
        claude(u(2), u(1), "user", "<command-name>/clear</command-name>\n<command-message>clear</command-message>"),
        claude(u(3), u(2), "user", "<local-command-stdout></local-command-stdout>"),
        claude(u(4), u(3), "user", "Fix calc.py."),
        claude(u(5), u(4), "assistant", tool_use("A"), message_id="msg_1"),
        claude(u(6), u(5), "user", tool_result("A") + [{"type": "text",
                                                       "text": "[Request interrupted by user for tool use]"}]),
        claude(u(7), u(6), "user", [{"type": "text", "text": "[Request interrupted by user]"}])])
    summary = import_session(source, tmp_path / "root")
    prompts = [e["content"] for e in events_of(summary) if e["type"] == "message" and e["role"] == "user"]
    assert prompts == ["Fix calc.py."]
    assert summary.kept_as_evidence["user meta"] == 5
    assert api_problems(replay_imported(summary.target)) == []


def test_two_claude_sessions_in_one_file_are_refused_naming_the_line(tmp_path):
    first = [claude(u(1), None, "user", "Fix calc.py."),
             claude(u(2), u(1), "assistant", [{"type": "text", "text": "Done."}], message_id="msg_1")]
    second = [claude(u(11), None, "user", "Write a README.", session=SESSION_B)]
    source = write_jsonl(tmp_path / "two.jsonl", first + second)
    with pytest.raises(ImportRefused, match=f"two sessions: line 3 .*{SESSION_B}.*{SESSION_A}"):
        import_session(source, tmp_path / "root")
    assert not (tmp_path / "root").exists()


# --------------------------------------------------------------------------- Codex CLI


def codex_line(kind, payload, second=0):
    return {"timestamp": f"2026-01-05T09:00:{second:02d}.000Z", "type": kind, "payload": payload}


def codex_meta(session):
    return codex_line("session_meta", {"id": session, "timestamp": "2026-01-05T09:00:00.000Z",
                                       "cwd": "/home/student/calc", "originator": "codex_cli_rs"})


def codex_message(role, text, second):
    kind = "input_text" if role == "user" else "output_text"
    return codex_line("response_item", {"type": "message", "role": role, "content": [{"type": kind, "text": text}]},
                      second)


def test_the_older_codex_layout_is_imported(tmp_path):
    assert detect_format(LEGACY_CODEX_SAMPLE) == "codex"
    summary = import_session(LEGACY_CODEX_SAMPLE, tmp_path)
    events = events_of(summary)
    users = [e["content"] for e in events if e["type"] == "message" and e["role"] == "user"]
    assert users[1:] == ["Run the tests of calc.py and fix what fails.", "continue", "continue"]  # both typed
    assert summary.session_id == "5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d"
    assert summary.tool_calls_paired == 1 and summary.lines["duplicate"] == 0
    assert summary.kept_as_evidence == Counter({"legacy state": 3, "legacy session_meta": 1})
    assert api_problems(replay_imported(summary.target)) == []


def test_codex_prompts_held_only_as_event_msg_are_imported_once(tmp_path):
    source = write_jsonl(tmp_path / "rollout-prompts.jsonl", [
        codex_meta(SESSION_A),
        codex_line("event_msg", {"type": "user_message", "message": "Fix calc.py.", "images": []}, 1),
        codex_message("assistant", "Fixed.", 2),
        codex_message("user", "Now add a test.", 3),  # this turn has both: the event_msg is its echo
        codex_line("event_msg", {"type": "user_message", "message": "Now add a test.", "images": []}, 3),
        codex_message("assistant", "Added.", 4),
    ])
    summary = import_session(source, tmp_path / "root")
    users = [e["content"] for e in events_of(summary) if e["type"] == "message" and e["role"] == "user"]
    assert users == ["Fix calc.py.", "Now add a test."]
    assert summary.kept_as_evidence == Counter({"session_meta": 1, "event_msg user_message": 1})


def test_two_codex_sessions_in_one_file_are_refused_naming_the_line(tmp_path):
    lines = SAMPLES["codex"].read_bytes()
    other = json.dumps(codex_meta(SESSION_B)).encode() + b"\n"
    source = tmp_path / "two.jsonl"
    source.write_bytes(lines + other + lines)
    line = lines.count(b"\n") + 1
    with pytest.raises(ImportRefused, match=f"two sessions: line {line} \\(byte {len(lines)}\\)"):
        import_session(source, tmp_path / "root")
    assert not (tmp_path / "root").exists()


def test_codex_history_is_no_transcript_and_no_session(tmp_path):
    source = write_jsonl(tmp_path / "history.jsonl", [
        {"session_id": SESSION_A, "ts": 1767603600 + n, "text": f"prompt {n}"} for n in range(3)])
    assert detect_format(source) == CODEX_HISTORY
    with pytest.raises(ImportRefused, match="prompt history"):
        import_session(source, tmp_path / "root")
    assert "prompt history" in foreign_format_message(source)


# --------------------------------------------------------------------------- the replay window


def test_the_replay_window_counts_the_lessons_events_not_the_evidence(tmp_path):
    records = [codex_meta(SESSION_A)]
    for turn in range(60):
        records += [codex_message("user", f"step {turn}", turn % 60),
                    codex_line("event_msg", {"type": "user_message", "message": f"step {turn}"}, turn % 60),
                    codex_line("event_msg", {"type": "token_count", "info": {"n": turn}}, turn % 60),
                    codex_line("turn_context", {"cwd": "/home/student/calc", "turn": turn}, turn % 60),
                    codex_message("assistant", f"done {turn}", turn % 60)]
    summary = import_session(write_jsonl(tmp_path / "rollout-window.jsonl", records), tmp_path / "root")
    events = events_of(summary)
    lessons_own = [event for event in events if event["type"] != TYPE_SOURCE_RECORD]
    assert window_events(summary.target, 50) == lessons_own[-50:]
    assert replay_imported(summary.target, 50) == messages_of(lessons_own[-50:])
    assert len(replay_imported(summary.target, 50)) == 50
    assert len(DurableTranscript(summary.target).replay(50)) < 50  # the lab's window: evidence counted


# --------------------------------------------------------------------------- messages that say what is wrong


def test_a_one_line_file_with_a_flipped_byte_names_the_line(tmp_path):
    line = SAMPLES["claude-code"].read_bytes().split(b"\n")[1]
    flipped = bytearray(line)
    flipped[0] ^= 0x40  # "{" becomes ";"
    source = tmp_path / "flipped.jsonl"
    source.write_bytes(bytes(flipped) + b"\n")
    with pytest.raises(ImportRefused, match="line 1 \\(byte 0\\) .* not JSON"):
        import_session(source, tmp_path / "root")
    assert foreign_format_message(source) is None  # the lesson's reader names the line itself


def test_a_pretty_printed_json_document_is_called_one(tmp_path):
    document = {"session": SESSION_A, "messages": [{"role": "user", "content": f"step {n}"} for n in range(30)]}
    source = tmp_path / "export.jsonl"
    source.write_text(json.dumps(document, indent=2))
    with pytest.raises(ImportRefused, match="one JSON document"):
        import_session(source, tmp_path / "root")
    text = format_raw_inspection(inspect_raw(source))
    assert "one JSON document" in text and "are not JSON" not in text
    assert "one JSON document" in foreign_format_message(source)


# --------------------------------------------------------------------------- memory


def growth_per_line(tmp_path, megabytes: list) -> float:
    """The bytes a dry-run import holds per extra source line: the slope between two session sizes."""
    points = []
    for size in megabytes:
        source = tmp_path / f"{size}" / f"{bench.SESSION}.jsonl"
        source.parent.mkdir()
        lines = bench.write_session(source, int(size * 1_000_000), output_bytes=30)
        tracemalloc.start()
        try:
            base = tracemalloc.get_traced_memory()[0]
            import_session(source, tmp_path / "root", dry_run=True)
            points.append((lines, tracemalloc.get_traced_memory()[1] - base))
        finally:
            tracemalloc.stop()
        source.unlink()
    (lines_a, peak_a), (lines_b, peak_b) = points
    return (peak_b - peak_a) / (lines_b - lines_a)


def test_memory_per_line_stays_within_what_the_docs_say(tmp_path):
    documented = bench.BYTES_PER_LINE_BOUND
    docs = Path(__file__).resolve().parents[1] / "docs"
    assert f"{documented} bytes" in (docs / "importers.md").read_text(encoding="utf-8")
    assert f"{documented} 字节" in (docs / "zh" / "importers.md").read_text(encoding="utf-8")
    assert growth_per_line(tmp_path, [2, 8]) <= documented


def test_inspect_on_the_command_line_says_what_a_file_that_is_no_session_is(tmp_path, capsys):
    from s09_jsonl_transcript import cli

    document = tmp_path / "export.jsonl"
    document.write_text(json.dumps({"messages": [{"role": "user", "content": f"step {n}"} for n in range(30)]},
                                   indent=2))
    history = write_jsonl(tmp_path / "history.jsonl", [{"session_id": SESSION_A, "ts": 1, "text": "hi"}])
    flipped = tmp_path / "flipped.jsonl"
    flipped.write_bytes(b";" + SAMPLES["codex"].read_bytes().split(b"\n")[0][1:] + b"\n")
    assert cli.main(["inspect", str(document), "--lang", "en"]) == 1
    out = capsys.readouterr().out
    assert "one JSON document written over" in out and "are not JSON" not in out
    assert cli.main(["inspect", str(history), "--lang", "en"]) == 1
    assert "Codex CLI prompt history" in capsys.readouterr().out
    assert cli.main(["inspect", str(flipped), "--lang", "en"]) == 1
    assert "line 1" in capsys.readouterr().out
