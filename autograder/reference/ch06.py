"""Chapter 6 reference solutions. The solution source shows students equivalent code."""

import torch


def pick_amp_dtype(device_type, bf16_supported):
    """bf16 where the hardware has it; fp16 + GradScaler on a GPU without it; else fp32."""
    if bf16_supported:
        return torch.bfloat16, False
    if device_type == "cuda":
        return torch.float16, True
    return torch.float32, False


def simulate_loss_scale(found_inf, init_scale, growth_factor, backoff_factor, growth_interval):
    """The scale after each GradScaler.update(), in plain Python."""
    scale, clean_steps, trace = float(init_scale), 0, []
    for inf in found_inf:
        if inf:
            scale, clean_steps = scale * backoff_factor, 0
        else:
            clean_steps += 1
            if clean_steps == growth_interval:
                scale, clean_steps = scale * growth_factor, 0
        trace.append(scale)
    return trace


def amp_train_step(model, batch, loss_fn, optimizer, scaler, device, dtype, max_norm):
    """One mixed-precision step; with ``scaler=None``, the plain bf16 loop."""
    x, y = batch
    with torch.autocast(device_type=device, dtype=dtype):
        loss = loss_fn(model(x), y)
    if scaler is None:
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        optimizer.step()
    else:
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        scaler.step(optimizer)
        scaler.update()
    optimizer.zero_grad()
    return loss.item()
