"""Chapter 1: how each exercise is built, observed and scored, and its public checks.

Injected into the chapter 1 student notebook by the build; the hidden tests use the
same exercises on other inputs against the reference (at grading time the student's
function is observed in the student's kernel and scored in the grader's process).
The public oracles are autograd or finite differences, never the reference, so
reading this code does not give the answers away.
"""

import torch

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
    llamar,
    observar_llamada,
    verificar_intactas,
)
from autograder.student.diagnosis import diagnosticar_lista

__all__ = ["comprobar_manual_backward", "comprobar_two_loss_grads", "comprobar_gradient_penalty"]

NOMBRES_PARAMETROS = ("W1", "b1", "W2", "b2")


def red_pequena(generador, D, H, K, dtype=torch.float64):
    """A small Linear–Tanh–Linear model whose weights come from ``generador``."""
    modelo = torch.nn.Sequential(torch.nn.Linear(D, H), torch.nn.Tanh(), torch.nn.Linear(H, K))
    modelo = modelo.to(dtype)
    with torch.no_grad():
        for p in modelo.parameters():
            p.copy_(torch.randn(p.shape, generator=generador, dtype=dtype))
    return modelo


def _tipo(nombre, objeto, esperado):
    fallar("tipo", nombre=nombre, esperado=esperado,
           tipo=objeto.get("__objeto__", "dict") if isinstance(objeto, dict) else
           type(objeto).__name__)


# ---------------------------------------------------------------- exercise 1: manual_backward
def construir_red(generador, forma):
    """x, y, W1, b1, W2, b2 for ``forma`` = (N, D, H, K[, dtype]), with unit 0 dead on purpose."""
    N, D, H, K = forma[:4]
    dtype = getattr(torch, forma[4]) if len(forma) > 4 else torch.float64

    def normal(*dimensiones):
        return torch.randn(*dimensiones, generator=generador, dtype=dtype)

    entradas = {"x": normal(N, D), "y": normal(N, K), "W1": normal(D, H), "b1": normal(H),
                "W2": normal(H, K), "b2": normal(K)}
    entradas["b1"][0] = -50.0  # dead for every sample: its gradient must be exactly 0
    return entradas


def observar_red(manual_backward, entradas):
    with torch.no_grad():  # the contract: no autograd inside manual_backward
        observacion = observar_llamada(manual_backward, *entradas.values())
    observacion["despues"] = fotografiar(entradas)
    return observacion


def contexto_red(forma):
    """The constant factor each wrong MSE derivative introduces, by diagnosis id."""
    N, K = forma[0], forma[3]
    return {"factores": {"suma_en_vez_de_media": N * K, "media_solo_sobre_lote": K,
                         "media_solo_sobre_salidas": N}}


def _gradientes(caso, nombres):
    resultado = caso.resultado
    if type(resultado) is not dict or "__objeto__" in resultado:
        _tipo("el resultado", resultado, "un dict {'W1', 'b1', 'W2', 'b2'}")
    for nombre in nombres:
        comparar(f"grads['{nombre}']", resultado.get(nombre), caso.datos["esperado"][nombre],
                 caso.datos["factores"])


MANUAL_BACKWARD = Ejercicio(
    funcion="manual_backward",
    partes=[
        Parte("capa de salida: W2 y b2", 1.5, lambda caso: _gradientes(caso, ("W2", "b2"))),
        Parte("capa oculta: W1 y b1 (la derivada de la ReLU)", 1.0,
              lambda caso: _gradientes(caso, ("W1", "b1"))),
        Parte("entradas intactas", 0.5, verificar_intactas, requisito=True),
    ],
    construir=construir_red, observar=observar_red, contexto=contexto_red)


def gradientes_autograd(x, y, W1, b1, W2, b2):
    """The public oracle: autograd on a copy of the parameters."""
    params = [t.detach().clone().requires_grad_(True) for t in (W1, b1, W2, b2)]
    with torch.enable_grad():
        y_hat = torch.relu(x @ params[0] + params[1]) @ params[2] + params[3]
        gradientes = torch.autograd.grad(torch.nn.functional.mse_loss(y_hat, y), params)
    return dict(zip(NOMBRES_PARAMETROS, gradientes))


def comprobar_manual_backward(manual_backward):
    """Public check: your manual gradients against autograd on one small network."""
    caso = caso_en_proceso(MANUAL_BACKWARD, manual_backward, 1, (6, 4, 5, 3), gradientes_autograd)
    comprobar(MANUAL_BACKWARD.partes, caso,
              "Tus gradientes coinciden con los de autograd (en este ejemplo pequeño).")


# ---------------------------------------------------------------- exercise 2: two_loss_grads
def construir_dos_perdidas(generador, forma):
    """model, x, y for ``forma`` = (N, D, H, K)."""
    N, D, H, K = forma
    modelo = red_pequena(generador, D, H, K)
    return {"model": modelo,
            "x": torch.randn(N, D, generator=generador, dtype=torch.float64),
            "y": torch.randn(N, K, generator=generador, dtype=torch.float64)}


def observar_dos_perdidas(two_loss_grads, entradas):
    """The result, the inputs afterwards, and how many forward passes the model ran."""
    llamadas = []
    gancho = entradas["model"].register_forward_pre_hook(lambda modulo, args: llamadas.append(1))
    try:
        observacion = observar_llamada(two_loss_grads, *entradas.values())
    finally:
        gancho.remove()
    observacion.update(despues=fotografiar(entradas), llamadas=len(llamadas))
    return observacion


