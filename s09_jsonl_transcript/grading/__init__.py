"""Release and grade the s09 exercises: `python -m s09_jsonl_transcript.grading --help`.

Modules, in the order a submission meets them:
  source    the exercise notebook format, and loading a pristine instructor copy;
  release   student notebooks, self-check copies and bundles made from the instructor sources;
  assemble  the notebook the grader runs: the pristine copy with the student's answer code;
  runner    one nbval run in a subprocess, in a fresh folder, with timeouts;
  probe     the pytest plugin inside that run, reporting each cell to the grader;
  crash     a crash-graded exercise (the capstone): its verdict, decided outside both kernels by
            durability/ (the engine), before the notebook runs;
  grader    scoring, reports and grading many submissions in parallel;
  reports   JSON, CSV, readable summaries and the progress bar;
  checks    helpers that the exercises' check cells use;
  cli       the command line; benchmark times the grader.

This package imports nothing here, so that `checks` stays cheap to import inside a kernel.
"""
