"""Chapter 2: how each exercise is built, observed and scored, and its public checks.

Injected into the chapter 2 student notebook by the build; the hidden tests use the
same exercises on other inputs against the reference. What a call does to autograd
(tensors saved for backward, the grad mode it leaves behind, which parameters still
require grad) is observed here, in the student's kernel, and handed over as plain data.
The public oracles are finite differences, a softmax written out by hand and the
parameter names themselves, never the reference.
"""

from collections import OrderedDict

import torch

from autograder.student.compare import (
    ComprobacionFallida,
    Ejercicio,
    Parte,
    caso_en_proceso,
    comprobar,
    ejercicios,
    error_a_datos,
    exigir,
    fallar,
    fotografiar,
    observar_llamada,
    verificar_intactas,
)
from autograder.student.diagnosis import Diagnostico, cerca, diagnosticar_tensor
from autograder.student.messages import registrar

__all__ = ["comprobar_hidden_grad", "comprobar_predict", "comprobar_freeze_all_but_head"]

# id -> (title, Spanish explanation, Spanish hint, English explanation)
MENSAJES = {
    "gradiente_de_otro_intermedio": (
        "Gradiente de otro tensor intermedio",
        "`{nombre}` es el gradiente respecto de {otro}, no respecto de la activación oculta h.",
        "Llama a `retain_grad()` (o pide `torch.autograd.grad`) sobre h = model[1](model[0](x)), "
        "la salida de la Tanh, no sobre la salida de la capa lineal.",
        "`{nombre}` is the gradient w.r.t. {otro}, not w.r.t. the hidden activation h."),
    "prediccion_con_grafo": (
        "Predicción con grafo",
        "La salida de tu función tiene `grad_fn` (o `requires_grad=True`): el pase hacia "
        "adelante se registró en un grafo.",
        "Haz el pase hacia adelante dentro de `with torch.inference_mode():` (o "
        "`torch.no_grad()`). Ojo: `torch.no_grad()` sin `with` no hace nada.",
        "The prediction has a grad_fn: the forward pass was recorded in a graph."),
    "salida_sin_modelo": (
        "La salida no sale del modelo",
        "Tu función devuelve {que}: no es una predicción calculada con el modelo, así que "
        "tampoco cuenta como una predicción hecha sin grafo.",
        "Calcula los logits con `model(x)` dentro de `torch.inference_mode()` (o "
        "`torch.no_grad()`) y aplica softmax sobre las clases.",
        "The output is {que}, not a prediction computed with the model."),
    "grafo_construido_y_descartado": (
        "Grafo construido y descartado",
        "La salida no tiene grafo, pero durante la llamada se guardaron {n} tensores "
        "({kib:.1f} KiB) para un pase hacia atrás que nunca llega: `detach()` al final corta "
        "el grafo después de haber pagado su memoria y su tiempo.",
        "No registres nada desde el principio: envuelve el pase hacia adelante en "
        "`torch.inference_mode()` o `torch.no_grad()` en lugar de hacer `detach()` al final.",
        "{n} tensors were saved for backward during the call: the graph was built, then "
        "detached."),
    "grad_desactivado_global": (
        "Gradientes desactivados para siempre",
        "Después de tu función, el cálculo de gradientes sigue desactivado en todo el proceso: "
        "el entrenamiento que venga después no construirá ningún grafo.",
        "`torch.set_grad_enabled(False)` como instrucción suelta cambia el estado global. Usa un "
        "bloque `with` (o el decorador), que lo restaura al salir.",
        "Grad mode was left disabled after the call (set_grad_enabled(False) without `with`)."),
    "modo_del_modelo_cambiado": (
        "Modo del modelo cambiado",
        "El modelo llegó en modo entrenamiento y tu función lo dejó en modo evaluación: quien "
        "lo use después entrenará sin Dropout y con la BatchNorm congelada.",
        "`no_grad`/`inference_mode` no necesitan `model.eval()`. Si lo llamas, guarda "
        "`estaba = model.training` al empezar y termina con `model.train(estaba)`.",
        "The model arrived in train mode and was left in eval mode."),
    "softmax_otra_dim": (
        "Softmax sobre el eje equivocado",
        "`{nombre}` es la softmax sobre las muestras del lote (dim=0): cada columna suma 1, "
        "no cada fila.",
        "Cada fila es una muestra y cada columna una clase: normaliza sobre las clases, "
        "`dim=1` (o `dim=-1`).",
        "`{nombre}` is the softmax over the batch (dim=0), not over the classes."),
    "prediccion_sin_softmax": (
        "Logits en vez de probabilidades",
        "`{nombre}` contiene las salidas crudas del modelo (*logits*), no probabilidades.",
        "Aplica `torch.softmax(..., dim=1)` a la salida del modelo.",
        "`{nombre}` holds the raw logits, not probabilities."),
    "cabeza_congelada": (
        "Cabeza congelada",
        "`{nombre}` es un parámetro de la cabeza y quedó con `requires_grad=False`: no se "
        "entrenaría nada.",
        "Congela solo lo que no es `model.head`; la cabeza debe seguir con `requires_grad=True`.",
        "`{nombre}` belongs to the head and was frozen."),
    "encoder_sin_congelar": (
        "Nada congelado",
        "Ningún parámetro fuera de la cabeza quedó congelado (por ejemplo `{nombre}` sigue con "
        "`requires_grad=True`): se calcularán sus gradientes y el optimizador los moverá.",
        "Congelar es `p.requires_grad_(False)` en cada parámetro. `torch.no_grad()` no congela "
        "nada: solo afecta a las operaciones dentro de su bloque.",
        "No parameter outside the head was frozen (e.g. `{nombre}`)."),
    "congelado_parcial": (
        "Congelado a medias",
        "{n} de {total} parámetros fuera de la cabeza siguen entrenables, por ejemplo `{nombre}`.",
        "Recorre `model.named_parameters()` entero: pesos y sesgos (*bias*), y todos los "
        "submódulos que no son `head`, no solo uno.",
        "{n} of {total} parameters outside the head still require grad (e.g. `{nombre}`)."),
    "cabeza_sin_descongelar": (
        "Cabeza sin descongelar",
        "`{nombre}` es un parámetro de la cabeza que llegó congelado (`requires_grad=False`) y "
        "sigue así: congelar el resto no basta, la cabeza tiene que quedar entrenable.",
        "No supongas que la cabeza llega entrenable: termina con "
        "`model.head.requires_grad_(True)` (o pon `requires_grad` a `True` en cada parámetro "
        "cuyo nombre empieza por `head.`).",
        "`{nombre}` belongs to the head, arrived frozen and was never unfrozen."),
    "ultimo_hijo_como_cabeza": (
        "El último submódulo no es la cabeza",
        "Dejaste entrenable `{hijo}`, el último submódulo del modelo, y congelaste `model.head`: "
        "la cabeza se reconoce por su nombre, no por su posición.",
        "Usa `model.head` (o los parámetros cuyo nombre empieza por `head.`), no "
        "`list(model.children())[-1]`.",
        "`{hijo}`, the last child module, was kept trainable instead of `model.head`."),
    "nombre_parecido_a_cabeza": (
        "Nombre parecido a «head»",
        "`{nombre}` no es de `model.head`, aunque su nombre contenga «head», y quedó entrenable.",
        "Un parámetro es de la cabeza si su nombre empieza por `head.` (con el punto), o "
        "recorre `model.head.parameters()`: `startswith('head')` o `'head' in name` también "
        "atrapan `heads_aux` o `encoder.head_proj`.",
        "`{nombre}` is not under `model.head` but its name contains 'head'; it stayed trainable."),
    "modo_cambiado": (
        "Modo train/eval cambiado",
        "`{nombre}` llegó en modo evaluación y tu función lo dejó en modo entrenamiento: "
        "entrenable (`requires_grad`) no es lo mismo que modo `train()`.",
        "Congelar y descongelar solo tocan `requires_grad`: no llames a `train()` ni a "
        "`eval()`, cada módulo debe quedar en el modo en que llegó.",
        "`{nombre}` arrived in eval mode and was left in train mode."),
    "nombres_entrenables": (
        "Nombres devueltos",
        "Devolviste {obtenidos}; se esperaban los nombres de los parámetros que siguen "
        "entrenables: {esperados}.",
        "Devuelve los nombres de los parámetros que siguen con `requires_grad=True` (los "
        "entrenables, no los congelados), completos como los da `model.named_parameters()`: "
        "`head.weight`, no `weight` ni `head`.",
        "Returned {obtenidos}; expected the trainable parameter names {esperados}."),
}
registrar(MENSAJES)


