"""Chapter 5: train and eval modes. How each exercise is built, observed and scored.

Injected into the chapter 5 student notebook by the build. Every observation is plain
data: a snapshot of everything the call could change (``estado``: grad mode, values,
``requires_grad`` and ``.grad`` of every tensor and parameter, buffers, every module's
mode, plus the hooks left on each module) taken before and after the call, in the
caller's grad mode; and what the model (and, for ``modules_that_change``, each leaf)
saw at each forward call (modes, whether grad mode was on). The public oracles write
the layers out by hand (BatchNorm with its running statistics, ``F.dropout``) or read
the module types, never the reference.

A case's inputs are the function's arguments plus ``llamada``, what the caller sets
around the call (its grad mode): observers call the function without it. For
``evaluation_mode`` (a context manager), ``x`` is no argument either: it is what the body
of each observed ``with`` block feeds the model.
"""

import copy
import math
from collections import OrderedDict

import torch
import torch.nn.functional as F
from torch import nn

from autograder.student.compare import (
    Ejercicio,
    Parte,
    cambios,
    caso_en_proceso,
    comparar,
    comprobar_casos,
    ejercicios,
    estado,
    exigir,
    fallar,
    observar_llamada,
)
from autograder.student.diagnosis import Diagnostico
from autograder.student.messages import registrar

__all__ = ["comprobar_evaluation_mode", "comprobar_modules_that_change", "comprobar_mc_dropout",
           "modos_de", "RuidoGaussiano"]

