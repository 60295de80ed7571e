"""The student-kernel side of a hidden test at grading time (see autograder/execute.py).

The grader runs ``observar(...)`` in the student's kernel: it builds the hidden cases
from their seeds, calls the student's function, and saves plain data for the grader,
which scores it in its own process. Imports only ``autograder.student``: the checks,
the references and the course secret never enter the student's kernel.
"""

import importlib
import sys

import torch

from autograder.student.compare import ComprobacionFallida, error_a_datos, observar_casos
from autograder.student.diagnosis import Diagnostico


def manipulaciones():
    """What the hardened kernel's guard saw, as its records (empty under a stock kernel)."""
    informe = []
    sys.audit("autograder.manipulaciones", informe)
    return [{"kind": str(r["kind"]), "target": str(r["target"])} for r in informe]


def observar(capitulo, ejercicio_id, nombre, casos, destino):
    """Observe the notebook's function ``nombre`` on ``casos``; torch.save them to ``destino``."""
    import __main__

    modulo = importlib.import_module(f"autograder.chapters.{capitulo}.student")
    ejercicio = modulo.EJERCICIOS[ejercicio_id]
    funcion = getattr(__main__, nombre, None)
    if not callable(funcion):
        error = error_a_datos(ComprobacionFallida(Diagnostico("sin_definir", {"nombre": nombre})))
        observaciones = [{"resultado": None, "error": error} for _ in casos]
    else:
        observaciones = observar_casos(ejercicio, funcion, casos)
    torch.save({"observaciones": observaciones, "manipulaciones": manipulaciones()}, destino)
