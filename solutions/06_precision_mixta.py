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
# # Capítulo 6 · Precisión mixta (GPU)
#
# Entrenar todo en 32 bits es lo más simple, pero no lo más rápido. La precisión mixta
# (*mixed precision*) hace el pase hacia adelante (*forward pass*) y el pase hacia atrás
# (*backward pass*) en 16 bits donde es seguro, y guarda los parámetros en 32 bits. En este
# capítulo mides qué cabe en cada formato, qué hace `torch.autocast`, por qué float16
# necesita un `GradScaler` y bfloat16 no, y cuánto se gana de verdad.
#
# **Qué entorno elegir.** En Colab, abre *Entorno de ejecución → Cambiar tipo de entorno de
# ejecución* y elige **GPU T4**. La T4 tiene núcleos tensoriales (*tensor cores*) de float16
# pero no bfloat16 nativo: con ella verás la aceleración de float16. Sin GPU, el cuaderno
# entero se ejecuta en CPU: las demos usan bfloat16 con autocast (float16 donde muestran el
# escalador), las celdas de GPU se saltan y lo dicen, y las medidas de velocidad son de tu
# CPU. Ahí, bf16 acelera solo si el procesador tiene instrucciones bf16; sin ellas es más
# lento que fp32, a veces muchas veces. La sección 2 dice si el tuyo las tiene y la sección
# 7 mide el efecto.
#
# **La parte de GPU está sin verificar.** Esta versión del curso se escribió y se probó en
# máquinas sin GPU. Las celdas de GPU y el caso CUDA de las pruebas ocultas no se han
# ejecutado nunca: sin GPU se saltan y lo dicen; con GPU deberían funcionar, pero ninguna
# cifra ni tabla de GPU de este cuaderno está medida. Lo que el texto dice de CUDA viene de
# la documentación de PyTorch, no de una ejecución.
#
# **Al terminar sabrás:**
#
# - comparar fp32, fp16 y bf16 con `torch.finfo`: rango, precisión, dónde desbordan
#   (*overflow*) y dónde subdesbordan (*underflow*);
# - qué operaciones pasa `torch.autocast` a 16 bits y cuáles deja en fp32, y por qué los
#   pesos maestros (*master weights*) siguen en fp32;
# - usar `GradScaler`: `scale`, `unscale_` antes de recortar, `step` (que salta los pasos
#   con inf) y `update` (que ajusta la escala), también con acumulación de gradientes, y
#   guardar su estado para reanudar;
# - reconocer en el registro de un entrenamiento (pérdida, escala y norma del gradiente) los
#   errores típicos del bucle con `GradScaler`;
# - por qué un modelo convertido entero a bf16 pierde las actualizaciones pequeñas;
# - medir velocidad y memoria, y elegir el dtype según el hardware.
#
# Necesitas el bucle de entrenamiento (*training loop*) de los capítulos anteriores:
# `backward`, `clip_grad_norm_`, `optimizer.step()` y `zero_grad()`.

# %%
import inspect
import math
import time
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def native_bf16(device):
    """True si el hardware calcula en bf16 de forma nativa (sin emularlo)."""
    if device == "cuda":
        return torch.cuda.get_device_capability()[0] >= 8  # Ampere (A100, RTX 30xx) o posterior
    try:  # CPU con Linux: los juegos de instrucciones que calculan en bf16 (Colab usa Linux)
        flags = Path("/proc/cpuinfo").read_text().split()
    except OSError:
        return False
    return any(b in flags for b in ("avx512_bf16", "amx_bf16"))