MENSAJES = {
    "modos_no_restaurados": (
        "Modos no restaurados",
        "Antes de la llamada, los submódulos en modo entrenamiento eran {antes}; después, "
        "{despues}.",
        "`model.train` y `model.eval` aplican un mismo modo a todos los submódulos, y cada uno "
        "puede haber llegado en un modo distinto. ¿Guardas el modo de cada submódulo al empezar "
        "y se lo devuelves a cada uno, a cualquier profundidad? Ojo con el orden: un padre "
        "impone su modo a los hijos que ya restauraste.",
        "Module modes were not restored: in train mode before {antes}, after {despues}."),
    "tm_dejado_en_eval": (
        "Modelo dejado en modo evaluación",
        "Al empezar, {antes} submódulos estaban en modo entrenamiento; al volver, ninguno: "
        "el modelo quedó en modo evaluación.",
        "Quien te llama sigue entrenando después. ¿En qué modo queda cada submódulo cuando "
        "devuelves? Un `model.train()` general pondría en entrenamiento también lo que estaba "
        "congelado.",
        "The model was left in eval mode ({antes} modules were in train mode before)."),
    "evaluacion_con_grafo": (
        "Evaluación con grafo",
        "El modelo se ejecutó con el cálculo de gradientes activado: cada pase construyó un "
        "grafo que nadie va a usar.",
        "`model.eval()` no desactiva autograd, y un `.detach()` sobre la salida llega tarde: el "
        "grafo ya se construyó. ¿Qué modo de autograd evita construirlo?",
        "The model ran with grad mode on: eval() does not disable autograd (use no_grad)."),
    "ev_no_es_gestor": (
        "No es un gestor de contexto",
        "`evaluation_mode(model)` devolvió un objeto de tipo `{tipo}`, que no se puede usar en "
        "un `with`: no tiene `__enter__` ni `__exit__`.",
        "Un bloque `with` necesita un gestor de contexto. ¿Qué devuelve tu función al "
        "llamarla? Mira cómo se escribe un gestor con `contextlib.contextmanager` o con una "
        "clase.",
        "evaluation_mode(model) returned a {tipo}, not a context manager."),
    "ev_sin_yield": (
        "Gestor sin yield",
        "Al entrar en el `with`, tu gestor no entregó nada al bloque: la función que decora "
        "`contextlib.contextmanager` terminó (o devolvió un valor con `return`) sin llegar a "
        "un `yield`.",
        "Con `contextlib.contextmanager`, el bloque `with` se ejecuta en el punto del `yield`: "
        "lo de antes es la entrada y lo de después, la salida. ¿Llega tu función a ese punto?",
        "The generator-based context manager never reached a yield."),
    "ev_dentro_en_train": (
        "Submódulos en modo entrenamiento dentro del bloque",
        "Dentro del bloque seguían en modo entrenamiento: {modulos}.",
        "Cualquier módulo puede leer `self.training`, no solo Dropout y BatchNorm, y cada "
        "submódulo tiene su propio indicador. ¿Qué módulos pasa tu gestor a modo evaluación "
        "al entrar?",
        "Modules still in train mode inside the block: {modulos}."),
    "ev_excepcion_sin_restaurar": (
        "Nada restaurado tras una excepción",
        "Cuando el código del bloque lanzó una excepción, {que} no volvió a como estaba al "
        "entrar.",
        "¿Qué pasa con los modos si el bloque lanza una excepción? Con una excepción, la "
        "ejecución no sigue por la línea siguiente al bloque.",
        "When the block raised, {que} was not restored."),
    "ev_anidado": (
        "Bloques anidados",
        "Con un `with evaluation_mode(model)` dentro de otro, {que}.",
        "Cada bloque debe dejar las cosas como las encontró al entrar: el interior, como las "
        "dejó el exterior. ¿Dónde guarda tu gestor lo que restaura, y lo comparten dos "
        "bloques?",
        "With one block nested in another, {que}."),
    "ev_entrega": (
        "El `as` no recibe el modelo",
        "En `with evaluation_mode(model) as m`, `m` no es `model`.",
        "El contrato pide que el bloque reciba el mismo modelo. ¿Qué entrega tu gestor al "
        "entrar?",
        "`with evaluation_mode(model) as m`: m is not model."),
    "ev_excepcion_tragada": (
        "Excepción silenciada",
        "El código del bloque lanzó una excepción y no llegó a quien lo ejecutaba: tu gestor "
        "la silenció.",
        "Un error en el bloque debe seguir su camino después de restaurar. ¿Capturas la "
        "excepción, o devuelve algo verdadero tu `__exit__`?",
        "The block's exception was swallowed by the context manager."),
    "tm_medicion_con_grafo": (
        "Medición con grafo",
        "Ejecutaste el modelo o alguna de sus capas con el cálculo de gradientes activado: "
        "cada pase construyó un grafo que nadie va a usar.",
        "Para medir no hace falta grafo. ¿Bajo qué modo de autograd corren el pase del modelo y "
        "las ejecuciones de cada hoja?",
        "The model or a leaf ran with grad mode on while measuring (use no_grad)."),
    "tm_autograd_no_restaurado": (
        "Modo de autograd cambiado",
        "Al empezar tu función, autograd estaba {antes}; al volver, {despues}.",
        "`torch.set_grad_enabled` como instrucción suelta cambia el modo para todo lo que venga "
        "después. ¿Qué forma de desactivar autograd lo restaura al salir?",
        "Grad mode was {antes} before the call and {despues} after it."),
    "tm_ganchos_sin_quitar": (
        "Ganchos sin quitar",
        "Al volver, el modelo tenía ganchos que tu función registró y no quitó ({donde}): se "
        "ejecutarán en cada pase futuro.",
        "Los ganchos (*hooks*) que registras siguen en el modelo cuando devuelves. ¿Qué "
        "devuelve `register_forward_hook` y para qué sirve?",
        "Hooks registered on the model were left there ({donde})."),
    "tm_buffers_movidos": (
        "BatchNorm modificada al medir",
        "Las estadísticas acumuladas de BatchNorm ({nombre}) cambiaron: ejecutar una BatchNorm "
        "en modo entrenamiento actualiza `running_mean`, `running_var` y "
        "`num_batches_tracked`.",
        "Ejecutar en modo entrenamiento actualiza los búferes de BatchNorm. ¿Sobre qué módulos "
        "mides, y qué queda en sus búferes al devolver?",
        "BatchNorm running statistics ({nombre}) changed while measuring."),
    "modulos_solo_por_tipo": (
        "Módulos buscados solo por su tipo",
        "Faltan módulos que sí cambian entre train y eval: {faltan}.",
        "Un módulo propio también puede leer `self.training`. ¿Decides por el tipo del módulo o "
        "por lo que hace en cada modo?",
        "Missing modules that do change between train and eval: {faltan}."),
    "modulo_sin_efecto_listado": (
        "Tipo que cambia, módulo que no",
        "Listaste módulos cuya salida es la misma en train y en eval: {sobran}.",
        "Hay módulos de tipo Dropout o BatchNorm que se comportan igual en los dos modos (mira "
        "sus argumentos). ¿Mides su comportamiento o miras su tipo?",
        "Listed modules whose output is the same in train and eval: {sobran}."),
    "tm_hoja_no_ejecutada": (
        "Hoja que el modelo no ejecuta",
        "Listaste {sobran}: `model(x)` nunca la ejecuta, así que no hay entrada sobre la que "
        "medirla.",
        "¿Qué hojas mides? Un módulo registrado que el pase hacia adelante no llama no cuenta.",
        "Listed a leaf that model(x) never runs: {sobran}."),
    "contenedor_listado": (
        "Contenedores en la lista",
        "Listaste contenedores ({sobran}): su salida cambia solo porque cambia la de un hijo.",
        "¿Listas también contenedores? Solo cuentan los módulos hoja (sin hijos), a cualquier "
        "profundidad.",
        "Listed containers ({sobran}); only leaf modules were asked for."),
    "tm_misma_entrada": (
        "Capas medidas sobre entradas distintas",
        "Listaste capas que se comportan igual en los dos modos ({sobran}): su salida cambió "
        "solo porque recibieron otra entrada.",
        "¿Sobre qué entrada mides cada hoja? Si comparas dos pases completos del modelo, tras "
        "una capa que cambia todas las siguientes reciben entradas distintas.",
        "Listed layers that behave the same in both modes ({sobran}): their inputs differed."),
    "tm_salida_del_modelo": (
        "Salida del modelo en vez de la de cada hoja",
        "Faltan hojas que cambian entre modos: {faltan}. Su cambio no llega a la salida del "
        "modelo (una rama auxiliar cuyo resultado el modelo no usa), pero la hoja sí cambia.",
        "¿Qué salidas comparas: las de cada hoja o la del modelo entero? Un cambio que las "
        "capas siguientes no usan o borran no se ve en la salida del modelo.",
        "Missing leaves whose own output changes but never reaches the model's: {faltan}."),
    "tm_comparacion_laxa": (
        "Capas que cambian sin listar",
        "Faltan hojas cuya salida en modo entrenamiento es distinta de la de evaluación: "
        "{faltan}.",
        "¿Cómo comparas las dos salidas? Dropout conserva la media y un cambio diminuto "
        "también es un cambio: el enunciado pide una comparación exacta, elemento a elemento.",
        "Missing leaves whose output differs between train and eval: {faltan}."),
    "modulos_lista": (
        "Lista de módulos",
        "La lista no coincide: sobran {sobran}; faltan {faltan}.",
        "¿Qué nombres devuelves y de qué módulos? Relee el enunciado: cada hoja cuya salida "
        "cambia entre modos, con su nombre en el modelo.",
        "Wrong list of modules: extra {sobran}; missing {faltan}."),
    "mc_batchnorm_en_train": (
        "BatchNorm en modo entrenamiento",
        "Durante el muestreo BatchNorm estaba en modo entrenamiento: normalizó con las "
        "estadísticas de cada lote y actualizó `running_mean`/`running_var`.",
        "¿En qué modo están las capas BatchNorm mientras muestreas? Solo Dropout debe quedar "
        "activo.",
        "BatchNorm was in train mode while sampling (batch statistics, buffers updated)."),
    "mc_otros_en_train": (
        "Otras capas en modo entrenamiento",
        "Durante el muestreo estaban en modo entrenamiento módulos que no son `nn.Dropout`: "
        "{modulos}.",
        "Solo los `nn.Dropout` se encienden. ¿Partes de todo apagado y enciendes esos, o al "
        "revés? Al revés se te escapan módulos que no reconoces.",
        "Modules other than nn.Dropout were in train mode while sampling: {modulos}."),
    "mc_resembrado": (
        "Semilla fijada dentro",
        "Tu función vuelve a fijar la semilla (`torch.manual_seed`, aunque sea con la misma "
        "de quien llama): sus muestras ya no siguen el estado del generador que recibe.",
        "No fijes la semilla dentro de la función: quien llama decide si quiere resultados "
        "reproducibles fijándola antes de llamarte.",
        "Your function reseeds the random generator: its samples no longer depend on the "
        "caller's seed."),
    "mc_varianza": (
        "Varianza en vez de desviación típica",
        "`{nombre}` es la varianza de las muestras, el cuadrado de la desviación típica.",
        "¿Devuelves la varianza o la desviación típica?",
        "`{nombre}` is the variance, not the standard deviation."),
    "mc_sin_dropout": (
        "Dropout apagado",
        "Ningún `Dropout` estaba activo durante el muestreo: todas las muestras son iguales y "
        "la desviación típica es 0.",
        "Tus muestras son todas iguales: ¿están activos los `nn.Dropout` mientras muestreas?",
        "No Dropout was active while sampling: every sample is the same."),
    "mc_llamadas": (
        "Número de pases",
        "El modelo se llamó {llamadas} veces; el contrato pide `n_samples` = {n} pases, uno "
        "tras otro, sobre `x` entero.",
        "¿Cuántas veces llamas al modelo? Deben ser exactamente `n_samples`, sin pases extra "
        "(ni para conocer la forma de la salida).",
        "The model ran {llamadas} times; n_samples = {n} passes were expected."),
    "mc_media_bessel": (
        "Media con corrección de Bessel",
        "`{nombre}` es {razon:.4g} × el valor correcto: n/(n−1), la suma de las muestras "
        "dividida por n − 1.",
        "La corrección de Bessel es cosa de la dispersión. ¿Por qué número divides la suma "
        "de las muestras para obtener su media?",
        "`{nombre}` divides the sum by n - 1 instead of n."),
    "mc_std_sesgada": (
        "Desviación típica sin corrección",
        "`{nombre}` es {razon:.4g} × el valor correcto: √((n−1)/n), la desviación típica que "
        "divide por n.",
        "¿Por qué número divides al calcular la dispersión: n o n − 1?",
        "`{nombre}` divides by n instead of n - 1 (no Bessel correction)."),
}
registrar(MENSAJES)


class RuidoGaussiano(nn.Module):
    """Suma ruido gaussiano de desviación típica ``sigma`` en modo entrenamiento; en modo
    evaluación, la identidad."""

    def __init__(self, sigma):
        super().__init__()
        self.sigma = sigma

    def forward(self, x):
        if self.training and self.sigma > 0:
            return x + self.sigma * torch.randn_like(x)
        return x


RAMAS_DESCARTADAS = ("auxiliar", "apagada")  # branches run for nothing but their leaves


class ConReserva(nn.Sequential):
    """A Sequential whose forward skips its child ``reserva`` (a leaf ``model(x)`` never runs)
    and runs its child ``auxiliar`` (a BatchNorm) on the way without using its output (a leaf
    whose change never reaches the model's output, like an auxiliary head)."""

    def forward(self, x):
        for nombre, modulo in self.named_children():
            if nombre in RAMAS_DESCARTADAS:
                modulo(x)
            elif nombre != "reserva":
                x = modulo(x)
        return x


