"""Chapter 5: train and eval modes. How each exercise is built, observed and scored.

Injected into the chapter 5 student notebook by the build. Every observation is plain
data: the modes of every module (a list of bools in ``model.modules()`` order), the
buffers (BatchNorm running statistics) as a dict of tensors, and what the model saw
at each forward call (modes, whether grad mode was on). The public oracles write the
layers out by hand (BatchNorm with its running statistics, ``F.dropout``) or read the
module types, never the reference.
"""

import math
from collections import OrderedDict

import torch
import torch.nn.functional as F
from torch import nn

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
from autograder.student.diagnosis import Diagnostico, copiar_buffers, diagnosticar_buffers
from autograder.student.messages import registrar

__all__ = ["comprobar_evaluate", "comprobar_modules_that_change", "comprobar_mc_dropout",
           "modos_de", "RuidoGaussiano"]

MENSAJES = {
    "modos_no_restaurados": (
        "Modos no restaurados",
        "Antes de la llamada, los submódulos en modo entrenamiento eran {antes}; después, "
        "{despues}.",
        "`model.train(flag)` aplica un mismo modo a todos los submódulos. Guarda "
        "`{m: m.training for m in model.modules()}` al empezar y restaura cada uno con "
        "`m.training = modo` (`m.train(modo)` cambiaría también sus hijos).",
        "Module modes were not restored: in train mode before {antes}, after {despues}."),
    "evaluacion_con_grafo": (
        "Evaluación con grafo",
        "El modelo se ejecutó con el cálculo de gradientes activado: cada pase construyó un "
        "grafo que nadie va a usar.",
        "`model.eval()` no desactiva autograd. Envuelve la evaluación en `with torch.no_grad():`.",
        "The model ran with grad mode on: eval() does not disable autograd (use no_grad)."),
    "modulos_solo_por_tipo": (
        "Módulos buscados solo por su tipo",
        "Faltan módulos que sí cambian entre train y eval: {faltan}.",
        "Un módulo propio también puede leer `self.training`. No mires el tipo: ejecuta cada "
        "módulo en los dos modos sobre la entrada que recibe y compara.",
        "Missing modules that do change between train and eval: {faltan}."),
    "modulo_sin_efecto_listado": (
        "Tipo que cambia, módulo que no",
        "Listaste módulos cuya salida es la misma en train y en eval: {sobran}.",
        "`Dropout(p=0)` no apaga nada y `BatchNorm` con `track_running_stats=False` usa las "
        "estadísticas del lote en los dos modos. Mide el comportamiento, no el tipo.",
        "Listed modules whose output is the same in train and eval: {sobran}."),
    "contenedor_listado": (
        "Contenedores en la lista",
        "Listaste contenedores ({sobran}): su salida cambia solo porque cambia la de un hijo.",
        "Recorre solo los módulos hoja (sin hijos): `not list(m.children())`.",
        "Listed containers ({sobran}); only leaf modules were asked for."),
    "modulos_lista": (
        "Lista de módulos",
        "La lista no coincide: sobran {sobran}; faltan {faltan}.",
        "Usa los nombres de `model.named_modules()` y lista cada hoja cuya salida cambie.",
        "Wrong list of modules: extra {sobran}; missing {faltan}."),
    "mc_batchnorm_en_train": (
        "BatchNorm en modo entrenamiento",
        "Durante el muestreo BatchNorm estaba en modo entrenamiento: normalizó con las "
        "estadísticas de cada lote y actualizó `running_mean`/`running_var`.",
        "Pon todo el modelo en `eval()` y después activa solo los `nn.Dropout` con `m.train()`.",
        "BatchNorm was in train mode while sampling (batch statistics, buffers updated)."),
    "mc_sin_dropout": (
        "Dropout apagado",
        "Ningún `Dropout` estaba activo durante el muestreo: todas las muestras son iguales y "
        "la desviación típica es 0.",
        "Tras `model.eval()`, vuelve a poner en modo entrenamiento los módulos `nn.Dropout`.",
        "No Dropout was active while sampling: every sample is the same."),
    "mc_llamadas": (
        "Número de pases",
        "El modelo se llamó {llamadas} veces; el contrato pide `n_samples` = {n} pases, uno "
        "tras otro, sobre `x` entero.",
        "Haz un bucle de `n_samples` iteraciones con `model(x)` en cada una.",
        "The model ran {llamadas} times; n_samples = {n} passes were expected."),
    "mc_std_sesgada": (
        "Desviación típica sin corrección",
        "`{nombre}` es {razon:.4g} × el valor correcto: √((n−1)/n), la desviación típica que "
        "divide por n.",
        "Divide por n − 1 (corrección de Bessel), como hace `torch.std` por defecto.",
        "`{nombre}` divides by n instead of n - 1 (no Bessel correction)."),
}
registrar(MENSAJES)


