"""Chapter 6 variants: valid alternatives and realistic mistakes, each with its label."""

import math
import statistics

import torch
import torch.nn as nn

from autograder.chapters.ch06.student import (
    EJEMPLO_ESCALA,
    FORMAS_PASO,
    construir_escala,
    construir_pasos,
)
from autograder.corpus import CORRECT, Registry
from autograder.submissions import SampleStudent

registry = Registry()
variant = registry.variant

DL = "diagnose_amp_log"
SL = "simulate_loss_scale"
TS = "amp_accumulation_steps"


# ---------------------------------------------------------------- diagnose_amp_log
def _finite_norm(record):
    return math.isfinite(record["grad_norm"])


def _proportional_to_scale(log, key):
    """Between the clean steps around each scale change (the last clean one before), the
    quantity changes by the scale's factor, within a factor of 1.4."""
    last, hits = None, []
    for record in log:
        if not _finite_norm(record):
            continue
        if last is not None and record["scale"] != last["scale"]:
            ratio = (record[key] / last[key]) / (record["scale"] / last["scale"])
            hits.append(abs(math.log(ratio)) < 0.35)
        last = record
    return bool(hits) and all(hits)


@variant(DL, CORRECT)
def diagnose_amp_log_ratios(log):
    if any(not math.isfinite(record["loss"]) for record in log):
        return "optimizer_step"
    for a, b in zip(log, log[1:]):
        if not _finite_norm(a) and b["scale"] == a["scale"]:
            return "new_scaler_each_step"
    if _proportional_to_scale(log, "grad_norm"):
        return "clip_before_unscale"
    if _proportional_to_scale(log, "loss"):
        return "scaled_loss"
    return "ok"


def _roughness(values):
    return sum(abs(math.log(b / a)) for a, b in zip(values, values[1:]))


@variant(DL, CORRECT)
def diagnose_amp_log_smoothness(log):
    """Another rule: a scaled quantity is smoother once divided by the scale; a frozen scale
    (with the overflows every log has) is a scaler that starts over every step; a corrupted
    step, a scale that halves on every step after it."""
    scales = [record["scale"] for record in log]
    if len(set(scales)) == 1:
        return "new_scaler_each_step"
    if all(b < a for a, b in zip(scales[-3:], scales[-2:])) and any(
            math.isnan(record["loss"]) for record in log):
        return "optimizer_step"
    clean = [record for record in log if _finite_norm(record)]
    for key, label in (("grad_norm", "clip_before_unscale"), ("loss", "scaled_loss")):
        values = [record[key] for record in clean]
        if _roughness([v / r["scale"] for v, r in zip(values, clean)]) < _roughness(values):
            return label
    return "ok"


@variant(DL, "amp_registro_falsa_alarma")
def diagnose_amp_log_every_inf_is_a_bug(log):
    # an overflow is taken for the weights going inf, but a healthy scaler overflows too
    if any(not _finite_norm(record) for record in log):
        return "optimizer_step"
    return "ok"


@variant(DL, "amp_registro_falsa_alarma")
def diagnose_amp_log_thresholds(log):
    # "a norm or a loss in the thousands must carry the scale": it depends on the problem
    if any(not math.isfinite(record["loss"]) for record in log):
        return "optimizer_step"
    if len({record["scale"] for record in log}) == 1:
        return "new_scaler_each_step"
    if max(record["grad_norm"] for record in log if _finite_norm(record)) > 1000:
        return "clip_before_unscale"
    if max(record["loss"] for record in log) > 1000:
        return "scaled_loss"
    return "ok"


@variant(DL, "amp_registro_falsa_alarma")
def diagnose_amp_log_scale_read_after_update(log):
    # as if "scale" were read after update(): the backoff is looked for in the same record
    if any(not math.isfinite(record["loss"]) for record in log):
        return "optimizer_step"
    for a, b in zip(log, log[1:]):
        if not _finite_norm(b) and b["scale"] >= a["scale"]:
            return "new_scaler_each_step"
    if _proportional_to_scale(log, "grad_norm"):
        return "clip_before_unscale"
    if _proportional_to_scale(log, "loss"):
        return "scaled_loss"
    return "ok"


