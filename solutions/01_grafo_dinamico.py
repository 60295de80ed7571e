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
# # Capítulo 1 · El grafo dinámico
#
# Cuando llamas a `loss.backward()`, PyTorch no deriva una fórmula: recorre un registro de
# todo lo que calculaste. En este capítulo haces primero la regla de la cadena (*chain rule*)
# con lápiz y papel; después abres el registro que la automatiza, el grafo computacional
# (*computational graph*), y escribes uno en miniatura.
#
# **Al terminar sabrás:**
#
# - calcular gradientes (*gradients*) a mano y comprobarlos con autograd;
# - explicar por qué el gradiente de un tensor usado por dos caminos es la suma de los dos, y
#   por qué `.grad` acumula;
# - leer `grad_fn` y `next_functions` y dibujar el grafo de un cálculo;
# - distinguir un nodo hoja (*leaf node*) de un tensor intermedio (*non-leaf tensor*) y
#   saber cuál recibe `.grad`;
# - escribir un motor de autograd de unas 50 líneas y compararlo con el de PyTorch;
# - explicar por qué el grafo se construye de nuevo en cada pase hacia adelante
#   (*forward pass*) y qué permite eso frente a un grafo estático;
# - reconocer una ReLU muerta (*dying ReLU*) y por qué Leaky ReLU y GELU la evitan;
# - usar `backward(gradient=...)`, `retain_graph=True`, `torch.autograd.grad` y
#   `create_graph=True`, y medir la memoria que guarda el grafo;
# - calcular productos Jacobiano-vector en modo hacia adelante (`torch.func.jvp`), jacobianos
#   y hessianas enteros, y elegir entre el modo hacia adelante y el inverso.
#
# Solo necesitas saber crear tensores y qué hace `requires_grad=True`. Cada idea va seguida
# de una celda: ejecútalas en orden.

# %%
import math

import torch
import torch.nn.functional as F

_ = torch.manual_seed(0)  # asignado: la llamada sola mostraría el Generator que devuelve

# %% [markdown]
# ## 1 · La regla de la cadena, a mano y con autograd
#
# Empecemos con un modelo lineal de un solo número y su función de pérdida (*loss function*):
# $\hat y = wx + b$ y $L = (\hat y - y)^2$. La regla de la cadena dice que el gradiente es el
# producto de las derivadas locales (*local derivatives*) a lo largo del camino:
#
# $$\frac{\partial L}{\partial w} = \frac{\partial L}{\partial \hat y}\cdot
# \frac{\partial \hat y}{\partial w} = 2(\hat y - y)\cdot x, \qquad
# \frac{\partial L}{\partial b} = \frac{\partial L}{\partial \hat y}\cdot
# \frac{\partial \hat y}{\partial b} = 2(\hat y - y)\cdot 1$$
#
# Calcula cada derivada local con números de Python, sin tensores:

# %% tags=["demo"]
w_val, b_val, x_val, y_val = 0.5, 0.25, 3.0, 4.0

y_hat_val = w_val * x_val + b_val  # pase hacia adelante
dL_dyhat = 2 * (y_hat_val - y_val)  # derivada local de (y_hat - y)**2
dyhat_dw, dyhat_db = x_val, 1.0  # derivadas locales de w*x + b
print(f"dL/dy_hat = {dL_dyhat}   dL/dw = {dL_dyhat * dyhat_dw}   dL/db = {dL_dyhat * dyhat_db}")

# %% [markdown]
# Autograd hace la misma multiplicación, nodo a nodo, al recorrer el grafo hacia atrás. Los
# parámetros `w` y `b` llevan `requires_grad=True`; el dato `x` y el objetivo `y`, no.

# %% tags=["demo"]
w = torch.tensor(w_val, requires_grad=True)
b = torch.tensor(b_val, requires_grad=True)
loss = (w * torch.tensor(x_val) + b - torch.tensor(y_val)) ** 2
loss.backward()
print(f"autograd:   dL/dw = {w.grad.item()}   dL/db = {b.grad.item()}")

# %% [markdown]
# ## 2 · Un tensor en dos caminos: sus gradientes se suman
#
# Si un tensor entra en el cálculo por dos sitios, un cambio suyo llega a la pérdida por los
# dos. La regla de la cadena con varias variables dice que su gradiente es la **suma** de lo
# que aporta cada camino. En $L = (wx)^2 + 3w$, `w` aparece dos veces:
#
# $$\frac{\partial L}{\partial w} = \underbrace{2(wx)\cdot x}_{\text{camino de }(wx)^2}
# + \underbrace{3}_{\text{camino de }3w}$$

# %% tags=["demo"]
path_1 = 2 * (w_val * x_val) * x_val  # derivada de (w·x)² respecto de w
path_2 = 3.0  # derivada de 3·w

w = torch.tensor(w_val, dtype=torch.float64, requires_grad=True)
loss_two_paths = (w * x_val) ** 2 + 3 * w
loss_two_paths.backward()


def loss_at(value):
    return (value * x_val) ** 2 + 3 * value


h = 1e-6
finite_difference = (loss_at(w_val + h) - loss_at(w_val - h)) / (2 * h)
print(f"a mano: {path_1} + {path_2} = {path_1 + path_2}")
print(f"autograd: {w.grad.item()}   diferencia finita: {finite_difference:.6f}")


# %% [markdown]
# Por eso `.grad` acumula: el gradiente de una hoja es una suma de contribuciones, así que
# `.grad` no se sobrescribe, se le suma (`+=`) lo que llega. Da igual que las contribuciones
# lleguen en un pase hacia atrás (*backward pass*) o en dos: haz cada camino en su propio
# `backward`.

# %% tags=["demo"]
w = torch.tensor(w_val, dtype=torch.float64, requires_grad=True)
((w * x_val) ** 2).backward()
print("tras el backward del camino 1:  w.grad =", w.grad.item())
(3 * w).backward()
print("tras el backward del camino 2:  w.grad =", w.grad.item())
w.grad = None  # lo que hace zero_grad() (por defecto)
((w * x_val) ** 2).backward()
print("tras vaciar .grad y camino 1:   w.grad =", w.grad.item())


# %% [markdown]
# Dos `backward` de dos partes de la pérdida dejan en `.grad` el gradiente de la suma. Eso
# permite la acumulación de gradientes (*gradient accumulation*), que reparte un lote en
# varios pases, y es también una trampa: si no vacías `.grad` entre dos pasos de
# entrenamiento, el gradiente del paso anterior se suma al nuevo.

# %% [markdown]
# ## 3 · El grafo que lo automatiza: `grad_fn`
#
# Repite el pase hacia adelante de la sección 1. Mientras se ejecuta cada operación, PyTorch
# anota en el resultado qué función hay que aplicar para derivarla. Esa anotación es
# `grad_fn`. La pérdida sale de un `** 2`, así que su `grad_fn` es un nodo `PowBackward0`.

