"""Chapter 4 specifics: the instrumentation of the training loop leaves nothing behind,
the hidden cases exercise what they claim, inputs differ per student (the shared contract
is in test_contract.py)."""

import pytest
import torch

from autograder.chapters.ch04 import hidden
from autograder.chapters.ch04 import student as public
from autograder.hidden.reference import load_reference
from autograder.hidden.runner import grade_hidden, plan
from autograder.hidden.space import coverage
from autograder.student.compare import Caso, ComprobacionFallida

reference = load_reference("ch04")


def grade(exercise, function, student="alumna"):
    return grade_hidden(exercise, hidden.HIDDEN, function, student, secret="pruebas")


def test_instrumentation_is_removed_even_when_the_student_raises():
    original = torch.nn.utils.clip_grad_norm_

    def explodes(model, loader, loss_fn, optimizer, scheduler=None, accum=1, max_norm=None):
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        raise RuntimeError("boom")

    for function in (reference.train_one_epoch, explodes):
        inputs = public.construir_entrenamiento(
            torch.Generator().manual_seed(0), (5, 4, 3, 4, 3, 2, 0.5, "coseno", "sgd"))
        public.ejecutar_instrumentado(function, inputs)
        assert torch.nn.utils.clip_grad_norm_ is original
        assert "zero_grad" not in vars(inputs["optimizer"])
        assert "zero_grad" not in vars(inputs["model"])
        assert "step" not in vars(inputs["scheduler"])
        assert not inputs["model"]._forward_pre_hooks
        assert not inputs["optimizer"]._optimizer_step_pre_hooks


def test_the_hidden_epochs_cover_accumulation_a_partial_cycle_and_active_clipping():
    cases = plan("train_one_epoch", hidden.HIDDEN, "alumna", "pruebas")
    assert any(shape[5] > 1 and shape[0] % shape[5] for shape, _ in cases)
    clipped = [(shape, seed) for shape, seed in cases if shape[6]]
    assert clipped
    shape, seed = clipped[0]
    inputs = public.construir_entrenamiento(torch.Generator().manual_seed(seed), shape)
    unclipped = public.ejecutar_instrumentado(
        lambda m, lo, lf, o, s, a, n: reference.train_one_epoch(m, lo, lf, o, s, a, None), inputs)
    assert torch.linalg.vector_norm(unclipped["pasos"][0]) > shape[6]  # clipping must act


def test_hidden_inputs_differ_between_students_and_from_the_public_check():
    first = plan("train_one_epoch", hidden.HIDDEN, "alumna", "pruebas")
    assert first == plan("train_one_epoch", hidden.HIDDEN, "alumna", "pruebas")
    assert first != plan("train_one_epoch", hidden.HIDDEN, "alumno", "pruebas")
    assert all(seed != 4 for _, seed in first)


def test_the_order_is_judged_without_zero_grad_and_with_clip_only_when_traced():
    trace = ["backward", "backward", "clip_grad_norm_", "optimizer.step", "scheduler.step",
             "optimizer.zero_grad", "backward", "clip_grad_norm_", "optimizer.step",
             "scheduler.step", "optimizer.zero_grad"]
    no_zero_no_clip = [e for e in trace if e not in ("optimizer.zero_grad", "clip_grad_norm_")]
    zero_first = ["optimizer.zero_grad"] + trace[:5] + ["optimizer.zero_grad"] + trace[6:10]
    for candidate in (trace, no_zero_no_clip, zero_first):
        assert public.diagnosticar_orden(candidate, trace, 3, 2, 1.0) is None
    late_clip = trace[:2] + ["optimizer.step", "clip_grad_norm_"] + trace[4:]
    assert public.diagnosticar_orden(late_clip, trace, 3, 2, 1.0).id == "recorte_fuera_de_lugar"


def test_evaluate_in_train_mode_is_named_by_the_public_check():
    def train_mode_evaluate(model, loader, loss_fn):
        with torch.no_grad():
            losses = [loss_fn(model(x), y).item() for x, y in loader]
        return sum(losses) / len(losses), 0.5

    try:
        public.comprobar_evaluate(train_mode_evaluate)
    except ComprobacionFallida as failure:
        assert failure.diagnostico == "modelo_en_train"
    else:
        raise AssertionError("the public check accepted an evaluation in train mode")
    assert grade("evaluate", train_mode_evaluate).puntos == 0


