"""Run an exercise's hidden cases on a student's function with that student's seed."""

from dataclasses import dataclass

import torch

from autograder.checks.seeds import seed_for
from autograder.student.compare import puntuar


@dataclass(frozen=True)
class HiddenExercise:
    """The parts of an exercise and how to build its hidden cases from a generator."""

    parts: list
    cases: object  # callable(function, torch.Generator) -> list[Caso]

    @property
    def points(self):
        return sum(part.puntos for part in self.parts)


def grade_hidden(exercise_id, table, function, student=None, secret=None):
    """Score ``function`` on the hidden cases of ``exercise_id``: a ``Resultado``."""
    exercise = table[exercise_id]
    generator = torch.Generator().manual_seed(seed_for(exercise_id, student=student,
                                                       secret=secret))
    return puntuar(exercise.parts, exercise.cases(function, generator))


def run_hidden(exercise_id, table, function, student=None, secret=None):
    """What a graded cell calls: print the per-part report and return the points.

    The return value is the cell's last expression, which nbgrader reads as the
    (partial) score; it never exceeds the cell's points (a test checks they agree).
    """
    result = grade_hidden(exercise_id, table, function, student, secret)
    print(result.informe(f"Pruebas ocultas de {exercise_id}"))
    return result.puntos