class RuidoGaussiano(nn.Module):
    """Adds Gaussian noise of standard deviation ``sigma`` in train mode; identity in eval."""

    def __init__(self, sigma):
        super().__init__()
        self.sigma = sigma

    def forward(self, x):
        if self.training and self.sigma > 0:
            return x + self.sigma * torch.randn_like(x)
        return x


def modos_de(modelo):
    """The ``training`` flag of every module, in ``model.modules()`` order."""
    return [m.training for m in modelo.modules()]


def _descripcion(modos):
    return f"{sum(modos)} de {len(modos)}"


def diagnosticar_modos(antes, despues):
    """Same modes as before the call, module by module? (plain lists of bools)."""
    if list(antes) == list(despues):
        return None
    if any(antes) and not any(despues):
        return Diagnostico("modelo_en_eval", {})
    return Diagnostico("modos_no_restaurados",
                       {"antes": _descripcion(antes), "despues": _descripcion(despues)})


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


def red_con_normalizacion(generador, D, H, C, p):
    """Linear → BatchNorm1d → ReLU → Dropout(p) → Linear, in float64."""
    modelo = nn.Sequential(OrderedDict(
        capa=nn.Linear(D, H), norma=nn.BatchNorm1d(H), act=nn.ReLU(), dropout=nn.Dropout(p),
        salida=nn.Linear(H, C)))
    return _inicializar(modelo.double(), generador)


def poner_modo(modelo, modo):
    """"train", "eval", or "mixto": train mode with a frozen BatchNorm (fine-tuning style)."""
    modelo.train(modo != "eval")
    if modo == "mixto":
        for m in modelo.modules():
            if isinstance(m, nn.BatchNorm1d):
                m.eval()
    return modelo


def _observar_con_ganchos(funcion, entradas, semilla=None):
    """Call ``funcion``; record modes and grad mode at every forward call of the model."""
    modelo = entradas["model"]
    durante = []

    def registrar_llamada(modulo, args):
        # the module that runs: a deepcopy of the model carries this hook too
        durante.append({"modos": modos_de(modulo), "grad": torch.is_grad_enabled()})

    gancho = modelo.register_forward_pre_hook(registrar_llamada)
    try:
        with torch.random.fork_rng(devices=[]):
            if semilla is not None:
                torch.manual_seed(semilla)
            observacion = observar_llamada(funcion, *entradas.values())
    finally:
        gancho.remove()
    observacion.update(durante=durante, modos=modos_de(modelo), buffers=copiar_buffers(modelo),
                       despues=fotografiar(entradas))
    return observacion


def estado_esperado(modelo):
    """What every exercise must leave as it found: the modes and the buffers."""
    return {"modos": modos_de(modelo), "buffers": copiar_buffers(modelo)}


def _buffers_y_parametros(caso):
    exigir(diagnosticar_buffers(caso.datos["esperado"]["buffers"], caso.datos["buffers"]))
    verificar_intactas(caso)


def _modelo_intacto(caso):
    exigir(diagnosticar_modos(caso.datos["esperado"]["modos"], caso.datos["modos"]))
    _buffers_y_parametros(caso)


def _sin_grafo(caso):
    if any(llamada["grad"] for llamada in caso.datos["durante"]):
        fallar("evaluacion_con_grafo")


