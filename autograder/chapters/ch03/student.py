"""Chapter 3: how each exercise is built, observed and scored, and its public checks.

Injected into the chapter 3 student notebook by the build; the hidden tests use the
same exercises on other inputs against the reference. The public oracles compute the
full-batch gradients with autograd and apply SGD and clipping by their formulas, never
with the reference's loop, so reading this code does not give the answers away.
"""

import copy

import torch

from autograder.student.compare import (
    Ejercicio,
    Parte,
    caso_en_proceso,
    comparar,
    comprobar,
    ejercicios,
    exigir,
    fallar,
    fotografiar,
    observar_llamada,
    verificar_intactas,
)
from autograder.student.diagnosis import cerca, diagnosticar_lista, diagnosticar_tensor
from autograder.student.messages import registrar

__all__ = ["comprobar_accumulate_gradients", "comprobar_train_with_accumulation",
           "comprobar_clipped_step"]

# id -> (title, Spanish explanation, Spanish hint, English explanation)
MENSAJES = {
    "grad_previo_sin_borrar": (
        "Gradientes viejos en .grad",
        "`{nombre}` es el gradiente correcto más lo que `.grad` ya tenía antes de llamar a tu "
        "función: los gradientes del paso anterior se colaron en este.",
        "Empieza con `model.zero_grad()` (u `optimizer.zero_grad()`) antes del primer "
        "`backward()`: `backward()` suma sobre lo que encuentre en `.grad`.",
        "`{nombre}` is the right gradient plus what .grad held before the call (zero it first)."),
    "zero_grad_en_cada_micro_lote": (
        "zero_grad dentro del bucle de micro-lotes",
        "`{nombre}` es solo la contribución del último micro-lote: al poner los gradientes a "
        "cero antes de cada micro-lote borraste lo que habías acumulado.",
        "Pon los gradientes a cero una vez por paso del optimizador, antes del primer "
        "micro-lote, no dentro del bucle.",
        "`{nombre}` holds only the last micro-batch: gradients were zeroed inside the loop."),
    "micro_lotes_incorrectos": (
        "Micro-lotes incorrectos",
        "El modelo recibió {llamadas} lote(s), de {tamanos} filas; se esperaban {accum} "
        "micro-lotes de {tamano} filas.",
        "Parte `x` e `y` en `accum` trozos iguales (`x.chunk(accum)`) y haz un pase hacia "
        "adelante por trozo: el lote entero nunca pasa de una vez por el modelo.",
        "The model ran {llamadas} times on {tamanos} rows; expected {accum} calls on {tamano}."),
    "ciclo_final_olvidado": (
        "Ciclo final olvidado",
        "Los últimos {resto} micro-lotes no llegaron a ningún paso del optimizador: {lotes} "
        "micro-lotes no son un múltiplo de `accum = {accum}` y el bucle solo da un paso cada "
        "`accum`.",
        "Da también un paso tras el último micro-lote, aunque su ciclo esté incompleto: "
        "`if (i + 1) % accum == 0 or i + 1 == len(batches)`.",
        "The last {resto} micro-batches never reached an optimizer step (partial cycle)."),
    "ciclo_final_dividido_por_accum": (
        "Ciclo final dividido por accum",
        "`{nombre}` es {razon:.3g} × el valor correcto: el último ciclo tiene menos "
        "micro-lotes que `accum` y dividiste su pérdida por `accum`.",
        "En el ciclo final incompleto, divide la pérdida por el número de micro-lotes que "
        "tiene de verdad.",
        "`{nombre}` is {razon:.3g} × the expected value: the partial cycle divided by accum."),
    "pasos_del_optimizador": (
        "Número de pasos del optimizador",
        "`optimizer.step()` se ejecutó {veces} veces; se esperaban {esperados}.",
        "Cuenta los pasos: uno por ciclo de acumulación (el ciclo final incompleto también "
        "cuenta), ni uno por micro-lote ni dos por ciclo; sin acumulación, uno solo.",
        "optimizer.step() ran {veces} times; expected {esperados}."),
    "recorte_fuera_de_sitio": (
        "Recorte fuera de sitio",
        "`optimizer.step()` usó los gradientes sin recortar: el recorte llegó tarde (después "
        "de `step`) o demasiado pronto (antes de `backward`, cuando aún no había gradientes).",
        "El orden es `loss.backward()`, `clip_grad_norm_(...)`, `optimizer.step()`.",
        "optimizer.step() used unclipped gradients: clipping ran after step or before backward."),
    "recorte_por_parametro": (
        "Recorte parámetro a parámetro",
        "Recortaste la norma de cada parámetro por separado; `clip_grad_norm_` mide la norma "
        "conjunta de todos los gradientes y los escala a todos por el mismo factor.",
        "Llama una sola vez, con todos los parámetros: "
        "`clip_grad_norm_(model.parameters(), max_norm)`.",
        "Each parameter was clipped on its own; the total norm of all gradients was expected."),
    "recorte_por_valor": (
        "Recorte por valor",
        "Recortaste cada componente a [−max_norm, max_norm] (`clip_grad_value_`); se pedía "
        "recortar la norma global.",
        "Usa `torch.nn.utils.clip_grad_norm_`: reescala todos los gradientes por el mismo "
        "factor y conserva su dirección.",
        "Gradients were clipped by value; clipping by the total norm was expected."),
    "norma_tras_recorte": (
        "Norma después del recorte",
        "Devolviste {valor:.4g}, la norma después de recortar (igual a `max_norm`); se pedía "
        "la de antes.",
        "`clip_grad_norm_` ya devuelve la norma previa al recorte: guárdala y devuélvela.",
        "The returned norm ({valor:.4g}) is the post-clipping one; the pre-clip norm was asked."),
}
registrar(MENSAJES)


