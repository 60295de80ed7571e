"""Every chapter's checks, in process: the same contract for every exercise of the course.

Conventions each chapter follows (docs/grading-model.md, "Writing a chapter"): in
``autograder/chapters/chNN/``, ``student.py`` declares each exercise once
(``EJERCICIOS``: function name -> Ejercicio, with its parts and points) and its public
check ``comprobar_<funcion>``; ``hidden.py`` draws the hidden cases and computes what the
reference (the solution cell, ``autograder.hidden.reference``) gives on them
(``HIDDEN``); ``variants.py`` holds the labelled corpus and the sample class's students.
What is particular to one chapter is tested in ``tests/chapters/test_chNN.py``.
"""

from pathlib import Path

import jupytext
import pytest
import torch
import torch.nn.functional as F

from autograder.corpus import all_variants
from autograder.course import chapters
from autograder.hidden.reference import load_reference
from autograder.hidden.runner import grade_hidden
from autograder.markers import graded_cell_of, solution_cell_of
from autograder.student.compare import ComprobacionFallida


def _exercises():
    found = []
    for chapter in chapters():
        for name in chapter.module("student").EJERCICIOS:
            found.append(pytest.param(chapter, name, id=f"{chapter.key}-{name}"))
    return found


def _sample_students():
    """The sample class's students whose cells can run in this process (not the one that
    never ends or kills its kernel: those are graded end to end, tests/test_grading.py)."""
    found = []
    for chapter in chapters():
        for student in getattr(chapter.module("variants"), "SAMPLE_STUDENTS", []):
            if student.expected_status == "graded" and student.replacements:
                found.append(pytest.param(chapter, student,
                                          id=f"{chapter.key}-{student.student_id}"))
    return found


EXERCISES = _exercises()
VARIANTS = all_variants()
SAMPLE_STUDENTS = _sample_students()


def grade(chapter, exercise_id, function, student="alumna"):
    table = chapter.module("hidden").HIDDEN
    return grade_hidden(exercise_id, table, function, student, secret="pruebas")


def public_check(chapter, exercise_id):
    return getattr(chapter.module("student"), "comprobar_" + exercise_id)


def stub(*args, **kwargs):
    raise NotImplementedError()


def _chapter(key):
    return next(c for c in chapters() if c.key == key)


@pytest.mark.parametrize("chapter", chapters(), ids=lambda c: c.name)
def test_every_exercise_in_the_source_is_declared_once_and_has_a_reference(chapter):
    cells = jupytext.read(chapter.source).cells
    solutions = [solution_cell_of(c) for c in cells if solution_cell_of(c)]
    tests = [graded_cell_of(c) for c in cells if graded_cell_of(c)]
    student = chapter.module("student")
    assert solutions == tests and len(set(solutions)) == len(solutions)
    assert list(student.EJERCICIOS) == solutions  # declared in notebook order
    assert set(chapter.module("hidden").HIDDEN) == set(solutions)
    reference = load_reference(chapter.key)
    for name, exercise in student.EJERCICIOS.items():
        assert exercise.funcion == name and callable(getattr(reference, name))
        assert "comprobar_" + name in student.__all__


@pytest.mark.parametrize("chapter", chapters(), ids=lambda c: c.name)
def test_every_chapter_has_its_own_tests(chapter):
    assert (Path(__file__).parent / f"test_{chapter.key}.py").is_file()


@pytest.mark.parametrize("chapter,exercise_id", EXERCISES)
def test_reference_gets_full_marks_and_passes_the_public_check(chapter, exercise_id, capsys):
    reference = getattr(load_reference(chapter.key), exercise_id)
    for student in ("alumna", "alumno"):
        result = grade(chapter, exercise_id, reference, student)
        assert result.puntos == result.maximo, result.informe(exercise_id)
        assert result.diagnostico is None
    public_check(chapter, exercise_id)(reference)
    assert "✓" in capsys.readouterr().out


