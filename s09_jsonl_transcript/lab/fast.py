"""The lab's fast paths: recover() as one loop over 64 KiB blocks; for append, one pass over a plain
event, an encoder built once and a cheaper clock stamp.

The careful path (lab.DurableTranscript's scan: lines, the lesson's checks, the batch and chain
checks, the lesson's fold) is the definition of every verdict. The fast read path does only the
common case: whole lines of the current schema, in order, no chain, every batch finished. It
decodes each block with a JSON decoder called directly, checks the decoded envelope inline and
hands each record to the one fold both decoders' loops share (_Fold: the lesson's fold, with the
checks of the fields each type needs), which reads a record's fields through the decoder's getter
(operator.itemgetter or operator.attrgetter). On anything else (damage, a partial tail, a torn batch, a newer
schema, the hash chain, a line near a limit) it gives up and returns None, and the caller runs
the careful path from the start, so a verdict can only come from the careful path or agree with it.

The decoder is the standard library's C scanner, or msgspec when it is installed (the `fast`
extra). S09_DECODER=stdlib or S09_DECODER=msgspec chooses; the default is msgspec when importable.
The stdlib's loop decodes every record whole; msgspec's decodes only each record's envelope and
the fields the fold needs, typed (Envelope), and decodes whole only the records that stay.
Checks use the decoded values, never the bytes: a duplicate key later in a line, even escaped,
overrides an earlier one, and both decoders keep the later one, as the careful path does.
"""

from __future__ import annotations

import operator
import os
import sys
import time
from collections import deque
from contextlib import contextmanager
from datetime import datetime, timezone
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Annotated, Callable

from ..code import (
    DECODER,
    ENCODER,
    EVENT_TYPES,
    FIELDS_APPEND_WRITES,
    SCHEMA_VERSION,
    TYPE_AI_TITLE,
    TYPE_FILE_SNAPSHOT,
    TYPE_FUNCTION_CALL,
    TYPE_FUNCTION_CALL_RESULT,
    TYPE_MESSAGE,
    TYPE_REASONING,
    ReplayState,
    TranscriptValidationError,
    event_id_for,
    messages_of,
    shape_problem,
)
from .checks import INT_LIMIT, MAX_NESTING
from .writer import regular

try:  # the optional `fast` extra
    import msgspec
except ImportError:  # pragma: no cover - depends on what is installed
    msgspec = None  # type: ignore[assignment]
UNSET: object = msgspec.UNSET if msgspec is not None else object()  # msgspec's value of an absent field

DECODERS = ("stdlib", "msgspec")
DECODER_VARIABLE = "S09_DECODER"
BLOCK = 64 * 1024  # the same block size as the careful reader
# Python 3.11 counts a decoder's nesting against the stack's depth, so the careful path (a few
# generator frames deeper) refuses a line nested about 990 deep that a shallower call would accept.
# The fast path decodes this many calls further down than recover() itself, deeper than the
# careful path's decoder: its nesting limit is never looser, and a line it refuses goes to the
# careful path. tests/test_fast_path_differential.py checks lines at the careful path's limit.
FRAMES_BELOW_RECOVER = 16
BATCH_END_FIELD = "batch_end"  # lab.BATCH_END_FIELD (lab imports this module, so it is named here too)
CHAIN_FIELD = "chain"  # lab.CHAIN_FIELD


def decoder_name() -> str:
    """The decoder the fast paths use: S09_DECODER if set, else msgspec when installed, else stdlib."""
    wanted = os.environ.get(DECODER_VARIABLE, "")
    if wanted not in ("", *DECODERS):
        raise ValueError(f"{DECODER_VARIABLE} must be one of {DECODERS}, not {wanted!r}")
    if wanted == "msgspec" and msgspec is None:
        raise ValueError(f"{DECODER_VARIABLE}=msgspec, but msgspec is not installed (the 'fast' extra)")
    return wanted or ("msgspec" if msgspec is not None else "stdlib")


ACTIVE = decoder_name()  # read once, at import; tests that compare the two paths pass decoder= instead


@contextmanager
def decoding_with(decoder: str):
    """The fast paths use decoder (one of DECODERS) while inside, then the one before."""
    global ACTIVE
    before, ACTIVE = ACTIVE, decoder
    try:
        yield
    finally:
        ACTIVE = before


# --------------------------------------------------------------------------- reading whole lines