# ---------------------------------------------------------------- shared helpers
def red_pequena(generador, D, H, K):
    """A small float64 Linear–Tanh–Linear model whose weights come from ``generador``."""
    modelo = torch.nn.Sequential(torch.nn.Linear(D, H), torch.nn.Tanh(), torch.nn.Linear(H, K))
    modelo = modelo.double()
    with torch.no_grad():
        for p in modelo.parameters():
            p.copy_(torch.randn(p.shape, generator=generador, dtype=torch.float64))
    return modelo


def datos(generador, tipo, N, D, K):
    """(x, y, loss_fn): regression with MSE (``tipo`` "mse") or K-class cross-entropy ("ce")."""
    x = torch.randn(N, D, generator=generador, dtype=torch.float64)
    if tipo == "ce":
        return x, torch.randint(0, K, (N,), generator=generador), torch.nn.CrossEntropyLoss()
    y = 2 * torch.randn(N, K, generator=generador, dtype=torch.float64)
    return x, y, torch.nn.MSELoss()


def tipo_registrado(valor):
    """How a logged value came back: "numero", "grafo" (tensor with grad_fn), "tensor"..."""
    if isinstance(valor, torch.Tensor):
        return "grafo" if valor.grad_fn is not None else "tensor"
    if type(valor) in (int, float):
        return "numero"
    return type(valor).__name__


def _copiar_grads(parametros):
    return [None if p.grad is None else p.grad.detach().clone() for p in parametros]


def _llamar_guardando(funcion, entradas):
    """observar_llamada, plus the raw value the student returned (to tell its type)."""
    crudo = {}

    def guardar(*args):
        crudo["valor"] = funcion(*args)
        return crudo["valor"]

    return observar_llamada(guardar, *entradas.values()), crudo.get("valor")


def espiar_pasos(optimizador, parametros):
    """Record the gradients each ``optimizer.step()`` sees; returns (list, hook handle)."""
    pasos = []

    def antes_del_paso(opt, args, kwargs):
        pasos.append(_copiar_grads(parametros))

    return pasos, optimizador.register_step_pre_hook(antes_del_paso)


def _todos_cerca(obtenidos, esperados):
    return (obtenidos is not None and esperados is not None and len(obtenidos) == len(esperados)
            and all(type(o) is torch.Tensor and o.shape == e.shape and o.dtype == e.dtype
                    and cerca(o, e) for o, e in zip(obtenidos, esperados)))


def _sumar(a, b):
    return [x + y for x, y in zip(a, b)]


