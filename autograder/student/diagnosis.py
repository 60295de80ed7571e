"""Diagnosis: from a student's result and the reference, the most likely misconception.

Pure functions: each returns ``None`` when the result is right, or a ``Diagnostico``
(an id of ``messages.CATALOGO`` and the facts behind it). Public checks and hidden
tests call the same functions, so a student sees the same words in the notebook and
in the feedback. Injected into student notebooks (standard library and torch only).
"""

import math
from dataclasses import dataclass, field

import torch


@dataclass(frozen=True)
class Diagnostico:
    id: str
    hechos: dict = field(default_factory=dict)


# A factor's inverse has its own name (dividing once too often is its own mistake).
INVERSOS = {
    "suma_en_vez_de_media": "media_en_vez_de_suma",
    "sin_dividir_por_accum": "dividido_de_mas_por_accum",
}


def tolerancias(dtype):
    """(rtol, atol) loose enough for any valid order of operations in ``dtype``."""
    if dtype == torch.float64:
        return 1e-6, 1e-9
    if dtype in (torch.float16, torch.bfloat16):
        return 1e-2, 1e-3
    return 1e-4, 1e-6


def mayor_magnitud(*tensores):
    """The largest absolute value in ``tensores`` (0 where there is none)."""
    return max((t.detach().abs().max().item() for t in tensores
                if isinstance(t, torch.Tensor) and t.numel() and t.is_floating_point()),
               default=0.0)


def cerca(obtenido, esperado, rtol=None, atol=None):
    r_tol, a_tol = tolerancias(esperado.dtype)
    return torch.allclose(obtenido.to(esperado.dtype), esperado,
                          rtol=r_tol if rtol is None else rtol,
                          atol=a_tol if atol is None else atol)


def razon_ajustada(obtenido, esperado):
    """Best scalar r with obtenido ≈ r·esperado, and the relative residual of that fit."""
    g, e = obtenido.detach().double().flatten(), esperado.detach().double().flatten()
    ee = torch.dot(e, e).item()
    if ee == 0.0:
        return None, math.inf
    r = torch.dot(g, e).item() / ee
    return r, torch.linalg.vector_norm(g - r * e).item() / math.sqrt(ee)


def hechos_numericos(obtenido, esperado):
    """The plain facts of a mismatch: differences, fitted ratio, shapes and dtypes."""
    g, e = obtenido.detach().double(), esperado.detach().double()
    diferencia = (g - e).abs()
    razon, residuo = razon_ajustada(obtenido, esperado)
    no_nulos = e != 0  # a relative difference against an exact 0 means nothing
    hechos = {
        "max_abs": diferencia.max().item(),
        "max_rel": ((diferencia[no_nulos] / e[no_nulos].abs()).max().item()
                    if no_nulos.any() else float("nan")),
        "razon": razon if razon is not None else float("nan"),
        "residuo": residuo,
    }
    detalles = ["máx. diferencia absoluta {max_abs:.3g}".format(**hechos)]
    if no_nulos.any():
        detalles.append(", relativa {max_rel:.3g}".format(**hechos))
    detalles.append("; razón ajustada {razon:.4g}".format(**hechos) if razon is not None
                    else "; el valor correcto es todo ceros")
    hechos["detalles"] = "(" + "".join(detalles) + ")"
    return hechos


def _cerca_de(valor, objetivo):
    return objetivo not in (0, 1) and abs(valor / objetivo - 1) < 1e-3


def nombre_de_factor(razon, factores):
    """The diagnosis id that explains ``razon`` (−1, one of ``factores``, 2 or ½)."""
    if abs(razon + 1) < 1e-3:
        return "signo"
    # The chapter's own factors first: a ratio of 2 is "divided twice by accum" when accum
    # is 2, not a square's derivative.
    for diagnostico, valor in factores.items():
        if _cerca_de(razon, valor):
            return diagnostico
        if _cerca_de(razon, 1 / valor) and diagnostico in INVERSOS:
            return INVERSOS[diagnostico]
    if abs(razon - 2) < 1e-3 or abs(razon - 0.5) < 1e-3:
        return "factor_2"
    return "escala_desconocida"


def es_traspuesta(obtenido, esperado):
    """A 2-D result whose transpose is the answer (square matrices included)."""
    if obtenido.dim() != 2 or obtenido.T.shape != esperado.shape or not esperado.any():
        return False
    if not cerca(obtenido.T, esperado):
        return False
    # A symmetric answer equals its own transpose: then nothing is wrong.
    return obtenido.shape != esperado.shape or not cerca(obtenido, esperado)


def por_que_none(tensor):
    """Why ``tensor.grad`` is None: not a leaf, no requires_grad, or no backward reached it."""
    if tensor is None:
        return "es_none"
    if not tensor.requires_grad:
        return "none_sin_requires_grad"
    if not tensor.is_leaf:
        return "none_no_hoja"
    return "none_sin_backward"


