"""Chapter 6 hidden tests: fresh cases per student, vs the reference (on CPU; on CUDA too
where the grading machine has a GPU)."""

import math

import torch

from autograder.chapters.ch06.student import (
    AMP_ACCUMULATION_STEPS,
    DIAGNOSE_AMP_LOG,
    ETIQUETAS,
    RESTOS,
    SIMULATE_LOSS_SCALE,
    ciclos_de,
)
from autograder.hidden.reference import load_reference
from autograder.hidden.runner import HiddenExercise, case_seed, checker, hidden_table, integer
from autograder.hidden.space import Dimension, Space

reference = load_reference("ch06")  # the solution cells of solutions/06_*.py

EQUIVALENT_MUTANTS = {
    "diagnose_amp_log": {
        "L23:47 1→2": "comparing records two steps apart around a scale change is another sound "
                      "rule: over two clean steps the real loss and norm still barely move, a "
                      "scaled one still changes by the scale's factor",
        "L27:19 Lt→LtE": "< or <= between two logarithms that are never equal on a simulated "
                         "log (a tie has probability zero)",
    },
}


def _log_cases(generator):
    """Two cases of three logs of each label (each label's logs over three slices of the
    magnitude's range and of the initial scale's), freshly simulated from their seeds."""
    return [((3,), case_seed(generator)) for _ in range(2)]


def _expected_labels(logs):
    return [reference.diagnose_amp_log([dict(r) for r in log]) for log in logs]


def _scale_shapes(generator):
    """Three sequences of 30–45 steps, in a per-student order: GradScaler's defaults (growth
    2, backoff 0.5, a power-of-two init_scale, an interval of 3 or 5); growth_interval 1 with
    other factors and an init_scale that is no power of two; an interval of 2–4 with other
    factors and an init_scale below 1. ``construir_escala`` draws an inf with probability
    0.3 and keeps one run of 2 · growth_interval clean steps, so the scale backs off and
    grows, twice in a row; in the interval-1 case and the interval-2–4 one that run opens
    the sequence (a counter that starts off by one grows early), in the defaults' case it
    does not."""
    def other(n):
        return integer(generator, 1, n - 1)

    shapes = [(integer(generator, 30, 45), (3, 5)[integer(generator, 0, 1)], 0, 0, 0, 0),
              (integer(generator, 30, 45), 1, other(4), other(4), 1, 1),
              (integer(generator, 30, 45), integer(generator, 2, 4), other(4), other(4),
               2, 1)]
    order = torch.randperm(3, generator=generator).tolist()
    return [(shapes[i], case_seed(generator)) for i in order]


def _expected_scales(found_inf, init_scale, growth_factor, backoff_factor, growth_interval):
    return {"escalas": reference.simulate_loss_scale(found_inf, init_scale, growth_factor,
                                                     backoff_factor, growth_interval),
            "found_inf": list(found_inf), "init_scale": init_scale,
            "growth_factor": growth_factor, "backoff_factor": backoff_factor}


def _native_cuda_bf16():
    try:
        return torch.cuda.is_bf16_supported(including_emulation=False)
    except TypeError:  # PyTorch < 2.4: no emulation to tell apart
        return torch.cuda.get_device_capability()[0] >= 8


def _step_codes():
    codes = [0, 1, 2, 3, 5]
    if torch.cuda.is_available():
        codes += [4] + ([6] if _native_cuda_bf16() else [])
    return codes


STYLE_BITS = 6  # see the style bits in student.py (ANIDADO ... OTRO_SGD)
# How the micro-batches fall into cycles: the last one incomplete, all complete, or a
# single cycle shorter than accum.
INCOMPLETE, COMPLETE, SHORT = range(3)


def _cycles(generator, kind):
    """(micro-batches, accum) of one kind; accum is at least 2 (one micro-batch per step
    would be no accumulation)."""
    if kind == SHORT:
        accum = integer(generator, 3, 5)
        return integer(generator, 2, accum - 1), accum
    accum = integer(generator, 2, 4)
    rest = integer(generator, 1, accum - 1) if kind == INCOMPLETE else 0
    return accum * integer(generator, 1, 2) + rest, accum


