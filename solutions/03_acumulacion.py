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
# # Capítulo 3 · Los gradientes se acumulan
#
# Cada `backward()` **suma** sus gradientes a lo que ya había en `.grad`; no lo reemplaza.
# Es una decisión de diseño, no un error: permite repartir un lote (*batch*) grande en trozos
# y sumar sus contribuciones. Pero si lo olvidas, el entrenamiento se estropea sin avisar.
#
# **Al terminar sabrás:**
#
# - qué hace `zero_grad()` y qué pasa si falta (lo verás oscilar en una gráfica);
# - la diferencia entre `zero_grad(set_to_none=True)` y `set_to_none=False`;
# - hacer acumulación de gradientes (*gradient accumulation*): por qué se divide la pérdida
#   (*loss*) entre el número de micro-lotes (*micro-batches*), cuánto debe pesar cada
#   micro-lote cuando no todos tienen el mismo tamaño o la pérdida es una suma, y por qué
#   BatchNorm rompe la equivalencia;
# - tratar el último ciclo incompleto cuando el número de micro-lotes no es múltiplo de
#   `accum`;
# - usar `clip_grad_norm_` en su sitio, saber qué calcula (una norma para todos los
#   gradientes juntos, un mismo factor para todos), registrar la norma que devuelve y leer
#   sus picos.
#
# Vienes del capítulo 2 (`no_grad`, `detach`). Ejecuta las celdas en orden.

# %%
import math
import time

import matplotlib.pyplot as plt
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

# %% [markdown]
# ## 1 · `.grad` acumula
#
# Toma un solo parámetro $w = 2$ y la pérdida $L = (3w)^2$. Su gradiente es
# $dL/dw = 18w = 36$. Repite el pase hacia adelante (*forward pass*) y el pase hacia atrás
# (*backward pass*) tres veces sin tocar `.grad`:

# %% tags=["demo"]
w = torch.tensor(2.0, requires_grad=True)
for call in range(1, 4):
    loss = (3 * w) ** 2
    loss.backward()
    print(f"tras el backward {call}: w.grad = {w.grad.item():5.1f}  ({call} × 36)")

# %% [markdown]
# El gradiente de cada pasada es el mismo, 36, pero `.grad` guarda la suma. Piensa en
# `.grad` como un acumulador: `backward()` hace `grad += nuevo`, nunca `grad = nuevo`.
#
# Borrarlo es cosa tuya. `w.grad.zero_()` lo pone a cero; el optimizador lo hace para
# todos sus parámetros con `optimizer.zero_grad()`.

# %% tags=["demo"]
w.grad.zero_()
((3 * w) ** 2).backward()
print("tras poner a cero y un backward más: w.grad =", w.grad.item())

# %% [markdown]
# ## 2 · Qué pasa si olvidas `zero_grad()`
#
# Entrena una recta $\hat y = ax + b$ sobre 64 puntos con descenso de gradiente. Una
# versión llama a `optimizer.zero_grad()` en cada paso; la otra, no. En la segunda, el paso
# $t$ usa la suma de **todos** los gradientes anteriores, no el gradiente actual.

# %% tags=["demo"]
x_line = torch.linspace(-2, 2, 64).unsqueeze(1)
y_line = 3 * x_line - 1 + 0.3 * torch.randn(64, 1)


