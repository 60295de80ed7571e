"""Chapter 3: how each exercise is built, observed and scored, and its public checks.

Injected into the chapter 3 student notebook by the build; the hidden tests use the
same exercises on other inputs against the reference. The public oracles compute the
full-batch gradients with autograd and apply clipping by its formula, never with the
reference's loop, so reading this code does not give the answers away.

What a call may change is observed, not assumed: ``estado`` before and after every call
(grad mode, values, ``requires_grad`` and ``.grad`` of everything passed in, every
submodule's mode, the loss's and the optimizer's settings, the micro-batches). Each
training step is judged from the student's own parameters just before it (a mistake in
one step never makes the next ones look wrong), and the final parameters by replaying
the optimizer on the gradients each step saw.
"""

import copy

import torch

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
    observar_llamada,
)
from autograder.student.diagnosis import (
    INVERSOS,
    Diagnostico,
    cerca,
    diagnosticar_lista,
    diagnosticar_tensor,
)
from autograder.student.messages import registrar

__all__ = ["comprobar_accumulate_gradients", "comprobar_train_with_accumulation",
           "comprobar_clipped_step"]

# id -> (title, Spanish explanation, Spanish hint, English explanation)
MENSAJES = {
    "grad_previo_sin_borrar": (
        "Gradientes viejos en .grad",
        "`{nombre}` es el gradiente correcto más lo que `.grad` ya tenía antes de llamar a tu "
        "función: los gradientes del paso anterior se colaron en este.",
        "`backward()` suma sobre lo que encuentra en `.grad`. ¿Qué había en `.grad` antes de tu "
        "primer micro-lote?",
        "`{nombre}` is the right gradient plus what .grad held before the call (zero it first)."),
    "zero_grad_en_cada_micro_lote": (
        "zero_grad dentro del bucle de micro-lotes",
        "`{nombre}` es solo la contribución del último micro-lote: al poner los gradientes a "
        "cero antes de cada micro-lote borraste lo que habías acumulado.",
        "¿Cuántas veces pones los gradientes a cero por paso del optimizador? Si lo haces en "
        "cada micro-lote, ¿qué queda de los anteriores?",
        "`{nombre}` holds only the last micro-batch: gradients were zeroed inside the loop."),
    "grad_borrado_al_final": (
        "Gradientes borrados al terminar",
        "Tus `backward()` llegaron a los parámetros, pero al terminar su `.grad` está vacío "
        "(None o ceros): los borraste después de acumularlos.",
        "El resultado de esta función es justo lo que queda en `.grad`: ¿en qué momento lo "
        "pones a cero?",
        "Backward reached the parameters, but their .grad was cleared before returning."),
    "micro_lotes_incorrectos": (
        "Micro-lotes incorrectos",
        "El modelo recibió {llamadas} lote(s), de {tamanos} filas; se esperaban {accum} "
        "micro-lotes de {tamano} filas.",
        "¿Cuántas filas pasan por el modelo en cada pase hacia adelante? Cada micro-lote es uno "
        "de los `accum` trozos iguales del lote, y el lote entero nunca pasa de una vez.",
        "The model ran {llamadas} times on {tamanos} rows; expected {accum} calls on {tamano}."),
    "micro_lotes_no_consecutivos": (
        "Micro-lotes de filas salteadas",
        "El modelo recibió {accum} micro-lotes del tamaño correcto, pero no son trozos "
        "consecutivos de `x`: el micro-lote {indice} no son las filas {desde} a {hasta}.",
        "¿Qué filas forman cada micro-lote? Tienen que ser filas seguidas, en orden, no filas "
        "salteadas.",
        "Micro-batch {indice} is not rows {desde}..{hasta} of x: rows were not consecutive."),
    "dividido_por_filas": (
        "Dividido por el tamaño del micro-lote",
        "`{nombre}` es {razon:.3g} × el valor correcto: dividiste la pérdida de cada "
        "micro-lote por su número de filas y no por el número de micro-lotes.",
        "`loss_fn` ya promedia sobre las filas. ¿Por qué número tienes que dividir para "
        "promediar también los micro-lotes?",
        "`{nombre}` is {razon:.3g} × the expected value: divided by the micro-batch size."),
    "perdida_sumada_sin_dividir": (
        "Pérdida devuelta sin dividir",
        "`{nombre}` es {razon:.3g} × el valor correcto: sumaste las pérdidas de los "
        "micro-lotes sin dividirlas por `accum`.",
        "¿La pérdida que devuelves es la del lote entero? Compara su escala con la de un solo "
        "micro-lote.",
        "`{nombre}` is accum × the expected value: the undivided losses were summed."),
    "perdida_del_ultimo_micro_lote": (
        "Pérdida de un solo micro-lote",
        "`{nombre}` es la pérdida del último micro-lote, no la del lote entero.",
        "¿Qué pérdida devuelves: la del último micro-lote o la de todos?",
        "`{nombre}` is the loss of the last micro-batch only."),
    "ciclo_final_olvidado": (
        "Ciclo final olvidado",
        "Los últimos {resto} micro-lotes no llegaron a ningún paso del optimizador: {lotes} "
        "micro-lotes no son un múltiplo de `accum = {accum}` y el bucle solo da un paso cada "
        "`accum`.",
        "¿Qué pasa con los últimos micro-lotes cuando su número no es múltiplo de `accum`? "
        "Revisa la condición con la que decides dar un paso.",
        "The last {resto} micro-batches never reached an optimizer step (partial cycle)."),
    "ciclo_final_dividido_por_accum": (
        "Ciclo final dividido por accum",
        "`{nombre}` es {razon:.3g} × el valor correcto: el último ciclo tiene menos "
        "micro-lotes que `accum` y dividiste su pérdida por `accum`.",
        "¿Cuántos micro-lotes tiene de verdad el último ciclo, y por qué número divides sus "
        "pérdidas?",
        "`{nombre}` is {razon:.3g} × the expected value: the partial cycle divided by accum."),
    "micro_lote_mal_pesado": (
        "Un micro-lote con otro divisor",
        "En el paso {paso}, el micro-lote {indice} de su ciclo cuenta como si hubieras dividido "
        "su pérdida por {divisor:.3g}, no por {lotes} como los demás de ese ciclo: el resto "
        "del gradiente está bien.",
        "Todos los micro-lotes de un ciclo se dividen por el mismo número, los micro-lotes "
        "que tiene ese ciclo: revisa la condición con la que eliges el divisor de cada uno.",
        "In step {paso}, micro-batch {indice} of its cycle was divided by {divisor:.3g}, not "
        "{lotes} like the others."),
    "registro_dividido": (
        "Pérdida registrada ya dividida",
        "`{nombre}` es la media de las pérdidas **divididas** por el tamaño de su ciclo: "
        "registraste lo que pasa a `backward()`, no la pérdida de cada micro-lote.",
        "¿Qué pérdida registras: la que pasa a `backward()` (dividida) o la del ciclo? Compara "
        "su escala con la de un paso sin acumulación.",
        "`{nombre}` averages the losses already divided by the cycle length."),
    "numero_de_perdidas": (
        "Número de pérdidas registradas",
        "Devolviste {longitud} pérdidas; se esperaba una por paso del optimizador: "
        "{longitud_esperada}.",
        "¿Cuántas pérdidas tiene la lista al final? Debe haber una por paso del optimizador.",
        "{longitud} losses were returned; one per optimizer step ({longitud_esperada}) was "
        "expected."),
    "pasos_del_optimizador": (
        "Número de pasos del optimizador",
        "`optimizer.step()` se ejecutó {veces} veces; se esperaban {esperados}.",
        "Cuenta los pasos que das: ¿uno por ciclo de acumulación, incluido el ciclo final "
        "incompleto?",
        "optimizer.step() ran {veces} times; expected {esperados}."),
    "parametros_fuera_del_optimizador": (
        "Parámetros cambiados fuera del optimizador",
        "Los parámetros al terminar no son los que dejan los pasos de `optimizer.step()` con "
        "los gradientes que vio cada uno: algo más los cambió.",
        "¿Hay algo, además de `optimizer.step()`, que cambie los parámetros o la tasa de "
        "aprendizaje del optimizador?",
        "The final parameters are not what optimizer.step() left: something else changed them."),
    "paso_sin_gradientes": (
        "Paso sin gradientes",
        "Cuando llegó `optimizer.step()`, `.grad` estaba vacío (None o ceros): los "
        "gradientes se borraron entre `backward()` y `step()`.",
        "¿Qué hay en `.grad` cuando llamas a `step()`? Revisa dónde pones los gradientes a "
        "cero.",
        "optimizer.step() saw no gradients: they were cleared between backward and step."),
    "recorte_fuera_de_sitio": (
        "Recorte fuera de sitio",
        "`optimizer.step()` usó los gradientes sin recortar: el recorte llegó tarde (después "
        "de `step`), demasiado pronto (antes de `backward`, cuando aún no había gradientes) "
        "o no llegó.",
        "¿Qué gradientes recortas? El recorte tiene que actuar sobre los gradientes de este "
        "paso y antes de que el optimizador los use.",
        "optimizer.step() used unclipped gradients: clipping ran after step or before backward."),
    "recorte_por_parametro": (
        "Recorte parámetro a parámetro",
        "Recortaste la norma de cada parámetro por separado; `clip_grad_norm_` mide la norma "
        "conjunta de todos los gradientes y los escala a todos por el mismo factor.",
        "¿Cuántas veces llamas a `clip_grad_norm_`? La norma que se recorta es la de todos los "
        "gradientes juntos.",
        "Each parameter was clipped on its own; the total norm of all gradients was expected."),
    "recorte_por_valor": (
        "Recorte por valor",
        "Recortaste cada componente a [−max_norm, max_norm] (`clip_grad_value_`); se pedía "
        "recortar la norma global.",
        "¿Tu recorte conserva la dirección del gradiente? Recortar elemento a elemento no lo "
        "hace.",
        "Gradients were clipped by value; clipping by the total norm was expected."),
    "recorte_siempre": (
        "Reescalado aunque no haga falta",
        "La norma del gradiente ya era menor que `max_norm` y aun así lo reescalaste hasta "
        "`max_norm`: recortar solo puede encoger el gradiente, nunca agrandarlo.",
        "Si la norma no pasa de `max_norm`, ¿qué debe pasarle al gradiente?",
        "Gradients were rescaled up to max_norm although their norm was already below it."),
    "recorte_a_otra_norma": (
        "Recorte a otra norma",
        "Los gradientes se recortaron a norma {vista:.4g}, no a `max_norm` = {max_norm:.4g}.",
        "¿De dónde sale tu umbral de recorte? La función lo recibe como argumento.",
        "Gradients were clipped to norm {vista:.4g}, not to max_norm = {max_norm:.4g}."),
    "norma_l1": (
        "Norma L1",
        "`{nombre}` usa la norma L1 (suma de valores absolutos); `clip_grad_norm_` usa la "
        "euclídea (L2) de todos los gradientes juntos.",
        "¿Qué norma calculas? Se pide la norma L2 de todos los gradientes juntos, como la mide "
        "`clip_grad_norm_`.",
        "`{nombre}` uses the L1 norm; the total L2 norm was expected."),
    "devuelve_la_perdida": (
        "Devuelve la pérdida",
        "`{nombre}` es el valor de la pérdida, no la norma del gradiente.",
        "¿Qué devuelve la función: la pérdida o la norma? Relee el enunciado.",
        "`{nombre}` is the loss, not the gradient norm."),
    "norma_tras_recorte": (
        "Norma después del recorte",
        "Devolviste {valor:.4g}, la norma después de recortar (igual a `max_norm`); se pedía "
        "la de antes.",
        "¿Mides la norma antes o después de recortar? Se pide la de antes (mira qué devuelve "
        "`clip_grad_norm_`).",
        "The returned norm ({valor:.4g}) is the post-clipping one; the pre-clip norm was asked."),
}
registrar(MENSAJES)


