"""A derived, disposable SQLite read model over a root of transcripts (stdlib sqlite3, no server).

The JSONL files are the evidence; the index only makes listing and search fast. Everything in
it is rebuilt from the files, except a title the user renamed, which exists nowhere else. When
the database is missing, locked or corrupt, listing and search scan the JSONL files instead, so
an index problem never makes a session unreadable.

    python -m s09_jsonl_transcript.index [--root DIR] [--db FILE] sync
    python -m s09_jsonl_transcript.index [--root DIR] [--db FILE] sessions
    python -m s09_jsonl_transcript.index [--root DIR] [--db FILE] search TEXT
    python -m s09_jsonl_transcript.index [--root DIR] [--db FILE] rename WORKSPACE SESSION TITLE

Transcripts live where JSONLTranscript.for_session puts them: ROOT/projects/<workspace>/<session>.jsonl.
The database defaults to ROOT/index.sqlite3.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .code import TYPE_AI_TITLE, TYPE_MESSAGE, JSONLTranscript, TranscriptCorruptionError

INDEX_SCHEMA_VERSION = 1
DEFAULT_DB_NAME = "index.sqlite3"
SOURCE_INDEX = "index"
SOURCE_SCAN = "jsonl scan"

_SCHEMA = f"""
CREATE TABLE sessions (
    workspace     TEXT NOT NULL,
    session_id    TEXT NOT NULL,
    title         TEXT,             -- the last ai-title event
    event_count   INTEGER NOT NULL,
    last_sequence INTEGER NOT NULL,
    updated_at    TEXT,             -- recorded_at of the last event
    size          INTEGER NOT NULL, -- the file's size and mtime when it was read: sync skips a file
    mtime_ns      INTEGER NOT NULL, -- whose size and mtime have not changed since
    problem       TEXT,             -- why the transcript could not be read, or NULL
    PRIMARY KEY (workspace, session_id)
);
-- The one thing the JSONL cannot rebuild: a title the user chose. Kept apart, so rebuilding a
-- session's rows never touches it.
CREATE TABLE renamed_titles (
    workspace  TEXT NOT NULL,
    session_id TEXT NOT NULL,
    title      TEXT NOT NULL,
    PRIMARY KEY (workspace, session_id)
);
-- Trigram tokens: any piece of text of three characters or more can be looked up.
CREATE VIRTUAL TABLE message_text USING fts5(
    text, workspace UNINDEXED, session_id UNINDEXED, sequence UNINDEXED, role UNINDEXED,
    tokenize = 'trigram'
);
PRAGMA user_version = {INDEX_SCHEMA_VERSION};
"""


class IndexLockedError(RuntimeError):
    """Another process holds the index database's write lock; sync can be tried again later."""


# --------------------------------------------------------------------------- what one transcript yields


@dataclass(frozen=True)
class SessionRow:
    """One session as the index lists it."""

    workspace: str
    session_id: str
    title: str | None
    event_count: int
    last_sequence: int
    updated_at: str | None
    size: int
    mtime_ns: int
    problem: str | None = None  # set when the transcript is damaged: then nothing else was read


@dataclass(frozen=True)
class MessageText:
    """The searchable text of one message event."""

    sequence: int
    role: str
    text: str


@dataclass(frozen=True)
class SessionDigest:
    """Everything the index stores about one transcript, read from its JSONL."""

    row: SessionRow
    messages: list


def message_text(event: dict) -> str | None:
    """The text of a message event (string content, or the text blocks of a content list); else None."""
    if event.get("type") != TYPE_MESSAGE:
        return None
    content = event.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [block["text"] for block in content if isinstance(block, dict) and isinstance(block.get("text"), str)]
        return "\n".join(texts) if texts else None
    return None


def read_session(path, workspace: str) -> SessionDigest:
    """Read one transcript (validated, as replay reads it) into its session row and message texts.

    A damaged transcript gives a row that names the damage and no messages: the index never
    serves text from a file the reader refuses.
    """
    path = Path(path)
    stat = path.stat()  # before reading: a file that grows meanwhile looks changed at the next sync
    transcript = JSONLTranscript(path)
    try:
        events = transcript.read_events()
    except TranscriptCorruptionError as error:
        row = SessionRow(workspace, transcript.session_id, None, 0, 0, None, stat.st_size, stat.st_mtime_ns,
                         problem=f"line {error.line_number}: {error.reason}")
        return SessionDigest(row, [])
    titles = [event["title"] for event in events if event["type"] == TYPE_AI_TITLE]
    messages = [MessageText(event["sequence"], event["role"], text)
                for event in events if (text := message_text(event)) is not None]
    last = events[-1] if events else {}
    row = SessionRow(workspace, transcript.session_id, titles[-1] if titles else None, len(events),
                     last.get("sequence", 0), last.get("recorded_at"), stat.st_size, stat.st_mtime_ns)
    return SessionDigest(row, messages)


