"""Chapter 1 reference solutions. The solution source shows students equivalent code."""

import torch
import torch.nn.functional as F


def manual_backward(x, y, W1, b1, W2, b2):
    """Chain rule by hand for L = mean((relu(x @ W1 + b1) @ W2 + b2 - y) ** 2)."""
    z = x @ W1 + b1
    h = z.clamp_min(0)
    y_hat = h @ W2 + b2
    d_y_hat = 2 * (y_hat - y) / y_hat.numel()  # mse_loss averages over all N·K elements
    d_z = (d_y_hat @ W2.T) * (z > 0)
    return {"W1": x.T @ d_z, "b1": d_z.sum(0), "W2": h.T @ d_y_hat, "b2": d_y_hat.sum(0)}


def two_loss_grads(model, x, y):
    """Gradients of MSE and of L1 w.r.t. the parameters, sharing one forward pass."""
    out = model(x)
    params = list(model.parameters())
    grads_a = torch.autograd.grad(F.mse_loss(out, y), params, retain_graph=True)
    grads_b = torch.autograd.grad(F.l1_loss(out, y), params)
    return list(grads_a), list(grads_b)


def gradient_penalty(model, x):
    """mean_i (||d model(x)_i / d x_i|| - 1)^2, kept in the graph (create_graph=True)."""
    x = x.detach().requires_grad_(True)
    (grad_x,) = torch.autograd.grad(model(x).sum(), x, create_graph=True)
    return ((grad_x.norm(dim=1) - 1) ** 2).mean()