# ---------------------------------------------------------------- shared helpers
def diagnosticar(nombre, obtenido, esperado, factores=None, alternativas=None, rtol=None,
                 atol=None):
    """``diagnosticar_tensor``, with this chapter's ratios named by this chapter.

    Nothing here squares anything: a ratio of 2 or ½ is one of ``factores`` (accum = 2,
    a final cycle of half the micro-batches...) or a scale we do not recognise, never
    "the 2 of the derivative of a square"."""
    diagnostico = diagnosticar_tensor(nombre, obtenido, esperado, factores, alternativas,
                                      rtol, atol)
    if diagnostico is None or diagnostico.id != "factor_2":
        return diagnostico
    razon = diagnostico.hechos["razon"]
    for nombre_factor, valor in (factores or {}).items():
        if valor not in (0, 1) and abs(razon / valor - 1) < 1e-3:
            return Diagnostico(nombre_factor, diagnostico.hechos)
        if valor not in (0, 1) and nombre_factor in INVERSOS and abs(razon * valor - 1) < 1e-3:
            return Diagnostico(INVERSOS[nombre_factor], diagnostico.hechos)
    return Diagnostico("escala_desconocida" if obtenido.numel() > 1 else "no_reconocido",
                       diagnostico.hechos)


def comparar(nombre, obtenido, esperado, factores=None, alternativas=None, rtol=None,
             atol=None):
    exigir(diagnosticar(nombre, obtenido, esperado, factores, alternativas, rtol, atol))


