"""Chapter 7 hidden tests: fresh random shapes and values per student, vs the reference.

Every student meets, in each exercise, both dtypes (float32 and float64), a call under
``torch.no_grad()`` and one where the inputs do not (all) require grad, stale ``.grad``
on the inputs, sizes of 1 and unequal sizes; in ``linear_tanh`` each of x, weight and
bias not requiring grad in turn, and a preactivation of about 100 in float32; in
``stable_softplus`` beta on both sides of 1, beta·x = 0, ±200 (exp overflows in float32
only) and huge |beta·x|; in ``quantize_ste`` steps that are not powers of two, exact in
binary (the boundary |x| = levels·step is drawn, and points just outside it, by step/4096)
and not (it is kept away), x = 0 and levels = 1; in ``checkpoint_apply`` each kind of fn
(a residual MLP block, two parameters, none), x and some parameter without requires_grad,
and N and D of 1. Every observation also makes a call with other settings (another beta,
step, levels or fn) between a call's forward and its backward (state kept on the class).
"""

import torch

from autograder.chapters.ch07.student import (
    CHECKPOINT_APPLY,
    FUNCIONES_CHECKPOINT,
    LINEAR_TANH,
    QUANTIZE_STE,
    STABLE_SOFTPLUS,
    candidatos_cuantizador,
    candidatos_lineal_tanh,
    candidatos_softplus,
    paso_exacto,
)
from autograder.hidden.reference import load_reference
from autograder.hidden.runner import HiddenExercise, case_seed, checker, hidden_table, integer
from autograder.hidden.space import Dimension, Space

reference = load_reference("ch07")  # the solution cells of solutions/07_*.py

DTYPES = ("float32", "float64")


def _gradients(function, inputs, grad_output, *others):
    """The output of ``function(*inputs, *others)`` and the gradients of every input."""
    with torch.enable_grad():
        leaves = [t.detach().clone().requires_grad_(True) for t in inputs]
        output = function(*leaves, *others)
        grads = torch.autograd.grad(output, leaves, grad_output)
    return output.detach(), list(grads)


def _choice(generator, options):
    return options[integer(generator, 0, len(options) - 1)]


def _order(generator, items):
    """``items`` in a random order."""
    return [items[i] for i in torch.randperm(len(items), generator=generator).tolist()]


def _dtypes(generator, count):
    """``count`` dtypes, both of them among the first two (in a random order)."""
    return _order(generator, list(DTYPES)) + [_choice(generator, DTYPES)
                                              for _ in range(count - 2)]


def _numel(shape):
    total = 1
    for n in shape:
        total *= n
    return total


def _shape(generator, rank, with_one=False, at_least=1):
    """A shape of ``rank`` with sizes in 2..6 (one of them 1 if ``with_one``), its first
    other size grown until it holds at least ``at_least`` elements."""
    shape = [integer(generator, 2, 6) for _ in range(rank)]
    if with_one:
        shape[integer(generator, 0, rank - 1)] = 1
    grow = next(i for i, n in enumerate(shape) if n != 1)
    while _numel(shape) < at_least:
        shape[grow] += 1
    return tuple(shape)


def _has_one(inputs):
    return 1 in tuple(inputs["x"].shape)


def _stale(inputs, names=("x",)):
    return any(inputs[n].grad is not None for n in names)


def _grad_mode(inputs):
    return inputs["con_grad"]


# ---------------------------------------------------------------- stable_softplus
def _beta(generator, side):
    """A beta below or above 1, at least 5 % away from 1/2, 1 and 2 (where a factor of beta
    would read as a factor of 2, or vanish)."""
    while True:
        beta = (integer(generator, 100, 900) if side == "<1"
                else integer(generator, 1100, 8000)) / 1000
        if all(abs(beta / v - 1) > 0.05 for v in (0.5, 1.0, 2.0)):
            return beta


