"""Chapter 7 variants: valid alternatives and realistic mistakes, each with its label."""

import torch
import torch.nn.functional as F

from autograder.chapters.ch07.student import (
    FORMA_PUBLICA_CUANTIZADOR,
    FORMA_PUBLICA_SOFTPLUS,
    FORMAS_PUBLICAS_CHECKPOINT,
    FORMAS_PUBLICAS_LINEAL,
    construir_checkpoint,
    construir_cuantizador,
    construir_lineal_tanh,
    construir_softplus,
)
from autograder.corpus import CORRECT, Registry
from autograder.hidden.reference import load_reference

reference = load_reference("ch07")
from autograder.submissions import SampleStudent

registry = Registry()
variant = registry.variant

SP = "stable_softplus"
LT = "linear_tanh"
QS = "quantize_ste"
CK = "checkpoint_apply"


# ---------------------------------------------------------------- stable_softplus
def _softplus_function(forward, backward, save="x"):
    """A Function class from a forward formula f(x, beta) and a local derivative d(x, out, beta)."""

    class Softplus(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, beta):
            out = forward(x, beta)
            ctx.save_for_backward(x, out)
            ctx.beta = beta
            return out

        @staticmethod
        def backward(ctx, grad_output):
            x, out = ctx.saved_tensors
            return backward(grad_output, x, out, ctx.beta), None

    return Softplus


def _stable(x, beta):
    return torch.logaddexp(beta * x, torch.zeros_like(x)) / beta


@variant(SP, CORRECT)
def softplus_from_saved_output(x, beta):
    # sigmoid(beta x) = 1 - exp(-beta * softplus): only the output is needed.
    class Softplus(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, beta):
            out = torch.where(x > 0, x + torch.log1p(torch.exp(-beta * x)) / beta,
                              torch.log1p(torch.exp(beta * x)) / beta)
            ctx.save_for_backward(out)
            ctx.beta = beta
            return out

        @staticmethod
        def backward(ctx, grad_output):
            (out,) = ctx.saved_tensors
            return grad_output * -torch.expm1(-ctx.beta * out), None

    return Softplus.apply(x, beta)


@variant(SP, CORRECT)
def softplus_threshold_and_stable_sigmoid(x, beta):
    # PyTorch's own trick: linear above a threshold; 1 / (1 + exp(-z)) is safe for any z.
    def forward(x, beta):
        z = beta * x
        return torch.where(z > 20, x, torch.log1p(torch.exp(z.clamp(max=20))) / beta)

    def backward(g, x, out, beta):
        return g / (1 + torch.exp(-beta * x))

    return _softplus_function(forward, backward).apply(x, beta)


@variant(SP, "softplus_desborda")
def softplus_naive_log_exp(x, beta):
    return _softplus_function(lambda x, b: torch.log(1 + torch.exp(b * x)) / b,
                              lambda g, x, out, b: g * torch.sigmoid(b * x)).apply(x, beta)


@variant(SP, "sin_grad_output")
def softplus_forgets_grad_output(x, beta):
    return _softplus_function(_stable, lambda g, x, out, b: torch.sigmoid(b * x)).apply(x, beta)


@variant(SP, "sigmoide_sin_beta")
def softplus_derivative_ignores_beta(x, beta):
    return _softplus_function(_stable, lambda g, x, out, b: g * torch.sigmoid(x)).apply(x, beta)


@variant(SP, "gradiente_por_beta")
def softplus_derivative_with_extra_beta(x, beta):
    return _softplus_function(_stable,
                              lambda g, x, out, b: g * b * torch.sigmoid(b * x)).apply(x, beta)


@variant(SP, "gradientes_por_entrada")
def softplus_one_gradient_for_two_inputs(x, beta):
    class Softplus(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, beta):
            ctx.save_for_backward(x)
            ctx.beta = beta
            return _stable(x, beta)

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return grad_output * torch.sigmoid(ctx.beta * x)  # no None for beta

    return Softplus.apply(x, beta)


@variant(SP, "sin_function_propia")
def softplus_plain_autograd(x, beta):
    return F.softplus(x, beta=beta)


@variant(SP, "salida_sin_grafo")
def softplus_under_no_grad(x, beta):
    with torch.no_grad():
        return _stable(x, beta)


@variant(SP, CORRECT)
def softplus_with_a_second_output(x, beta):
    # PyTorch's docs: an intermediate returned as a second, non-differentiable output.
    class Softplus(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, beta):
            s = torch.sigmoid(beta * x)
            ctx.mark_non_differentiable(s)
            ctx.save_for_backward(s)
            return _stable(x, beta), s

        @staticmethod
        def backward(ctx, grad_output, grad_s):
            (s,) = ctx.saved_tensors
            return grad_output * s, None

    out, _ = Softplus.apply(x, beta)
    return out


@variant(SP, "softplus_sin_dividir_por_beta")
def softplus_forgets_divide_by_beta(x, beta):
    return _softplus_function(lambda x, b: _stable(x, b) * b,
                              lambda g, x, out, b: g * torch.sigmoid(b * x)).apply(x, beta)


@variant(SP, "gradiente_entre_beta")
def softplus_derivative_over_beta(x, beta):
    return _softplus_function(_stable,
                              lambda g, x, out, b: g * torch.sigmoid(b * x) / b).apply(x, beta)


@variant(SP, "sigmoide_invertida")
def softplus_sigmoid_of_minus_x(x, beta):
    return _softplus_function(_stable,
                              lambda g, x, out, b: g * torch.sigmoid(-b * x)).apply(x, beta)


@variant(SP, "sigmoide_desborda")
def softplus_naive_sigmoid(x, beta):
    return _softplus_function(
        _stable, lambda g, x, out, b: g * torch.exp(b * x) / (1 + torch.exp(b * x))).apply(x, beta)


@variant(SP, "gradcheck_falla")
def softplus_derivative_of_the_wrong_function(x, beta):
    return _softplus_function(_stable,
                              lambda g, x, out, b: g * torch.tanh(b * x)).apply(x, beta)


