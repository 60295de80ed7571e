"""Chapter 1: how each exercise is built, observed and scored, and its public checks.

Injected into the chapter 1 student notebook by the build; the hidden tests use the
same exercises on other inputs against the reference (at grading time the student's
function is observed in the student's kernel and scored in the grader's process).
The public oracles are autograd or finite differences, never the reference, so
reading this code does not give the answers away.
"""

import copy

import torch
from torch.overrides import TorchFunctionMode

from autograder.student.compare import (
    Ejercicio,
    Parte,
    cambios,
    caso_en_proceso,
    comprobar,
    ejercicios,
    estado,
    exigir,
    fallar,
    llamar,
    observar_llamada,
)
from autograder.student.diagnosis import (
    Diagnostico,
    cerca,
    diagnosticar_tensor,
    mayor_magnitud,
)
from autograder.student.messages import registrar

__all__ = ["comprobar_manual_backward", "comprobar_two_loss_grads", "comprobar_gradient_penalty"]

NOMBRES_PARAMETROS = ("W1", "b1", "W2", "b2")

# id -> (title, Spanish explanation, Spanish hint, English explanation)
MENSAJES = {
    "usa_autograd": (
        "Autograd en un cálculo a mano",
        "Tu función usó autograd ({que}); el ejercicio pide aplicar la regla de la cadena a "
        "mano, con operaciones de tensores.",
        "Se te llama dentro de `torch.no_grad()`, y así debe seguir: nada de `enable_grad`, "
        "`set_grad_enabled`, `backward` ni `torch.autograd.grad`. ¿Qué operación de tensores da "
        "cada eslabón de la regla de la cadena?",
        "Your function used autograd ({que}); the gradients must be derived by hand."),
    "grad_escrito": (
        "Gradientes guardados en .grad",
        "Tu función escribió en el `.grad` de `{nombre}`, que llegó vacío: el ejercicio pide "
        "devolver los gradientes, no guardarlos en los parámetros.",
        "El dict que devuelves es todo el resultado; el `.grad` de las entradas es de quien te "
        "llama y debe quedar como llegó.",
        "Your function wrote into `{nombre}.grad`; the gradients must only be returned."),
    "relu_sin_mascara": (
        "Falta la derivada de la ReLU",
        "`{nombre}` es lo que saldría si la ReLU dejara pasar todo el gradiente: le falta su "
        "derivada local, que anula el gradiente de las unidades con z ≤ 0.",
        "Entre ∂L/∂h y ∂L/∂z hay una ReLU: ¿qué vale su derivada donde su entrada es negativa, "
        "y dónde la aplicas?",
        "`{nombre}` lacks the ReLU's local derivative (0 where z <= 0)."),
    "relu_derivada_signo": (
        "Derivada de la ReLU con signo",
        "`{nombre}` usa sign(z) como derivada de la ReLU: donde z < 0 multiplica por −1 en "
        "lugar de por 0.",
        "La pendiente de la ReLU es 0 a la izquierda y 1 a la derecha: nunca es negativa.",
        "`{nombre}` uses sign(z) as the ReLU's derivative (-1 instead of 0 where z < 0)."),
    "squeeze_en_gradiente": (
        "Dimensiones de tamaño 1 eliminadas",
        "`{nombre}` tiene forma {forma}, se esperaba {forma_esperada}: los valores son "
        "correctos, pero perdió las dimensiones de tamaño 1.",
        "Un gradiente tiene exactamente la forma de su tensor, también cuando una dimensión "
        "vale 1 (K = 1, D = 1, un lote de una muestra). `squeeze()` sin argumentos las quita "
        "todas.",
        "`{nombre}` has shape {forma} instead of {forma_esperada}: size-1 dims were dropped."),
    "grad_previo_incluido": (
        "Incluye el .grad que ya había",
        "`{nombre}` es el gradiente pedido más lo que el `.grad` de los parámetros ya tenía "
        "al llamar a tu función: `backward()` suma sobre lo que encuentra.",
        "`.grad` puede llegar con valores de antes, y `backward()` suma sobre lo que encuentra: "
        "¿qué había en `.grad` cuando hiciste tu primer `backward()`?",
        "`{nombre}` includes the .grad the parameters already held (backward accumulates)."),
    "perdidas_intercambiadas": (
        "Pérdidas intercambiadas",
        "`grads_a` son los gradientes de la L1 y `grads_b` los de la MSE: el orden es el "
        "contrario.",
        "¿En qué orden pide el enunciado los dos juegos de gradientes?",
        "grads_a and grads_b are swapped (MSE first, then L1)."),
    "l1_media_solo_sobre_lote": (
        "L1 promediada solo sobre el lote",
        "`{nombre}` es {razon:.3g} × el valor correcto: K = {razon:.3g} es el número de "
        "salidas.",
        "`F.l1_loss` promedia |ŷ − y| sobre los N·K elementos, no suma cada fila y promedia "
        "las N filas.",
        "`{nombre}` is K times too large: the L1 loss was averaged over the batch only."),
    "penalizacion_otra_formula": (
        "Otra fórmula de penalización",
        "`{nombre}` coincide con {cual}, no con la fórmula del enunciado.",
        "Relee la fórmula: una norma L2 por fila de ∇ₓf (una por muestra), menos 1, al "
        "cuadrado, y la media sobre las N filas.",
        "`{nombre}` matches {cual}, not the stated formula."),
    "gradientes_sobrescritos": (
        "Gradientes sobrescritos",
        "`grads_a` y `grads_b` tienen los mismos valores, los gradientes de la L1: lo que "
        "guardaste como `grads_a` lo sobrescribió el segundo `backward()`.",
        "¿`grads_a` guarda una copia de los gradientes de la MSE, o los mismos tensores `.grad` "
        "que después se vacían y el segundo `backward()` vuelve a llenar?",
        "grads_a and grads_b both hold the L1 gradients: grads_a aliased .grad, overwritten."),
    "modo_cambiado_al_calcular": (
        "Calculado en otro modo",
        "`{nombre}` es lo que sale con el modelo entero en modo {modo}: cada submódulo debe "
        "usarse en el modo en que llega.",
        "Un BatchNorm en `train` normaliza con las estadísticas del lote, y en `eval` con las "
        "acumuladas: ¿cambias el modo del modelo antes de llamarlo?",
        "`{nombre}` is what the model gives entirely in {modo} mode: use each submodule in the "
        "mode it arrived in."),
    "modo_no_restaurado": (
        "Modo de un submódulo cambiado",
        "Tu función dejó {que} en otro modo (train/eval) que el que tenía al llegar.",
        "`train()` y `eval()` cambian también todos los submódulos: un modelo puede llegar "
        "con un submódulo en otro modo que su padre. ¿Cómo dejas cada uno como llegó?",
        "Your function left {que} in another train/eval mode than the one it arrived in."),
    "requires_grad_apagado": (
        "requires_grad desactivado",
        "`{nombre}` llegó con `requires_grad=True` y tu función lo dejó en `False`: quien te "
        "llamó ya no recibirá su gradiente.",
        "¿Con qué `requires_grad` queda la entrada cuando devuelves? Quien llama espera "
        "encontrarla como llegó, sea cual sea ese valor.",
        "`{nombre}` arrived with requires_grad=True and was left with False."),
}
registrar(MENSAJES)