def red_pequena(generador, D, H, K, dtype=torch.float64, anidada=False, congelada=False,
                modo="train"):
    """A small Linear–Tanh–Linear model whose weights come from ``generador``.

    ``anidada``: the first layer and its activation inside a Sequential of their own
    (parameter names change, values do not). ``congelada``: the first bias does not
    require grad (a frozen parameter: its ``.grad`` stays None). ``modo``: "train",
    "eval", or "mixto" (the model in training mode, its first submodule in eval mode);
    with no Dropout nor BatchNorm the mode changes no value, and the call must leave it
    as it was."""
    primera = [torch.nn.Linear(D, H), torch.nn.Tanh()]
    capas = [torch.nn.Sequential(*primera)] if anidada else primera
    modelo = torch.nn.Sequential(*capas, torch.nn.Linear(H, K)).double()
    with torch.no_grad():
        for p in modelo.parameters():
            p.copy_(torch.randn(p.shape, generator=generador, dtype=torch.float64))
    modelo = modelo.to(dtype)
    if congelada:
        list(modelo.parameters())[1].requires_grad_(False)
    modelo.train(modo != "eval")
    if modo == "mixto":
        modelo[0].eval()
    return modelo


def modo_de(modelo):
    """"train", "eval" or "mixto", as ``red_pequena`` builds them."""
    modos = {m.training for m in modelo.modules()}
    return "mixto" if len(modos) > 1 else "train" if modos == {True} else "eval"


def datos(generador, tipo, N, D, K, dtype=torch.float64):
    """(x, y, loss_fn): regression with MSE ("mse") or Huber ("huber"), or K-class
    cross-entropy ("ce"); every loss averages over the batch."""
    x = torch.randn(N, D, generator=generador, dtype=torch.float64).to(dtype)
    if tipo == "ce":
        return x, torch.randint(0, K, (N,), generator=generador), torch.nn.CrossEntropyLoss()
    y = (2 * torch.randn(N, K, generator=generador, dtype=torch.float64)).to(dtype)
    return x, y, torch.nn.HuberLoss(delta=0.5) if tipo == "huber" else torch.nn.MSELoss()


def gradientes_viejos(generador, modelo, congelados=False):
    """Leftovers of an earlier step in every trainable parameter's ``.grad`` (and in the
    frozen ones' too with ``congelados``: trained, then frozen)."""
    for p in modelo.parameters():
        if p.requires_grad or congelados:
            p.grad = torch.randn(p.shape, generator=generador, dtype=torch.float64).to(p.dtype)


def estado_de(entradas):
    """``estado`` of the inputs, lists of (x, y) micro-batches included: their length and
    every tensor in them, by name (``batches[3][0]``)."""
    planas, optimizadores = {}, {}
    for nombre, valor in entradas.items():
        if type(valor) in (list, tuple):
            for i, lote in enumerate(valor):
                for j, t in enumerate(lote if type(lote) in (list, tuple) else [lote]):
                    planas[f"{nombre}[{i}][{j}]"] = t
        elif isinstance(valor, torch.optim.Optimizer):
            optimizadores[nombre] = valor
        else:
            planas[nombre] = valor
    foto = estado(planas)
    for nombre, valor in entradas.items():
        if type(valor) in (list, tuple):
            foto[f"len({nombre})"] = len(valor)
    for nombre, opt in optimizadores.items():
        foto.update(foto_del_optimizador(nombre, opt))
    return foto


def foto_del_optimizador(nombre, opt):
    """An optimizer's hyperparameters per group and its state, with ``estado``'s names; the
    state in parameter order (tensors of different ranks cannot be sorted together)."""
    foto = {}
    for i, grupo in enumerate(opt.param_groups):
        for clave, v in grupo.items():
            if clave != "params":
                foto[f"{nombre}.param_groups[{i}].{clave}"] = (
                    v if type(v) in (bool, int, float, str, type(None)) else repr(v))
    parametros = [p for grupo in opt.param_groups for p in grupo["params"]]
    foto[f"{nombre}.state"] = repr([
        sorted((k, v.detach().tolist() if isinstance(v, torch.Tensor) else repr(v))
               for k, v in opt.state[p].items()) if p in opt.state else None
        for p in parametros])
    return foto


def cambios_de_parametros(modelo, nombre="model"):
    """The ``estado`` names a training step may change: values and ``.grad`` of each
    parameter."""
    return [f"{nombre}.{k}{sufijo}" for k, _ in modelo.named_parameters()
            for sufijo in ("", ".grad")]


def verificar_sin_efectos(caso, permitidos=()):
    """The call changed nothing it was given (see ``estado_de``), but for ``permitidos``."""
    distintos = cambios(caso.datos["estado_antes"], caso.datos["estado_despues"], permitidos)
    # a list that shrank is named first, before the items that went with it
    distintos = sorted(distintos, key=lambda n: not n.startswith("len("))
    if distintos:
        fallar("efecto_secundario", que=", ".join(f"`{n}`" for n in distintos[:4])
               + (f" y {len(distintos) - 4} más" if len(distintos) > 4 else ""))


def tipo_registrado(valor):
    """How a logged value came back: "numero", "grafo" (tensor with grad_fn), "tensor"..."""
    if isinstance(valor, torch.Tensor):
        return "grafo" if valor.grad_fn is not None else "tensor"
    if type(valor) in (int, float):
        return "numero"
    return type(valor).__name__


def _copiar(tensores):
    return [None if t is None else t.detach().clone() for t in tensores]


def _copiar_grads(parametros):
    return _copiar([p.grad for p in parametros])


def _llamar_guardando(funcion, entradas):
    """observar_llamada, plus the raw value the student returned (to tell its type)."""
    crudo = {}

    def guardar(*args):
        crudo["valor"] = funcion(*args)
        return crudo["valor"]

    return observar_llamada(guardar, *entradas.values()), crudo.get("valor")


def espiar_pasos(optimizador, parametros):
    """Record, at each ``optimizer.step()``, the gradients it sees and the parameters it is
    about to update; returns (gradients, parameters, hook handle)."""
    pasos, valores = [], []

    def antes_del_paso(opt, args, kwargs):
        pasos.append(_copiar_grads(parametros))
        valores.append(_copiar(parametros))

    return pasos, valores, optimizador.register_step_pre_hook(antes_del_paso)


def _vacios(gradientes):
    return all(g is None or not g.any() for g in gradientes)


def _mas(a, b):
    """Item by item a + b, None counting as zero."""
    return [x if y is None else y if x is None else x + y for x, y in zip(a, b)]


def _todos_cerca(obtenidos, esperados):
    if obtenidos is None or esperados is None or len(obtenidos) != len(esperados):
        return False
    for o, e in zip(obtenidos, esperados):
        if e is None:
            if o is not None and o.any():
                return False
        elif not (type(o) is torch.Tensor and o.shape == e.shape and o.dtype == e.dtype
                  and cerca(o, e)):
            return False
    return True


