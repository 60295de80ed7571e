"""Chapter 2 variants: valid alternatives and realistic mistakes, each with its label."""

import torch
import torch.nn.functional as F

from autograder.chapters.ch02.student import (
    construir_congelar,
    construir_intermedio,
    construir_prediccion,
    gradientes_por_diferencias,
    nombres_de_la_cabeza,
    probabilidades_a_mano,
)
from autograder.corpus import CORRECT, Registry
from autograder.submissions import SampleStudent

registry = Registry()
variant = registry.variant

HG = "hidden_grad"
PR = "predict"
FH = "freeze_all_but_head"


# ---------------------------------------------------------------- hidden_grad
@variant(HG, CORRECT)
def hidden_grad_retain_grad(model, x, y):
    h = model[1](model[0](x))
    h.retain_grad()
    F.mse_loss(model[2](h), y).backward()
    return h.grad


@variant(HG, CORRECT)
def hidden_grad_hook(model, x, y):
    captured = []
    h = torch.tanh(model[0](x))
    h.register_hook(captured.append)
    loss = ((model[2](h) - y) ** 2).mean()
    loss.backward()
    return captured[0]


@variant(HG, CORRECT)
def hidden_grad_detached_leaf(model, x, y):
    with torch.no_grad():
        h = model[1](model[0](x))
    h.requires_grad_(True)  # a new leaf: the head's graph starts here
    F.mse_loss(model[2](h), y).backward()
    return h.grad


@variant(HG, "none_no_hoja")
def hidden_grad_without_retain_grad(model, x, y):
    h = model[1](model[0](x))
    F.mse_loss(model[2](h), y).backward()
    return h.grad  # a non-leaf: .grad is None


@variant(HG, "none_no_hoja")
def hidden_grad_retain_after_backward(model, x, y):
    h = model[1](model[0](x))
    F.mse_loss(model[2](h), y).backward()
    h.retain_grad()  # too late: the backward pass already went by
    return h.grad


@variant(HG, "suma_en_vez_de_media")
def hidden_grad_sum_loss(model, x, y):
    h = model[1](model[0](x))
    (g,) = torch.autograd.grad(((model[2](h) - y) ** 2).sum(), h)
    return g


@variant(HG, "gradiente_de_otro_intermedio")
def hidden_grad_of_the_preactivation(model, x, y):
    z = model[0](x)
    z.retain_grad()
    F.mse_loss(model[2](model[1](z)), y).backward()
    return z.grad


@variant(HG, "forma")
def hidden_grad_of_the_input(model, x, y):
    x.requires_grad_(True)
    F.mse_loss(model(x), y).backward()
    return x.grad


@variant(HG, "dimension_suprimida")
def hidden_grad_squeezed(model, x, y):
    h = model[1](model[0](x))
    h.retain_grad()
    F.mse_loss(model[2](h), y).backward()
    return h.grad.squeeze()  # a batch of one sample (or H == 1) loses a dimension


@variant(HG, "salida_sin_sesgo")
def hidden_grad_by_hand_without_the_bias(model, x, y):
    with torch.no_grad():
        h = model[1](model[0](x))
        weight = model[2].weight
        return 2 * (h @ weight.T - y) / y.numel() @ weight  # ŷ without + bias


@variant(HG, "modificada")
def hidden_grad_then_a_step(model, x, y):
    h = model[1](model[0](x))
    h.retain_grad()
    F.mse_loss(model[2](h), y).backward()
    with torch.no_grad():
        for p in model.parameters():
            p -= 0.1 * p.grad  # the manual update of the chapter, copied one cell too far
    return h.grad


@variant(HG, "sin_implementar")
def hidden_grad_stub(model, x, y):
    raise NotImplementedError()


@variant(HG, "resultado_fijo")
def hidden_grad_hardcoded(model, x, y):
    example = construir_intermedio(torch.Generator().manual_seed(4), (4, 3, 5, 3))
    return gradientes_por_diferencias(*example.values())["h"]


# ---------------------------------------------------------------- predict
@variant(PR, CORRECT)
def predict_no_grad(model, x):
    with torch.no_grad():
        return F.softmax(model(x), dim=-1)


@variant(PR, CORRECT)
def predict_inference_mode_by_hand(model, x):
    with torch.inference_mode():
        logits = model(x)
        e = (logits - logits.amax(dim=1, keepdim=True)).exp()
        return e / e.sum(dim=1, keepdim=True)


@variant(PR, CORRECT)
def predict_set_grad_enabled_block(model, x):
    with torch.set_grad_enabled(False):
        return model(x).log_softmax(dim=1).exp()


@variant(PR, "grafo_construido_y_descartado")
def predict_detach_at_the_end(model, x):
    return torch.softmax(model(x), dim=1).detach()


@variant(PR, "prediccion_con_grafo")
def predict_with_tracking(model, x):
    return torch.softmax(model(x), dim=1)


