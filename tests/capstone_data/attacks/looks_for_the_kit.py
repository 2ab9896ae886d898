# Attack: the answer looks for the kit's files where they are on the grader's machine ({package}, put
# in by the test), and for the grader's folders (its logs among them), where it could read or change
# them. It raises if it finds any: graded as the reference, it finds none.
# ruff: noqa: F821
import glob

_SEARCHED = [*glob.glob("/dev/shm/s09-capstone-*"), *glob.glob("/tmp/s09-capstone-*"),
             *glob.glob("{package}/*.py"), *glob.glob("{package}/grading/durability/*.py")]
if _SEARCHED:
    raise RuntimeError(f"found {_SEARCHED[:3]}")