def modos_de(modelo):
    """El indicador ``training`` de cada módulo, en el orden de ``model.modules()``."""
    return [m.training for m in modelo.modules()]


def _descripcion(modos):
    return f"{sum(modos)} de {len(modos)}"


def diagnosticar_modos(antes, despues):
    """Same modes as before the call, module by module? (plain lists of bools)."""
    if list(antes) == list(despues):
        return None
    if antes[0] and not any(despues):  # the root was in train mode, and nothing is now
        return Diagnostico("tm_dejado_en_eval", {"antes": _descripcion(antes)})
    return Diagnostico("modos_no_restaurados",
                       {"antes": _descripcion(antes), "despues": _descripcion(despues)})


# ---------------------------------------------------------------- inputs of every exercise
LLAMADA = "llamada"  # the key of what the caller sets around the call (not an argument)
DTYPES = {"float32": torch.float32, "float64": torch.float64}


def opciones(forma, n):
    """The options of a case: ``forma[n]``, a tuple of (name, value) pairs, if present.

    The public examples' shapes stop before it (every option at its default)."""
    return dict(forma[n]) if len(forma) > n else {}


def argumentos(entradas):
    """The function's arguments, in order: every input but ``llamada``."""
    return [valor for clave, valor in entradas.items() if clave != LLAMADA]


def _inicializar(modelo, generador):
    """Random weights and non-trivial running statistics, all from ``generador``."""
    with torch.no_grad():
        for nombre, p in modelo.named_parameters():
            ruido = torch.randn(p.shape, generator=generador, dtype=p.dtype)
            p.copy_(1 + 0.3 * ruido if nombre.endswith("weight") and p.dim() == 1 else ruido)
        for m in modelo.modules():
            if isinstance(m, nn.BatchNorm1d) and m.track_running_stats:
                m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=generador,
                                                 dtype=m.running_mean.dtype))
                m.running_var.copy_(0.5 + torch.rand(m.running_var.shape, generator=generador,
                                                     dtype=m.running_var.dtype))
                m.num_batches_tracked.fill_(7)
    return modelo


def _uniforme(generador, bajo, alto):
    return round(bajo + (alto - bajo) * torch.rand(1, generator=generador).item(), 3)


def red_con_normalizacion(generador, D, H, C, p, anidada=False, ruido=False, dropout2=False,
                          dtype=torch.float64, profunda=False):
    """Linear → BatchNorm1d → ReLU → [RuidoGaussiano] → Dropout(p) → [Linear → ReLU →
    Dropout] → Linear. ``anidada``: the blocks in Sequentials of their own (a BatchNorm two
    levels down); ``profunda`` (with ``anidada``; True or a number of levels): BatchNorm →
    ReLU → [RuidoGaussiano] in a Sequential of their own inside the first block (three levels
    down), wrapped in ``profunda - 1`` more Sequentials. Without options, the
    public examples' flat float64 model."""
    bloque = OrderedDict(capa=nn.Linear(D, H), norma=nn.BatchNorm1d(H), act=nn.ReLU())
    if ruido:
        bloque["ruido"] = RuidoGaussiano(_uniforme(generador, 0.2, 0.8))
    if anidada and profunda:
        capa = bloque.pop("capa")
        interno = nn.Sequential(bloque)
        for _ in range(int(profunda) - 1):  # more levels: Sequentials of one child each
            interno = nn.Sequential(OrderedDict(envoltura=interno))
        bloque = OrderedDict(capa=capa, interno=interno)
    bloque["dropout"] = nn.Dropout(p)
    segundo = OrderedDict()
    if dropout2:
        segundo = OrderedDict(capa2=nn.Linear(H, H), act2=nn.ReLU(),
                              dropout2=nn.Dropout(_uniforme(generador, 0.1, 0.5)))
    if anidada:
        capas = OrderedDict(bloque=nn.Sequential(bloque))
        if segundo:
            capas["bloque2"] = nn.Sequential(segundo)
    else:
        capas = OrderedDict(**bloque, **segundo)
    capas["salida"] = nn.Linear(H, C)
    return _inicializar(nn.Sequential(capas).to(dtype), generador)


def poner_modo(modelo, modo, generador=None):
    """"train", "eval", "mixto" (train mode with every BatchNorm frozen, fine-tuning style),
    "raiz_eval" (eval mode but every Dropout and noise layer, and every container two or more
    levels down, in train: children in train under parents in eval, containers in another
    mode than the root's) or "azar" (every module's own flag drawn at random)."""
    modelo.train(modo not in ("eval", "raiz_eval"))
    if modo == "raiz_eval":
        for hijo in modelo.children():
            for nieto in hijo.children():
                for m in nieto.modules():
                    if list(m.children()):
                        m.training = True
        for m in modelo.modules():
            if isinstance(m, (nn.Dropout, RuidoGaussiano)):
                m.train()
    if modo == "mixto":
        for m in modelo.modules():
            if isinstance(m, nn.BatchNorm1d):
                m.eval()
    if modo == "azar":
        for m in modelo.modules():
            m.training = bool(torch.rand(1, generator=generador).item() < 0.5)
    return modelo


def clase_de_modos(modelo):
    """"eval", "train" or "mixto": what the modes of a model look like."""
    modos = modos_de(modelo)
    return "train" if all(modos) else "eval" if not any(modos) else "mixto"


def hijo_con_otro_modo(modelo):
    """A module two or more levels down whose mode differs from its parent's (what restoring
    only the root and its direct children gets wrong)."""
    def recorrer(modulo, profundidad):
        for hijo in modulo.children():
            if profundidad >= 1 and hijo.training != modulo.training:
                return True
            if recorrer(hijo, profundidad + 1):
                return True
        return False
    return recorrer(modelo, 0)


def train_bajo_eval(modelo):
    """A module in train mode whose parent is in eval mode (what re-freezing only the modules
    that were in eval mode, after a general ``train()``, gets wrong)."""
    return any(hijo.training and not m.training for m in modelo.modules()
               for hijo in m.children())


def contenedor_con_otro_modo(modelo):
    """A container below the root in another mode than the root's (what restoring the root
    and the leaves only gets wrong)."""
    return any(list(m.children()) and m.training != modelo.training
               for m in list(modelo.modules())[1:])


def ganchos_previos(modelo):
    """Does the model arrive with hooks of its caller's?"""
    return any(m._forward_pre_hooks or m._forward_hooks for m in modelo.modules())


def congelados(modelo):
    """Does the model hold a frozen parameter (``requires_grad`` False)?"""
    return any(not p.requires_grad for p in modelo.parameters())


def profundidad(modelo):
    hijos = list(modelo.children())
    return 1 + max((profundidad(h) for h in hijos), default=-1) if hijos else 0


def _gancho_de_quien_llama(modulo, *args):
    """A hook the caller registered before the call (it returns None: changes nothing)."""


def _entorno(entradas, generador, opcion):
    """The options every exercise shares, applied once the arguments are drawn: x's
    ``requires_grad``, frozen parameters (the first layer's, fine-tuning style), stale
    ``.grad`` on the parameters, and the caller's grad mode."""
    if opcion.get("x_rg"):
        entradas["x"].requires_grad_(True)
    if opcion.get("ganchos"):  # the caller's own hooks, which do nothing and must stay
        modelo = entradas["model"]
        hoja = next(m for m in modelo.modules() if not list(m.children()))
        hoja.register_forward_pre_hook(_gancho_de_quien_llama)
        modelo.register_forward_hook(_gancho_de_quien_llama)
    if opcion.get("congelado"):
        primera = next(m for m in entradas["model"].modules()
                       if list(m.parameters(recurse=False)))
        for p in primera.parameters():
            p.requires_grad_(False)
    if opcion.get("grad_viejo"):
        for p in entradas["model"].parameters():
            p.grad = torch.randn(p.shape, generator=generador, dtype=p.dtype)
    entradas[LLAMADA] = {"grad": bool(opcion.get("grad", True))}
    return entradas