# ---------------------------------------------------------------- helpers
def _tensores(objeto):
    if isinstance(objeto, torch.Tensor):
        yield objeto
    elif isinstance(objeto, (list, tuple)):
        for valor in objeto:
            yield from _tensores(valor)


class VigiaAutograd(TorchFunctionMode):
    """Active around a student's call: counts the torch functions that ran with grad mode
    on and those whose result was recorded in a graph (it has a ``grad_fn``). Neither a
    ``detach()`` at the end nor the student's own ``saved_tensors_hooks`` hide them."""

    def __init__(self):
        super().__init__()
        self.con_grad = 0
        self.con_grafo = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if torch.is_grad_enabled():
            self.con_grad += 1
        resultado = func(*args, **(kwargs or {}))
        if any(t.grad_fn is not None for t in _tensores(resultado)):
            self.con_grafo += 1
        return resultado


def observar_vigilado(funcion, entradas, argumentos):
    """Call ``funcion(*argumentos)`` watched by a ``VigiaAutograd``: its plain-data
    observation, with ``estado`` of ``entradas`` before and after the call, and what the
    watcher counted."""
    vigia = VigiaAutograd()

    def vigilada(*args):
        with vigia:
            return funcion(*args)

    antes = estado(entradas)
    observacion = observar_llamada(vigilada, *argumentos)
    observacion.update(estado_antes=antes, estado_despues=estado(entradas),
                       con_grad=vigia.con_grad, con_grafo=vigia.con_grafo)
    return observacion


def _es_valor(nombre):
    """A name of ``estado`` that is a tensor's values or ``requires_grad`` (an input)."""
    return not nombre.endswith(".grad") and ".training" not in nombre and nombre != (
        "modo de autograd")


def verificar_efectos(caso, permitidos=(), grad="grad_poblado"):
    """Nothing changed but ``permitidos``; the first change named by its own message: an
    input's values or ``requires_grad`` ("modificada"; "requires_grad_apagado" when it
    arrived on and was left off), ``.grad`` filled where it was None (``grad``) and the
    rest."""
    antes, despues = caso.datos["estado_antes"], caso.datos["estado_despues"]
    distintos = cambios(antes, despues, permitidos)
    if not distintos:
        return
    for nombre in distintos:
        if nombre.endswith(".requires_grad") and antes[nombre] and not despues[nombre]:
            fallar("requires_grad_apagado", nombre=nombre[:-len(".requires_grad")])
    valores = [n for n in distintos if _es_valor(n)]
    if valores:
        fallar("modificada", nombre=valores[0].replace(".requires_grad", ""))
    if all(n.endswith(".training") for n in distintos):
        fallar("modo_no_restaurado", que=", ".join(
            f"`{n[:-len('.training')]}`" for n in distintos[:4]))
    if all(n.endswith(".grad") and antes[n] is None for n in distintos):
        fallar(grad, nombre=distintos[0][:-len(".grad")])
    fallar("efecto_secundario", que=", ".join(f"`{n}`" for n in distintos[:4])
           + (f" y {len(distintos) - 4} más" if len(distintos) > 4 else ""))


