"""Chapter 1 public checks and the input generators they share with the hidden tests.

Injected into the chapter 1 student notebook by the build. The oracles here are
autograd or finite differences, never the reference implementation, so reading
this code does not give the answer away.
"""

import torch

from autograder.student.compare import (
    comparar,
    ejecutar_pasos,
    fallar,
    instantanea,
    llamar,
    sin_modificar,
)

NOMBRES_PARAMETROS = ("W1", "b1", "W2", "b2")


# ---------------------------------------------------------------- inputs
def datos_red(generador, N, D, H, K, dtype=torch.float64):
    """Inputs of ``manual_backward``: x, y, W1, b1, W2, b2, with some ReLUs dead on purpose."""
    def normal(*forma):
        return torch.randn(*forma, generator=generador, dtype=dtype)

    x, y = normal(N, D), normal(N, K)
    W1, b1, W2, b2 = normal(D, H), normal(H), normal(H, K), normal(K)
    b1[0] = -50.0  # unit 0 is dead for every sample: its gradient must be exactly 0
    return x, y, W1, b1, W2, b2


def factores_red(N, K):
    """Constant factors a wrong MSE derivative typically introduces, with their explanation."""
    return {
        f"N·K = {N * K}, el número de elementos de ŷ: `mse_loss` promedia sobre todos ellos "
        "(¿no dividiste?)": N * K,
        f"K = {K}, el número de salidas: `mse_loss` promedia sobre los N·K elementos, "
        "no solo sobre el lote": K,
        f"N = {N}, el tamaño del lote: la media también recorre las K salidas": N,
    }


def red_pequena(generador, D, H, K, dtype=torch.float64):
    """A small Linear–Tanh–Linear model whose weights come from ``generador``."""
    modelo = torch.nn.Sequential(torch.nn.Linear(D, H), torch.nn.Tanh(), torch.nn.Linear(H, K))
    modelo = modelo.to(dtype)
    with torch.no_grad():
        for p in modelo.parameters():
            p.copy_(torch.randn(p.shape, generator=generador, dtype=dtype))
    return modelo


class ContadorDeLlamadas:
    """Counts forward passes of a module (a forward pre-hook), removable as a context manager."""

    def __init__(self, modulo):
        self.llamadas = 0
        self._gancho = modulo.register_forward_pre_hook(self._contar)

    def _contar(self, modulo, entradas):
        self.llamadas += 1

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._gancho.remove()


# ---------------------------------------------------------------- oracles (autograd, FD)
def _gradientes_autograd(x, y, W1, b1, W2, b2):
    params = [t.detach().clone().requires_grad_(True) for t in (W1, b1, W2, b2)]
    with torch.enable_grad():
        y_hat = torch.relu(x @ params[0] + params[1]) @ params[2] + params[3]
        perdida = torch.nn.functional.mse_loss(y_hat, y)
        gradientes = torch.autograd.grad(perdida, params)
    return dict(zip(NOMBRES_PARAMETROS, gradientes))


def _penalizacion_por_diferencias(modelo, x, h=1e-6):
    """Gradient penalty from central differences of the model's output (float64)."""
    with torch.no_grad():
        grad_x = torch.zeros_like(x)
        for i in range(x.shape[0]):
            for j in range(x.shape[1]):
                paso = torch.zeros_like(x)
                paso[i, j] = h
                grad_x[i, j] = (modelo(x + paso)[i, 0] - modelo(x - paso)[i, 0]) / (2 * h)
        return ((torch.linalg.vector_norm(grad_x, dim=1) - 1) ** 2).mean()


# ---------------------------------------------------------------- shared verifications
def verificar_gradientes_manuales(manual_backward, entradas, esperados, factores):
    """Call ``manual_backward`` under no_grad and compare every gradient; inputs must survive."""
    fotos = [instantanea(t) for t in entradas]
    with torch.no_grad():
        resultado = llamar(manual_backward, *entradas)
    for nombre, foto, tensor in zip(("x", "y", *NOMBRES_PARAMETROS), fotos, entradas):
        sin_modificar(nombre, foto, tensor)
    if not isinstance(resultado, dict):
        fallar("tipo", nombre="el resultado (un dict)", tipo=type(resultado).__name__)
    for nombre in NOMBRES_PARAMETROS:
        comparar(f"grads['{nombre}']", resultado.get(nombre), esperados[nombre], factores)


