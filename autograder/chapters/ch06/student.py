"""Chapter 6: how each exercise is built, observed and scored, and its public checks.

Injected into the chapter 6 student notebook by the build; the hidden tests use the
same exercises on other inputs against the reference. The public oracles are plain
facts about the hardware (exercise 1), PyTorch's own ``GradScaler`` (exercise 2) and
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

__all__ = ["comprobar_pick_amp_dtype", "comprobar_simulate_loss_scale",
           "comprobar_amp_accumulation_steps"]
# The helper cell's runtime report also says which runtime to pick (autograder/inject.py).
INFO_ENTORNO = {"consejo_gpu": True}

# id -> (title, Spanish explanation, Spanish hint, English explanation)
MENSAJES = {
    "amp_bf16_sin_soporte": (
        "bfloat16 sin soporte nativo",
        "Elegiste bfloat16 en un dispositivo ({dispositivo}) que no lo tiene en hardware.",
        "Este dispositivo no tiene bf16 nativo (una T4, por ejemplo), así que bf16 se emula y "
        "va lento. ¿Qué precisión aprovecha de verdad este dispositivo?",
        "bfloat16 was chosen on a device ({dispositivo}) without native bf16 support."),
    "amp_fp16_en_cpu": (
        "float16 en CPU",
        "Elegiste float16 para la CPU.",
        "En CPU, autocast está pensado para bfloat16. ¿Tiene este CPU bf16 nativo? Si no, "
        "¿compensa bajar de float32?",
        "float16 was chosen for the CPU."),
    "amp_desaprovecha_16_bits": (
        "Sin precisión mixta donde sí conviene",
        "Elegiste float32 en {dispositivo}, que tiene {disponible} en hardware.",
        "¿Qué precisión de 16 bits acelera este dispositivo? Mira si tiene bf16 nativo y, si "
        "no, qué tienen sus núcleos tensoriales.",
        "float32 was chosen on {dispositivo}, which supports {disponible} natively."),
    "amp_fp16_sin_escalador": (
        "float16 sin GradScaler",
        "Elegiste float16 sin escalado de la pérdida.",
        "float16 tiene poco rango: los gradientes pequeños se vuelven 0. ¿Qué herramienta lo "
        "evita?",
        "float16 was chosen without loss scaling (GradScaler)."),
    "amp_escalador_innecesario": (
        "GradScaler innecesario",
        "Pediste GradScaler con {dtype}, que no lo necesita.",
        "¿Para qué existe el escalado de la pérdida? Piensa en el rango de cada dtype: bfloat16 "
        "tiene el de float32.",
        "A GradScaler was requested with {dtype}, which does not need one."),
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
    "amp_desaprovecha_bf16": (
        "float16 donde hay bfloat16 nativo",
        "Elegiste float16 en {dispositivo}, que tiene bfloat16 nativo.",
        "Con bf16 nativo, bfloat16 va tan rápido como float16 y tiene el rango de float32. ¿Qué "
        "miras antes: el dispositivo o el soporte de bf16?",
        "float16 was chosen on {dispositivo}, which has native bfloat16."),
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


# ---------------------------------------------------------------- exercise 1: pick_amp_dtype
# A case is a whole table of machines, one call per row: a policy that is wrong on some rows
# still answers differently on a reordered table, while a hard-coded answer does not.
DISPOSITIVOS = ("cpu", "cuda")


def fila(codigo):
    """Row code 0..3 -> (device_type, bf16_supported): 0 cpu, 1 cpu+bf16, 2 cuda, 3 cuda+bf16."""
    return DISPOSITIVOS[codigo // 2], bool(codigo % 2)


def construir_eleccion(generador, forma):
    """The machines (device_type, bf16_supported) of ``forma``, a tuple of row codes."""
    return {"filas": [fila(codigo) for codigo in forma]}


def observar_eleccion(pick_amp_dtype, entradas):
    def elegir(dispositivo, bf16):
        resultado = pick_amp_dtype(dispositivo, bf16)
        if type(resultado) in (tuple, list):
            # a string is kept apart from a dtype's name: "bfloat16" is not torch.bfloat16
            return [{"texto": v} if isinstance(v, str) else nombre_dtype(v) for v in resultado]
        return nombre_dtype(resultado)

    respuestas = []
    for dispositivo, bf16 in entradas["filas"]:
        observacion = observar_llamada(elegir, dispositivo, bf16)
        if observacion["error"] is not None:
            return observacion
        respuestas.append(observacion["resultado"])
    return {"resultado": respuestas, "error": None}


def contexto_eleccion(forma):
    return {"filas": [fila(codigo) for codigo in forma]}


def _verificar_fila(resultado, esperado, dispositivo, bf16):
    if type(resultado) not in (tuple, list) or len(resultado) != 2:
        fallar("tipo", nombre="el resultado", esperado="una tupla (dtype, use_scaler)",
               tipo=_nombre_tipo(resultado))
    dtype, escalador = resultado
    if dtype not in ("float32", "float16", "bfloat16"):
        tipo = f"el texto {dtype['texto']!r}" if isinstance(dtype, dict) else str(dtype)
        fallar("tipo", nombre="el dtype", esperado="torch.float32, torch.float16 o "
               "torch.bfloat16 (un `torch.dtype`, no un texto)", tipo=tipo)
    if type(escalador) is not bool:
        fallar("tipo", nombre="use_scaler", esperado="un bool", tipo=_nombre_tipo(escalador))
    esperado_dtype = nombre_dtype(esperado[0])
    if dtype != esperado_dtype:
        if dtype == "bfloat16":
            fallar("amp_bf16_sin_soporte", dispositivo=dispositivo)
        if dtype == "float16" and dispositivo == "cpu":
            fallar("amp_fp16_en_cpu")
        if dtype == "float16" and bf16:
            fallar("amp_desaprovecha_bf16", dispositivo=dispositivo)
        if dtype == "float32":
            fallar("amp_desaprovecha_16_bits", dispositivo=dispositivo,
                   disponible="bfloat16" if bf16 else "float16")
        fallar("dtype", nombre="el dtype", dtype=dtype, dtype_esperado=esperado_dtype)
    if escalador != bool(esperado[1]):
        fallar("amp_fp16_sin_escalador" if dtype == "float16" else "amp_escalador_innecesario",
               dtype=dtype)


def _verificar_eleccion(caso, aplica):
    respuestas = caso.resultado
    filas = caso.datos["filas"]
    if type(respuestas) is not list or len(respuestas) != len(filas):
        fallar("tipo", nombre="el resultado", esperado="una tupla (dtype, use_scaler)",
               tipo=_nombre_tipo(respuestas))
    for (dispositivo, bf16), resultado, esperado in zip(filas, respuestas,
                                                        caso.datos["esperado"]):
        if aplica(dispositivo, bf16):
            _verificar_fila(resultado, esperado, dispositivo, bf16)


PICK_AMP_DTYPE = Ejercicio(
    funcion="pick_amp_dtype",
    partes=[
        Parte("GPU sin bf16 nativo (T4): float16 con GradScaler", 0.75,
              lambda caso: _verificar_eleccion(caso, lambda d, bf16: d == "cuda" and not bf16)),
        Parte("con bf16 nativo (GPU moderna o CPU): bfloat16 sin GradScaler", 0.75,
              lambda caso: _verificar_eleccion(caso, lambda d, bf16: bf16)),
        Parte("CPU sin bf16 nativo: float32, sin GradScaler", 0.5,
              lambda caso: _verificar_eleccion(caso, lambda d, bf16: d == "cpu" and not bf16)),
    ],
    construir=construir_eleccion, observar=observar_eleccion, contexto=contexto_eleccion)


def hechos_del_hardware(filas):
    """The public oracle, from the facts the notebook measures: native bf16 wherever the
    hardware has it, a T4's fp16 tensor cores on a GPU without it, emulated 16-bit being
    slower than fp32 on a CPU; and only a short-range format needs loss scaling."""
    respuestas = []
    for dispositivo, bf16 in filas:
        dtype = (torch.bfloat16 if bf16 else torch.float16 if dispositivo == "cuda"
                 else torch.float32)
        respuestas.append((dtype, torch.finfo(dtype).max < 1e6))
    return respuestas


def comprobar_pick_amp_dtype(pick_amp_dtype):
    """Comprobación pública: las cuatro máquinas (CPU o GPU, con o sin bf16 nativo)."""
    caso = caso_en_proceso(PICK_AMP_DTYPE, pick_amp_dtype, 0, (2, 1, 3, 0), hechos_del_hardware)
    comprobar_casos(PICK_AMP_DTYPE.partes, [caso],
                    "Eliges bien el dtype y el escalador en las cuatro máquinas.")


# ---------------------------------------------------------------- exercise 2: simulate_loss_scale
# Growth and backoff factors the hidden cases draw: GradScaler's defaults (2 and 0.5) and
# others; init_scale a power of two or not. In range (the scale never reaches inf nor a
# float32 subnormal), where the rule in exact arithmetic and a GradScaler (float32) agree.
CRECIMIENTOS = (2.0, 1.5, 3.0, 4.0)
REDUCCIONES = (0.5, 0.25, 0.75, 0.125)


def construir_escala(generador, forma):
    """found_inf flags and GradScaler settings for ``forma`` = (steps, growth_interval,
    backoff code into REDUCCIONES[, growth code into CRECIMIENTOS, init_scale code:
    0 → a power of two, 1 → an odd integer; 1 → the first steps are clean])."""
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
    if inicial:
        escala = float(int(torch.randint(100, 60000, (1,), generator=generador).item()) | 1)
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
        if isinstance(valor, torch.Tensor) and valor.numel() == 1:
            valor = valor.item()
        if type(valor) not in (int, float):
            fallar("tipo", nombre="cada escala", esperado="un float", tipo=_nombre_tipo(valor))
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
# growth 1.5, backoff 0.75, an init_scale that is no power of two, and clean first steps.
EJEMPLO_ESCALA = (2, (24, 3, 0))
OTRO_EJEMPLO_ESCALA = (5, (20, 2, 2, 1, 1, 1))


def comprobar_simulate_loss_scale(simulate_loss_scale):
    """Comprobación pública: tus trazas de la escala frente a un GradScaler real en dos
    secuencias de pasos."""
    casos = [caso_en_proceso(SIMULATE_LOSS_SCALE, simulate_loss_scale, *ejemplo,
                             escalas_de_gradscaler)
             for ejemplo in (EJEMPLO_ESCALA, OTRO_EJEMPLO_ESCALA)]
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
EJERCICIOS = ejercicios(PICK_AMP_DTYPE, SIMULATE_LOSS_SCALE, AMP_ACCUMULATION_STEPS)