def comparar_gradientes(donde, obtenidos, esperados, factores=None):
    """Item by item, each named "el `.grad` del parámetro i" + ``donde``."""
    if type(obtenidos) not in (list, tuple) or len(obtenidos) != len(esperados):
        exigir(diagnosticar_lista(f"los gradientes{donde}", obtenidos, esperados))
    for i, (obtenido, esperado) in enumerate(zip(obtenidos, esperados)):
        exigir(diagnosticar_tensor(f".grad del parámetro {i}{donde}", obtenido, esperado,
                                   factores))


def _numero(caso, nombre, aceptar_tensor=False):
    """The student's returned value as a float64 tensor, or a diagnosis of its type."""
    tipo, valor = caso.datos["tipo_resultado"], caso.resultado
    if tipo == "grafo" and not aceptar_tensor:
        fallar("grafo_vivo", nombre=nombre)
    if tipo in ("tensor", "grafo"):
        if not aceptar_tensor:
            fallar("registro_tensor", nombre=nombre)
        if valor.numel() != 1:
            fallar("tipo", nombre=nombre, esperado="un número (o un tensor de un elemento)",
                   tipo=f"tensor de forma {tuple(valor.shape)}")
        return valor.detach().double().reshape(())
    if tipo != "numero":
        fallar("tipo", nombre=nombre, esperado="un float de Python", tipo=tipo)
    return torch.tensor(float(valor), dtype=torch.float64)


# ---------------------------------------------------------- exercise 1: accumulate_gradients
def construir_acumulacion(generador, forma):
    """model, loss_fn, x, y, accum for ``forma`` = (tipo, m, accum, D, H, K): N = m·accum rows.

    The parameters arrive with stale gradients in ``.grad``, as after an earlier step.
    """
    tipo, m, accum, D, H, K = forma
    modelo = red_pequena(generador, D, H, K)
    x, y, loss_fn = datos(generador, tipo, m * accum, D, K)
    for p in modelo.parameters():
        p.grad = torch.randn(p.shape, generator=generador, dtype=torch.float64)
    return {"model": modelo, "loss_fn": loss_fn, "x": x, "y": y, "accum": accum}


def observar_acumulacion(accumulate_gradients, entradas):
    """Returned loss and its type, each parameter's .grad afterwards, the forward batch sizes."""
    modelo = entradas["model"]
    tamanos = []
    gancho = modelo.register_forward_pre_hook(lambda modulo, args: tamanos.append(
        int(args[0].shape[0]) if args and isinstance(args[0], torch.Tensor) else -1))
    try:
        observacion, crudo = _llamar_guardando(accumulate_gradients, entradas)
    finally:
        gancho.remove()
    observacion.update(tipo_resultado=tipo_registrado(crudo), tamanos=tamanos,
                       gradientes=_copiar_grads(list(modelo.parameters())),
                       despues=fotografiar(entradas))
    return observacion


def contexto_acumulacion(forma):
    accum = forma[2]
    return {"accum": accum, "tamano": forma[1], "factores": {"sin_dividir_por_accum": accum}}


def _gradientes_acumulados(caso):
    obtenidos, esperado = caso.datos["gradientes"], caso.datos["esperado"]
    if all(g is None for g in obtenidos):
        fallar("none_sin_backward", nombre=".grad")
    if _todos_cerca(obtenidos, _sumar(esperado["gradientes"], esperado["previos"])):
        fallar("grad_previo_sin_borrar", nombre=".grad")
    if _todos_cerca(obtenidos, esperado["ultimo"]):
        fallar("zero_grad_en_cada_micro_lote", nombre=".grad")
    comparar_gradientes("", obtenidos, esperado["gradientes"], caso.datos["factores"])


def _perdida_del_lote(caso):
    valor = _numero(caso, "la pérdida devuelta")
    comparar("la pérdida devuelta", valor, caso.datos["esperado"]["perdida"],
             caso.datos["factores"])


def _micro_lotes(caso):
    tamanos, accum, tamano = caso.datos["tamanos"], caso.datos["accum"], caso.datos["tamano"]
    if tamanos != [tamano] * accum:
        fallar("micro_lotes_incorrectos", llamadas=len(tamanos), tamanos=str(tamanos), accum=accum,
               tamano=tamano)


