"""Chapter 6 specifics: what the hidden cases vary (machine tables, scale sequences, step
cases), what the public examples hold, and the mistakes they name (the shared contract is
in test_contract.py; the CUDA case is in test_gpu.py)."""

import math

import pytest
import torch

from autograder.chapters.ch06 import hidden
from autograder.chapters.ch06 import student as public
from autograder.chapters.ch06 import variants as corpus
from autograder.hidden.reference import load_reference
from autograder.hidden.runner import grade_hidden, plan
from autograder.hidden.space import coverage
from autograder.student.compare import ComprobacionFallida

reference = load_reference("ch06")

VARIANTS = {v.name: v for v in corpus.registry.variants}
STUDENTS = ("alumna", "alumno", "ana", "bruno", "otra")
SECRET = "pruebas"


def grade(exercise, function, student="alumna"):
    return grade_hidden(exercise, hidden.HIDDEN, function, student, secret=SECRET)


def build(exercise, shape, seed=0):
    return public.EJERCICIOS[exercise].construir(torch.Generator().manual_seed(seed), shape)


def growth_steps(flags, interval):
    """The steps at which a GradScaler grows its scale, and whether two growths ever come
    with no inf between them (what a counter not reset after growing gets wrong)."""
    clean, steps, back_to_back, last = 0, [], False, None
    for step, inf in enumerate(flags):
        if inf:
            clean, last = 0, "inf"
            continue
        clean += 1
        if clean == interval:
            back_to_back = back_to_back or last == "growth"
            clean, last = 0, "growth"
            steps.append(step)
    return steps, back_to_back


# ---------------------------------------------------------------- the contract as a space
@pytest.mark.parametrize("name", ["diagnose_amp_log", "simulate_loss_scale",
                                  "amp_accumulation_steps"])
def test_every_student_draws_the_whole_contract(name):
    assert coverage(hidden.HIDDEN[name], getattr(reference, name)) == []


# ---------------------------------------------------------------- diagnose_amp_log
def simulated(seeds, copies=3):
    """(label it was simulated with, log) over ``seeds`` cases of ``copies`` logs per label."""
    pairs = []
    for seed in seeds:
        shape = (copies,)
        labels = public.clases_sorteadas(torch.Generator().manual_seed(seed), shape)
        pairs += list(zip(labels, build("diagnose_amp_log", shape, seed)["registros"]))
    return pairs


def test_every_log_gets_the_label_it_was_simulated_with_by_every_correct_rule():
    # the classes are separable: the reference and the correct variants (other rules) agree
    # with the simulation on thousands of fresh logs
    rules = [reference.diagnose_amp_log] + [
        v.function for v in corpus.registry.variants
        if v.exercise == "diagnose_amp_log" and v.expected == corpus.CORRECT]
    assert len(rules) >= 3
    for label, log in simulated(range(100)):
        for rule in rules:
            assert rule(log) == label, (rule.__name__, label)


def test_no_threshold_on_a_single_value_separates_the_labels():
    pairs = simulated(range(40))

    def span(label, key):
        values = [r[key] for lab, log in pairs if lab == label for r in log
                  if math.isfinite(r[key]) and math.isfinite(r["grad_norm"])]
        return min(values), max(values)

    for key, scaled in (("grad_norm", "clip_before_unscale"), ("loss", "scaled_loss")):
        low, high = span("ok", key)
        scaled_low, scaled_high = span(scaled, key)
        assert scaled_low < high and low < scaled_high, key


def test_every_student_gets_two_fresh_cases_of_three_logs_per_label():
    seen = set()
    for student in STUDENTS:
        cases = plan("diagnose_amp_log", hidden.HIDDEN, student, SECRET)
        assert [shape for shape, _ in cases] == [(3,), (3,)]
        for shape, seed in cases:
            labels = public.clases_sorteadas(torch.Generator().manual_seed(seed), shape)
            assert sorted(labels) == sorted(public.ETIQUETAS * 3)
            seen.add(seed)
    assert public.EJEMPLO_REGISTROS[0] not in seen


def test_the_examples_are_the_public_check_logs_with_their_labels():
    examples = public.registros_de_ejemplo()
    assert sorted(label for label, _ in examples) == sorted(public.ETIQUETAS * 2)
    assert all(reference.diagnose_amp_log(log) == label for label, log in examples)


def test_the_statement_does_not_give_the_signatures():
    doc = reference.diagnose_amp_log.__doc__
    for hint in ("mitad", "mismo factor", "nan en la pérdida", "proporcional"):
        assert hint not in doc


# ---------------------------------------------------------------- simulate_loss_scale
def test_hidden_scale_sequences_use_other_factors_and_are_longer_than_the_example():
    public_steps = public.EJEMPLO_ESCALA[1][0]
    for student in STUDENTS:
        cases = plan("simulate_loss_scale", hidden.HIDDEN, student, SECRET)
        settings = [build("simulate_loss_scale", shape, seed) for shape, seed in cases]
        assert sorted(s["growth_factor"] == 2.0 and s["backoff_factor"] == 0.5
                      for s in settings) == [False, False, True]
        assert 1 in [s["growth_interval"] for s in settings]
        assert all(30 <= shape[0] <= 45 and shape[0] > public_steps for shape, _ in cases)


