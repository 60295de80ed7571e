"""Chapter 2 variants: valid alternatives and realistic mistakes, each with its label."""

import torch
import torch.nn.functional as F

from autograder.chapters.ch02.student import (
    construir_congelar,
    construir_destilacion,
    construir_prediccion,
    destilacion_a_mano,
    nombres_de_la_cabeza,
    probabilidades_a_mano,
)
from autograder.corpus import CORRECT, Registry
from autograder.submissions import SampleStudent

registry = Registry()
variant = registry.variant

DL = "distillation_loss"
PR = "predict"
FH = "freeze_all_but_head"


# ---------------------------------------------------------------- distillation_loss
@variant(DL, CORRECT)
def distillation_no_grad(student, teacher, x, temperature):
    with torch.no_grad():
        target = F.softmax(teacher(x) / temperature, dim=1)
    log_probs = F.log_softmax(student(x) / temperature, dim=1)
    return F.kl_div(log_probs, target, reduction="batchmean") * temperature**2


@variant(DL, CORRECT)
def distillation_detach(student, teacher, x, temperature):
    # Builds the teacher's graph and drops it: wasteful, but the loss and gradients are right.
    target = F.softmax(teacher(x).detach() / temperature, dim=1)
    log_q = F.log_softmax(student(x) / temperature, dim=1)
    return temperature**2 * (target * (target.log() - log_q)).sum(dim=1).mean()


@variant(DL, CORRECT)
def distillation_inference_mode_then_clone(student, teacher, x, temperature):
    with torch.inference_mode():
        target = F.softmax(teacher(x) / temperature, dim=1)
    target = target.clone()  # outside the mode: a normal tensor autograd may save
    loss = F.kl_div(F.log_softmax(student(x) / temperature, dim=1), target,
                    reduction="sum") / x.shape[0]
    return loss * temperature * temperature


@variant(DL, CORRECT)
def distillation_inference_mode_log_target(student, teacher, x, temperature):
    # With log_target=True, kl_div saves exp(target), a normal tensor: no clone needed.
    with torch.inference_mode():
        log_p = F.log_softmax(teacher(x) / temperature, dim=1)
    log_q = F.log_softmax(student(x) / temperature, dim=1)
    return F.kl_div(log_q, log_p, reduction="batchmean", log_target=True) * temperature**2


@variant(DL, CORRECT)
def distillation_soft_cross_entropy(student, teacher, x, temperature):
    # KL(p || q) = H(p, q) - H(p): the teacher's entropy is a constant of the same value.
    with torch.set_grad_enabled(False):
        p = F.softmax(teacher(x) / temperature, dim=1)
        entropy = -(p * p.log()).sum(dim=1).mean()
    return temperature**2 * (F.cross_entropy(student(x) / temperature, p) - entropy)


@variant(DL, "tensor_de_inferencia_guardado")
def distillation_inference_mode(student, teacher, x, temperature):
    with torch.inference_mode():  # "for evaluation": but the target goes into a loss
        target = F.softmax(teacher(x) / temperature, dim=1)
    log_probs = F.log_softmax(student(x) / temperature, dim=1)
    return F.kl_div(log_probs, target, reduction="batchmean") * temperature**2


@variant(DL, "tensor_de_inferencia_guardado")
def distillation_clone_inside_inference_mode(student, teacher, x, temperature):
    with torch.inference_mode():
        target = F.softmax(teacher(x) / temperature, dim=1).clone()  # still an inference tensor
    log_probs = F.log_softmax(student(x) / temperature, dim=1)
    return F.kl_div(log_probs, target, reduction="batchmean") * temperature**2


@variant(DL, "gradiente_al_profesor")
def distillation_teacher_in_the_graph(student, teacher, x, temperature):
    target = F.softmax(teacher(x) / temperature, dim=1)
    log_probs = F.log_softmax(student(x) / temperature, dim=1)
    return F.kl_div(log_probs, target, reduction="batchmean") * temperature**2


@variant(DL, CORRECT)
def distillation_eval_teacher_restored_per_module(student, teacher, x, temperature):
    # Evaluates the teacher in eval mode and gives every submodule its own mode back: with
    # no Dropout nor BatchNorm the mode changes nothing, and every mode is restored.
    modes = {m: m.training for m in teacher.modules()}
    teacher.eval()
    with torch.no_grad():
        target = F.softmax(teacher(x) / temperature, dim=1)
    for module, mode in modes.items():
        module.training = mode
    log_q = F.log_softmax(student(x) / temperature, dim=1)
    return F.kl_div(log_q, target, reduction="batchmean") * temperature**2


