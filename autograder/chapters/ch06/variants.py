"""Chapter 6 variants: valid alternatives and realistic mistakes, each with its label."""

import torch
import torch.nn as nn

from autograder.chapters.ch06.student import EJEMPLO_ESCALA, construir_escala, construir_paso
from autograder.corpus import CORRECT, Registry
from autograder.submissions import SampleStudent

registry = Registry()
variant = registry.variant

PD = "pick_amp_dtype"
SL = "simulate_loss_scale"
TS = "amp_train_step"


# ---------------------------------------------------------------- pick_amp_dtype
@variant(PD, CORRECT)
def pick_amp_dtype_table(device_type, bf16_supported):
    table = {("cuda", True): (torch.bfloat16, False), ("cuda", False): (torch.float16, True),
             ("cpu", True): (torch.bfloat16, False), ("cpu", False): (torch.float32, False)}
    return table[(device_type, bool(bf16_supported))]


@variant(PD, CORRECT)
def pick_amp_dtype_by_device_first(device_type, bf16_supported):
    if device_type == "cpu":
        dtype = torch.bfloat16 if bf16_supported else torch.float32
    else:
        dtype = torch.bfloat16 if bf16_supported else torch.float16
    return dtype, dtype == torch.float16


@variant(PD, "amp_bf16_sin_soporte")
def pick_amp_dtype_always_bf16_on_gpu(device_type, bf16_supported):
    if device_type == "cuda":
        return torch.bfloat16, False  # "bf16 is the default on GPUs": not on a T4
    return (torch.bfloat16 if bf16_supported else torch.float32), False


@variant(PD, "amp_fp16_sin_escalador")
def pick_amp_dtype_fp16_without_scaler(device_type, bf16_supported):
    if bf16_supported:
        return torch.bfloat16, False
    return (torch.float16 if device_type == "cuda" else torch.float32), False


@variant(PD, "amp_escalador_innecesario")
def pick_amp_dtype_scaler_always_on_gpu(device_type, bf16_supported):
    if bf16_supported:
        return torch.bfloat16, device_type == "cuda"  # a scaler "because it is a GPU"
    if device_type == "cuda":
        return torch.float16, True
    return torch.float32, False


@variant(PD, "amp_fp16_en_cpu")
def pick_amp_dtype_fp16_fallback_everywhere(device_type, bf16_supported):
    if bf16_supported:
        return torch.bfloat16, False
    return torch.float16, True


@variant(PD, "amp_desaprovecha_bf16")
def pick_amp_dtype_fp16_on_every_gpu(device_type, bf16_supported):
    if device_type == "cuda":
        return torch.float16, True  # "GPUs train in fp16", even with native bf16
    return (torch.bfloat16 if bf16_supported else torch.float32), False


@variant(PD, "sin_implementar")
def pick_amp_dtype_stub(device_type, bf16_supported):
    raise NotImplementedError()


@variant(PD, "resultado_constante")
def pick_amp_dtype_hardcoded(device_type, bf16_supported):
    return torch.float16, True  # what the notebook's T4 example needs, whatever the device


# ---------------------------------------------------------------- simulate_loss_scale
@variant(SL, CORRECT)
def simulate_loss_scale_with_gradscaler(found_inf, init_scale, growth_factor, backoff_factor,
                                        growth_interval):
    scaler = torch.amp.GradScaler("cpu", init_scale=init_scale, growth_factor=growth_factor,
                                  backoff_factor=backoff_factor, growth_interval=growth_interval)
    w = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([w], lr=0.0)
    scales = []
    for inf in found_inf:
        opt.zero_grad()
        loss = w.sum() + (float("inf") if inf else 1.0)
        scaler.scale(loss).backward()
        if inf:
            w.grad.fill_(float("inf"))
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
    return scales


@variant(SL, CORRECT)
def simulate_loss_scale_counting_since_last_event(found_inf, init_scale, growth_factor,
                                                  backoff_factor, growth_interval):
    scales, scale, last_event = [], init_scale, -1
    for step, inf in enumerate(found_inf):
        if inf:
            scale *= backoff_factor
            last_event = step
        elif step - last_event >= growth_interval:
            scale *= growth_factor
            last_event = step
        scales.append(float(scale))
    return scales