@variant(SP, "function_lee_fuera_de_ctx")
def softplus_backward_reads_the_closure(x, beta):
    class Softplus(torch.autograd.Function):
        @staticmethod
        def forward(ctx, t, b):
            ctx.save_for_backward(t)
            return _stable(t, b)

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output * torch.sigmoid(beta * x.detach()), None  # x of the closure

    return Softplus.apply(x, beta)


@variant(SP, "function_autograd_en_backward")
def softplus_backward_through_autograd(x, beta):
    class Softplus(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, beta):
            ctx.save_for_backward(x)
            ctx.beta = beta
            return _stable(x, beta)

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            with torch.enable_grad():
                t = x.detach().requires_grad_(True)
                (grad,) = torch.autograd.grad(_stable(t, ctx.beta), t, grad_output)
            return grad, None

    return Softplus.apply(x, beta)


@variant(SP, "efecto_secundario")
def softplus_scales_x_in_place(x, beta):
    class Softplus(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, beta):
            z = x.mul_(beta)  # the caller's x now holds beta·x
            ctx.save_for_backward(x)
            ctx.beta = beta
            return _stable(z, 1.0) / beta

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return grad_output * torch.sigmoid(ctx.beta * x), None

    return Softplus.apply(x, beta)


@variant(SP, "sin_implementar")
def softplus_stub(x, beta):
    raise NotImplementedError()


@variant(SP, "resultado_fijo")
def softplus_hardcoded(x, beta):
    ejemplo = construir_softplus(torch.Generator().manual_seed(1), FORMA_PUBLICA_SOFTPLUS)
    return reference.stable_softplus(ejemplo["x"], ejemplo["beta"])


# ---------------------------------------------------------------- linear_tanh
def _linear_tanh_function(save, backward):
    """A Function whose forward saves ``save(x, weight, bias, z, out)``."""

    class LinearTanh(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, weight, bias):
            z = x @ weight.T + bias
            out = torch.tanh(z)
            ctx.save_for_backward(*save(x, weight, bias, z, out))
            return out

        @staticmethod
        def backward(ctx, grad_output):
            return backward(ctx, grad_output, *ctx.saved_tensors)

    return LinearTanh


@variant(LT, CORRECT)
def linear_tanh_saves_preactivation(x, weight, bias):
    # Saving z instead of the output costs the same; backward recomputes tanh.
    def backward(ctx, g, x, weight, z):
        grad_z = g / torch.cosh(z) ** 2
        return (torch.mm(grad_z, weight) if ctx.needs_input_grad[0] else None,
                torch.mm(grad_z.t(), x) if ctx.needs_input_grad[1] else None,
                grad_z.sum(dim=0) if ctx.needs_input_grad[2] else None)

    return _linear_tanh_function(lambda x, w, b, z, out: (x, w, z), backward).apply(
        x, weight, bias)


@variant(LT, CORRECT)
def linear_tanh_einsum_and_addmm(x, weight, bias):
    class LinearTanh(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, weight, bias):
            out = torch.addmm(bias, x, weight.t()).tanh()
            ctx.save_for_backward(x, weight, out)
            return out

        @staticmethod
        def backward(ctx, grad_output):
            x, weight, out = ctx.saved_tensors
            grad_z = grad_output * (1 - out.pow(2))
            grad_x = grad_w = grad_b = None
            if ctx.needs_input_grad[0]:
                grad_x = torch.einsum("nh,hd->nd", grad_z, weight)
            if ctx.needs_input_grad[1]:
                grad_w = torch.einsum("nh,nd->hd", grad_z, x)
            if ctx.needs_input_grad[2]:
                grad_b = grad_z.sum(0)
            return grad_x, grad_w, grad_b

    return LinearTanh.apply(x, weight, bias)


@variant(LT, CORRECT)
def linear_tanh_row_by_row(x, weight, bias):
    # Loops over the rows of ∂L/∂z: tensors of the bias's shape, and with N = 1 (or the other
    # rows 0) one equal to its gradient, appear in backward even when the bias needs none.
    def backward(ctx, g, x, weight, out):
        grad_z = g * (1 - out * out)
        need_x, need_w, need_b = ctx.needs_input_grad
        grad_x = grad_z.matmul(weight) if need_x else None
        grad_w = grad_b = None
        if need_w:
            grad_w = torch.zeros_like(weight)
            for n in range(x.shape[0]):
                grad_w = grad_w + torch.outer(grad_z[n], x[n])
        if need_b:
            grad_b = torch.zeros_like(grad_z[0])
            for n in range(grad_z.shape[0]):
                grad_b = grad_b + grad_z[n]
        return grad_x, grad_w, grad_b

    return _linear_tanh_function(lambda x, w, b, z, out: (x, w, out), backward).apply(
        x, weight, bias)


def _all_grads(ctx, g, x, weight, out, *rest):
    grad_z = g * (1 - out**2)
    return grad_z @ weight, grad_z.T @ x, grad_z.sum(0)


def _needed_grads(ctx, g, x, weight, out, *rest):
    """Only the gradients ``ctx.needs_input_grad`` asks for, each computed only then."""
    grad_z = g * (1 - out**2)
    need_x, need_w, need_b = ctx.needs_input_grad[:3]
    return (grad_z @ weight if need_x else None, grad_z.T @ x if need_w else None,
            grad_z.sum(0) if need_b else None)


@variant(LT, "guarda_de_mas")
def linear_tanh_saves_everything(x, weight, bias):
    return _linear_tanh_function(lambda x, w, b, z, out: (x, w, out, b, z),
                                 _needed_grads).apply(x, weight, bias)


@variant(LT, "tensores_en_ctx")
def linear_tanh_tensors_as_ctx_attributes(x, weight, bias):
    class LinearTanh(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, weight, bias):
            ctx.x, ctx.weight = x, weight
            ctx.out = torch.tanh(x @ weight.T + bias)
            return ctx.out

        @staticmethod
        def backward(ctx, grad_output):
            return _needed_grads(ctx, grad_output, ctx.x, ctx.weight, ctx.out)

    return LinearTanh.apply(x, weight, bias)


