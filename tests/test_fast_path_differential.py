"""The fast read path (fast.fast_recover, behind DurableTranscript.recover) against the careful path.

The careful path (fast_paths = False) defines every verdict. On every input, recover() with the
fast path gives the same answer (the same state, or the same TranscriptCorruptionError, line,
offset and reason), and whenever fast_recover itself answers, its answer is the careful one.
States are compared by repr, so 1 and 1.0, or the order of keys, count as different.

Inputs: cuts at every byte, bit flips, duplicate and escaped keys, big integers, deep nesting,
lone surrogates, torn batches, chains, newer schemas, whitespace, spliced at random by hypothesis.
Each decoder the machine has is tested (msgspec is optional: without it the stdlib runs alone).
The last tests break the fast path on purpose and check that this file's check notices.
"""

import json
import sys
import tempfile
from pathlib import Path

import pytest
from broken_guards import broken
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from s09_jsonl_transcript.code import (
    ENCODER,
    EVENT_TYPES,
    TranscriptCorruptionError,
    TranscriptValidationError,
    event_id_for,
    ticking_clock,
)
from s09_jsonl_transcript.lab import DurableTranscript, fast

AVAILABLE = [name for name in fast.DECODERS if name == "stdlib" or fast.msgspec is not None]
decoders = pytest.mark.parametrize("decoder", [
    pytest.param(name, marks=() if name in AVAILABLE else pytest.mark.skip(reason="msgspec is not installed"))
    for name in fast.DECODERS])
checks = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NAME = "diff.jsonl"
SESSION = "diff"
WINDOWS = (0, 2, 1000)


def outcome(read):
    """What a read returned or raised, comparable across the two paths."""
    try:
        return ("state", repr(read()))
    except TranscriptCorruptionError as error:
        return ("corrupt", error.line_number, error.byte_offset, error.reason)
    except Exception as error:  # noqa: BLE001 - whatever it is, both paths must raise the same
        return ("error", type(error).__name__, str(error))


def disagreements(data: bytes, decoder: str, *, integrity: bool = False) -> list[str]:
    """Where the fast path's answers for a file holding data differ from the careful path's."""
    found = []
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / NAME
        path.write_bytes(data)
        careful = DurableTranscript(path, integrity=integrity)
        careful.fast_paths = False
        quick = DurableTranscript(path, integrity=integrity)
        for window in WINDOWS:
            expected = outcome(lambda: careful.recover(window))
            with fast.decoding_with(decoder):
                got = outcome(lambda: quick.recover(window))
            if got != expected:
                found.append(f"recover({window}): fast {got!r:.300} careful {expected!r:.300}")
            direct = fast.fast_recover(path, SESSION, window, quick.max_record_bytes, decoder)
            if direct is not None and ("state", repr(direct)) != expected:
                found.append(f"fast_recover({window}) answered {direct!r:.300}; careful {expected!r:.300}")
    return found


def answers(data: bytes, decoder: str) -> bool:
    """Whether the fast path itself answers for data (rather than handing over)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / NAME
        path.write_bytes(data)
        return fast.fast_recover(path, SESSION, 1000, DurableTranscript(path).max_record_bytes, decoder) is not None


# --------------------------------------------------------------------------- files and lines


def written(batches, *, integrity: bool = False) -> bytes:
    """The bytes the lab writes for batches (a list of lists of events; a list of one is one append)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / NAME
        with DurableTranscript(path, clock=ticking_clock(), integrity=integrity) as writer:
            for batch in batches:
                writer.append(batch[0]) if len(batch) == 1 else writer.append_batch(batch)
        return path.read_bytes()


SESSION_EVENTS = [
    {"type": "message", "role": "user", "content": "fix add() 中文 \u2028 \"quoted\" \\ back"},
    {"type": "ai-title", "title": "Fix add()"},
    {"type": "reasoning", "content": "read calc.py first"},
    {"type": "function_call", "callId": "c1", "name": "read_file", "arguments": {"path": "calc.py", "n": 10**30}},
    {"type": "function_call_result", "callId": "c1", "output": "def add(a, b): return a - b"},
    {"type": "file-history-snapshot", "files": {"calc.py": "x" * 40}},
    {"type": "function_call", "callId": "c2", "name": "run_tests", "arguments": {"floats": [1e16, 1e-7, -0.0, 2.5]}},
    {"type": "message", "role": "assistant", "content": [{"type": "text", "text": "done"}]},
    {"type": "custom-kind", "anything": None},
]
PLAIN = written([[event] for event in SESSION_EVENTS])
BATCHED = written([SESSION_EVENTS[:3], [SESSION_EVENTS[3]], SESSION_EVENTS[4:8], [SESSION_EVENTS[8]]])
CHAINED = written([SESSION_EVENTS[:2], [SESSION_EVENTS[2]]], integrity=True)


