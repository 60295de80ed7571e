"""A made-up class with the course's real chapters, exercises, parts and diagnosis ids, to
time the report on a class of any size (``python -m autograder report --synthetic N``)."""

import random

from autograder.markers import TEST_SUFFIX
from autograder.outcome import Outcome, Status

ODD = (Status.TIMED_OUT, Status.CRASHED, Status.TAMPERING, Status.UNREADABLE)


def course_shape():
    """assignment -> [(function, [(part name, points)])], from the chapters' declarations."""
    from autograder.catalogue import exercises
    from autograder.course import chapter_named

    shape = {}
    for exercise in exercises():
        hidden = chapter_named(exercise.chapter).module("hidden").HIDDEN[exercise.function]
        shape.setdefault(exercise.chapter, []).append(
            (exercise.function, [(p.nombre, float(p.puntos)) for p in hidden.exercise.partes]))
    return shape


def synthetic_class(students, shape=None, seed=0):
    """``students`` students over every chapter of ``shape`` (default: the course's): most
    submit, abler students pass more parts, a failed part carries one of three diagnoses
    of its exercise, a few submissions time out, crash or were repaired on intake."""
    from autograder.report.names import _catalogue

    shape = shape or course_shape()
    rng = random.Random(seed)
    ids = sorted(_catalogue())
    likely = {f: rng.sample(ids, 3) for exercises in shape.values() for f, _ in exercises}
    outcomes = []
    for n in range(students):
        student, ability = f"estudiante{n:04d}", rng.random()
        for assignment, exercises in shape.items():
            if rng.random() < 0.05:
                continue  # not submitted
            outcome = Outcome(student, assignment)
            if rng.random() < 0.03:
                outcome.status = rng.choice(ODD)
            if rng.random() < 0.03:
                outcome.notes = ["se restauró una celda de pruebas borrada"]
            for function, parts in exercises:
                found = []
                for name, points in parts:
                    passed = rng.random() < 0.3 + 0.65 * ability
                    diagnosis = None if passed else rng.choices(likely[function],
                                                                (6, 3, 1))[0]
                    found.append({"part": name, "points": points,
                                  "earned": points if passed else 0.0, "diagnosis": diagnosis,
                                  "facts": None if passed else {"razon": 2.0}})
                cell = function + TEST_SUFFIX
                outcome.max_scores[cell] = sum(p for _, p in parts)
                outcome.scores[cell] = sum(p["earned"] for p in found)
                outcome.hidden_tests[function] = {
                    "points": outcome.scores[cell], "max_points": outcome.max_scores[cell],
                    "parts": found, "zeroed": None}
            outcomes.append(outcome)
    return outcomes
