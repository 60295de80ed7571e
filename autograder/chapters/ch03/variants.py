"""Chapter 3 variants: valid alternatives and realistic mistakes, each with its label."""

import functools
import math
from fractions import Fraction

import torch

from autograder.chapters.ch03.student import (
    ciclos_con_lotes_unidos,
    construir_ciclos,
    construir_recorte,
    oraculo_de_recorte,
)
from autograder.corpus import CORRECT, Registry
from autograder.submissions import SampleStudent

registry = Registry()
variant = registry.variant

MB = "micro_batch_weights"
PC = "train_with_accumulation"
CG = "clip_by_global_norm"


# ---------------------------------------------------------------- micro_batch_weights
@variant(MB, CORRECT)
def micro_batch_weights_with_fractions(sizes, reduction):
    total = sum(sizes)
    return [float(Fraction(n if reduction == "mean" else 1, total)) for n in sizes]


@variant(MB, CORRECT)
def micro_batch_weights_with_a_tensor(sizes, reduction):
    # Valid too: the share of each micro-batch in the samples, divided by its size for a sum.
    counts = torch.tensor(list(sizes), dtype=torch.float64)
    shares = counts / counts.sum()
    return (shares if reduction == "mean" else shares / counts).tolist()


@variant(MB, CORRECT)
def micro_batch_weights_loop(sizes, reduction):
    weights = []
    for n in sizes:
        mean_of_sum = 1.0 / sum(sizes)  # the weight of one sample in the full batch's mean
        weights.append(mean_of_sum * n if reduction == "mean" else mean_of_sum)
    return weights


@variant(MB, "pesos_sin_tamano")
def micro_batch_weights_one_over_k(sizes, reduction):
    # the equal-size rule, dividing by the number of micro-batches
    k = len(sizes)
    return [1 / k if reduction == "mean" else 1 / sum(sizes) for _ in sizes]


@variant(MB, "pesos_sin_tamano")
def micro_batch_weights_one_over_k_always(sizes, reduction):
    return [1 / len(sizes)] * len(sizes)


@variant(MB, "tamano_contado_dos_veces")
def micro_batch_weights_share_for_both(sizes, reduction):
    # n_i / N whatever the reduction: a summed loss is weighted by its size once more
    return [n / sum(sizes) for n in sizes]


@variant(MB, "pesos_a_escala")
def micro_batch_weights_sum_left_alone(sizes, reduction):
    # summed losses added as they are: the gradient of the full batch's sum, N times too big
    return [n / sum(sizes) for n in sizes] if reduction == "mean" else [1.0] * len(sizes)


@variant(MB, "pesos_a_escala")
def micro_batch_weights_sum_over_k(sizes, reduction):
    if reduction == "mean":
        return [n / sum(sizes) for n in sizes]
    return [1 / len(sizes)] * len(sizes)


@variant(MB, "pesos_a_escala")
def micro_batch_weights_mean_times_size(sizes, reduction):
    # undoing each mean (times n_i) but never dividing by N
    return [float(n) for n in sizes] if reduction == "mean" else [1 / sum(sizes)] * len(sizes)


@variant(MB, "pesos_sin_tamano")
def micro_batch_weights_sum_made_a_mean_then_averaged(sizes, reduction):
    # each sum turned into its micro-batch's mean, then the means averaged
    k = len(sizes)
    if reduction == "mean":
        return [n / sum(sizes) for n in sizes]
    return [1 / (n * k) for n in sizes]


@variant(MB, "pesos_sin_tamano")
def micro_batch_weights_reductions_swapped(sizes, reduction):
    total = sum(sizes)
    return [1 / total if reduction == "mean" else n / total for n in sizes]


@variant(MB, "efecto_secundario")
def micro_batch_weights_in_the_callers_list(sizes, reduction):
    if isinstance(sizes, tuple):  # a tuple cannot be written to: the caller's list can
        sizes = list(sizes)
    total = sum(sizes)
    for i, n in enumerate(sizes):
        sizes[i] = n / total if reduction == "mean" else 1 / total
    return sizes