@variant(DL, "gradiente_al_profesor")
def distillation_teacher_in_eval_mode_only(student, teacher, x, temperature):
    modes = [m.training for m in teacher.modules()]
    teacher.eval()  # eval() switches Dropout/BatchNorm; the graph is recorded all the same
    target = F.softmax(teacher(x) / temperature, dim=1)
    for module, mode in zip(teacher.modules(), modes):
        module.train(mode)
    log_probs = F.log_softmax(student(x) / temperature, dim=1)
    return F.kl_div(log_probs, target, reduction="batchmean") * temperature**2


@variant(DL, "profesor_congelado")
def distillation_freezes_the_teacher(student, teacher, x, temperature):
    teacher.requires_grad_(False)  # works, and leaves the teacher frozen for good
    target = F.softmax(teacher(x) / temperature, dim=1)
    log_probs = F.log_softmax(student(x) / temperature, dim=1)
    return F.kl_div(log_probs, target, reduction="batchmean") * temperature**2


@variant(DL, "modo_del_modelo_cambiado")
def distillation_leaves_the_teacher_in_eval_mode(student, teacher, x, temperature):
    teacher.eval()  # what distillation recipes do; here it changes the caller's teacher
    with torch.no_grad():
        target = F.softmax(teacher(x) / temperature, dim=1)
    log_probs = F.log_softmax(student(x) / temperature, dim=1)
    return F.kl_div(log_probs, target, reduction="batchmean") * temperature**2


@variant(DL, "modo_del_modelo_cambiado")
def distillation_teacher_eval_restores_the_root_mode(student, teacher, x, temperature):
    was_training = teacher.training
    teacher.eval()
    with torch.no_grad():
        target = F.softmax(teacher(x) / temperature, dim=1)
    teacher.train(was_training)  # every submodule gets the teacher's own mode, not its own
    log_probs = F.log_softmax(student(x) / temperature, dim=1)
    return F.kl_div(log_probs, target, reduction="batchmean") * temperature**2


@variant(DL, "profesor_congelado")
def distillation_restores_the_first_flag_everywhere(student, teacher, x, temperature):
    was_trainable = next(teacher.parameters()).requires_grad
    teacher.requires_grad_(False)
    target = F.softmax(teacher(x) / temperature, dim=1)
    teacher.requires_grad_(was_trainable)  # a partly frozen teacher comes back all one way
    log_probs = F.log_softmax(student(x) / temperature, dim=1)
    return F.kl_div(log_probs, target, reduction="batchmean") * temperature**2


@variant(DL, "backward_dentro")
def distillation_zero_grad_first(student, teacher, x, temperature):
    student.zero_grad()  # "start clean": but the .grad belongs to the caller
    with torch.no_grad():
        target = F.softmax(teacher(x) / temperature, dim=1)
    log_probs = F.log_softmax(student(x) / temperature, dim=1)
    return F.kl_div(log_probs, target, reduction="batchmean") * temperature**2


@variant(DL, "temperatura_sin_cuadrado")
def distillation_times_the_temperature(student, teacher, x, temperature):
    with torch.no_grad():
        target = F.softmax(teacher(x) / temperature, dim=1)
    log_probs = F.log_softmax(student(x) / temperature, dim=1)
    return F.kl_div(log_probs, target, reduction="batchmean") * temperature


@variant(DL, "dtype")
def distillation_float64_target(student, teacher, x, temperature):
    with torch.no_grad():  # "for stability": the loss comes out in float64
        target = F.softmax(teacher(x) / temperature, dim=1, dtype=torch.float64)
    log_probs = F.log_softmax(student(x) / temperature, dim=1)
    return F.kl_div(log_probs, target, reduction="batchmean") * temperature**2


@variant(DL, "lote_suprimido")
def distillation_squeezes_the_logits(student, teacher, x, temperature):
    with torch.no_grad():  # squeeze(): with one sample, batchmean divides by K, not N
        target = F.softmax(teacher(x).squeeze() / temperature, dim=-1)
    log_probs = F.log_softmax(student(x).squeeze() / temperature, dim=-1)
    return F.kl_div(log_probs, target, reduction="batchmean") * temperature**2