def tolerancia(esperado, escala=None):
    """(rtol, atol) for a result of ``esperado``'s dtype, judged against a float64 truth:
    float32 rounding in a sum of products of numbers about as large as the result leaves
    errors relative to the whole tensor's scale, not to each (possibly cancelling) entry.
    ``escala`` overrides that scale (``diagnosticar_gradientes``: the largest of a set)."""
    if esperado.dtype == torch.float64:
        return 1e-6, 1e-9
    if escala is None:
        escala = mayor_magnitud(esperado)
    return 1e-3, 1e-4 * max(escala, 0.1)


def diagnosticar(nombre, obtenido, esperado, factores=None, alternativas=None, escala=None):
    """``diagnosticar_tensor`` with the tolerance of ``tolerancia``."""
    rtol, atol = tolerancia(esperado, escala)
    return diagnosticar_tensor(nombre, obtenido, esperado, factores, alternativas, rtol, atol)


def parecido(obtenido, esperado):
    """The same shape and dtype, and equal within ``tolerancia``."""
    rtol, atol = tolerancia(esperado)
    return (isinstance(obtenido, torch.Tensor) and obtenido.shape == esperado.shape
            and obtenido.dtype == esperado.dtype and cerca(obtenido, esperado, rtol, atol))


def diagnosticar_gradientes(nombre, obtenidos, esperados, factores=None):
    """Item by item, with ``diagnosticar`` (a swapped item is named as such): the shared
    ``diagnosticar_lista`` with this chapter's ``tolerancia`` against a float64 truth."""
    try:
        obtenidos = list(obtenidos)
    except TypeError:
        return Diagnostico("tipo", {"nombre": nombre, "esperado": "una lista de tensores",
                                    "tipo": type(obtenidos).__name__})
    if len(obtenidos) != len(esperados):
        return Diagnostico("longitud", {"nombre": nombre, "longitud": len(obtenidos),
                                        "longitud_esperada": len(esperados)})
    # The gradients of one backward pass share its rounding: one that is 0 in exact
    # arithmetic (the bias of a layer that feeds a BatchNorm in train) comes out in float32
    # as noise the size of the largest gradient's rounding, not of its own.
    escala = mayor_magnitud(*esperados)
    for i, (obtenido, esperado) in enumerate(zip(obtenidos, esperados)):
        otros = {f"`{nombre}[{j}]`": e for j, e in enumerate(esperados) if j != i}
        diagnostico = diagnosticar(f"{nombre}[{i}]", obtenido, esperado, factores, otros,
                                   escala)
        if diagnostico is not None:
            return diagnostico
    return None


def _tipo(nombre, objeto, esperado):
    fallar("tipo", nombre=nombre, esperado=esperado,
           tipo=objeto.get("__objeto__", "dict") if isinstance(objeto, dict) else
           type(objeto).__name__)


def _sin_squeeze(nombre, obtenido, esperado):
    """A result with the right values but its size-1 dimensions dropped."""
    if (isinstance(obtenido, torch.Tensor) and obtenido.shape != esperado.shape
            and parecido(obtenido, esperado.squeeze())):
        fallar("squeeze_en_gradiente", nombre=nombre, forma=tuple(obtenido.shape),
               forma_esperada=tuple(esperado.shape))


def _dtype(forma, posicion, defecto="float64"):
    return getattr(torch, forma[posicion] if len(forma) > posicion else defecto)


class RedConEscala(torch.nn.Module):
    """``capas`` followed by a per-output scale that the model registers itself: a
    parameter no submodule holds, listed first by ``parameters()``."""

    def __init__(self, capas, K):
        super().__init__()
        self.escala = torch.nn.Parameter(torch.ones(K))
        self.capas = capas

    def forward(self, x):
        return self.capas(x) * self.escala


def lineales(modelo):
    """The model's Linear layers, in order."""
    return [m for m in modelo.modules() if isinstance(m, torch.nn.Linear)]


def batchnorm(modelo):
    """The model's BatchNorm layer, or None."""
    return next((m for m in modelo.modules() if isinstance(m, torch.nn.BatchNorm1d)), None)


