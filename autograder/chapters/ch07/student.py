"""Chapter 7: custom autograd Functions, how each exercise is built, observed and scored.

Injected into the chapter 7 student notebook by the build; the hidden tests use the
same exercises on other inputs against the reference. What a student's Function does
is observed in the student's kernel as plain data: its output, the gradients the
engine gets from its ``backward``, whether ``gradcheck`` (float64) passes, what its
``ctx`` saved and what ``backward`` returns for an input that needs no gradient. The
public oracles are plain autograd on PyTorch's own operations, never the reference.
"""

import torch

from autograder.student.compare import (
    ComprobacionFallida,
    Ejercicio,
    Parte,
    caso_en_proceso,
    comparar,
    comprobar,
    datos_a_error,
    ejercicios,
    error_a_datos,
    exigir,
    fallar,
    fotografiar,
    llamar,
    observar_llamada,
    sanear,
    verificar_intactas,
)
from autograder.student.diagnosis import (
    Diagnostico,
    cerca,
    diagnosticar_lista,
    diagnosticar_tensor,
)
from autograder.student.messages import registrar

__all__ = ["comprobar_stable_softplus", "comprobar_linear_tanh", "comprobar_quantize_ste"]

# id -> (title, Spanish text, Spanish hint, English text)
MENSAJES = {
    "softplus_desborda": (
        "Softplus que desborda",
        "`{nombre}` tiene infinitos o NaN para entradas grandes: `exp(beta·x)` desborda antes "
        "del logaritmo.",
        "Reescribe la fórmula para no exponenciar nada positivo: "
        "log(1 + e^z) = max(z, 0) + log1p(e^(−|z|)).",
        "`{nombre}` overflows for large inputs: exp(beta·x) overflows before the log."),
    "sin_grad_output": (
        "backward sin grad_output",
        "`{nombre}` es la derivada local de tu función, sin multiplicar por el gradiente que "
        "llega de arriba.",
        "`backward` recibe `grad_output` (∂L/∂salida) y devuelve ∂L/∂entrada = grad_output × "
        "derivada local: la regla de la cadena.",
        "`{nombre}` is the local derivative, not multiplied by grad_output."),
    "gradcheck_falla": (
        "gradcheck no pasa",
        "`torch.autograd.gradcheck` (en float64) no pasa: tu `backward` no es la derivada de tu "
        "`forward`.",
        "Deriva la fórmula otra vez, término a término, y compárala con diferencias finitas en "
        "unos pocos puntos.",
        "gradcheck (float64) fails: backward is not the derivative of forward."),
    "gradientes_por_entrada": (
        "Un gradiente por entrada",
        "`backward` devolvió un número de gradientes distinto del número de entradas de "
        "`forward`. PyTorch dice: {mensaje}",
        "Devuelve un valor por cada argumento de `forward` (sin contar `ctx`), en el mismo "
        "orden; `None` para los que no son tensores (un float, un int).",
        "backward returned a different number of gradients than forward has inputs."),
    "forma_gradiente_function": (
        "Gradiente con otra forma",
        "`backward` devolvió un gradiente con una forma distinta de la de su entrada. PyTorch "
        "dice: {mensaje}",
        "Cada gradiente tiene la forma de su entrada: ¿falta o sobra una traspuesta?",
        "backward returned a gradient whose shape differs from its input's."),
    "grad_output_modificado": (
        "grad_output modificado en el sitio",
        "Tu `backward` modificó `grad_output` en el sitio. Ese tensor no es tuyo: puede ser "
        "el mismo que reciben otras ramas del grafo, y les cambiarías el gradiente.",
        "Calcula un tensor nuevo (`grad_output * mascara`) o trabaja sobre "
        "`grad_output.clone()`.",
        "backward modified grad_output in place."),
    "sin_function_propia": (
        "Sin Function propia",
        "El resultado no sale de una `torch.autograd.Function` tuya: su `grad_fn` es "
        "`{nodo}`. Autograd derivó las operaciones por ti y tu `backward` no se usa.",
        "Define una subclase de `torch.autograd.Function` con `forward` y `backward` "
        "estáticos y devuelve `TuFuncion.apply(...)`.",
        "The result does not come from a custom autograd Function (grad_fn {nodo})."),
    "salida_sin_grafo": (
        "Salida sin grafo",
        "La salida no tiene `grad_fn` aunque la entrada requiere gradiente: ningún gradiente "
        "puede volver a la entrada.",
        "No devuelvas `.detach()` ni calcules bajo `torch.no_grad()`; con una Function, "
        "devuelve el resultado de `.apply`.",
        "The output has no grad_fn: no gradient can flow back to the input."),
    "tensores_en_ctx": (
        "Tensores guardados como atributos de ctx",
        "Guardaste tensores como atributos de `ctx` ({atributos}) en lugar de usar "
        "`ctx.save_for_backward`.",
        "Los tensores van en `ctx.save_for_backward(...)`: así PyTorch detecta si alguien los "
        "modifica en el sitio y los libera tras el backward. Como atributo solo van valores "
        "que no son tensores (un float, una forma).",
        "Tensors were stored as ctx attributes ({atributos}) instead of save_for_backward."),
    "guarda_de_mas": (
        "Guarda más de lo necesario",
        "Tu `forward` guarda {elementos} números para el backward ({guardados}); basta con "
        "{maximo}.",
        "Guarda solo lo que `backward` usa: para tanh(x·Wᵀ + b) bastan x, W y la salida "
        "(1 − salida² es la derivada). El sesgo y la preactivación sobran.",
        "forward saves {elementos} numbers for backward ({guardados}); {maximo} are enough."),
    "ignora_needs_input_grad": (
        "Ignora needs_input_grad",
        "Con `x` sin `requires_grad`, tu `backward` calculó igualmente su gradiente.",
        "Consulta `ctx.needs_input_grad[i]` y devuelve `None` (sin calcular nada) para las "
        "entradas que no lo necesitan, como los datos de entrada.",
        "backward computed the gradient of x although x does not require grad."),
    "redondeo_sin_ste": (
        "Gradiente del redondeo: cero",
        "`{nombre}` es todo ceros: derivaste a través de `torch.round`, cuya derivada es 0 en "
        "casi todas partes.",
        "El estimador de paso directo hace como si el redondeo fuera la identidad en el pase "
        "hacia atrás: una Function con ese backward, o `x + (q - x).detach()`.",
        "`{nombre}` is all zeros: autograd differentiated through round (zero derivative)."),
    "ste_sin_recorte": (
        "Paso directo sin recorte",
        "`{nombre}` deja pasar el gradiente también donde la entrada cae fuera del rango "
        "[−levels·step, levels·step].",
        "Fuera del rango la salida está recortada (constante): ahí el gradiente es 0. Multiplica "
        "por la máscara |x| ≤ levels·step.",
        "`{nombre}` also passes the gradient where the input is outside the clipping range."),
    "ste_borde_excluido": (
        "Borde del rango excluido",
        "`{nombre}` es 0 donde |x| = levels·step exactamente: el borde del rango también pasa "
        "el gradiente.",
        "La máscara es |x| ≤ levels·step (con igual), no |x| < levels·step.",
        "`{nombre}` is 0 where |x| equals levels·step: the mask must be <=, not <."),
    "cuantiza_sin_escalar": (
        "Niveles sin escalar",
        "`{nombre}` devuelve el número de nivel (un entero) en lugar del valor cuantizado: es "
        "{razon:.4g} veces el correcto, 1/step.",
        "Tras redondear `x / step`, multiplica otra vez por `step`.",
        "`{nombre}` returns the level index, not the quantized value (1/step times)."),
    "cuantiza_sin_recorte": (
        "Cuantización sin recorte",
        "`{nombre}` no recorta: hay valores fuera de [−levels·step, levels·step].",
        "Recorta con `clamp` al rango antes (o después) de redondear.",
        "`{nombre}` is not clipped to [-levels·step, levels·step]."),
}
registrar(MENSAJES)

