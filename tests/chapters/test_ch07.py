"""Chapter 7 specifics: what the observation of a custom Function records, and what the
hidden cases hold (the shared contract is in test_contract.py)."""

import pytest
import torch

from autograder.chapters.ch07 import hidden
from autograder.chapters.ch07 import student as public
from autograder.chapters.ch07 import variants as corpus
from autograder.hidden.reference import load_reference
from autograder.hidden.runner import plan
from autograder.hidden.space import coverage

reference = load_reference("ch07")

VARIANTS = {v.name: v for v in corpus.registry.variants}

LINEAR = (5, 4, 3, "float64", (True, True, True), True, False)
QUANTIZER = ((12,), 0.25, 4, "float64", True, True, False)


def observe(exercise, function, shape, seed=0):
    declared = public.EJERCICIOS[exercise]
    inputs = declared.construir(torch.Generator().manual_seed(seed), shape)
    return declared.observar(function, inputs)


def test_the_observation_names_what_ctx_saved():
    minimal = observe("linear_tanh", reference.linear_tanh, LINEAR)
    assert minimal["guardados"] == ["x", "weight", "la salida"]
    assert minimal["elementos_guardados"] == 5 * 4 + 3 * 4 + 5 * 3
    everything = observe("linear_tanh", VARIANTS["linear_tanh_saves_everything"].function,
                         LINEAR)
    assert everything["guardados"] == ["x", "weight", "la salida", "bias", "la preactivación"]
    attributes = observe("linear_tanh",
                         VARIANTS["linear_tanh_tensors_as_ctx_attributes"].function, LINEAR)
    assert attributes["atributos_tensor"] == ["ctx.out", "ctx.weight", "ctx.x"]


@pytest.mark.parametrize("without", range(3))
def test_needs_input_grad_is_read_from_what_backward_returns(without):
    requires = [True, True, True]
    requires[without] = False
    shape = (*LINEAR[:4], tuple(requires), True, False)
    returned = observe("linear_tanh", reference.linear_tanh, shape)["devuelto"]
    assert returned[without] is None
    assert all(r is not None for i, r in enumerate(returned) if i != without)
    always = VARIANTS["linear_tanh_always_all_gradients"].function
    assert observe("linear_tanh", always, shape)["devuelto"][without] is not None


def test_gradcheck_runs_in_float64_and_catches_a_wrong_backward():
    shape = ((6,), 2.0, "float32", True, True, False, 0)
    assert observe("stable_softplus", reference.stable_softplus, shape)["gradcheck"] is True
    wrong = VARIANTS["softplus_derivative_ignores_beta"].function
    assert observe("stable_softplus", wrong, shape)["gradcheck"] is False


def test_a_backward_that_writes_into_grad_output_is_seen():
    wrong = VARIANTS["quantize_masks_grad_output_in_place"].function
    assert observe("quantize_ste", wrong, QUANTIZER)["grad_output_modificado"]
    assert not observe("quantize_ste", reference.quantize_ste,
                       QUANTIZER)["grad_output_modificado"]


def test_hidden_inputs_include_overflowing_values_and_beta_other_than_one():
    for shape, _ in plan("stable_softplus", hidden.HIDDEN, "alumna", "pruebas"):
        assert shape[1] != 1
        x = public.construir_softplus(torch.Generator().manual_seed(0), shape)["x"]
        if x.dim():
            assert torch.isinf(torch.exp(shape[1] * x.detach())).any()


@pytest.mark.parametrize("name", list(hidden.HIDDEN))
def test_the_draws_cover_the_contract(name):
    assert coverage(hidden.HIDDEN[name], getattr(reference, name), students=5) == []


CHECKPOINT = ("mlp", 4, 3, 5, "float64", (True, False, True, True), True, False)


def test_the_observation_counts_what_the_forward_saved_and_the_calls_of_fn():
    right = observe("checkpoint_apply", reference.checkpoint_apply, CHECKPOINT)
    assert (right["intermedios"], right["bytes_intermedios"]) == (0, 0)
    assert (right["llamadas_forward"], right["llamadas_backward"]) == (1, 1)
    assert right["guardados"] == ["x", "w1", "b1", "w2"]
    keeps = observe("checkpoint_apply",
                    VARIANTS["checkpoint_forward_keeps_the_graph"].function, CHECKPOINT)
    assert keeps["intermedios"] >= 2 and keeps["bytes_intermedios"] >= 2 * 4 * 5 * 8
    twice = observe("checkpoint_apply", VARIANTS["checkpoint_recomputes_twice"].function,
                    CHECKPOINT)
    assert (twice["llamadas_forward"], twice["llamadas_backward"]) == (1, 2)


def test_a_frozen_parameter_gets_none_and_a_recomputation_on_the_saved_tensors_is_seen():
    right = observe("checkpoint_apply", reference.checkpoint_apply, CHECKPOINT)
    assert right["devuelto"][1] is None and right["devuelto"][0] is not None
    attached = observe("checkpoint_apply",
                       VARIANTS["checkpoint_recomputes_on_the_saved_tensors"].function,
                       CHECKPOINT)
    assert right["estado_despues"]["x.grad"] is None
    assert attached["estado_despues"]["x.grad"] is not None


def test_a_backward_through_cosh_is_judged_against_the_float64_truth():
    """Where tanh saturates, float32's 1 − y² loses digits that 1 / cosh(z)² keeps: the
    reference is taken in float64 and the gradients judged at the scale of the whole set (a
    draw of ``fairness --draws`` cost this correct variant a point)."""
    from autograder.fairness import torch_threads
    from autograder.hidden.runner import observar_casos, roundtrip, score

    table = hidden.HIDDEN["linear_tanh"]
    case = ((2, 5, 3, "float32", (True, True, True), True, False), 1994132725)
    for function in (VARIANTS["linear_tanh_saves_preactivation"].function,
                     reference.linear_tanh):
        with torch_threads(1):
            observations = roundtrip(observar_casos(table.exercise, function, [case]))
        result = score(table, [case], observations)
        assert result.puntos == result.maximo, result.informe("linear_tanh")
