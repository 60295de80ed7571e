"""Chapter 3 variants: valid alternatives and realistic mistakes, each with its label."""

import torch

from autograder.chapters.ch03.student import (
    ciclos_con_lotes_unidos,
    construir_acumulacion,
    construir_ciclos,
    construir_recorte,
    recorte_a_mano,
)
from autograder.corpus import CORRECT, Registry
from autograder.submissions import SampleStudent

registry = Registry()
variant = registry.variant

AC = "accumulate_gradients"
PC = "train_with_accumulation"
CS = "clipped_step"


# ---------------------------------------------------------------- accumulate_gradients
@variant(AC, CORRECT)
def accumulate_gradients_split_and_set_to_none(model, loss_fn, x, y, accum):
    for p in model.parameters():
        p.grad = None
    size = x.shape[0] // accum
    total = 0.0
    for xb, yb in zip(torch.split(x, size), torch.split(y, size)):
        loss = loss_fn(model(xb), yb) * (1.0 / accum)
        loss.backward()
        total += loss.item()
    return total


@variant(AC, CORRECT)
def accumulate_gradients_divides_the_gradients_afterwards(model, loss_fn, x, y, accum):
    # Valid too: sum the undivided micro-batch gradients, then divide .grad once.
    model.zero_grad(set_to_none=False)
    size = x.shape[0] // accum
    losses = []
    for i in range(accum):
        loss = loss_fn(model(x[i * size:(i + 1) * size]), y[i * size:(i + 1) * size])
        loss.backward()
        losses.append(loss.item())
    with torch.no_grad():
        for p in model.parameters():
            if p.grad is not None:  # a frozen parameter has none
                p.grad /= accum
    return sum(losses) / accum


def _accumulate(model, loss_fn, x, y, accum, divisor=None, zero_first=True, zero_each=False,
                grad_divisor=1):
    """The reference loop with one knob per classic mistake."""
    if zero_first:
        model.zero_grad()
    total = 0.0
    for xb, yb in zip(x.chunk(accum), y.chunk(accum)):
        if zero_each:
            model.zero_grad()
        loss = loss_fn(model(xb), yb) / (accum if divisor is None else divisor)
        loss.backward()
        total += loss.item()
    for p in model.parameters():
        if p.grad is not None:
            p.grad /= grad_divisor
    return total


@variant(AC, "sin_dividir_por_accum")
def accumulate_gradients_without_dividing(model, loss_fn, x, y, accum):
    return _accumulate(model, loss_fn, x, y, accum, divisor=1)


@variant(AC, "dividido_de_mas_por_accum")
def accumulate_gradients_divides_loss_and_gradients(model, loss_fn, x, y, accum):
    return _accumulate(model, loss_fn, x, y, accum, grad_divisor=accum)


@variant(AC, "grad_previo_sin_borrar")
def accumulate_gradients_without_zero_grad(model, loss_fn, x, y, accum):
    return _accumulate(model, loss_fn, x, y, accum, zero_first=False)


@variant(AC, "zero_grad_en_cada_micro_lote")
def accumulate_gradients_zeroes_every_micro_batch(model, loss_fn, x, y, accum):
    return _accumulate(model, loss_fn, x, y, accum, zero_each=True)


@variant(AC, "micro_lotes_incorrectos")
def accumulate_gradients_whole_batch_at_once(model, loss_fn, x, y, accum):
    # Right gradients, but the point of accumulating (never the whole batch at once) is lost.
    model.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    return loss.item()


@variant(AC, "micro_lotes_incorrectos")
def accumulate_gradients_chunks_of_size_accum(model, loss_fn, x, y, accum):
    # Confuses the number of micro-batches with their size: N/accum chunks of accum rows.
    model.zero_grad()
    n_chunks = x.shape[0] // accum
    total = 0.0
    for xb, yb in zip(x.split(accum), y.split(accum)):
        loss = loss_fn(model(xb), yb) / n_chunks
        loss.backward()
        total += loss.item()
    return total


@variant(AC, "grafo_vivo")
def accumulate_gradients_returns_the_loss_tensor(model, loss_fn, x, y, accum):
    model.zero_grad()
    total = 0
    for xb, yb in zip(x.chunk(accum), y.chunk(accum)):
        loss = loss_fn(model(xb), yb) / accum
        loss.backward()
        total = total + loss  # keeps every micro-batch's graph alive
    return total


