"""How to fix each misconception: shown only in the feedback after grading.

A public check (in the student's notebook) says what is wrong and where to look
(``autograder/student/messages.py``); the code that fixes it would hand over the answer
before the student has tried. These texts are never injected into notebooks (only
``autograder/student`` is, see ``autograder/inject.py``): the hidden tests' report adds
them as "Cómo corregirlo: …" (``Resultado.informe``). A chapter adds its own in
``autograder/chapters/chNN/fixes.py`` (``ARREGLOS``); an id it does not define there
falls back to the common text here.
"""

import importlib

# diagnosis id -> how to fix it (Spanish, may contain code)
ARREGLOS = {
    "signo": "La derivada de (ŷ − y)² respecto de ŷ es 2(ŷ − y): el signo lo da ŷ − y.",
    "factor_2": "Busca el 2: la derivada de u² es 2u·u′ (ni lo olvides ni lo dupliques), "
                "una media divide por todos los elementos que promedia, y nada se suma dos "
                "veces.",
    "suma_en_vez_de_media": "Divide por el número de elementos que promedia la pérdida.",
    "media_en_vez_de_suma": "Divide por el número de elementos una sola vez.",
    "media_solo_sobre_lote": "Divide por N·K (todos los elementos de ŷ), no solo por N.",
    "media_solo_sobre_salidas": "Divide por N·K (todos los elementos de ŷ), no solo por K.",
    "sin_dividir_por_accum": "Escribe `(loss_fn(model(xb), yb) / accum).backward()` en cada "
                             "micro-lote.",
    "dividido_de_mas_por_accum": "Divide la pérdida por `accum` y deja los gradientes como "
                                 "quedan tras `backward()`.",
    "gradiente_aun_escalado": "Llama a `scaler.unscale_(optimizer)` antes de recortar o de "
                              "leer `p.grad`.",
    "none_no_hoja": "Llama a `h.retain_grad()` antes de `backward()`, o usa "
                    "`torch.autograd.grad(loss, h)`.",
    "none_sin_requires_grad": "Crea el tensor con `requires_grad=True` (o llama a "
                              "`t.requires_grad_(True)`) antes del pase hacia adelante.",
    "modificada": "Trabaja sobre `x.detach().clone()` o sobre tensores nuevos.",
    "sin_grafo": "Llama a `torch.autograd.grad(..., create_graph=True)`.",
    "segundo_backward": "Pasa `retain_graph=True` a la primera pasada.",
    "acumulado_sin_clone": "Guarda `p.grad.clone()`.",
    "acumulado_sin_zero": "Llama a `model.zero_grad()` (o pon `p.grad = None`) entre las dos "
                          "pérdidas.",
    "forward_repetido": "Calcula `out = model(x)` una vez y llama a `backward` o "
                        "`torch.autograd.grad` sobre cada pérdida con `retain_graph=True` en la "
                        "primera.",
    "grad_poblado": "Usa `torch.autograd.grad(loss, list(model.parameters()))`.",
    "grafo_vivo": "Registra `loss.item()`.",
    "registro_tensor": "Registra `valor.item()`.",
    "sin_step": "Tras `loss.backward()`, llama a `optimizer.step()`.",
    "scheduler_antes_que_optimizer": "Llama a `optimizer.step()` y después a "
                                     "`scheduler.step()`.",
    "scheduler_veces": "Pon `scheduler.step()` dentro del mismo `if` que `optimizer.step()`.",
    "clip_antes_de_unscale": "`scaler.scale(loss).backward()`, `scaler.unscale_(optimizer)`, "
                             "`clip_grad_norm_(model.parameters(), max_norm)`, "
                             "`scaler.step(optimizer)`, `scaler.update()`.",
    "zero_grad_ausente": "Llama a `optimizer.zero_grad()` una vez por paso del optimizador.",
    "modelo_en_eval": "Al terminar de evaluar, vuelve a `model.train()` o restaura el modo que "
                      "tenía cada submódulo.",
    "modelo_en_train": "Llama a `model.eval()` antes de evaluar.",
    "buffers_cambiados": "Evalúa con `model.eval()` (y restaura el modo al terminar).",
    "sin_implementar": "Borra `raise NotImplementedError()` y escribe tu solución.",
}


def fixes_for(chapter_key):
    """The fixes the feedback of chapter ``chapter_key`` (e.g. "ch03") may show."""
    arreglos = dict(ARREGLOS)
    try:
        module = importlib.import_module(f"autograder.chapters.{chapter_key}.fixes")
    except ModuleNotFoundError as missing:
        if missing.name != f"autograder.chapters.{chapter_key}.fixes":
            raise
        return arreglos
    arreglos.update(module.ARREGLOS)
    return arreglos