# %% tags=["demo"]
w = torch.tensor(w_val, requires_grad=True)
b = torch.tensor(b_val, requires_grad=True)
x = torch.tensor(x_val)
y = torch.tensor(y_val)

y_hat = w * x + b
loss = (y_hat - y) ** 2
print(loss.grad_fn)
print(y_hat.grad_fn)


# %% [markdown]
# Cada nodo apunta a los nodos de sus entradas con `next_functions`: una tupla de pares
# `(nodo, índice)`, uno por entrada. Sigamos esos punteros a mano, un nivel cada vez.
# Donde la entrada no necesita gradiente (el objetivo `y`) aparece `None`: ahí el grafo
# no continúa.

# %% tags=["demo"]
print(loss.grad_fn.next_functions)

# %% [markdown]
# Las direcciones de memoria estorban. Con una función pequeña que muestra solo los nombres,
# baja tres niveles: potencia, resta, suma.

# %% tags=["demo"]
def children(node):
    return [type(n).__name__ if n is not None else None for n, _ in node.next_functions]


node_pow = loss.grad_fn
node_sub = node_pow.next_functions[0][0]
node_add = node_sub.next_functions[0][0]
for node in (node_pow, node_sub, node_add):
    print(f"{type(node).__name__:>12} → {children(node)}")

# %% [markdown]
# Al final de cada camino hay un nodo `AccumulateGrad`. No calcula nada: suma (`+=`) el
# gradiente que le llega al `.grad` de un tensor hoja; es el `+=` de la sección 2. Su
# atributo `variable` es esa hoja.

# %% tags=["demo"]
node_acc = node_add.next_functions[1][0]
print(type(node_acc).__name__, "→ ¿es b?", node_acc.variable is b)

# %% [markdown]
# Recorrer el grafo a mano cansa pronto. `dibujar_grafo` (de la celda de utilidades) lo
# dibuja entero: con graphviz si está instalado, como árbol de texto si no. Léelo de la
# pérdida hacia las hojas: ese es el orden del pase hacia atrás, la
# retropropagación (*backpropagation*).

# %% tags=["demo"]
dibujar_grafo(loss)

# %% [markdown]
# En la pérdida de dos caminos de la sección 2, las dos flechas de `w` llegan al **mismo**
# nodo `AccumulateGrad` (en el árbol de texto, la segunda llegada sale como «ya visto»):
# ahí se juntan, sumadas, las contribuciones de los dos caminos.

# %% tags=["demo"]
dibujar_grafo(loss_two_paths)


# %% [markdown]
# ## 4 · Hojas y tensores intermedios
#
# Un tensor hoja es uno que creaste tú, no el resultado de una operación registrada. `w`,
# `b` y `x` son hojas; `y_hat` y `loss` son tensores intermedios (tienen `grad_fn`). Un
# tensor sin `requires_grad` también cuenta como hoja, pero nunca recibe gradiente.

# %% tags=["demo"]
tensors = {"w": w, "b": b, "x": x, "y_hat": y_hat, "loss": loss}
for name, t in tensors.items():
    print(f"{name:>5}: is_leaf={t.is_leaf!s:<5}  requires_grad={t.requires_grad!s:<5}  "
          f"grad_fn={type(t.grad_fn).__name__ if t.grad_fn else None}")

# %% [markdown]
# Tras `loss.backward()`, solo las hojas con `requires_grad=True` tienen `.grad`. El
# gradiente de `y_hat` se calculó por el camino, pero no se guarda: se usa y se descarta.
# (Leer `.grad` de un tensor intermedio emite un aviso; aquí lo silenciamos para ver el
# `None`.)

# %% tags=["demo"]
import warnings

loss.backward()
print("w.grad =", w.grad, "  b.grad =", b.grad, "  x.grad =", x.grad)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    print("y_hat.grad =", y_hat.grad)

# %% [markdown]
# Si quieres ver el gradiente de un tensor intermedio, pídelo **antes** del pase hacia
# atrás con `retain_grad()`. Aquí debe valer $\partial L/\partial \hat y = 2(\hat y - y)$.

# %% tags=["demo"]
w = torch.tensor(0.5, requires_grad=True)
b = torch.tensor(0.25, requires_grad=True)
y_hat = w * x + b
y_hat.retain_grad()
loss = (y_hat - y) ** 2
loss.backward()
print("y_hat.grad =", y_hat.grad.item(), "  2·(y_hat − y) =", 2 * (y_hat.item() - y.item()))

# %% [markdown]
# ## 5 · Un autograd en miniatura
#
# Ya tienes todas las piezas: cada resultado sabe de qué entradas sale (`next_functions`) y
# cómo repartir su gradiente entre ellas (`grad_fn`), y lo que llega a un tensor se suma
# (`+=`). Con eso basta para escribir un motor de autograd. `Value` envuelve un tensor; cada
# operación crea su salida, le anota sus entradas y le deja una `backward_fn` que aplica la
# derivada local y **suma** en el `.grad` de cada entrada.

# %% tags=["demo"]
class Value:
    """Un tensor con su gradiente: tensor y nodo del grafo a la vez."""

    def __init__(self, data, inputs=()):
        self.data = data
        self.grad = torch.zeros_like(data)
        self.inputs = inputs  # de quién sale: el papel de next_functions
        self.backward_fn = lambda: None  # reparte self.grad entre inputs: el de grad_fn

    def __add__(self, other):  # misma forma a los dos lados: sin broadcasting
        out = Value(self.data + other.data, (self, other))

        def backward_fn():
            self.grad += out.grad  # += y no =: un valor puede llegar por varios caminos
            other.grad += out.grad

        out.backward_fn = backward_fn
        return out

    def __mul__(self, other):
        out = Value(self.data * other.data, (self, other))

        def backward_fn():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad

        out.backward_fn = backward_fn
        return out

    def tanh(self):
        out = Value(torch.tanh(self.data), (self,))

        def backward_fn():
            self.grad += (1 - out.data**2) * out.grad

        out.backward_fn = backward_fn
        return out

    def relu(self):
        out = Value(self.data.clamp(min=0), (self,))

        def backward_fn():
            self.grad += (self.data > 0) * out.grad  # ReLU'(0) = 0, como PyTorch

        out.backward_fn = backward_fn
        return out

    def sum(self):
        out = Value(self.data.sum(), (self,))

        def backward_fn():
            self.grad += out.grad  # cada elemento aporta 1 a la suma

        out.backward_fn = backward_fn
        return out

    def backward(self):
        order, seen = [], set()

        def visit(node):  # un nodo entra en order después de todas sus entradas
            if node not in seen:
                seen.add(node)
                for parent in node.inputs:
                    visit(parent)
                order.append(node)

        visit(self)
        self.grad = torch.ones_like(self.data)  # dL/dL = 1
        for node in reversed(order):
            node.backward_fn()


