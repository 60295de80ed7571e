"""Chapter 5 specifics: the contract space the hidden cases sample (starting modes, nested
models, dtypes, the caller's grad mode, stale gradients, layouts, sample counts), what the
public examples hold, the side effects observed, and the mistakes that only some cases
expose (the shared contract is in test_contract.py)."""

import math

import pytest
import torch
from torch import nn

from autograder.chapters.ch05 import hidden
from autograder.chapters.ch05 import student as public
from autograder.chapters.ch05 import variants as corpus
from autograder.hidden.reference import load_reference
from autograder.hidden.runner import grade_hidden, plan
from autograder.hidden.space import coverage
from autograder.student.compare import ComprobacionFallida, _verificar

reference = load_reference("ch05")

VARIANTS = {v.name: v for v in corpus.registry.variants}
STUDENTS = ("alumna", "alumno", "ana", "bruno", "otra")
SECRET = "pruebas"
EXERCISES = ("evaluation_mode", "modules_that_change", "mc_dropout")


def grade(exercise, function, student="alumna"):
    return grade_hidden(exercise, hidden.HIDDEN, function, student, secret=SECRET)


def build(exercise, shape, seed=0):
    return public.EJERCICIOS[exercise].construir(torch.Generator().manual_seed(seed), shape)


def arguments(inputs):
    return public.argumentos(inputs)


def is_mixed(model):
    """Train mode with every BatchNorm frozen in eval mode (fine-tuning style)."""
    norms = [m for m in model.modules() if isinstance(m, nn.BatchNorm1d)]
    return model.training and norms and not any(m.training for m in norms)


# ---------------------------------------------------------------- the contract space
@pytest.mark.parametrize("exercise", EXERCISES)
def test_every_student_meets_the_whole_contract_space(exercise):
    assert hidden.HIDDEN[exercise].space is not None
    assert coverage(hidden.HIDDEN[exercise], getattr(reference, exercise)) == []


def test_every_student_meets_every_starting_mode_and_a_nested_frozen_batchnorm():
    for student in STUDENTS:
        for exercise in EXERCISES:
            modes = [shape[-2] for shape, _ in plan(exercise, hidden.HIDDEN, student, SECRET)]
            assert {"eval", "train", "mixto", "azar", "raiz_eval"} <= set(modes), (exercise,
                                                                                 modes)
        nested_mixed = [build("evaluation_mode", shape, seed)["model"]
                        for shape, seed in plan("evaluation_mode", hidden.HIDDEN, student, SECRET)]
        assert any(public.hijo_con_otro_modo(m) for m in nested_mixed)


def test_the_built_models_start_in_the_mode_their_case_names():
    for shape, seed in plan("evaluation_mode", hidden.HIDDEN, "alumna", SECRET):
        model = build("evaluation_mode", shape, seed)["model"]
        modes = public.modos_de(model)
        expected = {"eval": not any(modes), "train": all(modes), "mixto": is_mixed(model),
                    "azar": True, "raiz_eval": not model.training
                    and public.train_bajo_eval(model)}
        assert expected[shape[5]], (shape, modes)


def test_the_options_reach_the_inputs():
    inputs = build("mc_dropout", (3, 2, 4, 2, 0.3, 2, "eval", (
        ("anidada", True), ("dropout2", True), ("dtype", "float32"), ("grad", False),
        ("grad_viejo", True), ("ruido", True), ("x_rg", True))))
    model, x = inputs["model"], inputs["x"]
    assert x.dtype == torch.float32 and x.requires_grad and inputs["n_samples"] == 2
    assert all(p.grad is not None and p.dtype == torch.float32 for p in model.parameters())
    assert public.profundidad(model) == 2 and inputs["llamada"] == {"grad": False}
    assert sum(isinstance(m, nn.Dropout) for m in model.modules()) == 2
    assert any(isinstance(m, public.RuidoGaussiano) for m in model.modules())
    assert list(inputs)[:-1] == ["model", "x", "n_samples"]  # the arguments, in order


