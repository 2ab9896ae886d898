"""A derived, disposable SQLite read model over a root of transcripts (stdlib sqlite3, no server).

The JSONL files are the evidence; the index only makes listing and search fast. Everything in
it is rebuilt from the files. The one thing the JSONL cannot rebuild, a title the user renamed,
lives in a second database, owned by the user, that no rebuild ever deletes. When the index is
missing, locked or corrupt, listing and search scan the JSONL files instead, so an index problem
never makes a session unreadable. Both databases use WAL journal mode (readers never wait for
the writer) with a busy timeout (a writer waits that long for another, then gives up).

    python -m s09_jsonl_transcript.production.index [--root DIR] [--db FILE] [--user-db FILE] sync
    python -m s09_jsonl_transcript.production.index [--root DIR] [--db FILE] [--user-db FILE] sessions
    python -m s09_jsonl_transcript.production.index [--root DIR] unfinished
    python -m s09_jsonl_transcript.production.index [--root DIR] [--db FILE] search TEXT [--limit N]
    python -m s09_jsonl_transcript.production.index [--root DIR] [--user-db FILE] rename WORKSPACE SESSION TITLE

Transcripts live where JSONLTranscript.for_session puts them: ROOT/projects/<workspace>/<session>.jsonl.
The index defaults to ROOT/index.sqlite3, the user's titles to ROOT/user-titles.sqlite3.

What format_sessions, format_hits and a SyncReport say is in the language in use (i18n.use; the
Chinese is in locale/zh/index.json); the reasons inside them (an exception's message, English in the
exception) are shown through i18n.library_text (locale/zh/library.json).
"""

from __future__ import annotations

import argparse
import itertools
import os
import sqlite3
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..code import TYPE_AI_TITLE, TYPE_MESSAGE, TranscriptCorruptionError
from ..lab import DurableTranscript
from ..text import i18n
from .turns import SessionStatus, materialize, session_status

INDEX_SCHEMA_VERSION = 2  # 2: renamed titles moved out of the index into the user's own database
DEFAULT_DB_NAME = "index.sqlite3"
DEFAULT_USER_DB_NAME = "user-titles.sqlite3"
SEARCHABLE_ROLES = ("user", "assistant")  # search covers what the user and the assistant said
DEFAULT_SEARCH_LIMIT = 50
CANDIDATES_PER_RESULT = 4  # full-text candidates fetched per result wanted, page by page (seed 003)
SOURCE_INDEX = "index"
SOURCE_SCAN = "jsonl scan"

tr = i18n.translator("index")

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
-- Trigram tokens: any piece of text of three characters or more can be looked up.
CREATE VIRTUAL TABLE message_text USING fts5(
    text, workspace UNINDEXED, session_id UNINDEXED, sequence UNINDEXED, role UNINDEXED,
    tokenize = 'trigram'
);
PRAGMA user_version = {INDEX_SCHEMA_VERSION};
"""

# The user's own data: never derived, never discarded by a rebuild (a separate file).
_USER_SCHEMA = """
CREATE TABLE IF NOT EXISTS renamed_titles (
    workspace  TEXT NOT NULL,
    session_id TEXT NOT NULL,
    title      TEXT NOT NULL,
    PRIMARY KEY (workspace, session_id)
);
"""


def _connect_for_writing(path: Path, timeout: float) -> sqlite3.Connection:
    """A connection in WAL journal mode with a busy timeout of timeout seconds."""
    path.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(path, timeout=timeout)
    try:
        connection.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
        connection.execute("PRAGMA journal_mode = WAL")
    except BaseException:
        connection.close()
        raise
    return connection


class UserTitles:
    """Titles the user gave sessions, in their own database: a rebuild of the index never touches it.

    A damaged file is reported, never deleted: what is in it exists nowhere else.
    """

    def __init__(self, path, *, timeout: float = 0.2):
        self.path = Path(path)
        self.timeout = timeout

    def set(self, workspace: str, session_id: str, title: str) -> None:
        """Store the user's title for a session (replacing an earlier one)."""
        self.set_many([(workspace, session_id, title)])

    def set_many(self, rows, *, keep_existing: bool = False) -> int:
        """Store (workspace, session_id, title) rows in one transaction; return how many were stored."""
        verb = "INSERT OR IGNORE" if keep_existing else "INSERT OR REPLACE"
        connection = _connect_for_writing(self.path, self.timeout)
        try:
            with connection:
                connection.executescript(_USER_SCHEMA)
                return connection.executemany(f"{verb} INTO renamed_titles VALUES (?, ?, ?)", list(rows)).rowcount
        finally:
            connection.close()

    def all(self) -> dict:
        """(workspace, session_id) -> title; {} when there is no file yet. Raises sqlite3.Error on damage."""
        if not self.path.is_file():
            return {}
        connection = sqlite3.connect(self.path.resolve().as_uri() + "?mode=ro", uri=True, timeout=self.timeout)
        try:
            tables = connection.execute("SELECT name FROM sqlite_master WHERE name = 'renamed_titles'").fetchall()
            rows = connection.execute("SELECT workspace, session_id, title FROM renamed_titles").fetchall() \
                if tables else []
        finally:
            connection.close()
        return {(workspace, session): title for workspace, session, title in rows}


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
    """Read one transcript (validated, as replay reads it) into its session row and the texts to search.

    Only what the user and the assistant said is searchable (SEARCHABLE_ROLES).

    A damaged transcript gives a row that names the damage and no messages: the index never
    serves text from a file the reader refuses. Rewind markers are applied first
    (turns.materialize): a rewound message is neither counted nor found; last_sequence is the file's.
    """
    path = Path(path)
    stat = path.stat()  # before reading: a file that grows meanwhile looks changed at the next sync
    transcript = DurableTranscript(path)
    try:
        raw = transcript.read_events()
    except TranscriptCorruptionError as error:
        row = SessionRow(workspace, transcript.session_id, None, 0, 0, None, stat.st_size, stat.st_mtime_ns,
                         problem=f"line {error.line_number}: {error.reason}")
        return SessionDigest(row, [])
    events = materialize(raw)
    titles = [event["title"] for event in events if event["type"] == TYPE_AI_TITLE]
    messages = [MessageText(event["sequence"], event["role"], text) for event in events
                if event.get("role") in SEARCHABLE_ROLES and (text := message_text(event)) is not None]
    last = raw[-1] if raw else {}
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