def _softplus_shapes(generator):
    """Three cases with gradients (a rank-1 x, a rank-2 one, one with a size-1 dimension;
    each with the extremes), one under no_grad, one 0-dim x without requires_grad."""
    sides = _order(generator, ["<1", ">1"]) + [_choice(generator, ["<1", ">1"])
                                              for _ in range(3)]
    dtypes = _dtypes(generator, 5)
    stale = _order(generator, [True, False]) + [_choice(generator, [True, False])]
    shapes = [(integer(generator, 10, 16),), _shape(generator, 2, at_least=10),
              _shape(generator, integer(generator, 2, 3), with_one=True, at_least=10),
              _shape(generator, integer(generator, 1, 3), at_least=10), ()]
    cases = []
    for i, shape in enumerate(shapes):
        huge = integer(generator, 4, 30) if i < 4 else 0
        grad_mode, requires = (False, True) if i == 3 else (True, i != 4)
        cases.append(((shape, _beta(generator, sides[i]), dtypes[i], grad_mode, requires,
                       stale[i] if i < 3 else False, huge), case_seed(generator)))
    return cases


def _expected_softplus(x, beta, grad_output, *rest):
    output, grads = _gradients(reference.stable_softplus, [x], grad_output, beta)
    return {"salida": output, "grads": grads,
            "candidatos": candidatos_softplus(x, beta, grad_output)}


SOFTPLUS_SPACE = Space(dimensions=(
    Dimension("x.dtype", lambda i: str(i["x"].dtype).split(".")[1], must_include=DTYPES),
    Dimension("x.ndim", lambda i: i["x"].dim(), must_include=(0, 1, 2)),
    Dimension("x.shape con un 1", _has_one, must_include=(True, False)),
    Dimension("x.requires_grad", lambda i: i["x"].requires_grad, must_include=(True, False)),
    Dimension("x.grad vieja", _stale, must_include=(True, False)),
    Dimension("x con beta·x = 0", lambda i: bool((i["x"].detach() == 0).any()),
              must_include=(True,)),
    Dimension("x con beta·x = ±200 (desborda exp en float32)",
              lambda i: bool(((i["x"].detach().double() * i["beta"]).abs().sub(200).abs()
                              < 1e-3).any()), must_include=(True,)),
    Dimension("x extremos |beta·x| ≥ 1000",
              lambda i: bool((i["x"].detach().double().abs() * i["beta"] >= 1000).any()),
              must_include=(True,)),
    Dimension("x enorme |beta·x| ≥ 10⁴",
              lambda i: bool((i["x"].detach().double().abs() * i["beta"] >= 1e4).any()),
              must_include=(True,)),
    Dimension("beta", lambda i: i["beta"]),
    Dimension("beta respecto de 1", lambda i: "<1" if i["beta"] < 1 else ">1",
              must_include=("<1", ">1")),
    Dimension("modo de autograd del llamador", _grad_mode, must_include=(True, False)),
))


# ---------------------------------------------------------------- linear_tanh
def _distinct_sizes(generator, one=None):
    """N, D, H all different (a transposed gradient cannot have the right shape); the
    one named by ``one`` is 1."""
    while True:
        sizes = {"N": integer(generator, 2, 9), "D": integer(generator, 2, 7),
                 "H": integer(generator, 2, 7)}
        if one is not None:
            sizes[one] = 1
        if len(set(sizes.values())) == 3:
            return sizes["N"], sizes["D"], sizes["H"]