def test_hidden_layouts_hold_every_trap_and_need_different_answers():
    for student in STUDENTS:
        layouts = [shape[4] for shape, _ in plan("modules_that_change", hidden.HIDDEN,
                                                 student, SECRET)]
        for layout in layouts:
            extra = set(layout) - set("BDGSZg")
            assert set("BDGSZ") <= set(layout) and len(extra) == 1 and extra <= set("RTI")
            assert len(layout) == 6 + ("g" in layout)
        assert any("g" in layout for layout in layouts)  # a change below allclose's tolerance
        answers = [hidden._changing(layout) for layout in layouts]
        assert len(set(map(frozenset, answers))) == len(answers)  # a fixed answer shows


def test_modules_that_change_never_gets_a_single_sample():
    for student in STUDENTS:
        sizes = [shape[0] for shape, _ in plan("modules_that_change", hidden.HIDDEN, student,
                                               SECRET)]
        assert min(sizes) == 2, sizes


def test_the_public_oracle_and_the_reference_agree_on_the_hidden_layouts():
    # By type and settings (the public oracle) and by behaviour (the reference) must name the
    # same modules on every layout the hidden tests build: the codes say what each layer does.
    for student in ("alumna", "alumno"):
        for shape, seed in plan("modules_that_change", hidden.HIDDEN, student, SECRET):
            inputs = build("modules_that_change", shape, seed)
            by_type = public.modulos_por_tipo(*inputs.values())["cambian"]
            by_behaviour = reference.modules_that_change(
                *arguments(build("modules_that_change", shape, seed)))
            names = public.nombres_de_capas(shape[4], dict(shape[6]).get("anidada", False))
            changing = {n for n, code in names.items() if code in public.CAMBIAN}
            changing |= set(public.contexto_modulos(shape)["auxiliar"])  # BatchNorms
            assert set(by_type) == set(by_behaviour) == changing


def test_the_public_oracles_and_the_reference_agree_on_the_hidden_cases():
    for student in ("alumna", "alumno"):
        for shape, seed in plan("evaluation_mode", hidden.HIDDEN, student, SECRET):
            inputs = build("evaluation_mode", shape, seed)
            assert public.modos_al_llegar(*inputs.values()) == hidden._expected_block(
                *build("evaluation_mode", shape, seed).values())
        for shape, seed in plan("mc_dropout", hidden.HIDDEN, student, SECRET):
            inputs = build("mc_dropout", shape, seed)
            by_hand = public.mc_a_mano(*inputs.values())
            expected = hidden._expected_mc(*build("mc_dropout", shape, seed).values())
            assert torch.allclose(by_hand["media"], expected["media"], rtol=1e-4, atol=1e-6)
            assert torch.allclose(by_hand["std"], expected["std"], rtol=1e-4, atol=1e-5)


def test_hidden_inputs_differ_between_students_and_repeat_on_regrade():
    for exercise in public.EJERCICIOS:
        first = plan(exercise, hidden.HIDDEN, "alumna", SECRET)
        assert first == plan(exercise, hidden.HIDDEN, "alumna", SECRET)
        assert first != plan(exercise, hidden.HIDDEN, "alumno", SECRET)


def test_one_student_grades_fast():
    import time

    for exercise in EXERCISES:
        started = time.perf_counter()
        grade(exercise, getattr(reference, exercise))
        assert time.perf_counter() - started < 2.0, exercise


# ---------------------------------------------------------------- the public examples
def spy_on(exercise, function, seen):
    def spy(model, *args):
        first = args[0] if args else next(model.parameters())  # evaluation_mode: no x
        seen.append({"mixed": is_mixed(model), "types": public.tipos_de(model),
                     "layers": [type(m).__name__ for m in model.modules()],
                     "x": (tuple(first.shape), first.flatten()[0].item())})
        return function(model, *args)
    return spy


@pytest.mark.parametrize("exercise", EXERCISES)
def test_the_public_examples_start_from_mixed_modes_and_differ_from_the_hidden_inputs(
        exercise, capsys):
    public_calls, hidden_calls = [], []
    getattr(public, "comprobar_" + exercise)(
        spy_on(exercise, getattr(reference, exercise), public_calls))
    assert "✓" in capsys.readouterr().out
    # evaluation_mode is opened five times a case, the last time nested in a block that put
    # the model in eval mode: the first use of each case gets the model as it arrived. The
    # first public case starts in mixed modes, the second with its root in eval mode.
    first_uses = public_calls[::5] if exercise == "evaluation_mode" else public_calls
    assert len(first_uses) == 2 and first_uses[0]["mixed"] and not first_uses[1]["mixed"]
    grade(exercise, spy_on(exercise, getattr(reference, exercise), hidden_calls))
    assert not {c["x"] for c in public_calls} & {c["x"] for c in hidden_calls}