@dataclass(frozen=True)
class UnfinishedSession:
    """A session whose transcript has a turn that started and never ended (or that cannot be read)."""

    workspace: str
    session_id: str
    path: Path
    status: SessionStatus | None  # None when the transcript is damaged
    problem: str | None = None


def unfinished_sessions(root) -> list[UnfinishedSession]:
    """Every session under root/projects with an unfinished turn: step 1 of the design's recovery flow.

    A harness starting up reads each transcript (rewind markers applied) and lists those whose
    state machine has an open turn; a damaged transcript is listed too, with its problem, since
    nobody can tell whether its last turn ended. Reads the JSONL, never the index: the index may be
    behind the files.
    """
    found = []
    for workspace, session_id, path in find_transcripts(root):
        try:
            status = session_status(DurableTranscript(path).read_events())
        except TranscriptCorruptionError as error:
            found.append(UnfinishedSession(workspace, session_id, path, None,
                                           f"line {error.line_number}: {error.reason}"))
            continue
        if status.open_turn is not None:
            found.append(UnfinishedSession(workspace, session_id, path, status))
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
    more: bool = False  # search only: more hits exist than the limit let through
    titles_problem: str | None = None  # listing only: why the user's titles could not be read


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
        lines = [tr("{added} added, {updated} updated, {unchanged} unchanged, {removed} removed, {damaged} damaged",
                    added=len(self.added), updated=len(self.updated), unchanged=len(self.unchanged),
                    removed=len(self.removed), damaged=len(self.damaged))]
        if self.rebuilt_because:
            lines.insert(0, tr("index rebuilt from scratch: {reason}", reason=i18n.library_text(self.rebuilt_because)))
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

    def __init__(self, root, db_path=None, *, user_db_path=None, timeout: float = 0.2):
        self.root = Path(root)
        self.db_path = Path(db_path) if db_path is not None else self.root / DEFAULT_DB_NAME
        self.timeout = timeout  # seconds to wait for a lock before giving up (nothing hangs)
        self.user_titles = UserTitles(user_db_path if user_db_path is not None else self.root / DEFAULT_USER_DB_NAME,
                                      timeout=timeout)

    # -- writing ----------------------------------------------------------------------

    def sync(self) -> SyncReport:
        """Bring the index in line with the JSONL files: read changed ones, skip unchanged ones.

        A transcript counts as unchanged while its size and mtime are. A corrupt database, or
        one written with another schema version, is discarded and rebuilt (titles a schema-1
        index still held are first moved to the user's database). The user's database is never
        touched. Raises IndexLockedError when another process holds the write lock.
        """
        report = SyncReport()
        try:
            self._sync_into(report)
        except (sqlite3.DatabaseError, IndexUnusableError) as problem:
            if "locked" in str(problem):
                raise IndexLockedError(f"{self.db_path.name} is locked by another process ({problem})") from None
            self._rescue_titles()
            self._discard()  # corrupt, or another schema version: the index is disposable
            report = SyncReport(rebuilt_because=str(problem) or type(problem).__name__)
            self._sync_into(report)
        return report

    def rename(self, workspace: str, session_id: str, title: str) -> None:
        """Give a session the user's own title. It lives only in the user's database (user_titles)."""
        if not isinstance(title, str) or not title.strip():
            raise ValueError("a title must be a non-blank string")
        self.user_titles.set(workspace, session_id, title.strip())

    def _rescue_titles(self) -> int:
        """Copy titles out of an index written before they moved (schema 1); 0 when there is none to read."""
        if not self.db_path.is_file():
            return 0
        try:
            connection = sqlite3.connect(self.db_path.resolve().as_uri() + "?mode=ro", uri=True, timeout=self.timeout)
            try:
                rows = connection.execute("SELECT workspace, session_id, title FROM renamed_titles").fetchall()
            finally:
                connection.close()
        except sqlite3.Error:
            return 0  # no such table (this schema) or unreadable: nothing a rebuild could lose
        return self.user_titles.set_many(rows, keep_existing=True)

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
        """Delete a session's derived rows (its renamed title is elsewhere)."""
        connection.execute("DELETE FROM sessions WHERE workspace = ? AND session_id = ?", (workspace, session_id))
        connection.execute("DELETE FROM message_text WHERE workspace = ? AND session_id = ?",
                           (workspace, session_id))

    def _open_for_writing(self) -> sqlite3.Connection:
        """A connection to a database with this module's schema, creating it if needed.

        Raises IndexUnusableError for a database written with another schema version.
        """
        connection = _connect_for_writing(self.db_path, self.timeout)
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
        """Delete the index file and its journals: everything in them is derived (titles are elsewhere)."""
        for suffix in ("", "-journal", "-wal", "-shm"):
            Path(f"{self.db_path}{suffix}").unlink(missing_ok=True)

    # -- reading ----------------------------------------------------------------------

    def sessions(self) -> Answer:
        """Every session, sorted by workspace and id, with the user's titles where given.

        From the index, else by scanning the JSONL; a damaged user database is reported in
        titles_problem (the sessions are still listed, with their derived titles).
        """
        try:
            rows, source, reason = self._query_sessions(), SOURCE_INDEX, None
        except IndexUnusableError as problem:
            rows, source, reason = [digest.row for digest in self._scan()], SOURCE_SCAN, str(problem)
        try:
            titles, titles_problem = self.user_titles.all(), None
        except sqlite3.Error as error:
            titles, titles_problem = {}, f"{self.user_titles.path.name} unreadable: {error}"
        rows = [replace(row, title=titles.get((row.workspace, row.session_id), row.title)) for row in rows]
        return Answer(rows, source, reason, titles_problem=titles_problem)

    def search(self, text: str, *, case_sensitive: bool = False, limit: int = DEFAULT_SEARCH_LIMIT) -> Answer:
        """User and assistant messages whose text contains text, at most limit of them, in session order.

        Full-text candidates are fetched limit * 4 at a time and each is confirmed by a substring
        check, so the limit never changes which messages match. Ignores case unless
        case_sensitive. Scans the JSONL when the index cannot answer. answer.more says whether
        the limit cut the list.
        """
        if not isinstance(text, str) or not text.strip():
            raise ValueError("search text must be a non-blank string")
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise ValueError(f"limit must be a whole number >= 1, not {limit!r}")
        try:
            hits = self._query_hits(text, case_sensitive, limit + 1)
            source, reason = SOURCE_INDEX, None
        except IndexUnusableError as problem:
            candidates = (SearchHit(digest.row.workspace, digest.row.session_id, message.sequence, message.role,
                                    message.text) for digest in self._scan() for message in digest.messages)
            hits = list(itertools.islice((hit for hit in candidates if _contains(hit.text, text, case_sensitive)),
                                         limit + 1))
            source, reason = SOURCE_SCAN, str(problem)
        return Answer(hits[:limit], source, reason, more=len(hits) > limit)

    def _scan(self) -> list[SessionDigest]:
        return [read_session(path, workspace) for workspace, _, path in find_transcripts(self.root)]

    def _query_sessions(self) -> list[SessionRow]:
        rows = self._read_query(
            "SELECT workspace, session_id, title, event_count, last_sequence, updated_at, size, mtime_ns, problem"
            " FROM sessions ORDER BY workspace, session_id")
        return [SessionRow(*row) for row in rows]

    def _query_hits(self, text: str, case_sensitive: bool, wanted: int) -> list[SearchHit]:
        """Up to wanted confirmed hits, asking the full-text table for CANDIDATES_PER_RESULT times as many per page."""
        columns = "workspace, session_id, sequence, role, text"
        order = " ORDER BY workspace, session_id, sequence LIMIT ? OFFSET ?"
        if len(text) >= 3:  # trigram tokens can look up anything of three characters or more
            sql, parameters = f"SELECT {columns} FROM message_text WHERE message_text MATCH ?" + order, (
                _fts_phrase(text),)
        else:  # shorter: every message is a candidate
            sql, parameters = f"SELECT {columns} FROM message_text" + order, ()
        hits, page, offset = [], wanted * CANDIDATES_PER_RESULT, 0
        while len(hits) < wanted:
            rows = self._read_query(sql, (*parameters, page, offset))
            hits += [hit for hit in (SearchHit(*row) for row in rows) if _contains(hit.text, text, case_sensitive)]
            if len(rows) < page:
                break
            offset += page
        return hits[:wanted]

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
    lines = [] if answer.source == SOURCE_INDEX else [_not_used(answer)]
    if answer.titles_problem:
        lines.append(tr("(your renamed titles are not shown: {problem})", problem=answer.titles_problem))
    for row in answer.rows:
        detail = (tr("DAMAGED: {problem}", problem=row.problem) if row.problem else
                  tr("{count} events, updated {at}", count=row.event_count, at=row.updated_at))
        lines.append(f"{row.workspace}/{row.session_id}  {row.title or tr('(untitled)')}  [{detail}]")
    return "\n".join(lines) if lines else tr("no sessions")


