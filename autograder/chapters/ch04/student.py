"""Chapter 4: how each exercise is built, observed and scored, and its public checks.

Injected into the chapter 4 student notebook by the build. The training loop is
observed by instrumenting what the student receives: a hook on each loss (``backward``),
a step pre-hook on the optimizer (the gradients each step used), wrappers on
``zero_grad``, ``scheduler.step`` and ``torch.nn.utils.clip_grad_norm_`` (restored
afterwards), and a forward pre-hook on the model (train/eval mode, grad mode).
The public oracles compute the same numbers another way (full-cycle batches with
``torch.autograd.grad``, a hand-written update, closed-form learning rates); the
reference implementations never enter the notebook.
"""

import copy
import hashlib
import io
import math
import warnings

import torch

from autograder.student.compare import (
    ComprobacionFallida,
    Ejercicio,
    Parte,
    cambios,
    caso_en_proceso,
    comprobar,
    datos_a_error,
    ejercicios,
    error_a_datos,
    estado,
    exigir,
    fallar,
    llamar,
    observar_llamada,
    verificar_sin_efectos,
)
from autograder.student.diagnosis import (
    INVERSOS,
    Diagnostico,
    cerca,
    diagnosticar_parametros,
    diagnosticar_tensor,
    diagnosticar_traza,
)
from autograder.student.messages import registrar

__all__ = ["comprobar_train_one_epoch", "comprobar_evaluate", "comprobar_warmup_cosine",
           "comprobar_train_steps"]

# id -> (title, Spanish explanation, Spanish hint, English explanation)
MENSAJES = {
    "ciclo_parcial_olvidado": (
        "Último ciclo sin paso",
        "El número de lotes no es múltiplo de `accum` y el último ciclo, incompleto, no terminó "
        "en un paso del optimizador: sus gradientes se quedaron en `.grad` sin usarse.",
        "¿Qué pasa con los últimos micro-lotes cuando su número no es múltiplo de `accum`? "
        "Revisa la condición con la que decides dar el paso.",
        "The last, partial accumulation cycle never reached optimizer.step()."),
    "step_en_cada_microlote": (
        "Paso en cada micro-lote",
        "Llamaste a `optimizer.step()` después de cada micro-lote: con `accum > 1` no hubo "
        "acumulación.",
        "¿Cuántas veces das el paso por ciclo de acumulación? El paso del optimizador, el "
        "planificador y la puesta a cero van juntos, una vez cada `accum` micro-lotes.",
        "optimizer.step() ran after every micro-batch: nothing was accumulated."),
    "recorte_fuera_de_lugar": (
        "Recorte fuera de lugar",
        "Los gradientes que usó `optimizer.step()` tenían una norma mayor que `max_norm`: el "
        "recorte no llegó antes del paso (o no se hizo).",
        "¿Qué gradientes recortas? El recorte tiene que ver los gradientes de todo el ciclo, ya "
        "acumulados, y actuar antes de que el optimizador los use.",
        "The gradients used by optimizer.step() were not clipped to max_norm."),
    "zero_grad_en_microlote": (
        "zero_grad dentro del ciclo",
        "Llamaste a `zero_grad()` entre dos micro-lotes del mismo ciclo: borraste los "
        "gradientes que querías acumular.",
        "¿Cuántas veces pones los gradientes a cero por paso del optimizador? Entre dos "
        "`backward()` de un mismo ciclo, se pierde lo acumulado.",
        "zero_grad() ran between micro-batches of one accumulation cycle."),
    "ciclo_parcial_dividido_por_accum": (
        "Último ciclo mal escalado",
        "`{nombre}` es {razon:.3g} × el valor correcto: en el último ciclo, incompleto, "
        "dividiste por `accum` y no por el número de micro-lotes que tiene.",
        "¿Cuántos micro-lotes tiene de verdad el ciclo final, y por qué número divides sus "
        "pérdidas?",
        "`{nombre}` is r/accum of the expected value: the partial cycle was divided by accum."),
    "perdida_registrada_dividida": (
        "Pérdida registrada ya dividida",
        "`{nombre}` es la media de las pérdidas **divididas** por el tamaño de su ciclo: "
        "registraste el valor que pasa a `backward()`, no la pérdida de cada micro-lote.",
        "¿Qué pérdida registras: la que pasa a `backward()` (dividida) o la del micro-lote? "
        "Compara su escala con la de un bucle sin acumulación.",
        "`{nombre}` averages the losses already divided by the cycle length."),
    "grafo_al_evaluar": (
        "Evaluación con el grafo activo",
        "El modelo se ejecutó con el cálculo de gradientes activado: cada lote de evaluación "
        "construyó un grafo que nadie va a usar.",
        "Evaluar no necesita grafo. ¿Bajo qué modo de autograd corre tu evaluación?",
        "The model ran with grad mode on during evaluation: a graph was built for nothing."),
    "media_de_lotes": (
        "Media de las medias de cada lote",
        "`{nombre}` es la media de los valores de cada lote, pero los lotes no tienen el mismo "
        "tamaño: el último pesa igual que los demás con menos muestras.",
        "Si el último lote es más pequeño, ¿pesa lo mismo que los demás en tu media? La media "
        "es por muestra, no por lote.",
        "`{nombre}` is the mean of per-batch values; batches have different sizes."),
    "aciertos_sin_dividir": (
        "Aciertos sin dividir",
        "`{nombre}` es {razon:.3g} × el valor correcto: el número de aciertos, sin dividir por "
        "el número de muestras.",
        "La exactitud es una fracción entre 0 y 1: ¿por qué número divides los aciertos?",
        "`{nombre}` is the number of correct predictions, not a fraction."),
    "dividido_por_lotes": (
        "Dividido por el número de lotes",
        "`{nombre}` es {razon:.3g} × el valor correcto: dividiste por el número de lotes "
        "(`len(loader)`) y no por el número de muestras.",
        "¿Divides por el número de lotes o por el de muestras?",
        "`{nombre}` was divided by the number of batches, not of samples."),
    "doble_softmax": (
        "Softmax antes de la pérdida",
        "`{nombre}` es la entropía cruzada de `softmax(logits)`: aplicaste un softmax antes de "
        "`loss_fn`, que ya hace `log_softmax` por dentro.",
        "¿Qué recibe `loss_fn`: logits o probabilidades? Mira qué aplica ella por dentro.",
        "`{nombre}` is the cross-entropy of softmax(logits): a softmax before the loss."),
    "perdida_ignorada": (
        "Otra pérdida en lugar de `loss_fn`",
        "`{nombre}` es la entropía cruzada de los logits, pero `loss_fn` es otra función de "
        "pérdida: calculaste la pérdida por tu cuenta en vez de llamar a la que recibiste.",
        "¿Qué pérdida usas? La decide quien llama, con el `loss_fn` que recibe la función.",
        "`{nombre}` is the cross-entropy of the logits, not the given loss_fn."),
    "modo_forzado_a_train": (
        "Modo no restaurado",
        "El modelo llegó en modo evaluación y tu función lo dejó en modo entrenamiento: "
        "llamaste a `model.train()` sin mirar en qué modo estaba.",
        "¿En qué modo estaba el modelo al llegar, y en cuál lo dejas? Quien llama espera "
        "encontrarlo como estaba.",
        "The model arrived in eval mode and was left in train mode."),
    "sin_calentamiento": (
        "Sin calentamiento",
        "La tasa de aprendizaje empieza ya en `lr` ({tasa:.4g}): falta el calentamiento "
        "lineal.",
        "¿Qué tasa de aprendizaje tiene el primer paso? Durante los primeros `warmup_steps` "
        "pasos debe subir en línea recta hasta `lr`.",
        "The learning rate starts at lr: there is no linear warmup."),
    "calentamiento_incorrecto": (
        "Calentamiento incorrecto",
        "En el paso {paso} la tasa es {tasa:.4g}; el contrato pide {tasa_esperada:.4g}, es decir "
        "lr·(t+1)/(W+1) en el paso t < W.",
        "¿Qué tasa tienes en el paso 0 y en el paso W? Comprueba con el enunciado desde dónde "
        "sube la recta y que en el paso W la tasa vale justo `lr`.",
        "Warmup learning rate at step {paso} is {tasa:.4g}, expected {tasa_esperada:.4g}."),
    "coseno_tmax_total": (
        "T_max sin descontar el calentamiento",
        "El coseno no llega a `min_lr` en el paso `total_steps`: usaste `T_max = total_steps` "
        "en vez de `total_steps - warmup_steps`.",
        "¿Cuántos pasos dura la fase de coseno? El calentamiento ya gastó los suyos.",
        "The cosine phase used T_max = total_steps instead of total_steps - warmup_steps."),
    "sin_min_lr": (
        "Coseno hasta 0",
        "El coseno termina en 0 y no en `min_lr` ({min_lr:.4g}).",
        "¿Dónde termina tu coseno? Debe bajar hasta `min_lr`, no hasta 0.",
        "The cosine phase ends at 0 instead of min_lr."),
    "planificador_adelantado": (
        "Un paso adelantado",
        "Cada tasa es la que tocaba un paso después: antes de devolverlo, el planificador ya "
        "había avanzado (llamaste a `step()` al crearlo).",
        "¿Quién da el primer `scheduler.step()`? La fábrica solo crea el planificador.",
        "Every rate is one step ahead: the scheduler was stepped when created."),
    "min_lr_como_factor": (
        "min_lr como fracción",
        "El coseno baja hasta `min_lr · lr` y no hasta `min_lr` ({min_lr:.4g}): en el factor de "
        "`LambdaLR` usaste `min_lr` como si fuera una fracción de `lr`.",
        "`LambdaLR` multiplica la tasa inicial por tu factor. ¿Qué factor final da `min_lr`?",
        "The cosine ends at min_lr·lr: min_lr was used as a factor of lr."),
    "parametro_descongelado": (
        "Parámetro descongelado",
        "`{nombre}` llegó congelado (`requires_grad=False`) y tu función lo hizo entrenable: "
        "recibió gradiente y el optimizador lo cambió.",
        "¿Qué parámetros entrena quien llama? Uno con `requires_grad=False` está congelado a "
        "propósito: no toques su `requires_grad`.",
        "`{nombre}` arrived frozen (requires_grad=False) and was made trainable."),
    "media_por_muestra": (
        "Media por muestra",
        "`{nombre}` pesa cada pérdida por el tamaño de su micro-lote, pero el último es más "
        "corto y el enunciado pide la media de las pérdidas de los micro-lotes.",
        "Relee qué media pide el enunciado: ¿una por muestra o una por micro-lote?",
        "`{nombre}` is a per-sample mean; the exercise asks for the mean of the batch losses."),
    "media_de_ciclos": (
        "Media de las medias de cada ciclo",
        "`{nombre}` es la media de las pérdidas medias de cada ciclo, pero el último ciclo es "
        "más corto: sus micro-lotes pesan más que los demás.",
        "¿De qué es la media que devuelves: de los ciclos o de los micro-lotes? Relee el "
        "enunciado.",
        "`{nombre}` averages the per-cycle means; the short last cycle weighs too much."),
    "lr_ajena": (
        "Coseno desde otra tasa",
        "La fase de coseno está escrita con lr = {otra:.4g}, pero la tasa del optimizador al "
        "crear el planificador era {tasa:.4g}: tomaste la del ejemplo o la de "
        "`optimizer.defaults`.",
        "¿De dónde sale tu `lr` de partida? Tiene que ser la del optimizador que recibes.",
        "The cosine phase is written from lr = {otra:.4g}, not the optimizer's current lr."),
    "grupos_sin_planificar": (
        "Solo el primer grupo de parámetros",
        "El optimizador tiene {grupos} grupos de parámetros y solo el primero sigue la curva "
        "del contrato: los demás se quedaron con otra tasa.",
        "¿Cambias la tasa de todos los grupos de parámetros del optimizador, o solo la del "
        "primero?",
        "Only the first parameter group follows the schedule; the others do not."),
    "min_lr_por_defecto": (
        "`min_lr` omitido no es 0",
        "Sin `min_lr`, el coseno termina en {final:.4g} y no en 0: el valor por defecto de "
        "`min_lr` en tu función no es el del contrato.",
        "¿Qué vale `min_lr` cuando quien llama no lo pasa? Mira la firma de la función.",
        "With min_lr omitted the cosine ends at {final:.4g}, not 0: the default is not 0."),
    "no_es_planificador": (
        "No es un planificador",
        "La función devolvió `{tipo}`; se esperaba un planificador de "
        "`torch.optim.lr_scheduler` (una instancia de `LRScheduler`), que sabe guardar y "
        "cargar su estado con `state_dict()`.",
        "¿Qué devuelve tu fábrica? Se espera un planificador de `torch.optim.lr_scheduler` ya "
        "creado sobre el optimizador.",
        "The function returned `{tipo}`, not a learning-rate scheduler."),
}
registrar(MENSAJES)


