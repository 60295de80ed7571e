"""Chapter 5 specifics: what the hidden cases vary (starting modes, layer layouts, sample
counts), what the public examples hold, and the mistakes that only some cases expose (the
shared contract is in test_contract.py)."""

import math

import pytest
import torch
from torch import nn

from autograder.chapters.ch05 import hidden
from autograder.chapters.ch05 import student as public
from autograder.chapters.ch05 import variants as corpus
from autograder.hidden.reference import load_reference
from autograder.hidden.runner import grade_hidden, plan
from autograder.student.compare import ComprobacionFallida

reference = load_reference("ch05")

VARIANTS = {v.name: v for v in corpus.registry.variants}
STUDENTS = ("alumna", "alumno", "ana", "bruno", "otra")
SECRET = "pruebas"


def grade(exercise, function, student="alumna"):
    return grade_hidden(exercise, hidden.HIDDEN, function, student, secret=SECRET)


def build(exercise, shape, seed=0):
    return public.EJERCICIOS[exercise].construir(torch.Generator().manual_seed(seed), shape)


def is_mixed(model):
    """Train mode with every BatchNorm frozen in eval mode (fine-tuning style)."""
    norms = [m for m in model.modules() if isinstance(m, nn.BatchNorm1d)]
    return model.training and norms and not any(m.training for m in norms)


# ---------------------------------------------------------------- what the hidden cases vary
def test_each_exercise_starts_once_from_every_mode():
    for student in STUDENTS:
        evaluation = plan("evaluate", hidden.HIDDEN, student, SECRET)
        assert [shape[-1] for shape, _ in evaluation] == ["eval", "mixto", "train"]
        assert all(0.2 <= shape[4] <= 0.6 for shape, _ in evaluation)
        modules = plan("modules_that_change", hidden.HIDDEN, student, SECRET)
        assert tuple(shape[-1] for shape, _ in modules) == hidden.MODULE_MODES
        sampling = plan("mc_dropout", hidden.HIDDEN, student, SECRET)
        assert tuple(shape[-1] for shape, _ in sampling) == hidden.MC_MODES
        assert all(5 <= shape[5] <= 12 for shape, _ in sampling)


def test_the_built_models_start_in_the_mode_their_case_names():
    for shape, seed in plan("evaluate", hidden.HIDDEN, "alumna", SECRET):
        model = build("evaluate", shape, seed)["model"]
        modes = public.modos_de(model)
        expected = {"eval": not any(modes), "train": all(modes), "mixto": is_mixed(model)}
        assert expected[shape[-1]], (shape, modes)


def test_hidden_layouts_hold_every_trap_and_need_different_answers():
    for student in STUDENTS:
        layouts = [shape[4] for shape, _ in plan("modules_that_change", hidden.HIDDEN,
                                                 student, SECRET)]
        for layout in layouts:
            assert len(layout) == 6 and set("BDGSZ") <= set(layout)
            assert len(set(layout) - set("BDGSZ")) == 1 and set(layout) - set("BDGSZ") <= set(
                "RTI")
        answers = [hidden._changing(layout) for layout in layouts]
        assert len(set(map(frozenset, answers))) == len(answers)  # a fixed answer shows


def test_the_public_oracle_and_the_reference_agree_on_the_hidden_layouts():
    # By type and settings (the public oracle) and by behaviour (the reference) must name the
    # same modules on every layout the hidden tests build: the codes say what each layer does.
    for shape, seed in plan("modules_that_change", hidden.HIDDEN, "alumna", SECRET):
        by_type = public.modulos_por_tipo(*build("modules_that_change", shape, seed).values())
        by_behaviour = reference.modules_that_change(
            *build("modules_that_change", shape, seed).values())
        names = {f"cuerpo.{i}" for i in hidden._changing(shape[4])}
        assert set(by_type["cambian"]) == set(by_behaviour) == names


