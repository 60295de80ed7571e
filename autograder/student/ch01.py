"""Chapter 1: the parts of each exercise, the cases they run on, and the public checks.

Injected into the chapter 1 student notebook by the build; the hidden tests import
the same parts and case builders and run them on other inputs against the reference.
The public oracles are autograd or finite differences, never the reference
implementation, so reading this code does not give the answers away.
"""

import torch

from autograder.student.compare import (
    Caso,
    Parte,
    comparar,
    comprobar,
    ejecutar,
    exigir,
    fallar,
    instantanea,
    sin_modificar,
)
from autograder.student.diagnostico import diagnosticar_lista

__all__ = ["comprobar_manual_backward", "comprobar_two_loss_grads", "comprobar_gradient_penalty"]

NOMBRES_PARAMETROS = ("W1", "b1", "W2", "b2")


# ---------------------------------------------------------------- inputs
def datos_red(generador, N, D, H, K, dtype=torch.float64):
    """Inputs of ``manual_backward``: x, y, W1, b1, W2, b2, with unit 0 dead on purpose."""
    def normal(*forma):
        return torch.randn(*forma, generator=generador, dtype=dtype)

    x, y = normal(N, D), normal(N, K)
    W1, b1, W2, b2 = normal(D, H), normal(H), normal(H, K), normal(K)
    b1[0] = -50.0  # dead for every sample: its gradient must be exactly 0
    return x, y, W1, b1, W2, b2


def factores_red(N, K):
    """The constant factor each wrong MSE derivative introduces, by diagnosis id."""
    return {"suma_en_vez_de_media": N * K, "media_solo_sobre_lote": K,
            "media_solo_sobre_salidas": N}


def red_pequena(generador, D, H, K, dtype=torch.float64):
    """A small Linear–Tanh–Linear model whose weights come from ``generador``."""
    modelo = torch.nn.Sequential(torch.nn.Linear(D, H), torch.nn.Tanh(), torch.nn.Linear(H, K))
    modelo = modelo.to(dtype)
    with torch.no_grad():
        for p in modelo.parameters():
            p.copy_(torch.randn(p.shape, generator=generador, dtype=dtype))
    return modelo


class ContadorDeLlamadas:
    """Counts forward passes of a module (a forward pre-hook), removed on exit."""

    def __init__(self, modulo):
        self.llamadas = 0
        self._gancho = modulo.register_forward_pre_hook(self._contar)

    def _contar(self, modulo, entradas):
        self.llamadas += 1

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._gancho.remove()


# ---------------------------------------------------------------- exercise 1: manual_backward
def caso_red(manual_backward, generador, forma, esperar, dtype=torch.float64):
    """Call ``manual_backward`` under no_grad on a fresh network of ``forma`` = (N, D, H, K)."""
    N, D, H, K = forma
    entradas = datos_red(generador, N, D, H, K, dtype)
    esperado = esperar(*entradas)
    fotos = [instantanea(t) for t in entradas]
    with torch.no_grad():
        resultado, error = ejecutar(manual_backward, *entradas)
    return Caso(resultado, error, {"entradas": entradas, "fotos": fotos, "esperado": esperado,
                                   "factores": factores_red(N, K)})


def _gradientes(caso, nombres):
    if not isinstance(caso.resultado, dict):
        fallar("tipo", nombre="el resultado", esperado="un dict {'W1', 'b1', 'W2', 'b2'}",
               tipo=type(caso.resultado).__name__)
    for nombre in nombres:
        comparar(f"grads['{nombre}']", caso.resultado.get(nombre), caso.datos["esperado"][nombre],
                 caso.datos["factores"])


def _entradas_intactas(caso):
    for nombre, foto, tensor in zip(("x", "y", *NOMBRES_PARAMETROS), caso.datos["fotos"],
                                    caso.datos["entradas"]):
        sin_modificar(nombre, foto, tensor)


PARTES_MANUAL_BACKWARD = [
    Parte("capa de salida: W2 y b2", 1.5, lambda caso: _gradientes(caso, ("W2", "b2"))),
    Parte("capa oculta: W1 y b1 (la derivada de la ReLU)", 1.0,
          lambda caso: _gradientes(caso, ("W1", "b1"))),
    Parte("entradas intactas", 0.5, _entradas_intactas, requisito=True),
]


