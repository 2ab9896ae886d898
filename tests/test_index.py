"""The SQLite read model: sync, listing, search, renamed titles, rebuilds and the JSONL fallback."""

import os
import sqlite3
import time

import pytest

from s09_jsonl_transcript.code import TYPE_AI_TITLE
from s09_jsonl_transcript.crashlab import damage
from s09_jsonl_transcript.lab import DurableTranscript
from s09_jsonl_transcript.lessons.read_model_and_turns import build_sample_root
from s09_jsonl_transcript.production.index import (
    INDEX_SCHEMA_VERSION,
    SOURCE_INDEX,
    SOURCE_SCAN,
    IndexLockedError,
    TranscriptIndex,
    format_sessions,
    main,
    message_text,
)


@pytest.fixture
def root(tmp_path):
    """Three sessions in two workspaces (see build_sample_root)."""
    build_sample_root(tmp_path)
    return tmp_path


@pytest.fixture
def index(root):
    """An index over root, synced once."""
    index = TranscriptIndex(root)
    index.sync()
    return index


def transcript_paths(root):
    return sorted((root / "projects").glob("*/*.jsonl"))


def expected_messages(root):
    """(workspace, session, sequence, text) of every message, read straight from the JSONL."""
    found = []
    for path in transcript_paths(root):
        for event in DurableTranscript(path).read_events():
            text = message_text(event)
            if text is not None:
                found.append((path.parent.name, path.stem, event["sequence"], text))
    return found


def hit_keys(answer):
    return [(hit.workspace, hit.session_id, hit.sequence) for hit in answer.rows]


# --------------------------------------------------------------------------- sync


def test_sync_lists_every_transcript_with_what_its_jsonl_says(root, index):
    answer = index.sessions()
    assert answer.source == SOURCE_INDEX and answer.fallback_reason is None
    expected = [(p.parent.name, p.stem) for p in transcript_paths(root)]
    assert [(row.workspace, row.session_id) for row in answer.rows] == expected
    for row, path in zip(answer.rows, transcript_paths(root)):
        events = DurableTranscript(path).read_events()
        titles = [e["title"] for e in events if e["type"] == TYPE_AI_TITLE]
        assert row.event_count == len(events) and row.last_sequence == events[-1]["sequence"]
        assert row.updated_at == events[-1]["recorded_at"]
        assert row.title == (titles[-1] if titles else None)
        assert (row.size, row.mtime_ns) == (path.stat().st_size, path.stat().st_mtime_ns)
        assert row.problem is None


def test_a_second_sync_skips_unchanged_transcripts(root, index):
    report = index.sync()
    assert report.added == report.updated == report.removed == []
    assert len(report.unchanged) == len(transcript_paths(root))


def test_sync_rereads_only_a_changed_transcript(root, index):
    with DurableTranscript.for_session(root, "notes", "chat") as chat:
        chat.append({"type": "message", "role": "user", "content": "One more question about fsync"})
    report = index.sync()
    assert report.updated == [("notes", "chat")] and len(report.unchanged) == 2
    row = next(row for row in index.sessions().rows if row.session_id == "chat")
    assert row.event_count == 3
    assert hit_keys(index.search("about fsync")) == [("notes", "chat", 3)]


def test_sync_notices_new_and_removed_transcripts(root, index):
    with DurableTranscript.for_session(root, "notes", "new") as new:
        new.append({"type": "message", "role": "user", "content": "hello"})
    (root / "projects" / "calc" / "bug-fix.jsonl").unlink()
    report = index.sync()
    assert report.added == [("notes", "new")] and report.removed == [("calc", "bug-fix")]
    assert [row.session_id for row in index.sessions().rows] == ["with-turns", "chat", "new"]
    assert not [hit for hit in index.search("a + b").rows if hit.session_id == "bug-fix"]


def test_a_damaged_transcript_is_listed_with_its_problem_and_serves_no_text(root, index):
    damage.insert_line(root / "projects" / "calc" / "bug-fix.jsonl", 3)
    report = index.sync()
    assert report.damaged == [("calc", "bug-fix")]
    row = next(row for row in index.sessions().rows if row.session_id == "bug-fix")
    assert "line 3" in row.problem and row.event_count == 0
    assert {hit.session_id for hit in index.search("a + b").rows} == {"with-turns"}


# --------------------------------------------------------------------------- search


@pytest.mark.parametrize("needle", ["a + b", "APPEND-ONLY", "ranscri", "fix", "Fix", "+", "(2, 3)", '"'])
def test_search_finds_exactly_the_messages_containing_the_text_in_any_case(root, index, needle):
    expected = [(w, s, n) for w, s, n, text in expected_messages(root) if needle.lower() in text.lower()]
    assert hit_keys(index.search(needle)) == expected


