"""Chapter 3 specifics: every student's draws cover each exercise's contract, the hidden
inputs are not the public ones, the public oracles use no formula of the answer (least
squares for the weights, torch's own clip_grad_norm_ for clipping), side effects are
observed, and each step is judged from the student's own parameters (the shared contract
is in test_contract.py)."""

import ast
import math

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


# ---------------------------------------------------------------- micro_batch_weights
def test_weight_cases_meet_unequal_sizes_first_for_both_reductions():
    for student in ("alumna", "alumno", "otra"):
        shapes = [s for s, _ in plan("micro_batch_weights", hidden.HIDDEN, student, "pruebas")]
        assert {reduction for reduction, *_ in shapes[:2]} == {"mean", "sum"}
        assert all(len(set(sizes)) > 1 and 1 in sizes for _, sizes, *_ in shapes[:2])
        assert len({len(sizes) for _, sizes, *_ in shapes}) == 4


def test_the_public_oracle_finds_the_weights_without_a_formula():
    # least squares among the micro-batches' gradients gives what the reference computes
    for reduction, sizes in (("mean", (4, 4, 2)), ("sum", (3, 5)), ("mean", (1, 7, 2, 5)),
                             ("sum", (9,))):
        found = public.pesos_que_reproducen_el_lote(sizes, reduction)["pesos"]
        expected = reference.micro_batch_weights(list(sizes), reduction)
        assert torch.allclose(found, torch.tensor(expected, dtype=torch.float64), atol=1e-9)


def test_weights_are_judged_by_the_gradient_they_give():
    # weights 1 % too large give a gradient 1 % too large: named as a scale, no points
    def slightly_off(sizes, reduction):
        return [1.01 * w for w in reference.micro_batch_weights(sizes, reduction)]

    result = grade("micro_batch_weights", slightly_off)
    assert result.diagnostico == "pesos_a_escala" and result.puntos == 0


def test_hidden_inputs_differ_from_the_public_ones():
    seen = {"public": set(), "hidden": set()}

    def spy_for(kind):
        def micro_batch_weights(sizes, reduction):
            seen[kind].add((tuple(sizes), reduction))
            return reference.micro_batch_weights(sizes, reduction)
        return micro_batch_weights

    public.comprobar_micro_batch_weights(spy_for("public"))
    grade("micro_batch_weights", spy_for("hidden"))
    assert seen["public"] and seen["hidden"] and not seen["public"] & seen["hidden"]


# ---------------------------------------------------------------- train_with_accumulation
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


def test_a_mode_restored_at_the_root_only_costs_only_the_side_effect_part():
    for student in ("alumna", "alumno", "otra"):
        result = grade("train_with_accumulation",
                       variants.train_with_accumulation_restores_the_root_mode_only, student)
        assert result.diagnostico == "efecto_secundario" and ".training" in result.informe("")
        assert result.puntos == result.maximo - 0.5


def test_training_a_model_in_another_mode_than_it_came_in_is_named():
    # model.train() on a model whose BatchNorm came in eval mode: batch statistics, not the
    # running ones, whether or not the modes are restored afterwards
    for function in (variants.train_with_accumulation_sets_training_mode,
                     variants.train_with_accumulation_trains_in_train_mode):
        for student in ("alumna", "alumno", "otra"):
            result = grade("train_with_accumulation", function, student)
            assert result.diagnostico == "entrenado_en_otro_modo", result.informe("")


def test_hidden_runs_meet_batchnorm_in_both_modes_frozen_parameters_and_two_groups():
    for student in ("alumna", "alumno", "otra"):
        shapes = [s for s, _ in plan("train_with_accumulation", hidden.HIDDEN, student,
                                     "pruebas")]
        inputs = [public.construir_ciclos(torch.Generator().manual_seed(0), s) for s in shapes]
        modes = [public.modo_batchnorm(i["model"]) for i in inputs]
        assert {"no", "train", "eval"} <= set(modes)
        for i, mode in zip(inputs, modes):
            if mode == "train":  # BatchNorm in train mode on cycles of several micro-batches
                assert i["accum"] > 1 and len(i["batches"]) > 1
                assert i["batches"][0][0].shape[0] > 1
        assert {len(i["optimizer"].param_groups) for i in inputs} == {1, 2}
        assert any(not p.requires_grad for i in inputs for p in i["model"].parameters())
        assert {i["model"]._llamante_sin_grad for i in inputs} == {True, False}


