"""What the report calls things: chapters and exercises as their notebooks head them,
misconceptions by the title of their message (``student.messages.CATALOGO``)."""

import functools

from autograder.titles import chapter_titles


@functools.cache
def _catalogue():
    from autograder.course import chapter_modules
    from autograder.student.messages import CATALOGO

    chapter_modules("student")  # every chapter registers its own messages
    return CATALOGO


def chapter_name(assignment):
    return chapter_titles(assignment).chapter


def exercise_name(assignment, cell):
    return chapter_titles(assignment).of_grade_id(cell) or cell


def diagnosis_title(diagnosis_id):
    """The message's title («dividir la pérdida dos veces por `accum`»), or the id."""
    entry = _catalogue().get(diagnosis_id)
    return entry[0] if entry else diagnosis_id
