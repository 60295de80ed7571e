"""Chapter 5 hidden tests: fresh random shapes, modes, layouts and callers per student, vs
the reference.

Each exercise's contract is a ``Space`` (autograder/hidden/space.py): every student meets
every starting mode (all in train, all in eval, mixed with a BatchNorm frozen two levels
down, an eval root with its Dropout and noise layers in train, at random), flat and nested
models (three levels down), float32 and float64, a caller with autograd on and off, ``x``
with and without ``requires_grad``, parameters with and without a stale ``.grad`` and a
frozen first layer, and the edge sizes (one sample where the contract allows it). The
clauses of autograder/chapters/ch05/contract.py name the dimensions that check each."""

import torch
from torch import nn

from autograder.chapters.ch05.student import (
    CAMBIAN,
    EVALUATION_MODE,
    LLAMADA,
    MC_DROPOUT,
    MODULES_THAT_CHANGE,
    SEMILLA_MC,
    RuidoGaussiano,
    clase_de_modos,
    clases_de,
    congelados,
    contenedor_con_otro_modo,
    ganchos_previos,
    hijo_con_otro_modo,
    observar_bloque,
    profundidad,
    sembrar,
    tipos_de,
    train_bajo_eval,
)
from autograder.hidden.reference import load_reference
from autograder.hidden.runner import HiddenExercise, case_seed, checker, hidden_table, integer
from autograder.hidden.space import Dimension, Space

reference = load_reference("ch05")  # the solution cells of solutions/05_*.py

# Mutants that compute what the reference computes, within the contract.
EQUIVALENT_MUTANTS = {
    "modules_that_change": {
        "L10:36 0→-1": "args[-1] is args[0]: model(x) calls every leaf with one positional "
                       "input",
    },
}


def _p(generator):
    return round(0.2 + 0.4 * torch.rand(1, generator=generator).item(), 3)


def spread(generator, values, n):
    """``n`` draws that hold every one of ``values`` at least once, in a random order."""
    values = list(values)
    picks = values + [values[integer(generator, 0, len(values) - 1)]
                      for _ in range(n - len(values))]
    return [picks[i] for i in torch.randperm(n, generator=generator).tolist()]


def _root_in_train_first(modes):
    """The modes with a root in train mode first: a model left in eval mode is named so
    (``tm_dejado_en_eval``) on the first case it fails, whatever the order of the rest."""
    first = next(i for i, mode in enumerate(modes) if mode in ("train", "mixto"))
    modes[0], modes[first] = modes[first], modes[0]
    return modes


def _options(generator, n, **extra):
    """Per case, the options every exercise shares, each value met at least once."""
    columns = {"dtype": spread(generator, ("float32", "float64"), n),
               "grad": spread(generator, (True, False), n),
               "x_rg": spread(generator, (True, False), n),
               "grad_viejo": spread(generator, (True, False), n),
               "congelado": spread(generator, (True, False), n),
               "ganchos": spread(generator, (True, False), n)}
    for name, values in extra.items():
        columns[name] = spread(generator, values, n)
    return [dict(zip(columns, row)) for row in zip(*columns.values())]


def _nest(options, i, **extra):
    """Case ``i`` nested (with ``extra``), and still one flat case among the others."""
    options[i].update(anidada=True, **extra)
    if all(o["anidada"] for o in options):
        options[(i + 1) % len(options)]["anidada"] = False


def _pairs(options):
    return tuple(sorted(options.items()))


# ---------------------------------------------------------------- evaluation_mode
# (anidada, ruido) of the five cases: the first two share the number of modules (a result
# that ignores the modes it found repeats there) and differ in the caller's grad mode, as
# every consecutive pair does; the other neighbours differ in the number of modules. So only
# a block that fixes both the modes and the grad mode it leaves repeats its result.
BLOCK_LAYOUTS = ((True, False), (False, True), (True, True), (False, False), (True, True))
DEEPEST = 5  # the last layout's leaves: deeper than the public example's three levels


def _block_shapes(generator):
    """Every starting mode; a nested model in mixed modes (a BatchNorm frozen under a block
    in train mode); a model three levels deep with its root in eval mode and its Dropout and
    noise layers in train (children in train under parents in eval, one three levels down);
    a noise layer that arrives on; callers alternating grad on and off."""
    n = len(BLOCK_LAYOUTS)
    options = _options(generator, n)
    first_grad = bool(integer(generator, 0, 1))
    others = ["eval", "azar"]
    others = [others[i] for i in torch.randperm(2, generator=generator).tolist()]
    modes = ["mixto", "train"] + others + ["raiz_eval"]  # nested and mixed; flat, noisy, on
    cases = []
    for i, (nested, noisy) in enumerate(BLOCK_LAYOUTS):
        options[i].update(anidada=nested, ruido=noisy, grad=first_grad == (i % 2 == 0))
        if i == n - 1:
            options[i]["profunda"] = DEEPEST - 2  # leaves five levels down
        shape = (integer(generator, 2, 9), integer(generator, 1, 6), integer(generator, 3, 8),
                 integer(generator, 2, 5), _p(generator), modes[i], _pairs(options[i]))
        cases.append((shape, case_seed(generator)))
    return cases


