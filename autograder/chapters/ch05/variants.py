"""Chapter 5 variants: valid alternatives and realistic mistakes, each with its label."""

import contextlib
import copy

import torch
from torch import nn

from autograder.chapters.ch05.student import (
    EJEMPLO_MC,
    EJEMPLO_MODULOS,
    construir_mc,
    construir_modulos,
    mc_a_mano,
    modulos_por_tipo,
)
from autograder.corpus import CORRECT, Registry
from autograder.submissions import SampleStudent

registry = Registry()
variant = registry.variant

EM = "evaluation_mode"
MC = "modules_that_change"
MD = "mc_dropout"


# ---------------------------------------------------------------- evaluation_mode
class EvaluationModeAsAClass:
    """A class-based context manager: the saved modes live on the manager, one per block."""

    def __init__(self, model):
        self.model = model

    def __enter__(self):
        self.saved = [(m, m.training) for m in self.model.modules()]
        self.grad = torch.is_grad_enabled()
        self.model.train(False)
        torch.set_grad_enabled(False)
        return self.model

    def __exit__(self, *error):
        for m, mode in self.saved:
            m.training = mode
        torch.set_grad_enabled(self.grad)
        return False  # an exception in the block goes on


@variant(EM, CORRECT)
def evaluation_mode_class(model):
    return EvaluationModeAsAClass(model)


@variant(EM, CORRECT)
@contextlib.contextmanager
def evaluation_mode_inference_mode_parents_first(model):
    saved = {name: m.training for name, m in model.named_modules()}
    model.eval()
    try:
        with torch.inference_mode():
            yield model
    finally:
        for name, m in model.named_modules():  # parents first: a child's call comes after
            m.train(saved[name])


@variant(EM, CORRECT)
@contextlib.contextmanager
def evaluation_mode_exit_stack(model):
    with contextlib.ExitStack() as stack:
        for m in model.modules():
            stack.callback(setattr, m, "training", m.training)
        stack.enter_context(torch.set_grad_enabled(False))
        for m in model.modules():
            m.training = False
        yield model


@variant(EM, "modos_no_restaurados")
@contextlib.contextmanager
def evaluation_mode_back_to_train(model):
    model.eval()
    try:
        with torch.no_grad():
            yield model
    finally:
        model.train()  # "after evaluating, train()": a frozen BatchNorm thaws


@variant(EM, "modos_no_restaurados")
@contextlib.contextmanager
def evaluation_mode_restores_the_root_flag_only(model):
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            yield model
    finally:
        model.train(was_training)


@variant(EM, "modos_no_restaurados")
@contextlib.contextmanager
def evaluation_mode_restores_direct_children_only(model):
    root, children = model.training, {c: c.training for c in model.children()}
    model.eval()
    try:
        with torch.no_grad():
            yield model
    finally:
        model.train(root)
        for child, mode in children.items():
            child.train(mode)  # a grandchild gets its parent's mode


@variant(EM, "modos_no_restaurados")
@contextlib.contextmanager
def evaluation_mode_restores_children_first(model):
    saved = [(m, m.training) for m in model.modules()]
    model.eval()
    try:
        with torch.no_grad():
            yield model
    finally:
        for m, mode in reversed(saved):  # each parent's train() overwrites its children
            m.train(mode)


@variant(EM, "tm_dejado_en_eval")
@contextlib.contextmanager
def evaluation_mode_never_restores(model):
    model.eval()
    with torch.no_grad():
        yield model


@variant(EM, "ev_excepcion_sin_restaurar")
@contextlib.contextmanager
def evaluation_mode_restores_only_on_success(model):
    saved = {m: m.training for m in model.modules()}
    model.eval()
    with torch.no_grad():
        yield model
    for m, mode in saved.items():  # skipped when the block raises
        m.training = mode


