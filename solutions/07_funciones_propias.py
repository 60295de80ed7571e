# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Capítulo 7 · Funciones autograd propias
#
# Autograd sabe derivar cada operación de PyTorch. A veces quieres decidir tú cómo se deriva
# algo: porque la fórmula automática desborda, porque la operación no tiene derivada útil
# (un redondeo), o porque quieres controlar qué se guarda en memoria para el pase hacia
# atrás (*backward pass*). Para eso está `torch.autograd.Function`: una función autograd
# propia (*custom autograd Function*) con tu `forward` y tu `backward`.
#
# **Al terminar sabrás:**
#
# - escribir una `Function` con `forward(ctx, ...)`, `backward(ctx, grad_output)`,
#   `ctx.save_for_backward` / `ctx.saved_tensors`, y usarla con `.apply`;
# - devolver un gradiente (*gradient*) por entrada (`None` para lo que no es un tensor) y
#   consultar `ctx.needs_input_grad`;
# - comprobar un `backward` con `torch.autograd.gradcheck` y `gradgradcheck` en float64, y
#   por qué un `backward` equivocado no da error: entrena peor, en silencio;
# - escribir un estimador de paso directo (*straight-through estimator*) para el redondeo,
#   y usar el mismo truco con `argmax` (el Gumbel-softmax *hard*);
# - cambiar memoria por cómputo con el recálculo de activaciones (*gradient
#   checkpointing*) de `torch.utils.checkpoint`, medir cuánto de cada cosa, y escribirlo
#   tú como una `Function` que recalcula en el pase hacia atrás;
# - ver qué captura `torch.compile` de un cálculo con gradientes (el grafo del pase hacia
#   atrás incluido), qué corta su grafo y qué pasa con tus `Function` y tus ganchos.
#
# Necesitas el capítulo 1: el grafo, `grad_fn` y la regla de la cadena (*chain rule*).

# %%
import contextlib
import time
import warnings

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)

# %% [markdown]
# ## 1 · Anatomía de una `Function`
#
# Una `Function` es una clase con dos métodos estáticos. `forward` hace el pase hacia
# adelante (*forward pass*): calcula la salida y anota en `ctx` (el contexto) lo que el pase
# hacia atrás va a necesitar. `backward` recibe `grad_output`, el gradiente de la pérdida
# (*loss*) respecto de la salida, y devuelve el gradiente respecto de cada entrada: la regla
# de la cadena, un eslabón.
#
# El ejemplo más corto: $f(x) = x^3$, cuya derivada local (*local derivative*) es $3x^2$.

# %% tags=["demo"]
class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)  # el pase hacia atrás necesita x para calcular 3x²
        return x**3

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * 3 * x**2


# %% [markdown]
# No se llama a `forward` directamente: se usa `Cube.apply(x)`. `apply` ejecuta `forward`
# y cuelga del resultado un nodo del grafo, `CubeBackward`, que llamará a tu `backward`.

# %% tags=["demo"]
x = torch.tensor([-1.0, 0.5, 2.0], requires_grad=True)
y = Cube.apply(x)
print("y =", y)
print("grad_fn:", type(y.grad_fn).__name__)

y.sum().backward()
print("x.grad =", x.grad, "   3x² =", 3 * x.detach() ** 2)

# %% [markdown]
# Para ver quién llama a quién y cuándo, una `Function` chismosa que imprime lo que recibe.
# Fíjate en dos cosas: `forward` se ejecuta sin registrar grafo (`torch.is_grad_enabled()`
# es `False` dentro), y `backward` solo se ejecuta cuando llamas a `.backward()`.

# %% tags=["demo"]
class Nosy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        print(f"  forward:  recibe {x.tolist()}, ¿registra grafo? {torch.is_grad_enabled()}")
        return 2 * x

    @staticmethod
    def backward(ctx, grad_output):
        print(f"  backward: grad_output = {grad_output.tolist()}")
        return 2 * grad_output


x = torch.tensor([1.0, 3.0], requires_grad=True)
print("apply:")
y = Nosy.apply(x)
print("pérdida = (y · [10, 100]).sum(); backward:")
(y * torch.tensor([10.0, 100.0])).sum().backward()
print("x.grad =", x.grad)

# %% [markdown]
# `grad_output` vale `[10, 100]`: es $\partial L/\partial y$, lo que llega desde arriba.
# `backward` lo multiplica por la derivada local (2) y lo pasa hacia abajo.
#
# Los métodos son estáticos porque la clase no se instancia. Si la llamas como un objeto,
# PyTorch se niega (y avisa de que instanciarla está obsoleto):

# %% tags=["demo"]
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    with muestra_error(RuntimeError):
        Cube()(torch.ones(2, requires_grad=True))
for warning_text in caught:
    print(f"aviso ({warning_text.category.__name__}): {str(warning_text.message)[:90]}...")

# %% [markdown]
# ## 2 · Un gradiente por entrada
#
# `backward` devuelve **un valor por cada argumento de `forward`** (sin contar `ctx`), en el
# mismo orden. Para un argumento que no es un tensor (un exponente entero, una escala de
# tipo `float`), ese valor es `None`.

# %% tags=["demo"]
class Power(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, n):
        ctx.save_for_backward(x)
        ctx.n = n  # no es un tensor: basta un atributo normal
        return x**n

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * ctx.n * x ** (ctx.n - 1), None  # None: n no tiene gradiente


x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
Power.apply(x, 4).sum().backward()
print("x.grad =", x.grad, "   4x³ =", 4 * x.detach() ** 3)

# %% [markdown]
# Si olvidas el `None`, el error no llega en el `forward` sino en el `backward`, cuando el
# motor de autograd cuenta lo que devolviste:

# %% tags=["demo"]
class PowerWithoutNone(Power):
    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * ctx.n * x ** (ctx.n - 1)  # un valor para dos entradas


y = PowerWithoutNone.apply(torch.tensor([1.0, 2.0], requires_grad=True), 3)
with muestra_error(RuntimeError):
    y.sum().backward()

# %% [markdown]
# No siempre hacen falta todos los gradientes. Los datos de entrada, por ejemplo, no
# requieren gradiente. `ctx.needs_input_grad` es una tupla de booleanos, uno por entrada,
# que te dice cuáles necesitan uno. Lo que no se necesita no se calcula: se devuelve `None`.