@variant(LT, "ignora_needs_input_grad")
def linear_tanh_always_all_gradients(x, weight, bias):
    return _linear_tanh_function(lambda x, w, b, z, out: (x, w, out), _all_grads).apply(
        x, weight, bias)


@variant(LT, "derivada_tanh")
def linear_tanh_derivative_of_z(x, weight, bias):
    def backward(ctx, g, x, weight, z):
        grad_z = g * (1 - z**2)  # 1 - z² instead of 1 - tanh(z)²
        return grad_z @ weight, grad_z.T @ x, grad_z.sum(0)

    return _linear_tanh_function(lambda x, w, b, z, out: (x, w, z), backward).apply(
        x, weight, bias)


@variant(LT, "forma_gradiente_function")
def linear_tanh_weight_gradient_transposed(x, weight, bias):
    def backward(ctx, g, x, weight, out):
        grad_z = g * (1 - out**2)
        return grad_z @ weight, x.T @ grad_z, grad_z.sum(0)

    return _linear_tanh_function(lambda x, w, b, z, out: (x, w, out), backward).apply(
        x, weight, bias)


@variant(LT, "grad_output_modificado")
def linear_tanh_in_place_on_grad_output(x, weight, bias):
    def backward(ctx, g, x, weight, out):
        grad_z = g.mul_(1 - out**2)
        return _needed_grads(ctx, grad_z, x, weight, torch.zeros_like(out))

    return _linear_tanh_function(lambda x, w, b, z, out: (x, w, out), backward).apply(
        x, weight, bias)


@variant(LT, "sin_function_propia")
def linear_tanh_plain_autograd(x, weight, bias):
    return torch.tanh(F.linear(x, weight, bias))


@variant(LT, CORRECT)
def linear_tanh_saves_none_for_what_it_skips(x, weight, bias):
    # Saves None in place of what backward will not need (x when weight needs no grad...).
    class LinearTanh(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, weight, bias):
            out = torch.tanh(F.linear(x, weight, bias))
            need_x, need_w = ctx.needs_input_grad[:2]
            ctx.save_for_backward(x if need_w else None, weight if need_x else None, out)
            return out

        @staticmethod
        def backward(ctx, grad_output):
            x, weight, out = ctx.saved_tensors
            grad_z = grad_output * (1 - out * out)
            return (grad_z @ weight if ctx.needs_input_grad[0] else None,
                    grad_z.T @ x if ctx.needs_input_grad[1] else None,
                    grad_z.sum(0) if ctx.needs_input_grad[2] else None)

    return LinearTanh.apply(x, weight, bias)


_LAST = {}


@variant(LT, "function_estado_compartido")
def linear_tanh_global_storage(x, weight, bias):
    class LinearTanh(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, weight, bias):
            out = torch.tanh(x @ weight.T + bias)
            _LAST.update(x=x, weight=weight, out=out)  # a module-level dict, not ctx
            return out

        @staticmethod
        def backward(ctx, grad_output):
            return _needed_grads(ctx, grad_output, _LAST["x"], _LAST["weight"], _LAST["out"])

    return LinearTanh.apply(x, weight, bias)


@variant(LT, "ignora_needs_input_grad")
def linear_tanh_needs_input_grad_for_x_only(x, weight, bias):
    def backward(ctx, g, x, weight, out):
        grad_z = g * (1 - out**2)
        return (grad_z @ weight if ctx.needs_input_grad[0] else None, grad_z.T @ x,
                grad_z.sum(0))

    return _linear_tanh_function(lambda x, w, b, z, out: (x, w, out), backward).apply(
        x, weight, bias)


@variant(LT, "grad_bias_media")
def linear_tanh_bias_gradient_mean(x, weight, bias):
    def backward(ctx, g, x, weight, out):
        grads = list(_needed_grads(ctx, g, x, weight, out))
        if grads[2] is not None:
            grads[2] = (g * (1 - out**2)).mean(0)
        return tuple(grads)

    return _linear_tanh_function(lambda x, w, b, z, out: (x, w, out), backward).apply(
        x, weight, bias)


@variant(LT, "derivada_tanh")
def linear_tanh_one_minus_y(x, weight, bias):
    def backward(ctx, g, x, weight, out):
        grad_z = g * (1 - out)  # 1 − y for 1 − y²
        grads = (grad_z @ weight, grad_z.T @ x, grad_z.sum(0))
        return tuple(gr if need else None for gr, need in zip(grads, ctx.needs_input_grad))

    return _linear_tanh_function(lambda x, w, b, z, out: (x, w, out), backward).apply(
        x, weight, bias)



@variant(LT, "backward_formas_incompatibles")
def linear_tanh_grad_x_with_weight_transposed(x, weight, bias):
    def backward(ctx, g, x, weight, out):
        grad_z = g * (1 - out**2)
        grads = (grad_z @ weight.T, grad_z.T @ x, grad_z.sum(0))  # weight.T as in forward
        return tuple(gr if need else None for gr, need in zip(grads, ctx.needs_input_grad))

    return _linear_tanh_function(lambda x, w, b, z, out: (x, w, out), backward).apply(
        x, weight, bias)

@variant(LT, "sin_implementar")
def linear_tanh_stub(x, weight, bias):
    raise NotImplementedError()


@variant(LT, "resultado_fijo")
def linear_tanh_hardcoded(x, weight, bias):
    ejemplo = construir_lineal_tanh(torch.Generator().manual_seed(2),
                                    FORMAS_PUBLICAS_LINEAL[0])
    return reference.linear_tanh(ejemplo["x"], ejemplo["weight"], ejemplo["bias"])


# ---------------------------------------------------------------- quantize_ste
@variant(QS, CORRECT)
def quantize_ste_detach_trick(x, step, levels):
    # The same estimator without a Function: the forward value is q, the gradient that of xc.
    xc = x.clamp(-levels * step, levels * step)
    q = torch.round(xc / step) * step
    return xc + (q - xc).detach()