def test_a_case_sensitive_search_confirms_the_exact_text(root, index):
    expected = [(w, s, n) for w, s, n, text in expected_messages(root) if "JSONL" in text]
    assert expected  # the sample has some
    assert hit_keys(index.search("JSONL", case_sensitive=True)) == expected
    assert hit_keys(index.search("jsonl", case_sensitive=True)) == []
    assert hit_keys(index.search("jsonl")) == expected


def test_search_matches_message_text_only(index):
    assert index.search("calc.py").rows  # a user message mentions it
    assert not index.search("wrote 33 bytes").rows  # only a tool result says this


def test_blank_search_text_and_a_bad_limit_are_refused(index):
    with pytest.raises(ValueError):
        index.search("  ")
    with pytest.raises(ValueError, match="limit"):
        index.search("fix", limit=0)


def test_search_covers_user_and_assistant_text_only(tmp_path):
    with DurableTranscript.for_session(tmp_path, "w", "roles") as transcript:
        for role in ("user", "assistant", "system", "tool"):
            transcript.append({"type": "message", "role": role, "content": f"needle said by {role}"})
    index = TranscriptIndex(tmp_path)
    scanned = index.search("needle")
    index.sync()
    assert [hit.role for hit in index.search("needle").rows] == [hit.role for hit in scanned.rows] == [
        "user", "assistant"]


@pytest.fixture
def many(tmp_path):
    """30 messages saying 'jsonl', then 3 saying 'JSONL': a case-sensitive search must page past the first."""
    with DurableTranscript.for_session(tmp_path, "w", "many") as transcript:
        for n in range(30):
            transcript.append({"type": "message", "role": "user", "content": f"jsonl note {n}"})
        for n in range(3):
            transcript.append({"type": "message", "role": "assistant", "content": f"JSONL answer {n}"})
    return TranscriptIndex(tmp_path)


@pytest.mark.parametrize("synced", [False, True])
def test_a_limit_cuts_the_hits_and_never_changes_which_match(many, synced):
    if synced:
        many.sync()
    everything = many.search("jsonl", limit=1000)
    assert len(everything.rows) == 33 and not everything.more
    first = many.search("jsonl", limit=5)
    assert first.rows == everything.rows[:5] and first.more
    exact = many.search("JSONL", case_sensitive=True, limit=2)  # candidates paged 8 at a time
    assert [hit.sequence for hit in exact.rows] == [31, 32] and exact.more
    assert [hit.sequence for hit in many.search("JSONL", case_sensitive=True, limit=3).rows] == [31, 32, 33]
    assert not many.search("JSONL", case_sensitive=True, limit=3).more
    assert first.source == (SOURCE_INDEX if synced else SOURCE_SCAN)


# --------------------------------------------------------------------------- titles and rebuilds


def test_a_renamed_title_is_listed_and_survives_a_resync_of_its_session(root, index):
    index.rename("notes", "chat", "  My question  ")
    with DurableTranscript.for_session(root, "notes", "chat") as chat:
        chat.append({"type": "message", "role": "user", "content": "and another"})
    index.sync()
    titles = {row.session_id: row.title for row in index.sessions().rows}
    assert titles["chat"] == "My question"


def test_deleting_the_database_and_syncing_again_gives_the_same_rows(root, index):
    sessions, hits = index.sessions(), index.search("the")
    index.db_path.unlink()
    report = index.sync()
    assert len(report.added) == len(transcript_paths(root))
    assert index.sessions() == sessions and index.search("the") == hits


def test_a_renamed_title_survives_deleting_the_index(index):
    index.rename("calc", "bug-fix", "Mine")
    renamed = index.sessions().rows
    index.db_path.unlink()
    assert index.sessions().rows == renamed  # the JSONL scan shows the user's title too
    index.sync()
    assert index.sessions().rows == renamed
    assert index.user_titles.path.name == "user-titles.sqlite3" and index.user_titles.path.is_file()


@pytest.mark.parametrize("damage_kind", ["garbage", "schema version", "zeroed pages"])
def test_a_corrupt_or_outdated_index_loses_no_renamed_title(index, damage_kind):
    index.rename("calc", "bug-fix", "Mine")
    index.rename("notes", "chat", "Why append-only?")
    expected = index.sessions().rows
    if damage_kind == "garbage":
        index.db_path.write_bytes(b"not a database" * 300)
    elif damage_kind == "schema version":
        with sqlite3.connect(index.db_path) as connection:
            connection.execute(f"PRAGMA user_version = {INDEX_SCHEMA_VERSION + 1}")
    else:
        data = bytearray(index.db_path.read_bytes())
        data[100:] = bytes(len(data) - 100)
        index.db_path.write_bytes(bytes(data))
    assert index.sessions().rows == expected
    index.sync()
    assert index.sessions().rows == expected and index.sessions().source == SOURCE_INDEX