def test_hidden_inputs_differ_between_students_and_repeat_on_regrade():
    for exercise in public.EJERCICIOS:
        first = plan(exercise, hidden.HIDDEN, "alumna", SECRET)
        assert first == plan(exercise, hidden.HIDDEN, "alumna", SECRET)
        assert first != plan(exercise, hidden.HIDDEN, "alumno", SECRET)


# ---------------------------------------------------------------- the public examples
def spy_on(exercise, function, seen):
    def spy(model, *args):
        seen.append({"mixed": is_mixed(model), "types": public.tipos_de(model),
                     "layers": [type(m).__name__ for m in model.modules()],
                     "x": (tuple(args[0].shape), args[0].flatten()[0].item())})
        return function(model, *args)
    return spy


@pytest.mark.parametrize("exercise", ["evaluate", "modules_that_change", "mc_dropout"])
def test_the_public_examples_start_from_mixed_modes_and_differ_from_the_hidden_inputs(
        exercise, capsys):
    public_calls, hidden_calls = [], []
    getattr(public, "comprobar_" + exercise)(
        spy_on(exercise, getattr(reference, exercise), public_calls))
    assert "✓" in capsys.readouterr().out
    assert public_calls and all(call["mixed"] for call in public_calls)
    grade(exercise, spy_on(exercise, getattr(reference, exercise), hidden_calls))
    assert not {c["x"] for c in public_calls} & {c["x"] for c in hidden_calls}


def test_the_public_layout_holds_every_trap():
    seen = []
    public.comprobar_modules_that_change(
        spy_on("modules_that_change", reference.modules_that_change, seen))
    layers = seen[0]["layers"]
    for trap in ("BatchNorm1d", "Dropout", "RuidoGaussiano", "ReLU", "Tanh"):
        assert trap in layers
    model = build("modules_that_change", (5, 3, 4, 2, "BRZGSDT", "mixto"), 6)["model"]
    assert any(isinstance(m, nn.Dropout) and m.p == 0 for m in model.modules())
    assert any(isinstance(m, nn.BatchNorm1d) and not m.track_running_stats
               for m in model.modules())


# ---------------------------------------------------------------- mistakes and their names
def test_only_a_mixed_start_exposes_restoring_the_root_flag_alone():
    root_only = VARIANTS["evaluate_restores_the_root_flag_only"].function
    for mode in ("eval", "train", "mixto"):
        inputs = build("evaluate", (6, 4, 5, 3, 0.5, mode))
        before = public.modos_de(inputs["model"])
        observation = public.observar_evaluacion(root_only, inputs)
        restored = public.diagnosticar_modos(before, observation["modos"]) is None
        assert restored == (mode != "mixto"), mode


def test_the_biased_std_is_named_with_its_factor():
    result = grade("mc_dropout", VARIANTS["mc_dropout_biased_std"].function)
    assert result.diagnostico == "mc_std_sesgada"
    report = result.informe("x")
    assert "✓ media de las predicciones" in report and "✗ desviación típica" in report
    n = plan("mc_dropout", hidden.HIDDEN, "alumna", SECRET)[0][0][5]
    assert public.contexto_mc((0, 0, 0, 0, 0, n))["factores"]["mc_std_sesgada"] == (
        math.sqrt((n - 1) / n))


@pytest.mark.parametrize("name,diagnosis", [
    ("mc_dropout_whole_model_in_train", "mc_batchnorm_en_train"),
    ("mc_dropout_whole_model_in_eval", "mc_sin_dropout"),
    ("mc_dropout_one_batched_pass", "mc_llamadas"),
    ("modules_that_change_by_type_and_settings", "modulos_solo_por_tipo"),
    ("modules_that_change_including_containers", "contenedor_listado"),
    ("evaluate_without_eval", "modelo_en_train"),
])
def test_the_public_check_names_the_mistake_as_the_hidden_tests_do(name, diagnosis):
    variant = VARIANTS[name]
    with pytest.raises(ComprobacionFallida) as failure:
        getattr(public, "comprobar_" + variant.exercise)(variant.function)
    assert failure.value.diagnostico == diagnosis
    assert grade(variant.exercise, variant.function).diagnostico == diagnosis
