"""Notebook 10's helpers (lessons/your_agents_transcript.py) and its own importer; the saved notebook holds nothing of
a machine."""

import json
import os
import shutil
from pathlib import Path

import pytest

from s09_jsonl_transcript.importers import SAMPLES, ImportRefused, import_session
from s09_jsonl_transcript.lab import DurableTranscript
from s09_jsonl_transcript.lessons import your_agents_transcript as your_agent
from s09_jsonl_transcript.text import i18n

REPO = Path(__file__).resolve().parent.parent
NOTEBOOK = "beyond-s09/10_your_agents_transcript.ipynb"
CLAUDE, CODEX = SAMPLES["claude-code"], SAMPLES["codex"]


@pytest.fixture(autouse=True)
def english_afterwards():
    yield
    i18n.use("en")


def fake_home(tmp_path) -> Path:
    """A home folder where both agents have written sessions: copies of the samples, under their real layout."""
    home = tmp_path / "home"
    claude_folder = home / ".claude" / "projects" / "-home-student-calc"
    claude_folder.mkdir(parents=True)
    shutil.copy(CLAUDE, claude_folder / CLAUDE.name)
    shutil.copy(next(CLAUDE.parent.rglob("agent-*.jsonl")), claude_folder / "agent-a1b2c3d4.jsonl")  # not a session
    codex_folder = home / ".codex" / "sessions" / "2026" / "01" / "05"
    codex_folder.mkdir(parents=True)
    shutil.copy(CODEX, codex_folder / CODEX.name)
    broken = codex_folder / "rollout-2026-01-06T10-00-00-broken.jsonl"
    broken.write_bytes(CODEX.read_bytes().replace(b'"type":"turn_context"', b'"type":"turn_context"\n{oops', 1))
    os.utime(broken, (1, 1))  # the older of the two
    return home


def test_without_sessions_the_cell_prints_one_sentence(tmp_path):
    text = your_agent.own_sessions(home=tmp_path)
    assert text.count("\n") == 0 and text.startswith("No Claude Code or Codex sessions on this machine")
    i18n.use("zh")
    assert your_agent.own_sessions(home=tmp_path).startswith("这台机器上没有 Claude Code 或 Codex 的会话")


def test_with_sessions_it_imports_them_and_prints_counts_only(tmp_path):
    home = fake_home(tmp_path)
    before = {path: path.read_bytes() for path in home.rglob("*.jsonl")}
    text = your_agent.own_sessions(home=home)
    lines = text.splitlines()
    assert lines[0] == "Claude Code: 1 sessions found; importing the newest 1"
    claude = import_session(CLAUDE, tmp_path / "check", dry_run=True)
    assert lines[1] == (f"  1. {claude.source_lines} lines: {claude.lines['mapped']} mapped, "
                        f"{claude.lines['evidence']} kept as evidence, {claude.lines['duplicate']} duplicates merged; "
                        f"{claude.tool_calls_paired} tool calls (0 unpaired); partial tail: no")
    assert lines[2] == "Codex CLI: 2 sessions found; importing the newest 2"
    assert lines[4] == "  2. refused: run the import command on it to see why (nothing was written)"
    for private in ("calc", "home", "rollout", CLAUDE.stem, "0c9d8e7f", str(tmp_path), "add()"):
        assert private not in text, private  # no path, file name, session id or content
    assert {path: path.read_bytes() for path in home.rglob("*.jsonl")} == before  # the sources are unchanged
    assert not list(home.rglob("projects/own"))  # imported into a temporary root, not beside the sources


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_saved_notebook_shows_the_sentence_for_a_machine_without_sessions(language):
    cells = json.loads((REPO / "notebooks" / language / NOTEBOOK).read_text(encoding="utf-8"))["cells"]
    own = [cell for cell in cells if "own_sessions()" in "".join(cell["source"])]
    assert len(own) == 1 and "".join(own[0]["source"]).startswith("# NBVAL_SKIP")  # the suite never reads a home
    i18n.use(language)
    expected = your_agent.own_sessions(home=REPO / "no-such-home") + "\n"
    assert ["".join(output["text"]) for output in own[0]["outputs"]] == [expected], (
        "notebook 10 was saved on a machine with agent sessions: rebuild it with HOME pointed at an empty folder")