def _sin_cuadrados(diagnostico, factores=None):
    """Nothing in this chapter squares: a ratio of 2 or ½ is one of ``factores`` (or its
    inverse) when it fits, else a plain constant factor, never "the 2 of a square"."""
    if diagnostico is None or diagnostico.id != "factor_2":
        return diagnostico
    razon = diagnostico.hechos.get("razon", 0.0)
    for nombre, valor in (factores or {}).items():
        if abs(razon - valor) < 1e-3 * abs(valor):
            return Diagnostico(nombre, diagnostico.hechos)
        if nombre in INVERSOS and abs(razon * valor - 1) < 1e-3:
            return Diagnostico(INVERSOS[nombre], diagnostico.hechos)
    return Diagnostico("escala_desconocida", diagnostico.hechos)


def diagnosticar_escala(nombre, obtenido, esperado, factores=None):
    """``diagnosticar_tensor``, with the chapter's reading of a factor 2."""
    return _sin_cuadrados(diagnosticar_tensor(nombre, obtenido, esperado, factores), factores)


def red_clasificadora(generador, D, H, C, batchnorm=False):
    """Linear–(BatchNorm)–Tanh–Linear classifier in float64, weights from ``generador``."""
    capas = [torch.nn.Linear(D, H)]
    if batchnorm:
        capas.append(torch.nn.BatchNorm1d(H))
    capas += [torch.nn.Tanh(), torch.nn.Linear(H, C)]
    modelo = torch.nn.Sequential(*capas).to(torch.float64)
    with torch.no_grad():
        for p in modelo.parameters():
            p.copy_(torch.randn(p.shape, generator=generador, dtype=torch.float64) * 0.7)
        if batchnorm:
            bn = modelo[1]
            bn.running_mean.copy_(torch.randn(H, generator=generador, dtype=torch.float64))
            bn.running_var.copy_(torch.rand(H, generator=generador, dtype=torch.float64) + 0.5)
    return modelo


def _como_tensor(valor):
    return torch.tensor(float(valor), dtype=torch.float64)


def comparar_numero(nombre, valor, esperado, tiene_grafo=False, factores=None,
                    alternativas=None):
    """A returned metric: a Python number (not a tensor), close to ``esperado``."""
    if isinstance(valor, torch.Tensor):
        fallar("grafo_vivo" if tiene_grafo else "registro_tensor", nombre=nombre)
    if valor is None:
        fallar("es_none", nombre=nombre)
    if type(valor) not in (int, float):
        fallar("tipo", nombre=nombre, esperado="un número de Python (`float`)",
               tipo=valor.get("__objeto__", "dict") if isinstance(valor, dict)
               else type(valor).__name__)
    esperado = _como_tensor(esperado)
    alternativas = alternativas or {}
    obtenido = _como_tensor(valor)
    if cerca(obtenido, esperado):
        return
    for diagnostico, otro in alternativas.items():
        if otro is not None and cerca(obtenido, _como_tensor(otro)):
            fallar(diagnostico, nombre=nombre)
    exigir(diagnosticar_escala(nombre, obtenido, esperado, factores))


# ---------------------------------------------------------------- exercise 1: evaluate
def entropia_templada():
    """A loss that is a plain function (no ``reduction``, no settings), a new one each
    time: the mean cross-entropy of the logits at temperature 2."""
    def perdida(logits, y):
        return torch.nn.functional.cross_entropy(logits / 2, y)
    return perdida


PERDIDAS_EVALUACION = {
    "ce": lambda: torch.nn.CrossEntropyLoss(),
    "suavizada": lambda: torch.nn.CrossEntropyLoss(label_smoothing=0.3),
    "margen": lambda: torch.nn.MultiMarginLoss(),
    "funcion": entropia_templada,
}


class UnaPasada:
    """Batches that can be iterated only once, like a generator: a second pass finds
    nothing. No ``len()``, no indexing."""

    def __init__(self, lotes):
        self._lotes = list(lotes)
        self._usado = False

    def __iter__(self):
        if self._usado:
            return iter(())
        self._usado = True
        return iter(list(self._lotes))


def lotes_de(loader):
    """The batches of an evaluation loader, without using up a one-pass one."""
    return list(loader._lotes) if isinstance(loader, UnaPasada) else list(loader)


def _anidar(capas, profundidad):
    """Linear, BatchNorm, Tanh, Linear as a model whose Dropout sits ``profundidad`` levels
    down (1: flat, the Dropout a child of the root)."""
    lineal, bn, tanh, salida = capas
    if profundidad <= 1:
        return torch.nn.Sequential(lineal, bn, tanh, torch.nn.Dropout(0.4), salida)
    interno = torch.nn.Sequential(tanh, torch.nn.Dropout(0.4))
    for _ in range(profundidad - 2):
        interno = torch.nn.Sequential(interno)
    return torch.nn.Sequential(torch.nn.Sequential(lineal, bn), interno, salida)


def profundidad(modelo):
    """How many levels down the deepest submodule sits (a flat model: 1)."""
    def nivel(m):
        hijos = list(m.children())
        return 0 if not hijos else 1 + max(nivel(h) for h in hijos)
    return nivel(modelo)


def construir_evaluacion(generador, forma):
    """model (with BatchNorm and Dropout), loader, loss_fn; ``forma`` = (n_lotes, tam_lote,
    tam_ultimo, D, H, C[, modo[, perdida, sin_grad, anidado, grad[, contenedor]]]): modo
    "train" (default) or "eval", the mode every submodule arrives in, and must be left in;
    perdida a key of PERDIDAS_EVALUACION (a loss that averages over its batch); sin_grad:
    the caller runs evaluate under ``torch.no_grad()`` (read by the observer from the model's
    ``_llamante_sin_grad``); anidado: how deep the Dropout sits (False/0 or 1: flat, True: 2
    levels, or the number of levels); grad: the parameters arrive with a stale ``.grad``
    (evaluate must leave it); contenedor "list" (default), "tuple" or "una_pasada" (a
    ``UnaPasada``: it can be iterated once). ``tam_ultimo`` may be 1."""
    n, B, ultimo, D, H, C = forma[:6]
    perdida, sin_grad, anidado, grad = forma[7:11] if len(forma) > 7 else ("ce", False,
                                                                           False, False)
    contenedor = forma[11] if len(forma) > 11 else "list"
    capas = red_clasificadora(generador, D, H, C, batchnorm=True)
    modelo = _anidar(list(capas), 2 if anidado is True else int(anidado or 1))
    lotes = []
    for i in range(n):
        tam = ultimo if i == n - 1 else B
        x = torch.randn(tam, D, generator=generador, dtype=torch.float64)
        y = torch.randint(0, C, (tam,), generator=generador)
        lotes.append((x, y))
    modelo.eval()
    with torch.no_grad():  # some right answers in every batch: accuracy is never 0
        for x, y in lotes:
            y[0] = modelo(x[:1]).argmax(1)[0]
    if grad:
        for p in modelo.parameters():
            p.grad = torch.randn(p.shape, generator=generador, dtype=torch.float64)
    modelo.train(_modo_inicial(forma) == "train")
    modelo._llamante_sin_grad = bool(sin_grad)
    loader = {"list": list, "tuple": tuple, "una_pasada": UnaPasada}[contenedor](lotes)
    return {"model": modelo, "loader": loader, "loss_fn": PERDIDAS_EVALUACION[perdida]()}


def observar_evaluacion(evaluate, entradas):
    """The result, whether it keeps a graph, the mode and grad mode of every forward, and
    everything the call changed (``estado`` before and after), called in the caller's grad
    mode."""
    modelo = entradas["model"]
    llamadas, crudo = [], {}
    buffers = {k: b.detach().clone() for k, b in modelo.named_buffers()}
    lotes = [t.detach().clone() for lote in lotes_de(entradas["loader"]) for t in lote]

    def guardar(*args):
        crudo["valor"] = evaluate(*args)
        return crudo["valor"]

    gancho = modelo.register_forward_pre_hook(lambda m, a: llamadas.append(
        {"entrenando": any(x.training for x in m.modules()), "grad": torch.is_grad_enabled()}))
    try:
        with torch.set_grad_enabled(not getattr(modelo, "_llamante_sin_grad", False)):
            antes = estado(entradas)
            observacion = observar_llamada(guardar, *entradas.values())
            despues = estado(entradas)
    finally:
        gancho.remove()
    valor = crudo.get("valor")
    grafos = ([isinstance(v, torch.Tensor) and v.grad_fn is not None for v in valor]
              if type(valor) in (tuple, list) else [])
    despues["loader"] = all(torch.equal(a, b) for a, b in zip(
        lotes, [t for lote in lotes_de(entradas["loader"]) for t in lote]))
    antes["loader"] = True
    observacion.update(
        llamadas=llamadas, grafos=grafos, estado_antes=antes, estado_despues=despues,
        modos_finales=[m.training for m in modelo.modules()],
        buffers_cambiados=[k for k, b in modelo.named_buffers() if not torch.equal(b,
                                                                                   buffers[k])])
    return observacion


def _modo_inicial(forma):
    return forma[6] if len(forma) > 6 else "train"


