"""Where the kit departs from the two production designs, and why: read from docs/production.md.

The table is design prose, not behaviour, so it lives on the page that explains the designs (its
section "Where the kit departs from the designs", one row per departure: topic, the design, the
kit, why) and nowhere else. read_departures turns that table into the rows turns.DEPARTURES gives:
notebook 7 shows them, and tests/test_seed_rows.py matches every design row the kit does not
implement as written to one of them. The page belongs to the kit's repository, not to an installed
wheel: reading it there raises DeparturesUnavailable, and nothing else in the package needs it.
"""

from __future__ import annotations

from pathlib import Path

PAGE = Path(__file__).resolve().parents[2] / "docs" / "production.md"
HEADING = "## Where the kit departs from the designs"
COLUMNS = ("topic", "design", "kit", "why")
HEADER = "| topic | the design | the kit | why |"  # the table's first line, as the page writes it


class DeparturesUnavailable(LookupError):
    """The page with the departures table is missing, or has no such table: nothing to read the rows from."""


def read_departures(page: Path = PAGE) -> tuple[dict, ...]:
    """The departures table of page, one dict per row with the keys COLUMNS, in the page's order.

    Raises DeparturesUnavailable when the page or its section is missing, and ValueError naming the
    line when a row does not have one non-empty cell per column.
    """
    try:
        text = page.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DeparturesUnavailable(f"{page} is missing: the departures table lives in the kit's repository, "
                                    f"docs/production.md") from None
    lines = text.splitlines()
    start = next((number for number, line in enumerate(lines) if line.startswith(HEADING)), None)
    if start is None:
        raise DeparturesUnavailable(f"{page} has no section {HEADING!r}")
    end = next((number for number in range(start + 1, len(lines)) if lines[number].startswith("## ")), len(lines))
    lines = [line for line in lines[start + 1:end] if line.startswith("|")]
    if not lines or lines[0] != HEADER:
        raise DeparturesUnavailable(f"{page}: the section {HEADING!r} has no table headed {HEADER!r}")
    rows = []
    for line in lines[2:]:  # the header, then the |---| line
        cells = [cell.strip() for cell in line.strip().removeprefix("|").removesuffix("|").split(" | ")]
        if len(cells) != len(COLUMNS) or not all(cells):
            raise ValueError(f"{page}: a departure row needs {len(COLUMNS)} non-empty cells "
                             f"({', '.join(COLUMNS)}): {line!r}")
        rows.append(dict(zip(COLUMNS, cells)))
    return tuple(rows)
