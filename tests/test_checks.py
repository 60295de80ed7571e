"""Every chapter's checks, in process: the same contract for every exercise of the course.

Conventions each chapter follows (see README, "Writing a chapter"):
``autograder.student.chNN.EJERCICIOS`` (exercise id -> Ejercicio) with a public check
``comprobar_<funcion>``; ``autograder.checks.chNN.HIDDEN`` with the same ids and a
graded-cell entry point ``check_<funcion>``; ``autograder.reference.chNN.<funcion>``;
and a variant corpus in ``autograder.variants.chNN``.
"""

import importlib

import jupytext
import pytest

from autograder.checks.runner import grade_hidden
from autograder.course import chapters
from autograder.student.compare import ComprobacionFallida
from autograder.variants import all_variants


def _exercises():
    found = []
    for chapter in chapters():
        modules = {kind: importlib.import_module(f"autograder.{kind}.{chapter.key}")
                   for kind in ("student", "checks", "reference")}
        for exercise_id, ejercicio in modules["student"].EJERCICIOS.items():
            found.append(pytest.param(chapter, exercise_id, ejercicio.funcion, modules,
                                      id=exercise_id))
    return found


EXERCISES = _exercises()
VARIANTS = all_variants()


def grade(exercise_id, function, student="alumna"):
    table = importlib.import_module(f"autograder.checks.{exercise_id[:4]}").HIDDEN
    return grade_hidden(exercise_id, table, function, student, secret="pruebas")


def public_check(exercise_id):
    student = importlib.import_module(f"autograder.student.{exercise_id[:4]}")
    return getattr(student, "comprobar_" + student.EJERCICIOS[exercise_id].funcion)


def stub(*args, **kwargs):
    raise NotImplementedError()


def graded_points(chapter, exercise_id):
    cells = jupytext.read(chapter.source).cells
    return next(c.metadata["nbgrader"]["points"] for c in cells
                if c.metadata.get("nbgrader", {}).get("grade_id") == exercise_id + "_test")


@pytest.mark.parametrize("chapter", chapters(), ids=lambda c: c.name)
def test_every_exercise_in_the_source_has_checks_and_a_reference(chapter):
    solution_ids = {c.metadata["nbgrader"]["grade_id"] for c in jupytext.read(chapter.source).cells
                    if c.metadata.get("nbgrader", {}).get("solution")}
    student = importlib.import_module(f"autograder.student.{chapter.key}")
    checks = importlib.import_module(f"autograder.checks.{chapter.key}")
    reference = importlib.import_module(f"autograder.reference.{chapter.key}")
    assert set(student.EJERCICIOS) == set(checks.HIDDEN) == solution_ids
    for ejercicio in student.EJERCICIOS.values():
        assert callable(getattr(reference, ejercicio.funcion))
        assert callable(getattr(checks, "check_" + ejercicio.funcion))
        assert "comprobar_" + ejercicio.funcion in student.__all__


@pytest.mark.parametrize("chapter,exercise_id,funcion,modules", EXERCISES)
def test_reference_gets_full_marks_and_passes_the_public_check(
        chapter, exercise_id, funcion, modules, capsys):
    reference = getattr(modules["reference"], funcion)
    for student in ("alumna", "alumno"):
        result = grade(exercise_id, reference, student)
        assert result.puntos == result.maximo, result.informe(exercise_id)
        assert result.diagnostico is None
    public_check(exercise_id)(reference)
    assert "✓" in capsys.readouterr().out


@pytest.mark.parametrize("chapter,exercise_id,funcion,modules", EXERCISES)
def test_the_untouched_stub_and_a_function_doing_nothing_score_zero(
        chapter, exercise_id, funcion, modules):
    result = grade(exercise_id, stub)
    assert result.puntos == 0 and result.diagnostico == "sin_implementar"
    assert grade(exercise_id, lambda *args, **kwargs: None).puntos == 0
    with pytest.raises(ComprobacionFallida):
        public_check(exercise_id)(stub)


@pytest.mark.parametrize("chapter,exercise_id,funcion,modules", EXERCISES)
def test_parts_add_up_to_the_cell_points_and_the_cell_returns_its_score(
        chapter, exercise_id, funcion, modules, capsys):
    points = graded_points(chapter, exercise_id)
    assert modules["checks"].HIDDEN[exercise_id].points == points
    # The graded cell's last expression is this value: nbgrader reads it as the score.
    check = getattr(modules["checks"], "check_" + funcion)
    assert check(getattr(modules["reference"], funcion)) == points
    assert f"{points:g} / {points:g} puntos" in capsys.readouterr().out


@pytest.mark.parametrize("chapter,exercise_id,funcion,modules", EXERCISES)
def test_corpus_covers_every_exercise(chapter, exercise_id, funcion, modules):
    mine = [v for v in VARIANTS if v.exercise == exercise_id]
    assert sum(v.correct for v in mine) >= 2, exercise_id
    assert sum(not v.correct for v in mine) >= 3, exercise_id
    assert any(v.expected == "resultado_fijo" for v in mine), "needs a hard-coded variant"


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
@pytest.mark.parametrize("student", ["alumna", "alumno"])
def test_hidden_tests_score_each_variant_as_labelled(variant, student):
    result = grade(variant.exercise, variant.function, student)
    if variant.correct:
        assert result.puntos == result.maximo, result.informe(variant.name)
    else:
        assert result.puntos < result.maximo
        assert result.diagnostico == variant.expected, result.informe(variant.name)


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_public_checks_agree_with_the_hidden_ones(variant, capsys):
    check = public_check(variant.exercise)
    if variant.correct:
        check(variant.function)
        assert "✓" in capsys.readouterr().out
    elif variant.expected == "resultado_fijo":
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


@pytest.mark.parametrize("chapter,exercise_id,funcion,modules", EXERCISES)
def test_public_check_is_silent_while_nbgrader_autogrades(
        chapter, exercise_id, funcion, modules, monkeypatch):
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    assert public_check(exercise_id)(stub) is None
