"""Chapter 2 hidden tests: fresh random shapes and values per student, vs the reference."""

import copy

import torch
import torch.nn.functional as F

from autograder.chapters.ch02.student import FREEZE_ALL_BUT_HEAD, HIDDEN_GRAD, PREDICT
from autograder.hidden.reference import load_reference
from autograder.hidden.runner import HiddenExercise, checker, entero, hidden_table, semilla

reference = load_reference("ch02")  # the solution cells of solutions/02_*.py


def _formas_intermedio(generador):
    """N, K, N·K distinct and ≠ 2 (each wrong mean has one name); D < H so that dL/dx
    and dL/dh never share a shape."""
    casos = []
    for _ in range(2):
        N, K = entero(generador, 5, 9), entero(generador, 3, 4)
        forma = (N, entero(generador, 2, 4), entero(generador, 5, 8), K)
        casos.append((forma, semilla(generador)))
    return casos


def _formas_prediccion(generador):
    return [((entero(generador, 3, 9), entero(generador, 2, 6), entero(generador, 3, 8),
              entero(generador, 2, 5)), semilla(generador)) for _ in range(2)]


def _formas_congelar(generador):
    """Two models whose heads differ in kind and whose encoders differ in depth, so that
    both their trainable and their frozen names differ. The second one sets traps for
    shortcuts (a head that arrives frozen and in eval mode, modules named like it, one
    registered after it); the first, plain, one names the mistakes a plain model shows."""
    tipos = ["lineal", "mlp", "norma"]
    orden = torch.randperm(3, generator=generador).tolist()
    capas = torch.randperm(3, generator=generador).tolist()
    return [((entero(generador, 2, 5), entero(generador, 3, 6), capas[i] + 1,
              entero(generador, 2, 4), tipos[orden[i]], *extra), semilla(generador))
            for i, extra in enumerate([(), ("trampas",)])]


def _gradientes_esperados(model, x, y):
    """dL/dh (the reference) and dL/dz (the usual wrong intermediate), in float64."""
    z = model[0](x)
    (grad_z,) = torch.autograd.grad(F.mse_loss(model[2](model[1](z)), y), z)
    return {"h": reference.hidden_grad(model, x, y), "z": grad_z}


def _prediccion_esperada(model, x):
    with torch.no_grad():
        logits = model(x)
    return {"probs": reference.predict(model, x).clone(), "dim0": torch.softmax(logits, dim=0),
            "logits": logits}


def _nombres_esperados(model):
    return reference.freeze_all_but_head(copy.deepcopy(model))  # the inputs stay as built


HIDDEN = hidden_table(
    HiddenExercise(HIDDEN_GRAD, _formas_intermedio, _gradientes_esperados),
    HiddenExercise(PREDICT, _formas_prediccion, _prediccion_esperada),
    HiddenExercise(FREEZE_ALL_BUT_HEAD, _formas_congelar, _nombres_esperados),
)
check = checker(HIDDEN)  # what the graded cells of the instructor notebook call