def comparar_gradientes(donde, obtenidos, esperados, factores=None):
    """Item by item, each named "el `.grad` del parámetro i" + ``donde``; a frozen
    parameter (expected None) must have no gradient (None or zeros)."""
    if type(obtenidos) not in (list, tuple) or len(obtenidos) != len(esperados):
        exigir(diagnosticar_lista(f"los gradientes{donde}", obtenidos, esperados))
    for i, (obtenido, esperado) in enumerate(zip(obtenidos, esperados)):
        if esperado is None:
            if obtenido is not None and obtenido.any():
                comparar(f".grad del parámetro congelado {i}{donde}", obtenido,
                         torch.zeros_like(obtenido))
            continue
        comparar(f".grad del parámetro {i}{donde}", obtenido, esperado, factores)


def _numero(caso, nombre, aceptar_tensor=False):
    """The student's returned value as a float64 tensor, or a diagnosis of its type."""
    tipo, valor = caso.datos["tipo_resultado"], caso.resultado
    if tipo == "grafo":
        fallar("grafo_vivo", nombre=nombre)
    if tipo == "tensor":
        if not aceptar_tensor:
            fallar("registro_tensor", nombre=nombre)
        if valor.numel() != 1 or valor.dim() != 0:
            fallar("tipo", nombre=nombre, esperado="un float (o un tensor de dimensión 0)",
                   tipo=f"tensor de forma {tuple(valor.shape)}")
        return valor.detach().double().reshape(())
    if tipo != "numero":
        fallar("tipo", nombre=nombre, esperado="un float de Python", tipo=tipo)
    return torch.tensor(float(valor), dtype=torch.float64)


def _funcional(modelo):
    """``(parametros, x) -> model(x)`` with the given parameter values (``functional_call``)."""
    copia = copy.deepcopy(modelo)
    nombres = [k for k, _ in copia.named_parameters()]

    def salida(parametros, x):
        return torch.func.functional_call(copia, dict(zip(nombres, parametros)), (x,))

    return salida


def gradiente_medio(modelo, loss_fn):
    """``(parametros, lotes) -> gradients`` of the mean of ``loss_fn`` over the (x, y)
    batches in ``lotes``, at those parameter values (None for a frozen parameter)."""
    salida = _funcional(modelo)
    entrenables = [p.requires_grad for p in modelo.parameters()]

    def gradientes(parametros, lotes):
        hojas = [p.detach().clone().requires_grad_(e) for p, e in zip(parametros, entrenables)]
        with torch.enable_grad():
            media = sum(loss_fn(salida(hojas, x), y) for x, y in lotes) / len(lotes)
            vivos = torch.autograd.grad(media, [h for h in hojas if h.requires_grad])
        vivos = iter(vivos)
        return [next(vivos) if e else None for e in entrenables]

    return gradientes


def perdida_media(modelo, loss_fn):
    """``(parametros, lotes) -> float``: the mean of ``loss_fn`` over ``lotes``."""
    salida = _funcional(modelo)

    def perdida(parametros, lotes):
        with torch.no_grad():
            return sum(loss_fn(salida(parametros, x), y).item() for x, y in lotes) / len(lotes)

    return perdida


def repetidor(modelo, optimizador):
    """``gradientes por paso -> parámetros``: what the optimizer, from the state it had
    when the call began, leaves after one step with each list of gradients."""
    gemelo = copy.deepcopy((modelo, optimizador))

    def repetir(pasos):
        copia, opt = copy.deepcopy(gemelo)
        parametros = list(copia.parameters())
        for gradientes in pasos:
            for p, g in zip(parametros, gradientes):
                p.grad = None if g is None else g.clone()
            opt.step()
        return [p.detach().clone() for p in parametros]

    return repetir


# ---------------------------------------------------------- exercise 1: accumulate_gradients
def construir_acumulacion(generador, forma):
    """model, loss_fn, x, y, accum for ``forma`` = (tipo, m, accum, D, H, K[, dtype,
    anidada, congelada, viejos, modo]): N = m·accum rows.

    ``viejos`` (default True): the parameters arrive with stale gradients in ``.grad``, as
    after an earlier step."""
    tipo, m, accum, D, H, K = forma[:6]
    dtype, anidada, congelada, viejos, modo = _resto(
        forma[6:], ("float64", False, False, True, "train"))
    dtype = getattr(torch, dtype)
    modelo = red_pequena(generador, D, H, K, dtype, anidada, congelada, modo)
    x, y, loss_fn = datos(generador, tipo, m * accum, D, K, dtype)
    if viejos:
        gradientes_viejos(generador, modelo, congelados=True)
    return {"model": modelo, "loss_fn": loss_fn, "x": x, "y": y, "accum": accum}


def _resto(valores, por_defecto):
    """The optional tail of a shape: given values, then the defaults of the missing ones."""
    return (*valores, *por_defecto[len(valores):])


def observar_acumulacion(accumulate_gradients, entradas):
    """Returned loss and its type, each parameter's .grad afterwards, the rows the model
    received in each call, how many gradients reached the parameters, and ``estado``
    before and after."""
    modelo = entradas["model"]
    parametros = list(modelo.parameters())
    vistas, llegadas = [], []
    ganchos = [modelo.register_forward_pre_hook(lambda modulo, args: vistas.append(
        args[0].detach().clone() if args and isinstance(args[0], torch.Tensor) else None))]
    ganchos += [p.register_post_accumulate_grad_hook(lambda p: llegadas.append(1))
                for p in parametros if p.requires_grad]
    antes = estado_de(entradas)
    try:
        observacion, crudo = _llamar_guardando(accumulate_gradients, entradas)
    finally:
        for gancho in ganchos:
            gancho.remove()
    observacion.update(tipo_resultado=tipo_registrado(crudo), vistas=vistas,
                       llegadas=len(llegadas), gradientes=_copiar_grads(parametros),
                       estado_antes=antes, estado_despues=estado_de(entradas))
    return observacion


def contexto_acumulacion(forma):
    m, accum = forma[1], forma[2]
    factores = {"sin_dividir_por_accum": accum}
    if m not in (1, accum):  # dividing by m instead of accum: a factor accum / m
        factores["dividido_por_filas"] = accum / m
    return {"accum": accum, "tamano": m, "factores": factores}


def _gradientes_acumulados(caso):
    obtenidos, esperado = caso.datos["gradientes"], caso.datos["esperado"]
    if _todos_cerca(obtenidos, esperado["gradientes"]):
        return
    if len(caso.datos["vistas"]) < caso.datos["accum"]:
        _micro_lotes(caso)  # micro-batches the model never saw: their gradients are missing
    if _vacios(obtenidos):
        if caso.datos["llegadas"]:
            fallar("grad_borrado_al_final")
        fallar("none_sin_backward", nombre=".grad")
    if not _vacios(esperado["previos"]) and _todos_cerca(
            obtenidos, _mas(esperado["gradientes"], esperado["previos"])):
        fallar("grad_previo_sin_borrar", nombre=".grad")
    if caso.datos["accum"] > 1 and _todos_cerca(obtenidos, esperado["ultimo"]):
        fallar("zero_grad_en_cada_micro_lote", nombre=".grad")
    comparar_gradientes("", obtenidos, esperado["gradientes"], caso.datos["factores"])


