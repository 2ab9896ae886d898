"""Chapter 3's damage panel, driven with the chapter's own damages, reading rule and verdict.

Each Apply starts from the undamaged bytes; the verdict shown is the chapter's (chapter_code), with the
colour and the name the chapter gives each kind.
"""

import matplotlib

matplotlib.use("Agg")  # plain pytest module: no display, no inline backend

import pytest
from chapter_code import run_cells

from s09_jsonl_transcript.lessons.display import MAIN_CONTROL_CLASS, RESULT_CLASS
from s09_jsonl_transcript.lessons.partial_tail_vs_corruption import MAX_ZERO_BYTES, DamageLab

CELLS = ["language", "imports", "file", "line-problem", "read-transcript", "read-run", "damage-functions", "verdict",
         "plot-map"]


@pytest.fixture(scope="module")
def chapter():
    """Chapter 3's cells: the damages, read_transcript, verdict, KINDS and COLORS among them."""
    return run_cells("03_partial_tail_vs_corruption", CELLS)


@pytest.fixture
def lab(chapter, tmp_path):
    damages = [("flip a byte", chapter["flip"], "byte"), ("truncate at byte", chapter["truncate"], "byte"),
               ("delete a line", chapter["delete_line"], "line"), ("append zero bytes", chapter["append_zeros"],
                                                                   "count")]

    def judge(path):
        return chapter["verdict"](chapter["read_transcript"], path, chapter["events"])

    return DamageLab(tmp_path / "session-3.jsonl", chapter["data"], damages=damages, judge=judge,
                     colors=chapter["COLORS"], labels=chapter["KINDS"])


def apply(lab, damage: str, position: int) -> str:
    lab.picker.value = damage
    lab.position.value = position
    lab.apply_button.click()
    return lab.result_text


def test_the_panel_marks_its_main_control_and_its_result(lab):
    assert MAIN_CONTROL_CLASS in lab.apply_button._dom_classes and RESULT_CLASS in lab.result._dom_classes


def test_it_starts_with_the_undamaged_file(lab, chapter):
    assert lab.path.read_bytes() == chapter["data"] and lab.result_text == "clean (5 events): file restored"


@pytest.mark.parametrize("damage, position, shown", [
    ("flip", 191, "accepted with different content (5 events): flip a byte at 191"),
    ("flip", 1104, "partial tail ignored (4 events): flip a byte at 1104"),
    ("truncate", 646, "clean (3 events): truncate at byte at 646"),
    ("delete_line", 5, "clean (4 events): delete a line at 5"),
    ("delete_line", 2, "corrupt (line 2, byte 237): delete a line at 2"),
    ("append_zeros", 8, "partial tail ignored (5 events): append zero bytes at 8"),
])
def test_each_apply_damages_the_undamaged_file_once_and_shows_the_chapter_s_verdict(lab, chapter, damage,
                                                                                     position, shown):
    assert apply(lab, damage, position) == shown
    assert lab.path.read_bytes() == chapter[damage](chapter["data"], position)
    kind = next(kind for kind, label in chapter["KINDS"].items() if shown.startswith(label))
    assert chapter["COLORS"][kind] in lab.result.value


def test_applying_twice_does_not_add_up(lab, chapter):
    apply(lab, "delete_line", 5)
    assert apply(lab, "delete_line", 5) == "clean (4 events): delete a line at 5"


def test_the_slider_follows_the_damage_s_unit(lab, chapter):
    lab.picker.value = "delete_line"
    assert (lab.position.min, lab.position.max) == (1, 5)
    lab.picker.value = "flip"
    assert (lab.position.min, lab.position.max) == (0, len(chapter["data"]) - 1)
    lab.picker.value = "append_zeros"
    assert (lab.position.min, lab.position.max) == (1, MAX_ZERO_BYTES)


def test_restore_puts_the_original_bytes_back(lab, chapter):
    apply(lab, "truncate", 100)
    lab.restore_button.click()
    assert lab.path.read_bytes() == chapter["data"] and lab.result_text == "clean (5 events): file restored"
