"""Chapter 3: how each exercise is built, observed and scored, and its public checks.

Injected into the chapter 3 student notebook by the build; the hidden tests use the
same exercises on other inputs against the reference. The public oracles never use a
formula for the answer: the micro-batch weights are found by least squares among the
micro-batches' gradients, the full-batch gradients come from autograd, and clipping is
``torch.nn.utils.clip_grad_norm_`` itself, run on made-up parameters; reading this code
does not give the answers away.

What a call may change is observed, not assumed: ``estado`` before and after every call
(grad mode, values, ``requires_grad`` and ``.grad`` of everything passed in, every
submodule's mode, the loss's and the optimizer's settings, the micro-batches). Each
training step is judged from the student's own parameters just before it (a mistake in
one step never makes the next ones look wrong), and the final parameters by replaying
the optimizer on the gradients each step saw.
"""

import copy
import math

import torch

from autograder.student.compare import (
    Ejercicio,
    Parte,
    caso_en_proceso,
    comprobar,
    comprobar_casos,
    ejercicios,
    estado,
    exigir,
    fallar,
    observar_llamada,
    sanear,
    verificar_sin_efectos,
)
from autograder.student.diagnosis import (
    INVERSOS,
    Diagnostico,
    cerca,
    diagnosticar_lista,
    diagnosticar_tensor,
)
from autograder.student.messages import registrar

__all__ = ["comprobar_micro_batch_weights", "comprobar_train_with_accumulation",
           "comprobar_clip_by_global_norm"]

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
    "ciclo_unido": (
        "Ciclo unido en un solo pase",
        "En el paso {paso}, el gradiente es el de un solo pase hacia adelante sobre los "
        "micro-lotes del ciclo unidos: BatchNorm normaliza con las estadísticas de lo que ve, "
        "así que eso no es la media de los gradientes de cada micro-lote.",
        "Acumular es hacer un pase por micro-lote. ¿Pasan tus micro-lotes por el modelo por "
        "separado, o los juntas antes?",
        "In step {paso}, the gradient is that of one pass over the cycle's micro-batches "
        "joined, not the mean of each micro-batch's (BatchNorm)."),
    "entrenado_en_otro_modo": (
        "Entrenado en otro modo",
        "En el paso {paso}, el gradiente es el del modelo con todos sus submódulos en modo "
        "entrenamiento; alguno llegó en modo evaluación (aquí, un BatchNorm, que en eval usa "
        "sus estadísticas acumuladas) y debía usarse así.",
        "¿Llamas a `model.train()` antes de entrenar? Aquí cada submódulo se usa en el modo "
        "en que llega.",
        "In step {paso}, the gradient is that of the model all in train mode; some submodule "
        "came in eval mode."),
    "grupo_sin_borrar": (
        "Un grupo de parámetros sin borrar",
        "En el paso {paso}, los parámetros de los grupos del optimizador que no son el "
        "primero traían los gradientes de antes: solo borraste los del primer grupo.",
        "Un optimizador puede tener varios grupos de parámetros. ¿Borras los gradientes de "
        "todos, o solo de los del primero?",
        "In step {paso}, the parameters outside the optimizer's first group kept old "
        "gradients."),
    "estadisticas_de_batchnorm": (
        "Estadísticas de BatchNorm distintas",
        "Las estadísticas acumuladas de BatchNorm ({nombre}) no son las que deja un solo pase "
        "hacia adelante de cada micro-lote, en orden, con cada submódulo en el modo en que "
        "llegó: el modelo vio los datos otro número de veces, en otro orden o en otro modo.",
        "¿Cuántas veces pasa cada micro-lote por el modelo, y en qué modo? En modo "
        "entrenamiento, cada pase de BatchNorm actualiza `running_mean` y `running_var`.",
        "BatchNorm's running statistics ({nombre}) are not what one forward pass per "
        "micro-batch, in the modes the model came in, leaves."),
    # micro_batch_weights
    "longitud_pesos": (
        "Número de pesos",
        "Devolviste {longitud} pesos; se esperaba uno por micro-lote: {longitud_esperada}.",
        "¿Cuántos elementos tiene `sizes`? Devuelve un peso por cada uno, en el mismo orden.",
        "{longitud} weights were returned; one per micro-batch ({longitud_esperada}) was "
        "expected."),
    "pesos_a_escala": (
        "Pesos a otra escala",
        "Tus pesos son {razon:.4g} × los correctos: el gradiente acumulado es {razon:.4g} "
        "veces el de la pérdida media del lote entero (N = {total} muestras).",
        "La suma de los gradientes debe dar el de la **media** sobre las N muestras del lote "
        "entero: ¿entre cuántas muestras queda repartida, al final, la pérdida que acumulas?",
        "The weights are {razon:.4g} × the right ones: the accumulated gradient is off by that "
        "factor."),
    "pesos_sin_tamano": (
        "Pesos que no miran el tamaño",
        "Frente a los correctos, tus pesos van en proporción inversa al tamaño de cada "
        "micro-lote ({tamanos} muestras): tratas igual una pérdida promediada sobre pocas "
        "muestras que una promediada sobre muchas.",
        "Con `reduction=\"mean\"`, la pérdida de cada micro-lote es ya una media sobre sus "
        "muestras. En la media del lote entero, ¿cuentan lo mismo un micro-lote de 2 muestras "
        "y uno de 8?",
        "Relative to the right ones, the weights ignore each micro-batch's size ({tamanos})."),
    "tamano_contado_dos_veces": (
        "Tamaño contado dos veces",
        "Frente a los correctos, tus pesos crecen en proporción al tamaño de cada micro-lote "
        "({tamanos} muestras): ese tamaño ya estaba dentro de su pérdida, y lo contaste otra "
        "vez.",
        "Con `reduction=\"sum\"`, ¿la pérdida de un micro-lote grande no pesa ya más que la de "
        "uno pequeño? Piensa qué parte del trabajo hace ya la reducción.",
        "Relative to the right ones, the weights grow with each micro-batch's size "
        "({tamanos}): the size was counted twice."),
    # clip_by_global_norm
    "recorte_por_parametro": (
        "Recorte tensor a tensor",
        "Recortaste cada gradiente con su propia norma; se pide una sola norma, la de todos "
        "los gradientes juntos, y el mismo factor para todos.",
        "¿Cuántas normas calculas para decidir el recorte? ¿Y cuántos factores de escala "
        "aplicas?",
        "Each tensor was clipped by its own norm; one total norm and one factor were expected."),
    "recorte_por_valor": (
        "Recorte por valor",
        "Recortaste cada componente a [−max_norm, max_norm] (lo que hace "
        "`clip_grad_value_`); se pedía recortar la norma global.",
        "¿Tu recorte conserva la dirección del gradiente? Recortar elemento a elemento no lo "
        "hace.",
        "Gradients were clipped by value; clipping by the total norm was expected."),
    "recorte_siempre": (
        "Reescalado aunque no haga falta",
        "La norma de los gradientes ya no pasaba de `max_norm` y aun así los reescalaste "
        "hasta `max_norm`: recortar solo puede encoger los gradientes, nunca agrandarlos.",
        "Si la norma no pasa de `max_norm`, ¿qué debe pasarles a los gradientes?",
        "Gradients were rescaled up to max_norm although their norm was already below it."),
    "norma_l1": (
        "Norma L1",
        "`{nombre}` usa la norma L1 (suma de valores absolutos); se pide la euclídea (L2) de "
        "todos los gradientes juntos.",
        "¿Qué norma calculas? Se pide la L2 de todos los gradientes juntos, como si fueran un "
        "único vector.",
        "`{nombre}` uses the L1 norm; the total L2 norm was expected."),
    "norma_suma_de_normas": (
        "Suma de normas",
        "`{nombre}` usa la suma de las normas de cada tensor; la norma de todos juntos no es "
        "esa suma (es menor en cuanto dos tensores no son nulos).",
        "Piensa en todos los gradientes como un único vector: ¿cómo se calcula su longitud a "
        "partir de los elementos, o de las normas de cada trozo?",
        "`{nombre}` adds up the tensors' norms; the norm of all of them together was "
        "expected."),
    "sin_epsilon": (
        "Factor sin el 1e-6",
        "Tu factor de recorte es `max_norm / norma`, sin el `1e-6` del denominador: con "
        "normas pequeñas, como la de este caso, la diferencia se nota.",
        "Relee el factor que pide el enunciado, con todos sus términos.",
        "The clipping factor lacks the 1e-6 in the denominator."),
    "norma_tras_recorte": (
        "Norma después del recorte",
        "Devolviste {valor:.4g}, la norma después de recortar (igual a `max_norm`); se pedía "
        "la de antes.",
        "¿Mides la norma antes o después de recortar? Se pide la de antes: es la que sirve "
        "para registrar los picos.",
        "The returned norm ({valor:.4g}) is the post-clipping one; the pre-clip norm was asked."),
    "generador_agotado": (
        "Generador recorrido dos veces",
        "`grads` llegó como generador y tu resultado es el de una segunda pasada que no vio "
        "nada: un generador se agota al recorrerlo la primera vez.",
        "Un generador solo se puede recorrer una vez. ¿Cuántas veces recorres `grads`?",
        "grads was a generator, and a second pass over it saw nothing."),
    "nones_perdidos": (
        "Los None desaparecieron",
        "Devolviste {longitud} gradientes; `grads` tenía {longitud_esperada}, {nones} de ellos "
        "None: la lista perdió los None y ya no se corresponde, posición a posición, con "
        "`grads`.",
        "¿Qué haces con un elemento que es None? Debe seguir ahí, en su sitio, en lo que "
        "devuelves.",
        "The None entries were dropped: the result no longer lines up with grads."),
    "none_cambiado": (
        "None en el sitio equivocado",
        "El elemento {indice} de la lista devuelta debería ser {esperado}.",
        "Un None de `grads` sigue siendo None en el resultado, y un tensor sigue siendo un "
        "tensor: ¿qué devuelves en cada posición?",
        "Item {indice} of the returned list should be {esperado}."),
    "sin_recortar": (
        "Sin recortar",
        "La norma pasaba de `max_norm` y devolviste los gradientes sin recortar.",
        "¿Comparas la norma con `max_norm` y aplicas el factor a lo que devuelves?",
        "The norm exceeded max_norm and the gradients came back unclipped."),
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