def _perdida_del_lote(caso):
    valor = _numero(caso, "la pérdida devuelta")
    esperado = caso.datos["esperado"]
    accum = caso.datos["accum"]
    if cerca(valor, esperado["perdida"]):
        return
    if len(caso.datos["vistas"]) < accum:
        _micro_lotes(caso)  # micro-batches the model never saw: their losses are missing
    if accum > 1 and cerca(valor, esperado["perdida"] * accum):
        fallar("perdida_sumada_sin_dividir", nombre="la pérdida devuelta", razon=accum)
    if accum > 1 and cerca(valor, esperado["ultima_perdida"]) and not cerca(
            esperado["ultima_perdida"], esperado["perdida"]):
        fallar("perdida_del_ultimo_micro_lote", nombre="la pérdida devuelta")
    comparar("la pérdida devuelta", valor, esperado["perdida"], caso.datos["factores"])


def _micro_lotes(caso):
    vistas, bloques = caso.datos["vistas"], caso.datos["esperado"]["bloques"]
    accum, tamano = caso.datos["accum"], caso.datos["tamano"]
    tamanos = [-1 if v is None or v.dim() == 0 else int(v.shape[0]) for v in vistas]
    if tamanos != [tamano] * accum:
        fallar("micro_lotes_incorrectos", llamadas=len(tamanos), tamanos=str(tamanos),
               accum=accum, tamano=tamano)
    for i, (vista, bloque) in enumerate(zip(vistas, bloques)):
        if vista.shape != bloque.shape or not torch.equal(vista.to(bloque.dtype), bloque):
            fallar("micro_lotes_no_consecutivos", accum=accum, indice=i + 1,
                   desde=i * tamano, hasta=(i + 1) * tamano - 1)


def _sin_efectos_acumulacion(caso):
    permitidos = [n for n in caso.datos["estado_antes"]
                  if n.startswith("model.") and n.endswith(".grad")]
    verificar_sin_efectos(caso, permitidos)


ACCUMULATE_GRADIENTS = Ejercicio(
    funcion="accumulate_gradients",
    partes=[
        Parte("gradientes del lote completo en .grad", 1.5, _gradientes_acumulados),
        Parte("devuelve la pérdida del lote completo (un float)", 0.5, _perdida_del_lote),
        Parte("accum pases hacia adelante, uno por trozo consecutivo de N/accum filas", 0.5,
              _micro_lotes),
        Parte("no cambia nada más que .grad (x, y, parámetros, loss_fn, modos, autograd)",
              0.5, _sin_efectos_acumulacion, requisito=True),
    ],
    construir=construir_acumulacion, observar=observar_acumulacion,
    contexto=contexto_acumulacion)


def gradientes_del_lote_completo(model, loss_fn, x, y, accum):
    """The public oracle: one gradient over the whole batch (what accumulation must equal),
    the micro-batches the model must see, and two classic wrong answers."""
    parametros = list(model.parameters())
    m = x.shape[0] // accum
    bloques = [x[i * m:(i + 1) * m] for i in range(accum)]
    medio = gradiente_medio(model, loss_fn)
    ultimo = medio(parametros, [(bloques[-1], y[-m:])])
    with torch.no_grad():
        perdida = loss_fn(model(x), y).double()
        ultima_perdida = loss_fn(model(bloques[-1]), y[-m:]).double()
    return {"gradientes": medio(parametros, [(x, y)]), "perdida": perdida,
            "previos": _copiar_grads(parametros), "bloques": [b.clone() for b in bloques],
            "ultimo": [None if g is None else g / accum for g in ultimo],
            "ultima_perdida": ultima_perdida}


def comprobar_accumulate_gradients(accumulate_gradients):
    """Comprobación pública: los gradientes acumulados frente a un solo gradiente sobre el lote
    entero; el modelo llega con gradientes viejos y su primera capa en modo evaluación."""
    caso = caso_en_proceso(ACCUMULATE_GRADIENTS, accumulate_gradients, 1,
                           ("mse", 2, 4, 3, 5, 2, "float64", False, False, True, "mixto"),
                           gradientes_del_lote_completo)
    comprobar(ACCUMULATE_GRADIENTS.partes, caso,
              "Tus gradientes acumulados son los del lote completo (en este ejemplo).")


# ------------------------------------------------------- exercise 2: train_with_accumulation
TASA = 0.1


def optimizador(generador, modelo, tipo, lr, usado):
    """SGD ("sgd"), SGD with momentum ("momento") or Adam ("adam") over the model's
    trainable parameters; ``usado``: it already took a step (it has state: momentum
    buffers, Adam's moments), as in the middle of a training run."""
    parametros = [p for p in modelo.parameters() if p.requires_grad]
    if tipo == "adam":
        opt = torch.optim.Adam(parametros, lr=lr)
    else:
        opt = torch.optim.SGD(parametros, lr=lr, momentum=0.9 if tipo == "momento" else 0.0)
    if usado:
        gradientes_viejos(generador, modelo)
        opt.step()
        for p in parametros:
            p.grad = None
    return opt


def construir_ciclos(generador, forma):
    """model, loss_fn, optimizer, batches, accum for ``forma`` = (tipo, lotes, m, accum, D,
    H, K[, optim, lr, usado, viejos, anidada, modo]): ``lotes`` micro-batches of m rows
    each.

    Defaults: plain SGD with lr 0.1 that took no step yet, no stale gradients, a flat
    model."""
    tipo, lotes, m, accum, D, H, K = forma[:7]
    optim, lr, usado, viejos, anidada, modo = _resto(
        forma[7:], ("sgd", TASA, False, False, False, "train"))
    modelo = red_pequena(generador, D, H, K, anidada=anidada, modo=modo)
    batches = []
    for _ in range(lotes):
        x, y, loss_fn = datos(generador, tipo, m, D, K)
        batches.append((x, y))
    opt = optimizador(generador, modelo, optim, lr, usado)
    if viejos:
        gradientes_viejos(generador, modelo)
    return {"model": modelo, "loss_fn": loss_fn, "optimizer": opt, "batches": batches,
            "accum": accum}


def observar_ciclos(train_with_accumulation, entradas):
    """Returned losses and their types, the gradients and parameters at each step, the
    parameters afterwards, and ``estado`` before and after."""
    parametros = list(entradas["model"].parameters())
    antes = estado_de(entradas)
    pasos, valores, gancho = espiar_pasos(entradas["optimizer"], parametros)
    try:
        observacion, crudo = _llamar_guardando(train_with_accumulation, entradas)
    finally:
        gancho.remove()
    tipos = [tipo_registrado(v) for v in crudo] if type(crudo) in (list, tuple) else []
    observacion.update(pasos=pasos, valores=valores, tipos=tipos, finales=_copiar(parametros),
                       estado_antes=antes, estado_despues=estado_de(entradas))
    return observacion


