"""Chapter 3 hidden tests: fresh random shapes and values per student, vs the reference."""

import copy

import torch

from autograder.chapters.ch03.student import (
    ACCUMULATE_GRADIENTS,
    CLIPPED_STEP,
    TRAIN_WITH_ACCUMULATION,
    espiar_pasos,
    recortes_equivocados,
    ultimo_micro_lote_del_primer_ciclo,
)
from autograder.hidden.reference import load_reference
from autograder.hidden.runner import HiddenExercise, checker, entero, hidden_table, semilla

reference = load_reference("ch03")  # the solution cells of solutions/03_*.py


def _elegir(generador, opciones):
    return opciones[entero(generador, 0, len(opciones) - 1)]


def _capas(generador):
    """(D, H, K) of a small network."""
    return entero(generador, 2, 5), entero(generador, 3, 6), entero(generador, 2, 4)


# ---------------------------------------------------------------- accumulate_gradients
def _formas_acumulacion(generador):
    """Three batches, regression and classification; accum ≥ 3 so that forgetting to divide
    (× accum) is never mistaken for a factor 2."""
    casos = []
    for tipo in ("mse", "ce", _elegir(generador, ("mse", "ce"))):
        forma = (tipo, entero(generador, 2, 4), entero(generador, 3, 5), *_capas(generador))
        casos.append((forma, semilla(generador)))
    return casos


def _acumulacion_esperada(model, loss_fn, x, y, accum):
    parametros = list(model.parameters())
    previos = [p.grad.detach().clone() for p in parametros]
    m = x.shape[0] // accum
    ultimo = torch.autograd.grad(loss_fn(model(x[-m:]), y[-m:]) / accum, parametros)
    perdida = reference.accumulate_gradients(model, loss_fn, x, y, accum)
    return {"gradientes": [p.grad.detach().clone() for p in parametros],
            "perdida": torch.tensor(perdida, dtype=torch.float64), "previos": previos,
            "ultimo": list(ultimo)}


# ---------------------------------------------------------------- train_with_accumulation
def _formas_ciclos(generador):
    """Two runs, each with ≥ 2 full cycles and a final partial one whose size r makes
    r/accum neither ½ nor 2 (a factor 2 has its own diagnosis); then one whose micro-batches
    are a multiple of accum (no partial cycle: no extra step, nothing divided by zero)."""
    casos = []
    for tipo in ("mse", "ce"):
        accum = entero(generador, 3, 5)
        resto = _elegir(generador, [r for r in range(1, accum) if 2 * r != accum])
        lotes = accum * entero(generador, 2, 3) + resto
        forma = (tipo, lotes, entero(generador, 2, 4), accum, *_capas(generador))
        casos.append((forma, semilla(generador)))
    accum = entero(generador, 3, 5)
    forma = (_elegir(generador, ("mse", "ce")), accum * entero(generador, 2, 3),
             entero(generador, 2, 4), accum, *_capas(generador))
    casos.append((forma, semilla(generador)))
    return casos


def _copia_con_optimizador(model, optimizer):
    modelo = copy.deepcopy(model)
    return modelo, type(optimizer)(modelo.parameters(), **optimizer.defaults)


def _ciclos_esperados(model, loss_fn, optimizer, batches, accum):
    ultimo = ultimo_micro_lote_del_primer_ciclo(model, loss_fn, batches, accum)
    modelo, optimizador = _copia_con_optimizador(model, optimizer)
    pasos, gancho = espiar_pasos(optimizador, list(modelo.parameters()))
    perdidas = reference.train_with_accumulation(modelo, loss_fn, optimizador, batches, accum)
    gancho.remove()
    return {"pasos": pasos, "perdidas": torch.tensor(perdidas, dtype=torch.float64),
            "parametros": [p.detach().clone() for p in modelo.parameters()],
            "ultimo_del_ciclo": ultimo}


# ---------------------------------------------------------------- clipped_step
def _formas_recorte(generador):
    """Two steps that clip (max_norm below the gradient norm) and one that does not."""
    casos = []
    for razon in (0.3, 3.0, 0.6):
        forma = (_elegir(generador, ("mse", "ce")), entero(generador, 4, 9), *_capas(generador),
                 razon)
        casos.append((forma, semilla(generador)))
    return casos


def _recorte_esperado(model, loss_fn, optimizer, x, y, max_norm):
    previos = [p.grad.detach().clone() for p in model.parameters()]  # stale, as built
    modelo, optimizador = _copia_con_optimizador(model, optimizer)
    parametros = list(modelo.parameters())
    pasos, gancho = espiar_pasos(optimizador, parametros)
    norma = reference.clipped_step(modelo, loss_fn, optimizador, x, y, max_norm)
    gancho.remove()
    sin_recortar = torch.autograd.grad(loss_fn(model(x), y), list(model.parameters()))
    return {"norma": torch.tensor(norma, dtype=torch.float64), "max_norm": max_norm,
            "gradientes": pasos[0], "sin_recortar": list(sin_recortar),
            **recortes_equivocados(sin_recortar, max_norm, previos),
            "parametros": [p.detach().clone() for p in parametros]}


HIDDEN = hidden_table(
    HiddenExercise(ACCUMULATE_GRADIENTS, _formas_acumulacion, _acumulacion_esperada),
    HiddenExercise(TRAIN_WITH_ACCUMULATION, _formas_ciclos, _ciclos_esperados),
    HiddenExercise(CLIPPED_STEP, _formas_recorte, _recorte_esperado),
)
check = checker(HIDDEN)  # what the graded cells of the instructor notebook call