def autocast_fp16_on_cpu():
    """True si esta versión de PyTorch admite autocast en float16 en la CPU (las antiguas no)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            with torch.autocast("cpu", dtype=torch.float16):
                return (torch.ones(2, 2) @ torch.ones(2, 2)).dtype == torch.float16
        except RuntimeError:
            return False


def gradscaler_on_cpu():
    """True si ``torch.amp.GradScaler`` funciona en la CPU (PyTorch 2.3 o posterior)."""
    try:
        torch.amp.GradScaler("cpu")
    except (AttributeError, RuntimeError, TypeError):
        return False
    return True


NATIVE_BF16 = native_bf16(DEVICE)
FP16_ON_CPU = autocast_fp16_on_cpu()
SCALER_ON_CPU = gradscaler_on_cpu()
print(f"dispositivo: {DEVICE} · bf16 nativo: {NATIVE_BF16} · "
      f"autocast fp16 en CPU: {FP16_ON_CPU} · GradScaler en CPU: {SCALER_ON_CPU}")
if not SCALER_ON_CPU:
    print("Tu PyTorch no tiene GradScaler para CPU (llegó en la 2.3): las demos que lo usan "
          "en CPU se saltan; actualiza PyTorch para hacer los ejercicios.")

# %% [markdown]
# ## 1 · Tres formatos: fp32, fp16 y bf16
#
# Un número de coma flotante tiene un exponente (cuán grande) y una mantisa (cuántas cifras).
# float32 usa 8 bits de exponente y 23 de mantisa. Los dos formatos de 16 bits reparten sus
# bits de forma opuesta: float16 (fp16) tiene 5 de exponente y 10 de mantisa; bfloat16
# (bf16) conserva los 8 de exponente de fp32 y se queda con 7 de mantisa.
#
# `torch.finfo` te da los números de cada uno: el mayor valor (`max`), el menor normal
# (`tiny`) y `eps`, la distancia de 1 al siguiente número representable.

# %% tags=["demo"]
FORMATS = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}

print(f"{'':>5} {'bits':>5} {'max':>11} {'tiny (normal)':>14} {'eps':>10}")
for name, dtype in FORMATS.items():
    info = torch.finfo(dtype)
    print(f"{name:>5} {info.bits:>5} {info.max:>11.3g} {info.tiny:>14.3g} {info.eps:>10.3g}")

# %% [markdown]
# Mira dos columnas. `max`: fp16 no pasa de 65504, mientras que bf16 llega tan lejos como
# fp32. `eps`: bf16 es 8 veces más grueso que fp16; cerca de 1 solo distingue pasos de
# 0,0078.
#
# Para ver dónde falla cada uno, convierte números de $10^{-50}$ a $10^{40}$ y mide el error
# relativo. Un valor que pasa a 0 subdesborda; uno que pasa a `inf` desborda.

# %% tags=["demo"]
exponents = torch.linspace(-50, 40, 901, dtype=torch.float64)
values = 10.0**exponents * 1.2345  # una mantisa que no es potencia de dos

fig, ax = plt.subplots(figsize=(9, 3.5))
for name, dtype in FORMATS.items():
    converted = values.to(dtype).double()
    error = ((converted - values).abs() / values).clamp(1e-10, 1.0)
    ax.plot(exponents, error, label=name)
    zeros = exponents[converted == 0]
    infs = exponents[torch.isinf(converted)]
    print(f"{name}: pasa a 0 por debajo de 1e{zeros.max().item():.0f} · "
          f"pasa a inf por encima de 1e{infs.min().item():.0f}" if len(infs) else
          f"{name}: pasa a 0 por debajo de 1e{zeros.max().item():.0f} · no desborda aquí")
ax.set_yscale("log")
ax.set_xlabel("log10 del valor")
ax.set_ylabel("error relativo (1 = perdido)")
ax.set_title("Error al guardar un número en cada formato")
ax.legend()
plt.tight_layout()
plt.show()

# %% [markdown]
# Cada curva es plana donde el formato trabaja bien: ese nivel es su precisión (bf16 está
# arriba, fp32 abajo). A los lados, el error sube hasta 1: el número se pierde. fp16 tiene la
# ventana más estrecha, unas 12 décadas; bf16 cubre casi la misma que fp32.
#
# Prueba un valor tú. Mueve el deslizador (es el exponente en base 10) y mira qué guarda
# cada formato.

# %% tags=["demo"]
import ipywidgets as widgets
from IPython.display import display

slider = widgets.FloatSlider(value=-6.0, min=-45.0, max=40.0, step=0.5,
                                 description="log10 x")
widget_out = widgets.Output()


def show_value(change):
    x = 1.2345 * 10.0 ** change["new"]
    with widget_out:
        widget_out.clear_output(wait=True)
        print(f"x = {x:.6g}")
        for name, dtype in FORMATS.items():
            stored = torch.tensor(x, dtype=torch.float64).to(dtype).item()
            state = "desborda" if math.isinf(stored) else "subdesborda" if stored == 0 else ""
            print(f"{name:>5}: {stored:.6g}  {state}")


slider.observe(show_value, names="value")
show_value({"new": slider.value})
display(widgets.VBox([slider, widget_out]))

# %% [markdown]
# ### Por qué fp16 necesita escalar la pérdida
#
# Muchos gradientes (*gradients*) de una red son pequeños: $10^{-5}$, $10^{-8}$ o menos.
# El menor número positivo de fp16 es $2^{-24} \approx 6\cdot 10^{-8}$; lo que baja de la
# mitad, $3\cdot 10^{-8}$, se vuelve 0, y con un gradiente 0 ese peso no aprende. El remedio
# es el escalado de la pérdida (*loss scaling*): multiplicar la pérdida (*loss*) por un
# factor grande, por ejemplo $2^{16}$, antes del pase hacia atrás. Por la regla de la cadena
# (*chain rule*), todos los gradientes salen multiplicados por el mismo factor y suben a la
# zona que fp16 sí representa. Antes de actualizar los pesos, se dividen otra vez.

# %% tags=["demo"]
grads = torch.logspace(-10, -3, 8, dtype=torch.float64)  # 1e-10 ... 1e-3
scale = 2.0**16
in_fp16 = grads.to(torch.float16).double()
scaled = (grads * scale).to(torch.float16).double() / scale
in_bf16 = grads.to(torch.bfloat16).double()

print("fp16 de 2,9e-8, 3,1e-8 y 6e-8:", torch.tensor([2.9e-8, 3.1e-8, 6e-8]).half().tolist())
print(f"{'gradiente':>10} {'fp16':>10} {'fp16 ×2^16':>11} {'bf16':>10}")
for g, a, b, c in zip(grads, in_fp16, scaled, in_bf16):
    print(f"{g:10.1e} {a:10.2e} {b:11.2e} {c:10.2e}")

# %% [markdown]
# Sin escalar, fp16 pierde los gradientes de $10^{-8}$ y menores, y redondea mal los de
# $10^{-7}$. Multiplicados por $2^{16}$, todos sobreviven. bf16 no los pierde nunca: tiene el
# exponente de fp32. Por eso **fp16 necesita escalar la pérdida y bf16 no**.
#
# El escalado tiene un riesgo: si el factor es demasiado grande, los gradientes grandes pasan
# de 65504 y se vuelven `inf`.

# %% tags=["demo"]
big = torch.tensor(3.0)
print("3 × 2^16 en fp16:", (big * 2.0**16).to(torch.float16).item())
print("3 × 2^16 en bf16:", (big * 2.0**16).to(torch.bfloat16).item())

# %% [markdown]
# ## 2 · ¿Qué tiene tu máquina?
#
# La celda de preparación ya miró tu hardware. Lo que importa:
#
# - **GPU con bf16 nativo** (Ampere o posterior: A100, RTX 30xx, H100): bf16, sin escalador.
# - **GPU sin bf16 nativo** (la T4 de Colab, V100): núcleos tensoriales de fp16, así que
#   fp16 con `GradScaler`. `torch.cuda.is_bf16_supported()` puede decir `True` en una T4
#   porque PyTorch *emula* bf16, pero emulado es lento; por eso la preparación mira la
#   capacidad de cómputo (8 o más) y no esa función. En las versiones recientes, su
#   argumento `including_emulation` vale `True` por defecto: la celda siguiente imprime la
#   firma que tiene en tu versión.
# - **CPU**: `torch.autocast("cpu")` está pensado para bf16. Que acelere o no lo decide el
#   procesador: con instrucciones bf16 (AVX512-BF16 o AMX: las banderas `avx512_bf16` y
#   `amx_bf16` de `/proc/cpuinfo` en Linux), los productos de matrices se hacen en bf16 por
#   hardware; sin ellas, con un núcleo de cálculo mucho más lento. La celda siguiente dice
#   qué tiene tu CPU, junto con el juego de instrucciones que usa PyTorch
#   (`torch.backends.cpu.get_cpu_capability()`); la sección 7 mide el efecto.

# %% tags=["demo"]
if torch.cuda.is_available():
    capability = torch.cuda.get_device_capability()
    print(f"GPU: {torch.cuda.get_device_name(0)} · capacidad {capability[0]}.{capability[1]} · "
          f"is_bf16_supported(): {torch.cuda.is_bf16_supported()} · bf16 nativo: {NATIVE_BF16}")
else:
    print("Sin GPU: esta celda no tiene nada que medir en CUDA (se salta).")
cpu_capability = getattr(torch.backends.cpu, "get_cpu_capability", lambda: "desconocido")()
print(f"CPU con instrucciones bf16: {native_bf16('cpu')} · instrucciones que usa PyTorch: "
      f"{cpu_capability}")
print("firma: torch.cuda.is_bf16_supported" + str(inspect.signature(torch.cuda.is_bf16_supported)))

# %% [markdown]
# La regla, escrita como una función: recibe el tipo de dispositivo y si tiene bf16 nativo, y
# devuelve el dtype para `torch.autocast` y si hace falta un `GradScaler`. Donde hay bf16
# nativo (GPU o CPU), bf16 sin escalador; en una GPU sin él, fp16 (los núcleos tensoriales
# de la T4) con escalador; en una CPU sin él, fp32, es decir, sin autocast. Solo fp16
# necesita el escalador: es el único de los tres con poco rango.

# %%
def pick_amp_dtype(device_type, bf16_native):
    """El dtype de autocast para ``device_type`` ("cpu" o "cuda") y si hace falta un
    GradScaler, según si ese hardware tiene bf16 nativo."""
    if bf16_native:
        return torch.bfloat16, False
    if device_type == "cuda":
        return torch.float16, True
    return torch.float32, False


for machine, bf16_native in (("cuda", False), ("cuda", True), ("cpu", True), ("cpu", False)):
    dtype, use_scaler = pick_amp_dtype(machine, bf16_native)
    print(f"{machine:>4} · bf16 nativo {bf16_native!s:>5} → {str(dtype):>14} · "
          f"GradScaler: {use_scaler}")
print("esta máquina:", pick_amp_dtype(DEVICE, NATIVE_BF16))


# %% [markdown]
# ## 3 · `torch.autocast`: cada operación en su dtype
#
# No hace falta tocar el modelo. Dentro de `with torch.autocast(device_type, dtype):`,
# PyTorch decide operación por operación con una lista por dispositivo: las que ganan con
# 16 bits (productos de matrices, capas lineales, convoluciones) se ejecutan en 16 bits; las
# de la lista de fp32 (las pérdidas, en los dos dispositivos) pasan a fp32; el resto se hace
# en el dtype de sus entradas (si mezclan dtypes, en el más ancho). Fuera del bloque, todo
# vuelve a la normalidad.
#
# Mídelo en CPU con bf16 (funciona en cualquier máquina): el dtype del resultado de un
# producto de matrices, un softmax, una reducción, una exponencial, un `log_softmax` y dos
# pérdidas.

# %% tags=["demo"]
DEMO_DTYPE = torch.float16 if DEVICE == "cuda" and not NATIVE_BF16 else torch.bfloat16


def dtypes_under_autocast(device, dtype):
    layer = nn.Linear(64, 64).to(device)
    x = torch.randn(8, 64, device=device)
    target = torch.randint(0, 64, (8,), device=device)
    with torch.autocast(device, dtype=dtype):
        h = layer(x)
        results = {
            "capa lineal (matmul)": h,
            "softmax": h.softmax(dim=-1),
            "reducción sum": h.sum(),
            "exp": h.exp(),
            "log_softmax": h.log_softmax(dim=-1),
            "mse_loss": F.mse_loss(h, x),
            "cross_entropy": F.cross_entropy(h, target),
        }
    return {name: str(t.dtype).replace("torch.", "") for name, t in results.items()}


print("autocast en cpu con bfloat16:")
for op, dtype in dtypes_under_autocast("cpu", torch.bfloat16).items():
    print(f"  {op:>22}: {dtype}")

# %% [markdown]
# En CPU, solo las pérdidas pasan a fp32. El softmax, la suma, la exponencial y
# `log_softmax` se quedan en bf16: no están en la lista de fp32 de CPU (que tiene sobre todo
# pérdidas y álgebra lineal), así que se hacen en el dtype de su entrada.
#
# Las listas **son distintas en CUDA**. Según la documentación de autocast, en CUDA la lista
# de fp32 incluye además `softmax`, `log_softmax`, `exp`, `log`, `sum`, `cumsum`, `norm` y
# `layer_norm`: ahí el softmax, la suma, la exponencial y `log_softmax` de la
# tabla también saldrían en fp32. Sea cual sea el dispositivo, si necesitas fp32 en un punto
# concreto, conviértelo tú: `h.float().softmax(-1)`.
#
# La celda siguiente mide la tabla en CUDA con fp16. Sin GPU se salta y lo dice. **Sin
# verificar:** nunca se ha ejecutado con GPU; la lista de CUDA de este párrafo es la de la
# documentación, no una medida.

# %% tags=["demo"]
if torch.cuda.is_available():
    print("autocast en cuda con float16:")
    for op, dtype in dtypes_under_autocast("cuda", torch.float16).items():
        print(f"  {op:>22}: {dtype}")
else:
    print("Sin GPU: la tabla de CUDA se salta (la lista de CUDA queda sin medir).")

# %% [markdown]
# ### Pesos maestros en fp32
#
# ¿Y los parámetros? autocast no los convierte: usa una copia en 16 bits (una por parámetro
# dentro de cada bloque `with`) y deja el original en fp32. Los gradientes llegan también en
# fp32: la copia es una operación más del grafo, y su pase hacia atrás devuelve el gradiente
# al dtype del parámetro. Así el optimizador suma las actualizaciones sobre números de 32
# bits: esos son los pesos maestros.

# %% tags=["demo"]
layer = nn.Linear(64, 64).to(DEVICE)
x = torch.randn(8, 64, device=DEVICE)
with torch.autocast(DEVICE, dtype=DEMO_DTYPE):
    h = layer(x)
    loss = h.float().pow(2).mean()
loss.backward()
print("activación:", h.dtype, "| parámetro:", layer.weight.dtype,
      "| gradiente:", layer.weight.grad.dtype)

# %% [markdown]
# ## 4 · `GradScaler`: escalar, comprobar, saltar y ajustar
#
# Con fp16, el bucle lleva un `GradScaler`. Cada llamada tiene su sitio:
#
# 1. `scaler.scale(loss).backward()`: multiplica la pérdida por la escala y hace el pase
#    hacia atrás; los gradientes quedan escalados.
# 2. `scaler.unscale_(optimizer)`: divide los gradientes por la escala y anota si hay `inf`
#    o `NaN`. Va **antes** de recortar: el recorte de gradientes (*gradient clipping*) debe
#    ver los gradientes reales.
# 3. `torch.nn.utils.clip_grad_norm_(...)`.
# 4. `scaler.step(optimizer)`: llama a `optimizer.step()` solo si no hubo `inf`/`NaN`; si
#    los hubo, **salta el paso**.
# 5. `scaler.update()`: si hubo `inf`, multiplica la escala por `backoff_factor`; tras
#    `growth_interval` pasos limpios seguidos, la multiplica por `growth_factor`. Por
#    defecto: escala inicial $2^{16}$, ×0,5, ×2 y 2000 pasos (la celda los imprime).
# 6. `optimizer.zero_grad()`.
#
# Compruébalo con una escala inicial exagerada, $2^{24}$, y `growth_interval=10` para que
# se vea crecer: los primeros pasos desbordan y se saltan. Sin GPU, la demo hace fp16 en
# CPU; si tu versión de PyTorch no lo permite (o no tiene GradScaler para CPU), se salta y
# lo dice. Se imprimen los 10 primeros pasos y, después, solo los pasos en los que pasa algo.

# %% tags=["demo"]
def train_with_scaler(device, steps=40):
    torch.manual_seed(0)  # los mismos pesos iniciales en cada ejecución
    g = torch.Generator().manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 1)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    scaler = torch.amp.GradScaler(device, init_scale=2.0**24, growth_interval=10)
    X = torch.randn(64, 16, generator=g).to(device)
    Y = 2 * X[:, :1]
    history = []
    for _ in range(steps):
        with torch.autocast(device, dtype=torch.float16):
            loss = F.mse_loss(model(X), Y)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        scale = scaler.get_scale()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
        history.append((scale, loss.item(), not torch.isfinite(norm).item()))
    return history


fp16_device = "cuda" if torch.cuda.is_available() else None
if fp16_device is None and FP16_ON_CPU and SCALER_ON_CPU:
    fp16_device = "cpu"
if fp16_device is None:
    history = []
    print("Sin GPU, y esta versión de PyTorch no hace fp16 + GradScaler en CPU: demo saltada.")
else:
    default_scaler = torch.amp.GradScaler(fp16_device)
    print(f"GradScaler por defecto: escala {default_scaler.get_scale():g} · backoff_factor "
          f"{default_scaler.get_backoff_factor()} · growth_factor {default_scaler.get_growth_factor()}"
          f" · growth_interval {default_scaler.get_growth_interval()}")
    history = train_with_scaler(fp16_device)
    for step, (scale, loss, skipped_step) in enumerate(history):
        previous = history[step - 1][0] if step else scale
        if step < 10 or skipped_step or scale != previous:
            note = ("  ← inf: paso saltado" if skipped_step else
                    "  ← la escala sube tras 10 pasos limpios" if scale > previous else
                    "  ← la escala bajó a la mitad" if scale < previous and step >= 10 else "")
            print(f"paso {step:2d}: escala {scale:>10.0f}  pérdida {loss:.4f}{note}")

# %% [markdown]
# Mientras la escala es demasiado grande, los gradientes tienen `inf`: el paso se salta (la
# pérdida no cambia) y la escala baja a la mitad. Cuando deja de desbordar, el entrenamiento
# arranca. Sigue la escala durante todo el entrenamiento:

# %% tags=["demo"]
if history:
    scales = [h[0] for h in history]
    skipped = [i for i, h in enumerate(history) if h[2]]
    fig, (ax_e, ax_p) = plt.subplots(1, 2, figsize=(9, 3))
    ax_e.step(range(len(scales)), scales, where="post")
    ax_e.plot(skipped, [scales[i] for i in skipped], "rx", label="paso saltado (inf)")
    ax_e.set_yscale("log", base=2)
    ax_e.set_title("escala del GradScaler")
    ax_e.set_xlabel("paso")
    ax_e.set_ylabel("escala (escala log₂)")
    ax_e.legend()
    ax_p.plot([h[1] for h in history])
    ax_p.set_title("pérdida")
    ax_p.set_xlabel("paso")
    ax_p.set_ylabel("pérdida MSE")
    plt.tight_layout()
    plt.show()

# %% [markdown]
# Después de bajar, la escala prueba a subir cada 10 pasos limpios; si al subir desborda, ese
# paso se salta y vuelve a bajar. Así se queda cerca del mayor valor que no desborda.
#
# ### `unscale_` antes de recortar
#
# `clip_grad_norm_` devuelve la norma del gradiente (*gradient norm*) antes de recortar. Si
# la pides sin `unscale_`, mides los gradientes escalados: la norma sale multiplicada por la
# escala, y el recorte usaría un umbral sin sentido.

# %% tags=["demo"]
def grad_norm(unscale):
    torch.manual_seed(1)  # el mismo modelo y los mismos datos en las dos llamadas
    g = torch.Generator().manual_seed(1)
    model = nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**12)
    x, y = torch.randn(16, 8, generator=g), torch.randn(16, 1, generator=g)
    # fp16, el formato que va con un GradScaler (bf16 si este PyTorch no lo tiene en CPU)
    with torch.autocast("cpu", dtype=torch.float16 if FP16_ON_CPU else torch.bfloat16):
        loss = F.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    if unscale:
        scaler.unscale_(optimizer)
    return nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0).item()


if SCALER_ON_CPU:
    with_unscale, without_unscale = grad_norm(True), grad_norm(False)
    print(f"norma con unscale_: {with_unscale:.4f} · sin unscale_: {without_unscale:.1f} · "
          f"razón {without_unscale / with_unscale:.0f} (2^12 = {2**12})")
else:
    print("Sin GradScaler para CPU en esta versión de PyTorch: demo saltada.")

# %% [markdown]
# ### Más de una pérdida, y una penalización del gradiente
#
# Un solo `GradScaler` sirve para todo lo que se deriva en una iteración. Dos casos de los
# ejemplos de AMP de la documentación de PyTorch:
#
# - **Varias pérdidas.** Escala cada una con el mismo `scaler` antes de su `backward`
#   (con `retain_graph=True` mientras compartan grafo y quede otro `backward` por hacer):
#   sus gradientes se suman en `.grad` con la misma escala. Después, un `unscale_` por
#   optimizador, un `step` por optimizador y **un solo** `update()` al final.
# - **Una penalización del gradiente** (capítulo 1, ejercicio 3).
#   `torch.autograd.grad(scaler.scale(loss), params, create_graph=True)` devuelve gradientes
#   **escalados**, y `unscale_` no los ve: solo desescala los `.grad` de un optimizador.
#   Divídelos tú por `scaler.get_scale()` antes de calcular la penalización; luego,
#   `scaler.scale(loss + penalty).backward()`, `step` y `update` como siempre.
#
# La celda compara los dos con el mismo cálculo en fp32 sin escalador.

# %% tags=["demo"]
def small_regression(seed, outputs):
    torch.manual_seed(seed)  # los mismos pesos en cada ejecución
    g = torch.Generator().manual_seed(seed)
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, outputs))
    return model, torch.randn(32, 8, generator=g), torch.randn(32, outputs, generator=g)


def two_losses(model, x, y):
    out = model(x)
    return F.mse_loss(out[:, 0], y[:, 0]), F.l1_loss(out[:, 1], y[:, 1])


def squared_grad_norm(grads):
    return sum((grad**2).sum() for grad in grads)


if SCALER_ON_CPU:
    half = torch.float16 if FP16_ON_CPU else torch.bfloat16  # fp16 va con un GradScaler

    model, x, y = small_regression(2, outputs=2)
    params = list(model.parameters())
    reference = torch.autograd.grad(sum(two_losses(model, x, y)), params)  # fp32
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**12)
    optimizer = torch.optim.SGD(params, lr=0.1)
    with torch.autocast("cpu", dtype=half):
        loss_a, loss_b = two_losses(model, x, y)
    scaler.scale(loss_a).backward(retain_graph=True)  # el grafo es común: consérvalo
    scaler.scale(loss_b).backward()  # se suma en .grad, con la misma escala
    scaler.unscale_(optimizer)
    gap = max(((p.grad - r).abs().max() / r.abs().max()).item()
              for p, r in zip(params, reference))
    scaler.step(optimizer)
    scaler.update()
    print(f"dos pérdidas: diferencia relativa de .grad con fp32, tras unscale_: {gap:.1e}")

    model, x, y = small_regression(3, outputs=1)
    params = list(model.parameters())
    grads = torch.autograd.grad(F.mse_loss(model(x), y), params, create_graph=True)
    reference = squared_grad_norm(grads).item()  # fp32
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**12)
    optimizer = torch.optim.SGD(params, lr=0.1)
    with torch.autocast("cpu", dtype=half):
        loss = F.mse_loss(model(x), y)
    scaled = torch.autograd.grad(scaler.scale(loss), params, create_graph=True)
    unscaled = [grad / scaler.get_scale() for grad in scaled]
    with torch.autocast("cpu", dtype=half):
        penalty = squared_grad_norm(unscaled)
    forgotten = squared_grad_norm(scaled).item()
    scaler.scale(loss + penalty).backward()
    scaler.step(optimizer)
    scaler.update()
    print(f"penalización ‖∇‖²: fp32 {reference:.5f} · con los gradientes desescalados "
          f"{penalty.item():.5f} · con los escalados {forgotten:.3g} "
          f"({forgotten / reference:.3g} veces más; la escala al cuadrado, 2^24, es {2**24:g})")
else:
    print("Sin GradScaler para CPU en esta versión de PyTorch: demo saltada.")

# %% [markdown]
# Con las dos pérdidas, los gradientes desescalados coinciden con los de fp32 salvo el
# redondeo de 16 bits. La penalización calculada con los gradientes escalados sale
# multiplicada por la escala al cuadrado (es una suma de cuadrados): dominaría la pérdida
# entera, y el paso seguiría casi solo a la penalización.

# %% [markdown]
# ## Ejercicio 1 · Diagnosticar un registro de entrenamiento (2,5 puntos)
#
# Cuando un entrenamiento con fp16 va mal, lo primero que tienes es su registro (*log*): lo
# que el bucle imprimió en cada paso. Aquí cada registro es una lista de diccionarios, uno
# por paso, con tres números:
#
# - `"loss"`: la pérdida que el bucle registró con `.item()`;
# - `"scale"`: la escala con la que se hizo el paso, `scaler.get_scale()` leída antes de
#   `scaler.step`, como en la demo de esta sección;
# - `"grad_norm"`: lo que devolvió `clip_grad_norm_` (puede ser `inf` o `nan`).
#
# Cada registro sale de un bucle fp16 con `GradScaler` (factores por defecto, ×2 y ×0,5, y un
# `growth_interval` corto) que entrena un problema con ruido; en todos hay al menos un paso
# cuyos gradientes desbordan. Ese bucle es correcto, o tiene **uno** de estos cuatro errores:
#
# - `"clip_before_unscale"`: llama a `clip_grad_norm_` sin haber llamado antes a
#   `scaler.unscale_` (el escalador desescala después, dentro de `scaler.step`);
# - `"new_scaler_each_step"`: crea el `GradScaler` dentro del bucle, uno nuevo en cada paso
#   (con la misma configuración), y hace con él todo lo demás bien;
# - `"optimizer_step"`: llama a `unscale_` y a `update()`, pero da el paso con
#   `optimizer.step()` en vez de `scaler.step(optimizer)`;
# - `"scaled_loss"`: entrena bien, pero registra la pérdida escalada,
#   `scaler.scale(loss).item()`, en vez de `loss.item()`.
#
# Escribe `diagnose_amp_log(log)`: devuelve `"ok"` o el nombre del error. Qué huella deja
# cada uno en el registro no te lo decimos: sale de lo que hacen `scale`, `unscale_`,
# `step` y `update`, que acabas de ver. Para mirarlo, `registros_de_ejemplo()` devuelve los
# diez registros de la comprobación pública con su etiqueta (dos de cada una).
#
# Los problemas simulados tienen magnitudes muy distintas (la pérdida y la norma van de
# diezmilésimas a millones) y la escala empieza lejos o cerca de la mayor que no
# desborda: ningún umbral sobre un valor suelto separa las etiquetas. Busca relaciones entre
# los tres números, paso a paso. Las pruebas ocultas usan treinta registros nuevos, seis de
# cada etiqueta.

# %% tags=["demo"]
examples = registros_de_ejemplo()
label, log = examples[0]
print(f"{len(examples)} registros de ejemplo · el primero es {label!r} y tiene {len(log)} pasos:")
for step, record in enumerate(log[:6]):
    print(f"paso {step}: {record}")

# %% exercise="diagnose_amp_log"
def diagnose_amp_log(log):
    """El error de un bucle de precisión mixta (fp16 con GradScaler), leído en su registro.

    Args: ``log``, una lista de diccionarios, uno por paso del optimizador, con las claves
    ``"loss"`` (la pérdida registrada), ``"scale"`` (la escala con la que se hizo el paso)
    y ``"grad_norm"`` (lo que devolvió ``clip_grad_norm_``), floats de Python. El bucle usa
    un GradScaler con ``growth_factor=2``, ``backoff_factor=0.5`` y un ``growth_interval``
    corto, y tiene a lo sumo uno de los errores de las etiquetas.

    <contrato>
    """
    ### BEGIN SOLUTION
    losses = [record["loss"] for record in log]
    scales = [record["scale"] for record in log]
    norms = [record["grad_norm"] for record in log]
    # a step taken with inf in the gradients leaves the weights inf/nan: so is every loss after
    if not all(math.isfinite(loss) for loss in losses):
        return "optimizer_step"
    # a scaler that lasts the whole training halves its scale after every step with inf
    for step in range(len(log) - 1):
        if not math.isfinite(norms[step]) and scales[step + 1] >= scales[step]:
            return "new_scaler_each_step"
    # between two clean steps where the scale changes, a scaled quantity changes by the same
    # factor; a real one barely moves
    changes = [(a, b) for a, b in zip(log, log[1:]) if a["scale"] != b["scale"]
               and math.isfinite(a["grad_norm"]) and math.isfinite(b["grad_norm"])]

    def follows_scale(key):
        return all(abs(math.log(b[key] / a[key]) - math.log(b["scale"] / a["scale"]))
                   < abs(math.log(b[key] / a[key])) for a, b in changes)

    if follows_scale("grad_norm"):
        return "clip_before_unscale"
    if follows_scale("loss"):
        return "scaled_loss"
    return "ok"
    ### END SOLUTION


# %% test="diagnose_amp_log"


# %% [markdown]
# ## Ejercicio 2 · La traza de la escala (3 puntos)
#
# Reproduce la regla de `scaler.update()` sin PyTorch. Recibes una lista `found_inf` (un
# `bool` por paso: ¿hubo `inf`/`NaN` en los gradientes?) y la configuración del escalador,
# que en las pruebas ocultas no es siempre la de por defecto (otros factores, otros
# intervalos, también `growth_interval=1`).
# Devuelve la escala **después** de cada `update()`, un float por paso:
#
# - paso con `inf`: la escala se multiplica por `backoff_factor` y el contador de pasos
#   limpios vuelve a 0;
# - paso limpio: el contador sube 1; cuando llega a `growth_interval`, la escala se
#   multiplica por `growth_factor` y el contador vuelve a 0.
#
# La comprobación compara tus trazas con las de un `GradScaler` de verdad, en tres
# secuencias (una con la configuración por defecto y dos con otros factores).

# %% exercise="simulate_loss_scale"
def simulate_loss_scale(found_inf, init_scale, growth_factor, backoff_factor, growth_interval):
    """La escala de un GradScaler después de cada ``update()``, según qué pasos tuvieron inf.

    Args: ``found_inf`` (una lista de bools, uno por paso: True si los gradientes de ese
    paso tenían inf o NaN), ``init_scale``, ``growth_factor``, ``backoff_factor`` y
    ``growth_interval``, la configuración del escalador.

    <contrato>
    """
    ### BEGIN SOLUTION
    scale, clean_steps, trace = float(init_scale), 0, []
    for inf in found_inf:
        if inf:
            scale *= backoff_factor
            clean_steps = 0
        else:
            clean_steps += 1
            if clean_steps == growth_interval:
                scale *= growth_factor
                clean_steps = 0
        trace.append(scale)
    return trace
    ### END SOLUTION


# %% test="simulate_loss_scale"


# %% [markdown]
# ## 5 · bf16: el bucle sin escalador
#
# Con bf16 no hay nada que escalar: tiene el rango de fp32. El bucle es el de siempre; lo
# único nuevo son las dos líneas del pase hacia adelante: el `with torch.autocast(...)` y,
# dentro, el modelo y la pérdida. Ni `scale`, ni `unscale_`, ni `update`.

# %% tags=["demo"]
g = torch.Generator().manual_seed(2)
model = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
X = torch.randn(64, 16, generator=g)
Y = 2 * X[:, :1]
for step in range(30):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = F.mse_loss(model(X), Y)
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    optimizer.step()
    optimizer.zero_grad()
    if step % 10 == 0 or step == 29:
        print(f"paso {step:2d}: pérdida {loss.item():.4f}")

# %% [markdown]
# ### Precisión mixta con acumulación de gradientes
#
# En el capítulo 3 acumulaste `accum` micro-lotes (*micro-batches*) por paso del optimizador,
# dividiendo la pérdida de cada uno por el tamaño de su ciclo. Con un `GradScaler`, la
# acumulación cambia dónde va cada llamada, y conviene entender por qué antes de escribirla:
#
# - **Por micro-lote**, el pase hacia atrás recibe `scaler.scale(loss / accum)`. Los
#   gradientes escalados se suman en `.grad` igual que sin escalador; como todos llevan la
#   misma escala, la suma también la lleva, y se puede deshacer de una vez.
# - **En el límite del ciclo** (el último micro-lote), y solo ahí: `unscale_` (una vez: divide
#   todo lo acumulado), recortar la norma real, `scaler.step` y `scaler.update`. `unscale_`
#   dos veces antes de un `update` es un error: dividiría dos veces lo mismo.
# - **La escala no puede cambiar a mitad de ciclo.** Si `update()` corriera en cada
#   micro-lote, los gradientes de un ciclo llevarían escalas distintas y ningún `unscale_`
#   los devolvería a su valor. PyTorch lo impide: `update()` sin un `unscale_` o un `step`
#   antes, en el mismo ciclo, falla. Lo mide la celda siguiente.

# %% tags=["demo"]
def accumulated_gradient(micro_batches, scaler, dtype, accum):
    """El gradiente del peso tras un ciclo de ``accum`` micro-lotes, ya sin escala."""
    torch.manual_seed(4)
    model = nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)  # lr 0: solo mira .grad
    for x, y in micro_batches:
        with torch.autocast("cpu", dtype=dtype):
            loss = F.mse_loss(model(x), y) / accum
        (scaler.scale(loss) if scaler else loss).backward()
    if scaler:
        scaler.unscale_(optimizer)
    return model.weight.grad.clone()


g = torch.Generator().manual_seed(5)
batches = [(torch.randn(4, 8, generator=g), torch.randn(4, 1, generator=g)) for _ in range(3)]
scaled_dtype = torch.float16 if FP16_ON_CPU else torch.bfloat16
without_scaler = accumulated_gradient(batches, None, torch.bfloat16, accum=3)
if SCALER_ON_CPU:
    with_scaler = accumulated_gradient(batches, torch.amp.GradScaler("cpu", init_scale=2.0**10),
                                       scaled_dtype, accum=3)
    print("norma del gradiente acumulado · bf16 sin escalador:",
          f"{without_scaler.norm():.4f} · {scaled_dtype} con escalador tras unscale_: "
          f"{with_scaler.norm():.4f}")

    torch.manual_seed(4)
    model = nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu")
    with muestra_error(AssertionError):  # update() en el primer micro-lote del ciclo
        x, y = batches[0]
        with torch.autocast("cpu", dtype=scaled_dtype):
            loss = F.mse_loss(model(x), y) / 3
        scaler.scale(loss).backward()
        scaler.update()
else:
    print("Sin GradScaler para CPU en esta versión de PyTorch: demo saltada.")

# %% [markdown]
# Las dos normas coinciden salvo por el redondeo de 16 bits: escalar, acumular y desescalar
# una vez da el mismo gradiente que acumular sin escalador. El error dice que no hubo
# comprobación de inf antes de `update()`: la escala solo se ajusta después de un paso.
#
# ### El estado del escalador: guardar y reanudar
#
# La escala es estado del entrenamiento, como los pesos y los momentos del optimizador:
# tras miles de pasos, el escalador encontró la mayor escala que no desborda. En la sección
# 9 del capítulo 4 guardaste el modelo y el optimizador para reanudar; con fp16, guarda
# también `scaler.state_dict()` (la escala y el contador de pasos limpios) y recupéralo con
# `load_state_dict`. Un escalador nuevo vuelve a empezar en $2^{16}$ y puede perder varios
# pasos desbordando hasta reencontrar su escala.

# %% tags=["demo"]
if SCALER_ON_CPU:
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**16, growth_interval=3)
    weight = torch.zeros(1, requires_grad=True)
    optimizer = torch.optim.SGD([weight], lr=0.0)
    for inf in (True, True, False, False):  # dos pasos que desbordan, dos limpios
        optimizer.zero_grad()
        (scaler.scale(weight.sum() + 1.0) * (math.inf if inf else 1.0)).backward()
        scaler.step(optimizer)
        scaler.update()
    saved = scaler.state_dict()
    print("state_dict:", saved)
    resumed = torch.amp.GradScaler("cpu")
    resumed.load_state_dict(saved)
    print(f"escala reanudada: {resumed.get_scale():g} · la de un escalador nuevo: "
          f"{torch.amp.GradScaler('cpu').get_scale():g}")
else:
    print("Sin GradScaler para CPU en esta versión de PyTorch: demo saltada.")

# %% [markdown]
# ## Ejercicio 3 · Precisión mixta con acumulación de gradientes (4 puntos)
#
# Entrena sobre una lista de micro-lotes con autocast, acumulando `accum` micro-lotes por
# paso del optimizador. Sirve para los dos casos de la sección 2: float16 con `scaler` (un
# `GradScaler`) y bfloat16 con `scaler=None`. Lo que tiene que cumplirse:
#
# - cada paso del optimizador usa el gradiente medio de **su** ciclo, con el último ciclo
#   incompleto tratado como en el capítulo 3, y nada de lo que `.grad` traía al llamarte;
# - antes de cada paso, la norma del gradiente **real** (sin la escala) se recorta a
#   `max_norm`: el resultado es el de entrenar en fp32 con acumulación y recorte, salvo por
#   el redondeo de autocast;
# - un paso cuyos gradientes escalados desbordan no cambia los parámetros, y la escala se
#   ajusta una sola vez por paso del optimizador (como hace el escalador, no a mano);
# - los parámetros siguen en fp32.
#
# Devuelve una lista con un float de Python por paso del optimizador (también por los que
# el escalador salta): la pérdida media de su ciclo, **sin escalar**.
#
# Las pruebas ocultas usan otros modelos, pérdidas, optimizadores, escaladores, números de
# micro-lotes y valores de `accum` y `max_norm` (el docstring dice qué puede variar), e
# incluyen un ciclo cuyos gradientes desbordan. La comprobación prueba float16 con
# `GradScaler` en CPU (necesita autocast fp16 en CPU: la celda de preparación lo dice) y
# bfloat16 sin él; si tienes GPU, también float16 en CUDA (sin verificar: el curso se probó
# sin GPU).

# %% exercise="amp_accumulation_steps"
def amp_accumulation_steps(model, batches, loss_fn, optimizer, scaler, device, dtype, accum,
                           max_norm):
    """Entrena con precisión mixta acumulando ``accum`` micro-lotes por paso del optimizador.

    Args: ``model``, un ``nn.Module`` con parámetros float32 (plano o con submódulos, en
    modo train o eval; su ``.grad`` puede traer restos); ``batches``, una lista de tuplas
    ``(x, y)`` ya en ``device``, en orden (su número no tiene por qué ser múltiplo de
    ``accum``, ni mayor); ``loss_fn``, una pérdida media sobre el lote; ``optimizer``, el
    optimizador de ``model``, quizá con estado; ``scaler``, un ``torch.amp.GradScaler``
    (cualquier configuración) si ``dtype`` es float16, None si es bfloat16; ``device``,
    "cpu" o "cuda"; ``dtype``; ``accum``, un int ≥ 1; ``max_norm``, el umbral del recorte.
    Se llama con autograd activado.

    <contrato>
    """
    ### BEGIN SOLUTION
    losses = []
    for start in range(0, len(batches), accum):
        cycle = batches[start:start + accum]
        optimizer.zero_grad()
        total = 0.0
        for x, y in cycle:
            with torch.autocast(device_type=device, dtype=dtype):
                loss = loss_fn(model(x), y) / len(cycle)
            (loss if scaler is None else scaler.scale(loss)).backward()
            total += loss.item()
        if scaler is not None:
            scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        if scaler is None:
            optimizer.step()
        else:
            scaler.step(optimizer)
            scaler.update()
        losses.append(total)
    return losses
    ### END SOLUTION


# %% test="amp_accumulation_steps"


# %% [markdown]
# ## 6 · Todo el modelo en bf16 pierde las actualizaciones pequeñas
#
# ¿Por qué no convertir el modelo entero con `model.to(torch.bfloat16)` y olvidarse de
# autocast? Porque entonces no quedan pesos maestros en fp32. Cerca de 1, bf16 solo
# distingue pasos de 0,0078: una actualización de 0,001 se redondea y desaparece.

# %% tags=["demo"]
weight_fp32 = torch.tensor(1.0)
weight_bf16 = torch.tensor(1.0, dtype=torch.bfloat16)
for _ in range(100):
    weight_fp32 -= 0.001
    weight_bf16 -= 0.001
print(f"100 pasos de −0,001 desde 1,0 → fp32: {weight_fp32.item():.4f} · "
      f"bf16: {weight_bf16.item():.4f}")

# %% [markdown]
# En un entrenamiento pasa lo mismo. Entrena la misma regresión lineal tres veces, con una
# tasa de aprendizaje (*learning rate*) pequeña: en fp32, con autocast bf16 (pesos maestros
# en fp32) y con el modelo entero en bf16.

# %% tags=["demo"]
def regression(mode, steps=300, lr=2e-3):
    g = torch.Generator().manual_seed(3)
    X = torch.randn(256, 8, generator=g)
    w_true = torch.randn(8, 1, generator=g)
    Y = X @ w_true + 4.0
    model = nn.Linear(8, 1)
    with torch.no_grad():
        model.weight.zero_()
        model.bias.zero_()
    if mode == "todo bf16":
        model, X, Y = model.to(torch.bfloat16), X.to(torch.bfloat16), Y.to(torch.bfloat16)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=mode == "autocast bf16"):
            loss = F.mse_loss(model(X).float(), Y.float())
        loss.backward()
        bias_step = lr * model.bias.grad.float().item()  # la actualización que SGD quiere hacer
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    return losses, model.bias.float().item(), bias_step


curves = {}
for mode in ("fp32", "autocast bf16", "todo bf16"):
    curves[mode], bias, bias_step = regression(mode)
    print(f"{mode:>14}: pérdida final {curves[mode][-1]:.4f} · sesgo {bias:.5f} · "
          f"último paso del sesgo {-bias_step:+.5f}")
bias_bf16 = torch.tensor(bias, dtype=torch.bfloat16)
next_value = bias_bf16 + torch.finfo(torch.bfloat16).eps * 2.0 ** math.floor(math.log2(bias))
print(f"en bf16, después de {bias:.5f} viene {next_value.item():.5f}: "
      f"un paso menor que la mitad de {next_value.item() - bias:.5f} se redondea a 0")
plt.figure(figsize=(7, 3))
for mode, losses in curves.items():
    plt.plot(losses, "--" if mode == "autocast bf16" else "-", label=mode)
plt.yscale("log")
plt.xlabel("paso")
plt.ylabel("pérdida")
plt.title("Los pesos maestros en fp32 importan")
plt.legend()
plt.tight_layout()
plt.show()

# %% [markdown]
# Con autocast, la curva sigue a la de fp32. Con el modelo entero en bf16, la pérdida se
# estanca muy arriba: el sesgo (que debería llegar a 4) se queda clavado, porque cada paso
# que le pide SGD es menor que la mitad de la distancia hasta el siguiente valor bf16 y se
# pierde al redondear. Los gradientes no son cero: es el redondeo del peso el que se come la
# actualización. Cargar un modelo en bf16 sirve para
# inferencia (*inference*); para entrenar, autocast.
#
# ## 7 · Velocidad y memoria, medidas
#
# La promesa de la precisión mixta es velocidad y memoria. Mídelo con un modelo hecho casi
# solo de productos de matrices. Dos medidas por formato: el tiempo de un paso (adelante y
# atrás) y la memoria que el paso añade para el pase hacia atrás: los bytes que autograd
# guarda, contados con `torch.autograd.graph.saved_tensors_hooks`, sin contar los
# parámetros ni la entrada (ya existían antes del paso).
#
# El tiempo se mide con un solo hilo y se toma el mejor de varios pasos: así otros procesos
# de la máquina lo distorsionan menos. Se mide con dos tamaños de lote (*batch*).

# %% tags=["demo"]
def mlp(width, depth, device):
    blocks = [nn.Sequential(nn.Linear(width, width), nn.GELU()) for _ in range(depth)]
    return nn.Sequential(*blocks, nn.Linear(width, 10)).to(device)


def measure(model, x, y, dtype, repeats):
    """Los mejores segundos por paso (pase hacia adelante y hacia atrás), y los bytes que el
    paso reserva para el pase hacia atrás (no cuenta los parámetros ni la entrada: ya
    existían)."""
    existing = {t.untyped_storage().data_ptr() for t in (x, *model.parameters())}
    saved = {}

    def pack(t):
        ptr = t.untyped_storage().data_ptr()
        if ptr not in existing:
            saved[ptr] = t.untyped_storage().nbytes()
        return t

    def step():
        with torch.autocast(x.device.type, dtype=dtype or torch.bfloat16,
                            enabled=dtype is not None):
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        model.zero_grad()

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        step()  # calentamiento, y la cuenta de bytes guardados
    step()
    times = []
    for _ in range(repeats):
        if x.device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        step()
        if x.device.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return min(times), sum(saved.values())


torch.manual_seed(0)
cpu_model = mlp(256, 3, "cpu")
threads = torch.get_num_threads()
torch.set_num_threads(1)
cpu_results = {}
for batch in (128, 1024):
    x_cpu, y_cpu = torch.randn(batch, 256), torch.randint(0, 10, (batch,))
    for name, dtype in (("fp32", None), ("autocast bf16", torch.bfloat16)):
        cpu_results[f"lote {batch} · {name}"] = measure(cpu_model, x_cpu, y_cpu, dtype, 8)
torch.set_num_threads(threads)

for name, (seconds, stored) in cpu_results.items():
    print(f"CPU {name:>24}: {seconds * 1e3:6.1f} ms por paso · "
          f"{stored / 2**20:5.2f} MiB nuevos guardados para el pase hacia atrás")
for batch in (128, 1024):
    t32, m32 = cpu_results[f"lote {batch} · fp32"]
    t16, m16 = cpu_results[f"lote {batch} · autocast bf16"]
    verdict = ("más lento" if t16 > 1.05 * t32 else "más rápido" if t16 < 0.95 * t32
                 else "igual de rápido")
    print(f"lote {batch}: bf16 / fp32 → tiempo ×{t16 / t32:.2f} (en esta CPU, bf16 es "
          f"{verdict}) · memoria ×{m16 / m32:.2f}")
CPU_BF16 = native_bf16("cpu")
print(f"Esta CPU {'tiene' if CPU_BF16 else 'no tiene'} instrucciones bf16 (avx512_bf16 o "
      f"amx_bf16): {'bf16 va por hardware' if CPU_BF16 else 'autocast convierte entre formatos'}"
      f" (PyTorch usa {getattr(torch.backends.cpu, 'get_cpu_capability', lambda: '?')()}).")

# %% [markdown]
# En CPU, mira las dos cifras por separado.
#
# **Memoria.** Con bf16, cada activación guardada ocupa 2 bytes por número en vez de 4. Pero
# autocast guarda también la copia de 16 bits de cada peso, y esa copia es memoria nueva (en
# fp32, lo que se guarda es el propio parámetro). Con el lote pequeño, las copias de los
# pesos se comen casi todo el ahorro; con el lote grande mandan las activaciones y la memoria
# baja hacia la mitad. Esta cuenta no depende de la CPU: sale igual en cualquiera.
#
# **Tiempo.** La celda imprime el cociente bf16 / fp32 que midió en tu CPU y si tiene
# instrucciones bf16, que es lo que lo decide. Con AVX512-BF16 o AMX, los productos de
# matrices van en bf16 por hardware y el paso puede ir bastante más rápido que en fp32, más
# con el lote grande, donde esos productos pesan más. Sin ellas, el paso suele ir más lento
# que en fp32, a veces muchas veces. El mismo código da resultados opuestos según la
# máquina: por eso se mide, y por eso `pick_amp_dtype` pregunta por el soporte de bf16 y no
# solo por el dispositivo.
#
# ¿Qué es lo lento sin instrucciones bf16: convertir entre formatos o calcular? Autocast
# hace las dos cosas en cada producto de matrices. La celda siguiente las mide por separado
# en tu CPU, con un hilo: convertir dos matrices de 256 × 256 a bf16, y el producto ya en
# bf16 frente al producto en fp32.

# %% tags=["demo"]
def best_ms(fn, repeats=7):
    """El mejor de varios tiempos de ``fn()``, en ms, tras una llamada de calentamiento."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1e3 * min(times)


