"""Chapter 4 hidden tests: fresh shapes, seeds and settings per student, vs the reference."""

import torch

from autograder.chapters.ch04.student import (
    EVALUATE,
    NOMBRES_ENTRENAMIENTO,
    TRAIN_ONE_EPOCH,
    TRAIN_STEPS,
    WARMUP_COSINE,
    _lotes,
    ejecutar_instrumentado,
    evaluacion_de_golpe,
    lotes_de,
    lrs_esperadas,
    modulo_de_perdida,
    observar_reanudacion,
    profundidad,
)
from autograder.hidden.reference import load_reference
from autograder.hidden.runner import HiddenExercise, case_seed, checker, hidden_table, integer
from autograder.hidden.space import Dimension, Space

reference = load_reference("ch04")  # the solution cells of solutions/04_*.py


def _epoch_shapes(generator):
    """Four epochs. scheduler, accum and max_norm omitted (their defaults) with momentum and
    an iterable loader that cannot be sliced, on a model that arrives in eval mode; accum=3
    with a partial last cycle and a shorter last micro-batch (AdamW, cosine, max_norm=None:
    every scale mistake shows, and a mean weighted by sample counts too) on a nested model
    that arrives half in eval mode (its root in train) with zeroed ``.grad`` and a frozen
    parameter; accum=2 over a tuple with clipping tight enough to act and no scheduler, on
    a model whose root is in eval mode and its first child in train, with a loss that is a
    plain function; accum larger than the
    number of batches, cosine, AdamW and max_norm=0.0 (clipping to norm 0, not "no
    clipping")."""
    def network():
        return (integer(generator, 4, 8), integer(generator, 2, 5), integer(generator, 3, 6),
                integer(generator, 2, 4))

    def coin():
        return bool(integer(generator, 0, 1))

    def loader():
        return ("lista", "iterable", "tupla")[integer(generator, 0, 2)]

    def smoothing():
        return (0.0, 0.1)[integer(generator, 0, 1)]

    cases = []
    B, D, H, C = network()
    cases.append((integer(generator, 3, 5), B, D, H, C, 1, None, "ninguno", "sgd", "iterable",
                  3, "eval", False, 0.0, False, 0, False))
    B, D, H, C = network()
    n = 3 * integer(generator, 2, 3) + integer(generator, 1, 2)
    cases.append((n, B, D, H, C, 3, None, "coseno", "adamw", "lista", 0, "mixto", True, 0.1,
                   True, integer(generator, 1, B - 1), True))
    B, D, H, C = network()
    cases.append((2 * integer(generator, 2, 3), B, D, H, C, 2, 0.3, "ninguno", "sgd_simple",
                  "tupla", 0, "mixto_eval", coin(), smoothing(), coin(),
                  integer(generator, 1, B - 1) if coin() else 0, coin(), True))
    B, D, H, C = network()
    n = 1
    cases.append((n, B, D, H, C, n + integer(generator, 1, 3), 0.0, "coseno", "adamw",
                   loader(), 0, "eval", coin(), smoothing(), coin(), 0, coin()))
    return [(shape, case_seed(generator)) for shape in cases]


def _omitted(inputs, name):
    return "omitido" if name not in inputs else inputs[name]


def _modules(inputs):
    return [m.training for m in inputs["model"].modules()]


def _start_mode(inputs):
    modes = _modules(inputs)
    return ("train" if all(modes) else "eval" if not any(modes) else
            "mixto" if inputs["model"].training else "mixto_eval")


