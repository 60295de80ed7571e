"""Checks: call student code safely, compare, and score an exercise by its parts.

Injected verbatim into every student notebook by the build (standard library and
torch only: students on Colab have no ``autograder`` package). Hidden tests import
the very same code, so public checks and grading say the same thing.

An exercise is a list of ``Parte`` (a named check worth some points) run over one or
more ``Caso`` (one call of the student's function on one input, with what was
observed). A public check stops at the first failing part and explains it; grading
scores every part and prints what failed.
"""

import contextlib
import contextvars
import io
import os
import traceback
import warnings
from dataclasses import dataclass, field

import torch

from autograder.student.diagnosis import Diagnostico, diagnosticar_tensor
from autograder.student.messages import texto


class ComprobacionFallida(AssertionError):
    """A failed check. IPython shows only its message, never a traceback into the checks."""

    def __init__(self, diagnostico):
        super().__init__(texto(diagnostico.id, diagnostico.hechos))
        self.diagnostico = diagnostico.id
        self.hechos = dict(diagnostico.hechos)

    def _render_traceback_(self):
        # IPython calls this instead of formatting the stack: a student sees the
        # message, not the source of the check (nor, at grading, of the reference).
        return ["\x1b[0;31mComprobacionFallida\x1b[0m: " + str(self)]


def fallar(diagnostico, **hechos):
    raise ComprobacionFallida(Diagnostico(diagnostico, hechos))


def exigir(diagnostico):
    """Raise if a diagnosis function found a mistake."""
    if diagnostico is not None:
        raise ComprobacionFallida(diagnostico)


def comparar(nombre, obtenido, esperado, factores=None, rtol=None, atol=None, alternativas=None):
    exigir(diagnosticar_tensor(nombre, obtenido, esperado, factores, alternativas, rtol, atol))


# Known error texts from PyTorch -> the misconception they reveal.
ERRORES_CONOCIDOS = {
    "backward through the graph a second time": "segundo_backward",
}


def _marcos_del_estudiante(error):
    """Only the student's frames: not the checks' (files of the package or, in a notebook,
    the helper cell, which is the file this function was compiled from), not torch's."""
    propio = _marcos_del_estudiante.__code__.co_filename
    return [m for m in traceback.extract_tb(error.__traceback__)[1:]
            if m.filename != propio and "autograder" not in m.filename
            and "site-packages" not in m.filename]


def _error_del_estudiante(error):
    """A ComprobacionFallida describing an exception raised by student code."""
    if isinstance(error, NotImplementedError):
        return ComprobacionFallida(Diagnostico("sin_implementar", {}))
    marcos = _marcos_del_estudiante(error)
    detalle = "".join(traceback.format_list(marcos[-3:])) + f"{type(error).__name__}: {error}"
    for fragmento, diagnostico in ERRORES_CONOCIDOS.items():
        if fragmento in str(error):
            return ComprobacionFallida(Diagnostico(diagnostico, {"detalles": detalle}))
    return ComprobacionFallida(Diagnostico("excepcion", {"detalle": detalle}))


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
            raise _error_del_estudiante(error) from None


# ------------------------------------------------------------------------ observations
# What the student's code produced is turned into plain data (tensors, numbers, strings,
# lists, dicts) before any check looks at it: at grading time it crosses from the
# student's kernel to the grader, which never runs student code and never unpickles
# anything but plain data.
PRIMITIVOS = (bool, int, float, str, type(None))


def sanear(objeto, profundidad=0):
    """Plain-data copy of a student's result; anything else becomes a type marker.

    Subclasses of the built-in containers and numbers (an ``OrderedDict``, a named tuple,
    a numpy float) are read through the built-in type's own methods, so they count as
    what they are, and none of their overrides runs. Tensor subclasses do not: a tensor
    that redefines its operations is not plain data."""
    if type(objeto) in PRIMITIVOS:
        return objeto
    if isinstance(objeto, bool):
        return bool.__bool__(objeto)
    for tipo in (int, float, str):
        if isinstance(objeto, tipo):
            return {int: int.__int__, float: float.__float__, str: str.__str__}[tipo](objeto)
    if type(objeto) in (torch.Tensor, torch.nn.Parameter):
        return objeto.detach().clone()
    if profundidad < 4 and isinstance(objeto, (list, tuple)):
        base = tuple if isinstance(objeto, tuple) else list
        return base(sanear(v, profundidad + 1) for v in base.__iter__(objeto))
    if profundidad < 4 and isinstance(objeto, dict):
        return {str(k): sanear(v, profundidad + 1) for k, v in dict.items(objeto)}
    return {"__objeto__": type(objeto).__name__}