def _normal(generador, *forma, escala=1.0):
    return torch.randn(*forma, generator=generador, dtype=torch.float64) * escala


def _pesos_aleatorios(modelo, generador):
    """float64 copy of ``modelo`` with N(0, 0.5²) weights from ``generador``."""
    modelo = modelo.to(torch.float64)
    with torch.no_grad():
        for p in modelo.parameters():
            p.copy_(_normal(generador, *p.shape, escala=0.5))
    return modelo


def _tipo(nombre, objeto, esperado):
    fallar("tipo", nombre=nombre, esperado=esperado,
           tipo=objeto.get("__objeto__", "dict") if isinstance(objeto, dict) else
           type(objeto).__name__)


def _comparar_con_alternativas(nombre, obtenido, esperado, alternativas, factores=None):
    """Like ``comparar``, but a result equal to an alternative gets that alternative's id.

    ``alternativas`` maps a description to (tensor, diagnosis id).
    """
    diagnostico = diagnosticar_tensor(nombre, obtenido, esperado, factores)
    if diagnostico is not None and isinstance(obtenido, torch.Tensor):
        for descripcion, (otro, identificador) in alternativas.items():
            if otro is not None and otro.shape == obtenido.shape and cerca(obtenido, otro):
                fallar(identificador, nombre=nombre, otro=descripcion)
    exigir(diagnostico)


