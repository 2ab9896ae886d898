# An honest answer with another algorithm: classify_damage scans the lines itself and returns a
# namedtuple where a tuple is asked for; the other answers write through other calls. Full marks.
# %% ex02-partial-tail
def make_partial_tail(path):
    """Append half a record."""
    Path(path).write_bytes(Path(path).read_bytes() + b'{"sequence": 13, "ty')
# %% ex02-bad-line
def make_bad_line(path, line_number):
    """Line line_number becomes text that is not JSON."""
    lines = Path(path).read_bytes().split(b"\n")
    lines[line_number - 1] = b"<not a record>"
    with open(path, "wb") as file:
        file.write(b"\n".join(lines))
# %% ex02-classify
from collections import namedtuple

Verdict = namedtuple("Verdict", "status line")


def classify_damage(path):
    """The lesson's reader decides; the verdict is a namedtuple."""
    try:
        state = JSONLTranscript(path).recover()
    except TranscriptCorruptionError as error:
        return Verdict(CORRUPT, error.line_number)
    return Verdict(PARTIAL_TAIL if state["ignored_partial_tail"] else CLEAN, None)