def comparar_con_factores(nombre, obtenido, esperado, factores=None, alternativas=None,
                          rtol=None, atol=None):
    """``comparar`` with this chapter's ``diagnosticar``: its ratios named by this chapter."""
    exigir(diagnosticar(nombre, obtenido, esperado, factores, alternativas, rtol, atol))


def red_pequena(generador, D, H, K, dtype=torch.float64, anidada=False, congelada=False,
                modo="train", batchnorm=False):
    """A small Linear–[BatchNorm]–Tanh–Linear model whose weights come from ``generador``.

    ``anidada``: the first layer, its BatchNorm and its activation inside a Sequential of
    their own (parameter names change, values do not). ``congelada``: the first bias does
    not require grad (a frozen parameter: the optimizer does not hold it). ``batchnorm``: a
    BatchNorm1d after the first layer (buffers: running statistics, changed by each
    forward pass in train mode). ``modo``: "train", "eval", "mixto" (the model in train
    mode, its first submodule in eval mode) or "mixto_eval" (the model in eval mode, its
    first submodule in train mode, children included); the call must leave every
    submodule as it was."""
    primera = [torch.nn.Linear(D, H)] + ([torch.nn.BatchNorm1d(H)] if batchnorm else [])
    primera.append(torch.nn.Tanh())
    capas = [torch.nn.Sequential(*primera)] if anidada else primera
    modelo = torch.nn.Sequential(*capas, torch.nn.Linear(H, K)).double()
    with torch.no_grad():
        for p in modelo.parameters():
            p.copy_(torch.randn(p.shape, generator=generador, dtype=torch.float64))
        for nombre, b in modelo.named_buffers():
            if nombre.endswith("running_mean"):
                b.copy_(torch.randn(b.shape, generator=generador, dtype=torch.float64))
            elif nombre.endswith("running_var"):
                b.copy_(torch.rand(b.shape, generator=generador, dtype=torch.float64) + 0.5)
    modelo = modelo.to(dtype)
    if congelada:
        list(modelo.parameters())[1].requires_grad_(False)
    modelo.train(modo not in ("eval", "mixto_eval"))
    if modo == "mixto":
        modelo[0].eval()
    elif modo == "mixto_eval":
        modelo[0].train()
    return modelo


