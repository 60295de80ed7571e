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
from autograder.student.diagnosis import Diagnostico, diagnosticar_tensor, diagnosticar_traza
from autograder.student.messages import registrar

__all__ = ["comprobar_pick_amp_dtype", "comprobar_simulate_loss_scale",
           "comprobar_amp_train_step"]
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
    "amp_otro_umbral": (
        "Recorte con otro umbral",
        "Recortaste con max_norm = {umbral:g}, y la llamada pedía {max_norm:g}.",
        "El umbral del recorte es un argumento de la función: ¿lo usas, o un valor fijo?",
        "The gradients were clipped at {umbral:g}, not at the given max_norm {max_norm:g}."),
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
    "amp_sin_update": (
        "Falta scaler.update()",
        "No llamaste a `scaler.update()`: la escala no se ajusta nunca.",
        "¿Cuándo ajusta GradScaler su escala? Revisa que cada paso termine con la llamada que "
        "la actualiza.",
        "scaler.update() was not called."),
    "amp_sin_recorte": (
        "Falta el recorte",
        "No se llamó a `torch.nn.utils.clip_grad_norm_`.",
        "La función recibe `max_norm`: ¿dónde recortas los gradientes, y ya sin la escala del "
        "GradScaler?",
        "clip_grad_norm_ was not called."),
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
    "amp_salto_a_mano": (
        "Paso con inf saltado a mano, sin scaler.update()",
        "En el paso cuyos gradientes tenían inf/NaN saliste antes de `scaler.step` y de "
        "`scaler.update()`: los parámetros no cambian, pero la escala tampoco baja, y el "
        "siguiente paso volverá a desbordar.",
        "¿Buscas los inf a mano? GradScaler ya salta ese paso; ¿qué llamada no puede faltar en "
        "ningún paso, lo saltes o no?",
        "The overflowing step returned before scaler.step and scaler.update(): the scale "
        "never backs off."),
    "amp_perdida_escalada": (
        "Pérdida escalada",
        "La pérdida devuelta es {razon:.4g} × la real: es la pérdida multiplicada por la escala.",
        "¿Qué pérdida devuelves: la original o la multiplicada por la escala?",
        "The returned loss is the scaled loss."),
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


# ---------------------------------------------------------------- exercise 3: amp_train_step
# Case codes (float16 always with a GradScaler, bfloat16 always without, as pick_amp_dtype
# says): 0 CPU float16 + GradScaler, clipping active; 1 CPU bfloat16, clipping active;
# 2 CPU float16 + GradScaler whose scale overflows (the step must be skipped); 3 CPU float16
# + GradScaler that grows its scale on this clean step (growth_interval 1), no clipping;
# 5 CPU bfloat16, no clipping; 4 CUDA float16 + GradScaler and 6 CUDA bfloat16 (only where
# a GPU is present; 6 only where it has bf16).
CODIGOS_PASO = {0: ("cpu", torch.float16, True), 1: ("cpu", torch.bfloat16, False),
                2: ("cpu", torch.float16, True), 3: ("cpu", torch.float16, True),
                4: ("cuda", torch.float16, True), 5: ("cpu", torch.bfloat16, False),
                6: ("cuda", torch.bfloat16, False)}
SIN_RECORTE = (3, 5)
# Style bits: what else the contract lets vary (0 is the public examples' style).
ANIDADO, SIN_SESGO, PERDIDA_L1, ESTADO_PREVIO, MODO_EVAL, OTRO_SGD = (1, 2, 4, 8, 16, 32)


def _modelo_paso(D, H, K, estilo):
    sesgo = not estilo & SIN_SESGO
    capas = [torch.nn.Linear(D, H, bias=sesgo), torch.nn.ReLU(), torch.nn.Linear(H, K, bias=sesgo)]
    if estilo & ANIDADO:
        return torch.nn.Sequential(torch.nn.Sequential(*capas[:2]), capas[2])
    return torch.nn.Sequential(*capas)


