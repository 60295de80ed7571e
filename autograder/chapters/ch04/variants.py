"""Chapter 4 variants: valid alternatives and realistic mistakes, each with its label."""

import copy
import io
import math

import torch

from autograder.chapters.ch04.student import construir_planificador, lrs_esperadas
from autograder.corpus import CORRECT, Registry
from autograder.submissions import SampleStudent

registry = Registry()
variant = registry.variant

TE = "train_one_epoch"
EV = "evaluate"
WC = "warmup_cosine"
TS = "train_steps"


# ---------------------------------------------------------------- train_one_epoch
@variant(TE, CORRECT)
def train_one_epoch_by_cycles(model, loader, loss_fn, optimizer, scheduler=None, accum=1,
                              max_norm=None):
    # zero_grad at the start of each cycle, set_to_none=False, cycles sliced up front
    model.train()
    batches = list(loader)
    losses = []
    for start in range(0, len(batches), accum):
        cycle = batches[start:start + accum]
        optimizer.zero_grad(set_to_none=False)
        for x, y in cycle:
            loss = loss_fn(model(x), y)
            losses.append(loss.item())
            (loss / len(cycle)).backward()
        if max_norm is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=max_norm)
        optimizer.step()
        if scheduler:
            scheduler.step()
    return sum(losses) / len(losses)


@variant(TE, CORRECT)
def train_one_epoch_manual_none_and_clip_value(model, loader, loss_fn, optimizer,
                                               scheduler=None, accum=1, max_norm=None):
    # grads reset by hand, clipping from an imported name (not traced), a running count
    from torch.nn.utils import clip_grad_norm_

    model.train()
    n = len(loader)
    full_cycles = n // accum
    running, count = 0.0, 0
    for i, (x, y) in enumerate(loader):
        divisor = accum if i < full_cycles * accum else n - full_cycles * accum
        loss = loss_fn(model(x), y)
        (loss / divisor).backward()
        running += loss.item()
        count += 1
        if (i + 1) % accum == 0 or i == n - 1:
            if max_norm is not None:
                clip_grad_norm_(list(model.parameters()), max_norm)
            optimizer.step()
            if scheduler is not None:
                scheduler.step()
            for p in model.parameters():
                p.grad = None
    return running / count


def _train(model, loader, loss_fn, optimizer, scheduler, accum, max_norm, *, divide="cycle",
           partial_step=True, sched_first=False, zero=True, clip_after=False, train=True,
           log_tensor=False, step_each=False, zero_each=False, sched_each=False,
           clip_if=lambda max_norm: max_norm is not None):
    """The reference loop with one knob per classic mistake."""
    if train is True:
        model.train()
    elif train:
        train(model)
    n = len(loader)
    total = 0.0
    for i, (x, y) in enumerate(loader):
        if zero_each:
            optimizer.zero_grad()
        size = min(accum, n - (i - i % accum))
        d = {"cycle": size, "accum": accum, "none": 1}[divide]
        loss = loss_fn(model(x), y)
        (loss / d).backward()
        total = total + (loss if log_tensor else loss.item())
        end = (i + 1) % accum == 0 or (partial_step and i + 1 == n) or step_each
        if end:
            if clip_if(max_norm) and not clip_after:
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            if sched_first and scheduler is not None:
                scheduler.step()
            optimizer.step()
            if max_norm is not None and clip_after:
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            if scheduler is not None and not sched_first and not sched_each:
                scheduler.step()
            if zero:
                optimizer.zero_grad()
        if sched_each and scheduler is not None:
            scheduler.step()  # outside the if: once per micro-batch
    return total / n


@variant(TE, "modelo_en_eval")
def train_one_epoch_trains_only_if_in_eval(model, loader, loss_fn, optimizer, scheduler=None,
                                           accum=1, max_norm=None):
    # model.train() only "if it is not training": a child in eval under a root in train stays
    def train(m):
        if not m.training:
            m.train()
    return _train(model, loader, loss_fn, optimizer, scheduler, accum, max_norm, train=train)


@variant(TE, "modelo_en_eval")
def train_one_epoch_sets_the_flag_only(model, loader, loss_fn, optimizer, scheduler=None,
                                       accum=1, max_norm=None):
    # model.training = True: the root's flag, not its submodules'
    def train(m):
        m.training = True
    return _train(model, loader, loss_fn, optimizer, scheduler, accum, max_norm, train=train)


@variant(TE, "recorte_fuera_de_lugar")
def train_one_epoch_clips_if_max_norm_truthy(model, loader, loss_fn, optimizer, scheduler=None,
                                             accum=1, max_norm=None):
    # `if max_norm:`: max_norm=0.0 is a value, and it skips the clipping
    return _train(model, loader, loss_fn, optimizer, scheduler, accum, max_norm,
                  clip_if=bool)


@variant(TE, "parametro_descongelado")
def train_one_epoch_unfreezes(model, loader, loss_fn, optimizer, scheduler=None, accum=1,
                              max_norm=None):
    # requires_grad_(True) "to train the whole model": a frozen parameter trains too
    model.requires_grad_(True)
    return _train(model, loader, loss_fn, optimizer, scheduler, accum, max_norm)


@variant(TE, "excepcion")
def train_one_epoch_sums_then_divides(model, loader, loss_fn, optimizer, scheduler=None,
                                      accum=1, max_norm=None):
    # reduction="sum" and a division by the whole cycle's samples, the setting put back:
    # a loss that is a plain function has no reduction to read
    model.train()
    reduction, loss_fn.reduction = loss_fn.reduction, "sum"
    try:
        batches = list(loader)
        losses = []
        for start in range(0, len(batches), accum):
            cycle = batches[start:start + accum]
            optimizer.zero_grad()
            for x, y in cycle:
                loss = loss_fn(model(x), y) / len(y)
                (loss / len(cycle)).backward()
                losses.append(loss.item())
            if max_norm is not None:
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            optimizer.step()
            if scheduler is not None:
                scheduler.step()
    finally:
        loss_fn.reduction = reduction
    return sum(losses) / len(losses)