@variant(DL, "perdida_sin_grafo")
def distillation_everything_without_a_graph(student, teacher, x, temperature):
    with torch.no_grad():  # the student's forward pass too
        target = F.softmax(teacher(x) / temperature, dim=1)
        log_probs = F.log_softmax(student(x) / temperature, dim=1)
        return F.kl_div(log_probs, target, reduction="batchmean") * temperature**2


@variant(DL, "perdida_sin_grafo")
def distillation_global_switch(student, teacher, x, temperature):
    torch.set_grad_enabled(False)  # never switched back: the student records nothing either
    target = F.softmax(teacher(x) / temperature, dim=1)
    log_probs = F.log_softmax(student(x) / temperature, dim=1)
    return F.kl_div(log_probs, target, reduction="batchmean") * temperature**2


@variant(DL, "backward_dentro")
def distillation_calls_backward(student, teacher, x, temperature):
    with torch.no_grad():
        target = F.softmax(teacher(x) / temperature, dim=1)
    log_probs = F.log_softmax(student(x) / temperature, dim=1)
    loss = F.kl_div(log_probs, target, reduction="batchmean") * temperature**2
    loss.backward(retain_graph=True)  # "to check it works": writes the student's .grad
    return loss


@variant(DL, "kl_media_por_elemento")
def distillation_mean_reduction(student, teacher, x, temperature):
    with torch.no_grad():
        target = F.softmax(teacher(x) / temperature, dim=1)
    log_probs = F.log_softmax(student(x) / temperature, dim=1)
    return F.kl_div(log_probs, target, reduction="mean") * temperature**2  # divides by N·K


@variant(DL, "kl_suma_del_lote")
def distillation_sum_reduction(student, teacher, x, temperature):
    with torch.no_grad():
        target = F.softmax(teacher(x) / temperature, dim=1)
    log_probs = F.log_softmax(student(x) / temperature, dim=1)
    return F.kl_div(log_probs, target, reduction="sum") * temperature**2


@variant(DL, "sin_temperatura_al_cuadrado")
def distillation_without_the_square(student, teacher, x, temperature):
    with torch.no_grad():
        target = F.softmax(teacher(x) / temperature, dim=1)
    log_probs = F.log_softmax(student(x) / temperature, dim=1)
    return F.kl_div(log_probs, target, reduction="batchmean")


@variant(DL, "kl_con_probabilidades")
def distillation_probabilities_into_kl_div(student, teacher, x, temperature):
    with torch.no_grad():
        target = F.softmax(teacher(x) / temperature, dim=1)
    probs = F.softmax(student(x) / temperature, dim=1)  # kl_div wants log-probabilities
    return F.kl_div(probs, target, reduction="batchmean") * temperature**2


@variant(DL, "temperatura_solo_alumno")
def distillation_raw_teacher_probabilities(student, teacher, x, temperature):
    with torch.no_grad():
        target = F.softmax(teacher(x), dim=1)  # the teacher's logits not divided by T
    log_probs = F.log_softmax(student(x) / temperature, dim=1)
    return F.kl_div(log_probs, target, reduction="batchmean") * temperature**2


@variant(DL, "kl_invertida")
def distillation_reverse_kl(student, teacher, x, temperature):
    with torch.no_grad():
        log_p = F.log_softmax(teacher(x) / temperature, dim=1)
    log_q = F.log_softmax(student(x) / temperature, dim=1)
    return temperature**2 * (log_q.exp() * (log_q - log_p)).sum(dim=1).mean()


@variant(DL, "tipo")
def distillation_returns_a_number(student, teacher, x, temperature):
    with torch.no_grad():
        target = F.softmax(teacher(x) / temperature, dim=1)
    log_probs = F.log_softmax(student(x) / temperature, dim=1)
    return (F.kl_div(log_probs, target, reduction="batchmean") * temperature**2).item()


@variant(DL, "sin_implementar")
def distillation_stub(student, teacher, x, temperature):
    raise NotImplementedError()


@variant(DL, "resultado_fijo")
def distillation_hardcoded(student, teacher, x, temperature):
    example = construir_destilacion(torch.Generator().manual_seed(8), (6, 3, 3, 2.0))
    value = destilacion_a_mano(*example.values())["loss"]
    return value + 0 * student(x).sum()  # the example's value, in the student's graph


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


