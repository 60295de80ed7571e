"""Hidden tests, split so that the grader never runs student code.

1. ``plan``: the hidden cases (shape and seed of each) from the course secret, the
   student id and the exercise. Only the shapes and seeds leave the grader.
2. ``observar_casos`` (student side): build each case's inputs from its seed, call the
   student's function, return plain data. At grading time this runs in the student's
   kernel (``autograder.harness``); in tests it runs here.
3. ``score`` (grader side): rebuild the same inputs, compute the reference, compare
   with the observations, and score the exercise part by part.
"""

import contextlib
import importlib
import io
import math
from dataclasses import dataclass, field

import torch

from autograder.hidden.fixes import fixes_for
from autograder.hidden.reference import load_reference
from autograder.hidden.seeds import seed_for
from autograder.student import plain
from autograder.student.compare import (
    ComprobacionFallida,
    anotar_ejemplos,
    armar_caso,
    fotografiar,
    observar_casos,
    puntuar,
)
from autograder.titles import hidden_tests_heading


@dataclass(frozen=True)
class HiddenExercise:
    exercise: object  # autograder.student.compare.Ejercicio
    draw: object  # callable(torch.Generator) -> list of (shape, seed)
    expect: object  # the reference: callable(*inputs) -> expected result
    space: object = None  # autograder.hidden.space.Space: the contract the draws sample
    # 1 básico … 4 reto (``autograder.catalogue.LEVELS``): the ramp the catalogue shows
    difficulty: int = None
    public_answers: list = field(default=None, compare=False)  # see ``public_answers``

    @property
    def points(self):
        return sum(part.puntos for part in self.exercise.partes)


def hidden_table(*exercises):
    """A chapter's hidden exercises by function name (the name is declared once, in its
    ``Ejercicio``)."""
    return {hidden.exercise.funcion: hidden for hidden in exercises}


def integer(generator, low, high):
    """A random int in [low, high] from ``generator`` (hidden shapes, drawn per student)."""
    return int(torch.randint(low, high + 1, (1,), generator=generator).item())


def case_seed(generator):
    """A random seed for one hidden case."""
    return integer(generator, 0, 2**31 - 2)


def plan(exercise_id, table, student=None, secret=None):
    generator = torch.Generator().manual_seed(seed_for(exercise_id, student=student,
                                                       secret=secret))
    return [(tuple(shape), int(seed)) for shape, seed in table[exercise_id].draw(generator)]


def score(hidden, cases, observations, cite=True):
    """Grader side: the Resultado of the observations against the reference (``cite``: with
    the contract's clauses each failure breaks, for the feedback)."""
    built = []
    for (shape, seed), observation in zip(cases, observations):
        with torch.enable_grad():
            inputs = hidden.exercise.construir(torch.Generator().manual_seed(seed), shape)
            originals = fotografiar(inputs)  # before the reference, which may train in place
            expected = hidden.expect(*inputs.values())
        built.append(armar_caso(hidden.exercise, observation, expected, originals, shape))
    result = puntuar(hidden.exercise.partes, built, public_answers(hidden))
    # The feedback after grading also says how to fix each mistake; public checks never do.
    chapter = hidden.exercise.construir.__module__.split(".")[2]
    result.arreglos = fixes_for(chapter)
    if cite and result.puntos < result.maximo:
        from autograder.contract import clauses_by_failure

        result.clausulas = clauses_by_failure(chapter, hidden.exercise.funcion, grade_uncited)
    return result


def part_results(result):
    """A ``Resultado``'s parts as plain data: name, points, points earned (by ``puntuar``'s
    rule: a requirement earns only beside a value part that passed), the diagnosis id of
    the failure (None when the part passed) and its facts (``plain_facts``: what the class
    report shows as an example)."""
    any_value = any(failure is None and not part.requisito for part, failure in result.fallos)
    return [{"part": part.nombre, "points": part.puntos,
             "earned": part.puntos if failure is None and (any_value or not part.requisito)
             else 0.0,
             "diagnosis": None if failure is None else failure.diagnostico,
             "facts": None if failure is None else plain_facts(failure)}
            for part, failure in result.fallos]