def contexto_ciclos(forma):
    lotes, accum = forma[1], forma[3]
    return {"lotes": lotes, "accum": accum, "completos": lotes // accum,
            "resto": lotes % accum}


def _ciclo(caso, k):
    """The micro-batches of cycle k."""
    accum = caso.datos["accum"]
    return caso.datos["esperado"]["batches"][k * accum:(k + 1) * accum]


def _gradientes_del_paso(caso, k):
    """Step k saw the mean gradient of its cycle, at the parameters it was about to update."""
    pasos, valores, esperado = caso.datos["pasos"], caso.datos["valores"], caso.datos["esperado"]
    ciclo = _ciclo(caso, k)
    correctos = esperado["gradiente_medio"](valores[k], ciclo)
    if _todos_cerca(pasos[k], correctos):
        return
    if _vacios(pasos[k]):
        fallar("paso_sin_gradientes")
    if k > 0 and _todos_cerca(pasos[k], _mas(correctos, pasos[k - 1])):
        fallar("zero_grad_ausente")
    if k == 0 and not _vacios(esperado["previos"]) and _todos_cerca(
            pasos[0], _mas(correctos, esperado["previos"])):
        fallar("grad_previo_sin_borrar", nombre="el gradiente del paso 1")
    if len(ciclo) > 1:
        ultimo = esperado["gradiente_medio"](valores[k], ciclo[-1:])
        if any(_todos_cerca(pasos[k], [None if g is None else g / d for g in ultimo])
               for d in (len(ciclo), caso.datos["accum"])):
            fallar("zero_grad_en_cada_micro_lote", nombre=f".grad en el paso {k + 1}")
    if len(ciclo) > 1:
        _micro_lote_mal_pesado(caso, k, pasos[k], correctos)
    factores = {"sin_dividir_por_accum": caso.datos["accum"]}
    if len(ciclo) < caso.datos["accum"]:  # the final, partial cycle
        factores = {"ciclo_final_dividido_por_accum": len(ciclo) / caso.datos["accum"],
                    "sin_dividir_por_accum": len(ciclo)}
    comparar_gradientes(f" en el paso {k + 1}", pasos[k], correctos, factores)


def _plano(gradientes):
    return torch.cat([g.flatten().double() for g in gradientes if g is not None])


def _micro_lote_mal_pesado(caso, k, obtenidos, correctos):
    """Step k saw its cycle's mean gradient but for one micro-batch, weighed as if its loss
    had been divided by another number than the others'."""
    if any(o is None for o, c in zip(obtenidos, correctos) if c is not None):
        return
    ciclo, valores = _ciclo(caso, k), caso.datos["valores"][k]
    diferencia = _plano([o for o, c in zip(obtenidos, correctos) if c is not None]) - _plano(
        correctos)
    for j in range(len(ciclo)):
        propio = caso.datos["esperado"]["gradiente_medio"](valores, ciclo[j:j + 1])
        plano = _plano(propio)
        c = (diferencia @ plano / (plano @ plano)).item()
        peso = 1 / len(ciclo) + c
        if abs(c) * len(ciclo) > 1e-3 and abs(peso) > 1e-9 and _todos_cerca(
                obtenidos, [None if a is None else a + c * b for a, b in zip(correctos, propio)]):
            fallar("micro_lote_mal_pesado", paso=k + 1, indice=j + 1, divisor=1 / peso,
                   lotes=len(ciclo))


def _numero_de_pasos(caso):
    veces, esperados = len(caso.datos["pasos"]), len(caso.datos["esperado"]["perdidas"])
    if veces == 0:
        fallar("sin_step")
    if veces != esperados:
        fallar("pasos_del_optimizador", veces=veces, esperados=esperados)


def _ciclos_completos(caso):
    veces, completos = len(caso.datos["pasos"]), caso.datos["completos"]
    if veces > len(caso.datos["esperado"]["perdidas"]) or veces < completos:
        _numero_de_pasos(caso)
    for k in range(completos):
        _gradientes_del_paso(caso, k)


def _ciclo_final(caso):
    datos = caso.datos
    if datos["resto"] and len(datos["pasos"]) == datos["completos"]:
        fallar("ciclo_final_olvidado", resto=datos["resto"], lotes=datos["lotes"],
               accum=datos["accum"])
    _numero_de_pasos(caso)
    if datos["resto"]:
        _gradientes_del_paso(caso, datos["completos"])
    repetidos = datos["esperado"]["repetir"](datos["pasos"])
    if not _todos_cerca(datos["finales"], repetidos):
        fallar("parametros_fuera_del_optimizador")


def _perdidas_registradas(caso):
    resultado, datos = caso.resultado, caso.datos
    esperado = datos["esperado"]
    if type(resultado) not in (list, tuple):
        fallar("tipo", nombre="el resultado", esperado="una lista de floats",
               tipo=resultado.get("__objeto__", "dict") if type(resultado) is dict
               else type(resultado).__name__)
    for tipo in datos["tipos"]:
        if tipo == "grafo":
            fallar("grafo_vivo", nombre="las pérdidas registradas")
        if tipo == "tensor":
            fallar("registro_tensor", nombre="las pérdidas registradas")
        if tipo != "numero":
            fallar("tipo", nombre="cada pérdida registrada", esperado="un float", tipo=tipo)
    ciclos = len(esperado["perdidas"])
    if len(resultado) == len(datos["pasos"]) < ciclos:
        ciclos = len(resultado)  # one per step taken: a missing step is judged elsewhere
    if len(resultado) != ciclos:
        fallar("numero_de_perdidas", longitud=len(resultado), longitud_esperada=ciclos)
    # each cycle's loss at the parameters the student had while running it
    valores = datos["valores"] + [datos["finales"]] * ciclos
    if len(datos["pasos"]) > ciclos:
        valores = [None] * ciclos
    correctas = torch.tensor([esperado["perdida_media"](v, _ciclo(caso, k))
                              if v is not None else esperado["perdidas"][k].item()
                              for k, v in enumerate(valores[:ciclos])], dtype=torch.float64)
    obtenidas = torch.tensor([float(v) for v in resultado], dtype=torch.float64)
    tamanos = torch.tensor([len(_ciclo(caso, k)) for k in range(ciclos)], dtype=torch.float64)
    if cerca(obtenidas, correctas):
        return
    if cerca(obtenidas, correctas / tamanos) and bool((tamanos > 1).any()):
        fallar("registro_dividido", nombre="las pérdidas registradas")
    ultima = ciclos - 1
    if datos["resto"] and cerca(obtenidas[:ultima], correctas[:ultima]):
        comparar("la pérdida del último paso", obtenidas[ultima:], correctas[ultima:],
                 {"ciclo_final_dividido_por_accum": datos["resto"] / datos["accum"]})
    comparar("las pérdidas registradas", obtenidas, correctas)


