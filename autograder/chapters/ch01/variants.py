"""Chapter 1 variants: valid alternatives and realistic mistakes, each with its label."""

import torch
import torch.nn.functional as F

from autograder.chapters.ch01.student import (
    construir_dos_perdidas,
    construir_penalizacion,
    construir_red,
    gradientes_por_separado,
)
from autograder.corpus import CORRECT, Registry
from autograder.hidden.reference import load_reference
from autograder.outcome import Status
from autograder.submissions import SampleStudent

reference = load_reference("ch01")

registry = Registry()
variant = registry.variant

MB = "manual_backward"
TL = "two_loss_grads"
GP = "gradient_penalty"


# ---------------------------------------------------------------- manual_backward
@variant(MB, CORRECT)
def manual_backward_einsum(x, y, W1, b1, W2, b2):
    z = torch.einsum("nd,dh->nh", x, W1) + b1
    h = torch.where(z > 0, z, torch.zeros_like(z))
    y_hat = torch.einsum("nh,hk->nk", h, W2) + b2
    g = 2.0 * (y_hat - y) / (y.shape[0] * y.shape[1])
    g_z = torch.einsum("nk,hk->nh", g, W2) * (h > 0)
    return {"W1": torch.einsum("nd,nh->dh", x, g_z), "b1": g_z.sum(0),
            "W2": torch.einsum("nh,nk->hk", h, g), "b2": g.sum(0)}


@variant(MB, CORRECT)
def manual_backward_per_sample_loop(x, y, W1, b1, W2, b2):
    grads = {"W1": torch.zeros_like(W1), "b1": torch.zeros_like(b1),
             "W2": torch.zeros_like(W2), "b2": torch.zeros_like(b2)}
    n_elements = y.numel()
    for x_n, y_n in zip(x, y):
        z = x_n @ W1 + b1
        h = z.relu()
        d_out = 2 * (h @ W2 + b2 - y_n) / n_elements
        d_z = (W2 @ d_out) * (z > 0)
        grads["W2"] += torch.outer(h, d_out)
        grads["b2"] += d_out
        grads["W1"] += torch.outer(x_n, d_z)
        grads["b1"] += d_z
    return grads


def _manual(x, y, W1, b1, W2, b2, scale=1.0, mask=True, dtype=None):
    """The reference computation with one knob per classic mistake."""
    z = x @ W1 + b1
    h = torch.relu(z)
    d_y_hat = scale * 2 * (h @ W2 + b2 - y) / y.numel()
    d_z = d_y_hat @ W2.T
    if mask:
        d_z = d_z * (z > 0)
    grads = {"W1": x.T @ d_z, "b1": d_z.sum(0), "W2": h.T @ d_y_hat, "b2": d_y_hat.sum(0)}
    return {k: v.to(dtype) for k, v in grads.items()} if dtype else grads


@variant(MB, "signo")
def manual_backward_sign_flipped(x, y, W1, b1, W2, b2):
    return _manual(x, y, W1, b1, W2, b2, scale=-1.0)  # 2 (y - y_hat) instead of 2 (y_hat - y)


@variant(MB, "media_solo_sobre_lote")
def manual_backward_divides_by_batch_only(x, y, W1, b1, W2, b2):
    return _manual(x, y, W1, b1, W2, b2, scale=y.shape[1])  # / N instead of / (N K)


@variant(MB, "suma_en_vez_de_media")
def manual_backward_sum_not_mean(x, y, W1, b1, W2, b2):
    return _manual(x, y, W1, b1, W2, b2, scale=y.numel())


@variant(MB, "factor_2")
def manual_backward_forgets_the_2(x, y, W1, b1, W2, b2):
    return _manual(x, y, W1, b1, W2, b2, scale=0.5)


@variant(MB, "forma_transpuesta")
def manual_backward_transposed_w2(x, y, W1, b1, W2, b2):
    grads = _manual(x, y, W1, b1, W2, b2)
    z = x @ W1 + b1
    d_y_hat = 2 * (torch.relu(z) @ W2 + b2 - y) / y.numel()
    grads["W2"] = d_y_hat.T @ torch.relu(z)  # (K, H) instead of (H, K)
    return grads