@variant(PR, "modo_del_modelo_cambiado")
def predict_eval_only_if_training(model, x):
    restore = model.training
    if restore:
        model.eval()
    with torch.inference_mode():
        probs = torch.softmax(model(x), dim=1)
    if restore:
        model.train()  # also a submodule that arrived in eval mode
    return probs


@variant(PR, CORRECT)
def predict_eval_restored_per_module(model, x):
    # eval() changes nothing here (no Dropout nor BatchNorm); every mode is given back.
    modes = [(m, m.training) for m in model.modules()]
    model.eval()
    with torch.no_grad():
        probs = torch.softmax(model(x), dim=1)
    for module, mode in modes:
        module.train(mode)
    return probs


@variant(PR, "modificada")
def predict_turns_off_x_requires_grad(model, x):
    x.requires_grad_(False)  # "so that nothing is recorded": the caller's x changes
    with torch.no_grad():
        return torch.softmax(model(x), dim=1)


@variant(PR, "modificada")
def predict_freezes_then_unfreezes_everything(model, x):
    model.requires_grad_(False)
    probs = torch.softmax(model(x.detach()), dim=1)
    model.requires_grad_(True)  # also the parameters that arrived frozen
    return probs


@variant(PR, "dtype")
def predict_casts_to_float32(model, x):
    with torch.inference_mode():
        return torch.softmax(model(x), dim=1).float()  # "for serving"


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


@variant(FH, "cabeza_congelada")
def freeze_walking_the_modules(model):
    for module in model.modules():
        module.requires_grad_(module is model.head)  # the head's own blocks come after it
    return [name for name, p in model.named_parameters() if p.requires_grad]


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


@variant(FH, "nombre_parecido_a_cabeza")
def freeze_by_substring_with_the_dot(model):
    for name, p in model.named_parameters():
        p.requires_grad_("head." in name)  # also catches "encoder.head.weight"
    return [name for name, p in model.named_parameters() if p.requires_grad]


@variant(FH, CORRECT)
def freeze_by_first_name_component(model):
    names = []
    for name, p in model.named_parameters():
        p.requires_grad = name.split(".")[0] == "head"
        if p.requires_grad:
            names.append(name)
    return names


@variant(FH, "tipo")
def freeze_returns_a_generator(model):
    model.requires_grad_(False)
    model.head.requires_grad_(True)
    return (name for name, p in model.named_parameters() if p.requires_grad)


@variant(FH, "grad_borrado")
def freeze_clears_the_grad_of_the_frozen(model):
    model.requires_grad_(False)
    model.head.requires_grad_(True)
    for p in model.parameters():
        if not p.requires_grad:
            p.grad = None  # "so that no optimizer uses an old gradient"
    return [name for name, p in model.named_parameters() if p.requires_grad]


@variant(FH, "modelo_en_eval")
def freeze_eval_then_train_the_head(model):
    model.requires_grad_(False)
    model.head.requires_grad_(True)
    model.eval()  # the transfer-learning recipe with BatchNorm: not asked for here
    model.head.train()
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
DISTILLATION_INFERENCE_MODE = '''def distillation_loss(student, teacher, x, temperature):
    with torch.inference_mode():      # "para evaluar": pero el objetivo vuelve a una pérdida
        target = F.softmax(teacher(x) / temperature, dim=1)
    log_probs = F.log_softmax(student(x) / temperature, dim=1)
    return F.kl_div(log_probs, target, reduction="batchmean") * temperature**2
'''

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
    SampleStudent("nora", "destila con el profesor en inference_mode: la pérdida falla al "
                  "calcularse (tensor de inferencia guardado para backward)",
                  {DL: DISTILLATION_INFERENCE_MODE}, lost=(DL + "_test",)),
    SampleStudent("carla", "predict con detach() al final: sin grafo en la salida, pero lo "
                  "construyó (crédito parcial)", {PR: PREDICT_DETACH_AT_THE_END},
                  partial={PR + "_test": 2.0}),
    SampleStudent("dario", "congela solo los pesos, no los sesgos",
                  {FH: FREEZE_ONLY_WEIGHTS}, lost=(FH + "_test",)),
]