@variant(TE, "resultado_fijo")
def train_one_epoch_trains_but_returns_the_example(model, loader, loss_fn, optimizer,
                                                   scheduler=None, accum=1, max_norm=None):
    # trains as it should, then returns the mean loss the public check's example printed
    train_one_epoch_by_cycles(model, loader, loss_fn, optimizer, scheduler, accum, max_norm)
    return 1.4408


@variant(TE, "media_por_muestra")
def train_one_epoch_weighted_by_samples(model, loader, loss_fn, optimizer, scheduler=None,
                                        accum=1, max_norm=None):
    # trains as it should, but returns the mean per sample, not the mean of the batch losses
    model.train()
    n, total, count = len(loader), 0.0, 0
    for i, (x, y) in enumerate(loader):
        loss = loss_fn(model(x), y)
        (loss / min(accum, n - (i - i % accum))).backward()
        total, count = total + loss.item() * len(y), count + len(y)
        if (i + 1) % accum == 0 or i + 1 == n:
            if max_norm is not None:
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            optimizer.step()
            if scheduler is not None:
                scheduler.step()
            optimizer.zero_grad()
    return total / count


@variant(TE, "sin_dividir_por_accum")
def train_one_epoch_not_divided(model, loader, loss_fn, optimizer, scheduler=None, accum=1,
                                max_norm=None):
    return _train(model, loader, loss_fn, optimizer, scheduler, accum, max_norm, divide="none")


@variant(TE, "ciclo_parcial_dividido_por_accum")
def train_one_epoch_partial_cycle_divided_by_accum(model, loader, loss_fn, optimizer,
                                                   scheduler=None, accum=1, max_norm=None):
    return _train(model, loader, loss_fn, optimizer, scheduler, accum, max_norm, divide="accum")


@variant(TE, "ciclo_parcial_olvidado")
def train_one_epoch_drops_partial_cycle(model, loader, loss_fn, optimizer, scheduler=None,
                                        accum=1, max_norm=None):
    return _train(model, loader, loss_fn, optimizer, scheduler, accum, max_norm,
                  partial_step=False)


@variant(TE, "scheduler_antes_que_optimizer")
def train_one_epoch_scheduler_first(model, loader, loss_fn, optimizer, scheduler=None, accum=1,
                                    max_norm=None):
    return _train(model, loader, loss_fn, optimizer, scheduler, accum, max_norm,
                  sched_first=True)


@variant(TE, "scheduler_veces")
def train_one_epoch_scheduler_every_micro_batch(model, loader, loss_fn, optimizer,
                                                scheduler=None, accum=1, max_norm=None):
    return _train(model, loader, loss_fn, optimizer, scheduler, accum, max_norm,
                  sched_each=True)


@variant(TE, "scheduler_veces")
def train_one_epoch_scheduler_once_per_epoch(model, loader, loss_fn, optimizer, scheduler=None,
                                             accum=1, max_norm=None):
    # The per-epoch habit of CosineAnnealingLR examples, inside a per-step contract.
    model.train()
    n = len(loader)
    total = 0.0
    for i, (x, y) in enumerate(loader):
        loss = loss_fn(model(x), y)
        (loss / min(accum, n - (i - i % accum))).backward()
        total += loss.item()
        if (i + 1) % accum == 0 or i + 1 == n:
            if max_norm is not None:
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            optimizer.step()
            optimizer.zero_grad()
    if scheduler is not None:
        scheduler.step()
    return total / n


@variant(TE, "zero_grad_ausente")
def train_one_epoch_without_zero_grad(model, loader, loss_fn, optimizer, scheduler=None,
                                      accum=1, max_norm=None):
    return _train(model, loader, loss_fn, optimizer, scheduler, accum, max_norm, zero=False)


@variant(TE, "zero_grad_en_microlote")
def train_one_epoch_zero_grad_every_micro_batch(model, loader, loss_fn, optimizer,
                                                scheduler=None, accum=1, max_norm=None):
    return _train(model, loader, loss_fn, optimizer, scheduler, accum, max_norm, zero_each=True)


@variant(TE, "recorte_fuera_de_lugar")
def train_one_epoch_clips_after_step(model, loader, loss_fn, optimizer, scheduler=None,
                                     accum=1, max_norm=None):
    return _train(model, loader, loss_fn, optimizer, scheduler, accum, max_norm,
                  clip_after=True)


@variant(TE, "step_en_cada_microlote")
def train_one_epoch_steps_every_micro_batch(model, loader, loss_fn, optimizer, scheduler=None,
                                            accum=1, max_norm=None):
    return _train(model, loader, loss_fn, optimizer, scheduler, accum, max_norm, step_each=True)


@variant(TE, "modelo_en_eval")
def train_one_epoch_without_model_train(model, loader, loss_fn, optimizer, scheduler=None,
                                        accum=1, max_norm=None):
    return _train(model, loader, loss_fn, optimizer, scheduler, accum, max_norm, train=False)


@variant(TE, "grafo_vivo")
def train_one_epoch_logs_the_tensor(model, loader, loss_fn, optimizer, scheduler=None, accum=1,
                                    max_norm=None):
    return _train(model, loader, loss_fn, optimizer, scheduler, accum, max_norm, log_tensor=True)