def _simulate(found_inf, init_scale, growth_factor, backoff_factor, growth_interval,
              backoff=True, reset_on_inf=True, reset_on_growth=True, late=0):
    """The GradScaler rule with one knob per classic mistake."""
    scale, clean, scales = float(init_scale), 0, []
    for inf in found_inf:
        if inf:
            scale *= backoff_factor if backoff else 1.0
            clean = 0 if reset_on_inf else clean
        else:
            clean += 1
            if clean == growth_interval + late:
                scale *= growth_factor
                clean = 0 if reset_on_growth else clean
        scales.append(scale)
    return scales


@variant(SL, "amp_escala_sin_reducir")
def simulate_loss_scale_only_skips(found_inf, init_scale, growth_factor, backoff_factor,
                                   growth_interval):
    return _simulate(found_inf, init_scale, growth_factor, backoff_factor, growth_interval,
                     backoff=False)


@variant(SL, "amp_crecimiento_prematuro")
def simulate_loss_scale_counter_survives_inf(found_inf, init_scale, growth_factor,
                                             backoff_factor, growth_interval):
    return _simulate(found_inf, init_scale, growth_factor, backoff_factor, growth_interval,
                     reset_on_inf=False)


@variant(SL, "amp_crecimiento_tardio")
def simulate_loss_scale_off_by_one(found_inf, init_scale, growth_factor, backoff_factor,
                                   growth_interval):
    return _simulate(found_inf, init_scale, growth_factor, backoff_factor, growth_interval,
                     late=1)  # `clean > growth_interval`


@variant(SL, "amp_crecimiento_tardio")
def simulate_loss_scale_counter_not_reset_after_growth(found_inf, init_scale, growth_factor,
                                                       backoff_factor, growth_interval):
    # grows once, then `clean == growth_interval` never holds again until an inf resets it
    return _simulate(found_inf, init_scale, growth_factor, backoff_factor, growth_interval,
                     reset_on_growth=False)


@variant(SL, "modificada")
def simulate_loss_scale_pops_the_flags(found_inf, init_scale, growth_factor, backoff_factor,
                                       growth_interval):
    found_inf.reverse()  # consumes the caller's list: it is empty afterwards
    flags = []
    while found_inf:
        flags.append(found_inf.pop())
    return _simulate(flags, init_scale, growth_factor, backoff_factor, growth_interval)


@variant(SL, CORRECT)
def simulate_loss_scale_float32(found_inf, init_scale, growth_factor, backoff_factor,
                                growth_interval):
    # the scale kept in float32, as GradScaler keeps it
    scale, clean, scales = torch.tensor(float(init_scale)), 0, []
    for inf in found_inf:
        clean = 0 if inf else clean + 1
        if inf:
            scale = scale * backoff_factor
        elif clean == growth_interval:
            scale, clean = scale * growth_factor, 0
        scales.append(scale.item())
    return scales


@variant(SL, "amp_otro_factor")
def simulate_loss_scale_always_doubles(found_inf, init_scale, growth_factor, backoff_factor,
                                       growth_interval):
    # GradScaler's default growth_factor, whatever the argument says
    return _simulate(found_inf, init_scale, 2.0, backoff_factor, growth_interval)


@variant(SL, "amp_otro_factor")
def simulate_loss_scale_always_halves(found_inf, init_scale, growth_factor, backoff_factor,
                                      growth_interval):
    # GradScaler's default backoff_factor, whatever the argument says
    return _simulate(found_inf, init_scale, growth_factor, 0.5, growth_interval)


@variant(SL, "amp_crecimiento_prematuro")
def simulate_loss_scale_counter_starts_at_one(found_inf, init_scale, growth_factor,
                                              backoff_factor, growth_interval):
    scale, clean, scales = float(init_scale), 1, []  # "the first step already counts"
    for inf in found_inf:
        if inf:
            scale, clean = scale * backoff_factor, 0
        else:
            clean += 1
            if clean >= growth_interval:
                scale, clean = scale * growth_factor, 0
        scales.append(scale)
    return scales


@variant(SL, "sin_implementar")
def simulate_loss_scale_stub(found_inf, init_scale, growth_factor, backoff_factor,
                             growth_interval):
    raise NotImplementedError()


@variant(SL, "resultado_fijo")
def simulate_loss_scale_hardcoded(found_inf, init_scale, growth_factor, backoff_factor,
                                  growth_interval):
    seed, shape = EJEMPLO_ESCALA  # the public check's example
    example = construir_escala(torch.Generator().manual_seed(seed), shape)
    return _simulate(*example.values())