def _whole_line_blocks(file, limit: int):
    """file's bytes as blocks of whole lines (each ends with a newline), then b"" if the file ends
    in a partial line; None (and no more) once a line reaches limit, the longest line allowed."""
    pending = b""
    while block := file.read(BLOCK):
        cut = block.rfind(b"\n") + 1
        if cut:  # the block's whole lines, after the line the last block began: one copy
            chunk = b"".join((pending, memoryview(block)[:cut])) if pending else block[:cut]
            pending = block[cut:]
        else:
            chunk, pending = b"", pending + block
        if len(pending) >= limit or (chunk and _too_long(chunk, limit)):
            yield None
            return
        if chunk:
            yield chunk
    if pending:
        yield b""


def _too_long(chunk: bytes, limit: int) -> bool:
    """True when a line of chunk reaches the record limit."""
    return len(chunk) >= limit and max(map(len, chunk.split(b"\n"))) >= limit


def _deeper(frames: int, decode, chunk: bytes):
    """decode(chunk), called frames calls further down the stack (see FRAMES_BELOW_RECOVER)."""
    return decode(chunk) if frames <= 0 else _deeper(frames - 1, decode, chunk)


# The lesson's table of event types as the fold below checks and folds them, written out. If the
# lesson's table changes (a type added, a field), the loops stand aside and the careful path (the
# lesson's own checks and fold) answers; tests/test_fast_path_differential.py says so.
TYPES_FOLDED = {TYPE_MESSAGE: {"role": str, "content": None}, TYPE_REASONING: {},
                TYPE_FUNCTION_CALL: {"callId": str, "name": str}, TYPE_FUNCTION_CALL_RESULT: {"callId": str},
                TYPE_FILE_SNAPSHOT: {}, TYPE_AI_TITLE: {"title": str}}


def table_matches() -> bool:
    """Whether the lesson's table is still the one the fold below spells out (asked at each call)."""
    return EVENT_TYPES == TYPES_FOLDED


class _Fold:
    """The lesson's fold (code.fold) for both decoder loops, a block of records at a time, with the
    checks of the fields it reads (code.shape_problem's, for the types of TYPES_FOLDED).

    `getter(*names)` makes what reads those fields of a record of either decoder in one call:
    operator.itemgetter for the standard library's dicts (KeyError: a field is missing),
    operator.attrgetter for msgspec's Envelope (an absent field is UNSET). What the fold keeps of a
    record (a snapshot, a call still open) is kept[index]: the record itself for the standard library,
    a copy of its line for msgspec, so no block is held.
    """

    __slots__ = ("kind_of", "role_content", "call_name", "call", "title_of", "title", "reasoning", "snapshots",
                 "open_calls")

    def __init__(self, getter: Callable):
        self.kind_of, self.role_content = getter("type"), getter("role", "content")
        self.call_name, self.call, self.title_of = getter("callId", "name"), getter("callId"), getter("title")
        self.title: str | None = None
        self.reasoning = 0
        self.snapshots: list = []
        self.open_calls: dict = {}

    def block(self, records: list, kept) -> bool:
        """Fold a block's records, their envelopes checked; False when one lacks a field its type needs.

        kept[index] is what the fold keeps of records[index]. A call or a snapshot is noted by its
        index while the block is folded; what is still kept when the block ends is taken from kept.
        """
        kind_of, role_content, call_name, call = self.kind_of, self.role_content, self.call_name, self.call
        open_calls, snapshots, reasoning, opened, first = self.open_calls, self.snapshots, 0, [], len(self.snapshots)
        try:
            for index, kind in enumerate(map(kind_of, records)):
                if kind == TYPE_MESSAGE:
                    role, content = role_content(records[index])
                    if type(role) is not str or content is UNSET:
                        return False
                elif kind == TYPE_REASONING:
                    reasoning += 1
                elif kind == TYPE_FUNCTION_CALL:
                    call_id, name = call_name(records[index])
                    if type(call_id) is not str or type(name) is not str:
                        return False
                    open_calls[call_id] = index  # a call opens an entry...
                    opened.append(call_id)
                elif kind == TYPE_FUNCTION_CALL_RESULT:
                    call_id = call(records[index])
                    if type(call_id) is not str:
                        return False
                    open_calls.pop(call_id, None)  # ...and its result closes it
                elif kind == TYPE_AI_TITLE:
                    title = self.title_of(records[index])
                    if type(title) is not str:
                        return False
                    self.title = title  # the latest title wins
                elif kind == TYPE_FILE_SNAPSHOT:
                    snapshots.append(index)
        except KeyError:  # the standard library's record lacks a field its type needs
            return False
        self.reasoning += reasoning
        for call_id in opened:
            noted = open_calls.get(call_id)
            if type(noted) is int:  # still open: noted in this block
                open_calls[call_id] = kept[noted]
        snapshots[first:] = [kept[index] for index in snapshots[first:]]
        return True

    def summary(self, window: list, total: int, whole: Callable = lambda kept: kept) -> dict:
        """recover()'s summary of a file read to its end with nothing unusual, as the careful path
        builds it (the lesson's ReplayState as a dict); whole turns a kept record into its dict."""
        state = ReplayState(messages=messages_of(window), title=self.title,
                            file_snapshots=[whole(kept) for kept in self.snapshots], total_events=total,
                            reasoning_count=self.reasoning, next_sequence=total + 1, ignored_partial_tail=False,
                            pending_calls=[whole(kept) for kept in self.open_calls.values()], unknown_schema_events=0)
        summary = dict(vars(state))
        summary["message_count"] = len(state.messages)
        return summary


