"""Chapter 2 hidden tests: fresh random shapes and values per student, vs the reference."""

import copy

import torch
import torch.nn.functional as F

from autograder.checks.runner import HiddenExercise, entero, run_hidden, semilla
from autograder.reference import ch02 as reference
from autograder.student.ch02 import FREEZE_HEAD, HIDDEN_GRAD, PREDICT


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


HIDDEN = {
    "ch02_hidden_grad": HiddenExercise(HIDDEN_GRAD, _formas_intermedio, _gradientes_esperados),
    "ch02_predict": HiddenExercise(PREDICT, _formas_prediccion, _prediccion_esperada),
    "ch02_freeze_head": HiddenExercise(FREEZE_HEAD, _formas_congelar, _nombres_esperados),
}


def check_hidden_grad(hidden_grad):
    return run_hidden("ch02_hidden_grad", HIDDEN, hidden_grad)


def check_predict(predict):
    return run_hidden("ch02_predict", HIDDEN, predict)


def check_freeze_all_but_head(freeze_all_but_head):
    return run_hidden("ch02_freeze_head", HIDDEN, freeze_all_but_head)