# What an error from the autograd engine says about a custom backward.
ERRORES_DE_BACKWARD = {
    "incorrect number of gradients": "gradientes_por_entrada",
    "invalid gradient at index": "forma_gradiente_function",
}


def _error_de_backward(fallo):
    """Plain data for an error raised while the engine ran the student's backward."""
    detalle = str(fallo.hechos.get("detalle", ""))
    ultima = detalle.strip().splitlines()[-1] if detalle.strip() else ""
    for fragmento, diagnostico in ERRORES_DE_BACKWARD.items():
        if fragmento in detalle:
            return error_a_datos(ComprobacionFallida(Diagnostico(diagnostico,
                                                                 {"mensaje": ultima})))
    return error_a_datos(fallo)


def es_function_propia(tensor):
    """True when ``tensor`` comes out of a ``torch.autograd.Function``'s ``apply``."""
    return (type(tensor) is torch.Tensor
            and isinstance(tensor.grad_fn, torch.autograd.function.BackwardCFunction))


def _llamada(funcion, *args):
    """observar_llamada that also returns the raw result (to differentiate it afterwards)."""
    guardado = []

    def guardar(*argumentos):
        guardado.append(funcion(*argumentos))
        return guardado[-1]

    observacion = observar_llamada(guardar, *args)
    return observacion, (guardado[0] if guardado else None)