# %% tags=["demo"]
class Product(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a @ b

    @staticmethod
    def backward(ctx, grad_output):
        a, b = ctx.saved_tensors
        print("  needs_input_grad =", ctx.needs_input_grad)
        grad_a = grad_output @ b.T if ctx.needs_input_grad[0] else None
        grad_b = a.T @ grad_output if ctx.needs_input_grad[1] else None
        print("  calculados:", ["a" if grad_a is not None else "-", "b" if grad_b is not None
                                else "-"])
        return grad_a, grad_b


data = torch.randn(4, 3)  # data: no requires_grad
weights = torch.randn(3, 2, requires_grad=True)
Product.apply(data, weights).sum().backward()
print("weights.grad tiene forma", tuple(weights.grad.shape))

# %% [markdown]
# En una red, el gradiente respecto de la entrada de la primera capa no lo usa nadie. Con
# `needs_input_grad` te ahorras ese producto de matrices en cada paso.

# %% [markdown]
# ## 3 · Qué se guarda, y cómo
#
# Lo que pasas a `ctx.save_for_backward` queda vivo hasta el pase hacia atrás. Puedes
# mirarlo en el nodo: `y.grad_fn` **es** el `ctx` de esa llamada.

# %% tags=["demo"]
x = torch.tensor([1.0, 2.0], requires_grad=True)
y = Cube.apply(x)
print("saved_tensors:", y.grad_fn.saved_tensors)

# %% [markdown]
# Tras el `backward`, PyTorch libera lo guardado. Pedirlo otra vez falla: es el mismo motivo
# por el que un segundo `backward` necesita `retain_graph=True` (capítulo 1).

# %% tags=["demo"]
y.sum().backward()
with muestra_error(RuntimeError):
    y.grad_fn.saved_tensors

# %% [markdown]
# ¿Por qué `save_for_backward` y no un atributo cualquiera como `ctx.x = x`? Porque
# `save_for_backward` vigila los tensores. Si alguien modifica `x` en el sitio (*in place*)
# entre el pase hacia adelante y el pase hacia atrás, el gradiente sería incorrecto; con
# `save_for_backward`, PyTorch lo detecta y lo dice:

# %% tags=["demo"]
x = torch.tensor([1.0, 2.0], requires_grad=True)
h = x * 1  # un tensor intermedio que Cube guarda
y = Cube.apply(h)
h.mul_(10)  # modificado después del pase hacia adelante
with muestra_error(RuntimeError):
    y.sum().backward()

# %% [markdown]
# Con un atributo, nadie vigila. El mismo cálculo termina sin error y con un gradiente
# 100 veces mayor que el correcto ($3x^2$ con la $x$ ya multiplicada por 10):

# %% tags=["demo"]
class CubeAttribute(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.x = x  # sin vigilar: un cambio in-place pasa desapercibido
        return x**3

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * 3 * ctx.x**2


x = torch.tensor([1.0, 2.0], requires_grad=True)
h = x * 1
y = CubeAttribute.apply(h)
h.mul_(10)
y.sum().backward()
print("gradiente obtenido:", x.grad, "   correcto (3x²):", 3 * torch.tensor([1.0, 2.0]) ** 2)

# %% [markdown]
# Guardar la **salida** como atributo tiene otro problema: crea un ciclo de referencias
# (la salida apunta a su nodo, `grad_fn`, y el nodo, que es `ctx`, apunta a la salida). Al
# borrar la salida, la memoria no se libera hasta que pasa el recolector de ciclos de
# Python. Con `save_for_backward`, PyTorch rompe el ciclo. Un `weakref` dice si el tensor
# sigue vivo:

# %% tags=["demo"]
import gc
import weakref


class CubeOutputAttribute(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        out = x**3
        ctx.salida = out  # la salida como atributo: un ciclo de referencias
        return out

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * 3 * ctx.salida ** (2 / 3)


class CubeSavedOutput(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        out = x**3
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        (out,) = ctx.saved_tensors
        return grad_output * 3 * out ** (2 / 3)


for cls in (CubeOutputAttribute, CubeSavedOutput):
    gc.collect()
    reference = weakref.ref(cls.apply(torch.ones(1000, requires_grad=True)))
    alive_after_del = reference() is not None
    gc.collect()
    print(f"{cls.__name__:>18}: ¿sigue en memoria tras borrarla? {alive_after_del} · "
          f"¿y tras gc.collect()? {reference() is not None}")

# %% [markdown]
# Regla: los tensores van en `save_for_backward`; como atributo solo van valores que no son
# tensores.
#
# Lo guardado es memoria que ocupa cada capa hasta el pase hacia atrás. `medir_guardado` (de la
# celda de utilidades, la del capítulo 1) la cuenta con `saved_tensors_hooks`, que llama a una
# función tuya cada vez que algo se guarda. Compara una tanh
# que guarda entrada y salida con otra que guarda solo la salida
# ($\tanh'(z) = 1 - \tanh^2 z$, así que la salida basta).

# %% tags=["demo"]
class TanhSavesAll(torch.autograd.Function):
    @staticmethod
    def forward(ctx, z):
        out = torch.tanh(z)
        ctx.save_for_backward(z, out)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        z, out = ctx.saved_tensors
        return grad_output * (1 - out**2)


class TanhSavesOutput(torch.autograd.Function):
    @staticmethod
    def forward(ctx, z):
        out = torch.tanh(z)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        (out,) = ctx.saved_tensors
        return grad_output * (1 - out**2)


z = torch.randn(256, 1024, requires_grad=True)
for cls in (TanhSavesAll, TanhSavesOutput):
    saved, _ = medir_guardado(lambda cls=cls: cls.apply(z))
    print(f"{cls.__name__:>17}: guarda {saved / 2**20:.1f} MiB")

# %% [markdown]
# ## 4 · `gradcheck`: ¿es tu `backward` la derivada de tu `forward`?
#
# PyTorch no puede saber si tu `backward` es correcto: lo usa tal cual. La verificación de
# gradientes (*gradient check*) `torch.autograd.gradcheck` lo compara con diferencias
# finitas, entrada por entrada. Hazlo siempre en **float64**: en float32 el redondeo de las
# diferencias finitas es mayor que la tolerancia y hasta un `backward` correcto suspende.

# %% tags=["demo"]
x64 = torch.randn(5, dtype=torch.float64, requires_grad=True)
print("gradcheck(Cube) en float64:", torch.autograd.gradcheck(Cube.apply, (x64,)))

x32 = x64.detach().float().requires_grad_(True)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    result = torch.autograd.gradcheck(Cube.apply, (x32,), raise_exception=False)
print("gradcheck(Cube) en float32:", result)
for warning_text in caught:
    print("  aviso:", str(warning_text.message)[:100], "...")

# %% [markdown]
# Un `backward` con un error (aquí, $3x$ en lugar de $3x^2$) no suspende nada por sí solo.
# `gradcheck` sí lo detecta, y su mensaje empieza por el desacuerdo entre el jacobiano
# numérico y el analítico:

# %% tags=["demo"]
class BadCube(Cube):
    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * 3 * x  # mal: la derivada de x³ es 3x²


with muestra_error(RuntimeError):
    torch.autograd.gradcheck(BadCube.apply, (x64,))

# %% [markdown]
# `gradgradcheck` va un paso más allá: comprueba las segundas derivadas, las que necesitas
# con `create_graph=True` (capítulo 1). El `backward` de `Cube` usa operaciones de PyTorch
# sobre tensores guardados, así que es derivable a su vez. Uno que corta el grafo con
# `.detach()` da bien el gradiente, pero no su derivada:

# %% tags=["demo"]
class OpaqueCube(Cube):
    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * 3 * x.detach() ** 2  # valor correcto, pero no derivable


for cls in (Cube, OpaqueCube):
    first = torch.autograd.gradcheck(cls.apply, (x64,), raise_exception=False)
    second = torch.autograd.gradgradcheck(cls.apply, (x64,), raise_exception=False)
    print(f"{cls.__name__:>9}: gradcheck {first!s:<5}  gradgradcheck {second}")

# %% [markdown]
# ### Un `backward` equivocado entrena, pero peor
#
# Lo peligroso de un `backward` incorrecto es que no falla. Tomemos la activación SiLU,
# $f(z) = z\,\sigma(z)$, cuya derivada es $\sigma(z)\,(1 + z(1 - \sigma(z)))$. Un error
# típico es olvidar la regla del producto y quedarse con $\sigma(z)$.

# %% tags=["demo"]
class SiLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, z):
        ctx.save_for_backward(z)
        return z * torch.sigmoid(z)

    @staticmethod
    def backward(ctx, grad_output):
        (z,) = ctx.saved_tensors
        s = torch.sigmoid(z)
        return grad_output * s * (1 + z * (1 - s))


class BadSiLU(SiLU):
    @staticmethod
    def backward(ctx, grad_output):
        (z,) = ctx.saved_tensors
        return grad_output * torch.sigmoid(z)  # olvidó la regla del producto


# %% [markdown]
# Entrenamos la misma red pequeña, desde los mismos pesos iniciales, para ajustar
# $\sin(2x)$ con cada versión. Las dos pérdidas bajan; ningún error avisa.

# %% tags=["demo"]
import matplotlib.pyplot as plt

x_net = torch.linspace(-3, 3, 64).unsqueeze(1)
y_net = torch.sin(2 * x_net)


def train(activation, steps=300):
    torch.manual_seed(0)
    layer1, layer2 = torch.nn.Linear(1, 32), torch.nn.Linear(32, 1)
    optimizer = torch.optim.Adam([*layer1.parameters(), *layer2.parameters()], lr=0.01)
    history = []
    for _ in range(steps):
        loss = F.mse_loss(layer2(activation.apply(layer1(x_net))), y_net)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        history.append(loss.item())
    return history


histories = {cls.__name__: train(cls) for cls in (SiLU, BadSiLU)}
for name, history in histories.items():
    print(f"{name:>7}: pérdida inicial {history[0]:.4f} → final {history[-1]:.4f}")

plt.figure(figsize=(7, 3))
for (name, history), style in zip(histories.items(), ("-", "--")):
    plt.plot(history, style, label=name)
plt.yscale("log")
plt.xlabel("paso")
plt.ylabel("pérdida (MSE)")
plt.title("La misma red con un backward correcto y uno equivocado")
plt.legend()
plt.tight_layout()
plt.show()

# %% [markdown]
# La versión equivocada acaba con una pérdida varias veces mayor, y nada en el entrenamiento
# lo señala. `gradcheck` lo habría dicho en una línea:

# %% tags=["demo"]
z64 = torch.randn(6, dtype=torch.float64, requires_grad=True)
for cls in (SiLU, BadSiLU):
    print(f"{cls.__name__:>7}: gradcheck",
          torch.autograd.gradcheck(cls.apply, (z64,), raise_exception=False))

# %% [markdown]
# ## Ejercicio 1 · Softplus estable con `backward` analítico (2 puntos)
#
# La función softplus es una versión suave de la ReLU:
# $\mathrm{softplus}_\beta(x) = \frac{1}{\beta}\log(1 + e^{\beta x})$. Escrita tal cual,
# $e^{\beta x}$ desborda (*overflow*) en cuanto $\beta x$ pasa de unos 709 en float64, o de
# 88 en float32:

# %% tags=["demo"]
z = torch.tensor([1.0, 50.0, 100.0, 1000.0], dtype=torch.float64)
print("log(1 + exp(z)), float64:", torch.log(1 + torch.exp(z)))
print("exp(709), exp(710) en float64:", torch.exp(torch.tensor([709.0, 710.0],
                                                                dtype=torch.float64)).tolist())
print("exp(88), exp(89) en float32:", torch.exp(torch.tensor([88.0, 89.0])).tolist())

# %% [markdown]
# Como $\log(1 + e^{z}) = \max(z, 0) + \log(1 + e^{-|z|})$, se puede calcular sin
# exponenciar nunca un número positivo (`torch.log1p(t)` calcula $\log(1 + t)$ con precisión
# cuando $t$ es pequeño). Su derivada respecto de $x$ es la sigmoide,
# $\sigma(\beta x) = 1 / (1 + e^{-\beta x})$.
#
# Escribe `stable_softplus(x, beta)` como una `torch.autograd.Function` tuya: un `forward`
# que no desborde y un `backward` analítico (sin dejar que autograd derive tus operaciones).
# `beta` es un `float`: no tiene gradiente. La comprobación usa `gradcheck` en float64 y
# compara con autograd sobre `torch.logaddexp`, también con $|\beta x|$ enorme.

# %% exercise="stable_softplus"
def stable_softplus(x, beta):
    """Softplus estable, log(1 + e^(beta·x)) / beta, con una `torch.autograd.Function` tuya:
    un `forward` que no desborda y un `backward` analítico.

    <contrato>
    """
    ### BEGIN SOLUTION
    class Softplus(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, beta):
            z = beta * x
            ctx.save_for_backward(x)
            ctx.beta = beta
            return (torch.clamp(z, min=0) + torch.log1p(torch.exp(-z.abs()))) / beta

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return grad_output * torch.sigmoid(ctx.beta * x), None

    return Softplus.apply(x, beta)
    ### END SOLUTION


# %% test="stable_softplus"


# %% [markdown]
# ## 5 · El estimador de paso directo
#
# Redondear no tiene derivada útil: es una escalera, plana en casi todas partes. Autograd
# es honesto y devuelve un gradiente **cero**. Un modelo cuantizado (pesos redondeados a
# unos pocos niveles) no podría aprender nada.

# %% tags=["demo"]
x = torch.tensor([0.2, 0.7, 1.4, -0.6], requires_grad=True)
torch.round(x).sum().backward()
print("gradiente a través de torch.round:", x.grad)

# %% [markdown]
# El estimador de paso directo hace trampa a propósito: su `forward` redondea y su
# `backward` hace como si la operación fuera la identidad y deja pasar `grad_output` tal
# cual.
# Con una `Function` es inmediato:

# %% tags=["demo"]
class RoundSTE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return torch.round(x)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output  # como si round fuera la identidad


x = torch.tensor([0.2, 0.7, 1.4, -0.6], requires_grad=True)
RoundSTE.apply(x).sum().backward()
print("gradiente con paso directo:", x.grad)

# %% [markdown]
# Sin `Function` también se puede: `x + (torch.round(x) - x).detach()` vale `round(x)` en
# el pase hacia adelante, pero el término con `.detach()` no cuenta para el gradiente y solo
# queda el de `x`. Los dos caminos dan lo mismo:

# %% tags=["demo"]
x = torch.tensor([0.2, 0.7, 1.4, -0.6], requires_grad=True)
y = x + (torch.round(x) - x).detach()
y.sum().backward()
print("valores:", y.detach(), "  gradiente:", x.grad)

# %% [markdown]
# ¿Sirve de algo un gradiente «falso»? Aprendamos un único peso `w` cuantizado a pasos de
# 0,25 para ajustar $y = 1{,}3\,x$. Con el redondeo de autograd, `w` no se mueve nunca; con
# el paso directo, llega al nivel más cercano a 1,3.

# %% tags=["demo"]
x_c = torch.linspace(-2, 2, 32)
y_c = 1.3 * x_c


def quantize(w, step, straight_through):
    if straight_through:
        return step * RoundSTE.apply(w / step)
    return step * torch.round(w / step)


curves = {}
for straight_through in (False, True):
    w = torch.tensor(0.1, requires_grad=True)
    optimizer = torch.optim.SGD([w], lr=0.05)
    weights_used = []
    for _ in range(60):
        w_q = quantize(w, 0.25, straight_through)
        loss = F.mse_loss(w_q * x_c, y_c)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        weights_used.append(w_q.item())
    curves["paso directo" if straight_through else "torch.round"] = weights_used
    print(f"{'paso directo' if straight_through else 'torch.round':>12}: peso cuantizado final "
          f"{weights_used[-1]:.2f}")

plt.figure(figsize=(7, 3))
for (name, weights_used), style in zip(curves.items(), ("--", "-")):
    plt.step(range(len(weights_used)), weights_used, style, where="post", label=name)
plt.axhline(1.3, color="gray", lw=0.5, label="objetivo 1,3")
plt.xlabel("paso")
plt.ylabel("peso cuantizado")
plt.legend()
plt.tight_layout()
plt.show()

# %% [markdown]
# El peso llega a 1,25 y a ratos salta a 1,5: el peso real (sin cuantizar) ronda la frontera
# entre los dos niveles y el gradiente lo empuja de un lado a otro. Esa oscilación es típica
# del paso directo.
#
# Un cuantizador real además recorta (*clips*) a un rango: con `levels` niveles a cada lado
# del cero y separación `step`, los valores van de $-\text{levels}\cdot\text{step}$ a
# $+\text{levels}\cdot\text{step}$. Fuera de ese rango la salida es constante, así que ahí
# el estimador deja el gradiente a 0: solo pasa donde $|x| \le \text{levels}\cdot\text{step}$.
#
# Mueve los deslizadores para ver la escalera (lo que devuelve `forward`) y el gradiente
# del paso directo (lo que devuelve `backward` con `grad_output` = 1).

# %% tags=["demo"]
import ipywidgets as widgets
from IPython.display import display


def plot_quantizer(step, levels):
    x = torch.linspace(-2, 2, 801)
    limit = levels * step
    staircase = torch.round(x.clamp(-limit, limit) / step) * step
    grad = (x.abs() <= limit).float()
    fig, (ax_f, ax_g) = plt.subplots(1, 2, figsize=(9, 3))
    ax_f.plot(x, x, ":", color="gray", label="identidad")
    ax_f.plot(x, staircase, label="cuantizado")
    ax_f.set_title(f"forward: {2 * levels + 1} valores posibles")
    ax_f.set_ylabel("salida")
    ax_f.legend()
    ax_g.plot(x, grad, color="tab:orange")
    ax_g.set_ylim(-0.1, 1.1)
    ax_g.set_title("backward: gradiente de paso directo")
    ax_g.set_ylabel("∂salida/∂x")
    for ax in (ax_f, ax_g):
        ax.set_xlabel("x")
    plt.tight_layout()
    plt.show()


step_slider = widgets.FloatSlider(value=0.25, min=0.05, max=0.5, step=0.05,
                                      description="step")
levels_slider = widgets.IntSlider(value=4, min=1, max=8, description="levels")
widget_out = widgets.Output()


def update(_change=None):
    with widget_out:
        widget_out.clear_output(wait=True)
        plot_quantizer(step_slider.value, levels_slider.value)


step_slider.observe(update, names="value")
levels_slider.observe(update, names="value")
update()
display(widgets.VBox([widgets.HBox([step_slider, levels_slider]), widget_out]))

# %% [markdown]
# ### El paso directo para `argmax`
#
# El redondeo no es la única operación sin derivada útil. `argmax` elige un índice, y su
# versión one-hot (un 1 en la clase ganadora, 0 en las demás) es constante a trozos: su
# derivada verdadera es 0 en casi todas partes, y no existe donde dos logits empatan. Un
# gradiente así no dice qué logit habría que subir. Autograd ni lo intenta: `argmax`
# devuelve enteros, y el one-hot sale sin grafo.

# %% tags=["demo"]
logits = torch.tensor([1.0, 3.0, 0.5, 2.0], requires_grad=True)
index = logits.argmax()
print("argmax:", index, "  grad_fn:", index.grad_fn)
print("one-hot:", F.one_hot(index, num_classes=4),
      "  requires_grad:", F.one_hot(index, num_classes=4).requires_grad)

# %% [markdown]
# El truco de `.detach()` de arriba sirve igual, con el softmax como sustituto en el pase
# hacia atrás: en el pase hacia adelante, el one-hot del argmax (`y_hard`); en el pase
# hacia atrás, el gradiente del softmax (`y_soft`):
#
# ```python
# y = y_hard - y_soft.detach() + y_soft
# ```
#
# En el valor, `- y_soft.detach()` y `+ y_soft` se anulan y queda `y_hard`. En el grafo,
# `y_hard` y el término con `.detach()` no tienen historia: el gradiente solo pasa por
# `y_soft`. Compruébalo con una pérdida cualquiera, $\sum_i y_i\,c_i$:

# %% tags=["demo"]
costs = torch.tensor([0.3, -1.0, 2.0, 0.5])  # una pérdida cualquiera: (y * costs).sum()
y_soft = logits.softmax(dim=-1)
y_hard = F.one_hot(y_soft.argmax(dim=-1), num_classes=4).to(y_soft.dtype)
y = y_hard - y_soft.detach() + y_soft
print("pase hacia adelante:", y.detach(), "  ¿es y_hard?", torch.equal(y.detach(), y_hard))

(grad_soft,) = torch.autograd.grad((y_soft * costs).sum(), logits, retain_graph=True)
(grad_straight,) = torch.autograd.grad((y * costs).sum(), logits)
print("gradiente con paso directo:", grad_straight)
print("gradiente del softmax:     ", grad_soft)
print("¿iguales?", torch.equal(grad_straight, grad_soft))

# %% [markdown]
# Es el truco *hard* del Gumbel-softmax: `F.gumbel_softmax(logits, tau, hard=True)` suma
# a los logits un ruido de Gumbel (muestrear así el argmax equivale a muestrear una clase
# con las probabilidades del softmax), divide por la temperatura `tau` y hace exactamente
# esto. Con el mismo ruido (la misma semilla), su salida es one-hot y su gradiente es el
# de la versión suave, `hard=False`:

# %% tags=["demo"]
with torch.random.fork_rng():  # la semilla de esta celda no cambia el azar de las demás
    torch.manual_seed(0)
    y_gumbel_hard = F.gumbel_softmax(logits, tau=1.0, hard=True)
    torch.manual_seed(0)
    y_gumbel_soft = F.gumbel_softmax(logits, tau=1.0, hard=False)
(grad_hard,) = torch.autograd.grad((y_gumbel_hard * costs).sum(), logits)
(grad_soft,) = torch.autograd.grad((y_gumbel_soft * costs).sum(), logits)
print("hard=True: ", y_gumbel_hard.detach())
print("hard=False:", y_gumbel_soft.detach())
print("¿mismo gradiente?", torch.equal(grad_hard, grad_soft))

# %% [markdown]
# ## Ejercicio 2 · Cuantizador con paso directo (2,5 puntos)
#
# Escribe `quantize_ste(x, step, levels)`:
#
# - pase hacia adelante: recorta `x` a
#   $[-\text{levels}\cdot\text{step},\ \text{levels}\cdot\text{step}]$ y redondea al múltiplo
#   de `step` más cercano;
# - pase hacia atrás: `grad_output` donde $|x| \le \text{levels}\cdot\text{step}$ y 0 fuera.
#
# `step` es un `float` y `levels` un `int`: ninguno tiene gradiente. Puedes usar una
# `Function` o el truco de `.detach()`; no modifiques `x` ni `grad_output` en el sitio.

# %% exercise="quantize_ste"
def quantize_ste(x, step, levels):
    """Cuantización simulada con gradiente de paso directo (*straight-through*): recorta
    ``x`` a ±levels·step, lo redondea a la rejilla de ``step`` y deja pasar el gradiente
    dentro del rango.

    <contrato>
    """
    ### BEGIN SOLUTION
    class QuantizeSTE(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, step, levels):
            limit = levels * step
            ctx.save_for_backward(x.abs() <= limit)
            return torch.round(torch.clamp(x, -limit, limit) / step) * step

        @staticmethod
        def backward(ctx, grad_output):
            (inside,) = ctx.saved_tensors
            return grad_output * inside, None, None

    return QuantizeSTE.apply(x, step, levels)
    ### END SOLUTION


# %% test="quantize_ste"


# %% [markdown]
# ## Ejercicio 3 · Lineal + tanh que guarda solo lo necesario (3 puntos)
#
# Una capa densa con activación, $y = \tanh(xW^\top + b)$, fundida en una sola `Function`:
# la idea de la sección 3 (guardar solo lo que `backward` usa) aplicada a una capa entera.
# Con $g = \partial L/\partial y$ y $z = xW^\top + b$, la regla de la cadena da
#
# $$\frac{\partial L}{\partial z} = g \odot (1 - y^2),\quad
# \frac{\partial L}{\partial x} = \frac{\partial L}{\partial z} W,\quad
# \frac{\partial L}{\partial W} = \Big(\frac{\partial L}{\partial z}\Big)^{\!\top} x,\quad
# \frac{\partial L}{\partial b} = \sum_n \frac{\partial L}{\partial z_n}$$
#
# Mira qué usa cada fórmula: `x`, `W` y la salida `y`. El sesgo `b` no aparece, y la
# preactivación `z` no hace falta si guardas `y`. Escribe `linear_tanh(x, weight, bias)`
# con estas condiciones:
#
# - guarda con `ctx.save_for_backward` solo lo necesario (como mucho tantos números como
#   `x`, `weight` y la salida juntos) y ningún tensor como atributo de `ctx`;
# - usa `ctx.needs_input_grad`: para una entrada que no requiere gradiente (por ejemplo
#   `x`, si son los datos), `backward` devuelve `None` sin calcular nada.
#
# La comprobación mira qué guardó tu `ctx` y qué devuelve tu `backward` cuando `x` no
# requiere gradiente.

# %% exercise="linear_tanh"
def linear_tanh(x, weight, bias):
    """Capa densa con tanh, tanh(x · weightᵀ + bias), con una `torch.autograd.Function` tuya
    que guarda solo lo necesario y respeta ``ctx.needs_input_grad``.

    <contrato>
    """
    ### BEGIN SOLUTION
    class LinearTanh(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, weight, bias):
            y = torch.tanh(x @ weight.T + bias)
            ctx.save_for_backward(x, weight, y)
            return y

        @staticmethod
        def backward(ctx, grad_output):
            x, weight, y = ctx.saved_tensors
            grad_z = grad_output * (1 - y**2)
            grad_x = grad_z @ weight if ctx.needs_input_grad[0] else None
            grad_weight = grad_z.T @ x if ctx.needs_input_grad[1] else None
            grad_bias = grad_z.sum(dim=0) if ctx.needs_input_grad[2] else None
            return grad_x, grad_weight, grad_bias

    return LinearTanh.apply(x, weight, bias)
    ### END SOLUTION


# %% test="linear_tanh"


# %% [markdown]
# ## 6 · Recálculo de activaciones: memoria a cambio de cómputo
#
# Cada capa guarda activaciones para el pase hacia atrás, y esa memoria crece con la
# profundidad y con el tamaño del lote (*batch*). El recálculo de activaciones (*gradient
# checkpointing*) guarda solo la entrada de un tramo de la red; en el pase hacia atrás
# vuelve a ejecutar el pase hacia adelante de ese tramo para reconstruir lo que falta. Por
# dentro es la misma idea de este capítulo: un `forward` que guarda poco y un `backward`
# que recalcula.
#
# `torch.utils.checkpoint.checkpoint(segment, inputs, use_reentrant=False)` lo hace por ti.
# Pasa siempre `use_reentrant` de forma explícita: omitirlo produce un aviso que anuncia que
# dejará de funcionar (de la 2.4 a la 2.13, todavía funciona). Esta celda muestra lo que
# hace tu versión:

# %% tags=["demo"]
layer = torch.nn.Linear(4, 4)
inputs = torch.randn(2, 4, requires_grad=True)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    try:
        checkpoint(layer, inputs)
        print("sin use_reentrant: funciona;", len(caught), "aviso(s)")
    except Exception as error:  # noqa: BLE001 - newer versions may refuse outright
        print("sin use_reentrant: error:", type(error).__name__)
for warning_text in caught:
    print("  aviso:", str(warning_text.message)[:110], "...")

# %% [markdown]
# Una red de 8 bloques (lineal + GELU). `forward_blocks(x, segments)` la recorre partida en
# `segments` tramos con recálculo cada uno (`segments=0`: sin recálculo). Un gancho (*hook*)
# en cada capa cuenta cuántas veces se ejecuta: las lineales son el cálculo caro de cada
# bloque.

# %% tags=["demo"]
torch.manual_seed(0)
WIDTH, BATCH, BLOCKS = 256, 128, 8
net = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(WIDTH, WIDTH),
                                                torch.nn.GELU()) for _ in range(BLOCKS)])