def contexto_evaluacion(forma):
    n, B, ultimo = forma[:3]
    return {"muestras": (n - 1) * B + ultimo, "n_lotes": n, "modo_inicial": _modo_inicial(forma)}


def _modo_evaluacion(caso):
    for llamada in caso.datos["llamadas"]:
        if llamada["entrenando"]:
            fallar("modelo_en_train")
        if llamada["grad"]:
            fallar("grafo_al_evaluar")
    if caso.datos["buffers_cambiados"]:
        fallar("buffers_cambiados", nombre=caso.datos["buffers_cambiados"][0])


def _par(caso):
    resultado = caso.resultado
    if type(resultado) not in (tuple, list) or len(resultado) != 2:
        fallar("tipo", nombre="el resultado", esperado="una tupla (pérdida, exactitud)",
               tipo=type(resultado).__name__ if not isinstance(resultado, dict)
               else resultado.get("__objeto__", "dict"))
    grafos = caso.datos["grafos"] or [False, False]
    return resultado, grafos


def _perdida_media(caso):
    resultado, grafos = _par(caso)
    esperado = caso.datos["esperado"]
    comparar_numero("la pérdida media", resultado[0], esperado["perdida"], grafos[0],
                    {"suma_en_vez_de_media": caso.datos["muestras"],
                     "dividido_por_lotes": caso.datos["muestras"] / caso.datos["n_lotes"]},
                    {"media_de_lotes": esperado["perdida_por_lotes"],
                     "doble_softmax": esperado.get("perdida_doble_softmax"),
                     "perdida_ignorada": esperado.get("perdida_sin_loss_fn")})


def _exactitud(caso):
    resultado, grafos = _par(caso)
    esperado = caso.datos["esperado"]
    comparar_numero("la exactitud", resultado[1], esperado["exactitud"], grafos[1],
                    {"aciertos_sin_dividir": caso.datos["muestras"],
                     "dividido_por_lotes": caso.datos["muestras"] / caso.datos["n_lotes"]},
                    {"media_de_lotes": esperado["exactitud_por_lotes"]})


def _modo_restaurado(caso):
    modos = caso.datos["modos_finales"]
    if caso.datos["modo_inicial"] == "train" and not all(modos):
        fallar("modelo_en_eval")
    if caso.datos["modo_inicial"] == "eval" and any(modos):
        fallar("modo_forzado_a_train")
    # the running statistics are the first part's; the modes were judged above
    distintos = [n for n in cambios(caso.datos["estado_antes"], caso.datos["estado_despues"])
                 if not n.endswith((".running_mean", ".running_var", ".num_batches_tracked",
                                    ".training"))]
    if distintos:
        fallar("efecto_secundario", que=", ".join(f"`{n}`" for n in distintos[:4]))


EVALUATE = Ejercicio(
    funcion="evaluate",
    partes=[
        Parte("model.eval() y torch.no_grad() en cada pase", 0.5, _modo_evaluacion,
              requisito=True),
        Parte("pérdida media por muestra (float)", 1.0, _perdida_media),
        Parte("exactitud (float entre 0 y 1)", 1.0, _exactitud),
        Parte("deja el modelo, la pérdida y autograd como llegaron", 0.5, _modo_restaurado,
              requisito=True),
    ],
    construir=construir_evaluacion, observar=observar_evaluacion, contexto=contexto_evaluacion)


def evaluacion_de_golpe(model, loader, loss_fn):
    """The public oracle: one pass over all the samples at once, on a copy in eval mode,
    ``loss_fn`` applied to each sample alone (it averages over its batch)."""
    copia = copy.deepcopy(model).eval()
    lotes = lotes_de(loader)
    x = torch.cat([xb for xb, _ in lotes])
    y = torch.cat([yb for _, yb in lotes])
    with torch.no_grad():
        logits = copia(x)
        por_muestra = torch.stack([loss_fn(logits[i:i + 1], y[i:i + 1]).double()
                                   for i in range(len(y))])
        doble_softmax = loss_fn(logits.softmax(1), y)
        entropia = torch.nn.functional.cross_entropy(logits, y)
        acierto = (logits.argmax(1) == y).double()
    tamanos = [len(yb) for _, yb in lotes]
    trozos_p, trozos_a = torch.split(por_muestra, tamanos), torch.split(acierto, tamanos)
    return {"perdida": por_muestra.mean().item(), "exactitud": acierto.mean().item(),
            "perdida_doble_softmax": doble_softmax.item(),
            "perdida_sin_loss_fn": entropia.item(),
            "perdida_por_lotes": sum(t.mean().item() for t in trozos_p) / len(tamanos),
            "exactitud_por_lotes": sum(t.mean().item() for t in trozos_a) / len(tamanos)}


def comprobar_evaluate(evaluate):
    """Comprobación pública: un modelo con BatchNorm y Dropout anidado, lotes de 6, 6 y 3
    muestras que solo se pueden recorrer una vez; llega en modo entrenamiento. Después, otro
    modelo más anidado, con una pérdida con suavizado de etiquetas, gradientes viejos y un
    último lote de una muestra en una tupla, llega en modo evaluación y se evalúa dentro de
    ``torch.no_grad()``; y uno plano con una pérdida que es una función. Cada uno debe quedar
    como llegó."""
    for forma, exito in (((3, 6, 3, 4, 5, 3, "train", "ce", False, 2, False, "una_pasada"),
                          "y el modelo vuelve a modo entrenamiento."),
                         ((3, 6, 1, 4, 5, 3, "eval", "suavizada", True, 3, True, "tuple"),
                          "y el modelo que llegó en modo evaluación sigue así (con otra "
                          "`loss_fn`, dentro de `torch.no_grad()`)."),
                         ((2, 5, 5, 3, 4, 3, "train", "funcion", False, 1, False, "list"),
                          "también con una `loss_fn` que es una función.")):
        caso = caso_en_proceso(EVALUATE, evaluate, 5, forma, evaluacion_de_golpe)
        comprobar(EVALUATE.partes, caso,
                  f"Pérdida y exactitud correctas, sin grafo, en modo evaluación, {exito}")


# ---------------------------------------------------------------- exercise 2: warmup_cosine
def construir_planificador(generador, forma):
    """The inputs of warmup_cosine; ``forma`` = (W, T, lr, min_lr[, grupos, initial_lr]).

    ``min_lr`` None: the call omits it (its default, 0). ``grupos``: how many parameter
    groups (all with the same ``lr``, the second with weight decay); the optimizer's
    ``defaults["lr"]`` is never that ``lr``. ``initial_lr``: the groups already carry an
    ``initial_lr`` (equal to their ``lr``), as a scheduler created earlier leaves them."""
    W, T, lr, min_lr = forma[:4]
    grupos, inicial = (forma[4], forma[5]) if len(forma) > 4 else (1, False)
    if len(forma) > 4:
        parametros = [torch.zeros(1 + g, dtype=torch.float64, requires_grad=True)
                      for g in range(grupos)]
        opt = torch.optim.SGD([{"params": [p], "lr": float(lr), "weight_decay": 0.01 * g}
                               for g, p in enumerate(parametros)], lr=float(lr) * 3 + 0.5,
                              momentum=0.5)
        if inicial:
            for grupo in opt.param_groups:
                grupo["initial_lr"] = grupo["lr"]
    else:  # the public example, as it always was
        parametro = torch.zeros(1, dtype=torch.float64, requires_grad=True)
        opt = torch.optim.SGD([parametro], lr=float(lr))
    entradas = {"optimizer": opt, "warmup_steps": int(W), "total_steps": int(T)}
    if min_lr is not None:
        entradas["min_lr"] = float(min_lr)
    return entradas


def _tasas(opt):
    return [grupo["lr"] for grupo in opt.param_groups]


def observar_planificador(warmup_cosine, entradas):
    """The learning rate of every group before any step and after each of ``total_steps``
    steps (rows: steps, columns: groups), and what creating the scheduler changed."""
    crudo = {}
    opt = entradas["optimizer"]
    parametros = {f"param_groups[{i}].params[{j}]": p for i, g in enumerate(opt.param_groups)
                  for j, p in enumerate(g["params"])}

    def crear(*args):
        crudo["planificador"] = warmup_cosine(*args)
        return crudo["planificador"]

    antes = estado(dict(entradas, **parametros))
    observacion = observar_llamada(crear, *entradas.values())
    observacion.update(estado_antes=antes, estado_despues=estado(dict(entradas, **parametros)))
    if observacion["error"] is not None:
        return observacion
    planificador = crudo["planificador"]
    if not isinstance(planificador, torch.optim.lr_scheduler.LRScheduler):
        observacion["resultado"] = {"__objeto__": type(planificador).__name__,
                                    "valor": observacion["resultado"]}
        return observacion
    lrs = [_tasas(opt)]

    def avanzar():
        for _ in range(entradas["total_steps"]):
            opt.step()
            planificador.step()
            lrs.append(_tasas(opt))

    try:
        llamar(avanzar)
    except ComprobacionFallida as error:  # a scheduler that fails is reported
        return dict(observacion, resultado=None, error=error_a_datos(error))
    observacion["resultado"] = torch.tensor(lrs, dtype=torch.float64)
    return observacion


def secuencia_lr(lr, W, T, min_lr, variante="correcta", ajena=None):
    """Closed-form learning rates for steps 0..T: the contract and its usual mistakes.
    ``ajena``: the cosine written from another lr (the example's 0.1, ``defaults["lr"]``)
    as a factor of the group's own lr."""
    valores = []
    fin_coseno = T if variante == "tmax_total" else T - W
    minimo = 0.0 if variante == "sin_min_lr" else min_lr
    for t in range(T + 1):
        if t < W:
            valores.append(lr * (t + 1) / (W + 1))
        else:
            c = 0.5 * (1 + math.cos(math.pi * (t - W) / fin_coseno))
            if variante == "min_lr_factor":  # min_lr taken as a fraction of lr
                valores.append(lr * (minimo + (1 - minimo) * c))
            else:
                valores.append(minimo + (lr - minimo) * c if ajena is None else
                               lr * (minimo + (ajena - minimo) * c) / ajena)
    return torch.tensor(valores, dtype=torch.float64)


def lrs_esperadas(optimizer, warmup_steps, total_steps, min_lr=0.0):
    """The public oracle (closed form, one column per parameter group) with the sequences of
    the usual mistakes."""
    def columnas(variante, ajena=None):
        return torch.stack([secuencia_lr(lr, warmup_steps, total_steps, min_lr, variante,
                                         ajena) for lr in _tasas(optimizer)], dim=1)

    esperadas = {variante: columnas(variante)
                 for variante in ("correcta", "tmax_total", "sin_min_lr", "min_lr_factor")}
    for ajena in (0.1, optimizer.defaults["lr"]):
        if all(abs(ajena - lr) > 1e-9 for lr in _tasas(optimizer)):
            esperadas[f"lr_ajena {ajena:.6g}"] = columnas("correcta", ajena)
    return esperadas