@variant(EM, "ev_excepcion_sin_restaurar")
@contextlib.contextmanager
def evaluation_mode_grad_statements_without_finally(model):
    saved = {m: m.training for m in model.modules()}
    grad = torch.is_grad_enabled()
    model.eval()
    torch.set_grad_enabled(False)
    yield model
    torch.set_grad_enabled(grad)  # neither line runs when the block raises
    for m, mode in saved.items():
        m.training = mode


@variant(EM, "evaluacion_con_grafo")
@contextlib.contextmanager
def evaluation_mode_without_no_grad(model):
    saved = {m: m.training for m in model.modules()}
    model.eval()
    try:
        yield model
    finally:
        for m, mode in saved.items():
            m.training = mode


@variant(EM, "evaluacion_con_grafo")
@contextlib.contextmanager
def evaluation_mode_no_grad_around_the_setup(model):
    saved = {m: m.training for m in model.modules()}
    with torch.no_grad():
        model.eval()
    try:
        yield model  # autograd is back on here
    finally:
        for m, mode in saved.items():
            m.training = mode


@variant(EM, "tm_autograd_no_restaurado")
@contextlib.contextmanager
def evaluation_mode_grad_on_at_exit(model):
    saved = {m: m.training for m in model.modules()}
    model.eval()
    torch.set_grad_enabled(False)
    try:
        yield model
    finally:
        torch.set_grad_enabled(True)  # the caller may have been under no_grad
        for m, mode in saved.items():
            m.training = mode


@variant(EM, "tm_autograd_no_restaurado")
@contextlib.contextmanager
def evaluation_mode_grad_never_restored(model):
    saved = {m: m.training for m in model.modules()}
    model.eval()
    torch.set_grad_enabled(False)  # a statement, not a block: never switched back
    try:
        yield model
    finally:
        for m, mode in saved.items():
            m.training = mode


@variant(EM, "ev_dentro_en_train")
@contextlib.contextmanager
def evaluation_mode_dropout_and_batchnorm_only(model):
    saved = {m: m.training for m in model.modules()}
    for m in model.modules():
        if isinstance(m, (nn.Dropout, nn.BatchNorm1d)):
            m.eval()  # a custom layer reading self.training stays on
    try:
        with torch.no_grad():
            yield model
    finally:
        for m, mode in saved.items():
            m.training = mode


@variant(EM, "ev_anidado")
@contextlib.contextmanager
def evaluation_mode_saves_on_the_model(model):
    model.saved_modes = {m: m.training for m in model.modules()}  # a nested block overwrites it
    model.eval()
    try:
        with torch.no_grad():
            yield model
    finally:
        for m, mode in model.saved_modes.items():
            m.training = mode


@variant(EM, "ev_excepcion_tragada")
@contextlib.contextmanager
def evaluation_mode_swallows_errors(model):
    saved = {m: m.training for m in model.modules()}
    model.eval()
    try:
        with torch.no_grad():
            yield model
    except Exception:  # noqa: BLE001, S110 - the mistake: the block's error vanishes
        pass
    finally:
        for m, mode in saved.items():
            m.training = mode


@variant(EM, "ev_entrega")
@contextlib.contextmanager
def evaluation_mode_yields_nothing(model):
    saved = {m: m.training for m in model.modules()}
    model.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        for m, mode in saved.items():
            m.training = mode


@variant(EM, "ev_sin_yield")
@contextlib.contextmanager
def evaluation_mode_returns_the_model(model):
    model.eval()
    with torch.no_grad():
        return model


@variant(EM, "ev_no_es_gestor")
def evaluation_mode_without_the_decorator(model):
    saved = {m: m.training for m in model.modules()}
    model.eval()
    try:
        with torch.no_grad():
            yield model
    finally:
        for m, mode in saved.items():
            m.training = mode


@variant(EM, "efecto_secundario")
@contextlib.contextmanager
def evaluation_mode_zeroes_the_gradients(model):
    saved = {m: m.training for m in model.modules()}
    model.eval()
    model.zero_grad()  # "a clean slate": wipes the caller's gradients
    try:
        with torch.no_grad():
            yield model
    finally:
        for m, mode in saved.items():
            m.training = mode