@variant(MB, "dtype")
def manual_backward_float32_accumulators(x, y, W1, b1, W2, b2):
    return _manual(x, y, W1, b1, W2, b2, dtype=torch.float32)


@variant(MB, "relu_sin_mascara")
def manual_backward_without_the_relu_mask(x, y, W1, b1, W2, b2):
    return _manual(x, y, W1, b1, W2, b2, mask=False)  # d_z = d_h: the ReLU forgotten


@variant(MB, "relu_derivada_signo")
def manual_backward_sign_as_relu_derivative(x, y, W1, b1, W2, b2):
    z = x @ W1 + b1
    h = torch.relu(z)
    d_y_hat = 2 * (h @ W2 + b2 - y) / y.numel()
    d_z = (d_y_hat @ W2.T) * torch.sign(z)  # -1 where z < 0, not 0
    return {"W1": x.T @ d_z, "b1": d_z.sum(0), "W2": h.T @ d_y_hat, "b2": d_y_hat.sum(0)}


@variant(MB, "squeeze_en_gradiente")
def manual_backward_squeezed(x, y, W1, b1, W2, b2):
    return {k: v.squeeze() for k, v in _manual(x, y, W1, b1, W2, b2).items()}  # K = 1 breaks


@variant(MB, "usa_autograd")
def manual_backward_with_autograd(x, y, W1, b1, W2, b2):
    params = [t.detach().clone().requires_grad_(True) for t in (W1, b1, W2, b2)]
    with torch.enable_grad():  # the statement forbids it: the point is the chain rule by hand
        y_hat = torch.relu(x @ params[0] + params[1]) @ params[2] + params[3]
        grads = torch.autograd.grad(F.mse_loss(y_hat, y), params)
    return dict(zip(("W1", "b1", "W2", "b2"), grads))


@variant(MB, "modificada")
def manual_backward_reuses_y_as_a_buffer(x, y, W1, b1, W2, b2):
    z = x @ W1 + b1
    h = torch.relu(z)
    error = y.sub_(h @ W2 + b2).neg_()  # y_hat - y, written into the caller's y
    d_y_hat = 2 * error / y.numel()
    d_z = (d_y_hat @ W2.T) * (z > 0)
    return {"W1": x.T @ d_z, "b1": d_z.sum(0), "W2": h.T @ d_y_hat, "b2": d_y_hat.sum(0)}


@variant(MB, "grad_escrito")
def manual_backward_also_fills_the_grads(x, y, W1, b1, W2, b2):
    grads = _manual(x, y, W1, b1, W2, b2)
    for name, tensor in zip(("W1", "b1", "W2", "b2"), (W1, b1, W2, b2)):
        if tensor.grad is None:  # "as backward() would": the caller's tensors are written
            tensor.grad = grads[name].clone()
    return grads


@variant(MB, CORRECT)
def manual_backward_in_float64_then_cast(x, y, W1, b1, W2, b2):
    dtypes = {"W1": W1.dtype, "b1": b1.dtype, "W2": W2.dtype, "b2": b2.dtype}
    x, y, W1, b1, W2, b2 = (t.double() for t in (x, y, W1, b1, W2, b2))
    grads = _manual(x, y, W1, b1, W2, b2)
    return {k: v.to(dtypes[k]) for k, v in grads.items()}


@variant(MB, CORRECT)
def manual_backward_relu_derivative_one_at_zero(x, y, W1, b1, W2, b2):
    z = x @ W1 + b1
    h = torch.where(z >= 0, z, torch.zeros_like(z))
    d_y_hat = 2 * (h @ W2 + b2 - y) / y.numel()
    d_z = torch.where(z >= 0, d_y_hat @ W2.T, torch.zeros_like(z))  # ReLU'(0) = 1
    return {"W1": x.T @ d_z, "b1": d_z.sum(0), "W2": h.T @ d_y_hat, "b2": d_y_hat.sum(0)}