def gradientes_autograd(x, y, W1, b1, W2, b2):
    """The public oracle: autograd on a copy of the parameters."""
    params = [t.detach().clone().requires_grad_(True) for t in (W1, b1, W2, b2)]
    with torch.enable_grad():
        y_hat = torch.relu(x @ params[0] + params[1]) @ params[2] + params[3]
        gradientes = torch.autograd.grad(torch.nn.functional.mse_loss(y_hat, y), params)
    return dict(zip(NOMBRES_PARAMETROS, gradientes))


def comprobar_manual_backward(manual_backward):
    """Public check: your manual gradients against autograd on one small network."""
    caso = caso_red(manual_backward, torch.Generator().manual_seed(1), (6, 4, 5, 3),
                    gradientes_autograd)
    comprobar(PARTES_MANUAL_BACKWARD, caso,
              "Tus gradientes coinciden con los de autograd (en este ejemplo pequeño).")


# ---------------------------------------------------------------- exercise 2: two_loss_grads
def caso_dos_perdidas(two_loss_grads, generador, forma, esperar):
    """Call ``two_loss_grads`` on a fresh model of ``forma`` = (N, D, H, K), counting forwards."""
    N, D, H, K = forma
    modelo = red_pequena(generador, D, H, K)
    x = torch.randn(N, D, generator=generador, dtype=torch.float64)
    y = torch.randn(N, K, generator=generador, dtype=torch.float64)
    esperado = esperar(modelo, x, y)
    fotos = [instantanea(t) for t in (x, y, *modelo.parameters())]
    with ContadorDeLlamadas(modelo) as contador:
        resultado, error = ejecutar(two_loss_grads, modelo, x, y)
    return Caso(resultado, error, {"modelo": modelo, "x": x, "y": y, "fotos": fotos,
                                   "llamadas": contador.llamadas, "esperado": esperado})


def _lista_de_gradientes(caso, indice):
    resultado = caso.resultado
    if not isinstance(resultado, (tuple, list)) or len(resultado) != 2:
        fallar("tipo", nombre="el resultado", esperado="una tupla (grads_a, grads_b)",
               tipo=type(resultado).__name__)
    etiqueta = ("grads_a", "grads_b")[indice]
    esperados_a, esperados_b = caso.datos["esperado"]
    sumas = [a + b for a, b in zip(esperados_a, esperados_b)]
    obtenidos = resultado[indice]
    if diagnosticar_lista(etiqueta, obtenidos, sumas) is None:
        fallar(("acumulado_sin_clone", "acumulado_sin_zero")[indice], nombre=etiqueta)
    exigir(diagnosticar_lista(etiqueta, obtenidos, caso.datos["esperado"][indice]))


def _un_forward_sin_efectos(caso):
    if caso.datos["llamadas"] != 1:
        fallar("forward_repetido", llamadas=caso.datos["llamadas"])
    modelo = caso.datos["modelo"]
    nombres = ["x", "y"] + [f"parámetro {i} del modelo" for i, _ in enumerate(modelo.parameters())]
    for nombre, foto, tensor in zip(nombres, caso.datos["fotos"],
                                    (caso.datos["x"], caso.datos["y"], *modelo.parameters())):
        sin_modificar(nombre, (foto[0], tensor.requires_grad) if "parámetro" in nombre else foto,
                      tensor)


PARTES_DOS_PERDIDAS = [
    Parte("gradientes de la MSE (grads_a)", 0.75, lambda caso: _lista_de_gradientes(caso, 0)),
    Parte("gradientes de la L1 (grads_b)", 0.75, lambda caso: _lista_de_gradientes(caso, 1)),
    Parte("un solo pase hacia adelante; entradas y parámetros intactos", 0.5,
          _un_forward_sin_efectos, requisito=True),
]


def gradientes_por_separado(modelo, x, y):
    """The public oracle: one forward pass per loss."""
    params = list(modelo.parameters())
    with torch.enable_grad():
        a = torch.autograd.grad(torch.nn.functional.mse_loss(modelo(x), y), params)
        b = torch.autograd.grad(torch.nn.functional.l1_loss(modelo(x), y), params)
    return list(a), list(b)


