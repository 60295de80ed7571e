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
# # Capítulo 2 · Sin grafo: `requires_grad`, `no_grad`, `inference_mode` y `detach`
#
# En el capítulo 1 viste que PyTorch anota cada operación en un grafo computacional
# (*computational graph*) para poder derivar después. Ese registro cuesta memoria y tiempo, y
# muchas veces no lo necesitas: al evaluar, al servir un modelo o al entrenar solo una parte
# de él. Este capítulo trata de **cuándo no construir el grafo** y de cómo apagarlo bien.
#
# **Al terminar sabrás:**
#
# - qué tensores registran operaciones (`requires_grad`), cuáles son hojas (`is_leaf`) y cómo
#   leer el gradiente de un tensor intermedio con `retain_grad()`;
# - qué apaga cada herramienta: `torch.no_grad()`, `.detach()` y `torch.inference_mode()`, y
#   qué error da cada una cuando se usa mal;
# - qué es un tensor de inferencia (*inference tensor*) y por qué no puede volver a un cálculo
#   que se deriva: con eso decides cuál usar para servir un modelo y cuál para evaluar
#   durante el entrenamiento (pseudo-etiquetas, un profesor EMA, una pérdida de
#   destilación);
# - congelar parámetros (*frozen parameters*) para entrenar solo la cabeza de un modelo;
# - medir lo que ahorras: tiempo y memoria retenida para el pase hacia atrás (*backward
#   pass*);
# - por qué una operación *in-place* puede romper el pase hacia atrás, y cómo exportar un
#   tensor a NumPy con `.detach().cpu().numpy()`;
# - derivar respecto de la **entrada** (un mapa de saliencia) y obtener el gradiente de cada
#   muestra por separado con `torch.func`.
#
# Necesitas el capítulo 1: `grad_fn`, hojas, `backward()` y `torch.autograd.grad`.

# %%
import time
import warnings
from collections import OrderedDict

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

# %% [markdown]
# ## 1 · Quién registra operaciones: `requires_grad`
#
# Un tensor con `requires_grad=True` le pide a autograd que anote todo lo que se calcula con
# él. La marca se contagia: si **alguna** entrada de una operación la tiene, el resultado
# también, y además recibe un `grad_fn`.

# %% tags=["demo"]
w = torch.tensor([1.0, -2.0], requires_grad=True)
x = torch.tensor([3.0, 0.5])
for name, t in {"w": w, "x": x, "x * 2": x * 2, "w * x": w * x}.items():
    print(f"{name:>6}: requires_grad={t.requires_grad!s:<5}  is_leaf={t.is_leaf!s:<5}  "
          f"grad_fn={type(t.grad_fn).__name__ if t.grad_fn else None}")

# %% [markdown]
# Solo los tipos continuos (coma flotante o complejos) tienen derivada. Un tensor de enteros
# (o de booleanos) no puede pedir gradiente: PyTorch lo rechaza, tanto al crearlo como después.

# %% tags=["demo"]
with muestra_error(RuntimeError):
    torch.tensor([1, 2, 3], requires_grad=True)
with muestra_error(RuntimeError):
    torch.arange(3).requires_grad_()
with muestra_error(RuntimeError):
    torch.tensor([True, False]).requires_grad_()
print("en coma flotante sí:", torch.arange(3.0).requires_grad_().requires_grad)

# %% [markdown]
# Recuerda del capítulo 1: tras `backward()`, solo las hojas (*leaf tensors*) con
# `requires_grad=True` guardan su gradiente en `.grad`. Un tensor intermedio (*non-leaf
# tensor*) lo recibe por el camino y lo suelta enseguida, porque guardarlo costaría memoria
# en cada capa. Leer su `.grad` da `None` y un aviso, que aquí capturamos para mostrarlo.

# %% tags=["demo"]
h = torch.tanh(w * x)  # intermedio
loss = (h**2).sum()
loss.backward()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    print("w.grad =", w.grad, "   h.grad =", h.grad)
print("aviso:", str(caught[0].message)[:75] + "…")

# %% [markdown]
# Si necesitas el gradiente de un intermedio, pídelo **antes** del pase hacia atrás con
# `h.retain_grad()`. Aquí debe valer $\partial L/\partial h = 2h$.

# %% tags=["demo"]
w.grad = None
h = torch.tanh(w * x)
h.retain_grad()
(h**2).sum().backward()
print("h.grad =", h.grad, "   2h =", 2 * h.detach())

# %% [markdown]
# La otra forma es `torch.autograd.grad(loss, h)`: devuelve $\partial L/\partial h$ sin
# tocar ningún `.grad`. Las dos dan lo mismo; elige según si quieres además los gradientes
# de los parámetros.

# %% tags=["demo"]
w_grad_before = w.grad.clone()
h = torch.tanh(w * x)
(dL_dh,) = torch.autograd.grad((h**2).sum(), h)
print("autograd.grad:", dL_dh)
print("¿w.grad cambió?", not torch.equal(w.grad, w_grad_before))

# %% [markdown]
# ## 2 · Apagar el registro: `torch.no_grad()` y `.detach()`
#
# Dentro de un bloque `with torch.no_grad():` nada se anota, aunque las entradas tengan
# `requires_grad=True`. El resultado no tiene `grad_fn`: para autograd es un dato más.

# %% tags=["demo"]
w = torch.tensor([1.0, -2.0], requires_grad=True)
with torch.no_grad():
    y_without = w * 3
y_with = w * 3
print("bajo no_grad:  requires_grad =", y_without.requires_grad, "  grad_fn =", y_without.grad_fn)
print("fuera:         requires_grad =", y_with.requires_grad, "  grad_fn =", y_with.grad_fn)

# %% [markdown]
# El uso equivocado más común: calcular la pérdida dentro de `no_grad` y luego pedir
# `backward()`. No hay grafo que recorrer, y PyTorch lo dice.

