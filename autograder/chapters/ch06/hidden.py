"""Chapter 6 hidden tests: fresh cases per student, vs the reference (on CPU; on CUDA too
where the grading machine has a GPU)."""

import torch

from autograder.chapters.ch06.student import AMP_TRAIN_STEP, PICK_AMP_DTYPE, SIMULATE_LOSS_SCALE
from autograder.hidden.reference import load_reference
from autograder.hidden.runner import HiddenExercise, case_seed, checker, hidden_table, integer

reference = load_reference("ch06")  # the solution cells of solutions/06_*.py


def _device_table(generator):
    """The four machines in a per-student order, then the same table rotated by one row
    (a rotated answer list equals the original only if every row got the same answer)."""
    order = tuple(torch.randperm(4, generator=generator).tolist())
    return [(order, case_seed(generator)), (order[1:] + order[:1], case_seed(generator))]


def _expected_choices(rows):
    return [reference.pick_amp_dtype(device, bf16) for device, bf16 in rows]


def _scale_shapes(generator):
    """Two sequences of 30–45 steps, one per backoff factor. ``construir_escala`` draws an
    inf with probability 0.3 and keeps one run of 2 · growth_interval clean steps, so the
    scale backs off and grows, twice in a row somewhere."""
    return [((integer(generator, 30, 45), integer(generator, 2, 4), code),
             case_seed(generator)) for code in (0, 1)]


def _expected_scales(found_inf, init_scale, growth_factor, backoff_factor, growth_interval):
    return {"escalas": reference.simulate_loss_scale(found_inf, init_scale, growth_factor,
                                                     backoff_factor, growth_interval),
            "found_inf": list(found_inf), "init_scale": init_scale,
            "backoff_factor": backoff_factor}


def _step_shapes(generator):
    """Every CPU case (scaler, no scaler, overflow, no clipping), and CUDA fp16 where a GPU is."""
    codes = [0, 1, 2, 3] + ([4] if torch.cuda.is_available() else [])
    order = torch.randperm(len(codes), generator=generator).tolist()
    return [((integer(generator, 4, 9), integer(generator, 2, 6), integer(generator, 4, 10),
              integer(generator, 1, 4), codes[i]), case_seed(generator)) for i in order]


STEP_ARGUMENTS = ("model", "batch", "loss_fn", "optimizer", "scaler", "device", "dtype",
                  "max_norm")


def _expected_step(*inputs):
    """What the reference does, observed the same way as the student's function."""
    return AMP_TRAIN_STEP.observar(reference.amp_train_step, dict(zip(STEP_ARGUMENTS, inputs)))


HIDDEN = hidden_table(
    HiddenExercise(PICK_AMP_DTYPE, _device_table, _expected_choices),
    HiddenExercise(SIMULATE_LOSS_SCALE, _scale_shapes, _expected_scales),
    HiddenExercise(AMP_TRAIN_STEP, _step_shapes, _expected_step),
)
check = checker(HIDDEN)  # what the graded cells of the instructor notebook call