def construir_paso(generador, forma):
    """model, batch, loss_fn, optimizer, scaler, device, dtype, max_norm for
    ``forma`` = (N, D, H, K, case code[, style bits])."""
    N, D, H, K, codigo, *resto = forma
    estilo = resto[0] if resto else 0
    dispositivo, dtype, con_escalador = CODIGOS_PASO[codigo]
    modelo = _modelo_paso(D, H, K, estilo)
    with torch.no_grad():
        for p in modelo.parameters():
            p.copy_(torch.randn(p.shape, generator=generador) * 0.5)
    x = torch.randn(N, D, generator=generador)
    y = torch.randn(N, K, generator=generador) * (100.0 if codigo == 2 else 1.0)
    modelo, x, y = modelo.to(dispositivo), x.to(dispositivo), y.to(dispositivo)
    lr, momento, decaimiento = 0.1, 0.9, 0.0
    if estilo & OTRO_SGD:
        lr = 0.02 + 0.3 * torch.rand(1, generator=generador).item()
        # no momentum only without an earlier step: that one leaves momentum buffers
        momento = 0.5 if estilo & ESTADO_PREVIO else 0.5 * integer_de(generador, 1)
        decaimiento = 1e-2
    optimizador = torch.optim.SGD(modelo.parameters(), lr=lr, momentum=momento,
                                  weight_decay=decaimiento)
    if estilo & ESTADO_PREVIO:  # an earlier step: momentum buffers, and .grad zeroed in place
        for p in modelo.parameters():
            p.grad = (torch.randn(p.shape, generator=generador) * 0.1).to(dispositivo)
        optimizador.step()
        optimizador.zero_grad(set_to_none=False)
    if estilo & MODO_EVAL:
        modelo.eval()
    escalador = None
    if con_escalador:
        if codigo == 2:
            ajustes = {"init_scale": 2.0 ** 126, "backoff_factor": 0.25}
        elif codigo == 3:
            ajustes = {"init_scale": 2.0 ** integer_de(generador, 8, 12),
                       "growth_factor": (1.5, 3.0, 4.0)[integer_de(generador, 2)],
                       "growth_interval": 1}
        else:
            ajustes = {"init_scale": 2.0 ** (12 if not estilo else integer_de(generador, 8, 14))}
        escalador = torch.amp.GradScaler(dispositivo, **ajustes)
    max_norm = 1e4 if codigo in SIN_RECORTE else (
        0.05 if not estilo else 0.02 + 0.08 * torch.rand(1, generator=generador).item())
    perdida = torch.nn.L1Loss() if estilo & PERDIDA_L1 else torch.nn.MSELoss()
    return {"model": modelo, "batch": (x, y), "loss_fn": perdida, "optimizer": optimizador,
            "scaler": escalador, "device": dispositivo, "dtype": dtype, "max_norm": max_norm}


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


def _estado_paso(entradas):
    x, y = entradas["batch"]
    foto = estado({"model": entradas["model"], "batch[0]": x, "batch[1]": y,
                   "loss_fn": entradas["loss_fn"]})
    # the optimizer's settings (its state may change: a step fills it); read here, as
    # ``estado`` cannot sort state entries of mixed shapes
    for i, grupo in enumerate(entradas["optimizer"].param_groups):
        for clave, valor in grupo.items():
            if clave != "params":
                foto[f"optimizer.param_groups[{i}].{clave}"] = (
                    valor if type(valor) in (bool, int, float, str, type(None)) else repr(valor))
    foto.update(_ajustes_escalador(entradas["scaler"]))
    return foto