@variant(MB, "tipo")
def manual_backward_returns_a_tuple(x, y, W1, b1, W2, b2):
    grads = _manual(x, y, W1, b1, W2, b2)
    return grads["W1"], grads["b1"], grads["W2"], grads["b2"]  # in the docstring's order


@variant(MB, "dtype")
def manual_backward_in_float64_for_precision(x, y, W1, b1, W2, b2):
    return _manual(*(t.double() for t in (x, y, W1, b1, W2, b2)))  # never cast back


@variant(MB, "squeeze_en_gradiente")
def manual_backward_squeezes_the_first_layer(x, y, W1, b1, W2, b2):
    grads = _manual(x, y, W1, b1, W2, b2)
    grads["W1"], grads["b1"] = grads["W1"].squeeze(), grads["b1"].squeeze()  # D = 1 or H = 1
    return grads


@variant(MB, "modificada")
def manual_backward_forces_requires_grad_on(x, y, W1, b1, W2, b2):
    params = (W1, b1, W2, b2)
    for p in params:
        p.requires_grad_(False)
    grads = _manual(x, y, W1, b1, W2, b2)
    for p in params:
        p.requires_grad_(True)  # "as they were": assumes they arrived requiring grad
    return grads


@variant(MB, "efecto_secundario")
def manual_backward_clears_the_grads(x, y, W1, b1, W2, b2):
    for p in (W1, b1, W2, b2):
        p.grad = None  # "clean up" like zero_grad(set_to_none=True): the caller's .grad is gone
    return _manual(x, y, W1, b1, W2, b2)



@variant(MB, "sin_implementar")
def manual_backward_stub(x, y, W1, b1, W2, b2):
    raise NotImplementedError()


@variant(MB, "resultado_fijo")
def manual_backward_hardcoded(x, y, W1, b1, W2, b2):
    # The answer to the public check's example, returned whatever the input.
    example = construir_red(torch.Generator().manual_seed(1), (6, 4, 5, 3))
    return reference.manual_backward(*example.values())


# ---------------------------------------------------------------- two_loss_grads
@variant(TL, CORRECT)
def two_loss_grads_backward_clone_zero(model, x, y):
    out = model(x)
    model.zero_grad()
    F.mse_loss(out, y).backward(retain_graph=True)
    grads_a = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    F.l1_loss(out, y).backward()
    grads_b = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    return grads_a, grads_b


@variant(TL, CORRECT)
def two_loss_grads_difference_of_sums(model, x, y):
    out = model(x)
    params = list(model.parameters())
    both = torch.autograd.grad(F.mse_loss(out, y) + F.l1_loss(out, y), params, retain_graph=True)
    grads_a = torch.autograd.grad(F.mse_loss(out, y), params)
    return list(grads_a), [s - a for s, a in zip(both, grads_a)]


@variant(TL, "acumulado_sin_clone")
def two_loss_grads_without_clone(model, x, y):
    out = model(x)
    F.mse_loss(out, y).backward(retain_graph=True)
    grads_a = [p.grad for p in model.parameters()]
    F.l1_loss(out, y).backward()
    return grads_a, [p.grad.clone() for p in model.parameters()]


@variant(TL, "grad_previo_incluido")
def two_loss_grads_without_zero_grad(model, x, y):
    out = model(x)
    F.mse_loss(out, y).backward(retain_graph=True)
    grads_a = [p.grad.clone() for p in model.parameters()]
    F.l1_loss(out, y).backward()
    return grads_a, [p.grad.clone() for p in model.parameters()]


@variant(TL, "acumulado_sin_zero")
def two_loss_grads_zeroes_only_at_the_start(model, x, y):
    model.zero_grad()
    out = model(x)
    F.mse_loss(out, y).backward(retain_graph=True)
    grads_a = [p.grad.clone() for p in model.parameters()]
    F.l1_loss(out, y).backward()  # .grad still holds the MSE's gradients
    return grads_a, [p.grad.clone() for p in model.parameters()]


@variant(TL, "grad_previo_incluido")
def two_loss_grads_zeroes_only_in_between(model, x, y):
    out = model(x)
    F.mse_loss(out, y).backward(retain_graph=True)  # adds to whatever .grad held
    grads_a = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    F.l1_loss(out, y).backward()
    return grads_a, [p.grad.clone() for p in model.parameters()]