@variant(QS, CORRECT)
def quantize_ste_round_then_clip(x, step, levels):
    class Quantize(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, step, levels):
            ctx.save_for_backward(x)
            ctx.limit = levels * step
            return torch.clamp(torch.round(x * (1 / step)) * step, -ctx.limit, ctx.limit)

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return torch.where(x.abs() > ctx.limit, torch.zeros_like(grad_output),
                               grad_output), None, None

    return Quantize.apply(x, step, levels)


def _quantize_function(forward, backward):
    class Quantize(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, step, levels):
            ctx.save_for_backward(x)
            ctx.limit = levels * step
            return forward(x, step, levels)

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return backward(grad_output, x, ctx.limit), None, None

    return Quantize


def _quantized(x, step, levels):
    return torch.round(x.clamp(-levels * step, levels * step) / step) * step


def _masked(g, x, limit):
    return g * (x.abs() <= limit)


@variant(QS, "redondeo_sin_ste")
def quantize_plain_round(x, step, levels):
    return torch.round(x.clamp(-levels * step, levels * step) / step) * step


@variant(QS, "ste_sin_recorte")
def quantize_identity_everywhere(x, step, levels):
    return _quantize_function(_quantized, lambda g, x, limit: g).apply(x, step, levels)


@variant(QS, "ste_borde_excluido")
def quantize_strict_mask(x, step, levels):
    limit = levels * step
    q = torch.round(x.clamp(-limit, limit) / step) * step
    keep = (x.abs() < limit).to(x.dtype)  # < drops the two ends of the range
    return x * keep + (q - x * keep).detach()


@variant(QS, "cuantiza_sin_escalar")
def quantize_returns_levels(x, step, levels):
    return _quantize_function(lambda x, s, n: torch.round(x.clamp(-n * s, n * s) / s),
                              _masked).apply(x, step, levels)


@variant(QS, "cuantiza_sin_recorte")
def quantize_without_clipping(x, step, levels):
    return _quantize_function(lambda x, s, n: torch.round(x / s) * s, _masked).apply(
        x, step, levels)


@variant(QS, "grad_output_modificado")
def quantize_masks_grad_output_in_place(x, step, levels):
    def backward(g, x, limit):
        g[x.abs() > limit] = 0
        return g

    return _quantize_function(_quantized, backward).apply(x, step, levels)


@variant(QS, "gradientes_por_entrada")
def quantize_forgets_the_nones(x, step, levels):
    class Quantize(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, step, levels):
            ctx.save_for_backward(x.abs() <= levels * step)
            return _quantized(x, step, levels)

        @staticmethod
        def backward(ctx, grad_output):
            (inside,) = ctx.saved_tensors
            return grad_output * inside

    return Quantize.apply(x, step, levels)


@variant(QS, CORRECT)
def quantize_ste_saves_the_mask(x, step, levels):
    # A boolean mask is all backward needs; torch.where keeps grad_output's dtype.
    class Quantize(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, step, levels):
            limit = levels * step
            ctx.save_for_backward((x >= -limit) & (x <= limit))
            return torch.round(torch.clamp(x, min=-limit, max=limit) / step) * step

        @staticmethod
        def backward(ctx, grad_output):
            (inside,) = ctx.saved_tensors
            return torch.where(inside, grad_output, torch.zeros_like(grad_output)), None, None

    return Quantize.apply(x, step, levels)


@variant(QS, "ste_recorte_un_lado")
def quantize_one_sided_mask(x, step, levels):
    return _quantize_function(_quantized, lambda g, x, limit: g * (x <= limit)).apply(
        x, step, levels)


@variant(QS, "ste_mascara_redondeada")
def quantize_fake_quantize_builtin(x, step, levels):
    return torch.fake_quantize_per_tensor_affine(x, step, 0, -levels, levels)


@variant(QS, "ste_borde_a_medias")
def quantize_min_max_clamp(x, step, levels):
    limit = levels * step
    xc = torch.minimum(torch.maximum(x, torch.full_like(x, -limit)), torch.full_like(x, limit))
    return xc + (torch.round(xc / step) * step - xc).detach()


@variant(QS, "rango_sin_step")
def quantize_range_ignores_step(x, step, levels):
    xc = x.clamp(-levels, levels)  # ±levels, not ±levels·step
    return xc + (torch.round(xc / step) * step - xc).detach()


@variant(QS, "redondeo_equivocado")
def quantize_truncates(x, step, levels):
    return _quantize_function(
        lambda x, s, n: torch.trunc(x.clamp(-n * s, n * s) / s) * s, _masked).apply(
        x, step, levels)


@variant(QS, "sin_implementar")
def quantize_stub(x, step, levels):
    raise NotImplementedError()


@variant(QS, "resultado_fijo")
def quantize_hardcoded(x, step, levels):
    ejemplo = construir_cuantizador(torch.Generator().manual_seed(3),
                                    FORMA_PUBLICA_CUANTIZADOR)
    return reference.quantize_ste(ejemplo["x"], ejemplo["step"], ejemplo["levels"])


# ---------------------------------------------------------------- checkpoint_apply
def _checkpoint(backward, forward=None):
    """A checkpoint Function: forward runs fn without a graph and saves the inputs (or runs
    ``forward(ctx, fn, x, *params)``); ``backward(ctx, grad_output)`` as given."""

    class Checkpoint(torch.autograd.Function):
        @staticmethod
        def forward(ctx, fn, x, *params):
            if forward is not None:
                return forward(ctx, fn, x, *params)
            ctx.fn = fn
            ctx.save_for_backward(x, *params)
            return fn(x, *params)  # autograd is already off inside forward

    Checkpoint.backward = staticmethod(backward)
    return Checkpoint


def _detached_copies(ctx):
    return [t.detach().requires_grad_(needed)
            for t, needed in zip(ctx.saved_tensors, ctx.needs_input_grad[1:])]


def _grad_of_those_needed(ctx, grad_output):
    inputs = _detached_copies(ctx)
    with torch.enable_grad():
        output = ctx.fn(*inputs)
    wanted = [t for t in inputs if t.requires_grad]
    grads = iter(torch.autograd.grad(output, wanted, grad_output))
    return [next(grads) if t.requires_grad else None for t in inputs]