def test_the_public_layout_holds_every_trap():
    seen = []
    public.comprobar_modules_that_change(
        spy_on("modules_that_change", reference.modules_that_change, seen))
    layers = seen[0]["layers"]
    for trap in ("BatchNorm1d", "Dropout", "RuidoGaussiano", "ReLU", "Tanh"):
        assert trap in layers
    model = build("modules_that_change", public.EJEMPLO_MODULOS, 6)["model"]
    assert any(isinstance(m, nn.Dropout) and m.p == 0 for m in model.modules())
    assert any(isinstance(m, nn.BatchNorm1d) and not m.track_running_stats
               for m in model.modules())


def test_the_public_examples_hold_the_traps_of_the_hidden_cases():
    # A nested frozen BatchNorm, a noise layer on and stale gradients (evaluation_mode, with a
    # caller under no_grad), a leaf never run
    # (modules_that_change), a custom layer reading self.training (mc_dropout): each public
    # check already shows the mistake these expose.
    inputs = build("evaluation_mode", public.EJEMPLOS_BLOQUE[0], 5)
    assert public.hijo_con_otro_modo(inputs["model"])
    assert all(p.grad is not None for p in inputs["model"].parameters())
    assert any(isinstance(m, public.RuidoGaussiano) and m.training
               for m in inputs["model"].modules())
    assert {dict(shape[6])["grad"] for shape in public.EJEMPLOS_BLOQUE} == {True, False}
    assert hasattr(build("modules_that_change", public.EJEMPLO_MODULOS, 6)["model"], "reserva")
    model = build("mc_dropout", public.EJEMPLO_MC, 7)["model"]
    assert any(isinstance(m, public.RuidoGaussiano) for m in model.modules())
    for name in ("evaluation_mode_restores_direct_children_only",
                 "evaluation_mode_zeroes_the_gradients", "evaluation_mode_grad_on_at_exit",
                 "evaluation_mode_dropout_and_batchnorm_only",
                 "evaluation_mode_restores_only_on_success", "evaluation_mode_saves_on_the_model",
                 "modules_that_change_by_type_settings_and_custom_layers",
                 "mc_dropout_train_then_freeze_batchnorm"):
        variant = VARIANTS[name]
        with pytest.raises(ComprobacionFallida) as failure:
            getattr(public, "comprobar_" + variant.exercise)(variant.function)
        assert failure.value.diagnostico == variant.expected, name


def test_the_mc_oracle_is_exact_where_the_samples_agree():
    # Two passes over the samples: identical samples give a spread of 0 up to rounding
    # (~1e-16), so a correct torch.std meets it at float64's tolerance (atol 1e-9); the
    # one-pass Σy² − n·mean² the oracle used to compute gave ~1e-8.
    inputs = build("mc_dropout", (5, 4, 6, 3, 0.0, 8, "mixto"), 7)
    expected = public.mc_a_mano(*inputs.values())
    assert expected["std"].abs().max() < 1e-12
    caso = public.caso_en_proceso(public.MC_DROPOUT, reference.mc_dropout, 7,
                                  (5, 4, 6, 3, 0.0, 8, "mixto"), public.mc_a_mano)
    assert all(_verificar(parte, caso) is None for parte in public.MC_DROPOUT.partes)


# ---------------------------------------------------------------- side effects observed
def _restored(function, inputs):
    """Did the plain block give every module back its mode?"""
    uses = public.observar_bloque(function, inputs)["usos"]
    return uses["despues"]["modos"] == uses["antes"]


def test_only_a_mixed_start_exposes_restoring_the_root_flag_alone():
    root_only = VARIANTS["evaluation_mode_restores_the_root_flag_only"].function
    for mode in ("eval", "train", "mixto"):
        inputs = build("evaluation_mode", (6, 4, 5, 3, 0.5, mode))
        assert _restored(root_only, inputs) == (mode != "mixto"), mode