def _sin_efectos_ciclos(caso):
    permitidos = [n for n in caso.datos["estado_antes"] if n.startswith("model.")
                  and not n.endswith((".training", ".requires_grad"))] + ["optimizer.state"]
    verificar_sin_efectos(caso, permitidos)


TRAIN_WITH_ACCUMULATION = Ejercicio(
    funcion="train_with_accumulation",
    partes=[
        Parte("un paso cada accum micro-lotes, con el gradiente medio del ciclo", 1.25,
              _ciclos_completos),
        Parte("ciclo final incompleto: un paso más, con su propia media; ni un paso de más",
              0.75, _ciclo_final),
        Parte("una pérdida (float) por paso: la media de su ciclo", 0.5, _perdidas_registradas),
        Parte("no cambia batches, loss_fn, los modos ni la configuración del optimizador", 0.5,
              _sin_efectos_ciclos, requisito=True),
    ],
    construir=construir_ciclos, observar=observar_ciclos, contexto=contexto_ciclos)


def oraculo_de_ciclos(model, loss_fn, optimizer, batches, accum):
    """What the parts need to judge each step from the student's own parameters: the
    micro-batches, the stale gradients on entry, the mean gradient and loss of any batches
    at any parameters, and the optimizer replayed on the gradients each step saw."""
    return {"batches": [(x.clone(), y.clone()) for x, y in batches],
            "previos": _copiar_grads(list(model.parameters())),
            "gradiente_medio": gradiente_medio(model, loss_fn),
            "perdida_media": perdida_media(model, loss_fn),
            "repetir": repetidor(model, optimizer)}


def ciclos_con_lotes_unidos(model, loss_fn, optimizer, batches, accum):
    """The public oracle: each cycle's micro-batches joined into one batch, the loss of
    each cycle at the parameters the reference trajectory reaches (SGD by hand)."""
    esperado = oraculo_de_ciclos(model, loss_fn, optimizer, batches, accum)
    parametros = [p.detach().clone() for p in model.parameters()]
    lr = optimizer.param_groups[0]["lr"]
    perdidas = []
    for inicio in range(0, len(batches), accum):
        ciclo = batches[inicio:inicio + accum]
        unido = [(torch.cat([x for x, _ in ciclo]), torch.cat([y for _, y in ciclo]))]
        perdidas.append(esperado["perdida_media"](parametros, unido))
        gradientes = esperado["gradiente_medio"](parametros, unido)
        parametros = [p if g is None else p - lr * g for p, g in zip(parametros, gradientes)]
    return dict(esperado, perdidas=torch.tensor(perdidas, dtype=torch.float64))


def comprobar_train_with_accumulation(train_with_accumulation):
    """Comprobación pública: 11 micro-lotes con accum = 4 (dos ciclos completos y uno de 3), y
    después 8 con accum = 4 (ningún ciclo incompleto), con gradientes viejos al llegar."""
    caso = caso_en_proceso(TRAIN_WITH_ACCUMULATION, train_with_accumulation, 2,
                           ("mse", 11, 2, 4, 3, 5, 2), ciclos_con_lotes_unidos)
    comprobar(TRAIN_WITH_ACCUMULATION.partes, caso,
              "Cada paso ve la media de su ciclo, incluido el ciclo final incompleto.")
    caso = caso_en_proceso(TRAIN_WITH_ACCUMULATION, train_with_accumulation, 3,
                           ("ce", 8, 2, 4, 3, 5, 2, "sgd", TASA, False, True, False, "eval"),
                           ciclos_con_lotes_unidos)
    comprobar(TRAIN_WITH_ACCUMULATION.partes, caso,
              "Y sin ciclo incompleto (8 micro-lotes, accum = 4), ni un paso de más, "
              "aunque `.grad` traiga restos.")


# ---------------------------------------------------------------- exercise 3: clipped_step
def construir_recorte(generador, forma):
    """model, loss_fn, optimizer, x, y, max_norm for ``forma`` = (tipo, N, D, H, K,
    razon[, optim, lr, usado, viejos, anidada, congelada, modo]): max_norm is ``razon`` times
    this batch's gradient norm (< 1: clipping happens).

    Defaults: plain SGD with lr 0.1, the parameters arrive with stale gradients in
    ``.grad`` (as after an earlier step), a flat model with every parameter trainable."""
    tipo, N, D, H, K, razon = forma[:6]
    optim, lr, usado, viejos, anidada, congelada, modo = _resto(
        forma[6:], ("sgd", TASA, False, True, False, False, "train"))
    modelo = red_pequena(generador, D, H, K, anidada=anidada, congelada=congelada,
                         modo=modo)
    x, y, loss_fn = datos(generador, tipo, N, D, K)
    opt = optimizador(generador, modelo, optim, lr, usado)
    entrenables = [p for p in modelo.parameters() if p.requires_grad]
    with torch.enable_grad():
        gradientes = torch.autograd.grad(loss_fn(modelo(x), y), entrenables)
    norma = torch.linalg.vector_norm(torch.cat([g.flatten() for g in gradientes])).item()
    if viejos:
        gradientes_viejos(generador, modelo)
    return {"model": modelo, "loss_fn": loss_fn, "optimizer": opt, "x": x, "y": y,
            "max_norm": razon * norma}


def observar_recorte(clipped_step, entradas):
    """Returned norm and its type, the gradients and parameters at each step, the
    parameters afterwards, and ``estado`` before and after."""
    parametros = list(entradas["model"].parameters())
    antes = estado_de(entradas)
    pasos, valores, gancho = espiar_pasos(entradas["optimizer"], parametros)
    recortes, utils = [], torch.nn.utils
    original = utils.clip_grad_norm_

    def recorte(parameters, max_norm, *args, **kwargs):
        norma = original(parameters, max_norm, *args, **kwargs)
        recortes.append({"pasos_antes": len(pasos), "max_norm": float(max_norm),
                         "norma": float(norma)})
        return norma

    utils.clip_grad_norm_ = recorte
    try:
        observacion, crudo = _llamar_guardando(clipped_step, entradas)
    finally:
        utils.clip_grad_norm_ = original
        gancho.remove()
    observacion.update(pasos=pasos, valores=valores, tipo_resultado=tipo_registrado(crudo),
                       recortes=recortes, finales=_copiar(parametros), estado_antes=antes,
                       estado_despues=estado_de(entradas))
    return observacion


def _norma(gradientes):
    vivos = [g.flatten() for g in gradientes if g is not None]
    return torch.linalg.vector_norm(torch.cat(vivos)).item() if vivos else 0.0