def _step_shapes(generator):
    """Every case code (CPU float16 with a GradScaler, CPU bfloat16 without; an overflowing
    first cycle, a growing scale, no clipping; CUDA where a GPU is), in a per-student order.
    Each style bit (nested model, no bias, L1 loss, an earlier step's optimizer state and
    leftovers in .grad, eval mode, other SGD settings) is on in one case and off in another;
    one batch has N = 1. Leftovers are on where the first step is taken. One case has only
    complete cycles, one a single cycle shorter than accum (never the overflowing one: its
    later steps must show), the rest an incomplete last cycle."""
    codes = _step_codes()
    order = torch.randperm(len(codes), generator=generator).tolist()
    styles = [integer(generator, 0, 2 ** STYLE_BITS - 1) for _ in codes]
    others = [k for k, i in enumerate(order) if codes[i] != 2]
    for bit in range(STYLE_BITS):
        on, off = torch.randperm(len(codes), generator=generator)[:2].tolist()
        if 1 << bit == RESTOS:  # leftovers in .grad show only where the first step is taken
            on, off = [others[j] for j in torch.randperm(len(others),
                                                         generator=generator)[:2].tolist()]
        styles[on] |= 1 << bit
        styles[off] &= ~(1 << bit)
    kinds = [INCOMPLETE] * len(codes)
    complete, short = torch.randperm(len(others), generator=generator)[:2].tolist()
    kinds[others[complete]], kinds[others[short]] = COMPLETE, SHORT
    single = integer(generator, 0, len(codes) - 1)
    return [((1 if k == single else integer(generator, 2, 6), integer(generator, 2, 6),
              integer(generator, 4, 10), integer(generator, 1, 4), codes[i], styles[k],
              *_cycles(generator, kinds[k])), case_seed(generator))
            for k, i in enumerate(order)]


STEP_ARGUMENTS = ("model", "batches", "loss_fn", "optimizer", "scaler", "device", "dtype",
                  "accum", "max_norm")


def _expected_steps(*inputs):
    """What the reference does, observed the same way as the student's function."""
    return AMP_ACCUMULATION_STEPS.observar(reference.amp_accumulation_steps,
                                           dict(zip(STEP_ARGUMENTS, inputs)))


def _labels(inputs):
    """The labels the reference gives a case's logs (the simulated ones: a test checks it)."""
    return frozenset(_expected_labels(inputs["registros"]))


def _late_nan_overflow(log):
    """The log's one overflow is the second-to-last step's, and its norm is nan."""
    overflows = [t for t, r in enumerate(log) if not math.isfinite(r["grad_norm"])]
    return overflows == [len(log) - 2] and math.isnan(log[-2]["grad_norm"])


LOG_SPACE = Space(dimensions=(
    Dimension("log", lambda i: tuple(len(log) for log in i["registros"])),
    Dimension("log.labels", _labels, must_include=(frozenset(ETIQUETAS),), varies=False),
    Dimension("log.order", lambda i: tuple(_expected_labels(i["registros"]))),
    Dimension("log.initial scale", lambda i: tuple(log[0]["scale"] for log in i["registros"])),
    Dimension("log.late nan overflow", lambda i: any(_late_nan_overflow(log)
                                                     for log in i["registros"]),
              must_include=(True,), varies=False),
))


def _interval_kind(inputs):
    interval = inputs["growth_interval"]
    return "1" if interval == 1 else "2^k" if interval & (interval - 1) == 0 else "other"


