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
# # Capítulo 4 · El bucle de optimización completo
#
# En los capítulos anteriores viste cada pieza por separado: el grafo computacional
# (*computational graph*), `backward()`, la acumulación de gradientes (*gradient
# accumulation*), `zero_grad()` y el recorte de gradientes (*gradient clipping*). Aquí las
# juntas en el bucle de entrenamiento (*training
# loop*) que escribirás una y otra vez, con la pérdida (*loss*) de clasificación, los
# optimizadores habituales y los planificadores de la tasa de aprendizaje (*learning-rate
# schedulers*).
#
# **Al terminar sabrás:**
#
# - escribir `train_loop` y `test_loop` con las llamadas en su orden fijo: pase hacia
#   adelante (*forward pass*), pérdida, `backward()`, recorte, `optimizer.step()`,
#   `scheduler.step()`, `zero_grad()`;
# - evaluar con `model.eval()` **y** `torch.no_grad()`, y devolver el modelo a su modo;
# - usar `nn.CrossEntropyLoss` sobre logits crudos y calcular la exactitud con `argmax`;
# - comparar SGD, RMSProp, Adam y AdamW, saber qué estado guarda cada uno, y explicar el
#   decaimiento de pesos (*weight decay*) desacoplado;
# - registrar métricas con `.item()` y medir qué pasa si no lo haces;
# - usar `OneCycleLR` y coseno con calentamiento lineal (*linear warmup*), en el lugar
#   correcto del bucle;
# - depurar el bucle: localizar un error *in-place* con `detect_anomaly`, comprobar la
#   pérdida inicial, sobreajustar un lote, mirar el flujo de gradientes por capa y elegir
#   `lr` con una prueba de rango;
# - guardar el estado completo del entrenamiento (modelo, optimizador, planificador,
#   generador aleatorio y paso en que vas) y reanudarlo con resultados idénticos bit
#   a bit.
#
# **El capítulo tiene dos partes.**
#
# - **Primera, el bucle** (secciones 1 a 7, ejercicios 1 a 3): datos y modelo, la pérdida
#   de clasificación, `train_loop` y `test_loop`, los optimizadores, registrar con
#   `.item()`, los planificadores y todo junto en una época.
# - **Segunda, depurar y reanudar** (secciones 8 y 9, ejercicio 4): cinco comprobaciones
#   para un bucle que entrena mal sin dar error, y guardar el estado completo para
#   reanudar bit a bit.
#
# Todo corre en CPU en pocos segundos: los datos son sintéticos y se generan aquí mismo.

# %%
import copy
import io
import math
import sysconfig
import time
import warnings
import weakref

import ipywidgets as widgets
import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from IPython.display import display
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from tqdm.auto import tqdm

torch.manual_seed(0)
torch.set_num_threads(1)  # modelos diminutos: en CPU, un hilo evita esperas entre hilos

# %% [markdown]
# ## 1 · Datos y modelo
#
# Usaremos tres espirales entrelazadas en el plano: 3 clases, 2 rasgos por punto. Es un
# problema pequeño, pero una recta no lo separa: el modelo tiene que aprender algo. La
# función recibe un `torch.Generator` para que los datos salgan siempre iguales.

# %% tags=["demo"]
def make_spirals(n_per_class, generator, noise=0.25):
    """Puntos (N, 2) y etiquetas (N,) de tres espirales entrelazadas."""
    xs, ys = [], []
    for class_id in range(3):
        r = torch.linspace(0.2, 1.0, n_per_class)
        angle = r * 4.0 + class_id * 2 * math.pi / 3
        angle = angle + noise * torch.randn(n_per_class, generator=generator)
        xs.append(torch.stack([r * torch.cos(angle), r * torch.sin(angle)], dim=1))
        ys.append(torch.full((n_per_class,), class_id))
    return torch.cat(xs), torch.cat(ys)


generator = torch.Generator().manual_seed(0)
X_train, y_train = make_spirals(200, generator)
X_test, y_test = make_spirals(100, generator)
print("entrenamiento:", tuple(X_train.shape), " prueba:", tuple(X_test.shape))

plt.figure(figsize=(4, 4))
for class_id, marker in zip(range(3), "o^s"):
    points = X_train[y_train == class_id]
    plt.scatter(points[:, 0], points[:, 1], s=8, marker=marker, label=f"clase {class_id}")
plt.xlabel("$x_1$")
plt.ylabel("$x_2$")
plt.legend()
plt.title("tres espirales (entrenamiento)")
plt.show()

# %% [markdown]
# Un `DataLoader` reparte los datos en lotes (*batches*) de 32 y los baraja en cada época
# (*epoch*). Le damos su propio generador para que el orden también sea reproducible. El
# modelo es un perceptrón pequeño que devuelve **logits**: un número por clase, sin
# normalizar.

# %% tags=["demo"]
def new_loader(seed=0, batch_size=32):
    return DataLoader(TensorDataset(X_train, y_train), batch_size=batch_size, shuffle=True,
                      generator=torch.Generator().manual_seed(seed))


test_loader = DataLoader(TensorDataset(X_test, y_test), batch_size=100)


def new_model(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(2, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(),
                         nn.Linear(32, 3))


model = new_model()
x, y = next(iter(new_loader()))
print("lote:", tuple(x.shape), " logits:", tuple(model(x).shape))

# %% [markdown]
# ## 2 · La pérdida de clasificación: `nn.CrossEntropyLoss` sobre logits
#
# `nn.CrossEntropyLoss` recibe los logits crudos y las etiquetas enteras. Por dentro hace dos
# cosas: `log_softmax` (convierte los logits en log-probabilidades) y la log-verosimilitud
# negativa (*negative log-likelihood*, `NLLLoss`), que toma la log-probabilidad de la clase
# correcta con signo menos. Compruébalo:

# %% tags=["demo"]
loss_fn = nn.CrossEntropyLoss()
logits = model(x)
by_hand = F.nll_loss(F.log_softmax(logits, dim=1), y)
print(f"CrossEntropyLoss: {loss_fn(logits, y).item():.6f}   "
      f"NLLLoss(LogSoftmax): {by_hand.item():.6f}")

# %% [markdown]
# La predicción es la clase con el logit más alto: `argmax` sobre la dimensión de clases. No
# hace falta `softmax` para eso: es monótona y no cambia cuál es el mayor. La exactitud
# (*accuracy*) es la fracción de aciertos.

# %% tags=["demo"]
prediction = logits.argmax(dim=1)
print("predicciones:", prediction[:10].tolist())
print("etiquetas:   ", y[:10].tolist())
print(f"exactitud del modelo sin entrenar: {(prediction == y).float().mean().item():.3f}")
print("¿argmax igual con softmax?", torch.equal(prediction, logits.softmax(1).argmax(1)))

# %% [markdown]
# El gradiente de esta pérdida respecto de los logits tiene una forma sencilla. Para una
# muestra con logits $z$ y clase $y$, $L = -z_y + \log \sum_k e^{z_k}$, así que
# $\partial L / \partial z_j = p_j - [j = y]$, con $p = \mathrm{softmax}(z)$: la
# probabilidad que el modelo da a cada clase menos el *one-hot* de la correcta. Con la media
# del lote, cada fila se divide por $N$. Compruébalo contra autograd:

# %% tags=["demo"]
z = logits.detach().clone().requires_grad_(True)
(autograd_grad,) = torch.autograd.grad(loss_fn(z, y), z)
by_hand_grad = (z.detach().softmax(dim=1) - F.one_hot(y, num_classes=3)) / len(y)
print("∂L/∂logits = (softmax − one_hot) / N:", torch.allclose(autograd_grad, by_hand_grad,
                                                               atol=1e-7))
print("primera fila, autograd:", autograd_grad[0].tolist())
print("primera fila, a mano:  ", by_hand_grad[0].tolist())

# %% [markdown]
# Cada fila suma 0, y el gradiente no se apaga cuando el modelo se equivoca con seguridad: si da
# casi toda la probabilidad a una clase incorrecta, la fila es casi $(0, 1, 0) - (1, 0, 0)$,
# de norma cercana a $\sqrt 2$ (por $1/N$).
#
# Un error frecuente es poner un `softmax` al final del modelo **y** usar
# `nn.CrossEntropyLoss`: la pérdida aplica su propio `log_softmax` sobre probabilidades. Las
# probabilidades viven entre 0 y 1, así que el segundo softmax nunca puede concentrarse en
# una clase: aunque el modelo acierte con total seguridad, la pérdida no baja de
# $\log(1 + (C-1)/e) \approx 0{,}55$ con $C = 3$.

# %% tags=["demo"]
confident = torch.tensor([[30.0, 0.0, 0.0]])  # logits de un modelo que acierta sin dudar
target = torch.tensor([0])
print(f"pérdida sobre logits:          {loss_fn(confident, target).item():.4f}")
print(f"pérdida sobre softmax(logits): {loss_fn(confident.softmax(1), target).item():.4f}")
print(f"cota inferior log(1 + 2/e):    {math.log(1 + 2 / math.e):.4f}")

# %% [markdown]
# Además, el softmax de más aplasta los gradientes: su derivada es pequeña, y casi nula cuando
# sus salidas se saturan en 0 y 1. Mide la
# norma del gradiente (*gradient norm*) de la pérdida respecto de los logits en el lote del
# modelo sin entrenar y en una predicción muy segura pero **equivocada**, justo la que más
# debería corregirse:

# %% tags=["demo"]
cases = {"lote del modelo sin entrenar": (logits.detach(), y),
         "seguro y equivocado": (torch.tensor([[0.0, 8.0, 0.0]]), torch.tensor([0]))}
for name, (z, targets) in cases.items():
    z = z.clone().requires_grad_(True)
    (g_right,) = torch.autograd.grad(loss_fn(z, targets), z)
    (g_wrong,) = torch.autograd.grad(loss_fn(z.softmax(1), targets), z)
    print(f"{name:>28}: norma del gradiente {g_right.norm().item():.4f} sobre logits, "
          f"{g_wrong.norm().item():.4f} con softmax antes")

# %% [markdown]
# El efecto en el entrenamiento: el modelo aprende más despacio.
# Entrena dos copias idénticas con el mismo optimizador (SGD, `lr=0.3`); la segunda pasa sus
# logits por un softmax antes de la pérdida. Para compararlas, medimos las dos con la
# pérdida correcta sobre los logits.

# %% tags=["demo"]
def quick_train(double_softmax, epochs=12):
    torch.manual_seed(0)
    net = new_model()
    opt = torch.optim.SGD(net.parameters(), lr=0.3)
    history = []
    for _ in range(epochs):
        for xb, yb in new_loader():
            out = net(xb)
            if double_softmax:
                out = out.softmax(dim=1)  # el error: probabilidades a CrossEntropyLoss
            loss = loss_fn(out, yb)
            loss.backward()
            opt.step()
            opt.zero_grad()
        with torch.no_grad():
            logits_test = net(X_test)
            history.append((loss_fn(logits_test, y_test).item(),
                             (logits_test.argmax(1) == y_test).float().mean().item()))
    return history


curves = {"logits (correcto)": quick_train(False), "softmax + CE": quick_train(True)}
fig, (ax_l, ax_a) = plt.subplots(1, 2, figsize=(9, 3))
for name, history in curves.items():
    ax_l.plot([h[0] for h in history], label=name)
    ax_a.plot([h[1] for h in history], label=name)
ax_l.set_title("pérdida de prueba (sobre logits)")
ax_l.set_ylabel("entropía cruzada media")
ax_a.set_title("exactitud de prueba")
ax_a.set_ylabel("fracción de aciertos")
for ax in (ax_l, ax_a):
    ax.set_xlabel("época")
    ax.legend()
plt.tight_layout()
plt.show()
for name, history in curves.items():
    print(f"{name:>18}: exactitud final {history[-1][1]:.3f}")

# %% [markdown]
# ## 3 · `train_loop` y `test_loop`
#
# El bucle de entrenamiento es una secuencia fija de pasos, igual para un perceptrón que para
# un modelo enorme:
#
# 1. `model.train()` una vez, al empezar;
# 2. pase hacia adelante y pérdida;
# 3. `loss.backward()`;
# 4. recorte de gradientes, si lo usas;
# 5. `optimizer.step()`;
# 6. `scheduler.step()`, si hay planificador;
# 7. `optimizer.zero_grad()`.
#
# Lo que registras (la pérdida media) se acumula con `.item()`: un `float` de Python.

# %% tags=["demo"]
def train_loop(loader, model, loss_fn, optimizer, scheduler=None, max_norm=None):
    model.train()
    total = 0.0
    for xb, yb in loader:
        loss = loss_fn(model(xb), yb)
        loss.backward()
        if max_norm is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        optimizer.zero_grad()
        total += loss.item()
    return total / len(loader)


# %% [markdown]
# Para evaluar hacen falta **dos** cosas independientes. `model.eval()` cambia el
# comportamiento de capas como Dropout y BatchNorm. `torch.no_grad()` evita construir el
# grafo. Al terminar, el modelo vuelve al modo en que estaba. La pérdida media se pondera
# por el tamaño de cada lote, que puede variar (el último suele ser más pequeño).

# %% tags=["demo"]
def test_loop(loader, model, loss_fn):
    was_training = model.training
    model.eval()
    loss_sum, correct, seen = 0.0, 0, 0
    with torch.no_grad():
        for xb, yb in loader:
            logits = model(xb)
            loss_sum += loss_fn(logits, yb).item() * len(yb)
            correct += (logits.argmax(1) == yb).sum().item()
            seen += len(yb)
    model.train(was_training)
    return loss_sum / seen, correct / seen


model = new_model()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    loss = train_loop(new_loader(epoch), model, loss_fn, opt)
    test_loss, accuracy = test_loop(test_loader, model, loss_fn)
    print(f"época {epoch}: pérdida de entrenamiento {loss:.3f}   "
          f"prueba: pérdida {test_loss:.3f}, exactitud {accuracy:.3f}")

# %% [markdown]
# ¿Por qué las dos? Con un modelo que tiene Dropout se ve enseguida. Solo `no_grad()`: el
# Dropout sigue activo y dos evaluaciones del mismo dato dan resultados distintos. Solo
# `eval()`: el resultado es estable, pero lleva `grad_fn`, así que se construyó un grafo
# que nadie va a usar.

# %% tags=["demo"]
torch.manual_seed(0)
with_dropout = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Dropout(0.5), nn.Linear(16, 3))
point = X_test[:1]