EPOCH_SPACE = Space(dimensions=(
    Dimension("model.start_mode", _start_mode, must_include=("eval", "mixto", "mixto_eval")),
    Dimension("model.congelado", lambda e: any(not p.requires_grad
                                               for p in e["model"].parameters()),
              must_include=(True, False)),
    Dimension("model.nested", lambda e: len(list(e["model"].children())),
              must_include=(2, 3)),
    Dimension("model.grad", lambda e: next(e["model"].parameters()).grad is None,
              must_include=(True, False)),
    Dimension("model.D", lambda e: _lotes(e["loader"])[0].shape[1]),
    Dimension("loader.kind", lambda e: type(e["loader"]).__name__,
              must_include=("list", "tuple", "Cargador")),
    Dimension("loader.batches", lambda e: len(e["loader"]), must_include=(1,)),
    Dimension("loader.smaller_last",
              lambda e: len(_lotes(e["loader"])[-1]) < len(_lotes(e["loader"])[1]),
              must_include=(True, False)),
    Dimension("loss_fn", lambda e: type(e["loss_fn"]).__name__,
              must_include=("CrossEntropyLoss", "function")),
    Dimension("loss_fn.label_smoothing", lambda e: modulo_de_perdida(e["loss_fn"]).label_smoothing,
              must_include=(0.0, 0.1)),
    Dimension("optimizer", lambda e: (type(e["optimizer"]).__name__,
                                      e["optimizer"].defaults.get("momentum")),
              must_include=(("SGD", 0.9), ("SGD", 0), ("AdamW", None))),
    Dimension("scheduler", lambda e: type(_omitted(e, "scheduler")).__name__,
              must_include=("str", "NoneType", "CosineAnnealingLR")),
    Dimension("accum", lambda e: _omitted(e, "accum"), must_include=("omitido", 2, 3)),
    Dimension("accum.partial_cycle", lambda e: len(e["loader"]) % e.get("accum", 1) != 0,
              must_include=(True, False)),
    Dimension("accum.more_than_batches", lambda e: e.get("accum", 1) > len(e["loader"]),
              must_include=(True,), varies=False),
    Dimension("max_norm", lambda e: _omitted(e, "max_norm"),
              must_include=("omitido", None, 0.0)),
))


def _expected_epoch(*inputs):
    observation = ejecutar_instrumentado(reference.train_one_epoch,
                                         dict(zip(NOMBRES_ENTRENAMIENTO, inputs)))
    return {"traza": observation["traza"], "pasos": observation["pasos"],
            "parametros": observation["parametros"], "perdidas": observation["perdidas"],
            "perdida": observation["devuelto"]}


def _evaluation_shapes(generator):
    """Four evaluations, each with its own loss function: a flat model in train mode with a
    smaller last batch, in a list; a model three levels deep (the Dropout at the bottom) in
    eval mode with stale ``.grad``, called under ``no_grad``, over a single full batch in a
    tuple; one two levels deep whose last batch has one sample, with a loss that is a plain
    function, in a loader that can be iterated once; then the rest drawn, with a
    MultiMarginLoss."""
    def sizes(n, last, B, C, D):
        B, C, D = integer(generator, *B), integer(generator, *C), integer(generator, *D)
        ultimo = {"full": B, "smaller": integer(generator, 2, B - 2), "one": 1}[last]
        return (n, B, ultimo, D, integer(generator, 3, 6), C)

    def coin():
        return bool(integer(generator, 0, 1))

    def pick(options):
        return options[integer(generator, 0, len(options) - 1)]

    first = sizes(integer(generator, 2, 4), "smaller", (5, 6), (2, 3), (2, 3))
    second = sizes(1, "full", (7, 8), (4, 5), (4, 5))
    third = sizes(integer(generator, 2, 3), "one", (5, 7), (2, 4), (2, 4))
    fourth = sizes(integer(generator, 2, 4), pick(("full", "smaller")), (5, 8), (2, 5), (1, 5))
    shapes = [first + ("train", "ce", False, False, False, "list"),
              second + ("eval", "suavizada", True, 3, True, "tuple"),
              third + (pick(("train", "eval")), "funcion", coin(), 2, coin(), "una_pasada"),
              fourth + (pick(("train", "eval")), "margen", coin(), pick((1, 2, 3)), coin(),
                        pick(("list", "tuple", "una_pasada")))]
    return [(shape, case_seed(generator)) for shape in shapes]


def _loss_kind(loss_fn):
    if not isinstance(loss_fn, torch.nn.Module):
        return ("function", None)
    return (type(loss_fn).__name__, getattr(loss_fn, "label_smoothing", None))