def observar_gradientes(salida, entradas, peso):
    """The gradients the engine gets for ``entradas`` from ``salida`` with upstream ``peso``.

    Facts, as plain data: whether ``salida`` has a graph, the gradients (None where an
    input is not reached), the error the engine raised, whether backward wrote into
    ``grad_output`` in place, and the node type (a custom Function or not).
    """
    datos = {"con_grafo": False, "gradientes": None, "error_backward": None,
             "grad_output_modificado": False, "funcion_propia": es_function_propia(salida),
             "nodo": type(getattr(salida, "grad_fn", None)).__name__}
    if type(salida) is not torch.Tensor or salida.grad_fn is None:
        return datos
    datos["con_grafo"] = True
    if salida.shape != peso.shape:
        return datos
    arriba = peso.clone()
    try:
        gradientes = llamar(torch.autograd.grad, salida, list(entradas), grad_outputs=arriba,
                            allow_unused=True)
        datos["gradientes"] = sanear(list(gradientes))
    except ComprobacionFallida as fallo:
        datos["error_backward"] = _error_de_backward(fallo)
    datos["grad_output_modificado"] = not torch.equal(arriba, peso)
    return datos


def pasa_gradcheck(funcion, entradas):
    """``torch.autograd.gradcheck`` in float64: True, False, or None if it raised."""
    try:
        return bool(llamar(torch.autograd.gradcheck, funcion, tuple(entradas),
                           raise_exception=False))
    except ComprobacionFallida:
        return None


def _tensor_de_salida(caso, nombre="la salida"):
    """The forward result, which must be a tensor of the expected shape to go on."""
    comparar_forma = caso.datos["esperado"]["salida"]
    resultado = caso.resultado
    if type(resultado) is not torch.Tensor or resultado.shape != comparar_forma.shape:
        comparar(nombre, resultado, comparar_forma)  # None, type or shape: says which
    return resultado


def _verificar_backward(caso, nombre, derivada_local=None):
    """The common checks on the engine's gradients before comparing their values."""
    datos = caso.datos
    if not datos["con_grafo"]:
        fallar("salida_sin_grafo")
    if datos["error_backward"] is not None:
        raise datos_a_error(datos["error_backward"])
    if datos["grad_output_modificado"]:
        fallar("grad_output_modificado")
    gradientes = datos["gradientes"]
    if gradientes is None:
        fallar("tipo", nombre="la salida", esperado="un tensor de la forma de la entrada",
               tipo="otra forma")
    if derivada_local is not None:
        obtenido = gradientes[0]
        if (type(obtenido) is torch.Tensor and obtenido.shape == derivada_local.shape
                and cerca(obtenido, derivada_local)
                and not cerca(obtenido, datos["esperado"]["grads"][0])):
            fallar("sin_grad_output", nombre=nombre)
    return gradientes