with torch.no_grad():  # modo entrenamiento: Dropout activo
    a, b = with_dropout(point), with_dropout(point)
print("solo no_grad: ¿dos evaluaciones iguales?", torch.equal(a, b))

with_dropout.eval()
a, b = with_dropout(point), with_dropout(point)
print("solo eval:    ¿iguales?", torch.equal(a, b), "  grad_fn:", type(a.grad_fn).__name__)
with_dropout.train()

# %% [markdown]
# ## Ejercicio 1 · Evaluar un modelo (3 puntos)
#
# Escribe `evaluate(model, loader, loss_fn)`, como `test_loop`: la pérdida media **por
# muestra** y la exactitud de `model` sobre `loader`, en modo evaluación y sin construir
# grafo, dejando todo como llegó. El contrato del docstring dice qué puede llegar y qué se
# comprueba.

# %% exercise="evaluate"
def evaluate(model, loader, loss_fn):
    """Pérdida media por muestra y exactitud de ``model`` sobre ``loader``.

    <contrato>
    """
    ### BEGIN SOLUTION
    was_training = model.training
    model.eval()
    loss_sum, correct, seen = 0.0, 0, 0
    with torch.no_grad():
        for x, y in loader:
            logits = model(x)
            loss_sum += loss_fn(logits, y).item() * len(y)
            correct += (logits.argmax(dim=1) == y).sum().item()
            seen += len(y)
    model.train(was_training)
    return loss_sum / seen, correct / seen
    ### END SOLUTION


# %% test="evaluate"


# %% [markdown]
# ## 4 · SGD, Adam y AdamW sobre el mismo problema
#
# `torch.optim` trae muchos optimizadores. SGD da un paso proporcional al gradiente. Adam
# lleva medias móviles del gradiente y de su cuadrado, y divide el paso por la raíz de la
# segunda: cada parámetro recibe su propia escala. Entrena tres copias idénticas del modelo
# durante las mismas épocas. La barra de progreso (*progress bar*) de `tqdm.auto` te dice
# cuánto falta cuando el bucle tarda más de un momento.

# %% tags=["demo"]
OPTIMIZERS = {
    "SGD (lr=0.1)": lambda p: torch.optim.SGD(p, lr=0.1),
    "Adam (lr=0.01)": lambda p: torch.optim.Adam(p, lr=0.01),
    "AdamW (lr=0.01, wd=0.01)": lambda p: torch.optim.AdamW(p, lr=0.01, weight_decay=0.01),
}
EPOCHS = 15
histories = {}
for name, make in OPTIMIZERS.items():
    net = new_model()
    opt = make(net.parameters())
    histories[name] = []
    for epoch in tqdm(range(EPOCHS), desc=name, mininterval=1.0):
        histories[name].append(train_loop(new_loader(epoch), net, loss_fn, opt))
    print(f"{name:>25}: (pérdida, exactitud) de prueba = "
          f"{tuple(round(v, 3) for v in test_loop(test_loader, net, loss_fn))}")

plt.figure(figsize=(6, 3))
# Adam y AdamW casi coinciden aquí: rayas y puntos dejan ver las dos curvas.
for (name, history), style in zip(histories.items(), ["-", "--", ":"]):
    plt.plot(history, style, label=name, linewidth=2)
plt.xlabel("época")
plt.ylabel("pérdida media de entrenamiento")
plt.legend()
plt.tight_layout()
plt.show()

# %% [markdown]
# En este problema, y con estas tasas, Adam y AdamW bajan la pérdida mucho antes que SGD (sus
# curvas casi se superponen: con un decaimiento tan pequeño apenas difieren). No es una ley:
# con más épocas, otra tasa o momento (*momentum*), SGD puede alcanzarlos.
#
# **Decaimiento de pesos desacoplado.** El decaimiento de pesos (*weight decay*) encoge los
# pesos un poco en cada paso. En `Adam(weight_decay=...)` se implementa sumando
# `weight_decay · w` al gradiente, y ese término pasa después por la normalización
# adaptativa de Adam: si el gradiente de la pérdida es pequeño, un peso grande y uno pequeño
# acaban encogiendo casi lo mismo. AdamW
# (Loshchilov y Hutter) lo desacopla: aplica `w ← w − lr · weight_decay · w` aparte del
# paso de Adam, así que el decaimiento es proporcional al peso, como se pretendía. Por eso
# AdamW es el optimizador por defecto de los transformers.
#
# Compruébalo con dos pesos, uno grande y uno pequeño, cuya pérdida tiene gradiente cero:
# solo actúa el decaimiento.

# %% tags=["demo"]
for optimizer_class in (torch.optim.Adam, torch.optim.AdamW):
    w = nn.Parameter(torch.tensor([10.0, 0.1]))
    opt = optimizer_class([w], lr=0.01, weight_decay=0.1)
    for _ in range(10):
        (0 * w).sum().backward()  # gradiente de la pérdida: cero
        opt.step()
        opt.zero_grad()
    print(f"{optimizer_class.__name__:>5}: pesos tras 10 pasos {w.data.tolist()}  "
          f"(fracción conservada {(w.data / torch.tensor([10.0, 0.1])).tolist()})")