def _gradientes_recortados(caso):
    pasos, esperado = caso.datos["pasos"], caso.datos["esperado"]
    if not pasos:
        fallar("sin_step")
    if len(pasos) != 1:
        fallar("pasos_del_optimizador", veces=len(pasos), esperados=1)
    obtenidos, correctos = pasos[0], esperado["gradientes"]
    if _todos_cerca(obtenidos, correctos):
        return
    if _vacios(obtenidos):
        fallar("paso_sin_gradientes")
    recortado = esperado["norma"].item() > esperado["max_norm"]
    # what clip_grad_norm_ calls were seen (none when clipped by hand or by another name)
    recortes = caso.datos.get("recortes") or []
    if any(abs(r["max_norm"] / esperado["max_norm"] - 1) > 1e-6 for r in recortes):
        otra = next(r["max_norm"] for r in recortes
                    if abs(r["max_norm"] / esperado["max_norm"] - 1) > 1e-6)
        fallar("recorte_a_otra_norma", vista=otra, max_norm=esperado["max_norm"])
    if recortado and _todos_cerca(obtenidos, esperado["sin_recortar"]):
        fallar("recorte_fuera_de_sitio")
    if _todos_cerca(obtenidos, esperado["sin_borrar"]):
        fallar("grad_previo_sin_borrar", nombre="el gradiente que vio `step()`")
    for alternativa in ("recorte_por_parametro", "recorte_por_valor", "recorte_siempre",
                        "norma_l1"):
        if _todos_cerca(obtenidos, esperado.get(alternativa)):
            fallar(alternativa, nombre="el recorte")
    # proportional to the unclipped gradients, but scaled to another norm
    vista = _norma(obtenidos)
    if vista < _norma(esperado["sin_recortar"]) * (1 - 1e-6) and _todos_cerca(
            obtenidos, [None if g is None else g * vista / esperado["norma"].item()
                        for g in esperado["sin_recortar"]]):
        fallar("recorte_a_otra_norma", vista=vista, max_norm=esperado["max_norm"])
    comparar_gradientes(" al llamar a step()", obtenidos, correctos)


def _norma_devuelta(caso):
    valor = _numero(caso, "la norma devuelta", aceptar_tensor=True)
    esperado = caso.datos["esperado"]
    if cerca(valor, esperado["norma"], rtol=1e-5):
        return
    recortado = esperado["norma"].item() > esperado["max_norm"]
    # clip_grad_norm_ scales by max_norm / (norm + 1e-6): the norm after clipping is
    # max_norm to about 1e-6 / norm, relative (more than 1e-6 for a norm below 1).
    if recortado and abs(valor.item() - esperado["max_norm"]) <= 1e-4 * esperado["max_norm"]:
        fallar("norma_tras_recorte", valor=valor.item())
    for diagnostico in ("norma_l1", "devuelve_la_perdida"):
        otro = torch.tensor(esperado[diagnostico + "_valor"], dtype=torch.float64)
        if cerca(valor, otro) and not cerca(otro, esperado["norma"]):
            fallar(diagnostico, nombre="la norma devuelta")
    comparar("la norma devuelta", valor, esperado["norma"], rtol=1e-5)


def _un_paso_del_optimizador(caso):
    datos = caso.datos
    if not datos["pasos"]:
        fallar("sin_step")
    if not _todos_cerca(datos["finales"], datos["esperado"]["repetir"](datos["pasos"])):
        fallar("parametros_fuera_del_optimizador")
    permitidos = [n for n in datos["estado_antes"] if n.startswith("model.")
                  and not n.endswith((".training", ".requires_grad"))] + ["optimizer.state"]
    verificar_sin_efectos(caso, permitidos)


CLIPPED_STEP = Ejercicio(
    funcion="clipped_step",
    partes=[
        Parte("optimizer.step() ve los gradientes recortados", 1.5, _gradientes_recortados),
        Parte("devuelve la norma de antes del recorte", 1.0, _norma_devuelta),
        Parte("un paso del optimizador con esos gradientes; nada más cambia", 0.5,
              _un_paso_del_optimizador),
    ],
    construir=construir_recorte, observar=observar_recorte)


def recortar(gradientes, max_norm):
    """``clip_grad_norm_``'s formula: every gradient times min(1, max_norm / (norm + 1e-6))."""
    norma = _norma(gradientes)
    return [None if g is None else g * min(1.0, max_norm / (norma + 1e-6)) for g in gradientes]


def recortes_equivocados(sin_recortar, max_norm, previos):
    """Classic clipping-step mistakes, to name them when a result matches one.

    ``previos``: the stale ``.grad`` the parameters arrived with."""
    norma = _norma(sin_recortar)
    l1 = sum(g.abs().sum().item() for g in sin_recortar if g is not None)
    return {"recorte_por_parametro": [None if g is None else
                                      g * min(1.0, max_norm / (g.norm().item() + 1e-6))
                                      for g in sin_recortar],
            "recorte_por_valor": [None if g is None else g.clamp(-max_norm, max_norm)
                                  for g in sin_recortar],
            "recorte_siempre": [None if g is None else g * max_norm / norma
                                for g in sin_recortar],
            "norma_l1": [None if g is None else g * min(1.0, max_norm / (l1 + 1e-6))
                         for g in sin_recortar],
            "norma_l1_valor": l1,
            "sin_borrar": None if _vacios(previos) else recortar(_mas(previos, sin_recortar),
                                                                 max_norm)}


def recorte_a_mano(model, loss_fn, optimizer, x, y, max_norm):
    """The public oracle: autograd gradients and the clipping formula."""
    parametros = list(model.parameters())
    sin_recortar = gradiente_medio(model, loss_fn)(parametros, [(x, y)])
    with torch.no_grad():
        perdida = loss_fn(model(x), y).item()
    return {"norma": torch.tensor(_norma(sin_recortar), dtype=torch.float64),
            "max_norm": max_norm, "gradientes": recortar(sin_recortar, max_norm),
            "sin_recortar": sin_recortar, "devuelve_la_perdida_valor": perdida,
            **recortes_equivocados(sin_recortar, max_norm, _copiar_grads(parametros)),
            "repetir": repetidor(model, optimizer)}


def comprobar_clipped_step(clipped_step):
    """Comprobación pública: un paso de SGD con recorte en una red pequeña (en modo evaluación),
    y después uno en el que la norma del gradiente ya es menor que ``max_norm`` (nada que
    recortar)."""
    caso = caso_en_proceso(CLIPPED_STEP, clipped_step, 3,
                           ("mse", 8, 3, 5, 2, 0.25, "sgd", TASA, False, True, False, False,
                            "eval"), recorte_a_mano)
    comprobar(CLIPPED_STEP.partes, caso,
              "Recortas después de backward y antes de step, y devuelves la norma previa.")
    caso = caso_en_proceso(CLIPPED_STEP, clipped_step, 4, ("ce", 6, 4, 3, 3, 3.0),
                           recorte_a_mano)
    comprobar(CLIPPED_STEP.partes, caso,
              "Y si la norma ya es menor que max_norm, el gradiente se queda como está.")


# In notebook order.
EJERCICIOS = ejercicios(ACCUMULATE_GRADIENTS, TRAIN_WITH_ACCUMULATION, CLIPPED_STEP)