@variant(EM, "resultado_constante")
@contextlib.contextmanager
def evaluation_mode_back_to_a_fixed_training_state(model):
    model.eval()
    torch.set_grad_enabled(False)
    try:
        yield model
    finally:  # "after evaluating, back to training": whatever the caller had
        model.train()
        torch.set_grad_enabled(True)


@variant(EM, "ev_dentro_en_train")
@contextlib.contextmanager
def evaluation_mode_leaves_only(model):
    saved = {m: m.training for m in model.modules()}
    for m in model.modules():
        if not list(m.children()):
            m.eval()  # "only the layers compute": the root and its blocks stay in train
    try:
        with torch.no_grad():
            yield model
    finally:
        for m, mode in saved.items():
            m.training = mode


@variant(EM, "modos_no_restaurados")
@contextlib.contextmanager
def evaluation_mode_refreezes_the_eval_ones(model):
    saved = {m: m.training for m in model.modules()}
    model.eval()
    try:
        with torch.no_grad():
            yield model
    finally:
        model.train(saved[model])
        for m, mode in saved.items():
            if not mode:
                m.eval()  # an eval parent also switches off a child that was in train


@variant(EM, "modos_no_restaurados")
@contextlib.contextmanager
def evaluation_mode_restores_two_levels(model):
    root = model.training
    children = [(c, c.training, [(g, g.training) for g in c.children()])
                for c in model.children()]
    model.eval()
    try:
        with torch.no_grad():
            yield model
    finally:
        model.train(root)
        for child, mode, grandchildren in children:
            child.train(mode)
            for grandchild, grand_mode in grandchildren:
                grandchild.train(grand_mode)  # three levels down, the parent's mode


@variant(EM, "modificada")
@contextlib.contextmanager
def evaluation_mode_unfreezes_all(model):
    saved = {m: m.training for m in model.modules()}
    for p in model.parameters():
        p.requires_grad_(False)  # "no gradients inside", on top of no_grad
    model.eval()
    try:
        with torch.no_grad():
            yield model
    finally:
        for p in model.parameters():
            p.requires_grad_(True)  # a layer frozen on purpose is thawed
        for m, mode in saved.items():
            m.training = mode


def _modes_to_depth(module, depth=0, limit=3):
    saved = [(module, module.training)]
    if depth < limit:
        for child in module.children():
            saved += _modes_to_depth(child, depth + 1, limit)
    return saved


@variant(EM, "modos_no_restaurados")
@contextlib.contextmanager
def evaluation_mode_restores_to_depth_three(model):
    saved = _modes_to_depth(model)  # "the examples go three levels down"
    model.eval()
    try:
        with torch.no_grad():
            yield model
    finally:
        for m, mode in saved:
            m.training = mode


@variant(EM, "modos_no_restaurados")
@contextlib.contextmanager
def evaluation_mode_restores_root_and_leaves(model):
    root = model.training
    leaves = [(m, m.training) for m in model.modules() if not list(m.children())]
    model.eval()
    try:
        with torch.no_grad():
            yield model
    finally:
        model.train(root)  # "containers compute nothing": they get the root's mode
        for m, mode in leaves:
            m.training = mode


@variant(EM, "ev_excepcion_sin_restaurar")
@contextlib.contextmanager
def evaluation_mode_restores_in_except_exception(model):
    saved = [(m, m.training) for m in model.modules()]

    def restore():
        for m, mode in saved:
            m.training = mode

    model.eval()
    with torch.no_grad():
        try:
            yield model
        except Exception:  # a KeyboardInterrupt is no Exception: nothing restored
            restore()
            raise
    restore()


