"""Run an exercise's hidden steps on a student's function with that student's seed."""

from autograder.checks.seeds import seed_for
from autograder.student.compare import ejecutar_pasos


def run_hidden(exercise_id, steps_by_exercise, function, student=None, secret=None):
    """Raise ComprobacionFallida on the first failing step; print a short success line.

    Returns None on purpose: nbgrader reads a trailing number in a graded cell as a score.
    """
    ejecutar_pasos(steps_by_exercise[exercise_id], function,
                   seed_for(exercise_id, student=student, secret=secret))
    print(f"✓ Pruebas ocultas de {exercise_id} superadas.")