@variant(CK, CORRECT)
def checkpoint_with_autograd_grad(fn, x, *params):
    def backward(ctx, grad_output):
        return (None, *_grad_of_those_needed(ctx, grad_output))

    return _checkpoint(backward).apply(fn, x, *params)


@variant(CK, CORRECT)
def checkpoint_allow_unused(fn, x, *params):
    # Copies that all require grad (cloned, not just detached); unwanted gradients dropped.
    class Checkpoint(torch.autograd.Function):
        @staticmethod
        def forward(ctx, fn, x, *params):
            ctx.fn = fn
            ctx.save_for_backward(x, *params)
            with torch.no_grad():
                return fn(x, *params)

        @staticmethod
        def backward(ctx, grad_output):
            copies = [t.detach().clone().requires_grad_(True) for t in ctx.saved_tensors]
            with torch.enable_grad():
                output = ctx.fn(*copies)
                grads = torch.autograd.grad(output, copies, grad_output, allow_unused=True)
            return (None, *(g if needed else None
                            for g, needed in zip(grads, ctx.needs_input_grad[1:])))

    return Checkpoint.apply(fn, x, *params)


@variant(CK, "checkpoint_guarda_activaciones")
def checkpoint_forward_keeps_the_graph(fn, x, *params):
    def forward(ctx, fn, x, *params):
        ctx.fn = fn
        ctx.save_for_backward(x, *params)
        with torch.enable_grad():  # "backward will need the graph"
            inputs = [t.detach().requires_grad_(True) for t in (x, *params)]
            output = fn(*inputs)
        return output.detach()

    def backward(ctx, grad_output):
        return (None, *_grad_of_those_needed(ctx, grad_output))

    return _checkpoint(backward, forward).apply(fn, x, *params)


@variant(CK, "sin_function_propia")
def checkpoint_plain_call(fn, x, *params):
    return fn(x, *params)


@variant(CK, "checkpoint_recalculo_sin_grafo")
def checkpoint_backward_without_enable_grad(fn, x, *params):
    def backward(ctx, grad_output):
        inputs = _detached_copies(ctx)
        output = ctx.fn(*inputs)  # autograd is off inside backward: no graph
        wanted = [t for t in inputs if t.requires_grad]
        grads = iter(torch.autograd.grad(output, wanted, grad_output))
        return (None, *(next(grads) if t.requires_grad else None for t in inputs))

    return _checkpoint(backward).apply(fn, x, *params)


@variant(CK, "checkpoint_sin_detach")
def checkpoint_recomputes_on_the_saved_tensors(fn, x, *params):
    def backward(ctx, grad_output):
        inputs = ctx.saved_tensors  # still attached to the caller's graph
        with torch.enable_grad():
            output = ctx.fn(*inputs)
        torch.autograd.backward(output, grad_output)
        return (None, *(t.grad if needed else None
                        for t, needed in zip(inputs, ctx.needs_input_grad[1:])))

    return _checkpoint(backward).apply(fn, x, *params)


@variant(CK, "checkpoint_orden_gradientes")
def checkpoint_x_gradient_last(fn, x, *params):
    def backward(ctx, grad_output):
        grad_x, *grad_params = _grad_of_those_needed(ctx, grad_output)
        return (None, *grad_params, grad_x)

    return _checkpoint(backward).apply(fn, x, *params)


@variant(CK, "gradientes_por_entrada")
def checkpoint_forgets_the_none_for_fn(fn, x, *params):
    def backward(ctx, grad_output):
        return tuple(_grad_of_those_needed(ctx, grad_output))

    return _checkpoint(backward).apply(fn, x, *params)


@variant(CK, "checkpoint_sin_parametros")
def checkpoint_only_x(fn, x, *params):
    def backward(ctx, grad_output):
        x, *params = ctx.saved_tensors
        x = x.detach().requires_grad_(True)
        with torch.enable_grad():
            output = ctx.fn(x, *(p.detach() for p in params))
        (grad_x,) = torch.autograd.grad(output, x, grad_output)
        return (None, grad_x if ctx.needs_input_grad[1] else None, *[None] * len(params))

    return _checkpoint(backward).apply(fn, x, *params)


@variant(CK, "checkpoint_llamadas_fn")
def checkpoint_recomputes_twice(fn, x, *params):
    def backward(ctx, grad_output):
        inputs = _detached_copies(ctx)
        with torch.enable_grad():
            ctx.fn(*inputs)  # a first look at the output
            output = ctx.fn(*inputs)
        wanted = [t for t in inputs if t.requires_grad]
        grads = iter(torch.autograd.grad(output, wanted, grad_output))
        return (None, *(next(grads) if t.requires_grad else None for t in inputs))

    return _checkpoint(backward).apply(fn, x, *params)


@variant(CK, "ignora_needs_input_grad")
def checkpoint_gradients_for_everything(fn, x, *params):
    def backward(ctx, grad_output):
        inputs = [t.detach().requires_grad_(True) for t in ctx.saved_tensors]
        with torch.enable_grad():
            output = ctx.fn(*inputs)
        return (None, *torch.autograd.grad(output, inputs, grad_output, allow_unused=True))

    return _checkpoint(backward).apply(fn, x, *params)


@variant(CK, "tensores_en_ctx")
def checkpoint_inputs_as_ctx_attribute(fn, x, *params):
    def forward(ctx, fn, x, *params):
        ctx.fn, ctx.entradas = fn, (x, *params)
        return fn(x, *params)

    def backward(ctx, grad_output):
        inputs = [t.detach().requires_grad_(needed)
                  for t, needed in zip(ctx.entradas, ctx.needs_input_grad[1:])]
        with torch.enable_grad():
            output = ctx.fn(*inputs)
        torch.autograd.backward(output, grad_output)
        return (None, *(t.grad for t in inputs))

    return _checkpoint(backward, forward).apply(fn, x, *params)