@variant(TE, "perdida_registrada_dividida")
def train_one_epoch_logs_the_divided_loss(model, loader, loss_fn, optimizer, scheduler=None,
                                          accum=1, max_norm=None):
    model.train()
    n = len(loader)
    logged = []
    for i, (x, y) in enumerate(loader):
        loss = loss_fn(model(x), y) / min(accum, n - (i - i % accum))
        loss.backward()
        logged.append(loss.item())  # the divided loss
        if (i + 1) % accum == 0 or i + 1 == n:
            if max_norm is not None:
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            optimizer.step()
            if scheduler is not None:
                scheduler.step()
            optimizer.zero_grad()
    return sum(logged) / n


@variant(TE, "sin_implementar")
def train_one_epoch_stub(model, loader, loss_fn, optimizer, scheduler=None, accum=1,
                         max_norm=None):
    raise NotImplementedError()


@variant(TE, "sin_step")
def train_one_epoch_hardcoded(model, loader, loss_fn, optimizer, scheduler=None, accum=1,
                              max_norm=None):
    # The loss printed by the public check's example, returned without training.
    return 1.0986


# ---------------------------------------------------------------- evaluate
@variant(EV, CORRECT)
def evaluate_inference_mode_sums(model, loader, loss_fn):
    was_training = model.training
    model.eval()
    total_loss, correct, seen = 0.0, 0.0, 0
    with torch.inference_mode():
        for x, y in loader:
            logits = model(x)
            total_loss += loss_fn(logits, y).item() * y.numel()
            correct += (logits.softmax(dim=-1).argmax(dim=-1) == y).float().sum().item()
            seen += y.numel()
    if was_training:
        model.train()
    return total_loss / seen, correct / seen


@variant(EV, "perdida_ignorada")
def evaluate_hard_coded_cross_entropy(model, loader, loss_fn):
    # ignores loss_fn: sums F.cross_entropy(reduction="sum") whatever loss it was given
    was_training = model.training
    model.eval()
    total_loss, correct, seen = 0.0, 0, 0
    with torch.no_grad():
        for x, y in loader:
            logits = model(x)
            total_loss += torch.nn.functional.cross_entropy(logits, y, reduction="sum").item()
            correct += (logits.argmax(1) == y).sum().item()
            seen += len(y)
    model.train(was_training)
    return total_loss / seen, correct / seen


@variant(EV, CORRECT)
def evaluate_concatenated(model, loader, loss_fn):
    mode = model.training
    model.eval()
    batches = list(loader)  # one pass: a generator would be used up by a second one
    with torch.no_grad():
        logits = torch.cat([model(x) for x, _ in batches])
    model.train(mode)
    y = torch.cat([y for _, y in batches])
    return float(loss_fn(logits, y)), float((logits.argmax(1) == y).double().mean())


def _evaluate(model, loader, loss_fn, *, eval_mode=True, no_grad=True, restore=True,
              item=True, per_batch=False, divide_by="samples"):
    """The reference evaluation with one knob per classic mistake."""
    was_training = model.training
    if eval_mode:
        model.eval()
    losses, accs, sizes = [], [], []
    with torch.set_grad_enabled(not no_grad):
        for x, y in loader:
            logits = model(x)
            loss = loss_fn(logits, y)
            losses.append(loss if not item else loss.item())
            accs.append((logits.argmax(1) == y).sum().item())
            sizes.append(len(y))
    if restore:
        model.train(was_training)
    n = sum(sizes)
    if per_batch:
        return (sum(losses) / len(losses),
                sum(a / s for a, s in zip(accs, sizes)) / len(sizes))
    loss = sum(v * s for v, s in zip(losses, sizes)) / n
    acc = {"samples": sum(accs) / n, "none": float(sum(accs)),
           "batches": sum(accs) / len(sizes)}[divide_by]
    return loss, acc


@variant(EV, "modelo_en_train")
def evaluate_without_eval(model, loader, loss_fn):
    return _evaluate(model, loader, loss_fn, eval_mode=False)


@variant(EV, "grafo_al_evaluar")
def evaluate_without_no_grad(model, loader, loss_fn):
    return _evaluate(model, loader, loss_fn, no_grad=False)


@variant(EV, "modelo_en_eval")
def evaluate_leaves_eval_mode(model, loader, loss_fn):
    return _evaluate(model, loader, loss_fn, restore=False)


@variant(EV, "modo_forzado_a_train")
def evaluate_always_back_to_train(model, loader, loss_fn):
    model.eval()
    total, correct, seen = 0.0, 0, 0
    with torch.no_grad():
        for x, y in loader:
            logits = model(x)
            total += loss_fn(logits, y).item() * len(y)
            correct += (logits.argmax(1) == y).sum().item()
            seen += len(y)
    model.train()  # "after evaluating, train()": but the model may have come in eval mode
    return total / seen, correct / seen


@variant(EV, "doble_softmax")
def evaluate_softmax_before_the_loss(model, loader, loss_fn):
    was_training = model.training
    model.eval()
    total, correct, seen = 0.0, 0, 0
    with torch.no_grad():
        for x, y in loader:
            probs = model(x).softmax(dim=1)  # probabilities into CrossEntropyLoss
            total += loss_fn(probs, y).item() * len(y)
            correct += (probs.argmax(1) == y).sum().item()
            seen += len(y)
    model.train(was_training)
    return total / seen, correct / seen


@variant(EV, "media_de_lotes")
def evaluate_mean_of_batch_means(model, loader, loss_fn):
    return _evaluate(model, loader, loss_fn, per_batch=True)


@variant(EV, "aciertos_sin_dividir")
def evaluate_counts_correct(model, loader, loss_fn):
    return _evaluate(model, loader, loss_fn, divide_by="none")


@variant(EV, "dividido_por_lotes")
def evaluate_divides_by_batches(model, loader, loss_fn):
    return _evaluate(model, loader, loss_fn, divide_by="batches")