# ---------------------------------------------------------------- exercise 1: evaluate
def construir_evaluacion(generador, forma):
    """model, x, y for ``forma`` = (N, D, H, C, p, modo)."""
    N, D, H, C, p, modo = forma
    modelo = poner_modo(red_con_normalizacion(generador, D, H, C, p), modo)
    return {"model": modelo,
            "x": torch.randn(N, D, generator=generador, dtype=torch.float64),
            "y": torch.randint(0, C, (N,), generator=generador)}


def observar_evaluacion(evaluate, entradas):
    observacion = _observar_con_ganchos(evaluate, entradas, semilla=0)
    # The float64 value crosses as a tensor; the type and the graph are recorded apart.
    observacion["tipo"] = None
    resultado = observacion["resultado"]
    if isinstance(resultado, torch.Tensor):
        observacion["tipo"] = "tensor"
    return observacion


def _valor_evaluacion(caso):
    resultado = caso.resultado
    if resultado is None or isinstance(resultado, bool):
        fallar("es_none" if resultado is None else "tipo", nombre="el resultado",
               esperado="un float", tipo=type(resultado).__name__)
    if isinstance(resultado, dict):
        fallar("tipo", nombre="el resultado", esperado="un float",
               tipo=resultado.get("__objeto__", "dict"))
    if isinstance(resultado, (list, tuple)):
        fallar("tipo", nombre="el resultado", esperado="un float", tipo=type(resultado).__name__)
    valor = torch.as_tensor(resultado, dtype=torch.float64).reshape(())
    esperado = caso.datos["esperado"]["valor"]
    en_train = any(any(llamada["modos"]) for llamada in caso.datos["durante"])
    if en_train and not torch.allclose(valor, esperado, rtol=1e-6, atol=1e-9):
        fallar("modelo_en_train")
    comparar("la pérdida media", valor, esperado)


def _float_sin_grafo(caso):
    if caso.resultado is None:
        fallar("es_none", nombre="el resultado")
    _sin_grafo(caso)
    if caso.datos["tipo"] == "tensor":
        fallar("registro_tensor", nombre="el resultado")


EVALUATE = Ejercicio(
    funcion="evaluate",
    partes=[
        Parte("pérdida calculada en modo evaluación", 1.0, _valor_evaluacion),
        Parte("sin grafo (no_grad) y un float de Python", 0.5, _float_sin_grafo,
              requisito=True),
        Parte("cada submódulo vuelve al modo que tenía", 1.0,
              lambda caso: exigir(diagnosticar_modos(caso.datos["esperado"]["modos"],
                                                     caso.datos["modos"])), requisito=True),
        Parte("estadísticas de BatchNorm y parámetros intactos", 0.5, _buffers_y_parametros,
              requisito=True),
    ],
    construir=construir_evaluacion, observar=observar_evaluacion)


def _batchnorm_a_mano(norma, h):
    """BatchNorm1d in eval mode, written out: the running statistics, not the batch's."""
    return ((h - norma.running_mean) / torch.sqrt(norma.running_var + norma.eps) * norma.weight
            + norma.bias)


def perdida_a_mano(model, x, y):
    """The public oracle: the eval-mode forward pass written layer by layer."""
    with torch.no_grad():
        h = F.linear(x, model.capa.weight, model.capa.bias)
        h = torch.clamp_min(_batchnorm_a_mano(model.norma, h), 0)
        logits = F.linear(h, model.salida.weight, model.salida.bias)
        log_p = logits - torch.logsumexp(logits, dim=1, keepdim=True)
        valor = -log_p[torch.arange(len(y)), y].mean()
    return {"valor": valor, **estado_esperado(model)}


def comprobar_evaluate(evaluate):
    """Public check: the eval-mode loss, no graph, and the model left as it was."""
    caso = caso_en_proceso(EVALUATE, evaluate, 5, (6, 4, 5, 3, 0.5, "mixto"), perdida_a_mano)
    comprobar(EVALUATE.partes, caso,
              "Pérdida en modo evaluación, sin grafo, y cada submódulo como estaba.")