def _secuencia(caso):
    resultado = caso.resultado
    if not isinstance(resultado, torch.Tensor):
        fallar("no_es_planificador", tipo=resultado.get("__objeto__", "dict")
               if isinstance(resultado, dict) else type(resultado).__name__)
    esperada = caso.datos["esperado"]["correcta"]
    if resultado.shape != esperada.shape:
        exigir(diagnosticar_escala("la secuencia de tasas", resultado, esperada))
    return resultado


def _otros_grupos(lrs, esperada, desde, hasta):
    """The first group follows the contract: do the others too?"""
    if not cerca(lrs[desde:hasta], esperada[desde:hasta]):
        fallar("grupos_sin_planificar", grupos=lrs.shape[1])


def _calentamiento(caso):
    lrs = _secuencia(caso)
    W = caso.datos["W"]
    esperada = caso.datos["esperado"]["correcta"]
    lr = esperada[W, 0].item()
    # (with W = 1, one step ahead is also "no warmup": only W >= 2 tells them apart)
    if W >= 2 and cerca(lrs[:-1], esperada[1:]):
        fallar("planificador_adelantado")

    def vale_lr(t):
        return abs(lrs[t, 0].item() - lr) < 1e-9 * max(1.0, lr)

    # W = 1 starting at lr and still at lr in step 1: a warmup from 1/W, not none at all
    if vale_lr(0) and not (W == 1 and vale_lr(1)):
        fallar("sin_calentamiento", tasa=lrs[0, 0].item())
    for t in range(W + 1):
        if not cerca(lrs[t:t + 1, 0], esperada[t:t + 1, 0]):
            fallar("calentamiento_incorrecto", paso=t, tasa=lrs[t, 0].item(),
                   tasa_esperada=esperada[t, 0].item())
    _otros_grupos(lrs, esperada, 0, W + 1)


def _coseno(caso):
    lrs = _secuencia(caso)
    W = caso.datos["W"]
    if W >= 2 and cerca(lrs[:-1], caso.datos["esperado"]["correcta"][1:]):
        fallar("planificador_adelantado")
    esperadas = {k: v[:, 0] for k, v in caso.datos["esperado"].items()}
    tramo = lrs[W:, 0]
    if not cerca(tramo, esperadas["correcta"][W:]):
        min_lr = caso.datos["min_lr"]
        if caso.datos.get("min_lr_omitido") and cerca(tramo[:1], esperadas["correcta"][W:W + 1]) \
                and abs(tramo[-1].item()) > 1e-12:
            fallar("min_lr_por_defecto", final=tramo[-1].item())
        if cerca(tramo, esperadas["tmax_total"][W:]):
            fallar("coseno_tmax_total")
        if cerca(tramo, esperadas["sin_min_lr"][W:]):
            fallar("sin_min_lr", min_lr=caso.datos["min_lr"])
        if min_lr and cerca(tramo, esperadas["min_lr_factor"][W:]):
            fallar("min_lr_como_factor", min_lr=caso.datos["min_lr"])
        for clave, otra in esperadas.items():
            if clave.startswith("lr_ajena") and cerca(tramo, otra[W:]):
                fallar("lr_ajena", otra=float(clave.split()[1]),
                       tasa=caso.datos["esperado"]["correcta"][W, 0].item())
        exigir(diagnosticar_escala("las tasas de la fase de coseno", tramo,
                                   esperadas["correcta"][W:]))
    _otros_grupos(lrs, caso.datos["esperado"]["correcta"], W, None)


def _planificador_sin_efectos(caso):
    """Creating the scheduler changes nothing but the groups' ``lr`` (and ``initial_lr``)."""
    verificar_sin_efectos(caso, permitidos=[
        f"optimizer.param_groups[{i}].{clave}" for i in range(8)
        for clave in ("lr", "initial_lr")])


def contexto_planificador(forma):
    return {"W": int(forma[0]), "min_lr": float(forma[3] or 0.0),
            "min_lr_omitido": forma[3] is None}


WARMUP_COSINE = Ejercicio(
    funcion="warmup_cosine",
    partes=[
        Parte("calentamiento lineal (pasos 0 a W)", 1.25, _calentamiento),
        Parte("coseno de lr a min_lr (pasos W a total_steps)", 1.25, _coseno),
        Parte("crearlo no da pasos ni cambia nada más que las tasas", 0.5,
              _planificador_sin_efectos, requisito=True),
    ],
    construir=construir_planificador, observar=observar_planificador,
    contexto=contexto_planificador)


def comprobar_warmup_cosine(warmup_cosine):
    """Comprobación pública: W=5, total_steps=30, lr=0.1, min_lr=0.001, frente a la fórmula
    cerrada; después W=2, total_steps=8, lr=0.05, min_lr=0.005 con dos grupos de parámetros;
    y W=1, total_steps=2, lr=0.2 sin min_lr."""
    caso = caso_en_proceso(WARMUP_COSINE, warmup_cosine, 6, (5, 30, 0.1, 0.001), lrs_esperadas)
    comprobar(WARMUP_COSINE.partes, caso,
              "Las 31 tasas de aprendizaje siguen el calentamiento y el coseno del contrato.")
    caso = caso_en_proceso(WARMUP_COSINE, warmup_cosine, 7, (2, 8, 0.05, 0.005, 2, False),
                           lrs_esperadas)
    comprobar(WARMUP_COSINE.partes, caso,
              "También con otra lr y dos grupos de parámetros.")
    caso = caso_en_proceso(WARMUP_COSINE, warmup_cosine, 9, (1, 2, 0.2, None, 1, True),
                           lrs_esperadas)
    comprobar(WARMUP_COSINE.partes, caso,
              "Y en el borde: W = 1, un solo paso de coseno y min_lr omitido.")


# ---------------------------------------------------------------- exercise 3: train_one_epoch
NOMBRES_ENTRENAMIENTO = ("model", "loader", "loss_fn", "optimizer", "scheduler", "accum",
                         "max_norm")


class Cargador:
    """A sized iterable of micro-batches that cannot be indexed nor sliced (like a
    DataLoader): each pass yields the same batches."""

    def __init__(self, lotes):
        self._lotes = list(lotes)

    def __len__(self):
        return len(self._lotes)

    def __iter__(self):
        return iter(list(self._lotes))


def construir_entrenamiento(generador, forma):
    """Inputs of train_one_epoch for ``forma`` = (n_lotes, tam_lote, D, H, C, accum,
    max_norm, planificador, optimizador[, cargador, omitidos, inicio, anidado, suavizado,
    grad, ultimo[, congelado[, funcion]]]).

    ``max_norm`` None (no clipping) or a number, 0.0 included; planificador "coseno" or
    "ninguno"; optimizador "sgd" (momentum), "sgd_simple" or "adamw"; cargador "lista",
    "tupla" or "iterable" (a ``Cargador``); omitidos: how many trailing arguments the call
    leaves to their defaults (0 to 3: max_norm, accum, scheduler); inicio "eval", "train",
    "mixto" (the top module in train mode, its first child in eval mode) or "mixto_eval"
    (the top module in eval mode, its first child in train mode); anidado: the layers
    inside submodules; suavizado: the loss's label smoothing; grad: the trainable
    parameters arrive with ``.grad`` zeroed (not None); ultimo: the size of a shorter last
    micro-batch (0: all the same); congelado: the first layer's bias is frozen
    (``requires_grad=False``, still in the optimizer, which skips it); funcion: the loss is
    a plain function, not a module.
    The public example: an iterable, eval mode, nothing omitted.
    """
    n, B, D, H, C, accum, max_norm, planificador, optimizador = forma[:9]
    cargador, omitidos, inicio, anidado, suavizado, grad = (
        forma[9:15] if len(forma) > 9 else ("lista", 0, "eval", False, 0.0, False))
    congelado = len(forma) > 16 and forma[16]
    modelo = red_clasificadora(generador, D, H, C)
    if anidado:
        modelo = torch.nn.Sequential(torch.nn.Sequential(modelo[0], modelo[1]), modelo[2])
    modelo.train(inicio not in ("eval", "mixto_eval"))
    if inicio in ("mixto", "mixto_eval"):
        next(iter(modelo.children())).train(inicio == "mixto_eval")
    if congelado:
        next(m for m in modelo.modules() if isinstance(m, torch.nn.Linear)).bias.requires_grad_(
            False)
    if grad:
        for p in modelo.parameters():
            if p.requires_grad:
                p.grad = torch.zeros_like(p)
    tamanos = [B] * n
    if len(forma) > 15 and forma[15]:  # a shorter last micro-batch, as a DataLoader gives
        tamanos[-1] = forma[15]
    lotes = [(torch.randn(b, D, generator=generador, dtype=torch.float64),
              torch.randint(0, C, (b,), generator=generador)) for b in tamanos]
    if optimizador == "adamw":
        opt = torch.optim.AdamW(modelo.parameters(), lr=0.05, weight_decay=0.1)
    elif optimizador == "sgd":
        opt = torch.optim.SGD(modelo.parameters(), lr=0.2, momentum=0.9)
    else:
        opt = torch.optim.SGD(modelo.parameters(), lr=0.5)
    pasos = -(-n // accum)
    planificador = (torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=pasos, eta_min=0.01)
                    if planificador == "coseno" else None)
    loader = {"lista": list, "tupla": tuple, "iterable": Cargador}[cargador](lotes)
    entradas = {"model": modelo, "loader": loader,
                "loss_fn": _perdida_de_entrenamiento(float(suavizado),
                                                     len(forma) > 17 and forma[17]),
                "optimizer": opt, "scheduler": planificador, "accum": int(accum),
                "max_norm": None if max_norm is None else float(max_norm)}
    for nombre in ("max_norm", "accum", "scheduler")[:omitidos]:
        del entradas[nombre]
    return entradas


def _perdida_de_entrenamiento(suavizado, funcion):
    """CrossEntropyLoss(label_smoothing=suavizado), or the same loss as a plain function
    (no ``reduction``, no settings) that calls it: ``_modulo`` is what the observer hooks."""
    modulo = torch.nn.CrossEntropyLoss(label_smoothing=suavizado)
    if not funcion:
        return modulo

    def perdida(logits, y):
        return modulo(logits, y)
    perdida._modulo = modulo
    return perdida


def modulo_de_perdida(loss_fn):
    """The module behind a training loss (itself, or the one a plain function calls)."""
    return getattr(loss_fn, "_modulo", loss_fn)


def _plano(parametros):
    return torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).detach().flatten()
                      for p in parametros])


def _lotes(loader):
    return [t.detach().clone() for lote in (loader._lotes if isinstance(loader, Cargador)
                                            else loader) for t in lote]


def _estado_entrenamiento(entradas):
    """``estado`` of the model and the loss, with the optimizer's settings (its state and
    lr are training's to change) and the scheduler's presence."""
    foto = estado({"model": entradas["model"],
                   "loss_fn": modulo_de_perdida(entradas["loss_fn"])})
    for i, grupo in enumerate(entradas["optimizer"].param_groups):
        for clave, v in grupo.items():
            if clave not in ("params", "lr", "initial_lr"):
                foto[f"optimizer.param_groups[{i}].{clave}"] = v if type(v) in (
                    bool, int, float, str, type(None)) else repr(v)
    foto["loader"] = len(entradas["loader"])
    return foto


