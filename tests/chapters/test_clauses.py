"""Every exercise's contract is a list of numbered clauses (autograder/contract.py), and each
clause is kept: hidden cases that check it for every student, a corpus variant that breaks it
alone and loses points, the notebook showing exactly that list, and the graded feedback citing
the clause a mistake breaks."""

from collections import Counter

import jupytext
import pytest

from autograder.build import expand_exercises
from autograder.contract import (
    CITING_SECRET,
    CITING_STUDENT,
    EVERY_CASE,
    GENERIC_DIAGNOSES,
    PLACEHOLDER,
    clauses_of,
    placeholders,
    render,
)
from autograder.corpus import all_variants
from autograder.course import chapters
from autograder.hidden.runner import grade_hidden
from autograder.hidden.space import drawn_values
from autograder.markers import solution_cell_of

STUDENTS = ("ana", "bruno", "carla")
SECRET = "clausulas"
DRAWN_STUDENTS = 20

# Exercises whose contract is still prose (issue 29 is converting them chapter by chapter):
# listed so that a new exercise cannot skip clauses, and removed as each one gets them.
PENDING = {}

EXERCISES = [pytest.param(c, name, id=f"{c.key}-{name}") for c in chapters()
             for name in c.module("student").EJERCICIOS]
CLAUSES = [pytest.param(c, name, number, clause, id=f"{c.key}-{name}-{number}")
           for c in chapters() for name, clauses in clauses_of(c).items()
           for number, clause in enumerate(clauses, 1)]


def _solution_cell(chapter, name):
    return next(cell for cell in jupytext.read(chapter.source).cells
                if solution_cell_of(cell) == name)


@pytest.mark.parametrize("chapter,name", EXERCISES)
def test_every_exercise_has_clauses_and_its_docstring_shows_them(chapter, name):
    clauses = clauses_of(chapter).get(name)
    if name in PENDING.get(chapter.key, ()):
        assert not clauses, f"{name} has clauses now: take it out of PENDING"
        return
    assert clauses, f"autograder/chapters/{chapter.key}/contract.py: no clauses for {name}"
    assert placeholders(_solution_cell(chapter, name).source) == 1, (
        f"the docstring of {name} needs one line {PLACEHOLDER!r}")
    built = expand_exercises(chapter, jupytext.read(chapter.source))
    docstring = next(cell.source for cell in built.cells if solution_cell_of(cell) == name)
    assert render(clauses) in docstring and PLACEHOLDER not in docstring


@pytest.mark.parametrize("chapter", chapters(), ids=lambda c: c.name)
def test_clauses_name_only_exercises_of_the_chapter(chapter):
    assert set(clauses_of(chapter)) <= set(chapter.module("student").EJERCICIOS)


@pytest.mark.parametrize("chapter,name,number,clause", CLAUSES)
def test_clause_is_one_spanish_sentence_or_two(chapter, name, number, clause):
    text = " ".join(clause.text.split())
    assert (text[:1].isupper() or text.startswith("``")) and text.endswith("."), text
    assert len(text) <= 400, "one fact per clause: split it"


@pytest.mark.parametrize("chapter,name,number,clause", CLAUSES)
def test_every_student_meets_a_case_that_checks_the_clause(chapter, name, number, clause):
    if clause.cases == EVERY_CASE:
        return
    hidden = chapter.module("hidden").HIDDEN[name]
    dimensions = {d.name: d for d in hidden.space.dimensions}
    assert clause.cases, "a clause names the cases that check it"
    for dimension, value in clause.cases:
        assert dimension in dimensions, f"{dimension!r} is not a dimension of {name}'s space"
        for i in range(DRAWN_STUDENTS):
            seen = drawn_values(hidden, dimensions[dimension], f"estudiante{i}", SECRET)
            assert value in seen, f"estudiante{i} never meets {dimension}={value!r}: {seen}"


@pytest.mark.parametrize("chapter,name,number,clause", CLAUSES)
def test_a_variant_that_breaks_the_clause_alone_loses_points(chapter, name, number, clause):
    assert clause.violated_by, "every clause names a corpus variant that breaks it"
    variants = {v.name: v for v in all_variants((chapter.key,)) if v.exercise == name}
    hidden = chapter.module("hidden").HIDDEN
    for variant_name in clause.violated_by:
        variant = variants.get(variant_name)
        assert variant is not None, f"{variant_name!r} is not a variant of {name}"
        assert not variant.correct, f"{variant_name} is labelled correct"
        for student in STUDENTS:
            result = grade_hidden(name, hidden, variant.function, student, SECRET)
            assert result.puntos < result.maximo, result.informe(variant_name)


@pytest.mark.parametrize("chapter,name", EXERCISES)
def test_a_variant_breaks_one_clause_only(chapter, name):
    named = Counter(v for clause in clauses_of(chapter).get(name, ())
                    for v in clause.violated_by)
    assert [v for v, n in named.items() if n > 1] == []


@pytest.mark.parametrize("chapter,name,number,clause", CLAUSES)
def test_the_feedback_cites_the_clause_a_violating_variant_breaks(chapter, name, number, clause):
    variants = {v.name: v for v in all_variants((chapter.key,)) if v.exercise == name}
    hidden = chapter.module("hidden").HIDDEN
    for variant_name in clause.violated_by:
        if variant_name not in variants:
            continue  # reported by the test above
        result = grade_hidden(name, hidden, variants[variant_name].function, CITING_STUDENT,
                              CITING_SECRET)
        specific = [f for _, f in result.fallos
                    if f is not None and f.diagnostico not in GENERIC_DIAGNOSES]
        if specific:
            assert f"Lo pide la cláusula {number}. " in result.informe("Pruebas")