@variant(TL, "l1_media_solo_sobre_lote")
def two_loss_grads_l1_summed_over_outputs(model, x, y):
    out = model(x)
    params = list(model.parameters())
    grads_a = torch.autograd.grad(F.mse_loss(out, y), params, retain_graph=True)
    grads_b = torch.autograd.grad((out - y).abs().sum(dim=1).mean(), params)
    return list(grads_a), list(grads_b)


@variant(TL, "perdidas_intercambiadas")
def two_loss_grads_in_the_other_order(model, x, y):
    out = model(x)
    params = list(model.parameters())
    grads_l1 = torch.autograd.grad(F.l1_loss(out, y), params, retain_graph=True)
    return list(grads_l1), list(torch.autograd.grad(F.mse_loss(out, y), params))


@variant(TL, "modificada")
def two_loss_grads_with_a_leftover_step(model, x, y):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    optimizer.zero_grad()
    out = model(x)
    F.mse_loss(out, y).backward(retain_graph=True)
    grads_a = [p.grad.clone() for p in model.parameters()]
    optimizer.zero_grad()
    F.l1_loss(out, y).backward()
    grads_b = [p.grad.clone() for p in model.parameters()]
    optimizer.step()  # a training-loop habit: the parameters move
    return grads_a, grads_b


@variant(TL, CORRECT)
def two_loss_grads_through_forward(model, x, y):
    out = model.forward(x)  # one forward pass, without the model's own hooks
    params = list(model.parameters())
    grads_a = torch.autograd.grad(F.mse_loss(out, y), params, retain_graph=True)
    return list(grads_a), list(torch.autograd.grad(F.l1_loss(out, y), params))


@variant(TL, CORRECT)
def two_loss_grads_restores_the_stale_grad(model, x, y):
    params = list(model.parameters())
    previous = [p.grad for p in params]
    out = model(x)
    grads = []
    for loss in (F.mse_loss(out, y), F.l1_loss(out, y)):
        for p in params:
            p.grad = None
        loss.backward(retain_graph=True)
        grads.append(tuple(p.grad.clone() for p in params))
    for p, g in zip(params, previous):
        p.grad = g
    return grads


@variant(TL, "segundo_backward")
def two_loss_grads_without_retain_graph(model, x, y):
    out = model(x)
    params = list(model.parameters())
    grads_a = torch.autograd.grad(F.mse_loss(out, y), params)
    grads_b = torch.autograd.grad(F.l1_loss(out, y), params)
    return list(grads_a), list(grads_b)


@variant(TL, "forward_repetido")
def two_loss_grads_two_forwards(model, x, y):
    params = list(model.parameters())
    grads_a = torch.autograd.grad(F.mse_loss(model(x), y), params)
    grads_b = torch.autograd.grad(F.l1_loss(model(x), y), params)
    return list(grads_a), list(grads_b)


@variant(TL, CORRECT)
def two_loss_grads_tuples_through_the_output(model, x, y):
    params = tuple(model.parameters())
    out = model(x)
    (d_mse,) = torch.autograd.grad(F.mse_loss(out, y), out, retain_graph=True)
    (d_l1,) = torch.autograd.grad(F.l1_loss(out, y), out, retain_graph=True)
    grads_a = torch.autograd.grad(out, params, grad_outputs=d_mse, retain_graph=True)
    return grads_a, torch.autograd.grad(out, params, grad_outputs=d_l1)  # a tuple of tuples


@variant(TL, "longitud")
def two_loss_grads_params_from_children(model, x, y):
    params = [p for layer in model.children() for p in layer.parameters()]  # not the model's own
    out = model(x)
    grads_a = torch.autograd.grad(F.mse_loss(out, y), params, retain_graph=True)
    return list(grads_a), list(torch.autograd.grad(F.l1_loss(out, y), params))