# %% tags=["demo"]
with torch.no_grad():
    loss = (w * 3).sum()
with muestra_error(RuntimeError):
    loss.backward()

# %% [markdown]
# Y el uso correcto que más verás: actualizar parámetros a mano. Un paso de descenso de
# gradiente es una operación *in-place* sobre una hoja que requiere gradiente. Fuera de
# `no_grad`, PyTorch la prohíbe (se anotaría en el grafo); dentro, es un simple cambio de
# valores.

# %% tags=["demo"]
lr = 0.1
(w**2).sum().backward()
with muestra_error(RuntimeError):
    w -= lr * w.grad
with torch.no_grad():
    w -= lr * w.grad
print("w tras un paso:", w, " ¿sigue siendo hoja?", w.is_leaf)

# %% [markdown]
# `no_grad` también sirve como decorador (*decorator*): toda la función corre sin registrar.

# %% tags=["demo"]
@torch.no_grad()
def triple(t):
    return t * 3


print("triple(w).requires_grad =", triple(w).requires_grad)

# %% [markdown]
# `.detach()` actúa sobre **un** tensor: devuelve otro con los mismos datos (comparten
# memoria), sin `grad_fn` y sin `requires_grad`. El gradiente no pasa por ahí: es un corte en
# el grafo. Compruébalo con $L = w^2$ escrito como `w.detach() * w`: el factor cortado cuenta
# como una constante y la derivada sale $w$ en lugar de $2w$.

# %% tags=["demo"]
w = torch.tensor(3.0, requires_grad=True)
(w * w).backward()
print("d(w·w)/dw          =", w.grad.item(), " (2w)")
w.grad = None
(w.detach() * w).backward()
print("d(w.detach()·w)/dw =", w.grad.item(), " (w: el factor cortado no cuenta)")

# %% [markdown]
# ## 3 · `torch.inference_mode()`: más estricto, para servir
#
# `inference_mode` apaga lo mismo que `no_grad` y algo más: los tensores que crea son
# tensores de inferencia (*inference tensors*), sin contador de versiones ni seguimiento de
# vistas. En principio es algo más barato (lo medirás en la sección 4), y se usa igual: como
# bloque `with` o como decorador.

# %% tags=["demo"]
linear = nn.Linear(3, 2)
inputs = torch.randn(4, 3)
with torch.inference_mode():
    out_inf = linear(inputs)
with torch.no_grad():
    out_nog = linear(inputs)
print("inference_mode: requires_grad =", out_inf.requires_grad,
      "  is_inference =", out_inf.is_inference())
print("no_grad:        requires_grad =", out_nog.requires_grad,
      "  is_inference =", out_nog.is_inference())

# %% [markdown]
# Un tensor de inferencia no puede pasar a requerir gradiente fuera del modo: `requires_grad_()`
# falla con su propio mensaje (dentro de `inference_mode` sí se permite). Con la salida de
# `no_grad` funciona: es un tensor normal que se convierte en una hoja nueva.

# %% tags=["demo"]
with muestra_error(RuntimeError):
    out_inf.requires_grad_()
with torch.inference_mode():  # sobre una copia, para no cambiar out_inf
    print("dentro del modo sí:", out_inf.clone().requires_grad_().requires_grad)
with torch.no_grad():
    leaf = linear(inputs)
leaf.requires_grad_()
print("salida de no_grad tras requires_grad_(): requires_grad =", leaf.requires_grad,
      "  is_leaf =", leaf.is_leaf)

# %% [markdown]
# El precio de ese ahorro: autograd no puede guardar un tensor de inferencia para el pase
# hacia atrás. Supón que calculas unas características (*features*) con un
# codificador fijo en `inference_mode` y luego entrenas una capa encima. Falla en cuanto la
# capa necesita guardar su entrada para el pase hacia atrás:

# %% tags=["demo"]
head = nn.Linear(2, 1)
with muestra_error(RuntimeError):
    head(out_inf).sum().backward()

# %% [markdown]
# La misma idea con `no_grad` funciona: su salida es un tensor normal, solo que sin historia.
# Por eso, para "congelar" un codificador y entrenar encima, se usa `no_grad` (o, mejor aún,
# parámetros congelados; lo verás en la sección 5).

# %% tags=["demo"]
head(out_nog).sum().backward()
print("con no_grad: la cabeza recibe gradiente:", head.weight.grad is not None)

# %% [markdown]
# Los tensores de inferencia tampoco aceptan cambios *in-place* fuera del modo, ni tienen
# contador de versiones. Si de verdad necesitas uno en un grafo, `clone()` fuera del modo te
# da un tensor normal.

# %% tags=["demo"]
with muestra_error(RuntimeError):
    out_inf.add_(1)
with muestra_error(RuntimeError):
    out_inf._version
copied = out_inf.clone()
head(copied).sum().backward()
print("tras clone(): is_inference =", copied.is_inference(), "  y el backward funciona")

# %% [markdown]
# ### El caso que decide: tensores que vuelven al entrenamiento
#
# Las fuentes no se ponen de acuerdo: unas recomiendan `inference_mode` para servir **y para
# evaluar**; otras, `no_grad` para evaluar mientras entrenas. Para una validación que solo
# produce números (una pérdida con `.item()`, una exactitud) los dos dan lo mismo:

# %% tags=["demo"]
torch.manual_seed(0)
x_val, y_val = torch.randn(32, 3), torch.randint(0, 2, (32,))
for context in (torch.no_grad, torch.inference_mode):
    with context():
        print(f"{context.__name__:>14}: pérdida de validación "
              f"{F.cross_entropy(linear(x_val), y_val).item():.6f}")