@variant(DL, "amp_registro_recorte")
def diagnose_amp_log_swapped(log):
    # which quantity carries the scale, the other way round
    if any(not math.isfinite(record["loss"]) for record in log):
        return "optimizer_step"
    for a, b in zip(log, log[1:]):
        if not _finite_norm(a) and b["scale"] == a["scale"]:
            return "new_scaler_each_step"
    if _proportional_to_scale(log, "grad_norm"):
        return "scaled_loss"
    if _proportional_to_scale(log, "loss"):
        return "clip_before_unscale"
    return "ok"


@variant(DL, "amp_registro_perdida_escalada")
def diagnose_amp_log_only_the_norm(log):
    # only the norm is compared with the scale: a logged loss "cannot be wrong"
    if any(not math.isfinite(record["loss"]) for record in log):
        return "optimizer_step"
    for a, b in zip(log, log[1:]):
        if not _finite_norm(a) and b["scale"] == a["scale"]:
            return "new_scaler_each_step"
    if _proportional_to_scale(log, "grad_norm"):
        return "clip_before_unscale"
    return "ok"


def _less_spread_once_divided(log, key):
    """Over the whole log: does log(value / scale) vary less than log(value)?"""
    pairs = [(r[key], r["scale"]) for r in log if math.isfinite(r[key]) and r[key] > 0]
    if len(pairs) < 3:
        return False
    return (statistics.pstdev([math.log(v / s) for v, s in pairs])
            < statistics.pstdev([math.log(v) for v, _ in pairs]))


@variant(DL, "amp_registro_perdida_escalada")
def diagnose_amp_log_spread_over_the_whole_log(log):
    # the scale's signature sought over the whole log, not step by step: a scale that rises
    # while the real loss falls (it tracks the shrinking gradients) hides a scaled loss
    if any(not math.isfinite(record["loss"]) for record in log):
        return "optimizer_step"
    for a, b in zip(log, log[1:]):
        if not _finite_norm(a) and b["scale"] == a["scale"]:
            return "new_scaler_each_step"
    if _less_spread_once_divided(log, "grad_norm"):
        return "clip_before_unscale"
    if _less_spread_once_divided(log, "loss"):
        return "scaled_loss"
    return "ok"


@variant(DL, "amp_registro_falsa_alarma")
def diagnose_amp_log_three_backoffs_in_a_row(log):
    # "three backoffs in a row: the steps corrupt the weights": a correct loop whose scale
    # starts far too high backs off several times before its first step
    scales = [record["scale"] for record in log]
    if any(c < b < a for a, b, c in zip(scales, scales[1:], scales[2:])):
        return "optimizer_step"
    return diagnose_amp_log_ratios(log)


def _reference_rule(log, overflowed=lambda n: not math.isfinite(n), corrupted=math.isfinite,
                    last=1):
    """The reference's rule with a knob per mistake: what counts as an overflowed norm and
    as a corrupted loss, and how many steps at the end the new-scaler search leaves out."""
    if not all(corrupted(record["loss"]) for record in log):
        return "optimizer_step"
    for step in range(len(log) - last):
        if overflowed(log[step]["grad_norm"]) and log[step + 1]["scale"] >= log[step]["scale"]:
            return "new_scaler_each_step"
    if _proportional_to_scale(log, "grad_norm"):
        return "clip_before_unscale"
    if _proportional_to_scale(log, "loss"):
        return "scaled_loss"
    return "ok"


@variant(DL, "amp_registro_etiqueta")
def diagnose_amp_log_describes_the_call(log):
    # names the call instead of the label it was asked for
    label = _reference_rule(log)
    return "optimizer.step()" if label == "optimizer_step" else label


@variant(DL, "amp_registro_escalador_nuevo")
def diagnose_amp_log_overflow_is_inf_only(log):
    # an overflow seen as an inf norm only: a nan norm (inf - inf) passes for a clean step
    return _reference_rule(log, overflowed=math.isinf)


@variant(DL, "amp_registro_paso_directo")
def diagnose_amp_log_corrupted_loss_is_inf_only(log):
    # "the weights blew up, so the loss is inf": it is nan
    return _reference_rule(log, corrupted=lambda loss: not math.isinf(loss))


@variant(DL, "amp_registro_escalador_nuevo")
def diagnose_amp_log_skips_the_last_steps(log):
    # "the last steps have nothing after them to compare with": one step too many left out
    return _reference_rule(log, last=2)