class EvaluationModeReadsGradAtInit:
    def __init__(self, model):
        self.model = model
        self.grad = torch.is_grad_enabled()  # when created, not when the block opens

    def __enter__(self):
        self.saved = [(m, m.training) for m in self.model.modules()]
        self.model.eval()
        torch.set_grad_enabled(False)
        return self.model

    def __exit__(self, *error):
        for m, mode in self.saved:
            m.training = mode
        torch.set_grad_enabled(self.grad)
        return False


@variant(EM, "tm_autograd_no_restaurado")
def evaluation_mode_class_reads_grad_at_init(model):
    return EvaluationModeReadsGradAtInit(model)


@variant(EM, CORRECT)
@contextlib.contextmanager
def evaluation_mode_named_modes_train_calls(model):
    modes = [(name, m.training) for name, m in model.named_modules()]
    lookup = dict(model.named_modules())
    prev = torch.is_grad_enabled()
    torch.set_grad_enabled(False)
    for m in model.modules():
        m.train(False)
    try:
        yield model
    finally:
        torch.set_grad_enabled(prev)
        for name, mode in modes:  # parents first, then each child's own mode
            lookup[name].train(mode)


@variant(EM, "sin_implementar")
def evaluation_mode_stub(model):
    raise NotImplementedError()


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


@variant(MC, "tm_misma_entrada")
def modules_that_change_inputs_in_the_arriving_mode(model, x):
    # Each leaf's input taken from a pass in the mode the model arrived in (on a copy, so no
    # running statistic moves), not with the whole model in eval.
    twin, inputs = copy.deepcopy(model), {}
    leaves = {name: m for name, m in twin.named_modules() if not list(m.children())}
    hooks = [m.register_forward_pre_hook(lambda mod, args, n=name: inputs.setdefault(n, args[0]))
             for name, m in leaves.items()]
    with torch.no_grad():
        twin(x)
        for h in hooks:
            h.remove()
        return [n for n in inputs if not torch.equal(copy.deepcopy(leaves[n]).train()(inputs[n]),
                                                     copy.deepcopy(leaves[n]).eval()(inputs[n]))]


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


@variant(MC, "excepcion")
def modules_that_change_probes_with_fresh_noise(model, x):
    inputs = _leaf_inputs(model, x)
    probe = dict(copy.deepcopy(model).named_modules())
    changed = []
    with torch.no_grad():
        for name, inp in inputs.items():
            fresh = torch.randn(inp.shape)  # float32 always: a float64 model rejects it
            if not torch.equal(probe[name].train()(fresh), probe[name].eval()(fresh)):
                changed.append(name)
    return changed


@variant(MC, "tipo")
def modules_that_change_returns_the_modules(model, x):
    names = set(modules_that_change_whole_copies(model, x))
    return [m for name, m in model.named_modules() if name in names]


@variant(MC, "modificada")
def modules_that_change_unfreezes_all(model, x):
    for p in model.parameters():
        p.requires_grad_(False)  # "no graph": freeze everything...
    changed = modules_that_change_whole_copies(model, x)
    for p in model.parameters():
        p.requires_grad_(True)  # ...and thaw everything, a frozen layer included
    return changed


@variant(MC, "modificada")
def modules_that_change_detaches_x_in_place(model, x):
    x.requires_grad_(False)  # "no graph from x": but x is the caller's
    return modules_that_change_whole_copies(model, x)


@variant(MC, "tm_autograd_no_restaurado")
def modules_that_change_grad_statement(model, x):
    torch.set_grad_enabled(False)  # a statement: the caller's grad mode stays off
    return modules_that_change_whole_copies(model, x)


@variant(MC, "tm_ganchos_sin_quitar")
def modules_that_change_clears_all_hooks(model, x):
    inputs = {}
    for name, m in model.named_modules():
        if not list(m.children()):
            m.register_forward_pre_hook(lambda mod, args, n=name: inputs.setdefault(n, args[0]))
    modes = {m: m.training for m in model.modules()}
    model.eval()
    with torch.no_grad():
        model(x)
    for m in model.modules():
        m._forward_pre_hooks.clear()  # the caller's own hooks go too
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