def _derivada_numerica(funcion, tensor, paso=1e-6):
    """Central differences of the scalar ``funcion`` at ``tensor``, entry by entry."""
    punto = tensor.detach().clone()
    derivada = torch.zeros_like(punto)
    for i in range(punto.numel()):
        desplazamiento = torch.zeros_like(punto).view(-1)
        desplazamiento[i] = paso
        desplazamiento = desplazamiento.view_as(punto)
        derivada.view(-1)[i] = (funcion(punto + desplazamiento)
                                - funcion(punto - desplazamiento)) / (2 * paso)
    return derivada


# ---------------------------------------------------------------- exercise 1: hidden_grad
def construir_intermedio(generador, forma):
    """model (Linear–Tanh–Linear), x (N, D), y (N, K) for ``forma`` = (N, D, H, K)."""
    N, D, H, K = forma
    modelo = torch.nn.Sequential(torch.nn.Linear(D, H), torch.nn.Tanh(), torch.nn.Linear(H, K))
    return {"model": _pesos_aleatorios(modelo, generador), "x": _normal(generador, N, D),
            "y": _normal(generador, N, K)}


def observar_intermedio(hidden_grad, entradas):
    observacion = observar_llamada(hidden_grad, *entradas.values())
    if observacion["error"] is None and observacion["resultado"] is None:
        # Here None nearly always is the .grad of a non-leaf read without retain_grad().
        observacion["error"] = error_a_datos(ComprobacionFallida(Diagnostico(
            "none_no_hoja", {"nombre": "el gradiente devuelto"})))
    observacion["despues"] = fotografiar(entradas)
    return observacion


def contexto_intermedio(forma):
    """The constant factor each wrong reduction of the MSE introduces, by diagnosis id."""
    N, K = forma[0], forma[3]
    return {"factores": {"suma_en_vez_de_media": N * K, "media_solo_sobre_lote": K,
                         "media_solo_sobre_salidas": N}}


def _gradiente_de_h(caso):
    esperado = caso.datos["esperado"]
    _comparar_con_alternativas(
        "dL/dh", caso.resultado, esperado["h"],
        {"la preactivación z = model[0](x)": (esperado["z"], "gradiente_de_otro_intermedio")},
        caso.datos["factores"])


HIDDEN_GRAD = Ejercicio(
    funcion="hidden_grad",
    partes=[
        Parte("dL/dh, el gradiente de la activación oculta", 1.5, _gradiente_de_h),
        Parte("entradas intactas (x, y y los valores de los parámetros)", 0.5,
              verificar_intactas, requisito=True),
    ],
    construir=construir_intermedio, observar=observar_intermedio, contexto=contexto_intermedio)


