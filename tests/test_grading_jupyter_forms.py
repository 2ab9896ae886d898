"""An honest notebook is graded as it runs (issue 49): each exercise's reference answers, written the ways students
write them in Jupyter, score full marks through the real grader (`grade --sandbox required`), in both languages.

The forms (tests/grading_data/jupyter_forms, edits of the references in the format of the wrong answers) are the
notebook's own machinery, which the guard once took for tampering: the answers' names on the last line of their
cells (IPython's output cache), %%capture, %%time, %timeit, shell commands, a module-level ThreadPoolExecutor and
helper threads still running, signal handlers, top-level await, an import that patches the import system
(pkg_resources), matplotlib inline and logging. Each notebook also gets what a student's copy has around its
answers: notes in markdown, helper cells that try things out (one runs %%bash), and a save by JupyterLab 4 (its
metadata, execution counts, timing metadata and outputs). One notebook per exercise and language holds every form
that fits it; together they hold every form.
"""

import json
import uuid

import pytest
from test_grading_support import (
    EXERCISES,
    GRADING_DATA,
    SOURCES,
    grade_folder,
    reference_answers,
    require_sandbox,
    with_answers,
    wrong_answers,
)

pytestmark = pytest.mark.slow

LANGUAGES = ("en", "zh")
FORMS = {forms.exercise: forms for forms in wrong_answers(GRADING_DATA / "jupyter_forms")}
SEED = 20261206
NOTES = {"en": "## My notes\n\nI tried the function on a small transcript first; the timing below is from my laptop.",
         "zh": "## 我的笔记\n\n我先在一个小的 transcript 上试了这个函数；下面的计时是在我的笔记本电脑上跑的。"}
TRY_OUT = ["%%bash\necho \"what the kernel's folder holds:\"\nls | head -5",
           "import sys\n\nprint(sys.version_info[:2])\nsorted(globals())[:5]"]


def jupyter_notebook(exercise: str, language: str) -> dict:
    """The student notebook with the reference answers in their Jupyter forms, a student's own cells, saved by
    JupyterLab 4."""
    notebook = with_answers(exercise, {**reference_answers(exercise), **FORMS[exercise].answers}, language)
    first_answer = next(index for index, cell in enumerate(notebook["cells"])
                        if cell.get("metadata", {}).get("s09", {}).get("role") == "answer")
    notebook["cells"][first_answer + 1:first_answer + 1] = (
        [_cell("markdown", NOTES[language])] + [_cell("code", source) for source in TRY_OUT])
    notebook["cells"].append(_cell("markdown", NOTES[language].split("\n")[0] + " (2)"))
    return as_jupyterlab_4_saves_it(notebook)


def _cell(kind: str, source: str) -> dict:
    cell = {"cell_type": kind, "id": str(uuid.uuid4()), "metadata": {}, "source": source}
    if kind == "code":
        cell.update(execution_count=None, outputs=[])
    return cell


