"""The names students see: a chapter's title and each exercise's, as its notebook heads them.

Read from the chapter's source (``solutions/NN_slug.py``): the chapter is its first
``# Capítulo …`` heading, and an exercise is named by the last ``## Ejercicio …`` heading
before its solution cell, without the points (``Ejercicio 2 · Dos pérdidas, un solo pase
hacia adelante``). Feedback and hidden-test reports use these names, never grade ids.
"""

import functools
import re
from dataclasses import dataclass

import jupytext

from autograder.course import chapter_named
from autograder.markers import TEST_SUFFIX, solution_cell_of

HEADING_RE = re.compile(r"^(#+)\s+(.+?)\s*$", re.MULTILINE)
POINTS_RE = re.compile(r"\s*\(\s*[\d.,]+\s+puntos?\s*\)$")
EXERCISE_HEADING = "Ejercicio"


@dataclass(frozen=True)
class Titles:
    chapter: str
    exercises: dict  # function name -> "Ejercicio N · …"

    def of_grade_id(self, grade_id):
        """The exercise a solution or graded cell belongs to (None for other cells)."""
        name = grade_id.removesuffix(TEST_SUFFIX) if grade_id else grade_id
        return self.exercises.get(name)


def hidden_tests_heading(chapter, function):
    """The first line of a hidden test's report: the exercise as the notebook names it."""
    return f"Pruebas ocultas · {chapter_titles(chapter).exercises.get(function, function)}"


def titles_in(cells, fallback):
    """The titles in a chapter's cells (jupytext cells of its source)."""
    chapter, current, exercises = None, None, {}
    for cell in cells:
        if cell.cell_type == "markdown":
            for level, text in HEADING_RE.findall(cell.source):
                text = POINTS_RE.sub("", text).replace("`", "")
                if chapter is None and len(level) == 1:
                    chapter = text
                elif text.startswith(EXERCISE_HEADING):
                    current = text
        elif solution_cell_of(cell) is not None and current is not None:
            exercises[solution_cell_of(cell)] = current
    return Titles(chapter or fallback, exercises)


@functools.cache
def chapter_titles(name):
    """The titles of chapter ``name`` (assignment name or key: ``01_grafo_dinamico``,
    ``ch01``); a chapter unknown here gets its name and no exercise titles."""
    try:
        chapter = chapter_named(name)
    except KeyError:
        return Titles(name, {})
    return titles_in(jupytext.read(chapter.source).cells, chapter.name)
