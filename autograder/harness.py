"""The student-kernel side of a hidden test at grading time (see autograder/execute.py).

The grader runs ``observe(...)`` in the student's kernel: it builds the hidden cases
from their seeds, calls the student's function, and saves plain data for the grader,
which scores it in its own process. Imports only ``autograder.student``: the checks,
the references and the course secret never enter the student's kernel.
"""

import importlib
import sys

from autograder.student import plain
from autograder.student.compare import ComprobacionFallida, error_a_datos, observar_casos
from autograder.student.diagnosis import Diagnostico

TAMPERING_EVENT = "autograder.tampering"  # the audit event the kernel's guard answers


def tampering_records():
    """What the hardened kernel's guard saw, as its records (empty under a stock kernel)."""
    records = []
    sys.audit(TAMPERING_EVENT, records)
    return [{"kind": str(r["kind"]), "target": str(r["target"])} for r in records]


def observe(chapter_key, exercise_id, name, cases, target):
    """Observe the notebook's function ``name`` on ``cases``; write them to ``target`` as
    plain data (``autograder.student.plain``: no pickle).

    Called by the grader (autograder/execute.py); the names ``observe``,
    ``tampering_records`` and the saved keys ("observations", "tampering") are the protocol
    between the two sides."""
    import __main__

    module = importlib.import_module(f"autograder.chapters.{chapter_key}.student")
    exercise = module.EJERCICIOS[exercise_id]
    function = getattr(__main__, name, None)
    if not callable(function):
        error = error_a_datos(ComprobacionFallida(Diagnostico("sin_definir", {"nombre": name})))
        observations = [{"resultado": None, "error": error} for _ in cases]
    else:
        observations = observar_casos(exercise, function, cases)
    data = plain.dumps({"observations": observations, "tampering": tampering_records()})
    with open(target, "wb") as handle:
        handle.write(data)