def find_transcripts(root) -> list[tuple[str, str, Path]]:
    """(workspace, session_id, path) of every transcript under root/projects, sorted."""
    found = []
    for path in sorted(Path(root, "projects").glob("*/*.jsonl")):
        if path.is_file():
            found.append((path.parent.name, path.stem, path))
    return found


# --------------------------------------------------------------------------- answers


@dataclass(frozen=True)
class SearchHit:
    """One message whose text contains the searched text."""

    workspace: str
    session_id: str
    sequence: int
    role: str
    text: str


@dataclass(frozen=True)
class Answer:
    """What listing or search found, and where it came from."""

    rows: list
    source: str  # SOURCE_INDEX, or SOURCE_SCAN when the database could not be used
    fallback_reason: str | None = None  # why the database was not used


@dataclass
class SyncReport:
    """What one sync did to each transcript."""

    added: list = field(default_factory=list)  # (workspace, session_id)
    updated: list = field(default_factory=list)
    unchanged: list = field(default_factory=list)
    removed: list = field(default_factory=list)
    damaged: list = field(default_factory=list)  # indexed with a problem, no text
    rebuilt_because: str | None = None  # set when the database was discarded and built anew

    def __str__(self):
        lines = [f"{len(self.added)} added, {len(self.updated)} updated, {len(self.unchanged)} unchanged, "
                 f"{len(self.removed)} removed, {len(self.damaged)} damaged"]
        if self.rebuilt_because:
            lines.insert(0, f"index rebuilt from scratch: {self.rebuilt_because}")
        return "\n".join(lines)


class IndexUnusableError(RuntimeError):
    """The database cannot answer (missing, locked, corrupt, another schema version)."""


def _contains(text: str, needle: str, case_sensitive: bool) -> bool:
    return needle in text if case_sensitive else needle.lower() in text.lower()


def _fts_phrase(needle: str) -> str:
    """needle as one FTS5 string: with trigram tokens it matches rows containing it (any case)."""
    return '"' + needle.replace('"', '""') + '"'


# --------------------------------------------------------------------------- the index