# %% [markdown]
# Con Adam, los dos pesos bajan casi lo mismo en valor absoluto (≈ 0,1 = 10 · `lr`): el
# pequeño pierde más del 90 % y el grande apenas el 1 %. Con AdamW, los dos conservan la misma
# fracción, $(1 - 0{,}01 \cdot 0{,}1)^{10} \approx 0{,}990$.
#
# ### RMSProp: la escala de Adam, sin el momento
#
# Adam junta dos ideas, y RMSProp (Hinton, 2012) es una de ellas sola. Por cada parámetro
# guarda una media móvil del **cuadrado** de su gradiente,
# $v \leftarrow \alpha\,v + (1-\alpha)\,g^2$ (`alpha=0.99` por defecto), y divide el paso
# por su raíz: $w \leftarrow w - \mathrm{lr}\cdot g\,/\,(\sqrt{v} + \epsilon)$. Un parámetro
# con gradientes grandes divide por un número grande, y uno con gradientes pequeños, por
# uno pequeño: todos avanzan a un ritmo parecido, sea cual sea la escala de su gradiente.
#
# Lo que guarda está en `optimizer.state[p]`: su contador `step` y `square_avg`, la media
# $v$. Compruébalo contra la media calculada a mano durante 5 pasos, sobre una pérdida mal
# escalada: $L = \tfrac12\,(100\,w_1^2 + 0{,}1\,w_2^2)$, con una curvatura 1000 veces mayor
# en $w_1$ que en $w_2$.

# %% tags=["demo"]
SCALES = torch.tensor([100.0, 0.1])


def badly_scaled_loss(w):
    return 0.5 * (SCALES * w**2).sum()


w = nn.Parameter(torch.tensor([1.0, 1.0]))
opt = torch.optim.RMSprop([w], lr=0.01)  # alpha=0.99 por defecto
square_avg = torch.zeros(2)
for _ in range(5):
    opt.zero_grad()
    badly_scaled_loss(w).backward()
    square_avg = 0.99 * square_avg + 0.01 * w.grad**2  # la media, a mano
    opt.step()
print("estado de RMSprop por parámetro:", sorted(opt.state[w]))
print("square_avg:      ", opt.state[w]["square_avg"])
print("la media, a mano:", square_avg)
print("¿iguales?", torch.allclose(opt.state[w]["square_avg"], square_avg))

# %% [markdown]
# Las dos componentes de `square_avg` están a un factor $10^6 = (100/0{,}1)^2$ la una de la
# otra: al dividir por su raíz, los pasos de $w_1$ y de $w_2$ quedan del mismo tamaño.
#
# Adam es RMSProp con dos añadidos. Su `exp_avg_sq` es esta misma media de $g^2$ (con
# $\beta_2 = 0{,}999$), y además lleva `exp_avg`, una media móvil del propio gradiente
# ($\beta_1 = 0{,}9$): el momento. El segundo añadido es la corrección de sesgo. Las dos
# medias empiezan en 0, así que en los primeros pasos se quedan cortas, y Adam las divide
# por $1 - \beta^t$. RMSProp no corrige nada: en el primer paso
# $v = 0{,}01\,g^2$ y el paso mide $\mathrm{lr}\cdot |g|/\sqrt{0{,}01\,g^2} =
# 10\cdot\mathrm{lr}$, en cada parámetro. El primer paso de Adam mide `lr`:

# %% tags=["demo"]
for optimizer_class in (torch.optim.RMSprop, torch.optim.Adam):
    w = nn.Parameter(torch.tensor([1.0, 1.0]))
    opt = optimizer_class([w], lr=0.01)
    badly_scaled_loss(w).backward()
    opt.step()
    print(f"{optimizer_class.__name__:>7} (lr = 0.01): primer paso "
          f"{[round(v, 4) for v in (1 - w.detach()).tolist()]}; estado {sorted(opt.state[w])}")

# %% [markdown]
# Los gradientes de $w_1$ y $w_2$ difieren en un factor 1000, y los dos pasos miden lo
# mismo.
#
# Ahora, 300 pasos sobre esa pérdida. SGD tiene un techo: con `lr` por encima de
# $2/100$, la dirección de $w_1$ (curvatura 100) diverge. Con `lr = 0.019`, justo por
# debajo, $w_2$ (curvatura 0,1) avanza solo un 0,19 % por paso. RMSProp y Adam no tienen
# ese techo, porque dividen el paso de cada parámetro por la escala de su gradiente. (Cada
# uno lleva una tasa razonable para él; el techo de SGD no depende de cuál elijas: lo pone
# la dirección más curvada.)

# %% tags=["demo"]
def fit_badly_scaled(make_optimizer, steps=300):
    w = nn.Parameter(torch.tensor([1.0, 1.0]))
    opt = make_optimizer([w])
    losses = []
    for _ in range(steps):
        loss = badly_scaled_loss(w)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, w.detach()


SCALED_OPTIMIZERS = {
    "SGD (lr=0.019)": lambda p: torch.optim.SGD(p, lr=0.019),
    "RMSprop (lr=0.01)": lambda p: torch.optim.RMSprop(p, lr=0.01),
    "Adam (lr=0.05)": lambda p: torch.optim.Adam(p, lr=0.05),
}
plt.figure(figsize=(6, 3))
for (name, make_optimizer), style in zip(SCALED_OPTIMIZERS.items(), ["-", "--", ":"]):
    losses, w_final = fit_badly_scaled(make_optimizer)
    plt.semilogy(losses, style, label=name, linewidth=2)
    print(f"{name:>17}: pérdida final {losses[-1]:.1e}   w = "
          f"({w_final[0].item():.1e}, {w_final[1].item():.1e})")
losses, _ = fit_badly_scaled(lambda p: torch.optim.SGD(p, lr=0.021))
print(f"   SGD (lr=0.021): pérdida final {losses[-1]:.1e} (por encima del techo: diverge)")
plt.xlabel("paso")
plt.ylabel("pérdida (escala log)")
plt.legend()
plt.tight_layout()
plt.show()

# %% [markdown]
# SGD deja $w_1$ en cero enseguida, pero tras 300 pasos $w_2$ sigue en 0,57. RMSProp y
# Adam llevan los dos pesos a cero a la vez.
#
# **Ese estado también se guarda.** `square_avg` resume cientos de gradientes. Un RMSprop
# recién creado la pone a cero, y su primer paso vuelve a medir $10\cdot\mathrm{lr}$ en cada
# dirección, esté donde esté el parámetro. Entrena 100 pasos, guarda `opt.state_dict()` y
# da un paso más desde los mismos pesos: con el estado cargado y con un optimizador nuevo.

# %% tags=["demo"]
w = nn.Parameter(torch.tensor([1.0, 1.0]))
opt = torch.optim.RMSprop([w], lr=0.01)
for _ in range(100):
    opt.zero_grad()
    badly_scaled_loss(w).backward()
    opt.step()
saved_weights, saved_state = w.detach().clone(), opt.state_dict()
print("en el state_dict, por parámetro:", sorted(saved_state["state"][0]))
for load_state in (True, False):
    w_resumed = nn.Parameter(saved_weights.clone())
    opt_resumed = torch.optim.RMSprop([w_resumed], lr=0.01)
    if load_state:
        opt_resumed.load_state_dict(saved_state)
    loss_before = badly_scaled_loss(w_resumed)
    loss_before.backward()
    opt_resumed.step()
    print(f"{'estado cargado' if load_state else 'optimizador nuevo':>17}: pérdida "
          f"{loss_before.item():.4f} → {badly_scaled_loss(w_resumed).item():.4f} en un paso")

# %% [markdown]
# Con el estado cargado, el paso sigue bajando la pérdida; con un optimizador nuevo, el
# paso de $10\cdot\mathrm{lr}$ la multiplica por más de 50. Por eso la sección 9 guarda el
# `state_dict()` del optimizador junto con el del modelo.

# %% [markdown]
# ## 5 · Registrar con `.item()`
#
# `loss` es un tensor con `grad_fn`. Si lo sumas a un acumulador, `running_loss += loss`, el
# acumulador también lleva `grad_fn` y apunta al grafo de **cada** iteración: ninguno se
# puede liberar. `loss.item()` devuelve un `float` y suelta todo.
#
# Midámoslo. Con un gancho de tensores guardados (`torch.autograd.graph.saved_tensors_hooks`)
# contamos los bytes que los grafos guardan para el pase hacia atrás (*backward pass*) y que
# siguen vivos, y
# contamos los nodos del grafo que cuelgan del acumulador.

# %% tags=["demo"]
class Box:
    """Lo que el grafo guarda en lugar de un tensor: el tensor, dentro de una caja que
    podemos vigilar."""

    def __init__(self, tensor):
        self.tensor = tensor


class GraphMeter:
    """Bytes de tensores guardados que siguen vivos, medidos con ``saved_tensors_hooks`` y
    referencias débiles."""

    def __init__(self):
        self.alive = 0

    def _pack(self, tensor):
        # detach(): una salida guardada no debe apuntar a su propio grad_fn (un ciclo que
        # solo liberaría el recolector de basura). El grafo mantiene viva la caja.
        box = Box(tensor.detach())
        size = tensor.numel() * tensor.element_size()
        self.alive += size
        weakref.finalize(box, self._release, size)
        return box

    def _release(self, size):
        self.alive -= size

    def hooks(self):
        return torch.autograd.graph.saved_tensors_hooks(self._pack, lambda box: box.tensor)


def count_graph_nodes(tensor):
    """Cuántos nodos de autograd cuelgan de ``tensor`` (recorrido iterativo: la cadena
    puede ser larga)."""
    if not isinstance(tensor, torch.Tensor) or tensor.grad_fn is None:
        return 0
    pending, visited = [tensor.grad_fn], set()
    while pending:
        node = pending.pop()
        if node is None or node in visited:
            continue
        visited.add(node)
        pending.extend(child for child, _ in node.next_functions)
    return len(visited)


# %% [markdown]
# Primero, un bucle de **evaluación** olvidando `no_grad()`: nadie llama a `backward()`, así
# que cada grafo conserva sus activaciones. Con `+= loss` quedan todas vivas; con
# `+= loss.item()` cada grafo muere en la iteración siguiente.