def _function_propia(caso):
    if not caso.datos["funcion_propia"]:
        fallar("sin_function_propia", nodo=caso.datos["nodo"])


# ---------------------------------------------------------------- exercise 1: stable_softplus
def construir_softplus(generador, forma):
    """x (requires grad), beta and an upstream gradient for ``forma`` = (n, 10·beta, dtype).

    x has n normal values and four extremes (beta·x = ±60, ±1000) where exp overflows.
    """
    n, decimas, nombre_dtype = forma
    dtype = getattr(torch, nombre_dtype)
    beta = decimas / 10
    extremos = torch.tensor([-1000.0, -60.0, 60.0, 1000.0], dtype=dtype) / beta
    x = torch.cat([3 * torch.randn(n, generator=generador, dtype=dtype) / beta, extremos])
    peso = torch.randn(x.shape, generator=generador, dtype=dtype)
    return {"x": x.requires_grad_(True), "beta": beta, "grad_output": peso}


def observar_softplus(stable_softplus, entradas):
    x, beta = entradas["x"], entradas["beta"]
    observacion, salida = _llamada(stable_softplus, x, beta)
    observacion["despues"] = fotografiar(entradas)
    observacion.update(observar_gradientes(salida, [x], entradas["grad_output"]))
    puntos = (torch.linspace(-3, 3, 7, dtype=torch.float64) / beta + 0.05).requires_grad_(True)
    observacion["gradcheck"] = pasa_gradcheck(lambda t: stable_softplus(t, beta), [puntos])
    return observacion


def _salida_softplus(caso):
    resultado = _tensor_de_salida(caso)
    esperado = caso.datos["esperado"]["salida"]
    if torch.isfinite(esperado).all() and not torch.isfinite(resultado).all():
        fallar("softplus_desborda", nombre="la salida")
    comparar("la salida", resultado, esperado)


def _gradiente_softplus(caso):
    esperado = caso.datos["esperado"]
    gradientes = _verificar_backward(caso, "el gradiente de x", esperado["derivada"])
    if caso.datos["gradcheck"] is False:
        fallar("gradcheck_falla")
    comparar("el gradiente de x", gradientes[0], esperado["grads"][0])


def _softplus_propia_e_intacta(caso):
    _function_propia(caso)
    verificar_intactas(caso)


STABLE_SOFTPLUS = Ejercicio(
    funcion="stable_softplus",
    partes=[
        Parte("forward estable (también con |beta·x| grande)", 1.0, _salida_softplus),
        Parte("backward analítico: gradcheck y valores", 1.5, _gradiente_softplus),
        Parte("una Function propia (.apply); entradas intactas", 0.5,
              _softplus_propia_e_intacta, requisito=True),
    ],
    construir=construir_softplus, observar=observar_softplus)


def softplus_por_autograd(x, beta, grad_output):
    """The public oracle: logaddexp(beta·x, 0) / beta, differentiated by autograd."""
    with torch.enable_grad():
        t = x.detach().clone().requires_grad_(True)
        salida = torch.logaddexp(beta * t, torch.zeros_like(t)) / beta
        (grad,) = torch.autograd.grad(salida, t, grad_output, retain_graph=True)
        (derivada,) = torch.autograd.grad(salida, t, torch.ones_like(t))
    return {"salida": salida.detach(), "grads": [grad], "derivada": derivada}


def comprobar_stable_softplus(stable_softplus):
    """Public check: output, gradient and gradcheck against autograd on logaddexp."""
    caso = caso_en_proceso(STABLE_SOFTPLUS, stable_softplus, 1, (6, 20, "float64"),
                           softplus_por_autograd)
    comprobar(STABLE_SOFTPLUS.partes, caso,
              "Forward estable, backward correcto (gradcheck incluido) y una Function propia.")


