"""Chapter 3 specifics: every student's draws cover each exercise's contract, the hidden
inputs are not the public ones, side effects and the rows each micro-batch holds are
observed, and each step is judged from the student's own parameters (the shared contract
is in test_contract.py)."""

import pytest
import torch

from autograder.chapters.ch03 import hidden, variants
from autograder.chapters.ch03 import student as public
from autograder.hidden.reference import load_reference
from autograder.hidden.runner import grade_hidden, plan
from autograder.hidden.space import coverage

reference = load_reference("ch03")


def grade(exercise, function, student="alumna"):
    return grade_hidden(exercise, hidden.HIDDEN, function, student, secret="pruebas")


def points_by_part(result):
    return {part.nombre: (0 if failure else part.puntos) for part, failure in result.fallos}


@pytest.mark.parametrize("exercise", list(hidden.HIDDEN))
def test_every_student_meets_the_whole_contract(exercise):
    assert coverage(hidden.HIDDEN[exercise], getattr(reference, exercise)) == []


def test_hidden_runs_end_on_a_partial_cycle_an_exact_multiple_and_a_lone_partial_cycle():
    for student in ("alumna", "alumno", "otra"):
        shapes = [s for s, _ in plan("train_with_accumulation", hidden.HIDDEN, student,
                                     "pruebas")]
        pairs = [(count, accum) for _, count, _, accum, *_ in shapes]
        assert any(accum == 1 for _, accum in pairs)
        assert any(count % accum == 0 and count // accum >= 2 for count, accum in pairs
                   if accum > 1)
        assert any(count % accum and count // accum >= 2 and accum >= 3
                   for count, accum in pairs)
        assert any(accum > count for count, accum in pairs)


def test_clipping_cases_include_one_that_does_not_clip():
    ratios = [shape[5] for shape, _ in plan("clipped_step", hidden.HIDDEN, "a", "s")]
    assert any(r < 1 for r in ratios) and any(r > 1 for r in ratios)


def test_hidden_inputs_differ_from_the_public_ones():
    seen = {"public": set(), "hidden": set()}

    def spy_for(kind):
        def accumulate_gradients(model, loss_fn, x, y, accum):
            seen[kind].add((tuple(x.shape), x.flatten()[0].item()))
            return reference.accumulate_gradients(model, loss_fn, x, y, accum)
        return accumulate_gradients

    public.comprobar_accumulate_gradients(spy_for("public"))
    grade("accumulate_gradients", spy_for("hidden"))
    assert seen["public"] and seen["hidden"] and not seen["public"] & seen["hidden"]


def test_strided_micro_batches_cost_only_the_micro_batch_part_for_every_student():
    for student in ("alumna", "alumno", "otra", "más"):
        result = grade("accumulate_gradients", variants.accumulate_gradients_strided_rows,
                       student)
        assert result.diagnostico == "micro_lotes_no_consecutivos"
        assert result.puntos == result.maximo - 0.5


def test_a_forgotten_final_step_costs_only_the_final_cycle_part():
    result = grade("train_with_accumulation",
                   variants.train_with_accumulation_forgets_the_partial_cycle)
    lost = [name for name, points in points_by_part(result).items() if points == 0]
    assert lost == ["ciclo final incompleto: un paso más, con su propia media; ni un paso "
                    "de más"], result.informe("")


def test_one_micro_batch_with_another_divisor_is_named_and_costs_only_its_part():
    for student in ("alumna", "alumno", "otra"):
        result = grade("train_with_accumulation",
                       variants.train_with_accumulation_partial_divisor_one_too_early, student)
        assert result.diagnostico == "micro_lote_mal_pesado", result.informe("")
        lost = [name for name, points in points_by_part(result).items() if points == 0]
        assert lost == ["un paso cada accum micro-lotes, con el gradiente medio del ciclo"]


def test_a_model_set_to_training_mode_costs_only_the_side_effect_part():
    for exercise, function in (
            ("accumulate_gradients", variants.accumulate_gradients_sets_training_mode),
            ("train_with_accumulation", variants.train_with_accumulation_sets_training_mode),
            ("clipped_step", variants.clipped_step_sets_training_mode)):
        result = grade(exercise, function)
        assert result.diagnostico == "efecto_secundario" and ".training" in result.informe("")
        assert result.puntos == result.maximo - 0.5


def test_side_effects_are_observed_not_assumed():
    # the caller's loss switched to a sum (values still right), the caller's list emptied
    result = grade("accumulate_gradients", variants.accumulate_gradients_sums_with_the_callers_loss)
    assert result.diagnostico == "efecto_secundario" and "loss_fn.reduction" in result.informe("")
    result = grade("train_with_accumulation", variants.train_with_accumulation_pops_the_batches)
    assert result.diagnostico == "efecto_secundario" and "len(batches)" in result.informe("")


def test_the_state_of_an_optimizer_with_tensors_of_several_ranks_can_be_photographed():
    model = torch.nn.Linear(3, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(torch.ones(1, 3)).sum().backward()
    optimizer.step()
    photo = public.estado_de({"optimizer": optimizer, "batches": [(torch.ones(2), 0)]})
    assert "momentum_buffer" in photo["optimizer.state"] and photo["len(batches)"] == 1


def test_a_ratio_of_two_is_named_by_the_chapter_never_the_derivative_of_a_square():
    expected = torch.ones(3, dtype=torch.float64)
    named = public.diagnosticar("g", 2 * expected, expected, {"sin_dividir_por_accum": 2})
    assert named.id == "sin_dividir_por_accum"
    assert public.diagnosticar("g", 2 * expected, expected, {}).id == "escala_desconocida"
    assert public.diagnosticar("g", expected / 2, expected,
                               {"sin_dividir_por_accum": 2}).id == "dividido_de_mas_por_accum"
