"""Chapter 3 hidden tests: fresh random shapes and values per student, vs the reference.

Each exercise's contract is a ``Space``: every student's cases meet each of its edges
(micro-batches of unequal and of equal sizes, a single one, a sample of its own; accum = 1,
fewer micro-batches than accum, stale gradients or none, an optimizer that already has
state, a model in train, eval or mixed mode; gradients in a list, a tuple or a generator,
None among them or nothing but None, a 0-dim tensor, a norm below max_norm, an infinite
max_norm, a tiny norm) and see every other degree of freedom vary."""

import copy
import math

import torch

from autograder.chapters.ch03.student import (
    CLIP_BY_GLOBAL_NORM,
    MICRO_BATCH_WEIGHTS,
    TRAIN_WITH_ACCUMULATION,
    gradientes_por_micro_lote,
    modo_batchnorm,
    modo_de,
    oraculo_de_ciclos,
    oraculo_de_recorte,
    recortes_equivocados,
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


# ---------------------------------------------------------------- micro_batch_weights
def _weight_shapes(generator):
    """Four calls, two per reduction: for each, micro-batches of unequal sizes (one of them
    of a single sample, so that sizes 1 and > 1 meet), then one more that is either equal
    sizes (where 1/k is right for "mean") or a single micro-batch. The unequal ones come
    first (they name a mistake best) and no two calls have as many micro-batches (a
    result that only depends on how many is not taken for a constant one). The second call and
    one of the last two pass ``sizes`` as a tuple, the others as a list."""
    counts = torch.randperm(5, generator=generator)[:3].add(2).tolist()  # distinct, 2..6
    lone = _spread(generator, ("equal", "single"), 2)
    unequal, other = [], []
    for reduction, kind, k in zip(("mean", "sum"), lone, counts):
        sizes = [integer(generator, 1, 9) for _ in range(k)]
        sizes[integer(generator, 0, k - 1)] = 1
        while len(set(sizes)) < 2:
            sizes[integer(generator, 0, k - 1)] = integer(generator, 2, 9)
        unequal.append(((reduction, tuple(sizes)), case_seed(generator)))
        if kind == "equal":
            sizes = [integer(generator, 2, 8)] * counts[2]
        else:
            sizes = [integer(generator, 1, 12)]
        other.append(((reduction, tuple(sizes)), case_seed(generator)))
    if integer(generator, 0, 1):
        unequal.reverse()
    cases = unequal + other
    tuples = {1, integer(generator, 2, 3)}  # the first call keeps a list: it names mistakes
    return [((*shape, "tuple" if i in tuples else "list"), seed)
            for i, (shape, seed) in enumerate(cases)]


def _expected_weights(sizes, reduction):
    gradients, full = gradientes_por_micro_lote(sizes, reduction)
    weights = reference.micro_batch_weights(list(sizes), reduction)
    return {"pesos": torch.tensor(weights, dtype=torch.float64), "gradientes": gradients,
            "gradiente": full}


WEIGHTS_SPACE = Space(
    dimensions=(
        Dimension("sizes.len", lambda i: len(i["sizes"]), must_include=(1,)),
        Dimension("sizes.distintos", lambda i: len(set(i["sizes"])) > 1,
                  must_include=(True, False)),
        Dimension("sizes.con_uno", lambda i: 1 in i["sizes"], must_include=(True, False)),
        Dimension("sizes.N", lambda i: sum(i["sizes"])),
        Dimension("reduction", lambda i: i["reduction"], must_include=("mean", "sum")),
        Dimension("sizes.contenedor", lambda i: type(i["sizes"]).__name__,
                  must_include=("list", "tuple")),
    ),
    fixed={})


def _nested(model):
    return any(isinstance(m, torch.nn.Sequential) for m in model.children())


def _stale(model):
    return any(p.grad is not None for p in model.parameters())


MODES = ("train", "eval", "mixto", "mixto_eval")

MODE = Dimension("model.modo", lambda i: modo_de(i["model"]), must_include=MODES)


def _batchnorm_mode(mode, nested):
    """The mode of the BatchNorm after the first layer, for the model's ``mode``: inside
    the first submodule when nested, a child of the root when flat."""
    if mode in ("train", "eval"):
        return mode
    first = "eval" if mode == "mixto" else "train"  # the first submodule's mode
    root = "train" if mode == "mixto" else "eval"
    return first if nested else root


# ---------------------------------------------------------------- train_with_accumulation
def _cycle_shapes(generator):
    """Five runs: accum = 1; ≥ 2 full cycles and a partial one; an exact multiple of accum
    (no partial cycle: no extra step, nothing divided by zero); fewer micro-batches than
    accum (one partial cycle and nothing else); then one drawn. Spread over them: the
    losses (modules and a plain function), optimizers with and without state, in one
    group or two, stale gradients or none, nested and flat models in every combination of
    modes, a frozen parameter or none, a caller inside ``no_grad`` or not, micro-batches
    of one row; a BatchNorm in train mode in one run and in eval mode in another (never
    in train mode on one-row micro-batches: BatchNorm cannot train on them)."""
    n = 5
    losses = _spread(generator, ("mse", "ce", "fn"), n)
    optimizers, used = zip(*_optimizers(generator, n))
    stale, nested, frozen, no_grad = (_spread(generator, (True, False), n) for _ in range(4))
    groups = _spread(generator, (1, 2), n)
    rows = _spread(generator, (1, 2, 3), n)
    rates = _spread(generator, (1, 2, 4), n)
    modes = _spread(generator, MODES, n)
    # a BatchNorm in train mode in run 1 or 2 (cycles of several micro-batches: one pass
    # over the joined cycle is then told apart), one in eval mode in another run: the
    # (mode, nested) pairs are swapped between runs to put them there
    pairs = list(zip(modes, nested))
    trained = _choose(generator, (1, 2))
    j = next(i for i in range(n) if _batchnorm_mode(*pairs[i]) == "train")
    pairs[trained], pairs[j] = pairs[j], pairs[trained]
    modes, nested = (list(v) for v in zip(*pairs))
    evaluated = _choose(generator, [i for i in range(n)
                                    if _batchnorm_mode(*pairs[i]) == "eval"])
    with_bn = (trained, evaluated)
    for i in with_bn:  # BatchNorm cannot train on one row: the one-row runs go elsewhere
        if rows[i] == 1:
            other = next(k for k in range(n) if k not in with_bn and rows[k] > 1)
            rows[i], rows[other] = rows[other], rows[i]
    cases = []
    for i in range(n):
        if i == 0:
            accum, count = 1, integer(generator, 2, 4)
        elif i == 1:  # accum ≥ 3: stepping at (i - 1) % accum is not stepping at (i + 1)
            accum = integer(generator, 3, 5)
            count = accum * integer(generator, 2, 3) + integer(generator, 1, accum - 1)
        elif i == 2:
            accum = integer(generator, 2, 4)
            count = accum * integer(generator, 2, 3)
        elif i == 3:
            count = integer(generator, 1, 3)
            accum = count + integer(generator, 1, 2)
        else:
            accum = integer(generator, 1, 4)
            count = integer(generator, accum + 1, 9)  # the lone partial cycle is run 3's
        lr = (0.01 if optimizers[i] == "adam" else 0.05) * rates[i]
        shape = (losses[i], count, rows[i], accum, *_layers(generator), optimizers[i], lr,
                 used[i], stale[i], nested[i], modes[i], frozen[i], groups[i],
                 i in with_bn, no_grad[i])
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


def _frozen(model):
    return any(not p.requires_grad for p in model.parameters())


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
                  must_include=("MSELoss", "CrossEntropyLoss", "function")),
        Dimension("optimizer.tipo", lambda i: _optimizer_kind(i["optimizer"]),
                  must_include=("SGD", "SGD+momento", "Adam")),
        Dimension("optimizer.lr", lambda i: i["optimizer"].param_groups[0]["lr"]),
        Dimension("optimizer.grupos", lambda i: len(i["optimizer"].param_groups),
                  must_include=(1, 2)),
        Dimension("optimizer.con_estado", lambda i: bool(i["optimizer"].state),
                  must_include=(True, False)),
        Dimension("model.grad_previo", lambda i: _stale(i["model"]),
                  must_include=(True, False)),
        Dimension("model.anidado", lambda i: _nested(i["model"]), must_include=(True, False)),
        MODE,
        Dimension("model.congelado", lambda i: _frozen(i["model"]), must_include=(True, False)),
        Dimension("model.batchnorm", lambda i: modo_batchnorm(i["model"]),
                  must_include=("no", "train", "eval")),
        Dimension("model.llamante_sin_grad", lambda i: i["model"]._llamante_sin_grad,
                  must_include=(True, False)),
    ),
    fixed={
        "batches.iguales": "micro-lotes del mismo tamaño (lo dice el contrato: la media de un "
                           "ciclo es la media de sus pérdidas)",
        "dtype": "float64: el bucle no hace nada que dependa del dtype; así los pasos se "
                 "comparan sin holgura de redondeo"})