@variant(EV, "registro_tensor")
def evaluate_returns_tensors(model, loader, loss_fn):
    mode = model.training
    model.eval()
    batches = list(loader)
    with torch.no_grad():
        logits = torch.cat([model(x) for x, _ in batches])
    model.train(mode)
    y = torch.cat([y for _, y in batches])
    return loss_fn(logits, y), (logits.argmax(1) == y).double().mean()


@variant(EV, "sin_implementar")
def evaluate_stub(model, loader, loss_fn):
    raise NotImplementedError()


@variant(EV, "resultado_constante")
def evaluate_hardcoded(model, loader, loss_fn):
    return 1.2345, 0.5


# ---------------------------------------------------------------- warmup_cosine
@variant(WC, CORRECT)
def warmup_cosine_lambda(optimizer, warmup_steps, total_steps, min_lr=0.0):
    base = optimizer.param_groups[0]["lr"]

    def factor(step):
        if step < warmup_steps:
            return (step + 1) / (warmup_steps + 1)
        progress = (step - warmup_steps) / (total_steps - warmup_steps)
        cosine = 0.5 * (1.0 + math.cos(math.pi * progress))
        return (min_lr + (base - min_lr) * cosine) / base

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


@variant(WC, CORRECT)
def warmup_cosine_custom_class(optimizer, warmup_steps, total_steps, min_lr=0.0):
    class WarmupCosine(torch.optim.lr_scheduler.LRScheduler):
        def get_lr(self):
            t = self.last_epoch
            if t < warmup_steps:
                return [b * (t + 1) / (warmup_steps + 1) for b in self.base_lrs]
            angle = math.pi * (t - warmup_steps) / (total_steps - warmup_steps)
            return [min_lr + (b - min_lr) * (1 + math.cos(angle)) / 2 for b in self.base_lrs]

    return WarmupCosine(optimizer)


def _sequential(optimizer, warmup_steps, total_steps, min_lr, start, t_max, eta_min):
    sched = torch.optim.lr_scheduler
    warmup = sched.LinearLR(optimizer, start_factor=start, total_iters=warmup_steps)
    cosine = sched.CosineAnnealingLR(optimizer, T_max=t_max, eta_min=eta_min)
    return sched.SequentialLR(optimizer, [warmup, cosine], milestones=[warmup_steps])


@variant(WC, "calentamiento_incorrecto")
def warmup_cosine_start_factor_one_over_w(optimizer, warmup_steps, total_steps, min_lr=0.0):
    return _sequential(optimizer, warmup_steps, total_steps, min_lr, 1 / warmup_steps,
                       total_steps - warmup_steps, min_lr)


@variant(WC, "coseno_tmax_total")
def warmup_cosine_t_max_total(optimizer, warmup_steps, total_steps, min_lr=0.0):
    return _sequential(optimizer, warmup_steps, total_steps, min_lr, 1 / (warmup_steps + 1),
                       total_steps, min_lr)


@variant(WC, "sin_min_lr")
def warmup_cosine_without_eta_min(optimizer, warmup_steps, total_steps, min_lr=0.0):
    return _sequential(optimizer, warmup_steps, total_steps, min_lr, 1 / (warmup_steps + 1),
                       total_steps - warmup_steps, 0.0)


@variant(WC, "sin_calentamiento")
def warmup_cosine_cosine_only(optimizer, warmup_steps, total_steps, min_lr=0.0):
    return torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=total_steps,
                                                      eta_min=min_lr)


@variant(WC, "no_es_planificador")
def warmup_cosine_returns_the_lrs(optimizer, warmup_steps, total_steps, min_lr=0.0):
    return lrs_esperadas(optimizer, warmup_steps, total_steps, min_lr)["correcta"].tolist()


@variant(WC, "sin_implementar")
def warmup_cosine_stub(optimizer, warmup_steps, total_steps, min_lr=0.0):
    raise NotImplementedError()


@variant(WC, "resultado_fijo")
def warmup_cosine_hardcoded(optimizer, warmup_steps, total_steps, min_lr=0.0):
    # The 31 rates of the public example, replayed whatever the arguments.
    example = construir_planificador(torch.Generator().manual_seed(6), (5, 30, 0.1, 0.001))
    table = lrs_esperadas(*example.values())["correcta"][:, 0].tolist()
    base = optimizer.param_groups[0]["lr"]
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda t: table[min(t, 30)] / base)


# ---------------------------------------------------------------- classes the probes found
@variant(TE, "excepcion")
def train_one_epoch_slices_the_loader(model, loader, loss_fn, optimizer, scheduler=None,
                                      accum=1, max_norm=None):
    # cycles as slices loader[i:i + accum]: a DataLoader cannot be sliced
    model.train()
    losses = []
    for start in range(0, len(loader), accum):
        cycle = loader[start:start + accum]
        optimizer.zero_grad()
        for x, y in cycle:
            loss = loss_fn(model(x), y)
            (loss / len(cycle)).backward()
            losses.append(loss.item())
        if max_norm is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
    return sum(losses) / len(losses)


@variant(TE, "efecto_secundario")
def train_one_epoch_leaves_sum_reduction(model, loader, loss_fn, optimizer, scheduler=None,
                                         accum=1, max_norm=None):
    # switches loss_fn to reduction="sum" (when it has one) and divides by hand, never
    # switching it back
    summed = hasattr(loss_fn, "reduction")
    if summed:
        loss_fn.reduction = "sum"
    model.train()
    n, total = len(loader), 0.0
    for i, (x, y) in enumerate(loader):
        loss = loss_fn(model(x), y) / (len(y) if summed else 1)
        (loss / min(accum, n - (i - i % accum))).backward()
        total += loss.item()
        if (i + 1) % accum == 0 or i + 1 == n:
            if max_norm is not None:
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            optimizer.step()
            if scheduler is not None:
                scheduler.step()
            optimizer.zero_grad()
    return total / n


