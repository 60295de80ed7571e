"""Chapter 6: how each exercise is built, observed and scored, and its public checks.

Injected into the chapter 6 student notebook by the build; the hidden tests use the
same exercises on other inputs against the reference. The public oracles are the label
each log was simulated with (exercise 1), PyTorch's own ``GradScaler`` (exercise 2) and
a step computed another way, with ``torch.autograd.grad`` and a hand-written clip and
SGD update (exercise 3); never the reference.
"""

import math

import torch

from autograder.student.compare import (
    Ejercicio,
    Parte,
    caso_en_proceso,
    comprobar_casos,
    ejercicios,
    estado,
    exigir,
    fallar,
    observar_llamada,
    sanear,
    verificar_sin_efectos,
)
from autograder.student.diagnosis import diagnosticar_tensor
from autograder.student.messages import registrar

__all__ = ["comprobar_diagnose_amp_log", "comprobar_simulate_loss_scale",
           "comprobar_amp_accumulation_steps", "registros_de_ejemplo"]
# The helper cell's runtime report also says which runtime to pick (autograder/inject.py).
INFO_ENTORNO = {"consejo_gpu": True}

# id -> (title, Spanish explanation, Spanish hint, English explanation)
MENSAJES = {
    "amp_registro_etiqueta": (
        "Etiqueta desconocida",
        "Para el registro {indice} devolviste {respuesta}; las etiquetas son {etiquetas}.",
        "El docstring enumera las cinco etiquetas: devuelve exactamente uno de esos textos.",
        "For log {indice} the answer was {respuesta}, not one of {etiquetas}."),
    "amp_registro_falsa_alarma": (
        "Falsa alarma en un entrenamiento sano",
        "El registro {indice} es de un bucle correcto y tu diagnóstico fue {respuesta!r}.",
        "Un bucle correcto también tiene pasos con inf: el escalador los salta y baja la "
        "escala, y la sube tras varios pasos limpios. ¿Lo que te hizo sospechar se explica "
        "con ese comportamiento normal?",
        "Log {indice} comes from a correct loop and was diagnosed as {respuesta!r}."),
    "amp_registro_recorte": (
        "No viste el recorte antes de unscale_",
        "El registro {indice} es de un bucle que recorta antes de `scaler.unscale_` y tu "
        "diagnóstico fue {respuesta!r}.",
        "Sin `unscale_`, ¿qué gradientes mide `clip_grad_norm_`, y con qué factor salen "
        "multiplicados? Mira qué le pasa a `grad_norm` en los pasos en que cambia la escala.",
        "Log {indice} clips before scaler.unscale_ and was diagnosed as {respuesta!r}."),
    "amp_registro_escalador_nuevo": (
        "No viste el GradScaler nuevo en cada paso",
        "El registro {indice} es de un bucle que crea un `GradScaler` nuevo en cada paso y tu "
        "diagnóstico fue {respuesta!r}.",
        "Un escalador nuevo no recuerda nada de los pasos anteriores. ¿Qué hace la escala de "
        "un escalador que dura todo el entrenamiento después de un paso con inf? Busca un paso "
        "cuya norma no es finita y mira la escala del paso siguiente.",
        "Log {indice} creates a new GradScaler every step and was diagnosed as "
        "{respuesta!r}."),
    "amp_registro_paso_directo": (
        "No viste el optimizer.step() directo",
        "El registro {indice} es de un bucle que llama a `optimizer.step()` en vez de "
        "`scaler.step(optimizer)` y tu diagnóstico fue {respuesta!r}.",
        "Sin `scaler.step`, nadie salta el paso con inf: ¿qué les pasa a los pesos, y desde "
        "ese paso, a la pérdida y a la escala?",
        "Log {indice} calls optimizer.step() directly and was diagnosed as {respuesta!r}."),
    "amp_registro_perdida_escalada": (
        "No viste la pérdida escalada",
        "El registro {indice} es de un bucle que registra la pérdida escalada y tu "
        "diagnóstico fue {respuesta!r}.",
        "Si lo registrado es la pérdida escalada, ¿de qué depende además del entrenamiento? "
        "Compara la pérdida justo antes y justo después de un cambio de escala.",
        "Log {indice} logs the scaled loss and was diagnosed as {respuesta!r}."),
    "amp_escala_sin_reducir": (
        "La escala no baja tras un inf",
        "En el paso {paso}, con inf/NaN en los gradientes, la escala pasó de {antes:g} a "
        "{despues:g}; debía multiplicarse por backoff_factor.",
        "Un inf significa que la escala es demasiado grande: ¿qué hace la regla con la escala y "
        "con el contador de pasos limpios en ese caso?",
        "At step {paso} a step with inf/NaN did not reduce the scale."),
    "amp_crecimiento_prematuro": (
        "La escala crece demasiado pronto",
        "En el paso {paso} la escala creció ({antes:g} → {despues:g}) y todavía no tocaba.",
        "La escala crece solo tras growth_interval pasos limpios **seguidos**: el contador "
        "vuelve a 0 con cada inf y también después de crecer.",
        "At step {paso} the scale grew too early."),
    "amp_crecimiento_tardio": (
        "La escala no crece a tiempo",
        "En el paso {paso} tocaba multiplicar la escala por growth_factor y se quedó en "
        "{despues:g}.",
        "¿Cuántos pasos limpios seguidos esperas antes de hacer crecer la escala? Revisa la "
        "comparación con growth_interval, el valor inicial del contador y si vuelve a 0 después "
        "de crecer.",
        "At step {paso} the scale should have grown and did not."),
    "amp_otro_factor": (
        "La escala cambia por otro factor",
        "En el paso {paso} la escala se multiplicó por {factor:g}, y {nombre} vale {valor:g}.",
        "¿De dónde salen los factores que usas? La función los recibe como argumentos; no son "
        "necesariamente los de GradScaler por defecto.",
        "At step {paso} the scale changed by {factor:g}, while {nombre} is {valor:g}."),
    "amp_sin_autocast": (
        "Sin autocast",
        "El modelo corrió en {dtype_visto}, no en {dtype_pedido}: el pase hacia adelante no está "
        "dentro de `torch.autocast`.",
        "¿En qué dtype se calculan tu pase hacia adelante y tu pérdida? Sin autocast, todo va "
        "en float32.",
        "The forward pass ran in {dtype_visto}, not {dtype_pedido}: no autocast."),
    "amp_step_sin_scaler": (
        "optimizer.step() con GradScaler",
        "Llamaste a `optimizer.step()` directamente teniendo un GradScaler: así no se salta el "
        "paso cuando los gradientes tienen inf o NaN.",
        "Con GradScaler, ¿quién comprueba si hay inf en los gradientes antes de aplicar el "
        "paso?",
        "optimizer.step() was called directly although a GradScaler was given."),
    "amp_sin_pesos_maestros": (
        "Pesos en 16 bits",
        "Los parámetros quedaron en {dtype}: el modelo ya no tiene pesos maestros en fp32.",
        "¿En qué dtype quedan los parámetros del modelo? Con autocast, los pesos maestros "
        "siguen en float32.",
        "The parameters ended in {dtype}: no fp32 master weights."),
    "amp_paso_con_inf": (
        "Paso aplicado con inf/NaN",
        "Los gradientes tenían inf o NaN y aun así los parámetros cambiaron.",
        "Hubo gradientes con inf y aun así se aplicó el paso. ¿Quién debía saltarlo?",
        "The parameters changed although the gradients held inf/NaN."),
    "amp_dtype_ignorado": (
        "autocast en otro dtype",
        "El modelo corrió en {dtype_visto} y la llamada pedía {dtype_pedido}: tu autocast no "
        "usa el `dtype` que recibe la función.",
        "¿Qué dtype usa autocast si no le dices ninguno? ¿Qué argumento de la función dice en "
        "qué dtype calcular?",
        "The model ran in {dtype_visto} but the call asked for {dtype_pedido}: autocast "
        "ignores the dtype argument."),
    "amp_autocast_otro_dispositivo": (
        "autocast en otro dispositivo",
        "El modelo corrió en float32 en {dispositivo}: tu autocast está activo en {otro}, no "
        "en el dispositivo de los datos.",
        "autocast solo actúa sobre las operaciones del tipo de dispositivo que le dices. "
        "¿Qué argumento de la función dice cuál es?",
        "The forward ran in float32 on {dispositivo}: autocast was enabled for {otro}."),
    "amp_sin_update": (
        "Falta scaler.update()",
        "`scaler.update()` corrió {veces} veces; el entrenamiento dio {esperadas} pasos del "
        "optimizador: la escala no se ajusta tras cada paso.",
        "¿Cuándo ajusta GradScaler su escala? Revisa que cada paso del optimizador termine con "
        "la llamada que la actualiza.",
        "scaler.update() ran {veces} times for {esperadas} optimizer steps."),
    "amp_update_por_microlote": (
        "La escala cambia a mitad de ciclo",
        "`scaler.update()` corrió en micro-lotes que no cierran un ciclo: la escala tiene que "
        "ser la misma para todos los micro-lotes que se acumulan en un paso.",
        "Los gradientes de un ciclo se suman en `.grad` con la escala de cada micro-lote. ¿Qué "
        "pasa con esa suma si la escala cambia entre dos micro-lotes? ¿Cuántas veces por paso "
        "del optimizador se ajusta?",
        "scaler.update() ran inside a cycle: the scale changed between accumulated "
        "micro-batches."),
    "amp_unscale_por_microlote": (
        "unscale_ en cada micro-lote",
        "`scaler.unscale_` se llamó dos veces en un ciclo y PyTorch lo rechaza: desescalaría "
        "dos veces los gradientes ya acumulados.",
        "`unscale_` divide todo lo que hay en `.grad`, lo acumulado incluido. ¿Cuántas veces "
        "hay que dividirlo por ciclo, y cuándo está completo?",
        "scaler.unscale_ ran twice in one cycle (once per micro-batch)."),
    "amp_ultimo_ciclo_por_accum": (
        "Último ciclo dividido por accum",
        "`{nombre}` es {razon:.3g} × el valor correcto: el último ciclo, incompleto, se "
        "dividió por `accum` en vez de por los micro-lotes que tiene.",
        "El último ciclo no siempre tiene `accum` micro-lotes (capítulo 3): ¿por qué número "
        "divides la pérdida de cada uno para que el paso use su media?",
        "`{nombre}`: the last, incomplete cycle was divided by accum, not by its size."),
    "amp_zero_grad_en_micro_lote": (
        "Gradientes borrados dentro del ciclo",
        "`{nombre}` no es la media de su ciclo: los gradientes se pusieron a cero entre dos "
        "micro-lotes del mismo ciclo y se perdió lo acumulado.",
        "¿Cuántas veces vacías los gradientes por paso del optimizador, y en qué momento del "
        "ciclo?",
        "`{nombre}`: gradients were zeroed between micro-batches of one cycle."),
    "amp_grad_previo_sin_borrar": (
        "Restos en .grad",
        "`{nombre}` lleva lo que `.grad` ya tenía al llamar a tu función.",
        "`backward()` suma sobre lo que encuentra en `.grad`. ¿Qué había en `.grad` antes de tu "
        "primer micro-lote?",
        "`{nombre}` includes what .grad held before the call."),
    "amp_perdida_escalada": (
        "Pérdida escalada",
        "Una pérdida devuelta es {razon:.4g} × la real: es la pérdida multiplicada por la escala.",
        "¿Qué pérdida devuelves: la original o la multiplicada por la escala?",
        "A returned loss is the scaled loss."),
}
registrar(MENSAJES)