def red_pequena(generador, D, H, K, dtype=torch.float64, marcas=()):
    """A small Linear[–BatchNorm]–Tanh–Linear model whose weights come from ``generador``.
    Marcas: "anidada" (the first layer, [the BatchNorm] and the Tanh in a Sequential of
    their own), "profunda" (that Sequential two levels down), "sin_sesgo" (the first layer
    without bias), "bn" (a BatchNorm1d after the first layer, with running statistics far
    from the batch's), "escala" (a parameter registered on the model itself), and the
    starting mode: "eval" (every module), "mixto" (the model in train, its BatchNorm, or
    else its first layer, in eval), "mixto_eval" (the model in eval, that one in train)."""
    primera = [torch.nn.Linear(D, H, bias="sin_sesgo" not in marcas)]
    if "bn" in marcas:
        primera.append(torch.nn.BatchNorm1d(H))
    primera.append(torch.nn.Tanh())
    if "profunda" in marcas:
        capas = torch.nn.Sequential(torch.nn.Sequential(torch.nn.Sequential(*primera)),
                                    torch.nn.Linear(H, K))
    elif "anidada" in marcas:
        capas = torch.nn.Sequential(torch.nn.Sequential(*primera), torch.nn.Linear(H, K))
    else:
        capas = torch.nn.Sequential(*primera, torch.nn.Linear(H, K))
    modelo = (RedConEscala(capas, K) if "escala" in marcas else capas).to(dtype)
    with torch.no_grad():
        for p in modelo.parameters():
            p.copy_(torch.randn(p.shape, generator=generador, dtype=dtype))
        normalizacion = batchnorm(modelo)
        if normalizacion is not None:
            normalizacion.running_mean.copy_(torch.randn(H, generator=generador, dtype=dtype))
            normalizacion.running_var.copy_(0.25 + torch.rand(H, generator=generador,
                                                              dtype=dtype))
    hijo = normalizacion if normalizacion is not None else lineales(modelo)[0]
    if "eval" in marcas:
        modelo.eval()
    elif "mixto" in marcas:
        hijo.eval()
    elif "mixto_eval" in marcas:
        modelo.eval()
        hijo.train()
    return modelo


def _grad_previo(generador, tensores):
    """Give each tensor a stale ``.grad`` (what an earlier backward would have left)."""
    for t in tensores:
        t.grad = torch.randn(t.shape, generator=generador, dtype=t.dtype)


# ---------------------------------------------------------------- exercise 1: manual_backward
def construir_red(generador, forma):
    """x, y, W1, b1, W2, b2 for ``forma`` = (N, D, H, K[, dtype, *marcas]), with unit 0 dead
    on purpose when H > 1 and unit 1 at exactly z = 0 when H > 2. Marcas: "requires_grad"
    (the parameters require grad, as an ``nn.Parameter`` would), "grad" (and arrive with a
    stale ``.grad``)."""
    N, D, H, K = forma[:4]
    dtype = _dtype(forma, 4)
    marcas = forma[5:]

    def normal(*dimensiones):
        return torch.randn(*dimensiones, generator=generador, dtype=dtype)

    entradas = {"x": normal(N, D), "y": normal(N, K), "W1": normal(D, H), "b1": normal(H),
                "W2": normal(H, K), "b2": normal(K)}
    if H > 1:
        entradas["b1"][0] = -50.0  # dead for every sample: its gradient must be exactly 0
    if H > 2:  # unit 1's pre-activation is exactly 0 for every sample: ReLU'(0) is 0 or 1
        entradas["W1"][:, 1] = 0.0
        entradas["b1"][1] = 0.0
    parametros = [entradas[n] for n in NOMBRES_PARAMETROS]
    if "requires_grad" in marcas:
        for p in parametros:
            p.requires_grad_(True)
    if "grad" in marcas:
        _grad_previo(generador, parametros)
    return entradas


def observar_red(manual_backward, entradas):
    """The call, under ``torch.no_grad()`` as the statement says, watched for autograd."""
    with torch.no_grad():
        return observar_vigilado(manual_backward, entradas, list(entradas.values()))


def contexto_red(forma):
    """The constant factor each wrong MSE derivative introduces, by diagnosis id."""
    N, K = forma[0], forma[3]
    return {"factores": {"suma_en_vez_de_media": N * K, "media_solo_sobre_lote": K,
                         "media_solo_sobre_salidas": N}}


def _gradientes(caso, nombres):
    resultado = caso.resultado
    if type(resultado) is not dict or "__objeto__" in resultado:
        _tipo("el resultado", resultado, "un dict {'W1', 'b1', 'W2', 'b2'}")
    esperado = caso.datos["esperado"]
    alternativas = {"relu_sin_mascara": esperado["sin_mascara"],
                    "relu_derivada_signo": esperado["signo"]}
    for nombre in nombres:
        etiqueta = f"grads['{nombre}']"
        obtenido, correcto = resultado.get(nombre), esperado["grads"][nombre]
        diagnostico = diagnosticar(etiqueta, obtenido, correcto, caso.datos["factores"])
        if diagnostico is None or parecido(obtenido, esperado["en_cero_uno"][nombre]):
            continue  # ReLU'(0) taken as 0 or as 1: both are the contract's
        _sin_squeeze(etiqueta, obtenido, correcto)
        for identificador, otros in alternativas.items():
            if parecido(obtenido, otros[nombre]):
                fallar(identificador, nombre=etiqueta)
        exigir(diagnostico)


def _a_mano(caso):
    if caso.datos["con_grad"] or caso.datos["con_grafo"]:
        fallar("usa_autograd", que=f"{caso.datos['con_grad']} operaciones con el cálculo de "
               "gradientes activado")