def _linear_shapes(generator):
    """Five cases: everything requires grad (no size 1); then x, weight and bias
    each without requires_grad in one case (sometimes a second input too), with N, D and H
    each 1 in one of them; last, a call under no_grad."""
    dtypes = _dtypes(generator, 5)
    if dtypes[0] != "float32":  # the first case (N > 1) meets a huge preactivation in float32
        dtypes[0], dtypes[1] = dtypes[1], dtypes[0]
    without = _order(generator, [0, 1, 2])
    ones = _order(generator, ["N", "D", "H"])
    stale = _order(generator, [True, False]) + [_choice(generator, [True, False])
                                                for _ in range(2)]
    cases = [((*_distinct_sizes(generator), dtypes[0], (True, True, True), True, stale[0]),
              case_seed(generator))]
    for k in range(3):
        requires = [True, True, True]
        requires[without[k]] = False
        if integer(generator, 0, 2) == 0:  # a second input without requires_grad
            requires[without[(k + 1) % 3]] = False
        cases.append(((*_distinct_sizes(generator, ones[k]), dtypes[k + 1], tuple(requires),
                       True, stale[k + 1]), case_seed(generator)))
    cases.append(((*_distinct_sizes(generator), dtypes[4], (True, True, True), False, False),
                  case_seed(generator)))
    return cases


def _expected_linear(x, weight, bias, grad_output, *rest):
    """The reference in float64, cast back: in float32 its own 1 − y² loses digits where
    tanh saturates, and a backward that writes 1 / cosh(z)² keeps them."""
    inputs = [x, weight, bias]
    output, grads = _gradients(reference.linear_tanh, [t.double() for t in inputs],
                               grad_output.double())
    return {"salida": output.to(x.dtype), "grads": [g.to(t.dtype) for g, t in zip(grads, inputs)],
            "candidatos": candidatos_lineal_tanh(x, weight, bias, grad_output)}


LINEAR_SPACE = Space(dimensions=(
    Dimension("x.shape[0] = N", lambda i: i["x"].shape[0], must_include=(1,)),
    Dimension("x.shape[1] = D", lambda i: i["x"].shape[1], must_include=(1,)),
    Dimension("weight.shape[0] = H", lambda i: i["weight"].shape[0], must_include=(1,)),
    Dimension("x N, D, H distintos", lambda i: len({*i["x"].shape, i["weight"].shape[0]}) == 3,
              must_include=(True,), varies=False),
    Dimension("x.dtype", lambda i: str(i["x"].dtype).split(".")[1], must_include=DTYPES),
    Dimension("preactivación enorme |z| ≥ 50 en float32",
              lambda i: i["x"].dtype == torch.float32 and bool(
                  (i["x"].detach() @ i["weight"].detach().T + i["bias"].detach()).abs().max()
                  >= 50), must_include=(True,)),
    Dimension("x.requires_grad", lambda i: i["x"].requires_grad, must_include=(True, False)),
    Dimension("weight.requires_grad", lambda i: i["weight"].requires_grad,
              must_include=(True, False)),
    Dimension("bias.requires_grad", lambda i: i["bias"].requires_grad,
              must_include=(True, False)),
    Dimension("x.grad vieja", lambda i: _stale(i, ("x", "weight", "bias")),
              must_include=(True, False)),
    Dimension("modo de autograd del llamador", _grad_mode, must_include=(True, False)),
))


# ---------------------------------------------------------------- quantize_ste
# Steps by kind: exact in binary but not powers of two, powers of two, and not exact in
# binary (0.1 has no finite binary expansion: levels·step is then rounded).
EXACT_STEPS = (0.375, 0.75, 1.5, 0.625, 0.1875, 1.25, 0.3125)
POWERS_OF_TWO = (0.125, 0.25, 0.5, 1.0, 2.0)
INEXACT_STEPS = (0.1, 0.2, 0.3, 0.05, 0.15, 0.7, 1.1)


def _step_kind(step):
    if step in POWERS_OF_TWO:
        return "potencia de 2"
    return "exacto" if step in EXACT_STEPS else "inexacto"