# ---------------------------------------------------------------- exercise 2: linear_tanh
def construir_lineal_tanh(generador, forma):
    """x (N, D), weight (H, D), bias (H,) requiring grad and an upstream gradient (N, H)."""
    N, D, H, nombre_dtype = forma
    dtype = getattr(torch, nombre_dtype)

    def normal(*dimensiones, escala=1.0):
        return escala * torch.randn(*dimensiones, generator=generador, dtype=dtype)

    return {"x": normal(N, D).requires_grad_(True),
            "weight": normal(H, D, escala=D ** -0.5).requires_grad_(True),
            "bias": normal(H, escala=0.5).requires_grad_(True),
            "grad_output": normal(N, H)}


def _describir_guardados(guardados, conocidos):
    """A name per saved tensor (which input or intermediate it equals) and their size."""
    nombres = []
    for tensor in guardados:
        nombre = next((n for n, t in conocidos.items() if t.shape == tensor.shape
                       and t.dtype == tensor.dtype
                       and torch.equal(t.detach(), tensor.detach())), None)
        nombres.append(nombre or f"un tensor de forma {tuple(tensor.shape)}")
    return nombres, sum(int(t.numel()) for t in guardados)


def _tensores_en_atributos(ctx):
    encontrados = []
    for nombre, valor in vars(ctx).items():
        valores = valor if type(valor) in (list, tuple) else (valor,)
        if any(isinstance(v, torch.Tensor) for v in valores):
            encontrados.append(f"ctx.{nombre}")
    return sorted(encontrados)


def observar_lineal_tanh(linear_tanh, entradas):
    x, weight, bias, peso = (entradas[k] for k in ("x", "weight", "bias", "grad_output"))
    observacion, salida = _llamada(linear_tanh, x, weight, bias)
    observacion["despues"] = fotografiar(entradas)
    observacion.update(guardados=None, elementos_guardados=None, atributos_tensor=[],
                       sin_x=None)
    if es_function_propia(salida):
        with torch.no_grad():
            preactivacion = x @ weight.T + bias
        conocidos = {"x": x, "weight": weight, "bias": bias, "la salida": salida,
                     "la preactivación": preactivacion}
        try:
            guardados = llamar(lambda: tuple(salida.grad_fn.saved_tensors))
            observacion["guardados"], observacion["elementos_guardados"] = (
                _describir_guardados(guardados, conocidos))
        except ComprobacionFallida:
            observacion["guardados"] = None
        observacion["atributos_tensor"] = _tensores_en_atributos(salida.grad_fn)
    observacion.update(observar_gradientes(salida, [x, weight, bias], peso))
    observacion["sin_x"] = _backward_sin_x(linear_tanh, x, weight, bias, peso)
    pequenas = [t.detach()[:3, :3].double().clone().requires_grad_(True) if t.dim() == 2
                else t.detach()[:3].double().clone().requires_grad_(True)
                for t in (x, weight, bias)]
    observacion["gradcheck"] = pasa_gradcheck(linear_tanh, pequenas)
    return observacion


def _backward_sin_x(linear_tanh, x, weight, bias, peso):
    """What backward itself returns when x (the data) does not require grad."""
    datos = {"error": None, "devuelto": None}
    try:
        salida = llamar(linear_tanh, x.detach().clone(), weight, bias)
    except ComprobacionFallida as fallo:
        datos["error"] = error_a_datos(fallo)
        return datos
    if not es_function_propia(salida) or salida.shape != peso.shape:
        return datos
    try:
        devuelto = llamar(salida.grad_fn.apply, peso.clone())
    except ComprobacionFallida as fallo:
        datos["error"] = _error_de_backward(fallo)
        return datos
    devuelto = devuelto if type(devuelto) in (tuple, list) else (devuelto,)
    datos["devuelto"] = sanear(list(devuelto))
    return datos


def contexto_lineal_tanh(forma):
    N, D, H = forma[:3]
    return {"maximo_guardado": N * D + H * D + N * H}


def _salida_lineal_tanh(caso):
    comparar("la salida", _tensor_de_salida(caso), caso.datos["esperado"]["salida"])