def _not_used(answer: Answer) -> str:
    return tr("(index not used: {reason}; scanned the JSONL)", reason=i18n.library_text(answer.fallback_reason))


def format_hits(answer: Answer) -> str:
    """Search hits, one per line, with a note when they came from a scan."""
    lines = [] if answer.source == SOURCE_INDEX else [_not_used(answer)]
    for hit in answer.rows:
        snippet = " ".join(hit.text.split())
        lines.append(f"{hit.workspace}/{hit.session_id} #{hit.sequence} {hit.role}: "
                     f"{snippet[:100]}{'...' if len(snippet) > 100 else ''}")
    if answer.more:
        lines.append(tr("(more hits than the limit of {limit})", limit=len(answer.rows)))
    return "\n".join(lines) if lines else tr("no hits")


def format_unfinished(found: list[UnfinishedSession]) -> str:
    """The sessions with an unfinished turn, one per line, with what a fresh process must do."""
    lines = []
    for session in found:
        detail = (tr("DAMAGED: {problem}", problem=session.problem) if session.status is None else
                  tr("turn {turn} never ended ({state}): {decision}", turn=session.status.open_turn,
                     state=session.status.state, decision=session.status.decision))
        lines.append(f"{session.workspace}/{session.session_id}  [{detail}]")
    return "\n".join(lines) if lines else tr("no session has an unfinished turn")


