"""Chapter 2 specifics: what the observations measure and what the hidden cases vary (the
shared contract is in test_contract.py)."""

import contextlib
import io

import pytest
import torch

from autograder.chapters.ch02 import hidden, variants
from autograder.chapters.ch02 import student as public
from autograder.hidden.reference import load_reference
from autograder.hidden.runner import grade_hidden, plan
from autograder.hidden.space import coverage

reference = load_reference("ch02")


def observe_predict(function, seed=0, shape=(4, 3, 5, 2)):
    inputs = public.construir_prediccion(torch.Generator().manual_seed(seed), shape)
    return public.observar_prediccion(function, inputs)


def grade(name, function, student="alumna"):
    return grade_hidden(name, hidden.HIDDEN, function, student, secret="pruebas")


@pytest.mark.parametrize("name", list(hidden.HIDDEN))
def test_the_draws_cover_the_whole_contract(name):
    assert coverage(hidden.HIDDEN[name], getattr(reference, name)) == []


def test_predict_observation_counts_what_autograd_saves():
    observed = observe_predict(reference.predict)
    assert observed["n_guardados"] == 0 and observed["nodos"] == 0
    detached = observe_predict(lambda model, x: torch.softmax(model(x), dim=1).detach())
    assert detached["n_guardados"] > 0 and not detached["salida_con_grafo"]
    tracked = observe_predict(lambda model, x: torch.softmax(model(x), dim=1))
    assert tracked["salida_con_grafo"]


def test_predict_graph_is_seen_through_the_students_own_saved_tensors_hooks():
    hooked = observe_predict(variants.predict_own_hooks_then_detach)
    assert hooked["n_guardados"] == 0 and hooked["nodos"] > 0
    assert grade("predict", variants.predict_own_hooks_then_detach).puntos < 3


def test_predict_observation_restores_grad_mode():
    def switch_off(model, x):
        torch.set_grad_enabled(False)
        return torch.softmax(model(x), dim=1)

    observed = observe_predict(switch_off)
    assert observed["estado_antes"]["modo de autograd"]
    assert not observed["estado_despues"]["modo de autograd"]
    assert torch.is_grad_enabled()


def test_predict_called_inside_no_grad_must_leave_it_off():
    shape = (3, 3, 4, 2, "sin_grad")
    observed = observe_predict(variants.predict_switch_off_then_on, shape=shape)
    assert not observed["estado_antes"]["modo de autograd"]
    assert observed["estado_despues"]["modo de autograd"]
    assert observe_predict(reference.predict, shape=shape)["estado_despues"][
        "modo de autograd"] is False


def test_predict_with_one_class_is_all_ones_and_still_a_prediction():
    """softmax over K == 1 classes is a constant 1: the right answer, not a placeholder."""
    inputs = public.construir_prediccion(torch.Generator().manual_seed(2), (4, 3, 5, 1))
    expected = hidden._expected_prediction(*inputs.values())
    assert torch.equal(expected["probs"], torch.ones(4, 1, dtype=torch.float64))
    case = public.caso_en_proceso(public.PREDICT, reference.predict, 2, (4, 3, 5, 1),
                                  hidden._expected_prediction)
    for part in public.PREDICT.partes:
        part.verificar(case)


def test_predict_every_submodule_must_keep_its_own_mode():
    result = grade("predict", variants.predict_restores_only_the_outer_mode)
    assert result.puntos == 2.5 and result.diagnostico == "modo_del_modelo_cambiado"


def test_size_one_dimensions_are_kept():
    assert grade("predict", variants.predict_squeezed).diagnostico == "dimension_suprimida"


def observe_distillation(function, seed=0, shape=(4, 3, 3, 2.0)):
    inputs = public.construir_destilacion(torch.Generator().manual_seed(seed), shape)
    return public.observar_destilacion(function, inputs)


def test_distillation_observation_runs_the_callers_backward():
    observed = observe_distillation(reference.distillation_loss)
    assert observed["perdida_con_grafo"] and observed["error_backward"] is None
    assert observed["grads_profesor"] == []
    assert all(g is not None for g in observed["grads_alumno"].values())
    leaked = observe_distillation(variants.distillation_teacher_in_the_graph)
    assert leaked["grads_profesor"] == ["0.weight", "0.bias", "2.weight", "2.bias"]


def test_an_inference_tensor_in_the_loss_is_named_with_torchs_own_error():
    observed = observe_distillation(variants.distillation_inference_mode)
    assert observed["error"]["diagnostico"] == "tensor_de_inferencia_guardado"
    assert "Inference tensors cannot be saved for backward" in observed["error"]["hechos"][
        "detalle"]
    assert torch.is_grad_enabled()


def test_a_frozen_teacher_hides_a_graph_through_it_but_the_first_case_does_not():
    """With every teacher parameter frozen, a loss that records the teacher leaves no
    .grad on it: the plain hidden case (a trainable teacher) is the one that tells."""
    frozen = observe_distillation(variants.distillation_teacher_in_the_graph,
                                  shape=(4, 3, 3, 2.0, "profesor_congelado"))
    assert frozen["grads_profesor"] == []
    shapes = [shape for shape, _ in hidden._distillation_shapes(torch.Generator().manual_seed(0))]
    assert not any(flag in shapes[0] for flag in ("profesor_congelado", "profesor_parcial",
                                                  "profesor_eval"))


def test_distillation_factors_have_distinct_ratios_in_the_plain_case():
    for seed in range(20):
        plain, _ = hidden._distillation_shapes(torch.Generator().manual_seed(seed))[0]
        ratios = list(public.contexto_destilacion(plain)["factores"].values())
        assert len(ratios) == 4  # 1/K, N, 1/T² and 1/T
        assert all(abs(a - b) > 1e-2 for i, a in enumerate(ratios) for b in ratios[i + 1:])
        assert all(abs(r - 2) > 1e-2 and abs(r - 0.5) > 1e-2 and abs(r - 1) > 1e-2
                   for r in ratios)


