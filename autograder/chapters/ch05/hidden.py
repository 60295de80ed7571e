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
from autograder.hidden.runner import HiddenExercise, case_seed, checker, hidden_table, integer

reference = load_reference("ch05")  # the solution cells of solutions/05_*.py


def _p(generator):
    return round(0.2 + 0.4 * torch.rand(1, generator=generator).item(), 3)


def _evaluation_shapes(generator):
    """One case per starting mode; eval first, then the frozen-BatchNorm mix, then train:
    the first case that fails names the mistake (forced train, root flag only, left in eval)."""
    return [((integer(generator, 4, 9), integer(generator, 2, 6), integer(generator, 3, 8),
              integer(generator, 2, 5), _p(generator), mode), case_seed(generator))
            for mode in ("eval", "mixto", "train")]


def _layout(generator):
    """The middle block: every trap (S, Z, G) plus B and D, shuffled, with an extra layer."""
    codes = list("BDGSZ") + [("R", "T", "I")[integer(generator, 0, 2)]]
    order = torch.randperm(len(codes), generator=generator).tolist()
    return "".join(codes[i] for i in order)


def _changing(layout):
    return {i for i, code in enumerate(layout) if code in CAMBIAN}


# Every exercise starts once from mixed modes (train with a frozen BatchNorm): restoring
# only the root's flag (`model.train(was)`) passes when all modules share one mode.
MODULE_MODES = ("eval", "mixto", "train")
MC_MODES = ("train", "mixto", "eval")


def _module_shapes(generator):
    cases = []
    while len(cases) < len(MODULE_MODES):
        layout = _layout(generator)
        if any(_changing(shape[4]) == _changing(layout) for shape, _ in cases):
            continue  # two layouts with the same answer would not expose a fixed one
        shape = (integer(generator, 4, 9), integer(generator, 2, 6), integer(generator, 3, 8),
                 integer(generator, 2, 5), layout, MODULE_MODES[len(cases)])
        cases.append((shape, case_seed(generator)))
    return cases


def _mc_shapes(generator):
    return [((integer(generator, 3, 8), integer(generator, 2, 6), integer(generator, 3, 8),
              integer(generator, 2, 5), _p(generator), integer(generator, 5, 12), mode),
             case_seed(generator)) for mode in MC_MODES]


def _expected_evaluation(model, x, y):
    state = estado_esperado(model)
    value = torch.tensor(reference.evaluate(model, x, y), dtype=torch.float64)
    return {"valor": value, **state}


def _expected_modules(model, x):
    state = estado_esperado(model)
    return {"cambian": reference.modules_that_change(model, x), **state}


def _expected_mc(model, x, n_samples):
    state = estado_esperado(model)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(SEMILLA_MC)
        mean, std = reference.mc_dropout(model, x, n_samples)
    return {"media": mean, "std": std, "tipos": tipos_de(model), **state}


HIDDEN = hidden_table(
    HiddenExercise(EVALUATE, _evaluation_shapes, _expected_evaluation),
    HiddenExercise(MODULES_THAT_CHANGE, _module_shapes, _expected_modules),
    HiddenExercise(MC_DROPOUT, _mc_shapes, _expected_mc),
)
check = checker(HIDDEN)  # what the graded cells of the instructor notebook call
