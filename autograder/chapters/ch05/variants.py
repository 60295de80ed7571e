"""Chapter 5 variants: valid alternatives and realistic mistakes, each with its label."""

import copy

import torch
import torch.nn.functional as F
from torch import nn

from autograder.chapters.ch05.student import (
    construir_evaluacion,
    construir_modulos,
    mc_a_mano,
    modulos_por_tipo,
    perdida_a_mano,
)
from autograder.corpus import CORRECT, Registry
from autograder.submissions import SampleStudent

registry = Registry()
variant = registry.variant

EV = "evaluate"
MC = "modules_that_change"
MD = "mc_dropout"


# ---------------------------------------------------------------- evaluate
@variant(EV, CORRECT)
def evaluate_inference_mode_and_nll(model, x, y):
    modules = list(model.modules())
    saved = [m.training for m in modules]
    model.train(False)
    with torch.inference_mode():
        log_p = F.log_softmax(model(x), dim=1)
        loss = F.nll_loss(log_p, y)
    for m, mode in zip(modules, saved):
        m.training = mode
    return float(loss)


@variant(EV, CORRECT)
def evaluate_train_per_module_in_order(model, x, y):
    saved = {name: m.training for name, m in model.named_modules()}
    model.eval()
    with torch.no_grad():
        total = F.cross_entropy(model(x), y, reduction="sum").item()
    for name, m in model.named_modules():  # parents first: a child's call comes after
        m.train(saved[name])
    return total / len(y)


@variant(EV, "modelo_en_train")
def evaluate_without_eval(model, x, y):
    with torch.no_grad():
        return F.cross_entropy(model(x), y).item()


@variant(EV, "evaluacion_con_grafo")
def evaluate_without_no_grad(model, x, y):
    saved = {m: m.training for m in model.modules()}
    model.eval()
    loss = F.cross_entropy(model(x), y).item()
    for m, mode in saved.items():
        m.training = mode
    return loss


@variant(EV, "registro_tensor")
def evaluate_returns_a_tensor(model, x, y):
    saved = {m: m.training for m in model.modules()}
    model.eval()
    with torch.no_grad():
        loss = F.cross_entropy(model(x), y)
    for m, mode in saved.items():
        m.training = mode
    return loss


@variant(EV, "modos_no_restaurados")
def evaluate_back_to_train(model, x, y):
    model.eval()
    with torch.no_grad():
        loss = F.cross_entropy(model(x), y).item()
    model.train()
    return loss


@variant(EV, "modos_no_restaurados")
def evaluate_restores_the_root_flag_only(model, x, y):
    was_training = model.training
    model.eval()
    with torch.no_grad():
        loss = F.cross_entropy(model(x), y).item()
    model.train(was_training)
    return loss


@variant(EV, "modelo_en_eval")
def evaluate_leaves_eval_mode(model, x, y):
    model.eval()
    with torch.no_grad():
        return F.cross_entropy(model(x), y).item()


@variant(EV, "sin_implementar")
def evaluate_stub(model, x, y):
    raise NotImplementedError()


@variant(EV, "resultado_fijo")
def evaluate_hardcoded(model, x, y):
    example = construir_evaluacion(torch.Generator().manual_seed(5), (6, 4, 5, 3, 0.5, "mixto"))
    return perdida_a_mano(*example.values())["valor"].item()


# ---------------------------------------------------------------- modules_that_change
def _leaf_inputs(model, x):
    """The input every leaf module receives in an eval-mode forward pass (model restored)."""
    inputs, hooks = {}, []
    for name, m in model.named_modules():
        if not list(m.children()):
            hooks.append(m.register_forward_pre_hook(
                lambda mod, args, name=name: inputs.update({name: args[0]})))
    modes = {m: m.training for m in model.modules()}
    model.eval()
    with torch.no_grad():
        model(x)
    for hook in hooks:
        hook.remove()
    for m, mode in modes.items():
        m.train(mode) if not list(m.children()) else setattr(m, "training", mode)
    return inputs


@variant(MC, CORRECT)
def modules_that_change_in_place_then_restore(model, x):
    inputs = _leaf_inputs(model, x)
    modes = {m: m.training for m in model.modules()}
    state = copy.deepcopy(model.state_dict())
    changed = []
    with torch.no_grad():
        for name, m in model.named_modules():
            if name in inputs:
                out_train = m.train()(inputs[name])
                out_eval = m.eval()(inputs[name])
                if not torch.allclose(out_train, out_eval):
                    changed.append(name)
    model.load_state_dict(state)
    for m, mode in modes.items():
        m.training = mode
    return changed