def comprobar_two_loss_grads(two_loss_grads):
    """Public check: one forward, the gradients of each loss on its own."""
    caso = caso_dos_perdidas(two_loss_grads, torch.Generator().manual_seed(2), (5, 3, 4, 2),
                             gradientes_por_separado)
    comprobar(PARTES_DOS_PERDIDAS, caso,
              "Un solo forward y los gradientes de cada pérdida por separado: correcto.")


# ---------------------------------------------------------------- exercise 3: gradient_penalty
def caso_penalizacion(gradient_penalty, generador, forma, esperar, esperar_gradientes=None):
    """Call ``gradient_penalty`` on a fresh (N, D) batch and a D–H–1 model."""
    N, D, H = forma
    modelo = red_pequena(generador, D, H, 1)
    x = torch.randn(N, D, generator=generador, dtype=torch.float64)
    esperado = esperar(modelo, x)
    gradientes = esperar_gradientes(modelo, x) if esperar_gradientes else None
    foto = instantanea(x)
    for p in modelo.parameters():
        p.grad = None
    resultado, error = ejecutar(gradient_penalty, modelo, x)
    return Caso(resultado, error, {
        "modelo": modelo, "x": x, "foto": foto, "esperado": esperado,
        "gradientes": gradientes,
        "grad_poblado": any(p.grad is not None for p in modelo.parameters()),
    })


def _valor_penalizacion(caso):
    comparar("la penalización", caso.resultado, caso.datos["esperado"], rtol=1e-5, atol=1e-8)


def _diferenciable(caso):
    penalizacion = caso.resultado
    if not isinstance(penalizacion, torch.Tensor) or penalizacion.grad_fn is None:
        fallar("sin_grafo", nombre="la penalización")
    parametros = list(caso.datos["modelo"].parameters())
    obtenidos = torch.autograd.grad(penalizacion, parametros, retain_graph=True,
                                    allow_unused=True)
    if caso.datos["gradientes"] is None:
        if all(g is None or not g.any() for g in obtenidos):
            fallar("sin_grafo", nombre="la penalización")
        return
    obtenidos = [torch.zeros_like(p) if g is None else g for g, p in zip(obtenidos, parametros)]
    exigir(diagnosticar_lista("d penalización / d parámetros", obtenidos,
                              caso.datos["gradientes"]))


def _sin_efectos_penalizacion(caso):
    sin_modificar("x", caso.datos["foto"], caso.datos["x"])
    if caso.datos["grad_poblado"]:
        fallar("grad_poblado")


PARTES_PENALIZACION = [
    Parte("valor de la penalización", 1.5, _valor_penalizacion),
    Parte("diferenciable respecto de los parámetros (create_graph=True)", 1.0, _diferenciable),
    Parte("sin efectos secundarios: x intacto, .grad sin tocar", 0.5,
          _sin_efectos_penalizacion, requisito=True),
]


def penalizacion_por_diferencias(modelo, x, h=1e-6):
    """The public oracle: the gradient of the model w.r.t. x by central differences."""
    with torch.no_grad():
        grad_x = torch.zeros_like(x)
        for i in range(x.shape[0]):
            for j in range(x.shape[1]):
                paso = torch.zeros_like(x)
                paso[i, j] = h
                grad_x[i, j] = (modelo(x + paso)[i, 0] - modelo(x - paso)[i, 0]) / (2 * h)
        return ((torch.linalg.vector_norm(grad_x, dim=1) - 1) ** 2).mean()


def comprobar_gradient_penalty(gradient_penalty):
    """Public check: value against finite differences, differentiable, no side effects."""
    caso = caso_penalizacion(gradient_penalty, torch.Generator().manual_seed(3), (4, 3, 6),
                             penalizacion_por_diferencias)
    comprobar(PARTES_PENALIZACION, caso,
              "La penalización coincide con diferencias finitas y se puede derivar.")


PARTES = {
    "ch01_manual_backward": PARTES_MANUAL_BACKWARD,
    "ch01_two_losses": PARTES_DOS_PERDIDAS,
    "ch01_gradient_penalty": PARTES_PENALIZACION,
}