def modo_de(modelo):
    """"train", "eval", "mixto" or "mixto_eval", as ``red_pequena`` builds them."""
    modos = {m.training for m in modelo.modules()}
    if len(modos) > 1:
        return "mixto" if modelo.training else "mixto_eval"
    return "train" if modos == {True} else "eval"


def modo_batchnorm(modelo):
    """"no" (no BatchNorm), or the mode its BatchNorm is in: "train" or "eval"."""
    bn = [m for m in modelo.modules() if isinstance(m, torch.nn.BatchNorm1d)]
    return "no" if not bn else "train" if bn[0].training else "eval"


def perdida_cuadratica(salida, objetivo):
    """A loss that is a plain function, not a module: the mean squared error."""
    return ((salida - objetivo) ** 2).mean()


def datos(generador, tipo, N, D, K, dtype=torch.float64):
    """(x, y, loss_fn): regression with MSE ("mse"), Huber ("huber") or a plain function
    ("fn", no ``torch.nn`` module), or K-class cross-entropy ("ce"); every loss averages
    over the batch."""
    x = torch.randn(N, D, generator=generador, dtype=torch.float64).to(dtype)
    if tipo == "ce":
        return x, torch.randint(0, K, (N,), generator=generador), torch.nn.CrossEntropyLoss()
    y = (2 * torch.randn(N, K, generator=generador, dtype=torch.float64)).to(dtype)
    perdidas = {"huber": torch.nn.HuberLoss(delta=0.5), "fn": perdida_cuadratica}
    return x, y, perdidas.get(tipo) or torch.nn.MSELoss()


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
    parameter (expected None) is not the optimizer's: whatever its ``.grad``, no step
    reads it."""
    if type(obtenidos) not in (list, tuple) or len(obtenidos) != len(esperados):
        exigir(diagnosticar_lista(f"los gradientes{donde}", obtenidos, esperados))
    for i, (obtenido, esperado) in enumerate(zip(obtenidos, esperados)):
        if esperado is not None:
            comparar_con_factores(f".grad del parámetro {i}{donde}", obtenido, esperado,
                                  factores)


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


# ---------------------------------------------------------- exercise 1: micro_batch_weights
def construir_pesos(generador, forma):
    """sizes, reduction for ``forma`` = (reduction, tamaños[, "list" o "tuple"]): ``sizes``
    as a list unless the shape says tuple."""
    reduction, tamanos, contenedor = _resto(forma, (None, None, "list"))
    return {"sizes": (tuple if contenedor == "tuple" else list)(tamanos),
            "reduction": reduction}


def observar_pesos(micro_batch_weights, entradas):
    """The returned weights (plain data) and ``sizes`` before and after the call."""
    antes = list(entradas["sizes"])
    observacion = observar_llamada(micro_batch_weights, entradas["sizes"],
                                   entradas["reduction"])
    observacion.update(sizes_antes=antes, sizes_despues=list(sanear(entradas["sizes"])))
    return observacion


def contexto_pesos(forma):
    return {"reduction": forma[0], "tamanos": list(forma[1])}


def gradientes_por_micro_lote(sizes, reduction):
    """A small classifier and N = sum(sizes) random samples (not secret: they only make the
    weights visible): each micro-batch's gradient with ``reduction``, flattened, and the
    gradient of the mean loss over the whole batch."""
    generador = torch.Generator().manual_seed(1000 + sum((i + 1) * n for i, n in
                                                         enumerate(sizes)))
    N = sum(sizes)
    x = torch.randn(N, 4, generator=generador, dtype=torch.float64)
    y = torch.randint(0, 3, (N,), generator=generador)
    W = torch.randn(3, 4, generator=generador, dtype=torch.float64)
    b = torch.randn(3, generator=generador, dtype=torch.float64)

    def gradiente(xs, ys, red):
        hojas = (W.clone().requires_grad_(), b.clone().requires_grad_())
        with torch.enable_grad():
            perdida = torch.nn.functional.cross_entropy(xs @ hojas[0].T + hojas[1], ys,
                                                        reduction=red)
            return torch.cat([g.flatten() for g in torch.autograd.grad(perdida, hojas)])

    trozos = zip(x.split(list(sizes)), y.split(list(sizes)))
    return [gradiente(xs, ys, reduction) for xs, ys in trozos], gradiente(x, y, "mean")


def pesos_que_reproducen_el_lote(sizes, reduction):
    """The public oracle: the weights are not computed by a formula but found by least
    squares, as the combination of the micro-batches' gradients that gives the full
    batch's (the gradients are linearly independent: the combination is unique)."""
    gradientes, completo = gradientes_por_micro_lote(sizes, reduction)
    A = torch.stack(gradientes, dim=1)
    pesos = torch.linalg.lstsq(A, completo.unsqueeze(1)).solution.squeeze(1)
    return {"pesos": pesos, "gradientes": gradientes, "gradiente": completo}


def _pesos_devueltos(caso):
    """The student's weights as a float64 tensor, or a diagnosis of the result's type."""
    resultado, k = caso.resultado, len(caso.datos["tamanos"])
    if type(resultado) is not list:
        fallar("tipo", nombre="el resultado", esperado="una lista (list) de floats",
               tipo=resultado.get("__objeto__", "dict") if type(resultado) is dict
               else "tensor" if isinstance(resultado, torch.Tensor)
               else type(resultado).__name__)
    for valor in resultado:
        if type(valor) not in (int, float):
            fallar("tipo", nombre="cada peso", esperado="un float de Python",
                   tipo="tensor" if isinstance(valor, torch.Tensor) else type(valor).__name__)
    if len(resultado) != k:
        fallar("longitud_pesos", longitud=len(resultado), longitud_esperada=k)
    return torch.tensor([float(v) for v in resultado], dtype=torch.float64)