def fast_recover(path, session_id: str, max_items: int, limit: int, decoder: str | None = None) -> dict | None:
    """recover()'s summary for the transcript at path, or None when the careful path must decide.

    path holds session_id's records; limit is the longest line allowed (max_record_bytes);
    max_items has already been checked. The caller only asks for transcripts without the chain.
    """
    if not table_matches():
        return None
    read = _read_with_msgspec if (decoder or ACTIVE) == "msgspec" else _read_with_stdlib
    try:
        file = open(regular(path), "rb")
    except FileNotFoundError:
        return None
    with file:
        return read(file, session_id, max_items, limit)


# --------------------------------------------------------------------------- the stdlib's loop

_SCAN = DECODER.scan_once  # type: ignore[attr-defined]  # the lesson's decoder (NaN refused), its C scanner


def _stdlib_values(chunk: bytes) -> list | None:
    """The values of a block of whole lines (it ends with a newline), or None if any line is unusual."""
    try:
        text = chunk.decode("utf-8")
    except UnicodeDecodeError:
        return None
    values, position, scan, find = [], 0, _SCAN, text.find
    try:
        while (newline := find("\n", position)) >= 0:
            value, end = scan(text, position)  # no whitespace skipped in front: such a line goes to the careful path
            if end != newline:  # whitespace or more after the value, or (newlines skipped) a value spanning lines
                return None
            values.append(value)
            position = end + 1
    except Exception:  # StopIteration, ValueError (NaN, big integers), RecursionError: the careful path decides
        return None
    return values


def _read_with_stdlib(file, session_id: str, max_items: int, limit: int) -> dict | None:
    """fast_recover with the standard library's scanner: each record decoded whole, checked and folded."""
    window: deque = deque(maxlen=min(max_items, sys.maxsize))
    fold, expected, batch_end = _Fold(operator.itemgetter), 1, None
    envelope = operator.itemgetter("sequence", "schema_version", "type", "session_id", "event_id")
    prefix = event_id_for(session_id, "")
    for chunk in _whole_line_blocks(file, limit):
        if not chunk:  # a line too long, or a partial tail
            return None
        values = _deeper(FRAMES_BELOW_RECOVER, _stdlib_values, chunk)
        if values is None:
            return None
        for record in values:
            # the lesson's checks of a record (code.line_problem), in the common case only
            try:
                sequence, version, kind, session, event_id = envelope(record)
            except (KeyError, TypeError):  # a field missing, or not an object
                return None
            if (sequence != expected or type(sequence) is not int or version != SCHEMA_VERSION
                    or type(version) is not int or type(kind) is not str  # a newer schema: the careful path
                    or session != session_id or event_id != prefix + str(sequence)
                    or CHAIN_FIELD in record):  # the lab's chain: the careful path
                return None
            if BATCH_END_FIELD in record:  # the lab's batches: their records follow one another
                end = record[BATCH_END_FIELD]
                if type(end) is not int or end < sequence or (batch_end is not None and end != batch_end):
                    return None
                batch_end = end if end > sequence else None
            elif batch_end is not None:
                return None
            expected += 1
        window.extend(values)
        if not fold.block(values, values):
            return None
    if batch_end is not None:  # a torn batch
        return None
    return fold.summary(list(window), expected - 1)