def diagnosticar_tensor(nombre, obtenido, esperado, factores=None, alternativas=None,
                        rtol=None, atol=None, origen=None):
    """None if ``obtenido`` matches ``esperado``; otherwise the likeliest mistake.

    ``factores`` maps a diagnosis id to the constant factor that mistake introduces
    (e.g. {"sin_dividir_por_accum": 4}); ``alternativas`` maps a description to a
    tensor the student may have returned instead (the gradient of another tensor);
    ``origen`` is the tensor whose ``.grad`` was read, to explain a None.
    """
    if obtenido is None:
        return Diagnostico(por_que_none(origen) if origen is not None else "es_none",
                           {"nombre": nombre})
    if type(obtenido) is not torch.Tensor and not isinstance(obtenido, torch.Tensor):
        return Diagnostico("tipo", {"nombre": nombre, "esperado": "un `torch.Tensor`",
                                    "tipo": type(obtenido).__name__})
    hechos = {"nombre": nombre, "forma": tuple(obtenido.shape),
              "forma_esperada": tuple(esperado.shape), "dtype": obtenido.dtype,
              "dtype_esperado": esperado.dtype}
    if es_traspuesta(obtenido, esperado):
        return Diagnostico("forma_transpuesta", hechos)
    if obtenido.shape != esperado.shape:
        return Diagnostico("forma", hechos)
    if obtenido.dtype != esperado.dtype:
        return Diagnostico("dtype", hechos)
    if cerca(obtenido, esperado, rtol, atol):
        return None
    if not torch.isfinite(obtenido).all():
        return Diagnostico("no_finito", hechos)
    hechos.update(hechos_numericos(obtenido, esperado))
    for descripcion, otro in (alternativas or {}).items():
        if otro is not None and otro.shape == obtenido.shape and cerca(obtenido, otro):
            return Diagnostico("tensor_equivocado", {**hechos, "otro": descripcion})
    if not obtenido.any():
        return Diagnostico("ceros", hechos)
    razon, residuo = hechos["razon"], hechos["residuo"]
    if esperado.any() and residuo < 1e-4:
        hechos["inversa"] = 1 / razon if razon else float("inf")
        factor = nombre_de_factor(razon, factores or {})
        # Any single number "fits" some ratio, and a ratio near 1 is a small error, not a
        # scale: only a known factor names those.
        if factor != "escala_desconocida" or (obtenido.numel() > 1 and abs(razon - 1) > 0.05):
            return Diagnostico(factor, hechos)
    return Diagnostico("no_reconocido", hechos)


def diagnosticar_lista(nombre, obtenidos, esperados, factores=None, origenes=None):
    """Compare two sequences of tensors item by item; recognise swapped items."""
    try:
        obtenidos = list(obtenidos)
    except TypeError:
        return Diagnostico("tipo", {"nombre": nombre, "esperado": "una lista de tensores",
                                    "tipo": type(obtenidos).__name__})
    if len(obtenidos) != len(esperados):
        return Diagnostico("longitud", {"nombre": nombre, "longitud": len(obtenidos),
                                        "longitud_esperada": len(esperados)})
    # The gradients of one backward share its rounding: an entry's error follows the size
    # of the largest of them (a sum of products that cancels, 1 − tanh² where tanh
    # saturates), not its own size.
    escala = mayor_magnitud(*esperados)
    for i, (obtenido, esperado) in enumerate(zip(obtenidos, esperados)):
        otros = {f"`{nombre}[{j}]`": e for j, e in enumerate(esperados) if j != i}
        origen = origenes[i] if origenes is not None else None
        rtol, atol = tolerancias(esperado.dtype)
        diagnostico = diagnosticar_tensor(f"{nombre}[{i}]", obtenido, esperado, factores,
                                          otros, rtol, max(atol, rtol * escala), origen)
        if diagnostico is not None:
            return diagnostico
    return None


def diagnosticar_parametros(antes, despues, esperados, factores=None):
    """After a training step: were the parameters updated, and by the right amount?"""
    if all(torch.equal(a, d) for a, d in zip(antes, despues)) and not all(
            torch.equal(a, e) for a, e in zip(antes, esperados)):
        return Diagnostico("sin_step", {})
    for i, (a, d, e) in enumerate(zip(antes, despues, esperados)):
        diagnostico = diagnosticar_tensor(f"la actualización del parámetro {i}", d - a, e - a,
                                          factores)
        if diagnostico is not None:
            return diagnostico
    return None


def _primero(traza, nombres):
    return next((i for i, llamada in enumerate(traza) if llamada in nombres), None)


PASOS_OPTIMIZADOR = ("optimizer.step", "scaler.step")


def diagnosticar_traza(traza, esperada):
    """Compare the recorded calls of a training step (or loop) with the expected ones."""
    traza, esperada = list(traza), list(esperada)
    if traza == esperada:
        return None
    if _primero(esperada, PASOS_OPTIMIZADOR) is not None and _primero(
            traza, PASOS_OPTIMIZADOR) is None:
        return Diagnostico("sin_step", {})
    unscale, clip = _primero(traza, ("scaler.unscale_",)), _primero(traza, ("clip_grad_norm_",))
    if "scaler.unscale_" in esperada and clip is not None and (unscale is None or clip < unscale):
        return Diagnostico("clip_antes_de_unscale", {})
    scheduler, step = _primero(traza, ("scheduler.step",)), _primero(traza, PASOS_OPTIMIZADOR)
    if scheduler is not None and (step is None or scheduler < step):
        return Diagnostico("scheduler_antes_que_optimizer", {})
    veces, veces_esperadas = traza.count("scheduler.step"), esperada.count("scheduler.step")
    if veces != veces_esperadas:
        return Diagnostico("scheduler_veces", {"veces": veces, "veces_esperadas": veces_esperadas})
    if traza.count("optimizer.zero_grad") < esperada.count("optimizer.zero_grad"):
        return Diagnostico("zero_grad_ausente", {})
    return Diagnostico("orden_llamadas", {"orden": " → ".join(traza),
                                          "orden_esperado": " → ".join(esperada)})


def copiar_buffers(modelo):
    """Snapshot of every buffer (BatchNorm running statistics included)."""
    return {nombre: b.detach().clone() for nombre, b in modelo.named_buffers()}


def diagnosticar_buffers(antes, despues):
    """Did a buffer (``running_mean``, ``running_var``, ...) change?"""
    for nombre, valor in antes.items():
        if nombre not in despues or not torch.equal(valor, despues[nombre]):
            return Diagnostico("buffers_cambiados", {"nombre": nombre})
    return None