def observar_paso(amp_train_step, entradas):
    """Result, the calls in order, the forward's dtype, the parameters and scale after."""
    modelo, optimizador, escalador = entradas["model"], entradas["optimizer"], entradas["scaler"]
    traza, dtypes, perdida = [], [], {}
    escala_inicial = escalador.get_scale() if escalador is not None else None
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

    if escalador is not None:
        for nombre in ("scale", "unscale_", "update"):
            setattr(escalador, nombre, anotar("scaler." + nombre, getattr(escalador, nombre)))
        escalador.step = scaler_step(escalador.step)
    optimizador.step = anotar("optimizer.step", optimizador.step)
    optimizador.zero_grad = anotar("optimizer.zero_grad", optimizador.zero_grad)
    modelo.zero_grad = anotar("optimizer.zero_grad", modelo.zero_grad)
    primero = next(modelo.parameters())
    lineal = next(m for m in modelo.modules() if isinstance(m, torch.nn.Linear))
    ganchos = [primero.register_post_accumulate_grad_hook(lambda p: traza.append("backward")),
               lineal.register_forward_hook(lambda m, entrada, salida: dtypes.append(
                   (nombre_dtype(salida.dtype), _autocast_activo())))]
    utilidades = torch.nn.utils
    recorte = utilidades.clip_grad_norm_

    umbrales = []

    def recortar(*args, **kwargs):
        traza.append("clip_grad_norm_")
        umbral = args[1] if len(args) > 1 else kwargs.get("max_norm")
        umbrales.append(float(umbral) if isinstance(umbral, (int, float)) else None)
        return recorte(*args, **kwargs)

    def guardar(*args):
        resultado = amp_train_step(*args)
        perdida["tensor"] = isinstance(resultado, torch.Tensor)
        perdida["grafo"] = perdida["tensor"] and resultado.grad_fn is not None
        return resultado

    estado_antes = _estado_paso(entradas)
    utilidades.clip_grad_norm_ = utilidades.clip_grad.clip_grad_norm_ = recortar
    try:
        observacion = observar_llamada(guardar, *entradas.values())
    finally:
        utilidades.clip_grad_norm_ = utilidades.clip_grad.clip_grad_norm_ = recorte
        for gancho in ganchos:
            gancho.remove()
    estado_despues = _estado_paso(entradas)
    reducidos = [p.dtype for p in modelo.parameters() if p.dtype != torch.float32]
    if observacion["error"] is not None and reducidos:
        # the error comes from the cast (GradScaler refuses to unscale fp16 gradients)
        observacion["error"] = {"diagnostico": "amp_sin_pesos_maestros",
                                "hechos": {"dtype": nombre_dtype(reducidos[0])}}
    # what a step may change: the parameters and their .grad (and the optimizer's state)
    permitidos = [f"model.{nombre}{final}" for nombre, _ in
                                        modelo.named_parameters() for final in ("", ".grad")]
    if isinstance(observacion["resultado"], torch.Tensor):
        observacion["resultado"] = observacion["resultado"].cpu()
    observacion.update(
        traza=traza, umbrales=umbrales, dtype_activacion=dtypes[0][0] if dtypes else None,
        autocast_activo=dtypes[0][1] if dtypes else [],
        perdida_tensor=perdida.get("tensor", False), perdida_grafo=perdida.get("grafo", False),
        parametros=[p.detach().cpu().clone() for p in modelo.parameters()],
        escala=escalador.get_scale() if escalador is not None else None,
        escala_inicial=escala_inicial, estado_antes=estado_antes, estado_despues=estado_despues,
        permitidos=permitidos)
    return observacion


def contexto_paso(forma):
    return {"dispositivo": CODIGOS_PASO[forma[4]][0], "sobrecarga": forma[4] == 2}


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


def _normalizar(traza):
    """zero_grad at the start of a step is as good as at its end, or at both."""
    traza = list(traza)
    if traza[:1] == ["optimizer.zero_grad"]:
        while traza[:1] == ["optimizer.zero_grad"]:
            traza = traza[1:]
        if traza[-1:] != ["optimizer.zero_grad"]:
            traza.append("optimizer.zero_grad")
    # backward fires once per backward pass; repeated hooks of one pass count once
    return [t for i, t in enumerate(traza) if t != "backward" or traza[i - 1:i] != ["backward"]]


def _parametros(caso):
    """None if the parameters after the step are right; else the diagnosis."""
    obtenidos = caso.datos["parametros"]
    esperados = caso.datos["esperado"]["parametros"]
    antes = [v["valores"].cpu() for v in caso.datos["originales"].values()]
    if len(obtenidos) != len(esperados):
        return Diagnostico("longitud", {"nombre": "los parámetros", "longitud": len(obtenidos),
                                        "longitud_esperada": len(esperados)})
    for p in obtenidos:
        if p.dtype != torch.float32:
            return Diagnostico("amp_sin_pesos_maestros", {"dtype": nombre_dtype(p.dtype)})
    saltado = all(torch.equal(a, e) for a, e in zip(antes, esperados))
    cambiado = not all(torch.equal(a, o) for a, o in zip(antes, obtenidos))
    if saltado:
        return Diagnostico("amp_paso_con_inf", {}) if cambiado else None
    if not cambiado:
        return Diagnostico("sin_step", {})
    escala = caso.datos["esperado"]["escala_inicial"]
    factores = {"gradiente_aun_escalado": escala} if escala else {}
    for i, (a, o, e) in enumerate(zip(antes, obtenidos, esperados)):
        actualizacion = e - a
        diagnostico = diagnosticar_tensor(
            f"la actualización del parámetro {i}", o - a, actualizacion, factores,
            rtol=3e-2, atol=3e-2 * actualizacion.abs().max().item() + 1e-7)
        if diagnostico is not None:
            return diagnostico
    return None


