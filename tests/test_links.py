"""Every relative link a reader can follow points at a file of the kit: in the READMEs, the docs and the saved
notebooks' text, in both languages. A moved notebook (the chapters in notebooks/<language>/, the notebooks beyond
the lesson one folder down, in beyond-s09/) breaks the links into it and out of it; this finds them."""

import json
import re
from pathlib import Path
from urllib.parse import unquote

import pytest

from s09_jsonl_transcript.text.bilingual import notebook_files

REPO = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\]\(([^)\s]+)\)")  # [text](target): Markdown's inline links and images
PAGES = sorted({*REPO.glob("README*.md"), *REPO.glob("docs/**/*.md")})
NOTEBOOKS = [*notebook_files("en"), *notebook_files("zh")]


def markdown_of(path: Path) -> str:
    """The Markdown a reader sees in a page, or in a notebook's markdown cells."""
    if path.suffix != ".ipynb":
        return path.read_text(encoding="utf-8")
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return "\n".join("".join(cell["source"]) for cell in cells if cell["cell_type"] == "markdown")


def broken_links(path: Path) -> list[str]:
    """The relative link targets in a page or notebook that name no file or folder (anchors are not checked)."""
    targets = [unquote(target.split("#", 1)[0]) for target in LINK.findall(markdown_of(path))
               if not target.startswith(("http://", "https://", "mailto:", "#"))]
    return [target for target in targets if target and not (path.parent / target).exists()]


@pytest.mark.parametrize("path", PAGES + NOTEBOOKS, ids=lambda path: path.relative_to(REPO).as_posix())
def test_every_relative_link_points_at_a_file_of_the_kit(path):
    assert broken_links(path) == []


def test_a_link_that_climbs_one_folder_too_few_is_found(tmp_path):
    folder = tmp_path / "notebooks" / "en" / "beyond-s09"
    folder.mkdir(parents=True)
    (tmp_path / "exercises").mkdir()
    (tmp_path / "exercises" / "ex05.ipynb").write_text("{}", encoding="utf-8")
    page = folder / "page.md"
    page.write_text("[ex05](../../exercises/ex05.ipynb) [ex05](../../../exercises/ex05.ipynb) [web](https://x.org) "
                    "[here](#a-heading)", encoding="utf-8")
    assert broken_links(page) == ["../../exercises/ex05.ipynb"]