x_blocks = torch.randn(BATCH, WIDTH)
linears_run, gelus_run = [], []
for block in net:
    block[0].register_forward_hook(lambda module, inputs, out: linears_run.append(1))
    block[1].register_forward_hook(lambda module, inputs, out: gelus_run.append(1))


def forward_blocks(x, segments):
    if segments == 0:
        return net(x)
    length = BLOCKS // segments
    for start in range(0, BLOCKS, length):
        x = checkpoint(net[start:start + length], x, use_reentrant=False)
    return x


# %% [markdown]
# Primero lo esencial: los gradientes son los mismos con y sin recálculo.

# %% tags=["demo"]
def grads_for(segments):
    net.zero_grad()
    forward_blocks(x_blocks, segments).pow(2).mean().backward()
    return [p.grad.clone() for p in net.parameters()]


equal = all(torch.allclose(a, b) for a, b in zip(grads_for(0), grads_for(2)))
print("¿mismos gradientes con y sin recálculo?", equal)

# %% [markdown]
# Ahora medimos, para cada número de tramos, tres cosas: los bytes de activaciones que
# quedan guardados entre el pase hacia adelante y el pase hacia atrás (con
# `medir_guardado`, sin contar los pesos), cuántas capas se ejecutan en un paso, y el
# tiempo de un paso hacia adelante y atrás (el mínimo de varias repeticiones, con un solo
# hilo para que la medida sea estable).