@variant(PR, "prediccion_con_grafo")
def predict_bare_no_grad_statement(model, x):
    torch.no_grad()  # creates the context manager but never enters it
    return torch.softmax(model(x), dim=1)


@variant(PR, "prediccion_con_grafo")
def predict_eval_mode_only(model, x):
    model.eval()  # eval() switches Dropout/BatchNorm; it does not stop graph recording
    return torch.softmax(model(x), dim=1)


@variant(PR, "modo_del_modelo_cambiado")
def predict_leaves_the_model_in_eval_mode(model, x):
    model.eval()  # harmless here, but the caller's training loop now runs in eval mode
    with torch.no_grad():
        return torch.softmax(model(x), dim=1)


@variant(PR, "grad_desactivado_global")
def predict_global_switch(model, x):
    torch.set_grad_enabled(False)
    return torch.softmax(model(x), dim=1)


@variant(PR, "prediccion_con_grafo")
def predict_freezes_the_model(model, x):
    model.requires_grad_(False)  # and leaves it frozen; an x that requires grad still records
    return torch.softmax(model(x), dim=1)


@variant(PR, "grad_reactivado")
def predict_switch_off_then_on(model, x):
    torch.set_grad_enabled(False)
    probs = torch.softmax(model(x), dim=1)
    torch.set_grad_enabled(True)  # wrong when the caller was inside no_grad
    return probs


@variant(PR, "modo_del_modelo_cambiado")
def predict_eval_then_train(model, x):
    model.eval()
    with torch.no_grad():
        probs = torch.softmax(model(x), dim=1)
    model.train()  # a model (or a submodule) that arrived in eval mode comes back in train
    return probs


@variant(PR, "modo_del_modelo_cambiado")
def predict_restores_only_the_outer_mode(model, x):
    was_training = model.training
    model.eval()
    with torch.no_grad():
        probs = torch.softmax(model(x), dim=1)
    model.train(was_training)  # every submodule gets the outer mode, not its own
    return probs


@variant(PR, "grafo_construido")
def predict_own_hooks_then_detach(model, x):
    # Its own saved_tensors_hooks hide what autograd saves; the graph is built all the same.
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        return torch.softmax(model(x), dim=1).detach()


@variant(PR, "modificada")
def predict_leaves_every_parameter_trainable(model, x):
    with torch.no_grad():
        probs = torch.softmax(model(x), dim=1)
    model.requires_grad_(True)  # "as it was": but some parameters arrived frozen
    return probs


@variant(PR, "log_probabilidades")
def predict_log_softmax(model, x):
    with torch.no_grad():
        return F.log_softmax(model(x), dim=1)


@variant(PR, "dimension_suprimida")
def predict_squeezed(model, x):
    with torch.no_grad():
        return torch.softmax(model(x), dim=1).squeeze()  # (1, K) -> (K,), (N, 1) -> (N,)


@variant(PR, "softmax_otra_dim")
def predict_softmax_over_the_batch(model, x):
    with torch.inference_mode():
        return torch.softmax(model(x), dim=0)


@variant(PR, "prediccion_sin_softmax")
def predict_returns_logits(model, x):
    with torch.inference_mode():
        return model(x)


@variant(PR, "ceros")
def predict_placeholder_of_the_right_shape(model, x):
    # Builds no graph by doing nothing: the no-graph parts must not reward it.
    return torch.zeros(x.shape[0], model[-1].out_features, dtype=x.dtype)


@variant(PR, "sin_implementar")
def predict_stub(model, x):
    raise NotImplementedError()


@variant(PR, "resultado_fijo")
def predict_hardcoded(model, x):
    example = construir_prediccion(torch.Generator().manual_seed(5), (5, 4, 6, 3))
    return probabilidades_a_mano(*example.values())["probs"]


# ---------------------------------------------------------------- freeze_all_but_head
@variant(FH, CORRECT)
def freeze_by_name_prefix(model):
    trainable = []
    for name, p in model.named_parameters():
        p.requires_grad = name.startswith("head.")
        if p.requires_grad:
            trainable.append(name)
    return trainable


@variant(FH, CORRECT)
def freeze_by_identity_returning_a_set(model):
    head = {id(p) for p in model.head.parameters()}
    for p in model.parameters():
        p.requires_grad_(id(p) in head)
    return {name for name, p in model.named_parameters() if p.requires_grad}


@variant(FH, CORRECT)
def freeze_module_then_unfreeze_head(model):
    model.requires_grad_(False)
    model.head.requires_grad_(True)
    return tuple("head." + name for name, _ in model.head.named_parameters())


@variant(FH, "parametro_del_modelo_sin_congelar")
def freeze_by_children(model):
    for name, child in model.named_children():  # misses a parameter set on the model itself
        child.requires_grad_(name == "head")
    return ["head." + name for name, _ in model.head.named_parameters()]