def hidden_record(hidden, result, zeroed=None):
    """What a hidden test found, as ``Outcome.hidden_tests`` and the notebook's facts keep
    it: points, maximum, parts (``part_results``), and why the points were zeroed, if so."""
    points = 0.0 if zeroed else float(result.puntos)
    return {"points": points, "max_points": hidden.points, "parts": part_results(result),
            "zeroed": zeroed}


FACT_CHARS = 200  # a fact longer than this (a traceback) keeps its end: the exception


def plain_facts(failure):
    """A failure's facts as JSON data a notebook's metadata can hold: numbers, booleans
    and short strings (anything else, or a non-finite number, as its text)."""
    def plain(value):
        if isinstance(value, bool) or value is None or isinstance(value, int):
            return value
        if isinstance(value, float) and math.isfinite(value):
            return value
        text = value if isinstance(value, str) else str(value)
        return text if len(text) <= FACT_CHARS else "…" + text[1 - FACT_CHARS:]

    return {str(key): plain(value) for key, value in failure.hechos.items()}


def _not_implemented(*args, **kwargs):
    raise NotImplementedError()


def public_answers(hidden):
    """What the reference answers on the public check's examples (cached): a result equal to
    one of them, whatever the inputs, was copied from the notebook."""
    if hidden.public_answers is None:
        exercise = hidden.exercise
        module = importlib.import_module(exercise.construir.__module__)
        public_check = getattr(module, "comprobar_" + exercise.funcion, None)
        with anotar_ejemplos() as examples, contextlib.redirect_stdout(io.StringIO()), \
                torch.enable_grad():
            try:
                if public_check is not None:
                    public_check(_not_implemented)
            except ComprobacionFallida:
                pass
        reference = getattr(load_reference(module.__name__.split(".")[2]), exercise.funcion)
        answers = []
        for name, seed, shape in examples:
            if name == exercise.funcion:
                with torch.enable_grad():
                    inputs = exercise.construir(torch.Generator().manual_seed(seed), shape)
                    answers.append(exercise.observar(reference, inputs).get("resultado"))
        object.__setattr__(hidden, "public_answers", answers)
    return hidden.public_answers


def roundtrip(observations):
    """What crossing from the kernel to the grader does: plain data written, then parsed
    (``autograder.student.plain``)."""
    return plain.loads(plain.dumps(observations))


def grade_hidden(exercise_id, table, function, student=None, secret=None, cite=True):
    """The whole hidden test in this process (tests, fairness report, stock nbgrader)."""
    cases = plan(exercise_id, table, student, secret)
    observations = roundtrip(observar_casos(table[exercise_id].exercise, function, cases))
    return score(table[exercise_id], cases, observations, cite)


def grade_uncited(exercise_id, table, function, student=None, secret=None):
    """``grade_hidden`` without the clauses: what citing them grades the corpus with."""
    return grade_hidden(exercise_id, table, function, student, secret, cite=False)


def run_hidden(exercise_id, table, function, student=None, secret=None):
    """What a graded cell calls when it runs in process: print the report, return the points.

    The return value is the cell's last expression, which nbgrader reads as the
    (partial) score; it never exceeds the cell's points (a test checks they agree).
    """
    result = grade_hidden(exercise_id, table, function, student, secret)
    chapter = table[exercise_id].exercise.construir.__module__.split(".")[2]
    print(result.informe(hidden_tests_heading(chapter, exercise_id)))
    return result.puntos


def checker(table):
    """``check(name, function)`` for a chapter's graded cells when they run in process."""

    def check(exercise_id, function):
        return run_hidden(exercise_id, table, function)

    return check