# %% tags=["demo"]
def memory_in_evaluation(use_item, iterations=60):
    net = new_model()
    meter, accumulator, series = GraphMeter(), 0.0, []
    with meter.hooks():
        for i in range(iterations):
            xb = X_train[(i * 32) % 576:(i * 32) % 576 + 32]
            yb = y_train[(i * 32) % 576:(i * 32) % 576 + 32]
            loss = loss_fn(net(xb), yb)  # sin no_grad: se construye el grafo
            accumulator += loss.item() if use_item else loss
            series.append(meter.alive / 1024)
    return series, accumulator


eval_tensor, accumulator = memory_in_evaluation(use_item=False)
eval_item, _ = memory_in_evaluation(use_item=True)
print(f"+= loss:        {eval_tensor[-1]:7.1f} KiB retenidos tras 60 lotes; "
      f"el acumulado tiene grad_fn = {type(accumulator.grad_fn).__name__}")
print(f"+= loss.item(): {eval_item[-1]:7.1f} KiB retenidos tras 60 lotes")

# %% [markdown]
# En el bucle de **entrenamiento**, `backward()` libera los tensores guardados de cada
# grafo, así que lo que crece es la cadena de nodos que cuelga del acumulador: cada
# iteración añade los suyos y ninguno se libera mientras el acumulador viva.

# %% tags=["demo"]
def nodes_in_training(use_item, iterations=60):
    net = new_model()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    accumulator, series = 0.0, []
    for i in range(iterations):
        xb = X_train[(i * 32) % 576:(i * 32) % 576 + 32]
        yb = y_train[(i * 32) % 576:(i * 32) % 576 + 32]
        loss = loss_fn(net(xb), yb)
        loss.backward()
        opt.step()
        opt.zero_grad()
        accumulator += loss.item() if use_item else loss
        series.append(count_graph_nodes(accumulator))
    return series


train_tensor, train_item = nodes_in_training(False), nodes_in_training(True)
print(f"nodos vivos tras 60 iteraciones: += loss → {train_tensor[-1]}, "
      f"+= loss.item() → {train_item[-1]}")

fig, (ax_m, ax_n) = plt.subplots(1, 2, figsize=(9, 3))
ax_m.plot(eval_tensor, label="+= loss")
ax_m.plot(eval_item, label="+= loss.item()")
ax_m.set_title("evaluación sin no_grad: memoria retenida")
ax_m.set_ylabel("KiB retenidos")
ax_n.plot(train_tensor, label="+= loss")
ax_n.plot(train_item, label="+= loss.item()")
ax_n.set_title("entrenamiento: nodos colgando del acumulador")
ax_n.set_ylabel("nodos del grafo vivos")
for ax in (ax_m, ax_n):
    ax.set_xlabel("iteración")
    ax.legend()
plt.tight_layout()
plt.show()

# %% [markdown]
# Las dos curvas de `+= loss` crecen en línea recta con el número de iteraciones; las de
# `.item()` se quedan planas. Ninguna celda de arriba emitió un aviso: el código funciona
# igual y solo crece la memoria, así que este error se descubre tarde, cuando se acaba.
#
# ## 6 · Planificadores de la tasa de aprendizaje
#
# Un planificador cambia la tasa de aprendizaje (*learning rate*, `lr`) del optimizador a lo
# largo del entrenamiento. Dos curvas cubren casi todo:
#
# - `OneCycleLR`: sube desde un valor bajo hasta `max_lr` y luego baja hasta casi cero (por
#   defecto, las dos fases siguen medio coseno). Se llama **una vez por lote**, y necesita
#   saber el número total de pasos.
# - Calentamiento lineal (*linear warmup*) seguido de un coseno (`CosineAnnealingLR`) hasta
#   `eta_min`: una curva muy habitual en los modelos de lenguaje.
#
# `scheduler.get_last_lr()` devuelve la tasa actual (una por grupo de parámetros): es lo que
# registras.

# %% tags=["demo"]
def run_scheduler(make, steps):
    """La ``lr`` de cada uno de ``pasos`` pasos del optimizador, con un optimizador recién
    creado."""
    w = nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([w], lr=0.1)
    scheduler = make(opt)
    lrs = []
    for _ in range(steps):
        lrs.append(scheduler.get_last_lr()[0])
        opt.step()
        scheduler.step()
    return lrs


STEPS = 200
one_cycle = run_scheduler(
    lambda opt: torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=STEPS), STEPS)


def warmup_and_cosine(opt, warmup=20, t_max=STEPS - 20):
    linear = torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.05, total_iters=warmup)
    cosine = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=t_max, eta_min=1e-3)
    return torch.optim.lr_scheduler.SequentialLR(opt, [linear, cosine],
                                                 milestones=[warmup])


with_warmup = run_scheduler(warmup_and_cosine, STEPS)
print("OneCycleLR, primeras tasas:", [round(t, 5) for t in one_cycle[:3]],
      " máxima:", round(max(one_cycle), 4))
print("calentamiento + coseno, pasos 0, 19, 20, 199:",
      [round(with_warmup[i], 5) for i in (0, 19, 20, 199)])

plt.figure(figsize=(6, 3))
plt.plot(one_cycle, label="OneCycleLR (max_lr=0.1)")
plt.plot(with_warmup, label="LinearLR 20 pasos + CosineAnnealingLR")
plt.xlabel("paso del optimizador")
plt.ylabel("lr")
plt.legend(loc="upper right")
plt.tight_layout()
plt.show()

# %% [markdown]
# Un detalle de `OneCycleLR`: por defecto (`cycle_momentum=True`) también mueve el momento
# del optimizador, al revés que la tasa: de 0,95 baja a 0,85 y vuelve a subir. A un `SGD`
# creado sin momento se lo pone sin avisar (con Adam y AdamW mueve `betas[0]`). Si no lo
# quieres, pasa `cycle_momentum=False`.

# %% tags=["demo"]
w = nn.Parameter(torch.zeros(1))
opt = torch.optim.SGD([w], lr=0.1)  # sin momento
print("momentum de SGD al crearlo:     ", opt.param_groups[0]["momentum"])
torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=STEPS)
print("momentum tras crear OneCycleLR: ", opt.param_groups[0]["momentum"])

# %% [markdown]
# **El orden importa.** `scheduler.step()` va **después** de `optimizer.step()`. Si lo
# llamas antes, PyTorch avisa, y el primer paso usa la segunda tasa de la curva: la
# primera se pierde.

# %% tags=["demo"]
w = nn.Parameter(torch.zeros(1))
opt = torch.optim.SGD([w], lr=0.1)
scheduler = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=10)
first_lr = scheduler.get_last_lr()[0]
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    (w**2).sum().backward()
    scheduler.step()  # al revés: antes que optimizer.step()
    lr_used = opt.param_groups[0]["lr"]
    opt.step()
for warning in caught:
    print(f"{warning.category.__name__}: {warning.message}")
# Si PyTorch deja de avisar, el texto de arriba está mal: falla aquí para que CI lo note.
assert any("lr_scheduler.step()" in str(a.message) for a in caught), "Se esperaba un aviso."
print(f"\nprimera tasa de la curva: {first_lr:.5f}   tasa del primer paso: {lr_used:.5f}")

# %% [markdown]
# `OneCycleLR` sabe cuántos pasos le diste (`total_steps`). Si lo llamas más veces, lanza
# un error en vez de seguir en silencio con tasas sin sentido:

# %% tags=["demo"]
w = nn.Parameter(torch.zeros(1))
opt = torch.optim.SGD([w], lr=0.1)
scheduler = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=5)
with muestra_error(ValueError):
    for _ in range(6):
        opt.step()
        scheduler.step()

# %% [markdown]
# **Con acumulación de gradientes**, un paso real del optimizador ocurre cada `accum`
# micro-lotes (*micro-batches*). El planificador cuenta pasos del optimizador (*optimizer
# steps*), no lotes: va dentro del mismo `if` que `optimizer.step()`, y `total_steps` es el
# número de pasos reales. Si lo dejas fuera del `if`, avanza `accum` veces más rápido y
# `OneCycleLR` lanza el error en el micro-lote `total_steps + 1`: con `accum=4`, hacia la
# cuarta parte de la época.

# %% tags=["demo"]
def epoch_with_accumulation(scheduler_inside_if, accum=4):
    net = new_model()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    loader = new_loader(batch_size=16)
    real_steps = math.ceil(len(loader) / accum)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=real_steps)
    for i, (xb, yb) in enumerate(loader):
        (loss_fn(net(xb), yb) / accum).backward()
        if not scheduler_inside_if:
            scheduler.step()  # el error: una vez por micro-lote
        if (i + 1) % accum == 0 or i + 1 == len(loader):
            opt.step()
            if scheduler_inside_if:
                scheduler.step()
            opt.zero_grad()
    return real_steps, scheduler.last_epoch


with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # el orden al revés también avisa; aquí no es lo que miramos
    print("dentro del if: (pasos reales, pasos del planificador) =", epoch_with_accumulation(True))
    with muestra_error(ValueError):
        epoch_with_accumulation(False)

# %% [markdown]
# `T_max` es la longitud del medio coseno, en pasos. Tras un calentamiento de 20 pasos
# quedan 180: con `T_max` menor, la tasa toca `eta_min` antes de tiempo y vuelve a subir;
# con `T_max` mayor, el entrenamiento termina sin llegar a `eta_min`.

# %% tags=["demo"]
for t_max in (100, 180, 400):
    lrs = run_scheduler(lambda opt, t=t_max: warmup_and_cosine(opt, 20, t), STEPS + 1)
    decay = lrs[20:]  # después del calentamiento
    print(f"T_max = {t_max:3d}: mínima {min(decay):.4f} en el paso "
          f"{20 + decay.index(min(decay)):3d}, tasa final {lrs[-1]:.4f}   (eta_min = 0.001)")

# %% [markdown]
# Explora las dos curvas con los deslizadores: `max_lr` y el calentamiento cambian la
# subida; `T_max`, la bajada del coseno.

