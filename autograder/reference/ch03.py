"""Chapter 3 reference solutions. The solution source shows students equivalent code."""

import torch


def accumulate_gradients(model, loss_fn, x, y, accum):
    """Full-batch gradients in .grad from ``accum`` equal micro-batches; the full-batch loss."""
    model.zero_grad(set_to_none=True)
    total = 0.0
    for xb, yb in zip(x.chunk(accum), y.chunk(accum)):
        loss = loss_fn(model(xb), yb) / accum  # each micro-batch weighs 1/accum of the mean
        loss.backward()
        total += loss.item()
    return total


def train_with_accumulation(model, loss_fn, optimizer, batches, accum):
    """One optimizer step per ``accum`` micro-batches, and one for a final partial cycle."""
    batches = list(batches)
    losses = []
    optimizer.zero_grad()
    for start in range(0, len(batches), accum):
        cycle = batches[start:start + accum]  # the last one may be shorter
        total = 0.0
        for xb, yb in cycle:
            loss = loss_fn(model(xb), yb) / len(cycle)
            loss.backward()
            total += loss.item()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(total)
    return losses


def clipped_step(model, loss_fn, optimizer, x, y, max_norm):
    """forward, backward, clip the total gradient norm to ``max_norm``, step; the pre-clip norm."""
    optimizer.zero_grad()
    loss_fn(model(x), y).backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.step()
    return norm.item()
