"""Importing real agents' sessions: every number of the summary checked against a count made here, by hand.

The expected counts below are computed from the source with plain json and the documented mapping
(issue 21), never with the importer's own code; the written transcript is read back through the
kit's reader and through jq; the source's bytes are compared before and after.
"""

import hashlib
import json
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from chat_api import every_replay_checked

from s09_jsonl_transcript.importers import (
    SAMPLES,
    TYPE_SOURCE_RECORD,
    ImportRefused,
    detect_format,
    foreign_format_message,
    import_session,
    inspect_raw,
)
from s09_jsonl_transcript.lab import DurableTranscript

CLAUDE, CODEX, SEED, WORKBUDDY = (SAMPLES[name] for name in ("claude-code", "codex", "seed-002", "workbuddy"))
every_replay = every_replay_checked()  # autouse: each import's replay passes the chat API's rules


def records_of(path):
    """Every line of a file, parsed (the samples hold only complete JSON lines)."""
    return [json.loads(line) for line in Path(path).read_bytes().split(b"\n") if line.strip()]


def line_count(path) -> int:
    data = Path(path).read_bytes()
    return data.count(b"\n") + (not data.endswith(b"\n") and bool(data))


def written_events(summary):
    return DurableTranscript(summary.target).read_events()


def digest(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


# --------------------------------------------------------------------------- independent counts


def claude_expected(path):
    """The documented mapping applied by hand: (line outcomes, records by type, evidence by source type, calls)."""
    lines, written, evidence = Counter(), Counter(), Counter()
    seen_uuids, seen_blocks, calls, results = set(), {}, [], []
    for record in records_of(path):
        uuid = record.get("uuid")
        if uuid in seen_uuids:
            lines["duplicate"] += 1
            continue
        if uuid:
            seen_uuids.add(uuid)
        kind = record["type"]
        if record.get("isSidechain"):
            lines["evidence"] += 1
            written[TYPE_SOURCE_RECORD] += 1
            evidence[f"sidechain {kind}"] += 1
        elif kind in ("user", "assistant"):
            content = record["message"]["content"]
            if isinstance(content, str):
                blocks = [{"type": "text", "text": content}]
            else:
                message_id = record["message"].get("id")
                fresh = [b for b in content if json.dumps(b, sort_keys=True) not in seen_blocks.get(message_id, ())]
                seen_blocks.setdefault(message_id, set()).update(json.dumps(b, sort_keys=True) for b in content)
                blocks = fresh
            if not blocks:
                lines["duplicate"] += 1
                continue
            lines["mapped"] += 1
            for block in blocks:
                lesson_type = {"text": "message", "thinking": "reasoning", "tool_use": "function_call",
                               "tool_result": "function_call_result"}[block["type"]]
                written[lesson_type] += 1
                if block["type"] == "tool_use":
                    calls.append(block["id"])
                if block["type"] == "tool_result":
                    results.append(block["tool_use_id"])
        elif kind == "summary":
            lines["mapped"] += 1
            written["ai-title"] += 1
        elif kind == "file-history-snapshot":
            lines["mapped"] += 1
            written["file-history-snapshot"] += 1
        else:
            lines["evidence"] += 1
            written[TYPE_SOURCE_RECORD] += 1
            evidence[kind] += 1
    return lines, written, evidence, calls, results


def codex_expected(path):
    lines, written, evidence = Counter(), Counter(), Counter()
    seen, calls, results = set(), [], []
    for raw in Path(path).read_bytes().split(b"\n"):
        if not raw:
            continue
        if raw in seen:
            lines["duplicate"] += 1
            continue
        seen.add(raw)
        record = json.loads(raw)
        payload = record["payload"]
        item = payload.get("type") if record["type"] == "response_item" else None
        if item == "message" and payload["role"] in ("user", "assistant"):
            written["message"] += 1
        elif item == "reasoning":
            written["reasoning"] += 1
        elif item in ("function_call", "custom_tool_call"):
            written["function_call"] += 1
            calls.append(payload["call_id"])
        elif item in ("function_call_output", "custom_tool_call_output"):
            written["function_call_result"] += 1
            results.append(payload["call_id"])
        else:
            lines["evidence"] += 1
            written[TYPE_SOURCE_RECORD] += 1
            name = f"{record['type']} {payload['type']}" if record["type"] in ("event_msg", "response_item") \
                else record["type"]
            evidence[name] += 1
            continue
        lines["mapped"] += 1
    return lines, written, evidence, calls, results


def seed_expected(path):
    lines, written, seen, calls, results = Counter(), Counter(), set(), [], []
    to_lesson = {"user_message": "message", "assistant_text": "message", "tool_use": "function_call",
                 "tool_result": "function_call_result", "turn_start": "turn_start", "turn_end": "turn_end"}
    for record in records_of(path):
        if record["uuid"] in seen:
            lines["duplicate"] += 1
            continue
        seen.add(record["uuid"])
        lines["mapped"] += 1
        written[to_lesson[record["type"]]] += 1
        if record["type"] == "tool_use":
            calls.append(record["uuid"])
        if record["type"] == "tool_result":
            results.append(record["tool_use_uuid"])
    return lines, written, Counter(), calls, results


EXPECTED = {"claude-code": claude_expected, "codex": codex_expected, "seed-002": seed_expected,
            "workbuddy": lambda path: (Counter(mapped=line_count(path)),
                                       Counter(r["type"] for r in records_of(path)), Counter(),
                                       [r["callId"] for r in records_of(path) if r["type"] == "function_call"],
                                       [r["callId"] for r in records_of(path) if r["type"] == "function_call_result"])}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_every_number_of_the_summary_matches_a_count_made_by_hand(tmp_path, name):
    source = SAMPLES[name]
    before = digest(source)
    summary = import_session(source, tmp_path)
    lines, written, evidence, calls, results = EXPECTED[name](source)
    report = summary.as_dict()
    assert report["source_lines"] == line_count(source) == summary.lines_accounted_for
    assert report["lines"] == {"mapped": lines["mapped"], "evidence": lines["evidence"],
                               "duplicate": lines["duplicate"], "blank": 0, "partial_tail": 0}
    assert report["records_written"] == dict(written)
    assert report["kept_as_evidence"] == dict(evidence)
    assert report["duplicates_merged"] == lines["duplicate"]
    paired = sum(1 for call in calls if call in results)
    assert (report["tool_calls_paired"], report["tool_calls_unpaired"]) == (paired, len(calls) - paired)
    assert report["results_without_call"] == sum(1 for result in results if result not in calls)
    assert report["partial_tail"] is False and report["partial_tail_bytes"] == 0
    # the file on disk holds exactly what the summary says
    events = written_events(summary)
    assert Counter(e["type"] for e in events) == written
    assert Counter(e["source_type"] for e in events if e["type"] == TYPE_SOURCE_RECORD) == evidence
    assert report["source_bytes"] == source.stat().st_size
    assert digest(source) == before, "the source changed"


def test_the_samples_say_what_they_teach(tmp_path):
    """Each sample holds the cases the notebook shows: a duplicate, a branch, a sidechain, a pending call."""
    claude = import_session(CLAUDE, tmp_path).as_dict()
    assert claude["duplicates_merged"] == 1 and claude["sidechain_records"] == 2 and claude["subagent_files"] == 1
    # message.id msg_01A spans three lines (thinking, text, tool_use): two of them continue it
    assert claude["streamed_lines"] == 2
    codex = import_session(CODEX, tmp_path)
    assert codex.tool_calls_unpaired == 1
    assert [call["callId"] for call in DurableTranscript(codex.target).replay_state().pending_calls] == ["call_A4"]
    seed = import_session(SEED, tmp_path)
    pending = DurableTranscript(seed.target).replay_state().pending_calls
    assert [(call["name"], call["arguments"]["path"]) for call in pending] == [("write", "server.py")]


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_the_result_passes_the_kits_reader_and_jq(tmp_path, name):
    summary = import_session(SAMPLES[name], tmp_path)
    events = written_events(summary)
    assert [e["sequence"] for e in events] == list(range(1, len(events) + 1))
    assert all(e["session_id"] == summary.session_id for e in events)
    assert all(e["source"]["format"] == name and e["source"]["line"] >= 1 for e in events)  # provenance
    if shutil.which("jq") is None:
        pytest.skip("jq is not installed")
    result = subprocess.run(["jq", "-c", ".", summary.target], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stderr == ""
    assert len(result.stdout.splitlines()) == len(events)


def test_the_target_lives_under_root_projects_workspace_session(tmp_path):
    summary = import_session(CLAUDE, tmp_path)
    assert Path(summary.target) == tmp_path / "projects" / "calc" / f"{CLAUDE.stem}.jsonl"
    chosen = import_session(CLAUDE, tmp_path, workspace="mine", session="again")
    assert Path(chosen.target) == tmp_path / "projects" / "mine" / "again.jsonl"
    seed = import_session(SEED, tmp_path)  # no working folder in the format: the default workspace
    assert Path(seed.target) == tmp_path / "projects" / "imported" / "http-server.jsonl"


def test_provenance_keeps_the_source_ids_and_the_tree(tmp_path):
    events = written_events(import_session(CLAUDE, tmp_path))
    by_line = {record_line: record for record_line, record in enumerate(records_of(CLAUDE), start=1)}
    for event in events:
        source = event["source"]
        original = by_line[source["line"]]
        assert source.get("uuid") == original.get("uuid")
        assert source.get("parent_uuid") == original.get("parentUuid")


# --------------------------------------------------------------------------- damaged input


@pytest.fixture
def claude_copy(tmp_path):
    folder = tmp_path / "src"
    folder.mkdir()
    path = folder / CLAUDE.name
    path.write_bytes(CLAUDE.read_bytes())
    return path


def nothing_under(root: Path) -> bool:
    return not any(path.is_file() for path in root.rglob("*")) if root.exists() else True


def test_a_complete_bad_line_in_the_middle_is_refused_and_nothing_is_written(claude_copy, tmp_path):
    lines = claude_copy.read_bytes().split(b"\n")
    lines[7] = b'{"type": "assistant", "broken'
    claude_copy.write_bytes(b"\n".join(lines))
    before = digest(claude_copy)
    offset = sum(len(line) + 1 for line in lines[:7])
    with pytest.raises(ImportRefused, match=rf"line 8 \(byte {offset}\) .* not JSON.*nothing written"):
        import_session(claude_copy, tmp_path / "root")
    assert nothing_under(tmp_path / "root")
    assert digest(claude_copy) == before


def test_a_partial_tail_is_reported_and_every_complete_line_imported(claude_copy, tmp_path):
    fragment = b'{"parentUuid":"00000015-1111-4aaa-8bbb-00000000000f","type":"assi'
    with open(claude_copy, "ab") as file:
        file.write(fragment)
    summary = import_session(claude_copy, tmp_path / "root").as_dict()
    complete = claude_expected(CLAUDE)[0]
    assert summary["partial_tail"] is True and summary["partial_tail_bytes"] == len(fragment)
    assert summary["source_lines"] == line_count(CLAUDE) + 1
    assert summary["lines"]["partial_tail"] == 1
    assert summary["lines"]["mapped"] == complete["mapped"] and summary["lines"]["evidence"] == complete["evidence"]


def test_an_unterminated_last_line_that_is_whole_is_imported(claude_copy, tmp_path):
    claude_copy.write_bytes(claude_copy.read_bytes().rstrip(b"\n"))
    summary = import_session(claude_copy, tmp_path / "root")
    assert summary.source_lines == line_count(CLAUDE) and not summary.partial_tail
    assert summary.records_written["ai-title"] == 1  # the last line is the summary record


@pytest.mark.parametrize("content", [b"", b"\n\n", b'{"type":"user","uuid":"x","mess'])
def test_an_empty_file_is_refused(tmp_path, content):
    path = tmp_path / "empty.jsonl"
    path.write_bytes(content)
    with pytest.raises(ImportRefused, match="no complete record"):
        import_session(path, tmp_path / "root")
    assert nothing_under(tmp_path / "root")


def test_a_file_of_another_format_is_refused_naming_both(tmp_path):
    with pytest.raises(ImportRefused, match="is not a codex session: its records are claude-code records"):
        import_session(CLAUDE, tmp_path / "root", source_format="codex")
    unknown = tmp_path / "notes.jsonl"
    unknown.write_text('{"note": "hello"}\n{"note": "again"}\n')
    with pytest.raises(ImportRefused, match="no format the kit can import"):
        import_session(unknown, tmp_path / "root")
    assert nothing_under(tmp_path / "root")


def test_a_lesson_transcript_is_not_imported_again(tmp_path):
    summary = import_session(SEED, tmp_path / "first")
    with pytest.raises(ImportRefused, match="already a transcript in the lesson's format"):
        import_session(summary.target, tmp_path / "second")


def test_an_existing_target_is_refused_and_left_as_it_was(tmp_path):
    summary = import_session(CLAUDE, tmp_path)
    before = digest(summary.target)
    with pytest.raises(ImportRefused, match="already exists under this root"):
        import_session(CLAUDE, tmp_path)  # the same source twice: no event is written twice
    assert digest(summary.target) == before
    assert len(written_events(summary)) == sum(summary.records_written.values())


def test_repeated_uuids_are_written_once(tmp_path):
    source = tmp_path / "repeats.jsonl"
    lines = SEED.read_bytes().split(b"\n")[:-1]
    source.write_bytes(b"\n".join(lines + lines + lines[:3]) + b"\n")  # the whole session twice, and more
    summary = import_session(source, tmp_path / "root")
    uuids = [record["uuid"] for record in records_of(source)]
    assert summary.lines["duplicate"] == len(uuids) - len(set(uuids))
    written = [event["source"]["uuid"] for event in written_events(summary)]
    assert sorted(written) == sorted(set(uuids))


def test_a_record_the_writer_refuses_removes_the_half_written_target(claude_copy, tmp_path):
    deep = {}
    for _ in range(150):  # deeper than the writer accepts (it keeps every record readable)
        deep = {"inner": deep}
    tool_use = json.loads(claude_copy.read_bytes().split(b"\n")[4])
    tool_use.update(uuid="deep-one", message={**tool_use["message"], "id": "msg_deep",
                                              "content": [{"type": "tool_use", "id": "toolu_deep", "name": "Read",
                                                           "input": deep}]})
    with open(claude_copy, "a") as file:
        file.write(json.dumps(tool_use) + "\n")
    with pytest.raises(ImportRefused, match="the writer refused an event"):
        import_session(claude_copy, tmp_path / "root", chunk_events=2)  # the earlier chunks were written, then removed
    assert nothing_under(tmp_path / "root")


def test_group_commits_are_bounded_chunks_and_change_nothing_else(tmp_path):
    whole = import_session(CODEX, tmp_path / "whole")
    chunked = import_session(CODEX, tmp_path / "chunked", chunk_events=3)
    total = sum(whole.records_written.values())
    assert whole.batches == 1 and chunked.batches == -(-total // 3)
    strip = ("recorded_at", "batch_end")
    assert [{k: v for k, v in e.items() if k not in strip} for e in written_events(whole)] == \
        [{k: v for k, v in e.items() if k not in strip} for e in written_events(chunked)]


def test_a_dry_run_writes_nothing(tmp_path):
    summary = import_session(CODEX, tmp_path / "root", dry_run=True)
    assert summary.target == "" and sum(summary.records_written.values()) > 0
    assert nothing_under(tmp_path / "root")


# --------------------------------------------------------------------------- sidechains and subagents


def test_sidechain_records_of_a_main_session_are_evidence_and_stay_out_of_replay(tmp_path):
    summary = import_session(CLAUDE, tmp_path)
    sidechains = [r for r in records_of(CLAUDE) if r.get("isSidechain")]
    assert summary.sidechain_records == len(sidechains)
    texts = [m["content"] for m in DurableTranscript(summary.target).replay() if isinstance(m["content"], str)]
    assert not any("caller of add()" in text for text in texts)


def test_a_subagent_file_is_its_own_session_and_its_records_its_conversation(tmp_path):
    subagent = next((CLAUDE.parent / CLAUDE.stem / "subagents").glob("agent-*.jsonl"))
    summary = import_session(subagent, tmp_path)
    assert summary.session_id == subagent.stem and summary.sidechain_records == 0
    assert summary.records_written == Counter(message=2)


# --------------------------------------------------------------------------- detection and inspection


def test_each_sample_is_detected_and_a_transcript_is_not_foreign(tmp_path):
    assert {name: detect_format(path) for name, path in SAMPLES.items()} == {name: name for name in SAMPLES}
    summary = import_session(CODEX, tmp_path)
    assert detect_format(summary.target) == "lesson" and foreign_format_message(summary.target) is None
    assert "is a Codex CLI file" in foreign_format_message(CODEX)
    assert "is a seed 002 file" in foreign_format_message(SEED)


def test_inspect_raw_describes_the_tree_as_counted_by_hand():
    records = [r for r in records_of(CLAUDE) if "uuid" in r and "parentUuid" in r]
    unique = {r["uuid"]: r for r in records}
    parents = Counter(r["parentUuid"] for r in unique.values() if r["parentUuid"])
    report = inspect_raw(CLAUDE)
    assert report["tree"]["records"] == len(unique)
    assert report["tree"]["roots"] == sum(1 for r in unique.values() if r["parentUuid"] is None)
    assert report["tree"]["branch_points"] == sum(1 for n in parents.values() if n > 1) == 1
    assert report["tree"]["leaves"] == sum(1 for uuid in unique if uuid not in parents)
    assert report["tree"]["missing_parents"] == 0
    assert report["lines"] == line_count(CLAUDE) and report["envelope_lines"] == 0
    assert inspect_raw(CODEX)["tree"] is None


def test_inspect_raw_sees_damage_without_changing_the_file(claude_copy):
    with open(claude_copy, "ab") as file:
        file.write(b'{"half')
    before = digest(claude_copy)
    report = inspect_raw(claude_copy)
    assert report["partial_tail_bytes"] == 6 and report["bad_lines"] == 0
    assert digest(claude_copy) == before
    lines = claude_copy.read_bytes().split(b"\n")
    lines[3] = b"garbage"
    claude_copy.write_bytes(b"\n".join(lines))
    assert (inspect_raw(claude_copy)["first_bad_line"], inspect_raw(claude_copy)["bad_lines"]) == (4, 1)


def test_a_result_whose_call_is_missing_is_counted_and_left_out_of_replay(tmp_path):
    source = tmp_path / "rollout-cut.jsonl"
    lines = [line for line in CODEX.read_bytes().split(b"\n") if b'"call_id":"call_A1"' not in line
             or b"function_call_output" in line]  # the call is gone, its output stays
    source.write_bytes(b"\n".join(lines))
    summary = import_session(source, tmp_path / "root")
    lines_, written, evidence, calls, results = codex_expected(source)
    assert summary.results_without_call == sum(1 for r in results if r not in calls) == 1
    assert summary.tool_calls_paired == sum(1 for c in calls if c in results)
    messages = DurableTranscript(summary.target).replay()
    assert not any(block.get("tool_use_id") == "call_A1" for m in messages if isinstance(m["content"], list)
                   for block in m["content"])


def test_seed_002_through_the_adapter_gives_the_answers_issue_20_found_missing(tmp_path):
    """Read as it is, seed 002's log replayed 0 messages, counted 0 tool calls and hid its pending write."""
    from s09_jsonl_transcript.lessons.read_model_and_turns import recovery_plan
    from s09_jsonl_transcript.production.turns import audit, session_status

    events = written_events(import_session(SEED, tmp_path))
    # every message, call and result of the source is a chat message of replay (each uuid once)
    chat = {r["uuid"] for r in records_of(SEED) if r["type"] in ("user_message", "assistant_text", "tool_use",
                                                                  "tool_result")}
    assert len(DurableTranscript(import_session(SEED, tmp_path, session="again").target).replay()) == len(chat) == 6
    assert [call.name for call in audit(events).tool_calls] == ["write", "write"]
    assert all(event.get("recorded_at") for event in events)  # a timeout has a clock to read
    assert str(session_status(events)).startswith("running")
    assert "write" in str(recovery_plan(events)) and "may have run" in str(recovery_plan(events))


@pytest.mark.parametrize("asked, made", [("../../etc", "etc"), ("a..b", "a.b"), ("my session/1", "my-session-1"),
                                         (".hidden", "hidden"), ("会话", "imported")])
def test_names_from_the_source_or_the_user_stay_inside_root(tmp_path, asked, made):
    summary = import_session(SEED, tmp_path / "root", session=asked, workspace=asked)
    assert Path(summary.target) == tmp_path / "root" / "projects" / made / f"{made}.jsonl"


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_any_damage_is_either_refused_with_nothing_written_or_imported_with_every_line_accounted_for(tmp_path, name):
    import random

    original = SAMPLES[name].read_bytes()
    chooser = random.Random(f"s09-importers-{name}")  # fixed seed: the same damage on every run
    outcomes = Counter()
    for trial in range(40):
        data = bytearray(original)
        for _ in range(chooser.randint(1, 3)):
            spot = chooser.randrange(len(data))
            action = chooser.choice(("flip", "cut", "newline"))
            if action == "flip":
                data[spot] = chooser.randrange(256)
            elif action == "cut":
                del data[spot:]
                break
            else:
                data[spot:spot] = b"\n"
        source = tmp_path / f"trial-{trial}" / SAMPLES[name].name
        source.parent.mkdir()
        source.write_bytes(bytes(data))
        root = tmp_path / f"root-{trial}"
        try:
            summary = import_session(source, root)
        except ImportRefused:
            assert nothing_under(root), trial
            outcomes["refused"] += 1
            continue
        outcomes["imported"] += 1
        assert summary.lines_accounted_for == summary.source_lines == line_count(source), trial
        assert len(written_events(summary)) == sum(summary.records_written.values()), trial
        assert source.read_bytes() == bytes(data)
    assert outcomes["refused"] and outcomes["imported"], outcomes  # the damage reached both answers