MANUAL_BACKWARD = Ejercicio(
    funcion="manual_backward",
    partes=[
        Parte("capa de salida: W2 y b2", 1.0, lambda caso: _gradientes(caso, ("W2", "b2"))),
        Parte("capa oculta: W1 y b1 (la derivada de la ReLU)", 1.0,
              lambda caso: _gradientes(caso, ("W1", "b1"))),
        Parte("a mano: sin autograd", 0.5, _a_mano, requisito=True),
        Parte("entradas intactas (valores, requires_grad y .grad)", 0.5,
              lambda caso: verificar_efectos(caso, grad="grad_escrito"), requisito=True),
    ],
    construir=construir_red, observar=observar_red, contexto=contexto_red)


def _relu_con_derivada(z, derivada):
    """relu(z) in the forward pass, with ``derivada`` (a tensor like z) as its derivative."""
    return torch.relu(z).detach() + derivada.detach() * (z - z.detach())


def gradientes_con_relu(x, y, W1, b1, W2, b2, derivada=None):
    """Autograd's gradients (in float64, returned in the inputs' dtype) of the statement's
    network; ``derivada(z)`` replaces the ReLU's derivative (to name the usual mistakes)."""
    dtype = x.dtype
    params = [t.detach().double().requires_grad_(True) for t in (W1, b1, W2, b2)]
    with torch.enable_grad():
        z = x.detach().double() @ params[0] + params[1]
        h = torch.relu(z) if derivada is None else _relu_con_derivada(z, derivada(z))
        y_hat = h @ params[2] + params[3]
        gradientes = torch.autograd.grad(
            torch.nn.functional.mse_loss(y_hat, y.detach().double()), params)
    return {n: g.to(dtype) for n, g in zip(NOMBRES_PARAMETROS, gradientes)}


def relus_equivocadas(*entradas):
    """The gradients with the ReLU's derivative left out, and with sign(z) in its place."""
    return {"sin_mascara": gradientes_con_relu(*entradas, derivada=torch.ones_like),
            "signo": gradientes_con_relu(*entradas, derivada=torch.sign)}


def relu_en_cero_uno(*entradas):
    """The gradients with ReLU'(0) = 1 (autograd takes 0): the contract allows both."""
    return gradientes_con_relu(*entradas, derivada=lambda z: (z >= 0).to(z.dtype))


def gradientes_autograd(x, y, W1, b1, W2, b2):
    """The public oracle: autograd on a copy of the parameters."""
    entradas = (x, y, W1, b1, W2, b2)
    return {"grads": gradientes_con_relu(*entradas), "en_cero_uno": relu_en_cero_uno(*entradas),
            **relus_equivocadas(*entradas)}


def comprobar_manual_backward(manual_backward):
    """Comprobación pública: tus gradientes a mano frente a autograd en una red pequeña."""
    caso = caso_en_proceso(MANUAL_BACKWARD, manual_backward, 1, (6, 4, 5, 3), gradientes_autograd)
    comprobar(MANUAL_BACKWARD.partes, caso,
              "Tus gradientes coinciden con los de autograd (en este ejemplo pequeño).")
    caso = caso_en_proceso(MANUAL_BACKWARD, manual_backward, 11,
                           (1, 1, 4, 1, "float32", "requires_grad", "grad"), gradientes_autograd)
    comprobar(MANUAL_BACKWARD.partes, caso,
              "También con una sola muestra, una sola entrada y una sola salida (N = D = K = 1), "
              "en float32 y con parámetros que traen requires_grad y un .grad de antes.")


# ---------------------------------------------------------------- exercise 2: two_loss_grads
def construir_dos_perdidas(generador, forma):
    """model, x, y for ``forma`` = (N, D, H, K[, dtype, *marcas]). Marcas: those of
    ``red_pequena`` (structure and starting mode), and "grad" (every parameter arrives with
    a stale ``.grad``)."""
    N, D, H, K = forma[:4]
    dtype = _dtype(forma, 4)
    marcas = forma[5:]
    modelo = red_pequena(generador, D, H, K, dtype, marcas)
    entradas = {"model": modelo,
                "x": torch.randn(N, D, generator=generador, dtype=dtype),
                "y": torch.randn(N, K, generator=generador, dtype=dtype)}
    if "grad" in marcas:
        _grad_previo(generador, modelo.parameters())
    return entradas


def observar_dos_perdidas(two_loss_grads, entradas):
    """The result, what changed, and how many forward passes the model ran: the most calls
    any of its leaf modules got (``model.forward(x)`` skips the model's own hooks, not
    those of the layers it calls)."""
    hojas = [m for m in entradas["model"].modules() if not list(m.children())]
    llamadas = [0] * len(hojas)

    def contar(i):
        def gancho(modulo, args):
            llamadas[i] += 1
        return gancho

    ganchos = [m.register_forward_pre_hook(contar(i)) for i, m in enumerate(hojas)]
    try:
        observacion = observar_vigilado(two_loss_grads, entradas, list(entradas.values()))
    finally:
        for gancho in ganchos:
            gancho.remove()
    observacion["llamadas"] = max(llamadas, default=0)
    return observacion