# %% tags=["demo"]
def plot_schedulers(max_lr=0.1, warmup=20, t_max=180):
    cycle_lrs = run_scheduler(lambda opt: torch.optim.lr_scheduler.OneCycleLR(
        opt, max_lr=max_lr, total_steps=STEPS, pct_start=max(warmup, 1) / STEPS), STEPS)

    def make(opt):
        for group in opt.param_groups:
            group["lr"] = max_lr
        return warmup_and_cosine(opt, max(warmup, 1), t_max)

    cosine = run_scheduler(make, STEPS)
    plt.figure(figsize=(6, 3))
    plt.plot(cycle_lrs, label="OneCycleLR")
    plt.plot(cosine, label="calentamiento + coseno")
    plt.axvline(warmup, color="gray", lw=0.5)
    plt.xlabel("paso del optimizador")
    plt.ylabel("lr")
    plt.ylim(0, 0.31)
    plt.legend()
    plt.show()


explorer = widgets.interactive(
    plot_schedulers,
    max_lr=widgets.FloatSlider(value=0.1, min=0.01, max=0.3, step=0.01, description="max_lr"),
    warmup=widgets.IntSlider(value=20, min=1, max=100, step=1,
                                    description="calentamiento"),
    t_max=widgets.IntSlider(value=180, min=20, max=400, step=10, description="T_max"),
)
display(explorer)

# %% [markdown]
# ## Ejercicio 2 · Calentamiento lineal y coseno (3 puntos)
#
# Escribe una fábrica de planificadores: `warmup_cosine(optimizer, warmup_steps,
# total_steps, min_lr)`. Con $W$ = `warmup_steps`, $T$ = `total_steps` y `lr` la tasa que
# tiene el optimizador cuando se crea el planificador, la tasa tras $t$ llamadas a
# `scheduler.step()` debe ser
#
# $$\mathrm{lr}_t = \begin{cases} \mathrm{lr}\cdot\dfrac{t+1}{W+1} & 0 \le t < W \\[2mm]
# \mathrm{min\_lr} + (\mathrm{lr} - \mathrm{min\_lr})\cdot
# \dfrac{1 + \cos\!\big(\pi\,\frac{t - W}{T - W}\big)}{2} & W \le t \le T \end{cases}$$
#
# Puedes combinar `LinearLR` y `CosineAnnealingLR` con `SequentialLR`, o escribir el factor
# con `LambdaLR`. Comprueba a mano que en $t = W$ la tasa vale `lr` y en $t = T$, `min_lr`.

# %% exercise="warmup_cosine"
def warmup_cosine(optimizer, warmup_steps, total_steps, min_lr=0.0):
    """Crea un planificador: calentamiento lineal y después coseno hasta ``min_lr``.

    <contrato>
    """
    ### BEGIN SOLUTION
    warmup = torch.optim.lr_scheduler.LinearLR(
        optimizer, start_factor=1.0 / (warmup_steps + 1), end_factor=1.0,
        total_iters=warmup_steps)
    cosine = torch.optim.lr_scheduler.CosineAnnealingLR(
        optimizer, T_max=total_steps - warmup_steps, eta_min=min_lr)
    return torch.optim.lr_scheduler.SequentialLR(optimizer, [warmup, cosine],
                                                 milestones=[warmup_steps])
    ### END SOLUTION


# %% test="warmup_cosine"


# %% [markdown]
# ## 7 · Todo junto
#
# El bucle completo: `OneCycleLR` por lote, recorte de gradientes, AdamW, `test_loop` al
# final de cada época y `.item()` en todo lo que se registra. La barra de progreso muestra
# la pérdida de prueba mientras entrena.

# %% tags=["demo"]
net = new_model()
opt = torch.optim.AdamW(net.parameters(), lr=0.01, weight_decay=0.01)
EPOCHS = 15
scheduler = torch.optim.lr_scheduler.OneCycleLR(
    opt, max_lr=0.03, total_steps=EPOCHS * len(new_loader()))
logbook = {"entrenamiento": [], "prueba": [], "exactitud": [], "lr": []}
progress = tqdm(range(EPOCHS), desc="épocas", mininterval=1.0)
for epoch in progress:
    logbook["lr"].append(scheduler.get_last_lr()[0])
    logbook["entrenamiento"].append(
        train_loop(new_loader(epoch), net, loss_fn, opt, scheduler, max_norm=1.0))
    loss, accuracy = test_loop(test_loader, net, loss_fn)
    logbook["prueba"].append(loss)
    logbook["exactitud"].append(accuracy)
    progress.set_postfix(prueba=f"{loss:.3f}")

fig, (ax_l, ax_lr) = plt.subplots(1, 2, figsize=(9, 3))
ax_l.plot(logbook["entrenamiento"], label="entrenamiento")
ax_l.plot(logbook["prueba"], label="prueba")
ax_l.set_title("pérdida")
ax_l.set_ylabel("entropía cruzada media")
ax_l.legend()
ax_lr.plot(logbook["lr"])
ax_lr.set_title("lr al empezar cada época")
ax_lr.set_ylabel("lr")
for ax in (ax_l, ax_lr):
    ax.set_xlabel("época")
plt.tight_layout()
plt.show()
print(f"exactitud de prueba final: {logbook['exactitud'][-1]:.3f}")

# %% [markdown]
# ### El mismo bucle en el `Trainer` de Hugging Face
#
# Las bibliotecas de entrenamiento escriben este bucle por ti. El `Trainer` de la biblioteca
# `transformers` de Hugging Face lo configura con un objeto `TrainingArguments`, y cada
# pieza que has escrito a mano tiene ahí su argumento (este curso no instala
# `transformers`; la tabla sirve para leer una configuración ajena y saber qué hace):
#
# | en tu bucle | en `TrainingArguments` | dónde lo viste |
# |---|---|---|
# | el tamaño de lote del `DataLoader`, el número de épocas | `per_device_train_batch_size`, `num_train_epochs` (o `max_steps`) | sección 1 |
# | `accum` micro-lotes por paso del optimizador | `gradient_accumulation_steps` (1 por defecto) | capítulo 3 |
# | `clip_grad_norm_(model.parameters(), max_norm)` | `max_grad_norm` (1.0 por defecto; 0 lo desactiva) | capítulo 3 |
# | `AdamW(params, lr=..., weight_decay=...)` | `optim` (AdamW por defecto), `learning_rate`, `weight_decay`, `adam_beta1`, `adam_beta2` | sección 4 |
# | el planificador con calentamiento lineal | `lr_scheduler_type` (`"linear"` por defecto, `"cosine"`...), `warmup_steps` | sección 6 |
# | registrar la pérdida con `.item()` | `logging_steps` | sección 5 |
# | `test_loop` cada época o cada N pasos | `eval_strategy` (`"epoch"`, o `"steps"` con `eval_steps`; en versiones antiguas, `evaluation_strategy`) | sección 3 |
# | `autocast` con bf16; `autocast` con fp16 y `GradScaler` | `bf16=True`; `fp16=True` | capítulo 6 |
# | guardar el estado y reanudar | `save_strategy`, `save_steps`; `trainer.train(resume_from_checkpoint=...)` | sección 9 |
#
# Un detalle de la acumulación: el `Trainer` divide él mismo la pérdida de cada micro-lote
# por `gradient_accumulation_steps` (en las versiones recientes, con los modelos que lo
# admiten, la normaliza por el número de elementos de todo el ciclo, que es la misma idea
# afinada). Tú no escribes esa división. Lo que escribes a mano en este curso es
# justamente lo que esos argumentos hacen por dentro: cuando algo falla, es lo que tienes
# que saber leer.

# %% [markdown]
# ## Ejercicio 3 · Una época completa (4 puntos)
#
# Escribe `train_one_epoch(model, loader, loss_fn, optimizer, scheduler=None, accum=1,
# max_norm=None)`: una época con acumulación de gradientes, recorte y planificador, con las
# llamadas en su orden.
#
# - Pon el modelo en modo entrenamiento (puede llegar en modo evaluación) y déjalo así.
# - `loader` puede ser un `DataLoader`: recórrelo con `for`, sin indexarlo ni cortarlo.
# - Un paso del optimizador cada `accum` micro-lotes **y** tras el último lote, aunque su
#   ciclo esté incompleto (si hay 7 lotes y `accum=3`, los ciclos tienen 3, 3 y 1).
# - Divide la pérdida de cada micro-lote por el número de micro-lotes de **su** ciclo.
# - En cada paso: recorte si `max_norm` no es `None`, `optimizer.step()`,
#   `scheduler.step()` si hay planificador; y gradientes a cero antes del ciclo siguiente.
# - Devuelve la media de las pérdidas **sin dividir** de los micro-lotes, como `float`.
#
# El contrato del docstring dice cada detalle que se comprueba.

# %% exercise="train_one_epoch"
def train_one_epoch(model, loader, loss_fn, optimizer, scheduler=None, accum=1, max_norm=None):
    """Una época de entrenamiento con acumulación de gradientes, recorte y planificador.

    Se llama con autograd activado.

    <contrato>
    """
    ### BEGIN SOLUTION
    model.train()
    n = len(loader)
    total = 0.0
    for i, (x, y) in enumerate(loader):
        cycle_len = min(accum, n - (i - i % accum))
        loss = loss_fn(model(x), y)
        (loss / cycle_len).backward()
        total += loss.item()
        if (i + 1) % accum == 0 or i + 1 == n:
            if max_norm is not None:
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            optimizer.step()
            if scheduler is not None:
                scheduler.step()
            optimizer.zero_grad()
    return total / n
    ### END SOLUTION


# %% test="train_one_epoch"


# %% [markdown]
# ---
#
# **Segunda parte · Depurar y reanudar.** El bucle ya está completo. Lo que queda es lo que
# hace falta cuando entrena mal (sección 8) y cuando hay que pararlo y seguir después
# (sección 9).