@variant(MB, "excepcion")
def micro_batch_weights_edits_a_copy(sizes, reduction):
    # list.copy(): a tuple has no copy method
    weights, total = sizes.copy(), sum(sizes)
    for i, n in enumerate(sizes):
        weights[i] = n / total if reduction == "mean" else 1 / total
    return weights


@variant(MB, "tipo")
def micro_batch_weights_as_a_tensor(sizes, reduction):
    counts = torch.tensor(list(sizes), dtype=torch.float64)
    return counts / counts.sum() if reduction == "mean" else torch.ones_like(counts) / counts.sum()


@variant(MB, "tipo")
def micro_batch_weights_as_a_tuple(sizes, reduction):
    # a tuple "so that nobody changes it": the contract says a list
    total = sum(sizes)
    return tuple(n / total if reduction == "mean" else 1 / total for n in sizes)


@variant(MB, "sin_implementar")
def micro_batch_weights_stub(sizes, reduction):
    raise NotImplementedError()


@variant(MB, "resultado_fijo")
def micro_batch_weights_hardcoded(sizes, reduction):
    return [0.4, 0.4, 0.2]


# ---------------------------------------------------------------- train_with_accumulation
def _with_grad(function):
    """The variant run with autograd on, whatever the caller's mode: what the contract
    asks; each variant below is wrong (or right) for another reason."""
    @functools.wraps(function)
    def wrapped(*args):
        with torch.enable_grad():
            return function(*args)
    return wrapped