def _proporcionales(a, b):
    """a = c·b for one c (b without zeros)."""
    c = (a / b)
    return bool(torch.allclose(c, c[0].expand_as(c), rtol=1e-6, atol=0))


def _juzgar_pesos(caso, reduction):
    if caso.datos["reduction"] != reduction:
        return  # this case is the other part's
    pesos = _pesos_devueltos(caso)
    esperado = caso.datos["esperado"]
    acumulado = sum(w * g for w, g in zip(pesos, esperado["gradientes"]))
    if cerca(acumulado, esperado["gradiente"]) and cerca(pesos, esperado["pesos"]):
        return
    tamanos = torch.tensor(caso.datos["tamanos"], dtype=torch.float64)
    correctos = esperado["pesos"]
    if bool((pesos != 0).all()):
        if _proporcionales(pesos, correctos):
            razon = (pesos[0] / correctos[0]).item()
            fallar("pesos_a_escala", razon=razon, total=int(tamanos.sum().item()))
        if len(set(caso.datos["tamanos"])) > 1:
            if _proporcionales(pesos * tamanos, correctos):
                fallar("pesos_sin_tamano", tamanos=str(caso.datos["tamanos"]))
            if _proporcionales(pesos, correctos * tamanos):
                fallar("tamano_contado_dos_veces", tamanos=str(caso.datos["tamanos"]))
    comparar_con_factores("el gradiente acumulado con tus pesos", acumulado,
                          esperado["gradiente"])


def _pesos_con_media(caso):
    _juzgar_pesos(caso, "mean")


def _pesos_con_suma(caso):
    _juzgar_pesos(caso, "sum")


def _sin_efectos_pesos(caso):
    _pesos_devueltos(caso)
    if caso.datos["sizes_despues"] != caso.datos["sizes_antes"]:
        fallar("efecto_secundario", que="`sizes`")


MICRO_BATCH_WEIGHTS = Ejercicio(
    funcion="micro_batch_weights",
    partes=[
        Parte('reduction="mean": con tus pesos, la acumulación da el gradiente del lote entero',
              1.0, _pesos_con_media),
        Parte('reduction="sum": con tus pesos, la acumulación da el gradiente del lote entero',
              0.75, _pesos_con_suma),
        Parte("una lista de float, uno por micro-lote; no cambia sizes", 0.25,
              _sin_efectos_pesos, requisito=True),
    ],
    construir=construir_pesos, observar=observar_pesos, contexto=contexto_pesos)


def comprobar_micro_batch_weights(micro_batch_weights):
    """Comprobación pública: micro-lotes de 4, 4 y 2 muestras con ``reduction="mean"`` (en una
    lista) y de 3 y 5 con ``reduction="sum"`` (en una tupla); los pesos correctos se buscan
    por mínimos cuadrados entre los gradientes de cada micro-lote, sin fórmula."""
    casos = [caso_en_proceso(MICRO_BATCH_WEIGHTS, micro_batch_weights, 5, forma,
                             pesos_que_reproducen_el_lote)
             for forma in (("mean", (4, 4, 2)), ("sum", (3, 5), "tuple"))]
    comprobar_casos(MICRO_BATCH_WEIGHTS.partes, casos,
                    "Con tus pesos, la acumulación reproduce el gradiente del lote entero "
                    "(en estos ejemplos).")


def _resto(valores, por_defecto):
    """The optional tail of a shape: given values, then the defaults of the missing ones."""
    return (*valores, *por_defecto[len(valores):])


# ------------------------------------------------------- exercise 2: train_with_accumulation
TASA = 0.1


def optimizador(generador, modelo, tipo, lr, usado, grupos=1):
    """SGD ("sgd"), SGD with momentum ("momento") or Adam ("adam") over the model's
    trainable parameters (a frozen one is left out); ``grupos=2``: two parameter groups,
    the first layer's and the rest, the second with half the lr (and, with momentum,
    another momentum); ``usado``: it already took a step (it has state: momentum buffers,
    Adam's moments), as in the middle of a training run."""
    parametros = [p for p in modelo.parameters() if p.requires_grad]
    primera = [p for p in next(iter(modelo.children())).parameters() if p.requires_grad]
    if grupos == 2:
        resto = [p for p in parametros if all(p is not q for q in primera)]
        ajustes = [{}, {"lr": lr / 2} if tipo != "momento" else {"lr": lr / 2, "momentum": 0.5}]
        parametros = [dict(params=primera, **ajustes[0]), dict(params=resto, **ajustes[1])]
    if tipo == "adam":
        opt = torch.optim.Adam(parametros, lr=lr)
    else:
        opt = torch.optim.SGD(parametros, lr=lr, momentum=0.9 if tipo == "momento" else 0.0)
    if usado:
        gradientes_viejos(generador, modelo)
        opt.step()
        for p in modelo.parameters():
            p.grad = None
    return opt


def construir_ciclos(generador, forma):
    """model, loss_fn, optimizer, batches, accum for ``forma`` = (tipo, lotes, m, accum, D,
    H, K[, optim, lr, usado, viejos, anidada, modo, congelada, grupos, batchnorm,
    sin_grad]): ``lotes`` micro-batches of m rows each. ``sin_grad``: the caller calls
    from inside ``torch.no_grad()`` (marked on the model, read by the observer).

    Defaults: plain SGD with lr 0.1 in one group that took no step yet, no stale
    gradients, a flat model in train mode, nothing frozen, no BatchNorm, autograd on."""
    tipo, lotes, m, accum, D, H, K = forma[:7]
    optim, lr, usado, viejos, anidada, modo, congelada, grupos, batchnorm, sin_grad = _resto(
        forma[7:], ("sgd", TASA, False, False, False, "train", False, 1, False, False))
    modelo = red_pequena(generador, D, H, K, anidada=anidada, congelada=congelada, modo=modo,
                         batchnorm=batchnorm)
    modelo._llamante_sin_grad = bool(sin_grad)
    batches = []
    for _ in range(lotes):
        x, y, loss_fn = datos(generador, tipo, m, D, K)
        batches.append((x, y))
    opt = optimizador(generador, modelo, optim, lr, usado, grupos)
    if viejos:
        gradientes_viejos(generador, modelo)
    return {"model": modelo, "loss_fn": loss_fn, "optimizer": opt, "batches": batches,
            "accum": accum}