# %% tags=["demo"]
def measure(segments, repeats=5):
    net.zero_grad()
    saved, out = medir_guardado(lambda: forward_blocks(x_blocks, segments),
                               excluir=list(net.parameters()))
    linears_run.clear()
    gelus_run.clear()
    out.sum().backward()
    recomputed = (len(linears_run), len(gelus_run))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        forward_blocks(x_blocks, segments).sum().backward()
        times.append(time.perf_counter() - start)
    return (saved / 2**20, BLOCKS + recomputed[0], BLOCKS + recomputed[1],
            1000 * min(times))


threads = torch.get_num_threads()
torch.set_num_threads(1)
measure(0)  # warm-up
SEGMENTS = (0, 8, 4, 2, 1)
results = {segments: measure(segments) for segments in SEGMENTS}
torch.set_num_threads(threads)

print(" tramos  activaciones guardadas  lineales ejecutadas  GELU ejecutadas  tiempo")
for segments, (mib, linears, gelus, ms) in results.items():
    label = "sin" if segments == 0 else str(segments)
    print(f"{label:>7}  {mib:17.3f} MiB  {linears:19d}  {gelus:15d}  {ms:6.1f} ms")
print(f"con 1 tramo, en esta máquina: ×{results[1][0] / results[0][0]:.2f} de memoria y "
      f"×{results[1][3] / results[0][3]:.2f} de tiempo frente a sin recálculo "
      f"(la teoría: unos ×1.33 de tiempo)")