class TranscriptIndex:
    """The read model over root/projects/*/*.jsonl, kept in one SQLite file."""

    def __init__(self, root, db_path=None, *, timeout: float = 0.2):
        self.root = Path(root)
        self.db_path = Path(db_path) if db_path is not None else self.root / DEFAULT_DB_NAME
        self.timeout = timeout  # seconds to wait for a lock before giving up (nothing hangs)

    # -- writing ----------------------------------------------------------------------

    def sync(self) -> SyncReport:
        """Bring the index in line with the JSONL files: read changed ones, skip unchanged ones.

        A transcript counts as unchanged while its size and mtime are. A corrupt database, or
        one written with another schema version, is discarded and rebuilt. Raises
        IndexLockedError when another process holds the write lock.
        """
        report = SyncReport()
        try:
            self._sync_into(report)
        except (sqlite3.DatabaseError, IndexUnusableError) as problem:
            if "locked" in str(problem):
                raise IndexLockedError(f"{self.db_path.name} is locked by another process ({problem})") from None
            self._discard()  # corrupt, or another schema version: the index is disposable
            report = SyncReport(rebuilt_because=str(problem) or type(problem).__name__)
            self._sync_into(report)
        return report

    def rename(self, workspace: str, session_id: str, title: str) -> None:
        """Give a session the user's own title. It lives only in this database.

        Raises IndexUnusableError when the database has another schema version (sync first).
        """
        if not isinstance(title, str) or not title.strip():
            raise ValueError("a title must be a non-blank string")
        connection = self._open_for_writing()
        try:
            with connection:
                connection.execute("INSERT OR REPLACE INTO renamed_titles VALUES (?, ?, ?)",
                                   (workspace, session_id, title.strip()))
        finally:
            connection.close()

    def _sync_into(self, report: SyncReport) -> None:
        connection = self._open_for_writing()
        try:
            with connection:  # one transaction: a reader sees the old index or the new one
                known = {(workspace, session): (size, mtime) for workspace, session, size, mtime
                         in connection.execute("SELECT workspace, session_id, size, mtime_ns FROM sessions")}
                found = find_transcripts(self.root)
                for workspace, session_id, path in found:
                    key = (workspace, session_id)
                    stat = path.stat()
                    if known.get(key) == (stat.st_size, stat.st_mtime_ns):
                        report.unchanged.append(key)
                        continue
                    digest = read_session(path, workspace)
                    self._store(connection, digest)
                    (report.updated if key in known else report.added).append(key)
                    if digest.row.problem:
                        report.damaged.append(key)
                for key in sorted(known.keys() - {(workspace, session) for workspace, session, _ in found}):
                    self._forget(connection, *key)
                    report.removed.append(key)
        finally:
            connection.close()

    @staticmethod
    def _store(connection, digest: SessionDigest) -> None:
        row = digest.row
        TranscriptIndex._forget(connection, row.workspace, row.session_id)
        connection.execute("INSERT INTO sessions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                           (row.workspace, row.session_id, row.title, row.event_count, row.last_sequence,
                            row.updated_at, row.size, row.mtime_ns, row.problem))
        connection.executemany(
            "INSERT INTO message_text (text, workspace, session_id, sequence, role) VALUES (?, ?, ?, ?, ?)",
            [(message.text, row.workspace, row.session_id, message.sequence, message.role)
             for message in digest.messages])

    @staticmethod
    def _forget(connection, workspace: str, session_id: str) -> None:
        """Delete a session's derived rows (its renamed title stays)."""
        connection.execute("DELETE FROM sessions WHERE workspace = ? AND session_id = ?", (workspace, session_id))
        connection.execute("DELETE FROM message_text WHERE workspace = ? AND session_id = ?",
                           (workspace, session_id))

    def _open_for_writing(self) -> sqlite3.Connection:
        """A connection to a database with this module's schema, creating it if needed.

        Raises IndexUnusableError for a database written with another schema version.
        """
        self.db_path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(self.db_path, timeout=self.timeout)
        try:
            version = connection.execute("PRAGMA user_version").fetchone()[0]
            if version == 0 and not connection.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
                connection.executescript(_SCHEMA)
            elif version != INDEX_SCHEMA_VERSION:
                raise IndexUnusableError(f"schema version {version}, this code writes {INDEX_SCHEMA_VERSION}")
        except BaseException:
            connection.close()
            raise
        return connection

    def _discard(self) -> None:
        """Delete the database file and its journals (everything in them but renamed titles is derived)."""
        for suffix in ("", "-journal", "-wal", "-shm"):
            Path(f"{self.db_path}{suffix}").unlink(missing_ok=True)

    # -- reading ----------------------------------------------------------------------

    def sessions(self) -> Answer:
        """Every session, sorted by workspace and id; from the index, else by scanning the JSONL."""
        try:
            rows = self._query_sessions()
        except IndexUnusableError as problem:
            return Answer([digest.row for digest in self._scan()], SOURCE_SCAN, str(problem))
        return Answer(rows, SOURCE_INDEX)

    def search(self, text: str, *, case_sensitive: bool = False) -> Answer:
        """Messages whose text contains text: full-text candidates, each confirmed by a substring check.

        Ignores case unless case_sensitive. Scans the JSONL when the index cannot answer.
        """
        if not isinstance(text, str) or not text.strip():
            raise ValueError("search text must be a non-blank string")
        try:
            candidates = self._query_candidates(text)
            source, reason = SOURCE_INDEX, None
        except IndexUnusableError as problem:
            candidates = [SearchHit(digest.row.workspace, digest.row.session_id, message.sequence, message.role,
                                    message.text) for digest in self._scan() for message in digest.messages]
            source, reason = SOURCE_SCAN, str(problem)
        hits = [hit for hit in candidates if _contains(hit.text, text, case_sensitive)]
        return Answer(hits, source, reason)

    def _scan(self) -> list[SessionDigest]:
        return [read_session(path, workspace) for workspace, _, path in find_transcripts(self.root)]

    def _query_sessions(self) -> list[SessionRow]:
        rows = self._read_query(
            "SELECT s.workspace, s.session_id, coalesce(r.title, s.title), s.event_count, s.last_sequence,"
            " s.updated_at, s.size, s.mtime_ns, s.problem FROM sessions AS s"
            " LEFT JOIN renamed_titles AS r USING (workspace, session_id)"
            " ORDER BY s.workspace, s.session_id")
        return [SessionRow(*row) for row in rows]

    def _query_candidates(self, text: str) -> list[SearchHit]:
        columns = "workspace, session_id, sequence, role, text"
        if len(text) >= 3:  # trigram tokens can look up anything of three characters or more
            rows = self._read_query(f"SELECT {columns} FROM message_text WHERE message_text MATCH ?",
                                    (_fts_phrase(text),))
        else:  # shorter: every message is a candidate
            rows = self._read_query(f"SELECT {columns} FROM message_text")
        return sorted((SearchHit(*row) for row in rows), key=lambda hit: (hit.workspace, hit.session_id, hit.sequence))

    def _read_query(self, sql: str, parameters=()) -> list[tuple]:
        """Run a query on a read-only connection; raise IndexUnusableError when the database cannot answer."""
        if not self.db_path.is_file():
            raise IndexUnusableError(f"no index database at {self.db_path.name} (run sync)")
        uri = self.db_path.resolve().as_uri() + "?mode=ro"  # read-only: a reader never creates or changes it
        try:
            connection = sqlite3.connect(uri, uri=True, timeout=self.timeout)
        except sqlite3.Error as error:
            raise IndexUnusableError(f"index database cannot be opened: {error}") from None
        try:
            version = connection.execute("PRAGMA user_version").fetchone()[0]
            if version != INDEX_SCHEMA_VERSION:
                raise IndexUnusableError(
                    f"index schema version {version}, this code reads {INDEX_SCHEMA_VERSION} (run sync)")
            return connection.execute(sql, parameters).fetchall()
        except sqlite3.Error as error:  # locked, corrupt, tables missing
            raise IndexUnusableError(f"index database unusable: {error}") from None
        finally:
            connection.close()