def fotografiar(entradas):
    """Values and ``requires_grad`` of every input tensor and model parameter, by name."""
    foto = {}
    for nombre, valor in entradas.items():
        if isinstance(valor, torch.nn.Module):
            tensores = {f"{nombre}.{p}": t for p, t in valor.named_parameters()}
        elif isinstance(valor, torch.Tensor):
            tensores = {nombre: valor}
        else:
            continue
        for clave, tensor in tensores.items():
            foto[clave] = {"valores": tensor.detach().clone(),
                           "requires_grad": tensor.requires_grad}
    return foto


def _escalar(valor):
    return valor if type(valor) in PRIMITIVOS else repr(valor)


def estado(entradas):
    """Everything a function could change in what it was given, as plain data keyed by a
    readable name: the grad mode; each tensor's values, ``requires_grad`` and ``.grad``;
    each module's parameters (the same three), buffers and every submodule's mode; each
    optimizer's hyperparameters and state; each scheduler's state; each loss's settings."""
    foto = {"modo de autograd": torch.is_grad_enabled()}

    def tensor(nombre, t):
        foto[nombre] = t.detach().clone()
        foto[f"{nombre}.requires_grad"] = t.requires_grad
        foto[f"{nombre}.grad"] = None if t.grad is None else t.grad.detach().clone()

    for nombre, valor in entradas.items():
        if isinstance(valor, torch.Tensor):
            tensor(nombre, valor)
        elif isinstance(valor, torch.nn.Module):
            for clave, p in valor.named_parameters():
                tensor(f"{nombre}.{clave}", p)
            for clave, b in valor.named_buffers():
                foto[f"{nombre}.{clave}"] = b.detach().clone()
            for clave, m in valor.named_modules():
                foto[f"{nombre}{'.' + clave if clave else ''}.training"] = m.training
            if isinstance(valor, torch.nn.modules.loss._Loss):
                for clave, v in vars(valor).items():
                    if not clave.startswith("_"):
                        foto[f"{nombre}.{clave}"] = _escalar(v)
        elif isinstance(valor, torch.optim.Optimizer):
            for i, grupo in enumerate(valor.param_groups):
                for clave, v in grupo.items():
                    if clave != "params":
                        foto[f"{nombre}.param_groups[{i}].{clave}"] = _escalar(v)
            # In parameter order, each parameter's entries sorted by their (unique) names:
            # sorting across parameters would compare tensors of different ranks.
            foto[f"{nombre}.state"] = repr([
                sorted((k, v.detach().clone().tolist() if isinstance(v, torch.Tensor)
                        else _escalar(v)) for k, v in valor.state[p].items())
                if p in valor.state else None
                for grupo in valor.param_groups for p in grupo["params"]])
        elif hasattr(valor, "state_dict") and hasattr(valor, "last_epoch"):  # a scheduler
            foto[f"{nombre}.state_dict"] = repr(sorted(
                (k, _escalar(v)) for k, v in valor.state_dict().items()))
    return foto


def cambios(antes, despues, permitidos=()):
    """Names whose value differs between two ``estado`` snapshots, but for ``permitidos``
    (names, or prefixes ending in "." or "[")."""
    def permitido(nombre):
        return any(nombre == p or (p.endswith((".", "[")) and nombre.startswith(p))
                   for p in permitidos)

    distintos = []
    for nombre in sorted(set(antes) | set(despues)):
        a, d = antes.get(nombre), despues.get(nombre)
        iguales = (torch.equal(a, d) if isinstance(a, torch.Tensor) and isinstance(d, torch.Tensor)
                   and a.shape == d.shape and a.dtype == d.dtype else
                   a == d and type(a) is type(d))
        if not iguales and not permitido(nombre):
            distintos.append(nombre)
    return distintos


