"""Chapter 5 hidden tests: fresh random shapes, modes and layouts per student, vs the reference."""

import torch

from autograder.chapters.ch05.student import (
    CAMBIAN,
    EVALUATE,
    MC_DROPOUT,
    MODULES_THAT_CHANGE,
    SEMILLA_MC,
    estado_esperado,
    tipos_de,
)
from autograder.hidden.reference import load_reference
from autograder.hidden.runner import HiddenExercise, checker, entero, hidden_table, semilla

reference = load_reference("ch05")  # the solution cells of solutions/05_*.py


def _p(generador):
    return round(0.2 + 0.4 * torch.rand(1, generator=generador).item(), 3)


def _formas_evaluacion(generador):
    """One case per starting mode; eval first, then the frozen-BatchNorm mix, then train:
    the first case that fails names the mistake (forced train, root flag only, left in eval)."""
    return [((entero(generador, 4, 9), entero(generador, 2, 6), entero(generador, 3, 8),
              entero(generador, 2, 5), _p(generador), modo), semilla(generador))
            for modo in ("eval", "mixto", "train")]


def _disposicion(generador):
    """The middle block: every trap (S, Z, G) plus B and D, shuffled, with an extra layer."""
    codigos = list("BDGSZ") + [("R", "T", "I")[entero(generador, 0, 2)]]
    orden = torch.randperm(len(codigos), generator=generador).tolist()
    return "".join(codigos[i] for i in orden)


def _cambian(disposicion):
    return {i for i, codigo in enumerate(disposicion) if codigo in CAMBIAN}


# Every exercise starts once from mixed modes (train with a frozen BatchNorm): restoring
# only the root's flag (`model.train(was)`) passes when all modules share one mode.
MODOS_MODULOS = ("eval", "mixto", "train")
MODOS_MC = ("train", "mixto", "eval")


def _formas_modulos(generador):
    casos = []
    while len(casos) < len(MODOS_MODULOS):
        disposicion = _disposicion(generador)
        if any(_cambian(forma[4]) == _cambian(disposicion) for forma, _ in casos):
            continue  # two layouts with the same answer would not expose a fixed one
        forma = (entero(generador, 4, 9), entero(generador, 2, 6), entero(generador, 3, 8),
                 entero(generador, 2, 5), disposicion, MODOS_MODULOS[len(casos)])
        casos.append((forma, semilla(generador)))
    return casos


def _formas_mc(generador):
    return [((entero(generador, 3, 8), entero(generador, 2, 6), entero(generador, 3, 8),
              entero(generador, 2, 5), _p(generador), entero(generador, 5, 12), modo),
             semilla(generador)) for modo in MODOS_MC]


def _evaluacion_esperada(model, x, y):
    estado = estado_esperado(model)
    valor = torch.tensor(reference.evaluate(model, x, y), dtype=torch.float64)
    return {"valor": valor, **estado}


def _modulos_esperados(model, x):
    estado = estado_esperado(model)
    return {"cambian": reference.modules_that_change(model, x), **estado}


def _mc_esperado(model, x, n_samples):
    estado = estado_esperado(model)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(SEMILLA_MC)
        media, std = reference.mc_dropout(model, x, n_samples)
    return {"media": media, "std": std, "tipos": tipos_de(model), **estado}


HIDDEN = hidden_table(
    HiddenExercise(EVALUATE, _formas_evaluacion, _evaluacion_esperada),
    HiddenExercise(MODULES_THAT_CHANGE, _formas_modulos,
                                               _modulos_esperados),
    HiddenExercise(MC_DROPOUT, _formas_mc, _mc_esperado),
)
check = checker(HIDDEN)  # what the graded cells of the instructor notebook call
