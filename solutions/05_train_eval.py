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
# # Capítulo 5 · Modo entrenamiento y modo evaluación
#
# `model.train()` y `model.eval()` ponen el modelo en modo entrenamiento (*train mode*) o en
# modo evaluación (*eval mode*). Parecen una formalidad, pero cambian lo que calcula el
# modelo. Dos capas muy comunes se comportan distinto en cada modo: Dropout y BatchNorm. En
# este capítulo mides esa diferencia, separas `eval()` de `torch.no_grad()` y reproduces un
# error clásico: una evaluación a mitad de época (*epoch*) que deja el modelo en modo
# evaluación.
#
# **Al terminar sabrás:**
#
# - qué cambia de verdad `model.train()` / `model.eval()` (el atributo `training` de cada
#   submódulo) y qué no cambia (los pesos, autograd);
# - cómo actúa Dropout en cada modo: apaga unidades al azar y escala por $1/(1-p)$ al
#   entrenar, y es la identidad al evaluar;
# - cómo actúa BatchNorm: estadísticas del lote (*batch*) y actualización de sus estadísticas
#   acumuladas (*running statistics*) al entrenar; solo las acumuladas al evaluar;
# - por qué `eval()` y `no_grad()` son independientes y la evaluación necesita los dos;
# - cómo se ve en las curvas un entrenamiento que siguió en modo evaluación, y cómo un
#   gestor de contexto (`with`) evalúa sin dejar rastro;
# - cómo usar Dropout en inferencia (*inference*) para estimar la incertidumbre (*MC
#   dropout*);
# - diagnosticar una red antes y durante el entrenamiento: activaciones y gradientes por
#   capa al inicializar, y la razón actualización/dato de cada paso.
#
# Vienes del capítulo 4: ya sabes escribir el bucle de entrenamiento (*training loop*)
# completo. Ejecuta las celdas en orden.

# %%
import contextlib
import copy

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
torch.set_num_threads(1)  # modelos diminutos: en CPU, un hilo evita esperas entre hilos

# %% [markdown]
# ## 1 · Un interruptor por módulo: `training`
#
# Cada `nn.Module` tiene un atributo booleano `training`. `model.train()` lo pone a `True`
# en el modelo **y en todos sus submódulos**; `model.eval()` lo pone a `False`. Eso es todo
# lo que hacen. Usemos un modelo pequeño con las dos capas que nos interesan.

# %% tags=["demo"]
def small_model(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Dropout(0.5),
                         nn.Linear(8, 2))


model = small_model()
for mode in ("train", "eval"):
    getattr(model, mode)()
    print(f"tras model.{mode}():", {name or "(raíz)": m.training
                                   for name, m in model.named_modules()})

# %% [markdown]
# `model.eval()` es exactamente `model.train(False)`. Y no toca los pesos: los parámetros
# son los mismos tensores, con los mismos valores y el mismo `requires_grad`. Autograd sigue
# encendido: `eval()` no tiene nada que ver con los gradientes.

# %% tags=["demo"]
before = copy.deepcopy(model.state_dict())
model.train()
model.eval()
print("¿pesos idénticos tras train() y eval()?",
      all(torch.equal(before[k], v) for k, v in model.state_dict().items()))
out = model(torch.randn(3, 4))
print("en eval, ¿la salida tiene grad_fn?", out.grad_fn is not None)

# %% [markdown]
# Como el atributo es de cada módulo, puedes mezclar modos: por ejemplo, entrenar un modelo
# con una BatchNorm congelada. `modos_de` (de la celda de utilidades) lista `training` para
# cada módulo, en el orden de `model.modules()`.

# %% tags=["demo"]
model.train()
model[1].eval()  # solo la BatchNorm
print("modos:", modos_de(model), "  model.training =", model.training)

# %% [markdown]
# Ojo con el último número: `model.training` es solo el atributo de la raíz. No te dice nada
# de los submódulos.
#
# ## 2 · Dropout: apagar al azar y escalar
#
# Dropout con probabilidad `p` pone a cero cada elemento con probabilidad `p` y
# multiplica los supervivientes por $1/(1-p)$. Así la **media** de la salida no cambia. En
# modo evaluación no hace nada: devuelve la entrada tal cual.

# %% tags=["demo"]
dropout = nn.Dropout(p=0.3)
x = torch.ones(10_000)

dropout.train()
y = dropout(x)
print(f"train: fracción de ceros {(y == 0).float().mean():.3f}   "
      f"valores no nulos {y[y != 0].unique().tolist()}   1/(1-p) = {1 / 0.7:.4f}")
print(f"       media {y.mean():.3f} (la entrada vale 1)")

dropout.eval()
print("eval:  ¿salida idéntica a la entrada?", torch.equal(dropout(x), x))

# %% [markdown]
# La media se conserva, pero la varianza no: con una entrada constante igual a 1, la salida
# vale $1/(1-p)$ con probabilidad $1-p$ y 0 si no, así que su varianza es $p/(1-p)$. Mueve
# el deslizador y compara la medida con la teoría.

# %% tags=["demo"]
import ipywidgets as widgets
from IPython.display import display

p_slider = widgets.FloatSlider(value=0.3, min=0.0, max=0.9, step=0.05, description="p")
dropout_out = widgets.Output()


def measure_dropout(change):
    p = change["new"]
    torch.manual_seed(0)
    y = nn.Dropout(p).train()(torch.ones(100_000))
    with dropout_out:
        dropout_out.clear_output(wait=True)
        print(f"fracción de ceros {(y == 0).float().mean():.3f}  (teoría {p:.3f})")
        print(f"media             {y.mean():.3f}  (teoría 1.000)")
        print(f"varianza          {y.var():.3f}  (teoría {p / (1 - p):.3f})")