def test_the_inference_mode_variants_the_chapter_calls_valid_get_full_marks():
    for function in (variants.distillation_inference_mode_then_clone,
                     variants.distillation_inference_mode_log_target):
        assert grade("distillation_loss", function).puntos == 3


def test_expected_names_leave_the_hidden_model_untouched():
    inputs = public.construir_congelar(torch.Generator().manual_seed(1), (3, 4, 2, 2, "mlp"))
    names = hidden._expected_names(inputs["model"])
    assert names == ["head.0.weight", "head.0.bias", "head.2.weight", "head.2.bias"]
    assert all(p.requires_grad for p in inputs["model"].parameters())


def test_a_parameter_on_the_model_itself_must_be_frozen_too():
    inputs = public.construir_congelar(torch.Generator().manual_seed(1),
                                       (3, 4, 1, 2, "lineal", "directo"))
    assert "escala" in dict(inputs["model"].named_parameters())
    result = grade("freeze_all_but_head", variants.freeze_by_children)
    assert result.diagnostico == "parametro_del_modelo_sin_congelar"


def test_names_may_come_in_a_list_a_tuple_or_a_set():
    assert grade("freeze_all_but_head", variants.freeze_by_identity_returning_a_set).puntos == 2
    assert grade("freeze_all_but_head", variants.freeze_module_then_unfreeze_head).puntos == 2


def test_hidden_freeze_cases_differ_in_head_and_depth():
    generator = torch.Generator().manual_seed(3)
    shapes = [shape for shape, _ in hidden._freeze_shapes(generator)]
    assert len({s[2] for s in shapes}) == 3 and len({s[4] for s in shapes}) == 3


def test_times_the_temperature_is_named_as_such_whatever_t():
    result = grade("distillation_loss", variants.distillation_times_the_temperature)
    assert result.diagnostico == "temperatura_sin_cuadrado"


def test_a_squeezed_batch_of_one_is_named_as_such():
    result = grade("distillation_loss", variants.distillation_squeezes_the_logits)
    assert result.puntos < 3 and result.diagnostico == "lote_suprimido"


@pytest.mark.parametrize("student", [f"s{i}" for i in range(8)])
def test_every_student_meets_a_teacher_and_a_model_in_each_mixed_mode(student):
    """Restoring only the outer mode fails both ways round (a train root with an eval
    submodule, an eval root with a train one), for every student."""
    for name, key in (("distillation_loss", "teacher"), ("predict", "model")):
        table = hidden.HIDDEN[name]
        modes = set()
        for shape, seed in plan(name, hidden.HIDDEN, student, "pruebas"):
            inputs = table.exercise.construir(torch.Generator().manual_seed(seed), shape)
            modes.add(hidden._modes(inputs[key]))
        assert modes == {"train", "eval", "mixto", "mixto_eval"}


def test_the_blind_mode_mistakes_lose_points():
    for name, function in (
            ("distillation_loss", variants.distillation_teacher_eval_restores_the_root_mode),
            ("predict", variants.predict_eval_only_if_training),
            ("freeze_all_but_head", variants.freeze_eval_then_train_the_head)):
        result = grade(name, function)
        assert result.puntos < result.maximo, name


def test_restoring_every_module_s_own_mode_is_fine():
    assert grade("distillation_loss",
                 variants.distillation_eval_teacher_restored_per_module).puntos == 3
    assert grade("predict", variants.predict_eval_restored_per_module).puntos == 3


def test_a_partly_frozen_teacher_restored_with_one_flag_loses_points():
    result = grade("distillation_loss", variants.distillation_restores_the_first_flag_everywhere)
    assert result.diagnostico == "profesor_congelado"


def test_a_nested_module_named_head_is_not_the_head():
    inputs = public.construir_congelar(torch.Generator().manual_seed(1),
                                       (3, 4, 2, 2, "lineal", "trampas", "profundo"))
    names = dict(inputs["model"].named_parameters())
    assert "encoder.head.weight" in names and "encoder.0.0.weight" in names
    assert hidden._expected_names(inputs["model"]) == ["head.weight", "head.bias"]
    result = grade("freeze_all_but_head", variants.freeze_by_substring_with_the_dot)
    assert result.diagnostico == "nombre_parecido_a_cabeza"


def test_clearing_the_grad_of_the_frozen_parameters_is_named():
    result = grade("freeze_all_but_head", variants.freeze_clears_the_grad_of_the_frozen)
    assert result.puntos == 1.5 and result.diagnostico == "grad_borrado"


def test_x_requiring_grad_must_come_back_requiring_it():
    result = grade("predict", variants.predict_turns_off_x_requires_grad)
    assert result.puntos == 2.5 and result.diagnostico == "modificada"


@pytest.mark.parametrize("function", [variants.predict_eval_only_if_training,
                                      variants.predict_turns_off_x_requires_grad,
                                      variants.freeze_by_substring_with_the_dot,
                                      variants.freeze_clears_the_grad_of_the_frozen,
                                      variants.distillation_teacher_eval_restores_the_root_mode])
def test_the_public_checks_show_the_families_the_hidden_tests_use(function):
    name = {"predict": "predict", "freeze": "freeze_all_but_head",
            "distillation": "distillation_loss"}[function.__name__.split("_")[0]]
    with pytest.raises(public.ComprobacionFallida):
        with contextlib.redirect_stdout(io.StringIO()):
            getattr(public, "comprobar_" + name)(function)