def verificar_sin_efectos(caso, permitidos=()):
    """The call changed nothing it was given (see ``estado``), but for ``permitidos``."""
    distintos = cambios(caso.datos["estado_antes"], caso.datos["estado_despues"], permitidos)
    # a list that shrank ("len(...)") is named first, before the items that went with it
    distintos = sorted(distintos, key=lambda n: not n.startswith("len("))
    if distintos:
        fallar("efecto_secundario", que=", ".join(f"`{n}`" for n in distintos[:4])
               + (f" y {len(distintos) - 4} más" if len(distintos) > 4 else ""))


def error_a_datos(error):
    if error is None:
        return None
    hechos = {k: v if type(v) in PRIMITIVOS else str(v) for k, v in error.hechos.items()}
    return {"diagnostico": error.diagnostico, "hechos": hechos}


def datos_a_error(datos):
    if datos is None:
        return None
    return ComprobacionFallida(Diagnostico(datos["diagnostico"], dict(datos["hechos"])))


def observar_llamada(funcion, *args):
    """Call the student's function; plain data: its result, or the error it raised."""
    try:
        return {"resultado": sanear(llamar(funcion, *args)), "error": None}
    except ComprobacionFallida as error:
        return {"resultado": None, "error": error_a_datos(error)}


# ------------------------------------------------------------------------ exercises by parts
@dataclass
class Caso:
    """One call of the student's function: its result (or error) and what the checks need."""

    resultado: object = None
    error: ComprobacionFallida = None
    datos: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Ejercicio:
    """How to build an exercise's inputs, observe a student's call, and score it.

    ``construir(generador, forma)`` returns the inputs (a dict); it runs on both sides
    of grading from the same seed. ``observar(funcion, entradas)`` runs the student's
    function and returns plain data. ``contexto(forma)`` adds facts the parts need.
    """

    funcion: str
    partes: list
    construir: object
    observar: object
    contexto: object = None


def ejercicios(*declarados):
    """A chapter's exercises by function name, each declared once as an ``Ejercicio``."""
    return {ejercicio.funcion: ejercicio for ejercicio in declarados}


def observar_casos(ejercicio, funcion, casos):
    """Student side of a hidden test: one observation per (shape, seed)."""
    observaciones = []
    for forma, semilla in casos:
        # Every case starts with autograd on, whatever an earlier call left behind.
        with torch.enable_grad():
            entradas = ejercicio.construir(torch.Generator().manual_seed(semilla), forma)
            observaciones.append(ejercicio.observar(funcion, entradas))
    return observaciones


def armar_caso(ejercicio, observacion, esperado, originales, forma):
    """A Caso from a (possibly remote) observation and the trusted side's data."""
    datos = dict(observacion)
    datos.update(esperado=esperado, originales=originales)
    if ejercicio.contexto is not None:
        datos.update(ejercicio.contexto(forma))
    return Caso(observacion.get("resultado"), datos_a_error(observacion.get("error")), datos)


_EJEMPLOS = contextvars.ContextVar("ejemplos_publicos", default=None)


@contextlib.contextmanager
def anotar_ejemplos():
    """Within it, every public case built is listed as (function, seed, shape): how the
    grader learns each public check's examples (to tell a copied example apart)."""
    ejemplos = []
    marca = _EJEMPLOS.set(ejemplos)
    try:
        yield ejemplos
    finally:
        _EJEMPLOS.reset(marca)


def caso_en_proceso(ejercicio, funcion, semilla, forma, esperar):
    """Build, expect, observe and assemble one case in this process (public checks, tests)."""
    if _EJEMPLOS.get() is not None:
        _EJEMPLOS.get().append((ejercicio.funcion, semilla, forma))
    # Autograd on for the whole case, as observar_casos does: a student's call that leaves
    # it off must not break the cases (and the tests) that run after it.
    with torch.enable_grad():
        entradas = ejercicio.construir(torch.Generator().manual_seed(semilla), forma)
        originales = fotografiar(entradas)  # before the oracle, which may train the model
        esperado = esperar(*entradas.values())
        copia = ejercicio.construir(torch.Generator().manual_seed(semilla), forma)
        observacion = ejercicio.observar(funcion, copia)
    return armar_caso(ejercicio, observacion, esperado, originales, forma)