def test_titles_an_index_of_schema_1_held_are_moved_out_before_it_is_rebuilt(root):
    old = root / "index.sqlite3"
    with sqlite3.connect(old) as connection:
        connection.executescript("CREATE TABLE renamed_titles (workspace TEXT, session_id TEXT, title TEXT, "
                                 "PRIMARY KEY (workspace, session_id)); PRAGMA user_version = 1;")
        connection.execute("INSERT INTO renamed_titles VALUES ('notes', 'chat', 'Kept from schema 1')")
    index = TranscriptIndex(root)
    report = index.sync()
    assert "schema version 1" in report.rebuilt_because
    assert {row.session_id: row.title for row in index.sessions().rows}["chat"] == "Kept from schema 1"


def test_a_damaged_user_database_is_reported_and_never_deleted(index):
    index.rename("notes", "chat", "Mine")
    index.user_titles.path.write_bytes(b"scribbled over" * 300)
    answer = index.sessions()
    assert answer.titles_problem and "user-titles.sqlite3" in answer.titles_problem
    assert [row.session_id for row in answer.rows] == ["bug-fix", "with-turns", "chat"]  # still listed
    index.sync()
    assert index.user_titles.path.read_bytes() == b"scribbled over" * 300
    assert "your renamed titles are not shown" in format_sessions(index.sessions())


