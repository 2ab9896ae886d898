"""What a check cell becomes in a grading run: the same code, printing first the values it asserts on.

Before each `assert` of a check the grader's copy prints one line of canonical JSON (checks.observe):
the values the assertion compares, read as plain data. The kernel that ran the student's cells only
produces those lines; the verdict is taken elsewhere. The same instrumented cell is first run with
the instructor's reference answers in a kernel of its own, and what it printed becomes the cell's
expected output; nbval then compares, in the pytest process, the student's run with it. Editing a
check, patching IPython or turning assertions off changes what the student's kernel prints, never
what it is compared with.

What is observed for `assert test`:
- a comparison by `==`, `!=`, `is`, `is not`, `in`, `not in`: each side that is not a literal;
- `a and b`, `a or b`, `not a`: the observations of each part;
- any other test (a name, a call, a subscript): its value.
A comparison by `<`, `<=`, `>`, `>=` is a budget (bytes read, for example), whose two sides differ
between correct answers: it is not observed; a resource budget is measured from outside the kernel
instead (see the probe's `read_slack`). An assertion whose line carries the comment `# observe: truth`
relates two values that differ between correct answers (a line and its hash, say): only whether it
holds is observed.

Each observed expression is evaluated in a lambda, so one that raises (got[0] of an empty list) is
observed as the name of its error, and the assertion that follows still reports it as before.
"""

from __future__ import annotations

import ast
import io
import tokenize

OBSERVE = "_s09_observe"
IMPORT_LINE = f"from s09_jsonl_transcript.grading.checks import observe as {OBSERVE}"
_EQUALITIES = (ast.Eq, ast.NotEq, ast.Is, ast.IsNot, ast.In, ast.NotIn)


class InstrumentError(ValueError):
    """A check cell the grader cannot turn into observations (the message says why)."""


def observed_expressions(test: ast.expr) -> list:
    """The sub-expressions of an assert's test whose values a grading run compares."""
    if isinstance(test, ast.BoolOp):
        return [part for value in test.values for part in observed_expressions(value)]
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return observed_expressions(test.operand)
    if isinstance(test, ast.Compare):
        if not all(isinstance(op, _EQUALITIES) for op in test.ops):
            return []
        return [side for side in [test.left, *test.comparators] if not _is_literal(side)]
    return [] if _is_literal(test) else [test]


def _is_literal(expression: ast.expr) -> bool:
    """True for a value written out in the check (4, None, [{"role": "user"}]): the same in every run."""
    try:
        ast.literal_eval(expression)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


TRUTH_MARK = "# observe: truth"


def _truth_lines(code: str) -> set:
    """Line numbers that carry the comment TRUTH_MARK."""
    lines = set()
    for token in tokenize.generate_tokens(io.StringIO(code).readline):
        if token.type == tokenize.COMMENT and token.string.strip() == TRUTH_MARK:
            lines.add(token.start[0])
    return lines


class _Observer(ast.NodeTransformer):
    def __init__(self, truth_lines: set):
        self.observed = 0
        self.truth_lines = truth_lines

    def _observed_before(self, node: ast.Assert) -> list:
        if self.truth_lines & set(range(node.lineno, (node.end_lineno or node.lineno) + 1)):
            expressions = [ast.Call(func=ast.Name("bool", ast.Load()), args=[node.test], keywords=[])]
        else:
            expressions = observed_expressions(node.test)
        if not expressions:
            return [node]
        self.observed += len(expressions)
        thunks = [ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[],
                                                defaults=[]), body=expression) for expression in expressions]
        call = ast.Expr(ast.Call(func=ast.Name(OBSERVE, ast.Load()), args=thunks, keywords=[]))
        return [call, node]

    def visit_Assert(self, node):  # noqa: N802 - the NodeTransformer protocol
        return self._observed_before(node)

    def visit_FunctionDef(self, node):  # noqa: N802 - an assert inside a helper runs when called: leave it
        return node

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_Lambda = visit_FunctionDef


def instrumented_check(code: str, name: str = "check") -> str:
    """The check cell's code with an observation before each assertion; InstrumentError if none is observed."""
    try:
        tree = ast.parse(code)
    except SyntaxError as error:
        raise InstrumentError(f"check {name} does not parse: {error}") from None
    observer = _Observer(_truth_lines(code))
    tree = ast.fix_missing_locations(observer.visit(tree))
    if observer.observed == 0:
        raise InstrumentError(f"check {name} asserts on no value a grading run can compare (see instrument.py)")
    return IMPORT_LINE + "\n" + ast.unparse(tree) + "\n"
