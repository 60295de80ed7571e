"""Chapter 2 hidden tests: fresh random shapes and values per student, vs the reference.

Each exercise's draws sample its whole contract (``SPACE_*``): sizes including 1, both
dtypes, temperatures, models with and without bias, flat and nested, the modes they arrive
in, frozen parameters (the teacher's too) and stale ``.grad``, the caller's grad mode. The
first case of each exercise is a plain one, so that a mistake is named where its
fingerprint is clearest; the edge cases follow.
"""

import copy

import torch
import torch.nn.functional as F

from autograder.chapters.ch02.student import DISTILLATION_LOSS, FREEZE_ALL_BUT_HEAD, PREDICT
from autograder.hidden.reference import load_reference
from autograder.hidden.runner import HiddenExercise, case_seed, checker, hidden_table, integer
from autograder.hidden.space import Dimension, Space

reference = load_reference("ch02")  # the solution cells of solutions/02_*.py


def _coin(generator):
    return bool(integer(generator, 0, 1))


def _flags(generator, always=(), maybe=()):
    """``always`` plus each of ``maybe`` with probability ½."""
    return (*always, *(flag for flag in maybe if _coin(generator)))


# ---------------------------------------------------------------- distillation_loss
def _distillation_shapes(generator):
    """A plain case first: N and K distinct, K ≥ 3 and T = 2.5, so that each wrong
    reduction (1/K, N), the missing T² (0.16) and T instead of T² (0.4) has its own ratio,
    with a trainable teacher in train mode (what no_grad must protect). Then a batch of one
    sample in float32 with a frozen teacher in eval mode (the chapter's EMA teacher), a
    student in eval mode and stale .grad; then K == 2 and D == 1 with a partly frozen,
    nested teacher in train mode whose deepest submodule is in eval mode, and T == 1; last,
    a trainable teacher in eval mode with a submodule in train mode, a student in train
    mode with a submodule in eval mode, and T < 1."""
    N, K = integer(generator, 5, 9), integer(generator, 3, 4)
    plain = (N, integer(generator, 2, 5), K, 2.5)
    one_sample = (1, integer(generator, 1, 5), integer(generator, 2, 5),
                  (0.5, 2.0, 4.0)[integer(generator, 0, 2)], "float32", "profesor_eval",
                  "profesor_congelado", "grad_viejo", "alumno_eval")
    two_classes = (integer(generator, 2, 6), 1, 2, 1.0, "profesor_parcial", "profesor_mixto",
                   "profesor_anidado",
                   *_flags(generator, maybe=("float32", "alumno_eval", "grad_viejo")))
    eval_teacher = (integer(generator, 2, 6), integer(generator, 1, 4), integer(generator, 2, 5),
                    0.75, "profesor_eval", "profesor_mixto", "alumno_mixto",
                    *_flags(generator, maybe=("profesor_anidado", "float32", "grad_viejo")))
    return [(shape, case_seed(generator))
            for shape in (plain, one_sample, two_classes, eval_teacher)]


def _expected_distillation(student, teacher, x, temperature):
    """The reference's loss and the student's gradients from it (``autograd.grad``: no
    ``.grad`` is touched), and the usual wrong losses."""
    loss = reference.distillation_loss(student, teacher, x, temperature)
    names, parameters = zip(*student.named_parameters())
    grads = torch.autograd.grad(loss, parameters)
    with torch.no_grad():
        student_logits, teacher_logits = student(x), teacher(x)
        log_q = F.log_softmax(student_logits / temperature, dim=1)
        log_p = F.log_softmax(teacher_logits / temperature, dim=1)
        square, n = temperature**2, x.shape[0]
        wrong = {
            "kl_sin_log": square * F.kl_div(log_q.exp(), log_p.exp(), reduction="batchmean"),
            "temperatura_solo_alumno": square * F.kl_div(
                log_q, F.softmax(teacher_logits, dim=1), reduction="batchmean"),
            "kl_invertida": square * (log_q.exp() * (log_q - log_p)).sum() / n,
        }
    return {"loss": loss.detach(), "grads": dict(zip(names, grads)), **wrong}


def _modes(model):
    """"train" or "eval" when every submodule is in the model's mode, "mixto" (a train
    model with some submodule in eval) or "mixto_eval" (the other way round)."""
    if len({m.training for m in model.modules()}) == 1:
        return "train" if model.training else "eval"
    return "mixto" if model.training else "mixto_eval"