def ejecutar_instrumentado(funcion, entradas):
    """Run ``funcion`` on instrumented inputs; plain data about everything it did."""
    modelo, opt = entradas["model"], entradas["optimizer"]
    planificador = entradas.get("scheduler")
    perdida = modulo_de_perdida(entradas["loss_fn"])
    parametros = list(modelo.parameters())
    traza, pasos, modos, perdidas, crudo = [], [], [], [], {}

    def marcar_backward(grad):
        traza.append("backward")

    def al_calcular_la_perdida(modulo, args, salida):
        if isinstance(salida, torch.Tensor) and salida.requires_grad:
            salida.register_hook(marcar_backward)
            perdidas.append(salida.item())

    def antes_del_paso(optimizador, args, kwargs):
        traza.append("optimizer.step")
        pasos.append(_plano(parametros).clone())

    def envolver(objeto, atributo, etiqueta):
        original = getattr(objeto, atributo)

        def envoltura(*args, **kwargs):
            traza.append(etiqueta)
            return original(*args, **kwargs)
        setattr(objeto, atributo, envoltura)

    utils = torch.nn.utils
    recorte_original = utils.clip_grad_norm_

    def recorte(*args, **kwargs):
        traza.append("clip_grad_norm_")
        return recorte_original(*args, **kwargs)

    def guardar(*args):
        crudo["valor"] = funcion(*args)
        return crudo["valor"]

    lotes = _lotes(entradas["loader"])
    antes = _estado_entrenamiento(entradas)
    ganchos = [opt.register_step_pre_hook(antes_del_paso),
               perdida.register_forward_hook(al_calcular_la_perdida),
               modelo.register_forward_pre_hook(
                   lambda m, a: modos.append(all(x.training for x in m.modules())))]
    envolver(opt, "zero_grad", "optimizer.zero_grad")
    envolver(modelo, "zero_grad", "optimizer.zero_grad")
    if planificador is not None:
        envolver(planificador, "step", "scheduler.step")
    utils.clip_grad_norm_ = recorte
    try:
        observacion = observar_llamada(guardar, *entradas.values())
    finally:
        utils.clip_grad_norm_ = recorte_original
        for gancho in ganchos:
            gancho.remove()
        del opt.zero_grad, modelo.zero_grad
        if planificador is not None:
            del planificador.step
    despues = _estado_entrenamiento(entradas)
    ahora = _lotes(entradas["loader"])
    despues["loader"] = len(entradas["loader"]) if len(ahora) == len(lotes) and all(
        torch.equal(a, b) for a, b in zip(lotes, ahora)) else "cambiado"
    valor = crudo.get("valor")
    finales = [p.detach().clone() for p in parametros]
    observacion.update(
        devuelto=observacion["resultado"], traza=traza, pasos=pasos, modos=modos,
        perdidas=perdidas, parametros=finales, estado_antes=antes, estado_despues=despues,
        modos_finales=[m.training for m in modelo.modules()],
        devuelto_grafo=isinstance(valor, torch.Tensor) and valor.grad_fn is not None)
    if observacion["resultado"] is None and observacion["error"] is None:
        # A forgotten ``return`` is its own mistake, not a hard-coded answer.
        observacion["resultado"] = {"sin_retorno": finales}
    return observacion


def observar_entrenamiento(train_one_epoch, entradas):
    return ejecutar_instrumentado(train_one_epoch, entradas)


def contexto_entrenamiento(forma):
    n, B, accum, max_norm = forma[0], forma[1], forma[5], forma[6]
    tamanos = [B] * n
    if len(forma) > 15 and forma[15]:
        tamanos[-1] = forma[15]
    return {"n_lotes": n, "accum": accum,
            "max_norm": None if max_norm is None else float(max_norm), "tamanos": tamanos}


def _sin(traza, etiqueta):
    return [e for e in traza if e != etiqueta]


def diagnosticar_orden(traza, esperada, n_lotes, accum, max_norm):
    """The order of backward / clip / step / scheduler (zero_grad is judged by the values)."""
    traza = _sin(traza, "optimizer.zero_grad")
    esperada = _sin(esperada, "optimizer.zero_grad")
    if max_norm is None:  # clipping to infinity is harmless
        traza = _sin(traza, "clip_grad_norm_")
    if "clip_grad_norm_" not in traza:  # clipped some other way: the gradients will tell
        esperada = _sin(esperada, "clip_grad_norm_")
    if traza == esperada:
        return None
    pasos, pasos_esperados = traza.count("optimizer.step"), esperada.count("optimizer.step")
    if pasos_esperados and not pasos:
        return Diagnostico("sin_step", {})
    if accum > 1 and pasos == n_lotes:
        return Diagnostico("step_en_cada_microlote", {})
    if n_lotes % accum and pasos == pasos_esperados - 1:
        return Diagnostico("ciclo_parcial_olvidado", {})
    veces, veces_esperadas = traza.count("scheduler.step"), esperada.count("scheduler.step")
    # once per micro-batch (n_lotes, +1 with a step after the loop) or once per epoch (1)
    if veces_esperadas and veces != veces_esperadas and veces in (1, n_lotes, n_lotes + 1):
        return Diagnostico("scheduler_veces", {"veces": veces, "veces_esperadas": veces_esperadas})
    for i, evento in enumerate(traza):
        anterior = next((e for e in reversed(traza[:i]) if e != "clip_grad_norm_"), None)
        if evento == "clip_grad_norm_" and anterior != "backward":
            return Diagnostico("recorte_fuera_de_lugar", {})
    return diagnosticar_traza(traza, esperada)


def zero_grad_dentro_del_ciclo(traza):
    """True if zero_grad ran between two backward calls with no step in between."""
    backward_en_ciclo, borrado = False, False
    for evento in traza:
        if evento == "backward":
            if borrado:
                return True
            backward_en_ciclo = True
        elif evento == "optimizer.zero_grad" and backward_en_ciclo:
            borrado = True
        elif evento == "optimizer.step":
            backward_en_ciclo, borrado = False, False
    return False


def _orden_y_modo(caso):
    datos = caso.datos
    if not all(datos["modos"]):
        fallar("modelo_en_eval")
    exigir(diagnosticar_orden(datos["traza"], datos["esperado"]["traza"], datos["n_lotes"],
                              datos["accum"], datos["max_norm"]))
    if not all(datos["modos_finales"]):
        fallar("modelo_en_eval")


def _pasos_comparables(datos):
    """The steps to compare: the reference's, as many as the student took. A step missing
    at the end costs the order part, not every step after it."""
    obtenidos, esperados = datos["pasos"], datos["esperado"]["pasos"]
    if len(esperados) == 1 and not obtenidos and datos["n_lotes"] % datos["accum"]:
        return []  # the only cycle was partial and got no step: the order part says so
    if esperados and not obtenidos:
        exigir(diagnosticar_orden(datos["traza"], datos["esperado"]["traza"], datos["n_lotes"],
                                  datos["accum"], datos["max_norm"]))
        fallar("longitud", nombre="la lista de pasos del optimizador",
               longitud=len(obtenidos), longitud_esperada=len(esperados))
    return list(zip(obtenidos, esperados))


def _descongelados(caso):
    """A parameter that arrived frozen and left trainable: every value part says so."""
    antes, despues = caso.datos["estado_antes"], caso.datos["estado_despues"]
    for nombre in cambios(antes, despues):
        if nombre.endswith(".requires_grad") and antes[nombre] is False:
            fallar("parametro_descongelado", nombre=nombre[:-len(".requires_grad")])


def _gradientes_de_cada_paso(caso):
    _descongelados(caso)
    datos = caso.datos
    n, accum, max_norm = datos["n_lotes"], datos["accum"], datos["max_norm"]
    obtenidos = datos["pasos"]
    esperados = datos["esperado"]["pasos"]
    for k, (obtenido, esperado) in enumerate(_pasos_comparables(datos)):
        if cerca(obtenido, esperado):
            continue
        if k > 0 and cerca(obtenido, esperado + obtenidos[k - 1]):
            fallar("zero_grad_ausente")
        if zero_grad_dentro_del_ciclo(datos["traza"]):
            fallar("zero_grad_en_microlote")
        if max_norm is not None and (torch.linalg.vector_norm(obtenido).item()
                                     > max_norm * (1 + 1e-6) + 1e-12):
            fallar("recorte_fuera_de_lugar")
        factores = {}
        if k == len(esperados) - 1 and n % accum:  # the last, partial cycle
            factores["ciclo_parcial_dividido_por_accum"] = (n % accum) / accum
        if accum > 1:
            factores["sin_dividir_por_accum"] = min(accum, n)
        exigir(diagnosticar_escala(f"el gradiente del paso {k + 1}", obtenido, esperado,
                                   factores))


def _parametros_finales(caso):
    """Judged where the student took as many steps as the reference: a missing or extra
    step is the order's mistake (and an extra one, the gradients'), not this part's."""
    _descongelados(caso)
    datos = caso.datos
    if len(datos["pasos"]) != len(datos["esperado"]["pasos"]):
        _pasos_comparables(datos)  # no step at all fails here too
        return
    antes = [v["valores"] for k, v in datos["originales"].items() if k.startswith("model.")]
    factores = {"sin_dividir_por_accum": datos["accum"]} if datos["accum"] > 1 else {}
    exigir(_sin_cuadrados(diagnosticar_parametros(antes, datos["parametros"],
                                                  datos["esperado"]["parametros"], factores),
                          factores))


def _entrenamiento_sin_efectos(caso):
    """Nothing changes but what training changes: parameters, gradients, buffers, modes,
    the optimizer's state and lr, the scheduler's state."""
    verificar_sin_efectos(caso, permitidos=("model.",))
    _descongelados(caso)
    distintos = [n for n in cambios(caso.datos["estado_antes"], caso.datos["estado_despues"])
                 if n.endswith(".requires_grad")]
    if distintos:
        fallar("efecto_secundario", que=", ".join(f"`{n}`" for n in distintos[:4]))


def _perdida_devuelta(caso):
    _descongelados(caso)
    datos = caso.datos
    n, accum, perdidas = datos["n_lotes"], datos["accum"], datos["esperado"]["perdidas"]
    divididas = [p / min(accum, n - (i - i % accum)) for i, p in enumerate(perdidas)]
    alternativas = ({"perdida_registrada_dividida": sum(divididas) / len(divididas)}
                    if accum > 1 and divididas else {})
    ciclos = [perdidas[i:i + accum] for i in range(0, len(perdidas), accum)]
    if n % accum and len(ciclos) > 1:  # a short last cycle weighs as much as a full one
        alternativas["media_de_ciclos"] = sum(sum(c) / len(c) for c in ciclos) / len(ciclos)
    tamanos = datos.get("tamanos", [])
    if len(set(tamanos)) > 1 and len(tamanos) == len(perdidas):  # a shorter last batch
        alternativas["media_por_muestra"] = (sum(p * b for p, b in zip(perdidas, tamanos))
                                             / sum(tamanos))
    comparar_numero("la pérdida media devuelta", datos["devuelto"], datos["esperado"]["perdida"],
                    datos["devuelto_grafo"], {"suma_en_vez_de_media": n}, alternativas)