def verificar_intactas(caso, nombres=None):
    """Every input (or those in ``nombres``) left as it was: values and ``requires_grad``."""
    for nombre, antes in caso.datos["originales"].items():
        if nombres is not None and nombre.split(".")[0] not in nombres:
            continue
        despues = caso.datos["despues"].get(nombre)
        if (despues is None or despues["requires_grad"] != antes["requires_grad"]
                or not torch.equal(despues["valores"], antes["valores"])):
            fallar("modificada", nombre=nombre)


@dataclass(frozen=True)
class Parte:
    """A part of an exercise worth ``puntos``.

    A ``requisito`` (no side effects, one forward pass...) is only awarded when at least
    one value part passed: doing nothing must not earn points.
    """

    nombre: str
    puntos: float
    verificar: object  # callable(Caso) -> None, raises ComprobacionFallida
    requisito: bool = False


def huella(objeto):
    """A hashable summary of a result, to tell whether two results are the same."""
    if isinstance(objeto, torch.Tensor):
        valores = objeto.detach().double().flatten()
        return ("tensor", tuple(objeto.shape), tuple(round(v, 9) for v in valores.tolist()))
    if isinstance(objeto, dict):
        return tuple(sorted((str(k), huella(v)) for k, v in objeto.items()))
    if isinstance(objeto, (list, tuple)):
        return tuple(huella(v) for v in objeto)
    return repr(objeto)


GENERICOS = ("no_reconocido",)  # diagnoses that name no particular mistake


def solo_ceros(objeto):
    """A result made only of zeros (0.0, zero tensors, containers of them): what a
    computation gives when nothing reached it (no gradient yet), not a typed-in answer."""
    if isinstance(objeto, torch.Tensor):
        return objeto.numel() > 0 and not bool(objeto.detach().ne(0).any())
    if isinstance(objeto, dict):
        return bool(objeto) and all(solo_ceros(v) for v in objeto.values())
    if isinstance(objeto, (list, tuple)):
        return bool(objeto) and all(solo_ceros(v) for v in objeto)
    return isinstance(objeto, (int, float)) and not isinstance(objeto, bool) and objeto == 0