@variant(AC, "micro_lotes_no_consecutivos")
def accumulate_gradients_strided_rows(model, loss_fn, x, y, accum):
    # Same sizes and the same sum, but each call gets every accum-th row, not a block.
    model.zero_grad()
    total = 0.0
    for i in range(accum):
        loss = loss_fn(model(x[i::accum]), y[i::accum]) / accum
        loss.backward()
        total += loss.item()
    return total


@variant(AC, "grad_borrado_al_final")
def accumulate_gradients_zero_grad_at_the_end(model, loss_fn, x, y, accum):
    total = _accumulate(model, loss_fn, x, y, accum)
    model.zero_grad()  # "leave things clean": the result was in .grad
    return total


@variant(AC, "perdida_sumada_sin_dividir")
def accumulate_gradients_returns_the_undivided_sum(model, loss_fn, x, y, accum):
    model.zero_grad()
    total = 0.0
    for xb, yb in zip(x.chunk(accum), y.chunk(accum)):
        loss = loss_fn(model(xb), yb)
        (loss / accum).backward()
        total += loss.item()  # the undivided loss
    return total


@variant(AC, "perdida_del_ultimo_micro_lote")
def accumulate_gradients_returns_the_last_loss(model, loss_fn, x, y, accum):
    model.zero_grad()
    for xb, yb in zip(x.chunk(accum), y.chunk(accum)):
        loss = loss_fn(model(xb), yb)
        (loss / accum).backward()
    return loss.item()


@variant(AC, "dividido_por_filas")
def accumulate_gradients_divides_by_the_micro_batch_size(model, loss_fn, x, y, accum):
    model.zero_grad()
    m = x.shape[0] // accum
    total = 0.0
    for xb, yb in zip(x.split(m), y.split(m)):
        loss = loss_fn(model(xb), yb)
        (loss / m).backward()  # m rows, not accum micro-batches
        total += loss.item()
    return total / accum


@variant(AC, "efecto_secundario")
def accumulate_gradients_sums_with_the_callers_loss(model, loss_fn, x, y, accum):
    # Switches the caller's loss to a sum and divides by N by hand; never switches it back.
    loss_fn.reduction = "sum"
    model.zero_grad()
    total = 0.0
    for xb, yb in zip(x.chunk(accum), y.chunk(accum)):
        loss = loss_fn(model(xb), yb) / y.numel()  # a sum over every element of y
        loss.backward()
        total += loss.item()
    return total


@variant(AC, "efecto_secundario")
def accumulate_gradients_sets_training_mode(model, loss_fn, x, y, accum):
    # Puts the model in training mode "to be safe"; the caller's eval mode is lost.
    model.train()
    model.zero_grad()
    total = 0.0
    for xb, yb in zip(x.chunk(accum), y.chunk(accum)):
        loss = loss_fn(model(xb), yb) / accum
        loss.backward()
        total += loss.item()
    return total


@variant(AC, "micro_lotes_incorrectos")
def accumulate_gradients_skips_the_last_micro_batch(model, loss_fn, x, y, accum):
    # Off by one: range(accum - 1) never reaches the last micro-batch (nor any, if accum = 1).
    model.zero_grad()
    m = x.shape[0] // accum
    total = 0.0
    for i in range(accum - 1):
        loss = loss_fn(model(x[i * m:(i + 1) * m]), y[i * m:(i + 1) * m]) / accum
        loss.backward()
        total += loss.item()
    return total


@variant(AC, "sin_implementar")
def accumulate_gradients_stub(model, loss_fn, x, y, accum):
    raise NotImplementedError()


@variant(AC, "resultado_fijo")
def accumulate_gradients_hardcoded(model, loss_fn, x, y, accum):
    # The loss of the public check's example, whatever the input.
    example = construir_acumulacion(torch.Generator().manual_seed(1), ("mse", 2, 4, 3, 5, 2))
    return example["loss_fn"](example["model"](example["x"]), example["y"]).item()


# ---------------------------------------------------------------- train_with_accumulation
@variant(PC, CORRECT)
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
def train_with_accumulation_forgets_the_partial_cycle(model, loss_fn, optimizer, batches, accum):
    return _train(model, loss_fn, optimizer, batches, accum, last_cycle=False)


@variant(PC, "ciclo_final_dividido_por_accum")
def train_with_accumulation_partial_cycle_over_accum(model, loss_fn, optimizer, batches, accum):
    return _train(model, loss_fn, optimizer, batches, accum, last_divisor="accum")