# %% [markdown]
# `backward` solo puede ejecutar la `backward_fn` de un nodo cuando ya le llegaron las
# contribuciones de **todos** los caminos que lo usan. Por eso recorre el grafo en orden
# topológico (*topological order*) inverso: la salida primero, y cada nodo después de todos
# los que dependen de él. (`recorrer_grafo`, de la celda de utilidades, no sirve aquí: lista
# los nodos para mostrarlos, en un orden que no garantiza eso.)
#
# Compara el motor con autograd en una expresión en la que `w` entra por cuatro caminos. La
# misma función sirve para los dos, porque los tensores de PyTorch también tienen `.tanh()`,
# `.relu()` y `.sum()`:

# %% tags=["demo"]
def expression(w, x, b):
    return ((w * x + b).tanh() * w.relu() + w * w).sum()


generator = torch.Generator().manual_seed(0)
inputs = {name: torch.randn(5, dtype=torch.float64, generator=generator)
          for name in ("w", "x", "b")}

ours = {name: Value(t) for name, t in inputs.items()}
expression(**ours).backward()
theirs = {name: t.clone().requires_grad_() for name, t in inputs.items()}
expression(**theirs).backward()
for name in inputs:
    difference = (ours[name].grad - theirs[name].grad).abs().max().item()
    print(f"{name}: diferencia máxima con autograd {difference:.1e}   "
          f"¿iguales? {torch.allclose(ours[name].grad, theirs[name].grad)}")


# %% [markdown]
# Un motor que deriva bien también entrena. La celda siguiente ajusta una neurona,
# $\tanh(w_1 x_1 + w_2 x_2 + b)$, a 24 puntos del plano con etiquetas $\pm 1$ (el signo de
# $x_1 - x_2/2$), con el error cuadrático medio y 40 pasos de descenso de gradiente. El
# mismo entrenamiento corre dos veces desde los mismos pesos: con `Value` y con tensores de
# PyTorch. La función de pérdida es la misma para los dos; `constant` convierte cada dato
# en un valor del motor que toque. Fíjate en el final de cada paso: como `.grad` acumula
# (`+=`), hay que vaciarlo antes del siguiente, en los dos motores.

# %% tags=["demo"]
generator = torch.Generator().manual_seed(1)
points = torch.randn(24, 2, dtype=torch.float64, generator=generator)
labels = torch.where(points[:, 0] - 0.5 * points[:, 1] > 0, 1.0, -1.0).double()  # ±1


def neuron_loss(w1, w2, b, constant):
    """Error cuadrático medio de tanh(w1·x1 + w2·x2 + b) frente a las etiquetas ±1.
    ``constant`` convierte un dato en un valor del motor que se use (Value, o nada)."""
    total = None
    for (x1, x2), y in zip(points, labels):
        error = (w1 * constant(x1) + w2 * constant(x2) + b).tanh() + constant(-y)
        total = error * error if total is None else total + error * error
    return total * constant(torch.tensor(1 / len(points), dtype=torch.float64))


start = torch.tensor([0.3, 0.4, -0.2], dtype=torch.float64)
ours = [Value(v.clone()) for v in start]  # w1, w2, b
theirs = [v.clone().requires_grad_() for v in start]
lr = 0.5
for step in range(40):
    loss_ours = neuron_loss(*ours, constant=Value)
    loss_ours.backward()
    loss_theirs = neuron_loss(*theirs, constant=lambda t: t)
    loss_theirs.backward()
    if step == 0:
        gaps = [(p.grad - q.grad).abs().item() for p, q in zip(ours, theirs)]
        print(f"paso 0: diferencia máxima de los gradientes con autograd {max(gaps):.1e}")
    if step % 10 == 0 or step == 39:
        print(f"paso {step:2d}: pérdida del motor {loss_ours.data.item():.6f} · "
              f"de PyTorch {loss_theirs.item():.6f}")
    for p in ours:  # el paso de descenso, y vaciar .grad: el motor también acumula
        p.data = p.data - lr * p.grad
        p.grad = torch.zeros_like(p.data)
    with torch.no_grad():
        for q in theirs:
            q -= lr * q.grad
            q.grad = None

w1, w2, b = (p.data for p in ours)
predictions = torch.sign(w1 * points[:, 0] + w2 * points[:, 1] + b)  # el signo de tanh
accuracy = (predictions == labels).double().mean().item()
gap = max((p.data - q.detach()).abs().item() for p, q in zip(ours, theirs))
print(f"exactitud final {accuracy:.0%} · diferencia máxima entre los pesos de los dos "
      f"entrenamientos {gap:.1e}")


# %% [markdown]
# Las dos curvas de pérdida coinciden paso a paso y los pesos finales también: cada paso
# hace las mismas operaciones en float64. Pruébalo: si quitas la línea que vacía `.grad` en
# el motor, cada paso aplica otra vez todos los gradientes anteriores; el entrenamiento se
# separa del de PyTorch desde el segundo paso y los pesos crecen sin freno (la pérdida hasta
# baja más deprisa en estos puntos separables, pero ya no es descenso de gradiente).

# %% [markdown]
# PyTorch hace lo mismo, con todo lo demás: la derivada de cientos de operaciones (con
# *broadcasting*), liberar lo guardado en cuanto se usa (sección 10), la GPU, y un motor en
# C++ que ordena los nodos por dependencias.

# %% [markdown]
# ## 6 · Un grafo nuevo en cada pase hacia adelante
#
# PyTorch no compila el modelo de antemano. El grafo se construye mientras el código se
# ejecuta: es un grafo dinámico (*define-by-run*). Por eso un modelo puede tener `if` y
# bucles de Python que dependen de los datos.
#
# La función de abajo multiplica por 3 hasta que el valor supera 10 en valor absoluto (el
# número de vueltas depende de `x`; con `x = 0` no da ninguna) y luego elige una rama según
# el signo.


# %% tags=["demo"]
def fickle_model(x):
    h = x
    while h != 0 and h.abs() < 10:  # cuántas vueltas da depende del valor de x
        h = h * 3
    if h > 0:  # la rama también depende del valor
        return h.sqrt()
    return h**2


# %% [markdown]
# Con dos entradas distintas, el código recorre caminos distintos y deja grafos
# distintos: cambia el número de nodos y cambian las operaciones.

# %% tags=["demo"]
for value in (2.0, -0.5):
    x = torch.tensor(value, requires_grad=True)
    output = fickle_model(x)
    names = [label for _, label in recorrer_grafo(output)]
    path = " ← ".join(n.split(" →")[0] for n in names)
    print(f"x = {value:+}: {len(names)} nodos: {path}")

