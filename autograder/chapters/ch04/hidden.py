"""Chapter 4 hidden tests: fresh shapes, seeds and settings per student, vs the reference."""

import torch

from autograder.chapters.ch04.student import (
    EVALUATE,
    NOMBRES_ENTRENAMIENTO,
    TRAIN_ONE_EPOCH,
    WARMUP_COSINE,
    ejecutar_instrumentado,
    evaluacion_de_golpe,
    lrs_esperadas,
)
from autograder.hidden.reference import load_reference
from autograder.hidden.runner import HiddenExercise, checker, entero, hidden_table, semilla

reference = load_reference("ch04")  # the solution cells of solutions/04_*.py


def _formas_entrenamiento(generador):
    """Three epochs: accum=1 with momentum and a cosine schedule; accum=3 with a partial
    last cycle (AdamW, cosine, no clipping: every scale mistake shows); accum=2 with
    clipping tight enough to act and no scheduler (the default arguments)."""
    def red():
        return (entero(generador, 4, 8), entero(generador, 2, 5), entero(generador, 3, 6),
                entero(generador, 2, 4))

    B, D, H, C = red()
    a = ((entero(generador, 3, 5), B, D, H, C, 1, 0, "coseno", "sgd"), semilla(generador))
    B, D, H, C = red()
    n = 3 * entero(generador, 2, 3) + entero(generador, 1, 2)
    b = ((n, B, D, H, C, 3, 0, "coseno", "adamw"), semilla(generador))
    B, D, H, C = red()
    c = ((2 * entero(generador, 2, 3), B, D, H, C, 2, 0.3, "ninguno", "sgd"),
         semilla(generador))
    return [a, b, c]


def _entrenamiento_esperado(*entradas):
    observacion = ejecutar_instrumentado(reference.train_one_epoch,
                                         dict(zip(NOMBRES_ENTRENAMIENTO, entradas)))
    return {"traza": observacion["traza"], "pasos": observacion["pasos"],
            "parametros": observacion["parametros"], "perdidas": observacion["perdidas"],
            "perdida": observacion["devuelto"]}


def _formas_evaluacion(generador):
    """Two cases: the model arrives in train mode, then in eval mode (left as it came)."""
    casos = []
    for modo in ("train", "eval"):
        n, B = entero(generador, 2, 4), entero(generador, 5, 8)
        forma = (n, B, entero(generador, 2, B - 2), entero(generador, 2, 5),
                 entero(generador, 3, 6), entero(generador, 2, 4), modo)
        casos.append((forma, semilla(generador)))
    return casos


def _evaluacion_esperada(model, loader, loss_fn):
    alternativas = evaluacion_de_golpe(model, loader, loss_fn)
    perdida, exactitud = reference.evaluate(model, loader, loss_fn)
    return dict(alternativas, perdida=perdida, exactitud=exactitud)


def _formas_planificador(generador):
    """Same total_steps and lr (a hard-coded sequence would repeat), W and min_lr vary."""
    primero = entero(generador, 3, 9)
    segundo = primero + entero(generador, 2, 4)
    return [((W, 30, 0.1, round(0.001 * entero(generador, 1, 20), 6)), semilla(generador))
            for W in (primero, segundo)]


def _lrs_esperadas(optimizer, warmup_steps, total_steps, min_lr):
    esperadas = lrs_esperadas(optimizer, warmup_steps, total_steps, min_lr)
    planificador = reference.warmup_cosine(optimizer, warmup_steps, total_steps, min_lr)
    lrs = [optimizer.param_groups[0]["lr"]]
    for _ in range(total_steps):
        optimizer.step()
        planificador.step()
        lrs.append(optimizer.param_groups[0]["lr"])
    esperadas["correcta"] = torch.tensor(lrs, dtype=torch.float64)
    return esperadas


HIDDEN = hidden_table(
    HiddenExercise(TRAIN_ONE_EPOCH, _formas_entrenamiento,
                                           _entrenamiento_esperado),
    HiddenExercise(EVALUATE, _formas_evaluacion, _evaluacion_esperada),
    HiddenExercise(WARMUP_COSINE, _formas_planificador, _lrs_esperadas),
)
check = checker(HIDDEN)  # what the graded cells of the instructor notebook call