TRAIN_ONE_EPOCH = Ejercicio(
    funcion="train_one_epoch",
    partes=[
        Parte("model.train() y orden: backward → clip → step → scheduler", 0.75, _orden_y_modo),
        Parte("gradientes que usa cada paso (acumulación, recorte, zero_grad)", 1.5,
              _gradientes_de_cada_paso),
        Parte("parámetros al final de la época", 1.0, _parametros_finales),
        Parte("pérdida media devuelta como float", 0.5, _perdida_devuelta),
        Parte("no cambia la pérdida, los ajustes del optimizador ni autograd", 0.25,
              _entrenamiento_sin_efectos, requisito=True),
    ],
    construir=construir_entrenamiento, observar=observar_entrenamiento,
    contexto=contexto_entrenamiento)


def entrenamiento_a_mano(model, loader, loss_fn, optimizer, scheduler, accum, max_norm):
    """The public oracle, for plain SGD and a cosine schedule: each cycle's gradient is
    the gradient of the loss on the cycle's concatenated batch (equal batch sizes), the
    clipping and the update are written out, the learning rate is the closed form."""
    params = [p.detach().clone() for p in model.parameters()]
    grupo = optimizer.param_groups[0]
    lr0 = grupo.get("initial_lr", grupo["lr"])
    eta_min, t_max = scheduler.eta_min, scheduler.T_max
    traza, pasos, perdidas = [], [], []
    lotes = list(loader)
    ciclos = [lotes[i:i + accum] for i in range(0, len(lotes), accum)]
    for t, ciclo in enumerate(ciclos):
        x = torch.cat([xb for xb, _ in ciclo])
        y = torch.cat([yb for _, yb in ciclo])
        hojas = [p.clone().requires_grad_(True) for p in params]
        copia = copy.deepcopy(model)
        with torch.enable_grad():
            salida = torch.func.functional_call(
                copia, dict(zip([k for k, _ in model.named_parameters()], hojas)), (x,))
            gradientes = torch.autograd.grad(torch.nn.functional.cross_entropy(salida, y), hojas)
        # a frozen parameter gets no gradient: zero in what the step sees, and no update
        gradientes = [g if p.requires_grad else torch.zeros_like(g)
                      for g, p in zip(gradientes, model.parameters())]
        with torch.no_grad():
            for xb, yb in ciclo:
                perdidas.append(torch.nn.functional.cross_entropy(
                    torch.func.functional_call(copia, dict(zip(
                        [k for k, _ in model.named_parameters()], params)), (xb,)), yb).item())
        plano = torch.cat([g.flatten() for g in gradientes])
        traza += ["backward"] * len(ciclo)
        if max_norm is not None:
            traza.append("clip_grad_norm_")
            plano = plano * min(1.0, max_norm / (torch.linalg.vector_norm(plano).item() + 1e-6))
        traza += ["optimizer.step", "scheduler.step", "optimizer.zero_grad"]
        pasos.append(plano)
        lr = eta_min + (lr0 - eta_min) * (1 + math.cos(math.pi * t / t_max)) / 2
        trozos = torch.split(plano, [p.numel() for p in params])
        params = [p - lr * g.view_as(p) for p, g in zip(params, trozos)]
    return {"traza": traza, "pasos": pasos, "parametros": params, "perdidas": perdidas,
            "perdida": sum(perdidas) / len(perdidas)}


def comprobar_train_one_epoch(train_one_epoch):
    """Comprobación pública: 5 micro-lotes de un cargador que no se puede cortar (el último más
    corto), ``accum=2`` (un último ciclo incompleto), recorte y coseno; después 2 micro-lotes
    en una tupla, ``accum=3`` (más que micro-lotes), ``max_norm=0.0``, un modelo anidado en
    modo entrenamiento con un hijo en modo evaluación, un parámetro congelado y una
    ``loss_fn`` que es una función."""
    caso = caso_en_proceso(TRAIN_ONE_EPOCH, train_one_epoch, 4,
                           (5, 6, 3, 5, 3, 2, 0.6, "coseno", "sgd_simple", "iterable", 0, "eval",
                            False, 0.0, False, 4), entrenamiento_a_mano)
    comprobar(TRAIN_ONE_EPOCH.partes, caso,
              "El orden, los gradientes de cada paso, los parámetros y la pérdida coinciden "
              "(en este ejemplo pequeño).")
    caso = caso_en_proceso(TRAIN_ONE_EPOCH, train_one_epoch, 5,
                           (2, 4, 3, 4, 3, 3, 0.0, "coseno", "sgd_simple", "tupla", 0,
                            "mixto", True, 0.0, True, 0, True, True), entrenamiento_a_mano)
    comprobar(TRAIN_ONE_EPOCH.partes, caso,
              "También con una tupla, un solo ciclo incompleto, max_norm=0.0, un modelo "
              "mezclado, un parámetro congelado y una pérdida que es una función.")


# ---------------------------------------------------------------- exercise 4: train_steps
MENSAJES_REANUDAR = {
    "pasos_hasta_stop": (
        "Pasos hasta `stop`",
        "Sin `state` diste {pasos} pasos; con `stop={stop}` tocaban {stop}, con los lotes 0 a "
        "{ultimo}.",
        "¿Hasta qué paso entrenas? `batches` puede tener más lotes de los que tocan en esta "
        "llamada.",
        "Without a state the call took {pasos} steps; with stop={stop} it should take {stop}."),
    "estado_no_devuelto": (
        "Sin estado devuelto",
        "Tu función devolvió `None`: no hay estado desde el que reanudar.",
        "¿Qué devuelve tu función al terminar?",
        "The function returned None: there is no state to resume from."),
    "estado_no_serializable": (
        "El estado no se carga con `weights_only=True`",
        "`torch.save` seguido de `torch.load(..., weights_only=True)` no funciona con tu estado: "
        "{detalle}",
        "¿Qué guardas en el diccionario? `weights_only=True` solo acepta tensores, números, "
        "cadenas, listas, tuplas y diccionarios: ni módulos, ni optimizadores, ni funciones.",
        "The state does not survive torch.save and torch.load(weights_only=True): {detalle}"),
    "estado_con_referencias": (
        "Estado que sigue cambiando",
        "Después de devolver el estado, dos pasos más de entrenamiento con los mismos objetos "
        "lo cambiaron ({que}): guardaste referencias a los tensores que el entrenamiento "
        "sigue cambiando en su sitio, no una instantánea.",
        "¿Qué devuelve `state_dict()`: una copia, o tensores que comparten memoria con el modelo "
        "y con el optimizador?",
        "Two more training steps with the same objects changed the returned state ({que}): it "
        "holds references to live tensors, not a snapshot."),
    "modelo_no_restaurado": (
        "Modelo sin restaurar",
        "Al reanudar en el paso {paso}, el primer pase hacia adelante usó otros pesos que la "
        "ejecución seguida en ese paso{detalle}.",
        "¿Devuelves los pesos guardados al modelo nuevo antes del primer pase hacia adelante?",
        "Resuming at step {paso}, the first forward pass used other weights than the "
        "uninterrupted run."),
    "estado_al_empezar": (
        "Estado tomado al empezar",
        "Al reanudar en el paso {paso}, los pesos son los que tenía la llamada anterior **al "
        "empezar**: tomaste la instantánea antes de entrenar, no al terminar.",
        "¿En qué momento de la llamada copias el estado: antes o después de los pasos?",
        "Resuming at step {paso}, the weights are those the previous call started with."),
    "optimizador_no_restaurado": (
        "Optimizador sin restaurar",
        "Al reanudar en el paso {paso}, el primer `optimizer.step()` no tenía el estado de la "
        "ejecución seguida ({que}).",
        "¿Dónde viven el momento de SGD, los momentos de Adam y la tasa actual? El modelo no "
        "los guarda.",
        "Resuming at step {paso}, the first optimizer step lacked the optimizer's state "
        "({que})."),
    "solo_el_modelo": (
        "Solo los pesos",
        "Al reanudar, solo el modelo volvió a su sitio: el optimizador, el planificador y el "
        "generador aleatorio empezaron de cero.",
        "Los pesos no son todo el estado del entrenamiento: ¿qué otros objetos cambian en cada "
        "paso?",
        "On resuming only the model was restored: optimizer, scheduler and generator "
        "started afresh."),
    "planificador_no_restaurado": (
        "Planificador sin restaurar",
        "Al reanudar en el paso {paso}, el planificador llevaba {obtenido} pasos "
        "(`last_epoch`) y en la ejecución seguida {esperado}: su curva no sigue donde estaba.",
        "¿Qué sabe el planificador de los pasos ya dados, y cómo lo recupera el objeto nuevo?",
        "Resuming at step {paso}, the scheduler's last_epoch was {obtenido}, expected "
        "{esperado}."),
    "planificador_incompleto": (
        "Planificador a medias",
        "Al reanudar en el paso {paso}, `last_epoch` es el correcto pero la última tasa del "
        "planificador (`get_last_lr()`) no: {obtenida:.4g} en vez de {esperada:.4g}. Le "
        "devolviste el contador, no todo su estado.",
        "¿Guarda el planificador algo más que su contador? Piensa en uno hecho de varios "
        "(`SequentialLR`).",
        "Resuming at step {paso}, last_epoch is right but get_last_lr() is {obtenida:.4g}, "
        "expected {esperada:.4g}."),
    "rng_no_restaurado": (
        "Generador aleatorio sin restaurar",
        "Al reanudar en el paso {paso}, el generador global no estaba como en la ejecución "
        "seguida: Dropout apaga otras neuronas y la reanudación deja de ser idéntica.",
        "¿Qué usa Dropout para elegir qué apagar, y en qué estado lo dejó la llamada anterior? "
        "Fijar una semilla no devuelve ese estado.",
        "Resuming at step {paso}, the global generator was not in the uninterrupted run's "
        "state."),
    "rng_al_empezar": (
        "Generador guardado al empezar",
        "Al reanudar en el paso {paso}, el generador global volvió al estado que tenía la "
        "llamada anterior **al empezar**: Dropout repite las máscaras que ya usó.",
        "¿En qué momento lees el estado del generador: antes o después de los pases que lo "
        "consumen?",
        "Resuming at step {paso}, the generator went back to where the previous call "
        "started."),
    "reanuda_en_otro_lote": (
        "Lote equivocado al reanudar",
        "Al reanudar en el paso {paso}, el primer lote fue `batches[{lote}]`: el contador de "
        "pasos no volvió a su sitio.",
        "¿Cómo sabe la llamada que reanuda por qué paso va? Piensa en dos interrupciones "
        "seguidas.",
        "Resuming at step {paso}, the first batch was batches[{lote}]."),
    "pasos_reanudados": (
        "Pasos al reanudar",
        "Al reanudar en el paso {paso} con `stop={stop}` diste {pasos} pasos; tocaban "
        "{esperados}.",
        "¿Desde qué paso empiezas al reanudar, y hasta cuál llegas?",
        "Resuming at step {paso} with stop={stop}, {pasos} steps were taken, expected "
        "{esperados}."),
    "reanudacion_distinta": (
        "La reanudación se separa",
        "Reanudar en el paso {paso} no da lo mismo que no interrumpir: {que} difiere.",
        "Compara pieza a pieza lo que guardas con lo que cambia en cada paso: pesos, "
        "optimizador, planificador, generador aleatorio y contador.",
        "Resuming at step {paso} does not match the uninterrupted run: {que} differs."),
}
registrar(MENSAJES_REANUDAR)