def test_both_databases_use_wal_journal_mode(index):
    index.rename("notes", "chat", "Mine")
    for path in (index.db_path, index.user_titles.path):
        with sqlite3.connect(path) as connection:
            assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_writer_waits_for_the_busy_timeout_then_gives_up(root):
    index = TranscriptIndex(root, timeout=0.5)
    index.sync()
    with DurableTranscript.for_session(root, "notes", "chat") as chat:
        chat.append({"type": "message", "role": "user", "content": "a change to write"})
    holder = sqlite3.connect(index.db_path, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")  # another writer, in the middle of its transaction
        started = time.monotonic()
        with pytest.raises(IndexLockedError):
            index.sync()
        assert time.monotonic() - started >= 0.4
    finally:
        holder.close()


def test_a_schema_version_mismatch_falls_back_then_sync_drops_and_rebuilds(index):
    expected = index.sessions().rows
    with sqlite3.connect(index.db_path) as connection:
        connection.execute(f"PRAGMA user_version = {INDEX_SCHEMA_VERSION + 1}")
    answer = index.sessions()
    assert answer.source == SOURCE_SCAN and "schema version" in answer.fallback_reason
    assert answer.rows == expected
    report = index.sync()
    assert "schema version" in report.rebuilt_because and len(report.added) == len(expected)
    assert index.sessions().source == SOURCE_INDEX


def test_rename_refuses_a_blank_title(index):
    with pytest.raises(ValueError):
        index.rename("calc", "bug-fix", " ")


# --------------------------------------------------------------------------- the fallback


def test_a_missing_database_falls_back_to_the_same_answers(root):
    index = TranscriptIndex(root)
    scanned_sessions, scanned_hits = index.sessions(), index.search("a + b")
    assert scanned_sessions.source == scanned_hits.source == SOURCE_SCAN
    assert "no index database" in scanned_sessions.fallback_reason
    assert not index.db_path.exists()  # reading never creates the database
    index.sync()
    assert index.sessions().rows == scanned_sessions.rows
    assert index.search("a + b").rows == scanned_hits.rows


def test_a_writer_in_progress_blocks_no_reader_and_sync_says_locked(root, index):
    expected_sessions, expected_hits = index.sessions().rows, index.search("fix").rows
    with DurableTranscript.for_session(root, "notes", "chat") as chat:
        chat.append({"type": "message", "role": "user", "content": "a change to write"})
    holder = sqlite3.connect(index.db_path, isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")  # another process in the middle of writing
        sessions, hits = index.sessions(), index.search("fix")
        assert sessions.source == hits.source == SOURCE_INDEX  # WAL: readers read the last commit
        assert sessions.rows == expected_sessions and hits.rows == expected_hits
        with pytest.raises(IndexLockedError):
            index.sync()
    finally:
        holder.close()
    index.sync()
    assert index.sessions().source == SOURCE_INDEX and index.sessions().rows != expected_sessions


def test_a_corrupt_database_falls_back_and_sync_rebuilds_it(index):
    expected = index.sessions().rows
    index.db_path.write_bytes(os.urandom(64) + b"not a database" * 200)
    answer = index.sessions()
    assert answer.source == SOURCE_SCAN and answer.rows == expected
    assert index.search("a + b").source == SOURCE_SCAN
    report = index.sync()
    assert report.rebuilt_because
    assert index.sessions().source == SOURCE_INDEX and index.sessions().rows == expected


def test_a_database_with_a_damaged_page_still_never_hides_a_session(index):
    expected = index.sessions().rows
    data = bytearray(index.db_path.read_bytes())
    data[100:len(data)] = bytes(len(data) - 100)  # keep the header, zero every page after it
    index.db_path.write_bytes(bytes(data))
    assert index.sessions().rows == expected  # from the index if it still answers, else from the JSONL
    index.sync()
    assert index.sessions().rows == expected


# --------------------------------------------------------------------------- command line


def test_the_command_line_syncs_lists_searches_and_renames(root, capsys):
    assert main(["--root", str(root), "sync"]) == 0
    assert "3 added" in capsys.readouterr().out
    assert main(["--root", str(root), "rename", "notes", "chat", "Why append-only?"]) == 0
    assert main(["--root", str(root), "sessions"]) == 0
    listing = capsys.readouterr().out
    assert "notes/chat  Why append-only?" in listing and "calc/bug-fix  Fix add() in calc.py" in listing
    assert main(["--root", str(root), "search", "a", "--limit", "1"]) == 0
    limited = capsys.readouterr().out.splitlines()
    assert len(limited) == 2 and "more hits than the limit of 1" in limited[1]
    assert main(["--root", str(root), "search", "a + b"]) == 0
    found = capsys.readouterr().out.splitlines()
    assert [line.split(" ")[:2] for line in found] == [
        [f"{workspace}/{session}", f"#{sequence}"]
        for workspace, session, sequence, text in expected_messages(root) if "a + b" in text]


def test_the_command_line_reports_a_locked_index_with_status_1(root, capsys):
    assert main(["--root", str(root), "sync"]) == 0
    with DurableTranscript.for_session(root, "notes", "chat") as chat:
        chat.append({"type": "message", "role": "user", "content": "a change to write"})
    capsys.readouterr()
    holder = sqlite3.connect(root / "index.sqlite3", isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        assert main(["--root", str(root), "sync"]) == 1
        assert "locked" in capsys.readouterr().err
        assert main(["--root", str(root), "sessions"]) == 0
        assert "notes/chat" in capsys.readouterr().out
    finally:
        holder.close()


# --------------------------------------------------------------------------- issue 20: rewind, unfinished turns


def test_a_rewound_message_is_neither_counted_nor_found(tmp_path):
    from s09_jsonl_transcript.production import turns

    transcript = DurableTranscript.for_session(tmp_path, "ws", "s1", new=True)
    transcript.append({"type": "message", "role": "user", "content": "keep this question"})
    transcript.append({"type": "message", "role": "assistant", "content": "an answer taken back"})
    transcript.append(turns.rewind_event(1))
    transcript.close()
    index = TranscriptIndex(tmp_path)
    index.sync()
    for answer in (index.search("taken back"), TranscriptIndex(tmp_path, tmp_path / "missing.db").search("taken")):
        assert answer.rows == []  # from the index and from the JSONL scan
    assert index.search("keep this").rows[0].sequence == 1
    (row,) = index.sessions().rows
    assert row.event_count == 1 and row.last_sequence == 3


def test_a_harness_starting_up_lists_the_sessions_with_an_unfinished_turn(tmp_path, capsys):
    from s09_jsonl_transcript.production import index as index_module
    from s09_jsonl_transcript.production import turns

    def session(workspace, name, events):
        with DurableTranscript.for_session(tmp_path, workspace, name, new=True) as transcript:
            for event in events:
                transcript.append(event)

    session("ws", "done", [turns.turn_start_event(1), turns.turn_end_event(1, "complete")])
    session("ws", "open", [turns.turn_start_event(1), turns.turn_end_event(1, "complete"), turns.turn_start_event(2)])
    session("ws", "paused", [turns.turn_start_event(1), turns.command_event(turns.TYPE_PAUSE)])
    session("other", "plain", [{"type": "message", "role": "user", "content": "no markers"}])
    session("other", "rewound", [turns.turn_start_event(1), turns.turn_end_event(1, "complete"),
                                 turns.turn_start_event(2), turns.turn_end_event(2, "error"), turns.rewind_event(3)])
    damaged = tmp_path / "projects" / "other" / "damaged.jsonl"
    damaged.write_bytes(b'{"not": "a record"}\n')
    found = index_module.unfinished_sessions(tmp_path)
    assert [(s.workspace, s.session_id) for s in found] == [
        ("other", "damaged"), ("other", "rewound"), ("ws", "open"), ("ws", "paused")]
    assert found[1].status.open_turn == 2 and found[2].status.decision == turns.RERUN
    assert found[0].status is None and found[0].problem
    assert main(["--root", str(tmp_path), "unfinished"]) == 0
    out = capsys.readouterr().out
    assert "ws/open  [turn 2 never ended (running): resume the unfinished turn]" in out