def test_only_a_nested_model_exposes_restoring_the_direct_children_alone():
    children_only = VARIANTS["evaluation_mode_restores_direct_children_only"].function
    for nested in (False, True):
        inputs = build("evaluation_mode", (6, 4, 5, 3, 0.5, "mixto", (("anidada", nested),)))
        assert _restored(children_only, inputs) != nested


def test_every_case_observes_a_plain_a_raising_and_a_nested_block():
    inputs = build("evaluation_mode", (4, 3, 5, 2, 0.4, "mixto", (("anidada", True),)))
    seen = []

    def counting(model):
        seen.append(model)
        return reference.evaluation_mode(model)

    observation = public.observar_bloque(counting, inputs)
    uses = observation["usos"]
    # plain, raising an Exception, raising a BaseException, outer, inner
    assert seen[0] is inputs["model"] and len(seen) == 5
    assert seen[1] is not seen[0] and seen[2] is not seen[1] and seen[3] is seen[4]
    assert uses["propagada"] is True and uses["interrupcion_propagada"] is True
    assert uses["entregado"] == [True] * 5
    assert not any(uses["tras_interior"]["modos"]) and not uses["tras_interior"]["grad"]
    assert observation["resultado"] == public.modos_al_llegar(*inputs.values())


def test_only_a_fixed_exit_state_repeats_its_result_in_the_hidden_cases():
    # The first two cases share the number of modules, every neighbour has the other grad
    # mode, the other neighbours have different module counts: a block that restores a fixed
    # state is told apart (resultado_constante), one that fixes only the modes is not.
    for student in STUDENTS:
        cases = plan("evaluation_mode", hidden.HIDDEN, student, SECRET)
        inputs = [build("evaluation_mode", shape, seed) for shape, seed in cases]
        sizes = [len(list(i["model"].modules())) for i in inputs]
        grads = [i["llamada"]["grad"] for i in inputs]
        assert sizes[0] == sizes[1] and all(a != b for a, b in zip(sizes[1:], sizes[2:]))
        assert all(a != b for a, b in zip(grads, grads[1:]))
        assert public.modos_de(inputs[0]["model"]) != public.modos_de(inputs[1]["model"])
    fixed = grade("evaluation_mode", VARIANTS["evaluation_mode_back_to_train"].function)
    assert fixed.diagnostico == "modos_no_restaurados"


def test_a_caller_in_no_grad_keeps_its_grad_mode():
    inputs = build("evaluation_mode", (4, 3, 5, 2, 0.4, "train", (("grad", False),)))
    uses = public.observar_bloque(reference.evaluation_mode, inputs)["usos"]
    keys = ("despues", "tras_excepcion", "tras_interrupcion", "tras_anidados")
    assert not any(uses[key]["grad"] for key in keys)
    inputs = build("evaluation_mode", (4, 3, 5, 2, 0.4, "train", (("grad", True),)))
    uses = public.observar_bloque(reference.evaluation_mode, inputs)["usos"]
    assert all(uses[key]["grad"] for key in keys)


@pytest.mark.parametrize("name,part,diagnosis", [
    ("evaluation_mode_grad_on_at_exit", "al salir, el modo de autograd",
     "tm_autograd_no_restaurado"),
    ("evaluation_mode_zeroes_the_gradients", "al salir, el modo de autograd",
     "efecto_secundario"),
    ("evaluation_mode_restores_direct_children_only", "al salir, cada submódulo",
     "modos_no_restaurados"),
    ("evaluation_mode_restores_only_on_success", "al salir, cada submódulo",
     "ev_excepcion_sin_restaurar"),
    ("evaluation_mode_saves_on_the_model", "al salir, cada submódulo", "ev_anidado"),
    ("evaluation_mode_no_grad_around_the_setup", "dentro del bloque, autograd",
     "evaluacion_con_grafo"),
    ("evaluation_mode_yields_nothing", "`as` entrega", "ev_entrega"),
    ("evaluation_mode_swallows_errors", "`as` entrega", "ev_excepcion_tragada"),
    ("modules_that_change_leaves_its_hooks", "nada más cambia", "tm_ganchos_sin_quitar"),
    ("modules_that_change_with_grad_on", "sin grafo", "tm_medicion_con_grafo"),
    ("modules_that_change_without_restoring_buffers", "nada más cambia", "tm_buffers_movidos"),
    ("mc_dropout_restores_the_root_flag_only", "modos, BatchNorm", "modos_no_restaurados"),
    ("mc_dropout_without_no_grad", "sin grafo", "evaluacion_con_grafo"),
])
def test_a_side_effect_or_a_constraint_costs_only_its_part(name, part, diagnosis):
    variant = VARIANTS[name]
    for student in ("alumna", "otra"):
        result = grade(variant.exercise, variant.function, student)
        failed = [p.nombre for p, fallo in result.fallos if fallo is not None]
        assert len(failed) == 1 and failed[0].startswith(part), result.informe(name)
        assert result.diagnostico == diagnosis