@variant(EV, "efecto_secundario")
def evaluate_leaves_autograd_off(model, loader, loss_fn):
    # turns autograd off for good instead of inside a with block
    torch.set_grad_enabled(False)
    return _evaluate(model, loader, loss_fn)


@variant(EV, "efecto_secundario")
def evaluate_zeroes_the_gradients(model, loader, loss_fn):
    model.zero_grad()  # "to be safe": the caller's gradients are gone
    return _evaluate(model, loader, loss_fn)


@variant(EV, CORRECT)
def evaluate_per_module_modes_in_float64(model, loader, loss_fn):
    # every submodule's mode saved and put back one by one; sums as float64 tensors
    modes = [(m, m.training) for m in model.modules()]
    model.eval()
    total = torch.zeros((), dtype=torch.float64)
    hits, seen = 0, 0
    try:
        with torch.no_grad():
            for x, y in loader:
                logits = model(x)
                total += loss_fn(logits, y).double() * y.shape[0]
                hits += int((logits.argmax(-1) == y).sum())
                seen += y.shape[0]
    finally:
        for m, mode in modes:
            m.train(mode)
    return float(total / seen), hits / seen


@variant(EV, "excepcion")
def evaluate_iterates_the_loader_twice(model, loader, loss_fn):
    # one pass for the loss, another for the accuracy: a generator is used up by the first
    was_training = model.training
    model.eval()
    with torch.no_grad():
        loss_sum, seen = 0.0, 0
        for x, y in loader:
            loss_sum += loss_fn(model(x), y).item() * len(y)
            seen += len(y)
        correct, counted = 0, 0
        for x, y in loader:
            correct += (model(x).argmax(1) == y).sum().item()
            counted += len(y)
    model.train(was_training)
    return loss_sum / seen, correct / counted


@variant(EV, "excepcion")
def evaluate_squeezes_the_labels(model, loader, loss_fn):
    # y.squeeze() "in case the labels come as (B, 1)": a one-sample batch loses its dimension
    was_training = model.training
    model.eval()
    loss_sum, correct, seen = 0.0, 0, 0
    with torch.no_grad():
        for x, y in loader:
            y = y.squeeze()
            logits = model(x)
            loss_sum += loss_fn(logits, y).item() * len(y)
            correct += (logits.argmax(1) == y).sum().item()
            seen += len(y)
    model.train(was_training)
    return loss_sum / seen, correct / seen


@variant(EV, "excepcion")
def evaluate_switches_to_sum_reduction(model, loader, loss_fn):
    # reduction="sum" for the batch, put back after: a loss that is a function has none
    was_training = model.training
    model.eval()
    reduction, loss_fn.reduction = loss_fn.reduction, "sum"
    loss_sum, correct, seen = 0.0, 0, 0
    try:
        with torch.no_grad():
            for x, y in loader:
                logits = model(x)
                loss_sum += loss_fn(logits, y).item()
                correct += (logits.argmax(1) == y).sum().item()
                seen += len(y)
    finally:
        loss_fn.reduction = reduction
    model.train(was_training)
    return loss_sum / seen, correct / seen


@variant(EV, "efecto_secundario")
def evaluate_leaves_sum_reduction(model, loader, loss_fn):
    # reduction="sum" for the batch, never put back (a function gets the attribute added)
    was_training = model.training
    model.eval()
    loss_fn.reduction = "sum"
    loss_sum, correct, seen = 0.0, 0, 0
    with torch.no_grad():
        for x, y in loader:
            logits = model(x)
            loss = loss_fn(logits, y)
            loss_sum += loss.item() * (1 if isinstance(loss_fn, torch.nn.Module) else len(y))
            correct += (logits.argmax(1) == y).sum().item()
            seen += len(y)
    model.train(was_training)
    return loss_sum / seen, correct / seen


@variant(EV, "modelo_en_train")
def evaluate_evals_the_top_level_layers_only(model, loader, loss_fn):
    # Dropout and BatchNorm found among the model's children: nested ones stay in train
    layers = [m for m in model.children()
              if isinstance(m, (torch.nn.Dropout, torch.nn.BatchNorm1d))]
    for m in layers:
        m.eval()
    loss_sum, correct, seen = 0.0, 0, 0
    with torch.no_grad():
        for x, y in loader:
            logits = model(x)
            loss_sum += loss_fn(logits, y).item() * len(y)
            correct += (logits.argmax(1) == y).sum().item()
            seen += len(y)
    for m in layers:
        m.train(model.training)
    return loss_sum / seen, correct / seen


@variant(EV, "efecto_secundario")
def evaluate_forces_grad_on(model, loader, loss_fn):
    # "training needs autograd": switches it on at the end, even for a caller in no_grad
    result = _evaluate(model, loader, loss_fn)
    torch.set_grad_enabled(True)
    return result


@variant(EV, "modelo_en_eval")
def evaluate_restores_the_flag_only(model, loader, loss_fn):
    # model.training = ... sets the root's flag: the submodules stay in eval mode
    was_training = model.training
    model.eval()
    loss_sum, correct, seen = 0.0, 0, 0
    with torch.no_grad():
        for x, y in loader:
            logits = model(x)
            loss_sum += loss_fn(logits, y).item() * len(y)
            correct += (logits.argmax(1) == y).sum().item()
            seen += len(y)
    model.training = was_training
    return loss_sum / seen, correct / seen