ACCUMULATE_GRADIENTS = Ejercicio(
    funcion="accumulate_gradients",
    partes=[
        Parte("gradientes del lote completo en .grad", 1.5, _gradientes_acumulados),
        Parte("devuelve la pérdida del lote completo (un float)", 0.5, _perdida_del_lote),
        Parte("accum pases hacia adelante de N/accum filas", 0.5, _micro_lotes),
        Parte("parámetros, x e y intactos", 0.5, verificar_intactas, requisito=True),
    ],
    construir=construir_acumulacion, observar=observar_acumulacion,
    contexto=contexto_acumulacion)


def gradientes_del_lote_completo(model, loss_fn, x, y, accum):
    """The public oracle: one backward over the whole batch (what accumulation must equal)."""
    parametros = list(model.parameters())
    m = x.shape[0] // accum
    with torch.enable_grad():
        perdida = loss_fn(model(x), y)
        gradientes = torch.autograd.grad(perdida, parametros)
        ultimo = torch.autograd.grad(loss_fn(model(x[-m:]), y[-m:]) / accum, parametros)
    return {"gradientes": list(gradientes), "perdida": perdida.detach(),
            "previos": _copiar_grads(parametros), "ultimo": list(ultimo)}


def comprobar_accumulate_gradients(accumulate_gradients):
    """Public check: accumulated gradients against one backward over the whole batch."""
    caso = caso_en_proceso(ACCUMULATE_GRADIENTS, accumulate_gradients, 1, ("mse", 2, 4, 3, 5, 2),
                           gradientes_del_lote_completo)
    comprobar(ACCUMULATE_GRADIENTS.partes, caso,
              "Tus gradientes acumulados son los del lote completo (en este ejemplo).")


# ------------------------------------------------------- exercise 2: train_with_accumulation
TASA = 0.1


def construir_ciclos(generador, forma):
    """model, loss_fn, optimizer (SGD), batches, accum for ``forma`` =
    (tipo, lotes, m, accum, D, H, K): ``lotes`` micro-batches of m rows each."""
    tipo, lotes, m, accum, D, H, K = forma
    modelo = red_pequena(generador, D, H, K)
    batches = []
    for _ in range(lotes):
        x, y, loss_fn = datos(generador, tipo, m, D, K)
        batches.append((x, y))
    return {"model": modelo, "loss_fn": loss_fn,
            "optimizer": torch.optim.SGD(modelo.parameters(), lr=TASA),
            "batches": batches, "accum": accum}


def observar_ciclos(train_with_accumulation, entradas):
    """Returned losses and their types, the gradients each step saw, parameters afterwards."""
    parametros = list(entradas["model"].parameters())
    pasos, gancho = espiar_pasos(entradas["optimizer"], parametros)
    try:
        observacion, crudo = _llamar_guardando(train_with_accumulation, entradas)
    finally:
        gancho.remove()
    tipos = [tipo_registrado(v) for v in crudo] if type(crudo) in (list, tuple) else []
    observacion.update(pasos=pasos, tipos=tipos, despues=fotografiar(entradas))
    return observacion


def contexto_ciclos(forma):
    lotes, accum = forma[1], forma[3]
    return {"lotes": lotes, "accum": accum, "completos": lotes // accum,
            "resto": lotes % accum}


def _gradientes_del_paso(caso, k):
    pasos, esperados = caso.datos["pasos"], caso.datos["esperado"]["pasos"]
    if k > 0 and _todos_cerca(pasos[k], _sumar(esperados[k], esperados[k - 1])):
        fallar("zero_grad_ausente")
    if k == 0 and _todos_cerca(pasos[0], caso.datos["esperado"]["ultimo_del_ciclo"]):
        fallar("zero_grad_en_cada_micro_lote", nombre=".grad en el paso 1")
    factores = {"sin_dividir_por_accum": caso.datos["accum"]}
    if k == caso.datos["completos"]:  # the final, partial cycle
        resto = caso.datos["resto"]
        factores = {"ciclo_final_dividido_por_accum": resto / caso.datos["accum"],
                    "sin_dividir_por_accum": resto}
    comparar_gradientes(f" en el paso {k + 1}", pasos[k], esperados[k], factores)