@variant(TL, "longitud")
def two_loss_grads_linear_layers_only(model, x, y):
    params = [p for m in model.modules() if isinstance(m, torch.nn.Linear)
              for p in m.parameters()]  # "the weights and biases": misses BatchNorm's and the rest
    out = model(x)
    grads_a = torch.autograd.grad(F.mse_loss(out, y), params, retain_graph=True)
    return list(grads_a), list(torch.autograd.grad(F.l1_loss(out, y), params))


@variant(TL, "tipo")
def two_loss_grads_as_dicts(model, x, y):
    names, params = zip(*model.named_parameters())
    out = model(x)
    grads_a = torch.autograd.grad(F.mse_loss(out, y), params, retain_graph=True)
    grads_b = torch.autograd.grad(F.l1_loss(out, y), params)
    return dict(zip(names, grads_a)), dict(zip(names, grads_b))


@variant(TL, "dtype")
def two_loss_grads_copies_through_lists(model, x, y):
    model.zero_grad()
    out = model(x)
    F.mse_loss(out, y).backward(retain_graph=True)
    grads_a = [torch.tensor(p.grad.tolist()) for p in model.parameters()]  # float32 by default
    model.zero_grad()
    F.l1_loss(out, y).backward()
    return grads_a, [torch.tensor(p.grad.tolist()) for p in model.parameters()]


@variant(TL, "gradientes_sobrescritos")
def two_loss_grads_alias_zeroed_in_place(model, x, y):
    params = list(model.parameters())
    model.zero_grad(set_to_none=True)
    out = model(x)
    F.mse_loss(out, y).backward(retain_graph=True)
    grads_a = [p.grad for p in params]
    for p in params:
        p.grad.zero_()  # empties grads_a too: they are the same tensors
    F.l1_loss(out, y).backward()
    return grads_a, [p.grad for p in params]


@variant(TL, "no_reconocido")
def two_loss_grads_squeezes_the_output(model, x, y):
    params = list(model.parameters())
    out = model(x).squeeze()  # with K = 1, (N,) against y (N, 1) broadcasts to (N, N)
    grads_a = torch.autograd.grad(F.mse_loss(out, y), params, retain_graph=True)
    return list(grads_a), list(torch.autograd.grad(F.l1_loss(out, y), params))


def _modes(model):
    return [m.training for m in model.modules()]


def _set_modes(model, modes):
    for m, mode in zip(model.modules(), modes):
        m.train(mode)


@variant(TL, "modo_cambiado_al_calcular")
def two_loss_grads_in_eval_mode(model, x, y):
    modes = _modes(model)
    model.eval()  # "so that both losses see the same output": BatchNorm changes what it computes
    out = model(x)
    params = list(model.parameters())
    grads_a = torch.autograd.grad(F.mse_loss(out, y), params, retain_graph=True)
    grads_b = torch.autograd.grad(F.l1_loss(out, y), params)
    _set_modes(model, modes)
    return list(grads_a), list(grads_b)


@variant(TL, "modo_cambiado_al_calcular")
def two_loss_grads_in_train_mode(model, x, y):
    modes = _modes(model)
    model.train()  # "gradients need train mode": a BatchNorm in eval now uses the batch
    out = model(x)
    params = list(model.parameters())
    grads_a = torch.autograd.grad(F.mse_loss(out, y), params, retain_graph=True)
    grads_b = torch.autograd.grad(F.l1_loss(out, y), params)
    _set_modes(model, modes)
    return list(grads_a), list(grads_b)


@variant(TL, "modo_no_restaurado")
def two_loss_grads_resets_the_mode_it_found(model, x, y):
    was_training = model.training
    out = model(x)
    params = list(model.parameters())
    grads_a = torch.autograd.grad(F.mse_loss(out, y), params, retain_graph=True)
    grads_b = torch.autograd.grad(F.l1_loss(out, y), params)
    model.train(was_training)  # "as it arrived": every submodule gets the model's mode
    return list(grads_a), list(grads_b)


@variant(TL, "modo_cambiado_al_calcular")
def two_loss_grads_eval_and_restores_the_root_only(model, x, y):
    was_training = model.training
    model.eval()
    out = model(x)
    params = list(model.parameters())
    grads_a = torch.autograd.grad(F.mse_loss(out, y), params, retain_graph=True)
    grads_b = torch.autograd.grad(F.l1_loss(out, y), params)
    model.train(was_training)
    return list(grads_a), list(grads_b)