@variant(MC, CORRECT)
def modules_that_change_whole_copies(model, x):
    # Compare each leaf of two deep copies of the model, one in train and one in eval.
    a, b = copy.deepcopy(model).train(), copy.deepcopy(model).eval()
    seen = {}
    hooks = [m.register_forward_hook(lambda mod, args, out, n=name: seen.update({n: args[0]}))
             for name, m in b.named_modules() if len(list(m.children())) == 0]
    with torch.no_grad():
        b(x)
        for h in hooks:
            h.remove()
        leaves_a = dict(a.named_modules())
        result = [name for name, inp in seen.items()
                  if not torch.equal(leaves_a[name](inp), dict(b.named_modules())[name](inp))]
    return sorted(result, reverse=True)


@variant(MC, "modulo_sin_efecto_listado")
def modules_that_change_by_type(model, x):
    return [name for name, m in model.named_modules()
            if isinstance(m, (nn.Dropout, nn.BatchNorm1d))]


@variant(MC, "modulos_solo_por_tipo")
def modules_that_change_by_type_and_settings(model, x):
    return [name for name, m in model.named_modules()
            if (isinstance(m, nn.Dropout) and m.p > 0)
            or (isinstance(m, nn.BatchNorm1d) and m.track_running_stats)]


@variant(MC, "contenedor_listado")
def modules_that_change_including_containers(model, x):
    probe = copy.deepcopy(model).eval()
    captured = {}

    def keep(name):
        return lambda mod, args: captured.update({name: args[0]})

    hooks = [m.register_forward_pre_hook(keep(name)) for name, m in probe.named_modules()]
    changed = []
    with torch.no_grad():
        probe(x)
        for h in hooks:
            h.remove()
        for name, m in probe.named_modules():  # every module, containers included
            twin = copy.deepcopy(m)
            if not torch.equal(twin.train()(captured[name]), twin.eval()(captured[name])):
                changed.append(name)
    return changed


@variant(MC, "buffers_cambiados")
def modules_that_change_without_restoring_buffers(model, x):
    inputs = _leaf_inputs(model, x)
    modes = {m: m.training for m in model.modules()}
    changed = []
    with torch.no_grad():
        for name, m in model.named_modules():
            if name in inputs and not torch.equal(m.train()(inputs[name]), m.eval()(inputs[name])):
                changed.append(name)
    for m, mode in modes.items():
        m.training = mode
    return changed


@variant(MC, "modelo_en_eval")
def modules_that_change_left_in_eval(model, x):
    inputs = {}
    hooks = [m.register_forward_hook(lambda mod, args, out, n=name: inputs.update({n: args[0]}))
             for name, m in model.named_modules() if not list(m.children())]
    model.eval()
    with torch.no_grad():
        model(x)
        for h in hooks:
            h.remove()
        return [name for name, m in model.named_modules() if name in inputs
                and not torch.equal(copy.deepcopy(m).train()(inputs[name]),
                                    copy.deepcopy(m).eval()(inputs[name]))]


@variant(MC, "modos_no_restaurados")
def modules_that_change_restores_the_root_flag_only(model, x):
    was_training = model.training
    state = copy.deepcopy(model.state_dict())
    inputs = _leaf_inputs(model, x)
    changed = []
    with torch.no_grad():
        for name, m in model.named_modules():
            if name in inputs and not torch.equal(m.train()(inputs[name]), m.eval()(inputs[name])):
                changed.append(name)
    model.load_state_dict(state)
    model.train(was_training)  # a frozen BatchNorm comes back in train mode
    return changed


@variant(MC, "sin_implementar")
def modules_that_change_stub(model, x):
    raise NotImplementedError()


@variant(MC, "resultado_fijo")
def modules_that_change_hardcoded(model, x):
    example = construir_modulos(torch.Generator().manual_seed(6),
                                (5, 3, 4, 2, "BRZGSDT", "mixto"))
    return modulos_por_tipo(*example.values())["cambian"]


# ---------------------------------------------------------------- mc_dropout
def _dropout_only(model):
    saved = [(m, m.training) for m in model.modules()]
    model.eval()
    for m in model.modules():
        if isinstance(m, nn.Dropout):
            m.train()
    return saved


@variant(MD, CORRECT)
def mc_dropout_running_sums(model, x, n_samples):
    saved = _dropout_only(model)
    total = total_sq = 0
    with torch.inference_mode():
        for _ in range(n_samples):
            out = model(x)
            total = total + out
            total_sq = total_sq + out * out
    for m, mode in saved:
        m.training = mode
    mean = total / n_samples
    var = (total_sq - n_samples * mean * mean) / (n_samples - 1)
    return mean.clone(), var.clamp(min=0).sqrt().clone()