@variant(CK, "sin_implementar")
def checkpoint_stub(fn, x, *params):
    raise NotImplementedError()


@variant(CK, "resultado_fijo")
def checkpoint_hardcoded(fn, x, *params):
    ejemplo = construir_checkpoint(torch.Generator().manual_seed(4), FORMAS_PUBLICAS_CHECKPOINT[0])
    return reference.checkpoint_apply(ejemplo["fn"], ejemplo["x"], *ejemplo["params"])


# ---------------------------------------------------------------- one mistake per clause
# Variants added with the clauses (autograder/chapters/ch07/contract.py): each breaks one.
def _sigmoid_function(forward=_stable):
    return _softplus_function(forward, lambda g, x, out, b: g * torch.sigmoid(b * x))


@variant(SP, "dtype")
def softplus_computes_in_float64(x, beta):
    # "float64 for safety": the output comes back float64 for a float32 x.
    return _sigmoid_function(lambda x, b: _stable(x.double(), b)).apply(x, beta)


@variant(SP, "softplus_desborda")
def softplus_threshold_700(x, beta):
    # Linear only above 700, where exp overflows in float64: in float32 it overflows at 88.
    def forward(x, b):
        z = b * x
        return torch.where(z > 700, x, torch.log1p(torch.exp(z.clamp(max=700))) / b)

    return _sigmoid_function(forward).apply(x, beta)


@variant(SP, "excepcion")
def softplus_retains_the_output_grad(x, beta):
    out = _sigmoid_function().apply(x, beta)
    out.retain_grad()  # to look at it while debugging: fails when there is no graph
    return out


@variant(SP, "salida_de_inferencia")
def softplus_forward_under_inference_mode(x, beta):
    class Softplus(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, beta):
            ctx.save_for_backward(x)
            ctx.beta = beta
            with torch.inference_mode():  # "no graph here": an inference tensor comes out
                return _stable(x, beta)

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return grad_output * torch.sigmoid(ctx.beta * x), None

    return Softplus.apply(x, beta)


@variant(SP, "derivada_cero_en_el_origen")
def softplus_zero_at_the_origin(x, beta):
    # The sigmoid split in two strict branches: at beta·x = 0 neither applies.
    def backward(g, x, out, b):
        z = b * x
        positive = 1 / (1 + torch.exp(-z.clamp(min=0)))
        negative = torch.exp(z.clamp(max=0)) / (1 + torch.exp(z.clamp(max=0)))
        return g * (torch.where(z > 0, positive, torch.zeros_like(z))
                    + torch.where(z < 0, negative, torch.zeros_like(z)))

    return _softplus_function(_stable, backward).apply(x, beta)


@variant(SP, "tensores_en_ctx")
def softplus_x_as_ctx_attribute(x, beta):
    class Softplus(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, beta):
            ctx.x, ctx.beta = x, beta
            return _stable(x, beta)

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output * torch.sigmoid(ctx.beta * ctx.x), None

    return Softplus.apply(x, beta)


class _SoftplusBetaOnTheClass(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, beta):
        ctx.save_for_backward(x)
        _SoftplusBetaOnTheClass.beta = beta  # shared by every call
        return _stable(x, beta)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * torch.sigmoid(_SoftplusBetaOnTheClass.beta * x), None


@variant(SP, "function_estado_compartido")
def softplus_beta_as_class_attribute(x, beta):
    return _SoftplusBetaOnTheClass.apply(x, beta)


@variant(SP, "grad_output_modificado")
def softplus_in_place_on_grad_output(x, beta):
    return _softplus_function(
        _stable, lambda g, x, out, b: g.mul_(torch.sigmoid(b * x))).apply(x, beta)


@variant(SP, "efecto_secundario")
def softplus_turns_grad_on(x, beta):
    out = _sigmoid_function().apply(x, beta)
    torch.set_grad_enabled(True)  # "forward turned autograd off: back on": not the caller's
    return out


@variant(SP, "escribe_salida")
def softplus_debug_print(x, beta):
    class Softplus(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, beta):
            ctx.save_for_backward(x)
            ctx.beta = beta
            return _stable(x, beta)

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            print("backward de softplus:", grad_output.shape)  # left from debugging
            return grad_output * torch.sigmoid(ctx.beta * x), None

    return Softplus.apply(x, beta)


def _straight_through(x, step, levels):
    xc = x.clamp(-levels * step, levels * step)
    return xc + (torch.round(xc / step) * step - xc).detach()


@variant(QS, "dtype")
def quantize_computes_in_float64(x, step, levels):
    return _straight_through(x.double(), step, levels)


@variant(QS, "excepcion")
def quantize_retains_the_output_grad(x, step, levels):
    out = _straight_through(x, step, levels)
    out.retain_grad()  # fails when there is no graph
    return out


@variant(QS, "excepcion")
def quantize_hook_only_when_grad_is_on(x, step, levels):
    # The mask as a hook on the output, skipped under no_grad: with autograd on and an x
    # that does not require grad there is still no graph, and register_hook raises.
    limit = levels * step
    inside = x.abs() <= limit
    out = x + (torch.round(x.clamp(-limit, limit) / step) * step - x).detach()
    if torch.is_grad_enabled():
        out.register_hook(lambda grad: grad * inside)
    return out


@variant(QS, "derivada_cero_en_el_origen")
def quantize_sign_times_clamped_magnitude(x, step, levels):
    # sign(x)·min(|x|, L): the same values, but its derivative is 0 at x = 0.
    xc = torch.sign(x) * torch.clamp(x.abs(), max=levels * step)
    return xc + (torch.round(xc / step) * step - xc).detach()


@variant(QS, "no_reconocido")
def quantize_mask_with_a_tolerance(x, step, levels):
    # "for rounding errors": a millesimal tolerance lets through values just outside.
    return _quantize_function(
        _quantized, lambda g, x, limit: g * (x.abs() <= limit + 1e-3)).apply(x, step, levels)