def _lambda_scheduler(optimizer, warmup_steps, total_steps, min_lr, lr):
    def factor(t):
        if t < warmup_steps:
            return (t + 1) / (warmup_steps + 1)
        c = (1 + math.cos(math.pi * (t - warmup_steps) / (total_steps - warmup_steps))) / 2
        return (min_lr + (lr - min_lr) * c) / lr

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


@variant(WC, "lr_ajena")
def warmup_cosine_example_lr(optimizer, warmup_steps, total_steps, min_lr=0.0):
    # the public example's lr, 0.1, written in
    return _lambda_scheduler(optimizer, warmup_steps, total_steps, min_lr, 0.1)


@variant(WC, "lr_ajena")
def warmup_cosine_defaults_lr(optimizer, warmup_steps, total_steps, min_lr=0.0):
    # the optimizer's default lr, not its groups' current one
    return _lambda_scheduler(optimizer, warmup_steps, total_steps, min_lr,
                             optimizer.defaults["lr"])


@variant(WC, "min_lr_por_defecto")
def warmup_cosine_default_min_lr_not_zero(optimizer, warmup_steps, total_steps, min_lr=1e-4):
    # "a small floor by default": omitted, min_lr is not 0
    return _sequential(optimizer, warmup_steps, total_steps, min_lr, 1 / (warmup_steps + 1),
                       total_steps - warmup_steps, min_lr)


@variant(WC, "sin_min_lr")
def warmup_cosine_min_lr_default_ignored(optimizer, warmup_steps, total_steps, min_lr=0.0):
    return _lambda_scheduler(optimizer, warmup_steps, total_steps, 0.0, 1.0)


class _FirstGroupOnly(torch.optim.lr_scheduler.LRScheduler):
    """The curve written for the first group; the others keep their base rate."""

    def __init__(self, optimizer, warmup_steps, total_steps, min_lr):
        self.args = (warmup_steps, total_steps, min_lr)
        super().__init__(optimizer)

    def get_lr(self):
        W, T, min_lr = self.args
        t, lr = self.last_epoch, self.base_lrs[0]
        if t < W:
            rate = lr * (t + 1) / (W + 1)
        else:
            rate = min_lr + (lr - min_lr) * (1 + math.cos(math.pi * (t - W) / (T - W))) / 2
        return [rate] + list(self.base_lrs[1:])


@variant(WC, "grupos_sin_planificar")
def warmup_cosine_first_group_only(optimizer, warmup_steps, total_steps, min_lr=0.0):
    return _FirstGroupOnly(optimizer, warmup_steps, total_steps, min_lr)


class _HandWritten:
    """A scheduler written by hand: the right rates in every group, but not a scheduler of
    torch.optim.lr_scheduler (no state_dict, nothing a checkpoint can save)."""

    def __init__(self, optimizer, warmup_steps, total_steps, min_lr):
        self.optimizer, self.t = optimizer, 0
        self.base = [g["lr"] for g in optimizer.param_groups]
        self.args = (warmup_steps, total_steps, min_lr)
        self._set()

    def _set(self):
        W, T, min_lr = self.args
        for group, lr in zip(self.optimizer.param_groups, self.base):
            if self.t < W:
                group["lr"] = lr * (self.t + 1) / (W + 1)
            else:
                c = (1 + math.cos(math.pi * (self.t - W) / (T - W))) / 2
                group["lr"] = min_lr + (lr - min_lr) * c

    def step(self):
        self.t += 1
        self._set()

    def get_last_lr(self):
        return [g["lr"] for g in self.optimizer.param_groups]


@variant(WC, "no_es_planificador")
def warmup_cosine_hand_written_class(optimizer, warmup_steps, total_steps, min_lr=0.0):
    return _HandWritten(optimizer, warmup_steps, total_steps, min_lr)


@variant(WC, "efecto_secundario")
def warmup_cosine_stores_min_lr_in_the_groups(optimizer, warmup_steps, total_steps,
                                              min_lr=0.0):
    # each group's min_lr stored "for later": a setting the optimizer never had
    for group in optimizer.param_groups:
        group["min_lr"] = min_lr
    return warmup_cosine_lambda(optimizer, warmup_steps, total_steps, min_lr)


@variant(WC, "planificador_adelantado")
def warmup_cosine_steps_when_created(optimizer, warmup_steps, total_steps, min_lr=0.0):
    # "to start the warmup": every rate is one step ahead
    scheduler = _lambda_scheduler(optimizer, warmup_steps, total_steps, min_lr,
                                  optimizer.param_groups[0]["lr"])
    scheduler.step()
    return scheduler


@variant(WC, "min_lr_como_factor")
def warmup_cosine_min_lr_as_a_factor(optimizer, warmup_steps, total_steps, min_lr=0.0):
    return _lambda_scheduler(optimizer, warmup_steps, total_steps, min_lr, 1.0)


@variant(TE, "media_de_ciclos")
def train_one_epoch_mean_of_cycle_means(model, loader, loss_fn, optimizer, scheduler=None,
                                        accum=1, max_norm=None):
    model.train()
    means, cycle = [], []
    batches = list(loader)
    for i, (x, y) in enumerate(batches):
        size = min(accum, len(batches) - (i - i % accum))
        loss = loss_fn(model(x), y)
        (loss / size).backward()
        cycle.append(loss.item())
        if len(cycle) == size:
            if max_norm is not None:
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            optimizer.step()
            if scheduler is not None:
                scheduler.step()
            optimizer.zero_grad()
            means.append(sum(cycle) / len(cycle))
            cycle = []
    return sum(means) / len(means)