# %% [markdown]
# ## 8 · Depurar el bucle de entrenamiento
#
# La mayoría de los errores de un bucle no lo detienen: entrena peor, o no entrena, y no
# dice por qué; y cuando uno sí lo detiene, el mensaje no siempre dice dónde. Esta sección
# reúne cinco comprobaciones baratas, de la más directa a la más general: un error *in-place* localizado con el modo de detección de anomalías
# (*anomaly detection*), la pérdida inicial, sobreajustar un solo lote, el flujo de
# gradientes (*gradient flow*) por capa y la prueba de rango de la tasa de aprendizaje
# (*LR range test*).
#
# ### El error *in-place* y `detect_anomaly`
#
# En el capítulo 2 viste el contador de versiones: si cambias en su sitio (*in-place*) un
# tensor que el grafo guardó, `backward()` falla. Dentro de un modelo, el mensaje dice
# **qué** tensor (la salida de qué operación), pero no **en qué línea** del pase hacia
# adelante se creó. Esta red pone a cero una neurona con una asignación en el sitio justo
# después de la sigmoide, que guarda su salida para el pase hacia atrás:

# %% tags=["demo"]
x, y = next(iter(new_loader()))  # one batch of 32, used by this whole section


class MaskedNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer1 = nn.Linear(2, 8)
        self.layer2 = nn.Linear(8, 3)

    def forward(self, x):
        h = torch.sigmoid(self.layer1(x))
        h[:, 0] = 0  # el error: cambia en el sitio la salida que la sigmoide guardó
        return self.layer2(h)


masked_net = MaskedNet()
with muestra_error(RuntimeError):
    loss_fn(masked_net(x), y).backward()

# %% [markdown]
# Con `torch.autograd.set_detect_anomaly(True)` (para todo el programa) o con el gestor de
# contexto `torch.autograd.detect_anomaly()` (solo para un bloque), autograd guarda, para
# cada operación del pase hacia adelante, la pila de llamadas que la creó. Cuando el pase
# hacia atrás falla, emite un aviso (`UserWarning`, que Jupyter muestra en rojo, en stderr)
# con esa pila, y después lanza el mismo error (con otra pista al final). Aquí capturamos los avisos para imprimir
# solo las líneas de esta celda, sin las de PyTorch ni las de Jupyter:

# %% tags=["demo"]
LIBRARY_PATHS = tuple({sysconfig.get_paths()[key] for key in ("stdlib", "purelib", "platlib")})


def stack_without_libraries(message):
    """Las líneas de un aviso del modo de anomalías, sin los marcos de las bibliotecas
    instaladas."""
    lines = message.splitlines()
    kept, skip_code = [lines[0]], False
    for line in lines[1:]:
        if line.strip().startswith("File "):
            path = line.split('"')[1]
            skip_code = path.startswith(LIBRARY_PATHS) or path.startswith("<frozen")
            if not skip_code:
                kept.append(line)
        elif line.startswith("    ") and not skip_code:
            kept.append(line)
    return "\n".join(kept)


with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    with torch.autograd.detect_anomaly(), muestra_error(RuntimeError):
        loss_fn(masked_net(x), y).backward()
for warning in caught:
    print(f"\n{warning.category.__name__}: {stack_without_libraries(str(warning.message))}")
# If anomaly mode stops pointing at the forward line, the text above is wrong.
assert any("torch.sigmoid(self.layer1(x))" in str(a.message) for a in caught)

# %% [markdown]
# El primer aviso solo recuerda que el modo está activado. El segundo nombra la función
# del pase hacia atrás que falló (`SigmoidBackward0`) y la línea del pase hacia adelante
# que la creó, `h = torch.sigmoid(self.layer1(x))`: el tensor que esa línea guardó se
# cambió **en esa línea o después**. Desde ahí buscas hacia abajo la primera operación en
# el sitio sobre `h` (aquí, `h[:, 0] = 0`; el arreglo es `h = h * mascara` o clonar
# antes). Con `check_nan=True` (el valor por defecto), el modo también lanza un error en
# cuanto una función del pase hacia atrás devuelve NaN, y dice cuál.
#
# El modo tiene un precio: guardar una pila por operación hace lento cada paso. Mídelo en
# el bucle de esta sección y desactívalo en cuanto encuentres el error.

# %% tags=["demo"]
def seconds_for_steps(anomaly, steps=200):
    net = new_model()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the "Anomaly Detection has been enabled" warning
        with torch.autograd.set_detect_anomaly(anomaly):
            start = time.perf_counter()
            for _ in range(steps):
                loss_fn(net(x), y).backward()
                opt.step()
                opt.zero_grad()
            return time.perf_counter() - start


seconds_for_steps(False, steps=20)  # warm-up
without_anomaly, with_anomaly = seconds_for_steps(False), seconds_for_steps(True)
print(f"200 pasos: {without_anomaly:.2f} s sin el modo, {with_anomaly:.2f} s con él "
      f"({with_anomaly / without_anomaly:.1f} veces más lento)")
print("¿sigue activado fuera del bloque?", torch.is_anomaly_enabled())

# %% [markdown]
# ### La pérdida inicial: ≈ log C
#
# Antes de entrenar, un clasificador recién inicializado no sabe nada: sus logits son
# pequeños y parecidos, así que reparte la probabilidad casi por igual entre las $C$
# clases. La entropía cruzada de una predicción uniforme es $-\log(1/C) = \log C$. Es la
# primera comprobación de cualquier bucle: calcula la pérdida **antes** del primer paso y
# compárala con $\log C$.

# %% tags=["demo"]
with torch.no_grad():
    net = new_model()
    print(f"espirales, C = 3: pérdida inicial {loss_fn(net(X_train), y_train).item():.4f}   "
          f"log 3 = {math.log(3):.4f}")
    for num_classes in (10, 100):
        torch.manual_seed(0)
        net = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, num_classes))
        features, targets = torch.randn(512, 20), torch.randint(num_classes, (512,))
        print(f"datos al azar, C = {num_classes}: pérdida inicial "
              f"{loss_fn(net(features), targets).item():.4f}   log {num_classes} = {math.log(num_classes):.4f}")

# %% [markdown]
# Si sale mucho **mayor**, el modelo empieza muy seguro de respuestas al azar: logits
# grandes por una inicialización con demasiada escala, entradas sin normalizar o un
# sesgo mal puesto. Por ejemplo, la última capa de las espirales con pesos de desviación
# típica 5:

# %% tags=["demo"]
with torch.no_grad():
    net = new_model()
    nn.init.normal_(net[-1].weight, std=5.0)
    large_logits = net(X_train)
    print(f"pérdida inicial {loss_fn(large_logits, y_train).item():.4f} (log 3 = {math.log(3):.4f});"
          f" |logit| medio {large_logits.abs().mean().item():.2f}")

# %% [markdown]
# ### Sobreajustar un lote
#
# Un modelo con capacidad suficiente tiene que poder memorizar **un** lote: entrena sobre
# los mismos 32 puntos una y otra vez, y la pérdida debe bajar casi a cero en unas decenas
# o pocos cientos de pasos. Si no baja con una tasa razonable, sospecha primero del bucle:
# los datos y el tamaño del modelo casi nunca impiden memorizar 32 puntos. Aquí, el bucle correcto frente a dos errores que no lanzan ninguna
# excepción: `zero_grad()` entre `backward()` y `step()`, y un optimizador creado sobre
# los parámetros de **otra** copia del modelo.

# %% tags=["demo"]
def overfit_one_batch(error=None, steps=100):
    net = new_model()
    other_copy = new_model()
    opt = torch.optim.Adam((other_copy if error == "otra copia" else net).parameters(), lr=0.01)
    losses = []
    for _ in range(steps):
        loss = loss_fn(net(x), y)  # siempre el mismo lote
        loss.backward()
        if error == "zero_grad entre backward y step":
            opt.zero_grad()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    return losses


plt.figure(figsize=(6, 3))
# The two mistakes give the same flat curve: dashes and dots keep both visible.
for error, style in ((None, "-"), ("zero_grad entre backward y step", "--"),
                      ("otra copia", ":")):
    losses = overfit_one_batch(error)
    name = error or "bucle correcto"
    plt.semilogy(losses, style, label=name, linewidth=2)
    print(f"{name:>31}: pérdida {losses[0]:.4f} → {losses[-1]:.4f} en {len(losses)} pasos")
plt.xlabel("paso (siempre el mismo lote)")
plt.ylabel("pérdida (escala log)")
plt.legend()
plt.tight_layout()
plt.show()

# %% [markdown]
# Los dos errores dejan la pérdida plana: sus pasos no mueven los parámetros de `net`. Que un lote se sobreajuste no prueba que el bucle esté bien (no dice nada de
# `eval()`, del planificador ni de la acumulación), pero que **no** se sobreajuste prueba
# que está mal, y en segundos.
#
# ### El flujo de gradientes, capa por capa
#
# Si los gradientes llegan a las primeras capas con una magnitud cientos o millones de
# veces menor que a las últimas, esas capas casi no aprenden: son los gradientes que se
# desvanecen (*vanishing gradients*). Para verlo, tras un `backward()` recorre
# `named_parameters()` y calcula la media de $|\text{grad}|$ de los pesos de cada capa.
#
# Compara tres redes de 10 capas lineales de ancho 32: con sigmoide, con ReLU y la
# inicialización por defecto de `nn.Linear`, y con ReLU e inicialización de Kaiming
# (`nn.init.kaiming_normal_`, pensada para ReLU: conserva la varianza de capa a capa).

# %% tags=["demo"]
def deep_net(activation, kaiming=False, num_layers=10, width=32):
    torch.manual_seed(0)
    sizes = [2] + [width] * (num_layers - 1) + [3]
    modules = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        linear = nn.Linear(n_in, n_out)
        if kaiming:
            nn.init.kaiming_normal_(linear.weight, nonlinearity="relu")
            nn.init.zeros_(linear.bias)
        modules += [linear, activation()]
    return nn.Sequential(*modules[:-1])  # no activation after the last layer: logits


def gradient_flow(net):
    """La media de |grad| del peso de cada capa tras un ``backward`` sobre el conjunto de
    entrenamiento."""
    net.zero_grad()
    loss_fn(net(X_train), y_train).backward()
    return [p.grad.abs().mean().item() for name, p in net.named_parameters()
            if name.endswith("weight")]