@variant(PC, "sin_dividir_por_accum")
def train_with_accumulation_without_dividing(model, loss_fn, optimizer, batches, accum):
    return _train(model, loss_fn, optimizer, batches, accum, divide=False)


@variant(PC, "zero_grad_ausente")
def train_with_accumulation_without_zero_grad(model, loss_fn, optimizer, batches, accum):
    return _train(model, loss_fn, optimizer, batches, accum, zero=False)


@variant(PC, "zero_grad_en_cada_micro_lote")
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
def train_with_accumulation_unguarded_leftover(model, loss_fn, optimizer, batches, accum):
    losses, running, count = _train_with_a_final_step_always(model, loss_fn, optimizer,
                                                             batches, accum)
    return losses + [running / count]  # ZeroDivisionError when len(batches) % accum == 0


@variant(PC, "pasos_del_optimizador")
def train_with_accumulation_always_an_extra_step(model, loss_fn, optimizer, batches, accum):
    losses, running, count = _train_with_a_final_step_always(model, loss_fn, optimizer,
                                                             batches, accum)
    return losses + [running / count if count else 0.0]


@variant(PC, "grafo_vivo")
def train_with_accumulation_logs_tensors(model, loss_fn, optimizer, batches, accum):
    return _train(model, loss_fn, optimizer, batches, accum, log=None)


@variant(PC, "efecto_secundario")
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


@variant(PC, "efecto_secundario")
def train_with_accumulation_sets_training_mode(model, loss_fn, optimizer, batches, accum):
    # The usual first line of a training loop, here against the contract: the caller's
    # eval mode is not restored.
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


@variant(PC, "sin_implementar")
def train_with_accumulation_stub(model, loss_fn, optimizer, batches, accum):
    raise NotImplementedError()


@variant(PC, "resultado_fijo")
def train_with_accumulation_hardcoded(model, loss_fn, optimizer, batches, accum):
    example = construir_ciclos(torch.Generator().manual_seed(2), ("mse", 11, 2, 4, 3, 5, 2))
    return ciclos_con_lotes_unidos(*example.values())["perdidas"].tolist()


# ---------------------------------------------------------------- clipped_step
@variant(CS, CORRECT)
def clipped_step_by_hand(model, loss_fn, optimizer, x, y, max_norm):
    model.zero_grad()
    loss_fn(model(x), y).backward()
    grads = [p.grad for p in model.parameters() if p.grad is not None]  # frozen: None
    total = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
    scale = torch.clamp(max_norm / (total + 1e-6), max=1.0)
    with torch.no_grad():
        for g in grads:
            g.mul_(scale)
    optimizer.step()
    return float(total)


@variant(CS, CORRECT)
def clipped_step_returns_the_tensor(model, loss_fn, optimizer, x, y, max_norm):
    loss = loss_fn(model(x), y)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    params = list(model.parameters())
    norm = torch.nn.utils.clip_grad_norm_(params, max_norm=max_norm)
    optimizer.step()
    optimizer.zero_grad()  # clearing afterwards is fine as well
    return norm  # a 0-dim tensor is accepted


def _clipped(model, loss_fn, optimizer, x, y, max_norm, where="between"):
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    if where == "between":
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.step()
    if where == "after_step":
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    return norm.item()


@variant(CS, "recorte_fuera_de_sitio")
def clipped_step_clips_after_step(model, loss_fn, optimizer, x, y, max_norm):
    return _clipped(model, loss_fn, optimizer, x, y, max_norm, where="after_step")


@variant(CS, "recorte_fuera_de_sitio")
def clipped_step_clips_before_backward(model, loss_fn, optimizer, x, y, max_norm):
    optimizer.zero_grad()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)  # no gradients yet
    loss_fn(model(x), y).backward()
    optimizer.step()
    return norm.item()  # always 0.0: not a typed-in answer, the clip came too early


@variant(CS, "efecto_secundario")
def clipped_step_sets_training_mode(model, loss_fn, optimizer, x, y, max_norm):
    # A training step "should" run in training mode: switches it and never switches back.
    model.train()
    optimizer.zero_grad()
    loss_fn(model(x), y).backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.step()
    return norm.item()


@variant(CS, "norma_l1")
def clipped_step_with_the_l1_norm(model, loss_fn, optimizer, x, y, max_norm):
    # Clips by hand, measuring the gradients with the L1 norm instead of the L2 one.
    optimizer.zero_grad()
    loss_fn(model(x), y).backward()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    norm = sum(g.abs().sum() for g in grads).item()
    with torch.no_grad():
        for g in grads:
            g.mul_(min(1.0, max_norm / (norm + 1e-6)))
    optimizer.step()
    return norm


