"""Tensor comparison and diagnosis with Spanish messages a student can act on.

The build injects this module verbatim into every student notebook (see
``autograder/build.py``), so it may import only the standard library and torch:
students on Colab have no ``autograder`` package. Hidden tests import the very
same code from the package, so public checks and grading say the same thing.
"""

import contextlib
import io
import math
import traceback
import warnings

import torch

# Misconception catalogue: id -> Spanish text (placeholders filled from the facts).
MENSAJES = {
    "es_none": "`{nombre}` es None: no se calculó. ¿Falta un `return`, o el grafo se cortó "
    "(`detach`, `no_grad`, un tensor que no es hoja)?",
    "tipo": "`{nombre}` debería ser un `torch.Tensor`, pero es `{tipo}`.",
    "forma_transpuesta": "`{nombre}` es la traspuesta del resultado correcto (forma {forma}; "
    "se esperaba {forma_esperada}). Revisa el orden de los factores del producto matricial "
    "(¿`A.T @ B` o `B.T @ A`?).",
    "forma": "`{nombre}` tiene forma {forma}, se esperaba {forma_esperada}. Un gradiente "
    "siempre tiene la misma forma que el tensor respecto del cual derivas.",
    "dtype": "`{nombre}` tiene dtype {dtype}, se esperaba {dtype_esperado}. No cambies la "
    "precisión de las entradas (evita `.float()` o constantes de otro tipo).",
    "no_finito": "`{nombre}` contiene NaN o infinitos.",
    "ceros": "`{nombre}` es todo ceros, pero el valor correcto no lo es. ¿Se anuló la "
    "cadena de derivadas (una máscara de ReLU al revés, un gradiente que no llega)?",
    "signo": "`{nombre}` tiene el signo invertido (es −1 × el valor correcto). Revisa "
    "la derivada de la pérdida: d/dŷ (ŷ − y)² = 2(ŷ − y), no 2(y − ŷ).",
    "factor_2": "`{nombre}` es {razon:.3g} × el valor correcto. ¿Olvidaste (o duplicaste) "
    "el factor 2 de la derivada de un cuadrado?",
    "escala": "`{nombre}` es exactamente {razon:.3g} × el valor correcto, y {razon:.3g} es "
    "{explicacion}.",
    "escala_desconocida": "`{nombre}` es proporcional al valor correcto pero {razon:.4g} "
    "veces más grande. Busca un factor constante de más o de menos.",
    "valor": "`{nombre}` no coincide con el valor de referencia.",
    "modificada": "Tu función modificó su entrada `{nombre}`. Trabaja sobre copias o "
    "tensores nuevos: quien llama espera encontrar sus tensores como los dejó.",
    "excepcion": "Tu función lanzó una excepción:\n{detalle}",
    "sin_grafo": "`{nombre}` no tiene `grad_fn`: no se puede derivar. ¿Olvidaste "
    "`create_graph=True` en `torch.autograd.grad`?",
    "segundo_backward": "Recorriste el mismo grafo dos veces y la primera pasada ya había "
    "liberado sus tensores intermedios. Pasa `retain_graph=True` a la primera pasada "
    "(`backward` o `torch.autograd.grad`).",
    "acumulado_sin_clone": "`{nombre}` es la suma de los gradientes de las dos pérdidas. "
    "¿Guardaste `p.grad` sin `.clone()`? El segundo `backward()` suma sobre ese mismo tensor.",
    "acumulado_sin_zero": "`{nombre}` es la suma de los gradientes de las dos pérdidas: "
    "`.grad` acumula entre llamadas a `backward()`. Pon los gradientes a cero (o a None) "
    "entre una pérdida y la otra.",
    "forward_repetido": "Llamaste al modelo {llamadas} veces; el ejercicio pide un único pase "
    "hacia adelante compartido por las dos pérdidas.",
    "grad_poblado": "Tu función dejó valores en `.grad` de los parámetros. Usa "
    "`torch.autograd.grad`, que devuelve los gradientes sin acumularlos en `.grad`.",
    "longitud": "`{nombre}` tiene {longitud} elementos, se esperaban {longitud_esperada} "
    "(uno por parámetro, en el orden de `model.parameters()`).",
}

