"""Chapter 1 hidden tests: fresh random shapes and values per student, float64, vs the reference."""

import torch

from autograder.checks.runner import run_hidden
from autograder.reference import ch01 as reference
from autograder.student.ch01 import (
    datos_red,
    factores_red,
    red_pequena,
    verificar_dos_perdidas,
    verificar_gradientes_manuales,
    verificar_penalizacion,
)


def _entero(generador, bajo, alto):
    return int(torch.randint(bajo, alto + 1, (1,), generator=generador).item())


def _forma_red(generador):
    """N, D, H, K with N, K and N·K distinct and ≠ 2, so every wrong scale has one name."""
    while True:
        N, K = _entero(generador, 5, 9), _entero(generador, 3, 4)
        if N != K:
            return N, _entero(generador, 2, 6), _entero(generador, 3, 8), K


def _paso_red(dtype):
    def paso(manual_backward, generador):
        N, D, H, K = _forma_red(generador)
        entradas = datos_red(generador, N, D, H, K, dtype=dtype)
        esperados = reference.manual_backward(*entradas)
        verificar_gradientes_manuales(manual_backward, entradas, esperados, factores_red(N, K))
    return paso


def _paso_dos_perdidas(two_loss_grads, generador):
    D, H, K, N = (_entero(generador, 2, 6), _entero(generador, 3, 8), _entero(generador, 1, 4),
                  _entero(generador, 3, 9))
    modelo = red_pequena(generador, D, H, K)
    x = torch.randn(N, D, generator=generador, dtype=torch.float64)
    y = torch.randn(N, K, generator=generador, dtype=torch.float64)
    esperados_a, esperados_b = reference.two_loss_grads(modelo, x, y)
    verificar_dos_perdidas(two_loss_grads, modelo, x, y, esperados_a, esperados_b)


def _paso_penalizacion(gradient_penalty, generador):
    D, H, N = _entero(generador, 2, 6), _entero(generador, 3, 8), _entero(generador, 3, 9)
    modelo = red_pequena(generador, D, H, 1)
    x = torch.randn(N, D, generator=generador, dtype=torch.float64)
    esperado = reference.gradient_penalty(modelo, x)
    grads = torch.autograd.grad(esperado, list(modelo.parameters()), materialize_grads=True)
    verificar_penalizacion(gradient_penalty, modelo, x, esperado.detach(), grads)


HIDDEN_STEPS = {
    "ch01_manual_backward": [_paso_red(torch.float64), _paso_red(torch.float64),
                             _paso_red(torch.float32)],
    "ch01_two_losses": [_paso_dos_perdidas, _paso_dos_perdidas],
    "ch01_gradient_penalty": [_paso_penalizacion, _paso_penalizacion],
}


def check_manual_backward(manual_backward):
    run_hidden("ch01_manual_backward", HIDDEN_STEPS, manual_backward)


def check_two_loss_grads(two_loss_grads):
    run_hidden("ch01_two_losses", HIDDEN_STEPS, two_loss_grads)


def check_gradient_penalty(gradient_penalty):
    run_hidden("ch01_gradient_penalty", HIDDEN_STEPS, gradient_penalty)
