"""Chapter 7 hidden tests: fresh random shapes and values per student, vs the reference."""

import torch

from autograder.chapters.ch07.student import LINEAR_TANH, QUANTIZE_STE, STABLE_SOFTPLUS
from autograder.hidden.reference import load_reference
from autograder.hidden.runner import HiddenExercise, checker, entero, hidden_table, semilla

reference = load_reference("ch07")  # the solution cells of solutions/07_*.py


def _gradientes(funcion, entradas, grad_output, *otros):
    """The output of ``funcion(*entradas, *otros)`` and the gradients of every input."""
    with torch.enable_grad():
        hojas = [t.detach().clone().requires_grad_(True) for t in entradas]
        salida = funcion(*hojas, *otros)
        grads = torch.autograd.grad(salida, hojas, grad_output)
    return salida.detach(), list(grads)


# ---------------------------------------------------------------- stable_softplus
def _formas_softplus(generador):
    """Two float64 cases and one float32; beta ≠ 1 so that ignoring it shows."""
    casos = []
    for dtype in ("float64", "float64", "float32"):
        decimas = 10
        while decimas == 10:
            decimas = entero(generador, 4, 30)
        casos.append(((entero(generador, 5, 12), decimas, dtype), semilla(generador)))
    return casos


def _softplus_esperado(x, beta, grad_output):
    salida, (grad,) = _gradientes(reference.stable_softplus, [x], grad_output, beta)
    _, (derivada,) = _gradientes(reference.stable_softplus, [x], torch.ones_like(x), beta)
    return {"salida": salida, "grads": [grad], "derivada": derivada}


# ---------------------------------------------------------------- linear_tanh
def _formas_lineal(generador):
    """N, D, H all different (a transposed gradient cannot have the right shape)."""
    casos = []
    for dtype in ("float64", "float32"):
        N, D, H = 0, 0, 0
        while len({N, D, H}) < 3:
            N, D, H = (entero(generador, 3, 9), entero(generador, 3, 7),
                       entero(generador, 3, 7))
        casos.append(((N, D, H, dtype), semilla(generador)))
    return casos


def _lineal_esperado(x, weight, bias, grad_output):
    salida, grads = _gradientes(reference.linear_tanh, [x, weight, bias], grad_output)
    return {"salida": salida, "grads": grads}


# ---------------------------------------------------------------- quantize_ste
def _formas_cuantizador(generador):
    """step = 2^-k with k in 2..4 (so 1/step is 4, 8 or 16), levels in 3..8."""
    return [((entero(generador, 10, 24), entero(generador, 2, 4), entero(generador, 3, 8),
              dtype), semilla(generador)) for dtype in ("float64", "float32")]


def _cuantizador_esperado(x, step, levels, grad_output):
    salida, grads = _gradientes(reference.quantize_ste, [x], grad_output, step, levels)
    return {"salida": salida, "grads": grads, "arriba": grad_output,
            "sin_recorte": torch.round(x.detach() / step) * step}


HIDDEN = hidden_table(
    HiddenExercise(STABLE_SOFTPLUS, _formas_softplus,
                                           _softplus_esperado),
    HiddenExercise(LINEAR_TANH, _formas_lineal, _lineal_esperado),
    HiddenExercise(QUANTIZE_STE, _formas_cuantizador,
                                        _cuantizador_esperado),
)
check = checker(HIDDEN)  # what the graded cells of the instructor notebook call