DEEP_NETS = {"sigmoide": deep_net(nn.Sigmoid),
             "ReLU (init por defecto)": deep_net(nn.ReLU),
             "ReLU + Kaiming": deep_net(nn.ReLU, kaiming=True)}
plt.figure(figsize=(6, 3))
for name, net in DEEP_NETS.items():
    flow = gradient_flow(net)
    plt.semilogy(range(1, len(flow) + 1), flow, "o-", label=name)
    print(f"{name:>23}: media |grad| capa 1 = {flow[0]:.1e}, capa {len(flow)} = "
          f"{flow[-1]:.1e} (cociente {flow[-1] / flow[0]:.0e})")
plt.xlabel("capa (1 = la más cercana a la entrada)")
plt.ylabel("media de |grad| de los pesos")
plt.legend()
plt.tight_layout()
plt.show()

# %% [markdown]
# La derivada de la sigmoide nunca pasa de 1/4, y el pase hacia atrás multiplica una por
# capa: con sigmoide, el gradiente de la primera capa sale órdenes de magnitud por debajo
# del de la última (lee el cociente arriba). Con ReLU la caída es mucho menor, pero con la
# inicialización por defecto de `nn.Linear` sigue ahí: esa inicialización encoge la señal
# en cada capa. Con Kaiming, la curva queda casi plana.
#
# Un gancho (*hook*) obtiene lo mismo sin esperar a que `.grad` se rellene:
# `p.register_hook(f)` llama a `f` con el gradiente de `p` en cuanto el pase hacia atrás
# lo calcula. Sirve para registrar gradientes dentro de un bucle real (con acumulación,
# `.grad` solo tiene la suma). Con ganchos recogemos los gradientes completos de cada
# capa y dibujamos su histograma, en escala logarítmica:

# %% tags=["demo"]
def grads_with_hooks(net):
    """El gradiente del peso de cada capa, capturado con ganchos de tensor durante un
    ``backward``."""
    captured, hooks = {}, []
    for name, p in net.named_parameters():
        if name.endswith("weight"):
            hooks.append(p.register_hook(
                lambda g, name=name: captured.__setitem__(name, g.detach().clone())))
    net.zero_grad(set_to_none=True)
    loss_fn(net(X_train), y_train).backward()
    for hook in hooks:
        hook.remove()  # a hook left behind would keep firing in every later backward
    # Hooks fire from the last layer to the first: return them in the model's order.
    return {name: captured[name] for name, _ in net.named_parameters()
            if name in captured}


fig, axes = plt.subplots(1, 2, figsize=(9, 3), sharey=True)
for ax, name in zip(axes, ("sigmoide", "ReLU + Kaiming")):
    net = DEEP_NETS[name]
    captured = grads_with_hooks(net)
    same = all(torch.equal(g, net.get_parameter(n).grad) for n, g in captured.items())
    print(f"{name}: ¿los ganchos vieron lo mismo que .grad? {same}")
    names = list(captured)
    for layer in (1, len(names) // 2, len(names)):
        values = captured[names[layer - 1]].abs().flatten()
        ax.hist(torch.log10(values[values > 0]).tolist(), bins=30, histtype="step",
                 density=True, label=f"capa {layer}")  # density: layers differ in size
    ax.set_title(name)
    ax.set_xlabel("log10 |grad|")
    ax.legend()
axes[0].set_ylabel("densidad")
plt.tight_layout()
plt.show()

# %% [markdown]
# El histograma dice más que la media: con sigmoide, las distribuciones de las capas
# están separadas por órdenes de magnitud; con Kaiming se solapan. Si la masa de una capa
# se apila en un extremo (todo cero, o valores enormes), esa capa no aprende o va a
# explotar.
#
# ### La prueba de rango de la tasa de aprendizaje
#
# ¿Qué `lr` usar? La prueba de rango (Leslie Smith, 2017) lo mide en unos cientos de pasos:
# empieza con una tasa diminuta y la multiplica por el mismo factor en cada paso (aquí con
# `ExponentialLR`, de $10^{-5}$ a $10$ en 300 pasos), mientras registra la pérdida
# suavizada con una media móvil exponencial. La curva pérdida frente a `lr` (en escala
# logarítmica) primero está plana (la tasa es demasiado pequeña para mover nada), luego
# baja y al final se dispara. Paramos cuando la pérdida supera 4 veces su mínimo.

# %% tags=["demo"]
def lr_range_test(lr_start=1e-5, lr_final=10.0, steps=300, smoothing=0.9):
    net = new_model()
    opt = torch.optim.SGD(net.parameters(), lr=lr_start, momentum=0.9)
    factor = (lr_final / lr_start) ** (1 / steps)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=factor)
    lrs, losses, smoothed, epoch = [], [], None, 0
    batches = iter(new_loader(epoch))
    for _ in range(steps):
        batch = next(batches, None)
        if batch is None:  # end of an epoch: a new one, freshly shuffled
            epoch += 1
            batches = iter(new_loader(epoch))
            batch = next(batches)
        loss = loss_fn(net(batch[0]), batch[1])
        loss.backward()
        lrs.append(scheduler.get_last_lr()[0])
        opt.step()
        scheduler.step()
        opt.zero_grad()
        smoothed = loss.item() if smoothed is None else smoothing * smoothed + (1 - smoothing) * loss.item()
        losses.append(smoothed)
        if not math.isfinite(smoothed) or smoothed > 4 * min(losses):
            break
    return lrs, losses


lrs, losses = lr_range_test()
i_min = min(range(len(losses)), key=losses.__getitem__)
# Steepest descent: the most negative slope d(loss)/d(log10 lr) before the minimum,
# over a window of ±5 steps so that the noise of single batches does not decide.
slopes = {i: (losses[i + 5] - losses[i - 5])
          / (math.log10(lrs[i + 5]) - math.log10(lrs[i - 5]))
          for i in range(5, i_min - 5)}
i_steepest = min(slopes, key=slopes.get)
lr_steepest, lr_at_min = lrs[i_steepest], lrs[i_min]

plt.figure(figsize=(6, 3))
plt.semilogx(lrs, losses)
plt.axvline(lr_steepest, color="green", ls="--", label=f"bajada más rápida: {lr_steepest:.3g}")
plt.axvline(lr_at_min / 10, color="orange", ls=":", label=f"mínimo / 10: {lr_at_min / 10:.3g}")
plt.axvline(lr_at_min, color="gray", lw=0.8, label=f"mínimo: {lr_at_min:.3g}")
plt.xlabel("lr (escala log)")
plt.ylabel("pérdida suavizada")
plt.legend()
plt.tight_layout()
plt.show()
print(f"{len(lrs)} pasos; mínimo de la pérdida en lr = {lr_at_min:.3g}; se paró en "
      f"lr = {lrs[-1]:.3g}")
print(f"tasa sugerida: {lr_steepest:.3g} (bajada más rápida) o {lr_at_min / 10:.3g} "
      f"(mínimo / 10)")

# %% [markdown]
# Las dos reglas habituales para leer la curva están marcadas: la tasa donde la pérdida
# baja más deprisa, y un orden de magnitud por debajo del mínimo (justo después del
# mínimo, la pérdida se dispara: la tasa del mínimo ya está al borde). Son un punto de
# partida, no un óptimo: la prueba dura unos cientos de pasos, y la curva depende del
# optimizador, del momento y del tamaño de lote con que la hagas, así que hazla con los
# mismos con que vas a entrenar, y con un modelo nuevo después (la prueba lo ha
# estropeado).
#
# ## 9 · Guardar el estado y reanudar el entrenamiento
#
# Un entrenamiento largo se interrumpe: se corta la sesión de Colab, se acaba el turno en
# el clúster. Para seguir **exactamente** donde estabas no basta con los pesos. El estado
# del entrenamiento tiene cuatro partes, y cada una tiene su `state_dict()`:
#
# - el modelo: parámetros y *buffers* (como las estadísticas acumuladas de BatchNorm);
# - el optimizador: los momentos de Adam (`exp_avg`, `exp_avg_sq`), el contador `step` de
#   cada parámetro y los `param_groups`, con la `lr` actual;
# - el planificador: cuántos pasos lleva (`last_epoch`) y su última tasa;
# - el `GradScaler`, si entrenas en precisión mixta con float16 (capítulo 6): su escala
#   actual.
#
# Se guardan juntos en un diccionario con `torch.save` (a un archivo, `"estado.pt"`; aquí
# a un `io.BytesIO` en memoria), y se cargan con `torch.load(..., weights_only=True)`, que
# solo acepta tensores y tipos simples (es el valor por defecto desde PyTorch 2.6; con un
# archivo ajeno, nunca lo desactives). A este estado guardado se le suele llamar
# *checkpoint*; no lo confundas con el recálculo de activaciones del capítulo 7.
#
# Entrena 4 épocas de un tirón, y aparte 2 épocas, guarda el estado, créalo todo de nuevo
# y continúa 2 más:

# %% tags=["demo"]
RESUME_EPOCHS = 4


def make_training(seed=0):
    net = new_model(seed)
    opt = torch.optim.AdamW(net.parameters(), lr=0.01, weight_decay=0.01)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(
        opt, max_lr=0.03, total_steps=RESUME_EPOCHS * len(new_loader()))
    return net, opt, scheduler


def train_epochs(net, opt, scheduler, epochs):
    for epoch in epochs:  # each epoch's loader is seeded by its number: same batches on resume
        train_loop(new_loader(epoch), net, loss_fn, opt, scheduler)


net_uninterrupted, opt_uninterrupted, scheduler_uninterrupted = make_training()
train_epochs(net_uninterrupted, opt_uninterrupted, scheduler_uninterrupted, range(RESUME_EPOCHS))

net, opt, scheduler = make_training()
train_epochs(net, opt, scheduler, range(2))
checkpoint_file = io.BytesIO()
torch.save({"epoch": 2,
            "model": net.state_dict(),
            "optimizer": opt.state_dict(),
            "scheduler": scheduler.state_dict(),
            "scaler": torch.amp.GradScaler("cpu").state_dict()},  # fp16 only; see chapter 6
           checkpoint_file)