def _quantizer_shapes(generator):
    """Three cases with gradients (an exact step that is not a power of two, so the two
    ends of the range are drawn, in float64; an inexact one in float32; any, with
    levels = 1), one under
    no_grad, one 0-dim x without requires_grad."""
    steps = [_choice(generator, EXACT_STEPS), _choice(generator, INEXACT_STEPS),
             _choice(generator, EXACT_STEPS + POWERS_OF_TWO + INEXACT_STEPS),
             _choice(generator, EXACT_STEPS + POWERS_OF_TWO + INEXACT_STEPS),
             _choice(generator, POWERS_OF_TWO + INEXACT_STEPS)]
    levels = [integer(generator, 2, 10), integer(generator, 2, 10), 1,
              integer(generator, 1, 10), integer(generator, 1, 10)]
    dtypes = _dtypes(generator, 5)
    if dtypes[1] != "float32":  # an inexact step is inexact only below float64
        dtypes[0], dtypes[1] = dtypes[1], dtypes[0]
    stale = _order(generator, [True, False]) + [_choice(generator, [True, False])]
    shapes = [(integer(generator, 12, 24),), _shape(generator, 2, at_least=12),
              _shape(generator, integer(generator, 2, 3), with_one=True, at_least=12),
              _shape(generator, integer(generator, 1, 3), at_least=12), ()]
    cases = []
    for i, shape in enumerate(shapes):
        grad_mode, requires = (False, True) if i == 3 else (True, i != 4)
        cases.append(((shape, steps[i], levels[i], dtypes[i], grad_mode, requires,
                       stale[i] if i < 3 else False), case_seed(generator)))
    return cases


def _expected_quantizer(x, step, levels, grad_output, *rest):
    output, grads = _gradients(reference.quantize_ste, [x], grad_output, step, levels)
    return {"salida": output, "grads": grads,
            "candidatos": candidatos_cuantizador(x, step, levels, grad_output)}


def _on_the_boundary(inputs):
    x, limit = inputs["x"].detach().double().abs(), inputs["levels"] * inputs["step"]
    return bool((x == limit).any())


def _just_outside(inputs):
    x, step = inputs["x"].detach().double().abs(), inputs["step"]
    return bool((x == inputs["levels"] * step + step / 4096).any())


def _beyond(inputs, low, high):
    """Elements beyond both ends, between ``low`` and ``high`` steps past them."""
    x, step = inputs["x"].detach().double(), inputs["step"]
    limit = inputs["levels"] * step
    return all(bool(((side * x > limit + low * step) & (side * x < limit + high * step)).any())
               for side in (1, -1))


QUANTIZER_SPACE = Space(dimensions=(
    Dimension("x.dtype", lambda i: str(i["x"].dtype).split(".")[1], must_include=DTYPES),
    Dimension("x.ndim", lambda i: i["x"].dim(), must_include=(0, 1, 2)),
    Dimension("x.shape con un 1", _has_one, must_include=(True, False)),
    Dimension("x.requires_grad", lambda i: i["x"].requires_grad, must_include=(True, False)),
    Dimension("x.grad vieja", _stale, must_include=(True, False)),
    Dimension("x en ±levels·step exactamente", _on_the_boundary, must_include=(True,)),
    Dimension("x justo fuera de ±levels·step (por step/4096)",
              lambda i: _just_outside(i), must_include=(True,)),
    Dimension("x = 0", lambda i: bool((i["x"].detach() == 0).any()), must_include=(True,)),
    Dimension("x a menos de medio step fuera, por los dos lados",
              lambda i: _beyond(i, 0, 0.5), must_include=(True,)),
    Dimension("x a más de medio step fuera, por los dos lados",
              lambda i: _beyond(i, 0.5, float("inf")), must_include=(True,)),
    Dimension("step", lambda i: i["step"]),
    Dimension("step.tipo", lambda i: _step_kind(i["step"]),
              must_include=("exacto", "inexacto")),
    Dimension("step exacto en binario en el dtype de x",
              lambda i: paso_exacto(i["step"], i["levels"], i["x"].dtype),
              must_include=(True, False)),
    Dimension("levels", lambda i: i["levels"], must_include=(1,)),
    Dimension("modo de autograd del llamador", _grad_mode, must_include=(True, False)),
))


