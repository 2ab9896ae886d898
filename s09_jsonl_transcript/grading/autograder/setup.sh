#!/usr/bin/env bash
# Gradescope runs this once, as root, while it builds the autograder image (Ubuntu). The autograder
# zip holds this kit at its root, instructor sources included; Gradescope unpacks it in
# /autograder/source. See the README, "Grading on Gradescope".
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -q python3-venv bubblewrap strace  # strace: the capstone's recorder (ex06)
cd /autograder/source
python3 -m venv .venv
.venv/bin/pip install -q -e ".[grader]"  # the grader alone: no notebooks, browser or lint tools