print(f"estado guardado: {checkpoint_file.tell() / 1024:.1f} KiB")
del net, opt, scheduler  # the "interruption"

# %% [markdown]
# Para reanudar, crea los tres objetos como al empezar (la semilla da igual: los pesos se
# van a sobrescribir) y solo después carga los estados.

# %% tags=["demo"]
def resume(load_optimizer=True, load_scheduler=True, scheduler_after=False):
    checkpoint_file.seek(0)
    state = torch.load(checkpoint_file, weights_only=True)
    net, opt, scheduler = make_training(seed=1)
    net.load_state_dict(state["model"])
    if load_optimizer:
        opt.load_state_dict(state["optimizer"])
    if scheduler_after:  # the mistake: a scheduler created after loading the optimizer
        scheduler = torch.optim.lr_scheduler.OneCycleLR(
            opt, max_lr=0.03, total_steps=RESUME_EPOCHS * len(new_loader()))
    if load_scheduler:
        scheduler.load_state_dict(state["scheduler"])
    lr_on_resume = opt.param_groups[0]["lr"]
    train_epochs(net, opt, scheduler, range(state["epoch"], RESUME_EPOCHS))
    return net, scheduler, lr_on_resume


def compare_with_uninterrupted(name, net, scheduler, lr_on_resume):
    pairs = list(zip(net.parameters(), net_uninterrupted.parameters()))
    identical = all(torch.equal(p, q) for p, q in pairs)
    difference = max((p - q).abs().max().item() for p, q in pairs)
    print(f"{name:>26}: ¿idénticos bit a bit? {identical!s:5}  máx |dif| {difference:.2e}  "
          f"lr al reanudar {lr_on_resume:.5f}  lr final {scheduler.get_last_lr()[0]:.2e}")


print(f"{'ejecución seguida':>26}: lr final {scheduler_uninterrupted.get_last_lr()[0]:.2e}")
compare_with_uninterrupted("todo cargado", *resume())

# %% [markdown]
# Los parámetros son idénticos bit a bit (`torch.equal`, no una tolerancia) a los de la
# ejecución seguida: el bucle reanudado hace exactamente las mismas cuentas. Aquí basta
# porque el orden de los lotes depende solo del número de época (cada época crea su
# `DataLoader` con su propia semilla) y el modelo no tiene Dropout. Si tu bucle usa el
# generador global (Dropout, un `DataLoader` sin `generator`), guarda también
# `torch.get_rng_state()` y restáuralo con `torch.set_rng_state(...)`.
#
# Ahora olvida una parte cada vez:

# %% tags=["demo"]
compare_with_uninterrupted("sin el optimizador", *resume(load_optimizer=False))
compare_with_uninterrupted("sin el planificador", *resume(load_scheduler=False))
compare_with_uninterrupted("planificador creado tarde", *resume(scheduler_after=True))
checkpoint_file.seek(0)
opt_state = torch.load(checkpoint_file, weights_only=True)["optimizer"]
print("\nlo que se pierde sin el optimizador, por parámetro:",
      sorted(opt_state["state"][0]), " step =", opt_state["state"][0]["step"].item())
checkpoint_file.seek(0)
print("el estado del GradScaler (se carga con scaler.load_state_dict):",
      torch.load(checkpoint_file, weights_only=True)["scaler"])

# %% [markdown]
# - **Sin el estado del optimizador**, AdamW empieza de cero: momentos a cero y `step = 0`,
#   así que su corrección de sesgo vuelve a empezar; además, la `lr` del primer paso es la
#   que el planificador puso al crearse (el principio de la curva), porque la tasa actual
#   vive en `param_groups`. El entrenamiento sigue, sin error ni aviso, pero por otro
#   camino.
# - **Sin el estado del planificador**, la curva vuelve a empezar: `OneCycleLR` recorre de
#   nuevo el calentamiento, y al terminar la tasa sigue cerca de su máximo en lugar de
#   haber bajado a su mínimo (compara la `lr final` con la de la ejecución seguida).
# - **Con el planificador creado después de cargar el optimizador**, los tres estados
#   están cargados y aun así falla: el constructor del planificador reescribe la `lr` de
#   los grupos con la del principio de su curva, y `load_state_dict` del planificador no la
#   restaura. Solo el primer paso usa la tasa equivocada, y basta para que los
#   parámetros ya no coincidan.
#
# Ninguno de estos errores avisa. Por eso la comprobación de esta celda, reanudar y
# comparar con `torch.equal` contra una ejecución seguida de pocos pasos, es la prueba de
# que tu código de guardar y cargar está completo.

# %% [markdown]
# ## Ejercicio 4 · Reanudar exactamente (4 puntos)
#
# Escribe `train_steps(model, optimizer, scheduler, loss_fn, batches, stop, state=None)`:
# entrena hasta el paso `stop` y devuelve un estado desde el que otra llamada, con objetos
# recién creados, sigue **como si nunca se hubiera interrumpido**.
#
# - `batches` es la lista de lotes `(x, y)` de todo el entrenamiento: el paso `t` usa
#   `batches[t]`. Puede tener más lotes de los que tocan en esta llamada.
# - Cada paso: pérdida `loss_fn(model(x), y)`, `backward()`, `optimizer.step()`,
#   `scheduler.step()` y gradientes a cero (un paso por lote, sin acumulación ni recorte).
# - Sin `state`, empieza en el paso 0 con los objetos como llegan. Con `state`, los objetos
#   llegan recién creados, con otros pesos y con el generador global en cualquier estado:
#   devuélvelos a donde estaban y sigue desde el paso en que se quedó la llamada anterior.
#   Puede haber varias interrupciones seguidas.
# - El modelo tiene Dropout, el optimizador tiene estado propio (momento, o los momentos de
#   Adam) y el planificador, calentamiento: ¿qué cambia en cada paso que no está en los
#   pesos?
# - `state` es un diccionario que `torch.save` guarda y `torch.load(..., weights_only=True)`
#   carga, y una instantánea: si quien llama sigue entrenando con los mismos objetos, el
#   `state` que ya tiene no cambia.
#
# La comprobación hace lo mismo que la sección 9: entrena de un tirón, y aparte con
# interrupciones (guardar, cargar con `weights_only=True`, objetos nuevos), y compara.

# %% exercise="train_steps"
def train_steps(model, optimizer, scheduler, loss_fn, batches, stop, state=None):
    """Entrena hasta el paso ``stop`` y devuelve el estado desde el que se puede reanudar.

    ``model`` tiene Dropout, ``optimizer`` estado propio y ``scheduler`` calentamiento; se
    llama con autograd activado.

    <contrato>
    """
    ### BEGIN SOLUTION
    start = 0
    if state is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        torch.set_rng_state(state["rng"])
        start = state["step"]
    for t in range(start, stop):
        x, y = batches[t]
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
    return {"model": copy.deepcopy(model.state_dict()),
            "optimizer": copy.deepcopy(optimizer.state_dict()),
            "scheduler": copy.deepcopy(scheduler.state_dict()),
            "rng": torch.get_rng_state(),
            "step": stop}
    ### END SOLUTION


# %% test="train_steps"


# %% [markdown]
# ## Resumen
#
# - El bucle de entrenamiento tiene un orden fijo: pase hacia adelante, pérdida,
#   `backward()`, recorte, `optimizer.step()`, `scheduler.step()`, `zero_grad()`.
# - Para evaluar, `model.eval()` **y** `torch.no_grad()`: uno cambia Dropout y BatchNorm, el
#   otro evita el grafo. Después, el modelo vuelve al modo en que estaba (en el bucle de
#   entrenamiento, `model.train()`).
# - `nn.CrossEntropyLoss` espera logits crudos: hace `log_softmax` y `NLLLoss` por dentro.
#   Un softmax de más pone un suelo a la pérdida y frena el aprendizaje. La predicción es
#   `argmax` de los logits.
# - RMSProp divide el paso de cada parámetro por la raíz de una media móvil de $g^2$
#   (`square_avg`); Adam añade el momento (`exp_avg`) y la corrección de sesgo. Con una
#   pérdida mal escalada, los dos avanzan donde SGD apenas se mueve. Ese estado va en el
#   `state_dict()` del optimizador.
# - Adam y AdamW adaptan el paso a cada parámetro; AdamW aplica el decaimiento de pesos
#   aparte del gradiente, proporcional a cada peso.
# - Registra con `.item()`: `running_loss += loss` mantiene vivo el grafo de cada iteración.
# - `OneCycleLR` (por lote) y calentamiento + coseno son las curvas habituales;
#   `scheduler.step()` va después de `optimizer.step()`, una vez por paso real (con
#   acumulación, dentro del mismo `if`), y `get_last_lr()` te da la tasa para registrarla.
# - Para depurar: `torch.autograd.detect_anomaly()` señala la línea del pase hacia adelante
#   cuyo tensor guardado se cambió en el sitio (es lento: solo mientras buscas); la pérdida
#   inicial de un clasificador debe rondar $\log C$; un bucle sano sobreajusta un lote en
#   pocos pasos; la media de $|\text{grad}|$ por capa (con `named_parameters()` o con
#   ganchos) muestra los gradientes que se desvanecen; la prueba de rango sugiere `lr`.
# - Para reanudar, guarda el `state_dict()` del modelo, del optimizador, del planificador
#   (y del `GradScaler`), el estado del generador global si hay Dropout
#   (`torch.get_rng_state()`) y el paso en que vas, y cárgalos en objetos recién creados;
#   compruébalo con `torch.equal` contra una ejecución seguida. Sin el optimizador se
#   pierden los momentos de Adam; sin el planificador, la curva de la tasa vuelve a
#   empezar; sin el generador, Dropout apaga otras neuronas. Si guardas el estado en
#   memoria, cópialo: los tensores de `state_dict()` son los mismos que el entrenamiento
#   sigue cambiando en su sitio.