EVALUATION_SPACE = Space(dimensions=(
    Dimension("model.mode", lambda e: e["model"].training, must_include=(True, False)),
    Dimension("model.profundidad", lambda e: profundidad(e["model"]), must_include=(1, 2, 3)),
    Dimension("model.stale_grad", lambda e: e["model"][-1].weight.grad is not None,
              must_include=(True, False)),
    Dimension("model.caller_no_grad", lambda e: e["model"]._llamante_sin_grad,
              must_include=(True, False)),
    Dimension("model.D", lambda e: lotes_de(e["loader"])[0][0].shape[1]),
    Dimension("model.C", lambda e: e["model"][-1].out_features),
    Dimension("loader.tipo", lambda e: type(e["loader"]).__name__,
              must_include=("list", "tuple", "UnaPasada")),
    Dimension("loader.batches", lambda e: len(lotes_de(e["loader"])), must_include=(1,)),
    Dimension("loader.batch_size", lambda e: len(lotes_de(e["loader"])[0][1])),
    Dimension("loader.smaller_last", lambda e: len(lotes_de(e["loader"])[-1][1])
              < len(lotes_de(e["loader"])[0][1]), must_include=(True, False)),
    Dimension("loader.una_muestra", lambda e: min(len(y) for _, y in lotes_de(e["loader"]))
              == 1, must_include=(True, False)),
    Dimension("loss_fn", lambda e: _loss_kind(e["loss_fn"]),
              must_include=(("CrossEntropyLoss", 0.0), ("CrossEntropyLoss", 0.3),
                            ("MultiMarginLoss", None), ("function", None))),
))


def _expected_evaluation(model, loader, loss_fn):
    alternatives = evaluacion_de_golpe(model, loader, loss_fn)
    loss, accuracy = reference.evaluate(model, loader, loss_fn)
    return dict(alternatives, perdida=loss, exactitud=accuracy)


def _scheduler_shapes(generator):
    """Four schedules, each with its own lr (never only the public 0.1): a one-step cosine
    (T = W + 1, W >= 2: a schedule one step ahead is told from one without warmup) over two
    parameter groups that already carry ``initial_lr``; W = 1 with min_lr omitted (its
    default, 0); then two with T = 30 and W drawn."""
    def lr():
        return round(0.005 * integer(generator, 2, 60), 6)

    def minimo(base):
        return round(base * 0.01 * integer(generator, 1, 30), 8)

    base, W = lr(), integer(generator, 2, 9)
    cases = [((W, W + 1, base, minimo(base), 2, True), case_seed(generator))]
    base = lr()
    cases.append(((1, 1 + integer(generator, 3, 12), base, None, 1, False), case_seed(generator)))
    # two schedules in a row with the public example's T (a table of its rates replayed
    # is then the same answer twice: copied), each with its own W and lr
    first = integer(generator, 2, 9)
    for W in (first, first + integer(generator, 1, 5)):
        base = lr()
        cases.append(((W, 30, base, minimo(base), 1, bool(integer(generator, 0, 1))),
                      case_seed(generator)))
    return cases


def _expected_lrs(optimizer, warmup_steps, total_steps, min_lr=0.0):
    expected = lrs_esperadas(optimizer, warmup_steps, total_steps, min_lr)
    scheduler = reference.warmup_cosine(optimizer, warmup_steps, total_steps, min_lr)
    lrs = [[g["lr"] for g in optimizer.param_groups]]
    for _ in range(total_steps):
        optimizer.step()
        scheduler.step()
        lrs.append([g["lr"] for g in optimizer.param_groups])
    expected["correcta"] = torch.tensor(lrs, dtype=torch.float64)
    return expected


def _groups(inputs):
    return len(inputs["optimizer"].param_groups)


SCHEDULER_SPACE = Space(dimensions=(
    Dimension("optimizer.lr", lambda e: e["optimizer"].param_groups[0]["lr"]),
    Dimension("optimizer.param_groups", _groups, must_include=(1, 2)),
    Dimension("optimizer.initial_lr", lambda e: "initial_lr" in e["optimizer"].param_groups[0]
              and "ya" or "no", must_include=("ya",)),
    Dimension("optimizer.defaults_lr", lambda e: e["optimizer"].defaults["lr"]
              == e["optimizer"].param_groups[0]["lr"], must_include=(False,),
              varies=False),
    Dimension("warmup_steps", lambda e: e["warmup_steps"], must_include=(1,)),
    Dimension("warmup_steps.varios", lambda e: e["warmup_steps"] >= 2, must_include=(True,)),
    Dimension("total_steps", lambda e: e["total_steps"]),
    Dimension("total_steps.cosine", lambda e: e["total_steps"] - e["warmup_steps"],
              must_include=(1,)),
    Dimension("min_lr", lambda e: e.get("min_lr"), must_include=(None,)),
))