@variant(FH, "encoder_sin_congelar")
def freeze_with_no_grad(model):
    with torch.no_grad():  # no_grad does not freeze anything
        names = [name for name, p in model.named_parameters() if name.startswith("head")]
    return names


@variant(FH, "congelado_parcial")
def freeze_only_weights(model):
    for name, p in model.named_parameters():
        if "weight" in name and not name.startswith("head"):
            p.requires_grad_(False)
    return [name for name, p in model.named_parameters() if p.requires_grad]


@variant(FH, "congelado_parcial")
def freeze_only_the_encoder_block(model):
    model.encoder.requires_grad_(False)  # forgets model.embed
    return [name for name, p in model.named_parameters() if p.requires_grad]


@variant(FH, "cabeza_congelada")
def freeze_everything(model):
    model.requires_grad_(False)
    return [name for name, _ in model.head.named_parameters(prefix="head")]


@variant(FH, "nombres_entrenables")
def freeze_returns_the_frozen_names(model):
    model.requires_grad_(False)
    model.head.requires_grad_(True)
    return [name for name, p in model.named_parameters() if not p.requires_grad]


@variant(FH, "nombres_entrenables")
def freeze_returns_names_relative_to_the_head(model):
    model.requires_grad_(False)
    model.head.requires_grad_(True)
    return [name for name, _ in model.head.named_parameters()]  # "weight", not "head.weight"


@variant(FH, "modelo_en_eval")
def freeze_and_eval(model):
    model.requires_grad_(False)
    model.head.requires_grad_(True)
    for name, child in model.named_children():
        if name != "head":
            child.eval()  # eval() changes Dropout/BatchNorm, it does not freeze
    return [name for name, p in model.named_parameters() if p.requires_grad]


@variant(FH, "nombre_parecido_a_cabeza")
def freeze_by_prefix_without_the_dot(model):
    for name, p in model.named_parameters():
        p.requires_grad_(name.startswith("head"))  # also catches "heads_aux.weight"
    return [name for name, p in model.named_parameters() if p.requires_grad]


@variant(FH, "nombre_parecido_a_cabeza")
def freeze_by_substring(model):
    for name, p in model.named_parameters():
        p.requires_grad_("head" in name)  # also catches "encoder.head_proj.weight"
    return [name for name, p in model.named_parameters() if p.requires_grad]


@variant(FH, "congelado_parcial")
def freeze_the_modules_of_the_example(model):
    model.embed.requires_grad_(False)  # only the submodules the statement names
    model.encoder.requires_grad_(False)
    return ["head." + name for name, _ in model.head.named_parameters()]


@variant(FH, "ultimo_hijo_como_cabeza")
def freeze_all_but_the_last_child(model):
    for child in list(model.children())[:-1]:  # "the head is the last module"
        child.requires_grad_(False)
    return [name for name, p in model.named_parameters() if p.requires_grad]


@variant(FH, "cabeza_sin_descongelar")
def freeze_without_unfreezing_the_head(model):
    for name, p in model.named_parameters():
        if not name.startswith("head."):
            p.requires_grad_(False)  # assumes the head arrives trainable
    return [name for name, _ in model.named_parameters() if name.startswith("head.")]


@variant(FH, "modo_cambiado")
def freeze_and_put_the_head_in_train_mode(model):
    model.requires_grad_(False)
    model.head.requires_grad_(True)
    model.head.train()  # "trainable" read as train mode
    return [name for name, p in model.named_parameters() if p.requires_grad]


@variant(FH, "sin_implementar")
def freeze_stub(model):
    raise NotImplementedError()


@variant(FH, "resultado_fijo")
def freeze_hardcoded_names(model):
    example = construir_congelar(torch.Generator().manual_seed(6), (4, 6, 2, 3, "lineal"))
    for name, p in model.named_parameters():
        p.requires_grad_(name.startswith("head."))
    return nombres_de_la_cabeza(example["model"])


# ---------------------------------------------------------------- sample class
PREDICT_DETACH_AT_THE_END = '''def predict(model, x):
    probs = torch.softmax(model(x), dim=1)
    return probs.detach()   # "sin grafo": pero el grafo ya se construyó
'''

FREEZE_ONLY_WEIGHTS = '''def freeze_all_but_head(model):
    for name, p in model.named_parameters():
        if "weight" in name and not name.startswith("head"):
            p.requires_grad_(False)       # se olvida de los sesgos
    return [name for name, p in model.named_parameters() if p.requires_grad]
'''

SAMPLE_STUDENTS = [
    SampleStudent("carla", "predict con detach() al final: sin grafo en la salida, pero lo "
                  "construyó (crédito parcial)", {PR: PREDICT_DETACH_AT_THE_END},
                  partial={PR + "_test": 2.0}),
    SampleStudent("dario", "congela solo los pesos, no los sesgos",
                  {FH: FREEZE_ONLY_WEIGHTS}, lost=(FH + "_test",)),
]