@variant(MD, CORRECT)
def mc_dropout_var_by_name(model, x, n_samples):
    modes = {name: m.training for name, m in model.named_modules()}
    model.eval()
    for m in model.modules():
        if type(m).__name__.startswith("Dropout"):
            m.training = True
    outs = []
    with torch.no_grad():
        for _ in range(n_samples):
            outs.append(model(x))
    for name, m in model.named_modules():
        m.training = modes[name]
    stacked = torch.stack(outs, dim=-1)
    return stacked.mean(dim=-1), stacked.var(dim=-1, correction=1).sqrt()


@variant(MD, CORRECT)
def mc_dropout_on_a_copy(model, x, n_samples):
    # The caller's model is never touched: its modes need no restoring.
    copy_ = copy.deepcopy(model)
    _dropout_only(copy_)
    with torch.no_grad():
        samples = torch.stack([copy_(x) for _ in range(n_samples)])
    return samples.mean(0), samples.std(0)


def _mc(model, x, n_samples, setup, unbiased=True, no_grad=True, restore=True):
    saved = [(m, m.training) for m in model.modules()]
    setup(model)
    with torch.set_grad_enabled(not no_grad):
        samples = torch.stack([model(x) for _ in range(n_samples)])
    if restore:
        for m, mode in saved:
            m.training = mode
    return samples.mean(0), samples.std(0, unbiased=unbiased)


@variant(MD, "mc_batchnorm_en_train")
def mc_dropout_whole_model_in_train(model, x, n_samples):
    return _mc(model, x, n_samples, lambda m: m.train())


@variant(MD, "mc_sin_dropout")
def mc_dropout_whole_model_in_eval(model, x, n_samples):
    return _mc(model, x, n_samples, lambda m: m.eval())


@variant(MD, "mc_std_sesgada")
def mc_dropout_biased_std(model, x, n_samples):
    return _mc(model, x, n_samples, _dropout_only, unbiased=False)


@variant(MD, "mc_llamadas")
def mc_dropout_one_batched_pass(model, x, n_samples):
    saved = _dropout_only(model)
    with torch.no_grad():
        samples = model(x.repeat(n_samples, 1)).reshape(n_samples, *x.shape[:1], -1)
    for m, mode in saved:
        m.training = mode
    return samples.mean(0), samples.std(0)


@variant(MD, "evaluacion_con_grafo")
def mc_dropout_without_no_grad(model, x, n_samples):
    mean, std = _mc(model, x, n_samples, _dropout_only, no_grad=False)
    return mean.detach(), std.detach()


@variant(MD, "modos_no_restaurados")
def mc_dropout_not_restored(model, x, n_samples):
    return _mc(model, x, n_samples, _dropout_only, restore=False)


@variant(MD, "modos_no_restaurados")
def mc_dropout_restores_the_root_flag_only(model, x, n_samples):
    was_training = model.training
    _dropout_only(model)
    with torch.no_grad():
        samples = torch.stack([model(x) for _ in range(n_samples)])
    model.train(was_training)  # a frozen BatchNorm comes back in train mode
    return samples.mean(0), samples.std(0)


@variant(MD, "sin_implementar")
def mc_dropout_stub(model, x, n_samples):
    raise NotImplementedError()


@variant(MD, "resultado_fijo")
def mc_dropout_hardcoded(model, x, n_samples):
    from autograder.chapters.ch05.student import construir_mc

    example = construir_mc(torch.Generator().manual_seed(7), (5, 4, 6, 3, 0.4, 8, "mixto"))
    expected = mc_a_mano(*example.values())
    return expected["media"], expected["std"]


# ---------------------------------------------------------------- sample class
EVALUATE_BACK_TO_TRAIN = '''def evaluate(model, x, y):
    model.eval()
    with torch.no_grad():
        loss = F.cross_entropy(model(x), y).item()
    model.train()  # "después de evaluar, siempre train()": pero el modelo no estaba así
    return loss
'''

MC_DROPOUT_ALL_TRAIN = '''def mc_dropout(model, x, n_samples):
    model.train()  # para activar el dropout... y también BatchNorm
    with torch.no_grad():
        samples = torch.stack([model(x) for _ in range(n_samples)])
    model.eval()
    return samples.mean(dim=0), samples.std(dim=0)
'''

SAMPLE_STUDENTS = [
    SampleStudent("carla", "evaluate vuelve siempre a train(): pierde la parte de los modos",
                  {"evaluate": EVALUATE_BACK_TO_TRAIN},
                  partial={"evaluate_test": 2.0}),
    SampleStudent("dario", "MC dropout con todo el modelo en train (BatchNorm incluida)",
                  {"mc_dropout": MC_DROPOUT_ALL_TRAIN}, lost=("mc_dropout_test",)),
]
