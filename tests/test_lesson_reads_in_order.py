"""code.py reads top to bottom (issues 41 and 51): no name is used above the line that defines it, the
sections come in the chapters' order, the reading rule is one function, and every line fits in 100 columns.

A student reads the lesson once, in order. A helper used 200 lines before its definition sends them
searching; so does a method that calls one defined further down the class.
"""

import ast
import builtins
from pathlib import Path

from s09_jsonl_transcript import code

LESSON = Path(code.__file__)
MAX_COLUMNS = 100


def module_definitions(tree: ast.Module) -> dict[str, int]:
    """Each name the module binds at its top level, with the line of its first binding."""
    defined = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names = [node.name]
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [(alias.asname or alias.name).split(".")[0] for alias in node.names]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [name.id for target in targets for name in ast.walk(target) if isinstance(name, ast.Name)]
        else:
            names = []
        for name in names:
            defined.setdefault(name, node.lineno)
    return defined


def early_uses(source: str) -> list[str]:
    """Every use of a module-level name above its definition, and of a method above its def."""
    tree = ast.parse(source)
    defined = module_definitions(tree)
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in defined
                and node.lineno < defined[node.id]):
            found.append(f"line {node.lineno}: {node.id} (defined at line {defined[node.id]})")
    for cls in (node for node in tree.body if isinstance(node, ast.ClassDef)):
        members = {}
        for member in cls.body:
            if isinstance(member, ast.FunctionDef):
                members.setdefault(member.name, member.lineno)
            elif isinstance(member, ast.Assign):
                members.update({target.id: member.lineno for target in member.targets if isinstance(target, ast.Name)})
        for node in ast.walk(cls):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"
                    and node.attr in members and node.lineno < members[node.attr]):
                found.append(f"line {node.lineno}: self.{node.attr} (defined at line {members[node.attr]})")
    return found


def test_no_name_is_used_above_its_definition():
    assert early_uses(LESSON.read_text(encoding="utf-8")) == []


def test_the_order_check_can_fail():
    late = "def first():\n    return second()\n\n\ndef second():\n    return 1\n"
    method = "class T:\n    def a(self):\n        return self.b()\n\n    def b(self):\n        return 1\n"
    assert early_uses(late) == ["line 2: second (defined at line 5)"]
    assert early_uses(method) == ["line 3: self.b (defined at line 5)"]
    assert early_uses("import os\n\n\ndef f():\n    return os.sep, len([])\n") == []
    assert "len" in dir(builtins)  # builtins are not module names: never reported


def test_every_line_fits_in_100_columns():
    wide = [number for number, line in enumerate(LESSON.read_text(encoding="utf-8").splitlines(), start=1)
            if len(line) > MAX_COLUMNS]
    assert wide == []


def test_the_reading_rule_is_one_function_with_both_verdicts():
    """read_transcript decides both: a partial tail is forgiven and reported, a bad complete line raises."""
    tree = ast.parse(LESSON.read_text(encoding="utf-8"))
    rule = next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "read_transcript")
    body = ast.unparse(rule)
    assert "return (events, True)" in body and "raise TranscriptCorruptionError" in body
    assert rule.end_lineno - rule.lineno < 45


# Each section's first definition, in the order issue 51 gives: the chapters' order, then the class and the demo.
SECTIONS = [("1. the envelope and append's steps", "envelope"),
            ("2. the agent, killed in the middle of a line", "MockLLM"),
            ("3. the reading rule and the recovery of the end", "read_transcript"), ("4. the replay fold", "fold"),
            ("5. the memory gate", "select_candidate"), ("6. the class", "JSONLTranscript"), ("7. the demo", "demo")]


def test_the_sections_come_in_the_lessons_order():
    names = [name for _, name in SECTIONS]
    lines = module_definitions(ast.parse(LESSON.read_text(encoding="utf-8")))
    assert all(name in lines for name in names), [name for name in names if name not in lines]
    assert sorted(names, key=lines.__getitem__) == names


def test_append_is_one_write_on_an_o_append_descriptor_then_fsync_in_section_one():
    """Section 1 holds append's steps before anything reads: O_APPEND, the folder's fsync for a new file,
    one write of the whole line, then fsync."""
    tree = ast.parse(LESSON.read_text(encoding="utf-8"))
    lines = module_definitions(tree)
    steps = {node.name: ast.unparse(node) for node in tree.body if isinstance(node, ast.FunctionDef)}
    assert "os.O_APPEND" in steps["open_for_append"] and "fsync_dir" in steps["open_for_append"]
    write_then_sync = steps["append_line"]
    assert write_then_sync.index("file_io.write(fd, line)") < write_then_sync.index("file_io.fsync(fd)")
    assert lines["open_for_append"] < lines["append_line"] < lines["MockLLM"]