def test_the_notebook_s_codex_importer_accounts_for_every_line_and_agrees_with_the_kit(tmp_path):
    from chapter_code import run_cells

    cells = run_cells("beyond-s09/10_your_agents_transcript", ["language", "a9000002", "codex-lines", "codex-event",
                                                               "codex-import-cell", "codex-check-cell"])
    try:
        counts = cells["counts"]
        assert sum(counts.values()) == len(CODEX.read_bytes().splitlines())
        assert cells["lesson_fields"](cells["mine"]) == cells["lesson_fields"](cells["theirs"])
        assert counts["kept as evidence"] == cells["kit"].lines["evidence"] > 0 and counts["duplicate"] == 1
        event = cells["codex_event"]({"type": "response_item", "payload": {
            "type": "function_call", "name": "shell", "arguments": "not json", "call_id": "c"}})
        assert event["arguments"] == {"input": "not json"}  # free text kept whole, as the kit keeps it
        kept = cells["codex_event"]({"type": "response_item", "payload": {"type": "message", "role": "user",
                                                                            "content": [{"type": "input_text",
                                                                                         "text": " "}]}})
        assert kept["type"] == "source-record"  # a message with only white space is evidence, not a message
    finally:
        cells["workdir"].cleanup()


def test_the_tree_walk_follows_parent_uuid_from_the_leaf(tmp_path):
    events = DurableTranscript(import_session(CLAUDE, tmp_path).target).read_events()
    records = {json.loads(line)["uuid"]: json.loads(line) for line in CLAUDE.read_text().splitlines()
               if '"uuid"' in line and '"parentUuid"' in line}
    leaf = json.loads(CLAUDE.read_text().splitlines()[-1])["leafUuid"]
    by_hand, uuid = [], leaf
    while uuid:
        by_hand.append(uuid)
        uuid = records[uuid]["parentUuid"]
    assert [e["source"]["uuid"] for e in your_agent.walk_to_root(events, leaf)] == by_hand[::-1]
    branches = your_agent.branch_points(events)
    assert len(branches) == 1 and [len(kids) for kids in branches.values()] == [2]


def test_a_cycle_in_parent_links_ends_the_walk():
    events = [{"sequence": 1, "source": {"uuid": "a", "parent_uuid": "b"}},
              {"sequence": 2, "source": {"uuid": "b", "parent_uuid": "a"}}]
    assert [e["sequence"] for e in your_agent.walk_to_root(events, "a")] == [2, 1]


def test_the_damaged_copies_are_what_their_names_say(tmp_path):
    tail = your_agent.damaged_copy(CLAUDE, tmp_path / "a", "partial tail")
    assert import_session(tail, tmp_path / "root-a").partial_tail
    bad = your_agent.damaged_copy(CLAUDE, tmp_path / "b", "bad line")
    with pytest.raises(ImportRefused, match="is a complete line but not JSON"):
        import_session(bad, tmp_path / "root-b")
    assert CLAUDE.read_bytes() != tail.read_bytes() and tail.read_bytes().startswith(CLAUDE.read_bytes())
    with pytest.raises(ValueError):
        your_agent.damaged_copy(CLAUDE, tmp_path / "c", "gremlins")


def test_pending_text_names_the_call_a_session_left_running(tmp_path):
    assert your_agent.pending_text(import_session(CODEX, tmp_path)).endswith("pending calls: shell (call_A4)")


def test_automated_runs_can_point_the_cell_at_an_empty_home(tmp_path, monkeypatch):
    home = fake_home(tmp_path)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv(your_agent.AGENT_HOME_VARIABLE, raising=False)
    assert your_agent.own_sessions().startswith("Claude Code: 1 sessions found")
    monkeypatch.setenv(your_agent.AGENT_HOME_VARIABLE, str(tmp_path / "empty"))
    assert your_agent.own_sessions().startswith("No Claude Code or Codex sessions on this machine")
