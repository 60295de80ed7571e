"""The exercise catalogue shows the course's ramp: every exercise declares a difficulty tag,
the tags never go down within a chapter, and the last exercise alone is the capstone."""

from autograder.catalogue import LEVELS, catalogue_table, exercises
from autograder.course import chapters


def test_every_exercise_declares_a_difficulty_tag():
    assert {e.function: e.difficulty for e in exercises() if e.difficulty not in LEVELS} == {}


def test_difficulty_never_goes_down_within_a_chapter():
    for chapter in chapters():
        levels = [(e.function, e.difficulty) for e in exercises() if e.chapter == chapter.name]
        assert all(a[1] <= b[1] for a, b in zip(levels, levels[1:])), (chapter.name, levels)


def test_the_capstone_is_the_last_exercise_and_the_only_one_at_the_top_level():
    items = exercises()
    if len(chapters()) < 7:  # AUTOGRADER_CHAPTERS: only some chapters are loaded
        return
    top = [e.function for e in items if e.difficulty == max(LEVELS)]
    assert top == [items[-1].function]


def test_the_table_shows_points_and_tags():
    table = catalogue_table()
    assert "difficulty" in table.splitlines()[0]
    for e in exercises():
        line = next(line for line in table.splitlines()
                    if line.startswith(e.chapter) and e.grade_id in line)
        assert f"{e.difficulty} {LEVELS[e.difficulty]}" in line