def _expected_block(model, x, llamada):
    """What the reference's plain block leaves (the modes, the caller's grad mode)."""
    return observar_bloque(reference.evaluation_mode,
                           {"model": model, "x": x, LLAMADA: llamada})["resultado"]


def _has(kind):
    return lambda inputs: any(isinstance(m, kind) for m in inputs["model"].modules())


def _stale_grad(inputs):
    return any(p.grad is not None for p in inputs["model"].parameters())


SHARED_DIMENSIONS = (
    Dimension("model.modos", lambda i: clase_de_modos(i["model"]),
              must_include=("eval", "train", "mixto")),
    Dimension("model.grad", _stale_grad, must_include=(True, False)),
    Dimension("x.N", lambda i: i["x"].shape[0]),
    Dimension("x.D", lambda i: i["x"].shape[1]),
    Dimension("x.dtype", lambda i: str(i["x"].dtype),
              must_include=("torch.float32", "torch.float64")),
    Dimension("x.requires_grad", lambda i: i["x"].requires_grad, must_include=(True, False)),
    Dimension("llamada.grad", lambda i: i[LLAMADA]["grad"], must_include=(True, False)),
    Dimension("model.raiz", lambda i: i["model"].training, must_include=(True, False)),
    Dimension("model.train_bajo_eval", lambda i: train_bajo_eval(i["model"]),
              must_include=(True, False)),
    Dimension("model.congelados", lambda i: congelados(i["model"]), must_include=(True, False)),
    Dimension("model.contenedor_con_otro_modo", lambda i: contenedor_con_otro_modo(i["model"]),
              must_include=(True,)),
    Dimension("model.ganchos_previos", lambda i: ganchos_previos(i["model"]),
              must_include=(True, False)),
)

BLOCK_SPACE = Space(dimensions=SHARED_DIMENSIONS + (
    Dimension("model.profundidad", lambda i: profundidad(i["model"]),
              must_include=(1, 2, DEEPEST)),
    Dimension("model.nieto_con_otro_modo", lambda i: hijo_con_otro_modo(i["model"]),
              must_include=(True,)),
    Dimension("model.ruido", _has(RuidoGaussiano), must_include=(True, False)),
    Dimension("model.ruido_activo", lambda i: any(isinstance(m, RuidoGaussiano) and m.training
                                                  for m in i["model"].modules()),
              must_include=(True, False)),
))


# ---------------------------------------------------------------- modules_that_change
MODULE_CASES = 5


def _layout(generator, tiny=False):
    """The middle block: every trap (S, Z, G) plus B and D, shuffled, with an extra layer;
    ``tiny`` (float64 cases) adds a layer whose change is far below allclose's tolerance."""
    codes = list("BDGSZ") + [("R", "T", "I")[integer(generator, 0, 2)]] + (["g"] if tiny else [])
    order = torch.randperm(len(codes), generator=generator).tolist()
    return "".join(codes[i] for i in order)


def _changing(layout):
    return {i for i, code in enumerate(layout) if code in CAMBIAN}


def _module_shapes(generator):
    """Every starting mode, flat and nested blocks, with and without a leaf the forward never
    runs; N >= 2 (BatchNorm cannot run in train mode on one sample), once exactly 2."""
    n = MODULE_CASES
    modes = _root_in_train_first(spread(generator, ("eval", "mixto", "train", "azar",
                                                    "raiz_eval"), n))
    options = _options(generator, n, anidada=(True, False), reserva=(True, False),
                       auxiliar=(True, False))
    # The branch whose Dropout sees only zeros in eval arrives in train (it is what tells an
    # input taken in the arriving mode): never in the case that is entirely in eval.
    in_train = [i for i, mode in enumerate(modes) if mode != "eval"]
    # With a leaf never run beside it: an answer by type lists both, one measured in the
    # arriving mode only the Dropout (each is named for what it is).
    chosen = in_train[integer(generator, 0, len(in_train) - 1)]
    options[chosen].update(apagada=True, reserva=True)
    if all(o["reserva"] for o in options):
        options[(chosen + 1) % n]["reserva"] = False
    _nest(options, modes.index("raiz_eval"))  # containers in another mode than the root's
    smallest = integer(generator, 0, n - 1)
    cases = []
    while len(cases) < n:
        i = len(cases)
        layout = _layout(generator, tiny=options[i]["dtype"] == "float64")
        if any(_changing(shape[4]) == _changing(layout) for shape, _ in cases):
            continue  # two layouts with the same answer would not expose a fixed one
        shape = (2 if i == smallest else integer(generator, 3, 9), integer(generator, 1, 6),
                 integer(generator, 3, 8), integer(generator, 1, 5), layout, modes[i],
                 _pairs(options[i]))
        cases.append((shape, case_seed(generator)))
    return cases


