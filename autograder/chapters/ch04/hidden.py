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
from autograder.hidden.runner import HiddenExercise, case_seed, checker, hidden_table, integer

reference = load_reference("ch04")  # the solution cells of solutions/04_*.py


def _epoch_shapes(generator):
    """Three epochs: accum=1 with momentum and a cosine schedule; accum=3 with a partial
    last cycle (AdamW, cosine, no clipping: every scale mistake shows); accum=2 with
    clipping tight enough to act and no scheduler (the default arguments)."""
    def network():
        return (integer(generator, 4, 8), integer(generator, 2, 5), integer(generator, 3, 6),
                integer(generator, 2, 4))

    B, D, H, C = network()
    a = ((integer(generator, 3, 5), B, D, H, C, 1, 0, "coseno", "sgd"), case_seed(generator))
    B, D, H, C = network()
    n = 3 * integer(generator, 2, 3) + integer(generator, 1, 2)
    b = ((n, B, D, H, C, 3, 0, "coseno", "adamw"), case_seed(generator))
    B, D, H, C = network()
    c = ((2 * integer(generator, 2, 3), B, D, H, C, 2, 0.3, "ninguno", "sgd"),
         case_seed(generator))
    return [a, b, c]


def _expected_epoch(*inputs):
    observation = ejecutar_instrumentado(reference.train_one_epoch,
                                         dict(zip(NOMBRES_ENTRENAMIENTO, inputs)))
    return {"traza": observation["traza"], "pasos": observation["pasos"],
            "parametros": observation["parametros"], "perdidas": observation["perdidas"],
            "perdida": observation["devuelto"]}


def _evaluation_shapes(generator):
    """Two cases: the model arrives in train mode, then in eval mode (left as it came)."""
    cases = []
    for mode in ("train", "eval"):
        n, B = integer(generator, 2, 4), integer(generator, 5, 8)
        shape = (n, B, integer(generator, 2, B - 2), integer(generator, 2, 5),
                 integer(generator, 3, 6), integer(generator, 2, 4), mode)
        cases.append((shape, case_seed(generator)))
    return cases


def _expected_evaluation(model, loader, loss_fn):
    alternatives = evaluacion_de_golpe(model, loader, loss_fn)
    loss, accuracy = reference.evaluate(model, loader, loss_fn)
    return dict(alternatives, perdida=loss, exactitud=accuracy)


def _scheduler_shapes(generator):
    """Same total_steps and lr (a hard-coded sequence would repeat), W and min_lr vary."""
    first = integer(generator, 3, 9)
    second = first + integer(generator, 2, 4)
    return [((W, 30, 0.1, round(0.001 * integer(generator, 1, 20), 6)), case_seed(generator))
            for W in (first, second)]


def _expected_lrs(optimizer, warmup_steps, total_steps, min_lr):
    expected = lrs_esperadas(optimizer, warmup_steps, total_steps, min_lr)
    scheduler = reference.warmup_cosine(optimizer, warmup_steps, total_steps, min_lr)
    lrs = [optimizer.param_groups[0]["lr"]]
    for _ in range(total_steps):
        optimizer.step()
        scheduler.step()
        lrs.append(optimizer.param_groups[0]["lr"])
    expected["correcta"] = torch.tensor(lrs, dtype=torch.float64)
    return expected


HIDDEN = hidden_table(
    HiddenExercise(TRAIN_ONE_EPOCH, _epoch_shapes, _expected_epoch),
    HiddenExercise(EVALUATE, _evaluation_shapes, _expected_evaluation),
    HiddenExercise(WARMUP_COSINE, _scheduler_shapes, _expected_lrs),
)
check = checker(HIDDEN)  # what the graded cells of the instructor notebook call