def record_text(sequence: int, **fields) -> str:
    """One record's JSON text as the lab writes it: the envelope first, then fields."""
    record = {"schema_version": 1, "sequence": sequence, "event_id": event_id_for(SESSION, sequence),
              "session_id": SESSION, "recorded_at": "2026-01-05T09:00:00+00:00", **fields}
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


# Each twist turns record n's text into the bytes of one line (without its newline).
TWISTS = {
    "none": lambda n: record_text(n, type="reasoning", content="ok"),
    "later duplicate sequence": lambda n: record_text(n, type="reasoning", content="x")[:-1] + f',"sequence":{n + 1}}}',
    "escaped duplicate sequence, same value":
        lambda n: record_text(n, type="reasoning")[:-1] + f',"\\u0073equence":{n}}}',
    "escaped duplicate session": lambda n: record_text(n, type="reasoning")[:-1] + ',"\\u0073ession_id":"other"}',
    "escaped duplicate type": lambda n: record_text(n, type="reasoning")[:-1] + ',"\\u0074ype":"message"}',
    "duplicate type that needs fields": lambda n: record_text(n, type="message", role="user", content="a")[:-1]
    + ',"type":"function_call"}',
    "big sequence": lambda n: record_text(n, type="reasoning").replace(f'"sequence":{n},', f'"sequence":{2**70},'),
    "sequence as a float": lambda n: record_text(n, type="reasoning").replace(f'"sequence":{n},', f'"sequence":{n}.0,'),
    "big integer content": lambda n: record_text(n, type="reasoning")[:-1] + f',"n":{10**40}}}',
    "integer past the digit limit": lambda n: record_text(n, type="reasoning")[:-1] + ',"n":' + "7" * 4301 + "}",
    "digits past the limit in a string": lambda n: record_text(n, type="reasoning", n="7" * 4301),
    "not UTF-8 in a field": lambda n: record_text(n, type="reasoning", text="a \udcff b"),  # raw: bytes ED B3 BF
    "not UTF-8 in a message's content": lambda n: record_text(n, type="message", role="user", content="\ud800"),
    "schema_version true":
        lambda n: record_text(n, type="reasoning").replace('"schema_version":1', '"schema_version":true'),
    "newer schema": lambda n: record_text(n, type="whatever").replace('"schema_version":1', '"schema_version":2'),
    "chain field": lambda n: record_text(n, type="reasoning", chain="0" * 64),
    "batch start": lambda n: record_text(n, type="reasoning", batch_end=n + 1),
    "batch end": lambda n: record_text(n, type="reasoning", batch_end=n),
    "batch_end behind": lambda n: record_text(n, type="reasoning", batch_end=n - 1),
    "batch_end null": lambda n: record_text(n, type="reasoning", batch_end=None),
    "lone surrogate, escaped": lambda n: record_text(n, type="reasoning")[:-1] + ',"text":"\\ud800 and \\udc00"}',
    "surrogate pair, escaped": lambda n: record_text(n, type="reasoning")[:-1] + ',"text":"\\ud83d\\ude00"}',
    "NaN": lambda n: record_text(n, type="reasoning")[:-1] + ',"x":NaN}',
    "1e400": lambda n: record_text(n, type="reasoning")[:-1] + ',"x":1e400}',
    "space in front": lambda n: " " + record_text(n, type="reasoning"),
    "carriage return after": lambda n: record_text(n, type="reasoning") + "\r",
    "deep nesting 150": lambda n: record_text(n, type="reasoning")[:-1] + f',"x":{nested(150)}}}',
    "deep nesting 3000": lambda n: record_text(n, type="reasoning")[:-1] + f',"x":{nested(3000)}}}',
    "message without role": lambda n: record_text(n, type="message", content="hi"),
    "message without content": lambda n: record_text(n, type="message", role="user"),
    "message with null content": lambda n: record_text(n, type="message", role="user", content=None),
    "role a number, then a string": lambda n: record_text(n, type="message", role=5, content="a")[:-1]
    + ',"role":"user"}',
    "call without name": lambda n: record_text(n, type="function_call", callId="c"),
    "result with a number for callId": lambda n: record_text(n, type="function_call_result", callId=5),
    "title": lambda n: record_text(n, type="ai-title", title=f"title {n}"),
    "title not a string": lambda n: record_text(n, type="ai-title", title=["t"]),
    "wrong session":
        lambda n: record_text(n, type="reasoning").replace(f'"session_id":"{SESSION}"', '"session_id":"x"'),
    "wrong event id": lambda n: record_text(n, type="reasoning").replace(f'{SESSION}:{n}"', f'{SESSION}:0{n}"'),
    "no envelope": lambda n: '{"type":"message","role":"user","content":"hi"}',
    "not an object": lambda n: "[1,2]",
    "empty line": lambda n: "",
    "a value spanning two lines": lambda n: record_text(n, type="reasoning")[:-1] + ',\n"x":1}',
    "two values on a line": lambda n: record_text(n, type="reasoning") + "{}",
}