def _lista_de_gradientes(caso, indice):
    resultado = caso.resultado
    if type(resultado) not in (tuple, list) or len(resultado) != 2:
        _tipo("el resultado", resultado, "una tupla (grads_a, grads_b)")
    etiqueta = ("grads_a", "grads_b")[indice]
    esperados_a, esperados_b = caso.datos["esperado"]
    sumas = [a + b for a, b in zip(esperados_a, esperados_b)]
    obtenidos = resultado[indice]
    if type(obtenidos) not in (tuple, list):
        _tipo(etiqueta, obtenidos, "una lista de tensores")
    if diagnosticar_lista(etiqueta, obtenidos, sumas) is None:
        fallar(("acumulado_sin_clone", "acumulado_sin_zero")[indice], nombre=etiqueta)
    exigir(diagnosticar_lista(etiqueta, obtenidos, caso.datos["esperado"][indice]))


def _un_forward_sin_efectos(caso):
    if caso.datos["llamadas"] != 1:
        fallar("forward_repetido", llamadas=caso.datos["llamadas"])
    verificar_intactas(caso)


TWO_LOSS_GRADS = Ejercicio(
    funcion="two_loss_grads",
    partes=[
        Parte("gradientes de la MSE (grads_a)", 0.75, lambda caso: _lista_de_gradientes(caso, 0)),
        Parte("gradientes de la L1 (grads_b)", 0.75, lambda caso: _lista_de_gradientes(caso, 1)),
        Parte("un solo pase hacia adelante; entradas y parámetros intactos", 0.5,
              _un_forward_sin_efectos, requisito=True),
    ],
    construir=construir_dos_perdidas, observar=observar_dos_perdidas)


def gradientes_por_separado(model, x, y):
    """The public oracle: one forward pass per loss."""
    params = list(model.parameters())
    with torch.enable_grad():
        a = torch.autograd.grad(torch.nn.functional.mse_loss(model(x), y), params)
        b = torch.autograd.grad(torch.nn.functional.l1_loss(model(x), y), params)
    return list(a), list(b)


def comprobar_two_loss_grads(two_loss_grads):
    """Public check: one forward, the gradients of each loss on its own."""
    caso = caso_en_proceso(TWO_LOSS_GRADS, two_loss_grads, 2, (5, 3, 4, 2), gradientes_por_separado)
    comprobar(TWO_LOSS_GRADS.partes, caso,
              "Un solo forward y los gradientes de cada pérdida por separado: correcto.")


# ---------------------------------------------------------------- exercise 3: gradient_penalty
def construir_penalizacion(generador, forma):
    """model (D–H–1) and x (N, D) for ``forma`` = (N, D, H)."""
    N, D, H = forma
    modelo = red_pequena(generador, D, H, 1)
    return {"model": modelo, "x": torch.randn(N, D, generator=generador, dtype=torch.float64)}


def observar_penalizacion(gradient_penalty, entradas):
    """The value, whether it has a graph, its gradient w.r.t. the parameters, side effects."""
    parametros = list(entradas["model"].parameters())
    penalizacion = None

    def guardar(*args):
        nonlocal penalizacion
        penalizacion = gradient_penalty(*args)
        return penalizacion

    observacion = observar_llamada(guardar, *entradas.values())
    observacion["grad_poblado"] = any(p.grad is not None for p in parametros)
    observacion["despues"] = fotografiar(entradas)
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


def _valor_penalizacion(caso):
    comparar("la penalización", caso.resultado, caso.datos["esperado"]["valor"],
             rtol=1e-5, atol=1e-8)


def _diferenciable(caso):
    if not caso.datos["tiene_grafo"] or caso.datos["gradientes"] is None:
        fallar("sin_grafo", nombre="la penalización")
    esperados = caso.datos["esperado"]["gradientes"]
    if esperados is None:  # the public check has no reference gradients: any graph will do
        return
    exigir(diagnosticar_lista("d penalización / d parámetros", caso.datos["gradientes"],
                              esperados))


def _sin_efectos_penalizacion(caso):
    verificar_intactas(caso)
    if caso.datos["grad_poblado"]:
        fallar("grad_poblado")


GRADIENT_PENALTY = Ejercicio(
    funcion="gradient_penalty",
    partes=[
        Parte("valor de la penalización", 1.5, _valor_penalizacion),
        Parte("diferenciable respecto de los parámetros (create_graph=True)", 1.0,
              _diferenciable),
        Parte("sin efectos secundarios: x intacto, .grad sin tocar", 0.5,
              _sin_efectos_penalizacion, requisito=True),
    ],
    construir=construir_penalizacion, observar=observar_penalizacion)


def penalizacion_por_diferencias(model, x, h=1e-6):
    """The public oracle: the gradient of the model w.r.t. x by central differences."""
    with torch.no_grad():
        grad_x = torch.zeros_like(x)
        for i in range(x.shape[0]):
            for j in range(x.shape[1]):
                paso = torch.zeros_like(x)
                paso[i, j] = h
                grad_x[i, j] = (model(x + paso)[i, 0] - model(x - paso)[i, 0]) / (2 * h)
        valor = ((torch.linalg.vector_norm(grad_x, dim=1) - 1) ** 2).mean()
    return {"valor": valor, "gradientes": None}


def comprobar_gradient_penalty(gradient_penalty):
    """Public check: value against finite differences, differentiable, no side effects."""
    caso = caso_en_proceso(GRADIENT_PENALTY, gradient_penalty, 3, (4, 3, 6),
                           penalizacion_por_diferencias)
    comprobar(GRADIENT_PENALTY.partes, caso,
              "La penalización coincide con diferencias finitas y se puede derivar.")


# In notebook order.
EJERCICIOS = ejercicios(MANUAL_BACKWARD, TWO_LOSS_GRADS, GRADIENT_PENALTY)
