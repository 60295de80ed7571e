"""Chapter 1 checks, in process: references, public checks, per-student inputs, scoring."""

import jupytext
import pytest
import torch

from autograder.checks import ch01 as hidden
from autograder.checks.runner import grade_hidden
from autograder.course import chapter_named
from autograder.reference import ch01 as reference
from autograder.student import ch01 as public
from autograder.student.compare import ComprobacionFallida
from autograder.variants import all_variants

VARIANTS = all_variants(("ch01",))
REFERENCES = {
    "ch01_manual_backward": reference.manual_backward,
    "ch01_two_losses": reference.two_loss_grads,
    "ch01_gradient_penalty": reference.gradient_penalty,
}
PUBLIC = {
    "ch01_manual_backward": public.comprobar_manual_backward,
    "ch01_two_losses": public.comprobar_two_loss_grads,
    "ch01_gradient_penalty": public.comprobar_gradient_penalty,
}


def grade(exercise, function, student="alumna"):
    return grade_hidden(exercise, hidden.HIDDEN, function, student, secret="pruebas")


@pytest.mark.parametrize("exercise", sorted(REFERENCES))
def test_reference_gets_full_marks_and_passes_the_public_check(exercise, capsys):
    result = grade(exercise, REFERENCES[exercise])
    assert result.puntos == result.maximo and result.diagnostico is None
    PUBLIC[exercise](REFERENCES[exercise])
    assert "✓" in capsys.readouterr().out


def test_corpus_covers_every_exercise():
    for exercise in REFERENCES:
        mine = [v for v in VARIANTS if v.exercise == exercise]
        assert sum(v.correct for v in mine) >= 2, exercise
        assert sum(not v.correct for v in mine) >= 3, exercise
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
    if variant.correct:
        PUBLIC[variant.exercise](variant.function)
    elif variant.expected == "resultado_fijo":
        # A hard-coded answer may well pass on the public example (only hidden inputs
        # expose it); the public check must at most fail cleanly.
        try:
            PUBLIC[variant.exercise](variant.function)
        except ComprobacionFallida as failure:
            assert "Pista:" in str(failure)
    else:
        with pytest.raises(ComprobacionFallida) as failure:
            PUBLIC[variant.exercise](variant.function)
        assert "Pista:" in str(failure.value)


def test_hidden_inputs_differ_between_students_and_repeat_on_regrade():
    seen = {}

    def spy_for(student):
        def manual_backward(x, y, W1, b1, W2, b2):
            seen.setdefault(student, []).append(x.clone())
            return reference.manual_backward(x, y, W1, b1, W2, b2)
        return manual_backward

    grade("ch01_manual_backward", spy_for("a"), "alumna")
    grade("ch01_manual_backward", spy_for("a2"), "alumna")
    grade("ch01_manual_backward", spy_for("b"), "alumno")
    assert all(torch.equal(u, v) for u, v in zip(seen["a"], seen["a2"]))
    assert any(u.shape != v.shape or not torch.equal(u, v) for u, v in zip(seen["a"], seen["b"]))


def test_hidden_inputs_differ_from_the_public_ones():
    seen = {"public": set(), "hidden": set()}

    def spy_for(kind):
        def manual_backward(x, y, W1, b1, W2, b2):
            seen[kind].add((tuple(x.shape), x.flatten()[0].item()))
            return reference.manual_backward(x, y, W1, b1, W2, b2)
        return manual_backward

    public.comprobar_manual_backward(spy_for("public"))
    grade("ch01_manual_backward", spy_for("hidden"))
    assert seen["public"] and seen["hidden"] and not seen["public"] & seen["hidden"]


def test_partial_credit_names_what_failed():
    wrong = next(v for v in VARIANTS if v.name == "gradient_penalty_without_create_graph")
    result = grade(wrong.exercise, wrong.function)
    assert 0 < result.puntos < result.maximo
    report = result.informe("x")
    assert "✓ valor de la penalización" in report and "✗ diferenciable" in report


def test_doing_nothing_earns_no_requirement_points():
    result = grade("ch01_gradient_penalty", lambda model, x: torch.tensor(0.0))
    assert result.puntos == 0


@pytest.mark.parametrize("exercise", sorted(REFERENCES))
def test_parts_add_up_to_the_cell_points(exercise):
    cells = jupytext.read(chapter_named("ch01").source).cells
    points = next(c.metadata["nbgrader"]["points"] for c in cells
                  if c.metadata.get("nbgrader", {}).get("grade_id") == exercise + "_test")
    assert hidden.HIDDEN[exercise].points == points


def test_graded_cell_returns_its_score(capsys):
    # The graded cell's last expression is this value: nbgrader reads it as the score.
    assert hidden.check_two_loss_grads(reference.two_loss_grads) == 2.0
    assert "2 / 2 puntos" in capsys.readouterr().out


def test_public_check_is_silent_while_nbgrader_autogrades(monkeypatch):
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    assert public.comprobar_manual_backward(lambda *args: None) is None


def test_failures_render_without_traceback():
    with pytest.raises(ComprobacionFallida) as failure:
        public.comprobar_two_loss_grads(lambda model, x, y: None)
    rendered = "\n".join(failure.value._render_traceback_())
    assert "File " not in rendered and "autograder" not in rendered