# %% [markdown]
# Lo que decide es si un tensor calculado sin grafo **vuelve a entrar en una pérdida que se
# deriva**. Pasa en dos técnicas habituales:
#
# - **pseudo-etiquetas** (*pseudo-labels*): un modelo etiqueta datos sin etiquetar, y otro (o
#   él mismo) se entrena con esas etiquetas;
# - **profesor EMA** (*EMA teacher*): una copia del modelo cuyos pesos son una media móvil
#   exponencial (*exponential moving average*) de los del alumno; su salida es el objetivo de
#   una pérdida de consistencia.
#
# En los dos, la salida del profesor es una constante para el gradiente: nadie quiere derivar
# a través de ella. Prepara los dos objetivos con `inference_mode`, como haría quien lo usa
# "para evaluar":

# %% tags=["demo"]
import copy

torch.manual_seed(0)
student = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
teacher = copy.deepcopy(student).requires_grad_(False)
with torch.no_grad():  # la media móvil: teacher ← 0.99·teacher + 0.01·student
    for p_teacher, p_student in zip(teacher.parameters(), student.parameters()):
        p_teacher.lerp_(p_student, 0.01)

unlabeled = torch.randn(16, 4)
with torch.inference_mode():
    pseudo_labels = teacher(unlabeled).argmax(dim=1)
    target = teacher(unlabeled).softmax(dim=1)
print("is_inference: pseudo-etiquetas", pseudo_labels.is_inference(),
      "  objetivo del profesor", target.is_inference())

# %% [markdown]
# Ahora úsalos para entrenar al alumno. Las dos pérdidas fallan, y al **calcularlas**, no en
# `backward()`: es el momento en que autograd intenta guardar el objetivo para el pase hacia
# atrás. El error solo aparece cuando autograd necesita guardar el tensor de inferencia: una
# suma no guarda sus entradas, y pasa sin aviso.

# %% tags=["demo"]
with muestra_error(RuntimeError):  # pseudo-etiquetas
    F.cross_entropy(student(unlabeled), pseudo_labels)
with muestra_error(RuntimeError):  # consistencia con el profesor EMA
    F.mse_loss(student(unlabeled).softmax(dim=1), target)
total = (student(unlabeled) + target).sum()
print("una suma con el objetivo sí se registra: grad_fn =", type(total.grad_fn).__name__)

# %% [markdown]
# El mensaje propone los dos arreglos. Con `no_grad` los objetivos son tensores normales y el
# entrenamiento funciona; con `clone()` **fuera** del modo también, y el gradiente del alumno
# es idéntico, porque en los dos casos el objetivo es una constante. (Un `clone()` dentro de
# `inference_mode` da otro tensor de inferencia.)

# %% tags=["demo"]
def student_loss(labels, probs):
    logits = student(unlabeled)
    return F.cross_entropy(logits, labels) + F.mse_loss(logits.softmax(dim=1), probs)


with torch.no_grad():
    pseudo_labels_ng = teacher(unlabeled).argmax(dim=1)
    target_ng = teacher(unlabeled).softmax(dim=1)
student_loss(pseudo_labels_ng, target_ng).backward()
grad_no_grad = student[0].weight.grad.clone()

student.zero_grad()
student_loss(pseudo_labels.clone(), target.clone()).backward()
print("mismo gradiente con no_grad que con clone():",
      torch.equal(grad_no_grad, student[0].weight.grad))
print("el profesor no recibe gradiente:", all(p.grad is None for p in teacher.parameters()))
with torch.inference_mode():
    print("clone() dentro del modo: is_inference =", target.clone().is_inference())

# %% [markdown]
# **Cuál usar.** Lo que acabas de ejecutar decide el desacuerdo:
#
# - **Servir un modelo** (inferencia, *inference*): `torch.inference_mode()`. Las salidas
#   van a un usuario y no vuelven a un grafo; si por error vuelven a una operación que
#   necesita guardarlas, el error salta en esa línea.
# - **Evaluar durante el entrenamiento** (validación en cada época (*epoch*), métricas) y,
#   sobre todo, **producir tensores que vuelven al entrenamiento** (pseudo-etiquetas, la
#   salida de un profesor EMA, características de un codificador fijo): `torch.no_grad()`.
#   Una validación que solo da números también funcionaría con `inference_mode`, pero dentro
#   del bucle de entrenamiento es fácil que un tensor acabe en una pérdida, y con `no_grad`
#   eso funciona y da el gradiente correcto. Si ya tienes un tensor de inferencia,
#   `clone()` fuera del modo.
# - **Cortar un solo tensor** dentro de un cálculo que sí se deriva: `.detach()`.
#
# La regla práctica: ¿el tensor puede volver a una pérdida que se deriva? `no_grad`. ¿Solo
# sale del programa (una respuesta servida, un número con `.item()`)? `inference_mode`.
#
# Ninguno cambia el modo del modelo: `model.eval()` (Dropout, BatchNorm) es otra cosa, y en
# evaluación hacen falta los dos. Lo verás en el capítulo 5.

# %% tags=["demo"]
@torch.inference_mode()
def serve(model, batch):
    return model(batch).argmax(dim=1)


print("clases predichas:", serve(linear, inputs).tolist())

