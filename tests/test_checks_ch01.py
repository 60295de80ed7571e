"""Chapter 1 checks, in process: every variant is graded as its label says."""

import pytest
import torch

from autograder.checks import ch01 as hidden
from autograder.checks.runner import run_hidden
from autograder.reference import ch01 as reference
from autograder.student import ch01 as public
from autograder.student.compare import ComprobacionFallida, ejecutar_pasos
from autograder.variants import all_variants

VARIANTS = all_variants(("ch01",))
REFERENCES = {
    "ch01_manual_backward": reference.manual_backward,
    "ch01_two_losses": reference.two_loss_grads,
    "ch01_gradient_penalty": reference.gradient_penalty,
}


def grade_hidden(exercise, function, student="alumna"):
    run_hidden(exercise, hidden.HIDDEN_STEPS, function, student=student, secret="pruebas")


def grade_public(exercise, function):
    ejecutar_pasos(public.PASOS_PUBLICOS[exercise], function, semilla=7)


@pytest.mark.parametrize("exercise", sorted(REFERENCES))
def test_reference_passes_hidden_and_public_checks(exercise, capsys):
    grade_hidden(exercise, REFERENCES[exercise])
    grade_public(exercise, REFERENCES[exercise])
    assert "superadas" in capsys.readouterr().out


def test_corpus_covers_every_exercise():
    for exercise in REFERENCES:
        mine = [v for v in VARIANTS if v.exercise == exercise]
        assert sum(v.correct for v in mine) >= 2, exercise
        assert sum(not v.correct for v in mine) >= 3, exercise


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
@pytest.mark.parametrize("student", ["alumna", "alumno"])
def test_hidden_tests_grade_each_variant_as_labelled(variant, student):
    if variant.correct:
        grade_hidden(variant.exercise, variant.function, student)
    else:
        with pytest.raises(ComprobacionFallida) as failure:
            grade_hidden(variant.exercise, variant.function, student)
        assert failure.value.diagnostico == variant.expected, str(failure.value)


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_public_checks_agree_with_the_hidden_ones(variant):
    if variant.correct:
        grade_public(variant.exercise, variant.function)
    else:
        with pytest.raises(ComprobacionFallida):
            grade_public(variant.exercise, variant.function)


def test_hidden_inputs_differ_between_students_and_repeat_on_regrade():
    seen = {}

    def spy(x, y, W1, b1, W2, b2):
        seen.setdefault(student, []).append(x.clone())
        return reference.manual_backward(x, y, W1, b1, W2, b2)

    for student in ("alumna", "alumno", "alumna"):
        grade_hidden("ch01_manual_backward", spy, student)
    first, second = seen["alumna"][:3], seen["alumna"][3:]
    assert all(torch.equal(a, b) for a, b in zip(first, second))
    assert any(a.shape != b.shape or not torch.equal(a, b)
               for a, b in zip(first, seen["alumno"]))


def test_hidden_inputs_differ_from_the_public_ones():
    shapes = {}

    def spy(kind):
        def manual_backward(x, y, W1, b1, W2, b2):
            shapes.setdefault(kind, set()).add((tuple(x.shape), x.dtype, x.flatten()[0].item()))
            return reference.manual_backward(x, y, W1, b1, W2, b2)
        return manual_backward

    public.comprobar_manual_backward(spy("public"))
    grade_hidden("ch01_manual_backward", spy("hidden"))
    assert not shapes["public"] & shapes["hidden"]


def test_hidden_checks_return_none():
    # nbgrader would read a number left as the cell's value as a partial score.
    assert hidden.check_two_loss_grads(reference.two_loss_grads) is None


def test_failures_render_without_traceback():
    with pytest.raises(ComprobacionFallida) as failure:
        grade_hidden("ch01_two_losses", lambda model, x, y: None)
    rendered = "\n".join(failure.value._render_traceback_())
    assert "File " not in rendered and "autograder" not in rendered