# ---------------------------------------------------------------- observing a call
def ganchos_de(modelo, nombre="model"):
    """The number of hooks on every module, by name (what a call must not leave behind)."""
    return {f"{nombre}{'.' + n if n else ''}.ganchos": sum(
        len(getattr(m, atributo, {})) for atributo in
        ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks"))
        for n, m in modelo.named_modules()}


def instantanea(entradas):
    """``estado`` of the arguments, plus the hooks on the model."""
    foto = estado({clave: valor for clave, valor in entradas.items() if clave != LLAMADA})
    foto.update(ganchos_de(entradas["model"]))
    return foto


UN_SOLO_VALOR = "Expected more than 1 value per channel when training"
SORTEOS_PREVIOS = 5


def sembrar(semilla):
    """What the caller does before the call: fix the seed, then use the generator a little
    (so a function that seeds it again, even with ``torch.initial_seed()``, draws other
    numbers)."""
    torch.manual_seed(semilla)
    torch.rand(SORTEOS_PREVIOS)


def _observar_con_ganchos(funcion, entradas, semilla=None, hojas=False,
                          batchnorm_en_train=None):
    """Call ``funcion`` in the caller's grad mode; record the state before and after, and
    the modes and grad mode at every forward call of the model (and of every leaf, with
    ``hojas``). Hooks on the model travel with a ``copy.deepcopy`` of it, or of a leaf.

    A BatchNorm run in train mode on a single sample raises: with ``batchnorm_en_train``
    (a diagnosis id), that error is reported as the mistake that caused it."""
    modelo = entradas["model"]
    normas = [i for i, m in enumerate(modelo.modules()) if isinstance(m, nn.BatchNorm1d)]
    durante, en_hojas = [], []

    def registrar_llamada(modulo, args):
        durante.append({"modos": modos_de(modulo), "grad": torch.is_grad_enabled()})

    def registrar_hoja(modulo, args):
        en_hojas.append(torch.is_grad_enabled())

    with torch.set_grad_enabled(entradas[LLAMADA]["grad"]):
        antes = instantanea(entradas)
        ganchos = [modelo.register_forward_pre_hook(registrar_llamada)]
        if hojas:
            ganchos += [m.register_forward_pre_hook(registrar_hoja) for m in modelo.modules()
                        if not list(m.children())]
        try:
            with torch.random.fork_rng(devices=[]):
                if semilla is not None:
                    sembrar(semilla)
                observacion = observar_llamada(funcion, *argumentos(entradas))
                semilla_final = torch.initial_seed()
        finally:
            for gancho in ganchos:
                gancho.remove()
        despues = instantanea(entradas)
    observacion.update(durante=durante, grad_en_hojas=en_hojas, estado_antes=antes,
                       estado_despues=despues, semilla_final=semilla_final)
    error = observacion["error"]
    if batchnorm_en_train and error is not None and UN_SOLO_VALOR in str(
            error["hechos"].get("detalle")) and any(
            llamada["modos"][i] for llamada in durante for i in normas):
        observacion["error"] = {"diagnostico": batchnorm_en_train, "hechos": {}}
    return observacion


def _modos(foto):
    """The modes in a snapshot, in ``model.modules()`` order."""
    return [v for k, v in foto.items() if k.startswith("model") and k.endswith(".training")]


def _modos_restaurados(caso):
    exigir(diagnosticar_modos(_modos(caso.datos["estado_antes"]),
                              _modos(caso.datos["estado_despues"])))


def _nada_mas_cambia(caso, buffers="buffers_cambiados"):
    """Everything but the modes (a part of their own) as it was: grad mode, BatchNorm
    statistics, parameters (values, ``requires_grad``, ``.grad``), x and y, the hooks."""
    antes, despues = caso.datos["estado_antes"], caso.datos["estado_despues"]
    distintos = [n for n in cambios(antes, despues) if not n.endswith(".training")]
    if not distintos:
        return
    if "modo de autograd" in distintos:
        def palabra(activo):
            return "activado" if activo else "desactivado"
        fallar("tm_autograd_no_restaurado", antes=palabra(antes["modo de autograd"]),
               despues=palabra(despues["modo de autograd"]))
    estadisticas = [n for n in distintos
                    if n.rsplit(".", 1)[-1] in ("running_mean", "running_var",
                                                "num_batches_tracked")]
    if estadisticas:
        fallar(buffers, nombre=estadisticas[0])
    ganchos = [n for n in distintos if n.endswith(".ganchos")]
    if ganchos:
        fallar("tm_ganchos_sin_quitar", donde=", ".join(
            f"`{n[:-len('.ganchos')]}`" for n in ganchos[:3]))
    valores = [n for n in distintos if not n.endswith(".grad")]
    if valores:
        fallar("modificada", nombre=valores[0].replace(".requires_grad", ""))
    fallar("efecto_secundario", que=", ".join(f"`{n}`" for n in distintos[:4]))


def _sin_grafo(caso, diagnostico="evaluacion_con_grafo"):
    if any(llamada["grad"] for llamada in caso.datos["durante"]) or any(
            caso.datos.get("grad_en_hojas", ())):
        fallar(diagnostico)


# ---------------------------------------------------------------- hand-written layers
def _batchnorm_a_mano(norma, h):
    """BatchNorm1d in eval mode, written out: the running statistics, not the batch's."""
    return ((h - norma.running_mean) / torch.sqrt(norma.running_var + norma.eps) * norma.weight
            + norma.bias)


def adelante_a_mano(modelo, x, dropout_activo):
    """The forward pass of a model of this chapter, leaf by leaf in ``modules()`` order,
    every layer in eval mode but the ``nn.Dropout`` ones when ``dropout_activo``."""
    h = x
    for m in modelo.modules():
        if list(m.children()):
            continue
        if isinstance(m, nn.Linear):
            h = F.linear(h, m.weight, m.bias)
        elif isinstance(m, nn.BatchNorm1d):
            h = _batchnorm_a_mano(m, h)
        elif isinstance(m, nn.ReLU):
            h = torch.clamp_min(h, 0)
        elif isinstance(m, nn.Dropout):
            h = F.dropout(h, m.p, training=dropout_activo)
        elif not isinstance(m, RuidoGaussiano):  # the noise is the identity in eval mode
            raise TypeError(f"capa inesperada: {type(m).__name__}")
    return h


# ---------------------------------------------------------------- exercise 1: evaluation_mode
# forma = (N, D, H, C, p, modo[, opciones]); opciones: anidada, ruido (bools), dtype
# ("float32"/"float64"), x_rg, grad_viejo, grad (the caller's grad mode). N >= 2: the body of
# every observed block runs model(x), and a block that left a BatchNorm in train mode must be
# named for that, not crash on a single sample.
def construir_bloque(generador, forma):
    """model, x (what the body of each observed block feeds the model) and the caller's grad
    mode, for ``forma``."""
    N, D, H, C, p, modo = forma[:6]
    opcion = opciones(forma, 6)
    dtype = DTYPES[opcion.get("dtype", "float64")]
    modelo = red_con_normalizacion(generador, D, H, C, p, anidada=opcion.get("anidada", False),
                                   ruido=opcion.get("ruido", False), dtype=dtype,
                                   profunda=opcion.get("profunda", False))
    poner_modo(modelo, modo, generador)
    entradas = {"model": modelo, "x": torch.randn(N, D, generator=generador, dtype=dtype)}
    return _entorno(entradas, generador, opcion)


class ErrorDelBloque(Exception):
    """What the body of an observed block raises: the block must let it through."""


class InterrupcionDelBloque(BaseException):
    """What the body of another observed block raises: no Exception, like the
    KeyboardInterrupt of a cell interrupted by hand (an ``except Exception`` misses it)."""


def _modos_y_grad(modelo):
    return {"modos": modos_de(modelo), "grad": torch.is_grad_enabled()}


def _abrir(evaluation_mode, modelo, cuerpo, crear_con=None):
    """``with evaluation_mode(modelo) as entregado: cuerpo(entregado)``, naming the two ways a
    student's function is no context manager: what it returns has no ``__enter__`` /
    ``__exit__``, or ``contextlib.contextmanager`` wraps a function that never yields.
    ``crear_con``: the grad mode ``evaluation_mode(modelo)`` is called in, when it is not the
    one the block is opened in (the manager does its work on entering, not when created)."""
    if crear_con is None:
        gestor = evaluation_mode(modelo)
    else:
        abierto_con = torch.is_grad_enabled()
        with torch.set_grad_enabled(crear_con):
            gestor = evaluation_mode(modelo)
        torch.set_grad_enabled(abierto_con)
    if not (hasattr(type(gestor), "__enter__") and hasattr(type(gestor), "__exit__")):
        fallar("ev_no_es_gestor", tipo=type(gestor).__name__)
    en_el_cuerpo = False
    try:
        with gestor as entregado:
            en_el_cuerpo = True
            cuerpo(entregado)
    except (TypeError, RuntimeError) as error:
        if not en_el_cuerpo and ("didn't yield" in str(error)
                                 or "not an iterator" in str(error)):
            fallar("ev_sin_yield")
        raise


def _usos(evaluation_mode, modelos, x, grad):
    """The four uses each case observes, each starting from the caller's grad mode ``grad``
    and on its own model (the caller's, then copies of it as it arrived): a plain block (its
    manager created in the other grad mode), a block whose body raises an Exception, one whose
    body raises a BaseException that is no Exception, and a block nested in another. What each
    body saw (the value bound by ``as``, every module's mode, grad mode) and what each use
    left."""
    simple, con_excepcion, interrumpido, anidado = modelos
    visto = {"antes": modos_de(simple), "entregado": []}

    def mirar(modelo, clave):
        def cuerpo(entregado):
            visto["entregado"].append(entregado is modelo)
            visto[clave] = _modos_y_grad(modelo)
            modelo(x)
        return cuerpo

    _abrir(evaluation_mode, simple, mirar(simple, "dentro"), crear_con=not grad)
    visto["despues"] = _modos_y_grad(simple)

    def lanzar(entregado):
        mirar(con_excepcion, "dentro_excepcion")(entregado)
        raise ErrorDelBloque()

    torch.set_grad_enabled(grad)
    try:
        _abrir(evaluation_mode, con_excepcion, lanzar)
        visto["propagada"] = False
    except ErrorDelBloque:
        visto["propagada"] = True
    visto["tras_excepcion"] = _modos_y_grad(con_excepcion)

    def interrumpir(entregado):
        mirar(interrumpido, "dentro_interrupcion")(entregado)
        raise InterrupcionDelBloque()

    torch.set_grad_enabled(grad)
    try:
        _abrir(evaluation_mode, interrumpido, interrumpir)
        visto["interrupcion_propagada"] = False
    except InterrupcionDelBloque:
        visto["interrupcion_propagada"] = True
    visto["tras_interrupcion"] = _modos_y_grad(interrumpido)

    def exterior(entregado):
        mirar(anidado, "dentro_exterior")(entregado)
        _abrir(evaluation_mode, anidado, mirar(anidado, "dentro_interior"))
        visto["tras_interior"] = _modos_y_grad(anidado)

    torch.set_grad_enabled(grad)
    _abrir(evaluation_mode, anidado, exterior)
    visto["tras_anidados"] = _modos_y_grad(anidado)
    torch.set_grad_enabled(grad)
    return visto


def observar_bloque(evaluation_mode, entradas):
    """The three uses of ``_usos``, in the caller's grad mode, with the state of the caller's
    model before and after. The result (what a case is scored on, and what tells a fixed
    answer) is the modes and grad mode the plain block left."""
    modelo, grad = entradas["model"], entradas[LLAMADA]["grad"]
    modelos = (modelo, copy.deepcopy(modelo), copy.deepcopy(modelo), copy.deepcopy(modelo))
    with torch.set_grad_enabled(grad):
        antes = instantanea(entradas)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            observacion = observar_llamada(_usos, evaluation_mode, modelos, entradas["x"], grad)
        despues = instantanea(entradas)
    visto = observacion["resultado"]
    observacion.update(
        usos=visto, estado_antes=antes, estado_despues=despues,
        tipos=[type(m).__name__ for m in modelo.modules()],
        resultado=None if visto is None else {"modos": visto["despues"]["modos"],
                                              "autograd": visto["despues"]["grad"]})
    return observacion


DENTRO = ("dentro", "dentro_excepcion", "dentro_interrupcion", "dentro_exterior",
          "dentro_interior")


def _en_evaluacion_dentro(caso):
    usos, tipos = caso.datos["usos"], caso.datos["tipos"]
    for clave in DENTRO:
        en_train = [tipos[i] for i, modo in enumerate(usos[clave]["modos"]) if modo]
        if en_train:
            fallar("ev_dentro_en_train",
                   modulos=", ".join(f"`{t}`" for t in dict.fromkeys(en_train)))


def _sin_autograd_dentro(caso):
    if any(caso.datos["usos"][clave]["grad"] for clave in DENTRO):
        fallar("evaluacion_con_grafo")


INTERRUPCION = ("{} (con una excepción que no hereda de `Exception`, como el "
                "`KeyboardInterrupt` de una celda interrumpida)")


def _modos_al_salir(caso):
    usos = caso.datos["usos"]
    antes = usos["antes"]
    exigir(diagnosticar_modos(antes, usos["despues"]["modos"]))
    if usos["tras_excepcion"]["modos"] != antes:
        fallar("ev_excepcion_sin_restaurar", que="el modo de los submódulos")
    if usos["tras_interrupcion"]["modos"] != antes:
        fallar("ev_excepcion_sin_restaurar", que=INTERRUPCION.format("el modo de los submódulos"))
    if usos["tras_interior"]["modos"] != usos["dentro_exterior"]["modos"]:
        fallar("ev_anidado", que="el bloque interior no dejó los modos como los puso el "
               "exterior")
    if usos["tras_anidados"]["modos"] != antes:
        fallar("ev_anidado", que="el exterior no devolvió a cada submódulo su modo")


def _palabra(activo):
    return "activado" if activo else "desactivado"


def _autograd_y_nada_mas(caso):
    usos, grad = caso.datos["usos"], caso.datos["estado_antes"]["modo de autograd"]
    for clave in ("despues", "tras_anidados"):
        if usos[clave]["grad"] != grad:
            fallar("tm_autograd_no_restaurado", antes=_palabra(grad),
                   despues=_palabra(usos[clave]["grad"]))
    exterior = usos["dentro_exterior"]["grad"]  # what the inner block found
    if usos["tras_interior"]["grad"] != exterior:
        fallar("tm_autograd_no_restaurado", antes=_palabra(exterior),
               despues=_palabra(usos["tras_interior"]["grad"]))
    if usos["tras_excepcion"]["grad"] != grad:
        fallar("ev_excepcion_sin_restaurar", que="el modo de autograd")
    if usos["tras_interrupcion"]["grad"] != grad:
        fallar("ev_excepcion_sin_restaurar", que=INTERRUPCION.format("el modo de autograd"))
    _nada_mas_cambia(caso)


def _entrega_y_excepcion(caso):
    usos = caso.datos["usos"]
    if not all(usos["entregado"]):
        fallar("ev_entrega")
    if not (usos["propagada"] and usos["interrupcion_propagada"]):
        fallar("ev_excepcion_tragada")


EVALUATION_MODE = Ejercicio(
    funcion="evaluation_mode",
    partes=[
        Parte("dentro del bloque, cada submódulo en modo evaluación", 0.75,
              _en_evaluacion_dentro),
        Parte("dentro del bloque, autograd desactivado", 0.5, _sin_autograd_dentro),
        Parte("al salir, cada submódulo en su modo exacto (también tras una excepción o un "
              "bloque anidado)", 1.0, _modos_al_salir),
        Parte("al salir, el modo de autograd de quien llama; nada más cambia (BatchNorm, "
              "parámetros, .grad)", 0.5, _autograd_y_nada_mas, requisito=True),
        Parte("`as` entrega el modelo y la excepción del bloque sigue su camino", 0.25,
              _entrega_y_excepcion, requisito=True),
    ],
    construir=construir_bloque, observar=observar_bloque)


def modos_al_llegar(model, x, llamada):
    """The public oracle: what the plain block must leave, read from the inputs as they
    arrive (every module's mode, the caller's grad mode)."""
    return {"modos": modos_de(model), "autograd": llamada["grad"]}


# The public examples: a nested model in mixed modes (a BatchNorm frozen under a block in
# train mode, a noise layer on) with a stale .grad, used by a caller with autograd on; and a
# model with leaves four levels down, its root in eval mode, its Dropout, noise and inner
# blocks in train, its first layer frozen and hooks of the caller's, used by a caller under
# no_grad.
EJEMPLOS_BLOQUE = [(6, 4, 5, 3, 0.5, "mixto", (("anidada", True), ("grad", True),
                                               ("grad_viejo", True), ("ruido", True))),
                   (6, 4, 5, 3, 0.5, "raiz_eval", (("anidada", True), ("congelado", True),
                                                   ("ganchos", True), ("grad", False),
                                                   ("profunda", 2), ("ruido", True),
                                                   ("x_rg", True)))]


def comprobar_evaluation_mode(evaluation_mode):
    """Comprobación pública: dentro del bloque, modo evaluación y sin autograd; al salir (con o
    sin excepción, anidado o no), cada submódulo y autograd como estaban."""
    casos = [caso_en_proceso(EVALUATION_MODE, evaluation_mode, 5, forma, modos_al_llegar)
             for forma in EJEMPLOS_BLOQUE]
    comprobar_casos(EVALUATION_MODE.partes, casos,
                    "Modo evaluación y sin autograd dentro; al salir, todo como estaba.")


# ---------------------------------------------------------------- exercise 2: modules_that_change
# Layer codes of the middle block: what each one does in train and eval.
CAPAS = {
    "B": "BatchNorm1d (estadísticas acumuladas)",
    "S": "BatchNorm1d(track_running_stats=False)",
    "D": "Dropout(p>0)",
    "Z": "Dropout(p=0)",
    "G": "RuidoGaussiano (módulo propio)",
    "g": "RuidoGaussiano diminuto (σ = 1e-9: cambia, aunque muy poco)",
    "R": "ReLU",
    "T": "Tanh",
    "I": "Identity",
}
CAMBIAN = set("BDGg")


def _capa(codigo, H, generador):
    if codigo == "B":
        return nn.BatchNorm1d(H)
    if codigo == "S":
        return nn.BatchNorm1d(H, track_running_stats=False)
    if codigo == "D":
        return nn.Dropout(0.2 + 0.5 * torch.rand(1, generator=generador).item())
    if codigo == "Z":
        return nn.Dropout(0.0)
    if codigo == "G":
        return RuidoGaussiano(0.1 + torch.rand(1, generator=generador).item())
    if codigo == "g":  # only in float64: a change far below allclose's tolerance
        return RuidoGaussiano(1e-9)
    return {"R": nn.ReLU, "T": nn.Tanh, "I": nn.Identity}[codigo]()


def nombres_de_capas(disposicion, anidada=False):
    """Module name -> layer code, for the middle block ``construir_modulos`` builds (nested:
    its first half in ``cuerpo.0``, the rest in ``cuerpo.1``)."""
    if not anidada:
        return {f"cuerpo.{i}": codigo for i, codigo in enumerate(disposicion)}
    mitad = len(disposicion) // 2
    return {**{f"cuerpo.0.{i}": c for i, c in enumerate(disposicion[:mitad])},
            **{f"cuerpo.1.{i}": c for i, c in enumerate(disposicion[mitad:])}}


def contenedores(anidada=False):
    """The names of the containers of the model ``construir_modulos`` builds."""
    return ["", "cuerpo"] + (["cuerpo.0", "cuerpo.1"] if anidada else [])


# forma = (N, D, H, C, disposicion, modo[, opciones]); opciones: anidada, reserva (a Dropout
# the forward never calls), auxiliar (a BatchNorm it runs and whose output it discards),
# apagada (a discarded branch BatchNorm → ReLU → Dropout, in train, whose Dropout gets only
# zeros with the model in eval: listed only if its input was taken in another mode), dtype,
# x_rg, grad_viejo, congelado, ganchos, grad. N >= 2: BatchNorm cannot run in
# train mode on a single sample.
def construir_modulos(generador, forma):
    """model and x (and the caller's grad mode) for ``forma``."""
    N, D, H, C, disposicion, modo = forma[:6]
    opcion = opciones(forma, 6)
    dtype = DTYPES[opcion.get("dtype", "float64")]
    capas = [_capa(c, H, generador) for c in disposicion]
    if opcion.get("anidada"):
        mitad = len(capas) // 2
        cuerpo = nn.Sequential(nn.Sequential(*capas[:mitad]), nn.Sequential(*capas[mitad:]))
    else:
        cuerpo = nn.Sequential(*capas)
    partes = OrderedDict(entrada=nn.Linear(D, H), cuerpo=cuerpo)
    if opcion.get("reserva"):
        partes["reserva"] = nn.Dropout(_uniforme(generador, 0.3, 0.7))
    if opcion.get("auxiliar"):  # far-off running statistics: a change no tolerance hides
        partes["auxiliar"] = nn.BatchNorm1d(H)
    if opcion.get("apagada"):
        partes["apagada"] = nn.Sequential(nn.BatchNorm1d(H), nn.ReLU(),
                                          nn.Dropout(_uniforme(generador, 0.3, 0.7)))
    partes["salida"] = nn.Linear(H, C)
    ramas = opcion.get("reserva") or opcion.get("auxiliar") or opcion.get("apagada")
    modelo = (ConReserva if ramas else nn.Sequential)(partes)
    modelo = poner_modo(_inicializar(modelo.to(dtype), generador), modo, generador)
    if opcion.get("auxiliar"):
        modelo.auxiliar.running_mean.fill_(50.0)
        modelo.auxiliar.running_var.fill_(1.0)
    if opcion.get("apagada"):  # in eval, (x − 50) < 0 everywhere: the ReLU passes only zeros
        normal = modelo.apagada[0]
        with torch.no_grad():
            normal.weight.fill_(1.0)
            normal.bias.zero_()
        normal.running_mean.fill_(50.0)
        normal.running_var.fill_(1.0)
        modelo.apagada.train()
    entradas = {"model": modelo, "x": torch.randn(N, D, generator=generador, dtype=dtype)}
    return _entorno(entradas, generador, opcion)


def observar_modulos(modules_that_change, entradas):
    return _observar_con_ganchos(modules_that_change, entradas, semilla=0, hojas=True)


def contexto_modulos(forma):
    opcion = opciones(forma, 6)
    return {"capas": nombres_de_capas(forma[4], opcion.get("anidada", False)),
            "contenedores": contenedores(opcion.get("anidada", False))
            + (["apagada"] if opcion.get("apagada") else []),
            "reserva": ["reserva"] if opcion.get("reserva") else [],
            # BatchNorms whose output the model discards (a change its output never shows)
            "auxiliar": (["auxiliar"] if opcion.get("auxiliar") else [])
            + (["apagada.0"] if opcion.get("apagada") else [])}


def _lista_de_modulos(caso):
    resultado = caso.resultado
    if type(resultado) not in (list, tuple) or not all(type(n) is str for n in resultado):
        fallar("tipo", nombre="el resultado", esperado="una lista de nombres (str)",
               tipo=resultado.get("__objeto__", "dict") if isinstance(resultado, dict)
               else type(resultado).__name__)
    esperados, obtenidos = set(caso.datos["esperado"]["cambian"]), set(resultado)
    if esperados == obtenidos and len(resultado) == len(obtenidos):
        return
    capas = caso.datos["capas"]
    sobran, faltan = sorted(obtenidos - esperados), sorted(esperados - obtenidos)
    hechos = {"sobran": ", ".join(sobran) or "ninguno", "faltan": ", ".join(faltan) or "ninguno"}
    contenidos = [n for n in sobran if n in caso.datos["contenedores"]]
    if contenidos:
        fallar("contenedor_listado", sobran=", ".join(repr(n) for n in contenidos))
    # The branch whose Dropout gets only zeros in eval: listing that Dropout alone says its
    # input came from another mode; beside other mistakes, those say more.
    apagadas = [n for n in sobran if n.startswith("apagada.")]
    sobran = [n for n in sobran if n not in apagadas]
    if apagadas and not sobran and not faltan:
        fallar("tm_misma_entrada", sobran=", ".join(apagadas))
    iguales = [n for n in sobran if capas.get(n) not in ("S", "Z")
               and n not in caso.datos["reserva"]]
    if iguales:
        fallar("tm_misma_entrada", sobran=", ".join(iguales))
    sin_efecto = [n for n in sobran if capas.get(n) in ("S", "Z")]
    if sin_efecto:
        fallar("modulo_sin_efecto_listado",
               sobran=", ".join(f"{n} ({CAPAS[capas[n]]})" for n in sin_efecto))
    if (faltan and all(capas.get(n) in ("G", "g") for n in faltan)
            and any(capas.get(n) == "G" for n in faltan)):  # a custom layer, not a tiny change
        fallar("modulos_solo_por_tipo",
               faltan=", ".join(f"{n} ({CAPAS[capas[n]]})" for n in faltan))
    no_ejecutadas = [n for n in sobran if n in caso.datos["reserva"]]
    if no_ejecutadas:
        fallar("tm_hoja_no_ejecutada", sobran=", ".join(repr(n) for n in no_ejecutadas))
    auxiliares = [n for n in faltan if n in caso.datos["auxiliar"]]
    if auxiliares and not sobran:
        fallar("tm_salida_del_modelo", faltan=", ".join(repr(n) for n in auxiliares))
    if faltan and not sobran:
        fallar("tm_comparacion_laxa", faltan=", ".join(
            f"{n} ({CAPAS[capas[n]]})" if n in capas else n for n in faltan))
    fallar("modulos_lista", **hechos)


MODULES_THAT_CHANGE = Ejercicio(
    funcion="modules_that_change",
    partes=[
        Parte("los módulos hoja que cambian entre train y eval", 1.5, _lista_de_modulos),
        Parte("sin grafo: el modelo y cada hoja bajo no_grad", 0.5,
              lambda caso: _sin_grafo(caso, "tm_medicion_con_grafo"), requisito=True),
        Parte("cada submódulo vuelve al modo que tenía", 0.5, _modos_restaurados,
              requisito=True),
        Parte("nada más cambia: BatchNorm, parámetros, ganchos, modo de autograd", 0.5,
              lambda caso: _nada_mas_cambia(caso, "tm_buffers_movidos"), requisito=True),
    ],
    construir=construir_modulos, observar=observar_modulos, contexto=contexto_modulos)


def modulos_por_tipo(model, x, llamada=None):
    """The public oracle: what each module's type and settings say it does (the models of
    these checks hold no other layers that change; ``reserva`` is never run, and the Dropout
    of ``apagada`` gets only zeros in eval)."""
    cambian = []
    for nombre, m in model.named_modules():
        if nombre == "reserva" or nombre == "apagada.2":
            continue
        if isinstance(m, nn.BatchNorm1d) and m.track_running_stats:
            cambian.append(nombre)
        elif isinstance(m, nn.Dropout) and m.p > 0:
            cambian.append(nombre)
        elif isinstance(m, RuidoGaussiano) and m.sigma > 0:
            cambian.append(nombre)
    return {"cambian": cambian}


# The public examples: every trap of the hidden layouts, and a leaf the forward never runs;
# then the same traps nested (three levels down), the root in eval mode with its Dropout,
# noise and inner blocks in train, an auxiliary branch whose output the model discards, a
# discarded branch in train whose Dropout gets only zeros with the model in eval, a frozen
# first layer, hooks of the caller's, x with requires_grad and a caller under no_grad.
EJEMPLO_MODULOS = (5, 3, 4, 2, "BRZGSDTg", "mixto", (("reserva", True),))
EJEMPLO_MODULOS_ANIDADO = (2, 3, 4, 2, "DSgBTZG", "raiz_eval", (
    ("anidada", True), ("apagada", True), ("auxiliar", True), ("congelado", True),
    ("ganchos", True),
    ("grad", False), ("grad_viejo", True), ("x_rg", True)))


def comprobar_modules_that_change(modules_that_change):
    """Comprobación pública: qué módulos hoja cambian, en un modelo con algunas trampas.

    Dos modelos: uno con modos mezclados (BatchNorm congelada), donde restaurar solo el
    indicador de la raíz se nota igual que en las pruebas ocultas; otro anidado tres niveles
    con la raíz en modo evaluación y hojas en entrenamiento, una capa congelada y quien llama
    dentro de ``torch.no_grad()``.
    """
    casos = [caso_en_proceso(MODULES_THAT_CHANGE, modules_that_change, 6, forma,
                             modulos_por_tipo)
             for forma in (EJEMPLO_MODULOS, EJEMPLO_MODULOS_ANIDADO)]
    comprobar_casos(MODULES_THAT_CHANGE.partes, casos,
                    "Encontraste los módulos que cambian y dejaste el modelo como estaba.")


# ---------------------------------------------------------------- exercise 3: mc_dropout
SEMILLA_MC = 2024


# forma = (N, D, H, C, p, n_samples, modo[, opciones]); opciones: anidada, ruido, dropout2
# (a second Linear → ReLU → Dropout), dtype, x_rg, grad_viejo, grad. n_samples >= 2.
def construir_mc(generador, forma):
    """model, x, n_samples (and the caller's grad mode) for ``forma``."""
    N, D, H, C, p, n_samples, modo = forma[:7]
    opcion = opciones(forma, 7)
    dtype = DTYPES[opcion.get("dtype", "float64")]
    modelo = red_con_normalizacion(generador, D, H, C, p, anidada=opcion.get("anidada", False),
                                   ruido=opcion.get("ruido", False),
                                   dropout2=opcion.get("dropout2", False), dtype=dtype,
                                   profunda=opcion.get("profunda", False))
    poner_modo(modelo, modo, generador)
    entradas = {"model": modelo, "x": torch.randn(N, D, generator=generador, dtype=dtype),
                "n_samples": n_samples}
    return _entorno(entradas, generador, opcion)


def observar_mc(mc_dropout, entradas):
    return _observar_con_ganchos(mc_dropout, entradas, semilla=SEMILLA_MC,
                                 batchnorm_en_train="mc_batchnorm_en_train")


def contexto_mc(forma):
    n = forma[5]
    return {"n": n, "factores": {"mc_std_sesgada": math.sqrt((n - 1) / n)},
            "factores_media": {"mc_media_bessel": n / (n - 1)}}


def tipos_de(modelo):
    """One letter per module in ``model.modules()`` order: B BatchNorm, D Dropout,
    G RuidoGaussiano, - anything else."""
    return ["B" if isinstance(m, nn.BatchNorm1d) else "D" if isinstance(m, nn.Dropout)
            else "G" if isinstance(m, RuidoGaussiano) else "-" for m in modelo.modules()]


def clases_de(modelo):
    """The class name of every module, in ``model.modules()`` order."""
    return [type(m).__name__ for m in modelo.modules()]


def _muestreo_valido(caso):
    durante = caso.datos["durante"]
    resultado = caso.resultado
    if type(resultado) not in (tuple, list) or len(resultado) != 2:
        fallar("tipo", nombre="el resultado", esperado="una tupla (media, desviación)",
               tipo=resultado.get("__objeto__", "dict") if isinstance(resultado, dict)
               else type(resultado).__name__)
    tipos = caso.datos["esperado"]["tipos"]

    def en_train(letra):
        return any(llamada["modos"][i] for llamada in durante
                   for i, t in enumerate(tipos) if t == letra)

    if caso.datos["semilla_final"] != SEMILLA_MC:
        fallar("mc_resembrado")
    if en_train("B"):
        fallar("mc_batchnorm_en_train")
    if en_train("G"):
        fallar("mc_otros_en_train", modulos="`RuidoGaussiano`")
    otros = [clase for llamada in durante for modo, t, clase in
             zip(llamada["modos"], tipos, caso.datos["esperado"]["clases"])
             if modo and t != "D"]
    if otros:  # containers, Linear, ReLU...: everything but nn.Dropout stays in eval mode
        fallar("mc_otros_en_train", modulos=", ".join(f"`{c}`" for c in dict.fromkeys(otros)))
    if durante and not en_train("D"):
        fallar("mc_sin_dropout")
    if len(durante) != caso.datos["n"]:
        fallar("mc_llamadas", llamadas=len(durante), n=caso.datos["n"])


def _media_mc(caso):
    _muestreo_valido(caso)
    esperado, media = caso.datos["esperado"], caso.resultado[0]
    if (isinstance(media, torch.Tensor) and media.shape == esperado["media"].shape
            and not torch.allclose(esperado["media"], esperado["media_resembrada"])
            and torch.allclose(media.to(esperado["media"].dtype), esperado["media_resembrada"])):
        fallar("mc_resembrado")
    comparar("la media", caso.resultado[0], caso.datos["esperado"]["media"],
             caso.datos["factores_media"])


def _std_mc(caso):
    _muestreo_valido(caso)
    esperado = caso.datos["esperado"]
    std = esperado["std"]
    # Σy² − n·media² (a valid one-pass formula) loses about √eps·|y| where the samples
    # barely differ: judge the spread against the size of the outputs (4·√eps of it), which
    # still tells a spread off by √((n−1)/n) ≤ 0.96 apart.
    eps = torch.finfo(std.dtype).eps
    rtol = 1e-6 if std.dtype == torch.float64 else 1e-3
    atol = 4 * math.sqrt(eps) * (esperado["media"].abs() + std).max().item() + 1e-12
    obtenida = caso.resultado[1]
    if (isinstance(obtenida, torch.Tensor) and obtenida.shape == std.shape
            and not torch.allclose(std, std**2) and torch.allclose(
                obtenida.to(std.dtype), std**2, rtol=rtol, atol=atol)):
        fallar("mc_varianza", nombre="la desviación típica")
    comparar("la desviación típica", obtenida, std, caso.datos["factores"], rtol=rtol,
             atol=atol)


def _modelo_y_entorno_intactos(caso):
    _modos_restaurados(caso)
    _nada_mas_cambia(caso)


MC_DROPOUT = Ejercicio(
    funcion="mc_dropout",
    partes=[
        Parte("media de las predicciones (solo Dropout activo)", 1.0, _media_mc),
        Parte("desviación típica (corrección de Bessel)", 1.0, _std_mc),
        Parte("sin grafo (no_grad)", 0.5, _sin_grafo, requisito=True),
        Parte("modos, BatchNorm, parámetros y modo de autograd como estaban", 0.5,
              _modelo_y_entorno_intactos, requisito=True),
    ],
    construir=construir_mc, observar=observar_mc, contexto=contexto_mc)


def mc_a_mano(model, x, n_samples, llamada=None):
    """The public oracle: the same random draws, layer by layer; then the mean and the
    spread around it (two passes over the samples: no cancellation). ``media_resembrada``:
    the mean a function that seeds the generator again at its start would give."""
    def muestrear():
        return [adelante_a_mano(model, x, dropout_activo=True) for _ in range(n_samples)]

    with torch.no_grad(), torch.random.fork_rng(devices=[]):
        sembrar(SEMILLA_MC)
        muestras = muestrear()
        media = sum(muestras) / n_samples
        varianza = sum((m - media) ** 2 for m in muestras) / (n_samples - 1)
        torch.manual_seed(SEMILLA_MC)
        resembrada = sum(muestrear()) / n_samples
    return {"media": media, "std": varianza.sqrt(), "tipos": tipos_de(model),
            "clases": clases_de(model), "media_resembrada": resembrada}


# The public examples: a custom layer that reads self.training (it must stay in eval mode);
# then one sample (N = 1), two Dropouts nested, the root in eval mode with its Dropouts and
# noise in train, a frozen first layer and a caller under no_grad.
EJEMPLO_MC = (5, 4, 6, 3, 0.4, 8, "mixto", (("ruido", True),))
EJEMPLO_MC_ANIDADO = (1, 4, 6, 3, 0.4, 2, "raiz_eval", (
    ("anidada", True), ("congelado", True), ("dropout2", True), ("ganchos", True),
    ("grad", False), ("profunda", True), ("ruido", True), ("x_rg", True)))


def comprobar_mc_dropout(mc_dropout):
    """Comprobación pública: media y dispersión de MC dropout, con ``torch.manual_seed`` fijado
    antes de la llamada.

    Dos modelos: uno con modos mezclados (BatchNorm congelada), como al ajustar un modelo
    preentrenado; otro anidado con la raíz en modo evaluación y sus Dropout en
    entrenamiento, una capa congelada, una sola muestra y quien llama dentro de
    ``torch.no_grad()``.
    """
    casos = [caso_en_proceso(MC_DROPOUT, mc_dropout, 7, forma, mc_a_mano)
             for forma in (EJEMPLO_MC, EJEMPLO_MC_ANIDADO)]
    comprobar_casos(MC_DROPOUT.partes, casos,
                    "Media y desviación con solo Dropout activo; el modelo quedó como estaba.")


# In notebook order.
EJERCICIOS = ejercicios(EVALUATION_MODE, MODULES_THAT_CHANGE, MC_DROPOUT)