# --------------------------------------------------------------------------- command line


def format_sessions(answer: Answer) -> str:
    """The session list as aligned text, with a note when it came from a scan."""
    lines = [] if answer.source == SOURCE_INDEX else [f"(index not used: {answer.fallback_reason}; scanned the JSONL)"]
    for row in answer.rows:
        detail = f"DAMAGED: {row.problem}" if row.problem else f"{row.event_count} events, updated {row.updated_at}"
        lines.append(f"{row.workspace}/{row.session_id}  {row.title or '(untitled)'}  [{detail}]")
    return "\n".join(lines) if lines else "no sessions"


def format_hits(answer: Answer) -> str:
    """Search hits, one per line, with a note when they came from a scan."""
    lines = [] if answer.source == SOURCE_INDEX else [f"(index not used: {answer.fallback_reason}; scanned the JSONL)"]
    for hit in answer.rows:
        snippet = " ".join(hit.text.split())
        lines.append(f"{hit.workspace}/{hit.session_id} #{hit.sequence} {hit.role}: "
                     f"{snippet[:100]}{'...' if len(snippet) > 100 else ''}")
    return "\n".join(lines) if lines else "no hits"


def main(argv=None) -> int:
    """The index's command line; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m s09_jsonl_transcript.index",
                                     description="A disposable SQLite index over a root of JSONL transcripts.")
    parser.add_argument("--root", default=os.curdir, help="the folder holding projects/ (default: here)")
    parser.add_argument("--db", default=None, help=f"the database file (default: ROOT/{DEFAULT_DB_NAME})")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("sync", help="read new and changed transcripts into the index")
    commands.add_parser("sessions", help="list the sessions")
    search = commands.add_parser("search", help="find messages containing TEXT (any case)")
    search.add_argument("text")
    rename = commands.add_parser("rename", help="give a session your own title (kept only in the index)")
    rename.add_argument("workspace")
    rename.add_argument("session")
    rename.add_argument("title")
    args = parser.parse_args(argv)
    index = TranscriptIndex(args.root, args.db)
    try:
        if args.command == "sync":
            print(index.sync())
        elif args.command == "sessions":
            print(format_sessions(index.sessions()))
        elif args.command == "search":
            print(format_hits(index.search(args.text)))
        else:
            index.rename(args.workspace, args.session, args.title)
            print(f"renamed {args.workspace}/{args.session}")
    except (ValueError, RuntimeError, sqlite3.Error, OSError) as error:  # RuntimeError: the Index*Error
        print(f"index: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
