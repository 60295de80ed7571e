"""Chapter 7: how to fix each mistake, shown only in the feedback after grading
(see ``autograder/hidden/fixes.py``; never injected into the notebook)."""

ARREGLOS = {
    "softplus_desborda": "log(1 + e^z) = max(z, 0) + log1p(e^(−|z|)): "
                         "`torch.clamp(z, min=0) + torch.log1p(torch.exp(-z.abs()))`.",
    "sin_grad_output": "Devuelve `grad_output * derivada_local`.",
    "sigmoide_desborda": "Usa `torch.sigmoid`, que ya es estable.",
    "gradientes_por_entrada": "Devuelve un valor por cada argumento de `forward` (sin `ctx`), en "
                              "el mismo orden; `None` para los que no son tensores.",
    "gradiente_de_no_tensor": "En la posición de un número de Python devuelve `None`.",
    "grad_output_modificado": "Calcula un tensor nuevo (`grad_output * mascara`) o trabaja "
                              "sobre `grad_output.clone()`.",
    "sin_function_propia": "Define `class TuFuncion(torch.autograd.Function)` con `forward` y "
                           "`backward` estáticos y devuelve `TuFuncion.apply(...)`.",
    "salida_sin_grafo": "Devuelve el resultado de `TuFuncion.apply(...)`, sin `.detach()` ni "
                        "`torch.no_grad()`.",
    "tensores_en_ctx": "`ctx.save_for_backward(x, w)` en `forward` y "
                       "`x, w = ctx.saved_tensors` en `backward`.",
    "function_estado_compartido": "Guarda en cada `ctx` con `ctx.save_for_backward(...)`, no en "
                                  "la clase ni en variables globales.",
    "function_lee_fuera_de_ctx": "Dentro de `backward`, saca cada tensor de "
                                 "`ctx.saved_tensors`.",
    "function_autograd_en_backward": "Escribe la derivada con operaciones de tensores; sin "
                                     "`torch.autograd.grad`, `.backward()` ni "
                                     "`torch.enable_grad()`.",
    "guarda_de_mas": "Para tanh(x·Wᵀ + b) guarda x, W y la salida: "
                     "`ctx.save_for_backward(x, weight, salida)`.",
    "ignora_needs_input_grad": "`if ctx.needs_input_grad[i]:` calcula ese gradiente; si no, "
                               "devuelve `None` en su posición.",
    "derivada_tanh": "Con y = tanh(z): dy/dz = 1 − y², `1 - salida ** 2`.",
    "grad_bias_media": "`grad_bias = grad_z.sum(dim=0)`.",
    "redondeo_sin_ste": "Una Function cuyo `backward` devuelve `grad_output` tal cual, o "
                        "`x + (q - x).detach()`.",
    "ste_sin_recorte": "Multiplica el gradiente por la máscara `x.abs() <= levels * step`, "
                       "sobre la x original.",
    "ste_recorte_un_lado": "La máscara es `(x >= -levels * step) & (x <= levels * step)`.",
    "ste_mascara_redondeada": "La máscara es `x.abs() <= levels * step` sobre la x original, "
                              "sin redondear.",
    "ste_borde_excluido": "Usa `x.abs() <= levels * step` (con igual), o `torch.clamp`; "
                          "`F.hardtanh` deja el gradiente a 0 en los bordes.",
    "ste_borde_a_medias": "Usa `torch.clamp` con límites numéricos o la máscara "
                          "`x.abs() <= levels * step`.",
    "rango_sin_step": "El último nivel vale `levels * step`.",
    "cuantiza_sin_escalar": "`torch.round(x / step) * step`.",
    "cuantiza_sin_recorte": "Recorta con `torch.clamp(..., -levels * step, levels * step)`.",
    "redondeo_equivocado": "Usa `torch.round`, no `trunc`, `floor` ni `ceil`.",
    "checkpoint_guarda_activaciones": "En `forward`, `ctx.save_for_backward(x, *params)` y "
                                      "`with torch.no_grad(): return fn(x, *params)`; el "
                                      "grafo se construye en `backward`.",
    "checkpoint_recalculo_sin_grafo": "Recalcula dentro de `with torch.enable_grad(): "
                                      "salida = ctx.fn(*copias)`.",
    "checkpoint_sin_detach": "Recalcula sobre copias: `[t.detach().requires_grad_(pide) for t, "
                             "pide in zip(ctx.saved_tensors, ctx.needs_input_grad[1:])]`.",
    "checkpoint_orden_gradientes": "Devuelve `(None, grad_x, *grad_params)`: `None` para "
                                   "`fn`, luego `x`, luego cada parámetro en su orden.",
    "checkpoint_sin_parametros": "Deriva respecto de todas las copias que requieren gradiente: "
                                 "`torch.autograd.grad(salida, [x, *params], grad_output)` o "
                                 "`torch.autograd.backward(salida, grad_output)` y sus `.grad`.",
    "checkpoint_llamadas_fn": "Llama a `fn` una vez en `forward` (bajo `torch.no_grad()`) y una "
                              "vez en `backward` (bajo `torch.enable_grad()`).",
    "escribe_salida": "Quita los `print` (y lo que escribas en `sys.stderr`) de la función, "
                      "de `forward` y de `backward`.",
    "salida_de_inferencia": "Quita `torch.inference_mode()`: dentro de `forward` autograd ya "
                            "está desactivado.",
    "calcula_sin_necesidad": "Calcula cada gradiente dentro de su "
                             "`if ctx.needs_input_grad[i]:`.",
    "guarda_el_sesgo": "`ctx.save_for_backward(x, weight, salida)`: el sesgo no hace falta.",
    "grafo_bajo_no_grad": "Llama a `TuFuncion.apply(...)` en el modo de autograd de quien "
                          "llama, sin `torch.enable_grad()` alrededor.",
    "checkpoint_recalcula_sin_copias": "Recalcula sobre `t.detach().requires_grad_(pide)` "
                                       "de cada tensor guardado.",
    "derivada_cero_en_el_origen": "Que x = 0 caiga en una de las ramas (`>=`), o usa "
                                  "`torch.sigmoid` / la máscara `x.abs() <= levels * step`.",
}