# ---------------------------------------------------------------- clip_by_global_norm
def _tensor_shapes(generator):
    """2 to 5 shapes: matrices, vectors, a 0-dim tensor now and then; the first has two
    elements or more (the L1 norm, the sum of the norms and the L2 norm all differ)."""
    options = [(integer(generator, 1, 4), integer(generator, 1, 4)), (integer(generator, 1, 6),),
               (), (integer(generator, 1, 3), integer(generator, 1, 3), 2)]
    first = (integer(generator, 2, 4), integer(generator, 1, 4))
    return (first, *(_choose(generator, options) for _ in range(integer(generator, 1, 4))))


def _global_clip_shapes(generator):
    """Eight calls, the first one clipping hard (to a tenth of the norm or less: some
    tensor's own norm and some element pass max_norm, so that clipping per tensor or by
    value show there, first): then one more that clips, in float32 with a 0-dim tensor
    (where a float64 factor would promote it), one whose norm is below max_norm, one with
    max_norm = inf, one with a tiny norm (where the 1e-6 of the factor shows) that clips,
    one with nothing but None, an empty one, and one at the threshold: max_norm just above
    the norm but below norm + 1e-6 (the factor is below 1: it clips); lists, tuples and
    generators; float32 and float64; a None in the first, none in the second, now and then
    in the others."""
    # "inf" as a string: the shapes travel to the student's kernel as their repr
    ratios = [_choose(generator, (0.05, 0.1)), 0.7, _choose(generator, (1.5, 3.0)), "inf",
              0.5, 2.0, 0.5, 1.05]
    scales = [1.0, _choose(generator, (0.1, 10.0)), 1.0, 1.0, 1e-4, 1.0, 1.0, 1e-7]
    n = len(ratios)
    # every container among the runs that hold tensors (an empty generator read twice,
    # or one of only None, looks like one read once)
    held = _spread(generator, ("list", "tuple", "generador"), n - 2)
    containers = held[:5] + [_choose(generator, ("list", "tuple", "generador"))
                             for _ in range(2)] + held[5:]
    dtypes = _spread(generator, ("float32", "float64"), n)
    dtypes[1], dtypes[4], dtypes[7] = "float32", "float64", "float64"
    cases = []
    for i in range(n):
        shapes = _tensor_shapes(generator)
        if i in (0, 1):
            shapes = (*shapes, ())
        if i == 0:
            nones = (integer(generator, 1, len(shapes) - 1),)  # the first stays a tensor
        elif i in (1, 4, 7):  # the tiny norms keep their first tensor: nothing else tells
            nones = ()        # a factor without the 1e-6 from clipping by value there
        elif i == 5:
            nones = tuple(range(len(shapes)))  # nothing but None: norm 0, nothing to clip
        elif i == 6:
            shapes, nones = (), ()  # nothing at all
        else:
            nones = tuple(j for j in range(len(shapes)) if integer(generator, 0, 3) == 0)
            if len(nones) == len(shapes):
                nones = nones[1:]
        shape = (shapes, nones, dtypes[i], containers[i], ratios[i], scales[i])
        cases.append((shape, case_seed(generator)))
    # the run with nothing but None and the empty one never side by side: a result that
    # drops the None is the same in both, and is not to be taken for a constant one
    order = [i for i in torch.randperm(n - 1, generator=generator).add(1).tolist() if i != 6]
    order = [6] + order if order[-1] == 5 else order + [6]
    # the tiny norm before the threshold: a factor without the 1e-6 shows as such there,
    # while at the threshold it is one more way of not clipping
    tiny, threshold = order.index(4), order.index(7)
    if threshold < tiny:
        order[tiny], order[threshold] = 7, 4
    return [cases[0]] + [cases[i] for i in order]