def test_a_batchnorm_run_in_train_mode_on_one_sample_is_named_not_a_crash():
    shortcut = VARIANTS["mc_dropout_whole_model_in_train"].function
    inputs = build("mc_dropout", (1, 4, 6, 3, 0.4, 3, "mixto"), 7)
    observation = public.observar_mc(shortcut, inputs)
    assert observation["error"]["diagnostico"] == "mc_batchnorm_en_train"


# ---------------------------------------------------------------- mistakes and their names
def test_the_biased_std_is_named_with_its_factor():
    result = grade("mc_dropout", VARIANTS["mc_dropout_biased_std"].function)
    assert result.diagnostico == "mc_std_sesgada"
    report = result.informe("x")
    assert "✓ media de las predicciones" in report and "✗ desviación típica" in report
    n = plan("mc_dropout", hidden.HIDDEN, "alumna", SECRET)[0][0][5]
    assert public.contexto_mc((0, 0, 0, 0, 0, n))["factores"]["mc_std_sesgada"] == (
        math.sqrt((n - 1) / n))


def test_a_one_pass_variance_in_float32_is_still_correct():
    # Σy² − n·mean² loses about √eps·|y| in float32 where the samples barely differ: valid,
    # and accepted (the spread is judged against the size of the outputs there).
    result = grade("mc_dropout", VARIANTS["mc_dropout_running_sums"].function, "otra")
    assert result.puntos == result.maximo, result.informe("running sums")


@pytest.mark.parametrize("name,diagnosis", [
    ("mc_dropout_whole_model_in_train", "mc_batchnorm_en_train"),
    ("mc_dropout_whole_model_in_eval", "mc_sin_dropout"),
    ("mc_dropout_one_batched_pass", "mc_llamadas"),
    ("mc_dropout_reseeds", "mc_resembrado"),
    ("mc_dropout_returns_the_variance", "mc_varianza"),
    ("modules_that_change_by_type_and_settings", "modulos_solo_por_tipo"),
    ("modules_that_change_including_containers", "contenedor_listado"),
    ("modules_that_change_two_whole_passes", "tm_misma_entrada"),
    ("evaluation_mode_without_no_grad", "evaluacion_con_grafo"),
    ("evaluation_mode_returns_the_model", "ev_sin_yield"),
    ("evaluation_mode_without_the_decorator", "ev_no_es_gestor"),
    ("evaluation_mode_dropout_and_batchnorm_only", "ev_dentro_en_train"),
])
def test_the_public_check_names_the_mistake_as_the_hidden_tests_do(name, diagnosis):
    variant = VARIANTS[name]
    with pytest.raises(ComprobacionFallida) as failure:
        getattr(public, "comprobar_" + variant.exercise)(variant.function)
    assert failure.value.diagnostico == diagnosis
    assert grade(variant.exercise, variant.function).diagnostico == diagnosis