# %% [markdown]
# El gradiente es el del camino que se ejecutó. Con $x = 2$ hubo dos vueltas y la raíz:
# $f(x) = \sqrt{9x}$, así que $f'(x) = \frac{3}{2\sqrt{x}}$. Con $x = -0{,}5$ hubo tres
# vueltas y el cuadrado: $f(x) = (27x)^2$, así que $f'(x) = 1458\,x$.

# %% tags=["demo"]
formulas = {2.0: lambda v: 3 / (2 * math.sqrt(v)), -0.5: lambda v: 1458 * v}
for value, derivative in formulas.items():
    x = torch.tensor(value, requires_grad=True)
    fickle_model(x).backward()
    print(f"x = {value:+}: autograd {x.grad.item():.4f}   fórmula {derivative(value):.4f}")

# %% [markdown]
# El contraste es un grafo estático (*define-and-run*, el estilo de TensorFlow 1 o de un
# modelo exportado): primero se describe el grafo entero, sin datos, y después se ejecuta
# muchas veces. Al describirlo no hay valor con el que decidir un `if` de Python, así que el
# control de flujo tiene que ser una operación más del grafo (`tf.cond`, `tf.while_loop`).
# `torch.fx`, que obtiene el grafo de una función ejecutándola con valores simbólicos, choca
# con eso mismo en `fickle_model`:

# %% tags=["demo"]
import torch.fx

with muestra_error(torch.fx.proxy.TraceError):
    torch.fx.symbolic_trace(fickle_model)


# %% [markdown]
# En PyTorch el `if` es Python normal: se evalúa en cada pase con el dato de ese pase, y el
# grafo recoge solo la rama que se ejecutó.

# %% [markdown]
# ## 7 · Un eslabón más: la ReLU
#
# Vuelve al modelo de la sección 1 y pon una ReLU entre la parte lineal y la pérdida,
# $z = \mathrm{ReLU}(wx + b)$ y $L = (z - y)^2$. La derivada local de la ReLU vale 1 si la
# preactivación $wx + b$ es positiva y 0 si no. Ese factor entra en el producto:
#
# $$\frac{\partial L}{\partial w} = 2(z - y)\cdot \mathrm{ReLU}'(wx + b)\cdot x$$


# %% tags=["demo"]
def grads_by_hand(w, b, x, y):
    pre = w * x + b
    z = max(0.0, pre)
    dL_dz = 2 * (z - y)
    dz_dpre = 1.0 if pre > 0 else 0.0  # derivada local de la ReLU
    return dL_dz * dz_dpre * x, dL_dz * dz_dpre * 1.0


def grads_autograd(w, b, x, y):
    w = torch.tensor(w, requires_grad=True)
    b = torch.tensor(b, requires_grad=True)
    loss = (F.relu(w * x + b) - y) ** 2
    loss.backward()
    return w.grad.item(), b.grad.item()


# %% [markdown]
# Prueba dos valores de `b`: uno deja la preactivación en $+0{,}5$ y el otro en $-1$.

# %% tags=["demo"]
def show_pair(pair):
    return "(" + ", ".join(f"{g + 0.0:+.1f}" for g in pair) + ")"  # + 0.0: -0.0 pasa a 0.0


for b_val in (-1.0, -2.5):
    pre = 0.5 * 3.0 + b_val
    by_hand = grads_by_hand(0.5, b_val, 3.0, 2.0)
    by_autograd = grads_autograd(0.5, b_val, 3.0, 2.0)
    print(f"preactivación {pre:+}: (dL/dw, dL/db) a mano {show_pair(by_hand)}  "
          f"autograd {show_pair(by_autograd)}")

# %% [markdown]
# Con la preactivación negativa, la derivada local de la ReLU es 0 y anula todo el
# producto: ni `w` ni `b` reciben señal, aunque la pérdida no sea cero ($z = 0$ e $y = 2$).
# Eso es una ReLU muerta.

# %% [markdown]
# ## 8 · ReLU muerta, Leaky ReLU y GELU
#
# Comparemos tres activaciones y sus derivadas. Las derivadas no salen de fórmulas: las
# calcula autograd, con un solo `backward` por activación sobre 401 puntos. Como cada
# salida depende solo de su entrada, el gradiente de la **suma** de las salidas da la
# derivada en cada punto. Para Leaky ReLU usamos pendiente 0,1 (PyTorch usa 0,01 por
# defecto) para que se vea.

# %% tags=["demo"]
import matplotlib.pyplot as plt

STYLES = {"ReLU": "-", "LeakyReLU": "--", "GELU": "-"}
ACTIVATIONS = {
    "ReLU": F.relu,
    "LeakyReLU": lambda t: F.leaky_relu(t, negative_slope=0.1),
    "GELU": F.gelu,
}

fig, (ax_f, ax_d) = plt.subplots(1, 2, figsize=(9, 3))
for name, f in ACTIVATIONS.items():
    x = torch.linspace(-4, 4, 401, requires_grad=True)
    f(x).sum().backward()  # x.grad[i] = f'(x[i])
    ax_f.plot(x.detach(), f(x.detach()), STYLES[name], label=name)
    ax_d.plot(x.detach(), x.grad, STYLES[name], label=name)
ax_f.set_title("activación f(x)")
ax_f.set_ylabel("f(x)")
ax_d.set_title("derivada f'(x), con autograd")
ax_d.set_ylabel("f'(x)")
for ax in (ax_f, ax_d):
    ax.axhline(0, color="gray", lw=0.5)
    ax.set_xlabel("x")
    ax.legend()
plt.tight_layout()
plt.show()

# %% [markdown]
# La gráfica muestra la diferencia clave. La derivada de ReLU es exactamente 0 en toda la
# mitad negativa. La de Leaky ReLU vale 0,1 ahí: siempre pasa algo de señal. La de GELU es
# suave: a la izquierda toma valores pequeños (incluso negativos) y solo vale exactamente 0
# en un punto aislado, cerca de $x \approx -0{,}75$.
#
# La misma comparación en números, por si tu entorno no muestra gráficas:

# %% tags=["demo"]
def value_and_derivative(f, value):
    x = torch.tensor(value, requires_grad=True)
    output = f(x)
    output.backward()
    return output.item(), x.grad.item()


print("derivada f'(x) de cada activación")
print("      x " + "".join(f"{name:>12}" for name in ACTIVATIONS))
for value in (-3.0, -0.75, -0.1, 0.0, 0.5, 2.0):
    derivatives = [value_and_derivative(f, value)[1] for f in ACTIVATIONS.values()]
    print(f"{value:+7.2f} " + "".join(f"{d:12.4f}" for d in derivatives))