@variant(DL, "modificada")
def diagnose_amp_log_normalises_in_place(log):
    # the nan norms written as inf, in the caller's records, before reading them
    for record in log:
        if math.isnan(record["grad_norm"]):
            record["grad_norm"] = math.inf
    return _reference_rule(log)


@variant(DL, "sin_implementar")
def diagnose_amp_log_stub(log):
    raise NotImplementedError()


@variant(DL, "resultado_constante")
def diagnose_amp_log_hardcoded(log):
    return "ok"


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


@variant(SL, "tipo")
def simulate_loss_scale_float32_tensors(found_inf, init_scale, growth_factor, backoff_factor,
                                        growth_interval):
    # the scale kept in float32, as GradScaler keeps it, and returned as it is kept
    scale, clean, scales = torch.tensor(float(init_scale)), 0, []
    for inf in found_inf:
        clean = 0 if inf else clean + 1
        if inf:
            scale = scale * backoff_factor
        elif clean == growth_interval:
            scale, clean = scale * growth_factor, 0
        scales.append(scale)
    return scales


@variant(SL, "longitud")
def simulate_loss_scale_includes_init_scale(found_inf, init_scale, growth_factor,
                                            backoff_factor, growth_interval):
    # the trace starts with the scale before the first step
    return [float(init_scale)] + _simulate(found_inf, init_scale, growth_factor,
                                           backoff_factor, growth_interval)


@variant(SL, "amp_escala_sin_reducir")
def simulate_loss_scale_floor_at_one(found_inf, init_scale, growth_factor, backoff_factor,
                                     growth_interval):
    # "a scale below 1 would make the gradients smaller": clamped at 1 after a backoff
    scale, clean, scales = float(init_scale), 0, []
    for inf in found_inf:
        if inf:
            scale, clean = max(scale * backoff_factor, 1.0), 0
        else:
            clean += 1
            if clean == growth_interval:
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


# ---------------------------------------------------------------- amp_accumulation_steps
@variant(TS, CORRECT)
def amp_accumulation_steps_disabled_scaler(model, batches, loss_fn, optimizer, scaler, device,
                                           dtype, accum, max_norm):
    # A disabled GradScaler is a no-op with the same API: one code path for both cases.
    scaler = scaler or torch.amp.GradScaler(device, enabled=False)
    losses, last = [], len(batches) - 1
    optimizer.zero_grad(set_to_none=False)
    for i, (x, y) in enumerate(batches):
        first = i - i % accum
        size = min(accum, len(batches) - first)
        with torch.amp.autocast(device_type=device, dtype=dtype):
            out = model(x)
        loss = loss_fn(out.float(), y) / size  # the loss in fp32, outside autocast
        scaler.scale(loss).backward()
        if i == first:
            losses.append(0.0)
        losses[-1] += loss.item()
        if (i + 1) % accum == 0 or i == last:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(list(model.parameters()), max_norm)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
    return losses


@variant(TS, CORRECT)
def amp_accumulation_steps_sum_then_divide(model, batches, loss_fn, optimizer, scaler, device,
                                           dtype, accum, max_norm):
    # each micro-batch's loss divided by its cycle's size, the mean logged afterwards
    losses = []
    for cycle in (batches[i:i + accum] for i in range(0, len(batches), accum)):
        for p in model.parameters():
            p.grad = None
        logged = []
        for x, y in cycle:
            with torch.autocast(device, dtype=dtype):
                loss = loss_fn(model(x), y)
            logged.append(loss.item())
            part = loss / len(cycle)
            if scaler is not None:
                part = scaler.scale(part)
            part.backward()
        if scaler is not None:
            scaler.unscale_(optimizer)
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=max_norm)
        if scaler is not None:
            scaler.step(optimizer)
            scaler.update()
        else:
            optimizer.step()
        losses.append(sum(logged) / len(logged))
    return losses


@variant(TS, CORRECT)
def amp_accumulation_steps_skips_overflow_by_hand(model, batches, loss_fn, optimizer, scaler,
                                                  device, dtype, accum, max_norm):
    # checks the unscaled gradients itself; on inf it skips clip and step, but still updates
    if scaler is None:
        return _accumulate(model, batches, loss_fn, optimizer, scaler, device, dtype, accum,
                           max_norm)
    losses = []
    for start in range(0, len(batches), accum):
        cycle = batches[start:start + accum]
        optimizer.zero_grad()
        total = 0.0
        for x, y in cycle:
            with torch.autocast(device_type=device, dtype=dtype):
                loss = loss_fn(model(x), y) / len(cycle)
            scaler.scale(loss).backward()
            total += loss.item()
        scaler.unscale_(optimizer)
        if all(torch.isfinite(p.grad).all() for p in model.parameters()):
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            scaler.step(optimizer)
        scaler.update()
        losses.append(total)
    return losses