# %% [markdown]
# ## Ejercicio 1 · Una pérdida de destilación (3 puntos)
#
# En la destilación de conocimiento (*knowledge distillation*), un modelo grande ya entrenado,
# el profesor, enseña a uno pequeño, el alumno: el alumno aprende a imitar las probabilidades
# del profesor, suavizadas con una temperatura $T$. Con $p = \mathrm{softmax}(z_P / T)$ y
# $q = \mathrm{softmax}(z_A / T)$, fila a fila ($z_P$ y $z_A$ son los logits del profesor y
# del alumno), la pérdida es la divergencia KL (*Kullback–Leibler divergence*)
# $\mathrm{KL}(p \,\|\, q)$, media sobre las $N$ muestras del lote y multiplicada por $T^2$:
#
# $$L = \frac{T^2}{N} \sum_{i=1}^{N} \sum_{k=1}^{K} p_{ik} \left(\log p_{ik} - \log q_{ik}\right)$$
#
# Con temperaturas altas, dividir los logits por $T$ encoge los gradientes de la KL en un
# factor cercano a $1/T^2$; el factor $T^2$ lo compensa. `F.kl_div` calcula la doble suma:
# espera log-probabilidades en su primer argumento y probabilidades en el segundo, y con
# `reduction="batchmean"` la divide por $N$.
#
# Escribe `distillation_loss(student, teacher, x, temperature)`. Quien llama hará después
# `loss.backward()` y un paso del optimizador del alumno; la comprobación hace ese
# `backward()` por ti y mira dónde acaba el gradiente. El profesor es un modelo cualquiera:
# puede llegar congelado, como el profesor EMA de la sección 3, entrenable, porque otro
# código lo entrena, o una parte de cada, y en cualquier modo `train()`/`eval()`. Tu función
# no cambia nada suyo. El contrato de la docstring dice, cláusula a cláusula, lo que se
# comprueba.
#
# Antes de escribir, decide con lo que ejecutaste en la sección 3: para la salida del
# profesor, ¿`torch.no_grad()` o `torch.inference_mode()`? ¿Qué hará la pérdida con esa
# salida, y qué necesita guardar para el pase hacia atrás? Y si el profesor llega
# entrenable, ¿qué impide que ese `backward()` le deje un gradiente?

# %% exercise="distillation_loss"
def distillation_loss(student, teacher, x, temperature):
    """Pérdida de destilación: T² · KL(p ‖ q), media sobre las muestras del lote, con
    p = softmax(teacher(x) / T) y q = softmax(student(x) / T) por fila.

    <contrato>
    """
    ### BEGIN SOLUTION
    with torch.no_grad():
        target = F.softmax(teacher(x) / temperature, dim=1)
    log_probs = F.log_softmax(student(x) / temperature, dim=1)
    return F.kl_div(log_probs, target, reduction="batchmean") * temperature**2
    ### END SOLUTION


# %% test="distillation_loss"


# %% [markdown]
# ## 4 · Medido, no supuesto: tiempo y memoria
#
# ¿Cuánto ahorras? Mide el mismo pase hacia adelante (*forward pass*) de tres formas:
# registrando el grafo, bajo `no_grad` y bajo `inference_mode`. Dos magnitudes:
#
# - **tiempo**: el mejor de varios pases, con `time.perf_counter`;
# - **memoria retenida**: los bytes de activaciones que el grafo guarda para el pase hacia
#   atrás. Los cuenta un `saved_tensors_hooks`, que ve cada tensor que autograd guarda; se
#   cuenta cada bloque de memoria una vez y no se cuentan los pesos, que existen de todos
#   modos. Es la memoria **extra** que sigue ocupada mientras la salida esté viva.
#
# ¿Por qué no medir el pico de memoria del proceso? En CPU no es fiable desde Python:
# `tracemalloc` solo ve la memoria que pide Python, no la de los tensores. Compruébalo con un
# tensor de 4 MB. (En GPU sí tendrías `torch.cuda.max_memory_allocated()`.)

# %% tags=["demo"]
import tracemalloc

tracemalloc.start()
big = torch.zeros(1_000_000)
_, peak = tracemalloc.get_traced_memory()
tracemalloc.stop()
print(f"tensor de {big.nbytes / 1e6:.0f} MB; pico que ve tracemalloc: {peak / 1e6:.4f} MB")

# %%
def saved_bytes(model, batch, context):
    """Bytes de activaciones que autograd guarda para el pase hacia atrás durante un pase
    hacia adelante (sin contar los pesos)."""
    weights = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen = {}

    def pack(t):
        storage = t.untyped_storage()
        if storage.data_ptr() not in weights:
            seen[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), context():
        model(batch)
    return sum(seen.values())


# %% tags=["demo"]
import contextlib

import matplotlib.pyplot as plt

torch.manual_seed(0)
net = nn.Sequential(*[layer for _ in range(12) for layer in (nn.Linear(128, 128), nn.Tanh())])
batch = torch.randn(64, 128)
MODES = {"con grafo": contextlib.nullcontext, "no_grad": torch.no_grad,
         "inference_mode": torch.inference_mode}