def test_one_pass_per_micro_batch_is_observed_in_the_batchnorm_statistics():
    for student in ("alumna", "alumno", "otra"):
        result = grade("train_with_accumulation",
                       variants.train_with_accumulation_second_forward_for_the_log, student)
        assert result.diagnostico == "estadisticas_de_batchnorm"
        assert result.puntos == result.maximo - 0.5
        result = grade("train_with_accumulation", variants.train_with_accumulation_joins_the_cycle,
                       student)
        assert result.diagnostico == "ciclo_unido", result.informe("")


def test_a_caller_inside_no_grad_is_served_and_left_so():
    for student in ("alumna", "alumno", "otra"):
        result = grade("train_with_accumulation",
                       variants.train_with_accumulation_grad_on_for_good, student)
        assert result.diagnostico == "efecto_secundario"
        assert "modo de autograd" in result.informe("")
        result = grade("train_with_accumulation",
                       variants.train_with_accumulation_assumes_grad_on, student)
        assert result.puntos == 0


def test_side_effects_are_observed_not_assumed():
    # the caller's list of sizes overwritten with the weights, the caller's list emptied
    result = grade("micro_batch_weights", variants.micro_batch_weights_in_the_callers_list)
    assert result.diagnostico == "efecto_secundario" and "`sizes`" in result.informe("")
    assert result.puntos == result.maximo - 0.25
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


# ---------------------------------------------------------------- clip_by_global_norm
def test_clipping_cases_clip_do_not_clip_and_show_the_epsilon():
    for student in ("alumna", "alumno", "otra"):
        shapes = [s for s, _ in plan("clip_by_global_norm", hidden.HIDDEN, student, "pruebas")]
        ratios = [float(shape[4]) for shape in shapes]
        assert any(r < 1 for r in ratios) and any(1 < r < math.inf for r in ratios)
        assert math.inf in ratios and any(shape[5] < 1e-3 for shape in shapes)
        assert all(ast.literal_eval(repr(shape)) == shape for shape in shapes)  # as their repr
        assert {shape[3] for shape in shapes} == {"list", "tuple", "generador"}
        assert any(shape[0] == () for shape in shapes)  # an empty grads
        # one just past the threshold: norm < max_norm < norm + 1e-6
        assert any(shape[4] == 1.05 and shape[5] < 1e-6 for shape in shapes)


def test_the_public_clipping_oracle_is_torchs_own_function():
    example = public.construir_recorte(torch.Generator().manual_seed(6),
                                       (((3, 2), (3,), (), (2, 2)), (1,), "float64", "list",
                                        0.25, 1e-3))
    expected = public.oraculo_de_recorte(*example.values())
    clipped, norm = reference.clip_by_global_norm(example["tensores"], example["max_norm"])
    assert expected["gradientes"][1] is None and clipped[1] is None
    assert abs(expected["norma"] - norm) < 1e-9
    assert expected["norma"] > example["max_norm"]  # the example does clip
    for a, b in zip(clipped, expected["gradientes"]):
        assert (a is None) == (b is None) and (a is None or torch.allclose(a, b))


def test_clipping_in_place_costs_only_the_requirement():
    for student in ("alumna", "alumno", "otra"):
        result = grade("clip_by_global_norm", variants.clip_by_global_norm_in_place, student)
        assert result.diagnostico == "modificada" and result.puntos == result.maximo - 0.5


def test_a_generator_read_twice_is_named_for_every_student():
    for student in ("alumna", "alumno", "otra", "más"):
        result = grade("clip_by_global_norm", variants.clip_by_global_norm_two_passes, student)
        assert result.diagnostico == "generador_agotado", result.informe("")


def test_forgetting_the_epsilon_costs_the_clipping_part_for_every_student():
    for student in ("alumna", "alumno", "otra"):
        result = grade("clip_by_global_norm", variants.clip_by_global_norm_without_eps, student)
        assert result.diagnostico == "sin_epsilon", result.informe("")
        assert result.puntos == result.maximo - 1.5


def test_a_threshold_on_the_norm_instead_of_norm_plus_epsilon_is_caught():
    for student in ("alumna", "alumno", "otra"):
        result = grade("clip_by_global_norm", variants.clip_by_global_norm_threshold_on_the_norm,
                       student)
        assert result.diagnostico == "sin_recortar" and result.puntos == result.maximo - 1.5


def test_returned_containers_are_the_ones_the_contract_names():
    # a tuple of clipped gradients, a tuple of losses: the contract says a list
    assert grade("clip_by_global_norm",
                 variants.clip_by_global_norm_returns_a_tuple_of_grads).diagnostico == "tipo"
    assert grade("train_with_accumulation",
                 variants.train_with_accumulation_returns_a_tuple).diagnostico == "tipo"