def _accumulate(model, batches, loss_fn, optimizer, scaler, device, dtype, accum, max_norm,
                update_each=False, unscale_each=False, clip_first=False, divide=True,
                divide_last_by_accum=False, zero="cycle", plain_step=False, cast=False,
                scaled=False, autocast=True, train_mode=False, autocast_dtype=True):
    """The training with one knob per classic mistake."""
    if train_mode:
        model.train()
    if cast:
        model.to(dtype)  # "16-bit training": no fp32 master weights left
    losses = []
    for start in range(0, len(batches), accum):
        cycle = batches[start:start + accum]
        n = accum if divide_last_by_accum else len(cycle)
        if zero == "cycle":
            optimizer.zero_grad()
        total = 0.0
        for x, y in cycle:
            if zero == "micro":
                optimizer.zero_grad()
            if cast:
                x, y = x.to(dtype), y.to(dtype)
            settings = {"dtype": dtype} if autocast_dtype is True else {}
            with torch.autocast(device_type=device, enabled=autocast, **settings):
                loss = loss_fn(model(x), y)
            if divide:
                loss = loss / n
            if scaler is None:
                loss.backward()
            else:
                scaled_loss = scaler.scale(loss)
                scaled_loss.backward()
                if unscale_each:
                    scaler.unscale_(optimizer)
                if update_each:
                    scaler.update()
                if scaled:
                    loss = scaled_loss
            total += loss.item()
        if scaler is not None and not (clip_first or unscale_each):
            scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        if scaler is None or plain_step:
            optimizer.step()
        else:
            scaler.step(optimizer)
        if scaler is not None and not update_each:
            scaler.update()
        if zero == "after":
            optimizer.zero_grad()
        losses.append(total)
    return losses


@variant(TS, "amp_update_por_microlote")
def amp_accumulation_steps_updates_every_micro_batch(*args):
    return _accumulate(*args, update_each=True)


@variant(TS, "amp_unscale_por_microlote")
def amp_accumulation_steps_unscales_every_micro_batch(*args):
    return _accumulate(*args, unscale_each=True)


@variant(TS, "clip_antes_de_unscale")
def amp_accumulation_steps_clips_scaled_gradients(*args):
    # clips the scaled gradients; scaler.step unscales them afterwards, too late
    return _accumulate(*args, clip_first=True)


@variant(TS, "sin_dividir_por_accum")
def amp_accumulation_steps_without_dividing(*args):
    return _accumulate(*args, divide=False)


@variant(TS, "amp_ultimo_ciclo_por_accum")
def amp_accumulation_steps_last_cycle_by_accum(*args):
    return _accumulate(*args, divide_last_by_accum=True)


@variant(TS, "amp_zero_grad_en_micro_lote")
def amp_accumulation_steps_zero_grad_every_micro_batch(*args):
    return _accumulate(*args, zero="micro")


@variant(TS, "amp_grad_previo_sin_borrar")
def amp_accumulation_steps_zero_grad_only_after_the_step(*args):
    return _accumulate(*args, zero="after")  # the leftovers of the caller reach step 1


@variant(TS, "amp_step_sin_scaler")
def amp_accumulation_steps_calls_optimizer_step(*args):
    return _accumulate(*args, plain_step=True)


@variant(TS, "amp_sin_pesos_maestros")
def amp_accumulation_steps_casts_the_model(*args):
    return _accumulate(*args, cast=True)


@variant(TS, "amp_perdida_escalada")
def amp_accumulation_steps_returns_scaled_losses(*args):
    return _accumulate(*args, scaled=True)


@variant(TS, "amp_sin_autocast")
def amp_accumulation_steps_without_autocast(*args):
    return _accumulate(*args, autocast=False)


@variant(TS, "amp_dtype_ignorado")
def amp_accumulation_steps_autocast_default_dtype(*args):
    return _accumulate(*args, autocast_dtype=None)  # the device's default: bf16 on CPU


