"""Chapter 1 hidden tests: fresh random shapes and values per student, vs the reference.

Each exercise's draws sample the contract its docstring states (``space``: every student
meets sizes of 1, both dtypes, parameters that require grad or arrive with a stale
``.grad``, nested models, models in eval mode...). Expected values are computed in float64
on copies and cast to the inputs' dtype, so a correct float32 answer is judged against
the truth, not against one particular float32 rounding.
"""

import copy

import torch

from autograder.chapters.ch01.student import (
    GRADIENT_PENALTY,
    MANUAL_BACKWARD,
    NOMBRES_PARAMETROS,
    TWO_LOSS_GRADS,
    batchnorm,
    en_otro_modo,
    lineales,
    penalizacion_de_normas,
    penalizaciones_equivocadas,
    relu_en_cero_uno,
    relus_equivocadas,
)
from autograder.hidden.reference import load_reference
from autograder.hidden.runner import HiddenExercise, case_seed, checker, hidden_table, integer
from autograder.hidden.space import Dimension, Space

reference = load_reference("ch01")  # the solution cells of solutions/01_*.py

# Mutants that compute what the reference computes, within the contract.
EQUIVALENT_MUTANTS = {
    "manual_backward": {
        "L11:17 Gt→GtE": "the ReLU's derivative at exactly z == 0 is a convention (any value "
                        "in [0, 1] is a subgradient): the contract accepts 0 or 1, and the "
                        "draws put a unit at exactly z == 0 to check that both pass",
    },
}


def _dtypes(generator):
    """float32 and float64 in a random order: which small case gets which."""
    return ("float32", "float64") if integer(generator, 0, 1) else ("float64", "float32")


def _distinct(generator, low, high, count):
    """``count`` different integers in [low, high], in random order (a size every student
    sees vary)."""
    return [low + i for i in torch.randperm(high - low + 1, generator=generator)[:count].tolist()]


def _network_shapes(generator):
    """Three networks. The first (float64, N ≥ 5, K ∈ {3, 4}, N ≠ K: N, K and N·K distinct
    and ≠ 2) gives every wrong scale its one name. The other two hold the sizes of 1 a
    shape bug breaks (N = D = 1; H = K = 1), one of them float32, one with parameters that
    require grad and arrive with a stale ``.grad``."""
    N, K = integer(generator, 5, 9), integer(generator, 3, 4)
    cases = [((N, integer(generator, 2, 6), integer(generator, 3, 8), K, "float64"),
              case_seed(generator))]
    first, second = _dtypes(generator)
    flags = ("requires_grad", "grad")
    marked = integer(generator, 0, 1)
    cases.append(((1, 1, integer(generator, 3, 8), integer(generator, 3, 4), first,
                   *(flags if marked == 0 else ())), case_seed(generator)))
    cases.append(((integer(generator, 2, 9), integer(generator, 2, 6), 1, 1, second,
                   *(flags if marked == 1 else ())), case_seed(generator)))
    return cases


def _expected_network(x, y, W1, b1, W2, b2):
    inputs = (x, y, W1, b1, W2, b2)
    with torch.no_grad():
        grads = reference.manual_backward(*(t.detach().double() for t in inputs))
    return {"grads": {name: grads[name].to(x.dtype) for name in NOMBRES_PARAMETROS},
            "en_cero_uno": relu_en_cero_uno(*inputs), **relus_equivocadas(*inputs)}


def _two_loss_shapes(generator):
    """The first case (float64, a flat model in train, N ≥ 5, K ∈ {3, 4}, N ≠ K) names every
    wrong scale; then a batch of one through a nested model without the first bias, entirely
    in eval; a single output (K = 1) with a stale ``.grad`` on every parameter through a
    model in eval whose BatchNorm is in train; and a model nested two levels down, with a
    parameter of its own and a BatchNorm in eval under a model in train. One of the second
    and third in float32."""
    N, K = integer(generator, 5, 9), integer(generator, 3, 4)
    while N == K:
        N = integer(generator, 5, 9)
    first, second = _dtypes(generator)
    D, H = _distinct(generator, 2, 6, 4), _distinct(generator, 3, 8, 4)
    return [((N, D[0], H[0], K, "float64"), case_seed(generator)),
            ((1, D[1], H[1], integer(generator, 3, 4), first, "anidada", "sin_sesgo", "eval"),
             case_seed(generator)),
            ((integer(generator, 3, 9), D[2], H[2], 1, second, "grad", "bn", "mixto_eval"),
             case_seed(generator)),
            ((integer(generator, 3, 7), D[3], H[3], integer(generator, 1, 3), "float64",
              "profunda", "escala", "bn", "mixto", "grad"), case_seed(generator))]