# --------------------------------------------------------------------------- msgspec's loop
#
# msgspec decodes each line into an Envelope: only the envelope and the fields the fold needs,
# their types checked in C. It checks the JSON of every other field as it skips it, except for two
# things the careful path refuses: bytes that are not UTF-8, and an integer longer than Python's
# digit limit (it never makes the int). _envelopes checks both for each block;
# tests/test_fast_path_differential.py reads every damaged file with window 0 too, where no
# record is decoded whole. The records that stay (the window, the snapshots, the calls still
# open) are decoded whole once the file has been read.

if msgspec is not None:
    class Envelope(msgspec.Struct, gc=False):
        """The fields of one record that msgspec's loop checks and folds, typed; the rest are skipped.

        A field of another type is a msgspec.ValidationError: the careful path decides the file. So
        is a schema other than this one (a newer schema is the careful path's) and the lab's chain.
        """
        schema_version: Annotated[int, msgspec.Meta(ge=SCHEMA_VERSION, le=SCHEMA_VERSION)]
        sequence: int
        event_id: str
        session_id: str
        type: str
        batch_end: int | msgspec.UnsetType = msgspec.field(default=msgspec.UNSET, name=BATCH_END_FIELD)
        chain: msgspec.UnsetType = msgspec.field(default=msgspec.UNSET, name=CHAIN_FIELD)  # present: refused
        role: str | msgspec.UnsetType = msgspec.UNSET
        content: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET  # only its presence is checked
        callId: str | msgspec.UnsetType = msgspec.UNSET  # noqa: N815 - the field's name in the file
        name: str | msgspec.UnsetType = msgspec.UNSET
        title: str | msgspec.UnsetType = msgspec.UNSET

    _ENVELOPES = msgspec.json.Decoder(Envelope)
    _RECORD = msgspec.json.Decoder().decode  # a whole record, as a dict


_OPEN, _CLOSE = ord("{"), ord("}")
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")  # a run of digits becomes a run of "0"


def _may_hold_a_long_integer(chunk: bytes, long_lines: bool) -> bool:
    """True when a line of chunk may hold an integer longer than Python's digit limit (the careful
    decoder refuses one; msgspec skips it unread): a run of that many digits, or more. Only a line
    longer than the limit can (_line_starts says whether chunk has one)."""
    return long_lines and b"0" * (sys.get_int_max_str_digits() + 1) in chunk.translate(_DIGITS_AS_ZERO)


def _is_utf8(chunk: bytes) -> bool:
    """True when chunk is UTF-8, as the careful path decodes it (msgspec does not check what it skips)."""
    if chunk.isascii():  # the common case, checked a word at a time
        return True
    try:
        chunk.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _line_starts(chunk: bytes) -> tuple[list[int], bool] | None:
    """Where each line of chunk starts, then len(chunk), if each starts with "{" and ends with "}"; else
    None. With them, whether a line is longer than Python's digit limit (it is looked into for digits).

    msgspec's decode_lines reads values one after another, a newline being only whitespace to it:
    one value could span two lines and two could share one. A "}" then a "{" is always two values,
    never one (a string cannot hold a raw newline), so with this shape each newline ends a value,
    and the values fall one to a line exactly when there are as many of them as lines.
    """
    starts, position, find, long_lines = [], 0, chunk.find, False
    digits = sys.get_int_max_str_digits() or len(chunk)  # 0: no limit
    while (newline := find(b"\n", position)) >= 0:
        if chunk[position] != _OPEN or chunk[newline - 1] != _CLOSE:  # an empty line fails too
            return None
        if newline - position >= digits:
            long_lines = True
        starts.append(position)
        position = newline + 1
    starts.append(position)
    return starts, long_lines


def _envelopes(chunk: bytes) -> tuple[list, list[int]] | None:
    """The Envelope of each line of chunk and where the lines start, or None if any line is unusual."""
    found = _line_starts(chunk)
    if found is None or not _is_utf8(chunk) or _may_hold_a_long_integer(chunk, found[1]):
        return None
    starts = found[0]
    try:
        records = _ENVELOPES.decode_lines(chunk)
    except Exception:  # msgspec.DecodeError, ValidationError, RecursionError: the careful path decides
        return None
    return (records, starts) if len(records) == len(starts) - 1 else None


