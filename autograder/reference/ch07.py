"""Chapter 7 reference solutions. The solution source shows students equivalent code."""

import torch


class _Softplus(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, beta):
        z = beta * x
        out = (z.clamp_min(0) + torch.log1p(torch.exp(-z.abs()))) / beta
        ctx.save_for_backward(x)
        ctx.beta = beta
        return out

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * torch.sigmoid(ctx.beta * x), None


def stable_softplus(x, beta):
    """log(1 + exp(beta·x)) / beta without overflow; backward: sigmoid(beta·x)."""
    return _Softplus.apply(x, beta)


class _LinearTanh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias):
        out = torch.tanh(x @ weight.T + bias)
        ctx.save_for_backward(x, weight, out)  # tanh' = 1 - out²: no pre-activation, no bias
        return out

    @staticmethod
    def backward(ctx, grad_output):
        x, weight, out = ctx.saved_tensors
        grad_z = grad_output * (1 - out * out)
        grad_x = grad_z @ weight if ctx.needs_input_grad[0] else None
        grad_w = grad_z.T @ x if ctx.needs_input_grad[1] else None
        grad_b = grad_z.sum(0) if ctx.needs_input_grad[2] else None
        return grad_x, grad_w, grad_b


def linear_tanh(x, weight, bias):
    """tanh(x @ weight.T + bias) as one Function that saves x, weight and the output."""
    return _LinearTanh.apply(x, weight, bias)


class _QuantizeSTE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, step, levels):
        limit = levels * step
        ctx.save_for_backward(x.abs() <= limit)
        return torch.round(x.clamp(-limit, limit) / step) * step

    @staticmethod
    def backward(ctx, grad_output):
        (inside,) = ctx.saved_tensors
        return grad_output * inside, None, None


def quantize_ste(x, step, levels):
    """Round to step·k, k in [-levels, levels]; straight-through gradient inside the range."""
    return _QuantizeSTE.apply(x, step, levels)