# Known error texts from PyTorch -> the misconception they reveal.
ERRORES_CONOCIDOS = {
    "backward through the graph a second time": "segundo_backward",
}


class ComprobacionFallida(AssertionError):
    """A failed check. IPython shows only its message, never a traceback into the checks."""

    def __init__(self, mensaje, diagnostico="valor", hechos=None):
        super().__init__(mensaje)
        self.diagnostico = diagnostico
        self.hechos = dict(hechos or {})

    def _render_traceback_(self):
        # IPython calls this instead of formatting the stack: a student sees the
        # message, not the source of the check (nor, at grading, of the reference).
        return ["\x1b[0;31mComprobacionFallida\x1b[0m: " + str(self)]


def fallar(diagnostico, **hechos):
    """Raise a ComprobacionFallida with the catalogue text for ``diagnostico``."""
    texto = MENSAJES[diagnostico].format(**hechos)
    detalles = hechos.get("detalles")
    if detalles:
        texto += "\n  " + detalles
    raise ComprobacionFallida(texto, diagnostico, hechos)


def tolerancias(dtype):
    """(rtol, atol) loose enough for any valid order of operations in ``dtype``."""
    if dtype == torch.float64:
        return 1e-6, 1e-9
    if dtype in (torch.float16, torch.bfloat16):
        return 1e-2, 1e-3
    return 1e-4, 1e-6


def diferencias(obtenido, esperado):
    """Plain facts about a numeric mismatch, for messages and feedback."""
    g, e = obtenido.detach().double(), esperado.detach().double()
    abs_diff = (g - e).abs()
    rel = abs_diff / e.abs().clamp_min(1e-12)
    return {"max_abs": abs_diff.max().item(), "max_rel": rel.max().item()}


def razon_ajustada(obtenido, esperado):
    """Best scalar r with obtenido ≈ r·esperado, and the relative residual of that fit."""
    g, e = obtenido.detach().double().flatten(), esperado.detach().double().flatten()
    ee = torch.dot(e, e).item()
    if ee == 0.0:
        return None, math.inf
    r = torch.dot(g, e).item() / ee
    residuo = torch.linalg.vector_norm(g - r * e).item() / math.sqrt(ee)
    return r, residuo


def _diagnostico_de_escala(nombre, razon, factores):
    """Name a constant factor: −1, 2, ½, or one of the exercise's known sizes."""
    if abs(razon + 1) < 1e-3:
        return "signo", {}
    if abs(razon - 2) < 1e-3 or abs(razon - 0.5) < 1e-3:
        return "factor_2", {}
    for explicacion, valor in factores.items():
        for candidato, forma in ((valor, "{}"), (1 / valor, "1/({})")):
            if valor not in (0, 1) and abs(razon / candidato - 1) < 1e-3:
                return "escala", {"explicacion": forma.format(explicacion)}
    return "escala_desconocida", {}


def _es_traspuesta(obtenido, esperado):
    """A 2-D result whose transpose is the answer (square matrices included)."""
    if obtenido.dim() != 2 or obtenido.T.shape != esperado.shape or not esperado.any():
        return False
    r_tol, a_tol = tolerancias(esperado.dtype)
    traspuesta = obtenido.T.to(esperado.dtype)
    if not torch.allclose(traspuesta, esperado, rtol=r_tol, atol=a_tol):
        return False
    # A symmetric answer equals its transpose: then nothing is wrong.
    return obtenido.shape != esperado.shape or not torch.allclose(
        obtenido.to(esperado.dtype), esperado, rtol=r_tol, atol=a_tol)