def observar_ciclos(train_with_accumulation, entradas):
    """Returned losses and their types, the gradients and parameters at each step, the
    parameters afterwards, and ``estado`` before and after; called with autograd on, or
    off where the case says the caller is inside ``torch.no_grad()``."""
    parametros = list(entradas["model"].parameters())
    with torch.set_grad_enabled(not getattr(entradas["model"], "_llamante_sin_grad", False)):
        antes = estado_de(entradas)
        pasos, valores, gancho = espiar_pasos(entradas["optimizer"], parametros)
        try:
            observacion, crudo = _llamar_guardando(train_with_accumulation, entradas)
        finally:
            gancho.remove()
        despues = estado_de(entradas)
    tipos = [tipo_registrado(v) for v in crudo] if type(crudo) in (list, tuple) else []
    observacion.update(pasos=pasos, valores=valores, tipos=tipos, finales=_copiar(parametros),
                       estado_antes=antes, estado_despues=despues,
                       contenedor=type(crudo).__name__)
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
    # a frozen parameter is not the optimizer's: no step reads its .grad
    pasos = [[None if c is None else g for g, c in zip(paso, correctos)] for paso in pasos]
    if _todos_cerca(pasos[k], correctos):
        return
    if _vacios(pasos[k]):
        fallar("paso_sin_gradientes")
    if k > 0 and _todos_cerca(pasos[k], _mas(correctos, pasos[k - 1])):
        fallar("zero_grad_ausente")
    viejos = (_mas(correctos, pasos[k - 1]) if k > 0 else None if _vacios(esperado["previos"])
              else _mas(correctos, esperado["previos"]))
    sucios = _cada_uno_cerca(pasos[k], correctos, viejos) if viejos is not None else None
    if sucios:  # some parameters were not cleared
        grupos = {esperado["grupos"][i] for i in sucios}
        if 0 not in grupos and len(set(esperado["grupos"]) - {None}) > 1:
            fallar("grupo_sin_borrar", paso=k + 1)
        if k > 0:
            fallar("zero_grad_ausente")
        fallar("grad_previo_sin_borrar", nombre="el gradiente del paso 1")
    if len(ciclo) > 1 and esperado["con_batchnorm"]:
        unido = [(torch.cat([x for x, _ in ciclo]), torch.cat([y for _, y in ciclo]))]
        if _todos_cerca(pasos[k], esperado["gradiente_medio"](valores[k], unido)):
            fallar("ciclo_unido", paso=k + 1)
    if esperado["gradiente_en_train"] is not None and _todos_cerca(
            pasos[k], esperado["gradiente_en_train"](valores[k], ciclo)):
        fallar("entrenado_en_otro_modo", paso=k + 1)
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


