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
from autograder.hidden.runner import HiddenExercise, case_seed, checker, hidden_table, integer

reference = load_reference("ch03")  # the solution cells of solutions/03_*.py


def _choose(generator, options):
    return options[integer(generator, 0, len(options) - 1)]


def _layers(generator):
    """(D, H, K) of a small network."""
    return integer(generator, 2, 5), integer(generator, 3, 6), integer(generator, 2, 4)


# ---------------------------------------------------------------- accumulate_gradients
def _accumulation_shapes(generator):
    """Three batches, regression and classification; accum ≥ 3 so that forgetting to divide
    (× accum) is never mistaken for a factor 2."""
    cases = []
    for loss in ("mse", "ce", _choose(generator, ("mse", "ce"))):
        shape = (loss, integer(generator, 2, 4), integer(generator, 3, 5), *_layers(generator))
        cases.append((shape, case_seed(generator)))
    return cases


def _expected_accumulation(model, loss_fn, x, y, accum):
    parameters = list(model.parameters())
    before = [p.grad.detach().clone() for p in parameters]
    m = x.shape[0] // accum
    last = torch.autograd.grad(loss_fn(model(x[-m:]), y[-m:]) / accum, parameters)
    loss = reference.accumulate_gradients(model, loss_fn, x, y, accum)
    return {"gradientes": [p.grad.detach().clone() for p in parameters],
            "perdida": torch.tensor(loss, dtype=torch.float64), "previos": before,
            "ultimo": list(last)}


# ---------------------------------------------------------------- train_with_accumulation
def _cycle_shapes(generator):
    """Two runs, each with ≥ 2 full cycles and a final partial one whose size r makes
    r/accum neither ½ nor 2 (a factor 2 has its own diagnosis); then one whose micro-batches
    are a multiple of accum (no partial cycle: no extra step, nothing divided by zero)."""
    cases = []
    for loss in ("mse", "ce"):
        accum = integer(generator, 3, 5)
        remainder = _choose(generator, [r for r in range(1, accum) if 2 * r != accum])
        batches = accum * integer(generator, 2, 3) + remainder
        shape = (loss, batches, integer(generator, 2, 4), accum, *_layers(generator))
        cases.append((shape, case_seed(generator)))
    accum = integer(generator, 3, 5)
    shape = (_choose(generator, ("mse", "ce")), accum * integer(generator, 2, 3),
             integer(generator, 2, 4), accum, *_layers(generator))
    cases.append((shape, case_seed(generator)))
    return cases


def _copy_with_optimizer(model, optimizer):
    copied = copy.deepcopy(model)
    return copied, type(optimizer)(copied.parameters(), **optimizer.defaults)


def _expected_cycles(model, loss_fn, optimizer, batches, accum):
    last = ultimo_micro_lote_del_primer_ciclo(model, loss_fn, batches, accum)
    copied, copied_optimizer = _copy_with_optimizer(model, optimizer)
    steps, hook = espiar_pasos(copied_optimizer, list(copied.parameters()))
    losses = reference.train_with_accumulation(copied, loss_fn, copied_optimizer, batches,
                                               accum)
    hook.remove()
    return {"pasos": steps, "perdidas": torch.tensor(losses, dtype=torch.float64),
            "parametros": [p.detach().clone() for p in copied.parameters()],
            "ultimo_del_ciclo": last}


# ---------------------------------------------------------------- clipped_step
def _clipping_shapes(generator):
    """Two steps that clip (max_norm below the gradient norm) and one that does not."""
    cases = []
    for ratio in (0.3, 3.0, 0.6):
        shape = (_choose(generator, ("mse", "ce")), integer(generator, 4, 9),
                 *_layers(generator), ratio)
        cases.append((shape, case_seed(generator)))
    return cases


def _expected_clipping(model, loss_fn, optimizer, x, y, max_norm):
    before = [p.grad.detach().clone() for p in model.parameters()]  # stale, as built
    copied, copied_optimizer = _copy_with_optimizer(model, optimizer)
    parameters = list(copied.parameters())
    steps, hook = espiar_pasos(copied_optimizer, parameters)
    norm = reference.clipped_step(copied, loss_fn, copied_optimizer, x, y, max_norm)
    hook.remove()
    unclipped = torch.autograd.grad(loss_fn(model(x), y), list(model.parameters()))
    return {"norma": torch.tensor(norm, dtype=torch.float64), "max_norm": max_norm,
            "gradientes": steps[0], "sin_recortar": list(unclipped),
            **recortes_equivocados(unclipped, max_norm, before),
            "parametros": [p.detach().clone() for p in parameters]}


HIDDEN = hidden_table(
    HiddenExercise(ACCUMULATE_GRADIENTS, _accumulation_shapes, _expected_accumulation),
    HiddenExercise(TRAIN_WITH_ACCUMULATION, _cycle_shapes, _expected_cycles),
    HiddenExercise(CLIPPED_STEP, _clipping_shapes, _expected_clipping),
)
check = checker(HIDDEN)  # what the graded cells of the instructor notebook call
