"""Chapter 3 hidden tests: fresh random shapes and values per student, vs the reference.

Each exercise's contract is a ``Space``: every student's cases meet each of its edges
(accum = 1, micro-batches of one row, a float32 model, a nested model, a frozen
parameter, stale gradients or none, an optimizer that already has state, a model in
train, eval or mixed mode, fewer micro-batches than accum) and see every other degree of
freedom vary."""

import copy

import torch

from autograder.chapters.ch03.student import (
    ACCUMULATE_GRADIENTS,
    CLIPPED_STEP,
    TRAIN_WITH_ACCUMULATION,
    _copiar_grads,
    espiar_pasos,
    gradientes_del_lote_completo,
    modo_de,
    oraculo_de_ciclos,
    recorte_a_mano,
)
from autograder.hidden.reference import load_reference
from autograder.hidden.runner import HiddenExercise, case_seed, checker, hidden_table, integer
from autograder.hidden.space import Dimension, Space

reference = load_reference("ch03")  # the solution cells of solutions/03_*.py


def _choose(generator, options):
    return options[integer(generator, 0, len(options) - 1)]


def _spread(generator, values, n):
    """n values, shuffled: ``values`` first (each student meets every one of them), the rest
    drawn from ``values``."""
    drawn = list(values) + [_choose(generator, values) for _ in range(n - len(values))]
    order = torch.randperm(n, generator=generator).tolist()
    return [drawn[i] for i in order]


def _optimizers(generator, n):
    """n (kind, used) pairs, shuffled: plain SGD, SGD with momentum that already took a step
    (it has state), a fresh Adam, and random ones."""
    pairs = [("sgd", _choose(generator, (True, False))), ("momento", True), ("adam", False)]
    pairs += [(_choose(generator, ("sgd", "momento", "adam")), _choose(generator, (True, False)))
              for _ in range(n - 3)]
    order = torch.randperm(n, generator=generator).tolist()
    return [pairs[i] for i in order]


def _layers(generator):
    """(D, H, K) of a small network."""
    return integer(generator, 1, 5), integer(generator, 2, 6), integer(generator, 2, 4)


# ---------------------------------------------------------------- accumulate_gradients
def _accumulation_shapes(generator):
    """Four batches: accum = 1; accum = 2; accum ≥ 3 with micro-batches of m ∉ {1, accum}
    rows, N, D and K all different (strided micro-batches, a division by m and a forgotten
    division all show); micro-batches of one row. Losses, dtypes, nested models, a frozen
    parameter and stale gradients spread over the four."""
    losses = _spread(generator, ("mse", "ce", "huber"), 4)
    dtypes = _spread(generator, ("float64", "float32"), 4)
    nested, frozen, stale = (_spread(generator, (True, False), 4) for _ in range(3))
    both = frozen.index(True)  # a frozen parameter that arrives with a .grad of its own
    stale[both] = True
    if all(stale):
        stale[(both + 1) % 4] = False
    modes = _spread(generator, MODES, 4)
    cases = []
    for i in range(4):
        D, H, K = _layers(generator)
        if i == 0:
            accum, m = 1, integer(generator, 1, 4)
        elif i == 1:
            accum, m = 2, _choose(generator, (1, 3, 4))
        elif i == 2:
            accum = integer(generator, 3, 5)
            m = _choose(generator, [v for v in (2, 3, 4) if v != accum])
            D = _choose(generator, [v for v in (1, 2, 3, 4, 5) if v != m * accum])
            K = _choose(generator, [v for v in (2, 3, 4) if v != D])
        else:
            accum, m = integer(generator, 2, 5), 1
        shape = (losses[i], m, accum, D, H, K, dtypes[i], nested[i], frozen[i], stale[i],
                 modes[i])
        cases.append((shape, case_seed(generator)))
    return cases


def _expected_accumulation(model, loss_fn, x, y, accum):
    expected = gradientes_del_lote_completo(model, loss_fn, x, y, accum)
    copied = copy.deepcopy(model)
    loss = reference.accumulate_gradients(copied, loss_fn, x, y, accum)
    return dict(expected, gradientes=_copiar_grads(list(copied.parameters())),
                perdida=torch.tensor(loss, dtype=torch.float64))


def _nested(model):
    return any(isinstance(m, torch.nn.Sequential) for m in model.children())


def _frozen(model):
    return any(not p.requires_grad for p in model.parameters())


def _stale(model):
    return any(p.grad is not None for p in model.parameters())


def _rows(inputs):
    return inputs["x"].shape[0] // inputs["accum"]


MODES = ("train", "eval", "mixto")

COMMON_FIXED = {
    "modo de autograd": "se llama con autograd activado (un paso de entrenamiento lo necesita); "
                        "se comprueba que la función lo deja así",
}

MODE = Dimension("model.modo", lambda i: modo_de(i["model"]), must_include=MODES)