# %% [markdown]
# Fíjate también en $x = 0$: PyTorch toma $\mathrm{ReLU}'(0) = 0$ por convención.
#
# Una neurona está muerta cuando su preactivación es negativa para **todas** las muestras
# del lote (*batch*). Entonces su gradiente es 0 y un paso de descenso de gradiente no la
# mueve, sea cual sea la tasa de aprendizaje (*learning rate*) `lr`. Si nada cambia sus
# entradas, el paso siguiente es idéntico: queda muerta para siempre. Con Leaky ReLU y con
# GELU, la misma neurona sí recibe gradiente y `b` sube.

# %% tags=["demo"]
x = torch.rand(100) * 4 - 2  # 100 entradas entre -2 y 2
y = torch.ones(100)
lr = 0.1
for name, f in ACTIVATIONS.items():
    w = torch.tensor(0.1, requires_grad=True)
    b = torch.tensor(-0.4, requires_grad=True)  # w*x + b va de -0.6 a -0.2: negativo siempre
    loss = ((f(w * x + b) - y) ** 2).mean()
    loss.backward()
    print(f"{name:>9}: dL/dw = {w.grad.item():+.4f}  dL/db = {b.grad.item():+.4f}  "
          f"→ b tras un paso: {b.item() - lr * b.grad.item():+.4f}")

# %% [markdown]
# GELU no es inmune del todo: para preactivaciones muy negativas su derivada es diminuta
# (mira la fila $-3$ de la tabla). Pero no tiene una zona entera donde valga exactamente 0.
#
# Mueve el deslizador para ver el valor y la derivada de cada activación en un punto. Busca
# dónde el gradiente de la ReLU es exactamente 0.

# %% tags=["demo"]
import ipywidgets as widgets
from IPython.display import display

slider = widgets.FloatSlider(value=-1.0, min=-4.0, max=4.0, step=0.1, description="x")
widget_out = widgets.Output()


def update(change):
    with widget_out:
        widget_out.clear_output(wait=True)
        for name, f in ACTIVATIONS.items():
            value, derivative = value_and_derivative(f, change["new"])
            print(f"{name:>9}: f(x) = {value:+.4f}   f'(x) = {derivative:+.4f}")
        if value_and_derivative(F.relu, change["new"])[1] == 0.0:
            print("ReLU: el gradiente es exactamente 0; nada vuelve hacia atrás.")


slider.observe(update, names="value")
update({"new": slider.value})
display(widgets.VBox([slider, widget_out]))

# %% [markdown]
# ## Ejercicio 1 · Retropropagación a mano (3 puntos)
#
# Tienes una red de dos capas con ReLU y una pérdida de error cuadrático medio:
#
# $$z = xW_1 + b_1,\quad h = \mathrm{ReLU}(z),\quad \hat y = hW_2 + b_2,\quad
# L = \frac{1}{NK}\sum_{n,k} (\hat y_{nk} - y_{nk})^2$$
#
# Calcula **a mano**, con la regla de la cadena, los gradientes de $L$ respecto de
# $W_1, b_1, W_2, b_2$, sin autograd. Pista: empieza por $\partial L/\partial \hat y$ y
# baja capa por capa. El contrato de la función dice todo lo que se comprueba.

# %% exercise="manual_backward"
def manual_backward(x, y, W1, b1, W2, b2):
    """Gradientes de L = mean((relu(x @ W1 + b1) @ W2 + b2 - y) ** 2), calculados a mano
    con la regla de la cadena.

    <contrato>
    """
    ### BEGIN SOLUTION
    z = x @ W1 + b1
    h = torch.relu(z)
    y_hat = h @ W2 + b2
    d_y_hat = 2 * (y_hat - y) / y_hat.numel()
    d_h = d_y_hat @ W2.T
    d_z = d_h * (z > 0).to(z.dtype)
    return {"W1": x.T @ d_z, "b1": d_z.sum(dim=0), "W2": h.T @ d_y_hat, "b2": d_y_hat.sum(dim=0)}
    ### END SOLUTION


# %% test="manual_backward"


# %% [markdown]
# ## 9 · `backward` sobre una salida que no es un escalar
#
# Hasta ahora la pérdida era un solo número. Si la salida es un vector, `backward()` no sabe
# qué derivar: hay una derivada por cada par (salida, entrada), una matriz jacobiana entera.
# PyTorch se niega a adivinar.

# %% tags=["demo"]
x = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
squares = x**2  # un vector de 3 salidas
with muestra_error(RuntimeError):
    squares.backward()

# %% [markdown]
# La solución es decir cómo combinar las salidas con el argumento `gradient=`: un vector
# $v$ de la forma de la salida. `backward(v)` calcula el producto vector-Jacobiano
# (*vector-Jacobian product*) $v^\top J$, sin construir nunca $J$. Con $v$ lleno de unos,
# eso es el gradiente de la suma de las salidas.

# %% tags=["demo"]
x = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
(x**2).backward(torch.ones(3))
print("backward(unos):     ", x.grad)

x = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
(x**2).sum().backward()
print("sum().backward():   ", x.grad, " (2x)")

# %% [markdown]
# Otro $v$ da otra combinación. Con $v = (0, 1, 0)$ obtienes solo el gradiente de la
# segunda salida: una fila del jacobiano.

# %% tags=["demo"]
x = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
(x**2).backward(torch.tensor([0.0, 1.0, 0.0]))
print("backward((0, 1, 0)):", x.grad)

# %% [markdown]
# ## 10 · El grafo se consume: `retain_graph=True`
#
# Para derivar, cada nodo guarda los tensores que necesita. El nodo de `w * x`, por ejemplo,
# guarda `x`, porque $\partial (wx)/\partial w = x$. Los nodos no publican lo que guardan,
# pero `torch.autograd.graph.saved_tensors_hooks` te deja verlo: mientras dura el bloque
# `with`, llama a tu función con cada tensor que autograd guarda.

# %% tags=["demo"]
x = torch.linspace(-1.0, 2.0, 8)
y = 2 * x - 1


def new_params():
    return torch.tensor(0.5, requires_grad=True), torch.tensor(0.25, requires_grad=True)


saved = []


def keep(tensor):  # autograd la llama con cada tensor que guarda
    saved.append(tensor)
    return tensor


w, b = new_params()
with torch.autograd.graph.saved_tensors_hooks(keep, lambda tensor: tensor):
    y_hat = w * x + b
print(f"tensores guardados: {len(saved)}   ¿es x? {torch.equal(saved[0], x)}")


