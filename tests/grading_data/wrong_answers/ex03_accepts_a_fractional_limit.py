# ex03: refuses a limit below 1 or not a number, but accepts a fraction such as 2.5.
# loses: ex03.6
# %% ex03-sharded
class ShardedTranscript:
    """One session's transcript in shard files of at most max_lines lines, indexed in SQLite."""

    def __init__(self, folder, session_id, *, max_lines=10_000, clock=None):
        # Refuse a max_lines that is not a whole number >= 1 with ValueError.
        if isinstance(max_lines, bool) or not isinstance(max_lines, (int, float)) or max_lines < 1:
            raise ValueError(f"max_lines must be a whole number >= 1, not {max_lines!r}")
        self.folder = Path(folder)
        self.session_id = session_id
        self.max_lines = max_lines
        self.clock = clock
        self.folder.mkdir(parents=True, exist_ok=True)
        self.index = sqlite3.connect(self.folder / INDEX_FILE)
        with self.index:
            self.index.execute(SHARD_TABLE)

    def shards(self):
        """This session's index rows in shard order: (shard, file, first_sequence, last_sequence, line_count)."""
        return self.index.execute(
            "SELECT shard, file, first_sequence, last_sequence, line_count FROM shards"
            " WHERE session_id = ? ORDER BY shard", (self.session_id,)).fetchall()

    def close(self):
        """Close the index."""
        self.index.close()

    def append(self, event):
        """Durably append one event; return its record numbered in the session's sequence."""
        rows = self.shards()
        shard, first = (rows[-1][0], rows[-1][2]) if rows else (1, 1)
        part = JSONLTranscript(self.folder / shard_file_name(self.session_id, shard), clock=self.clock)
        lines = part.count_lines()  # the file, not the index: it may hold a record the index missed
        if lines >= self.max_lines:
            shard, first = shard + 1, first + lines
            part = JSONLTranscript(self.folder / shard_file_name(self.session_id, shard), clock=self.clock)
        with part:
            record = part.append(event)
        with self.index:
            self.index.execute(
                "INSERT OR REPLACE INTO shards VALUES (?, ?, ?, ?, ?, ?)",
                (self.session_id, shard, part.path.name, first, first + record["sequence"] - 1, record["sequence"]))
        return self._in_session(record, first)

    def read_events(self):
        """Every event of the session, shard after shard, numbered 1, 2, 3, ... without a gap."""
        events = []
        for shard, name, first, last, line_count in self.shards():
            path = self.folder / name
            records = JSONLTranscript(path).read_events()
            if first != len(events) + 1 or len(records) < line_count:
                raise TranscriptCorruptionError(
                    path, None, None,
                    f"shard {shard} should hold sequences {first}..{last} right after sequence "
                    f"{len(events)}, but holds {len(records)} records")
            events.extend(self._in_session(record, first) for record in records)
        return events

    def _in_session(self, record, first):
        """A shard's record renumbered into the session, for a shard whose first record is sequence first."""
        sequence = first + record["sequence"] - 1
        return {**record, "sequence": sequence, "session_id": self.session_id,
                "event_id": event_id_for(self.session_id, sequence)}