def fit_line(zero_grad_first, steps=60, lr=0.05):
    torch.manual_seed(1)
    model = nn.Linear(1, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        if zero_grad_first:
            optimizer.zero_grad()
        loss = F.mse_loss(model(x_line), y_line)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


with_zero = fit_line(True)
without_zero = fit_line(False)
print(f"pérdida final con zero_grad: {with_zero[-1]:.3f}   sin zero_grad: {without_zero[-1]:.3f}")

plt.figure(figsize=(7, 3))
plt.semilogy(with_zero, label="con zero_grad()")
plt.semilogy(without_zero, label="sin zero_grad()")
plt.xlabel("paso")
plt.ylabel("pérdida (escala log)")
plt.title("Los gradientes viejos se suman a los nuevos")
plt.legend()
plt.tight_layout()
plt.show()

# %% [markdown]
# Sin `zero_grad()`, la pérdida no converge: oscila sin parar. El gradiente acumulado sigue
# empujando en la dirección de los pasos pasados aunque ya hayas cruzado el mínimo, así que
# el modelo se pasa de largo una y otra vez, con la misma tasa de aprendizaje
# (*learning rate*) que en la otra curva converge sin problemas.
#
# ## 3 · `zero_grad(set_to_none=True)`
#
# Desde PyTorch 2.0, `zero_grad()` no escribe ceros: deja `.grad` en `None`
# (`set_to_none=True` es el valor por defecto). Con `set_to_none=False` obtienes un tensor de
# ceros.

# %% tags=["demo"]
layer = nn.Linear(3, 1)
F.mse_loss(layer(torch.randn(8, 3)), torch.randn(8, 1)).backward()
opt = torch.optim.SGD(layer.parameters(), lr=0.1)

opt.zero_grad(set_to_none=False)
print("set_to_none=False →", layer.weight.grad)
opt.zero_grad()  # set_to_none=True
print("set_to_none=True  →", layer.weight.grad)

# %% [markdown]
# Con `None` no queda ningún tensor de ceros ocupando memoria. Para el siguiente `backward()`
# da igual: `None` y ceros acumulan lo mismo.

# %% tags=["demo"]
x_zero, y_zero = torch.randn(8, 3), torch.randn(8, 1)
result = {}
for set_to_none in (True, False):
    opt.zero_grad(set_to_none=set_to_none)
    F.mse_loss(layer(x_zero), y_zero).backward()
    result[set_to_none] = layer.weight.grad.clone()
print("mismo .grad tras el backward:", torch.equal(result[True], result[False]))

# %% [markdown]
# Pero hay dos diferencias reales. La primera: el código que lee `.grad` tiene que aceptar `None`.

# %% tags=["demo"]
opt.zero_grad()
with muestra_error(AttributeError):
    print(layer.weight.grad.norm())

# %% [markdown]
# La segunda: los optimizadores **saltan** los parámetros cuyo `.grad` es `None`, pero no los
# que tienen ceros. Con momento (*momentum*), un gradiente cero todavía mueve el parámetro,
# porque el momento guarda la velocidad de los pasos anteriores. Da un paso normal, pon los
# gradientes a cero de cada manera y da otro paso sin `backward()` en medio:

# %% tags=["demo"]
x_mom, y_mom = torch.randn(8, 3), torch.randn(8, 1)


def second_step_without_backward(set_to_none):
    torch.manual_seed(0)
    layer = nn.Linear(3, 1)
    opt = torch.optim.SGD(layer.parameters(), lr=0.1, momentum=0.9)
    F.mse_loss(layer(x_mom), y_mom).backward()
    opt.step()  # crea el búfer de momento
    opt.zero_grad(set_to_none=set_to_none)
    before = layer.weight.detach().clone()
    opt.step()
    return (layer.weight.detach() - before).abs().max().item()


for set_to_none in (True, False):
    movement = second_step_without_backward(set_to_none)
    print(f"set_to_none={set_to_none!s:<5}: el peso se movió {movement:.4f}")

# %% [markdown]
# En un bucle normal siempre hay un `backward()` entre dos pasos, así que esto solo importa
# cuando un parámetro no recibe gradiente en algún paso (una rama del modelo que no se usó,
# por ejemplo). Con `None`, ese parámetro se queda quieto; con ceros, el momento lo sigue
# moviendo.
#
# ## 4 · Acumulación de gradientes
#
# Quieres entrenar con lotes de 32 muestras, pero en memoria solo caben 8. La
# solución: partir el lote en 4 micro-lotes de 8, hacer un `backward()` por
# micro-lote sin borrar `.grad` entre ellos, y dar un solo paso del optimizador
# (*optimizer step*) al final. El tamaño de lote efectivo (*effective batch size*) es
#
# $$\text{micro-lote} \times \text{accum} = 8 \times 4 = 32.$$
#
# La pérdida habitual es una **media** sobre el lote. La media de 32 muestras es la media de
# las 4 medias de 8, es decir, $\frac{1}{4}\sum_k L_k$. Como el gradiente de una suma es la
# suma de los gradientes, basta dividir cada pérdida de micro-lote por `accum = 4` antes de
# su `backward()`: la suma que queda en `.grad` es exactamente el gradiente del lote entero.
#
# Compruébalo con 8 muestras: un lote de 8 frente a 2 micro-lotes de 4.

# %% tags=["demo"]
torch.manual_seed(0)
net = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3))
X8, y8 = torch.randn(8, 10), torch.randint(0, 3, (8,))


