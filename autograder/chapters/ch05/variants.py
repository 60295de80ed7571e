"""Chapter 5 variants: valid alternatives and realistic mistakes, each with its label."""

import copy

import torch
import torch.nn.functional as F
from torch import nn

from autograder.chapters.ch05.student import (
    EJEMPLO_EVALUACION,
    EJEMPLO_MC,
    EJEMPLO_MODULOS,
    construir_evaluacion,
    construir_mc,
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


@variant(EV, "tm_dejado_en_eval")
def evaluate_leaves_eval_mode(model, x, y):
    model.eval()
    with torch.no_grad():
        return F.cross_entropy(model(x), y).item()


@variant(EV, CORRECT)
def evaluate_on_a_deep_copy(model, x, y):
    # The caller's model is never touched: nothing to restore.
    twin = copy.deepcopy(model).eval()
    with torch.set_grad_enabled(False):
        return F.cross_entropy(twin(x), y, reduction="sum").item() / x.shape[0]


@variant(EV, "modos_no_restaurados")
def evaluate_restores_direct_children_only(model, x, y):
    root, children = model.training, {c: c.training for c in model.children()}
    model.eval()
    with torch.no_grad():
        loss = F.cross_entropy(model(x), y).item()
    model.train(root)
    for child, mode in children.items():
        child.train(mode)  # a grandchild gets its parent's mode
    return loss


@variant(EV, "modos_no_restaurados")
def evaluate_restores_children_first(model, x, y):
    saved = [(m, m.training) for m in model.modules()]
    model.eval()
    with torch.no_grad():
        loss = F.cross_entropy(model(x), y).item()
    for m, mode in reversed(saved):  # each parent's train() overwrites its children
        m.train(mode)
    return loss


@variant(EV, "tm_autograd_no_restaurado")
def evaluate_leaves_grad_mode_off(model, x, y):
    saved = {m: m.training for m in model.modules()}
    model.eval()
    torch.set_grad_enabled(False)  # a statement, not a block: never switched back
    loss = F.cross_entropy(model(x), y).item()
    for m, mode in saved.items():
        m.training = mode
    return loss


@variant(EV, "evaluacion_con_grafo")
def evaluate_detaches_the_output(model, x, y):
    saved = {m: m.training for m in model.modules()}
    model.eval()
    loss = F.cross_entropy(model(x).detach(), y).item()  # the graph is already built
    for m, mode in saved.items():
        m.training = mode
    return loss


@variant(EV, "efecto_secundario")
def evaluate_zeroes_the_gradients(model, x, y):
    saved = {m: m.training for m in model.modules()}
    model.eval()
    model.zero_grad()  # "a clean slate": wipes the caller's gradients
    with torch.no_grad():
        loss = F.cross_entropy(model(x), y).item()
    for m, mode in saved.items():
        m.training = mode
    return loss


@variant(EV, "tm_doble_softmax")
def evaluate_softmax_first(model, x, y):
    saved = {m: m.training for m in model.modules()}
    model.eval()
    with torch.no_grad():
        loss = F.cross_entropy(model(x).softmax(dim=1), y).item()
    for m, mode in saved.items():
        m.training = mode
    return loss


@variant(EV, "suma_en_vez_de_media")
def evaluate_sums_the_losses(model, x, y):
    saved = {m: m.training for m in model.modules()}
    model.eval()
    with torch.no_grad():
        loss = F.cross_entropy(model(x), y, reduction="sum").item()
    for m, mode in saved.items():
        m.training = mode
    return loss


@variant(EV, "sin_implementar")
def evaluate_stub(model, x, y):
    raise NotImplementedError()


@variant(EV, "resultado_fijo")
def evaluate_hardcoded(model, x, y):
    example = construir_evaluacion(torch.Generator().manual_seed(5), EJEMPLO_EVALUACION)
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
                if not torch.equal(out_train, out_eval):
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
        for name, m in probe.named_modules():  # every module run, containers included
            if name not in captured:
                continue
            twin = copy.deepcopy(m)
            if not torch.equal(twin.train()(captured[name]), twin.eval()(captured[name])):
                changed.append(name)
    return changed


@variant(MC, "tm_buffers_movidos")
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


@variant(MC, "tm_dejado_en_eval")
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


@variant(MC, "tm_ganchos_sin_quitar")
def modules_that_change_leaves_its_hooks(model, x):
    inputs = {}
    for name, m in model.named_modules():
        if not list(m.children()):
            m.register_forward_pre_hook(lambda mod, args, n=name: inputs.setdefault(n, args[0]))
    modes = {m: m.training for m in model.modules()}
    model.eval()
    with torch.no_grad():
        model(x)
    for m, mode in modes.items():
        m.training = mode
    changed = []
    with torch.no_grad():
        for name, m in model.named_modules():
            if name in inputs:
                twin = copy.deepcopy(m)
                if not torch.equal(twin.train()(inputs[name]), twin.eval()(inputs[name])):
                    changed.append(name)
    return changed


@variant(MC, "tm_medicion_con_grafo")
def modules_that_change_with_grad_on(model, x):
    probe = copy.deepcopy(model).eval()
    inputs = {}
    hooks = [m.register_forward_pre_hook(lambda mod, args, n=name: inputs.update({n: args[0]}))
             for name, m in probe.named_modules() if not list(m.children())]
    probe(x)  # no no_grad: every call records a graph
    for h in hooks:
        h.remove()
    return [name for name, m in probe.named_modules() if name in inputs
            and not torch.equal(copy.deepcopy(m).train()(inputs[name]).detach(),
                                copy.deepcopy(m).eval()(inputs[name]).detach())]


@variant(MC, "tm_misma_entrada")
def modules_that_change_two_whole_passes(model, x):
    outputs = {}
    for training in (True, False):
        twin = copy.deepcopy(model).train(training)
        seen = outputs.setdefault(training, {})
        hooks = [m.register_forward_hook(lambda mod, a, out, n=name, s=seen: s.update({n: out}))
                 for name, m in twin.named_modules() if not list(m.children())]
        with torch.no_grad():
            twin(x)
        for h in hooks:
            h.remove()
    return [n for n in outputs[False] if not torch.equal(outputs[True][n], outputs[False][n])]


@variant(MC, "tm_comparacion_laxa")
def modules_that_change_within_allclose(model, x):
    # "difieren" read with allclose's tolerance: a change far below it goes unlisted
    inputs = _leaf_inputs(model, x)
    probe = copy.deepcopy(model)
    leaves = dict(probe.named_modules())
    with torch.no_grad():
        return [name for name in inputs
                if not torch.allclose(leaves[name].train()(inputs[name]),
                                      leaves[name].eval()(inputs[name]))]


@variant(MC, "tm_comparacion_laxa")
def modules_that_change_compares_means(model, x):
    probe = copy.deepcopy(model).eval()
    inputs = {}
    hooks = [m.register_forward_pre_hook(lambda mod, args, n=name: inputs.update({n: args[0]}))
             for name, m in probe.named_modules() if not list(m.children())]
    with torch.no_grad():
        probe(x)
        for h in hooks:
            h.remove()
        return [name for name, m in probe.named_modules() if name in inputs and not torch.isclose(
            copy.deepcopy(m).train()(inputs[name]).mean(),
            copy.deepcopy(m).eval()(inputs[name]).mean(), rtol=0.5, atol=0.5)]


@variant(MC, "tm_hoja_no_ejecutada")
def modules_that_change_by_type_settings_and_custom_layers(model, x):
    return [name for name, m in model.named_modules()
            if (isinstance(m, nn.Dropout) and m.p > 0)
            or (isinstance(m, nn.BatchNorm1d) and m.track_running_stats)
            or getattr(m, "sigma", 0) > 0]  # knows the chapter's noise layer too


@variant(MC, "contenedor_listado")
def modules_that_change_direct_children_only(model, x):
    probe = copy.deepcopy(model).eval()
    inputs = {}
    hooks = [m.register_forward_pre_hook(lambda mod, args, n=name: inputs.update({n: args[0]}))
             for name, m in probe.named_children()]
    with torch.no_grad():
        probe(x)
        for h in hooks:
            h.remove()
        return [name for name, m in probe.named_children() if name in inputs
                and not torch.equal(copy.deepcopy(m).train()(inputs[name]),
                                    copy.deepcopy(m).eval()(inputs[name]))]


@variant(MC, "sin_implementar")
def modules_that_change_stub(model, x):
    raise NotImplementedError()


@variant(MC, "resultado_fijo")
def modules_that_change_hardcoded(model, x):
    example = construir_modulos(torch.Generator().manual_seed(6), EJEMPLO_MODULOS)
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


@variant(MD, CORRECT)
def mc_dropout_welford(model, x, n_samples):
    modules = list(model.modules())
    saved = [m.training for m in modules]
    for m in modules:
        m.training = isinstance(m, nn.Dropout)
    try:
        with torch.set_grad_enabled(False):
            mean = m2 = 0
            for k in range(1, n_samples + 1):
                out = model(x)
                delta = out - mean
                mean = mean + delta / k
                m2 = m2 + delta * (out - mean)
    finally:
        for m, mode in zip(modules, saved):
            m.training = mode
    return [mean, (m2 / (n_samples - 1)).sqrt()]


@variant(MD, "mc_resembrado")
def mc_dropout_reseeds(model, x, n_samples):
    torch.manual_seed(0)  # "for reproducibility": the caller's seed no longer matters
    return _mc(model, x, n_samples, _dropout_only)


@variant(MD, "mc_varianza")
def mc_dropout_returns_the_variance(model, x, n_samples):
    mean, std = _mc(model, x, n_samples, _dropout_only)
    return mean, std**2


@variant(MD, "mc_otros_en_train")
def mc_dropout_train_then_freeze_batchnorm(model, x, n_samples):
    def setup(m):
        m.train()
        for sub in m.modules():
            if isinstance(sub, nn.BatchNorm1d):
                sub.eval()  # the custom noise layer stays in train mode
    return _mc(model, x, n_samples, setup)


@variant(MD, "mc_llamadas")
def mc_dropout_warm_up_pass(model, x, n_samples):
    saved = _dropout_only(model)
    with torch.no_grad():
        shape = model(x).shape  # one extra pass, to preallocate
        samples = torch.empty(n_samples, *shape, dtype=x.dtype)
        for i in range(n_samples):
            samples[i] = model(x)
    for m, mode in saved:
        m.training = mode
    return samples.mean(0), samples.std(0)


@variant(MD, "sin_implementar")
def mc_dropout_stub(model, x, n_samples):
    raise NotImplementedError()


@variant(MD, "resultado_fijo")
def mc_dropout_hardcoded(model, x, n_samples):
    example = construir_mc(torch.Generator().manual_seed(7), EJEMPLO_MC)
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