def _orden(caso):
    traza, esperada = _normalizar(caso.datos["traza"]), list(caso.datos["esperado"]["traza"])
    if "clip_grad_norm_" not in traza and _parametros(caso) is None:
        # clipped some other way (get_total_norm + clip_grads_with_norm_, by hand): fine
        esperada = [t for t in esperada if t != "clip_grad_norm_"]
    if caso.datos["sobrecarga"] and "scaler.step" not in traza and "optimizer.step" not in traza:
        if "scaler.update" not in traza:
            fallar("amp_salto_a_mano")
        # skipped by hand, the scale still updated: what scaler.step would have done
        esperada = [t for t in esperada if t not in ("clip_grad_norm_", "scaler.step")]
        traza = [t for t in traza if t != "clip_grad_norm_"]
    if traza == esperada:
        return
    if "scaler.step" in esperada and "optimizer.step" in traza:
        fallar("amp_step_sin_scaler")
    if "scaler.update" in esperada and "scaler.update" not in traza and (
            "scaler.step" in traza):
        fallar("amp_sin_update")
    if "clip_grad_norm_" in esperada and "clip_grad_norm_" not in traza and any(
            t in traza for t in ("scaler.step", "optimizer.step")):
        fallar("amp_sin_recorte")
    exigir(diagnosticar_traza(traza, esperada))


def _actualizacion(caso):
    diagnostico = _parametros(caso)
    if diagnostico is not None and diagnostico.id not in ("amp_sin_pesos_maestros",
                                                          "amp_paso_con_inf", "sin_step"):
        esperados = caso.datos["esperado"].get("umbrales", [])
        otros = [u for u in caso.datos.get("umbrales", []) if u is not None and esperados
                 and not math.isclose(u, esperados[0])]
        if otros:
            fallar("amp_otro_umbral", umbral=otros[0], max_norm=esperados[0])
    exigir(diagnostico)
    escala, esperada = caso.datos["escala"], caso.datos["esperado"]["escala"]
    if esperada is not None and (escala is None or not math.isclose(escala, esperada)):
        traza = caso.datos["traza"]
        if caso.datos["sobrecarga"] and not {"scaler.step", "scaler.update"} & set(traza):
            fallar("amp_salto_a_mano")
        fallar("amp_sin_update" if escala is not None and "scaler.update" not in traza else
               "no_reconocido", nombre="la escala del GradScaler")


def _perdida(caso):
    if caso.datos["perdida_tensor"]:
        fallar("grafo_vivo" if caso.datos["perdida_grafo"] else "registro_tensor",
               nombre="la pérdida devuelta")
    resultado, esperada = caso.resultado, caso.datos["esperado"]["resultado"]
    if type(resultado) not in (int, float):
        fallar("tipo", nombre="la pérdida devuelta", esperado="un float (`loss.item()`)",
               tipo=_nombre_tipo(resultado))
    if math.isclose(resultado, esperada, rel_tol=2e-2, abs_tol=1e-6):
        return
    escala = caso.datos["esperado"]["escala_inicial"]
    if escala and esperada:
        escalada = esperada * escala  # in float32 this overflows past ~3.4e38
        if math.isclose(resultado, escalada, rel_tol=2e-2) or (
                math.isinf(resultado) and abs(escalada) > torch.finfo(torch.float32).max / 2):
            fallar("amp_perdida_escalada", razon=resultado / esperada)
    exigir(diagnosticar_tensor("la pérdida devuelta", torch.tensor(float(resultado)),
                               torch.tensor(float(esperada)), rtol=2e-2, atol=1e-6))