threads = torch.get_num_threads()
torch.set_num_threads(1)
g = torch.Generator().manual_seed(0)
a, b = torch.randn(256, 256, generator=g), torch.randn(256, 256, generator=g)
a16, b16 = a.bfloat16(), b.bfloat16()
matmul_fp32 = best_ms(lambda: a @ b)
matmul_bf16 = best_ms(lambda: a16 @ b16)
conversion = best_ms(lambda: (a.bfloat16(), b.bfloat16()))
torch.set_num_threads(threads)
print(f"producto fp32 {matmul_fp32:.3f} ms · producto bf16 {matmul_bf16:.3f} ms "
      f"({matmul_bf16 / matmul_fp32:.2g} veces el de fp32) · convertir las dos entradas "
      f"{conversion:.3f} ms · CPU con instrucciones bf16: {native_bf16('cpu')}")
if matmul_bf16 > matmul_fp32:
    culprit = ("el producto en bf16 mismo" if matmul_bf16 - matmul_fp32 > conversion
               else "sobre todo la conversión")
    print(f"Aquí bf16 es más lento, y lo que más cuesta es {culprit}.")
else:
    print("Aquí el producto en bf16 va más rápido que en fp32"
          + (": la CPU lo hace por hardware." if native_bf16("cpu") else "."))