NOMBRES_REANUDAR = ("model", "optimizer", "scheduler", "loss_fn", "batches", "stop")
OPTIMIZADORES_REANUDAR = {
    "sgd": lambda ps: torch.optim.SGD(ps, lr=0.3, momentum=0.9),
    "adam": lambda ps: torch.optim.Adam(ps, lr=0.05),
    "adamw": lambda ps: torch.optim.AdamW(ps, lr=0.05, weight_decay=0.1),
}


def _planificador_con_calentamiento(opt, tipo, W, total):
    """A scheduler with a warmup of ``W`` steps: "secuencial" (linear, then cosine to the
    end), "lineal" (linear, then flat) or "lambda" (a LambdaLR ramp)."""
    lr = torch.optim.lr_scheduler
    if tipo == "secuencial":
        return lr.SequentialLR(opt, [lr.LinearLR(opt, start_factor=0.2, total_iters=W),
                                     lr.CosineAnnealingLR(opt, T_max=max(1, total - W),
                                                          eta_min=0.002)],
                               milestones=[W])
    if tipo == "lineal":
        return lr.LinearLR(opt, start_factor=0.25, total_iters=W)
    return lr.LambdaLR(opt, lambda t: min(1.0, (t + 1) / (W + 1)))


def construir_reanudacion(generador, forma):
    """Inputs of train_steps for ``forma`` = (cortes, n_lotes, B, D, H, C, p, optimizador,
    planificador, W): ``cortes`` the steps where the run stops, the last one the ``stop`` of
    the uninterrupted run; ``n_lotes`` >= that stop; Linear–Tanh–Dropout(p)–Linear in float64;
    optimizador a key of OPTIMIZADORES_REANUDAR; planificador "secuencial", "lineal" or
    "lambda" with a warmup of W steps. ``_nuevos(i)`` builds the same three objects again
    (i = 0: the same initial weights; i > 0: other weights), ``_semilla`` seeds the global
    generator before the first call."""
    cortes, n, B, D, H, C, p, optimizador, planificador, W = forma
    cortes = tuple(int(c) for c in cortes)
    semilla_pesos = int(torch.randint(0, 2**30, (1,), generator=generador).item())
    semilla = int(torch.randint(0, 2**30, (1,), generator=generador).item())
    lotes = [(torch.randn(B, D, generator=generador, dtype=torch.float64),
              torch.randint(0, C, (B,), generator=generador)) for _ in range(n)]

    def nuevos(i):
        pesos = torch.Generator().manual_seed(semilla_pesos + 7919 * i)
        capas = red_clasificadora(pesos, D, H, C)
        modelo = torch.nn.Sequential(capas[0], capas[1], torch.nn.Dropout(p), capas[2])
        opt = OPTIMIZADORES_REANUDAR[optimizador](modelo.parameters())
        return modelo, opt, _planificador_con_calentamiento(opt, planificador, W, cortes[-1])

    modelo, opt, sched = nuevos(0)
    return {"model": modelo, "optimizer": opt, "scheduler": sched,
            "loss_fn": torch.nn.CrossEntropyLoss(), "batches": lotes, "stop": cortes[-1],
            "_nuevos": nuevos, "_cortes": cortes, "_semilla": semilla}


def _plano_modelo(modelo):
    return torch.cat([t.detach().double().flatten()
                      for t in list(modelo.parameters()) + list(modelo.buffers())])


def _plano_optimizador(opt):
    """The optimizer's per-parameter state in parameter order (each parameter's entries by
    name): an empty tensor for a fresh optimizer."""
    trozos = []
    for grupo in opt.param_groups:
        for p in grupo["params"]:
            for _, v in sorted(opt.state.get(p, {}).items()):
                trozos.append(torch.as_tensor(v).detach().double().flatten())
    return torch.cat(trozos) if trozos else torch.zeros(0, dtype=torch.float64)


def _huella_rng():
    return hashlib.sha256(bytes(torch.get_rng_state().tolist())).hexdigest()[:16]


def _planificado(sched):
    return {"last_epoch": int(sched.last_epoch),
            "last_lr": [float(v) for v in sched.get_last_lr()]}


def _tramo(funcion, objetos, entradas, stop, estado_previo):
    """One instrumented call; returns (plain data, the raw returned state)."""
    modelo, opt, sched = objetos
    lotes, perdida = entradas["batches"], entradas["loss_fn"]
    datos = {"lotes": [], "parametros": [], "rng": [], "perdidas": [], "pasos": [],
             "nuevo": _plano_modelo(modelo)}
    crudo = {}

    def antes_del_forward(modulo, args):
        x = args[0] if args else None
        datos["lotes"].append(next((i for i, (xb, _) in enumerate(lotes)
                                    if isinstance(x, torch.Tensor) and x.shape == xb.shape
                                    and torch.equal(x, xb)), -1))
        datos["parametros"].append(_plano_modelo(modelo))
        datos["rng"].append(_huella_rng())

    def al_calcular_la_perdida(modulo, args, salida):
        if isinstance(salida, torch.Tensor) and salida.numel() == 1:
            datos["perdidas"].append(salida.item())

    def antes_del_paso(optimizador, args, kwargs):
        datos["pasos"].append(dict(_planificado(sched), optimizador=_plano_optimizador(opt),
                                   lrs=[float(g["lr"]) for g in opt.param_groups]))

    def guardar(*args):
        crudo["estado"] = funcion(*args)
        return None

    argumentos = (modelo, opt, sched, perdida, lotes, stop)
    if estado_previo is not None:
        argumentos += (estado_previo,)
    ganchos = [modelo.register_forward_pre_hook(antes_del_forward),
               perdida.register_forward_hook(al_calcular_la_perdida),
               opt.register_step_pre_hook(antes_del_paso)]
    try:
        datos["error"] = observar_llamada(guardar, *argumentos)["error"]
    finally:
        for gancho in ganchos:
            gancho.remove()
    datos.update(_planificado(sched), final=_plano_modelo(modelo), rng_final=_huella_rng(),
                 optimizador=_plano_optimizador(opt), stop=int(stop),
                 lrs=[float(g["lr"]) for g in opt.param_groups],
                 tipo_estado=type(crudo.get("estado")).__name__)
    return datos, crudo.get("estado")


def _aplanar(objeto, ruta="state", salida=None, profundidad=0):
    """Every leaf of a nested state as (path, copy): tensors cloned, anything else by repr."""
    salida = [] if salida is None else salida
    if isinstance(objeto, torch.Tensor):
        salida.append((ruta, objeto.detach().clone()))
    elif isinstance(objeto, dict) and profundidad < 8:
        for k, v in list(objeto.items()):
            _aplanar(v, f"{ruta}[{k!r}]", salida, profundidad + 1)
    elif isinstance(objeto, (list, tuple)) and profundidad < 8:
        for i, v in enumerate(objeto):
            _aplanar(v, f"{ruta}[{i}]", salida, profundidad + 1)
    else:
        try:
            texto_objeto = repr(objeto)[:200]
        except Exception:  # noqa: BLE001 - a student's object may not even print
            texto_objeto = type(objeto).__name__
        salida.append((ruta, texto_objeto))
    return salida


def _cambiados(antes, despues):
    if [r for r, _ in antes] != [r for r, _ in despues]:
        return ["su estructura"]
    return [r for (r, a), (_, d) in zip(antes, despues)
            if not (torch.equal(a, d) if isinstance(a, torch.Tensor) and isinstance(
                d, torch.Tensor) and a.shape == d.shape and a.dtype == d.dtype else a == d)]


def _ida_y_vuelta(estado_guardado):
    """torch.save, then torch.load(weights_only=True): (the loaded state, None) or (None,
    why not)."""
    try:
        archivo = io.BytesIO()
        torch.save(estado_guardado, archivo)
        archivo.seek(0)
        return torch.load(archivo, weights_only=True), None
    except Exception as error:  # noqa: BLE001 - whatever the state holds, say why
        return None, f"{type(error).__name__}: {str(error).strip().splitlines()[0][:160]}"


def _entrenar_mas(objetos, entradas):
    """Two more plain steps with the same objects, as a caller that keeps training."""
    modelo, opt, sched = objetos
    with torch.enable_grad():
        for x, y in entradas["batches"][:2]:
            entradas["loss_fn"](modelo(x), y).backward()
            opt.step()
            sched.step()
            opt.zero_grad()


def _protocolo(funcion, entradas):
    cortes, semilla = entradas["_cortes"], entradas["_semilla"]
    objetos = (entradas["model"], entradas["optimizer"], entradas["scheduler"])
    torch.manual_seed(semilla)
    seguida, crudo = _tramo(funcion, objetos, entradas, cortes[-1], None)
    # The result is the returned state, as plain data: a state that ignores the inputs is
    # told apart; a forgotten ``return`` is its own mistake, not a hard-coded answer.
    resultado = (None if seguida["error"] is not None else
                 {"sin_retorno": seguida["final"]} if crudo is None else _aplanar(crudo))
    observacion = {"resultado": resultado,
                   "error": seguida["error"], "seguida": seguida, "tramos": [],
                   "cortes": list(cortes), "cambia": [], "no_serializable": None}
    if seguida["error"] is not None:
        return observacion
    guardado = None
    for i, corte in enumerate(cortes):
        # i = 0: the same start as the uninterrupted run; then a new process: fresh objects
        # with other weights, the global generator elsewhere (building them draws from it)
        objetos = entradas["_nuevos"](i)
        torch.manual_seed(semilla + 104729 * i)
        tramo, crudo = _tramo(funcion, objetos, entradas, corte, guardado)
        observacion["tramos"].append(tramo)
        if tramo["error"] is not None or i == len(cortes) - 1 or crudo is None:
            break
        antes = _aplanar(crudo)
        _entrenar_mas(objetos, entradas)
        observacion["cambia"].append(_cambiados(antes, _aplanar(crudo))[:3])
        guardado, problema = _ida_y_vuelta(crudo)
        if problema is not None:
            observacion["no_serializable"] = problema
            break
    return observacion