AMP_TRAIN_STEP = Ejercicio(
    funcion="amp_train_step",
    partes=[
        Parte("pase hacia adelante bajo autocast, en el dtype pedido", 0.5, _autocast),
        Parte("orden: scale → backward → unscale_ → clip → step → update → zero_grad", 1.25,
              _orden),
        Parte("parámetros en fp32 y recortados; con inf, sin paso y escala reducida", 1.25,
              _actualizacion),
        Parte("pérdida devuelta: un float sin escalar", 0.5, _perdida),
        Parte("no cambia nada más: modo de autograd, modos del modelo, el lote, la pérdida, "
              "los hiperparámetros", 0.5,
              lambda caso: verificar_sin_efectos(caso, caso.datos["permitidos"]), requisito=True),
    ],
    construir=construir_paso, observar=observar_paso, contexto=contexto_paso)


def paso_calculado_aparte(model, batch, loss_fn, optimizer, scaler, device, dtype, max_norm):
    """The public oracle: the same step with torch.autograd.grad, a hand-written clip and
    the first SGD-with-momentum update written out (the buffer starts as the gradient); with
    a scaler, the overflow test and the new scale written out too (a fresh GradScaler: it
    grows on this step only if growth_interval is 1)."""
    x, y = batch
    parametros = list(model.parameters())
    with torch.autocast(device_type=device, dtype=dtype):
        salida = model(x)
        perdida = loss_fn(salida, y)
    escala = nueva_escala = scaler.get_scale() if scaler is not None else None
    desborda = False
    if scaler is not None:
        escalados = torch.autograd.grad(perdida * escala, parametros, retain_graph=True)
        desborda = not all(bool(torch.isfinite(g).all()) for g in escalados)
        nueva_escala = escala * (scaler.get_backoff_factor() if desborda else
                                 scaler.get_growth_factor() if scaler.get_growth_interval() == 1
                                 else 1.0)
    gradientes = torch.autograd.grad(perdida, parametros)
    lr = optimizer.param_groups[0]["lr"]
    with torch.no_grad():
        if desborda:
            nuevos = [p.detach().cpu().clone() for p in parametros]
        else:
            norma = torch.sqrt(sum((g.double() ** 2).sum() for g in gradientes)).item()
            coef = min(1.0, max_norm / (norma + 1e-6))
            nuevos = [(p - lr * coef * g).cpu() for p, g in zip(parametros, gradientes)]
    traza = ["backward", "clip_grad_norm_", "optimizer.step", "optimizer.zero_grad"]
    if scaler is not None:
        traza = ["scaler.scale", "backward", "scaler.unscale_", "clip_grad_norm_",
                 "scaler.step", "scaler.update", "optimizer.zero_grad"]
    return {"resultado": perdida.item(), "traza": traza, "parametros": nuevos,
            "dtype_activacion": nombre_dtype(salida.dtype), "escala": nueva_escala,
            "escala_inicial": escala, "umbrales": [float(max_norm)]}


# The public examples: float16 with a GradScaler and bfloat16 without (as pick_amp_dtype
# says); a nested eval-mode model without biases, an L1 loss and a scale that grows; a step
# whose gradients overflow (it must be skipped, the scale backs off).
FORMAS_PASO = [(6, 4, 8, 3, 0), (5, 3, 6, 2, 1),
               (4, 5, 6, 1, 3, ANIDADO | SIN_SESGO | PERDIDA_L1 | MODO_EVAL), (5, 4, 6, 2, 2)]


def comprobar_amp_train_step(amp_train_step):
    """Comprobación pública: pasos en float16 con un GradScaler en la CPU (uno en el que la
    escala crece y otro que desborda), un paso en bfloat16 sin él (y, si hay GPU, un paso en
    float16 en CUDA)."""
    formas = list(FORMAS_PASO)
    if torch.cuda.is_available():
        formas.append((6, 4, 8, 3, 4))
    casos = [caso_en_proceso(AMP_TRAIN_STEP, amp_train_step, 7, forma, paso_calculado_aparte)
             for forma in formas]
    comprobar_casos(AMP_TRAIN_STEP.partes, casos,
                    "Tu paso con precisión mixta sigue la receta y actualiza bien los pesos.")


# In notebook order.
EJERCICIOS = ejercicios(PICK_AMP_DTYPE, SIMULATE_LOSS_SCALE, AMP_TRAIN_STEP)