def _numero_de_pasos(caso):
    veces, esperados = len(caso.datos["pasos"]), len(caso.datos["esperado"]["pasos"])
    if veces == 0:
        fallar("sin_step")
    if veces != esperados:
        fallar("pasos_del_optimizador", veces=veces, esperados=esperados)


def _ciclos_completos(caso):
    if len(caso.datos["pasos"]) > len(caso.datos["esperado"]["pasos"]):
        _numero_de_pasos(caso)
    if len(caso.datos["pasos"]) < caso.datos["completos"]:
        _numero_de_pasos(caso)
    for k in range(caso.datos["completos"]):
        _gradientes_del_paso(caso, k)


def _ciclo_final(caso):
    if caso.datos["resto"] and len(caso.datos["pasos"]) == caso.datos["completos"]:
        fallar("ciclo_final_olvidado", resto=caso.datos["resto"], lotes=caso.datos["lotes"],
               accum=caso.datos["accum"])
    _numero_de_pasos(caso)
    if caso.datos["resto"]:
        _gradientes_del_paso(caso, caso.datos["completos"])
    claves = [c for c in caso.datos["originales"] if c.startswith("model.")]
    for clave, esperado in zip(claves, caso.datos["esperado"]["parametros"]):
        comparar(f"el parámetro {clave} al final", caso.datos["despues"][clave]["valores"],
                 esperado)


def _perdidas_registradas(caso):
    resultado, esperadas = caso.resultado, caso.datos["esperado"]["perdidas"]
    if type(resultado) not in (list, tuple):
        fallar("tipo", nombre="el resultado", esperado="una lista de floats",
               tipo=resultado.get("__objeto__", "dict") if type(resultado) is dict
               else type(resultado).__name__)
    for tipo in caso.datos["tipos"]:
        if tipo == "grafo":
            fallar("grafo_vivo", nombre="las pérdidas registradas")
        if tipo == "tensor":
            fallar("registro_tensor", nombre="las pérdidas registradas")
        if tipo != "numero":
            fallar("tipo", nombre="cada pérdida registrada", esperado="un float", tipo=tipo)
    if len(resultado) != len(esperadas):
        fallar("longitud", nombre="la lista de pérdidas", longitud=len(resultado),
               longitud_esperada=len(esperadas))
    comparar("las pérdidas registradas", torch.tensor([float(v) for v in resultado],
                                                      dtype=torch.float64), esperadas)


TRAIN_WITH_ACCUMULATION = Ejercicio(
    funcion="train_with_accumulation",
    partes=[
        Parte("un paso cada accum micro-lotes, con el gradiente medio del ciclo", 1.5,
              _ciclos_completos),
        Parte("ciclo final incompleto: un paso más, con su propia media", 1.0, _ciclo_final),
        Parte("una pérdida (float) por paso: la media de su ciclo", 0.5, _perdidas_registradas),
    ],
    construir=construir_ciclos, observar=observar_ciclos, contexto=contexto_ciclos)


def ultimo_micro_lote_del_primer_ciclo(model, loss_fn, batches, accum):
    """What the first step sees when .grad is zeroed before every micro-batch: the last
    micro-batch of the first cycle, its loss divided by accum."""
    xb, yb = batches[accum - 1]
    with torch.enable_grad():
        return list(torch.autograd.grad(loss_fn(model(xb), yb) / accum,
                                        list(model.parameters())))


def ciclos_con_lotes_unidos(model, loss_fn, optimizer, batches, accum):
    """The public oracle: each cycle's micro-batches joined into one batch, SGD by hand."""
    ultimo = ultimo_micro_lote_del_primer_ciclo(model, loss_fn, batches, accum)
    modelo = copy.deepcopy(model)
    parametros = list(modelo.parameters())
    lr = optimizer.param_groups[0]["lr"]
    pasos, perdidas = [], []
    for inicio in range(0, len(batches), accum):
        ciclo = batches[inicio:inicio + accum]
        x = torch.cat([xb for xb, _ in ciclo])
        y = torch.cat([yb for _, yb in ciclo])
        with torch.enable_grad():
            perdida = loss_fn(modelo(x), y)
            gradientes = torch.autograd.grad(perdida, parametros)
        with torch.no_grad():
            for p, g in zip(parametros, gradientes):
                p -= lr * g
        pasos.append(list(gradientes))
        perdidas.append(perdida.item())
    return {"pasos": pasos, "perdidas": torch.tensor(perdidas, dtype=torch.float64),
            "parametros": [p.detach().clone() for p in parametros], "ultimo_del_ciclo": ultimo}