if torch.cuda.is_available():  # on a CPU-only machine "cpu" is always the right device
    @variant(TS, "amp_autocast_otro_dispositivo")
    def amp_accumulation_steps_autocast_on_cpu_always(model, batches, loss_fn, optimizer,
                                                      scaler, device, dtype, accum, max_norm):
        return _accumulate(model, batches, loss_fn, optimizer, scaler, "cpu", dtype, accum,
                           max_norm)


@variant(TS, "efecto_secundario")
def amp_accumulation_steps_sets_train_mode(*args):
    return _accumulate(*args, train_mode=True)  # "training trains": the caller's eval lost


@variant(TS, "efecto_secundario")
def amp_accumulation_steps_restores_the_root_flag_only(*args):
    # "train, then put the mode back": only the root's flag is put back
    model = args[0]
    was_training = model.training
    losses = _accumulate(*args, train_mode=True)
    model.training = was_training
    return losses


@variant(TS, "efecto_secundario")
def amp_accumulation_steps_switches_the_loss_to_a_sum(model, batches, loss_fn, *rest):
    # "a sum, divided by hand, is the same mean": it is, but the caller's loss now sums
    loss_fn.reduction = "sum"
    return _accumulate(model, batches, lambda out, y: loss_fn(out, y) / out.numel(), *rest)


@variant(TS, "efecto_secundario")
def amp_accumulation_steps_leaves_autograd_off(*args):
    # the training is right; "no autograd once it is done" is switched on for good
    losses = _accumulate(*args)
    torch.set_grad_enabled(False)
    return losses


@variant(TS, "efecto_secundario")
def amp_accumulation_steps_consumes_the_batches(model, batches, loss_fn, optimizer, scaler,
                                                device, dtype, accum, max_norm):
    # each cycle popped off the caller's list: it is empty afterwards
    losses = []
    while batches:
        cycle = [batches.pop(0) for _ in range(min(accum, len(batches)))]
        optimizer.zero_grad()
        total = 0.0
        for x, y in cycle:
            with torch.autocast(device_type=device, dtype=dtype):
                loss = loss_fn(model(x), y) / len(cycle)
            (loss if scaler is None else scaler.scale(loss)).backward()
            total += loss.item()
        if scaler is not None:
            scaler.unscale_(optimizer)
        nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        if scaler is None:
            optimizer.step()
        else:
            scaler.step(optimizer)
            scaler.update()
        losses.append(total)
    return losses


@variant(TS, "sin_implementar")
def amp_accumulation_steps_stub(model, batches, loss_fn, optimizer, scaler, device, dtype,
                                accum, max_norm):
    raise NotImplementedError()


@variant(TS, "resultado_fijo")
def amp_accumulation_steps_hardcoded(model, batches, loss_fn, optimizer, scaler, device, dtype,
                                     accum, max_norm):
    # the public check's first example, trained once and its losses typed in
    example = construir_pasos(torch.Generator().manual_seed(7), FORMAS_PASO[0])
    return amp_accumulation_steps_sum_then_divide(*example.values())


CARLA_PASOS = '''def amp_accumulation_steps(model, batches, loss_fn, optimizer, scaler, device,
                           dtype, accum, max_norm):
    """Mixed precision with gradient accumulation (see the contract above)."""
    losses = []
    for start in range(0, len(batches), accum):
        cycle = batches[start:start + accum]
        optimizer.zero_grad()
        total = 0.0
        for x, y in cycle:
            with torch.autocast(device_type=device, dtype=dtype):
                loss = loss_fn(model(x), y) / len(cycle)
            if scaler is None:
                loss.backward()
            else:
                scaler.scale(loss).backward()
            total += loss.item()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        if scaler is None:
            optimizer.step()
        else:
            scaler.step(optimizer)
            scaler.update()
        losses.append(total)
    return losses
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
    SampleStudent("carla", "recorta los gradientes acumulados sin llamar antes a "
                  "scaler.unscale_", {"amp_accumulation_steps": CARLA_PASOS},
                  partial={"amp_accumulation_steps_test": 2.5}),
    SampleStudent("diego", "no reinicia el contador de pasos limpios tras un inf",
                  {"simulate_loss_scale": DIEGO_ESCALA},
                  partial={"simulate_loss_scale_test": 1.0}),
]