# ---------------------------------------------------------------- checkpoint_apply
def _checkpoint_shapes(generator):
    """Five cases: the MLP block with everything requiring grad; the two-parameter fn with
    x as data (no requires_grad); the MLP block with one frozen parameter and N = 1; the
    fn without parameters with D = 1; any fn under no_grad."""
    dtypes = _dtypes(generator, 5)
    # stale .grad: both ways among the three cases where x requires grad (0, 2, 3)
    stale = _order(generator, [True, False]) + [_choice(generator, [True, False])
                                                for _ in range(2)]
    stale = (stale[0], stale[3], stale[1], stale[2])
    frozen = integer(generator, 1, 3)

    def sizes(n=None, d=None):
        return (n or integer(generator, 2, 7), d or integer(generator, 2, 6),
                integer(generator, 2, 8))

    mlp_frozen = tuple(i != frozen for i in range(4))
    cases = [("mlp", *sizes(), dtypes[0], (True,) * 4, True, stale[0]),
             ("onda", *sizes(), dtypes[1], (False, True, True), True, stale[1]),
             ("mlp", *sizes(n=1), dtypes[2], mlp_frozen, True, stale[2]),
             ("sin parámetros", *sizes(d=1), dtypes[3], (True,), True, stale[3])]
    kind = _choice(generator, list(FUNCIONES_CHECKPOINT))
    cases.append((kind, *sizes(), dtypes[4], (True,) * (1 + len(FUNCIONES_CHECKPOINT[kind][1])),
                  False, False))
    return [(case, case_seed(generator)) for case in cases]


def _expected_checkpoint(fn, x, params, grad_output, *rest):
    output, grads = _gradients(lambda *t: reference.checkpoint_apply(fn, *t), [x, *params],
                               grad_output)
    return {"salida": output, "grads": grads}


def _fn_kind(inputs):
    return next(k for k, (fn, _) in FUNCIONES_CHECKPOINT.items() if fn is inputs["fn"])


CHECKPOINT_SPACE = Space(dimensions=(
    Dimension("fn", _fn_kind, must_include=tuple(FUNCIONES_CHECKPOINT)),
    Dimension("x.shape[0] = N", lambda i: i["x"].shape[0], must_include=(1,)),
    Dimension("x.shape[1] = D", lambda i: i["x"].shape[1], must_include=(1,)),
    Dimension("x.dtype", lambda i: str(i["x"].dtype).split(".")[1], must_include=DTYPES),
    Dimension("x.requires_grad", lambda i: i["x"].requires_grad, must_include=(True, False)),
    Dimension("x.grad vieja", lambda i: i["x"].grad is not None, must_include=(True, False)),
    Dimension("params.cuántos", lambda i: len(i["params"]), must_include=(0, 2, 3)),
    Dimension("params.alguno sin requires_grad",
              lambda i: any(not p.requires_grad for p in i["params"]),
              must_include=(True, False)),
    Dimension("modo de autograd del llamador", _grad_mode, must_include=(True, False)),
))


HIDDEN = hidden_table(
    HiddenExercise(STABLE_SOFTPLUS, _softplus_shapes, _expected_softplus, SOFTPLUS_SPACE,
                   difficulty=2),
    HiddenExercise(QUANTIZE_STE, _quantizer_shapes, _expected_quantizer, QUANTIZER_SPACE,
                   difficulty=2),
    HiddenExercise(LINEAR_TANH, _linear_shapes, _expected_linear, LINEAR_SPACE, difficulty=3),
    HiddenExercise(CHECKPOINT_APPLY, _checkpoint_shapes, _expected_checkpoint,
                   CHECKPOINT_SPACE, difficulty=4),
)
check = checker(HIDDEN)  # what the graded cells of the instructor notebook call

# Mutants of the references that compute exactly what the reference does (see
# autograder/mutation.py); each with the reason, in one line.
EQUIVALENT_MUTANTS = {}
