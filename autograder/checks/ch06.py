"""Chapter 6 hidden tests: fresh cases per student, vs the reference (on CPU; on CUDA too
where the grading machine has a GPU)."""

import torch

from autograder.checks.runner import HiddenExercise, entero, run_hidden, semilla
from autograder.reference import ch06 as reference
from autograder.student.ch06 import AMP_TRAIN_STEP, PICK_AMP_DTYPE, SIMULATE_LOSS_SCALE


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


HIDDEN = {
    "ch06_pick_amp_dtype": HiddenExercise(PICK_AMP_DTYPE, _tabla_de_dispositivos,
                                          _elecciones_esperadas),
    "ch06_simulate_loss_scale": HiddenExercise(SIMULATE_LOSS_SCALE, _formas_escala,
                                               _escalas_esperadas),
    "ch06_amp_train_step": HiddenExercise(AMP_TRAIN_STEP, _formas_paso, _paso_esperado),
}


def check_pick_amp_dtype(pick_amp_dtype):
    return run_hidden("ch06_pick_amp_dtype", HIDDEN, pick_amp_dtype)


def check_simulate_loss_scale(simulate_loss_scale):
    return run_hidden("ch06_simulate_loss_scale", HIDDEN, simulate_loss_scale)


def check_amp_train_step(amp_train_step):
    return run_hidden("ch06_amp_train_step", HIDDEN, amp_train_step)