# ---------------------------------------------------------------- every sentence of the contract
def test_every_student_meets_an_eval_root_a_train_child_under_an_eval_parent_and_depth_3():
    for student in STUDENTS:
        for exercise in EXERCISES:
            models = [build(exercise, shape, seed)["model"]
                      for shape, seed in plan(exercise, hidden.HIDDEN, student, SECRET)]
            assert any(not m.training for m in models), exercise
            assert any(public.train_bajo_eval(m) for m in models), exercise
            assert {True, False} <= {public.congelados(m) for m in models}, exercise
            assert models[0].training, "a root in train mode first: tm_dejado_en_eval is named"
        depths = [public.profundidad(build("evaluation_mode", shape, seed)["model"])
                  for shape, seed in plan("evaluation_mode", hidden.HIDDEN, student, SECRET)]
        assert max(depths) == hidden.DEEPEST > 3  # deeper than the public examples


def test_a_frozen_layer_stays_frozen_and_the_deep_model_runs_leaf_by_leaf():
    inputs = build("mc_dropout", public.EJEMPLO_MC_ANIDADO, 7)
    model = inputs["model"]
    frozen = [name for name, p in model.named_parameters() if not p.requires_grad]
    assert frozen and all(name.startswith("bloque.capa") for name in frozen)
    deep = build("evaluation_mode", public.EJEMPLOS_BLOQUE[1], 5)["model"]
    assert public.profundidad(deep) == 4 and public.train_bajo_eval(deep)
    with torch.no_grad():
        x = torch.ones(2, 4, dtype=torch.float64)
        assert torch.allclose(deep.eval()(x), public.adelante_a_mano(deep, x, False))


def test_a_reseed_with_the_callers_own_seed_is_named():
    # The caller uses the generator after seeding it: seeding again, even with
    # torch.initial_seed(), draws other masks and is told apart.
    variant = VARIANTS["mc_dropout_reseeds_with_the_callers_seed"]
    assert grade("mc_dropout", variant.function).diagnostico == "mc_resembrado"
    with pytest.raises(ComprobacionFallida) as failure:
        public.comprobar_mc_dropout(variant.function)
    assert failure.value.diagnostico == "mc_resembrado"


@pytest.mark.parametrize("name,diagnosis", [
    ("evaluation_mode_refreezes_the_eval_ones", "modos_no_restaurados"),
    ("evaluation_mode_restores_two_levels", "modos_no_restaurados"),
    ("evaluation_mode_unfreezes_all", "modificada"),
    ("evaluation_mode_leaves_only", "ev_dentro_en_train"),
    ("modules_that_change_unfreezes_all", "modificada"),
    ("modules_that_change_detaches_x_in_place", "modificada"),
    ("modules_that_change_grad_statement", "tm_autograd_no_restaurado"),
    ("mc_dropout_leaves_to_eval_only", "mc_otros_en_train"),
    ("mc_dropout_squeezes", "forma"),
    ("mc_dropout_refreezes_the_eval_ones", "modos_no_restaurados"),
    ("mc_dropout_unfreezes_all", "modificada"),
    ("evaluation_mode_restores_root_and_leaves", "modos_no_restaurados"),
    ("evaluation_mode_restores_in_except_exception", "ev_excepcion_sin_restaurar"),
    ("evaluation_mode_class_reads_grad_at_init", "tm_autograd_no_restaurado"),
    ("modules_that_change_clears_all_hooks", "tm_ganchos_sin_quitar"),
    ("modules_that_change_restores_root_and_leaves", "modos_no_restaurados"),
    ("modules_that_change_one_leaf_at_a_time_model_output", "tm_salida_del_modelo"),
    ("mc_dropout_restores_root_and_leaves", "modos_no_restaurados"),
])
def test_the_public_check_shows_the_new_families(name, diagnosis):
    variant = VARIANTS[name]
    with pytest.raises(ComprobacionFallida) as failure:
        getattr(public, "comprobar_" + variant.exercise)(variant.function)
    assert failure.value.diagnostico == diagnosis
    for student in STUDENTS:
        assert grade(variant.exercise, variant.function, student).diagnostico == diagnosis


def test_the_hidden_models_go_deeper_than_the_public_ones():
    deepest_public = max(public.profundidad(build("evaluation_mode", shape, 5)["model"])
                         for shape in public.EJEMPLOS_BLOQUE)
    assert hidden.DEEPEST > deepest_public
    variant = VARIANTS["evaluation_mode_restores_to_depth_three"]
    for student in STUDENTS:
        assert grade("evaluation_mode", variant.function, student).diagnostico == (
            "modos_no_restaurados")