def _teacher_frozen(inputs):
    flags = [p.requires_grad for p in inputs["teacher"].parameters()]
    return "todo" if not any(flags) else ("parte" if not all(flags) else "nada")


SPACE_DISTILLATION = Space(dimensions=(
    Dimension("x.N", lambda e: e["x"].shape[0], must_include=(1,)),
    Dimension("x.D", lambda e: e["x"].shape[1], must_include=(1,)),
    Dimension("student.K", lambda e: e["student"][-1].out_features, must_include=(2,)),
    Dimension("temperature", lambda e: e["temperature"], must_include=(2.5, 1.0)),
    Dimension("x.dtype", lambda e: str(e["x"].dtype),
              must_include=("torch.float32", "torch.float64")),
    Dimension("teacher.modo", lambda e: _modes(e["teacher"]),
              must_include=("train", "eval", "mixto", "mixto_eval")),
    Dimension("teacher.nested", lambda e: isinstance(e["teacher"][0], torch.nn.Sequential),
              must_include=(True, False)),
    Dimension("student.modo", lambda e: _modes(e["student"]),
              must_include=("train", "eval", "mixto")),
    Dimension("teacher.frozen", _teacher_frozen, must_include=("todo", "parte", "nada")),
    Dimension("student.stale_grad", lambda e: e["student"][0].weight.grad is not None,
              must_include=(True, False)),
))


# ---------------------------------------------------------------- predict
def _predict_shapes(generator):
    """A plain case first (the caller records graphs: the no-graph parts bite). Then a
    batch of one sample, called from inside no_grad, on a nested model in eval mode with a
    deep submodule in train mode; then K == 1 with frozen parameters, stale .grad and x
    requiring grad, the caller recording graphs, on a nested model in train mode with a
    deep submodule in eval mode; last, a model entirely in eval mode."""
    plain = (integer(generator, 3, 9), integer(generator, 2, 6), integer(generator, 3, 8),
             integer(generator, 2, 5))
    one_sample = (1, integer(generator, 1, 6), integer(generator, 2, 8), integer(generator, 2, 5),
                  "sin_grad", "anidado", "eval", "mixto",
                  *_flags(generator, maybe=("float32", "grad_viejo", "x_grad")))
    one_class = (integer(generator, 2, 6), integer(generator, 1, 6), integer(generator, 2, 8), 1,
                 "congelado", "grad_viejo", "x_grad", "float32", "anidado", "mixto")
    all_eval = (integer(generator, 2, 6), integer(generator, 1, 6), integer(generator, 2, 8),
                integer(generator, 2, 5), "eval",
                *_flags(generator, maybe=("anidado", "sin_grad", "x_grad", "congelado")))
    return [(shape, case_seed(generator)) for shape in (plain, one_sample, one_class, all_eval)]


def _expected_prediction(model, x, call=None):
    with torch.no_grad():
        logits = model(x)
    return {"probs": reference.predict(model, x).clone(), "dim0": torch.softmax(logits, dim=0),
            "logits": logits, "log_probs": torch.log_softmax(logits, dim=1)}


SPACE_PREDICT = Space(dimensions=(
    Dimension("x.N", lambda e: e["x"].shape[0], must_include=(1,)),
    Dimension("x.D", lambda e: e["x"].shape[1]),
    Dimension("model.K", lambda e: e["model"][-1].out_features, must_include=(1,)),
    Dimension("x.dtype", lambda e: str(e["x"].dtype),
              must_include=("torch.float32", "torch.float64")),
    Dimension("x.requires_grad", lambda e: e["x"].requires_grad, must_include=(True, False)),
    Dimension("model.nested", lambda e: isinstance(e["model"][0], torch.nn.Sequential),
              must_include=(True, False)),
    Dimension("model.modo", lambda e: _modes(e["model"]),
              must_include=("train", "eval", "mixto", "mixto_eval")),
    Dimension("model.frozen", lambda e: not all(p.requires_grad for p in e["model"].parameters()),
              must_include=(True, False)),
    Dimension("model.stale_grad", lambda e: any(p.grad is not None
                                                for p in e["model"].parameters()),
              must_include=(True, False)),
    Dimension("caller.grad_enabled", lambda e: not e["llamada"]["sin_grad"],
              must_include=(True, False)),
))