def observar_reanudacion(train_steps, entradas):
    """Train straight to ``stop``; then, from the same start, stop at each cut, keep
    training the same objects a little (a state that changes is not a snapshot), save and
    load the state with ``weights_only=True``, and resume on fresh objects with other
    weights and the global generator elsewhere. Plain data: what every call did, forward by
    forward and step by step. The caller's global generator is left as it was."""
    generador = torch.get_rng_state()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return _protocolo(train_steps, entradas)
    finally:
        torch.set_rng_state(generador)


def _serie(valores):
    return torch.tensor(valores, dtype=torch.float64)


def _seguida_sin_estado(caso):
    """The uninterrupted call, against the expected run."""
    datos = caso.datos
    seguida, esperado = datos["seguida"], datos["esperado"]
    stop = seguida["stop"]
    if not seguida["pasos"]:
        fallar("sin_step")
    if seguida["lotes"] != list(range(len(seguida["lotes"]))) or len(seguida["lotes"]) != stop:
        if len(seguida["lotes"]) > stop and seguida["lotes"][:stop] == list(range(stop)):
            fallar("pasos_hasta_stop", pasos=len(seguida["lotes"]), stop=stop, ultimo=stop - 1)
        fallar("reanudacion_distinta", paso=0, que="el orden de los lotes")
    if len(seguida["pasos"]) != stop:
        fallar("longitud", nombre="la lista de pasos del optimizador",
               longitud=len(seguida["pasos"]), longitud_esperada=stop)
    if seguida["last_epoch"] != esperado["last_epoch"]:
        fallar("scheduler_veces", veces=seguida["last_epoch"],
               veces_esperadas=esperado["last_epoch"])
    tasas, esperadas = _serie([p["lrs"] for p in seguida["pasos"]]), _serie(esperado["lrs"])
    if (len(tasas) > 1 and tasas.shape == esperadas.shape and not cerca(tasas, esperadas)
            and cerca(tasas[:-1], esperadas[1:])):
        fallar("scheduler_antes_que_optimizer")  # every step used the next step's rate
    exigir(diagnosticar_escala("las pérdidas de cada paso", _serie(seguida["perdidas"]),
                               _serie(esperado["perdidas"])))
    exigir(diagnosticar_escala("las tasas de cada paso", tasas, esperadas))
    exigir(diagnosticar_escala("los parámetros al final", seguida["final"],
                               esperado["parametros"]))


def _entrenada(caso):
    """The resume parts need an uninterrupted run that trained, one step per batch; then
    every interruption that returned a state that loads."""
    datos = caso.datos
    seguida = datos["seguida"]
    if not seguida["pasos"] or cerca(seguida["final"], seguida["parametros"][0]):
        fallar("sin_step")
    if len(seguida["lotes"]) != seguida["stop"] or len(seguida["pasos"]) != seguida["stop"]:
        _seguida_sin_estado(caso)
    tramos = datos["tramos"]
    for i, tramo in enumerate(tramos):
        if tramo["error"] is not None:
            raise datos_a_error(tramo["error"])
        if i < len(datos["cortes"]) - 1:
            if tramo["tipo_estado"] == "NoneType":
                fallar("estado_no_devuelto")
            if tramo["tipo_estado"] != "dict":
                fallar("tipo", nombre="el estado devuelto", esperado="un diccionario",
                       tipo=tramo["tipo_estado"])
    if datos["no_serializable"] is not None:
        fallar("estado_no_serializable", detalle=datos["no_serializable"])
    reanudados = []
    for j in range(1, len(tramos)):
        inicio, fin = datos["cortes"][j - 1], datos["cortes"][j]
        if not tramos[j]["pasos"] or not tramos[j]["lotes"]:
            fallar("pasos_reanudados", paso=inicio, stop=fin, pasos=len(tramos[j]["pasos"]),
                   esperados=fin - inicio)
        reanudados.append((j, inicio, fin, tramos[j], tramos[j - 1]))
    return seguida, reanudados


def _referencias(caso, j):
    cambia = caso.datos["cambia"][j - 1]
    if cambia:
        fallar("estado_con_referencias", que=", ".join(f"`{r}`" for r in cambia))


def _reanudar_modelo(caso):
    """Each resumed call's first forward pass uses the weights the previous call ended with."""
    _, reanudados = _entrenada(caso)
    for j, inicio, _, tramo, previo in reanudados:
        obtenido = tramo["parametros"][0]
        if cerca(obtenido, previo["final"]):
            continue
        _referencias(caso, j)
        if cerca(obtenido, tramo["nuevo"]):
            fallar("modelo_no_restaurado", paso=inicio, detalle=": los del modelo recién creado")
        if cerca(obtenido, previo["parametros"][0]):
            fallar("estado_al_empezar", paso=inicio)
        fallar("modelo_no_restaurado", paso=inicio, detalle="")


def _reanudar_optimizador(caso):
    """Each resumed call's first step finds the optimizer as the previous call left it."""
    _, reanudados = _entrenada(caso)
    for j, inicio, _, tramo, previo in reanudados:
        obtenido = tramo["pasos"][0]
        mismo_estado = (obtenido["optimizador"].shape == previo["optimizador"].shape
                        and cerca(obtenido["optimizador"], previo["optimizador"]))
        if mismo_estado and cerca(_serie(obtenido["lrs"]), _serie(previo["lrs"])):
            continue
        _referencias(caso, j)
        if (not obtenido["optimizador"].numel() and obtenido["last_epoch"] == 0
                and tramo["rng"][0] != previo["rng_final"]):
            fallar("solo_el_modelo")
        que = ("vacío: ni momentos ni contador `step`" if not obtenido["optimizador"].numel()
               else "sus momentos y su contador `step`" if not mismo_estado
               else "la `lr` de sus grupos")
        fallar("optimizador_no_restaurado", paso=inicio, que=que)


def _reanudar_planificador(caso):
    """Each resumed call's first step finds the scheduler as the previous call left it, and
    it advances once per step."""
    _, reanudados = _entrenada(caso)
    for _, inicio, _, tramo, previo in reanudados:
        obtenido = tramo["pasos"][0]
        if obtenido["last_epoch"] != previo["last_epoch"]:
            fallar("planificador_no_restaurado", paso=inicio, obtenido=obtenido["last_epoch"],
                   esperado=previo["last_epoch"])
        if not cerca(_serie(obtenido["last_lr"]), _serie(previo["last_lr"])):
            fallar("planificador_incompleto", paso=inicio, obtenida=obtenido["last_lr"][0],
                   esperada=previo["last_lr"][0])
        contados = [p["last_epoch"] for p in tramo["pasos"]] + [tramo["last_epoch"]]
        primero = contados[0]
        if contados != list(range(primero, primero + len(contados))):
            fallar("scheduler_veces", veces=tramo["last_epoch"] - primero,
                   veces_esperadas=len(tramo["pasos"]))


def _reanudar_generador(caso):
    """Each resumed call's first forward pass finds the global generator as the previous
    call left it."""
    _, reanudados = _entrenada(caso)
    for _, inicio, _, tramo, previo in reanudados:
        if tramo["rng"][0] == previo["rng_final"]:
            continue
        if tramo["rng"][0] == previo["rng"][0]:
            fallar("rng_al_empezar", paso=inicio)
        fallar("rng_no_restaurado", paso=inicio)


def _reanudar_igual(caso):
    """Each resumed call takes the batches that were left, to ``stop``, and the last one
    ends where the uninterrupted run ended."""
    seguida, reanudados = _entrenada(caso)
    for _, inicio, fin, tramo, _ in reanudados:
        if tramo["lotes"][0] != inicio:
            fallar("reanuda_en_otro_lote", paso=inicio, lote=tramo["lotes"][0])
        if tramo["lotes"] != list(range(inicio, fin)) or len(tramo["pasos"]) != fin - inicio:
            fallar("pasos_reanudados", paso=inicio, stop=fin, pasos=len(tramo["pasos"]),
                   esperados=fin - inicio)
        if not cerca(_serie(tramo["perdidas"]), _serie(seguida["perdidas"][inicio:fin])):
            fallar("reanudacion_distinta", paso=inicio, que="la pérdida de los pasos reanudados")
    _, inicio, _, ultimo, _ = reanudados[-1]
    for nombre, clave in (("los parámetros al final", "final"),
                          ("el estado del optimizador al final", "optimizador")):
        if ultimo[clave].shape != seguida[clave].shape or not cerca(ultimo[clave],
                                                                   seguida[clave]):
            fallar("reanudacion_distinta", paso=inicio, que=nombre)
    if ultimo["last_lr"] != seguida["last_lr"] and not cerca(
            _serie(ultimo["last_lr"]), _serie(seguida["last_lr"])):
        fallar("reanudacion_distinta", paso=inicio, que="la tasa al final")


TRAIN_STEPS = Ejercicio(
    funcion="train_steps",
    partes=[
        Parte("sin state: un paso por lote hasta stop (pérdidas, tasas, parámetros)", 0.75,
              _seguida_sin_estado),
        Parte("reanudar: pesos del modelo (el estado se carga y es una copia)", 0.5,
              _reanudar_modelo),
        Parte("reanudar: estado del optimizador (momentos, step, lr)", 0.75,
              _reanudar_optimizador),
        Parte("reanudar: planificador (last_epoch y su última tasa)", 0.5,
              _reanudar_planificador),
        Parte("reanudar: generador aleatorio global (Dropout)", 0.75, _reanudar_generador),
        Parte("reanudar: los lotes que faltan y el mismo final que sin interrumpir", 0.75,
              _reanudar_igual),
    ],
    construir=construir_reanudacion, observar=observar_reanudacion)


def entrenamiento_seguido(model, optimizer, scheduler, loss_fn, batches, stop, nuevos, cortes,
                          semilla):
    """The public oracle: the uninterrupted run written out, from the same global seed."""
    generador = torch.get_rng_state()
    torch.manual_seed(semilla)
    perdidas, lrs = [], []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for x, y in batches[:stop]:
                lrs.append([g["lr"] for g in optimizer.param_groups])
                perdida = loss_fn(model(x), y)
                perdidas.append(perdida.item())
                perdida.backward()
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
    finally:
        torch.set_rng_state(generador)
    return {"perdidas": perdidas, "lrs": lrs, "parametros": _plano_modelo(model),
            "last_epoch": scheduler.last_epoch}


def comprobar_train_steps(train_steps):
    """Comprobación pública: AdamW, calentamiento lineal y coseno, Dropout; 8 pasos de un
    tirón frente a 3 + 3 + 2 con dos interrupciones (guardar, cargar con
    ``weights_only=True``, objetos nuevos con otros pesos)."""
    caso = caso_en_proceso(TRAIN_STEPS, train_steps, 8,
                           ((3, 6, 8), 9, 6, 4, 6, 3, 0.3, "adamw", "secuencial", 4),
                           entrenamiento_seguido)
    comprobar(TRAIN_STEPS.partes, caso,
              "Reanudar dos veces da lo mismo que entrenar de un tirón: pérdidas, parámetros, "
              "optimizador, planificador y generador.")


# In notebook order.
EJERCICIOS = ejercicios(EVALUATE, WARMUP_COSINE, TRAIN_ONE_EPOCH, TRAIN_STEPS)