# %% [markdown]
# Solo `x`: la suma no necesita nada para derivar, y `w` solo haría falta para el gradiente
# de `x`, que no lo pide.
#
# Lo guardado ocupa memoria desde el pase hacia adelante hasta el pase hacia atrás, y cada
# capa guarda lo suyo. `medir_guardado` (de la celda de utilidades) suma los bytes de lo que
# ve pasar un `saved_tensors_hooks` como el de arriba. Mide pilas de capas `Linear` + `tanh`
# de 128 de ancho con un lote de 64, sin contar los pesos ni la entrada (ya
# existían antes):

# %% tags=["demo"]
import torch.nn as nn

batch = torch.randn(64, 128)
print("capas   guardado   por capa")
for depth in (1, 2, 4, 8, 16):
    layers = nn.Sequential(*[nn.Sequential(nn.Linear(128, 128), nn.Tanh())
                             for _ in range(depth)])
    saved_bytes, _ = medir_guardado(lambda layers=layers: layers(batch),
                                    excluir=[batch, *layers.parameters()])
    print(f"{depth:5}   {saved_bytes / 2**10:5.0f} KiB   {saved_bytes / depth / 2**10:5.0f} KiB")


# %% [markdown]
# La columna «por capa» no cambia: cada capa guarda la salida de su `tanh` (64 × 128
# números float32: 32 KiB), que es también la entrada que necesita la capa siguiente. La
# memoria guardada crece linealmente con la profundidad y sigue ocupada hasta el pase hacia
# atrás. El capítulo 7 cambia esa memoria por cómputo: el recálculo de activaciones
# (*gradient checkpointing*).

# %% [markdown]
# El pase hacia atrás libera esos tensores en cuanto los usa. Si dos pérdidas comparten el
# mismo pase hacia adelante, tras el primer `backward` la segunda ya no encuentra lo que
# necesita. El mensaje de error lo explica: los valores guardados se liberan al llamar a
# `.backward()`.

# %% tags=["demo"]
loss_a = ((y_hat - y) ** 2).mean()  # error cuadrático medio
loss_b = (y_hat**2).mean()  # penaliza salidas grandes
loss_a.backward()
with muestra_error(RuntimeError):
    loss_b.backward()

# %% [markdown]
# Con `retain_graph=True` en el primer `backward`, el grafo se conserva y el segundo
# funciona. Los dos gradientes se **suman** en `.grad`.

# %% tags=["demo"]
w, b = new_params()
y_hat = w * x + b
loss_a = ((y_hat - y) ** 2).mean()
loss_b = (y_hat**2).mean()
loss_a.backward(retain_graph=True)
loss_b.backward()
grad_two_passes = torch.stack([w.grad, b.grad])
print("dos backward:       ", grad_two_passes)

# %% [markdown]
# Si lo que quieres es la suma, no hace falta conservar nada: suma las pérdidas y haz un
# solo pase hacia atrás. Como la derivada de una suma es la suma de las derivadas, el
# resultado es el mismo.

# %% tags=["demo"]
w, b = new_params()
y_hat = w * x + b
(((y_hat - y) ** 2).mean() + (y_hat**2).mean()).backward()
grad_sum = torch.stack([w.grad, b.grad])
print("un backward de suma:", grad_sum)
print("¿iguales (salvo redondeo)?", torch.allclose(grad_two_passes, grad_sum))

# %% [markdown]
# Suele ser más simple y más barato: la parte compartida del grafo se recorre una vez, no
# dos, y se libera enseguida. Cuéntalo con un gancho (*hook*) en `y_hat`, que se ejecuta
# cada vez que un gradiente pasa por ese tensor.

# %% tags=["demo"]
passes = []


def count_pass(grad):
    passes.append(1)  # solo cuenta; no cambia el gradiente


for mode in ("dos backward", "un backward de suma"):
    passes.clear()
    w, b = new_params()
    y_hat = w * x + b
    y_hat.register_hook(count_pass)
    loss_a, loss_b = ((y_hat - y) ** 2).mean(), (y_hat**2).mean()
    if mode == "dos backward":
        loss_a.backward(retain_graph=True)
        loss_b.backward()
    else:
        (loss_a + loss_b).backward()
    print(f"{mode:>20}: el gradiente pasa {len(passes)} {'vez' if len(passes) == 1 else 'veces'} "
          "por y_hat")

# %% [markdown]
# `retain_graph=True` sigue siendo necesario cuando quieres los gradientes **por separado**:
# eso es lo que pide el ejercicio siguiente.

# %% [markdown]
# ## Ejercicio 2 · Dos pérdidas, un solo pase hacia adelante (2 puntos)
#
# Un modelo produce una salida y quieres los gradientes de **dos** pérdidas distintas,
# cada una por separado: el error cuadrático medio (`F.mse_loss`) y el error absoluto
# medio (`F.l1_loss`). Calcular dos veces el pase hacia adelante (*forward pass*) sería
# tirar cómputo: haz **uno solo** y recorre su grafo dos veces.
#
# Devuelve los dos juegos de gradientes, uno por pérdida, con un gradiente por parámetro.
# El contrato de la función dice todo lo que se comprueba.

# %% exercise="two_loss_grads"
def two_loss_grads(model, x, y):
    """Gradientes de F.mse_loss(model(x), y) y de F.l1_loss(model(x), y), cada uno por
    separado, con un solo pase hacia adelante. Los parámetros de model requieren gradiente
    y llegan todos a la salida.

    <contrato>
    """
    ### BEGIN SOLUTION
    out = model(x)
    params = list(model.parameters())
    grads_a = torch.autograd.grad(F.mse_loss(out, y), params, retain_graph=True)
    grads_b = torch.autograd.grad(F.l1_loss(out, y), params)
    return list(grads_a), list(grads_b)
    ### END SOLUTION


# %% test="two_loss_grads"


# %% [markdown]
# ## 11 · `torch.autograd.grad` y derivadas de orden superior
#
# `backward()` escribe en el `.grad` de las hojas. `torch.autograd.grad(outputs, inputs)`
# hace el mismo recorrido pero **devuelve** los gradientes como una tupla y no toca `.grad`.
# Con $f(x) = x^3$ debe dar $f'(x) = 3x^2$.

# %% tags=["demo"]
x = torch.tensor([-1.0, 0.5, 2.0], requires_grad=True)
(df_dx,) = torch.autograd.grad((x**3).sum(), x)
print("autograd.grad:", df_dx, "  3x² =", 3 * x.detach() ** 2)
print("x.grad sigue en", x.grad)

# %% [markdown]
# Ese gradiente es un tensor normal, sin historia: no tiene `grad_fn`. Si intentas
# derivarlo otra vez, PyTorch protesta.

# %% tags=["demo"]
print("df_dx.grad_fn =", df_dx.grad_fn)
with muestra_error(RuntimeError):
    torch.autograd.grad(df_dx.sum(), x)