ACCUMULATION_SPACE = Space(
    dimensions=(
        Dimension("accum", lambda i: i["accum"], must_include=(1, 2)),
        Dimension("x.filas_por_micro_lote", _rows, must_include=(1,)),
        Dimension("x.shape[1]", lambda i: i["x"].shape[1]),
        Dimension("x.dtype", lambda i: str(i["x"].dtype),
                  must_include=("torch.float32", "torch.float64")),
        Dimension("y.dtype", lambda i: str(i["y"].dtype)),
        Dimension("x.N≠D≠K", lambda i: len({i["x"].shape[0], i["x"].shape[1],
                                            i["model"][-1].out_features}) == 3,
                  must_include=(True,), varies=False),
        Dimension("x.salteados_distinguibles", lambda i: i["accum"] > 1 and _rows(i) > 1
                  and _rows(i) != i["accum"], must_include=(True,), varies=False),
        Dimension("loss_fn", lambda i: type(i["loss_fn"]).__name__,
                  must_include=("MSELoss", "CrossEntropyLoss", "HuberLoss")),
        Dimension("model.anidado", lambda i: _nested(i["model"]), must_include=(True, False)),
        Dimension("model.congelado", lambda i: _frozen(i["model"]), must_include=(True, False)),
        Dimension("model.congelado_con_grad", lambda i: any(
            not p.requires_grad and p.grad is not None for p in i["model"].parameters()),
                  must_include=(True, False)),
        Dimension("model.grad_previo", lambda i: _stale(i["model"]),
                  must_include=(True, False)),
        Dimension("model.H", lambda i: i["model"][-1].in_features),
        MODE,
    ),
    fixed=dict(COMMON_FIXED, **{
        "x.requires_grad": "x e y son datos (sin requires_grad); se comprueba que quedan "
                           "intactos, .grad incluido"}))


# ---------------------------------------------------------------- train_with_accumulation
def _cycle_shapes(generator):
    """Four runs: accum = 1; ≥ 2 full cycles and a partial one; an exact multiple of accum
    (no partial cycle: no extra step, nothing divided by zero); fewer micro-batches than
    accum (one partial cycle and nothing else). Optimizers with and without state, stale
    gradients or none, nested models, micro-batches of one row spread over the four."""
    losses = _spread(generator, ("mse", "ce"), 4)
    optimizers, used = zip(*_optimizers(generator, 4))
    stale, nested = (_spread(generator, (True, False), 4) for _ in range(2))
    rows = _spread(generator, (1, 2, 3), 4)
    rates = _spread(generator, (1, 2, 4), 4)
    modes = _spread(generator, MODES, 4)
    cases = []
    for i in range(4):
        if i == 0:
            accum, count = 1, integer(generator, 2, 4)
        elif i == 1:  # accum ≥ 3: stepping at (i - 1) % accum is not stepping at (i + 1)
            accum = integer(generator, 3, 5)
            count = accum * integer(generator, 2, 3) + integer(generator, 1, accum - 1)
        elif i == 2:
            accum = integer(generator, 2, 4)
            count = accum * integer(generator, 2, 3)
        else:
            count = integer(generator, 1, 3)
            accum = count + integer(generator, 1, 2)
        lr = (0.01 if optimizers[i] == "adam" else 0.05) * rates[i]
        shape = (losses[i], count, rows[i], accum, *_layers(generator), optimizers[i], lr,
                 used[i], stale[i], nested[i], modes[i])
        cases.append((shape, case_seed(generator)))
    return cases


def _expected_cycles(model, loss_fn, optimizer, batches, accum):
    expected = oraculo_de_ciclos(model, loss_fn, optimizer, batches, accum)
    copied, copied_optimizer = copy.deepcopy((model, optimizer))
    losses = reference.train_with_accumulation(copied, loss_fn, copied_optimizer,
                                               list(batches), accum)
    return dict(expected, perdidas=torch.tensor(losses, dtype=torch.float64))


def _optimizer_kind(optimizer):
    momentum = optimizer.param_groups[0].get("momentum", 0)
    return type(optimizer).__name__ + ("+momento" if momentum else "")


CYCLES_SPACE = Space(
    dimensions=(
        Dimension("accum", lambda i: i["accum"], must_include=(1,)),
        Dimension("batches.len", lambda i: len(i["batches"])),
        Dimension("batches.resto", lambda i: len(i["batches"]) % i["accum"] == 0,
                  must_include=(True, False)),
        Dimension("batches.accum>len", lambda i: i["accum"] > len(i["batches"]),
                  must_include=(True, False)),
        Dimension("batches.filas", lambda i: i["batches"][0][0].shape[0], must_include=(1,)),
        Dimension("batches.y", lambda i: str(i["batches"][0][1].dtype)),
        Dimension("loss_fn", lambda i: type(i["loss_fn"]).__name__,
                  must_include=("MSELoss", "CrossEntropyLoss")),
        Dimension("optimizer.tipo", lambda i: _optimizer_kind(i["optimizer"]),
                  must_include=("SGD", "SGD+momento", "Adam")),
        Dimension("optimizer.lr", lambda i: i["optimizer"].param_groups[0]["lr"]),
        Dimension("optimizer.con_estado", lambda i: bool(i["optimizer"].state),
                  must_include=(True, False)),
        Dimension("model.grad_previo", lambda i: _stale(i["model"]),
                  must_include=(True, False)),
        Dimension("model.anidado", lambda i: _nested(i["model"]), must_include=(True, False)),
        MODE,
    ),
    fixed=dict(COMMON_FIXED, **{
        "batches.iguales": "micro-lotes del mismo tamaño (lo dice el contrato: la media de un "
                           "ciclo es la media de sus pérdidas)",
        "dtype": "float64: un paso de entrenamiento no depende del dtype (accumulate_gradients "
                 "ya sortea float32); así los pasos se comparan sin holgura de redondeo"}))