def gradientes_por_diferencias(model, x, y):
    """The public oracle: dL/dh and dL/dz by central differences (no autograd at all)."""
    with torch.no_grad():
        def perdida(salida):
            return ((salida - y) ** 2).mean()

        z = model[0](x)
        h = model[1](z)
        return {"h": _derivada_numerica(lambda t: perdida(model[2](t)), h),
                "z": _derivada_numerica(lambda t: perdida(model[2](model[1](t))), z)}


def comprobar_hidden_grad(hidden_grad):
    """Public check: your dL/dh against finite differences on one small network."""
    caso = caso_en_proceso(HIDDEN_GRAD, hidden_grad, 4, (4, 3, 5, 3), gradientes_por_diferencias)
    comprobar(HIDDEN_GRAD.partes, caso,
              "Tu dL/dh coincide con las diferencias finitas (en este ejemplo pequeño).")


# ---------------------------------------------------------------- exercise 2: predict
def construir_prediccion(generador, forma):
    """model (Linear–ReLU–Linear) and a batch x (N, D) for ``forma`` = (N, D, H, K)."""
    N, D, H, K = forma
    modelo = torch.nn.Sequential(torch.nn.Linear(D, H), torch.nn.ReLU(), torch.nn.Linear(H, K))
    return {"model": _pesos_aleatorios(modelo, generador), "x": _normal(generador, N, D)}


def observar_prediccion(predict, entradas):
    """The result, whether it carries a graph, what was saved for backward, side effects.

    The call runs with grad mode on (as inside a training script) under a
    ``saved_tensors_hooks`` that counts every tensor autograd stores for a backward pass.
    """
    guardados = []

    def empaquetar(tensor):
        guardados.append(tensor.numel() * tensor.element_size())
        return tensor

    salida = None
    modos_antes = [m.training for m in entradas["model"].modules()]
    pasadas = []
    gancho = entradas["model"].register_forward_hook(lambda *_: pasadas.append(1))

    def guardar(*args):
        nonlocal salida
        salida = predict(*args)
        return salida

    modo_previo = torch.is_grad_enabled()
    torch.set_grad_enabled(True)
    try:
        with torch.autograd.graph.saved_tensors_hooks(empaquetar, lambda tensor: tensor):
            observacion = observar_llamada(guardar, *entradas.values())
        observacion["grad_desactivado"] = not torch.is_grad_enabled()
    finally:
        torch.set_grad_enabled(modo_previo)
        gancho.remove()
    es_tensor = isinstance(salida, torch.Tensor)
    observacion.update(
        uso_el_modelo=bool(pasadas),
        salida_constante=es_tensor and salida.numel() > 1 and bool(
            salida.detach().eq(salida.detach().flatten()[0]).all()),
        salida_con_grafo=es_tensor and (salida.requires_grad or salida.grad_fn is not None),
        n_guardados=len(guardados), bytes_guardados=sum(guardados),
        grad_poblado=any(p.grad is not None for p in entradas["model"].parameters()),
        modo_cambiado=modos_antes != [m.training for m in entradas["model"].modules()],
        despues=fotografiar(entradas))
    return observacion


def _probabilidades(caso):
    esperado = caso.datos["esperado"]
    _comparar_con_alternativas(
        "la predicción", caso.resultado, esperado["probs"],
        {"softmax(dim=0)": (esperado["dim0"], "softmax_otra_dim"),
         "los logits": (esperado["logits"], "prediccion_sin_softmax")})


def _salida_del_modelo(caso):
    """The no-graph parts are about a real prediction: a constant, or a tensor made without
    calling the model, builds no graph by doing nothing, and earns nothing for it."""
    if not caso.datos["uso_el_modelo"]:
        fallar("salida_sin_modelo", que="un tensor calculado sin llamar al modelo")
    if caso.datos["salida_constante"]:
        fallar("salida_sin_modelo", que="el mismo valor en todas las posiciones")


def _salida_sin_grafo(caso):
    _salida_del_modelo(caso)
    if caso.datos["salida_con_grafo"]:
        fallar("prediccion_con_grafo")


def _nada_guardado(caso):
    _salida_del_modelo(caso)
    if caso.datos["n_guardados"] > 0:
        fallar("grafo_construido_y_descartado", n=caso.datos["n_guardados"],
               kib=caso.datos["bytes_guardados"] / 1024)