def accumulated_grads(model, x, y, accum, divide=True):
    """Los gradientes que quedan en ``.grad`` tras ``accum`` micro-lotes (con la pérdida
    dividida o sin dividir)."""
    model.zero_grad()
    for xb, yb in zip(x.chunk(accum), y.chunk(accum)):
        loss = F.cross_entropy(model(xb), yb)
        (loss / accum if divide else loss).backward()
    return [p.grad.clone() for p in model.parameters()]


def max_difference(a, b):
    return max((u - v).abs().max().item() for u, v in zip(a, b))


full_batch = accumulated_grads(net, X8, y8, accum=1)
two_of_four = accumulated_grads(net, X8, y8, accum=2)
difference = max_difference(full_batch, two_of_four)
print(f"1 lote de 8 vs 2 micro-lotes de 4: diferencia máxima {difference:.1e}")

# %% [markdown]
# La diferencia es del orden de $10^{-8}$: redondeo de `float32`, porque sumar en otro
# orden cambia los últimos bits. Los gradientes son los mismos.
#
# ¿Y si no divides? Cada micro-lote aporta su gradiente medio completo, y la suma es `accum`
# veces el gradiente del lote. El cociente entre normas lo dice:

# %% tags=["demo"]
undivided = accumulated_grads(net, X8, y8, accum=2, divide=False)
for name, g, g_ok in zip(("W1", "b1", "W2", "b2"), undivided, full_batch):
    ratio = (g.norm() / g_ok.norm()).item()
    print(f"{name}: norma sin dividir / norma del lote entero = {ratio:.6f}")

# %% [markdown]
# Exactamente 2. Con SGD, eso equivale a multiplicar por `accum` la tasa de aprendizaje sin
# querer. Lo mismo pasa con cualquier `accum` que divida al lote:

# %% tags=["demo"]
torch.manual_seed(0)
X32, y32 = torch.randn(32, 10), torch.randint(0, 3, (32,))
reference = accumulated_grads(net, X32, y32, accum=1)
print(" accum  micro-lote  dif. máx. (dividiendo)  razón (sin dividir)")
for accum in (1, 2, 4, 8):
    divided = accumulated_grads(net, X32, y32, accum)
    raw = accumulated_grads(net, X32, y32, accum, divide=False)
    ratio = (raw[0].norm() / reference[0].norm()).item()
    difference = max_difference(divided, reference)
    print(f"{accum:6d}  {32 // accum:10d}  {difference:22.1e}  {ratio:19.4f}")

# %% [markdown]
# ¿Qué ganas? Memoria. Autograd guarda, para el pase hacia atrás, las activaciones de cada
# capa, y eso crece con el tamaño del micro-lote. Puedes medirlo con
# `torch.autograd.graph.saved_tensors_hooks`, que ve cada tensor que el grafo guarda. Aquí
# cuentas sus bytes para micro-lotes de distinto tamaño, y mides lo que tarda procesar un
# lote de 256 en `256 / micro` pases (en un solo hilo de CPU, el mejor de 7 intentos).

# %% tags=["demo"]
torch.manual_seed(0)
mlp = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))
X256 = torch.randn(256, 64)


def kib_saved(model, x):
    total = 0

    def pack(tensor):
        nonlocal total
        total += tensor.numel() * tensor.element_size()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        model(x).pow(2).mean()
    return total / 1024


