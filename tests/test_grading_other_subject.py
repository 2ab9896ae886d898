"""The grader stands on its own (issue 50): it grades an exercise of another subject, a notebook that
knows nothing about transcripts, with the same two kernels, sandbox, reference run and nbval.

The subject here is rectangles: two functions, `area` and `perimeter`, two visible checks and one
hidden check that draws its input from the grading's seed. The source is made the documented way
(`refresh` runs it and saves the pass lines), then a right and a wrong submission are graded by the
real grader through its command line.
"""

import json

import nbformat
import pytest
from test_grading_support import grade_folder, write_notebook

from s09_jsonl_transcript.grading.cli import main
from s09_jsonl_transcript.grading.source import load_sources

pytestmark = [pytest.mark.slow]  # three gradings in two kernels each: about 20 s

SETUP = "import random\n\nfrom s09_jsonl_transcript.grading import checks\n"
AREA = 'def area(width, height):\n    """The area of a width x height rectangle."""\n    ### BEGIN SOLUTION\n' \
       '    return width * height\n    ### END SOLUTION\n'
PERIMETER = 'def perimeter(width, height):\n    """The length of its outline."""\n    ### BEGIN SOLUTION\n' \
            '    return 2 * (width + height)\n    ### END SOLUTION\n'
CHECKS = [
    ("ex07-area", "ex07.1", 2, False, 'assert area(3, 4) == 12, "a 3 x 4 rectangle holds 12 unit squares"\n'),
    ("ex07-perimeter", "ex07.2", 1, False, 'assert perimeter(3, 4) == 14, "its outline is 3 + 4 + 3 + 4"\n'),
    ("ex07-drawn", "ex07.3", 3, True, 'draw = checks.check_random("ex07-drawn")\n'
                                      'width, height = draw.randrange(1, 10**6), draw.randrange(1, 10**6)\n'
                                      'assert area(width, height) == width * height\n'
                                      'assert perimeter(width, height) == 2 * (width + height)\n'),
]


def rectangles_source() -> nbformat.NotebookNode:
    """An instructor source of the other subject: setup, two answer cells, three checks."""
    cell = nbformat.v4.new_code_cell
    cells = [nbformat.v4.new_markdown_cell("# Rectangles\n\nWrite `area` and `perimeter`."), cell(SETUP),
             cell(AREA, metadata={"s09": {"role": "answer", "name": "rect-area"}}),
             cell(PERIMETER, metadata={"s09": {"role": "answer", "name": "rect-perimeter"}})]
    for check_id, name, points, hidden, body in CHECKS:
        role = {"role": "check", "name": name, "id": check_id, "points": points}
        if hidden:
            role["hidden"] = True
        cells.append(cell(f"# {name}\n{body}print({name!r} + ' passed')", metadata={"s09": role}))
    notebook = nbformat.v4.new_notebook(cells=cells)
    notebook.metadata = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
                         "s09": {"exercise": "ex07", "title": "Rectangles"}}
    return notebook


def pass_line_cells(notebook: nbformat.NotebookNode) -> None:
    """Make each check print the grader's pass line (source.pass_line), as an author writes it."""
    from s09_jsonl_transcript.grading.source import pass_line

    for cell in notebook.cells:
        role = cell.metadata.get("s09", {})
        if role.get("role") == "check":
            cell.source = cell.source.rsplit("print(", 1)[0] + f"print({pass_line(role['name'], role['points'])!r})"


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    folder = tmp_path_factory.mktemp("rectangles") / "instructor"
    notebook = rectangles_source()
    pass_line_cells(notebook)
    folder.mkdir()
    nbformat.write(notebook, folder / "ex07_rectangles.ipynb")
    assert main(["refresh", "--source", str(folder)]) == 0  # runs it and saves the pass lines
    return folder


def submission(sources, area: str, perimeter: str) -> dict:
    """A copy of the source with these answer cells (the grader takes nothing else from a submission)."""
    notebook = json.loads((sources / "ex07_rectangles.ipynb").read_text(encoding="utf-8"))
    answers = {answer.cell_id: {"rect-area": area, "rect-perimeter": perimeter}[answer.name]
               for answer in load_sources(sources)["ex07"].answers}
    for cell in notebook["cells"]:
        if cell.get("id") in answers:
            cell["source"] = answers[cell["id"]]
    return notebook


def test_the_grader_grades_an_exercise_of_another_subject(sources, tmp_path):
    submissions = tmp_path / "submissions"
    write_notebook(submissions / "right" / "ex07_rectangles.ipynb",
                   submission(sources, "def area(w, h):\n    return w * h\n",
                              "def perimeter(w, h):\n    return w + w + h + h\n"))
    write_notebook(submissions / "wrong" / "ex07_rectangles.ipynb",
                   submission(sources, "def area(w, h):\n    return w * h\n",
                              "def perimeter(w, h):\n    return w + h\n"))
    reports = grade_folder(submissions, tmp_path / "reports", "--source", str(sources), "--sandbox", "required")
    right, wrong = reports["right/ex07_rectangles.ipynb"], reports["wrong/ex07_rectangles.ipynb"]
    assert (right["status"], right["score"], right["max_score"]) == ("graded", 6, 6)
    scored = {check["id"]: check["score"] for check in wrong["checks"]}
    assert scored == {"ex07-area": 2, "ex07-perimeter": 0, "ex07-drawn": 0}
    assert wrong["checks"][2]["visibility"] == "hidden"