def best_time_ms(fn, *args_, repeats=10):
    """El mejor de varios tiempos de ``fn(*args_)``, en ms (el menos ruidoso)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(*args_)
        times.append(time.perf_counter() - start)
    return min(times) * 1e3


def forward_pass(context):
    with context():
        net(batch)


for context in MODES.values():  # calentamiento: la primera pasada siempre es más lenta
    best_time_ms(forward_pass, context, repeats=1)
times = {mode: best_time_ms(forward_pass, c) for mode, c in MODES.items()}
memory = {mode: saved_bytes(net, batch, c) / 1024 for mode, c in MODES.items()}
for mode in MODES:
    ratio = times[mode] / times["no_grad"]
    print(f"{mode:>15}: {times[mode]:6.3f} ms ({ratio:4.2f} × no_grad)   "
          f"{memory[mode]:8.1f} KiB retenidos")

# %% [markdown]
# La memoria retenida crece con el tamaño del lote (*batch*) cuando registras el grafo, y es
# cero sin él. Mídela para varios lotes y dibuja las dos cosas.

# %% tags=["demo"]
batches = [16, 32, 64, 128, 256]
kib_per_batch = {mode: [saved_bytes(net, torch.randn(n, 128), c) / 1024 for n in batches]
                for mode, c in MODES.items()}

fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(10, 3.2))
ax_t.bar(list(times), list(times.values()), color=["C3", "C0", "C2"])
ax_t.set_ylabel("ms por pase (el mejor de 10)")
ax_t.set_title("tiempo del pase hacia adelante (CPU)")
for (mode, kib), style in zip(kib_per_batch.items(), ("-o", "--s", ":^")):
    ax_m.plot(batches, kib, style, label=mode)
ax_m.set_xlabel("tamaño del lote")
ax_m.set_ylabel("KiB retenidos para backward")
ax_m.set_title("memoria que el grafo mantiene viva")
ax_m.legend()
plt.tight_layout()
plt.show()

# %% [markdown]
# Lee los números con honestidad. Son de tu CPU, y el tiempo de un pase tan corto (del orden
# de un milisegundo) es ruidoso: repite la celda y verás cómo cambian. Registrar el grafo tiene
# un coste fijo por operación (crear su nodo, guardar sus tensores) que con capas tan pequeñas
# se nota: mira la razón frente a `no_grad` que imprime la celda. Para la diferencia entre
# `no_grad` e `inference_mode`, compara su razón con lo que varía al repetir la celda: si no
# la supera, es ruido. La memoria no es ruido:
# con el grafo se retienen las activaciones de cada capa, proporcionales al lote; sin él,
# nada. En una GPU con un modelo grande, eso es lo que decide si el lote cabe.
#
# Con una GPU, el pico de memoria sí se mide directamente con
# `torch.cuda.max_memory_allocated()`. Si tu entorno la tiene, esta celda lo hace; en CPU se
# salta.

# %% tags=["demo"]
if torch.cuda.is_available():
    net_gpu, batch_gpu = net.to("cuda"), torch.randn(4096, 128, device="cuda")
    with torch.no_grad():
        net_gpu(batch_gpu)  # calentamiento: la primera llamada reserva el espacio de cuBLAS
    for mode, context in MODES.items():
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        with context():
            out = net_gpu(batch_gpu)
        peak = (torch.cuda.max_memory_allocated() - base) / 2**20
        retained = (torch.cuda.memory_allocated() - base) / 2**20
        del out
        print(f"{mode:>15}: pico {peak:6.1f} MiB, retenido con la salida viva {retained:6.1f} MiB")
    net.to("cpu")
else:
    print("Sin GPU: en CPU no hay un contador de pico fiable; la memoria retenida de arriba "
          "es la diferencia que importa.")

# %% [markdown]
# ## Ejercicio 2 · Una predicción que no construye grafo (3 puntos)
#
# Escribe `predict(model, x)`: devuelve las probabilidades de cada clase,
# `softmax(model(x), dim=1)`, para un lote `x` de forma `(N, D)`. Es código para servir: no
# debe registrar **nada** para el pase hacia atrás. Compáralo con el objetivo del profesor del
# ejercicio 1: ¿vuelven estas probabilidades a alguna pérdida? ¿Qué modo de la sección 3
# encaja entonces? La comprobación lo mide como en la sección 4: cuenta los tensores que
# autograd guarda durante tu llamada y mira que ninguna operación deje un `grad_fn`. No
# hace falta `model.eval()`: este modelo no tiene Dropout ni BatchNorm, y `no_grad` e
# `inference_mode` no dependen de `train()`/`eval()`. No cambies nada del modelo ni de `x`,
# y deja el cálculo de gradientes como lo tenía quien llama; el contrato de la docstring
# dice qué puede llegar.

# %% exercise="predict"
def predict(model, x):
    """Probabilidades de cada clase, softmax(model(x), dim=1), sin registrar nada para el
    pase hacia atrás.

    <contrato>
    """
    ### BEGIN SOLUTION
    with torch.inference_mode():
        return torch.softmax(model(x), dim=1)
    ### END SOLUTION


# %% test="predict"


# %% [markdown]
# ## 5 · Congelar parámetros: entrenar solo la cabeza
#
# En el aprendizaje por transferencia (*transfer learning*) reutilizas un codificador
# (*encoder*) ya entrenado y entrenas solo una cabeza (*head*) nueva encima. Congelar un
# parámetro es quitarle `requires_grad`: `p.requires_grad_(False)`. Sobre un módulo entero,
# `modulo.requires_grad_(False)` lo hace con todos sus parámetros.

# %%
def transfer_model(seed=0):
    """embed → encoder (3 bloques) → head: como los modelos del ejercicio de abajo."""
    torch.manual_seed(seed)
    blocks = [layer for _ in range(3) for layer in (nn.Linear(16, 16), nn.ReLU())]
    return nn.Sequential(OrderedDict(embed=nn.Linear(8, 16), encoder=nn.Sequential(*blocks),
                                     head=nn.Linear(16, 3)))


# %% tags=["demo"]
model = transfer_model()
model.embed.requires_grad_(False)
model.encoder.requires_grad_(False)
for name, p in model.named_parameters():
    print(f"{name:>18}: requires_grad={p.requires_grad}")

# %% [markdown]
# Dos consecuencias, y las dos se pueden ver. **No se calcula gradiente**: tras `backward()`,
# los parámetros congelados siguen con `.grad = None`. **No hay actualización**: el optimizador
# salta los parámetros sin `.grad`, así que sus valores no cambian. Aquí le damos a propósito
# **todos** los parámetros, para ver que los salta.

# %% tags=["demo"]
torch.manual_seed(1)
x_batch, y_batch = torch.randn(32, 8), torch.randint(0, 3, (32,))
before = {n: p.detach().clone() for n, p in model.named_parameters()}
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)  # también los congelados

F.cross_entropy(model(x_batch), y_batch).backward()
optimizer.step()
for name, p in model.named_parameters():
    change = (p.detach() - before[name]).abs().max().item()
    print(f"{name:>18}: grad {'None' if p.grad is None else 'calculado':>9}   "
          f"cambio máximo {change:.4f}")

# %% [markdown]
# En tu código, pásale al optimizador solo los entrenables: es más claro y no depende de que
# el `.grad` de los congelados siga en `None`.

# %% tags=["demo"]
trainable = [p for p in model.parameters() if p.requires_grad]
optimizer = torch.optim.SGD(trainable, lr=0.1)
print(f"{len(trainable)} de {len(list(model.parameters()))} tensores de parámetros van "
      "al optimizador")

# %% [markdown]
# Hay un ahorro más: cuando la parte congelada es el principio de la red, como aquí, el pase
# hacia atrás ni siquiera entra en ella, así que el grafo no guarda sus activaciones. Mueve
# el deslizador para congelar más o menos bloques (el `embed` y los primeros bloques del
# codificador) y mira la memoria retenida.

# %% tags=["demo"]
import ipywidgets as widgets
from IPython.display import display

slider = widgets.IntSlider(value=0, min=0, max=4, step=1, description="congelados")
widget_out = widgets.Output()


def freeze_first(n):
    model = transfer_model()
    parts = [model.embed, *list(model.encoder)[::2]]  # embed + los 3 bloques Linear
    for part in parts[:n]:
        part.requires_grad_(False)
    return model


def update(change):
    model = freeze_first(change["new"])
    kib = saved_bytes(model, torch.randn(256, 8), contextlib.nullcontext) / 1024
    n_trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    with widget_out:
        widget_out.clear_output(wait=True)
        print(f"partes congeladas: {change['new']} de 4 (más la cabeza, siempre entrenable)")
        print(f"parámetros entrenables: {n_trainable}")
        print(f"memoria retenida para backward (lote de 256): {kib:.1f} KiB")


slider.observe(update, names="value")
update({"new": slider.value})
display(widgets.VBox([slider, widget_out]))

# %% [markdown]
# Los mismos números sin widget, por si tu entorno no lo muestra:

# %% tags=["demo"]
for n in range(5):
    model = freeze_first(n)
    kib = saved_bytes(model, torch.randn(256, 8), contextlib.nullcontext) / 1024
    print(f"{n} partes congeladas: {kib:6.1f} KiB retenidos")

# %% [markdown]
# Un error frecuente es creer que `torch.no_grad()` congela algo. Solo afecta a las
# operaciones **dentro** de su bloque: los parámetros siguen con `requires_grad=True`, y el
# siguiente pase hacia adelante fuera del bloque los registra como siempre.

# %% tags=["demo"]
model = transfer_model()
with torch.no_grad():
    model(x_batch)
print("¿embed congelado tras no_grad?", not model.embed.weight.requires_grad)

# %% [markdown]
# ## Ejercicio 3 · Congelar todo menos la cabeza (2 puntos)
#
# `model` tiene varios submódulos (por ejemplo `embed`, `encoder`) y uno llamado `head`.
# Congela **todos** los parámetros que no son de `model.head` y deja la cabeza entera
# entrenable, aunque llegue congelada. Devuelve los nombres completos (como los da
# `model.named_parameters()`, por ejemplo `"head.weight"`) de los parámetros que siguen
# entrenables. No cambies nada más: ni los valores de los parámetros, ni su `.grad`, ni el
# modo `train()`/`eval()` de ningún módulo. El contrato de la docstring dice qué modelos
# pueden llegar.

# %% exercise="freeze_all_but_head"
def freeze_all_but_head(model):
    """Congela todos los parámetros que no son de ``model.head`` y deja entrenable la
    cabeza entera; devuelve los nombres de los entrenables.

    <contrato>
    """
    ### BEGIN SOLUTION
    for name, p in model.named_parameters():
        p.requires_grad_(name.startswith("head."))
    return [name for name, p in model.named_parameters() if p.requires_grad]
    ### END SOLUTION


# %% test="freeze_all_but_head"


# %% [markdown]
# ## 6 · Operaciones *in-place* y el contador de versiones
#
# Muchos nodos del grafo guardan un tensor para el pase hacia atrás. `exp`, por ejemplo, guarda
# su **salida**, porque $\frac{d}{dx}e^x = e^x$. Si cambias ese tensor en su sitio (*in-place*:
# las operaciones que acaban en `_`, como `add_`), el gradiente saldría mal. PyTorch lo
# detecta con un contador de versiones (*version counter*): cada cambio *in-place* lo sube.

# %% tags=["demo"]
a = torch.tensor([0.0, 1.0, 2.0], requires_grad=True)
b = a.exp()
print("versión de b:", b._version)
b.add_(1)
print("tras b.add_(1):", b._version)
with muestra_error(RuntimeError):
    b.sum().backward()

# %% [markdown]
# El error solo aparece cuando el tensor cambiado hacía falta. La multiplicación por una
# constante no guarda su salida, así que aquí el cambio *in-place* es inofensivo.

# %% tags=["demo"]
a.grad = None
c = a * 2
c.add_(1)
c.sum().backward()
print("a.grad =", a.grad, "(sin error)")

# %% [markdown]
# `.detach()` no copia: comparte memoria **y** contador de versiones con el original. Cambiar
# el tensor cortado cambia el original, y el pase hacia atrás lo nota.

# %% tags=["demo"]
b = a.exp()
cut = b.detach()
cut.zero_()
print("b después de cut.zero_():", b)
with muestra_error(RuntimeError):
    b.sum().backward()

# %% [markdown]
# Si quieres una copia independiente, usa `.detach().clone()`. La solución general es simple:
# en tensores que participan en un grafo, prefiere `x = x + 1` a `x.add_(1)`.
#
# ## 7 · Exportar a NumPy: `.detach().cpu().numpy()`
#
# NumPy no sabe de grafos. Un tensor que requiere gradiente no se puede convertir tal cual:

# %% tags=["demo"]
weights = nn.Linear(3, 2).weight
with muestra_error(RuntimeError):
    weights.numpy()

# %% [markdown]
# La receta completa es `.detach().cpu().numpy()`: `detach()` corta el grafo, `cpu()` trae
# los datos de la GPU (en CPU no hace nada) y `numpy()` da el array. Ese array **comparte
# memoria** con el tensor: si lo vas a modificar, cópialo antes.

# %% tags=["demo"]
array = weights.detach().cpu().numpy()
array[0, 0] = 100.0
print("el parámetro también cambió:", weights[0, 0].item())
copied = weights.detach().cpu().numpy().copy()
copied[0, 1] = -100.0
print("con .copy() no:", weights[0, 1].item())

# %% [markdown]
# ## 8 · El gradiente respecto de la entrada: mapas de saliencia
#
# `requires_grad` no es cosa solo de parámetros: cualquier tensor de coma flotante puede
# pedirlo, también la entrada. El gradiente de la puntuación de una clase respecto de cada
# píxel dice cuánto cambiaría esa puntuación al mover ese píxel un poco. Dibujado como
# imagen es un mapa de saliencia (*saliency map*), el método de interpretabilidad más simple.
#
# Para verlo, entrena un clasificador diminuto con imágenes sintéticas de 8×8: las de la
# clase 1 llevan una mancha clara en una zona fija (el recuadro de la figura de abajo); las
# de la clase 0 son solo ruido.

# %% tags=["demo"]
torch.manual_seed(0)
images = 0.5 * torch.randn(1024, 1, 8, 8)
labels = torch.randint(0, 2, (1024,))
images[labels == 1, 0, 1:4, 4:7] += 1.0  # la mancha: filas 1-3, columnas 4-6

classifier = nn.Sequential(nn.Flatten(), nn.Linear(64, 16), nn.ReLU(), nn.Linear(16, 2))
optimizer = torch.optim.AdamW(classifier.parameters(), lr=0.01, weight_decay=1.0)
for _ in range(150):
    optimizer.zero_grad()
    F.cross_entropy(classifier(images), labels).backward()
    optimizer.step()
optimizer.zero_grad()
with torch.no_grad():
    accuracy = (classifier(images).argmax(dim=1) == labels).float().mean().item()
print(f"exactitud en las imágenes de entrenamiento: {accuracy:.1%}")

# %% [markdown]
# La saliencia de una imagen de la clase 1, en tres pasos:
#
# - el modelo en modo evaluación (aquí no cambia nada, pero con Dropout o BatchNorm sí;
#   capítulo 5) y sus parámetros congelados: no hace falta su gradiente, así que `backward()`
#   no lo calcula ni escribe su `.grad`;
# - una copia de la imagen con `requires_grad_()`: es una hoja, y recibirá `.grad`;
# - `backward()` desde la puntuación (el *logit*) de la clase 1. El mapa es `x.grad`, en valor
#   absoluto.
#
# Nada de `no_grad` aquí: sí necesitas el grafo, solo que de la entrada y no de los pesos.

# %% tags=["demo"]
import matplotlib.patches as patches

classifier.eval()
classifier.requires_grad_(False)
index = (labels == 1).nonzero()[0].item()
x = images[index:index + 1].clone().requires_grad_()
classifier(x)[0, 1].backward()
saliency = x.grad.abs()[0, 0]
print("x es hoja:", x.is_leaf, "  .grad de los pesos:", classifier[1].weight.grad)
inside = saliency[1:4, 4:7].mean().item()
outside = (saliency.sum().item() - saliency[1:4, 4:7].sum().item()) / (64 - 9)
print(f"saliencia media: {inside:.3f} en la mancha, {outside:.3f} fuera ({inside / outside:.1f}×)")

fig, (ax_img, ax_saliency) = plt.subplots(1, 2, figsize=(6, 3))
for ax, data, title, heatmap in ((ax_img, x.detach()[0, 0], "imagen (clase 1)", "gray"),
                                (ax_saliency, saliency, "|∂ puntuación / ∂ píxel|", "hot")):
    ax.imshow(data, cmap=heatmap)
    ax.add_patch(patches.Rectangle((3.5, 0.5), 3, 3, fill=False, edgecolor="C0", linewidth=2))
    ax.set_title(title)
    ax.set_xticks([])
    ax.set_yticks([])
plt.tight_layout()
plt.show()

# %% [markdown]
# La saliencia se concentra en el recuadro (mira la razón dentro/fuera que imprime la celda):
# el clasificador aprendió a mirar la mancha. Con una ReLU en medio, el mapa depende de la
# imagen (qué neuronas se activan), no solo de los pesos. Y es una derivada local: dice qué
# píxeles mueven la puntuación cerca de **esta** imagen, no qué "ve" el modelo en general.
#
# ## 9 · Gradientes por muestra con `torch.func`
#
# Un pase hacia atrás da el gradiente de la pérdida del lote, que es la media de los
# gradientes de cada muestra. En el capítulo 1 viste que `backward(v)` calcula un producto
# vector-Jacobiano: con la pérdida media, ese vector pondera cada muestra con $1/N$ y las
# suma todas a la vez, y del resultado ya no se pueden separar. A veces hacen falta por
# separado: para recortar el gradiente de cada muestra (el entrenamiento con privacidad
# diferencial, DP-SGD), para encontrar ejemplos raros o para medir la varianza del gradiente.
#
# Lo directo es un bucle con un `backward()` por muestra. `torch.func` hace lo mismo de un
# golpe con tres piezas:
#
# - `functional_call(model, params, (x,))` ejecuta el modelo con los parámetros que le pasas
#   en un diccionario: el modelo se vuelve una función pura de `params` y `x`;
# - `grad(f)` devuelve una función nueva que calcula el gradiente de `f` respecto de su primer
#   argumento (no toca ningún `.grad`);
# - `vmap(f, in_dims=(None, 0, 0))` aplica `f` a cada muestra del lote sin bucle de Python:
#   `None` dice que los parámetros se comparten; `0`, que `x` e `y` se recorren por su primera
#   dimensión.

# %% tags=["demo"]
from torch.func import functional_call, grad, vmap

torch.manual_seed(0)
mlp = nn.Sequential(nn.Linear(20, 32), nn.Tanh(), nn.Linear(32, 3))
x_mlp, y_mlp = torch.randn(64, 20), torch.randint(0, 3, (64,))


def grads_with_loop():
    """Un backward por muestra: {nombre: (N, *forma)}."""
    by_name = {name: [] for name, _ in mlp.named_parameters()}
    for i in range(len(x_mlp)):
        mlp.zero_grad()
        F.cross_entropy(mlp(x_mlp[i:i + 1]), y_mlp[i:i + 1]).backward()
        for name, p in mlp.named_parameters():
            by_name[name].append(p.grad.clone())
    return {name: torch.stack(g) for name, g in by_name.items()}


def single_loss(params, x, y):
    """La pérdida de una muestra (``x`` sin la dimensión del lote), en función de ``params``."""
    logits = functional_call(mlp, params, (x.unsqueeze(0),))
    return F.cross_entropy(logits, y.unsqueeze(0))


per_sample_grads = vmap(grad(single_loss), in_dims=(None, 0, 0))
params = {name: p.detach() for name, p in mlp.named_parameters()}

with_loop = grads_with_loop()
with_vmap = per_sample_grads(params, x_mlp, y_mlp)
mlp.zero_grad()
F.cross_entropy(mlp(x_mlp), y_mlp).backward()  # el lote entero: la media de las muestras
for name, p in mlp.named_parameters():
    difference = (with_vmap[name] - with_loop[name]).abs().max().item()
    mean = (with_vmap[name].mean(dim=0) - p.grad).abs().max().item()
    print(f"{name:>8}: forma {tuple(with_vmap[name].shape)!s:<12} vmap vs bucle: "
          f"{difference:.1e}   media vs backward del lote: {mean:.1e}")

# %% [markdown]
# Las dos formas dan los mismos gradientes (las diferencias son del orden del redondeo de
# float32), y su media es el gradiente del lote. La diferencia está en el tiempo: mídelo.

# %% tags=["demo"]
best_time_ms(per_sample_grads, params, x_mlp, y_mlp, repeats=1)  # calentamiento
ms_loop = best_time_ms(grads_with_loop, repeats=5)
ms_vmap = best_time_ms(per_sample_grads, params, x_mlp, y_mlp, repeats=5)
print(f"bucle de {len(x_mlp)} backward: {ms_loop:.2f} ms   vmap(grad(...)): {ms_vmap:.2f} ms")
if ms_vmap < ms_loop:
    print(f"→ vmap es {ms_loop / ms_vmap:.1f}× más rápido en tu máquina")
else:
    print(f"→ aquí vmap no gana: el bucle tarda {ms_loop / ms_vmap:.2f}× lo que vmap")

# %% [markdown]
# El bucle paga `len(x_mlp)` veces el coste fijo de un pase hacia adelante y otro hacia
# atrás, cada uno con operaciones diminutas; `vmap` hace un solo cálculo por lotes. Cuánto
# ganas depende de tu máquina y del tamaño de las capas: el número es el que imprime la
# celda.

# %% [markdown]
# ## Resumen
#
# - `requires_grad=True` hace que autograd registre las operaciones; la marca se contagia a
#   los resultados. Solo los tensores de coma flotante (o complejos) pueden pedir gradiente.
# - Solo las hojas guardan `.grad`; para un intermedio, `retain_grad()` antes de `backward()`
#   o `torch.autograd.grad(loss, intermedio)`.
# - `torch.no_grad()` no registra nada dentro de su bloque (úsalo para evaluar durante el
#   entrenamiento y para actualizar parámetros a mano); `.detach()` corta un solo tensor;
#   `torch.inference_mode()` es más estricto (en la sección 4, su ventaja de tiempo sobre
#   `no_grad` se pierde en el ruido): para servir, porque sus tensores no pueden guardarse
#   para un pase hacia atrás.
# - Un tensor de inferencia no acepta `requires_grad_()` fuera del modo, y falla en cuanto
#   autograd necesita guardarlo (una pérdida con pseudo-etiquetas, con la salida de un
#   profesor EMA o la KL de una destilación). Si un tensor puede volver a una pérdida que se
#   deriva, calcúlalo con `no_grad` (o haz `clone()` fuera del modo); `inference_mode`, para
#   lo que solo sale. Para que el gradiente no llegue a un profesor entrenable, calcula su
#   salida sin grafo: congelarlo también lo evita, pero cambia su `requires_grad` para quien
#   lo use después.
# - Congelar es `requires_grad_(False)`: ni gradiente ni actualización, y si lo congelado es
#   el principio de la red, el grafo no guarda sus activaciones. `no_grad` no congela nada.
# - Sin grafo, la memoria retenida para el pase hacia atrás es cero; el ahorro de tiempo en
#   CPU depende del tamaño de las capas y es ruidoso. Mídelo en lugar de suponerlo.
# - Una operación *in-place* sobre un tensor que el grafo necesita rompe el pase hacia atrás
#   (contador de versiones); `detach()` comparte memoria y versión con el original.
# - Para exportar: `.detach().cpu().numpy()`, y `.copy()` si vas a modificar el array.
# - El gradiente respecto de la entrada (`x.requires_grad_()`, modelo en evaluación y
#   congelado) es un mapa de saliencia.
# - `vmap(grad(...))` con `functional_call` da el gradiente de cada muestra de un lote, igual
#   que un bucle de un `backward()` por muestra, pero sin bucle de Python; cuánto tarda cada
#   forma en tu máquina lo mide la sección 9.