def _expected_modules(model, x, llamada):
    return {"cambian": reference.modules_that_change(model, x)}


MODULE_SPACE = Space(dimensions=SHARED_DIMENSIONS + (
    Dimension("model.profundidad", lambda i: profundidad(i["model"]), must_include=(2, 3)),
    Dimension("model.hoja_sin_ejecutar", lambda i: hasattr(i["model"], "reserva"),
              must_include=(True, False)),
    Dimension("model.rama_auxiliar", lambda i: hasattr(i["model"], "auxiliar"),
              must_include=(True, False)),
    Dimension("model.capas", lambda i: tuple(type(m).__name__ for m in i["model"].modules())),
    Dimension("model.cambio_diminuto", lambda i: any(
        isinstance(m, RuidoGaussiano) and m.sigma < 1e-6 for m in i["model"].modules()),
              must_include=(True, False)),
    Dimension("x.N=2", lambda i: i["x"].shape[0] == 2, must_include=(True, False)),
    Dimension("model.entrada_segun_modo", lambda i: hasattr(i["model"], "apagada"),
              must_include=(True, False)),
))


# ---------------------------------------------------------------- mc_dropout
MC_CASES = 5


def _mc_shapes(generator):
    """Every starting mode; nested and flat; with and without a custom layer that reads
    ``self.training`` and a second Dropout; one case with a single sample (N = 1); n_samples
    from 2 (its smallest) to 12."""
    n = MC_CASES
    modes = _root_in_train_first(spread(generator, ("train", "mixto", "eval", "azar",
                                                    "raiz_eval"), n))
    options = _options(generator, n, anidada=(True, False), ruido=(True, False),
                       dropout2=(True, False))
    _nest(options, modes.index("raiz_eval"), profunda=2)  # containers in another mode
    # than the root's, leaves four levels down
    trained = modes.index("train")  # a noise layer that arrives on must be switched off
    options[trained]["ruido"] = True
    if all(o["ruido"] for o in options):
        options[(trained + 1) % n]["ruido"] = False
    fewest, single = integer(generator, 0, n - 1), integer(generator, 0, n - 1)
    return [((1 if i == single else integer(generator, 2, 8), integer(generator, 1, 6),
              integer(generator, 3, 8), integer(generator, 1, 5), _p(generator),
              2 if i == fewest else integer(generator, 3, 12), modes[i], _pairs(options[i])),
             case_seed(generator)) for i in range(n)]


def _expected_mc(model, x, n_samples, llamada):
    kinds = tipos_de(model)
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        sembrar(SEMILLA_MC)
        mean, std = reference.mc_dropout(model, x, n_samples)
        torch.manual_seed(SEMILLA_MC)  # what a function that seeds again would give
        reseeded, _ = reference.mc_dropout(model, x, n_samples)
    return {"media": mean, "std": std, "tipos": kinds, "clases": clases_de(model),
            "media_resembrada": reseeded}


MC_SPACE = Space(dimensions=tuple(d for d in SHARED_DIMENSIONS if d.name != "x.N") + (
    Dimension("x.N", lambda i: i["x"].shape[0], must_include=(1,)),
    Dimension("model.profundidad", lambda i: profundidad(i["model"]), must_include=(1, 2)),
    Dimension("model.ruido", _has(RuidoGaussiano), must_include=(True, False)),
    Dimension("model.ruido_activo", lambda i: any(isinstance(m, RuidoGaussiano) and m.training
                                                  for m in i["model"].modules()),
              must_include=(True, False)),
    Dimension("model.dropouts", lambda i: sum(isinstance(m, nn.Dropout)
                                              for m in i["model"].modules()),
              must_include=(1, 2)),
    Dimension("n_samples", lambda i: i["n_samples"], must_include=(2,)),
))


HIDDEN = hidden_table(
    HiddenExercise(EVALUATION_MODE, _block_shapes, _expected_block, BLOCK_SPACE,
                   difficulty=2),
    HiddenExercise(MODULES_THAT_CHANGE, _module_shapes, _expected_modules, MODULE_SPACE,
                   difficulty=2),
    HiddenExercise(MC_DROPOUT, _mc_shapes, _expected_mc, MC_SPACE, difficulty=3),
)
check = checker(HIDDEN)  # what the graded cells of the instructor notebook call