# ---------------------------------------------------------------- exercise 2: modules_that_change
# Layer codes of the middle block: what each one does in train and eval.
CAPAS = {
    "B": "BatchNorm1d (estadísticas acumuladas)",
    "S": "BatchNorm1d(track_running_stats=False)",
    "D": "Dropout(p>0)",
    "Z": "Dropout(p=0)",
    "G": "RuidoGaussiano (módulo propio)",
    "R": "ReLU",
    "T": "Tanh",
    "I": "Identity",
}
CAMBIAN = set("BDG")


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
    return {"R": nn.ReLU, "T": nn.Tanh, "I": nn.Identity}[codigo]()


def nombres_de_capas(disposicion):
    """Module name -> layer code, for the model ``construir_modulos`` builds."""
    return {f"cuerpo.{i}": codigo for i, codigo in enumerate(disposicion)}


def construir_modulos(generador, forma):
    """model and x for ``forma`` = (N, D, H, C, disposicion, modo)."""
    N, D, H, C, disposicion, modo = forma
    cuerpo = nn.Sequential(*[_capa(c, H, generador) for c in disposicion])
    modelo = nn.Sequential(OrderedDict(entrada=nn.Linear(D, H), cuerpo=cuerpo,
                                       salida=nn.Linear(H, C)))
    modelo = poner_modo(_inicializar(modelo.double(), generador), modo)
    return {"model": modelo, "x": torch.randn(N, D, generator=generador, dtype=torch.float64)}


def observar_modulos(modules_that_change, entradas):
    return _observar_con_ganchos(modules_that_change, entradas, semilla=0)


def contexto_modulos(forma):
    return {"capas": nombres_de_capas(forma[4])}


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
    contenedores = [n for n in sobran if n in ("", "cuerpo")]
    if contenedores:
        fallar("contenedor_listado", sobran=", ".join(repr(n) for n in contenedores))
    sin_efecto = [n for n in sobran if capas.get(n) in ("S", "Z")]
    if sin_efecto:
        fallar("modulo_sin_efecto_listado",
               sobran=", ".join(f"{n} ({CAPAS[capas[n]]})" for n in sin_efecto))
    propios = [n for n in faltan if capas.get(n) == "G"]
    if propios:
        fallar("modulos_solo_por_tipo",
               faltan=", ".join(f"{n} ({CAPAS[capas[n]]})" for n in propios))
    fallar("modulos_lista", **hechos)


MODULES_THAT_CHANGE = Ejercicio(
    funcion="modules_that_change",
    partes=[
        Parte("los módulos hoja que cambian entre train y eval", 2.0, _lista_de_modulos),
        Parte("modelo intacto: modos, estadísticas y parámetros", 1.0, _modelo_intacto,
              requisito=True),
    ],
    construir=construir_modulos, observar=observar_modulos, contexto=contexto_modulos)


def modulos_por_tipo(model, x):
    """The public oracle: what each module's type and settings say it does."""
    cambian = []
    for nombre, m in model.named_modules():
        if isinstance(m, nn.BatchNorm1d) and m.track_running_stats:
            cambian.append(nombre)
        elif isinstance(m, nn.Dropout) and m.p > 0:
            cambian.append(nombre)
        elif isinstance(m, RuidoGaussiano) and m.sigma > 0:
            cambian.append(nombre)
    return {"cambian": cambian, **estado_esperado(model)}


def comprobar_modules_that_change(modules_that_change):
    """Public check: which leaf modules change, on a model with a few traps.

    The model starts in mixed modes (frozen BatchNorm), so restoring the root's flag alone
    shows here as it does in the hidden tests.
    """
    caso = caso_en_proceso(MODULES_THAT_CHANGE, modules_that_change, 6,
                           (5, 3, 4, 2, "BRZGSDT", "mixto"), modulos_por_tipo)
    comprobar(MODULES_THAT_CHANGE.partes, caso,
              "Encontraste los módulos que cambian y dejaste el modelo como estaba.")


# ---------------------------------------------------------------- exercise 3: mc_dropout
SEMILLA_MC = 2024


def construir_mc(generador, forma):
    """model, x, n_samples for ``forma`` = (N, D, H, C, p, n_samples, modo)."""
    N, D, H, C, p, n_samples, modo = forma
    modelo = poner_modo(red_con_normalizacion(generador, D, H, C, p), modo)
    return {"model": modelo, "x": torch.randn(N, D, generator=generador, dtype=torch.float64),
            "n_samples": n_samples}