# %% [markdown]
# Sin instrucciones bf16, el producto en bf16 no tiene un núcleo de cálculo por hardware, y
# el que usa PyTorch está mucho menos optimizado que el de fp32: por eso, en una CPU así, la
# diferencia suele estar en el producto y no en la conversión de las entradas. La celda lo
# dice con las cifras de tu máquina.
#
# En GPU, la celda siguiente mide fp32, fp16 y (si hay soporte nativo) bf16 con un modelo
# más grande, y la memoria máxima con `torch.cuda.max_memory_allocated`. **Sin verificar en
# esta versión del curso:** se construyó en una máquina sin GPU, así que aquí no hay cifras
# de GPU medidas. Con núcleos tensoriales (una T4 o posterior), fp16 debería ir más rápido
# que fp32; la celda imprime la aceleración que mide en la tuya.

# %% tags=["demo"]
gpu_results = {}
if torch.cuda.is_available():
    torch.manual_seed(0)
    gpu_model = mlp(2048, 4, "cuda")
    x_gpu = torch.randn(2048, 2048, device="cuda")
    y_gpu = torch.randint(0, 10, (2048,), device="cuda")
    gpu_formats = [("fp32", None), ("autocast fp16", torch.float16)]
    if NATIVE_BF16:
        gpu_formats.append(("autocast bf16", torch.bfloat16))
    for name, dtype in gpu_formats:
        torch.cuda.reset_peak_memory_stats()
        seconds, stored = measure(gpu_model, x_gpu, y_gpu, dtype, repeats=10)
        peak = torch.cuda.max_memory_allocated()
        gpu_results[name] = (seconds, stored, peak)
        print(f"GPU {name:>14}: {seconds * 1e3:7.2f} ms por paso · "
              f"{stored / 2**20:7.1f} MiB nuevos guardados · pico {peak / 2**20:7.1f} MiB")
    base = gpu_results["fp32"][0]
    for name, (seconds, _, _) in gpu_results.items():
        print(f"aceleración de {name}: ×{base / seconds:.2f}")