@variant(MC, "modos_no_restaurados")
def modules_that_change_restores_root_and_leaves(model, x):
    root = model.training
    leaves = [(m, m.training) for m in model.modules() if not list(m.children())]
    state = copy.deepcopy(model.state_dict())
    inputs = _leaf_inputs(model, x)
    changed = []
    with torch.no_grad():
        for name, m in model.named_modules():
            if name in inputs and not torch.equal(m.train()(inputs[name]), m.eval()(inputs[name])):
                changed.append(name)
    model.load_state_dict(state)
    model.train(root)  # the containers get the root's mode
    for m, mode in leaves:
        m.training = mode
    return changed


@variant(MC, "tm_salida_del_modelo")
def modules_that_change_one_leaf_at_a_time_model_output(model, x):
    with torch.no_grad():
        base = copy.deepcopy(model).eval()(x)
        changed = []
        for name, m in model.named_modules():
            if list(m.children()):
                continue
            probe = copy.deepcopy(model).eval()
            probe.get_submodule(name).train()  # only this leaf in train, the model's output
            if not torch.equal(probe(x), base):
                changed.append(name)
    return changed


@variant(MC, CORRECT)
def modules_that_change_as_a_tuple_on_one_copy(model, x):
    twin = copy.deepcopy(model)
    seen = {}
    leaves = [(name, m) for name, m in twin.named_modules() if not list(m.children())]
    hooks = [m.register_forward_pre_hook(lambda mod, args, n=name: seen.setdefault(n, args))
             for name, m in leaves]
    try:
        with torch.no_grad():
            twin.eval()(x)
    finally:
        for h in hooks:
            h.remove()
    out = []
    with torch.no_grad():
        for name, m in leaves:
            if name in seen:
                a = m.train()(*seen[name])
                b = m.eval()(*seen[name])
                if a.shape != b.shape or not bool((a == b).all()):
                    out.append(name)
    return tuple(out)


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


@variant(MD, "mc_otros_en_train")
def mc_dropout_leaves_to_eval_only(model, x, n_samples):
    def setup(m):
        m.train()
        for sub in m.modules():
            if not list(sub.children()) and not isinstance(sub, nn.Dropout):
                sub.eval()  # the containers stay in train mode
    return _mc(model, x, n_samples, setup)


@variant(MD, "mc_resembrado")
def mc_dropout_fresh_seed(model, x, n_samples):
    torch.seed()  # "fresh randomness each call": the caller's seed no longer matters
    return _mc(model, x, n_samples, _dropout_only)


@variant(MD, "mc_resembrado")
def mc_dropout_reseeds_with_the_callers_seed(model, x, n_samples):
    torch.manual_seed(torch.initial_seed())  # "the caller's seed, from its start"
    return _mc(model, x, n_samples, _dropout_only)


@variant(MD, "forma")
def mc_dropout_squeezes(model, x, n_samples):
    saved = _dropout_only(model)
    with torch.no_grad():
        samples = torch.stack([model(x) for _ in range(n_samples)]).squeeze()
    for m, mode in saved:
        m.training = mode
    return samples.mean(0), samples.std(0)


@variant(MD, "dtype")
def mc_dropout_float32_buffer(model, x, n_samples):
    saved = _dropout_only(model)
    samples = None
    with torch.no_grad():
        for i in range(n_samples):
            out = model(x)
            if samples is None:
                samples = torch.zeros(n_samples, *out.shape)  # float32 by default
            samples[i] = out
    for m, mode in saved:
        m.training = mode
    return samples.mean(0), samples.std(0)


@variant(MD, "mc_media_bessel")
def mc_dropout_mean_divides_by_n_minus_1(model, x, n_samples):
    saved = _dropout_only(model)
    with torch.no_grad():
        samples = torch.stack([model(x) for _ in range(n_samples)])
    for m, mode in saved:
        m.training = mode
    return samples.sum(0) / (n_samples - 1), samples.std(0)  # Bessel where it does not go