# %% [markdown]
# Las capas ejecutadas cuentan las 8 del pase hacia adelante normal más las que el pase
# hacia atrás vuelve a ejecutar para recalcular.

# %% tags=["demo"]
labels = ["sin" if t == 0 else f"{t} tramo{'s' if t > 1 else ''}" for t in SEGMENTS]
fig, (ax_m, ax_t) = plt.subplots(1, 2, figsize=(9, 3))
ax_m.bar(labels, [results[t][0] for t in SEGMENTS], color="tab:blue")
ax_m.set_ylabel("MiB guardados hasta el pase atrás")
ax_m.set_title("memoria de activaciones")
ax_t.bar(labels, [results[t][3] for t in SEGMENTS], color="tab:orange")
ax_t.set_ylabel("ms por paso (adelante + atrás)")
ax_t.set_title("tiempo (CPU, 1 hilo)")
plt.tight_layout()
plt.show()

# %% [markdown]
# Lo que dicen los números:
#
# - **Memoria.** Sin recálculo se guardan dos activaciones por bloque (la entrada de la
#   lineal y la de la GELU). Con recálculo solo queda la entrada de cada tramo: menos
#   tramos, menos memoria. Es la memoria retenida entre los dos pases; durante el pase
#   hacia atrás se suman, un momento, las activaciones del tramo que se está recalculando.
# - **Cómputo.** Cada lineal recalculada se ejecuta dos veces: 16 lineales en lugar de 8.
#   Las GELU no siempre: al recalcular un tramo, `checkpoint` se detiene en cuanto tiene
#   todo lo que el pase hacia atrás necesita, y la última GELU de cada tramo no hace falta
#   (lo que guarda es su entrada, la salida de la lineal). Por eso, con recálculo, la
#   columna de GELU vale 8 + 8 − tramos. Como un pase hacia atrás cuesta más o menos dos
#   hacia adelante, lo esperable es alrededor de un tercio más de tiempo.
# - **Tiempo en CPU.** La celda imprime la penalización medida en tu máquina. Si sale
#   bastante mayor que ese tercio, es porque con capas tan pequeñas la contabilidad de
#   `checkpoint` (ganchos, tramos que se preparan en Python) pesa tanto como el propio
#   cálculo. Con capas grandes el coste se acerca a la
#   teoría, y es en una GPU llena donde la memoria es el límite y el cambio compensa.
#
# Si este entorno tiene GPU, la celda siguiente mide la memoria pico en CUDA; si no, lo
# dice y no hace nada. (Sin verificar: el curso se probó en máquinas sin GPU, así que esa
# celda nunca se ha ejecutado.)

# %% tags=["demo"]
if torch.cuda.is_available():
    net.to("cuda")
    x_gpu = torch.randn(4096, WIDTH, device="cuda")
    for segments in (0, 2):
        net.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        forward_blocks(x_gpu, segments).sum().backward()
        peak = (torch.cuda.max_memory_allocated() - base) / 2**20
        print(f"tramos={segments}: memoria pico por encima de la base {peak:.1f} MiB")
    net.to("cpu")
else:
    print("Sin GPU: se omite la medida de memoria pico en CUDA (las cifras de arriba son de CPU).")

# %% [markdown]
# ### Guardar otra cosa: los ganchos de tensores guardados
#
# El recálculo cambia memoria por cómputo. Hay otra salida: guardar lo mismo, pero en otra
# forma. `torch.autograd.graph.saved_tensors_hooks(pack, unpack)` llama a `pack` con cada
# tensor que autograd va a guardar y guarda **lo que `pack` devuelve**; en el pase hacia
# atrás, `unpack` lo convierte de nuevo en el tensor que hace falta. Hasta ahora los
# usábamos solo para contar (`medir_guardado`); aquí `pack` guarda una copia en bf16 de
# cada activación (los pesos no: ya existen) y `unpack` la devuelve en fp32. La mitad de
# memoria, a cambio de gradientes un poco menos exactos, en la misma red de 8 bloques:

# %% tags=["demo"]
def step_with_hooks(store_bf16):
    weights = {p.untyped_storage().data_ptr() for p in net.parameters()}
    stored = {}
    def pack(tensor):
        if tensor.untyped_storage().data_ptr() in weights:
            return tensor  # los pesos ya existen: guardar el propio tensor no cuesta nada
        kept = tensor.to(torch.bfloat16) if store_bf16 else tensor
        stored[kept.untyped_storage().data_ptr()] = kept.untyped_storage().nbytes()
        return kept
    def unpack(kept):
        return kept.float() if kept.dtype == torch.bfloat16 else kept
    net.zero_grad()
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        loss = net(x_blocks).pow(2).mean()
    loss.backward()
    return sum(stored.values()), [p.grad.clone() for p in net.parameters()]

full_bytes, exact = step_with_hooks(False)
half_bytes, approx = step_with_hooks(True)
error = max(((a - e).norm() / e.norm()).item() for a, e in zip(approx, exact))
print(f"guardado entre los dos pases: {full_bytes / 2**10:.0f} KiB tal cual, "
      f"{half_bytes / 2**10:.0f} KiB en bf16 · error relativo de los gradientes: {error:.1e}")

# %% [markdown]
# La memoria guardada baja a la mitad y los gradientes cambian en el orden del redondeo de
# bf16 (8 bits de mantisa, capítulo 6). `torch.autograd.graph.save_on_cpu(pin_memory=True)`
# es este mismo mecanismo con otro `pack`: copia cada tensor guardado de la GPU a la
# memoria de la CPU, y `unpack` lo devuelve a la GPU en el pase hacia atrás. Libera memoria
# de la GPU a cambio de transferencias; en una máquina sin GPU no hay nada que mover. Si
# tienes GPU, la celda siguiente mide la memoria pico con y sin él (sin verificar: nunca se
# ha ejecutado en una GPU).

# %% tags=["demo"]
if torch.cuda.is_available():
    net.to("cuda")
    x_gpu = torch.randn(4096, WIDTH, device="cuda")
    for on_cpu in (False, True):
        net.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        context = (torch.autograd.graph.save_on_cpu(pin_memory=True) if on_cpu
                   else contextlib.nullcontext())
        with context:
            loss = net(x_gpu).sum()
        loss.backward()
        peak = (torch.cuda.max_memory_allocated() - base) / 2**20
        print(f"save_on_cpu={on_cpu}: memoria pico por encima de la base {peak:.1f} MiB")
    net.to("cpu")
else:
    print("Sin GPU: se omite la medida de save_on_cpu (en CPU no hay nada que mover).")

# %% [markdown]
# ## Ejercicio 4 · El recálculo como `Function` propia (4 puntos)
#
# `checkpoint` no es magia: es una `Function` como las de este capítulo. Su `forward`
# ejecuta el tramo sin construir grafo y guarda solo las entradas; su `backward` vuelve a
# ejecutar el tramo, esta vez **con** grafo, y deriva esa copia. Escríbela tú:
# `checkpoint_apply(fn, x, *params)` devuelve `fn(x, *params)` con esas dos mitades.
#
# Tres cosas que conviene tener presentes:
#
# - dentro de `forward` autograd ya está desactivado, y dentro de `backward` también
#   (salvo con `create_graph=True`): el recálculo necesita `torch.enable_grad()`;
# - lo que `backward` recalcula debe ser un grafo **aparte**: si `fn` se ejecuta sobre los
#   tensores guardados tal cual, el recálculo queda enganchado al grafo de fuera;
# - `backward` devuelve un valor por argumento de `forward`: `None` para `fn` (no es un
#   tensor), y `None` para cada tensor cuyo `ctx.needs_input_grad` sea `False`.
#
# La comprobación usa un bloque residual (lineal, GELU, lineal) y una función de dos
# parámetros con `x` como datos: compara con autograd sin recálculo, cuenta lo que tu
# `forward` deja guardado con `saved_tensors_hooks` y cuántas veces se ejecuta `fn`.

# %% exercise="checkpoint_apply"
def checkpoint_apply(fn, x, *params):
    """``fn(x, *params)`` con recálculo de activaciones, como una `torch.autograd.Function`
    tuya: ``forward`` sin grafo que guarda solo las entradas, ``backward`` que recalcula.

    <contrato>
    """
    ### BEGIN SOLUTION
    class Checkpoint(torch.autograd.Function):
        @staticmethod
        def forward(ctx, fn, x, *params):
            ctx.fn = fn
            ctx.save_for_backward(x, *params)
            with torch.no_grad():
                return fn(x, *params)

        @staticmethod
        def backward(ctx, grad_output):
            inputs = [t.detach().requires_grad_(needed)
                      for t, needed in zip(ctx.saved_tensors, ctx.needs_input_grad[1:])]
            with torch.enable_grad():
                output = ctx.fn(*inputs)
            torch.autograd.backward(output, grad_output)
            return (None, *(t.grad for t in inputs))

    return Checkpoint.apply(fn, x, *params)
    ### END SOLUTION


# %% test="checkpoint_apply"


# %% [markdown]
# `torch.utils.checkpoint` tiene dos implementaciones. Con `use_reentrant=True` es
# justamente una `Function` como la tuya (su nodo se llama `CheckpointFunctionBackward`);
# con `use_reentrant=False`, la recomendada, usa `saved_tensors_hooks` para recalcular
# solo lo que el pase hacia atrás va pidiendo. Con `medir_guardado` (sección 3) medimos lo
# que cada una deja guardado en un bloque residual de 512 de ancho, sin contar los pesos:

# %% tags=["demo"]
torch.manual_seed(0)
w1, w2 = torch.randn(1024, 512) / 512**0.5, torch.randn(512, 1024) / 1024**0.5
b1 = torch.zeros(1024)
block_weights = [w.requires_grad_() for w in (w1, b1, w2)]
x_demo = torch.randn(64, 512, requires_grad=True)


def block(x, w1, b1, w2):
    return x + F.gelu(x @ w1.T + b1) @ w2.T


ways = {
    "sin recálculo": lambda: block(x_demo, *block_weights),
    "use_reentrant=True (una Function)": lambda: checkpoint(block, x_demo, *block_weights,
                                                            use_reentrant=True),
    "use_reentrant=False": lambda: checkpoint(block, x_demo, *block_weights,
                                              use_reentrant=False),
}
for name, compute in ways.items():
    saved, out = medir_guardado(compute, excluir=[x_demo, *block_weights])
    print(f"{name:>34}: {saved / 2**10:7.1f} KiB guardados · grad_fn "
          f"{type(out.grad_fn).__name__}")

# %% [markdown]
# Sin recálculo quedan la preactivación y la salida de la GELU (dos matrices de 64 × 1024);
# con recálculo, nada más que las entradas. Tu `checkpoint_apply` debe dar el 0 de la
# segunda fila: la comprobación del ejercicio lo mide con el mismo gancho.

# %% [markdown]
# ## 7 · Cinco piezas más de `Function`
#
# La API tiene más de lo que usaron los ejercicios. Cinco piezas aparecen en cuanto se lee
# código de bibliotecas reales:
#
# - **`setup_context`**: `forward` recibe solo las entradas (sin `ctx`) y un método aparte,
#   `setup_context(ctx, inputs, output)`, guarda lo que `backward` necesitará. Es el estilo
#   que exigen las transformaciones de `torch.func` (`grad`, `vmap`, `jacrev`...): con el
#   estilo clásico, `forward(ctx, ...)`, fallan con un error que pide justamente eso.
# - **`ctx.mark_non_differentiable`**: para salidas que no tienen derivada, como los índices
#   de una ordenación o de un `argmax`. La salida marcada no pide gradiente; `backward`
#   sigue recibiendo un argumento por ella (siempre ceros) y lo ignora.
# - **`@once_differentiable`** sobre `backward`: declara que tu `backward` no es derivable
#   (usa NumPy, operaciones *in-place*...). Se ejecuta sin grafo, y una segunda derivada
#   falla con un error en lugar de devolver un número sin sentido.
# - **`torch.amp.custom_fwd` / `custom_bwd`**: cómo se comporta la `Function` dentro de
#   `autocast` (capítulo 6). Con `cast_inputs=torch.float32`, `forward` recibe sus entradas
#   en float32 y se ejecuta con `autocast` apagado; `custom_bwd` ejecuta `backward` en el
#   mismo estado de `autocast` que tuvo `forward`.
# - **`ctx.mark_dirty`**: para una `Function` que cambia una entrada *in-place* y la
#   devuelve. Hay que decírselo a autograd: es lo que le permite reescribir la historia de
#   ese tensor (capítulo 2, sección 6).