def _sin_efectos_prediccion(caso):
    verificar_intactas(caso)
    if caso.datos["grad_desactivado"]:
        fallar("grad_desactivado_global")
    if caso.datos["grad_poblado"]:
        fallar("grad_poblado")
    if caso.datos["modo_cambiado"]:
        fallar("modo_del_modelo_cambiado")


PREDICT = Ejercicio(
    funcion="predict",
    partes=[
        Parte("probabilidades (softmax sobre las clases)", 1.0, _probabilidades),
        Parte("la salida no tiene grafo (sin grad_fn, requires_grad=False)", 0.5,
              _salida_sin_grafo),
        Parte("no se guarda nada para backward durante la llamada", 1.0, _nada_guardado),
        Parte("sin efectos: modelo intacto (y en su modo), modo de gradientes restaurado", 0.5,
              _sin_efectos_prediccion, requisito=True),
    ],
    construir=construir_prediccion, observar=observar_prediccion)


def probabilidades_a_mano(model, x):
    """The public oracle: exp and normalise, written out (and the usual wrong answers)."""
    with torch.no_grad():
        logits = model(x)
        e_filas = torch.exp(logits - logits.max(dim=1, keepdim=True).values)
        e_columnas = torch.exp(logits - logits.max(dim=0, keepdim=True).values)
        return {"probs": e_filas / e_filas.sum(dim=1, keepdim=True),
                "dim0": e_columnas / e_columnas.sum(dim=0, keepdim=True), "logits": logits}


def comprobar_predict(predict):
    """Public check: probabilities, no graph in the output, nothing saved for backward."""
    caso = caso_en_proceso(PREDICT, predict, 5, (5, 4, 6, 3), probabilidades_a_mano)
    comprobar(PREDICT.partes, caso,
              "Probabilidades correctas y ni un solo tensor guardado para backward.")


# ---------------------------------------------------------------- exercise 3: freeze_all_but_head
def _cabeza(tipo, H, K):
    if tipo == "lineal":
        return torch.nn.Linear(H, K)
    if tipo == "mlp":
        return torch.nn.Sequential(torch.nn.Linear(H, H), torch.nn.ReLU(), torch.nn.Linear(H, K))
    return torch.nn.Sequential(torch.nn.LayerNorm(H), torch.nn.Linear(H, K, bias=False))


def construir_congelar(generador, forma):
    """embed → encoder (``capas`` blocks) → head, for ``forma`` = (D, H, capas, K, cabeza) or
    (D, H, capas, K, cabeza, "trampas").

    With "trampas" the model also holds what a shortcut gets wrong: a head that arrives
    frozen and in eval mode, an ``encoder.head_proj`` and a ``pool`` that are not the head,
    and a ``heads_aux`` registered after the head (so the head is not the last child).
    """
    D, H, capas, K, cabeza, *extra = forma
    trampas = "trampas" in extra
    bloques = []
    for _ in range(capas):
        bloques += [torch.nn.Linear(H, H), torch.nn.ReLU()]
    encoder = torch.nn.Sequential(*bloques)
    partes = OrderedDict(embed=torch.nn.Linear(D, H), encoder=encoder)
    if trampas:
        encoder.add_module("head_proj", torch.nn.Linear(H, H))
        partes["pool"] = torch.nn.LayerNorm(H)
    partes["head"] = _cabeza(cabeza, H, K)
    if trampas:
        partes["heads_aux"] = torch.nn.Linear(H, K)
    modelo = _pesos_aleatorios(torch.nn.Sequential(partes), generador)
    if trampas:
        modelo.head.requires_grad_(False)
        modelo.head.eval()
    return {"model": modelo}


def contexto_congelar(forma):
    """What the model looks like on arrival (built here, on the trusted side)."""
    modelo = construir_congelar(torch.Generator().manual_seed(0), forma)["model"]
    return {"congeladas_antes": [n for n, p in modelo.named_parameters() if not p.requires_grad],
            "en_eval_antes": [n or "model" for n, m in modelo.named_modules() if not m.training]}


def observar_congelar(freeze_all_but_head, entradas):
    """The result, then which parameters require grad, every module's mode, the values."""
    modelo = entradas["model"]
    observacion = observar_llamada(freeze_all_but_head, modelo)
    observacion["requires_grad"] = {n: p.requires_grad for n, p in modelo.named_parameters()}
    observacion["en_eval"] = [n or "model" for n, m in modelo.named_modules() if not m.training]
    observacion["despues"] = fotografiar(entradas)
    return observacion