def observar_mc(mc_dropout, entradas):
    return _observar_con_ganchos(mc_dropout, entradas, semilla=SEMILLA_MC)


def contexto_mc(forma):
    n = forma[5]
    return {"n": n, "factores": {"mc_std_sesgada": math.sqrt((n - 1) / n)}}


def _muestreo_valido(caso):
    durante = caso.datos["durante"]
    resultado = caso.resultado
    if type(resultado) not in (tuple, list) or len(resultado) != 2:
        fallar("tipo", nombre="el resultado", esperado="una tupla (media, desviación)",
               tipo=resultado.get("__objeto__", "dict") if isinstance(resultado, dict)
               else type(resultado).__name__)
    tipos = caso.datos["esperado"]["tipos"]
    if any(llamada["modos"][i] for llamada in durante for i, t in enumerate(tipos) if t == "B"):
        fallar("mc_batchnorm_en_train")
    if durante and not any(llamada["modos"][i] for llamada in durante
                           for i, t in enumerate(tipos) if t == "D"):
        fallar("mc_sin_dropout")
    if len(durante) != caso.datos["n"]:
        fallar("mc_llamadas", llamadas=len(durante), n=caso.datos["n"])


def _media_mc(caso):
    _muestreo_valido(caso)
    comparar("la media", caso.resultado[0], caso.datos["esperado"]["media"])


def _std_mc(caso):
    _muestreo_valido(caso)
    comparar("la desviación típica", caso.resultado[1], caso.datos["esperado"]["std"],
             caso.datos["factores"])


def _mc_sin_efectos(caso):
    _sin_grafo(caso)
    _modelo_intacto(caso)


MC_DROPOUT = Ejercicio(
    funcion="mc_dropout",
    partes=[
        Parte("media de las predicciones (solo Dropout activo)", 1.0, _media_mc),
        Parte("desviación típica (corrección de Bessel)", 1.0, _std_mc),
        Parte("sin grafo; modos, estadísticas y parámetros intactos", 1.0, _mc_sin_efectos,
              requisito=True),
    ],
    construir=construir_mc, observar=observar_mc, contexto=contexto_mc)


def tipos_de(modelo):
    """One letter per module in ``model.modules()`` order: B BatchNorm, D Dropout, - other."""
    return ["B" if isinstance(m, nn.BatchNorm1d) else "D" if isinstance(m, nn.Dropout) else "-"
            for m in modelo.modules()]


def mc_a_mano(model, x, n_samples):
    """The public oracle: the same random draws, layer by layer, then sums of powers."""
    with torch.no_grad(), torch.random.fork_rng(devices=[]):
        torch.manual_seed(SEMILLA_MC)
        suma = suma_cuadrados = 0
        for _ in range(n_samples):
            h = F.linear(x, model.capa.weight, model.capa.bias)
            h = torch.clamp_min(_batchnorm_a_mano(model.norma, h), 0)
            h = F.dropout(h, model.dropout.p, training=True)
            salida = F.linear(h, model.salida.weight, model.salida.bias)
            suma = suma + salida
            suma_cuadrados = suma_cuadrados + salida**2
        media = suma / n_samples
        varianza = (suma_cuadrados - n_samples * media**2) / (n_samples - 1)
    return {"media": media, "std": varianza.clamp_min(0).sqrt(), "tipos": tipos_de(model),
            **estado_esperado(model)}


def comprobar_mc_dropout(mc_dropout):
    """Public check: MC-dropout mean and spread with torch.manual_seed fixed before the call.

    The model starts in mixed modes (frozen BatchNorm), as in fine-tuning.
    """
    caso = caso_en_proceso(MC_DROPOUT, mc_dropout, 7, (5, 4, 6, 3, 0.4, 8, "mixto"), mc_a_mano)
    comprobar(MC_DROPOUT.partes, caso,
              "Media y desviación con solo Dropout activo; el modelo quedó como estaba.")


# In notebook order.
EJERCICIOS = ejercicios(EVALUATE, MODULES_THAT_CHANGE, MC_DROPOUT)