SCALE_SPACE = Space(dimensions=(
    Dimension("found_inf", lambda i: tuple(i["found_inf"])),
    Dimension("init_scale", lambda i: math.log2(i["init_scale"]).is_integer(),
              must_include=(True, False)),
    Dimension("growth_factor", lambda i: i["growth_factor"] == 2.0, must_include=(True, False)),
    Dimension("backoff_factor", lambda i: i["backoff_factor"] == 0.5,
              must_include=(True, False)),
    Dimension("growth_interval", _interval_kind, must_include=("1", "other")),
    Dimension("found_inf.clean start", lambda i: not any(i["found_inf"][:2]),
              must_include=(True,), varies=False),
    Dimension("init_scale.below 1", lambda i: i["init_scale"] < 1, must_include=(True, False)),
))


def _modules(inputs):
    return [m for m in inputs["model"].modules() if m is not inputs["model"]]


def _sgd(inputs):
    group = inputs["optimizer"].param_groups[0]
    return group["lr"], group["momentum"], group["weight_decay"]


def _last_cycle(inputs):
    cycles = ciclos_de(len(inputs["batches"]), inputs["accum"])
    return ("shorter than accum" if len(cycles) == 1 and cycles[0] < inputs["accum"] else
            "incomplete" if cycles[-1] < inputs["accum"] else "complete")


def _clips(inputs):
    return inputs["max_norm"] < 1.0


def _scaler(inputs):
    scaler = inputs["scaler"]
    return None if scaler is None else (scaler.get_scale(), scaler.get_growth_factor(),
                                        scaler.get_growth_interval())


_DEVICE = (Dimension("device", lambda i: i["device"], must_include=("cpu", "cuda")),) if (
    torch.cuda.is_available()) else ()
STEP_SPACE = Space(
    dimensions=(
        Dimension("model.nested", lambda i: any(isinstance(m, torch.nn.Sequential)
                                                for m in _modules(i)), must_include=(True, False)),
        Dimension("model.bias", lambda i: all(m.bias is not None for m in _modules(i)
                                              if isinstance(m, torch.nn.Linear)),
                  must_include=(True, False)),
        Dimension("model.training", lambda i: i["model"].training, must_include=(True, False)),
        Dimension("model.grad", lambda i: next(i["model"].parameters()).grad is None,
                  must_include=(True, False)),
        Dimension("batches.N", lambda i: i["batches"][0][0].shape[0] == 1,
                  must_include=(True, False)),
        Dimension("batches.shape", lambda i: (tuple(i["batches"][0][0].shape),
                                              tuple(i["batches"][0][1].shape))),
        Dimension("batches.len", lambda i: len(i["batches"])),
        Dimension("accum", lambda i: i["accum"]),
        Dimension("accum.last cycle", _last_cycle,
                  must_include=("incomplete", "complete", "shorter than accum")),
        Dimension("loss_fn", lambda i: type(i["loss_fn"]).__name__,
                  must_include=("MSELoss", "L1Loss")),
        Dimension("optimizer", _sgd),
        Dimension("optimizer.state", lambda i: bool(i["optimizer"].state),
                  must_include=(True, False)),
        Dimension("scaler", lambda i: i["scaler"] is None, must_include=(True, False)),
        Dimension("scaler.settings", _scaler),
        Dimension("dtype", lambda i: i["dtype"], must_include=(torch.float16, torch.bfloat16)),
        Dimension("max_norm", _clips, must_include=(True, False)),
        Dimension("max_norm.value", lambda i: i["max_norm"]),
    ) + _DEVICE,
    fixed={} if torch.cuda.is_available() else {
        "device": "'cpu' only: the 'cuda' cases are drawn where the grading machine has a GPU"},
)


HIDDEN = hidden_table(
    HiddenExercise(DIAGNOSE_AMP_LOG, _log_cases, _expected_labels, space=LOG_SPACE,
                   difficulty=2),
    HiddenExercise(SIMULATE_LOSS_SCALE, _scale_shapes, _expected_scales, space=SCALE_SPACE,
                   difficulty=2),
    HiddenExercise(AMP_ACCUMULATION_STEPS, _step_shapes, _expected_steps, space=STEP_SPACE,
                   difficulty=3),
)
check = checker(HIDDEN)  # what the graded cells of the instructor notebook call
