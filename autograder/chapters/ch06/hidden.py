"""Chapter 6 hidden tests: fresh cases per student, vs the reference (on CPU; on CUDA too
where the grading machine has a GPU)."""

import torch

from autograder.chapters.ch06.student import AMP_TRAIN_STEP, PICK_AMP_DTYPE, SIMULATE_LOSS_SCALE
from autograder.hidden.reference import load_reference
from autograder.hidden.runner import HiddenExercise, checker, entero, hidden_table, semilla

reference = load_reference("ch06")  # the solution cells of solutions/06_*.py


def _tabla_de_dispositivos(generador):
    """The four machines in a per-student order, then the same table rotated by one row
    (a rotated answer list equals the original only if every row got the same answer)."""
    orden = tuple(torch.randperm(4, generator=generador).tolist())
    return [(orden, semilla(generador)), (orden[1:] + orden[:1], semilla(generador))]


def _elecciones_esperadas(filas):
    return [reference.pick_amp_dtype(dispositivo, bf16) for dispositivo, bf16 in filas]


def _formas_escala(generador):
    """Long enough sequences that a scale grows, backs off and grows again."""
    return [((entero(generador, 30, 45), entero(generador, 2, 4), codigo),
             semilla(generador)) for codigo in (0, 1)]


def _escalas_esperadas(found_inf, init_scale, growth_factor, backoff_factor, growth_interval):
    return {"escalas": reference.simulate_loss_scale(found_inf, init_scale, growth_factor,
                                                     backoff_factor, growth_interval),
            "found_inf": list(found_inf), "init_scale": init_scale,
            "backoff_factor": backoff_factor}


def _formas_paso(generador):
    """Every CPU case (scaler, no scaler, overflow, no clipping), and CUDA fp16 where a GPU is."""
    codigos = [0, 1, 2, 3] + ([4] if torch.cuda.is_available() else [])
    orden = torch.randperm(len(codigos), generator=generador).tolist()
    return [((entero(generador, 4, 9), entero(generador, 2, 6), entero(generador, 4, 10),
              entero(generador, 1, 4), codigos[i]), semilla(generador)) for i in orden]


def _paso_esperado(*entradas):
    """What the reference does, observed the same way as the student's function."""
    nombres = ("model", "batch", "loss_fn", "optimizer", "scaler", "device", "dtype", "max_norm")
    return AMP_TRAIN_STEP.observar(reference.amp_train_step, dict(zip(nombres, entradas)))


HIDDEN = hidden_table(
    HiddenExercise(PICK_AMP_DTYPE, _tabla_de_dispositivos,
                                          _elecciones_esperadas),
    HiddenExercise(SIMULATE_LOSS_SCALE, _formas_escala,
                                               _escalas_esperadas),
    HiddenExercise(AMP_TRAIN_STEP, _formas_paso, _paso_esperado),
)
check = checker(HIDDEN)  # what the graded cells of the instructor notebook call