def comparar(nombre, obtenido, esperado, factores=None, rtol=None, atol=None):
    """Check ``obtenido`` against ``esperado``; raise ComprobacionFallida naming the likely mistake.

    ``factores`` maps an explanation ("el tamaño del lote N = 8: ¿sumaste en vez de
    promediar?") to a number; a result that is exactly that many times the
    reference (or its inverse) is reported with that explanation.
    """
    if obtenido is None:
        fallar("es_none", nombre=nombre)
    if not isinstance(obtenido, torch.Tensor):
        fallar("tipo", nombre=nombre, tipo=type(obtenido).__name__)
    hechos = {"nombre": nombre, "forma": tuple(obtenido.shape),
              "forma_esperada": tuple(esperado.shape)}
    if _es_traspuesta(obtenido, esperado):
        fallar("forma_transpuesta", **hechos)
    if obtenido.shape != esperado.shape:
        fallar("forma", **hechos)
    if obtenido.dtype != esperado.dtype:
        fallar("dtype", nombre=nombre, dtype=obtenido.dtype, dtype_esperado=esperado.dtype)
    r_tol, a_tol = tolerancias(esperado.dtype)
    r_tol, a_tol = rtol if rtol is not None else r_tol, atol if atol is not None else a_tol
    if torch.allclose(obtenido, esperado, rtol=r_tol, atol=a_tol):
        return
    if not torch.isfinite(obtenido).all():
        fallar("no_finito", nombre=nombre)
    hechos = {"nombre": nombre, **diferencias(obtenido, esperado)}
    hechos["detalles"] = "(máx. diferencia absoluta {max_abs:.3g}, relativa {max_rel:.3g})".format(
        **hechos)
    if not obtenido.any():
        fallar("ceros", **hechos)
    razon, residuo = razon_ajustada(obtenido, esperado)
    if razon is not None and residuo < 1e-4:
        diagnostico, extra = _diagnostico_de_escala(nombre, razon, factores or {})
        fallar(diagnostico, razon=razon, **extra, **hechos)
    fallar("valor", **hechos)


def llamar(funcion, *args, **kwargs):
    """Call student code quietly: warnings and stderr never reach the graded cell.

    An exception becomes a ComprobacionFallida that shows only the student's frames.
    """
    with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        try:
            return funcion(*args, **kwargs)
        except ComprobacionFallida:
            raise
        except Exception as error:  # noqa: BLE001 - any student error is reported, not raised
            # Only the student's frames: not the checks', not torch's internals.
            marcos = [m for m in traceback.extract_tb(error.__traceback__)[1:]
                      if "autograder" not in m.filename and "site-packages" not in m.filename]
            pila = "".join(traceback.format_list(marcos[-3:]))
            detalle = pila + f"{type(error).__name__}: {error}"
            texto = MENSAJES["excepcion"].format(detalle=detalle)
            diagnostico = "excepcion"
            for fragmento, conocido in ERRORES_CONOCIDOS.items():
                if fragmento in str(error):
                    diagnostico = conocido
                    texto = MENSAJES[conocido] + "\n" + texto
            raise ComprobacionFallida(texto, diagnostico, {"tipo": type(error).__name__}) from None


def instantanea(tensor):
    """What a caller expects to find unchanged: values and the ``requires_grad`` flag."""
    return tensor.detach().clone(), tensor.requires_grad


def sin_modificar(nombre, foto, tensor):
    """Raise if ``tensor`` no longer matches its ``instantanea`` taken before the call."""
    valores, requiere_grad = foto
    if tensor.requires_grad != requiere_grad or not torch.equal(tensor.detach(), valores):
        fallar("modificada", nombre=nombre)


def ejecutar_pasos(pasos, funcion, semilla):
    """Run each check step on ``funcion`` with its own generator derived from ``semilla``.

    The first failing step raises; a step is ``paso(funcion, generador)``.
    """
    for i, paso in enumerate(pasos):
        paso(funcion, torch.Generator().manual_seed(semilla + 1000 * i))