def nombre_dtype(valor):
    """'bfloat16' for torch.bfloat16; any other value as plain data."""
    if isinstance(valor, torch.dtype):
        return str(valor).replace("torch.", "")
    return sanear(valor)


def _nombre_tipo(objeto):
    return objeto.get("__objeto__", "dict") if isinstance(objeto, dict) else type(objeto).__name__


# ---------------------------------------------------------------- exercise 1: diagnose_amp_log
# A case is a list of training logs, one call per log. Each log is simulated step by step:
# a noisy quadratic problem trained in float16 with a GradScaler (the scale backs off on an
# overflow, grows after growth_interval clean steps), with one of the chapter's bugs or none.
# The signature of each bug follows from the mechanics, never from a threshold: the problem's
# magnitude spans eight decades and the scale starts far from or near the largest one that
# does not overflow, so no absolute value tells the classes apart.
DISPOSITIVOS = ("cpu", "cuda")  # the device types autocast is watched on
ETIQUETAS = ("ok", "clip_before_unscale", "new_scaler_each_step", "optimizer_step", "scaled_loss")
FP16_MAX = 65504.0


def _uniforme(generador, bajo, alto):
    return bajo + (alto - bajo) * torch.rand(1, generator=generador).item()


def _tramo(generador, bajo, alto, tramo):
    """A uniform draw in the ``tramo = (k, n)``-th of n equal slices of [bajo, alto]."""
    k, n = tramo
    return _uniforme(generador, bajo + (alto - bajo) * k / n, bajo + (alto - bajo) * (k + 1) / n)