def _resume_shapes(generator):
    """Three runs, each stopped and resumed on fresh objects: AdamW with warmup then cosine,
    cut inside the warmup, with batches beyond ``stop``; SGD with momentum and a LambdaLR
    ramp, cut twice (a step counter kept per call, not per run, shows on the second
    resume); then Adam or AdamW with a linear warmup or warmup and cosine, cut after the
    warmup, the optimizer and the schedule drawn."""
    def network(hidden_low):  # each case its own width and dropout: both always vary
        return (integer(generator, 3, 6), integer(generator, 2, 5),
                integer(generator, hidden_low, hidden_low + 1), integer(generator, 2, 4))

    def dropout(low):
        return round(0.1 * integer(generator, low, low + 1), 1)

    cases = []
    W = integer(generator, 3, 5)
    stop = W + integer(generator, 3, 6)
    cut = integer(generator, 1, W - 1)
    cases.append(((cut, stop), stop + integer(generator, 1, 3), *network(2), dropout(1),
                  "adamw", "secuencial", W))
    W = integer(generator, 2, 4)
    first = integer(generator, 1, 3)
    second = first + integer(generator, 1, 3)
    stop = second + integer(generator, 2, 4)
    cases.append(((first, second, stop), stop, *network(4), dropout(3), "sgd", "lambda", W))
    W = integer(generator, 2, 3)
    cut = W + integer(generator, 1, 3)
    stop = cut + integer(generator, 2, 4)
    cases.append(((cut, stop), stop + integer(generator, 0, 2), *network(6), dropout(5),
                  ("adam", "adamw")[integer(generator, 0, 1)],
                  ("lineal", "secuencial")[integer(generator, 0, 1)], W))
    return [(shape, case_seed(generator)) for shape in cases]


def _expected_resume(*inputs):
    """The reference's uninterrupted run (what the straight call must do)."""
    names = ("model", "optimizer", "scheduler", "loss_fn", "batches", "stop", "_nuevos",
             "_cortes", "_semilla")
    observation = observar_reanudacion(reference.train_steps, dict(zip(names, inputs)))
    straight = observation["seguida"]
    return {"perdidas": straight["perdidas"], "lrs": [p["lrs"] for p in straight["pasos"]],
            "parametros": straight["final"], "last_epoch": straight["last_epoch"]}


def _warmup(scheduler):
    return type(scheduler).__name__


RESUME_SPACE = Space(dimensions=(
    Dimension("model.dropout", lambda e: e["model"][2].p),
    Dimension("model.H", lambda e: e["model"][0].out_features),
    Dimension("optimizer", lambda e: type(e["optimizer"]).__name__,
              must_include=("SGD", "AdamW")),
    Dimension("scheduler", lambda e: _warmup(e["scheduler"]),
              must_include=("SequentialLR", "LambdaLR")),
    Dimension("stop", lambda e: e["stop"]),
    Dimension("stop.interruptions", lambda e: len(e["_cortes"]) - 1, must_include=(1, 2)),
    Dimension("batches.beyond_stop", lambda e: len(e["batches"]) > e["stop"],
              must_include=(True, False)),
    Dimension("batches.B", lambda e: len(e["batches"][0][1])),
), fixed={
    "loss_fn": "CrossEntropyLoss: what the loss is does not matter to resuming",
    "state": "the protocol passes it: omitted on the first call, on each resume what the "
             "previous call returned after torch.save and torch.load(weights_only=True)",
})


HIDDEN = hidden_table(
    HiddenExercise(TRAIN_ONE_EPOCH, _epoch_shapes, _expected_epoch, EPOCH_SPACE, difficulty=3),
    HiddenExercise(EVALUATE, _evaluation_shapes, _expected_evaluation, EVALUATION_SPACE,
                   difficulty=1),
    HiddenExercise(WARMUP_COSINE, _scheduler_shapes, _expected_lrs, SCHEDULER_SPACE, difficulty=2),
    HiddenExercise(TRAIN_STEPS, _resume_shapes, _expected_resume, RESUME_SPACE, difficulty=3),
)
check = checker(HIDDEN)  # what the graded cells of the instructor notebook call

EQUIVALENT_MUTANTS = {
    "warmup_cosine": {
        "L5:13 sin end_factor=": "LinearLR's end_factor defaults to 1.0, the value dropped",
    },
}