# %% [markdown]
# Con `create_graph=True`, el cálculo del gradiente también se registra en un grafo. El
# resultado tiene `grad_fn` y puedes derivarlo: la segunda derivada debe ser $f''(x) = 6x$.

# %% tags=["demo"]
(df_dx,) = torch.autograd.grad((x**3).sum(), x, create_graph=True)
print("df_dx.grad_fn =", df_dx.grad_fn)
(d2f_dx2,) = torch.autograd.grad(df_dx.sum(), x)
print("f'' con autograd:", d2f_dx2, "  6x =", 6 * x.detach())

# %% [markdown]
# `backward(create_graph=True)` también registra el gradiente en un grafo, pero lo deja en
# `.grad`, y PyTorch avisa. Captura el aviso para leerlo entero:

# %% tags=["demo"]
w = torch.tensor(1.5, requires_grad=True)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    (w**3).backward(create_graph=True)
for warning in caught:
    print(f"{warning.category.__name__}: {warning.message}")

nodes, reaches_w = [w.grad.grad_fn], False
while nodes:  # ¿el grafo de w.grad termina en el AccumulateGrad de w?
    node = nodes.pop()
    if node is not None:
        reaches_w = reaches_w or getattr(node, "variable", None) is w
        nodes.extend(n for n, _ in node.next_functions)
print("w.grad =", w.grad, "  ¿su grafo llega hasta w?", reaches_w)


# %% [markdown]
# Es un ciclo de referencias: `w` guarda su `.grad`, el grafo de ese `.grad` termina en el
# nodo `AccumulateGrad` de `w`, y ese nodo apunta a `w`. El conteo de referencias de Python
# no libera un ciclo, así que esa memoria puede quedar retenida (la fuga de la que habla el
# aviso). Usa `torch.autograd.grad(..., create_graph=True)`, como arriba: devuelve el
# gradiente sin guardarlo en `.grad`. Si necesitas `backward`, pon `w.grad = None` al
# terminar para romper el ciclo.

# %% [markdown]
# Esto es lo que permite meter un gradiente dentro de una pérdida y seguir entrenando: el
# gradiente forma parte del grafo, así que la pérdida se puede derivar respecto de los
# parámetros. Compruébalo con un parámetro `w`: la pérdida es el cuadrado de la derivada de
# $\tanh(wx)$ respecto de $x$, y su gradiente respecto de `w` coincide con una diferencia
# finita.

# %% tags=["demo"]
def penalty(w, x):
    (df_dx,) = torch.autograd.grad(torch.tanh(w * x), x, create_graph=True)
    return df_dx**2


x = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)
w = torch.tensor(1.3, dtype=torch.float64, requires_grad=True)
penalty(w, x).backward()

h = 1e-6
w_plus = torch.tensor(1.3 + h, dtype=torch.float64)
w_minus = torch.tensor(1.3 - h, dtype=torch.float64)
finite_diff = (penalty(w_plus, x) - penalty(w_minus, x)).item() / (2 * h)
print(f"dP/dw con autograd: {w.grad.item():.6f}   diferencia finita: {finite_diff:.6f}")

# %% [markdown]
# Para verlo en una curva, usa $f(x) = \tanh(x)$. Sus derivadas son
# $f' = 1 - \tanh^2 x$ y $f'' = -2\tanh x\,(1 - \tanh^2 x)$. Las dos curvas de derivadas
# salen de autograd; las fórmulas solo sirven para comprobar.

# %% tags=["demo"]
x = torch.linspace(-3, 3, 301, requires_grad=True)
f = torch.tanh(x)
(df,) = torch.autograd.grad(f.sum(), x, create_graph=True)
(d2f,) = torch.autograd.grad(df.sum(), x)

t = torch.tanh(x.detach())
print(f"error máximo f':  {(df.detach() - (1 - t**2)).abs().max().item():.1e}")
print(f"error máximo f'': {(d2f - (-2 * t * (1 - t**2))).abs().max().item():.1e}")

plt.figure(figsize=(8, 3))
plt.plot(x.detach(), f.detach(), label="f(x) = tanh(x)")
plt.plot(x.detach(), df.detach(), label="f'(x)")
plt.plot(x.detach(), d2f, label="f''(x)")
plt.axhline(0, color="gray", lw=0.5)
plt.xlabel("x")
plt.ylabel("valor")
plt.title("tanh y sus dos primeras derivadas, con autograd")
plt.legend()
plt.tight_layout()
plt.show()

# %% [markdown]
# ## Ejercicio 3 · Penalización del gradiente (3 puntos)
#
# Algunas pérdidas dependen del **gradiente** del modelo respecto de su entrada. La
# penalización del gradiente de WGAN-GP pide que esa norma valga 1 en cada muestra:
#
# $$P = \frac{1}{N}\sum_{i=1}^{N}\Big(\big\lVert \nabla_{x_i} f(x)_i \big\rVert_2 - 1\Big)^2$$
#
# donde `model` lleva `x` de forma `(N, D)` a `(N, 1)` y cada salida depende solo de su
# fila. $P$ se suma a la pérdida de entrenamiento, así que tiene que poder derivarse
# respecto de los parámetros del modelo: calcula $\nabla_x$ con `torch.autograd.grad`. El
# contrato de la función dice todo lo que se comprueba.

# %% exercise="gradient_penalty"
def gradient_penalty(model, x):
    """Penalización del gradiente de WGAN-GP: media sobre las filas de (‖∂model(x)_i/∂x_i‖₂ − 1)².
    Los parámetros de model requieren gradiente.

    <contrato>
    """
    ### BEGIN SOLUTION
    x = x.detach().requires_grad_(True)
    (grad_x,) = torch.autograd.grad(model(x).sum(), x, create_graph=True)
    return ((grad_x.norm(dim=1) - 1) ** 2).mean()
    ### END SOLUTION


# %% test="gradient_penalty"


# %% [markdown]
# ## 12 · El modo hacia adelante y los jacobianos enteros
#
# `backward` es el **modo inverso** (*reverse mode*): cada pase hacia atrás da un producto
# vector-Jacobiano $u^\top J$, una combinación de las **filas** de $J$ (sección 9). Para una
# pérdida, que es una sola salida, una fila es todo el gradiente: un pase basta, tenga el
# modelo los parámetros que tenga.
#
# El **modo hacia adelante** (*forward mode*) da el producto Jacobiano-vector $J v$, una
# combinación de las **columnas**: cuánto cambian todas las salidas si las entradas se
# mueven en la dirección $v$. Se calcula durante el propio pase hacia adelante: cada valor
# viaja con su derivada en la dirección $v$ (un número dual), y no queda grafo guardado
# para después. PyTorch lo ofrece como `torch.func.jvp` y, con números duales explícitos,
# como `torch.autograd.forward_ad`. Con $f(x) = (x_0 x_1,\ \sin x_2 + x_0^2)$, el jacobiano
# es $J = \begin{pmatrix} x_1 & x_0 & 0 \\ 2x_0 & 0 & \cos x_2 \end{pmatrix}$; en
# $x = (1, 2, 0.5)$, su primera columna es $(2, 2)$ y su primera fila $(2, 1, 0)$.