def test_hidden_scale_settings_stay_where_a_float32_gradscaler_agrees():
    for student in STUDENTS:
        for shape, seed in plan("simulate_loss_scale", hidden.HIDDEN, student, SECRET):
            inputs = build("simulate_loss_scale", shape, seed)
            expected = reference.simulate_loss_scale(*inputs.values())
            real = public.escalas_de_gradscaler(*inputs.values())["escalas"]
            assert all(abs(a - b) <= 1e-6 * a for a, b in zip(expected, real)), student
            assert max(expected) < 2.0 ** 120 and min(expected) > 2.0 ** -120


def test_every_hidden_scale_sequence_backs_off_and_every_student_sees_a_growth():
    for student in STUDENTS:
        grows = []
        for shape, seed in plan("simulate_loss_scale", hidden.HIDDEN, student, SECRET):
            inputs = build("simulate_loss_scale", shape, seed)
            scales = reference.simulate_loss_scale(*inputs.values())
            previous = [inputs["init_scale"], *scales[:-1]]
            assert any(s < p for s, p in zip(scales, previous)), (student, shape)
            grows.append(any(s > p for s, p in zip(scales, previous)))
        assert any(grows), student


def test_the_public_example_has_two_growths_in_a_row():
    seed, shape = public.EJEMPLO_ESCALA
    inputs = build("simulate_loss_scale", shape, seed)
    steps, back_to_back = growth_steps(inputs["found_inf"], inputs["growth_interval"])
    assert back_to_back and any(inputs["found_inf"])
    expected = reference.simulate_loss_scale(*inputs.values())
    assert expected == public.escalas_de_gradscaler(*inputs.values())["escalas"]


def test_the_second_public_example_uses_other_factors_and_agrees_with_a_gradscaler():
    seed, shape = public.OTRO_EJEMPLO_ESCALA
    inputs = build("simulate_loss_scale", shape, seed)
    assert (inputs["growth_factor"], inputs["backoff_factor"]) == (1.5, 0.75)
    assert not float(inputs["init_scale"]).is_integer() or inputs["init_scale"] % 2 == 1
    expected = reference.simulate_loss_scale(*inputs.values())
    real = public.escalas_de_gradscaler(*inputs.values())["escalas"]
    assert all(abs(a - b) <= 1e-6 * a for a, b in zip(expected, real))
    assert any(s > p for s, p in zip(expected, [inputs["init_scale"], *expected]))


def test_every_hidden_scale_sequence_has_two_growths_in_a_row():
    # A counter not reset after growing shows only there (simulate_loss_scale_counter_not_
    # reset_after_growth would get full marks on a sequence without).
    for student in STUDENTS:
        for shape, seed in plan("simulate_loss_scale", hidden.HIDDEN, student, SECRET):
            inputs = build("simulate_loss_scale", shape, seed)
            assert growth_steps(inputs["found_inf"], inputs["growth_interval"])[1], student


# ---------------------------------------------------------------- amp_accumulation_steps
TS = "amp_accumulation_steps"


def test_every_cpu_case_once_in_a_per_student_order_with_every_kind_of_last_cycle():
    orders = set()
    for student in STUDENTS:
        shapes = [shape for shape, _ in plan(TS, hidden.HIDDEN, student, SECRET)]
        codes = tuple(shape[4] for shape in shapes)
        assert sorted(codes) == sorted(hidden._step_codes())
        orders.add(codes)
        assert all(shape[7] >= 2 for shape in shapes)  # accum 1 would be no accumulation
        kinds = {public.ciclos_de(shape[6], shape[7])[-1] < shape[7] for shape in shapes}
        assert kinds == {True, False}, student
        assert any(shape[6] < shape[7] for shape in shapes)  # one cycle, shorter than accum
        overflow = next(shape for shape in shapes if shape[4] == 2)
        assert len(public.ciclos_de(overflow[6], overflow[7])) >= 2  # steps after the skip
        leftovers = [shape for shape in shapes if shape[5] & public.RESTOS]
        assert any(shape[4] != 2 for shape in leftovers)  # where the first step is taken
    assert len(orders) > 1


def expected_steps(shape, seed, **changes):
    inputs = build(TS, shape, seed)
    inputs.update(changes)
    return hidden._expected_steps(*inputs.values()), inputs


