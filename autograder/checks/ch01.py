"""Chapter 1 hidden tests: fresh random shapes and values per student, vs the reference."""

import torch

from autograder.checks.runner import HiddenExercise, entero, run_hidden, semilla
from autograder.reference import ch01 as reference
from autograder.student.ch01 import GRADIENT_PENALTY, MANUAL_BACKWARD, TWO_LOSSES


def _formas_red(generador):
    """Three networks (two float64, one float32: the dtype must follow the inputs), with
    N, K and N·K distinct and ≠ 2 so that every wrong scale has one name."""
    casos = []
    for dtype in ("float64", "float64", "float32"):
        N, K = entero(generador, 5, 9), entero(generador, 3, 4)
        while N == K:
            N = entero(generador, 5, 9)
        forma = (N, entero(generador, 2, 6), entero(generador, 3, 8), K, dtype)
        casos.append((forma, semilla(generador)))
    return casos


def _formas_dos_perdidas(generador):
    return [((entero(generador, 3, 9), entero(generador, 2, 6), entero(generador, 3, 8),
              entero(generador, 1, 4)), semilla(generador)) for _ in range(2)]


def _formas_penalizacion(generador):
    return [((entero(generador, 3, 9), entero(generador, 2, 6), entero(generador, 3, 8)),
             semilla(generador)) for _ in range(2)]


def _penalizacion_esperada(model, x):
    penalizacion = reference.gradient_penalty(model, x)
    gradientes = torch.autograd.grad(penalizacion, list(model.parameters()),
                                     materialize_grads=True)
    return {"valor": penalizacion.detach(), "gradientes": list(gradientes)}


HIDDEN = {
    "ch01_manual_backward": HiddenExercise(MANUAL_BACKWARD, _formas_red, reference.manual_backward),
    "ch01_two_losses": HiddenExercise(TWO_LOSSES, _formas_dos_perdidas, reference.two_loss_grads),
    "ch01_gradient_penalty": HiddenExercise(GRADIENT_PENALTY, _formas_penalizacion,
                                            _penalizacion_esperada),
}


def check_manual_backward(manual_backward):
    return run_hidden("ch01_manual_backward", HIDDEN, manual_backward)


def check_two_loss_grads(two_loss_grads):
    return run_hidden("ch01_two_losses", HIDDEN, two_loss_grads)


def check_gradient_penalty(gradient_penalty):
    return run_hidden("ch01_gradient_penalty", HIDDEN, gradient_penalty)