def as_jupyterlab_4_saves_it(notebook: dict) -> dict:
    """The notebook as JupyterLab 4 writes it after Run All: nbformat 4.5, the kernel's metadata, sources as lists
    of lines, execution counts, timing metadata ("Record timing" on) and an output on every code cell."""
    notebook["nbformat"], notebook["nbformat_minor"] = 4, 5
    notebook["metadata"].update(
        kernelspec={"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
        language_info={"codemirror_mode": {"name": "ipython", "version": 3}, "file_extension": ".py",
                       "mimetype": "text/x-python", "name": "python", "nbconvert_exporter": "python",
                       "pygments_lexer": "ipython3", "version": "3.11.7"})
    count = 0
    for cell in notebook["cells"]:
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        cell["source"] = source.splitlines(keepends=True)
        if cell["cell_type"] != "code":
            continue
        count += 1
        cell["execution_count"] = count
        cell["metadata"]["execution"] = {"iopub.execute_input": "2026-12-06T09:14:02.118203Z",
                                         "iopub.status.busy": "2026-12-06T09:14:02.117866Z",
                                         "iopub.status.idle": "2026-12-06T09:14:02.201576Z",
                                         "shell.execute_reply": "2026-12-06T09:14:02.201048Z"}
        last = source.rstrip().split("\n")[-1]
        cell["outputs"] = [{"data": {"text/plain": [f"<function {last} at 0x7f3a5c1e2b60>"]}, "execution_count": count,
                            "metadata": {}, "output_type": "execute_result"}] if last.isidentifier() else [
            {"name": "stdout", "output_type": "stream", "text": ["CPU times: user 1.2 ms, sys: 0 ns, total: 1.2 ms\n"]}]
    return notebook


def write_saved(path, notebook: dict) -> None:
    """Write the notebook byte for byte as JupyterLab 4 does: one-space indent, sorted keys, UTF-8, a final newline."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    require_sandbox()
    folder = tmp_path_factory.mktemp("jupyter-forms")
    for exercise in EXERCISES:
        for language in LANGUAGES:
            write_saved(folder / language / SOURCES[exercise].path.name, jupyter_notebook(exercise, language))
    # the capstone at the reduced crash size: what is tried here is the notebook's syntax, not the crash states
    return grade_folder(folder, tmp_path_factory.mktemp("jupyter-forms-reports"), "--sandbox", "required",
                        "--seed", str(SEED), "--crash-size", "reduced")


def test_every_exercise_has_its_jupyter_forms():
    assert sorted(FORMS) == EXERCISES
    assert all(forms.loses == set() for forms in FORMS.values())


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("exercise", EXERCISES)
def test_the_reference_in_its_jupyter_forms_scores_full_marks(reports, exercise, language):
    report = reports[f"{language}/{SOURCES[exercise].path.name}"]
    lost = [(check["name"], check["feedback"][:300]) for check in report["checks"]
            if check["score"] < check["max_score"]]
    assert report["status"] == "graded", report["reason"]
    assert report["reason"] is None and "guard_findings" not in report, (report["reason"], report.get("guard_findings"))
    assert report["score"] == report["max_score"] == SOURCES[exercise].max_score, lost


# What each form looks like in a cell's source: the corpus as a whole must keep every one.
FORM_MARKS = {"the answer's name on the last line": None, "%%capture": "%%capture\n", "%%time": "%%time\n",
              "%timeit": "%timeit ", "%%bash": "%%bash\n", "a shell command": "\n!echo ",
              "a module-level executor": "= ThreadPoolExecutor(", "a thread still running": "threading.Thread(",
              "signal.signal": "signal.signal(", "top-level await": "\nawait ",
              "a library that patches modules": "import pkg_resources", "matplotlib inline": "%matplotlib inline\n",
              "logging": "logging.basicConfig("}


def test_the_notebooks_hold_every_form_together():
    sources = []
    for exercise in EXERCISES:
        notebook = jupyter_notebook(exercise, "en")
        sources += ["".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "code"]
    for form, mark in FORM_MARKS.items():
        if mark is None:
            named = [source for source in sources if source.rstrip().split("\n")[-1].isidentifier()]
            assert len(named) >= sum(len(SOURCES[exercise].answers) for exercise in EXERCISES), form
        else:
            assert any(mark in source for source in sources), form


@pytest.mark.parametrize("exercise", EXERCISES)
def test_the_same_notebook_runs_in_jupyter_with_every_visible_check_passing(exercise, tmp_path):
    """The corpus is honest: run top to bottom in a Jupyter kernel, as a student runs it, no cell fails and every
    visible check prints its pass line (the hidden checks are the grader's)."""
    import nbclient
    import nbformat

    from s09_jsonl_transcript.grading.source import pass_line

    write_saved(tmp_path / "saved.ipynb", jupyter_notebook(exercise, "en"))
    notebook = nbformat.read(tmp_path / "saved.ipynb", as_version=4)  # the saved file, as JupyterLab reopens it
    nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    printed = "".join(output.get("text", "") for cell in notebook.cells if cell.cell_type == "code"
                      for output in cell.outputs if output.get("output_type") == "stream")
    for check in SOURCES[exercise].checks:
        if not check.hidden:
            assert pass_line(check.name, check.points) in printed, check.name