def _cada_uno_cerca(obtenidos, correctos, otros):
    """The indices of the items close to the other value, when each item is close to its
    correct value or to the other one (an empty set otherwise)."""
    if obtenidos is None or len(obtenidos) != len(correctos):
        return set()
    indices = set()
    for i, (o, c, x) in enumerate(zip(obtenidos, correctos, otros)):
        if _todos_cerca([o], [c]):
            continue
        if not _todos_cerca([o], [x]):
            return set()
        indices.add(i)
    return indices


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
    if type(resultado) is not list:
        fallar("tipo", nombre="el resultado", esperado="una lista (list) de floats",
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
        comparar_con_factores("la pérdida del último paso", obtenidas[ultima:],
                              correctas[ultima:],
                              {"ciclo_final_dividido_por_accum": datos["resto"] / datos["accum"]})
    comparar_con_factores("las pérdidas registradas", obtenidas, correctas)


def _sin_efectos_ciclos(caso):
    datos = caso.datos
    parametros = [n for n in datos["estado_antes"] if n.startswith("model.")
                  and n.endswith(".grad")]
    parametros += [n[:-len(".grad")] for n in parametros]
    buffers = [n for n in datos["estado_antes"] if n.startswith("model.")
               and n not in parametros and not n.endswith((".training", ".requires_grad"))]
    verificar_sin_efectos(caso, parametros + buffers + ["optimizer.state"])
    _estadisticas_de_batchnorm(caso, buffers)


def _estadisticas_de_batchnorm(caso, buffers):
    """The BatchNorm buffers after the call are what one forward pass of each micro-batch,
    in order, with each submodule in the mode it came in, leaves at the parameters each
    step had (the student's own trajectory)."""
    datos = caso.datos
    if not buffers or len(datos["pasos"]) != len(datos["esperado"]["perdidas"]):
        return  # no BatchNorm, or the steps are judged (and failed) elsewhere
    esperados = datos["esperado"]["estadisticas"](datos["valores"], datos["accum"])
    for nombre in buffers:
        obtenido, esperado = datos["estado_despues"].get(nombre), esperados[nombre]
        if not (isinstance(obtenido, torch.Tensor) and obtenido.shape == esperado.shape
                and cerca(obtenido.double(), esperado.double())):
            fallar("estadisticas_de_batchnorm", nombre=f"`{nombre}`")


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
    at any parameters, the optimizer replayed on the gradients each step saw, and the
    BatchNorm statistics that one forward pass per micro-batch leaves."""
    return {"batches": [(x.clone(), y.clone()) for x, y in batches],
            "previos": _copiar_grads(list(model.parameters())),
            "gradiente_medio": gradiente_medio(model, loss_fn),
            "perdida_media": perdida_media(model, loss_fn),
            "repetir": repetidor(model, optimizer),
            "estadisticas": estadisticas(model, batches),
            "con_batchnorm": modo_batchnorm(model) != "no",
            "grupos": [next((j for j, g in enumerate(optimizer.param_groups)
                             if any(p is q for q in g["params"])), None)
                       for p in model.parameters()],
            "gradiente_en_train": _en_train(model, loss_fn)}


def _en_train(modelo, loss_fn):
    """``gradiente_medio`` of the model with every submodule in train mode, where that
    changes what it computes (a BatchNorm in eval mode); None elsewhere."""
    if modo_batchnorm(modelo) != "eval":
        return None
    return gradiente_medio(copy.deepcopy(modelo).train(), loss_fn)


def estadisticas(modelo, batches):
    """``(parámetros de cada paso, accum) -> buffers``: each micro-batch of cycle k passed
    once through a copy of the model (each submodule in its mode) at step k's parameters."""
    gemelo = copy.deepcopy(modelo)
    lotes = [x.clone() for x, _ in batches]

    def buffers(valores, accum):
        copia = copy.deepcopy(gemelo)
        with torch.no_grad():
            for k, parametros in enumerate(valores):
                for p, v in zip(copia.parameters(), parametros):
                    p.copy_(v)
                for x in lotes[k * accum:(k + 1) * accum]:
                    copia(x)
        return {f"model.{n}": b.detach().clone() for n, b in copia.named_buffers()}

    return buffers


def ciclos_con_lotes_unidos(model, loss_fn, optimizer, batches, accum):
    """The public oracle: each cycle's loss, the mean of its micro-batches' losses, at the
    parameters the reference trajectory reaches, each step taken by hand (plain SGD, each
    parameter with its group's lr) with the gradient autograd gives of that mean."""
    esperado = oraculo_de_ciclos(model, loss_fn, optimizer, batches, accum)
    parametros = [p.detach().clone() for p in model.parameters()]
    tasas = [next((g["lr"] for g in optimizer.param_groups
                   if any(p is q for q in g["params"])), 0.0) for p in model.parameters()]
    perdidas = []
    for inicio in range(0, len(batches), accum):
        ciclo = batches[inicio:inicio + accum]
        perdidas.append(esperado["perdida_media"](parametros, ciclo))
        gradientes = esperado["gradiente_medio"](parametros, ciclo)
        parametros = [p if g is None else p - lr * g
                      for p, g, lr in zip(parametros, gradientes, tasas)]
    return dict(esperado, perdidas=torch.tensor(perdidas, dtype=torch.float64))


def comprobar_train_with_accumulation(train_with_accumulation):
    """Comprobación pública: 11 micro-lotes con accum = 4 (dos ciclos completos y uno de 3),
    una pérdida que es una función, un modelo anidado en eval con su primer submódulo (y su
    BatchNorm) en train, un parámetro congelado, dos grupos de parámetros y autograd
    desactivado al llamar; después 8 con accum = 4 (ningún ciclo incompleto), con
    gradientes viejos al llegar y un modelo plano en eval, con BatchNorm; 3 de una fila con
    accum = 5 (un solo ciclo, incompleto) en un modelo mezclado; y accum = 1."""
    caso = caso_en_proceso(TRAIN_WITH_ACCUMULATION, train_with_accumulation, 2,
                           ("fn", 11, 2, 4, 3, 5, 2, "sgd", TASA, False, False, True,
                            "mixto_eval", True, 2, True, True), ciclos_con_lotes_unidos)
    comprobar(TRAIN_WITH_ACCUMULATION.partes, caso,
              "Cada paso ve la media de su ciclo, incluido el ciclo final incompleto.")
    caso = caso_en_proceso(TRAIN_WITH_ACCUMULATION, train_with_accumulation, 3,
                           ("ce", 8, 2, 4, 3, 5, 2, "sgd", TASA, False, True, False, "eval",
                            False, 1, True, False), ciclos_con_lotes_unidos)
    comprobar(TRAIN_WITH_ACCUMULATION.partes, caso,
              "Y sin ciclo incompleto (8 micro-lotes, accum = 4), ni un paso de más, "
              "aunque `.grad` traiga restos.")
    caso = caso_en_proceso(TRAIN_WITH_ACCUMULATION, train_with_accumulation, 4,
                           ("ce", 3, 1, 5, 3, 4, 3, "sgd", TASA, False, True, False, "mixto"),
                           ciclos_con_lotes_unidos)
    comprobar(TRAIN_WITH_ACCUMULATION.partes, caso,
              "Y con menos micro-lotes (de una fila) que accum: un solo ciclo, incompleto.")
    caso = caso_en_proceso(TRAIN_WITH_ACCUMULATION, train_with_accumulation, 5,
                           ("mse", 3, 2, 1, 3, 4, 2), ciclos_con_lotes_unidos)
    comprobar(TRAIN_WITH_ACCUMULATION.partes, caso,
              "Y con accum = 1: un paso por micro-lote.")


# ---------------------------------------------------------- exercise 3: clip_by_global_norm
CONTENEDORES = ("list", "tuple", "generador")


def construir_recorte(generador, forma):
    """grads, max_norm for ``forma`` = (formas, nones, dtype, contenedor, razon, escala): one
    random tensor per shape in ``formas`` (times ``escala``), None at the indices in
    ``nones``, handed over as a list, a tuple or a generator; max_norm is ``razon`` times
    their total norm (< 1: clipping happens; "inf", a string so that shapes keep a plain
    repr: never). ``tensores``, the list
    behind ``grads``, is for the observer and the oracles, never passed to the student."""
    formas, nones, dtype, contenedor, razon, escala = forma
    dtype = getattr(torch, dtype)
    tensores = [None if i in nones else
                (escala * torch.randn(f, generator=generador, dtype=torch.float64)).to(dtype)
                for i, f in enumerate(formas)]
    vivos = [t.double().flatten() for t in tensores if t is not None]
    norma = torch.linalg.vector_norm(torch.cat(vivos)).item() if vivos else 1.0
    grads = (list(tensores) if contenedor == "list" else tuple(tensores)
             if contenedor == "tuple" else (t for t in tensores))
    return {"grads": grads, "max_norm": float(razon) * norma, "tensores": tensores}


def observar_recorte(clip_by_global_norm, entradas):
    """The returned (list, norm) as plain data, and the input tensors before and after."""
    tensores = entradas["tensores"]
    antes = _copiar(tensores)
    observacion = observar_llamada(clip_by_global_norm, entradas["grads"],
                                   entradas["max_norm"])
    observacion.update(antes=antes, despues=_copiar(tensores),
                       contenedor=type(entradas["grads"]).__name__)
    return observacion


def oraculo_de_recorte(grads, max_norm, tensores):
    """The public oracle: ``torch.nn.utils.clip_grad_norm_`` itself, run on parameters made
    up for the occasion that hold copies of the gradients in ``.grad``; and the classic
    mistakes, to name them when a result matches one."""
    parametros = []
    for t in tensores:
        p = torch.zeros(() if t is None else t.shape, dtype=torch.float64 if t is None
                        else t.dtype, requires_grad=True)
        p.grad = None if t is None else t.clone()
        parametros.append(p)
    with torch.no_grad():
        norma = torch.nn.utils.clip_grad_norm_(parametros, max_norm)
    recortados = [None if p.grad is None else p.grad for p in parametros]
    return dict(recortes_equivocados(tensores, max_norm), gradientes=recortados,
                norma=float(norma), max_norm=max_norm)


def _norma(gradientes):
    vivos = [g.double().flatten() for g in gradientes if g is not None]
    return torch.linalg.vector_norm(torch.cat(vivos)).item() if vivos else 0.0


def recortes_equivocados(tensores, max_norm):
    """Classic mistakes: each tensor clipped by its own norm, clipping by value, rescaling
    even below max_norm, the L1 norm, the sum of the tensors' norms, no 1e-6."""
    vivos = [g for g in tensores if g is not None]
    norma = _norma(tensores)
    l1 = sum(g.double().abs().sum().item() for g in vivos)
    suma = sum(torch.linalg.vector_norm(g.double()).item() for g in vivos)

    def escalar(factor):
        return [None if g is None else g * factor for g in tensores]

    def propio(g):
        return g * min(1.0, max_norm / (torch.linalg.vector_norm(g.double()).item() + 1e-6))

    return {"recorte_por_parametro": [None if g is None else propio(g) for g in tensores],
            "recorte_por_valor": [None if g is None else g.clamp(-max_norm, max_norm)
                                  for g in tensores],
            "recorte_siempre": (escalar(max_norm / (norma + 1e-6))
                                if norma and math.isfinite(max_norm) else None),
            "norma_l1": escalar(min(1.0, max_norm / (l1 + 1e-6))),
            "norma_suma_de_normas": escalar(min(1.0, max_norm / (suma + 1e-6))),
            "sin_epsilon": escalar(min(1.0, max_norm / norma)) if norma else None,
            "valores": {"norma_l1": l1, "norma_suma_de_normas": suma}}


def _resultado_de_recorte(caso):
    """(list of tensors or None, norm as a float64 tensor), or a diagnosis of its type."""
    resultado = caso.resultado
    if type(resultado) is not tuple or len(resultado) != 2:
        fallar("tipo", nombre="el resultado", esperado="una tupla (recortados, norma)",
               tipo=resultado.get("__objeto__", "dict") if type(resultado) is dict
               else "tensor" if isinstance(resultado, torch.Tensor)
               else type(resultado).__name__)
    gradientes, norma = resultado
    if isinstance(norma, torch.Tensor):
        if norma.numel() != 1 or norma.dim() != 0:
            fallar("tipo", nombre="la norma devuelta",
                   esperado="un float (o un tensor de dimensión 0)",
                   tipo=f"tensor de forma {tuple(norma.shape)}")
        norma = norma.double().reshape(())
    elif type(norma) in (int, float):
        norma = torch.tensor(float(norma), dtype=torch.float64)
    else:
        fallar("tipo", nombre="la norma devuelta", esperado="un float de Python",
               tipo=type(norma).__name__)
    return gradientes, norma


def _recorta(esperado):
    """The factor is below 1: max_norm < norm + 1e-6 (also when max_norm > norm)."""
    return esperado["max_norm"] < esperado["norma"] + 1e-6


def _generador_agotado(caso, gradientes, norma):
    """``grads`` came as a generator, and the result shows a second pass that saw nothing."""
    esperado = caso.datos["esperado"]
    if caso.datos["contenedor"] != "generator" or not esperado["gradientes"]:
        return
    if (type(gradientes) in (list, tuple) and len(gradientes) == 0) or (
            norma is not None and norma.item() == 0.0 and esperado["norma"] > 0):
        fallar("generador_agotado")


def _norma_devuelta(caso):
    gradientes, valor = _resultado_de_recorte(caso)
    esperado = caso.datos["esperado"]
    correcta = torch.tensor(esperado["norma"], dtype=torch.float64)
    if cerca(valor, correcta, rtol=1e-5, atol=1e-12):
        return
    _generador_agotado(caso, gradientes, valor)
    recortado = _recorta(esperado)
    despues = torch.tensor(_norma(esperado["gradientes"]), dtype=torch.float64)
    if recortado and cerca(valor, despues, rtol=1e-5):
        fallar("norma_tras_recorte", valor=valor.item())
    for diagnostico, otro in esperado["valores"].items():
        otro = torch.tensor(otro, dtype=torch.float64)
        if cerca(valor, otro) and not cerca(otro, correcta):
            fallar(diagnostico, nombre="la norma devuelta")
    comparar_con_factores("la norma devuelta", valor, correcta, rtol=1e-5)


def _gradientes_recortados(caso):
    gradientes, norma = _resultado_de_recorte(caso)
    esperado = caso.datos["esperado"]
    correctos = esperado["gradientes"]
    if type(gradientes) is not list:
        fallar("tipo", nombre="los gradientes recortados", esperado="una lista (list)",
               tipo=gradientes.get("__objeto__", "dict") if type(gradientes) is dict
               else "tensor" if isinstance(gradientes, torch.Tensor)
               else type(gradientes).__name__)
    _generador_agotado(caso, gradientes, norma)
    if len(gradientes) != len(correctos):
        nones = sum(g is None for g in correctos)
        if nones and len(gradientes) == len(correctos) - nones:
            fallar("nones_perdidos", longitud=len(gradientes), longitud_esperada=len(correctos),
                   nones=nones)
        fallar("longitud", nombre="los gradientes recortados", longitud=len(gradientes),
               longitud_esperada=len(correctos))
    if _todos_cerca(gradientes, correctos):
        return
    for i, (g, c) in enumerate(zip(gradientes, correctos)):
        if (g is None) != (c is None):
            fallar("none_cambiado", indice=i, esperado="None" if c is None else "un tensor")
    for alternativa in ("recorte_por_parametro", "recorte_por_valor", "recorte_siempre",
                        "norma_l1", "norma_suma_de_normas", "sin_epsilon"):
        otra = esperado.get(alternativa)
        if otra is not None and not _todos_cerca(otra, correctos) and not _todos_cerca(
                otra, caso.datos["antes"]) and _todos_cerca(gradientes, otra):
            fallar(alternativa, nombre="el recorte")
    recortado = _recorta(esperado)
    if recortado and _todos_cerca(gradientes, caso.datos["antes"]):
        fallar("sin_recortar")
    if not recortado and _agrandados(gradientes, caso.datos["antes"]):
        fallar("recorte_siempre")
    for i, (g, a) in enumerate(zip(gradientes, caso.datos["antes"])):
        if (type(g) is torch.Tensor and a is not None and torch.isfinite(a).all()
                and not torch.isfinite(g).all()):
            fallar("no_finito", nombre=f"el gradiente recortado {i}")
    comparar_gradientes_recortados(gradientes, correctos)


def _agrandados(obtenidos, originales):
    """Every tensor came back scaled up (or to inf / nan) though nothing was to be clipped."""
    pares = [(o, a) for o, a in zip(obtenidos, originales) if a is not None and a.any()]
    if not pares or any(type(o) is not torch.Tensor or o.shape != a.shape for o, a in pares):
        return False
    if any(o.isnan().any() for o, _ in pares):
        return False  # NaN: not a rescaling
    if any(not torch.isfinite(o).all() for o, _ in pares):
        return True
    razon = _norma([o for o, _ in pares]) / _norma([a for _, a in pares])
    return razon > 1 + 1e-4 and _todos_cerca([o for o, _ in pares],
                                             [a * razon for _, a in pares])


def comparar_gradientes_recortados(obtenidos, esperados):
    for i, (obtenido, esperado) in enumerate(zip(obtenidos, esperados)):
        if esperado is not None:
            comparar_con_factores(f"el gradiente recortado {i}", obtenido, esperado)


def _entradas_intactas(caso):
    _resultado_de_recorte(caso)
    for i, (a, d) in enumerate(zip(caso.datos["antes"], caso.datos["despues"])):
        if a is not None and not torch.equal(a, d):
            fallar("modificada", nombre=f"grads[{i}]")


CLIP_BY_GLOBAL_NORM = Ejercicio(
    funcion="clip_by_global_norm",
    partes=[
        Parte("devuelve la norma total: la L2 de todos los gradientes juntos, antes del "
              "recorte", 1.0, _norma_devuelta),
        Parte("gradientes recortados: un mismo factor para todos, solo si la norma pasa de "
              "max_norm; los None en su sitio", 1.5, _gradientes_recortados),
        Parte("no modifica los tensores que recibe", 0.5, _entradas_intactas, requisito=True),
    ],
    construir=construir_recorte, observar=observar_recorte)


def comprobar_clip_by_global_norm(clip_by_global_norm):
    """Comprobación pública frente a ``torch.nn.utils.clip_grad_norm_``: una lista de tres
    gradientes pequeños y un None que hay que recortar; un generador de gradientes cuya
    norma ya es menor que ``max_norm`` (nada que recortar), en float32 con un tensor de
    dimensión 0; una tupla con ``max_norm`` entre la norma y la norma + 1e-6; otra con
    ``max_norm`` infinito; y sin tensores: solo None, o vacía."""
    formas = [
        (((3, 2), (3,), (), (2, 2)), (1,), "float64", "list", 0.25, 1e-3),
        (((4,), (2, 3), ()), (), "float32", "generador", 3.0, 1.0),
        (((3,), (), (2, 2)), (), "float64", "tuple", 1.05, 1e-7),
        (((2,), (3,), (2, 2)), (1,), "float64", "tuple", "inf", 1.0),
        (((2,), (3,)), (0, 1), "float32", "list", 0.5, 1.0),
        ((), (), "float32", "tuple", "inf", 1.0),
    ]
    mensajes = [
        "Una norma para todos los gradientes juntos y un solo factor de recorte.",
        "Y si la norma ya es menor que max_norm, los gradientes se quedan como están, cada "
        "uno con su dtype (también cuando llegan en un generador).",
        "En el límite: max_norm pasa de la norma pero no de la norma + 1e-6.",
        "Con max_norm infinito, nunca recorta.",
        "Sin tensores (solo None).",
        "Y sin nada: una tupla vacía.",
    ]
    for semilla, (forma, mensaje) in enumerate(zip(formas, mensajes), 6):
        caso = caso_en_proceso(CLIP_BY_GLOBAL_NORM, clip_by_global_norm, semilla, forma,
                               oraculo_de_recorte)
        comprobar(CLIP_BY_GLOBAL_NORM.partes, caso, mensaje)


# In notebook order.
EJERCICIOS = ejercicios(MICRO_BATCH_WEIGHTS, TRAIN_WITH_ACCUMULATION, CLIP_BY_GLOBAL_NORM)