class _QuantizeLimitOnTheClass(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, step, levels):
        ctx.save_for_backward(x)
        _QuantizeLimitOnTheClass.limit = levels * step  # shared by every call
        return _quantized(x, step, levels)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return _masked(grad_output, x, _QuantizeLimitOnTheClass.limit), None, None


@variant(QS, "function_estado_compartido")
def quantize_limit_as_class_attribute(x, step, levels):
    return _QuantizeLimitOnTheClass.apply(x, step, levels)


@variant(QS, "salida_de_inferencia")
def quantize_forward_under_inference_mode(x, step, levels):
    def forward(x, step, levels):
        with torch.inference_mode():
            return _quantized(x, step, levels)

    return _quantize_function(forward, _masked).apply(x, step, levels)


@variant(QS, "efecto_secundario")
def quantize_clamps_x_in_place(x, step, levels):
    with torch.no_grad():
        x.clamp_(-levels * step - step, levels * step + step)  # "far values do not matter"
    return _straight_through(x, step, levels)


@variant(QS, "escribe_salida")
def quantize_debug_print(x, step, levels):
    import sys
    print(f"cuantizo con step={step}, levels={levels}", file=sys.stderr)
    return _straight_through(x, step, levels)


@variant(LT, "forma")
def linear_tanh_squeezes(x, weight, bias):
    out = _linear_tanh_function(lambda x, w, b, z, out: (x, w, out), _needed_grads).apply(
        x, weight, bias)
    return out.squeeze()  # a (1, H) or (N, 1) output loses a dimension


@variant(LT, "no_finito")
def linear_tanh_by_exponentials(x, weight, bias):
    # tanh(z) = (e^2z − 1) / (e^2z + 1): inf / inf for a large z in float32.
    class LinearTanh(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, weight, bias):
            e = torch.exp(2 * (x @ weight.T + bias))
            out = (e - 1) / (e + 1)
            ctx.save_for_backward(x, weight, out)
            return out

        @staticmethod
        def backward(ctx, grad_output):
            return _needed_grads(ctx, grad_output, *ctx.saved_tensors)

    return LinearTanh.apply(x, weight, bias)


@variant(LT, "excepcion")
def linear_tanh_retains_the_output_grad(x, weight, bias):
    out = _linear_tanh_function(lambda x, w, b, z, out: (x, w, out), _needed_grads).apply(
        x, weight, bias)
    out.retain_grad()
    return out


@variant(LT, "salida_de_inferencia")
def linear_tanh_forward_under_inference_mode(x, weight, bias):
    class LinearTanh(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, weight, bias):
            z = x @ weight.T + bias
            ctx.save_for_backward(x, weight, z)
            with torch.inference_mode():
                return torch.tanh(z)

        @staticmethod
        def backward(ctx, grad_output):
            x, weight, z = ctx.saved_tensors
            return _needed_grads(ctx, grad_output, x, weight, torch.tanh(z))

    return LinearTanh.apply(x, weight, bias)


@variant(LT, "guarda_el_sesgo")
def linear_tanh_recomputes_the_output(x, weight, bias):
    # Saves the inputs, bias included, and recomputes tanh in backward.
    def backward(ctx, g, x, weight, bias):
        out = torch.tanh(x @ weight.T + bias)
        return _needed_grads(ctx, g, x, weight, out)

    return _linear_tanh_function(lambda x, w, b, z, out: (x, w, b), backward).apply(
        x, weight, bias)


@variant(LT, "function_autograd_en_backward")
def linear_tanh_backward_through_autograd(x, weight, bias):
    # Saves z and lets autograd differentiate tanh inside backward.
    def backward(ctx, g, x, weight, z):
        with torch.enable_grad():
            leaf = z.detach().requires_grad_(True)
            (grad_z,) = torch.autograd.grad(torch.tanh(leaf), leaf, g)
        return _needed_grads(ctx, grad_z, x, weight, torch.zeros_like(z))

    return _linear_tanh_function(lambda x, w, b, z, out: (x, w, z), backward).apply(
        x, weight, bias)


@variant(LT, "calcula_sin_necesidad")
def linear_tanh_computes_all_then_drops(x, weight, bias):
    # Every gradient computed, the unwanted ones replaced by None only at the end.
    def backward(ctx, g, x, weight, out):
        grads = _all_grads(ctx, g, x, weight, out)
        return tuple(gr if need else None for gr, need in zip(grads, ctx.needs_input_grad))

    return _linear_tanh_function(lambda x, w, b, z, out: (x, w, out), backward).apply(
        x, weight, bias)


@variant(LT, "efecto_secundario")
def linear_tanh_clears_the_stale_grads(x, weight, bias):
    for t in (x, weight, bias):
        t.grad = None  # "a fresh start": the caller's accumulated gradients are lost
    return reference.linear_tanh(x, weight, bias)


@variant(LT, "escribe_salida")
def linear_tanh_debug_print(x, weight, bias):
    print("linear_tanh:", tuple(x.shape), tuple(weight.shape))
    return reference.linear_tanh(x, weight, bias)


@variant(CK, "dtype")
def checkpoint_forward_in_float32(fn, x, *params):
    def forward(ctx, fn, x, *params):
        ctx.fn = fn
        ctx.save_for_backward(x, *params)
        return fn(x.float(), *(p.float() for p in params))  # "float32 is enough"

    def backward(ctx, grad_output):
        return (None, *_grad_of_those_needed(ctx, grad_output))

    return _checkpoint(backward, forward).apply(fn, x, *params)


@variant(CK, "excepcion")
def checkpoint_retains_the_output_grad(fn, x, *params):
    out = reference.checkpoint_apply(fn, x, *params)
    out.retain_grad()
    return out


@variant(CK, "salida_de_inferencia")
def checkpoint_forward_under_inference_mode(fn, x, *params):
    def forward(ctx, fn, x, *params):
        ctx.fn = fn
        ctx.save_for_backward(x, *params)
        with torch.inference_mode():
            return fn(x, *params)

    def backward(ctx, grad_output):
        return (None, *_grad_of_those_needed(ctx, grad_output))

    return _checkpoint(backward, forward).apply(fn, x, *params)