@pytest.mark.parametrize("code", [0, 1, 2, 3, 5])
def test_each_case_does_what_its_code_says(code):
    shape = next(shape for shape, _ in plan(TS, hidden.HIDDEN, "alumna", SECRET)
                 if shape[4] == code)
    run, inputs = expected_steps(shape, 1)
    cycles = public.ciclos_de(shape[6], shape[7])
    # float16 with a GradScaler, bfloat16 without: what pick_amp_dtype says
    assert (inputs["scaler"] is None) == (code in (1, 5)) == (inputs["dtype"] == torch.bfloat16)
    assert inputs["device"] == "cpu"
    assert run["dtype_activacion"] == public.nombre_dtype(inputs["dtype"])
    assert len(run["resultado"]) == len(cycles)
    # an overflowing first cycle: its step is skipped, the scale backs off, later ones step
    assert len(run["pasos"]) == len(cycles) - (code == 2)
    if code == 2:
        assert run["escala"] < run["escala_inicial"]
    unclipped, _ = expected_steps(shape, 1, max_norm=float("inf"))
    clipped = not all(torch.equal(a, b) for a, b in zip(unclipped["parametros"],
                                                        run["parametros"]))
    assert clipped == (code not in public.SIN_RECORTE)
    if code == 3:  # a GradScaler that grows its scale on every clean step
        assert run["escala"] == run["escala_inicial"] * (
            inputs["scaler"].get_growth_factor() ** len(cycles))


def test_the_public_oracle_agrees_with_the_reference_on_every_public_example():
    for shape in public.FORMAS_PASO:
        inputs = build(TS, shape, 7)
        oracle = public.pasos_calculados_aparte(*inputs.values())
        run, _ = expected_steps(shape, 7)
        assert oracle["escala"] == run["escala"] and oracle["momentos"] == run["momentos"]
        assert oracle["traza"].count("scaler.update") == run["traza"].count("scaler.update")
        for ours, theirs in zip(oracle["pasos"], run["pasos"]):
            for a, b in zip(ours, theirs):
                assert torch.allclose(a, b, rtol=3e-2, atol=1e-3), shape
        for a, b in zip(oracle["parametros"], run["parametros"]):
            assert torch.allclose(a, b, rtol=3e-2, atol=1e-3), shape
    codes = [shape[4] for shape in public.FORMAS_PASO]
    assert 2 in codes and 3 in codes  # an overflow and a growing scale are shown publicly
    assert any(shape[6] % shape[7] for shape in public.FORMAS_PASO)  # an incomplete cycle


def test_the_public_example_runs_with_and_without_a_scaler():
    seen = []

    def spy(model, batches, loss_fn, optimizer, scaler, device, dtype, accum, max_norm):
        seen.append(scaler is not None)
        return reference.amp_accumulation_steps(model, batches, loss_fn, optimizer, scaler,
                                                device, dtype, accum, max_norm)

    public.comprobar_amp_accumulation_steps(spy)
    assert seen[:2] == [True, False]


def test_the_statement_states_the_goal_not_the_call_order():
    doc = reference.amp_accumulation_steps.__doc__
    for call in ("scaler.scale(", "unscale_(", "scaler.step(", "scaler.update(",
                 "clip_grad_norm_(", "zero_grad("):
        assert call not in doc, call


# ---------------------------------------------------------------- mistakes and their names
@pytest.mark.parametrize("name,diagnosis", [
    ("diagnose_amp_log_every_inf_is_a_bug", "amp_registro_falsa_alarma"),
    ("diagnose_amp_log_swapped", "amp_registro_recorte"),
    ("diagnose_amp_log_only_the_norm", "amp_registro_perdida_escalada"),
    ("simulate_loss_scale_only_skips", "amp_escala_sin_reducir"),
    ("simulate_loss_scale_counter_not_reset_after_growth", "amp_crecimiento_tardio"),
    ("amp_accumulation_steps_clips_scaled_gradients", "clip_antes_de_unscale"),
    ("amp_accumulation_steps_calls_optimizer_step", "amp_step_sin_scaler"),
    ("amp_accumulation_steps_updates_every_micro_batch", "amp_update_por_microlote"),
    ("amp_accumulation_steps_unscales_every_micro_batch", "amp_unscale_por_microlote"),
    ("amp_accumulation_steps_last_cycle_by_accum", "amp_ultimo_ciclo_por_accum"),
    ("amp_accumulation_steps_zero_grad_only_after_the_step", "amp_grad_previo_sin_borrar"),
    ("amp_accumulation_steps_sets_train_mode", "efecto_secundario"),
    ("simulate_loss_scale_always_doubles", "amp_otro_factor"),
])
def test_the_public_check_names_the_mistake(name, diagnosis):
    variant = VARIANTS[name]
    with pytest.raises(ComprobacionFallida) as failure:
        getattr(public, "comprobar_" + variant.exercise)(variant.function)
    assert failure.value.diagnostico == diagnosis


def test_a_side_effect_loses_only_its_part():
    result = grade(TS, VARIANTS["amp_accumulation_steps_sets_train_mode"].function)
    assert result.puntos == result.maximo - 0.5 and result.diagnostico == "efecto_secundario"


def test_a_consumed_found_inf_list_loses_only_its_part():
    result = grade("simulate_loss_scale", VARIANTS["simulate_loss_scale_pops_the_flags"].function)
    assert result.diagnostico == "modificada"
    report = result.informe("x")
    assert "✗ cada paso con inf" in report and "✓ la escala crece" in report