# ---------------------------------------------------------------- amp_train_step
@variant(TS, CORRECT)
def amp_train_step_zero_grad_first(model, batch, loss_fn, optimizer, scaler, device, dtype,
                                   max_norm):
    optimizer.zero_grad(set_to_none=False)
    x, y = batch
    with torch.autocast(device, dtype=dtype):
        out = model(x)
    loss = loss_fn(out.float(), y)  # the loss in fp32, outside autocast
    if scaler is not None:
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
    else:
        loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), max_norm=max_norm)
    if scaler is not None:
        scaler.step(optimizer)
        scaler.update()
    else:
        optimizer.step()
    return float(loss.detach())


@variant(TS, CORRECT)
def amp_train_step_zero_grad_at_both_ends(model, batch, loss_fn, optimizer, scaler, device,
                                          dtype, max_norm):
    loss = amp_train_step_zero_grad_first(model, batch, loss_fn, optimizer, scaler, device,
                                          dtype, max_norm)
    optimizer.zero_grad()  # defensive: clear on the way in and on the way out
    return loss


@variant(TS, CORRECT)
def amp_train_step_disabled_scaler(model, batch, loss_fn, optimizer, scaler, device, dtype,
                                   max_norm):
    # A disabled GradScaler is a no-op with the same API: one code path for both cases.
    scaler = scaler or torch.amp.GradScaler(device, enabled=False)
    with torch.amp.autocast(device_type=device, dtype=dtype):
        loss = loss_fn(model(batch[0]), batch[1])
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(list(model.parameters()), max_norm)
    scaler.step(optimizer)
    scaler.update()
    model.zero_grad()
    return loss.item()


@variant(TS, CORRECT)
def amp_train_step_skips_overflow_by_hand(model, batch, loss_fn, optimizer, scaler, device,
                                          dtype, max_norm):
    # checks the unscaled gradients itself; on inf it skips clip and step, but still updates
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
        finite = all(torch.isfinite(p.grad).all() for p in model.parameters()
                     if p.grad is not None)
        if finite:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            scaler.step(optimizer)
        scaler.update()
    optimizer.zero_grad()
    return loss.item()


def _step(model, batch, loss_fn, optimizer, scaler, device, dtype, max_norm, clip_first=False,
          plain_step=False, update=True, autocast=True, give_tensor=False, scaled=False,
          clip=True, unscale=True, autocast_dtype=True, early_return=False, train_mode=False):
    """The recipe with one knob per classic mistake."""
    if train_mode:
        model.train()
    x, y = batch
    kwargs = {"dtype": dtype} if autocast_dtype is True else (
        {"dtype": autocast_dtype} if autocast_dtype else {})
    with torch.autocast(device_type=device, enabled=autocast, **kwargs):
        loss = loss_fn(model(x), y)
    if scaler is None:
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        optimizer.step()
    else:
        scaled_loss = scaler.scale(loss)
        scaled_loss.backward()
        if clip_first:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        if unscale:
            scaler.unscale_(optimizer)
        if early_return and not all(torch.isfinite(p.grad).all() for p in model.parameters()):
            optimizer.zero_grad()
            return loss.item()
        if clip and not clip_first:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        if plain_step:
            optimizer.step()
        else:
            scaler.step(optimizer)
        if update:
            scaler.update()
        if scaled:
            loss = scaled_loss
    optimizer.zero_grad()
    return loss if give_tensor else loss.item()


@variant(TS, "clip_antes_de_unscale")
def amp_train_step_clips_scaled_gradients(*args):
    return _step(*args, clip_first=True)


@variant(TS, "clip_antes_de_unscale")
def amp_train_step_never_unscales(*args):
    # clips the scaled gradients; scaler.step unscales them afterwards, too late
    return _step(*args, unscale=False)


@variant(TS, "amp_sin_recorte")
def amp_train_step_forgets_clipping(*args):
    return _step(*args, clip=False)


@variant(TS, "amp_step_sin_scaler")
def amp_train_step_calls_optimizer_step(*args):
    return _step(*args, plain_step=True)


@variant(TS, "amp_sin_update")
def amp_train_step_forgets_update(*args):
    return _step(*args, update=False)