# %% tags=["demo"]
class CubeWithContext(torch.autograd.Function):
    @staticmethod
    def forward(x):  # sin ctx
        return x ** 3

    @staticmethod
    def setup_context(ctx, inputs, output):
        (x,) = inputs
        ctx.save_for_backward(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * 3 * x ** 2


class CubeClassic(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * 3 * x ** 2


point = torch.tensor(2.0)
print("torch.func.grad con setup_context:", torch.func.grad(CubeWithContext.apply)(point))
with muestra_error(RuntimeError):
    torch.func.grad(CubeClassic.apply)(point)

# %% tags=["demo"]
class SortWithIndices(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        values, indices = x.sort()
        ctx.mark_non_differentiable(indices)
        ctx.save_for_backward(indices)
        return values, indices

    @staticmethod
    def backward(ctx, grad_values, grad_indices):  # grad_indices no se usa
        (indices,) = ctx.saved_tensors
        return torch.zeros_like(grad_values).scatter_(-1, indices, grad_values)


v = torch.tensor([3.0, 1.0, 2.0], requires_grad=True)
values, indices = SortWithIndices.apply(v)
print("¿piden gradiente? valores:", values.requires_grad, "· índices:", indices.requires_grad)
(values * torch.tensor([1.0, 10.0, 100.0])).sum().backward()
print("gradiente de v (cada peso vuelve a la posición de origen):", v.grad)

# %% tags=["demo"]
from torch.autograd.function import once_differentiable  # noqa: E402


class CubeOnce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * 3 * x ** 2


x = torch.tensor(2.0, requires_grad=True)
(first,) = torch.autograd.grad(CubeClassic.apply(x), x, create_graph=True)
(second,) = torch.autograd.grad(first, x)
print(f"sin el decorador: primera derivada {first.item():g}, segunda {second.item():g}")
(first,) = torch.autograd.grad(CubeOnce.apply(x), x, create_graph=True)
print(f"con @once_differentiable: primera {first.item():g}, ¿tiene grafo? "
      f"{first.requires_grad}")
with muestra_error(RuntimeError):
    torch.autograd.grad(first, x)

# %% [markdown]
# La segunda derivada del cubo es $6x = 12$ en $x = 2$: sin el decorador sale bien porque
# nuestro `backward` usa operaciones de PyTorch, que también se graban. Con el decorador,
# la primera derivada llega sin grafo y pedir la segunda es un error: mejor un error que
# una derivada falsa cuando `backward` no es derivable de verdad.

# %% tags=["demo"]
if hasattr(torch.amp, "custom_fwd"):
    class MatmulFloat32(torch.autograd.Function):
        @staticmethod
        @torch.amp.custom_fwd(device_type="cpu", cast_inputs=torch.float32)
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            print(f"  dentro de forward: entradas {a.dtype}, autocast encendido: "
                  f"{torch.is_autocast_enabled('cpu')}")
            return a @ b

        @staticmethod
        @torch.amp.custom_bwd(device_type="cpu")
        def backward(ctx, grad_output):
            a, b = ctx.saved_tensors
            return grad_output @ b.T, a.T @ grad_output

    a = torch.randn(4, 4, requires_grad=True)
    b = torch.randn(4, 4, requires_grad=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        print("a @ b dentro de autocast:", (a @ b).dtype)
        out = MatmulFloat32.apply(a, b)
        print("MatmulFloat32 dentro de autocast:", out.dtype)
    out.sum().backward()
    print("gradiente de a:", a.grad.dtype)
else:
    print("Esta versión de PyTorch no tiene torch.amp.custom_fwd (usa torch.cuda.amp.custom_fwd).")

# %% [markdown]
# Y la quinta. Una ReLU que no gasta memoria nueva: recorta su entrada en su sitio y la
# devuelve. Aplicamos dos versiones a un tensor intermedio `h` y seguimos usando `h`, como
# hace quien escribe `relu_(h)`: una marca la entrada con `ctx.mark_dirty`, la otra no.

# %% tags=["demo"]
class ReluInPlace(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.clamp_(min=0)
        ctx.mark_dirty(x)  # x ha cambiado en su sitio: su historia pasa a ser esta Function
        ctx.save_for_backward(x)  # la salida: basta para saber dónde era positiva
        return x

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return grad_output * (y > 0)


class ReluInPlaceUnmarked(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.clamp_(min=0)  # el mismo cambio, sin avisar a autograd
        ctx.save_for_backward(x)
        return x

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return grad_output * (y > 0)


a = torch.tensor([-1.0, 0.5, -2.0, 3.0], requires_grad=True)
for relu in (ReluInPlace, ReluInPlaceUnmarked):
    a.grad = None
    h = a * 2
    out = relu.apply(h)
    h.sum().backward()
    print(f"{relu.__name__:>19}: h = {h.detach().tolist()}, ¿la salida es h? {out is h}, "
          f"h.grad_fn = {type(h.grad_fn).__name__}, a.grad = {a.grad.tolist()}")

# %% [markdown]
# Los valores de `h` son los mismos en las dos filas: el recorte ocurrió. Con
# `mark_dirty`, la salida es el propio `h` y su `grad_fn` es el de la `Function`: el
# gradiente de `a` es 2 donde `2a` era positivo y 0 donde no. Sin marcarla, `h` conserva
# la historia de antes del recorte (`MulBackward0`), así que el pase hacia atrás deriva
# `2a` sin el recorte: sale 2 en todas partes, **sin ningún error**, y la salida que
# devolvió la `Function` es otro tensor.
#
# `mark_dirty` no permite cualquier cambio *in-place*: una hoja que requiere gradiente
# sigue sin poder cambiarse en su sitio, y si otra operación guardó el tensor (como `exp`,
# que guarda su salida), el contador de versiones sigue deteniendo el pase hacia atrás:

# %% tags=["demo"]
with muestra_error(RuntimeError):
    ReluInPlace.apply(a)  # una hoja que requiere gradiente
with muestra_error(RuntimeError):
    ReluInPlace.apply(a.exp()).sum().backward()  # exp necesita su salida sin cambiar

# %% [markdown]
# ## 8 · `torch.compile` y autograd
#
# `torch.compile(fn)` no cambia qué se deriva, sino cómo se ejecuta. Tres piezas:
#
# - **Dynamo** lee el *bytecode* de `fn` mientras se ejecuta y captura sus operaciones con
#   tensores en un grafo. Donde encuentra algo que no sabe capturar, **corta el grafo**
#   (*graph break*): ese trozo se ejecuta en Python normal y después empieza otro grafo.
# - **AOTAutograd** toma cada grafo capturado y obtiene de antemano su pase hacia atrás,
#   escrito en operaciones `aten` ya derivadas.
# - Un **compilador** (por defecto Inductor, que genera C++ o Triton) compila los dos.
#
# Aquí usamos el backend `aot_eager`: hace la captura y AOTAutograd, pero ejecuta los
# grafos sin compilarlos, así que no necesita compilador de C++. Para ver los dos grafos,
# un backend propio los guarda al pasar.

# %% tags=["demo"]
import logging

from torch._dynamo.backends.common import aot_autograd
from torch._functorch.aot_autograd import make_boxed_func

torch._logging.set_logs(dynamo=logging.ERROR)  # los avisos de Dynamo, fuera de la salida


def keeping(graphs, name):
    """Un «compilador» que guarda el grafo que recibe y lo ejecuta tal cual."""
    def compiler(graph_module, example_inputs):
        graphs[name] = graph_module
        return make_boxed_func(graph_module.forward)
    return compiler


def aten_ops(graph_module):
    return [str(node.target).replace("aten.", "").replace(".default", "")
            for node in graph_module.graph.nodes if node.op == "call_function"]


def small_loss(x, w):
    return (torch.tanh(x @ w) ** 2).sum()


if torch._dynamo.is_dynamo_supported():
    graphs = {}
    backend = aot_autograd(fw_compiler=keeping(graphs, "adelante"),
                           bw_compiler=keeping(graphs, "atrás"))
    x, w = torch.randn(8, 4), torch.randn(4, 3, requires_grad=True)
    torch.compile(small_loss, backend=backend)(x, w).backward()
    compiled_grad, w.grad = w.grad, None
    small_loss(x, w).backward()
    for name, graph_module in graphs.items():
        print(f"grafo hacia {name}: {aten_ops(graph_module)}")
    print("¿el mismo gradiente que sin compilar?", torch.allclose(compiled_grad, w.grad))
else:
    print("torch.compile no funciona con esta versión de Python y PyTorch: demo saltada.")

# %% [markdown]
# El grafo hacia atrás ya está escrito en operaciones: `tanh_backward` es la derivada local
# de `tanh`, y la `mm` con una traspuesta (`t`) da el gradiente de `x @ w` respecto de `w`
# ($x^\top$ por lo que llega; `x` no pide gradiente, así que no hay otra). Es la
# diferencia con el modo normal (*eager*): allí el grafo de autograd se construye de nuevo
# en cada pase hacia adelante (capítulo 1, sección 6); aquí se trazó una vez para estas
# formas y se reutiliza mientras sigan siendo las mismas.
#
# `.item()` saca un número del tensor a Python. Si un `if` decide con ese número, Dynamo no
# puede meterlo en el grafo y corta ahí. `torch._dynamo.explain` cuenta los grafos y los
# cortes, con el motivo:

# %% tags=["demo"]
def loss_with_item(x, w):
    y = torch.tanh(x @ w)
    if y.sum().item() > 0:  # un número de Python decide el camino
        y = 2 * y
    return (y**2).sum()


if torch._dynamo.is_dynamo_supported():
    torch._dynamo.reset()
    report = torch._dynamo.explain(loss_with_item)(x, w)
    print(f"grafos: {report.graph_count} · cortes: {report.graph_break_count}")
    for reason in report.break_reasons:
        print("  motivo:", str(reason.reason).strip().splitlines()[0])
    w.grad = None
    torch.compile(loss_with_item, backend="aot_eager")(x, w).backward()
    compiled_grad, w.grad = w.grad, None
    loss_with_item(x, w).backward()
    print("¿el mismo gradiente que sin compilar?", torch.allclose(compiled_grad, w.grad))

# %% [markdown]
# El gradiente sigue bien: cada trozo tiene su pase hacia atrás y autograd los encadena.
# Lo que cuesta un corte es velocidad: un grafo más pequeño que optimizar, una vuelta a
# Python y, en GPU, una espera a que la GPU termine para leer el número (capítulo 4).
#
# ¿Y lo de este capítulo? Una `Function` propia (el `CubeClassic` de la sección 7) y un
# gancho (*hook*) en un tensor intermedio son código Python que autograd llama durante el
# pase hacia atrás. Que Dynamo los capture o corte el grafo depende de la versión de
# PyTorch; la celda lo cuenta en la tuya y compara los gradientes con el modo normal.

# %% tags=["demo"]
def with_function(x):
    return CubeClassic.apply(torch.sin(x)).sum()


def with_hook(x):
    y = torch.sin(x)
    y.register_hook(lambda grad: 2 * grad)  # dobla el gradiente que pasa por y
    return (y**3).sum()


if torch._dynamo.is_dynamo_supported():
    for fn in (with_function, with_hook):
        torch._dynamo.reset()
        point = torch.randn(5, requires_grad=True)
        report = torch._dynamo.explain(fn)(point)
        (compiled_grad,) = torch.autograd.grad(torch.compile(fn, backend="aot_eager")(point),
                                               point)
        (eager_grad,) = torch.autograd.grad(fn(point), point)
        capture = ("capturada entera, sin cortes" if report.graph_break_count == 0 else
                   f"{report.graph_break_count} corte(s) de grafo")
        print(f"{fn.__name__}: {capture}; ¿el mismo gradiente que sin compilar? "
              f"{torch.allclose(compiled_grad, eager_grad)}")

# %% [markdown]
# Con o sin cortes, el gradiente compilado debe ser el del modo normal. Es la comprobación
# que conviene repetir al compilar un modelo con `Function`s propias: `gradcheck` (sección
# 4) comprueba tu `backward` en modo normal, y comparar con el modo normal comprueba la
# versión compilada.

# %% [markdown]
# ## Resumen
#
# - Una `torch.autograd.Function` tiene un `forward(ctx, ...)` y un `backward(ctx,
#   grad_output)` estáticos y se usa con `.apply`; `backward` multiplica `grad_output` por
#   la derivada local.
# - `backward` devuelve un valor por cada entrada de `forward`, `None` para lo que no es un
#   tensor; `ctx.needs_input_grad` dice qué gradientes hacen falta.
# - Los tensores se guardan con `ctx.save_for_backward` (PyTorch vigila si cambian y los
#   libera); guarda solo lo que `backward` usa: a veces basta la salida.
# - Tu `backward` no se comprueba solo: un error entrena peor sin avisar. Usa
#   `gradcheck` (y `gradgradcheck`) en float64.
# - El estimador de paso directo redondea en el pase hacia adelante y deja pasar el
#   gradiente en el pase hacia atrás (con una `Function` o con `x + (q - x).detach()`); con
#   recorte, el gradiente es 0 fuera del rango.
# - Con `argmax`, el mismo truco: `y_hard - y_soft.detach() + y_soft` es el one-hot en el
#   pase hacia adelante y lleva el gradiente del softmax en el pase hacia atrás
#   (`F.gumbel_softmax(..., hard=True)`, con ruido de Gumbel).
# - `torch.utils.checkpoint.checkpoint(..., use_reentrant=False)` guarda solo la entrada de
#   cada tramo y recalcula el resto en el pase hacia atrás: menos memoria a cambio de un
#   pase hacia adelante más. Como `Function`: `forward` sin grafo que guarda las entradas,
#   `backward` que recalcula bajo `torch.enable_grad()` sobre copias separadas y deriva.
# - `saved_tensors_hooks(pack, unpack)` decide en qué forma se guarda cada tensor para el
#   pase hacia atrás: en bf16 (la mitad de memoria, gradientes algo menos exactos) o, con
#   `save_on_cpu`, en la memoria de la CPU.
# - `setup_context` separa guardar de calcular (lo exigen `torch.func.grad` y `vmap`);
#   `ctx.mark_non_differentiable` marca salidas sin derivada (índices);
#   `@once_differentiable` convierte una segunda derivada imposible en un error;
#   `torch.amp.custom_fwd`/`custom_bwd` fijan el dtype de una `Function` dentro de `autocast`;
#   `ctx.mark_dirty` dice qué entrada cambió *in-place*, para que su historia sea la de la
#   `Function` (sin él, el gradiente sale mal sin avisar).
# - `torch.compile` captura el cálculo con Dynamo y obtiene su pase hacia atrás con
#   AOTAutograd; `.item()` (y lo que Dynamo no sabe capturar) corta el grafo, sin cambiar el
#   gradiente; compara el gradiente compilado con el del modo normal.

# %% [markdown]
# ## Lista de comprobación para tu próxima `Function`
#
# Antes de usarla en un entrenamiento, repasa:
#
# 1. ¿`backward` devuelve exactamente un valor por cada argumento de `forward`, con `None`
#    para los que no son tensores (y para los que no necesitan gradiente, según
#    `ctx.needs_input_grad`)?
# 2. ¿Cada gradiente tiene la forma y el dtype de su entrada? Si `forward` hizo
#    *broadcasting*, ¿sumas sobre las dimensiones que se expandieron?
# 3. ¿Guardas con `ctx.save_for_backward` solo lo que `backward` usa, y nada en la clase
#    ni en variables globales? (Entre el `forward` y el `backward` de una llamada puede
#    haber otras.)
# 4. ¿`forward` funciona bajo `torch.no_grad()` y con entradas que no piden gradiente?
# 5. ¿`backward` calcula tensores nuevos, sin cambiar `grad_output` ni lo guardado? Si
#    `forward` cambia una entrada en su sitio, ¿la marcas con `ctx.mark_dirty`?
# 6. ¿Pasa `torch.autograd.gradcheck` en float64 con entradas al azar, incluidos los
#    bordes (ceros, valores grandes, los límites de un recorte)? ¿Y `gradgradcheck`, si
#    vas a derivar dos veces? Si no es derivable otra vez, ¿lleva `@once_differentiable`?
# 7. ¿Las salidas sin derivada (índices) están marcadas con
#    `ctx.mark_non_differentiable`?
# 8. Dentro de `autocast`, ¿el dtype de `forward` es el que quieres (`custom_fwd`)?
# 9. Si vas a usar `torch.compile` o `torch.func`, ¿tienes `setup_context`, y el
#    gradiente compilado coincide con el del modo normal?