def _gradientes_lineal_tanh(caso):
    gradientes = _verificar_backward(caso, "los gradientes")
    if caso.datos["gradcheck"] is False:
        fallar("gradcheck_falla")
    exigir(diagnosticar_lista("grads", gradientes, caso.datos["esperado"]["grads"]))


def _guarda_lo_justo(caso):
    _function_propia(caso)
    datos = caso.datos
    if datos["atributos_tensor"]:
        fallar("tensores_en_ctx", atributos=", ".join(datos["atributos_tensor"]))
    if datos["guardados"] is None:
        fallar("es_none", nombre="ctx.saved_tensors")
    if datos["elementos_guardados"] > datos["maximo_guardado"]:
        fallar("guarda_de_mas", elementos=datos["elementos_guardados"],
               maximo=datos["maximo_guardado"], guardados=", ".join(datos["guardados"]))


def _respeta_needs_input_grad(caso):
    _function_propia(caso)
    sin_x = caso.datos["sin_x"]
    if sin_x["error"] is not None:
        raise datos_a_error(sin_x["error"])
    devuelto = sin_x["devuelto"]
    if devuelto is None:
        fallar("sin_function_propia", nodo=caso.datos["nodo"])
    if len(devuelto) != 3:
        fallar("gradientes_por_entrada",
               mensaje=f"se esperaban 3 gradientes (x, weight, bias) y hay {len(devuelto)}")
    if devuelto[0] is not None:
        fallar("ignora_needs_input_grad")
    # Only presence and shape here: the values are the gradient part's (no double penalty).
    for nombre, obtenido, esperado in zip(("weight", "bias"), devuelto[1:],
                                          caso.datos["esperado"]["grads"][1:]):
        if not isinstance(obtenido, torch.Tensor) or obtenido.shape != esperado.shape:
            exigir(diagnosticar_tensor(f"el gradiente de {nombre} (con x sin requires_grad)",
                                       obtenido, esperado))


LINEAR_TANH = Ejercicio(
    funcion="linear_tanh",
    partes=[
        Parte("forward: tanh(x·Wᵀ + b)", 0.5, _salida_lineal_tanh),
        Parte("backward: gradientes de x, weight y bias (gradcheck)", 1.25,
              _gradientes_lineal_tanh),
        Parte("guarda solo lo necesario, con save_for_backward", 0.75, _guarda_lo_justo),
        Parte("needs_input_grad: None para x si x no requiere gradiente", 0.5,
              _respeta_needs_input_grad),
    ],
    construir=construir_lineal_tanh, observar=observar_lineal_tanh,
    contexto=contexto_lineal_tanh)


def lineal_tanh_por_autograd(x, weight, bias, grad_output):
    """The public oracle: autograd through torch.nn.functional.linear and torch.tanh."""
    with torch.enable_grad():
        hojas = [t.detach().clone().requires_grad_(True) for t in (x, weight, bias)]
        salida = torch.tanh(torch.nn.functional.linear(*hojas))
        grads = torch.autograd.grad(salida, hojas, grad_output)
    return {"salida": salida.detach(), "grads": list(grads)}


def comprobar_linear_tanh(linear_tanh):
    """Public check: values and gradients against autograd, what ctx saved, needs_input_grad."""
    caso = caso_en_proceso(LINEAR_TANH, linear_tanh, 2, (5, 4, 3, "float64"),
                           lineal_tanh_por_autograd)
    comprobar(LINEAR_TANH.partes, caso,
              "Gradientes correctos, solo lo necesario guardado y needs_input_grad respetado.")


# ---------------------------------------------------------------- exercise 3: quantize_ste
def construir_cuantizador(generador, forma):
    """x (requires grad), step = 2^-k, levels and an upstream gradient.

    ``forma`` = (n, k, levels, dtype); about a fifth of x falls outside the range, and one
    element sits exactly on each end of it (exact in binary: the mask is ``<=``, not ``<``).
    None is placed on a rounding tie: the statement does not say which way those go.
    """
    n, k, niveles, nombre_dtype = forma
    dtype = getattr(torch, nombre_dtype)
    paso = 2.0 ** -k
    x = 0.8 * niveles * paso * torch.randn(n, generator=generador, dtype=dtype)
    arriba, abajo = torch.randperm(n, generator=generador)[:2].tolist()
    x[arriba], x[abajo] = niveles * paso, -niveles * paso
    peso = torch.randn(n, generator=generador, dtype=dtype)
    return {"x": x.requires_grad_(True), "step": paso, "levels": niveles, "grad_output": peso}