def contexto_dos_perdidas(forma):
    """The constant factor each wrong reduction introduces, by loss and diagnosis id."""
    N, K = forma[0], forma[3]
    comunes = {"suma_en_vez_de_media": N * K, "media_solo_sobre_salidas": N}
    return {"factores": ({"media_solo_sobre_lote": K, **comunes},
                         {"l1_media_solo_sobre_lote": K, **comunes})}


def _cerca_lista(obtenidos, esperados):
    return len(obtenidos) == len(esperados) and all(
        parecido(o, e) for o, e in zip(obtenidos, esperados))


def _suma(*listas):
    return [sum(tensores) for tensores in zip(*listas)]


def _lista_de_gradientes(caso, indice):
    resultado = caso.resultado
    if type(resultado) not in (tuple, list) or len(resultado) != 2:
        _tipo("el resultado", resultado, "una tupla (grads_a, grads_b)")
    etiqueta = ("grads_a", "grads_b")[indice]
    esperado = caso.datos["esperado"]
    a, b, previos = esperado["a"], esperado["b"], esperado["previos"]
    obtenidos = resultado[indice]
    if type(obtenidos) not in (tuple, list):
        _tipo(etiqueta, obtenidos, "una lista de tensores")
    diagnostico = diagnosticar_gradientes(etiqueta, obtenidos, (a, b)[indice],
                                          caso.datos["factores"][indice])
    if diagnostico is None:
        return
    if (_cerca_lista(obtenidos, b) and type(resultado[1 - indice]) in (tuple, list)
            and _cerca_lista(resultado[1 - indice], b)):
        fallar("gradientes_sobrescritos")
    for modo in ("eval", "train"):
        otro = esperado[modo] and esperado[modo][indice]
        if otro and not _cerca_lista(otro, (a, b)[indice]) and _cerca_lista(obtenidos, otro):
            fallar("modo_cambiado_al_calcular", nombre=etiqueta, modo=modo)
    conocidos = [(("acumulado_sin_clone", "acumulado_sin_zero")[indice], _suma(a, b)),
                 (("acumulado_sin_clone", "acumulado_sin_zero")[indice], _suma(a, b, previos)),
                 ("grad_previo_incluido", _suma((a, b)[indice], previos)),
                 ("perdidas_intercambiadas", (b, a)[indice])]
    for identificador, otros in conocidos:
        if _cerca_lista(obtenidos, otros):
            fallar(identificador, nombre=etiqueta)
    exigir(diagnostico)


def _un_forward(caso):
    if caso.datos["llamadas"] != 1:
        fallar("forward_repetido", llamadas=caso.datos["llamadas"])


def estadisticas_en_train(antes):
    """The running statistics of the BatchNorm layers that arrived in train mode, by their
    ``estado`` names: the one forward pass updates them, as any forward pass in train does."""
    return [n for n in antes if n.endswith((".running_mean", ".running_var",
                                             ".num_batches_tracked"))
            and antes.get(n.rsplit(".", 1)[0] + ".training")]


def _sin_efectos_dos_perdidas(caso):
    antes = caso.datos["estado_antes"]
    verificar_efectos(caso, permitidos=[n for n in antes
                                        if n.startswith("model.") and n.endswith(".grad")]
                      + estadisticas_en_train(antes))


TWO_LOSS_GRADS = Ejercicio(
    funcion="two_loss_grads",
    partes=[
        Parte("gradientes de la MSE (grads_a)", 0.75, lambda caso: _lista_de_gradientes(caso, 0)),
        Parte("gradientes de la L1 (grads_b)", 0.75, lambda caso: _lista_de_gradientes(caso, 1)),
        Parte("un solo pase hacia adelante", 0.25, _un_forward, requisito=True),
        Parte("sin efectos: x, y, parámetros y modo del modelo intactos", 0.25,
              _sin_efectos_dos_perdidas, requisito=True),
    ],
    construir=construir_dos_perdidas, observar=observar_dos_perdidas,
    contexto=contexto_dos_perdidas)


def _por_separado(model, x, y):
    params = list(model.parameters())
    with torch.enable_grad():
        a = torch.autograd.grad(torch.nn.functional.mse_loss(model(x), y), params)
        b = torch.autograd.grad(torch.nn.functional.l1_loss(model(x), y), params)
    return list(a), list(b)


def en_otro_modo(calcular, model, *resto):
    """``calcular`` on copies of ``model`` set entirely to eval and to train (what an answer
    that changes the model's mode computes), by mode; None where a BatchNorm in train would
    see a batch of one."""
    resultado = {}
    for modo in ("eval", "train"):
        copia = copy.deepcopy(model).train(modo == "train")
        resultado[modo] = None if (modo == "train" and batchnorm(copia) is not None
                                   and resto[0].shape[0] < 2) else calcular(copia, *resto)
    return resultado


def gradientes_por_separado(model, x, y):
    """The public oracle: one forward pass per loss, on copies without the stale .grad."""
    a, b = _por_separado(copy.deepcopy(model), x, y)
    previos = [torch.zeros_like(p) if p.grad is None else p.grad.detach().clone()
               for p in model.parameters()]
    return {"a": a, "b": b, "previos": previos, **en_otro_modo(_por_separado, model, x, y)}


