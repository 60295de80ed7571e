"""Chapter 7 hidden tests: fresh random shapes and values per student, vs the reference."""

import torch

from autograder.chapters.ch07.student import LINEAR_TANH, QUANTIZE_STE, STABLE_SOFTPLUS
from autograder.hidden.reference import load_reference
from autograder.hidden.runner import HiddenExercise, case_seed, checker, hidden_table, integer

reference = load_reference("ch07")  # the solution cells of solutions/07_*.py


def _gradients(function, inputs, grad_output, *others):
    """The output of ``function(*inputs, *others)`` and the gradients of every input."""
    with torch.enable_grad():
        leaves = [t.detach().clone().requires_grad_(True) for t in inputs]
        output = function(*leaves, *others)
        grads = torch.autograd.grad(output, leaves, grad_output)
    return output.detach(), list(grads)


# ---------------------------------------------------------------- stable_softplus
def _softplus_shapes(generator):
    """Two float64 cases and one float32; beta ≠ 1 so that ignoring it shows."""
    cases = []
    for dtype in ("float64", "float64", "float32"):
        tenths = 10
        while tenths == 10:
            tenths = integer(generator, 4, 30)
        cases.append(((integer(generator, 5, 12), tenths, dtype), case_seed(generator)))
    return cases


def _expected_softplus(x, beta, grad_output):
    output, (grad,) = _gradients(reference.stable_softplus, [x], grad_output, beta)
    _, (derivative,) = _gradients(reference.stable_softplus, [x], torch.ones_like(x), beta)
    return {"salida": output, "grads": [grad], "derivada": derivative}


# ---------------------------------------------------------------- linear_tanh
def _linear_shapes(generator):
    """N, D, H all different (a transposed gradient cannot have the right shape)."""
    cases = []
    for dtype in ("float64", "float32"):
        N, D, H = 0, 0, 0
        while len({N, D, H}) < 3:
            N, D, H = (integer(generator, 3, 9), integer(generator, 3, 7),
                       integer(generator, 3, 7))
        cases.append(((N, D, H, dtype), case_seed(generator)))
    return cases


def _expected_linear(x, weight, bias, grad_output):
    output, grads = _gradients(reference.linear_tanh, [x, weight, bias], grad_output)
    return {"salida": output, "grads": grads}


# ---------------------------------------------------------------- quantize_ste
def _quantizer_shapes(generator):
    """step = 2^-k with k in 2..4 (so 1/step is 4, 8 or 16), levels in 3..8."""
    return [((integer(generator, 10, 24), integer(generator, 2, 4), integer(generator, 3, 8),
              dtype), case_seed(generator)) for dtype in ("float64", "float32")]


def _expected_quantizer(x, step, levels, grad_output):
    output, grads = _gradients(reference.quantize_ste, [x], grad_output, step, levels)
    return {"salida": output, "grads": grads, "arriba": grad_output,
            "sin_recorte": torch.round(x.detach() / step) * step}


HIDDEN = hidden_table(
    HiddenExercise(STABLE_SOFTPLUS, _softplus_shapes, _expected_softplus),
    HiddenExercise(LINEAR_TANH, _linear_shapes, _expected_linear),
    HiddenExercise(QUANTIZE_STE, _quantizer_shapes, _expected_quantizer),
)
check = checker(HIDDEN)  # what the graded cells of the instructor notebook call