@variant(CS, "grad_previo_sin_borrar")
def clipped_step_without_zero_grad(model, loss_fn, optimizer, x, y, max_norm):
    loss_fn(model(x), y).backward()  # adds to whatever .grad held from the previous step
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.step()
    return norm.item()


@variant(CS, "recorte_por_parametro")
def clipped_step_per_parameter(model, loss_fn, optimizer, x, y, max_norm):
    optimizer.zero_grad()
    loss_fn(model(x), y).backward()
    norms = [torch.nn.utils.clip_grad_norm_(p, max_norm) for p in model.parameters()]
    optimizer.step()
    return torch.stack(norms).norm().item()


@variant(CS, "recorte_por_valor")
def clipped_step_by_value(model, loss_fn, optimizer, x, y, max_norm):
    optimizer.zero_grad()
    loss_fn(model(x), y).backward()
    norm = torch.linalg.vector_norm(torch.cat([p.grad.flatten() for p in model.parameters()
                                               if p.grad is not None]))
    torch.nn.utils.clip_grad_value_(model.parameters(), max_norm)
    optimizer.step()
    return norm.item()


@variant(CS, "norma_tras_recorte")
def clipped_step_returns_the_clipped_norm(model, loss_fn, optimizer, x, y, max_norm):
    optimizer.zero_grad()
    loss_fn(model(x), y).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.step()
    grads = [p.grad.flatten() for p in model.parameters() if p.grad is not None]
    return torch.linalg.vector_norm(torch.cat(grads)).item()  # measured after clipping


@variant(CS, "recorte_a_otra_norma")
def clipped_step_with_the_chapters_max_norm(model, loss_fn, optimizer, x, y, max_norm):
    optimizer.zero_grad()
    loss_fn(model(x), y).backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # the demo's value
    optimizer.step()
    return norm.item()


@variant(CS, "recorte_siempre")
def clipped_step_always_rescales(model, loss_fn, optimizer, x, y, max_norm):
    optimizer.zero_grad()
    loss_fn(model(x), y).backward()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    norm = torch.sqrt(sum((g ** 2).sum() for g in grads))
    with torch.no_grad():
        for g in grads:
            g.mul_(max_norm / norm)  # also scales small gradients up
    optimizer.step()
    return norm.item()


@variant(CS, "paso_sin_gradientes")
def clipped_step_zero_grad_before_step(model, loss_fn, optimizer, x, y, max_norm):
    loss_fn(model(x), y).backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.zero_grad()  # between backward and step
    optimizer.step()
    return norm.item()


@variant(CS, "devuelve_la_perdida")
def clipped_step_returns_the_loss(model, loss_fn, optimizer, x, y, max_norm):
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.step()
    return loss.item()


@variant(CS, "pasos_del_optimizador")
def clipped_step_steps_twice(model, loss_fn, optimizer, x, y, max_norm):
    optimizer.zero_grad()
    loss_fn(model(x), y).backward()
    optimizer.step()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.step()
    return norm.item()


@variant(CS, "sin_implementar")
def clipped_step_stub(model, loss_fn, optimizer, x, y, max_norm):
    raise NotImplementedError()


@variant(CS, "resultado_fijo")
def clipped_step_hardcoded(model, loss_fn, optimizer, x, y, max_norm):
    example = construir_recorte(torch.Generator().manual_seed(3), ("mse", 8, 3, 5, 2, 0.25))
    return recorte_a_mano(*example.values())["norma"].item()


# ---------------------------------------------------------------- the sample class
FORGETS_THE_PARTIAL_CYCLE = '''\
def train_with_accumulation(model, loss_fn, optimizer, batches, accum):
    losses, running = [], 0.0
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

CLIPS_AFTER_THE_STEP = '''def clipped_step(model, loss_fn, optimizer, x, y, max_norm):
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    # recorto después del paso: step() ya usó los gradientes sin recortar
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    return norm.item()
'''

SAMPLE_STUDENTS = [
    SampleStudent("lucia", "acumula bien pero olvida el ciclo final incompleto",
                  {"train_with_accumulation": FORGETS_THE_PARTIAL_CYCLE},
                  partial={"train_with_accumulation_test": 2.25}),
    SampleStudent("mateo", "recorta los gradientes después de optimizer.step()",
                  {"clipped_step": CLIPS_AFTER_THE_STEP},
                  partial={"clipped_step_test": 1.5}),
]