def comprobar_two_loss_grads(two_loss_grads):
    """Comprobación pública: un solo pase hacia adelante y los gradientes de cada pérdida por
    separado."""
    caso = caso_en_proceso(TWO_LOSS_GRADS, two_loss_grads, 2, (5, 3, 4, 2), gradientes_por_separado)
    comprobar(TWO_LOSS_GRADS.partes, caso,
              "Un solo forward y los gradientes de cada pérdida por separado: correcto.")
    caso = caso_en_proceso(TWO_LOSS_GRADS, two_loss_grads, 12,
                           (3, 2, 4, 1, "float64", "profunda", "escala", "bn", "mixto", "grad"),
                           gradientes_por_separado)
    comprobar(TWO_LOSS_GRADS.partes, caso,
              "También con submódulos anidados a dos niveles, un parámetro del propio modelo, "
              "una BatchNorm en eval dentro de un modelo en train, una sola salida y "
              "parámetros que traen un .grad de antes.")
    caso = caso_en_proceso(TWO_LOSS_GRADS, two_loss_grads, 22,
                           (4, 3, 5, 2, "float32", "anidada", "bn", "mixto_eval"),
                           gradientes_por_separado)
    comprobar(TWO_LOSS_GRADS.partes, caso,
              "Y en float32, con el modelo en eval y su BatchNorm en train.")


# ---------------------------------------------------------------- exercise 3: gradient_penalty
def _normas_por_fila(modelo, x):
    """‖∂ model(x)_i / ∂x_i‖ for each row, in float64 (the model maps rows independently)."""
    entrada = x.detach().clone().requires_grad_(True)
    with torch.enable_grad():
        (grad_x,) = torch.autograd.grad(modelo(entrada).sum(), entrada)
    return grad_x.double().norm(dim=1)


def _filas_con_gradiente(generador, modelo, N, D, dtype, intentos=50):
    """x (N, D) in which no row's gradient is (nearly) zero: a norm is not differentiable at
    0 (``norm`` answers 0 there, ``sqrt((g ** 2).sum())`` NaN, and both are right), so no
    hidden case sits there. A ReLU unit dead for a row (H = 1) is what puts one there."""
    for _ in range(intentos):
        x = torch.randn(N, D, generator=generador, dtype=dtype)
        normas = _normas_por_fila(modelo, x)
        if normas.min() > 1e-3 * normas.max():
            break
    return x


def construir_penalizacion(generador, forma):
    """model (D–H–1) and x (N, D) for ``forma`` = (N, D, H[, dtype, *marcas]). Marcas:
    "a_ambos_lados" (the last layer rescaled so that some rows' gradient norms fall below 1
    and others above), those of ``red_pequena`` (structure and starting mode; a BatchNorm
    only in eval, where each row still depends on its own row alone), "grad" (the
    parameters arrive with a stale ``.grad``), "x_requires_grad" (x is a leaf that requires
    grad), "x_grad" (and it arrives with a stale ``.grad``)."""
    N, D, H = forma[:3]
    dtype = _dtype(forma, 3)
    marcas = forma[4:]
    modelo = red_pequena(generador, D, H, 1, dtype, marcas)
    x = _filas_con_gradiente(generador, modelo, N, D, dtype)
    if "a_ambos_lados" in marcas:
        normas = _normas_por_fila(modelo, x)
        escala = 0.5 / normas[0] if N == 1 else 2 / (normas.min() + normas.max())
        with torch.no_grad():
            lineales(modelo)[-1].weight.mul_(escala.to(dtype))
    if "grad" in marcas:
        _grad_previo(generador, modelo.parameters())
    if "x_requires_grad" in marcas:
        x.requires_grad_(True)
        if "x_grad" in marcas:
            _grad_previo(generador, [x])
    return {"model": modelo, "x": x}


def observar_penalizacion(gradient_penalty, entradas):
    """The value, what changed, and the value's gradient w.r.t. the parameters (if any)."""
    parametros = list(entradas["model"].parameters())
    penalizacion = None

    def guardar(*args):
        nonlocal penalizacion
        penalizacion = gradient_penalty(*args)
        return penalizacion

    observacion = observar_vigilado(guardar, entradas, list(entradas.values()))
    observacion["tiene_grafo"] = (type(penalizacion) is torch.Tensor
                                  and penalizacion.grad_fn is not None)
    observacion["gradientes"] = None
    if observacion["tiene_grafo"]:
        try:
            gradientes = llamar(torch.autograd.grad, penalizacion, parametros, allow_unused=True)
            observacion["gradientes"] = [torch.zeros_like(p) if g is None else g.detach().clone()
                                         for g, p in zip(gradientes, parametros)]
        except Exception:  # noqa: BLE001 - a graph that cannot be differentiated: no gradients
            observacion["gradientes"] = None
    return observacion