# ---------------------------------------------------------------- clipped_step
def _clipping_shapes(generator):
    """Four steps: two that clip (max_norm below the gradient norm) and one that does not,
    plus one more of either; optimizers with and without state, stale gradients or none,
    nested models and a frozen parameter spread over the four; a batch of one row."""
    ratios = [0.3, 3.0, 0.6, _choose(generator, (0.1, 0.45, 1.7))]
    optimizers, used = zip(*_optimizers(generator, 4))
    losses = _spread(generator, ("mse", "ce", "huber"), 4)
    stale, nested, frozen = (_spread(generator, (True, False), 4) for _ in range(3))
    rates = _spread(generator, (1, 2, 4), 4)
    sizes = _spread(generator, (1, integer(generator, 2, 5), integer(generator, 6, 9)), 4)
    modes = _spread(generator, MODES, 4)
    cases = []
    for i in range(4):
        lr = (0.01 if optimizers[i] == "adam" else 0.05) * rates[i]
        shape = (losses[i], sizes[i], *_layers(generator),
                 ratios[i], optimizers[i], lr, used[i], stale[i], nested[i], frozen[i],
                 modes[i])
        cases.append((shape, case_seed(generator)))
    return cases


def _expected_clipping(model, loss_fn, optimizer, x, y, max_norm):
    expected = recorte_a_mano(model, loss_fn, optimizer, x, y, max_norm)
    copied, copied_optimizer = copy.deepcopy((model, optimizer))
    steps, _, hook = espiar_pasos(copied_optimizer, list(copied.parameters()))
    norm = reference.clipped_step(copied, loss_fn, copied_optimizer, x, y, max_norm)
    hook.remove()
    return dict(expected, norma=torch.tensor(float(norm), dtype=torch.float64),
                gradientes=steps[0])


def _clips(inputs):
    return recorte_a_mano(*inputs.values())["norma"].item() > inputs["max_norm"]


CLIPPING_SPACE = Space(
    dimensions=(
        Dimension("max_norm", lambda i: round(i["max_norm"], 9)),
        Dimension("max_norm.recorta", _clips, must_include=(True, False)),
        Dimension("x.filas", lambda i: i["x"].shape[0], must_include=(1,)),
        Dimension("x.shape[1]", lambda i: i["x"].shape[1]),
        Dimension("loss_fn", lambda i: type(i["loss_fn"]).__name__),
        Dimension("y.dtype", lambda i: str(i["y"].dtype)),
        Dimension("optimizer.tipo", lambda i: _optimizer_kind(i["optimizer"]),
                  must_include=("SGD", "SGD+momento", "Adam")),
        Dimension("optimizer.lr", lambda i: i["optimizer"].param_groups[0]["lr"]),
        Dimension("optimizer.con_estado", lambda i: bool(i["optimizer"].state),
                  must_include=(True, False)),
        Dimension("model.grad_previo", lambda i: _stale(i["model"]),
                  must_include=(True, False)),
        Dimension("model.anidado", lambda i: _nested(i["model"]), must_include=(True, False)),
        Dimension("model.congelado", lambda i: _frozen(i["model"]), must_include=(True, False)),
        MODE,
    ),
    fixed=dict(COMMON_FIXED, **{
        "optimizer.parametros": "el optimizador se creó sobre los parámetros entrenables del "
                                "modelo: recortar los del modelo o los del optimizador es lo "
                                "mismo",
        "x.requires_grad": "x e y son datos (sin requires_grad); se comprueba que quedan "
                           "intactos",
        "dtype": "float64: un paso de entrenamiento no depende del dtype (accumulate_gradients "
                 "ya sortea float32); así los pasos se comparan sin holgura de redondeo"}))


HIDDEN = hidden_table(
    HiddenExercise(ACCUMULATE_GRADIENTS, _accumulation_shapes, _expected_accumulation,
                   ACCUMULATION_SPACE, difficulty=2),
    HiddenExercise(TRAIN_WITH_ACCUMULATION, _cycle_shapes, _expected_cycles, CYCLES_SPACE,
                   difficulty=3),
    HiddenExercise(CLIPPED_STEP, _clipping_shapes, _expected_clipping, CLIPPING_SPACE,
                   difficulty=3),
)
check = checker(HIDDEN)  # what the graded cells of the instructor notebook call

# Mutants of the solution cells that compute what the contract asks, by id (see
# autograder/mutation.py), each with the reason.
EQUIVALENT_MUTANTS = {
    "clipped_step": {
        "L29:11 sin .item()": "el contrato admite la norma como float o como tensor de "
                              "dimensión 0 sin grafo (lo que devuelve clip_grad_norm_)",
    },
}