def test_parameter_updates_are_measured_from_the_inputs_as_they_were_before_any_training():
    # The reference trains the hidden inputs in place: photographed after it, every expected
    # update would read as zero and the parameter part could never name a factor.
    from autograder.chapters.ch04.variants import train_one_epoch_partial_cycle_divided_by_accum

    result = grade("train_one_epoch", train_one_epoch_partial_cycle_divided_by_accum)
    failure = next(failure for part, failure in result.fallos
                   if part.nombre.startswith("parám"))
    assert failure is not None and "todo ceros" not in str(failure)
    assert "razón ajustada" in str(failure)


@pytest.mark.parametrize("name", ["evaluate", "warmup_cosine", "train_one_epoch",
                                  "train_steps"])
def test_the_draws_cover_the_contract_space(name):
    assert coverage(hidden.HIDDEN[name], getattr(reference, name)) == []


def test_a_forgotten_partial_step_costs_the_order_part_only():
    from autograder.chapters.ch04.variants import train_one_epoch_drops_partial_cycle

    for student in ("alumna", "alumno", "otra"):
        result = grade("train_one_epoch", train_one_epoch_drops_partial_cycle, student)
        lost = [part.nombre for part, failure in result.fallos if failure is not None]
        assert len(lost) == 1 and lost[0].startswith("model.train()"), result.informe(student)


def test_the_hidden_loader_cannot_be_sliced_and_the_defaults_are_drawn():
    cases = plan("train_one_epoch", hidden.HIDDEN, "alumna", "pruebas")
    inputs = [public.construir_entrenamiento(torch.Generator().manual_seed(seed), shape)
              for shape, seed in cases]
    assert any(isinstance(i["loader"], public.Cargador) for i in inputs)
    assert any("accum" not in i for i in inputs)
    with pytest.raises(TypeError):
        public.Cargador([(torch.zeros(1), torch.zeros(1))])[0:1]


# ---------------------------------------------------------------- train_steps
def _resume_inputs(student="alumna", index=0):
    shape, seed = plan("train_steps", hidden.HIDDEN, student, "pruebas")[index]
    return public.construir_reanudacion(torch.Generator().manual_seed(seed), shape)


def test_observing_a_resume_leaves_the_callers_generator_and_no_hooks_behind():
    inputs = _resume_inputs()
    torch.manual_seed(123)
    before = torch.get_rng_state()
    observation = public.observar_reanudacion(reference.train_steps, inputs)
    assert torch.equal(torch.get_rng_state(), before)
    assert not inputs["model"]._forward_pre_hooks
    assert not inputs["loss_fn"]._forward_hooks
    assert not inputs["optimizer"]._optimizer_step_pre_hooks
    # the reference resumes bit for bit: every resumed forward and loss is the straight one's
    straight = observation["seguida"]
    for part in observation["tramos"]:
        for batch, weights, loss in zip(part["lotes"], part["parametros"], part["perdidas"]):
            assert torch.equal(weights, straight["parametros"][batch])
            assert loss == straight["perdidas"][batch]


@pytest.mark.parametrize("student", ["alumna", "alumno", "otra"])
def test_every_hidden_case_needs_each_piece_of_the_state(student):
    # a resume that forgets one piece fails on every hidden case, not only on some
    from autograder.chapters.ch04 import variants

    def without_model(model, optimizer, scheduler, loss_fn, batches, stop, state=None):
        return variants._steps(model, optimizer, scheduler, loss_fn, batches, stop, state,
                               keep=("optimizer", "scheduler", "rng"))

    forgetful = {"optimizador_no_restaurado": variants.train_steps_without_optimizer,
                 "planificador_no_restaurado": variants.train_steps_without_scheduler,
                 "rng_no_restaurado": variants.train_steps_without_rng,
                 "modelo_no_restaurado": without_model}
    for index in range(len(plan("train_steps", hidden.HIDDEN, student, "pruebas"))):
        for diagnosis, function in forgetful.items():
            inputs = _resume_inputs(student, index)
            observation = public.observar_reanudacion(function, inputs)
            built = Caso(observation["resultado"], None, dict(observation))
            failures = []
            for part in public.TRAIN_STEPS.partes[1:5]:
                try:
                    part.verificar(built)
                except ComprobacionFallida as failure:
                    failures.append(failure.diagnostico)
            assert diagnosis in failures, (student, index, diagnosis, failures)