@variant(TS, "amp_sin_autocast")
def amp_train_step_without_autocast(*args):
    return _step(*args, autocast=False)


@variant(TS, "amp_dtype_ignorado")
def amp_train_step_autocast_default_dtype(*args):
    return _step(*args, autocast_dtype=None)  # the device's default: bf16 on CPU


@variant(TS, "amp_dtype_ignorado")
def amp_train_step_always_bfloat16(*args):
    return _step(*args, autocast_dtype=torch.bfloat16)


@variant(TS, "amp_salto_a_mano")
def amp_train_step_returns_early_on_overflow(*args):
    return _step(*args, early_return=True)


@variant(TS, "efecto_secundario")
def amp_train_step_sets_train_mode(*args):
    return _step(*args, train_mode=True)  # "a training step trains": the caller's eval lost


@variant(TS, "amp_otro_umbral")
def amp_train_step_fixed_max_norm(model, batch, loss_fn, optimizer, scaler, device, dtype,
                                  max_norm):
    return _step(model, batch, loss_fn, optimizer, scaler, device, dtype, 1.0)  # "the usual 1.0"


if torch.cuda.is_available():  # on a CPU-only machine "cpu" is always the right device
    @variant(TS, "amp_autocast_otro_dispositivo")
    def amp_train_step_autocast_on_cpu_always(model, batch, loss_fn, optimizer, scaler, device,
                                              dtype, max_norm):
        return _step(model, batch, loss_fn, optimizer, scaler, "cpu", dtype, max_norm)


@variant(TS, "grafo_vivo")
def amp_train_step_returns_the_tensor(*args):
    return _step(*args, give_tensor=True)


@variant(TS, "amp_perdida_escalada")
def amp_train_step_returns_scaled_loss(*args):
    return _step(*args, scaled=True)


@variant(TS, "amp_sin_pesos_maestros")
def amp_train_step_casts_the_model(model, batch, loss_fn, optimizer, scaler, device, dtype,
                                   max_norm):
    model.to(dtype)  # "16-bit training": no fp32 master weights left
    x, y = batch
    loss = loss_fn(model(x.to(dtype)), y.to(dtype))
    if scaler is None:
        loss.backward()
    else:
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    if scaler is None:
        optimizer.step()
    else:
        scaler.step(optimizer)
        scaler.update()
    optimizer.zero_grad()
    return loss.item()


@variant(TS, "sin_implementar")
def amp_train_step_stub(model, batch, loss_fn, optimizer, scaler, device, dtype, max_norm):
    raise NotImplementedError()


@variant(TS, "resultado_fijo")
def amp_train_step_hardcoded(model, batch, loss_fn, optimizer, scaler, device, dtype, max_norm):
    example = construir_paso(torch.Generator().manual_seed(7), (6, 4, 8, 3, 0))
    x, y = example["batch"]
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        return example["loss_fn"](example["model"](x), y).item()


CARLA_PASO = '''def amp_train_step(model, batch, loss_fn, optimizer, scaler, device, dtype,
                   max_norm):
    """One mixed-precision training step (see the contract above)."""
    x, y = batch
    with torch.autocast(device_type=device, dtype=dtype):
        loss = loss_fn(model(x), y)
    if scaler is None:
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        optimizer.step()
    else:
        scaler.scale(loss).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        scaler.step(optimizer)
        scaler.update()
    optimizer.zero_grad()
    return loss.item()
'''

DIEGO_ESCALA = '''def simulate_loss_scale(found_inf, init_scale, growth_factor, backoff_factor,
                        growth_interval):
    """The scale after each step, as GradScaler.update() leaves it."""
    scale, clean, scales = init_scale, 0, []
    for inf in found_inf:
        if inf:
            scale = scale * backoff_factor
        else:
            clean += 1
            if clean == growth_interval:
                scale = scale * growth_factor
                clean = 0
        scales.append(float(scale))
    return scales
'''

SAMPLE_STUDENTS = [
    SampleStudent("carla", "recorta los gradientes sin llamar antes a scaler.unscale_",
                  {"amp_train_step": CARLA_PASO}, partial={"amp_train_step_test": 1.5}),
    SampleStudent("diego", "no reinicia el contador de pasos limpios tras un inf",
                  {"simulate_loss_scale": DIEGO_ESCALA},
                  partial={"simulate_loss_scale_test": 1.0}),
]