def observar_cuantizador(quantize_ste, entradas):
    x = entradas["x"]
    observacion, salida = _llamada(quantize_ste, x, entradas["step"], entradas["levels"])
    observacion["despues"] = fotografiar(entradas)
    observacion.update(observar_gradientes(salida, [x], entradas["grad_output"]))
    return observacion


def contexto_cuantizador(forma):
    return {"factores": {"cuantiza_sin_escalar": 2.0 ** forma[1]},
            "limite": forma[2] * 2.0 ** -forma[1]}


def _salida_cuantizada(caso):
    resultado = _tensor_de_salida(caso)
    sin_recorte = caso.datos["esperado"]["sin_recorte"]
    if (cerca(resultado, sin_recorte)
            and not cerca(resultado, caso.datos["esperado"]["salida"])):
        fallar("cuantiza_sin_recorte", nombre="la salida")
    comparar("la salida", resultado, caso.datos["esperado"]["salida"], caso.datos["factores"])


def _gradiente_ste(caso):
    gradientes = _verificar_backward(caso, "el gradiente de x")
    obtenido, esperado = gradientes[0], caso.datos["esperado"]["grads"][0]
    if type(obtenido) is torch.Tensor and obtenido.shape == esperado.shape:
        if not obtenido.any() and esperado.any():
            fallar("redondeo_sin_ste", nombre="el gradiente de x")
        if cerca(obtenido, caso.datos["esperado"]["arriba"]) and not cerca(obtenido, esperado):
            fallar("ste_sin_recorte", nombre="el gradiente de x")
        borde = caso.datos["originales"]["x"]["valores"].abs() == caso.datos["limite"]
        if (borde.any() and cerca(obtenido, esperado * ~borde)
                and not cerca(obtenido, esperado)):
            fallar("ste_borde_excluido", nombre="el gradiente de x")
    comparar("el gradiente de x", obtenido, esperado)


QUANTIZE_STE = Ejercicio(
    funcion="quantize_ste",
    partes=[
        Parte("forward: redondeo a la rejilla y recorte", 0.75, _salida_cuantizada),
        Parte("backward: paso directo dentro del rango, 0 fuera", 1.0, _gradiente_ste),
        Parte("entradas intactas", 0.25, verificar_intactas, requisito=True),
    ],
    construir=construir_cuantizador, observar=observar_cuantizador,
    contexto=contexto_cuantizador)


def cuantizador_por_busqueda(x, step, levels, grad_output):
    """The public oracle: the nearest point of the grid, found by search; a mask for the grad."""
    with torch.no_grad():
        rejilla = step * torch.arange(-levels, levels + 1, dtype=x.dtype)
        cerca_de = (x.detach()[:, None] - rejilla[None, :]).abs().argmin(dim=1)
        dentro = (x.detach().abs() <= levels * step).to(x.dtype)
        sin_recorte = torch.round(x.detach() / step) * step
    return {"salida": rejilla[cerca_de], "grads": [grad_output * dentro],
            "sin_recorte": sin_recorte, "arriba": grad_output}


def comprobar_quantize_ste(quantize_ste):
    """Public check: the quantized values and the straight-through gradient on one example."""
    caso = caso_en_proceso(QUANTIZE_STE, quantize_ste, 3, (12, 2, 4, "float64"),
                           cuantizador_por_busqueda)
    comprobar(QUANTIZE_STE.partes, caso,
              "Valores cuantizados y gradiente de paso directo (con recorte) correctos.")


# In notebook order.
EJERCICIOS = ejercicios(STABLE_SOFTPLUS, LINEAR_TANH, QUANTIZE_STE)