def _in_dtype(tensors, dtype):
    return [t.to(dtype) for t in tensors]


def _expected_two_losses(model, x, y):
    """The reference on a float64 copy, cast back; the stale .grad the model arrived with
    (zeros where none), which a leaking answer adds in; and what the reference gives with
    the whole model in eval and in train (an answer that changes the mode)."""
    def on_a_copy(copy_of_model, x, y):
        grads_a, grads_b = reference.two_loss_grads(copy_of_model.double(), x.double(),
                                                    y.double())
        return _in_dtype(grads_a, x.dtype), _in_dtype(grads_b, x.dtype)

    grads_a, grads_b = on_a_copy(copy.deepcopy(model), x, y)
    previous = [torch.zeros_like(p) if p.grad is None else p.grad.detach().clone()
                for p in model.parameters()]
    return {"a": grads_a, "b": grads_b, "previos": previous,
            **en_otro_modo(on_a_copy, model, x, y)}


def _penalty_shapes(generator):
    """Every model is rescaled so that gradient norms fall on both sides of 1. First a
    float64 batch (N ≥ 4, never 2: a sum over rows has its own name) through a flat model in
    train; then a single sample with D = 1 through a nested, bias-free model in eval, x
    requiring grad with a stale ``.grad`` and the parameters with theirs; then H = 1, x
    requiring grad, the model in eval and its first layer in train; then a model nested two
    levels down, with a parameter of its own and a BatchNorm in eval under a model in
    train."""
    first, second = _dtypes(generator)
    return [((integer(generator, 4, 9), integer(generator, 2, 6), integer(generator, 3, 8),
              "float64", "a_ambos_lados"), case_seed(generator)),
            ((1, 1, integer(generator, 3, 8), first, "a_ambos_lados", "anidada", "sin_sesgo",
              "eval", "grad", "x_requires_grad", "x_grad"), case_seed(generator)),
            ((integer(generator, 3, 9), integer(generator, 2, 6), 1, second, "a_ambos_lados",
              "grad", "x_requires_grad", "mixto_eval"), case_seed(generator)),
            ((integer(generator, 3, 6), integer(generator, 2, 6), integer(generator, 3, 8),
              "float64", "a_ambos_lados", "profunda", "escala", "bn", "mixto"),
             case_seed(generator))]


def _expected_penalty(model, x):
    """The reference on a float64 copy: its value and its gradient w.r.t. the parameters,
    cast back; what the usual wrong formulas give; and the value with the whole model in
    eval and in train (an answer that changes the mode)."""
    double, x_double = copy.deepcopy(model).double(), x.detach().double()
    penalty = reference.gradient_penalty(double, x_double)
    gradients = torch.autograd.grad(penalty, list(double.parameters()), materialize_grads=True)
    leaf = x_double.clone().requires_grad_(True)
    (grad_x,) = torch.autograd.grad(double(leaf).sum(), leaf)
    return {"valor": penalty.detach().to(x.dtype), "gradientes": [g.to(x.dtype) for g in gradients],
            "N": x.shape[0], "equivocadas": penalizaciones_equivocadas(grad_x),
            **en_otro_modo(penalizacion_de_normas, copy.deepcopy(model).double(), x_double)}


def _shape(name, axis=None, must_include=()):
    if axis is None:
        return Dimension(f"{name}.shape", lambda inputs: tuple(inputs[name].shape))
    return Dimension(f"{name}.shape[{axis}]", lambda inputs: inputs[name].shape[axis],
                     must_include)


def _flag(name, read):
    return Dimension(name, read, must_include=(True, False))


DTYPES = ("torch.float32", "torch.float64")
CALLER_GRAD_ON = ("the caller has grad mode on: the function computes gradients with "
                  "autograd, and the statement says so")


