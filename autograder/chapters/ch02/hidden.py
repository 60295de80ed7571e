"""Chapter 2 hidden tests: fresh random shapes and values per student, vs the reference."""

import copy

import torch
import torch.nn.functional as F

from autograder.chapters.ch02.student import FREEZE_ALL_BUT_HEAD, HIDDEN_GRAD, PREDICT
from autograder.hidden.reference import load_reference
from autograder.hidden.runner import HiddenExercise, case_seed, checker, hidden_table, integer

reference = load_reference("ch02")  # the solution cells of solutions/02_*.py


def _hidden_grad_shapes(generator):
    """N, K, N·K distinct and ≠ 2 (each wrong mean has one name); D < H so that dL/dx
    and dL/dh never share a shape."""
    cases = []
    for _ in range(2):
        N, K = integer(generator, 5, 9), integer(generator, 3, 4)
        shape = (N, integer(generator, 2, 4), integer(generator, 5, 8), K)
        cases.append((shape, case_seed(generator)))
    return cases


def _predict_shapes(generator):
    return [((integer(generator, 3, 9), integer(generator, 2, 6), integer(generator, 3, 8),
              integer(generator, 2, 5)), case_seed(generator)) for _ in range(2)]


def _freeze_shapes(generator):
    """Two models whose heads differ in kind and whose encoders differ in depth, so that
    both their trainable and their frozen names differ. The second one sets traps for
    shortcuts (a head that arrives frozen and in eval mode, modules named like it, one
    registered after it); the first, plain, one names the mistakes a plain model shows."""
    heads = ["lineal", "mlp", "norma"]  # the kinds construir_congelar knows
    order = torch.randperm(3, generator=generator).tolist()
    depths = torch.randperm(3, generator=generator).tolist()
    return [((integer(generator, 2, 5), integer(generator, 3, 6), depths[i] + 1,
              integer(generator, 2, 4), heads[order[i]], *extra), case_seed(generator))
            for i, extra in enumerate([(), ("trampas",)])]


def _expected_gradients(model, x, y):
    """dL/dh (the reference) and dL/dz (the usual wrong intermediate), in float64."""
    z = model[0](x)
    (grad_z,) = torch.autograd.grad(F.mse_loss(model[2](model[1](z)), y), z)
    return {"h": reference.hidden_grad(model, x, y), "z": grad_z}


def _expected_prediction(model, x):
    with torch.no_grad():
        logits = model(x)
    return {"probs": reference.predict(model, x).clone(), "dim0": torch.softmax(logits, dim=0),
            "logits": logits}


def _expected_names(model):
    return reference.freeze_all_but_head(copy.deepcopy(model))  # the inputs stay as built


HIDDEN = hidden_table(
    HiddenExercise(HIDDEN_GRAD, _hidden_grad_shapes, _expected_gradients),
    HiddenExercise(PREDICT, _predict_shapes, _expected_prediction),
    HiddenExercise(FREEZE_ALL_BUT_HEAD, _freeze_shapes, _expected_names),
)
check = checker(HIDDEN)  # what the graded cells of the instructor notebook call