# ---------------------------------------------------------------- freeze_all_but_head
def _freeze_shapes(generator):
    """Three models whose heads differ in kind and whose encoders differ in depth, so that
    both their trainable and their frozen names differ. The first, plain, one names the
    mistakes a plain model shows; the second sets traps for shortcuts (a head that arrives
    frozen and in eval mode, modules named like it, one registered after it); the third
    has a parameter on the model itself, a head that arrives partly frozen and an embed
    that arrives frozen already. The second's encoder is nested a level deeper, and holds
    a module named ``head`` itself."""
    # The kinds construir_congelar knows: a block first, where the head arrives trainable,
    # so that a head frozen by the call is named as such before a head that arrives frozen.
    heads = ["mlp", *(("lineal", "norma") if _coin(generator) else ("norma", "lineal"))]
    depths = torch.randperm(3, generator=generator).tolist()
    classes = (torch.randperm(4, generator=generator) + 1).tolist()  # K distinct, 1 to 4
    extras = [(), ("trampas", "profundo", *_flags(generator, maybe=("grad_viejo", "directo"))),
              ("directo", "cabeza_parcial", "grad_viejo", "embed_congelado",
               *_flags(generator, maybe=("profundo",)))]
    return [((integer(generator, 2, 5), integer(generator, 3, 6), depths[i] + 1,
              classes[i], heads[i], *extra), case_seed(generator))
            for i, extra in enumerate(extras)]


def _expected_names(model):
    return reference.freeze_all_but_head(copy.deepcopy(model))  # the inputs stay as built


def _head_frozen(inputs):
    flags = [p.requires_grad for p in inputs["model"].head.parameters()]
    return "todo" if not any(flags) else ("parte" if not all(flags) else "nada")


def _head_kind(inputs):
    head = inputs["model"].head
    return "lineal" if isinstance(head, torch.nn.Linear) else (
        "norma" if isinstance(head[0], torch.nn.LayerNorm) else "mlp")


SPACE_FREEZE = Space(dimensions=(
    Dimension("model.head", _head_kind, must_include=("lineal", "mlp", "norma")),
    Dimension("model.depth", lambda e: sum(isinstance(m, torch.nn.ReLU)
                                           for m in e["model"].encoder.modules())),
    Dimension("model.deep", lambda e: isinstance(e["model"].encoder[0], torch.nn.Sequential),
              must_include=(True, False)),
    Dimension("model.K", lambda e: [p for p in e["model"].head.parameters()][-1].shape[0]),
    Dimension("model.head_frozen", _head_frozen, must_include=("nada", "parte", "todo")),
    Dimension("model.frozen_outside_the_head",
              lambda e: not all(p.requires_grad for p in e["model"].embed.parameters()),
              must_include=(True, False)),
    Dimension("model.head_training", lambda e: e["model"].head.training,
              must_include=(True, False)),
    Dimension("model.lookalikes", lambda e: hasattr(e["model"], "heads_aux"),
              must_include=(True, False)),
    Dimension("model.own_parameter", lambda e: any("." not in n
                                                   for n, _ in e["model"].named_parameters()),
              must_include=(True, False)),
    Dimension("model.stale_grad", lambda e: any(p.grad is not None
                                                for p in e["model"].parameters()),
              must_include=(True, False)),
))


HIDDEN = hidden_table(
    HiddenExercise(DISTILLATION_LOSS, _distillation_shapes, _expected_distillation,
                   SPACE_DISTILLATION, difficulty=2),
    HiddenExercise(PREDICT, _predict_shapes, _expected_prediction, SPACE_PREDICT, difficulty=2),
    HiddenExercise(FREEZE_ALL_BUT_HEAD, _freeze_shapes, _expected_names, SPACE_FREEZE,
                   difficulty=2),
)
check = checker(HIDDEN)  # what the graded cells of the instructor notebook call

# Mutants of the reference that compute the same thing (see autograder/mutation.py).
EQUIVALENT_MUTANTS = {
    "distillation_loss": {
        "L7:17 sin dim=": "softmax without dim picks dim=1 for a 2-D tensor (with a "
                           "deprecation warning the grader silences): the logits are (N, K)",
        "L8:16 sin dim=": "log_softmax without dim picks dim=1 for a 2-D tensor, as above",
    },
}