p_slider.observe(measure_dropout, names="value")
measure_dropout({"new": p_slider.value})
display(widgets.VBox([p_slider, dropout_out]))

# %% [markdown]
# En modo entrenamiento, dos llamadas con la **misma** entrada dan salidas distintas: cada
# llamada sortea una máscara nueva. En modo evaluación, la salida es siempre la misma.

# %% tags=["demo"]
x = torch.randn(6)
dropout = nn.Dropout(0.5)
print("train:", dropout.train()(x), "\n      ", dropout(x))
print("eval: ", dropout.eval()(x), "\n      ", dropout(x))

# %% [markdown]
# ## 3 · BatchNorm: las estadísticas del lote o las acumuladas
#
# BatchNorm (`nn.BatchNorm1d`) normaliza cada característica. En modo entrenamiento usa la
# media y la varianza **del lote** que recibe, y de paso actualiza dos búferes
# (*buffers*): `running_mean` y `running_var`, medias móviles con `momentum=0.1`. En modo
# evaluación usa esos búferes y no los toca.
#
# Un lote con media 5 y desviación típica 2 por característica:

# %% tags=["demo"]
torch.manual_seed(0)
bn = nn.BatchNorm1d(3)
batch = 5 + 2 * torch.randn(64, 3)

bn.train()
out = bn(batch)
print("train: media de la salida", out.mean(0).detach(), " desviación",
      out.std(0, unbiased=False).detach())
print("running_mean", bn.running_mean, "  0.1 · media del lote", 0.1 * batch.mean(0))
print("running_var ", bn.running_var, "  0.9 + 0.1 · var del lote", 0.9 + 0.1 * batch.var(0))
print("num_batches_tracked", bn.num_batches_tracked.item())

# %% [markdown]
# La salida quedó centrada y con desviación 1 (los parámetros `weight` y `bias` empiezan en 1
# y 0). Los búferes se movieron un 10 % hacia las estadísticas del lote:
# $\text{running} \leftarrow 0{,}9\cdot\text{running} + 0{,}1\cdot\text{lote}$. Fíjate en
# que `running_var` usa la varianza con corrección de Bessel (divide por $n-1$), aunque la
# normalización del lote divide por $n$.
#
# En modo evaluación, la misma capa normaliza con los búferes. Tras un solo lote aún están
# lejos de 5 y 4, así que la salida no queda centrada. Y los búferes no cambian.

# %% tags=["demo"]
bn.eval()
before = {k: v.clone() for k, v in bn.named_buffers()}
out = bn(batch)
print("eval: media de la salida", out.mean(0).detach())
print("¿búferes intactos?", all(torch.equal(before[k], v) for k, v in bn.named_buffers()))

# %% [markdown]
# Con muchos lotes, las medias móviles se acercan a las estadísticas reales de los datos.
# La gráfica muestra `running_mean` de la primera característica lote a lote: tarda unas
# decenas de pasos (el factor $0{,}9^k$ decae despacio).

# %% tags=["demo"]
import matplotlib.pyplot as plt

torch.manual_seed(0)
bn = nn.BatchNorm1d(3).train()
history = []
with torch.no_grad():
    for _ in range(60):
        bn(5 + 2 * torch.randn(32, 3))
        history.append(bn.running_mean[0].item())

plt.figure(figsize=(7, 3))
plt.plot(history, label="running_mean[0]")
plt.axhline(5, color="gray", ls="--", label="media real (5)")
plt.xlabel("lotes vistos en modo entrenamiento")
plt.ylabel("valor del búfer")
plt.legend()
plt.tight_layout()
plt.show()

# %% [markdown]
# Mira el `with torch.no_grad()` de esa celda: **no impidió** que los búferes se
# actualizaran. `no_grad` apaga autograd; las estadísticas acumuladas dependen solo del modo.
#
# Otra consecuencia de usar el lote: en modo entrenamiento, la salida de una muestra depende
# de las demás muestras del lote. La misma fila, en dos lotes distintos, da dos salidas
# distintas. En modo evaluación, cada muestra se procesa sola.

# %% tags=["demo"]
torch.manual_seed(1)
row = torch.randn(1, 3)
batch_a = torch.cat([row, torch.randn(7, 3)])
batch_b = torch.cat([row, 3 + torch.randn(7, 3)])
for mode in ("train", "eval"):
    getattr(bn, mode)()
    with torch.no_grad():
        a, b = bn(batch_a)[0], bn(batch_b)[0]
    print(f"{mode:>5}: fila en el lote A {a}\n       fila en el lote B {b}")

# %% [markdown]
# Y con una sola muestra no hay estadísticas de lote que calcular: en modo entrenamiento,
# BatchNorm se niega.

# %% tags=["demo"]
bn.train()
with muestra_error(ValueError):
    bn(torch.randn(1, 3))

# %% [markdown]
# Que la salida de una muestra dependa de las demás se nota también en el pase hacia atrás.
# En modo entrenamiento, con $\hat x = (x - \mu)/\sigma$ (media $\mu$ y
# $\sigma = \sqrt{\mathrm{var} + \varepsilon}$ del lote, la varianza dividida por $N$) y
# $y = \gamma \hat x + \beta$, la regla de la cadena pasa también por $\mu$ y $\sigma$,
# que dependen de cada muestra. Para cada característica, con $g = \partial L/\partial y$:
#
# $$\frac{\partial L}{\partial x_i} = \frac{\gamma}{N\sigma}\Big(N g_i - \sum_j g_j
#   - \hat x_i \sum_j g_j \hat x_j\Big), \qquad
#   \frac{\partial L}{\partial \gamma} = \sum_j g_j \hat x_j, \qquad
#   \frac{\partial L}{\partial \beta} = \sum_j g_j.$$
#
# Los dos términos restados son el camino a través de $\mu$ y el camino a través de
# $\sigma$. En modo evaluación, $\mu$ y $\sigma$ son los búferes, constantes: solo queda
# $\gamma g_i / \sigma$. Compruébalo en float64 contra autograd, con un gradiente $g$ al
# azar:

# %% tags=["demo"]
generator = torch.Generator().manual_seed(3)
x = torch.randn(16, 3, dtype=torch.float64, generator=generator, requires_grad=True)
g = torch.randn(16, 3, dtype=torch.float64, generator=generator)
norm = nn.BatchNorm1d(3).double()
with torch.no_grad():
    norm.weight.copy_(torch.tensor([0.5, 1.5, -2.0]))

for mode in ("train", "eval"):
    getattr(norm, mode)()
    x.grad = norm.weight.grad = norm.bias.grad = None
    if mode == "train":  # las estadísticas del lote
        mean, var = x.detach().mean(0), x.detach().var(0, unbiased=False)
    else:  # los búferes (el pase en modo train de arriba los movió una vez)
        mean, var = norm.running_mean.clone(), norm.running_var.clone()
    norm(x).backward(g)
    n, sigma, gamma = x.shape[0], (var + norm.eps).sqrt(), norm.weight.detach()
    x_hat = (x.detach() - mean) / sigma
    if mode == "train":
        by_hand = gamma / (n * sigma) * (n * g - g.sum(0) - x_hat * (g * x_hat).sum(0))
    else:
        by_hand = gamma * g / sigma
    print(f"{mode:>5}: ¿a mano = autograd? ∂L/∂x {torch.allclose(by_hand, x.grad)} · "
          f"∂L/∂γ {torch.allclose((g * x_hat).sum(0), norm.weight.grad)} · "
          f"∂L/∂β {torch.allclose(g.sum(0), norm.bias.grad)}")

# %% [markdown]
# ## 4 · Medido en un modelo pequeño
#
# Junta las dos capas en el modelo del apartado 1 y pásale **la misma** entrada 200 veces
# en cada modo. En entrenamiento, cada pase da un resultado distinto (Dropout sortea una
# máscara nueva) y la BatchNorm mueve sus búferes; en evaluación, todos coinciden y los
# búferes no cambian.

# %% tags=["demo"]
model = small_model()
torch.manual_seed(2)
x = torch.randn(16, 4)
results = {}
for mode in ("train", "eval"):
    getattr(model, mode)()
    buffers = {k: v.clone() for k, v in model.named_buffers()}
    with torch.no_grad():
        outputs = torch.stack([model(x) for _ in range(200)])
    changed = [k for k, v in model.named_buffers() if not torch.equal(buffers[k], v)]
    results[mode] = outputs[:, 0, 0]
    print(f"{mode:>5}: varianza media entre pases {outputs.var(0).mean():.4f}   "
          f"búferes que cambiaron: {changed or 'ninguno'}")

plt.figure(figsize=(7, 3))
plt.hist(results["train"], bins=30, alpha=0.7, label="train: 200 valores")
plt.axvline(results["eval"][0], color="C1", lw=2, label="eval: siempre el mismo")
plt.xlabel("salida [0, 0] del modelo, misma entrada")
plt.ylabel("pases")
plt.legend()
plt.tight_layout()
plt.show()

# %% [markdown]
# ## 5 · `eval()` y `no_grad()` son independientes
#
# Se confunden porque casi siempre aparecen juntos, pero controlan cosas distintas:
#
# - `model.eval()` cambia **qué calcula** el modelo (Dropout apagado, BatchNorm con sus
#   estadísticas acumuladas y sin actualizarlas).
# - `torch.no_grad()` cambia **qué se registra**: ningún grafo computacional (*computational
#   graph*), ningún gradiente posible.
#
# Probemos las cuatro combinaciones con el mismo modelo y la misma entrada.

# %% tags=["demo"]
def probe(mode, with_grad):
    model = small_model()
    getattr(model, mode)()
    buffers = {k: v.clone() for k, v in model.named_buffers()}
    with torch.set_grad_enabled(with_grad):
        a, b = model(x), model(x)
    return {"determinista": torch.equal(a, b),
            "búferes cambian": any(not torch.equal(buffers[k], v)
                                   for k, v in model.named_buffers()),
            "construye grafo": a.grad_fn is not None}


USE = {("train", True): "entrenar",
       ("train", False): "casi nunca (¡mueve la BatchNorm!)",
       ("eval", True): "gradientes respecto de la entrada",
       ("eval", False): "evaluar / inferencia"}
print(f"{'modo':>6} {'grad':>5} {'determinista':>13} {'búferes cambian':>16} "
      f"{'construye grafo':>16}  uso")
for mode in ("train", "eval"):
    for with_grad in (True, False):
        row = probe(mode, with_grad)
        print(f"{mode:>6} {'sí' if with_grad else 'no':>5} {row['determinista']!s:>13} "
              f"{row['búferes cambian']!s:>16} {row['construye grafo']!s:>16}  "
              f"{USE[mode, with_grad]}")

