"""Chapter 1 hidden tests: fresh random shapes and values per student, vs the reference."""

import torch

from autograder.chapters.ch01.student import GRADIENT_PENALTY, MANUAL_BACKWARD, TWO_LOSS_GRADS
from autograder.hidden.reference import load_reference
from autograder.hidden.runner import HiddenExercise, case_seed, checker, hidden_table, integer

reference = load_reference("ch01")  # the solution cells of solutions/01_*.py


def _network_shapes(generator):
    """Three networks (two float64, one float32: the dtype must follow the inputs), with
    N, K and N·K distinct and ≠ 2 so that every wrong scale has one name."""
    cases = []
    for dtype in ("float64", "float64", "float32"):
        N, K = integer(generator, 5, 9), integer(generator, 3, 4)
        while N == K:
            N = integer(generator, 5, 9)
        shape = (N, integer(generator, 2, 6), integer(generator, 3, 8), K, dtype)
        cases.append((shape, case_seed(generator)))
    return cases


def _two_loss_shapes(generator):
    return [((integer(generator, 3, 9), integer(generator, 2, 6), integer(generator, 3, 8),
              integer(generator, 1, 4)), case_seed(generator)) for _ in range(2)]


def _penalty_shapes(generator):
    return [((integer(generator, 3, 9), integer(generator, 2, 6), integer(generator, 3, 8)),
             case_seed(generator)) for _ in range(2)]


def _expected_penalty(model, x):
    penalty = reference.gradient_penalty(model, x)
    gradients = torch.autograd.grad(penalty, list(model.parameters()), materialize_grads=True)
    return {"valor": penalty.detach(), "gradientes": list(gradients)}


HIDDEN = hidden_table(
    HiddenExercise(MANUAL_BACKWARD, _network_shapes, reference.manual_backward),
    HiddenExercise(TWO_LOSS_GRADS, _two_loss_shapes, reference.two_loss_grads),
    HiddenExercise(GRADIENT_PENALTY, _penalty_shapes, _expected_penalty),
)
check = checker(HIDDEN)  # what the graded cells of the instructor notebook call