# %% tags=["demo"]
import time

import torch.autograd.forward_ad as fwAD
from torch.func import hessian, jacfwd, jacrev, jvp, vjp


def f(x):
    return torch.stack([x[0] * x[1], torch.sin(x[2]) + x[0] ** 2])


x = torch.tensor([1.0, 2.0, 0.5])
v = torch.tensor([1.0, 0.0, 0.0])
value, column = jvp(f, (x,), (v,))
print("f(x) =", value.tolist(), "· J v con v = e₁ (primera columna):", column.tolist())

with fwAD.dual_level():
    dual = fwAD.make_dual(x, v)  # x, con su derivada en la dirección v
    tangent = fwAD.unpack_dual(f(dual)).tangent
print("lo mismo con forward_ad, números duales:", tangent.tolist())

value, pullback = vjp(f, x)
(row,) = pullback(torch.tensor([1.0, 0.0]))
print("uᵀ J con u = e₁ (primera fila), modo inverso:", row.tolist())
print("J entero con jacfwd:", jacfwd(f)(x).tolist())
print("J entero con jacrev:", jacrev(f)(x).tolist())

# %% [markdown]
# `jacfwd` construye $J$ columna a columna, un producto $Jv$ por **entrada**; `jacrev`,
# fila a fila, un producto $u^\top J$ por **salida**. Los dos agrupan esos productos en un
# solo cálculo por lotes (con `torch.func.vmap`), pero el trabajo crece con el número de
# columnas o de filas. El conteo predice: pocas entradas y muchas salidas (una $J$ alta),
# el modo hacia adelante; muchas entradas y pocas salidas (una $J$ ancha, como la de una
# pérdida), el inverso. La celda siguiente lo mide en tu máquina con dos funciones que
# tienen una capa oculta de 1000 unidades: en funciones diminutas el coste fijo de cada
# modo pesa más que el número de productos, y el conteo no se nota.

# %% tags=["demo"]
def best_ms(fn, *args, repeats=5):
    """El mejor de varios tiempos de ``fn(*args)``, en milisegundos."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return 1e3 * min(times)


generator = torch.Generator().manual_seed(0)
few, many = 4, 1000


def layer(n_out, n_in):
    return torch.randn(n_out, n_in, generator=generator) / n_in**0.5


tall_1, tall_2 = layer(many, few), layer(many, many)
wide_1, wide_2 = layer(many, many), layer(few, many)


def tall(x):  # 4 entradas → 1000 salidas
    return tall_2 @ torch.tanh(tall_1 @ x)


def wide(x):  # 1000 entradas → 4 salidas
    return wide_2 @ torch.tanh(wide_1 @ x)


for name, g, point in (("J alta  (4 → 1000)", tall, torch.randn(few, generator=generator)),
                       ("J ancha (1000 → 4)", wide, torch.randn(many, generator=generator))):
    assert torch.allclose(jacfwd(g)(point), jacrev(g)(point), atol=1e-5)
    forward_ms, reverse_ms = best_ms(jacfwd(g), point), best_ms(jacrev(g), point)
    winner = "jacfwd" if forward_ms < reverse_ms else "jacrev"
    print(f"{name}: jacfwd {forward_ms:6.1f} ms · jacrev {reverse_ms:6.1f} ms → aquí gana "
          f"{winner}")

# %% [markdown]
# La hessiana de una función escalar es el jacobiano de su gradiente. `torch.func.hessian`
# combina los dos modos según el conteo: `jacrev` para el gradiente (una salida, muchas
# entradas) y `jacfwd` sobre él (un jacobiano cuadrado, de $n$ entradas y $n$ salidas). Con
# $f(x) = \sum_i x_i^3$ es la matriz diagonal de $6x_i$, la misma segunda derivada que dio
# `create_graph=True` en la sección 11, ahora como matriz.

# %% tags=["demo"]
def cube_sum(x):
    return (x**3).sum()


x = torch.tensor([-1.0, 0.5, 2.0])
print("hessian:\n", hessian(cube_sum)(x))
print("¿igual a diag(6x)?", torch.allclose(hessian(cube_sum)(x), torch.diag(6 * x)))

# %% [markdown]
# ## Resumen
#
# - `backward()` aplica la regla de la cadena: multiplica las derivadas locales a lo largo
#   del grafo, igual que harías a mano.
# - Un tensor que llega a la pérdida por varios caminos recibe la suma de lo que aporta cada
#   uno; por eso `.grad` acumula (`+=`), también entre dos `backward`, y hay que vaciarlo
#   entre pasos de entrenamiento.
# - Cada operación sobre tensores con `requires_grad=True` añade un nodo al grafo
#   computacional; `grad_fn` y `next_functions` te dejan recorrerlo, y los nodos
#   `AccumulateGrad` marcan las hojas.
# - Solo las hojas con `requires_grad=True` reciben `.grad`; para ver el gradiente de un
#   tensor intermedio, llama a `retain_grad()` antes del pase hacia atrás.
# - Un motor de autograd cabe en unas 50 líneas: nodos que recuerdan sus entradas, una derivada
#   local por operación y un recorrido en orden topológico inverso.
# - El grafo se construye de nuevo en cada pase hacia adelante (*define-by-run*): un `if` o
#   un bucle que dependen de los datos dan grafos distintos, y autograd deriva el camino
#   que se ejecutó. Un grafo estático necesita el control de flujo dentro del grafo.
# - Una derivada local igual a 0 anula el producto entero: es la ReLU muerta. Leaky ReLU
#   (pendiente fija en los negativos) y GELU (derivada suave) siguen dejando pasar señal.
# - Una salida no escalar necesita `gradient=v` (un producto vector-Jacobiano); un segundo
#   `backward` necesita `retain_graph=True`, aunque sumar las pérdidas suele ser mejor.
# - Lo que el grafo guarda crece linealmente con el número de capas y vive hasta el pase
#   hacia atrás.
# - `torch.autograd.grad` devuelve gradientes sin tocar `.grad`; con `create_graph=True`
#   el gradiente se puede derivar otra vez. Para eso, mejor que `backward(create_graph=True)`,
#   que crea un ciclo de referencias.
# - El modo inverso da $u^\top J$ (filas) y el modo hacia adelante $J v$ (columnas, con
#   `torch.func.jvp` o `torch.autograd.forward_ad`). `jacrev` conviene con pocas salidas,
#   `jacfwd` con pocas entradas; `hessian` usa los dos.