else:
    print("Sin GPU: la medida en CUDA se salta (no hay núcleos tensoriales que medir).")

# %% [markdown]
# Las medidas, en una gráfica: tiempo por paso y memoria nueva guardada para el pase hacia
# atrás, relativos a fp32 en cada dispositivo y tamaño de lote.

# %% tags=["demo"]
series = {f"CPU {k}": v[:2] for k, v in cpu_results.items()}
series.update({f"GPU · {k}": v[:2] for k, v in gpu_results.items()})
fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(10, 3))
for ax, index, title in ((ax_t, 0, "tiempo por paso (fp32 = 1)"),
                           (ax_m, 1, "memoria nueva guardada (fp32 = 1)")):
    relative = []
    for name, values in series.items():
        reference = series[name.rsplit(" · ", 1)[0] + " · fp32"][index]
        relative.append(values[index] / reference)
    ax.barh(list(series), relative)
    ax.axvline(1.0, color="gray", lw=0.8)
    ax.set_title(title)
    ax.set_xlabel("veces lo de fp32 en el mismo dispositivo")
plt.tight_layout()
plt.show()

# %% [markdown]
# ### Lo mismo en el `Trainer` de Hugging Face: `bf16=` y `fp16=`
#
# Con el `Trainer` de Hugging Face (biblioteca `transformers`), este capítulo entero se
# reduce a dos banderas de `TrainingArguments`, que le pasan la precisión mixta a la
# biblioteca `accelerate`:
#
# - `bf16=True`: el pase hacia adelante corre bajo `autocast` con bfloat16 y no hay
#   escalador, como en la sección 5. Vale también en CPU.
# - `fp16=True`: `autocast` con float16 **y** un `GradScaler`, con el orden de la sección 4:
#   escala la pérdida antes de `backward()`, desescala antes del recorte de `max_grad_norm`,
#   salta los pasos con `inf` y ajusta la escala. Es la opción de una GPU sin bf16 nativo,
#   como la T4.
#
# Ninguna de las dos convierte los pesos del modelo: `autocast` trabaja con copias en 16
# bits y los parámetros siguen en el dtype con que cargaste el modelo (en fp32, los pesos
# maestros de la sección 3). Si lo cargaste entero en bf16, estás en el caso de la sección
# 6. Cuál de las dos elegir lo decide la regla de la sección 2: bf16 donde el hardware la
# tiene, fp16 con escalador en una GPU que no.