@variant(TL, "modificada")
def two_loss_grads_marks_x(model, x, y):
    x.requires_grad_()  # "autograd needs it": the caller's x now requires grad
    out = model(x)
    params = list(model.parameters())
    grads_a = torch.autograd.grad(F.mse_loss(out, y), params, retain_graph=True)
    return list(grads_a), list(torch.autograd.grad(F.l1_loss(out, y), params))


@variant(TL, "sin_implementar")
def two_loss_grads_stub(model, x, y):
    raise NotImplementedError()


@variant(TL, "resultado_fijo")
def two_loss_grads_hardcoded(model, x, y):
    example = gradientes_por_separado(
        *construir_dos_perdidas(torch.Generator().manual_seed(2), (5, 3, 4, 2)).values())
    return example["a"], example["b"]


# ---------------------------------------------------------------- gradient_penalty
@variant(GP, CORRECT)
def gradient_penalty_clone_and_vector_norm(model, x):
    x_in = x.clone().requires_grad_()
    out = model(x_in)
    (g,) = torch.autograd.grad(out, x_in, grad_outputs=torch.ones_like(out), create_graph=True)
    return (torch.linalg.vector_norm(g, dim=-1) - 1).pow(2).mean()


@variant(GP, CORRECT)
def gradient_penalty_sqrt_of_squares(model, x):
    x_in = x.detach().clone()
    x_in.requires_grad = True
    (g,) = torch.autograd.grad(model(x_in).sum(), [x_in], create_graph=True)
    norms = (g * g).sum(dim=1).sqrt()
    return ((norms - 1) ** 2).sum() / x.shape[0]


@variant(GP, "sin_grafo")
def gradient_penalty_without_create_graph(model, x):
    x_in = x.detach().requires_grad_(True)
    (g,) = torch.autograd.grad(model(x_in).sum(), x_in)
    return ((g.norm(dim=1) - 1) ** 2).mean()


@variant(GP, "modificada")
def gradient_penalty_marks_the_input(model, x):
    x.requires_grad_(True)
    (g,) = torch.autograd.grad(model(x).sum(), x, create_graph=True)
    return ((g.norm(dim=1) - 1) ** 2).mean()


@variant(GP, "grad_poblado")
def gradient_penalty_with_backward(model, x):
    x_in = x.detach().requires_grad_(True)
    model(x_in).sum().backward(create_graph=True)
    return ((x_in.grad.norm(dim=1) - 1) ** 2).mean()


@variant(GP, "penalizacion_otra_formula")
def gradient_penalty_one_sided(model, x):
    x_in = x.detach().requires_grad_(True)
    (g,) = torch.autograd.grad(model(x_in).sum(), x_in, create_graph=True)
    return (torch.relu(g.norm(dim=1) - 1) ** 2).mean()  # only norms above 1 are penalised


@variant(GP, "penalizacion_otra_formula")
def gradient_penalty_squared_norm(model, x):
    x_in = x.detach().requires_grad_(True)
    (g,) = torch.autograd.grad(model(x_in).sum(), x_in, create_graph=True)
    return (((g**2).sum(dim=1) - 1) ** 2).mean()  # ‖g‖² where the formula has ‖g‖


@variant(GP, "suma_en_vez_de_media")
def gradient_penalty_summed_over_rows(model, x):
    x_in = x.detach().requires_grad_(True)
    (g,) = torch.autograd.grad(model(x_in).sum(), x_in, create_graph=True)
    return ((g.norm(dim=1) - 1) ** 2).sum()


@variant(GP, "requires_grad_apagado")
def gradient_penalty_switches_requires_grad_back_off(model, x):
    x.requires_grad_(True)
    (g,) = torch.autograd.grad(model(x).sum(), x, create_graph=True)
    penalty = ((g.norm(dim=1) - 1) ** 2).mean()
    x.requires_grad_(False)  # assumes x arrived without requires_grad
    return penalty