def encoded(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


twist_names = st.sampled_from(sorted(TWISTS))
mostly_fine = st.one_of(st.just("none"), st.just("none"), st.just("title"), twist_names)


@st.composite
def spliced_files(draw):
    """Lines of records 1, 2, 3, ..., each twisted or not, with an end that may be cut."""
    names = draw(st.lists(mostly_fine, min_size=0, max_size=8))
    lines = [encoded(TWISTS[name](number)) + b"\n" for number, name in enumerate(names, start=1)]
    data = b"".join(lines)
    end = draw(st.sampled_from(["whole", "lost newline", "cut", "torn record"]))
    if end == "lost newline" and data:
        data = data[:-1]
    elif end == "cut" and data:
        data = data[:draw(st.integers(0, len(data)))]
    elif end == "torn record":
        data += encoded(TWISTS["none"](len(lines) + 1))[:draw(st.integers(1, 40))]
    return data


# --------------------------------------------------------------------------- the fast path answers at all


@decoders
@pytest.mark.parametrize("data", [PLAIN, BATCHED], ids=["appends", "batches"])
def test_the_fast_path_answers_for_files_the_lab_writes(decoder, data):
    assert answers(data, decoder)  # else every test below would only test the careful path
    assert disagreements(data, decoder) == []


@decoders
def test_the_fast_path_hands_a_chained_file_to_the_careful_path(decoder):
    assert not answers(CHAINED, decoder)
    assert disagreements(CHAINED, decoder) == []
    assert disagreements(CHAINED, decoder, integrity=True) == []


def test_the_one_fold_checks_and_folds_the_lessons_table():
    assert fast.TYPES_FOLDED == EVENT_TYPES and fast.table_matches()


@decoders
def test_an_empty_file_and_a_missing_file(decoder, tmp_path):
    assert disagreements(b"", decoder) == []
    missing = DurableTranscript(tmp_path / "missing.jsonl")
    careful = DurableTranscript(tmp_path / "missing.jsonl")
    careful.fast_paths = False
    with fast.decoding_with(decoder):
        assert outcome(missing.recover) == outcome(careful.recover)


# --------------------------------------------------------------------------- damage


@decoders
@pytest.mark.parametrize("data", [PLAIN, BATCHED, CHAINED], ids=["appends", "batches", "chained"])
def test_a_cut_at_every_byte(decoder, data):
    for length in range(len(data) + 1):
        assert disagreements(data[:length], decoder) == [], length


@decoders
@checks
@given(data=st.sampled_from([PLAIN, BATCHED, CHAINED]), flips=st.lists(st.tuples(st.integers(0), st.integers(0, 7)),
                                                                       min_size=1, max_size=3))
def test_bit_flips(decoder, data, flips):
    damaged = bytearray(data)
    for position, bit in flips:
        damaged[position % len(damaged)] ^= 1 << bit
    assert disagreements(bytes(damaged), decoder) == []


@decoders
@pytest.mark.parametrize("twist", sorted(TWISTS))
@pytest.mark.parametrize("place", ["first", "middle", "last"])
def test_each_twist_in_each_place(decoder, twist, place):
    names = {"first": [twist, "none", "none"], "middle": ["none", twist, "title"], "last": ["none", "title", twist]}
    data = b"".join(encoded(TWISTS[name](number)) + b"\n" for number, name in enumerate(names[place], start=1))
    assert disagreements(data, decoder) == []


@decoders
@checks
@given(data=spliced_files())
def test_spliced_files(decoder, data):
    assert disagreements(data, decoder) == []


@decoders
def test_torn_batches(decoder):
    lines = BATCHED.split(b"\n")[:-1]  # records 1-3, 4, 5-8, 9
    for kept in range(len(lines) + 1):
        assert disagreements(b"".join(line + b"\n" for line in lines[:kept]), decoder) == [], kept
    cut_by_a_single = lines[:5] + lines[8:]  # the batch 5-8 stops at 6; record 9 follows with sequence 9
    assert disagreements(b"".join(line + b"\n" for line in cut_by_a_single), decoder) == []


def careful_nesting_limit() -> int:
    """The deepest nesting of one record's field that the careful path still reads, found by bisection."""
    def readable(depth):
        data = encoded(TWISTS["none"](1)[:-1] + f',"x":{nested(depth)}}}') + b"\n"
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / NAME
            path.write_bytes(data)
            careful = DurableTranscript(path)
            careful.fast_paths = False
            return outcome(careful.recover)[0] == "state"
    low, high = 1, 5000
    while low + 1 < high:
        middle = (low + high) // 2
        low, high = (middle, high) if readable(middle) else (low, middle)
    return low


@decoders
def test_nesting_at_the_careful_paths_limit(decoder):
    limit = careful_nesting_limit()
    for depth in range(limit - 20, limit + 4):
        data = encoded(TWISTS["none"](1)[:-1] + f',"x":{nested(depth)}}}') + b"\n"
        assert disagreements(data, decoder) == [], depth


@decoders
def test_a_line_at_the_record_limit(decoder, tmp_path):
    data = encoded(record_text(1, type="reasoning", content="y" * 300)) + b"\n"
    for limit in (len(data) - 2, len(data) - 1, len(data), len(data) + 1):
        path = tmp_path / NAME
        path.write_bytes(data)
        careful = DurableTranscript(path, max_record_bytes=limit)
        careful.fast_paths = False
        with fast.decoding_with(decoder):
            assert outcome(DurableTranscript(path, max_record_bytes=limit).recover) == outcome(careful.recover)


@decoders
def test_lines_across_block_boundaries(decoder):
    events = [{"type": "message", "role": "user", "content": "z" * size} for size in (65_000, 10, 70_000, 5)]
    data = written([[event] for event in events])
    assert answers(data, decoder)
    for cut in (65_536, 65_536 * 2, 65_536 * 2 + 1, len(data) - 1):
        assert disagreements(data[:cut], decoder) == [], cut


# A value spanning lines 1 and 2, and two values on line 3: as many values as lines, so only
# the shape of each line (fast._line_starts) tells a stream decoder's values from the lines'.
SPAN_AND_PAIR = encoded("\n".join([
    record_text(1, type="reasoning")[:-1] + ',"x":[', "1]}",
    record_text(2, type="reasoning") + record_text(3, type="reasoning"), record_text(4, type="reasoning"), ""]))


@decoders
def test_a_value_across_two_lines_beside_two_values_on_one(decoder):
    assert disagreements(SPAN_AND_PAIR, decoder) == []


# --------------------------------------------------------------------------- a test of the test


def blind_to_the_chain(decoder: str):
    """The decoder's loop with its chain check looking for another field, so that it never finds the chain."""
    if decoder == "stdlib":
        return broken("CHAIN_FIELD", "not-the-chain")

    class ChainBlind(fast.Envelope):  # msgspec's loop reads the chain through Envelope's field
        chain: fast.msgspec.Raw | fast.msgspec.UnsetType = fast.msgspec.field(default=fast.UNSET, name="not-the-chain")
    return broken("_ENVELOPES", fast.msgspec.json.Decoder(ChainBlind))


@pytest.mark.parametrize("decoder", AVAILABLE)
def test_a_fast_path_that_skips_the_chain_check_is_caught(decoder):
    damaged = CHAINED.replace(b"Fix add()", b"Fix sub()")
    assert disagreements(damaged, decoder) == []
    with blind_to_the_chain(decoder):
        assert disagreements(damaged, decoder)


def blind_to_newer_schemas(decoder: str):
    """The decoder's loop taking schema 2 for its own: the stdlib's compares with another number,
    msgspec's Envelope takes any integer as the schema_version."""
    if decoder == "stdlib":
        return broken("SCHEMA_VERSION", 2)

    class AnySchema(fast.Envelope):
        schema_version: int
    return broken("_ENVELOPES", fast.msgspec.json.Decoder(AnySchema))


@pytest.mark.parametrize("decoder", AVAILABLE)
def test_a_fast_path_that_takes_newer_schemas_for_its_own_is_caught(decoder):
    data = b"".join(encoded(TWISTS[name](n)) + b"\n" for n, name in enumerate(["none", "title"], start=1))
    newer = data.replace(b'"schema_version":1', b'"schema_version":2')
    assert disagreements(newer, decoder) == []
    with blind_to_newer_schemas(decoder):
        assert disagreements(newer, decoder)


@pytest.mark.parametrize("decoder", AVAILABLE)
def test_a_fast_path_that_forgets_a_type_check_is_caught(decoder):
    with broken("TYPE_FUNCTION_CALL", "no-such-type"):  # function_call records lose their checks and fold
        assert disagreements(PLAIN, decoder)


@pytest.mark.parametrize(("guard", "twist"), [("_is_utf8", "not UTF-8 in a field"),
                                            ("_may_hold_a_long_integer", "integer past the digit limit")])
def test_a_msgspec_loop_that_trusts_what_it_skips_is_caught(guard, twist):
    if fast.msgspec is None:
        pytest.skip("msgspec is not installed")
    data = b"".join(encoded(TWISTS[name](n)) + b"\n" for n, name in enumerate(["none", twist], start=1))
    assert disagreements(data, "msgspec") == []
    with broken(guard, lambda chunk, *rest: guard == "_is_utf8"):  # each guard answers "nothing to see"
        assert disagreements(data, "msgspec")


def every_line_start(chunk: bytes) -> tuple[list[int], bool]:
    """fast._line_starts without its check of each line's shape: only the newlines count (and every
    block is looked into for long integers)."""
    return [0] + [position + 1 for position, byte in enumerate(chunk) if byte == ord("\n")], True


def test_a_fast_path_that_only_counts_lines_is_caught():
    if fast.msgspec is None:
        pytest.skip("msgspec is not installed")
    with broken("_line_starts", every_line_start):
        assert disagreements(SPAN_AND_PAIR, "msgspec")


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="from 3.12 on, C nesting is not counted against the stack")
@pytest.mark.parametrize("decoder", AVAILABLE)
def test_a_fast_path_that_decodes_higher_on_the_stack_is_caught(decoder):
    limit = careful_nesting_limit()
    with broken("FRAMES_BELOW_RECOVER", 0):  # no deeper than fast_recover itself: above the careful decoder
        found = []
        for depth in range(limit - 2, limit + 12):
            found += disagreements(encoded(TWISTS["none"](1)[:-1] + f',"x":{nested(depth)}}}') + b"\n", decoder)
    assert found


