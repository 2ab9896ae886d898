"""Old import paths of modules that moved into subpackages in 0.2 (see CHANGELOG.md).

Each old module is a two-line file that calls `forward`: importing it warns once and hands back
the module at its new path, so old code keeps working until version 0.3 removes the old names.
"""

from __future__ import annotations

import importlib
import runpy
import sys
import warnings

REMOVED_IN = "0.3"


def forward(old: str, new: str) -> None:
    """Make the module named `old` stand for the module named `new`, with a DeprecationWarning;
    run as a program (`python -m old`), run `new` as the program instead."""
    if old == "__main__":  # `python -m <old path>`: without this the old command would do nothing
        old = sys.modules["__main__"].__spec__.name
        # stacklevel 2: the shim, which is __main__ here, so Python shows the warning by default
        warnings.warn(f"{old} moved to {new}; the old name is removed in version {REMOVED_IN}",
                      DeprecationWarning, stacklevel=2)
        runpy.run_module(new, run_name="__main__", alter_sys=True)
        return
    warnings.warn(f"{old} moved to {new}; the old name is removed in version {REMOVED_IN}",
                  DeprecationWarning, stacklevel=3)
    sys.modules[old] = importlib.import_module(new)
