"""Chapter 5: how to fix each mistake, shown only in the feedback after grading
(see ``autograder/hidden/fixes.py``; never injected into the notebook)."""

ARREGLOS = {
    "modos_no_restaurados": "Guarda `modos = {m: m.training for m in model.modules()}` al "
                            "empezar y, al terminar, `for m, modo in modos.items(): "
                            "m.training = modo` (o `m.train(modo)` recorriendo "
                            "`model.modules()` en su orden, cada padre antes que sus hijos).",
    "tm_dejado_en_eval": "Guarda `{m: m.training for m in model.modules()}` al empezar y "
                         "restaura cada `m.training` al terminar.",
    "evaluacion_con_grafo": "Envuelve el pase en `with torch.no_grad():` (en un gestor, "
                            "el `yield` dentro de ese `with`).",
    "ev_no_es_gestor": "Decora la función con `@contextlib.contextmanager` y entrega el "
                       "modelo con `yield model`, o escribe una clase con `__enter__` y "
                       "`__exit__`.",
    "ev_sin_yield": "Cambia el `return model` por `yield model`, en el punto en que el modelo "
                    "ya está en modo evaluación y autograd desactivado.",
    "ev_dentro_en_train": "Llama a `model.eval()` al entrar: pone en evaluación todos los "
                          "submódulos, de cualquier tipo.",
    "ev_excepcion_sin_restaurar": "Pon el `yield` dentro de un `try:` y restaura en su "
                                  "`finally:` (o en `__exit__`, que se llama también con "
                                  "excepción); para autograd, `with torch.no_grad(): yield "
                                  "model`.",
    "ev_anidado": "Guarda los modos en una variable local de cada llamada (o en el propio "
                  "objeto gestor), nunca en el modelo ni en una global.",
    "ev_entrega": "Entrega el modelo: `yield model` (o `return self.model` en `__enter__`).",
    "ev_excepcion_tragada": "No captures la excepción (usa `try`/`finally`, sin `except`), y "
                            "que `__exit__` devuelva `None` o `False`.",
    "tm_medicion_con_grafo": "Haz el pase del modelo y las ejecuciones de cada hoja dentro de "
                             "`with torch.no_grad():`.",
    "tm_autograd_no_restaurado": "Usa `with torch.no_grad():` en lugar de "
                                 "`torch.set_grad_enabled(False)`.",
    "tm_ganchos_sin_quitar": "Guarda lo que devuelve `register_forward_hook` y llama a "
                             "`.remove()` en un `finally`, o registra los ganchos en una copia.",
    "tm_buffers_movidos": "Mide sobre `copy.deepcopy(modulo)`, o guarda los búferes antes y "
                          "cópialos de vuelta antes de devolver.",
    "modulos_solo_por_tipo": "Ejecuta cada hoja en los dos modos sobre la entrada que recibe y "
                             "compara las salidas.",
    "modulo_sin_efecto_listado": "`Dropout(p=0)` y `BatchNorm` con "
                                 "`track_running_stats=False` no cambian entre modos: mide el "
                                 "comportamiento, no el tipo.",
    "contenedor_listado": "Filtra con `not list(m.children())` sobre `model.named_modules()`.",
    "tm_misma_entrada": "Captura la entrada de cada hoja en un pase en modo evaluación y "
                        "ejecuta la hoja sola en los dos modos sobre esa entrada.",
    "tm_salida_del_modelo": "Captura la entrada de cada hoja con un gancho y compara la salida "
                            "de esa hoja sola en los dos modos, no la del modelo entero.",
    "tm_comparacion_laxa": "Compara las dos salidas enteras con `torch.equal`: el enunciado "
                           "pide una comparación exacta.",
    "mc_batchnorm_en_train": "Llama a `model.eval()` y después a `m.train()` solo en cada "
                             "`nn.Dropout`.",
    "mc_otros_en_train": "`model.eval()` y después `m.train()` para cada `m` que sea "
                         "`isinstance(m, nn.Dropout)`.",
    "mc_resembrado": "Quita el `torch.manual_seed(...)` de la función.",
    "mc_varianza": "Usa `torch.std(muestras, dim=0)` (o `torch.var(...).sqrt()`).",
    "mc_sin_dropout": "Tras `model.eval()`, llama a `m.train()` en cada `nn.Dropout`.",
    "mc_llamadas": "`torch.stack([model(x) for _ in range(n_samples)])`.",
    "mc_media_bessel": "La media divide por `n_samples`: `muestras.mean(dim=0)`.",
    "mc_std_sesgada": "Usa `torch.std` con su corrección por defecto (divide por n − 1).",
}