@pytest.mark.parametrize("chapter,exercise_id", EXERCISES)
def test_the_untouched_stub_and_a_function_doing_nothing_score_zero(chapter, exercise_id):
    result = grade(chapter, exercise_id, stub)
    assert result.puntos == 0 and result.diagnostico == "sin_implementar"
    assert grade(chapter, exercise_id, lambda *args, **kwargs: None).puntos == 0
    with pytest.raises(ComprobacionFallida):
        public_check(chapter, exercise_id)(stub)


@pytest.mark.parametrize("chapter,exercise_id", EXERCISES)
def test_the_graded_cell_returns_its_score_and_the_build_gives_it_those_points(
        chapter, exercise_id, capsys):
    from autograder.build import source_notebook

    points = chapter.module("hidden").HIDDEN[exercise_id].points
    cell = next(c for c in source_notebook(chapter).cells
                if c.metadata.get("nbgrader", {}).get("grade_id") == exercise_id + "_test")
    assert cell.metadata["nbgrader"]["points"] == points
    # The graded cell's last expression is this value: nbgrader reads it as the score.
    check = chapter.module("hidden").check
    assert check(exercise_id, getattr(load_reference(chapter.key), exercise_id)) == points
    assert f"{points:g} / {points:g} puntos" in capsys.readouterr().out


@pytest.mark.parametrize("chapter,exercise_id", EXERCISES)
def test_corpus_covers_every_exercise(chapter, exercise_id):
    mine = [v for v in VARIANTS if v.exercise == exercise_id and v.chapter == chapter.key]
    assert sum(v.correct for v in mine) >= 2, exercise_id
    assert sum(not v.correct for v in mine) >= 3, exercise_id
    assert any(v.expected in ("resultado_fijo", "resultado_constante") for v in mine), (
        "needs a hard-coded variant")


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
@pytest.mark.parametrize("student", ["alumna", "alumno"])
def test_hidden_tests_score_each_variant_as_labelled(variant, student):
    result = grade(_chapter(variant.chapter), variant.exercise, variant.function, student)
    if variant.correct:
        assert result.puntos == result.maximo, result.informe(variant.name)
    else:
        assert result.puntos < result.maximo
        assert result.diagnostico == variant.expected, result.informe(variant.name)


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_public_checks_agree_with_the_hidden_ones(variant, capsys):
    check = public_check(_chapter(variant.chapter), variant.exercise)
    if variant.correct:
        check(variant.function)
        assert "✓" in capsys.readouterr().out
    elif variant.expected in ("resultado_fijo", "resultado_constante"):
        # A hard-coded answer may well pass on the public example (only hidden inputs
        # expose it); the public check must at most fail cleanly.
        try:
            check(variant.function)
        except ComprobacionFallida as failure:
            assert "Pista:" in str(failure)
    else:
        with pytest.raises(ComprobacionFallida) as failure:
            check(variant.function)
        assert "Pista:" in str(failure.value)


@pytest.mark.parametrize("chapter,exercise_id", EXERCISES)
def test_public_check_is_silent_while_nbgrader_autogrades(chapter, exercise_id, monkeypatch):
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    assert public_check(chapter, exercise_id)(stub) is None


def expected_points(student, exercise_id, points):
    test_id = exercise_id + "_test"
    if test_id in student.partial:
        return student.partial[test_id]
    return 0.0 if test_id in student.lost or "*" in student.lost else points


@pytest.mark.parametrize("chapter,student", SAMPLE_STUDENTS)
def test_sample_students_cells_score_as_declared(chapter, student):
    """Each replaced cell, run as the notebook runs it, gets the points its chapter declares
    for the sample class (partial credit, or 0 for a lost exercise)."""
    table = chapter.module("hidden").HIDDEN
    for exercise_id, code in student.replacements.items():
        namespace = {"torch": torch, "nn": torch.nn, "F": F}
        exec(code, namespace)  # noqa: S102 - the corpus' own student cell
        result = grade(chapter, exercise_id, namespace[exercise_id], student.student_id)
        expected = expected_points(student, exercise_id, table[exercise_id].points)
        assert result.puntos == expected, result.informe(f"{student.student_id}: {exercise_id}")