# ---------------------------------------------------------------- train_steps
@variant(TS, CORRECT)
def train_steps_scheduler_first_counter_from_scheduler(model, optimizer, scheduler, loss_fn,
                                                       batches, stop, state=None):
    # the scheduler loaded before the optimizer (the order does not matter), the step read
    # from scheduler.last_epoch, tensors cloned one by one, zero_grad before each step
    if state is not None:
        model.load_state_dict(state["weights"])
        scheduler.load_state_dict(state["schedule"])
        optimizer.load_state_dict(state["optim"])
        torch.random.set_rng_state(state["generator"])
    model.train()
    while scheduler.last_epoch < stop:
        x, y = batches[scheduler.last_epoch]
        optimizer.zero_grad(set_to_none=False)
        loss_fn(model(x), y).backward()
        optimizer.step()
        scheduler.step()
    return {"weights": {k: v.detach().clone() for k, v in model.state_dict().items()},
            "optim": copy.deepcopy(optimizer.state_dict()),
            "schedule": scheduler.state_dict(),
            "generator": torch.random.get_rng_state()}


@variant(TS, CORRECT)
def train_steps_serialized_snapshot(model, optimizer, scheduler, loss_fn, batches, stop,
                                    state=None):
    # the snapshot made with torch.save / torch.load into memory; batches sliced
    start = 0 if state is None else state["step"]
    if state is not None:
        for obj, key in ((model, "model"), (optimizer, "optimizer"), (scheduler, "scheduler")):
            obj.load_state_dict(state[key])
        torch.set_rng_state(state["rng"])
    for x, y in batches[start:stop]:
        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
    buffer = io.BytesIO()
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(), "rng": torch.get_rng_state(),
                "step": stop}, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)


def _steps(model, optimizer, scheduler, loss_fn, batches, stop, state, *, keep=("model",
           "optimizer", "scheduler", "rng"), copies=True, rng_early=False, reseed=False,
           counter="absolute", epoch_hack=False, snapshot_early=False, objects=False,
           ignore_stop=False, returns=True):
    """The reference with one knob per classic mistake."""
    start = 0
    if state is not None:
        if "model" in state:
            model.load_state_dict(state["model"])
        if "optimizer" in state:
            optimizer.load_state_dict(state["optimizer"])
        if "scheduler" in state:
            scheduler.load_state_dict(state["scheduler"])
        if epoch_hack:
            scheduler.last_epoch = state["step"]
        if "rng" in state:
            torch.set_rng_state(state["rng"])
        if reseed:
            torch.manual_seed(state["step"])
        start = state["step"] if counter != "none" else 0
    snapshot = torch.get_rng_state()
    early = {"model": copy.deepcopy(model.state_dict()),
             "optimizer": copy.deepcopy(optimizer.state_dict()),
             "scheduler": copy.deepcopy(scheduler.state_dict())}
    last = len(batches) if ignore_stop else stop
    for t in range(start, last):
        x, y = batches[t]
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
    if not returns:
        return None
    if objects:
        new = {"model": model, "optimizer": optimizer, "scheduler": scheduler}
    elif snapshot_early:
        new = early
    elif copies:
        new = {"model": copy.deepcopy(model.state_dict()),
               "optimizer": copy.deepcopy(optimizer.state_dict()),
               "scheduler": copy.deepcopy(scheduler.state_dict())}
    else:
        new = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
               "scheduler": scheduler.state_dict()}
    new["rng"] = snapshot if rng_early else torch.get_rng_state()
    new = {k: v for k, v in new.items() if k in keep}
    new["step"] = stop - start if counter == "relative" else stop
    return new


@variant(TS, "modelo_no_restaurado")
def train_steps_without_model(model, optimizer, scheduler, loss_fn, batches, stop, state=None):
    # the optimizer, scheduler, generator and step saved: the weights forgotten
    return _steps(model, optimizer, scheduler, loss_fn, batches, stop, state,
                  keep=("optimizer", "scheduler", "rng"))


@variant(TS, "scheduler_antes_que_optimizer")
def train_steps_scheduler_before_the_step(model, optimizer, scheduler, loss_fn, batches, stop,
                                          state=None):
    # scheduler.step() before optimizer.step(): every step uses the next step's rate
    start = 0
    if state is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        torch.set_rng_state(state["rng"])
        start = state["step"]
    for t in range(start, stop):
        x, y = batches[t]
        loss = loss_fn(model(x), y)
        loss.backward()
        scheduler.step()
        optimizer.step()
        optimizer.zero_grad()
    return {"model": copy.deepcopy(model.state_dict()),
            "optimizer": copy.deepcopy(optimizer.state_dict()),
            "scheduler": copy.deepcopy(scheduler.state_dict()),
            "rng": torch.get_rng_state(), "step": stop}


@variant(TS, "optimizador_no_restaurado")
def train_steps_without_optimizer(model, optimizer, scheduler, loss_fn, batches, stop,
                                  state=None):
    return _steps(model, optimizer, scheduler, loss_fn, batches, stop, state,
                  keep=("model", "scheduler", "rng"))


@variant(TS, "planificador_no_restaurado")
def train_steps_without_scheduler(model, optimizer, scheduler, loss_fn, batches, stop,
                                  state=None):
    return _steps(model, optimizer, scheduler, loss_fn, batches, stop, state,
                  keep=("model", "optimizer", "rng"))


@variant(TS, "rng_no_restaurado")
def train_steps_without_rng(model, optimizer, scheduler, loss_fn, batches, stop, state=None):
    return _steps(model, optimizer, scheduler, loss_fn, batches, stop, state,
                  keep=("model", "optimizer", "scheduler"))


@variant(TS, "rng_no_restaurado")
def train_steps_reseeds_instead(model, optimizer, scheduler, loss_fn, batches, stop,
                                state=None):
    # a seed is not the generator's state
    return _steps(model, optimizer, scheduler, loss_fn, batches, stop, state,
                  keep=("model", "optimizer", "scheduler"), reseed=True)