def _expected_global_clip(grads, max_norm, tensores):
    expected = recortes_equivocados(tensores, max_norm)
    clipped, norm = reference.clip_by_global_norm([t for t in tensores], max_norm)
    return dict(expected, gradientes=[None if g is None else g.detach().clone()
                                      for g in clipped], norma=float(norm), max_norm=max_norm)


def _norm_of(inputs):
    return oraculo_de_recorte(*inputs.values())["norma"]


GLOBAL_CLIP_SPACE = Space(
    dimensions=(
        Dimension("grads.contenedor", lambda i: type(i["grads"]).__name__,
                  must_include=("list", "tuple", "generator")),
        Dimension("grads.len", lambda i: len(i["tensores"])),
        Dimension("grads.con_none", lambda i: None in i["tensores"], must_include=(True, False)),
        Dimension("grads.solo_none", lambda i: all(t is None for t in i["tensores"]),
                  must_include=(True, False)),
        Dimension("grads.dim0", lambda i: any(t is not None and t.dim() == 0
                                              for t in i["tensores"]),
                  must_include=(True, False)),
        Dimension("grads.dim0_float32", lambda i: any(
            t is not None and t.dim() == 0 and t.dtype == torch.float32 for t in i["tensores"]),
                  must_include=(True, False)),
        Dimension("grads.vacia", lambda i: len(i["tensores"]) == 0, must_include=(True, False)),
        Dimension("grads.dtype", lambda i: next((str(t.dtype) for t in i["tensores"]
                                                 if t is not None), "ninguno"),
                  must_include=("torch.float32", "torch.float64")),
        Dimension("grads.norma_pequena", lambda i: 0 < _norm_of(i) < 1e-2,
                  must_include=(True, False)),
        Dimension("max_norm.recorta", lambda i: _norm_of(i) > i["max_norm"],
                  must_include=(True, False)),
        Dimension("max_norm.inf", lambda i: math.isinf(i["max_norm"]),
                  must_include=(True, False)),
        Dimension("max_norm.entre", lambda i: _norm_of(i) < i["max_norm"] < _norm_of(i) + 1e-6,
                  must_include=(True, False)),
    ),
    fixed={})


HIDDEN = hidden_table(
    HiddenExercise(MICRO_BATCH_WEIGHTS, _weight_shapes, _expected_weights, WEIGHTS_SPACE,
                   difficulty=2),
    HiddenExercise(TRAIN_WITH_ACCUMULATION, _cycle_shapes, _expected_cycles, CYCLES_SPACE,
                   difficulty=3),
    HiddenExercise(CLIP_BY_GLOBAL_NORM, _global_clip_shapes, _expected_global_clip,
                   GLOBAL_CLIP_SPACE, difficulty=3),
)
check = checker(HIDDEN)  # what the graded cells of the instructor notebook call

# Mutants of the solution cells that compute what the contract asks, by id (see
# autograder/mutation.py), each with the reason.
EQUIVALENT_MUTANTS = {
    "clip_by_global_norm": {
        "L8:12 sin .item()": "el contrato admite la norma como float o como tensor de "
                              "dimensión 0 sin grafo (lo que devuelve clip_grad_norm_)",
    },
}