def parecidos(a, b):
    """The same structure, and numbers equal to about three significant digits (what a
    student who copied a printed result would have)."""
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return (a.shape == b.shape and a.dtype.is_floating_point == b.dtype.is_floating_point
                and bool(torch.allclose(a.detach().double(), b.detach().double(), rtol=2e-3,
                                        atol=1e-6, equal_nan=True)))
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        unico = a if isinstance(a, torch.Tensor) else b
        otro = b if unico is a else a
        return unico.numel() == 1 and parecidos(unico.detach().reshape(()),
                                                torch.tensor(otro, dtype=torch.float64))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(parecidos(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(parecidos(x, y) for x, y in zip(a, b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(a - b) <= 2e-3 * max(abs(a), abs(b)) + 1e-6
    return a == b


def _resultado_fijo(casos, ejemplos=()):
    """Two cases with different expected answers but the same result: the result does not
    depend on the inputs. Said to be copied only when it is (about) the
    answer to a public example, ``ejemplos``."""
    validos = [c for c in casos if c.error is None and "esperado" in c.datos]
    if len(validos) < 2 or any(isinstance(c.resultado, dict) and "__objeto__" in c.resultado
                               for c in validos):
        return None  # an object we could not read says nothing about the inputs
    repetido = next((a.resultado for a, b in zip(validos, validos[1:])
                     if huella(a.resultado) == huella(b.resultado)
                     and huella(a.datos["esperado"]) != huella(b.datos["esperado"])), None)
    if repetido is None:
        return None
    copiado = any(parecidos(repetido, ejemplo) for ejemplo in ejemplos)
    return ComprobacionFallida(Diagnostico("resultado_fijo" if copiado else "resultado_constante",
                                           {}))


def _verificar(parte, caso):
    try:
        parte.verificar(caso)
    except ComprobacionFallida as fallo:
        return fallo
    except Exception as error:  # noqa: BLE001 - an odd result must fail its part, not crash
        if _marcos_del_estudiante(error):
            return _error_del_estudiante(error)  # student code the check ran (a method)
        # The check itself stumbled on the result: never told as the student's exception.
        return ComprobacionFallida(Diagnostico("resultado_no_comprobable", {
            "detalle": f"{type(error).__name__}: {error}"}))
    return None


@dataclass
class Resultado:
    puntos: float
    maximo: float
    fallos: list  # (Parte, ComprobacionFallida or None), one per part
    # diagnosis id -> how to fix it; the grader fills it (autograder/hidden/fixes.py), so
    # only the feedback after grading shows a fix, never a public check.
    arreglos: dict = field(default_factory=dict)
    # (part name, diagnosis id) -> the contract's clauses that failure breaks ("N. text"),
    # also filled by the grader (autograder/contract.py)
    clausulas: dict = field(default_factory=dict)

    def informe(self, titulo):
        lineas = [f"{titulo}: {self.puntos:g} / {self.maximo:g} puntos"]
        algun_valor = any(f is None and not p.requisito for p, f in self.fallos)
        sin_puntos = False  # a requirement met that earns nothing (``puntuar``'s rule)
        for parte, fallo in self.fallos:
            ganados = 0 if fallo or (parte.requisito and not algun_valor) else parte.puntos
            sin_puntos = sin_puntos or (not fallo and not ganados and parte.puntos > 0)
            marca = "✗" if fallo else "✓"
            lineas.append(f"  {marca} {parte.nombre} ({ganados:g}/{parte.puntos:g})")
            if fallo:
                arreglo = self.arreglos.get(fallo.diagnostico)
                mensaje = (texto(fallo.diagnostico, fallo.hechos, arreglo=arreglo) if arreglo
                           else str(fallo))
                lineas.append("      " + mensaje.replace("\n", "\n      "))
                for clausula in self.clausulas.get((parte.nombre, fallo.diagnostico), ()):
                    lineas.append(f"      Lo pide la cláusula {clausula}")
        if sin_puntos:
            lineas.append("  Los requisitos cumplidos no puntúan: solo cuentan si alguna parte "
                          "del resultado es correcta.")
        return "\n".join(lineas)

    @property
    def diagnostico(self):
        """The first failing part's diagnosis id (None when everything passed)."""
        return next((f.diagnostico for _, f in self.fallos if f is not None), None)


def puntuar(partes, casos, ejemplos=()):
    """Score every part over every case; a part passes only if it passes on all cases.
    ``ejemplos``: the answers to the public check's examples (see ``_resultado_fijo``)."""
    fijo = _resultado_fijo(casos, ejemplos)
    fallos = []
    for parte in partes:
        fallo = None
        for caso in casos:
            if caso.error is not None or parte.requisito or fijo is None:
                fallo = caso.error or _verificar(parte, caso)
            else:
                # A result that ignores its inputs fails every value part. A copied example
                # is named as such; otherwise, when the part names a mistake of its own
                # (the same wrong answer twice, all zeros from a computation nothing
                # reached), that is what the student reads.
                propio = None if fijo.diagnostico == "resultado_fijo" else _verificar(parte, caso)
                fallo = propio if propio is not None and (
                    propio.diagnostico not in GENERICOS) else fijo
            if fallo is not None:
                break
        fallos.append((parte, fallo))
    algun_valor = any(f is None and not p.requisito for p, f in fallos)
    puntos = sum(p.puntos for p, f in fallos if f is None and (algun_valor or not p.requisito))
    return Resultado(round(puntos, 6), sum(p.puntos for p in partes), fallos)


def calificando():
    """True while nbgrader autogrades (then hidden tests replace the public checks)."""
    return os.environ.get("NBGRADER_EXECUTION") == "autograde"


def comprobar(partes, caso, exito):
    """Public check: explain the first failing part, or print ``exito``."""
    comprobar_casos(partes, [caso], exito)


def comprobar_casos(partes, casos, exito):
    """Public check over several cases: the first failing part explains itself."""
    if calificando():
        return
    for caso in casos:
        if caso.error is not None:
            raise caso.error
        for parte in partes:
            fallo = _verificar(parte, caso)
            if fallo is not None:
                raise fallo
    print("✓ " + exito)