@variant(GP, "efecto_secundario")
def gradient_penalty_clears_the_parameters_grad(model, x):
    model.zero_grad()  # "just in case": the caller's accumulated gradients are gone
    x_in = x.detach().requires_grad_(True)
    (g,) = torch.autograd.grad(model(x_in).sum(), x_in, create_graph=True)
    return ((g.norm(dim=1) - 1) ** 2).mean()


@variant(GP, CORRECT)
def gradient_penalty_one_row_at_a_time(model, x):
    x_in = x.detach().clone().requires_grad_(True)
    out = model(x_in)
    terms = []
    for i in range(x.shape[0]):
        (g,) = torch.autograd.grad(out[i, 0], x_in, create_graph=True)
        terms.append((torch.sqrt((g[i] ** 2).sum()) - 1) ** 2)
    return torch.stack(terms).mean()


@variant(GP, "penalizacion_otra_formula")
def gradient_penalty_one_norm_for_the_batch(model, x):
    x_in = x.detach().requires_grad_(True)
    (g,) = torch.autograd.grad(model(x_in).sum(), x_in, create_graph=True)
    return (g.norm(2) - 1) ** 2  # the whole matrix's norm, not one per row


@variant(GP, "forma")
def gradient_penalty_accumulates_in_zeros_1(model, x):
    x_in = x.detach().requires_grad_(True)
    (g,) = torch.autograd.grad(model(x_in).sum(), x_in, create_graph=True)
    penalty = torch.zeros(1, dtype=x.dtype)  # shape (1,), not a 0-dimensional tensor
    for i in range(x.shape[0]):
        penalty = penalty + (g[i].norm(2) - 1) ** 2
    return penalty / x.shape[0]


@variant(GP, "forma")
def gradient_penalty_accumulates_in_torch_zeros_1(model, x):
    x_in = x.detach().requires_grad_(True)
    (g,) = torch.autograd.grad(model(x_in).sum(), x_in, create_graph=True)
    penalty = torch.zeros(1)  # shape (1,) and float32: a float64 x gives a float32 (1,)
    for i in range(x.shape[0]):
        penalty = penalty + (g[i].norm(2) - 1) ** 2
    return penalty / x.shape[0]


def _module_modes(model):
    return [m.training for m in model.modules()]


@variant(GP, "modo_cambiado_al_calcular")
def gradient_penalty_in_train_mode(model, x):
    modes = _module_modes(model)
    model.train()  # "to build the graph": a BatchNorm in eval now normalises with the batch
    x_in = x.detach().requires_grad_(True)
    (g,) = torch.autograd.grad(model(x_in).sum(), x_in, create_graph=True)
    for m, mode in zip(model.modules(), modes):
        m.train(mode)
    return ((g.norm(dim=1) - 1) ** 2).mean()


@variant(GP, "modo_no_restaurado")
def gradient_penalty_eval_and_restores_the_root_only(model, x):
    was_training = model.training
    model.eval()
    x_in = x.detach().requires_grad_(True)
    (g,) = torch.autograd.grad(model(x_in).sum(), x_in, create_graph=True)
    model.train(was_training)  # every submodule gets the model's mode
    return ((g.norm(dim=1) - 1) ** 2).mean()


@variant(GP, "grad_poblado")
def gradient_penalty_backward_on_a_clone(model, x):
    x_in = x.detach().clone().requires_grad_(True)
    model(x_in).sum().backward(create_graph=True)  # also adds into the parameters' .grad
    return ((x_in.grad.norm(2, dim=1) - 1) ** 2).mean()


@variant(GP, CORRECT)
def gradient_penalty_grad_outputs_and_mse(model, x):
    x_in = torch.empty_like(x).copy_(x.detach()).requires_grad_(True)
    with torch.enable_grad():
        out = model(x_in)
        (g,) = torch.autograd.grad(out, [x_in], grad_outputs=[torch.ones_like(out)],
                                   create_graph=True)
    norms = torch.linalg.vector_norm(g.reshape(x.shape[0], -1), ord=2, dim=1)
    return F.mse_loss(norms, torch.ones_like(norms))


@variant(GP, "sin_implementar")
def gradient_penalty_stub(model, x):
    raise NotImplementedError()