@variant(TS, "rng_al_empezar")
def train_steps_rng_read_before_training(model, optimizer, scheduler, loss_fn, batches, stop,
                                         state=None):
    return _steps(model, optimizer, scheduler, loss_fn, batches, stop, state, rng_early=True)


@variant(TS, "solo_el_modelo")
def train_steps_weights_only(model, optimizer, scheduler, loss_fn, batches, stop, state=None):
    return _steps(model, optimizer, scheduler, loss_fn, batches, stop, state, keep=("model",))


@variant(TS, "estado_con_referencias")
def train_steps_live_state_dicts(model, optimizer, scheduler, loss_fn, batches, stop,
                                 state=None):
    return _steps(model, optimizer, scheduler, loss_fn, batches, stop, state, copies=False)


@variant(TS, "estado_no_serializable")
def train_steps_saves_the_objects(model, optimizer, scheduler, loss_fn, batches, stop,
                                  state=None):
    return _steps(model, optimizer, scheduler, loss_fn, batches, stop, state, objects=True)


@variant(TS, "estado_al_empezar")
def train_steps_snapshot_before_training(model, optimizer, scheduler, loss_fn, batches, stop,
                                         state=None):
    return _steps(model, optimizer, scheduler, loss_fn, batches, stop, state,
                  snapshot_early=True)


@variant(TS, "reanuda_en_otro_lote")
def train_steps_restarts_the_batches(model, optimizer, scheduler, loss_fn, batches, stop,
                                     state=None):
    return _steps(model, optimizer, scheduler, loss_fn, batches, stop, state, counter="none")


@variant(TS, "reanuda_en_otro_lote")
def train_steps_counts_steps_of_the_call(model, optimizer, scheduler, loss_fn, batches, stop,
                                         state=None):
    # saves how many steps this call took, not the step reached: wrong after two resumes
    return _steps(model, optimizer, scheduler, loss_fn, batches, stop, state,
                  counter="relative")


@variant(TS, "planificador_incompleto")
def train_steps_sets_last_epoch(model, optimizer, scheduler, loss_fn, batches, stop,
                                state=None):
    return _steps(model, optimizer, scheduler, loss_fn, batches, stop, state,
                  keep=("model", "optimizer", "rng"), epoch_hack=True)


@variant(TS, "pasos_hasta_stop")
def train_steps_every_batch(model, optimizer, scheduler, loss_fn, batches, stop, state=None):
    return _steps(model, optimizer, scheduler, loss_fn, batches, stop, state, ignore_stop=True)


@variant(TS, "estado_no_devuelto")
def train_steps_forgets_return(model, optimizer, scheduler, loss_fn, batches, stop,
                               state=None):
    return _steps(model, optimizer, scheduler, loss_fn, batches, stop, state, returns=False)


@variant(TS, "sin_implementar")
def train_steps_stub(model, optimizer, scheduler, loss_fn, batches, stop, state=None):
    raise NotImplementedError()


@variant(TS, "resultado_constante")
def train_steps_state_typed_in(model, optimizer, scheduler, loss_fn, batches, stop, state=None):
    # trains, then returns a state typed in from the public example (its last step)
    _steps(model, optimizer, scheduler, loss_fn, batches, stop, state)
    return {"step": 8}


@variant(TS, "sin_step")
def train_steps_hardcoded(model, optimizer, scheduler, loss_fn, batches, stop, state=None):
    # no training: a state typed in
    return {"step": stop}


CARLA_TRAIN_ONE_EPOCH = '''\
def train_one_epoch(model, loader, loss_fn, optimizer, scheduler=None, accum=1, max_norm=None):
    """One epoch with gradient accumulation (she forgets the last, partial cycle)."""
    model.train()
    total = 0.0
    for i, (x, y) in enumerate(loader):
        loss = loss_fn(model(x), y)
        (loss / accum).backward()
        total += loss.item()
        if (i + 1) % accum == 0:
            if max_norm is not None:
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            optimizer.step()
            if scheduler is not None:
                scheduler.step()
            optimizer.zero_grad()
    return total / len(loader)
'''

DAVID_EVALUATE = '''\
def evaluate(model, loader, loss_fn):
    """Evaluation without torch.no_grad(): it builds a graph on every batch."""
    was_training = model.training
    model.eval()
    total, correct, seen = 0.0, 0, 0
    for x, y in loader:
        logits = model(x)
        total += loss_fn(logits, y).item() * len(y)
        correct += (logits.argmax(1) == y).sum().item()
        seen += len(y)
    model.train(was_training)
    return total / seen, correct / seen
'''

MARTA_TRAIN_STEPS = '''\
def train_steps(model, optimizer, scheduler, loss_fn, batches, stop, state=None):
    """Resumes model, optimizer and scheduler, but forgets the global generator (Dropout)."""
    import copy

    start = 0
    if state is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        start = state["step"]
    for t in range(start, stop):
        x, y = batches[t]
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
    return {"model": copy.deepcopy(model.state_dict()),
            "optimizer": copy.deepcopy(optimizer.state_dict()),
            "scheduler": copy.deepcopy(scheduler.state_dict()), "step": stop}
'''

SAMPLE_STUDENTS = [
    SampleStudent("carla", "acumulación sin el último ciclo parcial (crédito parcial)",
                  {TE: CARLA_TRAIN_ONE_EPOCH}, partial={TE + "_test": 3.25}),
    SampleStudent("david", "evalúa sin torch.no_grad() (pierde el requisito)",
                  {EV: DAVID_EVALUATE}, partial={EV + "_test": 2.5}),
    SampleStudent("marta", "reanuda sin el generador aleatorio (crédito parcial)",
                  {TS: MARTA_TRAIN_STEPS}, partial={TS + "_test": 2.5}),
]