@variant(MD, "modos_no_restaurados")
def mc_dropout_refreezes_the_eval_ones(model, x, n_samples):
    saved = {m: m.training for m in model.modules()}
    _dropout_only(model)
    with torch.no_grad():
        samples = torch.stack([model(x) for _ in range(n_samples)])
    model.train(saved[model])
    for m, mode in saved.items():
        if not mode:
            m.eval()  # an eval parent also switches off a Dropout that was in train
    return samples.mean(0), samples.std(0)


@variant(MD, "modos_no_restaurados")
def mc_dropout_restores_root_and_leaves(model, x, n_samples):
    root = model.training
    leaves = [(m, m.training) for m in model.modules() if not list(m.children())]
    _dropout_only(model)
    with torch.no_grad():
        samples = torch.stack([model(x) for _ in range(n_samples)])
    model.train(root)  # the containers get the root's mode
    for m, mode in leaves:
        m.training = mode
    return samples.mean(0), samples.std(0)


@variant(MD, "modificada")
def mc_dropout_unfreezes_all(model, x, n_samples):
    for p in model.parameters():
        p.requires_grad_(False)
    result = _mc(model, x, n_samples, _dropout_only)
    for p in model.parameters():
        p.requires_grad_(True)  # a layer frozen on purpose is thawed
    return result


@variant(MD, "tm_autograd_no_restaurado")
def mc_dropout_grad_statement(model, x, n_samples):
    saved = _dropout_only(model)
    torch.set_grad_enabled(False)  # a statement: the caller's grad mode stays off
    samples = torch.stack([model(x) for _ in range(n_samples)])
    for m, mode in saved:
        m.training = mode
    return samples.mean(0), samples.std(0)


@variant(MD, CORRECT)
def mc_dropout_flags_by_type_in_a_finally(model, x, n_samples):
    flags = [(m, m.training) for m in model.modules()]
    try:
        for m, _ in flags:
            m.train(False)
        for m, _ in flags:
            if type(m) is nn.Dropout:
                m.train(True)
        with torch.no_grad():
            outs = [model(x) for _ in range(n_samples)]
    finally:
        for m, mode in flags:
            m.training = mode
    stacked = torch.stack(outs)
    mean = stacked.mean(dim=0)
    return (mean, ((stacked - mean) ** 2).sum(dim=0).div(n_samples - 1).sqrt())


@variant(MD, "sin_implementar")
def mc_dropout_stub(model, x, n_samples):
    raise NotImplementedError()


@variant(MD, "resultado_fijo")
def mc_dropout_hardcoded(model, x, n_samples):
    example = construir_mc(torch.Generator().manual_seed(7), EJEMPLO_MC)
    expected = mc_a_mano(*example.values())
    return expected["media"], expected["std"]


# ---------------------------------------------------------------- sample class
EVALUATION_MODE_BACK_TO_TRAIN = '''import contextlib


@contextlib.contextmanager
def evaluation_mode(model):
    model.eval()
    with torch.no_grad():
        yield model
    model.train()  # "después de evaluar, siempre train()": pero el modelo no estaba así
'''

MC_DROPOUT_ALL_TRAIN = '''def mc_dropout(model, x, n_samples):
    model.train()  # para activar el dropout... y también BatchNorm
    with torch.no_grad():
        samples = torch.stack([model(x) for _ in range(n_samples)])
    model.eval()
    return samples.mean(dim=0), samples.std(dim=0)
'''

SAMPLE_STUDENTS = [
    SampleStudent("carla", "evaluation_mode vuelve siempre a train(): pierde la parte de los "
                  "modos", {"evaluation_mode": EVALUATION_MODE_BACK_TO_TRAIN},
                  partial={"evaluation_mode_test": 2.0}),
    SampleStudent("dario", "MC dropout con todo el modelo en train (BatchNorm incluida)",
                  {"mc_dropout": MC_DROPOUT_ALL_TRAIN}, lost=("mc_dropout_test",)),
]