def comprobar_train_with_accumulation(train_with_accumulation):
    """Public check: 11 micro-batches with accum = 4 (two full cycles and one of 3), then
    8 with accum = 4 (no partial cycle at all)."""
    caso = caso_en_proceso(TRAIN_WITH_ACCUMULATION, train_with_accumulation, 2,
                           ("mse", 11, 2, 4, 3, 5, 2), ciclos_con_lotes_unidos)
    comprobar(TRAIN_WITH_ACCUMULATION.partes, caso,
              "Cada paso ve la media de su ciclo, incluido el ciclo final incompleto.")
    caso = caso_en_proceso(TRAIN_WITH_ACCUMULATION, train_with_accumulation, 3,
                           ("ce", 8, 2, 4, 3, 5, 2), ciclos_con_lotes_unidos)
    comprobar(TRAIN_WITH_ACCUMULATION.partes, caso,
              "Y sin ciclo incompleto (8 micro-lotes, accum = 4), ni un paso de más.")


# ---------------------------------------------------------------- exercise 3: clipped_step
def construir_recorte(generador, forma):
    """model, loss_fn, optimizer (SGD), x, y, max_norm for ``forma`` = (tipo, N, D, H, K,
    razon): max_norm is ``razon`` times this batch's gradient norm (< 1: clipping happens).

    The parameters arrive with stale gradients in ``.grad``, as after an earlier step, so
    that a step that forgets to clear them shows it.
    """
    tipo, N, D, H, K, razon = forma
    modelo = red_pequena(generador, D, H, K)
    x, y, loss_fn = datos(generador, tipo, N, D, K)
    with torch.enable_grad():
        gradientes = torch.autograd.grad(loss_fn(modelo(x), y), list(modelo.parameters()))
    norma = torch.linalg.vector_norm(torch.cat([g.flatten() for g in gradientes])).item()
    for p in modelo.parameters():
        p.grad = torch.randn(p.shape, generator=generador, dtype=torch.float64)
    return {"model": modelo, "loss_fn": loss_fn,
            "optimizer": torch.optim.SGD(modelo.parameters(), lr=TASA),
            "x": x, "y": y, "max_norm": razon * norma}


def observar_recorte(clipped_step, entradas):
    """Returned norm and its type, the gradients step() saw, parameters afterwards."""
    pasos, gancho = espiar_pasos(entradas["optimizer"], list(entradas["model"].parameters()))
    try:
        observacion, crudo = _llamar_guardando(clipped_step, entradas)
    finally:
        gancho.remove()
    observacion.update(pasos=pasos, tipo_resultado=tipo_registrado(crudo),
                       despues=fotografiar(entradas))
    return observacion


def _gradientes_recortados(caso):
    pasos, esperado = caso.datos["pasos"], caso.datos["esperado"]
    if not pasos:
        fallar("sin_step")
    if len(pasos) != 1:
        fallar("pasos_del_optimizador", veces=len(pasos), esperados=1)
    obtenidos, correctos = pasos[0], esperado["gradientes"]
    if diagnosticar_lista("los gradientes", obtenidos, correctos) is None:
        return
    if _todos_cerca(obtenidos, esperado["sin_recortar"]):
        fallar("recorte_fuera_de_sitio")
    if _todos_cerca(obtenidos, esperado["sin_borrar"]):
        fallar("grad_previo_sin_borrar", nombre="el gradiente que vio `step()`")
    for alternativa in ("recorte_por_parametro", "recorte_por_valor"):
        if _todos_cerca(obtenidos, esperado.get(alternativa)):
            fallar(alternativa)
    comparar_gradientes(" al llamar a step()", obtenidos, correctos)