def _simular(generador, etiqueta, tramo_magnitud, tramo_escala, tardio, alto=False,
             pegada=False):
    """One attempt at a log of ``etiqueta``: a list of {"loss", "scale", "grad_norm"}.
    ``tardio``: the one overflow is the second-to-last step's (the scale then starts far
    enough below the largest one that does not overflow, and the gradients only shrink).
    ``alto``: the scale starts 2^3 to 2^5 above that one, so it backs off three to five steps
    in a row before the first step is taken (GradScaler's 65536 often does), and the loss
    and the norm are in the tens of thousands (the top of the magnitudes' top slice). ``pegada``: it
    starts at that one and grows every 3 clean steps, so it tracks it as the gradients shrink
    (the scale then rises while the loss falls, from far off, to a low floor: over the whole
    log, loss × scale varies less than the loss; only a step-by-step rule reads it)."""
    pasos = integer_de(generador, 40, 70)
    dim = 6
    curvatura = [10 ** _uniforme(generador, -0.5, 0.5) for _ in range(dim)]
    magnitud = 10 ** (_uniforme(generador, 4.5, 5.0) if alto
                      else _tramo(generador, -3.0, 5.0, tramo_magnitud))
    # some logs start near the optimum (the loss plateaus early), others far from it
    inicio = 10 ** _uniforme(generador, -1.0, 0.5)
    inicio = 10 ** 0.5 if pegada else inicio
    peso = [inicio * v for v in torch.randn(dim, generator=generador).tolist()]
    suelo = magnitud * _uniforme(generador, 0.05, 0.5)
    lr = _uniforme(generador, 0.01, 0.04) / (magnitud * max(curvatura))
    if pegada:
        suelo, lr = magnitud * 0.001, 0.1 / (magnitud * max(curvatura))
    gradiente_0 = max(abs(magnitud * a * w) for a, w in zip(curvatura, peso))
    max_norm = _uniforme(generador, 0.3, 3.0) * magnitud * math.sqrt(
        sum((a * w) ** 2 for a, w in zip(curvatura, peso)))
    # GradScaler's rule (defaults 2 and 0.5), an interval short enough to see it grow, and an
    # init_scale from 2^14 below to 2^2 above the largest one that does not overflow
    intervalo = integer_de(generador, 3, 10)
    desfase = (_uniforme(generador, 3.0, 5.0) if alto
               else _tramo(generador, -14.0, 2.0, tramo_escala))
    if pegada:
        intervalo, desfase = 3, 0.0
    escala = 2.0 ** round(math.log2(FP16_MAX / gradiente_0) + desfase)
    # a bad batch (its gradients overflow whatever the scale): at least one, early enough
    picos = (torch.rand(pasos, generator=generador) < 0.04).tolist()
    picos[integer_de(generador, 2, pasos * 2 // 3)] = True
    if tardio:
        picos = [paso == pasos - 2 for paso in range(pasos)]
    limpios, registro = 0, []
    for paso in range(pasos):
        if any(not math.isfinite(w) for w in peso):
            perdida = math.nan
            gradiente = [math.nan] * dim
        else:
            cuadratica = 0.5 * magnitud * sum(a * w * w for a, w in zip(curvatura, peso))
            perdida = (cuadratica + suelo) * (1 + 0.02 * torch.randn(1, generator=generador).item())
            ruido = torch.randn(dim, generator=generador).tolist()
            gradiente = [magnitud * a * w * (1 + 0.03 * r)
                         for a, w, r in zip(curvatura, peso, ruido)]
        norma = math.sqrt(sum(g * g for g in gradiente))
        desborda = (picos[paso] or not math.isfinite(norma)
                    or escala * max(abs(g) for g in gradiente) > FP16_MAX)
        if desborda:  # inf in the backward; inf - inf is nan further on (always, late)
            norma = math.nan if tardio else (math.inf, math.nan)[integer_de(generador, 1)]
        vista = escala * norma if etiqueta == "clip_before_unscale" else norma
        registro.append({"loss": escala * perdida if etiqueta == "scaled_loss" else perdida,
                         "scale": escala, "grad_norm": vista})
        if not desborda:
            recorte = min(1.0, max_norm / (vista + 1e-6))
            peso = [w - lr * g * recorte for w, g in zip(peso, gradiente)]
        elif etiqueta == "optimizer_step":  # the step is taken anyway: the weights are lost
            peso = [math.nan] * dim
        if etiqueta != "new_scaler_each_step":  # a new scaler: the same init_scale every step
            if desborda:
                escala, limpios = escala * 0.5, 0
            else:
                limpios += 1
                if limpios == intervalo:
                    escala, limpios = escala * 2.0, 0
    return registro


def _separable(registro, etiqueta):
    """The log shows its class's signature: an overflow with a step after it (two steps
    before the end but for a new scaler every step) and, where the scale moves, a growth
    between two clean steps and a backoff."""
    normas = [r["grad_norm"] for r in registro]
    escalas = [r["scale"] for r in registro]
    desbordes = [t for t, n in enumerate(normas) if not math.isfinite(n)]
    if not desbordes or desbordes[0] > len(registro) - (2 if etiqueta == "new_scaler_each_step"
                                                          else 3):
        return False
    if etiqueta in ("new_scaler_each_step", "optimizer_step"):
        return True
    crece = any(b > a and math.isfinite(m) and math.isfinite(n)
                for a, b, m, n in zip(escalas, escalas[1:], normas, normas[1:]))
    return crece and any(b < a for a, b in zip(escalas, escalas[1:]))


def simular_registro(generador, etiqueta, tramo_magnitud=(0, 1), tramo_escala=(0, 1),
                     tardio=False, alto=False, pegada=False):
    """A training log of ``etiqueta`` (one of ETIQUETAS) that shows its signature; its
    magnitude and its initial scale from the given slices of their ranges."""
    while True:
        registro = _simular(generador, etiqueta, tramo_magnitud, tramo_escala, tardio, alto,
                            pegada)
        if _separable(registro, etiqueta):
            return registro


def clases_sorteadas(generador, forma):
    """The labels of a case's logs, in a per-seed order: each of ETIQUETAS ``forma[0]``
    times."""
    copias = forma[0]
    orden = torch.randperm(len(ETIQUETAS) * copias, generator=generador).tolist()
    return [ETIQUETAS[i % len(ETIQUETAS)] for i in orden]


def construir_registros(generador, forma):
    """The logs of ``forma`` = (copies of each label,)."""
    copias = forma[0]
    etiquetas = clases_sorteadas(generador, forma)
    # each label's copies cover every slice of the magnitude's range and of the initial
    # scale's, in a per-seed pairing: no absolute value separates the labels
    tramos = {e: list(zip(torch.randperm(copias, generator=generador).tolist(),
                          torch.randperm(copias, generator=generador).tolist()))
              for e in ETIQUETAS}
    registros = []
    for etiqueta in etiquetas:
        magnitud, escala = tramos[etiqueta].pop()
        # a new scaler every step whose one overflow is the second-to-last step, in every case
        tardio = etiqueta == "new_scaler_each_step" and escala == 0
        # a correct loop whose scale starts far too high and whose loss is large, in every
        # case: several backoffs in a row, or a loss in the thousands, are no bug
        alto = etiqueta == "ok" and magnitud == copias - 1
        # a scaled loss whose scale tracks the largest one that does not overflow
        pegada = etiqueta == "scaled_loss" and escala == copias - 1
        registros.append(simular_registro(generador, etiqueta, (magnitud, copias),
                                          (escala, copias), tardio, alto, pegada))
    return {"registros": registros}


def observar_registros(diagnose_amp_log, entradas):
    respuestas, modificados = [], []
    for registro in entradas["registros"]:
        copia = [dict(r) for r in registro]  # each call gets its own log
        antes = repr(copia)
        observacion = observar_llamada(diagnose_amp_log, copia)
        if observacion["error"] is not None:
            return observacion
        respuestas.append(observacion["resultado"])
        modificados.append(repr(copia) != antes)  # repr: a nan equals a nan
    return {"resultado": respuestas, "error": None, "modificados": modificados}


# The diagnosis when a log of each label gets another answer.
NO_VISTO = {"ok": "amp_registro_falsa_alarma", "clip_before_unscale": "amp_registro_recorte",
            "new_scaler_each_step": "amp_registro_escalador_nuevo",
            "optimizer_step": "amp_registro_paso_directo",
            "scaled_loss": "amp_registro_perdida_escalada"}


def _verificar_registros(caso, etiqueta):
    respuestas = caso.resultado
    esperadas = caso.datos["esperado"]
    if type(respuestas) is not list or len(respuestas) != len(esperadas):
        fallar("tipo", nombre="el resultado", esperado="un texto", tipo=_nombre_tipo(respuestas))
    for indice, (respuesta, esperada) in enumerate(zip(respuestas, esperadas)):
        if esperada != etiqueta:
            continue
        if respuesta not in ETIQUETAS:
            fallar("amp_registro_etiqueta", indice=indice, respuesta=repr(respuesta),
                   etiquetas=", ".join(repr(e) for e in ETIQUETAS))
        if respuesta != esperada:
            fallar(NO_VISTO[etiqueta], indice=indice, respuesta=respuesta)
        if caso.datos.get("modificados", [False] * len(esperadas))[indice]:
            fallar("modificada", nombre="log")


def _parte_registro(nombre, etiqueta, puntos):
    return Parte(nombre, puntos, lambda caso: _verificar_registros(caso, etiqueta))


DIAGNOSE_AMP_LOG = Ejercicio(
    funcion="diagnose_amp_log",
    partes=[
        # first: a rule that sees a bug everywhere is named as a false alarm (answering 'ok'
        # to everything earns nothing: the same answer to every log is a constant result)
        _parte_registro("sin falsas alarmas en los entrenamientos sanos ('ok')", "ok", 0.5),
        _parte_registro("recorte antes de unscale_ ('clip_before_unscale')",
                        "clip_before_unscale", 0.5),
        _parte_registro("un GradScaler nuevo en cada paso ('new_scaler_each_step')",
                        "new_scaler_each_step", 0.5),
        _parte_registro("optimizer.step() sin el escalador ('optimizer_step')",
                        "optimizer_step", 0.5),
        _parte_registro("pérdida escalada en el registro ('scaled_loss')", "scaled_loss", 0.5),
    ],
    construir=construir_registros, observar=observar_registros)


# The public example's (seed, shape): two logs of each label.
EJEMPLO_REGISTROS = (3, (2,))


def registros_de_ejemplo():
    """Los registros de la comprobación pública, cada uno con su etiqueta: una lista de
    tuplas ``(etiqueta, registro)``, dos por etiqueta. Sirven para mirar cómo es cada
    error en un registro; las pruebas ocultas usan registros nuevos."""
    semilla, forma = EJEMPLO_REGISTROS
    registros = construir_registros(torch.Generator().manual_seed(semilla), forma)["registros"]
    etiquetas = clases_sorteadas(torch.Generator().manual_seed(semilla), forma)
    return list(zip(etiquetas, registros))


def comprobar_diagnose_amp_log(diagnose_amp_log):
    """Comprobación pública: diez registros simulados, dos de cada etiqueta."""
    semilla, forma = EJEMPLO_REGISTROS
    caso = caso_en_proceso(
        DIAGNOSE_AMP_LOG, diagnose_amp_log, semilla, forma,
        # the oracle: the label each log was simulated with
        lambda registros: clases_sorteadas(torch.Generator().manual_seed(semilla), forma))
    comprobar_casos(DIAGNOSE_AMP_LOG.partes, [caso],
                    "Diagnosticas bien los diez registros del ejemplo.")


# ---------------------------------------------------------------- exercise 2: simulate_loss_scale
# Growth and backoff factors the hidden cases draw: GradScaler's defaults (2 and 0.5) and
# others; init_scale a power of two or not. In range (the scale never reaches inf nor a
# float32 subnormal), where the rule in exact arithmetic and a GradScaler (float32) agree.
CRECIMIENTOS = (2.0, 1.5, 3.0, 4.0)
REDUCCIONES = (0.5, 0.25, 0.75, 0.125)


def construir_escala(generador, forma):
    """found_inf flags and GradScaler settings for ``forma`` = (steps, growth_interval,
    backoff code into REDUCCIONES[, growth code into CRECIMIENTOS, init_scale code:
    0 → a power of two, 1 → an odd integer, 2 → a power of two below 1; 1 → the first
    steps are clean])."""
    pasos, intervalo, codigo, *resto = forma
    crecimiento, inicial, al_principio = (resto + [0, 0, 0])[:3]
    banderas = (torch.rand(pasos, generator=generador) < 0.3).tolist()
    # Always two growths in a row somewhere: a counter not reset after growing shows there
    # (and, from the first step, a counter that does not start at 0).
    inicio = int(torch.randint(0, pasos - 2 * intervalo, (1,), generator=generador).item())
    inicio = 0 if al_principio else inicio
    banderas[inicio:inicio + 2 * intervalo] = [False] * (2 * intervalo)
    exponente = int(torch.randint(8, 17, (1,), generator=generador).item())
    escala = 2.0 ** exponente
    if inicial == 1:
        escala = float(int(torch.randint(100, 60000, (1,), generator=generador).item()) | 1)
    elif inicial == 2:  # below 1: a scale has no floor
        escala = 2.0 ** -int(torch.randint(6, 13, (1,), generator=generador).item())
    return {"found_inf": [bool(b) for b in banderas], "init_scale": escala,
            "growth_factor": CRECIMIENTOS[crecimiento], "backoff_factor": REDUCCIONES[codigo],
            "growth_interval": intervalo}


def observar_escala(simulate_loss_scale, entradas):
    observacion = observar_llamada(simulate_loss_scale, *entradas.values())
    observacion["found_inf_despues"] = sanear(list(entradas["found_inf"]))
    return observacion


def _escalas(caso):
    """The student's scales as a list of floats (a type or length diagnosis otherwise)."""
    resultado = caso.resultado
    banderas = caso.datos["esperado"]["found_inf"]
    if type(resultado) not in (list, tuple):
        fallar("tipo", nombre="el resultado", esperado="una lista de floats",
               tipo=_nombre_tipo(resultado))
    if len(resultado) != len(banderas):
        fallar("longitud", nombre="la lista de escalas", longitud=len(resultado),
               longitud_esperada=len(banderas))
    escalas = []
    for valor in resultado:
        if type(valor) is not float:
            fallar("tipo", nombre="cada escala", esperado="un float de Python",
                   tipo=_nombre_tipo(valor))
        escalas.append(float(valor))
    return escalas


def _igual(a, b):
    """Equal scales: 1e-5 relative leaves room for a float32 scale (GradScaler's own)."""
    return math.isclose(a, b, rel_tol=1e-5)


def _reduce_con_inf(caso):
    escalas = _escalas(caso)
    datos = caso.datos["esperado"]
    anterior = datos["init_scale"]
    for paso, (inf, escala) in enumerate(zip(datos["found_inf"], escalas)):
        if inf and not _igual(escala, anterior * datos["backoff_factor"]):
            if escala >= anterior:
                fallar("amp_escala_sin_reducir", paso=paso, antes=anterior, despues=escala)
            fallar("amp_otro_factor", paso=paso, factor=escala / anterior,
                   nombre="backoff_factor", valor=datos["backoff_factor"])
        anterior = escala
    if caso.datos["found_inf_despues"] != datos["found_inf"]:
        fallar("modificada", nombre="found_inf")


def _traza_de_escala(caso):
    escalas = _escalas(caso)
    datos = caso.datos["esperado"]
    anterior = datos["init_scale"]
    for paso, (escala, esperada) in enumerate(zip(escalas, datos["escalas"])):
        if not _igual(escala, esperada):
            if datos["found_inf"][paso]:
                fallar("amp_escala_sin_reducir", paso=paso, antes=anterior, despues=escala)
            if escala > anterior and _igual(esperada, anterior):
                fallar("amp_crecimiento_prematuro", paso=paso, antes=anterior, despues=escala)
            if esperada > anterior and _igual(escala, anterior):
                fallar("amp_crecimiento_tardio", paso=paso, despues=escala)
            if esperada > anterior and escala > anterior:
                fallar("amp_otro_factor", paso=paso, factor=escala / anterior,
                       nombre="growth_factor", valor=datos["growth_factor"])
            fallar("no_reconocido", nombre=f"escalas[{paso}]")
        anterior = escala


SIMULATE_LOSS_SCALE = Ejercicio(
    funcion="simulate_loss_scale",
    partes=[
        Parte("cada paso con inf multiplica la escala por backoff_factor", 1.0, _reduce_con_inf),
        Parte("la escala crece tras growth_interval pasos limpios seguidos", 2.0,
              _traza_de_escala),
    ],
    construir=construir_escala, observar=observar_escala)


def escalas_de_gradscaler(found_inf, init_scale, growth_factor, backoff_factor, growth_interval):
    """The public oracle: PyTorch's own GradScaler, fed gradients that are inf on command."""
    escalador = torch.amp.GradScaler("cpu", init_scale=init_scale, growth_factor=growth_factor,
                                     backoff_factor=backoff_factor,
                                     growth_interval=growth_interval)
    peso = torch.zeros(1, requires_grad=True)
    optimizador = torch.optim.SGD([peso], lr=0.0)
    escalas = []
    for inf in found_inf:
        optimizador.zero_grad()
        factor = math.inf if inf else 1.0
        (escalador.scale(peso.sum() + 1.0) * factor).backward()
        escalador.step(optimizador)
        escalador.update()
        escalas.append(escalador.get_scale())
    return {"escalas": escalas, "found_inf": list(found_inf), "init_scale": init_scale,
            "growth_factor": growth_factor, "backoff_factor": backoff_factor}


# The public examples' (seed, shape): a sequence with GradScaler's defaults, backoffs and
# two growths in a row (a counter not reset after growing shows only there); another with
# growth 1.5, backoff 0.75, an init_scale that is no power of two, and clean first steps;
# a third with growth_interval 1 and an init_scale below 1.
EJEMPLO_ESCALA = (2, (24, 3, 0))
OTRO_EJEMPLO_ESCALA = (5, (20, 2, 2, 1, 1, 1))
TERCER_EJEMPLO_ESCALA = (11, (20, 1, 1, 3, 2, 0))


def comprobar_simulate_loss_scale(simulate_loss_scale):
    """Comprobación pública: tus trazas de la escala frente a un GradScaler real en tres
    secuencias de pasos."""
    casos = [caso_en_proceso(SIMULATE_LOSS_SCALE, simulate_loss_scale, *ejemplo,
                             escalas_de_gradscaler)
             for ejemplo in (EJEMPLO_ESCALA, OTRO_EJEMPLO_ESCALA, TERCER_EJEMPLO_ESCALA)]
    comprobar_casos(SIMULATE_LOSS_SCALE.partes, casos,
                    "Tus trazas de la escala coinciden con las de un GradScaler de verdad.")


# ------------------------------------------------------- exercise 3: amp_accumulation_steps
# Case codes (float16 always with a GradScaler, bfloat16 always without, as pick_amp_dtype
# says): 0 CPU float16 + GradScaler, clipping active; 1 CPU bfloat16, clipping active;
# 2 CPU float16 + GradScaler whose first cycle overflows (that step is skipped, the scale
# backs off far enough for the next ones), no clipping; 3 CPU float16 + GradScaler that grows
# its scale on every clean step (growth_interval 1), no clipping; 5 CPU bfloat16, no
# clipping; 4 CUDA float16 + GradScaler and 6 CUDA bfloat16 (only where a GPU is present;
# 6 only where it has bf16).
CODIGOS_PASO = {0: ("cpu", torch.float16, True), 1: ("cpu", torch.bfloat16, False),
                2: ("cpu", torch.float16, True), 3: ("cpu", torch.float16, True),
                4: ("cuda", torch.float16, True), 5: ("cpu", torch.bfloat16, False),
                6: ("cuda", torch.bfloat16, False)}
SIN_RECORTE = (2, 3, 5)
# Style bits: what else the contract lets vary (0 is the first public example's style).
# RESTOS: an earlier step left momentum buffers and gradients in .grad.
ANIDADO, SIN_SESGO, PERDIDA_L1, RESTOS, MODO_EVAL, OTRO_SGD = (1, 2, 4, 8, 16, 32)


def _modelo_paso(D, H, K, estilo):
    sesgo = not estilo & SIN_SESGO
    capas = [torch.nn.Linear(D, H, bias=sesgo), torch.nn.ReLU(), torch.nn.Linear(H, K, bias=sesgo)]
    if estilo & ANIDADO:
        return torch.nn.Sequential(torch.nn.Sequential(*capas[:2]), capas[2])
    return torch.nn.Sequential(*capas)


def _escalador(generador, codigo, estilo, dispositivo):
    if codigo == 2:  # 2^40 overflows float16's backward; one backoff brings it to 2^8
        return torch.amp.GradScaler(dispositivo, init_scale=2.0 ** 40, backoff_factor=2.0 ** -32)
    # Moderate scales: a loss not divided by accum must not overflow float16 where the right
    # one does not (that would skip a different step, and hide the mistake behind it).
    if codigo == 3:
        return torch.amp.GradScaler(dispositivo, init_scale=2.0 ** integer_de(generador, 4, 7),
                                    growth_factor=(1.5, 3.0, 4.0)[integer_de(generador, 2)],
                                    growth_interval=1)
    return torch.amp.GradScaler(
        dispositivo, init_scale=2.0 ** (8 if not estilo else integer_de(generador, 6, 9)))


def construir_pasos(generador, forma):
    """model, batches, loss_fn, optimizer, scaler, device, dtype, accum, max_norm for
    ``forma`` = (N, D, H, K, case code, style bits, micro-batches, accum)."""
    N, D, H, K, codigo, estilo, lotes, accum = forma
    dispositivo, dtype, con_escalador = CODIGOS_PASO[codigo]
    modelo = _modelo_paso(D, H, K, estilo)
    with torch.no_grad():
        for p in modelo.parameters():
            p.copy_(torch.randn(p.shape, generator=generador) * 0.5)
    micro_lotes = [(torch.randn(N, D, generator=generador).to(dispositivo),
                    torch.randn(N, K, generator=generador).to(dispositivo))
                   for _ in range(lotes)]
    modelo = modelo.to(dispositivo)
    lr, momento, decaimiento = 0.1, 0.9, 0.0
    if estilo & OTRO_SGD:
        lr = 0.02 + 0.3 * torch.rand(1, generator=generador).item()
        # no momentum only without an earlier step: that one leaves momentum buffers
        momento = 0.5 if estilo & RESTOS else 0.5 * integer_de(generador, 1)
        decaimiento = 1e-2
    optimizador = torch.optim.SGD(modelo.parameters(), lr=lr, momentum=momento,
                                  weight_decay=decaimiento)
    escalador = _escalador(generador, codigo, estilo, dispositivo) if con_escalador else None
    if estilo & RESTOS:  # an earlier step: momentum buffers, and its gradients left in .grad
        for p in modelo.parameters():
            p.grad = (torch.randn(p.shape, generator=generador) * 0.1).to(dispositivo)
        optimizador.step()
        # large enough to show even once divided by the scale
        for p in modelo.parameters():
            p.grad.mul_(escalador.get_scale() if escalador is not None else 1.0)
    if estilo & MODO_EVAL:
        modelo.eval()
    max_norm = 1e4 if codigo in SIN_RECORTE else (
        0.05 if not estilo else 0.02 + 0.08 * torch.rand(1, generator=generador).item())
    perdida = torch.nn.L1Loss() if estilo & PERDIDA_L1 else torch.nn.MSELoss()
    return {"model": modelo, "batches": micro_lotes, "loss_fn": perdida,
            "optimizer": optimizador, "scaler": escalador, "device": dispositivo,
            "dtype": dtype, "accum": accum, "max_norm": max_norm}


def integer_de(generador, bajo, alto=None):
    """An int in [bajo, alto] (in [0, bajo] when alto is None) from ``generador``."""
    if alto is None:
        bajo, alto = 0, bajo
    return int(torch.randint(bajo, alto + 1, (1,), generator=generador).item())


def _ajustes_escalador(escalador):
    if escalador is None:
        return {}
    return {"scaler.growth_factor": escalador.get_growth_factor(),
            "scaler.backoff_factor": escalador.get_backoff_factor(),
            "scaler.growth_interval": escalador.get_growth_interval(),
            "scaler.enabled": escalador.is_enabled()}


def _estado_pasos(entradas):
    foto = estado({"model": entradas["model"], "loss_fn": entradas["loss_fn"]})
    for i, (x, y) in enumerate(entradas["batches"]):
        foto.update(estado({f"batches[{i}][0]": x, f"batches[{i}][1]": y}))
    foto["len(batches)"] = len(entradas["batches"])
    # the optimizer's settings (its state may change: a step fills it); read here, as
    # ``estado`` cannot sort state entries of mixed shapes
    for i, grupo in enumerate(entradas["optimizer"].param_groups):
        for clave, valor in grupo.items():
            if clave != "params":
                foto[f"optimizer.param_groups[{i}].{clave}"] = (
                    valor if type(valor) in (bool, int, float, str, type(None)) else repr(valor))
    foto.update(_ajustes_escalador(entradas["scaler"]))
    return foto


# PyTorch's own errors when the scaler is driven per micro-batch
ERRORES_DEL_ESCALADOR = {"unscale_() has already been called": "amp_unscale_por_microlote",
                         "No inf checks were recorded": "amp_update_por_microlote"}


def _espiar(traza, pasos, momentos, escalas, modelo, optimizador, escalador):
    """Wrap the scaler's and the optimizer's methods: the calls in order, the gradients each
    real optimizer step applies (and after how many micro-batches), and the scale at each
    ``scale`` call."""
    dentro_de_step = []  # GradScaler.step calls unscale_ and optimizer.step itself

    def anotar(nombre, metodo):
        def envoltura(*args, **kwargs):
            if not dentro_de_step:
                traza.append(nombre)
            return metodo(*args, **kwargs)
        return envoltura

    def scaler_step(metodo):
        def envoltura(*args, **kwargs):
            traza.append("scaler.step")
            dentro_de_step.append(1)
            try:
                return metodo(*args, **kwargs)
            finally:
                dentro_de_step.pop()
        return envoltura

    def optimizer_step(metodo):
        def envoltura(*args, **kwargs):
            if not dentro_de_step:
                traza.append("optimizer.step")
            pasos.append([None if p.grad is None else p.grad.detach().float().cpu().clone()
                          for p in modelo.parameters()])
            momentos.append(traza.count("backward"))  # micro-batches seen before this step
            return metodo(*args, **kwargs)
        return envoltura

    def scale(metodo):
        def envoltura(*args, **kwargs):
            traza.append("scaler.scale")
            escalas.append(escalador.get_scale())
            return metodo(*args, **kwargs)
        return envoltura

    if escalador is not None:
        for nombre in ("unscale_", "update"):
            setattr(escalador, nombre, anotar("scaler." + nombre, getattr(escalador, nombre)))
        escalador.scale = scale(escalador.scale)
        escalador.step = scaler_step(escalador.step)
    optimizador.step = optimizer_step(optimizador.step)
    optimizador.zero_grad = anotar("optimizer.zero_grad", optimizador.zero_grad)
    modelo.zero_grad = anotar("optimizer.zero_grad", modelo.zero_grad)


def observar_pasos(amp_accumulation_steps, entradas):
    """Result, the calls in order, the gradients of each optimizer step, the forward's dtype,
    the parameters and the scale after."""
    modelo, optimizador, escalador = entradas["model"], entradas["optimizer"], entradas["scaler"]
    traza, pasos, momentos, escalas, dtypes, perdida = [], [], [], [], [], {}
    escala_inicial = escalador.get_scale() if escalador is not None else None
    _espiar(traza, pasos, momentos, escalas, modelo, optimizador, escalador)
    primero = next(modelo.parameters())
    lineal = next(m for m in modelo.modules() if isinstance(m, torch.nn.Linear))
    ganchos = [primero.register_post_accumulate_grad_hook(lambda p: traza.append("backward")),
               lineal.register_forward_hook(lambda m, entrada, salida: dtypes.append(
                   (nombre_dtype(salida.dtype), _autocast_activo())))]
    restos = [None if p.grad is None else p.grad.detach().float().cpu().clone()
              for p in modelo.parameters()]

    def guardar(*args):
        resultado = amp_accumulation_steps(*args)
        perdida["tensores"] = type(resultado) is list and any(
            isinstance(v, torch.Tensor) for v in resultado)
        perdida["grafo"] = perdida["tensores"] and any(
            isinstance(v, torch.Tensor) and v.grad_fn is not None for v in resultado)
        return resultado

    estado_antes = _estado_pasos(entradas)
    try:
        observacion = observar_llamada(guardar, *entradas.values())
    finally:
        for gancho in ganchos:
            gancho.remove()
    estado_despues = _estado_pasos(entradas)
    error = observacion["error"]
    reducidos = [p.dtype for p in modelo.parameters() if p.dtype != torch.float32]
    if error is not None and reducidos:
        # the error comes from the cast (GradScaler refuses to unscale fp16 gradients)
        observacion["error"] = {"diagnostico": "amp_sin_pesos_maestros",
                                "hechos": {"dtype": nombre_dtype(reducidos[0])}}
    elif error is not None:
        detalle = str(error.get("hechos", {}).get("detalle", ""))
        for fragmento, diagnostico in ERRORES_DEL_ESCALADOR.items():
            if fragmento in detalle:
                observacion["error"] = {"diagnostico": diagnostico, "hechos": {}}
    # what the training may change: the parameters and their .grad (and the optimizer's state)
    permitidos = [f"model.{nombre}{final}" for nombre, _ in
                  modelo.named_parameters() for final in ("", ".grad")]
    observacion.update(
        traza=traza, pasos=pasos, momentos=momentos, escalas=escalas, restos=restos,
        dtype_activacion=dtypes[0][0] if dtypes else None,
        autocast_activo=dtypes[0][1] if dtypes else [],
        perdida_tensores=perdida.get("tensores", False), perdida_grafo=perdida.get("grafo", False),
        parametros=[p.detach().cpu().clone() for p in modelo.parameters()],
        escala=escalador.get_scale() if escalador is not None else None,
        escala_inicial=escala_inicial, estado_antes=estado_antes, estado_despues=estado_despues,
        permitidos=permitidos, max_norm=float(entradas["max_norm"]))
    return observacion


def ciclos_de(lotes, accum):
    """The sizes of the cycles of ``lotes`` micro-batches, ``accum`` at a time."""
    return [min(accum, lotes - inicio) for inicio in range(0, lotes, accum)]


def contexto_pasos(forma):
    return {"dispositivo": CODIGOS_PASO[forma[4]][0], "accum": forma[7],
            "ciclos": ciclos_de(forma[6], forma[7]), "recorta": forma[4] not in SIN_RECORTE}


def _autocast_activo():
    """The device types whose autocast is on right now."""
    activos = []
    for tipo in DISPOSITIVOS:
        try:
            if torch.is_autocast_enabled(tipo):
                activos.append(tipo)
        except (TypeError, RuntimeError):  # PyTorch < 2.4 takes no device type
            pass
    return activos


def _autocast(caso):
    visto, pedido = caso.datos["dtype_activacion"], caso.datos["esperado"]["dtype_activacion"]
    if visto is None:
        fallar("sin_step")
    if visto != pedido:
        dispositivo = caso.datos["dispositivo"]
        otros = [d for d in caso.datos.get("autocast_activo", []) if d != dispositivo]
        if visto == "float32" and otros:
            fallar("amp_autocast_otro_dispositivo", dispositivo=dispositivo, otro=otros[0])
        if visto == "float32":
            fallar("amp_sin_autocast", dtype_visto=visto, dtype_pedido=pedido)
        fallar("amp_dtype_ignorado", dtype_visto=visto, dtype_pedido=pedido)


def _plano(gradientes):
    return torch.cat([g.flatten().double() for g in gradientes if g is not None])


def _iguales(obtenidos, esperados):
    if [g is None for g in obtenidos] != [g is None for g in esperados]:
        return False
    a, b = _plano(obtenidos), _plano(esperados)
    return bool(torch.isfinite(a).all()) and torch.allclose(
        a, b, rtol=3e-2, atol=3e-2 * b.abs().max().item() + 1e-7)


def _directo(caso):
    """optimizer.step() called by hand although a GradScaler was given."""
    return caso.datos["esperado"]["escala_inicial"] is not None and (
        "optimizer.step" in caso.datos["traza"])


def _zero_grad_fuera_de_sitio(caso):
    """The misplaced zero_grad the call trace shows, as a diagnosis id (None if none):
    inside a cycle, missing before the first micro-batch while .grad held leftovers, or
    never called between cycles."""
    ciclos, traza = caso.datos["ciclos"], caso.datos["traza"]
    eventos = [t for t in traza if t in ("backward", "optimizer.zero_grad")]
    limites, cuenta = set(), 0
    for tamano in ciclos:
        limites.add(cuenta)
        cuenta += tamano
    vistos, borrado = 0, False
    for evento in eventos:
        if evento == "optimizer.zero_grad":
            borrado = True
            continue
        if borrado and vistos not in limites:
            return "amp_zero_grad_en_micro_lote"
        if vistos in limites and not borrado:
            if vistos == 0 and any(r is not None for r in caso.datos["restos"]):
                return "amp_grad_previo_sin_borrar"
            if vistos > 0:
                return "zero_grad_ausente"
        borrado = False
        vistos += 1
    return None


def _gradientes(caso):
    """Each optimizer step applied its cycle's mean gradient, clipped at the true scale;
    the parameters stay float32 and a step whose gradients overflowed was skipped."""
    for p in caso.datos["parametros"]:
        if p.dtype != torch.float32:
            fallar("amp_sin_pesos_maestros", dtype=nombre_dtype(p.dtype))
    obtenidos, esperados = caso.datos["pasos"], caso.datos["esperado"]["pasos"]
    if obtenidos == [] and esperados:
        fallar("sin_step")
    for k, (obtenido, esperado) in enumerate(zip(obtenidos, esperados)):
        if not _iguales(obtenido, esperado):
            _diagnosticar_paso(caso, k, obtenido, esperado)
    if len(obtenidos) != len(esperados):
        if _directo(caso):
            fallar("amp_step_sin_scaler")
        if len(obtenidos) > len(esperados) and not torch.isfinite(
                _plano(obtenidos[len(esperados)])).all():
            fallar("amp_paso_con_inf")
        fallar("longitud", nombre="los pasos del optimizador", longitud=len(obtenidos),
               longitud_esperada=len(esperados))
    for i, (o, e) in enumerate(zip(caso.datos["parametros"], caso.datos["esperado"]["parametros"])):
        exigir(diagnosticar_tensor(f"el parámetro {i} al terminar", o, e, rtol=3e-2,
                                   atol=3e-2 * e.abs().max().item() + 1e-6))


def _diagnosticar_paso(caso, k, obtenido, esperado):
    if _directo(caso):
        fallar("amp_step_sin_scaler")
    if not torch.isfinite(_plano(obtenido)).all():
        fallar("amp_paso_con_inf")
    zero_grad = _zero_grad_fuera_de_sitio(caso)
    if zero_grad is not None:
        fallar(zero_grad, nombre=f"el gradiente del paso {k + 1}")
    a, b = _plano(obtenido), _plano(esperado)
    escalas = [e for e in caso.datos["escalas"] if e]
    ciclos, accum = caso.datos["ciclos"], caso.datos["accum"]
    # the cycle step k closes (a skipped step has none: count the micro-batches before it)
    finales = [sum(ciclos[:i + 1]) for i in range(len(ciclos))]
    momento = caso.datos["esperado"]["momentos"][k]
    tamano = ciclos[finales.index(momento)] if momento in finales else accum
    factores = {"sin_dividir_por_accum": tamano}
    if tamano < accum:
        factores = {"amp_ultimo_ciclo_por_accum": tamano / accum, **factores}
    for escala in escalas:
        factores.setdefault("gradiente_aun_escalado", escala)
    # the scaled gradients clipped to max_norm, then unscaled: the right direction, with a
    # norm of max_norm / scale
    razon = (a @ b / (b @ b)).item() if b.any() else 0.0
    proporcional = razon and torch.allclose(
        a, razon * b, rtol=3e-2, atol=3e-2 * abs(razon) * b.abs().max().item())
    # (only where the scaled gradients were over max_norm: the clip fired on them)
    max_norm = caso.datos["max_norm"]
    if proporcional and any(math.isclose(a.norm().item() * e, max_norm, rel_tol=3e-2)
                            and b.norm().item() * e > max_norm for e in escalas):
        fallar("clip_antes_de_unscale")
    nombre = f"el gradiente del paso {k + 1}"
    for diagnostico, factor in factores.items():  # up to autocast's rounding
        if torch.allclose(a, factor * b, rtol=3e-2, atol=3e-2 * factor * b.abs().max().item()):
            fallar(diagnostico, nombre=nombre, razon=factor, inversa=1 / factor)
    exigir(diagnosticar_tensor(nombre, a, b, factores, rtol=3e-2,
                               atol=3e-2 * b.abs().max().item() + 1e-7))


def _escalador_paso(caso):
    """With a GradScaler: one update per optimizer step, the scale it leaves, no step by
    hand."""
    esperada = caso.datos["esperado"]["escala"]
    if esperada is None:
        return
    if _directo(caso):
        fallar("amp_step_sin_scaler")
    veces = caso.datos["traza"].count("scaler.update")
    esperadas = caso.datos["esperado"]["traza"].count("scaler.update")
    if veces > esperadas:
        fallar("amp_update_por_microlote")
    if veces < esperadas:
        fallar("amp_sin_update", veces=veces, esperadas=esperadas)
    escala = caso.datos["escala"]
    if escala is None or not math.isclose(escala, esperada):
        fallar("no_reconocido", nombre="la escala del GradScaler")


def _ciclos_comparables(caso):
    """How many cycles started from the reference's parameters: up to the first step whose
    gradients differ (a wrong step changes every later loss: the gradient part says so)."""
    obtenidos, esperados = caso.datos["pasos"], caso.datos["esperado"]["pasos"]
    momentos, ciclos = caso.datos["esperado"]["momentos"], caso.datos["ciclos"]
    hasta = len(ciclos)
    for k, esperado in enumerate(esperados):
        if k >= len(obtenidos) or not _iguales(obtenidos[k], esperado):
            hasta = sum(1 for c in range(len(ciclos)) if sum(ciclos[:c]) < momentos[k])
            break
    return hasta


def _perdidas(caso):
    if caso.datos["perdida_tensores"]:
        fallar("grafo_vivo" if caso.datos["perdida_grafo"] else "registro_tensor",
               nombre="las pérdidas devueltas")
    resultado, esperadas = caso.resultado, caso.datos["esperado"]["resultado"]
    if type(resultado) is not list:
        fallar("tipo", nombre="el resultado", esperado="una lista de floats",
               tipo=_nombre_tipo(resultado))
    if len(resultado) != len(esperadas):
        fallar("longitud", nombre="la lista de pérdidas", longitud=len(resultado),
               longitud_esperada=len(esperadas))
    comparables = _ciclos_comparables(caso)
    for k, (valor, esperada) in enumerate(zip(resultado, esperadas)):
        if type(valor) not in (int, float):
            fallar("tipo", nombre=f"la pérdida del paso {k + 1}", esperado="un float",
                   tipo=_nombre_tipo(valor))
        if k >= comparables or math.isclose(valor, esperada, rel_tol=2e-2, abs_tol=1e-6):
            continue
        if esperada and any(math.isclose(valor / esperada, e, rel_tol=2e-2)
                            for e in caso.datos["escalas"]):
            fallar("amp_perdida_escalada", razon=valor / esperada)
        tamano, accum = caso.datos["ciclos"][k], caso.datos["accum"]
        factores = {"sin_dividir_por_accum": tamano}
        if tamano < accum:
            factores = {"amp_ultimo_ciclo_por_accum": tamano / accum, **factores}
        exigir(diagnosticar_tensor(f"la pérdida del paso {k + 1}", torch.tensor(float(valor)),
                                   torch.tensor(float(esperada)), factores, rtol=2e-2,
                                   atol=1e-6))


AMP_ACCUMULATION_STEPS = Ejercicio(
    funcion="amp_accumulation_steps",
    partes=[
        Parte("pase hacia adelante bajo autocast, en el dtype pedido", 0.5, _autocast),
        Parte("cada paso: el gradiente medio de su ciclo, recortado en la escala real; "
              "parámetros en fp32; con inf, sin paso", 1.5, _gradientes),
        Parte("la escala se ajusta una vez por paso del optimizador, como dice el GradScaler",
              1.0, _escalador_paso),
        Parte("pérdidas devueltas: la media sin escalar de cada ciclo", 0.5, _perdidas),
        Parte("no cambia nada más: modo de autograd, modos del modelo, los micro-lotes, la "
              "pérdida, los hiperparámetros", 0.5,
              lambda caso: verificar_sin_efectos(caso, caso.datos["permitidos"]), requisito=True),
    ],
    construir=construir_pasos, observar=observar_pasos, contexto=contexto_pasos)


def _sgd_a_mano(parametros, gradientes, optimizador, estado_previo):
    """One step of torch.optim.SGD written out (momentum, weight decay, no nesterov)."""
    grupo = optimizador.param_groups[0]
    lr, momento, decaimiento = grupo["lr"], grupo["momentum"], grupo["weight_decay"]
    with torch.no_grad():
        for p, g in zip(parametros, gradientes):
            d = g + decaimiento * p
            if momento:
                buffer = estado_previo.get(p)
                buffer = d.clone() if buffer is None else buffer * momento + d
                estado_previo[p] = buffer
                d = buffer
            p -= lr * d


def pasos_calculados_aparte(model, batches, loss_fn, optimizer, scaler, device, dtype, accum,
                            max_norm):
    """The public oracle: each cycle's mean gradient with torch.autograd.grad in float32
    (autocast's rounding aside), a hand-written clip and SGD step, the overflow test and the
    GradScaler's rule written out; never the reference."""
    parametros = list(model.parameters())
    buffers = {p: optimizer.state[p]["momentum_buffer"].clone() for p in parametros
               if optimizer.state.get(p, {}).get("momentum_buffer") is not None}
    escala = scaler.get_scale() if scaler is not None else None
    escala_inicial, escalas, crecidos = escala, [], 0
    pasos, momentos, perdidas, traza, vistos = [], [], [], [], 0
    for tamano in ciclos_de(len(batches), accum):
        vistos += tamano
        ciclo, batches = batches[:tamano], batches[tamano:]
        perdida = 0.0
        gradientes = [torch.zeros_like(p) for p in parametros]
        desborda = False
        for x, y in ciclo:
            escalas.append(escala)
            with torch.autocast(device_type=device, dtype=dtype):
                valor = loss_fn(model(x), y) / tamano
            if escala is not None:
                escalados = torch.autograd.grad(valor * escala, parametros, retain_graph=True)
                desborda = desborda or not all(bool(torch.isfinite(g).all()) for g in escalados)
            for g, nuevo in zip(gradientes, torch.autograd.grad(valor, parametros)):
                g += nuevo
            perdida += valor.item()
        perdidas.append(perdida)
        if escala is not None:
            traza.append("scaler.update")
            if desborda:
                escala, crecidos = escala * scaler.get_backoff_factor(), 0
                continue
            crecidos += 1
            if crecidos == scaler.get_growth_interval():
                escala, crecidos = escala * scaler.get_growth_factor(), 0
        norma = torch.sqrt(sum((g.double() ** 2).sum() for g in gradientes)).item()
        coef = min(1.0, max_norm / (norma + 1e-6))
        recortados = [g * coef for g in gradientes]
        pasos.append([g.detach().float().cpu() for g in recortados])
        momentos.append(vistos)
        _sgd_a_mano(parametros, recortados, optimizer, buffers)
    return {"resultado": perdidas, "pasos": pasos, "momentos": momentos, "traza": traza,
            "parametros": [p.detach().cpu().clone() for p in parametros],
            "dtype_activacion": nombre_dtype(dtype), "escala": escala,
            "escala_inicial": escala_inicial}


# The public examples: float16 with a GradScaler (clipping, 7 micro-batches in cycles of 3:
# the last one incomplete) and bfloat16 without (leftovers in .grad, accum 2); a nested
# eval-mode model without biases, an L1 loss and a scale that grows; a first cycle whose
# gradients overflow (that step is skipped, the scale backs off).
FORMAS_PASO = [(6, 4, 8, 3, 0, 0, 7, 3), (5, 3, 6, 2, 5, RESTOS, 5, 2),
               (4, 5, 6, 1, 3, ANIDADO | SIN_SESGO | PERDIDA_L1 | MODO_EVAL, 5, 3),
               (5, 4, 6, 2, 2, 0, 6, 4)]


def comprobar_amp_accumulation_steps(amp_accumulation_steps):
    """Comprobación pública: float16 con un GradScaler en la CPU (recortando, con una escala
    que crece y con un primer ciclo que desborda), bfloat16 sin él (y, si hay GPU, float16
    en CUDA)."""
    formas = list(FORMAS_PASO)
    if torch.cuda.is_available():
        formas.append((6, 4, 8, 3, 4, 0, 5, 2))
    casos = [caso_en_proceso(AMP_ACCUMULATION_STEPS, amp_accumulation_steps, 7, forma,
                             pasos_calculados_aparte)
             for forma in formas]
    comprobar_casos(AMP_ACCUMULATION_STEPS.partes, casos,
                    "Tu entrenamiento con precisión mixta y acumulación actualiza bien los "
                    "pesos y la escala.")


# In notebook order.
EJERCICIOS = ejercicios(DIAGNOSE_AMP_LOG, SIMULATE_LOSS_SCALE, AMP_ACCUMULATION_STEPS)