@variant(GP, "resultado_fijo")
def gradient_penalty_hardcoded(model, x):
    example = construir_penalizacion(torch.Generator().manual_seed(3), (4, 3, 6))
    return reference.gradient_penalty(*example.values())


# ---- The sample class (``make grade``): every grading outcome, with realistic cells.
# Wrong or broken chapter 1 answers, each a realistic student cell.
TWO_LOSSES_WITHOUT_CLONE = '''def two_loss_grads(model, x, y):
    out = model(x)
    F.mse_loss(out, y).backward(retain_graph=True)
    grads_a = [p.grad for p in model.parameters()]  # sin .clone(): el backward siguiente suma aquí
    F.l1_loss(out, y).backward()
    grads_b = [p.grad.clone() for p in model.parameters()]
    return grads_a, grads_b
'''

MANUAL_BACKWARD_THAT_RAISES = '''def manual_backward(x, y, W1, b1, W2, b2):
    z = W1 @ x + b1                       # orden de los factores al revés: falla la forma
    h = torch.relu(z)
    y_hat = h @ W2 + b2
    d_y_hat = 2 * (y_hat - y) / y_hat.numel()
    d_z = (d_y_hat @ W2.T) * (z > 0)
    return {"W1": x.T @ d_z, "b1": d_z.sum(0), "W2": h.T @ d_y_hat, "b2": d_y_hat.sum(0)}
'''

PENALTY_CELL_THAT_NEVER_ENDS = '''# probando convergencia...
while True:
    pass

def gradient_penalty(model, x):
    x = x.detach().requires_grad_(True)
    (g,) = torch.autograd.grad(model(x).sum(), x, create_graph=True)
    return ((g.norm(dim=1) - 1) ** 2).mean()
'''

PENALTY_WITHOUT_CREATE_GRAPH = '''def gradient_penalty(model, x):
    x = x.detach().requires_grad_(True)
    (g,) = torch.autograd.grad(model(x).sum(), x)       # sin create_graph=True
    return ((g.norm(dim=1) - 1) ** 2).mean()
'''

KERNEL_KILLER = '''import os
os._exit(1)
'''

# A correct answer that is noisy: a library warning and a print to stderr.
NOISY_TWO_LOSSES = '''import sys
import warnings

def two_loss_grads(model, x, y):
    warnings.warn("depurando: esto va a stderr")
    print("depurando", file=sys.stderr)
    out = model(x)
    params = list(model.parameters())
    grads_a = torch.autograd.grad(F.mse_loss(out, y), params, retain_graph=True)
    grads_b = torch.autograd.grad(F.l1_loss(out, y), params)
    return list(grads_a), list(grads_b)
'''


SAMPLE_STUDENTS = [
    SampleStudent("carla", "parcialmente mal: guarda p.grad sin clone",
                  {"two_loss_grads": TWO_LOSSES_WITHOUT_CLONE},
                  lost=("two_loss_grads_test",)),
    SampleStudent("diego", "su función lanza una excepción",
                  {"manual_backward": MANUAL_BACKWARD_THAT_RAISES},
                  lost=("manual_backward_test",)),
    SampleStudent("elena", "una celda que nunca termina",
                  {"gradient_penalty": PENALTY_CELL_THAT_NEVER_ENDS},
                  lost=("gradient_penalty_test",), expected_status=Status.TIMED_OUT),
    SampleStudent("fede", "mata el kernel (os._exit) en una celda",
                  {"manual_backward": KERNEL_KILLER},
                  lost=("manual_backward_test",), expected_status=Status.CRASHED),
    SampleStudent("hugo", "casi bien: penalización sin create_graph (crédito parcial)",
                  {"gradient_penalty": PENALTY_WITHOUT_CREATE_GRAPH},
                  partial={"gradient_penalty_test": 2.0}),
    SampleStudent("gabi", "correcta pero ruidosa (warnings, stderr) y con celdas borradas",
                  {"two_loss_grads": NOISY_TWO_LOSSES},
                  deleted=("ch01_utilidades", "manual_backward_test")),
]