def test_a_resume_mistake_costs_its_own_part_and_the_final_comparison_only():
    from autograder.chapters.ch04 import variants

    lost_by = {variants.train_steps_without_optimizer: "optimizador",
               variants.train_steps_without_scheduler: "planificador",
               variants.train_steps_without_rng: "generador",
               variants.train_steps_rng_read_before_training: "generador"}
    for function, piece in lost_by.items():
        result = grade("train_steps", function)
        lost = [part.nombre for part, failure in result.fallos if failure is not None]
        assert len(lost) == 2 and piece in lost[0] and "mismo final" in lost[1], lost


def test_loading_the_scheduler_before_the_optimizer_is_as_good():
    from autograder.chapters.ch04.variants import (
        train_steps_scheduler_first_counter_from_scheduler,
    )

    assert grade("train_steps", train_steps_scheduler_first_counter_from_scheduler).puntos == 4


def test_the_hidden_resumes_include_two_interruptions_and_a_cut_inside_the_warmup():
    cases = plan("train_steps", hidden.HIDDEN, "alumna", "pruebas")
    assert any(len(shape[0]) == 3 for shape, _ in cases)
    assert any(shape[0][0] < shape[-1] and shape[8] == "secuencial" for shape, _ in cases)
    assert all(seed != 8 for _, seed in cases)


# ---------------------------------------------------------------- clause families
def test_the_one_pass_loader_is_used_up_by_a_first_pass():
    loader = public.UnaPasada([(torch.zeros(2, 3), torch.zeros(2, dtype=torch.long))])
    assert len(list(loader)) == 1 and list(loader) == []
    assert len(public.lotes_de(loader)) == 1  # the observer still sees the batches


def test_every_student_meets_a_one_sample_batch_a_one_pass_loader_and_a_plain_loss():
    for student in ("alumna", "alumno", "otra"):
        inputs = [public.construir_evaluacion(torch.Generator().manual_seed(seed), shape)
                  for shape, seed in plan("evaluate", hidden.HIDDEN, student, "pruebas")]
        assert any(isinstance(i["loader"], public.UnaPasada) for i in inputs)
        assert any(isinstance(i["loader"], tuple) for i in inputs)
        assert any(min(len(y) for _, y in public.lotes_de(i["loader"])) == 1 for i in inputs)
        assert any(not isinstance(i["loss_fn"], torch.nn.Module) for i in inputs)
        assert any(public.profundidad(i["model"]) == 3 for i in inputs)


def test_max_norm_zero_is_a_value_and_clips_every_step_to_norm_zero():
    cases = plan("train_one_epoch", hidden.HIDDEN, "alumna", "pruebas")
    shape, seed = next((s, d) for s, d in cases if s[6] == 0.0 and s[6] is not None)
    inputs = public.construir_entrenamiento(torch.Generator().manual_seed(seed), shape)
    assert inputs["max_norm"] == 0.0
    observation = public.ejecutar_instrumentado(reference.train_one_epoch, inputs)
    assert all(torch.count_nonzero(step) == 0 for step in observation["pasos"])


def test_a_frozen_parameter_stays_frozen_and_untrained_by_the_reference():
    cases = plan("train_one_epoch", hidden.HIDDEN, "alumna", "pruebas")
    shape, seed = next((s, d) for s, d in cases if len(s) > 16 and s[16])
    inputs = public.construir_entrenamiento(torch.Generator().manual_seed(seed), shape)
    frozen = [(n, p.detach().clone()) for n, p in inputs["model"].named_parameters()
              if not p.requires_grad]
    assert frozen
    public.ejecutar_instrumentado(reference.train_one_epoch, inputs)
    after = dict(inputs["model"].named_parameters())
    for name, before in frozen:
        assert not after[name].requires_grad and torch.equal(after[name].detach(), before)


def test_a_hand_written_scheduler_is_not_a_scheduler():
    from autograder.chapters.ch04.variants import warmup_cosine_hand_written_class

    result = grade("warmup_cosine", warmup_cosine_hand_written_class)
    assert result.puntos == 0 and result.diagnostico == "no_es_planificador"
