"""The capstone's named answers through the grader's command line, at the reduced crash size (.ci/run's step).

    .venv/bin/python tests/capstone_reduced.py [--seed N]

Writes a class folder: the reference in English and in Chinese, and each named wrong answer of
tests/grading_data/wrong_answers/ex06.txt, in English and Chinese in turn; grades it as an instructor would,
`python -m s09_jsonl_transcript.grading grade FOLDER --exercise ex06 --crash-size reduced --sandbox required`, and
exits 1 unless the reference scores full marks and each wrong answer loses exactly the checks it names. Every
answer in both languages, at a smaller size, is tests/test_grading_capstone.py's (the slow tier).
"""

import argparse
import json
import secrets
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_grading_support import SOURCES, reference_answers, with_answers, write_notebook, wrong_answers  # noqa: E402

from s09_jsonl_transcript.grading.cli import main  # noqa: E402

EXERCISE = "ex06"


def class_folder(folder: Path) -> dict:
    """Write the class; return label -> the checks its submission must lose."""
    source = SOURCES[EXERCISE]
    expected = {}
    for language, place in (("en", ""), ("zh", "zh/")):
        label = f"{place}reference/{source.path.name}"
        write_notebook(folder / label, with_answers(EXERCISE, reference_answers(EXERCISE), language))
        expected[label] = set()
    for number, wrong in enumerate(wrong for wrong in wrong_answers() if wrong.exercise == EXERCISE):
        place, language = (("", "en"), ("zh/", "zh"))[number % 2]
        label = f"{place}wrong/{wrong.name}.ipynb"
        write_notebook(folder / label, with_answers(EXERCISE, wrong.answers, language))
        expected[label] = wrong.loses
    return expected


def main_(argv=None) -> int:
    """Grade the class and compare; the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=secrets.randbelow(10**9))
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="s09-capstone-") as scratch:
        folder, reports = Path(scratch) / "class", Path(scratch) / "reports"
        expected = class_folder(folder)
        started = time.monotonic()
        status = main(["grade", str(folder), "--exercise", EXERCISE, "--crash-size", "reduced", "--sandbox",
                       "required", "--seed", str(args.seed), "--reports", str(reports), "--jobs", "2"])
        seconds = time.monotonic() - started
        found = {}
        for path in reports.rglob("*.json"):
            report = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(report, dict) and "submission" in report:
                found[report["submission"]] = report
    wrong = []
    for label, loses in sorted(expected.items()):
        report = found.get(label)
        lost = None if report is None else {check["id"] for check in report["checks"]
                                            if check["score"] < check["max_score"]}
        if report is None or report["status"] != "graded" or lost != loses:
            wrong.append(f"{label}: expected to lose {sorted(loses) or 'nothing'}, got "
                         f"{'no report' if report is None else (report['status'], sorted(lost), report['reason'])}")
    print(f"the capstone at the reduced size, seed {args.seed}: {len(expected)} submissions graded in {seconds:.0f} s; "
          + ("each lost exactly what it should" if not wrong else "MISMATCHES:\n  " + "\n  ".join(wrong)))
    return 1 if wrong or status != 0 else 0


if __name__ == "__main__":
    sys.exit(main_())