def verificar_dos_perdidas(two_loss_grads, modelo, x, y, esperados_a, esperados_b):
    """One forward, two lists of gradients; recognises the two classic accumulation slips."""
    fotos = [instantanea(t) for t in (x, y, *modelo.parameters())]
    with ContadorDeLlamadas(modelo) as contador:
        resultado = llamar(two_loss_grads, modelo, x, y)
    for nombre, foto, tensor in zip(("x", "y"), fotos, (x, y)):
        sin_modificar(nombre, foto, tensor)
    for i, (foto, p) in enumerate(zip(fotos[2:], modelo.parameters())):
        sin_modificar(f"parámetro {i} del modelo", (foto[0], p.requires_grad), p)
    if not isinstance(resultado, (tuple, list)) or len(resultado) != 2:
        fallar("tipo", nombre="el resultado (una tupla (grads_a, grads_b))",
               tipo=type(resultado).__name__)
    if contador.llamadas != 1:
        fallar("forward_repetido", llamadas=contador.llamadas)
    sumas = [a + b for a, b in zip(esperados_a, esperados_b)]
    for etiqueta, obtenidos, esperados, acumulado in (
        ("grads_a", resultado[0], esperados_a, "acumulado_sin_clone"),
        ("grads_b", resultado[1], esperados_b, "acumulado_sin_zero"),
    ):
        obtenidos = list(obtenidos)
        if len(obtenidos) != len(esperados):
            fallar("longitud", nombre=etiqueta, longitud=len(obtenidos),
                   longitud_esperada=len(esperados))
        if all(isinstance(g, torch.Tensor) and g.shape == s.shape and torch.allclose(g, s)
               for g, s in zip(obtenidos, sumas)):
            fallar(acumulado, nombre=etiqueta)
        for i, (g, e) in enumerate(zip(obtenidos, esperados)):
            comparar(f"{etiqueta}[{i}]", g, e)


def verificar_penalizacion(gradient_penalty, modelo, x, valor_esperado, grads_esperados=None):
    """Value, differentiability and side effects of ``gradient_penalty``.

    ``grads_esperados`` (d penalty / d parameters) is checked when given.
    """
    foto = instantanea(x)
    for p in modelo.parameters():
        p.grad = None
    penalizacion = llamar(gradient_penalty, modelo, x)
    sin_modificar("x", foto, x)
    if any(p.grad is not None for p in modelo.parameters()):
        fallar("grad_poblado")
    if not isinstance(penalizacion, torch.Tensor):
        fallar("tipo", nombre="la penalización", tipo=type(penalizacion).__name__)
    comparar("la penalización", penalizacion, valor_esperado, rtol=1e-5, atol=1e-8)
    if penalizacion.grad_fn is None:
        fallar("sin_grafo", nombre="la penalización")
    if grads_esperados is not None:
        obtenidos = llamar(torch.autograd.grad, penalizacion, list(modelo.parameters()),
                           materialize_grads=True)
        for i, (g, e) in enumerate(zip(obtenidos, grads_esperados)):
            comparar(f"d penalización / d parámetro {i}", g, e)


# ---------------------------------------------------------------- public checks
def _ok(mensaje):
    print("✓ " + mensaje)


def _paso_red_publica(manual_backward, generador):
    N, D, H, K = 6, 4, 5, 3
    entradas = datos_red(generador, N, D, H, K)
    verificar_gradientes_manuales(manual_backward, entradas, _gradientes_autograd(*entradas),
                                  factores_red(N, K))


def comprobar_manual_backward(manual_backward):
    """Public check: your manual gradients against autograd on one small network."""
    ejecutar_pasos([_paso_red_publica], manual_backward, semilla=1)
    _ok("Tus gradientes coinciden con los de autograd (en este ejemplo pequeño).")


def _paso_dos_perdidas_publico(two_loss_grads, generador):
    modelo = red_pequena(generador, 3, 4, 2)
    x = torch.randn(5, 3, generator=generador, dtype=torch.float64)
    y = torch.randn(5, 2, generator=generador, dtype=torch.float64)
    params = list(modelo.parameters())
    with torch.enable_grad():
        esperados_a = torch.autograd.grad(torch.nn.functional.mse_loss(modelo(x), y), params)
        esperados_b = torch.autograd.grad(torch.nn.functional.l1_loss(modelo(x), y), params)
    verificar_dos_perdidas(two_loss_grads, modelo, x, y, esperados_a, esperados_b)


def comprobar_two_loss_grads(two_loss_grads):
    """Public check: one forward, the gradients of each loss on its own."""
    ejecutar_pasos([_paso_dos_perdidas_publico], two_loss_grads, semilla=2)
    _ok("Un solo forward y los gradientes de cada pérdida por separado: correcto.")


def _paso_penalizacion_publico(gradient_penalty, generador):
    modelo = red_pequena(generador, 3, 6, 1)
    x = torch.randn(4, 3, generator=generador, dtype=torch.float64)
    verificar_penalizacion(gradient_penalty, modelo, x, _penalizacion_por_diferencias(modelo, x))


def comprobar_gradient_penalty(gradient_penalty):
    """Public check: value against finite differences, differentiable, no side effects."""
    ejecutar_pasos([_paso_penalizacion_publico], gradient_penalty, semilla=3)
    _ok("La penalización coincide con diferencias finitas y se puede derivar.")


PASOS_PUBLICOS = {
    "ch01_manual_backward": [_paso_red_publica],
    "ch01_two_losses": [_paso_dos_perdidas_publico],
    "ch01_gradient_penalty": [_paso_penalizacion_publico],
}