def main(argv=None) -> int:
    """The index's command line; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m s09_jsonl_transcript.production.index",
                                     description="A disposable SQLite index over a root of JSONL transcripts.")
    parser.add_argument("--root", default=os.curdir, help="the folder holding projects/ (default: here)")
    parser.add_argument("--db", default=None, help=f"the index database (default: ROOT/{DEFAULT_DB_NAME})")
    parser.add_argument("--user-db", default=None,
                        help=f"the database of your renamed titles (default: ROOT/{DEFAULT_USER_DB_NAME})")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("sync", help="read new and changed transcripts into the index")
    commands.add_parser("sessions", help="list the sessions")
    commands.add_parser("unfinished", help="list the sessions with a turn that never ended (read from the JSONL)")
    search = commands.add_parser("search", help="find user and assistant messages containing TEXT (any case)")
    search.add_argument("text")
    search.add_argument("--limit", type=int, default=DEFAULT_SEARCH_LIMIT, help="at most this many hits")
    rename = commands.add_parser("rename", help="give a session your own title (kept in the user database)")
    rename.add_argument("workspace")
    rename.add_argument("session")
    rename.add_argument("title")
    args = parser.parse_args(argv)
    index = TranscriptIndex(args.root, args.db, user_db_path=args.user_db)
    try:
        if args.command == "sync":
            print(index.sync())
        elif args.command == "sessions":
            print(format_sessions(index.sessions()))
        elif args.command == "unfinished":
            print(format_unfinished(unfinished_sessions(args.root)))
        elif args.command == "search":
            print(format_hits(index.search(args.text, limit=args.limit)))
        else:
            index.rename(args.workspace, args.session, args.title)
            print(f"renamed {args.workspace}/{args.session}")
    except (ValueError, RuntimeError, sqlite3.Error, OSError) as error:  # RuntimeError: the Index*Error
        print(f"index: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
