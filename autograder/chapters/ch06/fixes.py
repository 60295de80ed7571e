"""Chapter 6: how to fix each mistake, shown only in the feedback after grading
(see ``autograder/hidden/fixes.py``; never injected into the notebook)."""

ARREGLOS = {
    "amp_registro_etiqueta": "Devuelve uno de los cinco textos del docstring: `\"ok\"`, "
                             "`\"clip_before_unscale\"`, `\"new_scaler_each_step\"`, "
                             "`\"optimizer_step\"` o `\"scaled_loss\"`.",
    "amp_registro_falsa_alarma": "En un bucle sano, tras cada paso con norma inf o nan la "
                                 "escala baja a la mitad, y entre dos pasos limpios la pérdida "
                                 "y la norma no cambian con la escala: no marques esos pasos "
                                 "como error.",
    "amp_registro_recorte": "Sin `unscale_`, la norma registrada es escala × norma real: entre "
                            "dos pasos limpios en los que la escala cambia, `grad_norm` cambia "
                            "por el mismo factor (`b['grad_norm'] / a['grad_norm'] ≈ "
                            "b['scale'] / a['scale']`).",
    "amp_registro_escalador_nuevo": "Con un escalador nuevo en cada paso, la escala no baja tras "
                                    "un paso con norma no finita: busca un `t` con "
                                    "`not math.isfinite(log[t]['grad_norm'])` y "
                                    "`log[t + 1]['scale'] >= log[t]['scale']`.",
    "amp_registro_paso_directo": "Con `optimizer.step()`, el primer paso con inf vuelve inf o "
                                 "nan los pesos, y todas las pérdidas siguientes dejan de ser "
                                 "finitas: `not all(math.isfinite(r['loss']) for r in log)`.",
    "amp_registro_perdida_escalada": "La pérdida escalada es escala × pérdida: entre dos pasos "
                                     "limpios en los que la escala cambia, `loss` cambia por el "
                                     "mismo factor que `scale`.",
    "amp_escala_sin_reducir": "Con un inf: `escala *= backoff_factor` y el contador de pasos "
                              "limpios vuelve a 0.",
    "amp_crecimiento_prematuro": "Cuenta los pasos limpios seguidos: el contador vuelve a 0 con "
                                 "cada inf y después de crecer.",
    "amp_crecimiento_tardio": "Cuando `limpios >= growth_interval`: `escala *= growth_factor` y "
                              "`limpios = 0`.",
    "amp_otro_factor": "Usa `growth_factor` al crecer y `backoff_factor` al reducir, los "
                       "argumentos de la función.",
    "amp_sin_autocast": "Envuelve el pase hacia adelante y la pérdida en "
                        "`with torch.autocast(device_type=device, dtype=dtype):`.",
    "amp_step_sin_scaler": "Llama a `scaler.step(optimizer)` en vez de `optimizer.step()`.",
    "amp_sin_pesos_maestros": "No conviertas el modelo (`model.to(dtype)`, `.half()`): deja que "
                              "autocast elija el dtype de cada operación.",
    "amp_paso_con_inf": "Da el paso con `scaler.step(optimizer)`, que lo salta si hay inf.",
    "amp_dtype_ignorado": "Pasa `dtype=dtype` a `torch.autocast`.",
    "amp_autocast_otro_dispositivo": "Pasa `device_type=device` a `torch.autocast`.",
    "amp_sin_update": "Al final de cada ciclo, tras `scaler.step(optimizer)`, llama a "
                      "`scaler.update()`.",
    "amp_update_por_microlote": "Mueve `scaler.update()` dentro del `if` del final del ciclo, "
                                "después de `scaler.step(optimizer)`.",
    "amp_unscale_por_microlote": "En cada micro-lote solo `scaler.scale(loss / n).backward()`; "
                                 "`scaler.unscale_(optimizer)` una vez, al final del ciclo, "
                                 "antes de recortar.",
    "amp_ultimo_ciclo_por_accum": "Divide por el tamaño real del ciclo: "
                                  "`n = len(batches[inicio:inicio + accum])`.",
    "amp_zero_grad_en_micro_lote": "Llama a `optimizer.zero_grad()` una vez por ciclo, antes "
                                   "de su primer micro-lote (o después de su paso).",
    "amp_grad_previo_sin_borrar": "Llama a `optimizer.zero_grad()` antes del primer "
                                  "micro-lote de cada ciclo, el primero incluido.",
    "amp_perdida_escalada": "Devuelve `loss.item()` de la pérdida original, no la de "
                            "`scaler.scale(loss)`.",
}