# --------------------------------------------------------------------------- the write path's encoders

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.integers(min_value=2**63, max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=12)


@decoders
@checks
@given(payload=st.dictionaries(st.text(max_size=8), json_values, max_size=5))
def test_each_encoder_writes_the_lessons_bytes(decoder, payload):
    record = {"schema_version": 1, "sequence": 1, **payload}
    try:
        expected = ENCODER.encode(record).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate in st.text()
        with pytest.raises(TranscriptValidationError, match="lone surrogates"):
            fast.encode_record(record, decoder)
        return
    assert fast.encode_record(record, decoder) == expected


@decoders
def test_an_integer_past_the_digit_limit_fails_as_the_lesson_fails(decoder):
    record = {"n": 7 * 10**4301}
    with pytest.raises(ValueError) as lesson:
        ENCODER.encode(record)
    with pytest.raises(ValueError) as ours:
        fast.encode_record(record, decoder)
    assert type(ours.value) is type(lesson.value) and str(ours.value) == str(lesson.value)


@decoders
@checks
@given(payload=st.dictionaries(st.text(max_size=8), json_values, max_size=5),
       stamp=st.sampled_from(["2026-12-01T21:40:29.904103+00:00", "2026-01-05T09:00:00+00:00", "1.5e-05"]))
def test_each_encoder_writes_the_lessons_bytes_beside_a_recorded_at(decoder, payload, stamp):
    record = {"schema_version": 1, "recorded_at": stamp, **payload}
    try:
        expected = ENCODER.encode(record).encode("utf-8")
    except UnicodeEncodeError:
        return
    assert fast.encode_record(record, decoder) == expected


def test_msgspec_encodes_the_lines_of_a_plain_session():
    if fast.msgspec is None:
        pytest.skip("msgspec is not installed")
    record = {"recorded_at": "2026-12-01T21:40:29.904103+00:00", "type": "message", "content": "calc.py"}
    assert not fast._may_hold_a_float(fast.msgspec.json.encode(record), record)  # else msgspec never writes
    assert fast._may_hold_a_float(fast.msgspec.json.encode({**record, "x": 6.103515625e-05}), record)
