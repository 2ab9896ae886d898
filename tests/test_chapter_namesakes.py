"""Each chapter's functions and their code.py namesakes give the same answers on the chapter's inputs (issue 51).

code.py is the five chapters assembled: where a chapter writes a function that code.py also has (by name, or a
method of JSONLTranscript by name), the two must agree. Each test takes the function from the saved English
notebook's cells (chapter_code.run_cells runs them as the kernel does), builds the inputs the chapter itself
uses (its files, its damaged bytes, its windows, its questions), and compares every answer: the return value,
or the class and the message of the error raised. The last test checks that no namesake escapes: every function
or class a chapter defines whose name code.py also defines is one these tests compare.
"""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # plain pytest module: the chapters' cells import pyplot

import pytest  # noqa: E402
from chapter_code import chapter_cells, run_cells  # noqa: E402
from chapter_texts import python_of  # noqa: E402

from s09_jsonl_transcript import code  # noqa: E402
from s09_jsonl_transcript.code import BUG_FIX_SCRIPT, SESSION_MAX_ITEMS, JSONLTranscript, ticking_clock  # noqa: E402

# What each test compares, by chapter: the chapter's names, each with its code.py namesake.
COMPARED = {
    "01_events_on_disk": {"envelope", "encode", "Transcript.append", "Transcript.close"},
    "02_crash_injection": set(),  # it writes the crash around code.py's own class: no function of code.py's name
    "03_partial_tail_vs_corruption": {"line_problem", "read_transcript"},
    "04_replay_window": {"event_to_message", "window_of", "messages_of", "fold", "replay_state", "recover"},
    "05_memory_gate": {"sequence_of", "required_text", "select_candidate", "MyTranscript.read_events",
                       "MyTranscript.recover", "MyTranscript.select_memory_candidate"},
}
CODE_PY_NAMES = {node.name for node in ast.parse(Path(code.__file__).read_text(encoding="utf-8")).body
                 if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
CLASS_METHODS = {name for name, member in vars(JSONLTranscript).items() if callable(member)}


def answer(function, *arguments):
    """What a call answers: its value, or the class and the message of what it raised."""
    try:
        return function(*arguments)
    except Exception as error:  # noqa: BLE001 - the error is the answer compared
        return type(error).__name__, str(error)


def same_answers(mine, theirs, inputs) -> list[str]:
    """The inputs on which the chapter's function and code.py's disagree, shown with both answers."""
    return [f"{shown}: chapter {answer(mine, *given)!r} != code.py {answer(theirs, *given)!r}"
            for shown, given in inputs if answer(mine, *given) != answer(theirs, *given)]


# --------------------------------------------------------------------------- chapter 1: envelope, encode, append


def test_chapter_1_writes_what_code_py_writes(tmp_path):
    one = run_cells("01_events_on_disk", ["language", "imports", "envelope", "encode", "transcript", "try-value"])
    events = [*BUG_FIX_SCRIPT, one["mine"]]
    ticks = [ticking_clock()() for _ in events]
    records = [{**code.envelope("session-1", number, tick), **event}
               for number, (tick, event) in enumerate(zip(ticks, events), start=1)]
    assert same_answers(one["envelope"], code.envelope, [(number, ("session-1", number, tick))
                                                       for number, tick in enumerate(ticks, start=1)]) == []
    assert same_answers(one["encode"], code.encode, [(record["sequence"], (record,)) for record in records]) == []
    (tmp_path / "chapter").mkdir()
    written = one["Transcript"](tmp_path / "chapter" / "session-1.jsonl", clock=ticking_clock())
    with JSONLTranscript(tmp_path / "code-py" / "session-1.jsonl", clock=ticking_clock()) as reference:
        for event in events:
            assert written.append(event) == reference.append(event)
        assert written.close() is reference.close() is None
    assert written.path.read_bytes() == reference.path.read_bytes()


# --------------------------------------------------------------------------- chapter 3: the reading rule


def chapter_3_files(three) -> list[tuple[str, bytes]]:
    """Every damaged file chapter 3 reads: its examples, every truncation and every one-bit flip of its file,
    and each of its damages at every line."""
    data, lines = three["data"], three["data"].count(b"\n")
    files = [(f"example {name}", damaged) for name, damaged in three["examples"].items()]
    files += [(f"cut at {size}", three["truncate"](data, size)) for size in range(len(data) + 1)]
    files += [(f"bit {bit} of byte {offset} flipped", three["flip"](data, offset, bit))
              for offset in range(len(data)) for bit in (0, 7)]
    files += [(f"line {number} deleted", three["delete_line"](data, number)) for number in range(1, lines + 1)]
    files += [(f"line {number} twice", three["duplicate_line"](data, number)) for number in range(1, lines + 1)]
    return files + [(f"{count} zero bytes", three["append_zeros"](data, count)) for count in (1, 8, 64)]


# What the chapter's text says its rule also does, given to both readers: a line of another format, NaN, JSON
# nested too deep to read, a last line that lost only its newline, a newer schema_version.
EDGE_LINES = {
    "no envelope": b'{"note": "hello"}\n',
    "NaN in a value": b'{"schema_version":1,"sequence":1,"event_id":"transcript:session-3:1",'
                      b'"session_id":"session-3","type":"message","role":"user","content":NaN}\n',
    "nested too deep": b"[" * 100_000 + b"]" * 100_000 + b"\n",
    "a whole record without its newline": b'{"schema_version":1,"sequence":1,"event_id":"transcript:session-3:1",'
                                          b'"session_id":"session-3","type":"reasoning"}',
    "a newer schema_version": b'{"schema_version":2,"sequence":1,"event_id":"transcript:session-3:1",'
                              b'"session_id":"session-3","type":"hologram"}\n',
}


def test_chapter_3_reads_every_damaged_file_as_code_py_does_in_the_same_words(tmp_path):
    three = run_cells("03_partial_tail_vs_corruption", ["language", "imports", "file", "line-problem",
                                                         "read-transcript", "read-run", "damage-functions", "examples"])
    files = chapter_3_files(three) + [(name, line) for name, line in EDGE_LINES.items()]
    path = tmp_path / "session-3.jsonl"  # the chapter's file name: the session id its lines carry
    disagree = []
    for name, damaged in files:
        path.unlink(missing_ok=True)
        path.write_bytes(damaged)
        disagree += same_answers(three["read_transcript"], code.read_transcript, [(name, (path,))])
        for number, line in enumerate(damaged.split(b"\n")[:-1], start=1):  # the complete lines
            record = answer(json.loads, line.decode("utf-8", "replace"))
            disagree += same_answers(three["line_problem"], code.line_problem,
                                     [(f"{name}, line {number}", (record, number, "session-3"))])
    assert disagree == [], "\n".join(disagree[:10])
    assert len(files) > 2 * len(three["data"])  # every truncation and flip was read


def test_chapter_3_and_code_py_agree_on_a_missing_file_and_a_fifo(tmp_path):
    three = run_cells("03_partial_tail_vs_corruption", ["language", "imports", "line-problem", "read-transcript"])
    os.mkfifo(tmp_path / "fifo.jsonl")
    inputs = [("missing", (tmp_path / "missing.jsonl",)), ("a FIFO", (tmp_path / "fifo.jsonl",))]
    assert same_answers(three["read_transcript"], code.read_transcript, inputs) == []
    assert answer(code.read_transcript, tmp_path / "missing.jsonl") == ([], False)
    assert answer(code.read_transcript, tmp_path / "fifo.jsonl")[0] == "OSError"  # refused at once, never waited on


# --------------------------------------------------------------------------- chapter 4: the replay fold

CHAPTER_4 = ["language", "8d7f997f", "a7d98116", "05b00c15", "260dd8fa", "43a0a85e", "newer", "0ab2dfdc",
             "45611c2f", "d66728a1", "e2b4c6d8", "c8e0f2a4", "6b2e8d40", "b1a7d395", "f5ebf7d9", "final-only"]
WINDOWS = (0, 1, 2, 3, 4, 6, 8, 12, 100, SESSION_MAX_ITEMS)


def one_event_of_every_type() -> list[dict]:
    """A session of one event of each type of code.py's table, with the fields replay needs, a call's result
    after its call: a type added to the table is compared before any input of the chapter holds one."""
    now = ticking_clock()
    events = []
    for sequence, (kind, fields) in enumerate(code.EVENT_TYPES.items(), start=1):
        events.append({**code.envelope("every-type", sequence, now()), "type": kind, **{name: name for name in fields}})
    return events


def test_chapter_4_folds_every_file_and_window_as_code_py_does():
    four = run_cells("04_replay_window", CHAPTER_4)
    files = {"the session": four["path"], "as the crash left it": four["as_left"], "answered": four["crashed"],
             "newer code": four["newer"], "odd": four["odd"], "final answer only": four["final_path"]}
    sessions = {name: four["read_transcript"](path)[0] for name, path in files.items()}
    sessions.update(four["sessions"])  # section 9's long sessions: plain lists of events
    sessions["one event of every type in code.py's table"] = one_event_of_every_type()
    disagree = []
    for name, events in sessions.items():
        disagree += same_answers(four["event_to_message"], code.event_to_message,
                                 [(f"{name} {event['sequence']}", (event,)) for event in events])
        disagree += same_answers(four["fold"], code.fold, [(name, (events,))])
        for max_items in (*WINDOWS, -1, 2.5, True, "5"):
            disagree += same_answers(four["window_of"], code.window_of,
                                     [(f"{name} {max_items!r}", (events, max_items))])
        for max_items in WINDOWS:
            window = code.window_of(events, max_items)
            disagree += same_answers(four["messages_of"], code.messages_of, [(f"{name} [{max_items}]", (window,))])
            disagree += same_answers(four["fold"], code.fold, [(f"{name} [{max_items}]", (window,))])
    assert disagree == [], "\n".join(disagree[:10])


def test_chapter_4_replay_state_and_recover_are_code_py_s_methods_on_the_same_files():
    four = run_cells("04_replay_window", CHAPTER_4)
    for path in (four["path"], four["as_left"], four["crashed"], four["newer"], four["odd"], four["final_path"]):
        events, partial_tail = four["read_transcript"](path)
        transcript = JSONLTranscript(path)
        for max_items in WINDOWS:
            mine, theirs = four["replay_state"](events, max_items), vars(transcript.replay_state(max_items))
            assert mine == {name: theirs[name] for name in mine}, (path.name, max_items)
            mine, theirs = four["recover"](events, max_items), transcript.recover(max_items)
            assert mine == {name: theirs[name] for name in mine}, (path.name, max_items)
            assert set(theirs) - set(mine) == {"ignored_partial_tail", "message_count"}
            assert theirs["ignored_partial_tail"] == partial_tail


# --------------------------------------------------------------------------- chapter 5: the gate, and the join

CHAPTER_5 = ["language", "1d0c5e8a", "3e7a9f1c", "5f8b0a2d", "7a9c1b3e", "4a4619c8", "2a4f6b8c", "3b5a7c9d",
             "4c6b8d0e", "5d7c9e1f"]


def test_chapter_5_gates_every_question_as_code_py_does():
    five = run_cells("05_memory_gate", CHAPTER_5)
    transcripts = {"the session": five["transcript"], "the damaged copy": JSONLTranscript(five["damaged"])}
    chosen = [(five["event_id_for"](five["session"], sequence), *words) for sequence, words in five["chosen"].items()]
    questions = [*five["questions"], *five["to_damaged"], *chosen]
    ids = {question[0] for question in questions} | {"transcript:session-5:", "transcript:session-5:٧", None, 7.0}
    texts = {text for question in questions for text in question[1:]} | {"", " \t", 5, b"bytes"}
    disagree = []
    for name, transcript in transcripts.items():
        disagree += same_answers(five["select_candidate"], code.select_candidate,
                                 [(f"{name} {question!r}", (transcript, *question)) for question in questions])
        disagree += same_answers(five["sequence_of"], code.sequence_of,
                                 [(f"{name} {event_id!r}", (transcript, event_id)) for event_id in ids])
    disagree += same_answers(five["required_text"], code.required_text,
                             [(repr(text), (field, text)) for text in texts for field in ("summary", "reason")])
    assert disagree == [], "\n".join(disagree[:10])


def test_chapter_5_s_joined_transcript_answers_as_code_py_s_class():
    five = run_cells("05_memory_gate", [*CHAPTER_5, "joined"])
    assert five["printouts"][0] == five["printouts"][1]  # the demo on the joined class: the same three acts
    for path in (five["path"], five["damaged"]):
        mine, theirs = five["MyTranscript"](path, clock=None), JSONLTranscript(path)
        disagree = same_answers(mine.read_events, theirs.read_events, [(path.name, ())])
        for max_items in WINDOWS:
            recovered = answer(theirs.recover, max_items)
            if isinstance(recovered, dict):
                recovered = {name: value for name, value in recovered.items() if name != "message_count"}
            if answer(mine.recover, max_items) != recovered:
                disagree.append(f"{path.name} recover({max_items})")
        disagree += same_answers(mine.select_memory_candidate, theirs.select_memory_candidate,
                                 [(repr(question), question) for question in five["questions"]])
        assert disagree == [], "\n".join(disagree)


# --------------------------------------------------------------------------- no namesake escapes


def defined_in_cells(name: str) -> dict[str, set[str]]:
    """The functions and classes a chapter's cells define, each class with its methods' names."""
    found = {}
    for source in chapter_cells(name).values():
        for node in ast.parse(python_of(source)).body:
            if isinstance(node, ast.FunctionDef):
                found[node.name] = set()
            elif isinstance(node, ast.ClassDef):
                found[node.name] = {item.name for item in node.body if isinstance(item, ast.FunctionDef)}
    return found


@pytest.mark.parametrize("name", sorted(COMPARED))
def test_every_namesake_a_chapter_writes_is_compared(name):
    """A function or class of code.py's name, or a method of JSONLTranscript's name, is compared above."""
    namesakes = set()
    for defined, methods in defined_in_cells(name).items():
        if defined in CODE_PY_NAMES:
            namesakes.add(defined)
        namesakes.update(f"{defined}.{method}" for method in methods if method in CLASS_METHODS - {"__init__"})
    if name == "04_replay_window":  # chapter 4's replay_state and recover are JSONLTranscript's methods, on events
        namesakes.update(defined for defined in defined_in_cells(name) if defined in CLASS_METHODS)
    assert namesakes == COMPARED[name]
