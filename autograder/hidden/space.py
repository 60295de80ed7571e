"""An exercise's contract as a space the hidden draws must sample, for every student.

Each hidden exercise lists the degrees of freedom its docstring allows (shapes including
1, unequal dimensions, dtypes, hyperparameters, ``bias=False``, nested models, starting
modes, the caller's grad mode, stale ``.grad``...), each as a ``Dimension`` read from the
inputs of a hidden case. ``coverage`` draws the cases of many students and says which
dimension some student never sees vary, or never sees at a value it must meet: code that
only works where the public example stays would then pass. A parameter of the function
that no dimension reads must be listed as fixed, with the reason.
"""

import inspect
from dataclasses import dataclass, field

import torch

from autograder.hidden.runner import plan


@dataclass(frozen=True)
class Dimension:
    """One degree of freedom: its name (``param`` or ``param.something``), how to read it
    from a case's inputs, and the values each student must meet (besides varying)."""

    name: str
    read: object  # callable(inputs dict) -> a hashable value
    must_include: tuple = ()
    varies: bool = True  # False: must_include alone (e.g. a flag that is always set once)

    @property
    def parameter(self):
        return self.name.split(".")[0].split("[")[0]


@dataclass(frozen=True)
class Space:
    dimensions: tuple = ()
    fixed: dict = field(default_factory=dict)  # parameter -> why the draws keep it fixed


def drawn_values(hidden, dimension, student, secret):
    values = []
    for shape, seed in plan(hidden.exercise.funcion, {hidden.exercise.funcion: hidden},
                            student=student, secret=secret):
        inputs = hidden.exercise.construir(torch.Generator().manual_seed(seed), shape)
        values.append(dimension.read(inputs))
    return values


def coverage(hidden, function, students=20, secret="espacio"):
    """What the draws miss: [(dimension or parameter, why)] (empty when all is covered)."""
    space = hidden.space
    problems = []
    for parameter in inspect.signature(function).parameters:
        read = {d.parameter for d in space.dimensions}
        if parameter not in read and parameter not in space.fixed:
            problems.append((parameter, "ninguna dimensión la varía y no consta como fija"))
    for dimension in space.dimensions:
        for i in range(students):
            seen = drawn_values(hidden, dimension, f"estudiante{i}", secret)
            if dimension.varies and len(set(seen)) < 2:
                problems.append((dimension.name, f"estudiante{i} solo ve {seen[0]!r}"))
                break
            missing = [v for v in dimension.must_include if v not in seen]
            if missing:
                problems.append((dimension.name, f"estudiante{i} nunca ve {missing}"))
                break
    return problems