@variant(CK, "checkpoint_llamadas_fn")
def checkpoint_forward_runs_fn_twice(fn, x, *params):
    def forward(ctx, fn, x, *params):
        ctx.fn = fn
        ctx.save_for_backward(x, *params)
        assert fn(x, *params).shape == x.shape  # a first look at the output
        return fn(x, *params)

    def backward(ctx, grad_output):
        return (None, *_grad_of_those_needed(ctx, grad_output))

    return _checkpoint(backward, forward).apply(fn, x, *params)


class _CheckpointFnOnTheClass(torch.autograd.Function):
    @staticmethod
    def forward(ctx, fn, x, *params):
        _CheckpointFnOnTheClass.fn = fn  # shared by every call
        ctx.save_for_backward(x, *params)
        return fn(x, *params)

    @staticmethod
    def backward(ctx, grad_output):
        ctx.fn = _CheckpointFnOnTheClass.fn
        return (None, *_grad_of_those_needed(ctx, grad_output))


@variant(CK, "function_estado_compartido")
def checkpoint_fn_as_class_attribute(fn, x, *params):
    return _CheckpointFnOnTheClass.apply(fn, x, *params)


@variant(CK, "efecto_secundario")
def checkpoint_turns_grad_on(fn, x, *params):
    out = reference.checkpoint_apply(fn, x, *params)
    torch.set_grad_enabled(True)  # "forward ran under no_grad: back on": not the caller's
    return out


@variant(CK, "escribe_salida")
def checkpoint_debug_print(fn, x, *params):
    def backward(ctx, grad_output):
        print("recalculando", len(ctx.saved_tensors), "tensores")
        return (None, *_grad_of_those_needed(ctx, grad_output))

    return _checkpoint(backward).apply(fn, x, *params)



# The caller's no_grad skipped: a graph the caller did not ask for.
@variant(SP, "grafo_bajo_no_grad")
def softplus_enable_grad_around_apply(x, beta):
    with torch.enable_grad():  # "apply needs autograd on"
        return _sigmoid_function().apply(x, beta)


@variant(QS, "grafo_bajo_no_grad")
def quantize_enable_grad_around(x, step, levels):
    with torch.enable_grad():  # "the straight-through trick needs the graph"
        return _straight_through(x, step, levels)


@variant(LT, "grafo_bajo_no_grad")
def linear_tanh_enable_grad_around_apply(x, weight, bias):
    with torch.enable_grad():
        return reference.linear_tanh(x, weight, bias)


@variant(CK, "grafo_bajo_no_grad")
def checkpoint_enable_grad_around_apply(fn, x, *params):
    with torch.enable_grad():  # "backward will recompute: keep autograd on"
        return reference.checkpoint_apply(fn, x, *params)


@variant(CK, "checkpoint_recalcula_sin_copias")
def checkpoint_recomputes_on_the_saved_with_grad(fn, x, *params):
    # The saved tensors as they are (still the caller's), differentiated with autograd.grad.
    def backward(ctx, grad_output):
        inputs = ctx.saved_tensors
        with torch.enable_grad():
            output = ctx.fn(*inputs)
        needed = ctx.needs_input_grad[1:]
        grads = iter(torch.autograd.grad(output, [t for t, n in zip(inputs, needed) if n],
                                         grad_output))
        return (None, *(next(grads) if n else None for n in needed))

    return _checkpoint(backward).apply(fn, x, *params)

# ---------------------------------------------------------------- the sample class
LINEAR_TANH_SAVES_TOO_MUCH = '''def linear_tanh(x, weight, bias):
    class LinearTanh(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, weight, bias):
            z = x @ weight.T + bias
            out = torch.tanh(z)
            ctx.save_for_backward(x, weight, bias, z, out)  # por si acaso, todo
            return out

        @staticmethod
        def backward(ctx, grad_output):
            x, weight, bias, z, out = ctx.saved_tensors
            grad_z = grad_output * (1 - out**2)
            grad_x = grad_z @ weight if ctx.needs_input_grad[0] else None
            grad_w = grad_z.T @ x if ctx.needs_input_grad[1] else None
            grad_b = grad_z.sum(0) if ctx.needs_input_grad[2] else None
            return grad_x, grad_w, grad_b

    return LinearTanh.apply(x, weight, bias)
'''

QUANTIZE_WITHOUT_STE = '''def quantize_ste(x, step, levels):
    limit = levels * step
    return torch.round(torch.clamp(x, -limit, limit) / step) * step  # el gradiente se pierde
'''

CHECKPOINT_WITHOUT_ENABLE_GRAD = '''def checkpoint_apply(fn, x, *params):
    class Checkpoint(torch.autograd.Function):
        @staticmethod
        def forward(ctx, fn, x, *params):
            ctx.fn = fn
            ctx.save_for_backward(x, *params)
            with torch.no_grad():
                return fn(x, *params)

        @staticmethod
        def backward(ctx, grad_output):
            copias = [t.detach().requires_grad_(pide)
                      for t, pide in zip(ctx.saved_tensors, ctx.needs_input_grad[1:])]
            salida = ctx.fn(*copias)  # recalcula... sin grafo
            torch.autograd.backward(salida, grad_output)
            return (None, *(t.grad for t in copias))

    return Checkpoint.apply(fn, x, *params)
'''

SAMPLE_STUDENTS = [
    SampleStudent("carla", "linear_tanh guarda de todo para el backward (crédito parcial)",
                  {"linear_tanh": LINEAR_TANH_SAVES_TOO_MUCH},
                  partial={"linear_tanh_test": 2.25}),
    SampleStudent("dario", "cuantiza con torch.round sin paso directo (crédito parcial)",
                  {"quantize_ste": QUANTIZE_WITHOUT_STE},
                  partial={"quantize_ste_test": 1.25}),
    SampleStudent("irene", "recalcula en backward sin torch.enable_grad (crédito parcial)",
                  {"checkpoint_apply": CHECKPOINT_WITHOUT_ENABLE_GRAD},
                  partial={"checkpoint_apply_test": 2.0}),
]