def penalizaciones_equivocadas(grad_x):
    """What the usual wrong formulas give, from the true per-row gradients ``grad_x``."""
    g = grad_x.detach().double()
    normas = g.norm(dim=1)
    return {
        "la penalización solo de las normas mayores que 1": (torch.relu(normas - 1) ** 2).mean(),
        "|‖∇ₓf‖ − 1| en lugar de (‖∇ₓf‖ − 1)²": (normas - 1).abs().mean(),
        "la norma al cuadrado ‖∇ₓf‖² en lugar de la norma": ((normas**2 - 1) ** 2).mean(),
        "una sola norma de toda la matriz de gradientes": (g.norm() - 1) ** 2,
        "normas por columnas (dim=0) en lugar de una por fila":
            ((g.norm(dim=0) - 1) ** 2).mean(),
        "el gradiente de model(x).mean() (cada fila dividida por N)":
            ((normas / g.shape[0] - 1) ** 2).mean(),
    }


def _valor_penalizacion(caso):
    esperado = caso.datos["esperado"]
    diagnostico = diagnosticar("la penalización", caso.resultado, esperado["valor"],
                               {"suma_en_vez_de_media": esperado["N"]})
    if diagnostico is None:
        return
    if isinstance(caso.resultado, torch.Tensor) and caso.resultado.numel() == 1:
        obtenido = caso.resultado.detach().reshape(())
        for modo in ("eval", "train"):
            valor = esperado.get(modo)
            valor = None if valor is None else valor.to(esperado["valor"].dtype)
            if (valor is not None and not parecido(valor, esperado["valor"])
                    and parecido(obtenido, valor)):
                fallar("modo_cambiado_al_calcular", nombre="la penalización", modo=modo)
        for cual, valor in esperado["equivocadas"].items():
            if parecido(obtenido, valor.to(esperado["valor"].dtype)):
                fallar("penalizacion_otra_formula", nombre="la penalización", cual=cual)
    exigir(diagnostico)


def _diferenciable(caso):
    if not caso.datos["tiene_grafo"] or caso.datos["gradientes"] is None:
        fallar("sin_grafo", nombre="la penalización")
    esperados = caso.datos["esperado"]["gradientes"]
    if esperados is None:  # the public check has no reference gradients: any graph will do
        return
    exigir(diagnosticar_gradientes("d penalización / d parámetros", caso.datos["gradientes"],
                                   esperados))


GRADIENT_PENALTY = Ejercicio(
    funcion="gradient_penalty",
    partes=[
        Parte("valor de la penalización", 1.5, _valor_penalizacion),
        Parte("diferenciable respecto de los parámetros (create_graph=True)", 1.0,
              _diferenciable),
        Parte("sin efectos secundarios: x, .grad y modo del modelo intactos", 0.5,
              verificar_efectos, requisito=True),
    ],
    construir=construir_penalizacion, observar=observar_penalizacion)


def penalizacion_por_diferencias(model, x, h=1e-6):
    """The public oracle: the gradient of the model w.r.t. x by central differences."""
    with torch.no_grad():
        x = x.detach()
        grad_x = torch.zeros_like(x)
        for i in range(x.shape[0]):
            for j in range(x.shape[1]):
                paso = torch.zeros_like(x)
                paso[i, j] = h
                grad_x[i, j] = (model(x + paso)[i, 0] - model(x - paso)[i, 0]) / (2 * h)
        valor = ((torch.linalg.vector_norm(grad_x, dim=1) - 1) ** 2).mean()
    return {"valor": valor, "gradientes": None, "N": x.shape[0],
            "equivocadas": penalizaciones_equivocadas(grad_x),
            **en_otro_modo(penalizacion_de_normas, model, x)}


def penalizacion_de_normas(model, x):
    """The penalty's value (float64, no graph) from autograd's per-row gradient norms: what
    an answer computes on ``model`` as it is (used with the model in another mode)."""
    return ((_normas_por_fila(model, x) - 1) ** 2).mean()


def comprobar_gradient_penalty(gradient_penalty):
    """Comprobación pública: el valor frente a diferencias finitas, que sea derivable y que no
    tenga efectos secundarios."""
    caso = caso_en_proceso(GRADIENT_PENALTY, gradient_penalty, 3, (4, 3, 6),
                           penalizacion_por_diferencias)
    comprobar(GRADIENT_PENALTY.partes, caso,
              "La penalización coincide con diferencias finitas y se puede derivar.")
    caso = caso_en_proceso(GRADIENT_PENALTY, gradient_penalty, 13,
                           (3, 2, 4, "float64", "a_ambos_lados", "profunda", "escala", "bn",
                            "mixto", "grad", "x_requires_grad", "x_grad"),
                           penalizacion_por_diferencias)
    comprobar(GRADIENT_PENALTY.partes, caso,
              "También cuando x llega con requires_grad=True y su propio .grad, los parámetros "
              "traen un .grad de antes, hay normas a los dos lados de 1 y el modelo, en train, "
              "tiene submódulos anidados a dos niveles, un parámetro propio y una BatchNorm en "
              "eval.")


# In notebook order.
EJERCICIOS = ejercicios(MANUAL_BACKWARD, TWO_LOSS_GRADS, GRADIENT_PENALTY)
