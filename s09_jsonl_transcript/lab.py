"""The lab: the lesson's transcript made production-grade (issue 18 moves the machinery here).

`DurableTranscript` extends the lesson's `code.JSONLTranscript` with group commit
(`append_batch`), the hash chain (`integrity=True`), record size limits, block reads
from the end of the file, the I/O seam the power-loss lab records through, and the
kit's one child-process spawner. Everything built on the lesson (crash lab,
benchmarks, index, live sessions, turns, importers, grader) uses this module.
"""

from .code import (  # noqa: F401  (re-exported: the lab's public names)
    BATCH_END_FIELD,
    CHAIN_FIELD,
    AgentProcess,
    JSONLTranscript,
    OsFileIO,
    ScanResult,
    child_process_env,
    crash_agent_in_child,
    kill_child,
    simulate_agent_crash,
    start_child,
)


class DurableTranscript(JSONLTranscript):
    """The lesson's transcript with group commit, the hash chain, size limits and tail reads."""

    def __repr__(self):
        return f"DurableTranscript({self.path.name!r})"