def _last_lines(blocks: deque, count: int) -> deque:
    """The last count lines of blocks ((block, line starts) pairs, in file order)."""
    lines: deque = deque(maxlen=count)
    for block, starts in blocks:
        lines.extend(block[start:end] for start, end in zip(starts, starts[1:]))
    return lines


class _Lines:
    """The lines of a block of whole lines, by number: what the fold keeps of a msgspec record."""

    __slots__ = ("chunk", "starts")

    def __init__(self, chunk: bytes, starts: list[int]):
        self.chunk, self.starts = chunk, starts

    def __getitem__(self, index: int) -> bytes:
        return self.chunk[self.starts[index]:self.starts[index + 1]]  # a copy: the block is not kept


def _read_with_msgspec(file, session_id: str, max_items: int, limit: int) -> dict | None:
    """fast_recover with msgspec: each record's Envelope checked and folded. The records that stay
    are decoded whole at the end: the window is the file's last lines (one record a line), so only
    the last blocks are kept; a snapshot's line or an open call's is copied out of its block."""
    count = min(max_items, sys.maxsize)
    recent: deque = deque()  # the blocks the window's lines are in
    held = 0
    fold = _Fold(operator.attrgetter)
    expected, batch_end = 1, None
    prefix = event_id_for(session_id, "")
    for chunk in _whole_line_blocks(file, limit):
        if not chunk:  # a line too long, or a partial tail
            return None
        found = _deeper(FRAMES_BELOW_RECOVER, _envelopes, chunk)
        if found is None:
            return None
        records, starts = found
        recent.append((chunk, starts))
        held += len(records)
        while len(recent) > 1 and held - (len(recent[0][1]) - 1) >= count:  # the later blocks hold the window
            held -= len(recent.popleft()[1]) - 1
        for record in records:
            sequence = record.sequence  # the lesson's checks of a record, the types checked by msgspec
            if sequence != expected or record.session_id != session_id or record.event_id != prefix + str(sequence):
                return None
            end = record.batch_end
            if end is not UNSET:
                if end < sequence or (batch_end is not None and end != batch_end):
                    return None
                batch_end = end if end > sequence else None
            elif batch_end is not None:
                return None
            expected += 1
        if not fold.block(records, _Lines(chunk, starts)):
            return None
    if batch_end is not None:  # a torn batch
        return None
    try:
        window = list(map(_RECORD, _last_lines(recent, count)))
        return fold.summary(window, expected - 1, _RECORD)
    except Exception:  # noqa: BLE001 - it read as an Envelope; whole, the careful path decides
        return None


# --------------------------------------------------------------------------- encoding


# The lesson's ENCODER's options, its C encoder built once (JSONEncoder.encode builds one a call).
# No cycle check: what it encodes is a fresh tree (the lesson's json_copy or plain_payload of an event).
_C_ENCODE = c_make_encoder(None, ENCODER.default, encode_basestring, None, ENCODER.key_separator,
                           ENCODER.item_separator, False, False, False)
_MSGSPEC_ENCODE = msgspec.json.Encoder().encode if msgspec is not None else None
# msgspec writes some floats otherwise than Python's repr (1e16 for 1e+16, 0.00006103515625 for
# 6.103515625e-05): a line where a digit meets a "." or an "e" (every float has one or the other)
# is encoded by the stdlib, so both write the same bytes, except for the digits and dots of
# recorded_at's own value (its seconds are 29.904103). Strings such as "3.11" take the stdlib's
# road too, which costs time, never bytes. (Every digit made "0" first, then finds and a count: a
# regular expression costs ten times more.)


def _may_hold_a_float(line: bytes, record: dict) -> bool:
    digits_as_zero = line.translate(_DIGITS_AS_ZERO)
    if b"0e" in digits_as_zero:
        return True
    stamp = record.get("recorded_at")
    stamps_own = stamp.encode().translate(_DIGITS_AS_ZERO).count(b"0.") if type(stamp) is str else 0
    return digits_as_zero.count(b"0.") > stamps_own


def encode_record(record: dict, decoder: str | None = None, *, floats: bool = True) -> bytes:
    """One record (plain JSON types, as json_copy makes them) as UTF-8 JSON bytes, no newline.

    The same bytes as the lesson's ENCODER.encode(record).encode(); lone surrogates are refused
    with TranscriptValidationError. floats=False promises the record holds no float (plain_payload
    made its event), so msgspec's line needs no float check.
    """
    if (decoder or ACTIVE) == "msgspec":
        try:
            line = _MSGSPEC_ENCODE(record)
        except (UnicodeEncodeError, ValueError, TypeError, OverflowError):
            line = None  # the stdlib below raises what the careful path raises
        if line is not None and not (floats and _may_hold_a_float(line, record)):
            return line
    try:
        return "".join(_C_ENCODE(record, 0)).encode("utf-8")
    except UnicodeEncodeError:
        raise TranscriptValidationError("strings must be valid Unicode (no lone surrogates)") from None