def ms_per_batch(model, x, micro, repeats=7):
    """La mejor de ``repeats`` medidas, en ms, en un solo hilo de CPU (números más estables)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    times = []
    try:
        for _ in range(repeats + 1):  # la primera vuelta calienta
            start = time.perf_counter()
            model.zero_grad()
            for xb in x.split(micro):
                (model(xb).pow(2).mean() / (x.shape[0] // micro)).backward()
            times.append(time.perf_counter() - start)
    finally:
        torch.set_num_threads(threads)
    return 1000 * min(times[1:])


micros = [8, 16, 32, 64, 128, 256]
memory = [kib_saved(mlp, X256[:m]) for m in micros]
elapsed = [ms_per_batch(mlp, X256, m) for m in micros]
for m, kib, ms in zip(micros, memory, elapsed):
    print(f"micro-lote {m:3d} (accum {256 // m:2d}): {kib:6.1f} KiB guardados por pase, "
          f"{ms:5.1f} ms por lote de 256")
print(f"en esta máquina, {256 // micros[0]} micro-lotes de {micros[0]} tardan "
      f"×{elapsed[0] / elapsed[-1]:.1f} lo que un pase de 256, y guardan "
      f"×{memory[0] / memory[-1]:.2f} de memoria por pase")

fig, (ax_m, ax_t) = plt.subplots(1, 2, figsize=(9, 3))
ax_m.plot(micros, memory, "o-")
ax_m.set_title("memoria guardada para backward")
ax_m.set_ylabel("KiB por pase")
ax_t.plot(micros, elapsed, "o-", color="tab:orange")
ax_t.set_title("tiempo por lote efectivo de 256 (CPU, 1 hilo)")
ax_t.set_ylabel("ms")
for ax in (ax_m, ax_t):
    ax.set_xscale("log", base=2)
    ax.set_xlabel("tamaño del micro-lote")
plt.tight_layout()
plt.show()

# %% [markdown]
# La memoria guardada crece casi en proporción al micro-lote. La parte fija es la matriz de
# pesos de la segunda capa, que el grafo guarda para llevar el gradiente hasta la primera (la
# de la primera no hace falta: `x` no pide gradiente). El precio es el tiempo: muchos pases
# pequeños aprovechan peor el hardware, porque cada pase tiene un coste fijo (llamadas de
# Python, lanzar cada operación). Con un modelo tan pequeño, ese coste fijo pesa: la última
# línea de la celda dice cuánto más tardan en tu máquina los micro-lotes de 8 que un solo
# pase. Cuánto depende de tu procesador y de su carga (repite la celda y verás variar el
# cociente); si tienes una GPU, repite allí la medida.
#
# ### La excepción: BatchNorm
#
# La equivalencia exige que la pérdida de cada muestra dependa solo de esa muestra.
# BatchNorm rompe esa condición: normaliza con la media y la varianza **del lote que ve**,
# que en acumulación es el micro-lote. Las cuentas son otras, así que los gradientes
# también.

# %% tags=["demo"]
for norm_layer in (nn.BatchNorm1d, nn.LayerNorm):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(10, 16), norm_layer(16), nn.ReLU(), nn.Linear(16, 3))
    full = accumulated_grads(model, X8, y8, accum=1)
    accumulated = accumulated_grads(model, X8, y8, accum=2)
    difference = max_difference(full, accumulated)
    print(f"{norm_layer.__name__:>11}: 1×8 vs 2×4, diferencia máxima {difference:.1e}")

# %% [markdown]
# Con BatchNorm la diferencia es del orden de $10^{-1}$: no es redondeo. LayerNorm normaliza
# cada muestra por separado y conserva la equivalencia. BatchNorm además actualiza sus
# estadísticas acumuladas (*running statistics*) una vez por micro-lote, no una por paso:

# %% tags=["demo"]
torch.manual_seed(0)
bn = nn.BatchNorm1d(10)
for xb in X8.chunk(2):
    bn(xb)
print("pases registrados por BatchNorm en un solo paso del optimizador:",
      bn.num_batches_tracked.item())

# %% [markdown]
# Con micro-lotes pequeños, las estadísticas de cada uno son ruidosas. Si tu modelo tiene
# BatchNorm y acumulas, recuerda que entrenas con lotes de BatchNorm del tamaño del
# micro-lote, no del efectivo.

# %% [markdown]
# ### Micro-lotes de distinto tamaño
#
# Dividir por `accum` da la media del lote entero porque todos los micro-lotes tienen el
# mismo tamaño. No siempre es así: el último lote de un `DataLoader` suele ser más corto, y
# en un modelo de lenguaje cada micro-lote trae un número distinto de *tokens* que cuentan.
# Parte el mismo lote de 8 en micro-lotes de 6 y 2 muestras y divide cada pérdida por
# `accum = 2`, como antes:

# %% tags=["demo"]
def weighted_grads(model, x, y, sizes, weights, reduction="mean"):
    """Los gradientes tras un ``backward()`` por micro-lote de ``sizes`` muestras, cada
    pérdida (con esa ``reduction``) multiplicada por su peso."""
    model.zero_grad()
    for xb, yb, weight in zip(x.split(sizes), y.split(sizes), weights):
        (weight * F.cross_entropy(model(xb), yb, reduction=reduction)).backward()
    return [p.grad.clone() for p in model.parameters()]


for sizes in ([4, 4], [6, 2]):
    difference = max_difference(full_batch, weighted_grads(net, X8, y8, sizes, [1 / 2, 1 / 2]))
    print(f"micro-lotes de {sizes}, cada pérdida dividida por 2: "
          f"diferencia máxima {difference:.1e}")

# %% [markdown]
# Con 4 y 4, redondeo; con 6 y 2, una diferencia del orden de $10^{-1}$: ya no es el
# gradiente del lote. Y la pérdida no siempre es una media: con `reduction="sum"`, cada
# micro-lote devuelve la suma de las pérdidas de sus muestras.
#
# ## Ejercicio 1 · El peso de cada micro-lote (2 puntos)
#
# Escribe `micro_batch_weights`: recibe el número de muestras de cada micro-lote (`sizes`,
# que pueden ser distintos) y la reducción de sus pérdidas (`"mean"` o `"sum"`), y devuelve
# el factor por el que hay que multiplicar la pérdida de cada micro-lote antes de su
# `backward()` para que la suma de los gradientes sea el gradiente de la pérdida **media**
# del lote entero.
#
# Parte de la definición: la pérdida media de N muestras es la suma de las pérdidas de cada
# muestra dividida por N. Escribe, con esa suma, qué aporta cada micro-lote según su
# reducción. La comprobación no usa ninguna fórmula: mide si, con tus pesos, la acumulación
# da el gradiente del lote entero.

# %% exercise="micro_batch_weights"
def micro_batch_weights(sizes, reduction):
    """Los factores por los que multiplicar la pérdida de cada micro-lote para que, al
    acumular sus gradientes, ``.grad`` quede con el gradiente de la pérdida **media** del
    lote entero (las N = ``sum(sizes)`` muestras).

    <contrato>
    """
    ### BEGIN SOLUTION
    total = sum(sizes)
    if reduction == "mean":
        return [n / total for n in sizes]
    return [1 / total for _ in sizes]
    ### END SOLUTION


# %% test="micro_batch_weights"


# %% [markdown]
# ## 5 · El último ciclo, incompleto
#
# En un bucle real, los micro-lotes salen de un `DataLoader`, y su número rara vez es
# múltiplo de `accum`. El bucle clásico da un paso cuando `(i + 1) % accum == 0`. Con 10
# micro-lotes y `accum = 4`, mira qué pasa con los dos últimos:

# %% tags=["demo"]
torch.manual_seed(0)
batches = [(torch.randn(4, 3), torch.randn(4, 1)) for _ in range(10)]
accum = 4


def classic_loop(model, batches, accum):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    optimizer.zero_grad()
    steps = []
    for i, (xb, yb) in enumerate(batches):
        (F.mse_loss(model(xb), yb) / accum).backward()
        if (i + 1) % accum == 0:
            optimizer.step()
            optimizer.zero_grad()
            steps.append(i)
    return steps


model = nn.Linear(3, 1)
steps = classic_loop(model, batches, accum)
print("pasos del optimizador tras los micro-lotes:", steps)
print("¿quedó algo en .grad al terminar?", model.weight.grad is not None,
      f"(norma {model.weight.grad.norm().item():.3f})")

# %% [markdown]
# Los micro-lotes 8 y 9 (contando desde 0) nunca llegan a un paso: su gradiente se queda en
# `.grad`. Si la época (*epoch*) siguiente no empieza con `zero_grad()`, ese resto se suma a
# su primer paso:

# %% tags=["demo"]
def first_cycle_of_epoch(model, clear_first):
    """El ``.grad`` del peso tras el primer ciclo de la época siguiente, con o sin
    ``zero_grad()``."""
    remainder = [p.grad.clone() for p in model.parameters()]  # lo que dejó la época anterior
    if clear_first:
        model.zero_grad()
    for xb, yb in batches[:accum]:
        (F.mse_loss(model(xb), yb) / accum).backward()
    norm = model.weight.grad.norm().item()
    for p, g in zip(model.parameters(), remainder):  # deja el resto como estaba, para comparar
        p.grad = g
    return norm


print(f"norma del gradiente del primer paso: "
      f"{first_cycle_of_epoch(model, clear_first=True):.3f} con zero_grad(), "
      f"{first_cycle_of_epoch(model, clear_first=False):.3f} sin él")

# %% [markdown]
# La corrección es dar también un paso tras el último micro-lote:
#
# ```python
# if (i + 1) % accum == 0 or i + 1 == len(batches):
# ```
#
# Falta un detalle: el divisor. El último ciclo tiene `r = 10 % 4 = 2` micro-lotes. Si
# divides su pérdida por `accum = 4`, su gradiente es la mitad de la media de esos dos
# micro-lotes: ese paso es más corto que los demás. Para que cada paso use el gradiente
# medio de su ciclo, divide por el número de micro-lotes que tiene de verdad.

# %% tags=["demo"]
def last_cycle_grad(divisor):
    model = nn.Linear(3, 1)
    with torch.no_grad():
        model.weight.fill_(0.5)
        model.bias.zero_()
    for xb, yb in batches[8:]:
        (F.mse_loss(model(xb), yb) / divisor).backward()
    return model.weight.grad.norm().item()


mean = last_cycle_grad(divisor=2)
print(f"dividiendo por r = 2:      norma {mean:.4f}")
print(f"dividiendo por accum = 4:  norma {last_cycle_grad(4):.4f}  "
      f"({last_cycle_grad(4) / mean:.2f} × la media del ciclo)")

# %% [markdown]
# Algunas bibliotecas dividen siempre por `accum` y aceptan ese último paso más corto. En
# este curso cada paso usa la media de su ciclo.
#
# ## Ejercicio 2 · Acumulación con ciclo final incompleto (3 puntos)
#
# Escribe `train_with_accumulation`: recorre `batches` en ciclos de `accum` micro-lotes y da
# un paso del optimizador al final de cada ciclo, también del último si está incompleto.
# La pérdida de cada micro-lote se divide por el número de micro-lotes de **su** ciclo, y
# ningún paso ve gradientes que no sean de su ciclo (ni los restos que `.grad` traía al
# llamarte). Devuelve la pérdida de cada paso. Las cláusulas del contrato dicen qué puede
# llegar y qué debes dejar como estaba.

# %% exercise="train_with_accumulation"
def train_with_accumulation(model, loss_fn, optimizer, batches, accum):
    """Entrena con acumulación de gradientes sobre ``batches``, un paso del optimizador por
    ciclo de ``accum`` micro-lotes; devuelve la pérdida de cada paso.

    <contrato>
    """
    ### BEGIN SOLUTION
    n = len(batches)
    losses, running = [], 0.0
    with torch.enable_grad():
        optimizer.zero_grad()
        for i, (xb, yb) in enumerate(batches):
            cycle_len = min(accum, n - (i // accum) * accum)
            loss = loss_fn(model(xb), yb) / cycle_len
            loss.backward()
            running += loss.item()
            if (i + 1) % accum == 0 or i + 1 == n:
                optimizer.step()
                optimizer.zero_grad()
                losses.append(running)
                running = 0.0
    return losses
    ### END SOLUTION


# %% test="train_with_accumulation"


# %% [markdown]
# ## 6 · Recorte de gradientes: `clip_grad_norm_`
#
# La norma del gradiente (*gradient norm*) mide cuánto quiere moverse el modelo: es la
# norma euclídea de **todos** los gradientes juntos, como si fueran un único vector. El
# recorte de gradientes (*gradient clipping*) con `torch.nn.utils.clip_grad_norm_` mira esa
# norma y, si supera `max_norm`, multiplica todos los gradientes por el mismo factor
# $\frac{\text{max\_norm}}{\text{norma} + 10^{-6}}$ (el $10^{-6}$ evita dividir por cero; por
# eso la norma queda ligeramente por debajo de `max_norm`). La dirección no cambia; solo la
# longitud.
#
# Y devuelve la norma **de antes** del recorte. Compruébalo:

# %% tags=["demo"]
def total_norm(params):
    return torch.sqrt(sum((p.grad**2).sum() for p in params)).item()


torch.manual_seed(0)
net = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3))
F.cross_entropy(net(X32) * 5, y32).backward()
params = list(net.parameters())
before = torch.cat([p.grad.flatten() for p in params])

returned = nn.utils.clip_grad_norm_(params, max_norm=1.0)
after = torch.cat([p.grad.flatten() for p in params])
print(f"norma calculada antes: {before.norm().item():.4f}   "
      f"devuelta por clip_grad_norm_: {returned.item():.4f}")
print(f"norma después:         {total_norm(params):.4f}")
print(f"coseno entre antes y después: {F.cosine_similarity(before, after, dim=0).item():.6f}")

# %% [markdown]
# Si la norma ya es menor que `max_norm`, no toca nada, aunque te sigue devolviendo la
# norma. Los gradientes de arriba ya quedaron en norma 1; con `max_norm = 10` no cambian.
# Con `max_norm=float("inf")` nunca recorta: es una forma cómoda de solo medir.

# %% tags=["demo"]
norm = nn.utils.clip_grad_norm_(params, max_norm=10.0)
print(f"max_norm=10: devuelve {norm.item():.4f}; la norma sigue en {total_norm(params):.4f}")

# %% [markdown]
# ### Dónde va
#
# Siempre en el mismo sitio: **después del último `backward()`** (cuando `.grad` ya tiene
# el gradiente completo, acumulación incluida) y **antes de `optimizer.step()`** (que es
# quien usa los gradientes). Si lo pones antes del `backward()`, no hay nada que recortar:

# %% tags=["demo"]
net.zero_grad()  # .grad vuelve a None
norm = nn.utils.clip_grad_norm_(net.parameters(), 1.0)
print("recorte antes de backward, devuelve:", norm.item())
F.cross_entropy(net(X32) * 5, y32).backward()
print(f"norma con la que step() trabajaría: {total_norm(list(net.parameters())):.4f}")

# %% [markdown]
# Después de `step()` es igual de inútil: el paso ya se dio con los gradientes sin recortar.
# Compara el cambio de los parámetros sin recorte, con el recorte después de `step()` y en su
# sitio:

# %% tags=["demo"]
def one_step_change(where):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    before = [p.detach().clone() for p in model.parameters()]
    F.cross_entropy(model(X32) * 5, y32).backward()
    if where == "en su sitio":
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    if where == "después de step()":
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    return torch.cat([(p.detach() - a).flatten() for p, a in zip(model.parameters(), before)])


for where in ("sin recorte", "después de step()", "en su sitio"):
    print(f"{where:>17}: norma del cambio de los parámetros "
          f"{one_step_change(where).norm().item():.4f}")

# %% [markdown]
# Recortar después de `step()` da exactamente el mismo paso que no recortar (el cambio es
# `lr` × la norma del gradiente); solo en su sitio el paso mide `lr` × `max_norm` = 0.1.
# Con acumulación, el recorte va dentro del mismo `if` que el paso, una vez por ciclo.
#
# ### La norma como señal de alarma
#
# La norma que devuelve `clip_grad_norm_` vale la pena registrarla (con `.item()`) en cada
# paso. Un pico repentino suele ser el primer aviso de que el entrenamiento se va a
# desestabilizar: un lote raro, una tasa de aprendizaje demasiado alta, datos corruptos.
#
# En este ejemplo, el lote 40 tiene objetivos 25 veces más grandes de lo normal (un error
# en los datos). Entrena dos veces: sin recorte y con `max_norm = 1`.

# %% tags=["demo"]
generator = torch.Generator().manual_seed(0)
X_noise = torch.randn(80, 16, 5, generator=generator)
w_true = torch.randn(5, 1, generator=generator)
Y_noise = X_noise @ w_true + 0.1 * torch.randn(80, 16, 1, generator=generator)
Y_noise[40] *= 25  # un lote corrupto


def train_with_clipping(max_norm):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 32), nn.Tanh(), nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    norms, losses = [], []
    for xb, yb in zip(X_noise, Y_noise):
        optimizer.zero_grad()
        loss = F.mse_loss(model(xb), yb)
        loss.backward()
        norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        optimizer.step()
        norms.append(norm.item())
        losses.append(loss.item())
    return norms, losses


def plot_training(results):
    fig, (ax_n, ax_l) = plt.subplots(1, 2, figsize=(10, 3))
    for label, (norms, losses) in results.items():
        ax_n.semilogy(norms, label=label)
        ax_l.semilogy(losses, label=label)
    ax_n.set_title("norma del gradiente (antes del recorte)")
    ax_n.set_ylabel("norma L2 (escala log)")
    ax_l.set_title("pérdida")
    ax_l.set_ylabel("pérdida (escala log)")
    for ax in (ax_n, ax_l):
        ax.axvline(40, color="gray", lw=0.5, ls="--")
        ax.set_xlabel("paso")
        ax.legend()
    plt.tight_layout()
    plt.show()


results = {"sin recorte": train_with_clipping(math.inf),
              "max_norm = 1": train_with_clipping(1.0)}
for label, (norms, losses) in results.items():
    print(f"{label:>12}: norma máxima {max(norms):7.1f}   "
          f"pérdida media después del lote 40: {sum(losses[41:]) / len(losses[41:]):.3f}")
plot_training(results)

# %% [markdown]
# Las dos curvas de la norma muestran el pico en el paso 40: el registro te avisa en ambos
# casos, porque `clip_grad_norm_` devuelve la norma **antes** de recortar. La diferencia
# está en lo que pasa después. Sin recorte, el paso gigante lanza el modelo lejos y la
# pérdida no recupera su nivel anterior en los pasos que quedan. Con recorte, el paso del
# lote corrupto no es más largo que los demás y el entrenamiento apenas lo nota.
#
# Mira también el principio: con `max_norm = 1` casi todos los primeros pasos se recortan
# (sus normas van de 3 a 11) y la pérdida baja más despacio. Elegir `max_norm` es un
# compromiso; un valor habitual es algo por encima de la norma típica de tus pasos,
# registrada.
#
# Elige `max_norm` con el desplegable. Un valor muy bajo recorta casi todos los pasos (y
# frena el entrenamiento); uno muy alto no protege del pico.

# %% tags=["demo"]
import ipywidgets as widgets


def explore_max_norm(max_norm):
    norms, losses = train_with_clipping(max_norm)
    clipped = sum(n > max_norm for n in norms)
    print(f"max_norm = {max_norm}: {clipped} de {len(norms)} pasos recortados; "
          f"pérdida final {losses[-1]:.3f}")
    plot_training({f"max_norm = {max_norm}": (norms, losses)})


widgets.interactive(explore_max_norm, max_norm=widgets.Dropdown(
    options=[("sin recorte", math.inf), ("10", 10.0), ("3", 3.0), ("1", 1.0), ("0.3", 0.3),
             ("0.1", 0.1)],
    value=1.0, description="max_norm"))

# %% [markdown]
# ## Ejercicio 3 · El recorte por dentro (3 puntos)
#
# `clip_grad_norm_` lee y escribe el `.grad` de los parámetros. Pero los gradientes no
# siempre están ahí: `torch.autograd.grad` y `torch.func.grad` los devuelven como tensores
# sueltos. Escribe `clip_by_global_norm`, que hace el mismo cálculo sobre una colección de
# gradientes (una sola norma L2 para todos juntos, un mismo factor para todos) y devuelve
# los gradientes recortados, sin modificar los que recibe, junto con la norma total **de
# antes** del recorte. Las cláusulas del contrato precisan qué puede llegar en `grads` y
# qué pasa en los casos límite.

# %% exercise="clip_by_global_norm"
def clip_by_global_norm(grads, max_norm):
    """Recorta una colección de gradientes a norma L2 total ``max_norm``, como
    ``torch.nn.utils.clip_grad_norm_``, sin modificarlos; devuelve ``(recortados, norma)``.

    <contrato>
    """
    ### BEGIN SOLUTION
    grads = list(grads)
    norms = [torch.linalg.vector_norm(g) for g in grads if g is not None]
    total = torch.linalg.vector_norm(torch.stack(norms)).item() if norms else 0.0
    scale = min(1.0, max_norm / (total + 1e-6))
    return [None if g is None else g * scale for g in grads], total
    ### END SOLUTION


# %% test="clip_by_global_norm"


# %% [markdown]
# ## Resumen
#
# - `backward()` suma en `.grad`; nunca reemplaza. Sin `zero_grad()` en cada paso, cada
#   actualización arrastra los gradientes de todos los pasos anteriores y el entrenamiento
#   oscila o diverge.
# - `zero_grad()` deja `.grad` en `None` (`set_to_none=True`, por defecto): no guarda ceros, y
#   los optimizadores saltan esos parámetros; con ceros, el momento aún los mueve.
# - Acumulación de gradientes: `accum` micro-lotes, cada pérdida dividida por `accum`, un
#   paso al final. Los gradientes coinciden con los del lote efectivo (micro-lote × `accum`)
#   hasta el redondeo; sin dividir, son exactamente `accum` veces mayores.
# - Con micro-lotes de distinto tamaño, dividir por `accum` ya no da el gradiente del lote:
#   el peso de cada pérdida depende de cuántas muestras tiene su micro-lote y de su
#   reducción (`"mean"` o `"sum"`).
# - BatchNorm rompe la equivalencia: normaliza con las estadísticas del micro-lote.
# - Si el número de micro-lotes no es múltiplo de `accum`, el último ciclo también necesita
#   su paso, con la pérdida dividida por su propio número de micro-lotes.
# - `clip_grad_norm_` calcula una sola norma L2 para todos los gradientes juntos y, si pasa
#   de `max_norm`, los multiplica a todos por el mismo factor: la dirección no cambia. Va
#   después del último `backward()` y antes de `step()`; devuelve la norma previa al
#   recorte: regístrala con `.item()` y vigila sus picos.