@variant(PC, CORRECT)
@_with_grad
def train_with_accumulation_enumerate(model, loss_fn, optimizer, batches, accum):
    n = len(batches)
    losses, running = [], 0.0
    model.zero_grad(set_to_none=True)
    for i, (xb, yb) in enumerate(batches):
        cycle_start = (i // accum) * accum
        cycle_len = min(accum, n - cycle_start)
        loss = loss_fn(model(xb), yb) / cycle_len
        loss.backward()
        running += loss.item()
        if (i + 1) % accum == 0 or i + 1 == n:
            optimizer.step()
            model.zero_grad(set_to_none=False)
            losses.append(running)
            running = 0.0
    return losses


@variant(PC, CORRECT)
@_with_grad
def train_with_accumulation_mean_of_cycle(model, loss_fn, optimizer, batches, accum):
    losses = []
    for start in range(0, len(batches), accum):
        optimizer.zero_grad()
        cycle = batches[start:start + accum]
        cycle_losses = [loss_fn(model(xb), yb) for xb, yb in cycle]
        mean = torch.stack(cycle_losses).mean()  # one backward over the cycle's mean loss
        mean.backward()
        optimizer.step()
        losses.append(mean.item())
    return losses


def _train(model, loss_fn, optimizer, batches, accum, last_cycle=True, last_divisor=None,
           divide=True, zero=True, step_every_batch=False, log=float):
    """The classic `(i + 1) % accum` loop with one knob per mistake."""
    n = len(batches)
    losses, running = [], 0.0
    optimizer.zero_grad()
    for i, (xb, yb) in enumerate(batches):
        in_last = i >= (n // accum) * accum
        divisor = accum if not in_last or last_divisor == "accum" else n % accum
        loss = loss_fn(model(xb), yb) / (divisor if divide else 1)
        loss.backward()
        running = running + (log(loss) if log is float else loss)
        if step_every_batch or (i + 1) % accum == 0 or (last_cycle and i + 1 == n):
            optimizer.step()
            if zero:
                optimizer.zero_grad()
            losses.append(running)
            running = 0.0
    return losses


@variant(PC, "ciclo_final_olvidado")
@_with_grad
def train_with_accumulation_forgets_the_partial_cycle(model, loss_fn, optimizer, batches, accum):
    return _train(model, loss_fn, optimizer, batches, accum, last_cycle=False)


@variant(PC, "ciclo_final_dividido_por_accum")
@_with_grad
def train_with_accumulation_partial_cycle_over_accum(model, loss_fn, optimizer, batches, accum):
    return _train(model, loss_fn, optimizer, batches, accum, last_divisor="accum")


@variant(PC, "sin_dividir_por_accum")
@_with_grad
def train_with_accumulation_without_dividing(model, loss_fn, optimizer, batches, accum):
    return _train(model, loss_fn, optimizer, batches, accum, divide=False)


@variant(PC, "zero_grad_ausente")
@_with_grad
def train_with_accumulation_without_zero_grad(model, loss_fn, optimizer, batches, accum):
    return _train(model, loss_fn, optimizer, batches, accum, zero=False)


@variant(PC, "zero_grad_en_cada_micro_lote")
@_with_grad
def train_with_accumulation_zeroes_every_micro_batch(model, loss_fn, optimizer, batches, accum):
    # The canonical loop's zero_grad() at the top of every iteration, kept when adding
    # accumulation: each step sees only the last micro-batch of its cycle.
    n = len(batches)
    losses, running = [], 0.0
    for i, (xb, yb) in enumerate(batches):
        optimizer.zero_grad()
        cycle_len = min(accum, n - (i // accum) * accum)
        loss = loss_fn(model(xb), yb) / cycle_len
        loss.backward()
        running += loss.item()
        if (i + 1) % accum == 0 or i + 1 == n:
            optimizer.step()
            losses.append(running)
            running = 0.0
    return losses


@variant(PC, "pasos_del_optimizador")
@_with_grad
def train_with_accumulation_steps_every_batch(model, loss_fn, optimizer, batches, accum):
    return _train(model, loss_fn, optimizer, batches, accum, step_every_batch=True)


def _train_with_a_final_step_always(model, loss_fn, optimizer, batches, accum):
    """Steps every accum micro-batches, then once more after the loop for "the leftover
    cycle", whether there is one or not; its mean divides by the leftover count."""
    optimizer.zero_grad()
    full = len(batches) // accum * accum
    losses, running, count = [], 0.0, 0
    for i, (xb, yb) in enumerate(batches):
        loss = loss_fn(model(xb), yb)
        (loss / (accum if i < full else len(batches) - full)).backward()
        running, count = running + loss.item(), count + 1
        if (i + 1) % accum == 0:
            optimizer.step()
            optimizer.zero_grad()
            losses.append(running / count)
            running, count = 0.0, 0
    optimizer.step()
    optimizer.zero_grad()
    return losses, running, count


@variant(PC, "excepcion")
@_with_grad
def train_with_accumulation_unguarded_leftover(model, loss_fn, optimizer, batches, accum):
    losses, running, count = _train_with_a_final_step_always(model, loss_fn, optimizer,
                                                             batches, accum)
    return losses + [running / count]  # ZeroDivisionError when len(batches) % accum == 0


@variant(PC, "pasos_del_optimizador")
@_with_grad
def train_with_accumulation_always_an_extra_step(model, loss_fn, optimizer, batches, accum):
    losses, running, count = _train_with_a_final_step_always(model, loss_fn, optimizer,
                                                             batches, accum)
    return losses + [running / count if count else 0.0]


@variant(PC, "grafo_vivo")
@_with_grad
def train_with_accumulation_logs_tensors(model, loss_fn, optimizer, batches, accum):
    return _train(model, loss_fn, optimizer, batches, accum, log=None)


@variant(PC, "efecto_secundario")
@_with_grad
def train_with_accumulation_pops_the_batches(model, loss_fn, optimizer, batches, accum):
    # Treats the caller's list as a queue: it is empty when the function returns.
    losses = []
    while batches:
        cycle = [batches.pop(0) for _ in range(min(accum, len(batches)))]
        optimizer.zero_grad()
        total = 0.0
        for xb, yb in cycle:
            loss = loss_fn(model(xb), yb)
            (loss / len(cycle)).backward()
            total += loss.item()
        optimizer.step()
        losses.append(total / len(cycle))
    return losses


@variant(PC, "registro_dividido")
@_with_grad
def train_with_accumulation_logs_the_divided_losses(model, loss_fn, optimizer, batches, accum):
    losses = []
    for start in range(0, len(batches), accum):
        cycle = batches[start:start + accum]
        optimizer.zero_grad()
        divided = []
        for xb, yb in cycle:
            loss = loss_fn(model(xb), yb) / len(cycle)
            loss.backward()
            divided.append(loss.item())
        optimizer.step()
        losses.append(sum(divided) / len(divided))  # divided twice
    return losses


@variant(PC, "grad_previo_sin_borrar")
@_with_grad
def train_with_accumulation_zero_grad_only_after_steps(model, loss_fn, optimizer, batches,
                                                       accum):
    # Clears after each step, never before the first: leftovers reach the first step.
    n = len(batches)
    losses, running = [], 0.0
    for i, (xb, yb) in enumerate(batches):
        cycle_len = min(accum, n - (i // accum) * accum)
        loss = loss_fn(model(xb), yb) / cycle_len
        loss.backward()
        running += loss.item()
        if (i + 1) % accum == 0 or i + 1 == n:
            optimizer.step()
            optimizer.zero_grad()
            losses.append(running)
            running = 0.0
    return losses


@variant(PC, "entrenado_en_otro_modo")
@_with_grad
def train_with_accumulation_sets_training_mode(model, loss_fn, optimizer, batches, accum):
    # The usual first line of a training loop, here against the contract: the caller's
    # eval mode is not restored, and a BatchNorm that came in eval mode trains on batch
    # statistics.
    model.train()
    n, losses, running = len(batches), [], 0.0
    optimizer.zero_grad()
    for i, (xb, yb) in enumerate(batches):
        cycle_len = min(accum, n - (i // accum) * accum)
        loss = loss_fn(model(xb), yb)
        (loss / cycle_len).backward()
        running += loss.item() / cycle_len
        if (i + 1) % accum == 0 or i + 1 == n:
            optimizer.step()
            optimizer.zero_grad()
            losses.append(running)
            running = 0.0
    return losses


@variant(PC, "micro_lote_mal_pesado")
@_with_grad
def train_with_accumulation_partial_divisor_one_too_early(model, loss_fn, optimizer, batches,
                                                         accum):
    # Off by one: the last micro-batch of the last full cycle already gets the partial
    # cycle's divisor.
    n = len(batches)
    full, rest = divmod(n, accum)
    losses, running, seen = [], 0.0, 0
    optimizer.zero_grad()
    for i, (xb, yb) in enumerate(batches):
        divisor = rest if rest and i >= full * accum - 1 else accum
        loss = loss_fn(model(xb), yb)
        (loss / divisor).backward()
        running += loss.item()
        seen += 1
        if (i + 1) % accum == 0 or i + 1 == n:
            optimizer.step()
            optimizer.zero_grad()
            losses.append(running / seen)
            running, seen = 0.0, 0
    return losses


@variant(PC, "numero_de_perdidas")
@_with_grad
def train_with_accumulation_logs_every_micro_batch(model, loss_fn, optimizer, batches, accum):
    # The steps are right, but the log has one loss per micro-batch, not one per step.
    n, losses = len(batches), []
    optimizer.zero_grad()
    for i, (xb, yb) in enumerate(batches):
        cycle_len = min(accum, n - (i // accum) * accum)
        loss = loss_fn(model(xb), yb)
        (loss / cycle_len).backward()
        losses.append(loss.item())
        if (i + 1) % accum == 0 or i + 1 == n:
            optimizer.step()
            optimizer.zero_grad()
    return losses


def _classic(model, loss_fn, optimizer, batches, accum, forward=None, zero=None):
    """The reference loop; ``forward(model, x)`` and ``zero()`` replace its pieces."""
    forward = forward or (lambda m, x: m(x))
    zero = zero or optimizer.zero_grad
    n, losses, running = len(batches), [], 0.0
    zero()
    for i, (xb, yb) in enumerate(batches):
        cycle_len = min(accum, n - (i // accum) * accum)
        loss = loss_fn(forward(model, xb), yb) / cycle_len
        loss.backward()
        running += loss.item()
        if (i + 1) % accum == 0 or i + 1 == n:
            optimizer.step()
            zero()
            losses.append(running)
            running = 0.0
    return losses


@variant(PC, "excepcion")
@_with_grad
def train_with_accumulation_moves_the_loss_to_the_device(model, loss_fn, optimizer, batches,
                                                        accum):
    # The usual `.to(device)` of a training loop, on a loss that may be a plain function.
    loss_fn = loss_fn.to(next(model.parameters()).device)
    return _classic(model, loss_fn, optimizer, batches, accum)


@variant(PC, "ciclo_unido")
@_with_grad
def train_with_accumulation_joins_the_cycle(model, loss_fn, optimizer, batches, accum):
    # One forward pass per cycle over its micro-batches joined: the same mean without
    # BatchNorm, not with it (it normalises with the statistics of what it sees).
    losses = []
    for start in range(0, len(batches), accum):
        cycle = batches[start:start + accum]
        optimizer.zero_grad()
        x = torch.cat([xb for xb, _ in cycle])
        y = torch.cat([yb for _, yb in cycle])
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


@variant(PC, "estadisticas_de_batchnorm")
@_with_grad
def train_with_accumulation_second_forward_for_the_log(model, loss_fn, optimizer, batches,
                                                       accum):
    # The loss logged from a forward pass of its own, under no_grad: the same number, but
    # BatchNorm in train mode counts each micro-batch twice.
    n, losses, running = len(batches), [], 0.0
    optimizer.zero_grad()
    for i, (xb, yb) in enumerate(batches):
        cycle_len = min(accum, n - (i // accum) * accum)
        (loss_fn(model(xb), yb) / cycle_len).backward()
        with torch.no_grad():
            running += loss_fn(model(xb), yb).item() / cycle_len
        if (i + 1) % accum == 0 or i + 1 == n:
            optimizer.step()
            optimizer.zero_grad()
            losses.append(running)
            running = 0.0
    return losses


@variant(PC, "entrenado_en_otro_modo")
@_with_grad
def train_with_accumulation_trains_in_train_mode(model, loss_fn, optimizer, batches, accum):
    # model.train() for the loop, every submodule's mode restored afterwards: the modes
    # come back, but a BatchNorm that came in eval mode trained on batch statistics.
    modes = {m: m.training for m in model.modules()}
    model.train()
    try:
        return _classic(model, loss_fn, optimizer, batches, accum)
    finally:
        for m, mode in modes.items():
            m.train(mode)


@variant(PC, "efecto_secundario")
@_with_grad
def train_with_accumulation_restores_the_root_mode_only(model, loss_fn, optimizer, batches,
                                                        accum):
    # "Leave the model as it came": model.train(was) sets every submodule to the root's mode.
    was = model.training
    losses = _classic(model, loss_fn, optimizer, batches, accum)
    model.train(was)
    return losses


@variant(PC, "grupo_sin_borrar")
@_with_grad
def train_with_accumulation_zeroes_the_first_group(model, loss_fn, optimizer, batches, accum):
    # Clears the gradients of the optimizer's parameters by hand, but of its first group only.
    def zero():
        for p in optimizer.param_groups[0]["params"]:
            p.grad = None

    return _classic(model, loss_fn, optimizer, batches, accum, zero=zero)


@variant(PC, "efecto_secundario")
@_with_grad
def train_with_accumulation_unfreezes(model, loss_fn, optimizer, batches, accum):
    # "Every parameter must learn": the frozen one is unfrozen (and stays so).
    for p in model.parameters():
        p.requires_grad_(True)
    return _classic(model, loss_fn, optimizer, batches, accum)


@variant(PC, "efecto_secundario")
def train_with_accumulation_grad_on_for_good(model, loss_fn, optimizer, batches, accum):
    # Autograd switched on "just in case", as a call: a caller inside no_grad gets it back on.
    torch.set_grad_enabled(True)
    return _classic(model, loss_fn, optimizer, batches, accum)


@variant(PC, "excepcion")
def train_with_accumulation_assumes_grad_on(model, loss_fn, optimizer, batches, accum):
    # Right, as long as the caller has autograd on.
    return _classic(model, loss_fn, optimizer, batches, accum)


@variant(PC, "tipo")
@_with_grad
def train_with_accumulation_returns_a_tuple(model, loss_fn, optimizer, batches, accum):
    return tuple(_classic(model, loss_fn, optimizer, batches, accum))


@variant(PC, "sin_implementar")
def train_with_accumulation_stub(model, loss_fn, optimizer, batches, accum):
    raise NotImplementedError()


@variant(PC, "resultado_fijo")
def train_with_accumulation_hardcoded(model, loss_fn, optimizer, batches, accum):
    example = construir_ciclos(torch.Generator().manual_seed(2),
                               ("fn", 11, 2, 4, 3, 5, 2, "sgd", 0.1, False, False, True,
                                "mixto_eval", True, 2, True, True))
    return ciclos_con_lotes_unidos(*example.values())["perdidas"].tolist()


# ---------------------------------------------------------------- clip_by_global_norm
@variant(CG, CORRECT)
def clip_by_global_norm_flattened(grads, max_norm):
    grads = list(grads)
    present = [g for g in grads if g is not None]
    total = torch.cat([g.flatten() for g in present]).norm() if present else torch.tensor(0.0)
    scale = torch.clamp(max_norm / (total + 1e-6), max=1.0)
    return [None if g is None else g * scale.to(g.dtype) for g in grads], float(total)


@variant(CG, CORRECT)
def clip_by_global_norm_with_torch_on_made_up_parameters(grads, max_norm):
    # Valid too: hand the gradients to clip_grad_norm_ in the .grad of throw-away tensors.
    holders = []
    for g in grads:
        holder = torch.zeros(() if g is None else g.shape, requires_grad=True,
                             dtype=torch.float32 if g is None else g.dtype)
        holder.grad = None if g is None else g.clone()
        holders.append(holder)
    norm = torch.nn.utils.clip_grad_norm_(holders, max_norm)
    return [h.grad for h in holders], norm


@variant(CG, CORRECT)
def clip_by_global_norm_only_when_above(grads, max_norm):
    grads = list(grads)
    squares = sum(float(g.pow(2).sum()) for g in grads if g is not None)
    total = math.sqrt(squares)
    if total + 1e-6 <= max_norm:
        return [None if g is None else g.clone() for g in grads], total
    scale = max_norm / (total + 1e-6)
    return [None if g is None else g * scale for g in grads], total


@variant(CG, CORRECT)
def clip_by_global_norm_same_tensors_when_nothing_changes(grads, max_norm):
    # Valid too: with a factor of 1, the very tensors it was given (unmodified).
    grads = list(grads)
    present = [g for g in grads if g is not None]
    total = torch.linalg.vector_norm(torch.stack([g.double().norm() for g in present])).item() \
        if present else 0.0
    scale = min(1.0, max_norm / (total + 1e-6))
    if scale == 1.0:
        return grads, total
    return [None if g is None else (g * scale).to(g.dtype) for g in grads], total


@variant(CG, "sin_recortar")
def clip_by_global_norm_threshold_on_the_norm(grads, max_norm):
    # Compares the norm itself with max_norm: between norm and norm + 1e-6 it does not clip.
    grads = list(grads)
    total = math.sqrt(sum(float(g.pow(2).sum()) for g in grads if g is not None))
    if total <= max_norm:
        return [None if g is None else g.clone() for g in grads], total
    scale = max_norm / (total + 1e-6)
    return [None if g is None else g * scale for g in grads], total


@variant(CG, "no_finito")
def clip_by_global_norm_divides_by_the_larger(grads, max_norm):
    # g * max_norm / max(norm, max_norm): the same factor, but inf / inf with max_norm = inf.
    grads = list(grads)
    total = math.sqrt(sum(float(g.pow(2).sum()) for g in grads if g is not None))
    denominator = max(total + 1e-6, max_norm)
    return [None if g is None else g * max_norm / denominator for g in grads], total


@variant(CG, "excepcion")
def clip_by_global_norm_stacks_without_a_guard(grads, max_norm):
    # torch.stack of no norms at all: an empty or all-None grads raises.
    grads = list(grads)
    total = torch.linalg.vector_norm(torch.stack([g.norm() for g in grads if g is not None]))
    scale = min(1.0, max_norm / (total.item() + 1e-6))
    return [None if g is None else g * scale for g in grads], total.item()


@variant(CG, "excepcion")
def clip_by_global_norm_iterates_rows(grads, max_norm):
    # Sums the squares row by row: a 0-dim tensor has no rows to iterate over.
    grads = list(grads)
    squares = sum(float((row ** 2).sum()) for g in grads if g is not None for row in g)
    total = math.sqrt(squares)
    scale = min(1.0, max_norm / (total + 1e-6))
    return [None if g is None else g * scale for g in grads], total


@variant(CG, "dtype")
def clip_by_global_norm_float64_factor(grads, max_norm):
    # The factor as a 0-dim float64 tensor: a 0-dim float32 gradient is promoted to float64.
    grads = list(grads)
    present = [g for g in grads if g is not None]
    total = torch.sqrt(sum(g.double().pow(2).sum() for g in present)) if present else \
        torch.tensor(0.0, dtype=torch.float64)
    scale = torch.clamp(max_norm / (total + 1e-6), max=1.0)
    return [None if g is None else g * scale for g in grads], total.item()


@variant(CG, "tipo")
def clip_by_global_norm_returns_a_tuple_of_grads(grads, max_norm):
    clipped, total = _clip(grads, max_norm)
    return tuple(clipped), total


def _clip(grads, max_norm, norm="l2", per_tensor=False, always=False, eps=1e-6,
          in_place=False, keep_none=True, return_after=False):
    """The reference with one knob per classic mistake."""
    grads = list(grads)
    present = [g for g in grads if g is not None]

    def measure(tensors):
        if norm == "l1":
            return sum(float(g.abs().sum()) for g in tensors)
        if norm == "sum":
            return sum(float(g.norm()) for g in tensors)
        return math.sqrt(sum(float(g.pow(2).sum()) for g in tensors))

    total = measure(present)

    def factor(n):
        scale = max_norm / (n + eps) if n + eps else 1.0
        return scale if always else min(1.0, scale)

    out = []
    for g in grads:
        if g is None:
            if keep_none:
                out.append(None)
            continue
        scale = factor(float(g.norm())) if per_tensor else factor(total)
        out.append(g.mul_(scale) if in_place else g * scale)
    return out, measure([g for g in out if g is not None]) if return_after else total


@variant(CG, "recorte_por_parametro")
def clip_by_global_norm_per_tensor(grads, max_norm):
    return _clip(grads, max_norm, per_tensor=True)


@variant(CG, "recorte_por_valor")
def clip_by_global_norm_by_value(grads, max_norm):
    grads = list(grads)
    total = math.sqrt(sum(float(g.pow(2).sum()) for g in grads if g is not None))
    return [None if g is None else g.clamp(-max_norm, max_norm) for g in grads], total


@variant(CG, "recorte_siempre")
def clip_by_global_norm_always(grads, max_norm):
    return _clip(grads, max_norm, always=True)


@variant(CG, "norma_l1")
def clip_by_global_norm_l1(grads, max_norm):
    return _clip(grads, max_norm, norm="l1")


@variant(CG, "norma_suma_de_normas")
def clip_by_global_norm_adds_the_norms(grads, max_norm):
    return _clip(grads, max_norm, norm="sum")


@variant(CG, "sin_epsilon")
def clip_by_global_norm_without_eps(grads, max_norm):
    return _clip(grads, max_norm, eps=0.0)


@variant(CG, "norma_tras_recorte")
def clip_by_global_norm_returns_the_clipped_norm(grads, max_norm):
    return _clip(grads, max_norm, return_after=True)


@variant(CG, "modificada")
def clip_by_global_norm_in_place(grads, max_norm):
    return _clip(grads, max_norm, in_place=True)


@variant(CG, "nones_perdidos")
def clip_by_global_norm_drops_none(grads, max_norm):
    return _clip(grads, max_norm, keep_none=False)


@variant(CG, "generador_agotado")
def clip_by_global_norm_two_passes(grads, max_norm):
    total = math.sqrt(sum(float(g.pow(2).sum()) for g in grads if g is not None))
    scale = min(1.0, max_norm / (total + 1e-6))
    return [None if g is None else g * scale for g in grads], total


@variant(CG, "excepcion")
def clip_by_global_norm_assumes_no_none(grads, max_norm):
    grads = list(grads)
    total = torch.cat([g.flatten() for g in grads]).norm().item()
    scale = min(1.0, max_norm / (total + 1e-6))
    return [g * scale for g in grads], total


@variant(CG, "sin_recortar")
def clip_by_global_norm_forgets_to_scale(grads, max_norm):
    grads = list(grads)
    total = math.sqrt(sum(float(g.pow(2).sum()) for g in grads if g is not None))
    return [None if g is None else g.clone() for g in grads], total


@variant(CG, "tipo")
def clip_by_global_norm_returns_only_the_list(grads, max_norm):
    return _clip(grads, max_norm)[0]


@variant(CG, "sin_implementar")
def clip_by_global_norm_stub(grads, max_norm):
    raise NotImplementedError()


@variant(CG, "resultado_fijo")
def clip_by_global_norm_hardcoded(grads, max_norm):
    example = construir_recorte(torch.Generator().manual_seed(6),
                                (((3, 2), (3,), (), (2, 2)), (1,), "float64", "list", 0.25, 1e-3))
    expected = oraculo_de_recorte(*example.values())
    return expected["gradientes"], expected["norma"]


# ---------------------------------------------------------------- the sample class
FORGETS_THE_PARTIAL_CYCLE = '''\\
def train_with_accumulation(model, loss_fn, optimizer, batches, accum):
    losses, running = [], 0.0
    with torch.enable_grad():
        optimizer.zero_grad()
        for i, (xb, yb) in enumerate(batches):
            loss = loss_fn(model(xb), yb) / accum
            loss.backward()
            running += loss.item()
            if (i + 1) % accum == 0:  # el ciclo final incompleto nunca llega aquí
                optimizer.step()
                optimizer.zero_grad()
                losses.append(running)
                running = 0.0
    return losses
'''

CLIPS_EACH_TENSOR = '''def clip_by_global_norm(grads, max_norm):
    grads = list(grads)
    norms = [torch.linalg.vector_norm(g) for g in grads if g is not None]
    total = torch.linalg.vector_norm(torch.stack(norms)).item() if norms else 0.0
    clipped = []
    for g in grads:
        if g is None:
            clipped.append(None)
        else:
            # cada tensor con su propia norma
            scale = min(1.0, max_norm / (torch.linalg.vector_norm(g).item() + 1e-6))
            clipped.append(g * scale)
    return clipped, total
'''

SAMPLE_STUDENTS = [
    SampleStudent("lucia", "acumula bien pero olvida el ciclo final incompleto",
                  {"train_with_accumulation": FORGETS_THE_PARTIAL_CYCLE},
                  partial={"train_with_accumulation_test": 2.25}),
    SampleStudent("mateo", "recorta cada gradiente con su propia norma",
                  {"clip_by_global_norm": CLIPS_EACH_TENSOR},
                  partial={"clip_by_global_norm_test": 1.5}),
]
