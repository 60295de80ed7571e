"""Chapter 1 hidden tests: fresh random shapes and values per student, vs the reference."""

import torch

from autograder.chapters.ch01.student import GRADIENT_PENALTY, MANUAL_BACKWARD, TWO_LOSS_GRADS
from autograder.hidden.reference import load_reference
from autograder.hidden.runner import HiddenExercise, checker, entero, hidden_table, semilla

reference = load_reference("ch01")  # the solution cells of solutions/01_*.py


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


HIDDEN = hidden_table(
    HiddenExercise(MANUAL_BACKWARD, _formas_red, reference.manual_backward),
    HiddenExercise(TWO_LOSS_GRADS, _formas_dos_perdidas, reference.two_loss_grads),
    HiddenExercise(GRADIENT_PENALTY, _formas_penalizacion,
                                            _penalizacion_esperada),
)
check = checker(HIDDEN)  # what the graded cells of the instructor notebook call