def _parecido_a_cabeza(nombre):
    return "head" in nombre and nombre.split(".")[0] != "head"


def _solo_la_cabeza(caso):
    entrenables = set(caso.datos["esperado"])
    estado = caso.datos["requires_grad"]
    congeladas = sorted(n for n in entrenables if not estado.get(n, False))
    resto = [n for n in estado if n not in entrenables]
    sueltos = [n for n in resto if estado[n]]
    ultimo = list(estado)[-1].split(".")[0] if estado else "head"
    if congeladas and sueltos and ultimo != "head" and all(
            n.split(".")[0] == ultimo for n in sueltos):
        fallar("ultimo_hijo_como_cabeza", hijo=ultimo)
    if sueltos and len(sueltos) == len(resto):
        fallar("encoder_sin_congelar", nombre=sueltos[0])
    if sueltos and all(_parecido_a_cabeza(n) for n in sueltos):
        fallar("nombre_parecido_a_cabeza", nombre=sueltos[0])
    if sueltos:
        fallar("congelado_parcial", nombre=sueltos[0], n=len(sueltos), total=len(resto))
    if congeladas and set(congeladas) <= set(caso.datos.get("congeladas_antes", ())):
        fallar("cabeza_sin_descongelar", nombre=congeladas[0])
    if congeladas:
        fallar("cabeza_congelada", nombre=congeladas[0])


def _nombres_devueltos(caso):
    resultado, esperados = caso.resultado, list(caso.datos["esperado"])
    if type(resultado) not in (list, tuple) or not all(type(n) is str for n in resultado):
        _tipo("el resultado", resultado, "una lista de nombres (str)")
    if sorted(resultado) != sorted(esperados):
        fallar("nombres_entrenables", obtenidos=list(resultado)[:6], esperados=esperados)


def _modelo_intacto(caso):
    for nombre, antes in caso.datos["originales"].items():
        despues = caso.datos["despues"].get(nombre)
        if despues is None or not torch.equal(despues["valores"], antes["valores"]):
            fallar("modificada", nombre=nombre)
    antes, despues = caso.datos.get("en_eval_antes", []), caso.datos["en_eval"]
    if set(despues) - set(antes):
        fallar("modelo_en_eval")
    for nombre in antes:
        if nombre not in despues:
            fallar("modo_cambiado", nombre=nombre)


FREEZE_ALL_BUT_HEAD = Ejercicio(
    funcion="freeze_all_but_head",
    partes=[
        Parte("solo la cabeza queda entrenable (requires_grad)", 1.0, _solo_la_cabeza),
        Parte("nombres de los parámetros entrenables", 0.5, _nombres_devueltos),
        Parte("valores y modo train/eval intactos", 0.5, _modelo_intacto, requisito=True),
    ],
    construir=construir_congelar, observar=observar_congelar,
    contexto=contexto_congelar)


def nombres_de_la_cabeza(model):
    """The public oracle: every parameter whose name lives under ``head``."""
    return [n for n, _ in model.named_parameters() if n.split(".")[0] == "head"]


def comprobar_freeze_all_but_head(freeze_all_but_head):
    """Public check: only the head trainable, the right names, nothing else touched; on a
    plain model, then on one whose head arrives frozen, with modules named like it."""
    caso = caso_en_proceso(FREEZE_ALL_BUT_HEAD, freeze_all_but_head, 6, (4, 6, 2, 3, "lineal"),
                           nombres_de_la_cabeza)
    comprobar(FREEZE_ALL_BUT_HEAD.partes, caso,
              "Solo la cabeza sigue entrenable y devolviste sus nombres.")
    caso = caso_en_proceso(FREEZE_ALL_BUT_HEAD, freeze_all_but_head, 7,
                           (4, 6, 2, 3, "mlp", "trampas"), nombres_de_la_cabeza)
    comprobar(FREEZE_ALL_BUT_HEAD.partes, caso,
              "También cuando la cabeza llega congelada (y en modo eval) y otros módulos se "
              "llaman parecido (`heads_aux`, `encoder.head_proj`).")


# In notebook order.
EJERCICIOS = ejercicios(HIDDEN_GRAD, PREDICT, FREEZE_ALL_BUT_HEAD)
