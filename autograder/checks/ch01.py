"""Chapter 1 hidden tests: fresh random shapes and values per student, vs the reference."""

import torch

from autograder.checks.runner import HiddenExercise, run_hidden
from autograder.reference import ch01 as reference
from autograder.student.ch01 import (
    PARTES_DOS_PERDIDAS,
    PARTES_MANUAL_BACKWARD,
    PARTES_PENALIZACION,
    caso_dos_perdidas,
    caso_penalizacion,
    caso_red,
)


def _entero(generador, bajo, alto):
    return int(torch.randint(bajo, alto + 1, (1,), generator=generador).item())


def _forma_red(generador):
    """(N, D, H, K) with N, K and N·K distinct and ≠ 2, so every wrong scale has one name."""
    while True:
        N, K = _entero(generador, 5, 9), _entero(generador, 3, 4)
        if N != K:
            return N, _entero(generador, 2, 6), _entero(generador, 3, 8), K


def _casos_red(manual_backward, generador):
    # Two float64 networks and one float32: the dtype must follow the inputs.
    return [caso_red(manual_backward, generador, _forma_red(generador), reference.manual_backward,
                     dtype) for dtype in (torch.float64, torch.float64, torch.float32)]


def _casos_dos_perdidas(two_loss_grads, generador):
    return [caso_dos_perdidas(two_loss_grads, generador,
                              (_entero(generador, 3, 9), _entero(generador, 2, 6),
                               _entero(generador, 3, 8), _entero(generador, 1, 4)),
                              reference.two_loss_grads) for _ in range(2)]


def _gradientes_de_la_penalizacion(modelo, x):
    penalizacion = reference.gradient_penalty(modelo, x)
    return list(torch.autograd.grad(penalizacion, list(modelo.parameters()),
                                    materialize_grads=True))


def _casos_penalizacion(gradient_penalty, generador):
    return [caso_penalizacion(gradient_penalty, generador,
                              (_entero(generador, 3, 9), _entero(generador, 2, 6),
                               _entero(generador, 3, 8)),
                              lambda m, x: reference.gradient_penalty(m, x).detach(),
                              _gradientes_de_la_penalizacion) for _ in range(2)]


HIDDEN = {
    "ch01_manual_backward": HiddenExercise(PARTES_MANUAL_BACKWARD, _casos_red),
    "ch01_two_losses": HiddenExercise(PARTES_DOS_PERDIDAS, _casos_dos_perdidas),
    "ch01_gradient_penalty": HiddenExercise(PARTES_PENALIZACION, _casos_penalizacion),
}


def check_manual_backward(manual_backward):
    return run_hidden("ch01_manual_backward", HIDDEN, manual_backward)


def check_two_loss_grads(two_loss_grads):
    return run_hidden("ch01_two_losses", HIDDEN, two_loss_grads)


def check_gradient_penalty(gradient_penalty):
    return run_hidden("ch01_gradient_penalty", HIDDEN, gradient_penalty)