# %% [markdown]
# ## Resumen
#
# - fp16 tiene más precisión que bf16 pero poco rango (máximo 65504, nada por debajo de
#   ~$6\cdot 10^{-8}$); bf16 tiene el rango de fp32 y menos precisión (`eps` = 0,0078).
# - Por el rango, fp16 necesita escalar la pérdida: `GradScaler`. bf16 no.
# - `torch.autocast` elige el dtype de cada operación: productos de matrices en 16 bits,
#   pérdidas en fp32 y el resto en el dtype de sus entradas. Las listas de CPU y CUDA son
#   distintas (en CUDA, según la documentación, también softmax, `exp`, `log`, sumas y
#   normas van en fp32). Los parámetros y sus gradientes siguen en fp32: son los pesos
#   maestros.
# - Orden con `GradScaler`: `scale(loss).backward()`, `unscale_`, `clip_grad_norm_`,
#   `scaler.step` (salta los pasos con `inf`), `update` (ajusta la escala), `zero_grad`.
#   Con acumulación, `scale(loss / accum)` en cada micro-lote y el resto solo al final del
#   ciclo: la escala no cambia a mitad de ciclo. `scaler.state_dict()` se guarda con el
#   modelo y el optimizador.
# - Un modelo convertido entero a bf16 pierde las actualizaciones menores que la mitad de la
#   distancia entre dos valores bf16 vecinos (esa mitad vale 0,0039 entre 1 y 2, y 0,0078
#   entre 2 y 4): para entrenar, autocast.
# - La memoria de activaciones baja a la mitad, pero las copias de 16 bits de los pesos son
#   memoria nueva: el ahorro real crece con el tamaño del lote.
# - La velocidad depende del hardware: en GPU, de los núcleos tensoriales (fp16 en una T4,
#   bf16 desde Ampere; sin verificar aquí: el curso se probó sin GPU); en CPU, de las
#   instrucciones bf16 (AVX512-BF16, AMX), que aceleran bf16 donde existen. La sección 7 lo
#   midió en tu máquina; mídelo siempre.
