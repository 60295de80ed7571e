"""Chapter 4: how to fix each mistake, shown only in the feedback after grading
(see ``autograder/hidden/fixes.py``; never injected into the notebook)."""

ARREGLOS = {
    "ciclo_parcial_olvidado": "Da el paso también después del último lote: "
                              "`if (i + 1) % accum == 0 or i + 1 == len(loader):`.",
    "step_en_cada_microlote": "Pon `optimizer.step()`, `scheduler.step()` y "
                              "`optimizer.zero_grad()` dentro del `if` que se cumple cada "
                              "`accum` micro-lotes.",
    "recorte_fuera_de_lugar": "`torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)` "
                              "después del último `backward()` del ciclo y antes de "
                              "`optimizer.step()`.",
    "zero_grad_en_microlote": "Llama a `optimizer.zero_grad()` justo después de "
                              "`optimizer.step()` (o al empezar cada ciclo).",
    "ciclo_parcial_dividido_por_accum": "En el ciclo final de `r` micro-lotes, divide cada "
                                        "pérdida por `r`.",
    "perdida_registrada_dividida": "`(loss / n).backward()` y registra `loss.item()` sin "
                                   "dividir.",
    "grafo_al_evaluar": "Envuelve la evaluación en `with torch.no_grad():` (o "
                        "`with torch.inference_mode():`).",
    "media_de_lotes": "Acumula `loss.item() * len(y)` y los aciertos, y divide al final por el "
                      "número total de muestras.",
    "aciertos_sin_dividir": "Devuelve `aciertos / muestras`.",
    "dividido_por_lotes": "Suma `len(y)` en cada lote y divide por ese total.",
    "doble_softmax": "Pasa los logits crudos a `loss_fn`; para la predicción, "
                     "`logits.argmax(dim=1)`.",
    "perdida_ignorada": "Usa `loss_fn(logits, y)`.",
    "modo_forzado_a_train": "Guarda `estaba_entrenando = model.training` al empezar y termina "
                            "con `model.train(estaba_entrenando)`.",
    "sin_calentamiento": "`LinearLR(optimizer, start_factor=1 / (W + 1), total_iters=W)` antes "
                         "del coseno, con `SequentialLR`.",
    "calentamiento_incorrecto": "Con `LinearLR`, `start_factor=1/(W+1)` y `total_iters=W`; con "
                                "`LambdaLR`, el factor `(t + 1) / (W + 1)`.",
    "coseno_tmax_total": "`T_max=total_steps - warmup_steps`.",
    "sin_min_lr": "Pasa `eta_min=min_lr` a `CosineAnnealingLR` (o súmalo en tu fórmula).",
    "planificador_adelantado": "No llames a `scheduler.step()` en la fábrica: devuelve el "
                               "planificador recién creado.",
    "min_lr_como_factor": "El factor final debe ser `min_lr / lr`.",
    "media_por_muestra": "Suma la pérdida de cada micro-lote, sin multiplicarla por su "
                         "tamaño, y divide al final por el número de micro-lotes.",
    "media_de_ciclos": "Suma la pérdida sin dividir de cada micro-lote y divide al final por el "
                       "número de micro-lotes.",
    "lr_ajena": "Lee la tasa de `optimizer.param_groups[i]['lr']` (o deja que "
                "`CosineAnnealingLR` la tome).",
    "min_lr_por_defecto": "Deja la firma como la da el enunciado: "
                          "`def warmup_cosine(optimizer, warmup_steps, total_steps, "
                          "min_lr=0.0):`.",
    "parametro_descongelado": "Quita el `requires_grad_(True)`: `model.train()` y "
                              "`optimizer.step()` ya entrenan lo que debe entrenarse.",
    "grupos_sin_planificar": "Usa un planificador de `torch.optim.lr_scheduler`, o recorre "
                             "todos los `optimizer.param_groups`.",
    "no_es_planificador": "Devuelve, por ejemplo, `SequentialLR(optimizer, [calentamiento, "
                          "coseno], milestones=[warmup_steps])`.",
    "pasos_hasta_stop": "Recorre `for t in range(start, stop):` con `x, y = batches[t]`, no "
                        "todos los lotes.",
    "estado_no_devuelto": "Termina con `return {\"model\": ..., \"optimizer\": ..., "
                          "\"scheduler\": ..., \"rng\": torch.get_rng_state(), "
                          "\"step\": stop}`.",
    "estado_no_serializable": "Guarda los `state_dict()` (copiados), no los objetos: "
                              "`copy.deepcopy(model.state_dict())`, lo mismo para el "
                              "optimizador y el planificador.",
    "estado_con_referencias": "Copia lo que guardas: `copy.deepcopy(model.state_dict())` y "
                              "`copy.deepcopy(optimizer.state_dict())` (y el del "
                              "planificador).",
    "modelo_no_restaurado": "Con `state`, empieza por `model.load_state_dict(state[\"model\"])`.",
    "estado_al_empezar": "Construye el diccionario del estado al final, después del bucle.",
    "optimizador_no_restaurado": "Guarda `copy.deepcopy(optimizer.state_dict())` y, al "
                                 "reanudar, `optimizer.load_state_dict(state[\"optimizer\"])`.",
    "solo_el_modelo": "Guarda también `optimizer.state_dict()`, `scheduler.state_dict()` y "
                      "`torch.get_rng_state()`, y restáuralos con sus `load_state_dict` y "
                      "`torch.set_rng_state`.",
    "planificador_no_restaurado": "Guarda `scheduler.state_dict()` y, al reanudar, "
                                  "`scheduler.load_state_dict(state[\"scheduler\"])`.",
    "planificador_incompleto": "En vez de fijar `last_epoch`, "
                               "`scheduler.load_state_dict(state[\"scheduler\"])`: restaura "
                               "también su última tasa y los planificadores que contiene.",
    "rng_no_restaurado": "Guarda `torch.get_rng_state()` al terminar y, al reanudar, "
                         "`torch.set_rng_state(state[\"rng\"])` antes del primer pase.",
    "rng_al_empezar": "Llama a `torch.get_rng_state()` después del bucle, no antes.",
    "reanuda_en_otro_lote": "Guarda el paso alcanzado (`\"step\": stop`) y empieza el bucle en "
                            "`range(state[\"step\"], stop)`.",
    "pasos_reanudados": "Entrena los pasos `range(state[\"step\"], stop)`.",
    "reanudacion_distinta": "Restaura las cinco piezas antes del primer paso: "
                            "`load_state_dict` del modelo, del optimizador y del "
                            "planificador, `torch.set_rng_state` y el contador de pasos.",
}