# %% [markdown]
# La tabla se lee por columnas:
#
# | | grad activado | `torch.no_grad()` |
# |---|---|---|
# | **`train()`** | entrenar: Dropout activo, BatchNorm con el lote y búferes actualizados, grafo construido | nada se entrena, pero Dropout sigue sorteando y **los búferes se actualizan** con estos datos |
# | **`eval()`** | resultado de evaluación, pero con un grafo que ocupa memoria (útil si quieres gradientes respecto de la entrada) | **evaluación correcta**: determinista, búferes intactos, sin grafo |
#
# Solo la casilla de abajo a la derecha es una evaluación correcta: evaluar necesita los
# dos. `eval()` sin `no_grad()` da los números buenos pero gasta memoria en un grafo;
# `no_grad()` sin `eval()` ahorra la memoria pero da números ruidosos y, peor, ensucia la
# BatchNorm con los datos de validación.
#
# ## 6 · El error clásico: evaluar a mitad de época y no volver a `train()`
#
# Un bucle escrito a mano suele evaluar de vez en cuando. Si la evaluación llama a
# `model.eval()` y nadie llama después a `model.train()`, el entrenamiento sigue... en modo
# evaluación: sin Dropout y con la BatchNorm congelada. No hay ningún error: solo unas
# curvas raras.
#
# Las bibliotecas de entrenamiento lo hacen por ti: el `Trainer` de Hugging Face llama a
# `model.train()` al empezar cada paso de entrenamiento y a `model.eval()` al empezar cada
# evaluación, y el `Learner` de fastai llama a `model.train()` antes de la fase de
# entrenamiento de cada época y a `model.eval()` antes de la de validación. En un bucle
# escrito a mano, volver a `train()` es cosa tuya, y olvidarlo tras una evaluación a mitad
# de época es el error clásico que reproduce esta sección.
#
# Un problema de clasificación sintético con etiquetas ruidosas y pocos datos de
# entrenamiento, donde Dropout importa:

# %% tags=["demo"]
torch.manual_seed(0)
D, C = 20, 3
W_true = torch.randn(D, C)


def data(n):
    x = torch.randn(n, D)
    return x, (x @ W_true + 1.5 * torch.randn(n, C)).argmax(dim=1)


x_train, y_train = data(128)
x_valid, y_valid = data(512)


def classification_net():
    torch.manual_seed(1)
    return nn.Sequential(nn.Linear(D, 128), nn.BatchNorm1d(128), nn.ReLU(), nn.Dropout(0.5),
                         nn.Linear(128, 128), nn.BatchNorm1d(128), nn.ReLU(), nn.Dropout(0.5),
                         nn.Linear(128, C))


# %% [markdown]
# Los dos entrenamientos son idénticos (mismos pesos iniciales, mismos lotes) salvo una
# línea: el correcto vuelve a `model.train()` tras evaluar; el otro lo olvida. La
# evaluación ocurre a mitad de cada época.