def _depth(model):
    """How many Sequential levels hold the first layer below the model's own layers."""
    name = next(n for n, m in model.named_modules() if isinstance(m, torch.nn.Linear))
    return name.removeprefix("capas.").count(".")


def _mode(model):
    """"train" or "eval" when every module is in it; "mixto" (the model in train, some
    submodule in eval), "mixto_eval" (the model in eval, some submodule in train)."""
    if len({m.training for m in model.modules()}) == 1:
        return "train" if model.training else "eval"
    return "mixto" if model.training else "mixto_eval"


def _batchnorm_mode(model):
    layer = batchnorm(model)
    return "no" if layer is None else ("train" if layer.training else "eval")


MODES = ("train", "eval", "mixto", "mixto_eval")


def _model_dimensions(batchnorm_modes):
    return (
        Dimension("model.profundidad", lambda inputs: _depth(inputs["model"]), (0, 2)),
        _flag("model.param_propio", lambda inputs: bool(
            dict(inputs["model"].named_parameters(recurse=False)))),
        Dimension("model.batchnorm", lambda inputs: _batchnorm_mode(inputs["model"]),
                  ("no", *batchnorm_modes)),
        Dimension("model.modo", lambda inputs: _mode(inputs["model"]), MODES),
        _flag("model.bias", lambda inputs: lineales(inputs["model"])[0].bias is not None),
        _flag("model.grad", lambda inputs: next(inputs["model"].parameters()).grad is not None),
        Dimension("model.dtype", lambda inputs: str(next(inputs["model"].parameters()).dtype),
                  DTYPES),
    )


MANUAL_BACKWARD_SPACE = Space(
    dimensions=(
        _shape("x", 0, (1,)), _shape("x", 1, (1,)), _shape("W1", 1, (1,)), _shape("y", 1, (1,)),
        _shape("b1"), _shape("W2"), _shape("b2"),
        Dimension("x.dtype", lambda inputs: str(inputs["x"].dtype), DTYPES),
        _flag("W1.requires_grad", lambda inputs: inputs["W1"].requires_grad),
        _flag("W1.grad", lambda inputs: inputs["W1"].grad is not None),
        _flag("z.cero", lambda inputs: bool(
            (inputs["x"] @ inputs["W1"] + inputs["b1"] == 0).any())),
    ),
    fixed={"caller's grad mode": "the statement: it is called under torch.no_grad() (that is "
                                 "how the use of autograd is observed)",
           "x, y requires_grad": "data: the statement gives x and y without requires_grad"})

TWO_LOSS_SPACE = Space(
    dimensions=(
        _shape("x", 0, (1,)), _shape("x", 1), _shape("y", 1, (1,)),
        Dimension("model.hidden", lambda inputs: lineales(inputs["model"])[0].out_features),
        *_model_dimensions(("train", "eval")),
    ),
    fixed={"caller's grad mode": CALLER_GRAD_ON,
           "x, y requires_grad": "data: the statement says x and y do not require grad",
           "model.requires_grad": "the statement: every parameter requires grad and reaches "
                                  "the output"})

PENALTY_SPACE = Space(
    dimensions=(
        _shape("x", 0, (1,)), _shape("x", 1, (1,)),
        Dimension("model.hidden", lambda inputs: lineales(inputs["model"])[0].out_features,
                  (1,)),
        _flag("x.requires_grad", lambda inputs: inputs["x"].requires_grad),
        _flag("x.grad", lambda inputs: inputs["x"].grad is not None),
        *_model_dimensions(("eval",)),
    ),
    fixed={"caller's grad mode": CALLER_GRAD_ON,
           "model.requires_grad": "the statement: every parameter requires grad",
           "model.batchnorm train": "the statement: each output row depends on its own row "
                                    "alone, which a BatchNorm in train breaks"})

HIDDEN = hidden_table(
    HiddenExercise(MANUAL_BACKWARD, _network_shapes, _expected_network, MANUAL_BACKWARD_SPACE,
                   difficulty=2),
    HiddenExercise(TWO_LOSS_GRADS, _two_loss_shapes, _expected_two_losses, TWO_LOSS_SPACE,
                   difficulty=2),
    HiddenExercise(GRADIENT_PENALTY, _penalty_shapes, _expected_penalty, PENALTY_SPACE,
                   difficulty=3),
)
check = checker(HIDDEN)  # what the graded cells of the instructor notebook call
