"""Chapter 4 reference solutions. The solution source shows students equivalent code."""

import torch


def train_one_epoch(model, loader, loss_fn, optimizer, scheduler=None, accum=1, max_norm=None):
    """One epoch; a step every ``accum`` micro-batches and after the last one.

    Each micro-batch loss is divided by the size of its cycle (``accum``, or the
    remainder for a final partial cycle). Returns the mean undivided loss, a float.
    """
    model.train()
    n = len(loader)
    total = 0.0
    for i, (x, y) in enumerate(loader):
        inicio = i - i % accum
        tam_ciclo = min(accum, n - inicio)
        loss = loss_fn(model(x), y)
        (loss / tam_ciclo).backward()
        total += loss.item()
        if (i + 1) % accum == 0 or i + 1 == n:
            if max_norm is not None:
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            optimizer.step()
            if scheduler is not None:
                scheduler.step()
            optimizer.zero_grad()
    return total / n


def evaluate(model, loader, loss_fn):
    """(mean loss per sample, accuracy) as floats, in eval mode without a graph."""
    estaba_entrenando = model.training
    model.eval()
    suma, aciertos, muestras = 0.0, 0, 0
    with torch.no_grad():
        for x, y in loader:
            logits = model(x)
            suma += loss_fn(logits, y).item() * len(y)
            aciertos += (logits.argmax(dim=1) == y).sum().item()
            muestras += len(y)
    model.train(estaba_entrenando)
    return suma / muestras, aciertos / muestras


def warmup_cosine(optimizer, warmup_steps, total_steps, min_lr=0.0):
    """Linear warmup from lr/(W+1) to lr over W steps, then cosine to min_lr at total_steps."""
    sched = torch.optim.lr_scheduler
    warmup = sched.LinearLR(optimizer, start_factor=1 / (warmup_steps + 1), end_factor=1.0,
                            total_iters=warmup_steps)
    coseno = sched.CosineAnnealingLR(optimizer, T_max=total_steps - warmup_steps, eta_min=min_lr)
    return sched.SequentialLR(optimizer, [warmup, coseno], milestones=[warmup_steps])