def encode_lines(records: list, decoder: str | None = None) -> list[bytes] | None:
    """Each record as encode_record(record, floats=False) writes it, in one pass with no call of
    ours a record (append_batch's common case), or None when a record needs encode_record's care
    (a lone surrogate, or what msgspec refuses): the caller then encodes them one by one.

    The records hold no float: plain_payload made their events.
    """
    try:
        if (decoder or ACTIVE) == "msgspec":
            return [_MSGSPEC_ENCODE(record) for record in records]
        return ["".join(_C_ENCODE(record, 0)).encode("utf-8") for record in records]
    except Exception:  # noqa: BLE001 - encode_record decides, record by record
        return None


# --------------------------------------------------------------------------- checking a plain event in one pass


class _NotPlain(Exception):
    """A value plain_payload leaves to the careful checks."""


def plain_payload(event) -> dict | None:
    """A private copy of event when it is plain, or None: then the lesson's checked_event decides.

    Plain: a dict with a non-empty string 'type', none of the fields append writes, the fields its
    type needs (the lesson's shape_problem), and inside only exact str, int (below the lesson's
    INT_LIMIT), bool, None, lists and dicts with string keys, nested less deep than the lesson's
    limit. No float: that is what lets encode_record skip its float check. Whatever is plain,
    checked_event accepts and copies alike; it also accepts more (floats, subclasses such as a
    str Enum) and names what is wrong.
    """
    if type(event) is not dict or not FIELDS_APPEND_WRITES.isdisjoint(event):
        return None
    kind = event.get("type")
    if type(kind) is not str or not kind:
        return None
    try:
        payload = _plain_dict(event, 0)
    except _NotPlain:
        return None
    return None if shape_problem(payload) else payload


def _plain_dict(value: dict, depth: int) -> dict:
    if depth >= MAX_NESTING:  # near the lesson's limit json_copy decides, and names the limit
        raise _NotPlain
    copied = {}
    for key, item in value.items():
        kind = type(item)
        if type(key) is not str:
            raise _NotPlain
        if kind is str or item is None or kind is bool or (kind is int and abs(item) < INT_LIMIT):
            copied[key] = item
        else:
            copied[key] = _plain_container(item, kind, depth + 1)
    return copied


def _plain_list(value: list, depth: int) -> list:
    if depth >= MAX_NESTING:
        raise _NotPlain
    copied = []
    for item in value:
        kind = type(item)
        if kind is str or item is None or kind is bool or (kind is int and abs(item) < INT_LIMIT):
            copied.append(item)
        else:
            copied.append(_plain_container(item, kind, depth + 1))
    return copied


def _plain_container(value, kind: type, depth: int):
    if kind is dict:
        return _plain_dict(value, depth)
    if kind is list:
        return _plain_list(value, depth)
    raise _NotPlain  # a float, a tuple, a subclass, anything else: the careful checks decide


# --------------------------------------------------------------------------- the clock's stamp

# (whole seconds since the epoch, its "YYYY-MM-DDTHH:MM:SS" in UTC)
_CURRENT_SECOND: tuple[int | None, str] = (None, "")


def utc_now() -> datetime:
    """The lab's default clock: now, in UTC. A transcript on this clock stamps with utc_stamp()."""
    return datetime.now(timezone.utc)


def utc_stamp(time_ns: int | None = None) -> str:
    """datetime.now(timezone.utc).isoformat(), built from time.time_ns() (or the time_ns given).

    The date and time of day are formatted once a second; the microseconds each call. Like
    isoformat, a whole second has no fraction.
    """
    global _CURRENT_SECOND
    second, micro = divmod((time.time_ns() if time_ns is None else time_ns) // 1000, 1_000_000)
    known, prefix = _CURRENT_SECOND
    if second != known:
        prefix = datetime.fromtimestamp(second, timezone.utc).isoformat()[:19]
        _CURRENT_SECOND = (second, prefix)
    return f"{prefix}.{micro:06d}+00:00" if micro else f"{prefix}+00:00"