# %% tags=["demo"]
def train_model(back_to_train, epochs=40, batch_size=16):
    model = classification_net()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    order = torch.Generator().manual_seed(2)
    train_losses, valid_losses = [], []
    model.train()
    for _ in range(epochs):
        permutation = torch.randperm(len(x_train), generator=order)
        total = 0.0
        for start in range(0, len(x_train), batch_size):
            indices = permutation[start:start + batch_size]
            loss = F.cross_entropy(model(x_train[indices]), y_train[indices])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item()
            if start == len(x_train) // 2:  # evaluación a mitad de época
                model.eval()
                with torch.no_grad():
                    valid = F.cross_entropy(model(x_valid), y_valid).item()
                if back_to_train:
                    model.train()
        train_losses.append(total / (len(x_train) // batch_size))
        valid_losses.append(valid)
    return model, train_losses, valid_losses


correct, train_ok, valid_ok = train_model(back_to_train=True)
buggy, train_bad, valid_bad = train_model(back_to_train=False)
print("al terminar, model.training: correcto", correct.training, "  con el error",
      buggy.training)

fig, ax = plt.subplots(figsize=(8, 3.5))
ax.plot(train_ok, "C0-", label="correcto: entrenamiento")
ax.plot(valid_ok, "C0--", label="correcto: validación")
ax.plot(train_bad, "C3-", label="sin volver a train(): entrenamiento")
ax.plot(valid_bad, "C3--", label="sin volver a train(): validación")
ax.set_xlabel("época")
ax.set_ylabel("pérdida (entropía cruzada)")
ax.legend()
plt.tight_layout()
plt.show()
print(f"pérdida de validación final: correcto {valid_ok[-1]:.3f}   con el error "
      f"{valid_bad[-1]:.3f}")

# %% [markdown]
# Las curvas se separan en pocas épocas. Sin Dropout, la red memoriza el conjunto de
# entrenamiento: su pérdida (*loss*) cae casi a cero y la de validación empieza a **subir**
# (sobreajuste, *overfitting*). Además, sus BatchNorm normalizan con las estadísticas
# acumuladas en los primeros 5 lotes, que ya no se actualizan.
#
# El arreglo de siempre es llamar a `model.train()` tras evaluar. Funciona en este bucle,
# pero tiene un fallo: **no restaura** el modo que había, sino que pone todo en
# entrenamiento. Si el modelo tenía una BatchNorm congelada a propósito (algo habitual al
# ajustar un modelo preentrenado), `model.train()` la descongela sin avisar:

# %% tags=["demo"]
model = small_model()
model.train()
model[1].eval()  # BatchNorm congelada a propósito
print("antes de evaluar:    ", modos_de(model))
model.eval()
with torch.no_grad():
    model(torch.randn(8, 4))
model.train()  # "después de evaluar, train()"
print("después de train():  ", modos_de(model), "← la BatchNorm ya no está congelada")

# %% [markdown]
# ## Ejercicio 1 · Un bloque `with` que evalúa y no deja rastro (3 puntos)
#
# Llamar a `model.eval()` y acordarse después de volver atrás es justo lo que falló arriba.
# Un gestor de contexto (*context manager*) se encarga de las dos cosas: lo que hace al
# entrar se deshace al salir, pase lo que pase en el bloque.
#
# Escribe `evaluation_mode(model)`, para usarlo así:
#
# ```python
# with evaluation_mode(model) as m:   # m es el mismo model
#     salida = m(x)                    # en modo evaluación y sin grafo
# ```
#
# Dentro del bloque, el modelo entero en modo evaluación y autograd desactivado; al salir,
# todo como estaba al entrar. El contrato del docstring dice exactamente qué se comprueba.
#
# Piensa en los casos difíciles: ¿qué pasa si el código del bloque lanza una excepción?
# ¿Y si alguien abre un `with evaluation_mode(model)` dentro de otro? ¿Y si el modelo llega
# con la raíz en evaluación y algún hijo en entrenamiento?

# %% exercise="evaluation_mode"
@contextlib.contextmanager
def evaluation_mode(model):
    """Gestor de contexto: dentro del bloque `with`, `model` en modo evaluación y sin autograd;
    al salir, todo como estaba al entrar.

    <contrato>
    """
    ### BEGIN SOLUTION
    modos = {m: m.training for m in model.modules()}
    model.eval()
    try:
        with torch.no_grad():
            yield model
    finally:
        for m, modo in modos.items():
            m.training = modo
    ### END SOLUTION


# %% test="evaluation_mode"


# %% [markdown]
# ## 7 · ¿Qué módulos cambian de verdad?
#
# "Dropout y BatchNorm cambian entre modos" es una regla útil, pero es una regla sobre
# **tipos**, y el comportamiento depende de la configuración. `Dropout(p=0)` no apaga
# nada; una BatchNorm con `track_running_stats=False` no tiene búferes y usa las
# estadísticas del lote en los dos modos.

# %% tags=["demo"]
torch.manual_seed(0)
h = torch.randn(8, 5)
layers = {"Dropout(p=0)": nn.Dropout(0.0),
         "BatchNorm1d(track_running_stats=False)": nn.BatchNorm1d(5, track_running_stats=False),
         "Dropout(p=0.2)": nn.Dropout(0.2),
         "BatchNorm1d (por defecto)": nn.BatchNorm1d(5)}
for name, layer in layers.items():
    with torch.no_grad():
        same = torch.equal(layer.train()(h), layer.eval()(h))
    print(f"{name:>38}: ¿igual en train y en eval? {same}")

# %% [markdown]
# Y al revés: cualquier módulo propio puede leer `self.training`. `RuidoGaussiano` (de la
# celda de utilidades) suma ruido normal solo al entrenar, una regularización que ningún
# `isinstance(m, nn.Dropout)` encontraría.

# %% tags=["demo"]
noise = RuidoGaussiano(sigma=0.5)
print("train:", noise.train()(torch.zeros(4)))
print("eval: ", noise.eval()(torch.zeros(4)))

# %% [markdown]
# La forma fiable de saberlo es medirlo: ejecutar cada módulo hoja (*leaf module*, sin
# hijos) en los dos modos sobre la entrada que recibe dentro del modelo y comparar. Para
# capturar esa entrada sirve un gancho (*hook*) de `register_forward_hook` o
# `register_forward_pre_hook`. Un detalle: si el gancho **devuelve** algo distinto de
# `None`, ese valor sustituye a la salida (o a la entrada) del módulo.

# %% tags=["demo"]
captured = {}


def record_input(name):
    def hook(module, args):
        captured[name] = args[0].shape  # no devuelve nada: no cambia la entrada
    return hook


model = small_model()
hooks = [m.register_forward_pre_hook(record_input(n)) for n, m in model.named_modules()
           if not list(m.children())]
with torch.no_grad():
    model.eval()(torch.randn(3, 4))
for hook in hooks:
    hook.remove()
print(captured)

# %% [markdown]
# En cambio, un gancho que devuelve un valor sí cambia el resultado. Este devuelve ceros, y
# la salida de la capa pasa a ser esos ceros:

# %% tags=["demo"]
layer = nn.Linear(4, 2)
inputs = torch.randn(1, 4)
with torch.no_grad():
    print("sin gancho:                  ", layer(inputs))
    hook = layer.register_forward_hook(lambda module, args, out: torch.zeros_like(out))
    print("con un gancho que devuelve 0:", layer(inputs))
hook.remove()

# %% [markdown]
# ## Ejercicio 2 · Los módulos que cambian entre train y eval (3 puntos)
#
# Escribe `modules_that_change(model, x)`: los nombres (los de `model.named_modules()`) de
# los módulos **hoja** cuya salida es distinta en modo entrenamiento y en modo evaluación,
# sobre la entrada que esa hoja recibe cuando se ejecuta `model(x)` en modo evaluación.
#
# No mires los tipos: mide, sin grafo. Y no dejes rastro: ejecutar una BatchNorm en modo
# entrenamiento actualiza sus búferes, así que trabaja sobre copias (`copy.deepcopy`) o
# restáuralo todo antes de devolver, y quita los ganchos que registres. El contrato del
# docstring dice exactamente qué se comprueba.

# %% exercise="modules_that_change"
def modules_that_change(model, x):
    """Nombres de las hojas de `model` cuya salida cambia entre modo train y modo eval,
    medido sin grafo y sin dejar rastro.

    <contrato>
    """
    ### BEGIN SOLUTION
    entradas, ganchos = {}, []

    def guardar(nombre):
        def gancho(modulo, args):
            entradas[nombre] = args[0]
        return gancho

    for nombre, m in model.named_modules():
        if not list(m.children()):
            ganchos.append(m.register_forward_pre_hook(guardar(nombre)))
    modos = {m: m.training for m in model.modules()}
    try:
        model.eval()
        with torch.no_grad():
            model(x)
    finally:
        for gancho in ganchos:
            gancho.remove()
        for m, modo in modos.items():
            m.training = modo
    cambian = []
    with torch.no_grad():
        for nombre, m in model.named_modules():
            if nombre in entradas:
                copia = copy.deepcopy(m)  # en train, una BatchNorm movería sus búferes
                entrada = entradas[nombre]
                if not torch.equal(copia.train()(entrada), copia.eval()(entrada)):
                    cambian.append(nombre)
    return cambian
    ### END SOLUTION


# %% test="modules_that_change"


# %% [markdown]
# ## 8 · Dropout en inferencia: MC dropout
#
# Apagar Dropout al evaluar da una predicción determinista. Dejarlo **encendido** y repetir
# la predicción muchas veces da otra cosa útil: una nube de predicciones. Su media es la
# predicción; su desviación típica, una estimación de la incertidumbre del modelo. Es el
# *MC dropout* (Monte Carlo dropout).
#
# Con un modelo que solo tiene Dropout basta con `model.train()` mientras se muestrea.
# Entrenamos una red pequeña en puntos de $\sin(x)$ con $x \in [-3, 3]$ y le pedimos
# predicciones en $[-6, 6]$.

# %% tags=["demo"]
torch.manual_seed(0)
x_points = torch.rand(64, 1) * 6 - 3
y_points = torch.sin(x_points) + 0.1 * torch.randn(64, 1)
regressor = nn.Sequential(nn.Linear(1, 64), nn.Tanh(), nn.Dropout(0.2), nn.Linear(64, 64),
                         nn.Tanh(), nn.Dropout(0.2), nn.Linear(64, 1))
optimizer = torch.optim.Adam(regressor.parameters(), lr=1e-2)
regressor.train()
for _ in range(300):
    optimizer.zero_grad()
    F.mse_loss(regressor(x_points), y_points).backward()
    optimizer.step()

x_grid = torch.linspace(-6, 6, 200).unsqueeze(1)
with torch.no_grad():
    samples = torch.stack([regressor(x_grid) for _ in range(100)])  # sigue en train()
regressor.eval()
mean, spread = samples.mean(0).squeeze(), samples.std(0).squeeze()  # (200,): para dibujar

plt.figure(figsize=(8, 3.5))
plt.scatter(x_points, y_points, s=8, color="k", label="datos de entrenamiento")
plt.plot(x_grid, mean, label="media de 100 pases")
plt.fill_between(x_grid.squeeze(), mean - 2 * spread, mean + 2 * spread, alpha=0.3,
                 label="± 2 desviaciones típicas")
plt.axvspan(-3, 3, color="gray", alpha=0.08)
plt.xlabel("x")
plt.ylabel("predicción")
plt.legend(loc="lower left")
plt.tight_layout()
plt.show()
print(f"desviación media dentro de [-3, 3]: {spread[50:150].mean():.3f}   "
      f"fuera: {torch.cat([spread[:50], spread[150:]]).mean():.3f}")

# %% [markdown]
# La banda mide cuánto discrepan entre sí las pasadas. Para saber si avisa de algo, hay que
# ponerla frente al error de verdad: aquí conocemos la función, $\sin(x)$, así que en cada
# punto de la rejilla podemos comparar la desviación típica de las pasadas con el error de
# su media. Una buena estimación de la incertidumbre daría más desviación donde hay más
# error.

# %% tags=["demo"]
error = (mean - torch.sin(x_grid.squeeze())).abs()
inside = x_grid.squeeze().abs() <= 3
plt.figure(figsize=(5, 3.5))
plt.scatter(spread[inside], error[inside], s=8, label="dentro de [-3, 3] (con datos)")
plt.scatter(spread[~inside], error[~inside], s=8, label="fuera (sin datos)")
plt.xlabel("desviación típica de las 100 pasadas")
plt.ylabel("|media − sin(x)|")
plt.title("¿Avisa la incertidumbre del error?")
plt.legend(fontsize=8)
plt.tight_layout()
plt.show()
correlation = torch.corrcoef(torch.stack([spread, error]))[0, 1].item()
print(f"fuera / dentro: el error medio se multiplica por "
      f"{error[~inside].mean() / error[inside].mean():.1f}, la desviación media por "
      f"{spread[~inside].mean() / spread[inside].mean():.1f} · correlación {correlation:.2f}")

# %% [markdown]
# Compara los dos factores que imprime la celda: cuánto crece el error lejos de los datos y
# cuánto crece la desviación. MC dropout es una estimación barata y tosca de la
# incertidumbre: la desviación puede crecer mucho menos que el error, o nada, así que no la
# tomes como garantía de que el modelo sabe cuándo no sabe.
#
# Con BatchNorm, `model.train()` ya no vale: la BatchNorm normalizaría con las
# estadísticas de cada lote de predicción y, además, movería sus búferes. Lo correcto es
# poner el modelo en evaluación y encender **solo** los Dropout.

# %% tags=["demo"]
model = small_model()
buffers = {k: v.clone() for k, v in model.named_buffers()}
model.train()  # el atajo equivocado con BatchNorm
with torch.no_grad():
    for _ in range(10):
        model(torch.randn(16, 4))
print("búferes movidos por un muestreo con model.train():",
      [k for k, v in model.named_buffers() if not torch.equal(buffers[k], v)])

# %% [markdown]
# ## Ejercicio 3 · MC dropout con BatchNorm congelada (3 puntos)
#
# Escribe `mc_dropout(model, x, n_samples)`: ejecuta `model(x)` `n_samples` veces seguidas
# con **solo** los módulos `nn.Dropout` en modo entrenamiento (todo lo demás en
# evaluación) y sin grafo, y devuelve la media y la desviación típica por elemento de las
# muestras.
#
# El resultado es aleatorio. Para poder compararlo, la comprobación fija
# `torch.manual_seed` antes de llamarte: usa un bucle de `n_samples` llamadas a `model(x)`,
# sin otros sorteos y sin fijar tú la semilla. Al terminar, deja cada módulo en el modo que
# tenía, como `evaluation_mode` en el ejercicio 1. El contrato del docstring dice
# exactamente qué se comprueba.

# %% exercise="mc_dropout"
def mc_dropout(model, x, n_samples):
    """Predicción MC dropout: media y desviación típica de `n_samples` pases de `model(x)`
    con solo los `nn.Dropout` activos y sin grafo.

    <contrato>
    """
    ### BEGIN SOLUTION
    modos = {m: m.training for m in model.modules()}
    model.eval()
    for m in model.modules():
        if isinstance(m, nn.Dropout):
            m.train()
    try:
        with torch.no_grad():
            muestras = torch.stack([model(x) for _ in range(n_samples)])
    finally:
        for m, modo in modos.items():
            m.training = modo
    return muestras.mean(dim=0), muestras.std(dim=0)
    ### END SOLUTION


# %% test="mc_dropout"


# %% [markdown]
# ## 9 · Antes de entrenar, mira dentro: estadísticas por capa
#
# Una red que no aprende casi nunca da un error: da números. Antes de entrenar conviene
# mirar, capa por capa, tres cosas en un lote (con el modelo en modo entrenamiento):
#
# - la **desviación típica de las activaciones**: si baja capa a capa, la señal se apaga
#   antes de llegar a la salida;
# - la **fracción saturada** de cada `tanh` ($|a| > 0{,}97$, donde su derivada,
#   $1 - a^2$, es menor que 0,06): ahí el gradiente casi no pasa;
# - la **desviación típica del gradiente** de cada matriz de pesos: si cambia en órdenes
#   de magnitud entre capas, un mismo `lr` es demasiado para unas y poco para otras.
#
# La celda lo mide en cuatro versiones de la misma red (seis capas `Linear` de 64 unidades
# con `tanh`): la inicialización por defecto de PyTorch, pesos `randn` (desviación típica
# 1), Xavier con la ganancia de `tanh` (`nn.init.xavier_normal_`, ganancia 5/3), y `randn`
# con una `BatchNorm1d` después de cada `Linear`. Unos ganchos hacia adelante
# (`register_forward_hook`) guardan la salida de cada `tanh`.

# %% tags=["demo"]
import math

import matplotlib.pyplot as plt


def deep_tanh_net(init, batchnorm=False, depth=6, width=64):
    torch.manual_seed(0)  # los mismos pesos de partida en cada ejecución
    layers = []
    for i in range(depth):
        layers.append(nn.Linear(16 if i == 0 else width, width))
        if batchnorm:
            layers.append(nn.BatchNorm1d(width))
        layers.append(nn.Tanh())
    model = nn.Sequential(*layers, nn.Linear(width, 1))
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.Linear) and init == "randn":
                m.weight.normal_(0, 1)
            elif isinstance(m, nn.Linear) and init == "xavier":
                nn.init.xavier_normal_(m.weight, gain=nn.init.calculate_gain("tanh"))
    return model


def per_layer_stats(model, x, y):
    """Por capa oculta: std de la activación, fracción saturada y std del gradiente."""
    activations = []
    hooks = [m.register_forward_hook(lambda module, args, out: activations.append(out.detach()))
             for m in model if isinstance(m, nn.Tanh)]
    F.mse_loss(model(x), y).backward()
    for hook in hooks:
        hook.remove()
    hidden = [m for m in model if isinstance(m, nn.Linear)][:-1]
    return {"std de la activación": [a.std().item() for a in activations],
            "fracción saturada (|a| > 0,97)": [(a.abs() > 0.97).float().mean().item()
                                               for a in activations],
            "std del gradiente de los pesos": [m.weight.grad.std().item() for m in hidden]}


generator = torch.Generator().manual_seed(0)
x_toy = torch.randn(256, 16, generator=generator)
y_toy = torch.sin(x_toy[:, :1]) + 0.1 * torch.randn(256, 1, generator=generator)
versions = {"por defecto": deep_tanh_net("default"), "randn": deep_tanh_net("randn"),
            "Xavier (ganancia 5/3)": deep_tanh_net("xavier"),
            "randn + BatchNorm": deep_tanh_net("randn", batchnorm=True)}
stats = {name: per_layer_stats(model, x_toy, y_toy) for name, model in versions.items()}

figure, axes = plt.subplots(1, 3, figsize=(12, 3.2))
for ax, measure in zip(axes, stats["randn"]):
    for name, by_measure in stats.items():
        ax.plot(range(1, 7), by_measure[measure], marker="o", label=name)
    ax.set_xlabel("capa oculta")
    ax.set_ylabel(measure)
    if measure.startswith("std del gradiente"):
        ax.set_yscale("log")
axes[1].legend(fontsize=8, loc="center right")
figure.suptitle("Seis capas tanh al inicializar, en un lote de 256")
figure.tight_layout()
plt.show()
for name, by_measure in stats.items():
    print(f"{name:>22}: " + " · ".join(
        f"{measure.split(' (')[0]} {values[0]:.2g} → {values[-1]:.2g}"
        for measure, values in by_measure.items()))

# %% [markdown]
# Lee cada curva de la primera capa a la última. Con la inicialización por defecto (pesos
# uniformes en $\pm 1/\sqrt{n_{entrada}}$, desviación típica $1/\sqrt{3\,n_{entrada}}$), cada
# capa multiplica la señal por menos de 1 y las activaciones se apagan. Con `randn`, los
# pesos son demasiado grandes: la mayoría de las `tanh` se saturan, y el gradiente cambia
# en más de un orden de magnitud de la primera capa a la última. Xavier con la ganancia de
# `tanh` y BatchNorm dejan las tres medidas parecidas en todas las capas: la primera
# eligiendo la escala de los pesos para que la varianza se conserve; la segunda
# normalizando cada lote (en modo entrenamiento, sección 3), sea cual sea esa escala.
#
# Durante el entrenamiento, la medida más útil es la **razón actualización/dato**
# (*update-to-data ratio*) de cada matriz de pesos: cuánto cambia en un paso, en proporción
# a su tamaño, $\mathrm{std}(\Delta W) / \mathrm{std}(W)$. Las notas de CS231n (Stanford)
# dan una regla práctica: que ronde $10^{-3}$. Muy por encima, cada paso cambia los pesos
# demasiado; muy por debajo, aprenden despacio. En el primer paso de SGD,
# $\Delta W = -\mathrm{lr}\cdot\nabla W$: la razón es proporcional a `lr`. La celda
# entrena la red de Xavier con tres tasas y dibuja la razón de cada capa, paso a paso, en
# escala logarítmica.

# %% tags=["demo"]
def update_ratios(lr, steps=60):
    model = deep_tanh_net("xavier")
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    weights = [m.weight for m in model if isinstance(m, nn.Linear)]
    ratios, losses = [], []
    for _ in range(steps):
        before = [w.detach().clone() for w in weights]
        optimizer.zero_grad()
        loss = F.mse_loss(model(x_toy), y_toy)
        loss.backward()
        optimizer.step()
        ratios.append([((w.detach() - b).std() / b.std()).item()
                       for w, b in zip(weights, before)])
        losses.append(loss.item())
    return torch.tensor(ratios), losses


rates = (0.1, 0.01, 0.001)
figure, axes = plt.subplots(1, len(rates), figsize=(12, 3.2), sharey=True)
for ax, lr in zip(axes, rates):
    ratios, losses = update_ratios(lr)
    for layer in range(ratios.shape[1]):
        last = layer == ratios.shape[1] - 1
        ax.plot(ratios[:, layer].log10(), lw=1,
                label="salida" if last else f"capa {layer + 1}")
    ax.axhline(-3, color="gray", ls="--", lw=1)
    ax.set_ylim(-6, 2)  # una red que diverge no debe aplastar las otras curvas
    ax.set_title(f"lr = {lr}")
    ax.set_xlabel("paso")
    verdict = "" if math.isfinite(losses[-1]) else " (el entrenamiento divergió)"
    print(f"lr = {lr}: log10 de la razón en el primer paso, media de las capas "
          f"{ratios[0].log10().mean().item():.2f} · pérdida: {losses[0]:.3f} → "
          f"{losses[-1]:.3g}{verdict}")
axes[0].set_ylabel("log10(std(ΔW) / std(W))")
axes[-1].legend(fontsize=7)
figure.suptitle("Razón actualización/dato por capa (la línea: 10⁻³)")
figure.tight_layout()
plt.show()

# %% [markdown]
# En el primer paso, las tres curvas están separadas justo un orden de magnitud, como `lr`.
# Después la razón depende de cómo vaya el entrenamiento: compara cada panel con la línea
# de $10^{-3}$ y con la pérdida que imprime la celda. Es una regla práctica, no una ley:
# con Adam, cuyo paso por elemento ronda `lr`, la razón depende sobre todo de `lr` y del
# tamaño de los pesos; con SGD, también del tamaño del gradiente, que cambia al entrenar.

# %% [markdown]
# ## Resumen
#
# - `model.train()` / `model.eval()` solo cambian el atributo `training` de cada submódulo;
#   no tocan los pesos ni autograd. `model.training` es solo el de la raíz.
# - Dropout en entrenamiento apaga cada elemento con probabilidad `p` y escala los demás
#   por $1/(1-p)$ (la media se conserva); en evaluación es la identidad.
# - BatchNorm en entrenamiento normaliza con el lote y actualiza `running_mean` y
#   `running_var` (también bajo `no_grad`); en evaluación usa esos búferes y no los cambia.
# - `eval()` decide qué se calcula; `no_grad()`, si se registra un grafo. Evaluar necesita
#   los dos.
# - Una evaluación que no devuelve el modelo a su modo deja el entrenamiento sin Dropout y
#   con la BatchNorm congelada: sin errores, con sobreajuste. Restaura el modo de cada
#   submódulo, no solo el de la raíz.
# - Un gestor de contexto (`with`) deshace al salir lo que hizo al entrar, también cuando el
#   bloque lanza una excepción: la forma segura de evaluar a mitad del entrenamiento.
# - Qué módulos cambian entre modos se mide, no se deduce del tipo.
# - MC dropout: solo los Dropout encendidos, muchas pasadas, media y desviación típica.
# - Antes de entrenar, mide por capa la desviación típica de las activaciones, su
#   saturación y la del gradiente; durante el entrenamiento, la razón actualización/dato
#   (alrededor de $10^{-3}$, como regla práctica). Una mala escala de los pesos se ve ahí,
#   en el primer lote y sin entrenar; Xavier con ganancia o BatchNorm la corrigen.