def _norma_devuelta(caso):
    valor = _numero(caso, "la norma devuelta", aceptar_tensor=True)
    esperado = caso.datos["esperado"]
    recortado = esperado["norma"].item() > esperado["max_norm"]
    # clip_grad_norm_ scales by max_norm / (norm + 1e-6): the norm after clipping is
    # max_norm to about 1e-6 / norm, relative (more than 1e-6 for a norm below 1).
    if recortado and abs(valor.item() - esperado["max_norm"]) <= 1e-4 * esperado["max_norm"]:
        fallar("norma_tras_recorte", valor=valor.item())
    exigir(diagnosticar_tensor("la norma devuelta", valor, esperado["norma"], rtol=1e-5))


def _un_paso_de_sgd(caso):
    verificar_intactas(caso, ("x", "y"))
    antes, despues = caso.datos["originales"], caso.datos["despues"]
    claves = [c for c in antes if c.startswith("model.")]
    if all(torch.equal(antes[c]["valores"], despues[c]["valores"]) for c in claves):
        fallar("sin_step")
    for clave, esperado in zip(claves, caso.datos["esperado"]["parametros"]):
        exigir(diagnosticar_tensor(f"la actualización de {clave}",
                                   despues[clave]["valores"] - antes[clave]["valores"],
                                   esperado - antes[clave]["valores"], rtol=1e-5))


CLIPPED_STEP = Ejercicio(
    funcion="clipped_step",
    partes=[
        Parte("optimizer.step() ve los gradientes recortados", 1.5, _gradientes_recortados),
        Parte("devuelve la norma de antes del recorte", 1.0, _norma_devuelta),
        Parte("un paso de SGD con esos gradientes; x e y intactos", 0.5, _un_paso_de_sgd),
    ],
    construir=construir_recorte, observar=observar_recorte)


def recortar(gradientes, max_norm):
    """``clip_grad_norm_``'s formula: every gradient times min(1, max_norm / (norm + 1e-6))."""
    norma = torch.sqrt(sum((g**2).sum() for g in gradientes))
    return [g * min(1.0, max_norm / (norma.item() + 1e-6)) for g in gradientes]


def recortes_equivocados(sin_recortar, max_norm, previos):
    """Classic clipping-step mistakes, to name them when a result matches one.

    ``previos``: the stale ``.grad`` the parameters arrived with (None: none).
    """
    sin_borrar = None if any(g is None for g in previos) else recortar(
        _sumar(previos, sin_recortar), max_norm)
    return {"recorte_por_parametro": [g * min(1.0, max_norm / (g.norm().item() + 1e-6))
                                      for g in sin_recortar],
            "recorte_por_valor": [g.clamp(-max_norm, max_norm) for g in sin_recortar],
            "sin_borrar": sin_borrar}


def recorte_a_mano(model, loss_fn, optimizer, x, y, max_norm):
    """The public oracle: autograd gradients, the clipping formula, SGD by hand."""
    parametros = list(model.parameters())
    with torch.enable_grad():
        sin_recortar = torch.autograd.grad(loss_fn(model(x), y), parametros)
    norma = torch.sqrt(sum((g**2).sum() for g in sin_recortar))
    recortados = recortar(sin_recortar, max_norm)
    lr = optimizer.param_groups[0]["lr"]
    return {"norma": norma, "max_norm": max_norm, "gradientes": recortados,
            "sin_recortar": list(sin_recortar),
            **recortes_equivocados(sin_recortar, max_norm, _copiar_grads(parametros)),
            "parametros": [p.detach() - lr * g for p, g in zip(parametros, recortados)]}


def comprobar_clipped_step(clipped_step):
    """Public check: one clipped SGD step on a small network."""
    caso = caso_en_proceso(CLIPPED_STEP, clipped_step, 3, ("mse", 8, 3, 5, 2, 0.25),
                           recorte_a_mano)
    comprobar(CLIPPED_STEP.partes, caso,
              "Recortas después de backward y antes de step, y devuelves la norma previa.")


# In notebook order.
EJERCICIOS = ejercicios(ACCUMULATE_GRADIENTS, TRAIN_WITH_ACCUMULATION, CLIPPED_STEP)
